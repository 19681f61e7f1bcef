"""The PIRCH evidence kernels on a real GPU, compared with the interpreter bit for bit.

Two halves, because the GPU machine has CUDA, NumPy and CuPy but not ptxasw's
dependencies, and the development machine has no GPU:

    # on the GPU machine: run every kernel (sm_90, -O3 and -G, random and special
    # inputs), save inputs and outputs
    python benchmarks/pirch/gpu_check.py run OUT.npz [--batch 4]
    # here: run the same PTX on the same inputs in the interpreter, compare bits
    python benchmarks/pirch/gpu_check.py compare OUT.npz [--json] [--out FILE]

A GPU result that differs from the interpreter is a bug in one of them (or a
difference the PTX ISA allows: approximate instructions, NaN payloads; none
of these kernels uses approximate instructions, so every bit must agree, NaN
payloads included). Each result is also held against the NumPy reference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.pirch import suite  # noqa: E402

ARCH = "sm_90"


def _key(symbol: str, debug: bool, special: bool) -> str:
    return f"{symbol}|{'G' if debug else 'O3'}|{'special' if special else 'random'}"


def run_gpu(out: Path, batch: int) -> int:
    """Launch every kernel with CuPy; save each case's inputs and outputs to ``out``."""
    import cupy

    saved: dict[str, np.ndarray] = {}
    modules: dict[tuple[str, bool], object] = {}
    for kernel in suite.KERNELS.values():
        for debug in (False, True):
            key = (kernel.source, debug)
            if key not in modules:
                modules[key] = cupy.RawModule(path=str(suite.compile_ptx(kernel.source, ARCH, debug)))
            for wg in kernel.wg_sizes:
                for special in (False, True):
                    args = kernel.args(batch, wg, seed=wg + 100 * special, special=special)
                    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
                    grid, block = kernel.launch_shape(batch, wg)
                    fn = modules[key].get_function(kernel.symbol(wg))  # type: ignore[attr-defined]
                    fn(grid, block, tuple(device))
                    cupy.cuda.Device().synchronize()
                    name = _key(kernel.symbol(wg), debug, special)
                    for i, a in enumerate(args):
                        saved[f"{name}|in{i}"] = np.asarray(a)
                    for i in kernel.outputs:
                        saved[f"{name}|out{i}"] = cupy.asnumpy(device[i])
    np.savez_compressed(out, **saved)
    outputs = sum(1 for k in saved if "|out" in k)
    print(f"gpu_check: {outputs} outputs on {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    return 0


def _unfused(kernel: suite.Kernel, wg: int, debug: bool) -> bool:
    """Whether the kernel's PTX has a float mul/add/sub without a rounding modifier.

    The PTX ISA lets ptxas fuse those into fma on the GPU, while the interpreter
    rounds each one: their results may differ by design.
    """
    fn = suite.load_module(kernel.source, ARCH, debug).function(kernel.symbol(wg))
    rounding = (".rn", ".rz", ".rm", ".rp")
    for inst in fn.instructions():
        mods = inst.modifiers
        is_float = any(m in (".f32", ".f64") for m in mods)
        if inst.opcode in ("mul", "add", "sub") and is_float and not any(m in rounding for m in mods):
            return True
    return False


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def compare(saved_path: Path, as_json: bool, out: Path | None) -> int:
    """Run each saved case in the interpreter; rows of (case, bits differing, reference problems)."""
    saved = np.load(saved_path)
    cases = sorted({k.rsplit("|", 1)[0] for k in saved.files})
    by_symbol = {k.symbol(wg): (k, wg) for k in suite.KERNELS.values() for wg in k.wg_sizes}
    rows = []
    for case in cases:
        symbol, mode, data = case.split("|")
        kernel, wg = by_symbol[symbol]
        nargs = sum(1 for k in saved.files if k.startswith(case + "|in"))
        args = [saved[f"{case}|in{i}"] for i in range(nargs)]
        args = [a if a.ndim else a.dtype.type(a) for a in args]
        gpu = [saved[f"{case}|out{i}"] for i in kernel.outputs]
        nan_payload = 0
        try:
            interp = suite.run_interpreter(kernel, wg, args, ARCH, debug=mode == "G")
            differ = 0
            for g, c in zip(gpu, interp, strict=True):
                g, c = g.reshape(-1), c.reshape(-1)
                wrong = _bits(g) != _bits(c)
                differ += int(wrong.sum())
                if np.issubdtype(g.dtype, np.floating):
                    nan_payload += int((wrong & np.isnan(g) & np.isnan(c)).sum())
            error = None
        except Exception as exc:
            differ, error = -1, f"{type(exc).__name__}: {exc}"[:200]
        problems = suite.check_outputs(kernel, args, gpu, wg, special=data == "special")
        row = {
            "case": case,
            "interp_bits_differ": differ,  # elements whose bits differ (-1: the interpreter failed)
            "of_which_nan_payload": nan_payload,  # both NaN, other sign or payload
            "gpu_vs_reference": problems[:1],
            "unfused_mul_add": _unfused(kernel, wg, mode == "G"),
        }
        if error:
            row["error"] = error
        rows.append(row)
    bad = [r for r in rows if r["interp_bits_differ"] != 0]
    values = [r for r in bad if r["interp_bits_differ"] != r["of_which_nan_payload"]]
    summary = {
        "cases": len(rows),
        "gpu_equals_interpreter": len(rows) - len(bad),
        "differing": [r["case"] for r in bad],
        "differing_only_in_nan_payloads": [r["case"] for r in bad if r not in values],
        "differing_in_values": [r["case"] for r in values],
        "differing_in_values_without_unfused_mul_add": [
            r["case"] for r in values if not r["unfused_mul_add"]
        ],
        "gpu_off_reference": [r["case"] for r in rows if r["gpu_vs_reference"]],
    }
    document = {"rows": rows, "summary": summary}
    if out:
        out.write_text(json.dumps(document, indent=2) + "\n")
    if as_json:
        print(json.dumps(document, indent=2))
    else:
        for r in bad:
            print(
                f"{r['case']}: {r['interp_bits_differ']} elements differ from the interpreter "
                f"({r['of_which_nan_payload']} only in NaN sign/payload"
                f"{'; the PTX has unfused float mul/add/sub' if r['unfused_mul_add'] else ''})"
            )
        for r in rows:
            if r["gpu_vs_reference"]:
                print(f"{r['case']}: GPU vs reference: {r['gpu_vs_reference'][0]}")
        print(
            f"{summary['gpu_equals_interpreter']} of {summary['cases']} cases: GPU == interpreter bit for "
            f"bit; {len(summary['gpu_off_reference'])} GPU results off the NumPy reference"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="on the GPU machine")
    run.add_argument("out", type=Path)
    run.add_argument("--batch", type=int, default=4)
    cmp = sub.add_parser("compare", help="here, against the interpreter")
    cmp.add_argument("saved", type=Path)
    cmp.add_argument("--json", action="store_true")
    cmp.add_argument("--out", type=Path)
    opts = parser.parse_args(argv)
    if opts.command == "run":
        return run_gpu(opts.out, opts.batch)
    return compare(opts.saved, opts.json, opts.out)


if __name__ == "__main__":
    sys.exit(main())
