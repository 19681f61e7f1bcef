"""GCC's OpenACC/OpenMP offload PTX for the corpus.

GCC (``gcc-12-offload-nvptx``) never calls ptxas: its nvptx back end writes
PTX and hands it to nvptx-tools' ``as`` through the offload compiler. To get
that PTX we point the offload compiler (``-B``) at a directory whose ``as``
copies its input aside and then runs the real one. The PTX targets sm_30 with
``.version 6.0``; ptxas 13 still assembles it for sm_75 with ``-c`` (the
library functions it calls are resolved by nvptx-tools' linker, not here).

``scripts/install-system-deps.sh`` installs the compiler where it can; when it
is missing these files are simply not part of the corpus.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pathlib
import shutil
import subprocess

from tests.corpus.build import CORPUS_DIR, CorpusFile

GCC_DIR = CORPUS_DIR / "gcc"

# (source, OpenACC or OpenMP flag)
GCC_SOURCES: tuple[tuple[str, str], ...] = (
    ("acc_stencil.c", "-fopenacc"),
    ("acc_kernels.c", "-fopenacc"),
    ("omp_target.c", "-fopenmp"),
    ("omp_realworld.c", "-fopenmp"),
    # OpenACC: GCC's OpenMP kernels only call gomp_nvptx_main, the loop bodies sit in .funcs.
    ("npb_bt.c", "-fopenacc"),
)

_CAPTURING_AS = """#!/bin/sh
# Copy the PTX that the offload compiler assembles, then assemble it for real.
for arg; do last=$arg; done
cp "$last" "$PTXASW_CAPTURE"
exec nvptx-none-as "$@"
"""


def gcc_offload() -> str | None:
    """gcc-12 with its nvptx offload compiler and nvptx-tools, or None."""
    gcc = shutil.which("gcc-12")
    mkoffload = glob.glob("/usr/lib/gcc/*/12/accel/nvptx-none/mkoffload")
    if gcc and mkoffload and shutil.which("nvptx-none-as"):
        return gcc
    return None


def build_gcc_corpus(cache_dir: pathlib.Path) -> list[CorpusFile]:
    """Compile every GCC source once (cached by source hash) and return its PTX."""
    gcc = gcc_offload()
    if gcc is None:
        return []
    files = []
    for source_name, model in GCC_SOURCES:
        source = GCC_DIR / source_name
        files.append(
            CorpusFile(
                name=f"{source.stem}.gcc",
                ptx_path=_cached_ptx(gcc, cache_dir, source, model),
                source_path=source,
                compiler="gcc",
                flags=(model,),
                arch="sm_75",
                ptxas_flags=("-c",),
            )
        )
    return files


def build_gcc_variant(cache_dir: pathlib.Path, source_name: str, model: str, opt: str) -> pathlib.Path | None:
    """One GCC source's offload PTX at another optimisation level (``-O0``,
    ``-O1``, ``-O3``) or model (``npb_bt.c`` with ``-fopenmp``): inputs the
    analysis was not tuned on. Cached by source, model and level; None
    without gcc-12 offloading."""
    gcc = gcc_offload()
    if gcc is None:
        return None
    return _cached_ptx(gcc, cache_dir, GCC_DIR / source_name, model, opt)


def _cached_ptx(
    gcc: str, cache_dir: pathlib.Path, source: pathlib.Path, model: str, opt: str | None = None
) -> pathlib.Path:
    """``source``'s offload PTX, compiled once per source text, model and
    level (``None``: the corpus's ``-O2``, named as it always was)."""
    level = "" if opt is None else opt
    digest = hashlib.sha256(source.read_bytes() + model.encode() + level.encode()).hexdigest()[:12]
    tag = "" if opt is None else f"{opt}{model.removeprefix('-f')}"
    ptx = cache_dir / f"{source.stem}.gcc{tag}.{digest}.ptx"
    if not ptx.exists():
        _compile(gcc, source, model, _capturing_tools(cache_dir), ptx, cache_dir, opt or "-O2")
    return ptx


def _capturing_tools(cache_dir: pathlib.Path) -> pathlib.Path:
    tools = cache_dir / "gcc-capture"
    tools.mkdir(parents=True, exist_ok=True)
    capturing_as = tools / "as"
    if not capturing_as.exists():
        capturing_as.write_text(_CAPTURING_AS)
        capturing_as.chmod(0o755)
    return tools


def _compile(
    gcc: str,
    source: pathlib.Path,
    model: str,
    tools: pathlib.Path,
    ptx: pathlib.Path,
    work: pathlib.Path,
    opt: str = "-O2",
    defines: tuple[str, ...] = (),
) -> None:
    partial = ptx.with_suffix(".partial")
    env = {**os.environ, "PTXASW_CAPTURE": str(partial)}
    cmd = [
        gcc,
        opt,
        *defines,
        model,
        "-foffload=nvptx-none",
        f"-foffload-options=nvptx-none=-Wa,--no-verify -B{tools} -lm",
        str(source),
        "-lm",
        "-o",
        str(work / f"{source.stem}.gcc.exe"),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not partial.exists():
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    partial.rename(ptx)
