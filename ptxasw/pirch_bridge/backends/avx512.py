"""The ``avx512`` target: a lifted kernel as C with AVX-512 intrinsics, built by gcc.

`emit` gives the C source (``--emit ir``), gcc's assembly or an object;
`load` compiles a shared library (cached by content: the C text, gcc's
version and the flags) and loads it with ctypes for the runtime
(`ptxasw.pirch_bridge.runtime.Loaded`). The translation itself is
`c_emit`; this module only drives gcc.

Why these flags: ``-O3`` lets gcc keep the InfReg chunks in zmm registers;
``-ffp-contract=off`` and no fast-math keep every floating-point operation
the single IEEE rounding the lifted IR states (the results equal the
interpreter's bit for bit); ``-fno-strict-aliasing`` because the kernel
reads one buffer as several types.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ptxasw.errors import PtxError
from ptxasw.pirch_bridge.backends.c_emit import CModule, Options, translate
from ptxasw.pirch_bridge.jit import cache_dir
from ptxasw.pirch_bridge.lift import LiftedKernel

__all__ = ["FLAGS", "Library", "c_source", "compile_c", "emit", "load", "translate_lifted"]

FLAGS = (
    "-O3",
    "-mavx512f",
    "-mavx512bw",
    "-mavx512dq",
    "-mavx512vl",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    "-fPIC",
    "-w",
)
_REQUIRED = ("avx512f", "avx512bw", "avx512dq", "avx512vl")
# gcc 12's value-range machinery (the ranger, used by VRP, EVRP and jump threading) is
# superlinear in the dispatcher's many blocks and mask words: 20 s for a scan kernel, over
# ten minutes and 4 GB for LDU f32 at WG 8 (pack 2); without it 2 s and 22 s.
_TAME = ("-fno-tree-vrp", "-fno-thread-jumps")

_lock = threading.Lock()
_loaded: dict[str, Library] = {}


@dataclass
class Library:
    """A compiled kernel loaded into this process (`runtime.Loaded`)."""

    lib: ctypes.CDLL
    module: CModule
    path: Path

    def address(self, name: str) -> int:
        symbol = self.module.functions.get(name)
        if symbol is None:
            raise KeyError(f"no function {name} in the compiled module")
        return ctypes.cast(getattr(self.lib, symbol), ctypes.c_void_p).value or 0

    def global_address(self, name: str) -> int:
        symbol = self.module.globals.get(name)
        if symbol is None:
            raise KeyError(f"no global {name} in the compiled module")
        return ctypes.addressof(ctypes.c_uint8.in_dll(self.lib, symbol))


def host_options() -> Options:
    """The translation for this host: ``PTXASW_AVX512_GATHER=scalar`` turns gathers and
    scatters into scalar loads and stores per lane, for CPUs whose vpgather/vpscatter
    are microcoded; ``native`` (the default) keeps the instructions. On this project's
    AMD Zen 4 neither wins overall (interleaved runs: ldu 1060 vs 1210 ns/item native,
    trsv 671 vs 515, gemm and gema equal)."""
    choice = os.environ.get("PTXASW_AVX512_GATHER", "native")
    if choice not in ("scalar", "native"):
        raise PtxError(f"PTXASW_AVX512_GATHER must be scalar or native, got {choice!r}")
    return Options(scalar_gathers=choice == "scalar")


def translate_lifted(lifted: LiftedKernel) -> CModule:
    """The lifted kernel's module as C (symbols included) for this CPU."""
    return translate(lifted.module, host_options())


def c_source(lifted: LiftedKernel) -> str:
    return translate_lifted(lifted).text


def gcc() -> str:
    """The C compiler (``CC`` if set, else ``gcc``); a one-line `PtxError` if missing."""
    cc = os.environ.get("CC", "gcc")
    path = shutil.which(cc)
    if path is None:
        raise PtxError(f"the avx512 back end needs gcc: {cc} not found on PATH")
    return path


@functools.cache
def _gcc_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else path


def check_cpu() -> None:
    """A one-line `PtxError` unless this CPU runs AVX-512 (F, BW, DQ, VL)."""
    missing = [f for f in _REQUIRED if not _host_features().get(f, False)]
    if missing:
        raise PtxError(f"this CPU lacks {', '.join(missing)}: the avx512 engine cannot run here")


@functools.cache
def _host_features() -> dict[str, bool]:
    import llvmlite.binding as llvm

    try:
        return dict(llvm.get_host_cpu_features())
    except RuntimeError:
        return {}


def _run_gcc(args: list[str], what: str) -> None:
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise PtxError(f"avx512: gcc failed to compile the generated C ({what}): {first}")


def compile_c(text: str, kind: str = "so") -> bytes | Path:
    """Build ``text`` with gcc: a shared library path (``so``, cached by content) or the
    bytes of an object (``obj``) or assembly (``asm``)."""
    cc = gcc()
    common = [*FLAGS, *_TAME]
    flags = [*common, "-shared", "-lm"] if kind == "so" else [*common, "-c" if kind == "obj" else "-S"]
    key = hashlib.sha256("\0".join([text, _gcc_version(cc), *flags]).encode()).hexdigest()
    if kind == "so":
        path = cache_dir() / "avx512" / f"{key}.so"
        if path.is_file():
            return path
    with tempfile.TemporaryDirectory(prefix="ptxasw-avx512-") as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_text(text)
        out = Path(tmp) / {"so": "kernel.so", "obj": "kernel.o", "asm": "kernel.s"}[kind]
        _run_gcc([cc, *flags, str(src), "-o", str(out)], kind)
        data = out.read_bytes()
    if kind != "so":
        return data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError as exc:
        raise PtxError(f"avx512: cannot write the compiled kernel to {path}: {exc}") from exc
    return path


def emit(lifted: LiftedKernel, what: str = "ir") -> str | bytes:
    """``ir``: the C source; ``asm``: gcc's assembly; ``obj``: an ELF object."""
    text = c_source(lifted)
    if what == "ir":
        return text
    out = compile_c(text, "asm" if what == "asm" else "obj")
    assert isinstance(out, bytes)
    return out.decode() if what == "asm" else out


def load(lifted: LiftedKernel) -> Library:
    """The kernel compiled for this host and loaded (`runtime.Loaded`)."""
    check_cpu()
    module = translate_lifted(lifted)
    with _lock:
        path = compile_c(module.text, "so")
        assert isinstance(path, Path)
        hit = _loaded.get(str(path))
        if hit is None:
            hit = _loaded[str(path)] = Library(ctypes.CDLL(str(path)), module, path)
        return hit
