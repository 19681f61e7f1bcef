"""Guards for the real-compiler PTX corpus itself.

The parser and round-trip tests trust the corpus to be valid compiler output;
these tests check that every planned file was built, is real PTX, and is
accepted by NVIDIA's ptxas for the architecture it was built for, so a broken
corpus fails here and not as a puzzling parser failure elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import shutil
import subprocess

import pytest

from tests.corpus.build import (
    CUDA_DIR,
    CUDA_SOURCES,
    LLVM_DIR,
    LLVM_SOURCES,
    CorpusFile,
    arch_at_least,
    build_corpus,
    have_clang,
    have_llc,
    planned_jobs,
    validate_table,
)


def test_table_is_consistent() -> None:
    """Every arch in the table meets its source's minimum, names are unique."""
    validate_table()
    assert len(planned_jobs(include_llvm=True)) == len({j.name for j in planned_jobs(True)})


def test_table_covers_every_source() -> None:
    """A source file added to cuda/ or llvm/ without a table row would silently
    never be compiled; catch that."""
    assert {p.name for p in CUDA_DIR.glob("*.cu")} == {s.file for s in CUDA_SOURCES}
    assert {p.name for p in LLVM_DIR.glob("*.ll")} == set(LLVM_SOURCES)


@pytest.mark.parametrize(
    ("arch", "minimum", "ok"),
    [
        ("sm_90", "sm_75", True),
        ("sm_75", "sm_80", False),
        ("sm_100a", "sm_89", True),
        ("sm_90a", "sm_90a", True),
        ("sm_100a", "sm_90a", False),
        ("sm_103", "sm_100f", True),
        ("sm_120", "sm_100f", False),
    ],
)
def test_arch_order(arch: str, minimum: str, ok: bool) -> None:
    assert arch_at_least(arch, minimum) is ok


def test_every_file_built(corpus: list[CorpusFile]) -> None:
    expected = {j.name for j in planned_jobs(include_llvm=have_llc(), include_openmp=have_clang())}
    assert {f.name for f in corpus} == expected
    for f in corpus:
        text = f.ptx_path.read_text()
        assert text.strip(), f"{f.name} is empty"
        assert ".version" in text and ".target" in text, f"{f.name} does not look like PTX"
        assert f.source_path.exists()


def test_rebuild_reuses_cache(corpus: list[CorpusFile]) -> None:
    """A second build must reuse every cached file (no recompilation)."""
    cache_dir = corpus[0].ptx_path.parent
    before = {f.ptx_path: f.ptx_path.stat().st_mtime_ns for f in corpus}
    again = build_corpus(cache_dir)
    assert [f.ptx_path for f in again] == [f.ptx_path for f in corpus]
    assert {f.ptx_path: f.ptx_path.stat().st_mtime_ns for f in again} == before


def _assemble(f: CorpusFile, out_dir: pathlib.Path) -> str | None:
    ptxas = shutil.which("ptxas")
    assert ptxas is not None
    out = out_dir / f"{f.name}.cubin"
    cmd = [ptxas, f"-arch={f.arch}", *f.ptxas_flags, str(f.ptx_path), "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        return f"{f.name}: {' '.join(cmd)}\n{res.stderr}"
    return None


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")
def test_ptxas_accepts_every_file(corpus: list[CorpusFile], tmp_path: pathlib.Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errors = [e for e in pool.map(lambda f: _assemble(f, tmp_path), corpus) if e]
    assert not errors, "\n".join(errors)
