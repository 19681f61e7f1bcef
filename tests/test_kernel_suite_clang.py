"""The shuffle-synthesis kernel suite (``benchmarks/kernels``) as clang-19 builds it.

`test_kernel_suite` runs nvcc's PTX of the suite; this file runs clang's
(LLVM's NVPTX back end: other register names, ``ld.global.nc`` only where
``__restrict__`` lets it, ``mad.lo``/``mul.wide`` in other places, at -O0 the
locals on a ``%SP`` stack reached through generic addresses). Every suite
source is compiled by clang-19 for sm_90 at -O3, -O1 and -O0 -g (clang's
debug build), without the CUDA headers (clang-19 cannot parse CUDA 13's):
``tests/kernels/clang_prelude.h`` defines what the kernels use, and libdevice
is linked in for ``sinf``/``cosf`` as clang's own CUDA headers would.

Each build must parse (``ptxasw check``, no warning) and assemble with the
real ``ptxas``, before and after the rewrite; every shuffle the rewrite keeps
is proven; original and rewrite, run in the concrete interpreter on the
suite's small odd launches, give the same bits, and the original matches the
suite's NumPy reference (so the comparison means something). The shuffle
counts are pinned to what was measured: at -O3 nvcc's -O3 count, and two
more on seismic_rhs; -O1 differs only where clang leaves matmul's and
matvec's loops rolled; -O0 -g see ``COUNTS_O0G``.

-O3 runs every small launch; -O1 and -O0 -g, whose PTX is longer, one launch
per kernel (blockDim.x 8: rows inside warps, partial blocks).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from benchmarks.kernels import suite
from ptxasw.cli import main
from ptxasw.cli.common import synthesis_assembler
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_ptx
from ptxasw.synth.detect import Options, Status
from ptxasw.synth.prove import PROVED
from ptxasw.synth.synthesize import ShuffleSynthesisPass

CLANG = shutil.which("clang-19")
PTXAS = shutil.which("ptxas")
PRELUDE = Path(__file__).parent / "kernels" / "clang_prelude.h"

pytestmark = [
    pytest.mark.skipif(CLANG is None, reason="clang-19 not installed: run scripts/install-system-deps.sh"),
    pytest.mark.skipif(PTXAS is None, reason="ptxas not found: the rewrite keeps ptxas's rounding"),
]

LEVELS = {"O3": ("-O3",), "O1": ("-O1",), "O0g": ("-O0", "-g")}
SOURCES = sorted({k.source for k in suite.KERNELS.values()})
NEEDS_LIBDEVICE = {"sincos"}  # sinf and cosf: __nv_sinf, __nv_cosf

# (shuffles, global loads) per kernel, measured with clang-19.1.7 and this
# ptxasw. nvcc 13.0's -O3 build has the same numbers (test_kernel_suite's
# builds; benchmarks/results/gpu_speedup_h100.md) except seismic_rhs, 82/162.
COUNTS_O3 = {
    "divergence": (1, 6),
    "gameoflife": (6, 9),
    "gaussblur": (20, 25),
    "gaussblur_f64": (20, 25),
    "gradient": (1, 6),
    "jacobi": (6, 9),
    "lapgsrb": (3, 16),
    "laplacian": (2, 7),
    "matmul": (0, 10),
    "matvec": (0, 10),
    "sincos": (0, 4),
    "tricubic": (48, 67),
    "tricubic2": (48, 67),
    "uxx1": (3, 17),
    "vecadd": (0, 2),
    "wave13pt": (4, 14),
    "wave13pt_f64": (4, 14),
    "whispering": (4, 12),
    "hypterm": (42, 144),
    "seismic_rhs": (84, 162),
    "deriv8": (21, 72),
    "deriv8_f64": (21, 72),
}
# -O1: clang keeps matmul's and matvec's k-loops rolled (one load of each matrix a trip).
COUNTS_O1 = COUNTS_O3 | {"matmul": (0, 2), "matvec": (0, 2)}
# -O0 -g: loops stay rolled (#pragma unroll is not honoured), every local
# lives in the thread's stack (``%SP``, a generic address of the ``.local``
# depot), and the pointer parameters are spilled there and reloaded before
# each use. A store to the stack overwrites no global element, and a store
# through a pointer parameter no stack slot (`SymbolicExecutor._memory_space`):
# with that, hypterm gets nvcc -G's 77 of 264, seismic_rhs 118 of 198; the
# counts include reuses (N = 0: tricubic's elements loaded again each pass).
COUNTS_O0G = {
    "divergence": (1, 6),
    "gameoflife": (5, 9),
    "gaussblur": (0, 5),
    "gaussblur_f64": (0, 0),
    "gradient": (1, 6),
    "jacobi": (5, 9),
    "lapgsrb": (2, 16),
    "laplacian": (2, 7),
    "matmul": (0, 0),
    "matvec": (0, 0),
    "sincos": (0, 3),
    "tricubic": (15, 18),
    "tricubic2": (9, 12),
    "uxx1": (3, 17),
    "vecadd": (0, 2),
    "wave13pt": (3, 14),
    "wave13pt_f64": (3, 14),
    "whispering": (2, 13),
    "hypterm": (77, 264),
    "seismic_rhs": (118, 198),
    "deriv8": (21, 72),
    "deriv8_f64": (21, 72),
}


def find_libdevice() -> Path | None:
    """The toolkit's libdevice.10.bc: ``$CUDA_HOME``, ``$CUDA_PATH``, where nvcc says, /usr/local/cuda."""
    roots = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:  # nvcc may be a wrapper script: ask it where its libdevice is
        proc = subprocess.run(
            [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(r"NVVMIR_LIBRARY_DIR=(\S+)", proc.stdout + proc.stderr)
        if found:
            roots.append(Path(found.group(1)).parent.parent)
    roots.append(Path("/usr/local/cuda"))
    for root in roots:
        path = root / "nvvm" / "libdevice" / "libdevice.10.bc"
        if path.is_file():
            return path
    return None


def clang_ptx(source: Path, level: str, out_dir: Path, libdevice: Path | None) -> Path | None:
    """clang-19's PTX of a suite source at ``level`` (a key of `LEVELS`); None when it needs
    libdevice and there is none."""
    cmd = [CLANG, "-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-device-only", "-nocudainc", "-nocudalib"]
    cmd += ["-Wno-unknown-cuda-version", "-include", str(PRELUDE), *LEVELS[level]]
    if source.stem in NEEDS_LIBDEVICE:
        if libdevice is None:
            return None
        cmd += ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(libdevice)]
    out = out_dir / f"{source.stem}-{level}.ptx"
    proc = subprocess.run(
        [*cmd, "-S", str(source), "-o", str(out)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"{' '.join(cmd)} {source}:\n{proc.stderr}"
    return out


class Rewrite(NamedTuple):
    original: Path
    rewritten: Path
    counts: dict[str, tuple[int, int]]  # per kernel: (shuffles and reuses, global loads)
    shuffled: bool  # any load became a shfl.sync (not a reuse)
    unproven: dict[str, list[str]]  # per kernel: rewritten loads whose proof is not "proved"
    partial: dict[str, str]  # kernels whose analysis did not complete: why


class Builds:
    """The clang builds of every source and level, rewritten on first use (cached)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.libdevice = find_libdevice()
        self.ptx = {
            (source.stem, level): clang_ptx(source, level, folder, self.libdevice)
            for level in LEVELS
            for source in SOURCES
        }
        self._rewrites: dict[tuple[str, str], Rewrite] = {}

    def original(self, source: str, level: str) -> Path:
        path = self.ptx[(source, level)]
        if path is None:
            pytest.skip(f"{source}: libdevice.10.bc not found (sinf, cosf)")
        return path

    def rewrite(self, source: str, level: str) -> Rewrite:
        key = (source, level)
        if key not in self._rewrites:
            original = self.original(source, level)
            module = parse_ptx(original.read_text(), str(original))
            # A generous budget: a slow machine must not cut the analysis short.
            options = Options(time_s=120, rounding="ptxas", assemble=synthesis_assembler(module, "ptxas"))
            synthesis = ShuffleSynthesisPass(options)
            synthesis.run(module)
            rewritten = self.folder / f"{source}-{level}.rewritten.ptx"
            rewritten.write_text(print_module(module))
            plans = synthesis.plans
            self._rewrites[key] = Rewrite(
                original,
                rewritten,
                {p.kernel: (len(p.chosen), p.global_loads) for p in plans},
                any(v.status is Status.SHUFFLE for p in plans for v in p.chosen),
                {
                    p.kernel: [f"{v.load.loc}: {v.proof}" for v in p.chosen if v.proof != PROVED]
                    for p in plans
                },
                {p.kernel: str(p.analysis.reason) for p in plans if not p.analysis.complete},
            )
        return self._rewrites[key]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    return Builds(tmp_path_factory.mktemp("clang-suite"))


def _ids(params: list[tuple]) -> list[str]:
    return ["-".join(str(p) for p in param) for param in params]


# --------------------------------------------------------------------------
# Parsing and assembling


@pytest.mark.parametrize("level", list(LEVELS))
def test_builds_parse_and_assemble(builds: Builds, level: str, tmp_path: Path) -> None:
    """``ptxasw check`` takes every build without a warning, its kernels are the registry's,
    and ptxas assembles the original and the rewrite."""
    paths = [p for (_, lvl), p in builds.ptx.items() if lvl == level and p is not None]
    result = CliRunner().invoke(main, ["check", *map(str, paths)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output.lower(), result.output
    for source in SOURCES:
        if builds.ptx[(source.stem, level)] is None:
            continue
        done = builds.rewrite(source.stem, level)
        module = parse_ptx(done.original.read_text(), str(done.original))
        for k in (k for k in suite.KERNELS.values() if k.source == source):
            fn = module.function(k.symbol)
            assert fn.is_kernel and len(fn.params) == len(k.params)
        for path in (done.original, done.rewritten):
            proc = subprocess.run(
                [PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "out.cubin")],
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode == 0, f"ptxas -arch=sm_90 {path}:\n{proc.stderr}"


# --------------------------------------------------------------------------
# The rewrite: proven, and as many shuffles as measured


@pytest.mark.parametrize(("level", "name"), [(lv, n) for lv in LEVELS for n in suite.KERNELS])
def test_rewrite_proves_the_measured_shuffles(builds: Builds, level: str, name: str) -> None:
    k = suite.KERNELS[name]
    done = builds.rewrite(k.source.stem, level)
    assert k.symbol not in done.partial, done.partial[k.symbol]
    assert done.unproven[k.symbol] == []
    expected = {"O3": COUNTS_O3, "O1": COUNTS_O1, "O0g": COUNTS_O0G}[level][name]
    assert done.counts[k.symbol] == expected, f"{name} at -{level}: (shuffles, loads)"
    text = done.rewritten.read_text()
    assert ("shfl.sync" in text) == done.shuffled


# --------------------------------------------------------------------------
# Original against rewrite in the interpreter, and against NumPy

CASES_O3 = [(n, i) for n, k in suite.KERNELS.items() for i in range(len(suite.small_shapes(k)))]
# -O1 and -O0 -g: the launch with blockDim.x 8 (every kernel's third).
CASES_OTHER = [(lv, n) for lv in ("O1", "O0g") for n in suite.KERNELS]


def _compare(builds: Builds, level: str, name: str, case: int) -> None:
    k = suite.KERNELS[name]
    done = builds.rewrite(k.source.stem, level)
    shape, block = suite.small_shapes(k)[case]
    original = suite.run_kernel(done.original, k, shape, block, seed=case)
    rewritten = suite.run_kernel(done.rewritten, k, shape, block, seed=case)
    assert suite.same_bits(original, rewritten) == [], f"{name} -{level} {shape} {block}: outputs differ"
    problems = k.check(original, k.reference(suite.launch_args(k, shape, seed=case)))
    assert not problems, problems


@pytest.mark.parametrize(("name", "case"), CASES_O3, ids=_ids(CASES_O3))
def test_o3_rewrite_is_bit_equal_and_right(builds: Builds, name: str, case: int) -> None:
    _compare(builds, "O3", name, case)


@pytest.mark.parametrize(("level", "name"), CASES_OTHER, ids=_ids(CASES_OTHER))
def test_o1_and_debug_rewrite_is_bit_equal_and_right(builds: Builds, level: str, name: str) -> None:
    _compare(builds, level, name, 2)
