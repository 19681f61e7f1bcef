"""GPU speed-up of shuffle synthesis over the kernel suite: the PTXASW paper's Figure 2, on our GPU.

Three phases, because the GPU machine has CUDA, CuPy and NumPy but not the
analysis (lark, z3) and maybe not matplotlib:

1. ``--prepare DIR`` (here, on the CPU)::

       python benchmarks/gpu_speedup.py --prepare benchmarks/results/gpu_prep

   For every suite kernel: the sm_90 ``-O3`` PTX from nvcc, one synthesis plan
   (detect + prove, `ptxasw.synth.synthesize.plan_kernel`, keeping the
   rounding ptxas gives the original: `ptxasw.synth.pinning`) emitted in the
   three modes, so ``normal``, ``noload`` and ``nocorner`` replace exactly the
   same loads; each variant assembled with the real ``ptxas -arch=sm_90 -v``
   for its registers and spills; ``DIR/manifest.json`` says what is where.
   ``DIR`` must be in the working tree and not git-ignored: the device call
   copies the working tree.

2. ``--run DIR [--json OUT] [--quick]`` (on the GPU)::

       python benchmarks/gpu_speedup.py --run benchmarks/results/gpu_prep --json OUT.json

   Each variant is assembled there with its ``ptxas -v`` (a RawModule of the
   PTX if that fails) and, per kernel and size (`suite.gpu_shapes`: L2-resident
   and DRAM-bound, the natural block), run once on the same random inputs:
   ``normal`` must equal ``original`` bit for bit, ``noload``/``nocorner`` are
   recorded as exact or not (with the number of differing elements); the
   original runs twice (a determinism control) and ``normal`` is compared
   again assembled with ``--fmad=false`` (``exact_without_fma``: before the
   rewrite kept ptxas's rounding, ptxas fused other mul/add pairs in the two
   texts; now the sums it chooses for are pinned for the default build, so a
   kernel with pins differs under ``--fmad=false`` by design). Then the
   variants are timed interleaved (one sample of each per round, so clock
   drift hits all alike): a sample is a CUDA graph of ``reps`` back-to-back
   launches between two CUDA events (``reps`` makes a sample last >= 0.5 ms, so
   launch overhead and event resolution do not count), the median over
   ``--runs`` samples (default 51) after warm-up. ``--backend interp --dry-run``
   runs the same logic on the CPU through the concrete interpreter at the CI
   shapes (no timing value), which is what the tests use.

3. ``--plot JSON [--out PNG] [--md MD]`` (anywhere with matplotlib, the
   ``bench`` extra): speed-up per kernel, one bar per variant, both sizes, and
   a Markdown table.

Speed-ups are original ms / variant ms (> 1: faster). Results of the H100 run:
``results/gpu_speedup_h100.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.kernels import suite  # noqa: E402

VARIANTS = ("original", "normal", "noload", "nocorner")
MODES = VARIANTS[1:]
ARCH = "sm_90"
MANIFEST = "manifest.json"
RESULTS = REPO / "benchmarks" / "results"
AGAIN = "original-again"  # the A/A control's name in the timing
MIN_SAMPLE_MS = 0.5  # a timed sample lasts at least this long (reps launches)
MAX_REPS = 256


class BenchError(Exception):
    """Bad input or a broken preparation: reported as one line, exit 2."""


# --------------------------------------------------------------------------
# ptxas -v


@dataclasses.dataclass(frozen=True)
class Resources:
    """What ``ptxas -v`` says about one kernel."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int


_REGS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_verbose(stderr: str, symbol: str) -> Resources:
    """The resources of ``symbol`` from ``ptxas -v`` output (the lines after its
    ``Compiling entry function`` line)."""
    start = stderr.find(f"Compiling entry function '{symbol}'")
    if start < 0:
        raise BenchError(f"ptxas -v did not mention {symbol}")
    tail = stderr[start:]
    regs, spills = _REGS.search(tail), _SPILLS.search(tail)
    if regs is None or spills is None:
        raise BenchError(f"ptxas -v: no register or spill line for {symbol}")
    stack, stores, loads = (int(x) for x in spills.groups())
    return Resources(int(regs.group(1)), stores, loads, stack)


