"""The two steps of running a fixture's rewrite on a GPU beside its original.

``prepare`` runs here, where ptxasw is installed: the fixture and ``ptxasw
rewrite``'s PTX of it go into a directory of the working tree. ``run`` runs
on the GPU machine, which has CuPy but need not have ptxasw's dependencies:
the script's own ``run`` loads both texts, checks and times them, and its
rows say whether each output equals the original's. Shared by
`benchmarks/openmp_offload.py` and `benchmarks/gcc_openacc.py`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["main", "prepare", "timing"]


def prepare(fixture: Path, directory: Path) -> int:
    """The original and ``ptxasw rewrite``'s PTX, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "original.ptx").write_text(fixture.read_text())
    cmd = [sys.executable, "-m", "ptxasw", "rewrite", str(fixture), "-o", str(directory / "rewritten.ptx")]
    return subprocess.run(cmd, check=False).returncode


def timing(cp: Any, calls: dict[str, Callable[[], Any]], runs: int, reps: int) -> dict[str, float]:
    """Each variant's median ms a launch (``ms_<variant>``: CUDA events around
    ``reps`` launches a sample, ``runs`` samples, the variants interleaved),
    the rewrite's speed-up over the original and the original's over itself
    loaded again (``a_a``, the noise): ``calls`` holds ``original``,
    ``original_again`` and ``rewritten``."""
    import numpy as np

    start, stop = cp.cuda.Event(), cp.cuda.Event()
    samples: dict[str, list[float]] = {v: [] for v in calls}
    for _ in range(runs):
        for variant, go in calls.items():
            start.record()
            for _ in range(reps):
                go()
            stop.record()
            stop.synchronize()
            samples[variant].append(cp.cuda.get_elapsed_time(start, stop) / reps)
    ms = {v: float(np.median(s)) for v, s in samples.items()}
    return {
        **{f"ms_{v}": t for v, t in ms.items()},
        "speedup": ms["original"] / ms["rewritten"],
        "a_a": ms["original"] / ms["original_again"],
    }


def main(
    description: str,
    fixture: Path,
    run: Callable[[Path], dict[str, Any]],
    exact: Callable[[dict[str, Any]], bool],
) -> int:
    """``prepare`` or ``run`` as the command line says (``--dir``, and for
    ``run`` ``--json``); ``run`` exits 1 unless ``exact`` holds of every row."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="run: write the results here")
    args = parser.parse_args()
    if args.step == "prepare":
        return prepare(fixture, args.dir)
    data = run(args.dir)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0 if all(exact(row) for row in data["rows"]) else 1
