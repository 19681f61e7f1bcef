"""The shuffle-synthesis kernel suite (``benchmarks/kernels``) on the CPU.

Every suite kernel, compiled by this machine's nvcc, runs in the concrete
interpreter at small odd sizes (partial warps and blocks, blockDim.x of 8, 16,
48, one-block grids) and must match its NumPy reference; every kernel also
builds with ``-G`` and for sm_75, and each build parses and assembles with the
real ``ptxas``. The rewrite tests run the same cases through `run_kernel` on
original and rewritten PTX, so these tests are what makes those comparisons
meaningful: the suite itself is right.

nvcc runs once per source and configuration (in parallel, cached by content
in ``$PTXASW_CORPUS_CACHE`` or a per-user temporary folder).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks.kernels import suite
from ptxasw.parser import parse_ptx

pytestmark = pytest.mark.skipif(suite.find_nvcc() is None, reason="nvcc not found: the suite compiles CUDA")

# (arch, debug) builds every kernel must survive; the first is the one the tests run.
CONFIGS = (("sm_90", False), ("sm_90", True), ("sm_75", False))
SOURCES = sorted({k.source for k in suite.KERNELS.values()})
CASES = [(name, i) for name, k in suite.KERNELS.items() for i in range(len(suite.small_shapes(k)))]


@pytest.fixture(scope="module")
def builds() -> dict[tuple[str, str, bool], Path]:
    """PTX of every suite source in every configuration, keyed by (source stem, arch, debug)."""
    paths = suite.compile_many((source, arch, debug) for source in SOURCES for arch, debug in CONFIGS)
    return {(src.stem, arch, debug): path for (src, arch, debug), path in paths.items()}


def _ptx(builds: dict, kernel: suite.Kernel, arch: str = "sm_90", debug: bool = False) -> Path:
    return builds[(kernel.source.stem, arch, debug)]


# --------------------------------------------------------------------------
# The registry


def test_registry_has_the_paper_suite_and_the_applications() -> None:
    assert set(suite.KERNELGEN) | set(suite.APPLICATIONS) <= set(suite.KERNELS)
    assert len(suite.KERNELGEN) == 16
    for name in ("gaussblur", "wave13pt", "deriv8"):
        assert suite.KERNELS[f"{name}_f64"].dtype == np.float64
        assert suite.KERNELS[name].dtype == np.float32


def test_every_source_kernel_is_registered() -> None:
    """No ``.cu`` in the folder and no ``extern "C" __global__`` in it escapes the registry."""
    symbols = {k.symbol for k in suite.KERNELS.values()}
    folder = Path(suite.__file__).parent
    assert {p for p in folder.glob("*.cu")} == set(SOURCES)
    declared = set()
    for path in [*folder.glob("*.cu"), *folder.glob("*.cuh")]:
        declared |= set(re.findall(r'extern "C" __global__ void (\w+)\(', path.read_text()))
    # Bodies shared by a float and a double kernel are named by a macro.
    declared = {d for d in declared if not d.isupper() and not d.endswith("_NAME")}
    assert declared <= symbols
    assert all(k.source.exists() for k in suite.KERNELS.values())


@pytest.mark.parametrize("name", list(suite.KERNELS))
def test_parameters_match_the_ptx(builds, name: str) -> None:
    """The registry's parameter list is the kernel's: count, pointer-ness and width."""
    k = suite.KERNELS[name]
    fn = suite.load_module(_ptx(builds, k)).function(k.symbol)
    assert len(fn.params) == len(k.params)
    expected = {"f32": {".f32"}, "f64": {".f64"}, "i32": {".u32", ".s32", ".b32"}}
    for param, spec in zip(k.params, fn.params, strict=True):
        if param.is_pointer:
            assert spec.type in (".u64", ".b64"), (param, spec)
        else:
            assert spec.type in expected[param.kind], (param, spec)


@pytest.mark.parametrize("name", list(suite.KERNELS))
def test_small_shapes_cover_the_corner_cases(name: str) -> None:
    """CI launches include blockDim.x 8, 16 and 48, the natural block, partial warps and a one-block grid."""
    k = suite.KERNELS[name]
    cases = suite.small_shapes(k)
    xs = {c.block[0] for c in cases}
    assert {8, 16, 48} <= xs
    assert any(c.block == k.blocks[0] for c in cases)
    assert any(k.thread_space(c.shape)[0] % 32 for c in cases), "no partial warp along x"
    assert any(k.grid(c.shape, c.block)[:2] == (1, 1) for c in cases), "no one-block grid"
    for c in cases:
        assert np.prod(c.block) <= 1024
        assert np.prod(k.grid(c.shape, c.block)) * np.prod(c.block) <= 12_288, "too slow for CI"


# --------------------------------------------------------------------------
# The kernels against NumPy


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_interpreter_matches_reference(builds, name: str, case: int) -> None:
    k = suite.KERNELS[name]
    shape, block = suite.small_shapes(k)[case]
    out = suite.run_kernel(_ptx(builds, k), k, shape, block, seed=case)
    expected = k.reference(suite.launch_args(k, shape, seed=case))
    assert set(out) == set(k.outputs) == set(expected)
    assert not k.check(out, expected)


@pytest.mark.parametrize("name", list(suite.KERNELS))
def test_debug_build_matches_reference(builds, name: str) -> None:
    """The ``-G`` build computes the same thing (one case: debug PTX is several times longer)."""
    k = suite.KERNELS[name]
    shape, block = suite.small_shapes(k)[2]
    out = suite.run_kernel(_ptx(builds, k, debug=True), k, shape, block, seed=7)
    assert not k.check(out, k.reference(suite.launch_args(k, shape, seed=7)))


def test_same_seed_same_bits_and_seeds_differ(builds) -> None:
    """`run_kernel` is deterministic per seed: the original-vs-rewritten comparison relies on it."""
    k = suite.KERNELS["gaussblur"]
    shape, block = suite.small_shapes(k)[1]
    first = suite.run_kernel(_ptx(builds, k), k, shape, block, seed=3)
    again = suite.run_kernel(suite.load_module(_ptx(builds, k)), "gaussblur", shape, block, seed=3)
    other = suite.run_kernel(_ptx(builds, k), k, shape, block, seed=4)
    assert suite.same_bits(first, again) == []
    assert suite.same_bits(first, other) == [1]


def test_check_rejects_a_wrong_neighbour_and_a_written_boundary(builds, tmp_path: Path) -> None:
    """The tolerance is sharp: a stencil reading idx+2 for idx+1 fails, and so does touching the boundary."""
    k = suite.KERNELS["laplacian"]
    shape, block = suite.small_shapes(k)[0]
    expected = k.reference(suite.launch_args(k, shape, seed=0))

    wrong = tmp_path / "laplacian.cu"
    wrong.write_text(k.source.read_text().replace("u[idx + 1]", "u[idx + 2]"))
    out = suite.run_kernel(suite.compile_ptx(wrong, out_dir=tmp_path), k, shape, block, seed=0)
    assert k.check(out, expected)

    good = suite.run_kernel(_ptx(builds, k), k, shape, block, seed=0)
    assert not k.check(good, expected)
    good[1][0] = 0.0  # a boundary point keeps its initial (random) value in the reference
    assert k.check(good, expected)


# --------------------------------------------------------------------------
# Every build parses and assembles


@pytest.mark.parametrize(("arch", "debug"), CONFIGS, ids=[f"{a}{'-G' if d else ''}" for a, d in CONFIGS])
def test_builds_parse_and_assemble(builds, arch: str, debug: bool, tmp_path: Path) -> None:
    ptxas = shutil.which("ptxas")
    for source in SOURCES:
        path = builds[(source.stem, arch, debug)]
        module = parse_ptx(path.read_text(), str(path))
        for k in (k for k in suite.KERNELS.values() if k.source == source):
            assert module.function(k.symbol).is_kernel
        if ptxas is None:
            continue
        proc = subprocess.run(
            [ptxas, f"-arch={arch}", str(path), "-o", str(tmp_path / f"{source.stem}.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"ptxas -arch={arch} {path}:\n{proc.stderr}"


@pytest.mark.parametrize("name", list(suite.KERNELS))
def test_gpu_shapes_fit_their_budgets(name: str) -> None:
    """The GPU timing sizes: an L2-resident one and a DRAM-bound one, 32-aligned rows, int32 indices."""
    k = suite.KERNELS[name]
    shapes = suite.gpu_shapes(k)
    assert set(shapes) == {"l2", "dram"}
    for label, shape in shapes.items():
        assert shape[0] % 32 == 0
        if k.name not in ("matmul", "matvec"):  # their shapes are matrix sizes, not grids
            assert np.prod(shape, dtype=np.int64) < 2**31
            footprint = int(np.prod(shape)) * suite.bytes_per_point(k)
            budget = (16 << 20) if label == "l2" else (1 << 30)
            assert budget // 2 <= footprint <= budget, (label, shape, footprint)
