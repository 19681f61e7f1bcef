"""How much slower is ``ptxas`` through ptxasw's wrapper than NVIDIA's ptxas alone?

Why: the wrapper sits in every CUDA build. It starts Python, runs the
pipeline (parse, shuffle synthesis, print) and then runs the real ptxas, so
its cost is interpreter start-up + pipeline + a fork. This script times the
ways over a set of PTX files and prints per-file times and the ratios. With
shuffle synthesis on (the default pipeline), the goals are at most 2x plain
ptxas with a cold result cache and at most 1.2x with a warm one.

Every way runs byte-compiled code, as a pip install or ``ptxasw toolkit create``
leaves it (the script writes the checkout's and the snapshot's ``.pyc`` files
first): where ``PYTHONDONTWRITEBYTECODE`` is set, as on our CI machine, Python
would otherwise compile some forty modules in every run (~0.15 s), and the
figures before 2026-11-27 include that.

The ways, per file (medians over ``--repeat`` rounds in which each way runs once,
after one priming run of each):

* ``ptxas``: NVIDIA's ptxas alone;
* ``disabled``: ``python -P -m ptxasw.driver.ptxas`` with ``PTXASW_DISABLE=1``
  (start-up and exec, no work);
* ``wrapper`` (cold): the same with ``PTXASW_CACHE_DIR=off``, so every run analyses;
* ``warm py``: the same with the result cache primed by one run (what the
  ``ptxasw-ptxas`` console script and ``wrappers/ptxas`` give a rebuild);
* ``warm``: a shadow toolkit's ``bin/ptxas`` (`ptxasw.driver.toolkit.ptxas_script`)
  with its cache primed by one run of its own, so its fast path runs the real
  ptxas without Python; it runs a snapshot of the package (see `shadow_script`).
  ``fast entry`` says the priming run recorded one, ``same cubin`` that the warm
  run wrote the cold wrapper's cubin byte for byte.

And once over all files, a whole **build from a cold cache**: every file once,
in order, through a shadow ``bin/ptxas`` whose cache is empty when the build
starts (not between files), against the same files through ptxas alone
(medians over ``--repeat`` builds, the two taking turns). This is what a
user's clean build with an empty cache pays: where the pipeline can change
nothing for a command line (the cost model rules out every shuffle on the
target), the first file's Python run records that for the command line and
the other files go straight to ptxas (`ptxasw.driver.settings.nothing_to_do`);
with ``--env PTXASW_PROFIT=always`` every file is analysed.

    python benchmarks/wrapper_overhead.py                 # compiles tests/corpus/cuda/*.cu
    python benchmarks/wrapper_overhead.py a.ptx b.ptx --repeat 7 --json

``--pipeline MODULE:FUNCTION`` swaps the pipeline, as PTXASW_PIPELINE does (the
shadow's fast path is then off, as it is for any PTXASW_PIPELINE).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus" / "cuda"


@dataclass
class Row:
    """Timings of one PTX file (milliseconds, medians over the repeats)."""

    file: str
    lines: int
    arch: str
    ptxas_ms: float
    disabled_ms: float
    wrapper_ms: float
    warm_py_ms: float
    warm_ms: float
    pipeline_ms: float
    passes_ms: float
    ratio: float
    warm_py_ratio: float
    warm_ratio: float
    inproc_ratio: float
    ptxas_min_ms: float  # the fastest run of each: what is left when other jobs load the machine
    warm_min_ms: float
    rewritten: bool
    fast_entry: bool
    warm_same_cubin: bool
    status: str


def fail(message: str) -> None:
    """One-line error and exit, no traceback."""
    print(f"wrapper_overhead: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def find_ptxas() -> Path:
    """NVIDIA's ptxas, found the way the wrapper finds it."""
    sys.path.insert(0, str(REPO))
    from ptxasw.driver.ptxas import WrapperError, find_real_ptxas

    try:
        return find_real_ptxas()
    except WrapperError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def compile_corpus(out: Path, limit: int | None) -> list[Path]:
    """PTX of the corpus kernels (sm_90, else sm_90a); kernels nvcc rejects are skipped."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        fail("nvcc not found: pass PTX files as arguments")
    sources = sorted(CORPUS.glob("*.cu"))[:limit]
    if not sources:
        fail(f"no PTX files given and no CUDA sources in {CORPUS}")
    ptx: list[Path] = []
    for src in sources:
        dest = out / (src.stem + ".ptx")
        for arch in ("sm_90", "sm_90a"):
            proc = subprocess.run(
                [nvcc, f"-arch={arch}", "-ptx", str(src), "-o", str(dest)], capture_output=True
            )
            if proc.returncode == 0:
                ptx.append(dest)
                break
    return ptx


def ptx_arch(path: Path) -> str:
    """The GPU to assemble for: the .target of the PTX (sm_90 if older or absent)."""
    m = re.search(r"^\s*\.target\s+(sm_\d+a?)", path.read_text(errors="replace"), re.M)
    if m and int(re.sub(r"\D", "", m.group(1))) >= 75:
        return m.group(1)
    return "sm_90"


def run_ms(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time of one run of ``cmd`` in ms, and its exit code."""
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return (time.perf_counter() - t0) * 1000, rc


