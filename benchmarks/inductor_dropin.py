"""PyTorch's own generated kernels through the drop-in: torch.compile (Inductor) writes Triton.

Why: `triton_dropin.py` runs kernels we wrote in Triton; a PyTorch user meets
ptxasw through the kernels Inductor generates for their model (fused
element-wise, reductions, normalisations, pooling, scans, the backward pass),
PTX nobody here wrote. This compiles a set of small models and functions
with ``torch.compile`` in fresh processes with empty Inductor and Triton
caches, two ways:

``plain``   Triton as shipped (its own ``ptxas``);
``control`` the same again, in another process: a case whose outputs differ
            between the two is nondeterministic across processes (Inductor
            may still pick another kernel configuration) and is not compared;
``model``   through the drop-in, default settings (the cost model decides:
            on sm_90, reuses of masked loads only);
``always``  through the drop-in with every proven shuffle and reuse kept
            (``PTXASW_PROFIT=always``: the most ptxasw can change);

then checks every output (and gradient) of the drop-in's ways against
``plain`` bit for bit and times each case (median, replayed from a CUDA
graph where it can be captured; a case is a whole compiled function,
several kernels). Inductor runs in its deterministic mode: otherwise it
times a reduction's candidate configs in each process and may pick another
summation order in another run. A case
whose plain outputs differ between two calls in one process (atomics in a
split reduction) is reported as nondeterministic and not compared. From
the drop-in's logs (one JSON line per ``ptxas`` run) it counts the runs,
their statuses and warnings, the kernels, loads and kept sites, and the
time spent; it keeps Triton's PTX (``DIR/ptx``).

Usage (a GPU machine with PyTorch; ptxasw's dependencies on ``PYTHONPATH``)::

    python benchmarks/inductor_dropin.py --out DIR [--json OUT.json]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.triton_dropin import bundled_ptxas, child_or_parent  # noqa: E402

MODES = ("plain", "control", "model", "always")
DROPIN = ("model", "always")


def _cases() -> dict[str, Any]:
    """Name -> (function, inputs, needs_grad). Built in the child (torch imports slowly)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    dev = "cuda"
    mlp = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256), nn.LayerNorm(256)).to(dev)
    conv = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
    conv = conv.to(dev).eval()

    def stencil1d(x: Any) -> Any:
        return x[2:] - 2 * x[1:-1] + x[:-2]

    def stencil1d_r4(x: Any) -> Any:
        c = (0.8, -0.2, 0.038, -0.0036)
        return sum(c[k] * (x[5 + k : x.shape[0] - 3 + k] - x[3 - k : x.shape[0] - 5 - k]) for k in range(4))

    def laplace2d(u: Any) -> Any:
        return u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - 4 * u[1:-1, 1:-1]

    def blur(img: Any) -> Any:
        return F.avg_pool2d(img, 3, stride=1, padding=1)

    def maxpool(img: Any) -> Any:
        return F.max_pool2d(img, 3, stride=2, padding=1)

    def attention(q: Any, k: Any, v: Any) -> Any:
        return torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v

    def scan(x: Any) -> Any:
        return torch.cumsum(x, dim=-1), torch.cummax(x, dim=-1).values

    def rmsnorm_silu(x: Any, w: Any) -> Any:
        return F.silu(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)

    def mlp_train(x: Any) -> Any:
        out = mlp(x)
        loss = out.pow(2).mean()
        grads = torch.autograd.grad(loss, list(mlp.parameters()))
        return (out, *grads)

    def conv_block(img: Any) -> Any:
        with torch.no_grad():
            return conv(img)

    def reductions(x: Any) -> Any:
        return x.sum(0), x.amax(1), x.argmax(1), x.var(1), torch.logsumexp(x, 1)

    r = torch.randn
    return {
        "stencil1d": (stencil1d, [r(1 << 20, device=dev)]),
        "stencil1d_r4": (stencil1d_r4, [r(1 << 20, device=dev)]),
        "laplace2d": (laplace2d, [r(1024, 1024, device=dev)]),
        "blur": (blur, [r(8, 16, 128, 128, device=dev)]),
        "maxpool": (maxpool, [r(8, 16, 128, 128, device=dev)]),
        "attention": (attention, [r(8, 256, 64, device=dev) for _ in range(3)]),
        "scan": (scan, [r(64, 1000, device=dev)]),
        "rmsnorm_silu": (rmsnorm_silu, [r(4096, 768, device=dev), r(768, device=dev)]),
        "mlp_train": (mlp_train, [r(2048, 256, device=dev)]),
        "conv_block": (conv_block, [r(8, 16, 64, 64, device=dev)]),
        "reductions": (reductions, [r(512, 3000, device=dev)]),
    }


