"""Speed of lifted warp-synchronous kernels against plain C (gcc) and OpenCL C (PoCL).

Usage:
    python benchmarks/lift_speed.py [--json] [--quick] [--out [PATH]] [--wg 8,16] [--kernels gemm,ldu]
                                    [--seconds S] [--threads N] [--max-mb MB] [--no-interp]
                                    [--targets gcc,pocl,llvm,avx512,interp]

borG's batched kernels (benchmarks/pirch: GEMA, GEMM, TRSV, LDU with static
pivoting), single and double precision, per WG_SIZE, on these targets:

  gcc     benchmarks/pirch/ref_c, ``gcc -O3 -march=native -fopenmp``, OpenMP over the batch
  pocl    benchmarks/pirch/ref_opencl/borg.cl on PoCL (exchange through local memory)
  llvm    nvcc's PTX lifted by ptxasw (ptxasw.pirch_bridge.runtime, when importable)
  avx512  the same lifted kernel as C with AVX-512 intrinsics, gcc -O3 (when gcc and the CPU allow)
  interp  ptxasw's concrete interpreter, for scale: a small batch, one thread,
          extrapolated linearly to the batch of the others (marked ``extrapolated``)

Every target first runs a small batch that must match the NumPy reference
(benchmarks/pirch/suite.py); a target that does not is reported with its
error and not timed. The timed batch is sized so the gcc version takes about
``--seconds`` (1 s; 0.1 s with --quick), capped so the arguments fit in
``--max-mb`` (and in a tenth of the memory available: every target's outputs
are kept for the cross-check); where the cap keeps a batch shorter, a timed
round runs it back to back as many times as make up ``--seconds`` of gcc's
time (``reps``; fresh inputs each time, copied outside the clock) and reports
the time per batch. Each target runs (after a warm-up) ``--rounds`` such
rounds and the best counts (once when the warm-up took over 5x ``--seconds``).
With ``--out`` the JSON is rewritten after every kernel, so a run cut short
keeps what it measured. The
timed batch's outputs are compared with gcc's within 1000x the kernel's
tolerance (millions of random items include a few badly conditioned ones).
All targets get the same number of threads (``--threads``, default all CPUs;
PoCL through POCL_MAX_PTHREAD_COUNT).

What ``seconds`` covers: gcc, the C code's own clock around the batch loop;
pocl, enqueue to completion of the kernel (inputs already on the device); llvm,
the runtime's ``LiftedLaunch.kernel_seconds`` around its threads' calls into
the kernel, on the arrays in place (``inplace=True``: no copies, as gcc's
loop works on its arrays; ``copy_seconds`` says what copying them would cost);
interp, the launch.

Rows: ``{"kernel", "precision", "target", "seconds", "vs_gcc", "vs_pocl"}``
plus ``wg``, ``batch``, ``extrapolated`` and ``note``; ``vs_X`` is X's
seconds over the target's (above 1: faster than X). The summary holds the
geometric means per target. Goal (issue 8): lifted code >= 1.5x PoCL and
>= 1.0x gcc in geometric mean (borG reached 1.49x and 2.05x on AVX-512).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.pirch import references, suite  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "lift_speed.json"
CHECK_BATCH = 64
INTERP_BATCH = 2
GOAL_VS_POCL = 1.5
GOAL_VS_GCC = 1.0
BASES = ("gema", "gemm", "trsv", "ldu")
SLOW = 5.0  # a target whose warm-up takes SLOW times --seconds is timed once
LOOSE = 1000.0  # tolerance factor of the timed batch's cross-check

Runner = Callable[[list[object]], tuple[float, list[np.ndarray]]]  # args -> (seconds, outputs)


# --------------------------------------------------------------------------
# Targets: each one a function (kernel, wg, threads) -> Runner, or an error


def _gcc(kernel: suite.Kernel, wg: int, threads: int) -> Runner:
    ref = references.CReference(kernel, wg)

    def run(args: list[object]) -> tuple[float, list[np.ndarray]]:
        fresh = suite.copy_args(args)
        seconds = ref.run(fresh, threads)
        return seconds, [fresh[i] for i in kernel.outputs]

    return run


def _pocl(kernel: suite.Kernel, wg: int, threads: int) -> Runner:
    ref = references.OpenCLReference(kernel, wg)
    loaded: list[int] = []

    def run(args: list[object]) -> tuple[float, list[np.ndarray]]:
        if not loaded or loaded[0] != id(args):
            ref.load(args)
            loaded[:] = [id(args)]
        seconds = ref.run()
        return seconds, ref.outputs()

    return run


def _llvm(
    kernel: suite.Kernel,
    wg: int,
    threads: int,
    pack: int | None = None,
    timeout: float = 600,
    engine: str = "llvm",
) -> Runner:
    from ptxasw.pirch_bridge.lift import lift_kernel
    from ptxasw.pirch_bridge.runtime import default_pack, launch_lifted

    module = suite.load_module(kernel.source)
    pack = pack or default_pack(module, kernel.symbol(wg), wg)  # one 512-bit vector of the floats
    _compile_in_child(kernel, wg, pack, timeout, engine)
    # Lifted once: each launch only loads the compiled object (lifting a WG-32
    # kernel again per launch took seconds, a timed round repeats the launch).
    lifted = lift_kernel(module, kernel.symbol(wg), wg_size=wg, wg_pack=pack)

    def run(args: list[object]) -> tuple[float, list[np.ndarray]]:
        grid, block = kernel.launch_shape(_batch(args), wg)
        fresh = suite.copy_args(args)  # outside the clock, as gcc's fresh copies
        result = launch_lifted(lifted, grid, block, fresh, threads=threads, inplace=True, engine=engine)
        return result.kernel_seconds, [result.buffers[i] for i in kernel.outputs]

    return run


def _compile_in_child(kernel: suite.Kernel, wg: int, pack: int, timeout: float, engine: str = "llvm") -> None:
    """Lift and compile in a child process first, under ``timeout``.

    LLVM's -O3 on the IR of a large kernel (LDU at WG 16 and up) can take many
    minutes and cannot be interrupted in process; the child fills the JIT's disk
    cache, so the launch in this process then only loads the object.
    """
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from benchmarks.pirch import suite;"
        "from ptxasw.pirch_bridge.lift import lift_kernel;"
        "from ptxasw.pirch_bridge.runtime import compile_lifted;"
        "compile_lifted(lift_kernel(suite.load_module(sys.argv[2]), sys.argv[3],"
        " wg_size=int(sys.argv[4]), wg_pack=int(sys.argv[5])), sys.argv[6])"
    )
    command = [sys.executable, "-c", code, str(ROOT), kernel.source, kernel.symbol(wg), str(wg), str(pack)]
    command.append(engine)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"lifting and compiling took over {timeout:g} s") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"lifting failed (exit {proc.returncode})")


def _interp(kernel: suite.Kernel, wg: int, threads: int) -> Runner:
    def run(args: list[object]) -> tuple[float, list[np.ndarray]]:
        start = time.perf_counter()
        outputs = suite.run_interpreter(kernel, wg, args)
        return time.perf_counter() - start, outputs

    return run


def lifted_available() -> str | None:
    """None when the lifter's runtime imports, else why not."""
    try:
        import ptxasw.pirch_bridge.runtime  # noqa: F401
    except ImportError as exc:
        return f"ptxasw.pirch_bridge.runtime not importable: {exc}"
    return None


