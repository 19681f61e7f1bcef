"""The ``ve`` target: a lifted kernel over NEC SX-Aurora vector intrinsics.

`emit` lowers the lifted module (`ve_lower`) and hands it to LLVM 14's VE
back end: ``ir`` is the LLVM IR, ``asm``/``obj`` what ``llc -march=ve
-mattr=+vpu`` makes of it.

`load_emulated` proves the lowering without VE hardware: the same lowering,
each ``llvm.ve.vl.*`` call renamed to an executable definition of that
instruction (`ve_intrinsics.emulation_ir`), compiled for this host; the
runtime launches it like any lifted kernel (``engine="ve-emulated"``). Two
differences, for the host compiler's sake only: registers are passed to the
definitions by pointer, and they hold the least power of two above the
longest vector length of the module (`ve_intrinsics.register_width`) rather
than 256 elements; every instruction and vector length is the VE module's.
The emulation is compiled without optimisation (``-O0`` builds it 5x
faster, and it exists to check values, not to be fast).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.backends.ve_intrinsics import EMU_PREFIX, PREFIX, emulation_ir, register_width
from ptxasw.pirch_bridge.backends.ve_lower import lower, max_lanes
from ptxasw.pirch_bridge.jit import Compiled, compile_ir
from ptxasw.pirch_bridge.lift import LiftedKernel

__all__ = ["TRIPLE", "assemble", "emit", "emulated_ir", "load_emulated", "lowered_ir", "toolchain"]

TRIPLE = "ve-unknown-linux-gnu"
_DATALAYOUT = "e-m:e-i64:64-n32:64-S128-" + "-".join(f"v{1 << k}:64:64" for k in range(6, 15))
_LLC_FLAGS = ("-march=ve", "-mattr=+vpu", "-O2")


def lowered_ir(lifted: LiftedKernel) -> str:
    """The kernel over ``llvm.ve.vl.*`` intrinsics."""
    module, _ = lower(lifted.module, PREFIX)
    module.triple = TRIPLE
    module.data_layout = _DATALAYOUT
    return str(module)


def emulated_ir(lifted: LiftedKernel) -> str:
    """The lowered kernel for this host: intrinsic calls go to their definitions."""
    width = register_width(max_lanes(lifted.module))
    module, used = lower(lifted.module, EMU_PREFIX, width, memory=True)
    module.triple = ""
    text = str(module)
    # The lowering declared each intrinsic; the definitions replace the declarations.
    text = re.sub(r'^declare [^\n]*@"' + re.escape(EMU_PREFIX) + r"[^\n]*\n", "", text, flags=re.M)
    return text + "\n" + emulation_ir(used, width, memory=True)


def toolchain() -> str:
    """``llc`` of an LLVM with the VE target, or a one-line `PtxError`."""
    llc = shutil.which("llc")
    if llc is None:
        raise PtxError("--target ve --emit asm/obj needs LLVM's llc (with the VE target) on PATH")
    targets = subprocess.run([llc, "--version"], capture_output=True, text=True, check=False).stdout
    if not re.search(r"^\s*ve\s", targets, flags=re.M):
        raise PtxError(f"{llc} has no VE target (llc --version lists none): install an LLVM built with it")
    return llc


def _run(cmd: list[str], data: bytes, what: str) -> bytes:
    done = subprocess.run(cmd, input=data, capture_output=True, check=False)
    if done.returncode != 0:
        first = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise PtxError(f"--target ve: {what} failed: {first}")
    return done.stdout


def emit(lifted: LiftedKernel, what: str = "ir") -> str | bytes:
    """``lifted`` for the VE: ``ir`` (LLVM IR text), ``asm`` (VE assembly) or ``obj`` (ELF)."""
    text = lowered_ir(lifted)
    return text if what == "ir" else assemble(text, what)


def assemble(text: str, what: str = "obj") -> str | bytes:
    """VE LLVM IR (`lowered_ir`) through ``llc``: assembly text (``asm``) or an object (``obj``)."""
    llc = toolchain()
    with tempfile.TemporaryDirectory(prefix="ptxasw-ve-") as tmp:
        out = Path(tmp) / ("k.s" if what == "asm" else "k.o")
        filetype = "asm" if what == "asm" else "obj"
        _run([llc, *_LLC_FLAGS, f"-filetype={filetype}", "-o", str(out), "-"], text.encode(), "llc")
        data = out.read_bytes()
    return data.decode() if what == "asm" else data


def load_emulated(lifted: LiftedKernel) -> Compiled:
    """The lowered kernel compiled for this host with emulated VE intrinsics."""
    return compile_ir(emulated_ir(lifted), opt=0)