def median_ms(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, int]:
    """Median wall time of ``cmd`` in ms, and its last exit code."""
    times = []
    rc = 0
    for _ in range(repeat):
        ms, rc = run_ms(cmd, env)
        times.append(ms)
    return statistics.median(times), rc


def shadow_script(real: Path, tmp: Path) -> tuple[Path, Path]:
    """A shadow toolkit's ``bin/ptxas`` over ``real``, running a snapshot of the package.

    A snapshot, because the checkout may change under a long run (other people's
    edits), and every change of the package rightly makes the fast path miss; a
    build does not edit ptxasw while it runs. Returns (script, snapshot's parent).
    """
    sys.path.insert(0, str(REPO))
    from ptxasw.driver.toolkit import byte_compile, ptxas_script

    site = tmp / "site"
    shutil.copytree(REPO / "ptxasw", site / "ptxasw", ignore=shutil.ignore_patterns("__pycache__"))
    byte_compile(site / "ptxasw")  # as `ptxasw toolkit create` does for the package it runs
    script = tmp / "shadow-bin" / "ptxas"
    script.parent.mkdir()
    script.write_text(ptxas_script(real, package=site / "ptxasw"))
    script.chmod(0o755)
    return script, site


def measure(
    files: list[Path], repeat: int, pipeline: str | None, settings: dict[str, str] | None = None
) -> tuple[list[Row], float, Build]:
    """Time every file every way and a whole cold build; also return the bare
    interpreter start-up time (ms). ``settings``: PTXASW_* variables for the
    wrapper (``PTXASW_PROFIT=always``)."""
    real = find_ptxas()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTXASW_")}
    env.update(settings or {})
    env["PTXASW_REAL_PTXAS"] = str(real)
    if pipeline:
        env["PTXASW_PIPELINE"] = pipeline
    startup, _ = median_ms([sys.executable, "-P", "-c", "pass"], env, repeat)
    # The checkout's bytecode, as a pip install writes it: without it, an environment
    # with PYTHONDONTWRITEBYTECODE (this VM's) compiles ~40 modules in every run.
    sys.path.insert(0, str(REPO))
    from ptxasw.driver.toolkit import byte_compile

    byte_compile(REPO / "ptxasw")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ptxasw-bench-") as tmp:
        script, site = shadow_script(real, Path(tmp))
        # the shadow script imports its snapshot; the other ways import the checkout
        senv = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        wrapper = [sys.executable, "-P", "-m", "ptxasw.driver.ptxas"]
        out = Path(tmp) / "out.cubin"
        log = Path(tmp) / "log.jsonl"
        for f in files:
            arch = ptx_arch(f)
            args = ["-arch", arch, str(f), "-o", str(out)]
            cache = Path(tmp) / f"cache-{f.stem}"
            ways = {
                "ptxas": ([str(real), *args], env),
                "disabled": ([*wrapper, *args], {**env, "PTXASW_DISABLE": "1"}),
                "cold": ([*wrapper, *args], {**env, "PTXASW_LOG": str(log), "PTXASW_CACHE_DIR": "off"}),
                "warm_py": ([*wrapper, *args], {**env, "PTXASW_CACHE_DIR": str(cache)}),
                "warm": ([str(script), *args], {**senv, "PTXASW_CACHE_DIR": str(cache)}),
            }
            _, rc = run_ms(*ways["ptxas"])
            if rc != 0:
                print(f"wrapper_overhead: skipping {f}: ptxas exit {rc}", file=sys.stderr)
                continue
            log.unlink(missing_ok=True)
            run_ms(*ways["cold"])
            cold_cubin = out.read_bytes()
            run_ms(*ways["warm_py"])  # primes the result cache
            run_ms(*ways["warm"])  # records the fast entry
            hit = any((cache / "fast").glob("*/*")) if (cache / "fast").is_dir() else False
            # The ways take turns, so that a change of the machine's load (other jobs)
            # falls on all of them alike rather than on one way's block of runs.
            times: dict[str, list[float]] = {way: [] for way in ways}
            for _ in range(repeat):
                for way, (cmd, way_env) in ways.items():
                    if way == "warm":
                        out.unlink(missing_ok=True)
                    times[way].append(run_ms(cmd, way_env)[0])
            same = out.is_file() and out.read_bytes() == cold_cubin
            base, floor, wrapped, warm_py, warm = (statistics.median(times[w]) for w in ways)
            recs = [json.loads(line) for line in log.read_text().splitlines()]
            # (no "inputs" when the pipeline could change nothing and did not run)
            pipe = statistics.median(sum(i["seconds"] for i in r.get("inputs", [])) * 1000 for r in recs)
            # parse + passes + print themselves, without interpreter start-up, imports
            # and loading the parser tables ("setup"), which a warm process would not repeat
            work = statistics.median(
                sum(
                    p["seconds"]
                    for i in r.get("inputs", [])
                    for p in i.get("passes", [])
                    if p["name"] != "setup"
                )
                * 1000
                for r in recs
            )
            statuses = sorted({r["status"] for r in recs})
            rows.append(
                Row(
                    file=f.name,
                    lines=len(f.read_text(errors="replace").splitlines()),
                    arch=arch,
                    ptxas_ms=round(base, 2),
                    disabled_ms=round(floor, 2),
                    wrapper_ms=round(wrapped, 2),
                    warm_py_ms=round(warm_py, 2),
                    warm_ms=round(warm, 2),
                    pipeline_ms=round(pipe, 2),
                    passes_ms=round(work, 2),
                    ratio=round(wrapped / base, 3),
                    warm_py_ratio=round(warm_py / base, 3),
                    warm_ratio=round(warm / base, 3),
                    inproc_ratio=round((base + work) / base, 3),
                    ptxas_min_ms=round(min(times["ptxas"]), 2),
                    warm_min_ms=round(min(times["warm"]), 2),
                    rewritten=any(i.get("rewritten") for r in recs for i in r.get("inputs", [])),
                    fast_entry=hit,
                    warm_same_cubin=same,
                    status="/".join(statuses),
                )
            )
        assembled = {r.file for r in rows}  # the files ptxas did not refuse
        timed = [f for f in files if f.name in assembled]
        build = measure_build(timed, real, script, env, senv, Path(tmp), repeat)
    return rows, startup, build


