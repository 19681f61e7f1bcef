"""Triton's kernels through the drop-in: Triton runs ptxas itself, so ptxasw sits there too.

Triton (PyTorch's kernel compiler) prints PTX with LLVM's NVPTX back end plus
its own inline assembly, and assembles it by running ``ptxas`` as a child
process; ``TRITON_PTXAS_PATH`` names which. Pointing it at ``wrappers/ptxas``
puts ptxasw in the build of every Triton kernel, which is how a PyTorch user
would meet it. This script runs a handful of Triton kernels (element-wise,
1-D and 2-D stencils with masked shifted loads, a row softmax, a layer norm, a
tiled matmul) three ways, each in a fresh process with an empty Triton cache:

``plain``   Triton as shipped (its own ``ptxas``);
``model``   through the drop-in, default settings (the cost model decides);
``always``  through the drop-in with every proven shuffle kept
            (``PTXASW_PROFIT=always``).

and checks that the drop-in's outputs equal the plain ones bit for bit, times
each kernel (``triton.testing.do_bench``, median), times the first compile,
and keeps the drop-in's log and Triton's PTX. The real ``ptxas`` behind the
drop-in is the one Triton ships (``PTXASW_REAL_PTXAS``), so the three differ
only by ptxasw.

Usage (a GPU machine with PyTorch and Triton; ptxasw's dependencies on
``PYTHONPATH``)::

    python benchmarks/triton_dropin.py --out DIR [--json OUT.json]

DIR receives ``ptx/`` (Triton's PTX per kernel), ``ptxasw.log`` (one JSON line
per ``ptxas`` run) and per mode the outputs. ``tests/corpus/triton/`` holds
PTX made this way, for the CPU tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("plain", "model", "always")


def _kernels() -> dict[str, Any]:
    """Triton kernels and their launches, built lazily (Triton imports slowly)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, z, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(z + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def stencil3(x, z, n, BLOCK: tl.constexpr):
        # z[i] = (x[i-1] + 2 x[i] + x[i+1]) / 4 inside, x[i] at the ends
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inner = (offs > 0) & (offs < n - 1)
        left = tl.load(x + offs - 1, mask=inner, other=0.0)
        mid = tl.load(x + offs, mask=offs < n, other=0.0)
        right = tl.load(x + offs + 1, mask=inner, other=0.0)
        out = tl.where(inner, (left + 2.0 * mid + right) * 0.25, mid)
        tl.store(z + offs, out, mask=offs < n)

    @triton.jit
    def stencil9(x, z, n, BLOCK: tl.constexpr):
        # an 8th-order first derivative, radius 4
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inner = (offs >= 4) & (offs < n - 4)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        acc += 0.8 * (
            tl.load(x + offs + 1, mask=inner, other=0.0) - tl.load(x + offs - 1, mask=inner, other=0.0)
        )
        acc -= 0.2 * (
            tl.load(x + offs + 2, mask=inner, other=0.0) - tl.load(x + offs - 2, mask=inner, other=0.0)
        )
        acc += 0.0380952380952381 * (
            tl.load(x + offs + 3, mask=inner, other=0.0) - tl.load(x + offs - 3, mask=inner, other=0.0)
        )
        acc -= 0.0035714285714286 * (
            tl.load(x + offs + 4, mask=inner, other=0.0) - tl.load(x + offs - 4, mask=inner, other=0.0)
        )
        tl.store(z + offs, acc, mask=offs < n)

    @triton.jit
    def blur2d(x, z, h, w, BH: tl.constexpr, BW: tl.constexpr):
        # 5-point average on a h x w grid, the border copied
        rows = tl.program_id(1) * BH + tl.arange(0, BH)[:, None]
        cols = tl.program_id(0) * BW + tl.arange(0, BW)[None, :]
        inside = (rows < h) & (cols < w)
        inner = (rows > 0) & (rows < h - 1) & (cols > 0) & (cols < w - 1)
        at = x + rows * w + cols
        c = tl.load(at, mask=inside, other=0.0)
        s = tl.load(at - 1, mask=inner, other=0.0) + tl.load(at + 1, mask=inner, other=0.0)
        s += tl.load(at - w, mask=inner, other=0.0) + tl.load(at + w, mask=inner, other=0.0)
        tl.store(z + rows * w + cols, tl.where(inner, (s + c) * 0.2, c), mask=inside)

    @triton.jit
    def softmax(x, z, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + row * cols + offs, mask=offs < cols, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(z + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)

    @triton.jit
    def layernorm(x, wt, b, z, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        v = tl.load(x + row * cols + offs, mask=mask, other=0.0)
        mean = tl.sum(v, axis=0) / cols
        d = tl.where(mask, v - mean, 0.0)
        inv = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + eps)
        out = d * inv * tl.load(wt + offs, mask=mask) + tl.load(b + offs, mask=mask)
        tl.store(z + row * cols + offs, out, mask=mask)

    @triton.jit
    def matmul(a, bm, c, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k0 in range(0, k, BK):
            ta = tl.load(a + rm[:, None] * k + (k0 + rk)[None, :])
            tb = tl.load(bm + (k0 + rk)[:, None] * n + rn[None, :])
            acc += tl.dot(ta, tb)
        tl.store(c + rm[:, None] * n + rn[None, :], acc)

    def grid1(n: int, block: int) -> tuple[int]:
        return (triton.cdiv(n, block),)

    gen = torch.Generator(device="cuda").manual_seed(7)

    def rand(*shape: int, dtype: Any = torch.float32) -> Any:
        return torch.rand(*shape, generator=gen, device="cuda", dtype=torch.float32).to(dtype)

    n = 1 << 24 | 77  # not a multiple of any block: a partial last block
    x, y = rand(n), rand(n)
    h, w = 4093, 4099
    img = rand(h * w)
    rows, cols = 8192, 1000
    sm = rand(rows, cols)
    wt, bias = rand(cols), rand(cols)
    a16, b16 = rand(2048, 2048, dtype=torch.float16), rand(2048, 2048, dtype=torch.float16)

    def out_like(t: Any) -> Any:
        return torch.empty_like(t)

    return {
        "add": (add, grid1(n, 1024), (x, y, out_like(x), n), {"BLOCK": 1024}),
        "stencil3": (stencil3, grid1(n, 512), (x, out_like(x), n), {"BLOCK": 512}),
        "stencil9": (stencil9, grid1(n, 512), (x, out_like(x), n), {"BLOCK": 512}),
        "blur2d": (
            blur2d,
            (triton.cdiv(w, 64), triton.cdiv(h, 16)),
            (img, out_like(img), h, w),
            {"BH": 16, "BW": 64},
        ),
        "softmax": (softmax, (rows,), (sm, out_like(sm), cols), {"BLOCK": 1024}),
        "layernorm": (layernorm, (rows,), (sm, wt, bias, out_like(sm), cols, 1e-5), {"BLOCK": 1024}),
        "matmul": (
            matmul,
            (2048 // 128, 2048 // 128),
            (a16, b16, torch.empty(2048, 2048, device="cuda", dtype=torch.float32), 2048, 2048, 2048),
            {"BM": 128, "BN": 128, "BK": 32},
        ),
    }


def child(mode: str, out: Path) -> None:
    """One mode in this fresh process: compile, run, time, save outputs."""
    import torch
    import triton

    kernels = _kernels()
    results: dict[str, Any] = {}
    for name, (fn, grid, args, consts) in kernels.items():
        t0 = time.perf_counter()
        fn[grid](*args, **consts)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        out_tensor = [a for a in args if isinstance(a, torch.Tensor)][-1]  # every output is the last tensor
        torch.save(out_tensor.cpu(), out / f"{mode}_{name}.pt")

        def launch(fn: Any = fn, grid: Any = grid, args: Any = args, consts: Any = consts) -> None:
            fn[grid](*args, **consts)

        ms = triton.testing.do_bench(launch, warmup=50, rep=300, return_mode="median")
        results[name] = {"compile_s": round(compile_s, 3), "ms": ms}
        print(f"{mode:7} {name:10} compile {compile_s:7.2f} s   {ms * 1000:9.2f} us", flush=True)
    (out / f"{mode}.json").write_text(json.dumps(results))


def bundled_ptxas() -> str:
    """The ptxas Triton ships with (what it runs when nobody says otherwise)."""
    import triton

    here = Path(triton.__file__).resolve().parent / "backends" / "nvidia" / "bin" / "ptxas"
    return str(here) if here.exists() else shutil.which("ptxas") or "ptxas"


def parent(out: Path, json_path: Path | None) -> int:
    import torch
    import triton

    out.mkdir(parents=True, exist_ok=True)
    real = bundled_ptxas()
    said = subprocess.run([real, "--version"], capture_output=True, text=True).stdout
    version = said.strip().splitlines()[-1]
    device = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {device}, ptxas: {real}")
    print(f"  {version}")
    log = out / "ptxasw.log"
    timings: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        env = dict(os.environ)
        cache = out / f"triton-cache-{mode}"
        shutil.rmtree(cache, ignore_errors=True)
        env["TRITON_CACHE_DIR"] = str(cache)
        if mode != "plain":
            env["TRITON_PTXAS_PATH"] = str(REPO / "wrappers" / "ptxas")
            env["PTXASW_REAL_PTXAS"] = real
            env["PTXASW_LOG"] = str(log)
            env["PTXASW_CACHE_DIR"] = str(out / f"ptxasw-cache-{mode}")
            if mode == "always":
                env["PTXASW_PROFIT"] = "always"
        run = subprocess.run([sys.executable, __file__, "--child", mode, "--out", str(out)], env=env)
        if run.returncode != 0:
            print(f"{mode}: child failed ({run.returncode})")
            return 1
        timings[mode] = json.loads((out / f"{mode}.json").read_text())
    (out / "ptx").mkdir(exist_ok=True)
    for ptx in (out / "triton-cache-plain").rglob("*.ptx"):
        shutil.copy(ptx, out / "ptx" / ptx.name)
    rows = []
    for name in timings["plain"]:
        plain = torch.load(out / f"plain_{name}.pt")
        row: dict[str, Any] = {"kernel": name, "plain_us": timings["plain"][name]["ms"] * 1000}
        for mode in MODES[1:]:
            other = torch.load(out / f"{mode}_{name}.pt")
            row[f"{mode}_equal"] = bool(torch.equal(plain, other))
            row[f"{mode}_speedup"] = timings["plain"][name]["ms"] / timings[mode][name]["ms"]
            row[f"{mode}_compile_s"] = timings[mode][name]["compile_s"]
        row["plain_compile_s"] = timings["plain"][name]["compile_s"]
        rows.append(row)
        print(
            f"{name:10} plain {row['plain_us']:8.1f} us  model x{row['model_speedup']:.3f} "
            f"eq={row['model_equal']}  always x{row['always_speedup']:.3f} eq={row['always_equal']}  "
            f"compile {row['plain_compile_s']:.2f}/{row['model_compile_s']:.2f}"
            f"/{row['always_compile_s']:.2f} s"
        )
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    summary = {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "ptxas": version,
        "rows": rows,
        "dropin_runs": len(entries),
        "dropin_status": sorted({str(e.get("status")) for e in entries}),
    }
    if json_path:
        json_path.write_text(json.dumps(summary, indent=1))
    ok = all(r["model_equal"] and r["always_equal"] for r in rows)
    print("all outputs equal" if ok else "OUTPUTS DIFFER")
    return 0 if ok else 1


def child_or_parent(
    description: str,
    modes: Sequence[str],
    run_child: Callable[[str, Path], None],
    run_parent: Callable[[Path, Path | None], int],
) -> int:
    """The command line of a script that runs each mode in a child process of
    itself (``--child MODE``, fresh caches per mode) and compares them in the
    parent (``--out DIR [--json OUT]``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", choices=modes)
    args = parser.parse_args()
    if args.child:
        run_child(args.child, args.out)
        return 0
    return run_parent(args.out, args.json)


def main() -> int:
    return child_or_parent(__doc__.splitlines()[0], MODES, child, parent)


if __name__ == "__main__":
    sys.exit(main())
