"""The two variants ``ptxasw tune`` measures, and the real ``ptxas`` that assembles them.

The rewrite measured is exactly the one the drop-in would emit if the
verdict says ``shuffle``: the same plan (detect and prove, in ``normal``
mode, every proven shuffle kept as ``PTXASW_PROFIT=always`` would) emitted
into the module, and the same hashes (`ptxasw.synth.tuned`) that the drop-in
computes to find and check the verdict.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from ptxasw import ir
from ptxasw.driver import tuning
from ptxasw.errors import PtxError
from ptxasw.ir.printer import print_module
from ptxasw.synth import tuned
from ptxasw.synth.detect import KernelPlan, Options
from ptxasw.synth.prove import PROVED
from ptxasw.synth.synthesize import plan_kernel

__all__ = ["Variants", "assemble", "build_variants"]


@dataclasses.dataclass
class Variants:
    """A kernel's original and rewritten module text, and what identifies them."""

    kernel: str
    original: str
    rewritten: str
    kernel_hash: str
    rewrite_hash: str
    shuffles: int
    loads: int
    plan: KernelPlan


def build_variants(module: ir.Module, text: str, fn: ir.Function, options: Options) -> Variants:
    """Plan ``fn`` (``normal`` mode, every proven shuffle) and emit it into a copy.

    ``text`` is the module as the user wrote it: the drop-in assembles the
    user's own file when it changes nothing, so that is the original measured.
    """
    options = dataclasses.replace(options, mode="normal", profit="always")
    kernel_hash = tuning.text_hash(tuned.kernel_text(module, fn))
    plan = plan_kernel(module, fn, options)
    twin = tuned.emit_on_copy(module, fn, plan)
    rewrite_hash = tuning.text_hash(tuned.kernel_text(twin, twin.function(fn.name)))
    return Variants(
        kernel=fn.name,
        original=text,
        rewritten=print_module(twin),
        kernel_hash=kernel_hash,
        rewrite_hash=rewrite_hash,
        shuffles=sum(1 for v in plan.chosen if v.proof == PROVED and v.in_kernel),
        loads=plan.global_loads,
        plan=plan,
    )


def assemble(ptxas: Path, text: str, arch: str, out: Path, *, fmad: bool = True) -> Path:
    """Assemble ``text`` with NVIDIA's ``ptxas`` for ``arch`` into ``out`` (a cubin).

    The PTX is written beside ``out``; ptxas's first error line becomes a `PtxError`.
    """
    ptx = out.with_suffix(".ptx")
    ptx.write_text(text, encoding="utf-8", errors="surrogateescape")
    cmd = [str(ptxas), "-arch", arch, *([] if fmad else ["--fmad=false"]), "-o", str(out), str(ptx)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PtxError(f"cannot run {ptxas}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        first = lines[0] if lines else f"exit status {proc.returncode}"
        raise PtxError(f"{ptx.name}: ptxas -arch {arch} failed: {first}")
    return out