@dataclass
class Build:
    """A whole build from a cold cache (milliseconds, medians over the repeats)."""

    files: int
    ptxas_ms: float
    shadow_ms: float
    ratio: float
    python_runs: int  # files of the last build that started Python (the rest went straight to ptxas)


def measure_build(
    files: list[Path],
    real: Path,
    script: Path,
    env: dict[str, str],
    senv: dict[str, str],
    tmp: Path,
    repeat: int,
) -> Build:
    """Every file once through ptxas alone, then through the shadow script with a
    cache that is empty when the build starts; ``repeat`` builds of each."""
    out = tmp / "build.cubin"
    plain: list[float] = []
    shadow: list[float] = []
    python_runs = 0
    hook = tmp / "build-hook"  # a sitecustomize that counts Python starts
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(
        "import os\nwith open(os.environ['BUILD_STARTS'], 'a') as f:\n    f.write('started\\n')\n"
    )
    for k in range(repeat):
        plain.append(
            sum(run_ms([str(real), "-arch", ptx_arch(f), str(f), "-o", str(out)], env)[0] for f in files)
        )
        cache = tmp / f"build-cache-{k}"
        starts = tmp / f"build-starts-{k}"
        benv = {
            **senv,
            "PTXASW_CACHE_DIR": str(cache),
            "BUILD_STARTS": str(starts),
            "PYTHONPATH": os.pathsep.join([senv.get("PYTHONPATH", ""), str(hook)]),
        }
        shadow.append(
            sum(run_ms([str(script), "-arch", ptx_arch(f), str(f), "-o", str(out)], benv)[0] for f in files)
        )
        python_runs = starts.read_text().count("\n") if starts.exists() else 0
    base, ours = statistics.median(plain), statistics.median(shadow)
    return Build(len(files), round(base, 2), round(ours, 2), round(ours / base, 3), python_runs)


def geomean(values: list[float]) -> float:
    return statistics.geometric_mean(values) if values else float("nan")


