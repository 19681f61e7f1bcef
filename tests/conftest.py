"""Shared pytest fixtures: the real-compiler PTX corpus.

Building the corpus runs nvcc and llc (tens of seconds from cold), so it is
built once per session and cached; set ``PTXASW_CORPUS_CACHE`` to a directory
to keep the cache across sessions (the builder reuses fresh files).
"""

from __future__ import annotations

import os
import pathlib

import pytest

from tests.corpus.build import CorpusFile, build_corpus, have_nvcc
from tests.corpus.gcc import build_gcc_corpus
from tests.corpus.openmp_lto import build_openmp_lto_corpus


def _corpus_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    env = os.environ.get("PTXASW_CORPUS_CACHE")
    if env:
        path = pathlib.Path(env).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("corpus")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[CorpusFile]:
    """Every corpus PTX file, compiled (or reused from the cache) for this session."""
    if not have_nvcc():
        pytest.skip("nvcc not found on PATH: the PTX corpus needs the CUDA toolkit")
    return build_corpus(_corpus_cache_dir(tmp_path_factory))


@pytest.fixture(scope="session")
def gcc_corpus(tmp_path_factory: pytest.TempPathFactory) -> list[CorpusFile]:
    """GCC's OpenACC/OpenMP offload PTX (needs gcc-12-offload-nvptx)."""
    files = build_gcc_corpus(_corpus_cache_dir(tmp_path_factory))
    if not files:
        pytest.skip("gcc-12-offload-nvptx not installed: run scripts/install-system-deps.sh")
    return files


@pytest.fixture(scope="session")
def openmp_lto_corpus(tmp_path_factory: pytest.TempPathFactory) -> list[CorpusFile]:
    """clang's OpenMP offload PTX at the link, device runtime inlined (needs
    clang-19, clang-tools-19, libomp-19-dev and the CUDA toolkit)."""
    files = build_openmp_lto_corpus(_corpus_cache_dir(tmp_path_factory))
    if not files:
        pytest.skip("clang-19 OpenMP offload not installed: run scripts/install-system-deps.sh")
    return files
