"""clang's OpenMP offload PTX as the link step hands it to ptxas.

With ``-foffload-lto`` clang links the device runtime (libomp-19-dev's
``libomptarget.devicertl``) into the kernels and runs ptxas once, at the
link, from ``--cuda-path``. To get that PTX we link through a shadow of the
CUDA toolkit whose ``bin/ptxas`` copies its input aside and then runs the
real one (as `tests.corpus.gcc` does with GCC's ``as``). Unlike the device-only
builds of `tests.corpus.build` (``-nogpulib``: the runtime's calls stay
extern), every kernel here is whole: the runtime's loop scheduling is
inlined into it.

``scripts/install-system-deps.sh`` installs clang-19, clang-tools-19 (the
offload packager and linker wrapper) and libomp-19-dev where it can; without
them, or without the CUDA toolkit, there are no such files.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess

from tests.corpus.build import CORPUS_DIR, CorpusFile

CLANG = "clang-19"
ARCH = "sm_80"
TOOLS = pathlib.Path("/usr/lib/llvm-19")

# (source, a file with its main where the source has none)
SOURCES: tuple[tuple[pathlib.Path, pathlib.Path | None], ...] = (
    (CORPUS_DIR / "openmp" / "omp_offload.c", CORPUS_DIR.parent / "toolchain" / "omp_main.c"),
    (CORPUS_DIR / "gcc" / "omp_target.c", None),
    (CORPUS_DIR / "gcc" / "omp_realworld.c", None),
)

_CAPTURING_PTXAS = """#!/bin/sh
# Copy the PTX the link step assembles, then assemble it for real.
for arg; do case "$arg" in *.s|*.ptx) cp "$arg" "$PTXASW_CAPTURE";; esac; done
exec "{real}" "$@"
"""


def clang_openmp_offload() -> str | None:
    """clang-19 with the offload linker and the OpenMP device runtime, or None."""
    clang = shutil.which(CLANG)
    linker = TOOLS / "bin" / "clang-linker-wrapper"
    runtime = TOOLS / "lib" / "libomptarget.devicertl.a"
    return clang if clang and linker.exists() and runtime.exists() else None


def build_openmp_lto_corpus(cache_dir: pathlib.Path) -> list[CorpusFile]:
    """Link every source once (cached by its text and the compiler's) and
    return the PTX ptxas was given; [] without the tools."""
    from ptxasw.driver.toolkit import ToolkitError, find_cuda_toolkit

    clang = clang_openmp_offload()
    try:
        cuda = find_cuda_toolkit(None)
    except ToolkitError:
        return []
    if clang is None:
        return []
    files = []
    for source, main in SOURCES:
        text = source.read_bytes() + (main.read_bytes() if main else b"")
        version = subprocess.run([clang, "--version"], capture_output=True, check=False).stdout
        digest = hashlib.sha256(text + version).hexdigest()[:12]
        ptx = cache_dir / f"{source.stem}.omplto.{ARCH}.{digest}.ptx"
        if not ptx.exists():
            _link(clang, source, main, _capturing_toolkit(cache_dir, cuda), ptx, cache_dir)
        files.append(
            CorpusFile(
                name=f"{source.stem}.omplto.{ARCH}",
                ptx_path=ptx,
                source_path=source,
                compiler=CLANG,
                flags=("-fopenmp", "-foffload-lto", "-O2"),
                arch=ARCH,
            )
        )
    return files


def _capturing_toolkit(cache_dir: pathlib.Path, cuda: pathlib.Path) -> pathlib.Path:
    from ptxasw.driver.toolkit import create_shadow_toolkit

    toolkit = cache_dir / "omplto-capture"
    if not (toolkit / "bin" / "ptxas").exists():
        create_shadow_toolkit(toolkit, cuda)
    ptxas = toolkit / "bin" / "ptxas"
    ptxas.unlink()
    ptxas.write_text(_CAPTURING_PTXAS.format(real=(cuda / "bin" / "ptxas").resolve()))
    ptxas.chmod(0o755)
    return toolkit


def _link(
    clang: str,
    source: pathlib.Path,
    main: pathlib.Path | None,
    toolkit: pathlib.Path,
    ptx: pathlib.Path,
    work: pathlib.Path,
) -> None:
    partial = ptx.with_suffix(".partial")
    env = {**os.environ, "PTXASW_CAPTURE": str(partial)}
    cmd = [clang, "-fopenmp", f"--offload-arch={ARCH}", "-O2", "-foffload-lto", f"--cuda-path={toolkit}"]
    cmd += [str(source), *([str(main)] if main else []), "-lm", "-o", str(work / f"{source.stem}.omplto.exe")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=work)
    if proc.returncode != 0 or not partial.exists():
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    partial.rename(ptx)
