"""Why GCC's OpenACC Laplacians gain from exact shuffles on Hopper and nvcc's does not.

GCC's 3-D Laplacians (``benchmarks/gcc_openacc.py``, ``gcc_openacc_c.py``)
gain 3-32 % over their originals on an H100 with both x-neighbours exact
shuffles of the centre; the kernel suite's nvcc Laplacian, the same 7-point
stencil with the same two shuffles, loses 4-8 %. GCC's code differs in two
ways a load's cost may depend on: it loads through generic addresses
(``ld.f32``), and it runs in blocks of one warp (vector 32, one worker).
This takes the suite's Laplacian (``results/gpu_prep/laplacian.{original,
normal}.ptx``, made by ``gpu_speedup.py --prepare``) and runs original and
exact rewrite with blocks of 32x8 and of 32x1, and both again with every
global access made generic (``cvta.to.global`` dropped, ``ld.global`` and
``st.global`` written ``ld``/``st``: cudaMalloc's addresses are valid
generic addresses). Each output is checked bit for bit against its
original. Runs where CuPy is (the GPU machine):

    python benchmarks/load_shape_probe.py [--json OUT]

Measured on an H100 (``results/load_shape_probe_h100.json``, 2026-11-27):
neither explains it. Rewrite over original, L2 / DRAM: global loads, 32x8
blocks 0.916 / 0.961; 32x1 blocks 1.001 / 1.000; generic loads 0.923 / 0.960
and 1.000 / 1.000; every output bit-equal. What GCC's Laplacians have besides
is the gang loop: a warp computes row after row, where the suite's kernels
compute one point a thread: ``gang_loop_probe.py`` measures that (it is the
difference, through ptxas's schedule of the rolled loop).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import fixture_steps as steps  # noqa: E402

PREP = REPO / "benchmarks" / "results" / "gpu_prep"
SHAPES = {"l2": (256, 128, 64), "dram": (512, 512, 256)}
BLOCKS = [(32, 8, 1), (32, 1, 1)]


def generic(ptx: str) -> str:
    """The same kernel with every global access through the generic address."""
    ptx = re.sub(r"cvta\.to\.global\.u64\s+(%rd\d+), (%rd\d+);", r"mov.u64 \1, \2;", ptx)
    return ptx.replace("ld.global.", "ld.").replace("st.global.", "st.")


def run(runs: int = 31, reps: int = 30) -> dict[str, Any]:
    import cupy as cp

    texts = {v: (PREP / f"laplacian.{v}.ptx").read_text() for v in ("original", "normal")}
    rows = []
    for space in ("global", "generic"):
        source = {v: t if space == "global" else generic(t) for v, t in texts.items()}
        paths = {}
        for variant, text in source.items():
            paths[variant] = Path(tempfile.mkdtemp()) / f"laplacian.{variant}.{space}.ptx"
            paths[variant].write_text(text)
        modules = {
            "original": cp.RawModule(path=str(paths["original"])),
            "original_again": cp.RawModule(path=str(paths["original"])),
            "rewritten": cp.RawModule(path=str(paths["normal"])),
        }
        kernels = {v: m.get_function("laplacian") for v, m in modules.items()}
        for size, (nx, ny, nz) in SHAPES.items():
            u = cp.asarray(np.random.default_rng(nx).standard_normal(nx * ny * nz).astype(np.float32))
            for block in BLOCKS:
                grid = (-(-nx // block[0]), -(-ny // block[1]), -(-nz // block[2]))
                outputs = {v: cp.zeros(nx * ny * nz, cp.float32) for v in kernels}
                args = {
                    v: (u, out, np.float32(-6.0), np.float32(1.0), np.int32(nx), np.int32(ny), np.int32(nz))
                    for v, out in outputs.items()
                }
                calls = {v: lambda k=k, a=args[v], g=grid, b=block: k(g, b, a) for v, k in kernels.items()}
                for go in calls.values():
                    go()
                cp.cuda.Device().synchronize()
                row: dict[str, Any] = {
                    "space": space,
                    "size": size,
                    "shape": [nx, ny, nz],
                    "block": list(block),
                    "equal": bool(
                        cp.array_equal(
                            outputs["original"].view(cp.uint32), outputs["rewritten"].view(cp.uint32)
                        )
                    ),
                }
                row |= steps.timing(cp, calls, runs, reps)
                rows.append(row)
                print(json.dumps(row), flush=True)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return {"device": device, "kernel": "laplacian", "runs": runs, "launches_per_sample": reps, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    data = run()
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0 if all(r["equal"] for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
