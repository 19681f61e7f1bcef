"""``ptxasw tune`` over the kernel suite: a verdict and a speed-up per kernel, and the drop-in's answer.

For every suite kernel (`benchmarks/kernels/suite.py`: its sm_90 ``-O3`` PTX
from nvcc, launch shape, random arguments and outputs) this does what
``ptxasw tune`` does (`ptxasw.tune.session.tune_kernels`: the original and
the proven ``normal`` rewrite assembled with the real ptxas, checked bit for
bit, timed with CUDA events, verdict stored), then runs the drop-in's
pipeline on the same PTX with the default ``PTXASW_PROFIT=model`` and reports
whether it applied the verdict (``dropin``: the shuffles it kept, ``tuned``
when a verdict decided). The ``final`` column is the speed-up the drop-in now
gives the kernel: the measured one where the verdict kept the shuffles, 1.0
where it kept the original; issue 7's goal is no kernel below 0.99.

On the GPU machine (needs nvcc, ptxas, CuPy, and ptxasw's own dependencies)::

    python benchmarks/tune_suite.py [--kernels jacobi,gaussblur] [--size dram|l2] [--runs 31] \\
        [--json OUT.json] [--tune-dir DIR]

``--dry-run`` runs the same steps on the CPU with the concrete interpreter at a
small CI shape (times mean nothing; verdicts go to a scratch folder, for the
drop-in check only): what the tests run.
Verdicts go to ``--tune-dir`` (default: where the drop-in looks,
`ptxasw.driver.tuning`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.kernels import suite  # noqa: E402

ARCH = "sm_90"


class InterpreterGpu:
    """A `ptxasw.tune.device.Device` on the CPU: each variant's PTX (written beside its
    cubin) in the concrete interpreter, timed with ``perf_counter`` (for dry runs only)."""

    name = "ptxasw concrete interpreter (CPU, dry run)"

    def load(self, cubin: Path, symbol: str) -> Any:
        from ptxasw.parser import read_ptx

        return read_ptx(str(cubin.with_suffix(".ptx"))), symbol

    def run(self, kernel: Any, grid: Any, block: Any, args: Sequence[Any]) -> list[np.ndarray | None]:
        from ptxasw.emulator.concrete.interpreter import launch

        module, symbol = kernel
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        result = launch(module, symbol, grid, block, copies)
        if result.warnings:
            raise RuntimeError(f"{symbol}: the interpreter did not model everything: {result.warnings}")
        return [b if isinstance(b, np.ndarray) else None for b in result.buffers]

    def time(
        self, kernels: Mapping[str, Any], grid: Any, block: Any, args: Any, runs: int, warmup: int
    ) -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in kernels}
        for _ in range(runs):
            for name, kernel in kernels.items():
                start = time.perf_counter()
                self.run(kernel, grid, block, args)
                samples[name].append((time.perf_counter() - start) * 1000)
        return samples


def dropin_decision(text: str, name: str, tune_dir: Path) -> dict[str, Any]:
    """The drop-in's synthesis record for ``text`` on ``ARCH`` with the default settings and ``tune_dir``."""
    from ptxasw.driver import settings
    from ptxasw.driver.pipeline import run_pipeline

    saved = {k: os.environ.get(k) for k in ("PTXASW_TUNE_DIR", "PTXASW_PROFIT", "PTXASW_MODE")}
    os.environ["PTXASW_TUNE_DIR"] = str(tune_dir)
    os.environ.pop("PTXASW_PROFIT", None)
    os.environ.pop("PTXASW_MODE", None)
    arch, settings.TARGET_ARCH = settings.TARGET_ARCH, ARCH
    try:
        result = run_pipeline(text, name)
    finally:
        settings.TARGET_ARCH = arch
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return next(p for p in result.passes if p["name"] == "shuffle-synthesis")


