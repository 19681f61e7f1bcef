"""The kernel suite as clang-19 builds it, and the atomic fixture, on a GPU: rewrites against originals.

CI runs clang's builds of the suite (``tests/test_kernel_suite_clang.py``)
and ``tests/fixtures/atomic_uses.ptx`` in the concrete interpreter; this
runs the same PTX on a GPU. ``prepare`` (here: clang-19, ptxas, ptxasw)
builds the suite at -O3 and at -O0 -g and rewrites each build with every
proven shuffle (what the CI test keeps), and copies the atomic fixture and
its rewrite; ``run`` (there: CuPy) launches every CI launch of every kernel,
original and rewrite, checks them bit for bit against each other and the
original against the suite's NumPy reference, then the three atomic kernels
over 2^20 elements in blocks of 32, 96, 128 and 1000 threads (totals, the
appended sums as sorted sets, the maximum).

    python benchmarks/clang_suite_gpu.py prepare --dir DIR
    python benchmarks/clang_suite_gpu.py run --dir DIR [--json OUT]

On an H100 (``results/clang_suite_gpu_h100.json``, 2026-11-28): 93 launches
at -O3 (18 kernels with shuffles) and 93 at -O0 -g (14), every rewrite
bit-equal to its original and every original within the suite's tolerance
of NumPy; the atomics at the four block sizes: the same totals, sums and
maxima, and the right ones.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.kernels import suite  # noqa: E402

LEVELS = ("O3", "O0g")
ATOMIC = REPO / "tests" / "fixtures" / "atomic_uses.ptx"


def prepare(directory: Path) -> int:
    from tests.test_kernel_suite_clang import SOURCES, Builds

    directory.mkdir(parents=True, exist_ok=True)
    builds = Builds(Path(tempfile.mkdtemp()))
    for level in LEVELS:
        for source in SOURCES:
            if builds.ptx[(source.stem, level)] is None:
                continue  # sincos without libdevice
            done = builds.rewrite(source.stem, level)
            shutil.copy(done.original, directory / f"{source.stem}-{level}.original.ptx")
            shutil.copy(done.rewritten, directory / f"{source.stem}-{level}.rewritten.ptx")
    shutil.copy(ATOMIC, directory / "atomic_uses.original.ptx")
    rewritten = directory / "atomic_uses.rewritten.ptx"
    command = [sys.executable, "-m", "ptxasw", "rewrite", str(ATOMIC), "-o", str(rewritten)]
    return subprocess.run(command, check=False).returncode


def run_suite(directory: Path) -> list[dict[str, Any]]:
    from benchmarks.kernels import gpu

    rows = []
    for level in LEVELS:
        for name, k in suite.KERNELS.items():
            original = directory / f"{k.source.stem}-{level}.original.ptx"
            rewritten = directory / f"{k.source.stem}-{level}.rewritten.ptx"
            if not original.exists():
                continue
            shuffles = rewritten.read_text().count("shfl.sync")
            for seed, (shape, block) in enumerate(suite.small_shapes(k)):
                a = gpu.run(original, k, shape, block, seed=seed)
                b = gpu.run(rewritten, k, shape, block, seed=seed)
                problems = k.check(a, k.reference(suite.launch_args(k, shape, seed=seed)))
                rows.append(
                    {
                        "kernel": name,
                        "level": level,
                        "shape": list(shape),
                        "block": list(block),
                        "shfl": shuffles,
                        "equal": suite.same_bits(a, b) == [],
                        "reference": not problems,
                    }
                )
    return rows


def run_atomics(directory: Path, n: int = 1 << 20) -> list[dict[str, Any]]:
    import cupy as cp

    variants = ("original", "rewritten")
    modules = {v: cp.RawModule(path=str(directory / f"atomic_uses.{v}.ptx")) for v in variants}
    rng = np.random.default_rng(0)
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    floats = rng.standard_normal(n).astype(np.float32)
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    rows = []
    for block in (32, 96, 128, 1000):
        grid = (n + block - 1) // block
        got = {}
        for variant, module in modules.items():
            size = np.int32(n)
            total = cp.zeros(1, cp.int32)
            module.get_function("pair_sum")((grid,), (block,), (cp.asarray(ints), total, size))
            out, count = cp.zeros(n, cp.float32), cp.zeros(1, cp.int32)
            module.get_function("append_pairs")((grid,), (block,), (cp.asarray(floats), out, count, size))
            best = cp.zeros(1, cp.uint32)
            module.get_function("max_of_pairs")((grid,), (block,), (cp.asarray(words), best, size))
            c = int(count.get()[0])
            got[variant] = (int(total.get()[0]), np.sort(cp.asnumpy(out[:c])), int(best.get()[0]))
        (t0, s0, m0), (t1, s1, m1) = got["original"], got["rewritten"]
        wide = ints.astype(np.int64)
        sums = floats[:-2] + floats[1:-1] + floats[2:]
        rows.append(
            {
                "kernel": "atomic_uses",
                "block": block,
                "equal": t0 == t1 and m0 == m1 and np.array_equal(s0.view(np.uint32), s1.view(np.uint32)),
                "reference": (t0 & 0xFFFFFFFF) == int((wide[1:-1] + wide[2:]).sum()) & 0xFFFFFFFF
                and m0 == int((words[:-1] ^ words[1:]).max())
                and np.array_equal(s0, np.sort(sums[sums > 0])),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--json", type=Path, help="run: write the results here")
    args = parser.parse_args()
    if args.step == "prepare":
        return prepare(args.dir)
    import cupy as cp

    rows = [*run_suite(args.dir), *run_atomics(args.dir)]
    bad = [r for r in rows if not (r["equal"] and r["reference"])]
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    for level in LEVELS:
        level_rows = [r for r in rows if r.get("level") == level]
        shuffled = len({r["kernel"] for r in level_rows if r["shfl"]})
        print(f"{device} -{level}: {len(level_rows)} launches, {shuffled} kernels with shuffles")
    atomics = sum(r["kernel"] == "atomic_uses" for r in rows)
    print(f"atomics: {atomics} launches; launches not equal or wrong: {len(bad)}")
    if args.json:
        args.json.write_text(json.dumps({"device": device, "rows": rows, "bad": len(bad)}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