def _flat(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def child(mode: str, out: Path) -> None:
    import torch
    import torch._inductor.config as inductor_config

    # Inductor times candidate configs of a reduction in every process, and
    # near-tied winners differ in their summation order: its deterministic
    # mode picks them without timing, so two processes print the same PTX.
    if hasattr(inductor_config, "deterministic"):
        inductor_config.deterministic = True

    results: dict[str, Any] = {}
    for name, (fn, args) in _cases().items():
        compiled = torch.compile(fn)
        t0 = time.perf_counter()
        try:
            first = [t.detach().clone() for t in _flat(compiled(*args))]
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            second = [t.detach() for t in _flat(compiled(*args))]
            torch.cuda.synchronize()
        except Exception as exc:  # a failed case is a finding, not the end of the run
            results[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
            print(f"{mode} {name}: {results[name]['error']}", flush=True)
            continue
        deterministic = all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
        torch.save([t.cpu() for t in first], out / f"{mode}_{name}.pt")
        ms, timing = _time(lambda fn=compiled, a=args: fn(*a))
        results[name] = {
            "compile_s": round(compile_s, 2),
            "deterministic": deterministic,
            "ms": ms,
            "timing": timing,
        }
        print(
            f"{mode} {name}: {compile_s:.1f} s, {ms * 1000:.1f} us, deterministic={deterministic}", flush=True
        )
    (out / f"{mode}.json").write_text(json.dumps(results))


def _time(call: Any) -> tuple[float, str]:
    """Median ms of ``call``, replayed from a CUDA graph where it can be
    captured (a compiled function's Python and guards cost more than these
    kernels take; a graph times the GPU's work alone), else launched."""
    from triton.testing import do_bench, do_bench_cudagraph

    try:
        return do_bench_cudagraph(call, rep=300, return_mode="median"), "cuda-graph"
    except Exception:  # not capturable: plain launches, Python overhead included
        import torch

        torch.cuda.synchronize()
        return do_bench(call, warmup=50, rep=300, return_mode="median"), "launches"


def summarize_log(log: Path) -> dict[str, Any]:
    """What the drop-in did, from its log."""
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    inputs = [i for e in entries for i in e.get("inputs", [])]
    synthesis = [p for i in inputs for p in i.get("passes", []) if p.get("name") == "shuffle-synthesis"]
    return {
        "runs": len(entries),
        "status": dict(Counter(str(e.get("status")) for e in entries)),
        "input_status": dict(Counter(str(i.get("status")) for i in inputs)),
        "warnings": sorted({str(w) for e in entries for w in e.get("warnings", [])})[:20],
        "rewritten_files": sum(1 for i in inputs if i.get("rewritten")),
        "kernels": sum(p.get("kernels", 0) for p in synthesis),
        "loads": sum(p.get("loads", 0) for p in synthesis),
        "sites": sum(p.get("shuffles", 0) for p in synthesis),
        "partial_kernels": sum(p.get("partial", 0) for p in synthesis),
        "seconds": round(sum(e.get("seconds", 0.0) for e in entries), 1),
        "real_exit_nonzero": sum(1 for e in entries if e.get("real_exit")),
    }


def parent(out: Path, json_path: Path | None) -> int:
    import torch
    import triton

    out.mkdir(parents=True, exist_ok=True)
    real = bundled_ptxas()
    device = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {device}, ptxas: {real}", flush=True)
    for mode in DROPIN:
        (out / f"ptxasw-{mode}.log").unlink(missing_ok=True)
    done: dict[str, dict[str, Any]] = {}
    wall: dict[str, float] = {}
    for mode in MODES:
        env = dict(os.environ)
        for var, folder in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor")):
            path = out / f"{folder}-cache-{mode}"
            shutil.rmtree(path, ignore_errors=True)
            env[var] = str(path)
        env["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
        env["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
        if mode in DROPIN:
            env["TRITON_PTXAS_PATH"] = str(REPO / "wrappers" / "ptxas")
            env["PTXASW_REAL_PTXAS"] = real
            env["PTXASW_LOG"] = str(out / f"ptxasw-{mode}.log")
            env["PTXASW_CACHE_DIR"] = str(out / f"ptxasw-cache-{mode}")
            if mode == "always":
                env["PTXASW_PROFIT"] = "always"
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, __file__, "--child", mode, "--out", str(out)], env=env)
        wall[mode] = round(time.perf_counter() - t0, 1)
        if run.returncode != 0:
            print(f"{mode}: child failed ({run.returncode})")
            return 1
        done[mode] = json.loads((out / f"{mode}.json").read_text())
    (out / "ptx").mkdir(exist_ok=True)
    for ptx in (out / "triton-cache-plain").rglob("*.ptx"):
        shutil.copy(ptx, out / "ptx" / ptx.name)
    rows = []
    for name, plain in done["plain"].items():
        row: dict[str, Any] = {"case": name, **{f"plain_{k}": v for k, v in plain.items()}}
        for mode in MODES[1:]:
            other = done[mode].get(name, {})
            row[f"{mode}_compile_s"] = other.get("compile_s")
            row[f"{mode}_error"] = other.get("error")
            if "error" in plain or "error" in other:
                row[f"{mode}_equal"] = None
                continue
            row[f"{mode}_speedup"] = round(plain["ms"] / other["ms"], 4)
            a, b = torch.load(out / f"plain_{name}.pt"), torch.load(out / f"{mode}_{name}.pt")
            same = len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
            row[f"{mode}_equal"] = same
        if not plain.get("deterministic", True) or row["control_equal"] is False:
            for mode in DROPIN:  # the plain kernels themselves differ between runs
                row[f"{mode}_equal"] = "nondeterministic" if row[f"{mode}_equal"] is not None else None
        rows.append(row)
        print(
            f"{name:14} {plain.get('ms', 0) * 1000:8.1f} us  "
            + "  ".join(f"{m} x{row.get(f'{m}_speedup') or 0:.3f} eq={row[f'{m}_equal']}" for m in MODES[1:])
            + f"  compile {row.get('plain_compile_s')}/{row['model_compile_s']}/{row['always_compile_s']} s"
        )
    summary = {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "ptx_files": len(list((out / "ptx").glob("*.ptx"))),
        "wall_s": wall,
        "rows": rows,
        "dropin": {mode: summarize_log(out / f"ptxasw-{mode}.log") for mode in DROPIN},
    }
    print(json.dumps(summary["dropin"], indent=1))
    if json_path:
        json_path.write_text(json.dumps(summary, indent=1) + "\n")
    ok = all(r[f"{m}_equal"] in (True, "nondeterministic") for r in rows for m in DROPIN)
    print("all compared outputs equal" if ok else "OUTPUTS DIFFER OR A CASE FAILED")
    return 0 if ok else 1


def main() -> int:
    return child_or_parent(__doc__.splitlines()[0], MODES, child, parent)


if __name__ == "__main__":
    sys.exit(main())