def tune_suite(
    names: Sequence[str],
    size: str,
    runs: int,
    warmup: int,
    margin: float,
    tune_dir: Path,
    dry: bool,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Tune every kernel of ``names``; one row each (printed as it is done).
    ``checkpoint`` gets the result so far after each kernel (a time limit keeps them)."""
    from ptxasw.driver import tuning
    from ptxasw.driver.ptxas import find_real_ptxas
    from ptxasw.parser import parse_ptx
    from ptxasw.tune.device import open_gpu
    from ptxasw.tune.session import Settings, tune_kernels

    device: Any = InterpreterGpu() if dry else open_gpu()
    ptxas = find_real_ptxas()
    store = tuning.VerdictStore(tune_dir)
    paths = suite.compile_many((n, ARCH, False) for n in names)
    settings = Settings(ARCH, runs=runs, warmup=warmup, margin=margin)
    rows = []
    print(f"{'kernel':<14} {'shuffles':>9} {'orig ms':>9} {'shuf ms':>9} {'speed-up':>8}  verdict   drop-in")
    for seed, name in enumerate(names):
        k = suite.get(name)
        if dry:
            case = suite.small_shapes(k)[0]
            shape, block = case.shape, case.block
        else:
            shape, block = suite.gpu_shapes(k)[size], k.blocks[0]
        block3 = tuple((*block, 1, 1)[:3])
        grid = k.grid(shape, block3)
        text = paths[(name, ARCH, False)].read_text()
        module = parse_ptx(text, f"{name}.ptx")
        args = suite.launch_args(k, shape, seed)
        (r,) = tune_kernels(
            module, text, [k.symbol], grid, block3, args, k.outputs, device, ptxas, settings, store
        )  # fmt: skip
        row = {"kernel": name, "shape": list(shape), "block": list(block3), **r.as_json()}
        record = dropin_decision(text, f"{name}.ptx", tune_dir)
        row["dropin_shuffles"] = record.get("shuffles", 0)
        row["dropin_tuned"] = bool(record.get("tuned"))
        kept = r.verdict == "shuffle" and row["dropin_tuned"]
        row["final_speedup"] = r.speedup if kept else 1.0
        rows.append(row)
        print(_line(row), flush=True)
        if r.error:
            print(f"tune_suite: error: {r.error}", file=sys.stderr, flush=True)
        if checkpoint is not None:
            checkpoint(_result(device.name, size, runs, margin, dry, rows))
    return _result(device.name, size, runs, margin, dry, rows)


def _result(device: str, size: str, runs: int, margin: float, dry: bool, rows: list[dict]) -> dict[str, Any]:
    finals = [r["final_speedup"] for r in rows if r["final_speedup"]]
    return {
        "device": device,
        "arch": ARCH,
        "size": "ci" if dry else size,
        "runs": runs,
        "margin": margin,
        "dry_run": dry,
        "rows": rows,
        "summary": {
            "kernels": len(rows),
            "kept_shuffles": sum(1 for r in rows if r["verdict"] == "shuffle"),
            "kept_original": sum(1 for r in rows if r["verdict"] == "original"),
            "nothing_to_tune": sum(1 for r in rows if r["verdict"] is None),
            "mismatches": [r["kernel"] for r in rows if r["error"]],
            "bugs": [r["kernel"] for r in rows if r["bug"]],  # not explained by FMA contraction
            "worst_final_speedup": min(finals) if finals else None,
            "geomean_final_speedup": float(np.exp(np.mean(np.log(finals)))) if finals else None,
        },
    }


def _line(row: dict[str, Any]) -> str:
    def ms(v: float | None) -> str:
        return f"{v:9.4f}" if v else f"{'-':>9}"

    speed = f"{row['speedup']:8.3f}" if row["speedup"] else f"{'-':>8}"
    dropin = f"{row['dropin_shuffles']} shuffles" + (" (tuned)" if row["dropin_tuned"] else "")
    verdict = row["verdict"] or "none"
    return (
        f"{row['kernel']:<14} {row['shuffles']:>4}/{row['loads']:<4} {ms(row['original_ms'])} "
        f"{ms(row['shuffle_ms'])} {speed}  {verdict:<9} {dropin}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="", help="Comma-separated suite kernels (default: all).")
    parser.add_argument("--size", choices=("l2", "dram"), default="dram", help="Problem size (default dram).")
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--margin", type=float, default=0.01)
    parser.add_argument(
        "--tune-dir", type=Path, default=None, help="Where verdicts go (default: the drop-in's)."
    )
    parser.add_argument("--json", dest="json_out", type=Path, help="Also write the results as JSON here.")
    parser.add_argument(
        "--dry-run", action="store_true", help="CPU interpreter at a CI shape; stores nothing."
    )
    ns = parser.parse_args(argv)
    from ptxasw.driver import tuning
    from ptxasw.driver.ptxas import WrapperError
    from ptxasw.tune.device import DeviceError

    names = [n for n in ns.kernels.split(",") if n] or list(suite.KERNELS)
    unknown = [n for n in names if n not in suite.KERNELS]
    if unknown:
        print(f"tune_suite: error: no suite kernel {unknown[0]!r}", file=sys.stderr)
        return 2
    if ns.dry_run:  # interpreter times are no verdicts: a scratch store, for the drop-in check only
        tune_dir = Path(tempfile.mkdtemp(prefix="ptxasw-tune-dry-"))
    else:
        tune_dir = ns.tune_dir or tuning.tune_dir() or Path(tempfile.mkdtemp(prefix="ptxasw-tune-"))

    def save(result: dict[str, Any]) -> None:
        if ns.json_out:
            ns.json_out.parent.mkdir(parents=True, exist_ok=True)
            ns.json_out.write_text(json.dumps(result, indent=1) + "\n")

    try:
        result = tune_suite(names, ns.size, ns.runs, ns.warmup, ns.margin, tune_dir, ns.dry_run, save)
    except (DeviceError, WrapperError, FileNotFoundError) as exc:
        print(f"tune_suite: error: {exc}", file=sys.stderr)
        return 1
    finally:
        if ns.dry_run:
            shutil.rmtree(tune_dir, ignore_errors=True)
    s = result["summary"]
    print(
        f"{s['kernels']} kernels on {result['device']}: shuffles kept {s['kept_shuffles']}, original kept "
        f"{s['kept_original']}, nothing to tune {s['nothing_to_tune']}, mismatches {len(s['mismatches'])}; "
        f"worst final speed-up {s['worst_final_speedup']}, geomean {s['geomean_final_speedup']}"
    )
    save(result)
    return 1 if s["bugs"] else 0


if __name__ == "__main__":
    sys.exit(main())