def ptxas_verbose(
    ptx: Path, symbol: str, cubin: Path | None = None, fmad: bool = True, options: Sequence[str] = ()
) -> Resources:
    """Assemble ``ptx`` with the real ``ptxas -arch=sm_90 -v`` (into ``cubin`` if given);
    ``options``: more ptxas options (``-maxrregcount=64``)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise BenchError("ptxas not found on PATH")
    with tempfile.TemporaryDirectory(prefix="ptxasw-speedup-") as scratch:
        out = cubin or Path(scratch) / f"{ptx.stem}.cubin"
        fma = [] if fmad else ["--fmad=false"]
        cmd = [ptxas, f"-arch={ARCH}", "-v", *fma, *options, str(ptx), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise BenchError(f"{ptx}: ptxas failed: {first}")
    return parse_ptxas_verbose(proc.stderr, symbol)


def ptxas_version() -> str:
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return "none"
    text = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=False).stdout
    return (text.strip().splitlines() or ["unknown"])[-1]


# --------------------------------------------------------------------------
# Phase 1: prepare (CPU: needs the analysis)


def emit_variant(module: Any, symbol: str, plan: Any, mode: str) -> str:
    """The PTX of ``module`` with ``plan``'s proven shuffles (and its rounding
    pins) emitted in ``mode``, on a copy of the kernel, so one plan (one
    analysis, one set of proofs) yields all three modes, which then differ
    only in the code around the same shuffles."""
    from ptxasw.ir.printer import print_module
    from ptxasw.synth.tuned import emit_on_copy

    return print_module(emit_on_copy(module, module.function(symbol), plan, mode))


def synthesis_summary(plan: Any) -> dict[str, Any]:
    """The paper's Table-2 columns for one kernel, plus what the proofs and blocked loads say."""
    from ptxasw.synth.prove import PROVED

    chosen = plan.chosen
    deltas = [abs(v.delta) for v in chosen if v.delta is not None]
    reasons: dict[str, int] = {}
    for v in plan.verdicts:
        if not v.rewritten and v.in_kernel:
            key = (v.reason or "blocked").split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
    return {
        "loads": plan.global_loads,
        "shuffles": len(chosen),
        "average_delta": round(sum(deltas) / len(deltas), 3) if deltas else None,
        "deltas": sorted(v.delta for v in chosen if v.delta is not None),
        "analysis_seconds": round(plan.seconds, 3),
        "proofs": {
            "proved": sum(1 for v in plan.verdicts if v.proof == PROVED),
            "failed": sum(1 for v in plan.verdicts if v.proof not in (None, PROVED)),
        },
        "complete": bool(plan.analysis.complete),
        "blocked": reasons,
    }