def print_table(rows: list[Row], startup: float, build: Build) -> None:
    """A rich table when rich is installed, plain text otherwise."""
    head = [
        "file",
        "lines",
        "arch",
        "ptxas ms",
        "disabled ms",
        "wrapper ms",
        "warm py ms",
        "warm ms",
        "pipeline ms",
        "passes ms",
        "ratio",
        "warm py ratio",
        "warm ratio",
        "in-process",
        "fast entry",
        "same cubin",
        "status",
    ]
    body = [
        [r.file, str(r.lines), r.arch, f"{r.ptxas_ms:.1f}", f"{r.disabled_ms:.1f}", f"{r.wrapper_ms:.1f}",
         f"{r.warm_py_ms:.1f}", f"{r.warm_ms:.1f}", f"{r.pipeline_ms:.1f}", f"{r.passes_ms:.1f}",
         f"{r.ratio:.2f}x", f"{r.warm_py_ratio:.2f}x", f"{r.warm_ratio:.2f}x", f"{r.inproc_ratio:.2f}x",
         "yes" if r.fast_entry else "no", "yes" if r.warm_same_cubin else "NO", r.status]
        for r in rows
    ]  # fmt: skip
    inproc_total = (sum(r.passes_ms for r in rows) + sum(r.ptxas_ms for r in rows)) / sum(
        r.ptxas_ms for r in rows
    )
    base = sum(r.ptxas_ms for r in rows)
    footer = (
        f"end to end, cold cache: geomean ratio {geomean([r.ratio for r in rows]):.2f}x, total "
        f"{sum(r.wrapper_ms for r in rows) / base:.2f}x over {len(rows)} files (goal <= 2x); warm cache, "
        f"shadow bin/ptxas: geomean {geomean([r.warm_ratio for r in rows]):.2f}x, "
        f"total {sum(r.warm_ms for r in rows) / base:.2f}x (goal <= 1.2x; "
        f"{sum(r.fast_entry for r in rows)} fast entries, "
        f"{sum(r.warm_same_cubin for r in rows)} same cubins); "
        f"warm through Python: total {sum(r.warm_py_ms for r in rows) / base:.2f}x "
        f"(Python start-up alone {startup:.1f} ms)\n"
        f"in process (parse+passes+print, then ptxas): "
        f"geomean {geomean([r.inproc_ratio for r in rows]):.2f}x, total {inproc_total:.2f}x; goal < 1.5x\n"
        f"a whole build from a cold cache through the shadow bin/ptxas: {build.shadow_ms:.0f} ms against "
        f"{build.ptxas_ms:.0f} ms of ptxas alone, {build.ratio:.2f}x (goal <= 2x; Python started for "
        f"{build.python_runs} of {build.files} files)"
    )
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
        for line in [head, *body]:
            print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=False)))
        print(footer)
        return
    table = Table(
        title="ptxas vs ptxasw wrapper (median wall time; disabled = PTXASW_DISABLE=1, start-up + exec)"
    )
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i in (0, 2, 16) else "right", no_wrap=True)
    for line in body:
        table.add_row(*line)
    console = Console(width=max(120, shutil.get_terminal_size().columns))
    console.print(table)
    console.print(footer)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, time, print."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="PTX files (default: compile tests/corpus/cuda/*.cu)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per file and way (median; default 5)")
    ap.add_argument("--limit", type=int, default=None, help="at most this many corpus sources")
    ap.add_argument("--pipeline", default=None, help="MODULE:FUNCTION to run instead of the default pipeline")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="PTXASW_X=V",
        help="a synthesis setting for the wrapper, e.g. PTXASW_PROFIT=always (repeatable)",
    )
    ns = ap.parse_args(argv)
    if ns.repeat < 1:
        fail("--repeat must be at least 1")
    for f in ns.files:
        if not f.is_file():
            fail(f"{f}: no such file")
    with tempfile.TemporaryDirectory(prefix="ptxasw-bench-src-") as tmp:
        files = ns.files or compile_corpus(Path(tmp), ns.limit)
        if not files:
            fail("no PTX to time (nvcc compiled none of the corpus)")
        settings = dict(item.split("=", 1) for item in ns.env if "=" in item)
        rows, startup, build = measure(files, ns.repeat, ns.pipeline, settings)
    base = sum(r.ptxas_ms for r in rows) or float("nan")
    if ns.json:
        print(
            json.dumps(
                {
                    "rows": [asdict(r) for r in rows],
                    "geomean_ratio": round(geomean([r.ratio for r in rows]), 3),
                    "geomean_warm_ratio": round(geomean([r.warm_ratio for r in rows]), 3),
                    "total_ratio": round(sum(r.wrapper_ms for r in rows) / base, 3),
                    "total_warm_ratio": round(sum(r.warm_ms for r in rows) / base, 3),
                    "total_warm_ratio_of_minima": round(
                        sum(r.warm_min_ms for r in rows) / sum(r.ptxas_min_ms for r in rows), 3
                    ),
                    "geomean_warm_py_ratio": round(geomean([r.warm_py_ratio for r in rows]), 3),
                    "total_warm_py_ratio": round(sum(r.warm_py_ms for r in rows) / base, 3),
                    "fast_entries": sum(r.fast_entry for r in rows),
                    "warm_same_cubins": sum(r.warm_same_cubin for r in rows),
                    "geomean_inprocess_ratio": round(geomean([r.inproc_ratio for r in rows]), 3),
                    "python_startup_ms": round(startup, 2),
                    "cold_build": asdict(build),
                    "settings": settings,
                },
                indent=2,
            )
        )
    else:
        print_table(rows, startup, build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