def avx512_available() -> str | None:
    """None when gcc and this CPU can build and run the avx512 target, else why not."""
    try:
        from ptxasw.pirch_bridge.backends import avx512

        avx512.gcc()
        avx512.check_cpu()
    except Exception as exc:
        return str(exc)
    return None


TARGETS: dict[str, Callable[[suite.Kernel, int, int], Runner]] = {
    "gcc": _gcc,
    "pocl": _pocl,
    "llvm": _llvm,
    "avx512": lambda kernel, wg, threads: _llvm(kernel, wg, threads, engine="avx512"),
    "interp": _interp,
}
NOTES = {
    "llvm": "kernel time on the arrays in place (copy_seconds: what copying them would add)",
    "avx512": "C with AVX-512 intrinsics (gcc -O3), kernel time on the arrays in place",
    "interp": "one thread, a batch of 2, extrapolated linearly",
}


def _batch(args: list[object]) -> int:
    return next(a.shape[0] for a in args if isinstance(a, np.ndarray))


# --------------------------------------------------------------------------
# Measuring


def _item_bytes(kernel: suite.Kernel, wg: int) -> int:
    return sum(a.nbytes for a in kernel.args(1, wg) if isinstance(a, np.ndarray))


def available_mb() -> float:
    """Memory the system has free now (MB); infinite where it cannot say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (ValueError, OSError, AttributeError):
        return math.inf


def size_batch(gcc: Runner, kernel: suite.Kernel, wg: int, seconds: float, max_mb: float) -> int:
    """A batch for which gcc takes about ``seconds``, within ``max_mb`` of arguments
    and a tenth of the free memory (arguments, their fresh copies and every
    target's outputs are alive at once)."""
    max_mb = min(max_mb, available_mb() / 10)
    cap = max(CHECK_BATCH, int(max_mb * 2**20 // _item_bytes(kernel, wg)))
    batch = min(4096, cap)
    while True:
        args = kernel.args(batch, wg, seed=1)
        gcc(args)  # warm
        took = min(gcc(args)[0] for _ in range(2))
        if took >= seconds / 2 or batch >= cap:
            break
        batch = min(cap, int(batch * min(16.0, seconds / max(took, 1e-6))))
    return min(cap, max(CHECK_BATCH, int(batch * seconds / max(took, 1e-9))))


def check(runner: Runner, kernel: suite.Kernel, wg: int, batch: int) -> str | None:
    """None when the runner matches the NumPy reference on a random batch, else what differs."""
    args = kernel.args(batch, wg, seed=7)
    try:
        _, outputs = runner(args)
    except Exception as exc:  # a target that cannot run this kernel is reported, not fatal
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    problems = suite.check_outputs(kernel, args, outputs, wg)
    return problems[0][:300] if problems else None


def measure(
    kernel: suite.Kernel, wg: int, targets: list[str], opts: argparse.Namespace
) -> list[dict[str, object]]:
    """The rows of one kernel, precision and WG size."""
    runners: dict[str, Runner] = {}
    errors: dict[str, str] = {}
    for name in targets:
        try:
            if name in ("llvm", "avx512"):
                runners[name] = _llvm(kernel, wg, opts.threads, opts.wg_pack, opts.lift_timeout, name)
            else:
                runners[name] = TARGETS[name](kernel, wg, opts.threads)
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        problem = check(runners[name], kernel, wg, INTERP_BATCH if name == "interp" else CHECK_BATCH)
        if problem:
            errors[name] = problem
            del runners[name]
    if "gcc" not in runners:
        raise SystemExit(f"{kernel.symbol(wg)}: the gcc reference fails: {errors.get('gcc')}")
    batch = size_batch(runners["gcc"], kernel, wg, opts.seconds, opts.max_mb)
    args = kernel.args(batch, wg, seed=1)
    runners["gcc"](args)  # warm
    reps = max(1, round(opts.seconds / max(runners["gcc"](args)[0], 1e-9)))
    seconds: dict[str, float] = {}
    outputs: dict[str, list[np.ndarray]] = {}
    for name, runner in runners.items():
        if name == "interp":
            small = kernel.args(INTERP_BATCH, wg, seed=1)
            took, _ = runner(small)
            seconds[name] = took * batch / INTERP_BATCH
            continue
        start = time.perf_counter()
        runner(args)  # warm-up (JIT compiles, page faults)
        slow = time.perf_counter() - start > SLOW * opts.seconds  # one timed round is enough
        best = math.inf
        for _ in range(1 if slow else opts.rounds):
            took = 0.0
            for _ in range(1 if slow else reps):
                one, outputs[name] = runner(args)
                took += one
            best = min(best, took / (1 if slow else reps))
        seconds[name] = best
    # The timed batch too: every target against gcc, with a looser tolerance (millions of
    # random items include a few badly conditioned ones, where the orders of operations differ).
    loose = dataclasses.replace(kernel, rtol=kernel.rtol * LOOSE, atol=kernel.atol * LOOSE)
    for name, out in outputs.items():
        if name != "gcc":
            for got, want in zip(out, outputs["gcc"], strict=True):
                problem = suite.mismatches(loose, got, want)
                if problem:
                    errors[name] = f"timed batch differs from gcc: {problem}"[:300]
                    seconds.pop(name, None)
    copying = copy_seconds(kernel, args) if "llvm" in seconds or "avx512" in seconds else None
    rows = []
    for name in targets:
        took = seconds.get(name)
        row: dict[str, object] = {
            "kernel": kernel.base,
            "precision": kernel.precision,
            "wg": wg,
            "target": name,
            "batch": batch,
            "reps": reps,
            "seconds": took,
            "vs_gcc": seconds["gcc"] / took if took else None,
            "vs_pocl": seconds["pocl"] / took if took and "pocl" in seconds else None,
            "extrapolated": name == "interp",
        }
        if name in NOTES:
            row["note"] = NOTES[name]
        if name in ("llvm", "avx512") and copying is not None:
            row["copy_seconds"] = copying
        if name in errors:
            row["error"] = errors[name]
        rows.append(row)
    return rows


def copy_seconds(kernel: suite.Kernel, args: list[object]) -> float:
    """What the runtime's copies cost (best of 3): every array in, the outputs back (part of llvm's time)."""
    arrays = [(i, a) for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        copies = {i: np.array(a, copy=True, order="C") for i, a in arrays}
        for i in kernel.outputs:
            result = copies[i].copy()
            args[i][...] = result  # type: ignore[index]
        best = min(best, time.perf_counter() - start)
    return best


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarise(rows: list[dict[str, object]], targets: list[str]) -> dict[str, object]:
    per_target = {}
    for name in targets:
        mine = [r for r in rows if r["target"] == name and r["seconds"]]
        per_target[name] = {
            "rows": len(mine),
            "failed": sum(1 for r in rows if r["target"] == name and "error" in r),
            "geomean_vs_gcc": geomean([float(r["vs_gcc"]) for r in mine if r["vs_gcc"]]),  # type: ignore[arg-type]
            "geomean_vs_pocl": geomean([float(r["vs_pocl"]) for r in mine if r["vs_pocl"]]),  # type: ignore[arg-type]
        }
    return {
        "targets": per_target,
        "goal_vs_pocl": GOAL_VS_POCL,
        "goal_vs_gcc": GOAL_VS_GCC,
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


# --------------------------------------------------------------------------
# Command line


def _options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quick", action="store_true", help="WG 8 and 32, ~0.1 s batches, one round")
    parser.add_argument("--out", nargs="?", const=str(RESULT), help=f"write the JSON here (default {RESULT})")
    parser.add_argument("--wg", help="WG sizes, comma-separated (default 4,8,16,32)")
    parser.add_argument("--kernels", help=f"kernels, comma-separated (default {','.join(BASES)})")
    parser.add_argument("--precision", choices=("single", "double", "both"), default="both")
    parser.add_argument(
        "--seconds", type=float, help="what the gcc version should take (default 1; quick 0.1)"
    )
    parser.add_argument("--rounds", type=int, help="timed runs per target, best counts (default 3; quick 1)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-mb", type=float, default=512.0, help="cap on the arguments of one batch")
    parser.add_argument("--no-interp", action="store_true", help="leave the interpreter out")
    parser.add_argument(
        "--targets", help="targets to run, comma-separated (default: gcc, pocl and all available ones)"
    )
    parser.add_argument(
        "--wg-pack", type=int, help="work groups per lifted call (default: runtime.default_pack)"
    )
    parser.add_argument(
        "--lift-timeout", type=float, default=600.0, help="seconds to lift and compile one kernel"
    )
    opts = parser.parse_args(argv)
    opts.wg_sizes = (
        [int(w) for w in opts.wg.split(",")] if opts.wg else ([8, 32] if opts.quick else [4, 8, 16, 32])
    )
    opts.bases = opts.kernels.split(",") if opts.kernels else list(BASES)
    opts.seconds = opts.seconds or (0.1 if opts.quick else 1.0)
    opts.rounds = opts.rounds or (1 if opts.quick else 3)
    return opts


def _print_table(rows: list[dict[str, object]], summary: dict[str, object]) -> None:
    from rich.console import Console
    from rich.table import Table

    def num(value: object, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    table = Table(title="Lifted PTX vs gcc (OpenMP) vs PoCL: borG's batched kernels (seconds per batch)")
    for column in ("kernel", "precision", "WG", "target", "batch", "seconds", "vs gcc", "vs pocl", "note"):
        table.add_column(column, justify="right" if column in ("WG", "batch", "seconds") else "left")
    for r in rows:
        note = str(r.get("error") or ("extrapolated" if r["extrapolated"] else ""))
        table.add_row(
            str(r["kernel"]),
            str(r["precision"]),
            str(r["wg"]),
            str(r["target"]),
            f"{r['batch']:,}",
            num(r["seconds"], ".4g"),
            num(r["vs_gcc"], ".2f") + ("x" if r["vs_gcc"] else ""),
            num(r["vs_pocl"], ".2f") + ("x" if r["vs_pocl"] else ""),
            note[:80],
        )
    console = Console(width=None if sys.stdout.isatty() else 160)
    console.print(table)
    for name, s in summary["targets"].items():  # type: ignore[union-attr]
        console.print(
            f"{name}: {s['rows']} rows timed, {s['failed']} failed; geometric mean "
            f"{num(s['geomean_vs_gcc'], '.2f')}x vs gcc, {num(s['geomean_vs_pocl'], '.2f')}x vs pocl"
        )
    console.print(
        f"goal for lifted code: >= {GOAL_VS_POCL}x vs pocl and >= {GOAL_VS_GCC}x vs gcc "
        f"({summary['cpus']} CPUs, load {summary['load_average_1min']})"
    )


def _document(
    rows: list[dict[str, object]], targets: list[str], opts: argparse.Namespace, complete: bool
) -> dict[str, object]:
    """The JSON document: rows and summary; ``status`` says whether every kernel was measured."""
    summary = summarise(rows, targets)
    summary["opencl_device"] = references.opencl_device() if "pocl" in targets else None
    summary["threads"] = opts.threads
    summary["seconds_target"] = opts.seconds
    summary["status"] = "complete" if complete else "partial: cut short before every kernel was measured"
    return {"rows": rows, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    opts = _options(argv)
    references.set_pocl_threads(opts.threads)  # before anything opens OpenCL
    targets = ["gcc", "pocl"]
    missing = lifted_available()
    if missing is None:
        targets.append("llvm")
        missing = avx512_available()
        if missing is None:
            targets.append("avx512")
        else:
            print(f"lift_speed: no avx512 target ({missing})", file=sys.stderr)
    else:
        print(f"lift_speed: no lifted targets ({missing})", file=sys.stderr)
    if not opts.no_interp:
        targets.append("interp")
    if opts.targets:
        wanted = opts.targets.split(",")
        unknown = sorted(set(wanted) - set(TARGETS))
        if unknown or "gcc" not in wanted:
            raise SystemExit(f"lift_speed: --targets needs gcc and known targets ({', '.join(TARGETS)})")
        targets = [t for t in targets if t in wanted]
    precisions = {"single": ["f32"], "double": ["f64"], "both": ["f32", "f64"]}[opts.precision]
    rows: list[dict[str, object]] = []
    configs = [(f"{b}_{p}", wg) for b in opts.bases for p in precisions for wg in opts.wg_sizes]
    for done, (name, wg) in enumerate(configs, 1):
        kernel = suite.KERNELS[name]
        started = time.perf_counter()
        rows.extend(measure(kernel, wg, targets, opts))
        print(f"lift_speed: {kernel.symbol(wg)} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        document = _document(rows, targets, opts, complete=done == len(configs))
        if opts.out:  # after every kernel: a run cut short keeps what it measured
            Path(opts.out).parent.mkdir(parents=True, exist_ok=True)
            Path(opts.out).write_text(json.dumps(document, indent=2) + "\n")
    if opts.json:
        print(json.dumps(document, indent=2))
    else:
        _print_table(rows, document["summary"])  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
