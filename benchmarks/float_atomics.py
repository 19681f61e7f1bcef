"""How fast does the concrete interpreter run float atomics on one word?

Why: a warp's atomics on one word are a chain of 32 dependent updates
(lane order), and each float update is one `ConcreteDomain.fp` call; when the
atomics moved to the shared collectives that call became the cost
(8192 threads of ``atom.add.f32`` on one word: 0.38 s -> 2.93 s). This
times such kernels, and the per-call cost of `fp` for ``add.f32`` on one
lane (the atomic's case) and on a warp.

    python benchmarks/float_atomics.py            # a table
    python benchmarks/float_atomics.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ptxasw.emulator.concrete.domain import Bits, ConcreteDomain
from ptxasw.emulator.concrete.interpreter import launch
from ptxasw.emulator.semantics.domain import FpOp
from ptxasw.parser import parse_ptx

KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry sum(.param .u64 x, .param .u64 total)
{{
	.reg .b64 %rd<5>;
	.reg .b32 %r<4>;
	.reg .{t} %f<3>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [total];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mad.lo.u32 %r1, %r2, %r3, %r1;
	mul.wide.u32 %rd3, %r1, {n};
	add.u64 %rd4, %rd1, %rd3;
	ld.global.{t} %f1, [%rd4];
	atom.global.add.{t} %f2, [%rd2], %f1;
	ret;
}}
"""


@dataclass
class Row:
    """One case: what was timed, seconds (best of the repeats) and, for a
    single `fp` call, the general path's seconds for the same call."""

    case: str
    seconds: float
    general_seconds: float | None = None


def time_kernel(ptx_type: str, threads: int, repeat: int) -> float:
    dtype = np.float32 if ptx_type == "f32" else np.float64
    module = parse_ptx(KERNEL.format(t=ptx_type, n=np.dtype(dtype).itemsize), "<bench>")
    x = np.random.default_rng(0).standard_normal(threads).astype(dtype)
    times = []
    for _ in range(repeat):
        total = np.zeros(1, dtype=dtype)
        start = time.perf_counter()
        launch(module, "sum", threads // 256, 256, [x, total])
        times.append(time.perf_counter() - start)
    return min(times)


def time_fp(op: FpOp, lanes: int, calls: int, repeat: int) -> tuple[float, float]:
    """Seconds per call of `fp` and of `fp_general` (best of ``repeat`` rounds, interleaved)."""
    d = ConcreteDomain(lanes)
    rng = np.random.default_rng(1)
    a = Bits(rng.integers(0, 1 << 32, lanes, dtype=np.uint64), 32)
    b = Bits(rng.integers(0, 1 << 32, lanes, dtype=np.uint64), 32)
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((d.fp, d.fp_general)):
            start = time.perf_counter()
            for _ in range(calls):
                fn(op, a, b)
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return best[0], best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--threads", type=int, default=8192)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = [
        Row(
            f"atom.add.f32 on one word, {args.threads} threads", time_kernel("f32", args.threads, args.repeat)
        ),
        Row(
            f"atom.add.f64 on one word, {args.threads} threads", time_kernel("f64", args.threads, args.repeat)
        ),
    ]
    for name, op, lanes in (
        ("fp add.rn.ftz.f32, 1 lane (one atomic step)", FpOp("add", ".f32", rounding=".rn", ftz=True), 1),
        ("fp add.f32, 32 lanes", FpOp("add", ".f32"), 32),
        ("fp mul.rn.f32, 32 lanes", FpOp("mul", ".f32", rounding=".rn"), 32),
        ("fp add.f64, 32 lanes", FpOp("add", ".f64"), 32),
        ("fp add.rz.f32, 32 lanes (no fast path)", FpOp("add", ".f32", rounding=".rz"), 32),
    ):
        fast, general = time_fp(op, lanes, 500, args.repeat)
        rows.append(Row(name, fast, general))
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return
    width = max(len(r.case) for r in rows)
    print(f"{'case':<{width}}  {'time':>10}  {'general path':>12}")
    for r in rows:
        general = "" if r.general_seconds is None else _show(r.general_seconds)
        print(f"{r.case:<{width}}  {_show(r.seconds):>10}  {general:>12}")


def _show(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds >= 0.01 else f"{seconds * 1e6:.1f} us"


if __name__ == "__main__":
    main()