def prepare(
    out: Path,
    names: Sequence[str],
    time_s: float,
    max_delta: int,
    solver_timeout_ms: int = 3_000,
    jobs: int = 1,
) -> dict[str, Any]:
    """Phase 1: every kernel's four variants, synthesis report and resources, under ``out``.

    The solver gets more time per query than in a build (``solver_timeout_ms``):
    a proof that times out on a busy machine would drop a shuffle and the
    benchmark would measure the machine's load, not the rewrite. Kernels are
    prepared in ``jobs`` processes (each analysis is single-threaded).
    """
    from ptxasw import __version__

    out.mkdir(parents=True, exist_ok=True)
    paths = suite.compile_many((n, ARCH, False) for n in names)
    settings = {"max_delta": max_delta, "time_s": time_s, "solver_timeout_ms": solver_timeout_ms}
    work = [(name, paths[(name, ARCH, False)], out, settings) for name in names]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            entries = list(pool.map(_prepare_kernel, *zip(*work, strict=True)))
    else:
        entries = [_prepare_kernel(*w) for w in work]
    manifest = {
        "tool": f"ptxasw {__version__}",
        "arch": ARCH,
        "ptxas": ptxas_version(),
        "options": settings,
        "variants": list(VARIANTS),
        "kernels": entries,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _prepare_kernel(name: str, ptx: Path, out: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """One kernel: plan once, emit the three modes, assemble all four variants with ``ptxas -v``."""
    from ptxasw.driver.assembler import assembler
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.detect import Options
    from ptxasw.synth.synthesize import plan_kernel

    k = suite.get(name)
    text = ptx.read_text()
    module = parse_ptx(text, f"{name}.ptx")
    ptxas = shutil.which("ptxas")
    assemble = assembler([ptxas, f"-arch={ARCH}"]) if ptxas else None
    options = Options(**settings, rounding="ptxas", assemble=assemble)
    plan = plan_kernel(module, module.function(k.symbol), options)
    texts = {"original": text, **{mode: emit_variant(module, k.symbol, plan, mode) for mode in MODES}}
    variants = {}
    for variant, body in texts.items():
        path = out / f"{name}.{variant}.ptx"
        path.write_text(body)
        res = ptxas_verbose(path, k.symbol)
        variants[variant] = {
            "ptx": path.name,
            "sha256": hashlib.sha256(body.encode()).hexdigest(),
            **dataclasses.asdict(res),
        }
    s = synthesis_summary(plan)
    regs = "/".join(str(variants[v]["registers"]) for v in VARIANTS)
    print(
        f"{name:<14} {s['shuffles']:>3}/{s['loads']:<3} shuffled, avg |N| {s['average_delta'] or 0:.2f}, "
        f"{s['analysis_seconds']:6.2f} s, proofs {s['proofs']['proved']} ok {s['proofs']['failed']} "
        f"failed, registers {regs}",
        flush=True,
    )
    # The rounding ptxas gives the original, written out in normal: the interpreter
    # runs the original with it (`InterpBackend.load`) to see the GPU's bits.
    pins = [[p.index, str(choice)] for p, choice in plan.pins]
    return {"kernel": name, "symbol": k.symbol, "synthesis": s, "variants": variants, "pins": pins}


def load_manifest(folder: Path, names: Sequence[str] = ()) -> dict[str, Any]:
    """The manifest of a prepared folder, checked: every variant's PTX present and unchanged."""
    path = folder / MANIFEST
    if not path.is_file():
        raise BenchError(f"{path}: no manifest (run --prepare {folder} first)")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    known = {e["kernel"] for e in manifest.get("kernels", [])}
    for name in names:
        if name not in known:
            raise BenchError(f"{path}: no kernel {name!r} prepared (prepared: {', '.join(sorted(known))})")
    for entry in manifest["kernels"]:
        if entry["kernel"] not in suite.KERNELS:
            raise BenchError(f"{path}: {entry['kernel']!r} is not a suite kernel")
        for variant in VARIANTS:
            info = entry["variants"].get(variant)
            if info is None:
                raise BenchError(f"{path}: {entry['kernel']} has no {variant} variant")
            ptx = folder / info["ptx"]
            if not ptx.is_file():
                raise BenchError(f"{ptx}: missing")
            if hashlib.sha256(ptx.read_bytes()).hexdigest() != info["sha256"]:
                raise BenchError(f"{ptx}: changed since --prepare (sha256 differs)")
    if names:
        manifest = {**manifest, "kernels": [e for e in manifest["kernels"] if e["kernel"] in names]}
    return manifest


# --------------------------------------------------------------------------
# Phase 2: run (GPU, or the interpreter for a dry run)


class Backend(Protocol):
    """Where the variants run: the GPU (CuPy) or, for a dry run, the concrete interpreter."""

    name: str
    timing_method: str

    def device(self) -> str: ...

    def load(
        self,
        ptx: Path,
        symbol: str,
        fmad: bool = True,
        pins: list[Any] | None = None,
        options: Sequence[str] = (),
    ) -> tuple[Any, Resources | None]:
        """A launchable kernel of ``ptx`` and its resources (None where unknown).
        ``pins``: the rounding ptxas gives the original (`ptxasw.synth.pinning`),
        for a backend that does not fuse by itself (the interpreter)."""
        ...

    def upload(self, host_args: list) -> list: ...

    def snapshot(self, args: list, indices: Sequence[int]) -> dict[int, Any]: ...

    def restore(self, args: list, saved: dict[int, Any]) -> None: ...

    def launch(self, fn: Any, grid: tuple, block: tuple, args: list) -> None:
        """One launch; on return the outputs are in ``args`` (synchronised)."""
        ...

    def differing(self, a: Any, b: Any) -> int:
        """How many elements differ in any bit."""
        ...

    def time(self, fns: dict[str, Any], grid: tuple, block: tuple, args: list, runs: int) -> dict[str, dict]:
        """Median ms per launch of each kernel, timed interleaved; ``reps`` per sample."""
        ...

    def release(self) -> None: ...


def _bits(a: Any) -> Any:
    """An unsigned-integer view of the same bytes (so NaN payloads and zero signs count)."""
    return a.view(f"u{a.dtype.itemsize}")


class CupyBackend:
    """The GPU through CuPy: cubins from the local ``ptxas -v``, CUDA graphs timed with events."""

    name = "cupy"

    def __init__(self, work: Path) -> None:
        import cupy as cp

        self.cp = cp
        self.work = work
        # One stream for everything (uploads, copies, comparisons, launches, captures), so every
        # step is ordered after the one before without relying on the legacy default stream.
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.stream.use()
        self.timing_method = "cuda-graph"
        self._modules: list = []

    def device(self) -> str:
        return self.cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def load(
        self,
        ptx: Path,
        symbol: str,
        fmad: bool = True,
        pins: list[Any] | None = None,
        options: Sequence[str] = (),
    ) -> tuple[Any, Resources | None]:
        tag = "".join(o.strip("-").replace("=", "") for o in options)
        cubin = self.work / f"{ptx.stem}{'' if fmad else '.nofma'}{'.' + tag if tag else ''}.cubin"
        try:
            res: Resources | None = ptxas_verbose(ptx, symbol, cubin, fmad, options)
            module = self.cp.RawModule(path=str(cubin))
        except (BenchError, OSError) as exc:
            print(f"gpu_speedup: {ptx.name}: {exc}; loading the PTX through the driver", file=sys.stderr)
            res, module = None, self.cp.RawModule(path=str(ptx))
        self._modules.append(module)
        return module.get_function(symbol), res

    # Every step of the checks runs on the stream and ends with a device-wide synchronisation:
    # a first H100 run without it saw identical kernels "differ" at the 1 GiB size (a copy and a
    # launch overlapping). The checks are not timed, so full synchronisation costs nothing here.

    def _sync(self) -> None:
        self.cp.cuda.runtime.deviceSynchronize()

    def upload(self, host_args: list) -> list:
        with self.stream:
            dev = [self.cp.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args]
        self._sync()
        return dev

    def snapshot(self, args: list, indices: Sequence[int]) -> dict[int, Any]:
        with self.stream:
            saved = {i: args[i].copy() for i in indices}
        self._sync()
        return saved

    def restore(self, args: list, saved: dict[int, Any]) -> None:
        with self.stream:
            for i, a in saved.items():
                self.cp.copyto(args[i], a)
        self._sync()

    def launch(self, fn: Any, grid: tuple, block: tuple, args: list) -> None:
        self._sync()
        with self.stream:
            fn(grid, block, tuple(args))
        self._sync()

    def differing(self, a: Any, b: Any) -> int:
        with self.stream:
            count = int(self.cp.count_nonzero(_bits(a) != _bits(b)))
        self._sync()
        return count

    def _sample(self, fn: Any, grid: tuple, block: tuple, args: list, reps: int) -> Callable[[], None]:
        """Something that enqueues ``reps`` launches on the stream: a CUDA graph if capture works."""
        cp, stream = self.cp, self.stream
        if self.timing_method == "cuda-graph":
            try:
                with stream:
                    stream.begin_capture()
                    for _ in range(reps):
                        fn(grid, block, tuple(args))
                    graph = stream.end_capture()
                return lambda: graph.launch(stream)
            except Exception as exc:  # capture unsupported here: plain launches instead
                print(f"gpu_speedup: no CUDA graph capture ({exc}); timing plain launches", file=sys.stderr)
                self.timing_method = "launches"
                try:
                    if stream.is_capturing():
                        stream.end_capture()
                except Exception:
                    pass
                cp.cuda.runtime.deviceSynchronize()

        def enqueue() -> None:
            with stream:
                for _ in range(reps):
                    fn(grid, block, tuple(args))

        return enqueue

    def _elapsed(self, enqueue: Callable[[], None]) -> float:
        start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record(self.stream)
        enqueue()
        stop.record(self.stream)
        stop.synchronize()
        return self.cp.cuda.get_elapsed_time(start, stop)

    def time(self, fns: dict[str, Any], grid: tuple, block: tuple, args: list, runs: int) -> dict[str, dict]:
        one = {v: self._sample(fn, grid, block, args, 1) for v, fn in fns.items()}
        for enqueue in one.values():  # warm-up: module load, caches, clocks
            for _ in range(3):
                self._elapsed(enqueue)
        single = min(statistics.median(self._elapsed(e) for _ in range(5)) for e in one.values())
        reps = max(1, min(MAX_REPS, math.ceil(MIN_SAMPLE_MS / max(single, 1e-4))))
        batches = {v: self._sample(fn, grid, block, args, reps) for v, fn in fns.items()}
        samples: dict[str, list[float]] = {v: [] for v in fns}
        for enqueue in batches.values():
            self._elapsed(enqueue)
        for _ in range(runs):
            for v, enqueue in batches.items():
                samples[v].append(self._elapsed(enqueue) / reps)
        return {v: _stats(s, reps) for v, s in samples.items()}

    def release(self) -> None:
        self.cp.cuda.runtime.deviceSynchronize()
        self.cp.get_default_memory_pool().free_all_blocks()


class InterpBackend:
    """The concrete interpreter standing in for the GPU (dry runs and tests; times mean nothing)."""

    name = "interp"
    timing_method = "perf_counter (interpreter)"

    def device(self) -> str:
        return "ptxasw concrete interpreter (CPU)"

    def load(
        self,
        ptx: Path,
        symbol: str,
        fmad: bool = True,
        pins: list[Any] | None = None,
        options: Sequence[str] = (),
    ) -> tuple[Any, Resources | None]:
        """``pins``: the original's rounding as ptxas chooses it, written out
        before the interpreter runs it (the interpreter does not fuse; nor do
        register limits, ``options``, change what it computes)."""
        from ptxasw.synth.pinning import pin_like

        res = ptxas_verbose(ptx, symbol, options=options) if shutil.which("ptxas") else None
        module = suite.load_module(ptx)
        pin_like(module, symbol, [tuple(p) for p in pins or ()])
        return (module, symbol), res

    def upload(self, host_args: list) -> list:
        return [a.copy() if isinstance(a, np.ndarray) else a for a in host_args]

    def snapshot(self, args: list, indices: Sequence[int]) -> dict[int, Any]:
        return {i: args[i].copy() for i in indices}

    def restore(self, args: list, saved: dict[int, Any]) -> None:
        for i, a in saved.items():
            np.copyto(args[i], a)

    def launch(self, fn: Any, grid: tuple, block: tuple, args: list) -> None:
        from ptxasw.emulator.concrete.interpreter import launch

        module, symbol = fn
        result = launch(module, symbol, grid, block, args)
        if result.warnings:
            raise BenchError(f"{symbol}: the interpreter did not model everything: {result.warnings}")
        for i, buf in enumerate(result.buffers):
            if isinstance(args[i], np.ndarray) and isinstance(buf, np.ndarray):
                np.copyto(args[i], buf.reshape(args[i].shape))

    def differing(self, a: Any, b: Any) -> int:
        return int(np.count_nonzero(_bits(a) != _bits(b)))

    def time(self, fns: dict[str, Any], grid: tuple, block: tuple, args: list, runs: int) -> dict[str, dict]:
        samples: dict[str, list[float]] = {v: [] for v in fns}
        for _ in range(runs):
            for v, fn in fns.items():
                t0 = time.perf_counter()
                self.launch(fn, grid, block, args)
                samples[v].append((time.perf_counter() - t0) * 1000)
        return {v: _stats(s, 1) for v, s in samples.items()}

    def release(self) -> None:
        pass


def _stats(samples: list[float], reps: int) -> dict[str, Any]:
    ordered = sorted(samples)
    q = len(ordered) // 4
    return {
        "ms": statistics.median(ordered),
        "min_ms": ordered[0],
        "iqr_ms": ordered[-q - 1] - ordered[q] if q else 0.0,
        "samples": len(ordered),
        "reps": reps,
    }


def launch_sizes(k: suite.Kernel, backend: str, quick: bool) -> dict[str, tuple[suite.Shape, suite.Block]]:
    """Label -> (problem shape, block) to measure: the GPU's L2/DRAM sizes with the natural block;
    in the interpreter the first two CI launches (the natural block, then blockDim.x = 48)."""
    if backend == "interp":
        cases = suite.small_shapes(k)[: 1 if quick else 2]
        return {("ci" if i == 0 else "ci-odd"): (c.shape, c.block) for i, c in enumerate(cases)}
    shapes = suite.gpu_shapes(k)
    labels = ("l2",) if quick else ("l2", "dram")
    return {label: (shapes[label], k.blocks[0]) for label in labels}


def measure_kernel(
    backend: Backend, folder: Path, entry: dict[str, Any], quick: bool, runs: int
) -> list[dict[str, Any]]:
    """Rows of one kernel: every variant at every size, checked against the original and timed."""
    k = suite.get(entry["kernel"])
    pins = entry.get("pins")
    paths = {v: folder / entry["variants"][v]["ptx"] for v in VARIANTS}
    loaded = {v: backend.load(paths[v], k.symbol, pins=pins if v == "original" else None) for v in VARIANTS}
    fns = {v: fn for v, (fn, _) in loaded.items()}
    plain = _load_without_fma(backend, folder, entry, k.symbol)
    syn = entry["synthesis"]
    rows = []
    for seed, (label, (shape, block)) in enumerate(launch_sizes(k, backend.name, quick).items()):
        block3 = (*block, 1, 1)[:3]
        grid = k.grid(shape, block3)
        args = backend.upload(suite.launch_args(k, shape, seed))
        pristine = backend.snapshot(args, k.outputs)
        backend.launch(fns["original"], grid, block3, args)
        expected = backend.snapshot(args, k.outputs)
        # The original again is the control: a kernel (or a harness) that is not deterministic shows
        # up as an inexact original instead of as a wrong rewrite.
        differ: dict[str, int] = {}
        for v in VARIANTS:
            backend.restore(args, pristine)
            backend.launch(fns[v], grid, block3, args)
            differ[v] = sum(backend.differing(args[i], expected[i]) for i in k.outputs)
        # Without ptxas's FMA contraction (which may fuse different mul/add pairs in two PTX texts)
        # the rewrite's values must be the original's bit for bit.
        fma_note = _fma_check(backend, plain, k, grid, block3, args, pristine)
        del expected
        # The original twice: an A/A control, the spread two identical kernels show (METHOD: a
        # difference between versions below it is noise).
        timing = backend.time({**fns, AGAIN: fns["original"]}, grid, block3, args, runs)
        control = round(timing["original"]["ms"] / timing[AGAIN]["ms"], 4)
        del args, pristine
        backend.release()
        base = timing["original"]["ms"]
        for v in VARIANTS:
            info = entry["variants"][v]
            res = loaded[v][1]
            shuffled = v != "original"
            rows.append(
                {
                    "kernel": k.name,
                    "variant": v,
                    "size": label,
                    "shape": list(shape),
                    "block": list(block3),
                    **timing[v],
                    "speedup_vs_original": round(base / timing[v]["ms"], 4) if timing[v]["ms"] else None,
                    "control_speedup": control,
                    "exact": differ[v] == 0,
                    "differing_elements": differ[v],
                    "exact_without_fma": fma_note if v == "normal" else None,
                    "registers": res.registers if res else info["registers"],
                    "spill_bytes": (res.spill_stores + res.spill_loads) if res else None,
                    "registers_prepared": info["registers"],
                    "shuffles": syn["shuffles"] if shuffled else 0,
                    "loads": syn["loads"],
                    "average_delta": syn["average_delta"] if shuffled else None,
                }
            )
    return rows


def _load_without_fma(backend: Backend, folder: Path, entry: dict, symbol: str) -> dict[str, Any] | None:
    """``original`` and ``normal`` assembled with ``--fmad=false`` (None where that fails)."""
    try:
        return {
            v: backend.load(folder / entry["variants"][v]["ptx"], symbol, fmad=False)[0]
            for v in ("original", "normal")
        }
    except Exception as exc:
        print(f"gpu_speedup: {entry['kernel']}: no --fmad=false check ({exc})", file=sys.stderr)
        return None


def _fma_check(
    backend: Backend,
    plain: dict[str, Any] | None,
    k: suite.Kernel,
    grid: tuple,
    block: tuple,
    args: list,
    pristine: dict[int, Any],
) -> bool | None:
    """Do ``original`` and ``normal`` agree bit for bit assembled with ``--fmad=false``? (Contraction
    can differ between two PTX texts; the rewrite's values cannot.) None where it cannot be checked."""
    if plain is None:
        return None
    outs = {}
    for v, fn in plain.items():
        backend.restore(args, pristine)
        backend.launch(fn, grid, block, args)
        outs[v] = backend.snapshot(args, k.outputs)
    backend.restore(args, pristine)
    return all(backend.differing(outs["original"][i], outs["normal"][i]) == 0 for i in k.outputs)


def run(
    folder: Path,
    backend: Backend,
    names: Sequence[str],
    quick: bool,
    runs: int,
    dry: bool = False,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Phase 2 over every prepared kernel; prints a line per kernel and size."""
    manifest = load_manifest(folder, names)
    result: dict[str, Any] = {
        "device": backend.device(),
        "backend": backend.name,
        "timing": backend.timing_method,
        "ptxas": ptxas_version(),
        "prepared_with": {
            "tool": manifest["tool"],
            "ptxas": manifest["ptxas"],
            "options": manifest["options"],
        },
        "quick": quick,
        "runs": runs,
        "dry_run": dry,
        "synthesis": {e["kernel"]: e["synthesis"] for e in manifest["kernels"]},
        "rows": [],
    }
    result["errors"] = []
    started = time.perf_counter()
    for entry in manifest["kernels"]:
        t0 = time.perf_counter()
        try:
            rows = measure_kernel(backend, folder, entry, quick, runs)
        except Exception as exc:  # one kernel's failure must not cost the others' results
            if isinstance(exc, BenchError) and backend.name == "interp":
                raise
            message = f"{entry['kernel']}: {type(exc).__name__}: {exc}".splitlines()[0]
            print(f"gpu_speedup: {message}", file=sys.stderr, flush=True)
            result["errors"].append(message)
            backend.release()
            continue
        result["rows"] += rows
        result["timing"] = backend.timing_method
        for size in dict.fromkeys(r["size"] for r in rows):
            print(_line(entry["kernel"], size, [r for r in rows if r["size"] == size]), flush=True)
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
        if checkpoint is not None:  # partial results survive a time limit
            checkpoint({**result, "summary": summarize(result["rows"]), "partial": True})
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["summary"] = summarize(result["rows"])
    return result


def _line(kernel: str, size: str, rows: list[dict]) -> str:
    by = {r["variant"]: r for r in rows}
    o = by["original"]
    parts = [
        f"{kernel:<14} {size:<6} orig {o['ms']:.4f} ms r{o['registers']} A/A x{o['control_speedup']:.3f}"
    ]
    for v in MODES:
        r = by[v]
        mark = "" if r["exact"] else f" INEXACT({r['differing_elements']})"
        parts.append(f"{v} x{r['speedup_vs_original']:.3f} r{r['registers']}{mark}")
    return "  ".join(parts)


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return round(statistics.geometric_mean(values), 4) if values else None


def summarize(rows: list[dict]) -> dict[str, Any]:
    """Geometric means of the speed-ups per variant and size: all kernels, those with shuffles and the
    wide stencils (the issue's goal is stated over those)."""
    out: dict[str, Any] = {}
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    shuffled = {r["kernel"] for r in rows if r["variant"] == "normal" and r["shuffles"]}
    groups = {"all": None, "with_shuffles": shuffled, "wide_stencils": set(suite.WIDE_STENCILS)}
    for size in sizes:
        for group, members in groups.items():
            for v in MODES:
                sel = [
                    r["speedup_vs_original"]
                    for r in rows
                    if r["size"] == size and r["variant"] == v and _member(r["kernel"], members)
                ]
                out[f"{size}/{group}/{v}"] = geomean(sel)
    normal = [r for r in rows if r["variant"] == "normal"]
    out["normal_exact"] = all(r["exact"] for r in normal)
    out["normal_exact_without_fma"] = all(r["exact_without_fma"] is not False for r in normal)
    out["original_deterministic"] = all(r["exact"] for r in rows if r["variant"] == "original")
    return out


def exactness(row: dict[str, Any]) -> str:
    """``normal`` against the original: ``yes`` (bit for bit), ``fma`` (only with ptxas's default FMA
    contraction do they differ: equal with ``--fmad=false``) or ``NO``."""
    if row["exact"]:
        return "yes"
    return "fma" if row.get("exact_without_fma") else "NO"


def _member(kernel: str, members: set[str] | None) -> bool:
    """In the group (None: all); ``gaussblur_f64`` counts as a ``gaussblur`` (the wide-stencil list
    names the family)."""
    return members is None or kernel in members or kernel.removesuffix("_f64") in members


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{result['device']} ({result['timing']}, median of {result['runs']} samples)")
    head = f"{'kernel':<14} {'size':<6} {'shfl/ld':>7} {'|N|':>5} {'orig ms':>9} {'A/A':>6} " + " ".join(
        f"{v:>9}" for v in MODES
    )
    print(head + "  registers o/n/l/c  normal exact")
    kernels = list(dict.fromkeys(r["kernel"] for r in result["rows"]))
    for kernel in kernels:
        for size in dict.fromkeys(r["size"] for r in result["rows"] if r["kernel"] == kernel):
            by = {r["variant"]: r for r in result["rows"] if r["kernel"] == kernel and r["size"] == size}
            n = by["normal"]
            cells = " ".join(
                f"{by[v]['speedup_vs_original']:>8.3f}{' ' if by[v]['exact'] else '*'}" for v in MODES
            )
            regs = "/".join(str(by[v]["registers"]) for v in VARIANTS)
            avg = f"{n['average_delta']:.2f}" if n["average_delta"] is not None else "-"
            print(
                f"{kernel:<14} {size:<6} {n['shuffles']:>3}/{n['loads']:<3} {avg:>5} "
                f"{by['original']['ms']:>9.4f} {n['control_speedup']:>6.3f} {cells} {regs:<17}  "
                f"{exactness(n)}"
            )
    print("* = output differs from the original (noload/nocorner are wrong at warp edges by design)")
    print("A/A = the original timed twice, interleaved: differences within its spread are noise")
    for key, value in result["summary"].items():
        if "/" in key and value is not None:
            print(f"geomean {key}: {value:.3f}")
    summary = result["summary"]
    print(
        f"normal bit-identical to original: {summary['normal_exact']} (default ptxas), "
        f"{summary['normal_exact_without_fma']} (ptxas --fmad=false); "
        f"original deterministic: {summary['original_deterministic']}"
    )
    print("normal exact: yes = bit for bit; fma = differs only through ptxas's FMA contraction")


# --------------------------------------------------------------------------
# Phase 3: plot and Markdown


def plot(result: dict[str, Any], png: Path) -> None:
    """Figure 2 of the paper: speed-up over the original per kernel, a bar per variant, a panel per size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    colours = {"normal": "#1f77b4", "noload": "#ff7f0e", "nocorner": "#2ca02c"}
    fig, axes = plt.subplots(
        len(sizes), 1, figsize=(max(10, 0.62 * len(kernels)), 3.6 * len(sizes)), squeeze=False
    )
    width = 0.27
    for ax, size in zip(axes[:, 0], sizes, strict=True):
        for j, v in enumerate(MODES):
            by = {r["kernel"]: r for r in rows if r["size"] == size and r["variant"] == v}
            xs = [i + (j - 1) * width for i in range(len(kernels))]
            ys = [by[k]["speedup_vs_original"] for k in kernels]
            bars = ax.bar(xs, ys, width, label=v, color=colours[v], bottom=0)
            for bar, k in zip(bars, kernels, strict=True):
                if not by[k]["exact"]:
                    bar.set_hatch(".." if by[k].get("exact_without_fma") else "///")
                    bar.set_edgecolor("white")
        ax.axhline(1.0, color="black", linewidth=0.8)
        low = min(r["speedup_vs_original"] for r in rows if r["size"] == size)
        high = max(r["speedup_vs_original"] for r in rows if r["size"] == size)
        ax.set_ylim(min(0.9, low - 0.05), max(1.1, high + 0.05))
        ax.set_xticks(range(len(kernels)))
        ax.set_xticklabels(kernels, rotation=45, ha="right", fontsize=8)
        label = {"l2": "L2-resident", "dram": "DRAM-bound"}.get(size, size)
        ax.set_ylabel(f"speed-up ({label})")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(ncol=3, fontsize=8, loc="upper left")
    fig.suptitle(
        f"Shuffle synthesis on {result['device']}: speed-up over the original "
        "(sm_90; hatched: output differs; dotted: differs only through ptxas's FMA contraction)",
        fontsize=10,
    )
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=130)
    plt.close(fig)


def markdown(result: dict[str, Any]) -> str:
    """The table of the issue's closing note: per kernel, synthesis columns, registers, speed-ups."""
    rows = result["rows"]
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    lines = [
        f"# Shuffle synthesis: GPU speed-up on {result['device']}",
        "",
        f"Made by `benchmarks/gpu_speedup.py` ({result['timing']}; median of {result['runs']} samples per "
        f"variant, variants interleaved; ptxas {result['ptxas']}). Speed-up = original ms / variant ms. "
        "`*`: the output differs from the original's (expected for `noload`/`nocorner`, wrong at warp edges "
        "by design). A/A: the original timed twice (interleaved), the noise floor. Registers from "
        "`ptxas -arch=sm_90 -v`, original/normal/noload/nocorner. Normal exact, per size: `yes` bit for "
        "bit; `fma` equal only with `ptxas --fmad=false` (ptxas's default FMA contraction fuses other "
        "mul/add pairs in the two PTX texts: the rewrite now pins the sums where ptxas chooses, "
        "so this should not occur); `NO` different values. Analysis seconds and proofs are "
        f"from `--prepare` (options {json.dumps(result['prepared_with']['options'])}), on the machine "
        "that prepared it: compare them between kernels, not with the drop-in's build-time budget.",
        "",
    ]
    syn = result["synthesis"]
    head = ["kernel", "shuffles/loads", "avg \\|N\\|", "analysis s", "proofs", "registers o/n/l/c"]
    for size in sizes:
        head += [f"{size} orig ms", f"{size} A/A", *(f"{size} {v}" for v in MODES)]
    head.append("normal exact")
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        s = syn[kernel]
        first = {r["variant"]: r for r in rows if r["kernel"] == kernel and r["size"] == sizes[0]}
        cells = [
            kernel,
            f"{s['shuffles']}/{s['loads']}",
            f"{s['average_delta']:.2f}" if s["average_delta"] is not None else "-",
            f"{s['analysis_seconds']:.1f}",
            f"{s['proofs']['proved']}"
            + (f" ({s['proofs']['failed']} failed)" if s["proofs"]["failed"] else ""),
            "/".join(str(first[v]["registers"]) for v in VARIANTS),
        ]
        exact = []
        for size in sizes:
            by = {r["variant"]: r for r in rows if r["kernel"] == kernel and r["size"] == size}
            cells += [f"{by['original']['ms']:.4f}", f"{by['original']['control_speedup']:.3f}"]
            cells += [f"{by[v]['speedup_vs_original']:.3f}{'' if by[v]['exact'] else '*'}" for v in MODES]
            exact.append(exactness(by["normal"]))
        cells.append("/".join(exact).replace("NO", "**NO**"))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Geometric means of the speed-up:", "", "| size | kernels | " + " | ".join(MODES) + " |"]
    lines.append("|---|---|" + "---|" * len(MODES))
    summary = result["summary"]
    for size in sizes:
        for group in ("all", "with_shuffles", "wide_stencils"):
            vals = [summary.get(f"{size}/{group}/{v}") for v in MODES]
            lines.append(
                f"| {size} | {group.replace('_', ' ')} | "
                + " | ".join(f"{x:.3f}" if x is not None else "-" for x in vals)
                + " |"
            )
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    phase = ap.add_mutually_exclusive_group(required=True)
    phase.add_argument(
        "--prepare", type=Path, metavar="DIR", help="phase 1: PTX variants and manifest into DIR"
    )
    phase.add_argument("--run", type=Path, metavar="DIR", help="phase 2: check and time a prepared DIR")
    phase.add_argument(
        "--plot", type=Path, metavar="JSON", help="phase 3: PNG and Markdown from a --run JSON"
    )
    ap.add_argument("kernels", nargs="*", help="kernel names (default: all)")
    ap.add_argument("--json", type=Path, help="--run: write the results here")
    ap.add_argument("--quick", action="store_true", help="--run: the L2 size only, 7 samples (smoke run)")
    ap.add_argument("--runs", type=int, default=51, help="--run: timed samples per variant (default 51)")
    ap.add_argument("--backend", choices=("cupy", "interp"), default="cupy", help="--run: where to run")
    ap.add_argument("--dry-run", action="store_true", help="--run: check the manifest and the GPU code path")
    ap.add_argument("--time-budget", type=float, default=60.0, help="--prepare: analysis seconds per kernel")
    ap.add_argument("--max-delta", type=int, default=31, help="--prepare: largest |N|")
    ap.add_argument(
        "--solver-timeout-ms", type=int, default=3_000, help="--prepare: per solver query (default 3000)"
    )
    ap.add_argument("--jobs", type=int, default=2, help="--prepare: kernels analysed at once (default 2)")
    ap.add_argument("--out", type=Path, help="--plot: the PNG (default: next to the JSON)")
    ap.add_argument("--md", type=Path, help="--plot: the Markdown table (default: next to the JSON)")
    opts = ap.parse_args(argv)
    unknown = [n for n in opts.kernels if n not in suite.KERNELS]
    if unknown:
        ap.error(f"no suite kernel {unknown[0]!r} (known: {', '.join(suite.KERNELS)})")
    if opts.runs < 1:
        ap.error("--runs must be at least 1")
    try:
        if opts.prepare:
            names = opts.kernels or list(suite.KERNELS)
            prepare(opts.prepare, names, opts.time_budget, opts.max_delta, opts.solver_timeout_ms, opts.jobs)
            return 0
        if opts.run:
            return _run_command(opts)
        return _plot_command(opts)
    except BenchError as exc:
        print(f"gpu_speedup: error: {exc}", file=sys.stderr)
        return 2


def _run_command(opts: argparse.Namespace) -> int:
    if opts.dry_run and opts.backend == "cupy":
        manifest = load_manifest(opts.run, opts.kernels)
        try:
            import cupy  # noqa: F401
        except ImportError:
            print("gpu_speedup: dry run: CuPy is not installed here (the GPU run needs it)")
        variants = sum(len(e["variants"]) for e in manifest["kernels"])
        print(f"gpu_speedup: dry run: manifest ok, {len(manifest['kernels'])} kernels, {variants} PTX files")
        return 0
    runs = 7 if opts.quick and opts.runs == 51 else opts.runs
    if opts.backend == "interp":
        backend: Backend = InterpBackend()
        runs = min(runs, 1)
    else:
        backend = CupyBackend(Path(tempfile.mkdtemp(prefix="ptxasw-speedup-")))

    def write(result: dict[str, Any]) -> None:
        if opts.json:
            opts.json.parent.mkdir(parents=True, exist_ok=True)
            opts.json.write_text(json.dumps(result, indent=1) + "\n")

    result = run(opts.run, backend, opts.kernels, opts.quick, runs, opts.backend == "interp", write)
    write(result)
    print_table(result)
    summary = result["summary"]
    ok = summary["normal_exact_without_fma"] and summary["original_deterministic"] and not result["errors"]
    return 0 if ok else 1


def _plot_command(opts: argparse.Namespace) -> int:
    try:
        result = json.loads(opts.plot.read_text())
    except OSError as exc:
        raise BenchError(f"{opts.plot}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BenchError(f"{opts.plot}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    png = opts.out or opts.plot.with_suffix(".png")
    md = opts.md or opts.plot.with_suffix(".md")
    md.write_text(markdown(result))
    plot(result, png)
    print(f"gpu_speedup: wrote {png} and {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
