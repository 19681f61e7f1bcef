"""Build the real-compiler PTX corpus that the parser and round-trip tests read.

Hand-written PTX only exercises what its author thought of; the PTX that nvcc
and LLVM actually print has directives, modifiers, comments and layouts nobody
remembers to write by hand. So the corpus is CUDA, LLVM IR and OpenMP C sources
kept in this directory, compiled here, at test time, by the real tool chains, in
several configurations (architectures, -G, -lineinfo, -rdc, -use_fast_math;
clang's OpenMP offload at -O2 and at -O0 -g).

Compiling is slow (nvcc takes about a second per file), so results are cached:
each PTX file name carries a hash of the exact command and the compiler version,
and a cached file is reused while it is newer than its source. Jobs run in
parallel on all cores.

Usage: ``python -m tests.corpus.build OUTDIR`` prints a table of what was built.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence

CORPUS_DIR = pathlib.Path(__file__).resolve().parent
CUDA_DIR = CORPUS_DIR / "cuda"
LLVM_DIR = CORPUS_DIR / "llvm"
OPENMP_DIR = CORPUS_DIR / "openmp"

# nvcc's device code defaults to -O3 already; saying it keeps the command explicit.
NVCC_BASE_FLAGS: tuple[str, ...] = ("--ptx", "-O3")
# A -G build is an unoptimised debug build; -O3 would only be overridden.
NVCC_DEBUG_BASE_FLAGS: tuple[str, ...] = ("--ptx",)


@dataclasses.dataclass(frozen=True)
class CorpusFile:
    """One PTX file of the corpus and how it was made.

    ``flags`` are the configuration flags that distinguish this build (the
    ones a test may care about, e.g. ``("-G",)``), not the full command line.
    ``ptxas_flags`` are what ``ptxas`` needs on top of ``-arch`` to assemble the
    file on its own: ``("-c",)`` for relocatable (-rdc) PTX, whose extern
    functions are only resolved by nvlink.
    """

    name: str
    ptx_path: pathlib.Path
    source_path: pathlib.Path
    compiler: str
    flags: tuple[str, ...]
    arch: str
    ptxas_flags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Variant:
    """An extra build of a source: a name tag, configuration flags and one arch."""

    tag: str
    flags: tuple[str, ...]
    arch: str


@dataclasses.dataclass(frozen=True)
class SourceSpec:
    """Which configurations to build one source in.

    ``min_arch`` is the oldest architecture the source compiles for (it uses
    features of that generation); every arch in ``arches`` and every variant
    must be at least that, which :func:`validate_table` checks.
    """

    file: str
    min_arch: str
    arches: tuple[str, ...]
    variants: tuple[Variant, ...] = ()


def _g(arch: str) -> Variant:
    return Variant("G", ("-G",), arch)


def _lineinfo(arch: str) -> Variant:
    return Variant("lineinfo", ("-lineinfo",), arch)


def _rdc(arch: str) -> Variant:
    return Variant("rdc", ("-rdc=true",), arch)


# The per-source table. Arches are spread over sources so that, together, the
# corpus covers every generation nvcc 13 targets (sm_75 .. sm_120) without
# building every source for every arch.
CUDA_SOURCES: tuple[SourceSpec, ...] = (
    SourceSpec("stencil2d.cu", "sm_75", ("sm_75", "sm_90"), (_g("sm_75"), _lineinfo("sm_90"))),
    SourceSpec("stencil3d.cu", "sm_75", ("sm_75", "sm_86"), (_lineinfo("sm_80"),)),
    SourceSpec("kernelgen_like.cu", "sm_75", ("sm_75", "sm_90"), (_lineinfo("sm_75"),)),
    SourceSpec("warp_shuffle.cu", "sm_75", ("sm_75", "sm_90"), (_g("sm_80"),)),
    SourceSpec("warp_vote.cu", "sm_75", ("sm_75", "sm_120")),
    SourceSpec("warp_reduce_sm80.cu", "sm_80", ("sm_80", "sm_90")),
    SourceSpec("atomics.cu", "sm_75", ("sm_75", "sm_90"), (_lineinfo("sm_90"),)),
    SourceSpec("texsurf.cu", "sm_75", ("sm_75", "sm_89")),
    SourceSpec("cp_async.cu", "sm_80", ("sm_80", "sm_90")),
    SourceSpec("tma_mbarrier.cu", "sm_90", ("sm_90", "sm_100")),
    SourceSpec("coop_groups.cu", "sm_75", ("sm_75", "sm_90"), (_rdc("sm_80"),)),
    SourceSpec("calls.cu", "sm_75", ("sm_75", "sm_90"), (_rdc("sm_80"), _g("sm_75"))),
    SourceSpec("printf_assert.cu", "sm_75", ("sm_75", "sm_120")),
    SourceSpec("inline_asm.cu", "sm_75", ("sm_75", "sm_90")),
    SourceSpec("half_bf16.cu", "sm_75", ("sm_75", "sm_90")),
    SourceSpec("fp8.cu", "sm_89", ("sm_89", "sm_90", "sm_100a")),
    SourceSpec("wmma.cu", "sm_75", ("sm_75", "sm_80")),
    SourceSpec("mma_sync.cu", "sm_80", ("sm_80", "sm_120")),
    SourceSpec("wgmma.cu", "sm_90a", ("sm_90a",)),
    SourceSpec("globals.cu", "sm_75", ("sm_75", "sm_90"), (_rdc("sm_90"),)),
    SourceSpec("shared_local.cu", "sm_75", ("sm_75", "sm_90"), (_g("sm_90"),)),
    SourceSpec(
        "math_funcs.cu",
        "sm_75",
        ("sm_75", "sm_90"),
        (Variant("fastmath", ("-use_fast_math",), "sm_75"),),
    ),
    SourceSpec("clusters.cu", "sm_90", ("sm_90", "sm_120")),
    SourceSpec("launch_bounds.cu", "sm_75", ("sm_75", "sm_90")),
    # Dynamic parallelism only compiles as relocatable device code.
    SourceSpec("dynpar.cu", "sm_75", (), (_rdc("sm_75"), _rdc("sm_90"))),
    SourceSpec("control_flow.cu", "sm_75", ("sm_75", "sm_90"), (_g("sm_75"),)),
    # Large real-world-shaped kernels (ADI line solver, LBM D2Q9, seismic 25-point).
    SourceSpec("adi_solver.cu", "sm_75", ("sm_80",), (_g("sm_80"),)),
    SourceSpec("lbm_d2q9.cu", "sm_75", ("sm_86",), (_g("sm_86"),)),
    SourceSpec("seismic25.cu", "sm_75", ("sm_90",), (_lineinfo("sm_90"),)),
    # Thrust/CUB template instances (the toolkit's own headers).
    SourceSpec("thrust_cub.cu", "sm_75", ("sm_75", "sm_90")),
    # libcu++ barriers, pipelines and scoped atomics; cooperative-groups reduce.
    SourceSpec("libcudacxx.cu", "sm_80", ("sm_80", "sm_90"), (_g("sm_90"),)),
)

# LLVM 14's NVPTX back end knows sm_20..sm_86 and PTX ISA up to 7.5; ptxas 13
# takes sm_75 and newer. sm_75 needs PTX >= 6.3, sm_80 >= 7.0, sm_86 >= 7.1.
LLC_CONFIGS: tuple[tuple[str, str], ...] = (("sm_75", "ptx64"), ("sm_86", "ptx75"))
LLVM_SOURCES: tuple[str, ...] = (
    "vecadd.ll",
    "warp_shuffle.ll",
    "smem_stencil.ll",
    "atomics.ll",
    "calls_globals.ll",
)


# clang's OpenMP offload for NVPTX, device code only, without the device
# runtime (-nogpulib: its __kmpc_* calls stay extern, so ptxas needs -c).
# The -g build names its PTX-text sections after a hash of the text.
CLANG = "clang-19"
OPENMP_CONFIGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("sm_90", "O2", ("-O2",)),
    ("sm_80", "O0g", ("-O0", "-g")),
)
OPENMP_SOURCES: tuple[str, ...] = ("omp_offload.c",)


class CorpusBuildError(RuntimeError):
    """Raised when one or more corpus files fail to compile."""


_ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")


def parse_arch(arch: str) -> tuple[int, str]:
    """Split ``sm_90a`` into ``(90, "a")``; reject anything else loudly."""
    m = _ARCH_RE.match(arch)
    if not m:
        raise ValueError(f"not an sm_XY[a|f] architecture: {arch!r}")
    return int(m.group(1)), m.group(2)


def arch_at_least(arch: str, minimum: str) -> bool:
    """Whether code needing ``minimum`` may be built for ``arch``.

    Architecture-specific targets (``sm_90a``) only run on exactly that chip,
    so a source that needs ``sm_90a`` builds for ``sm_90a`` alone; family
    targets (``sm_100f``) stay within their major version; otherwise the
    numeric generation decides.
    """
    num, _ = parse_arch(arch)
    min_num, min_suffix = parse_arch(minimum)
    if min_suffix == "a":
        return arch == minimum
    if min_suffix == "f" and num // 10 != min_num // 10:
        return False
    return num >= min_num


def validate_table(specs: Iterable[SourceSpec] = CUDA_SOURCES) -> None:
    """Fail early on a table entry that would ask nvcc for an impossible build."""
    seen: set[str] = set()
    for spec in specs:
        if spec.file in seen:
            raise ValueError(f"{spec.file} listed twice")
        seen.add(spec.file)
        for arch in list(spec.arches) + [v.arch for v in spec.variants]:
            if not arch_at_least(arch, spec.min_arch):
                raise ValueError(f"{spec.file}: {arch} is below its minimum {spec.min_arch}")


@dataclasses.dataclass(frozen=True)
class _Job:
    """One compiler invocation, before we know whether the cache satisfies it."""

    name: str
    source: pathlib.Path
    compiler: str
    flags: tuple[str, ...]
    arch: str
    ptxas_flags: tuple[str, ...]
    argv: tuple[str, ...]  # full command without the output path

    def command(self, out: pathlib.Path) -> list[str]:
        return [*self.argv, "-o", str(out)]


@functools.cache
def tool_version(tool: str) -> str:
    """The tool's ``--version`` text; part of the cache key so that a new
    toolkit never reuses PTX produced by the old one."""
    path = shutil.which(tool)
    if path is None:
        return ""
    res = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return res.stdout + res.stderr


def _cuda_jobs(specs: Sequence[SourceSpec]) -> list[_Job]:
    jobs: list[_Job] = []
    for spec in specs:
        src = CUDA_DIR / spec.file
        stem = src.stem
        builds = [(arch, "", ()) for arch in spec.arches]
        builds += [(v.arch, v.tag, v.flags) for v in spec.variants]
        for arch, tag, flags in builds:
            base = NVCC_DEBUG_BASE_FLAGS if "-G" in flags else NVCC_BASE_FLAGS
            argv = ("nvcc", *base, f"-arch={arch}", *flags, str(src))
            name = f"{stem}.{arch}" + (f".{tag}" if tag else "")
            ptxas_flags = ("-c",) if "-rdc=true" in flags else ()
            jobs.append(_Job(name, src, "nvcc", tuple(flags), arch, ptxas_flags, argv))
    return jobs


def _llvm_jobs(files: Sequence[str]) -> list[_Job]:
    jobs: list[_Job] = []
    for fname in files:
        src = LLVM_DIR / fname
        for arch, ptx in LLC_CONFIGS:
            flags = ("-march=nvptx64", f"-mcpu={arch}", f"-mattr=+{ptx}")
            argv = ("llc", *flags, str(src))
            name = f"{src.stem}.ll.{arch}"
            jobs.append(_Job(name, src, "llc", flags, arch, (), argv))
    return jobs


def _openmp_jobs(files: Sequence[str]) -> list[_Job]:
    jobs: list[_Job] = []
    for fname in files:
        src = OPENMP_DIR / fname
        for arch, tag, opt in OPENMP_CONFIGS:
            flags = (*opt, "-fopenmp", f"--offload-arch={arch}", "--offload-device-only", "-S", "-nogpulib")
            argv = (CLANG, *flags, str(src))
            jobs.append(_Job(f"{src.stem}.omp.{arch}.{tag}", src, CLANG, flags, arch, ("-c",), argv))
    return jobs


def planned_jobs(include_llvm: bool = True, include_openmp: bool = True) -> list[_Job]:
    """Every build the corpus consists of, in a stable order."""
    validate_table()
    jobs = _cuda_jobs(CUDA_SOURCES)
    if include_llvm:
        jobs += _llvm_jobs(LLVM_SOURCES)
    if include_openmp:
        jobs += _openmp_jobs(OPENMP_SOURCES)
    names = [j.name for j in jobs]
    if len(names) != len(set(names)):
        raise ValueError("duplicate corpus names")
    return jobs


def _cache_path(cache_dir: pathlib.Path, job: _Job) -> pathlib.Path:
    key = "\0".join([*job.argv, tool_version(job.compiler)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir / f"{job.name}.{digest}.ptx"


def _is_fresh(ptx: pathlib.Path, source: pathlib.Path) -> bool:
    try:
        st = ptx.stat()
    except FileNotFoundError:
        return False
    return st.st_size > 0 and st.st_mtime >= source.stat().st_mtime


def _run_job(job: _Job, out: pathlib.Path) -> str | None:
    """Compile one job into ``out`` atomically; return an error text or None.

    The output goes to a temporary name first so that an interrupted or
    failed build never leaves a half-written file that looks fresh.
    """
    if _is_fresh(out, job.source):
        return None
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd = job.command(tmp)
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0 or not tmp.exists() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        return f"{job.name}: {' '.join(cmd)}\n{res.stdout}{res.stderr}"
    os.replace(tmp, out)
    return None


def have_nvcc() -> bool:
    """Whether this machine can build the CUDA part of the corpus."""
    return shutil.which("nvcc") is not None


def have_llc() -> bool:
    """Whether this machine can build the LLVM part of the corpus."""
    return shutil.which("llc") is not None


def have_clang() -> bool:
    """Whether this machine can build the OpenMP offload part of the corpus."""
    return shutil.which(CLANG) is not None


def build_corpus(
    cache_dir: pathlib.Path,
    include_llvm: bool | None = None,
    jobs: int | None = None,
    include_openmp: bool | None = None,
) -> list[CorpusFile]:
    """Compile (or reuse) every corpus file into ``cache_dir``.

    ``include_llvm`` defaults to "when llc is installed", ``include_openmp``
    to "when clang-19 is installed". Raises
    :class:`CorpusBuildError` listing every failed command, after letting the
    other jobs finish, so one broken source does not hide the rest.
    """
    if not have_nvcc():
        raise CorpusBuildError("nvcc not found on PATH")
    if include_llvm is None:
        include_llvm = have_llc()
    if include_openmp is None:
        include_openmp = have_clang()
    cache_dir = pathlib.Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    plan = planned_jobs(include_llvm, include_openmp)
    outs = [_cache_path(cache_dir, j) for j in plan]
    workers = jobs or os.cpu_count() or 2
    errors: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for err in pool.map(_run_job, plan, outs):
            if err:
                errors.append(err)
    if errors:
        raise CorpusBuildError(f"{len(errors)} corpus build(s) failed:\n" + "\n".join(errors))
    return [
        CorpusFile(j.name, out, j.source, j.compiler, j.flags, j.arch, j.ptxas_flags)
        for j, out in zip(plan, outs, strict=True)
    ]


def _count_lines(path: pathlib.Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: build into OUTDIR and print one row per file plus totals."""
    ap = argparse.ArgumentParser(prog="python -m tests.corpus.build", description=__doc__.split("\n")[0])
    ap.add_argument("outdir", type=pathlib.Path, help="cache/output directory for the PTX files")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="parallel compiler processes")
    ap.add_argument("--no-llvm", action="store_true", help="skip the llc part")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        files = build_corpus(args.outdir, include_llvm=False if args.no_llvm else None, jobs=args.jobs)
    except CorpusBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - t0
    width = max(len(f.name) for f in files)
    print(f"{'name':<{width}}  {'compiler':<8} {'arch':<8} {'flags':<22} {'lines':>7}  path")
    total = 0
    for f in files:
        lines = _count_lines(f.ptx_path)
        total += lines
        # nvcc's configuration flags; llc's -mattr; clang's optimisation level
        if f.compiler == "nvcc":
            flags = " ".join(f.flags)
        else:
            flags = f.flags[-1] if f.compiler == "llc" else f.flags[0]
        print(f"{f.name:<{width}}  {f.compiler:<8} {f.arch:<8} {flags:<22} {lines:>7}  {f.ptx_path}")
    print(f"{len(files)} files, {total} PTX lines, {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
