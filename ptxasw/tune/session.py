"""One tuning run over the kernels of a module: build, assemble, measure, store.

Shared by ``ptxasw tune`` (`ptxasw.cli.tune`) and ``benchmarks/tune_suite.py``:
both hand it a parsed module, launch shape and arguments, a `Device` and the
real ``ptxas``, and get one `KernelResult` per kernel back.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ptxasw import ir
from ptxasw.driver import tuning
from ptxasw.driver.assembler import assembler
from ptxasw.synth.detect import Options
from ptxasw.tune.device import Device, Dims, Value
from ptxasw.tune.select import DEFAULT_MARGIN, Measurement, measure
from ptxasw.tune.variants import Variants, assemble, build_variants

__all__ = ["KernelResult", "Settings", "tune_kernels"]


@dataclass(frozen=True)
class Settings:
    """How to measure and decide (the command line's options)."""

    arch: str
    runs: int = 31
    warmup: int = 5
    margin: float = DEFAULT_MARGIN
    max_delta: int = 31
    time_s: float = 10.0


@dataclass
class KernelResult:
    """One kernel's row: what was rewritten, measured and decided."""

    kernel: str
    loads: int
    shuffles: int
    verdict: str | None  # None: nothing to decide (no proven shuffle)
    original_ms: float | None = None
    shuffle_ms: float | None = None
    speedup: float | None = None
    samples: int = 0
    stored: str | None = None  # the verdict file
    error: str | None = None  # a mismatch (see `Measurement.error`)
    bug: bool = False  # a mismatch that --fmad=false does not explain
    analysis_seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def tune_kernels(
    module: ir.Module,
    text: str,
    kernels: Sequence[str],
    grid: Dims,
    block: Dims,
    args: Sequence[Value],
    compare: Sequence[int],
    device: Device,
    ptxas: Path,
    settings: Settings,
    store: tuning.VerdictStore | None,
    progress: Callable[[str], None] | None = None,
) -> list[KernelResult]:
    """Tune each of ``kernels`` of ``module`` (whose text is ``text``) at one launch shape.

    ``store`` None: measure and report, store nothing.
    """
    # The rewrite measured must be the one the drop-in emits: the same pins of ptxas's rounding.
    options = Options(
        max_delta=settings.max_delta,
        time_s=settings.time_s,
        arch=settings.arch,
        rounding="ptxas",
        assemble=assembler([str(ptxas), f"-arch={settings.arch}"]),
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="ptxasw-tune-") as tmp:
        for name in kernels:
            start = time.perf_counter()
            variants = build_variants(module, text, module.function(name), options)
            seconds = time.perf_counter() - start
            if progress is not None:
                progress(
                    f"{name}: {variants.shuffles} of {variants.loads} global loads shuffled ({seconds:.2f} s)"
                )
            result = KernelResult(name, variants.loads, variants.shuffles, None, analysis_seconds=seconds)
            if variants.shuffles:
                work = Path(tmp) / str(len(results))
                work.mkdir()
                found = _measure(variants, work, grid, block, args, compare, device, ptxas, settings)
                _fill(result, found, name)
                if store is not None:
                    result.stored = str(store.put(_verdict(variants, found, settings, device, grid, block)))
            results.append(result)
    return results


def _measure(
    variants: Variants,
    work: Path,
    grid: Dims,
    block: Dims,
    args: Sequence[Value],
    compare: Sequence[int],
    device: Device,
    ptxas: Path,
    settings: Settings,
) -> Measurement:
    """Assemble both variants, load them and `measure`."""

    def load(fmad: bool) -> dict[str, Any]:
        suffix = "" if fmad else ".nofma"
        texts = {"original": variants.original, "shuffle": variants.rewritten}
        return {
            v: device.load(
                assemble(ptxas, t, settings.arch, work / f"{v}{suffix}.cubin", fmad=fmad), variants.kernel
            )
            for v, t in texts.items()
        }

    return measure(
        device,
        load(True),
        grid,
        block,
        args,
        compare,
        runs=settings.runs,
        warmup=settings.warmup,
        margin=settings.margin,
        without_fma=lambda: load(False),
    )


def _fill(result: KernelResult, found: Measurement, name: str) -> None:
    result.verdict = found.choice
    result.original_ms, result.shuffle_ms = found.original_ms, found.shuffle_ms
    result.speedup = round(found.speedup, 4) if found.speedup else None
    result.samples = found.samples
    result.error = found.error(name)
    result.bug = bool(found.mismatches) and not found.fma_only


def _verdict(
    variants: Variants, found: Measurement, settings: Settings, device: Device, grid: Dims, block: Dims
) -> tuning.Verdict:
    return tuning.Verdict(
        kernel=variants.kernel,
        arch=settings.arch,
        mode="normal",
        max_delta=settings.max_delta,
        kernel_hash=variants.kernel_hash,
        rewrite_hash=variants.rewrite_hash,
        choice=found.choice,
        original_ms=found.original_ms,
        shuffle_ms=found.shuffle_ms,
        margin=settings.margin,
        shuffles=variants.shuffles,
        device=getattr(device, "name", None),
        note="; ".join(found.mismatches) or None,
        extra={
            "grid": list(grid),
            "block": list(block),
            "runs": settings.runs,
            "samples": found.samples,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )
