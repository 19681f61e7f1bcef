"""Tool-chain tests: shadow CUDA toolkits, and real compilers building through our shims.

The shadow-toolkit logic is tested on a fake toolkit (fast, no CUDA). The
end-to-end tests drive nvcc (through a shadow toolkit), CMake, clang-19
(``--ptxas-path``) and GCC's OpenACC offloading (the ``as`` shim through
``-B``), and prove with PTXASW_LOG that our wrapper ran; each skips when its
compiler is not installed (scripts/install-system-deps.sh installs clang-19 and
gcc-12-offload-nvptx).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ptxasw.cli.toolkit import toolkit_group
from ptxasw.driver.toolkit import (
    SHADOW_MARKER,
    ToolkitError,
    byte_compile,
    create_shadow_toolkit,
    find_cuda_toolkit,
    ptxas_script,
)
from tests.corpus.openmp_lto import clang_openmp_offload

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "tests" / "toolchain"
WRAPPER_SHIM = REPO / "wrappers" / "ptxas"
GCC_SHIM_DIR = REPO / "wrappers" / "nvptx-none"
MARK = "// rewritten by the ptxasw test pipeline"

FAKE_PTXAS = """\
#!/bin/sh
printf '%s\\n' "$@" >> "$FAKE_PTXAS_ARGS"
"""


def fake_toolkit(root: Path) -> Path:
    """A directory shaped like a CUDA toolkit: bin/nvcc, bin/ptxas (fake), include, lib64 -> lib."""
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "lib").mkdir()
    (root / "lib64").symlink_to("lib")
    (root / "bin" / "nvcc").write_text("#!/bin/sh\necho fake nvcc\n")
    (root / "bin" / "nvcc.profile").write_text("TOP = $(_HERE_)/..\n")
    (root / "bin" / "ptxas").write_text(FAKE_PTXAS)
    for tool in ("nvcc", "ptxas"):
        (root / "bin" / tool).chmod(0o755)
    return root


@pytest.fixture
def env_clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in (
        "PTXASW_REAL_PTXAS",
        "PTXASW_DISABLE",
        "PTXASW_PIPELINE",
        "PTXASW_LOG",
        "PTXASW_VISITED_PTXAS",
    ):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


# --------------------------------------------------------------------------
# Shadow toolkits (fake toolkit)


def test_shadow_mirrors_the_toolkit_but_ptxas(tmp_path: Path, env_clean: pytest.MonkeyPatch) -> None:
    cuda = fake_toolkit(tmp_path / "cuda")
    dest = create_shadow_toolkit(tmp_path / "shadow", cuda)
    assert (dest / "include").is_symlink() and (dest / "include").resolve() == cuda / "include"
    assert (dest / "lib64").resolve() == (cuda / "lib").resolve()
    assert (dest / "bin").is_dir() and not (dest / "bin").is_symlink()
    assert (dest / "bin" / "nvcc").is_symlink() and (dest / "bin" / "nvcc.profile").is_symlink()
    script = dest / "bin" / "ptxas"
    assert not script.is_symlink() and os.access(script, os.X_OK)
    assert "ptxasw.driver.ptxas" in script.read_text()
    assert json.loads((dest / SHADOW_MARKER).read_text())["cuda"] == str(cuda.resolve())


def test_shadow_ptxas_runs_the_wrapper_then_the_real_ptxas(
    tmp_path: Path, env_clean: pytest.MonkeyPatch
) -> None:
    cuda = fake_toolkit(tmp_path / "cuda")
    dest = create_shadow_toolkit(tmp_path / "shadow", cuda)
    log, args = tmp_path / "w.jsonl", tmp_path / "args.txt"
    env = {**os.environ, "PTXASW_LOG": str(log), "FAKE_PTXAS_ARGS": str(args), "PATH": "/usr/bin:/bin"}
    env["PTXASW_PIPELINE"] = "pipeline_hooks:identity"
    env["PYTHONPATH"] = str(SOURCES)
    proc = subprocess.run(
        [str(dest / "bin" / "ptxas"), "-arch=sm_90", "-m64", "missing.ptx", "-o", "x.cubin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    argv = args.read_text().split()
    assert argv[:4] == ["-arch=sm_90", "-m64", "missing.ptx", "-o"]
    assert Path(argv[4]).name == "x.cubin"  # staged beside the target, renamed onto it on success
    rec = json.loads(log.read_text())
    assert rec["real"] == str((cuda / "bin" / "ptxas").resolve())


def test_shadow_ptxas_survives_a_missing_interpreter(tmp_path: Path, env_clean: pytest.MonkeyPatch) -> None:
    """If the recorded Python is gone, the build still gets the real ptxas (with a warning)."""
    cuda = fake_toolkit(tmp_path / "cuda")
    script = tmp_path / "ptxas"
    script.write_text(ptxas_script(cuda / "bin" / "ptxas", python=str(tmp_path / "gone" / "python3")))
    script.chmod(0o755)
    args = tmp_path / "args.txt"
    env = {**os.environ, "FAKE_PTXAS_ARGS": str(args)}
    proc = subprocess.run(
        [str(script), "-arch=sm_90", "k.ptx"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert args.read_text().split() == ["-arch=sm_90", "k.ptx"]
    assert proc.stderr.startswith("ptxasw: warning:") and proc.stderr.count("\n") == 1


def test_shadow_is_refused_over_other_files_and_remade_over_a_shadow(tmp_path: Path) -> None:
    cuda = fake_toolkit(tmp_path / "cuda")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(ToolkitError, match="not empty"):
        create_shadow_toolkit(busy, cuda)
    assert (busy / "keep.txt").read_text() == "mine"
    dest = create_shadow_toolkit(tmp_path / "shadow", cuda)
    assert create_shadow_toolkit(dest, cuda) == dest
    # a shadow of a shadow mirrors the real toolkit
    again = create_shadow_toolkit(tmp_path / "shadow2", dest)
    assert json.loads((again / SHADOW_MARKER).read_text())["cuda"] == str(cuda.resolve())


def test_byte_compile_writes_the_packages_bytecode(tmp_path: Path) -> None:
    """Where Python may not write bytecode on import (PYTHONDONTWRITEBYTECODE), every
    ptxas call would compile the package again; a shadow's creation writes it once."""
    import importlib.util

    import ptxasw

    package = tmp_path / "site" / "ptxasw"
    shutil.copytree(Path(ptxasw.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    wrapper = package / "driver" / "ptxas.py"
    assert not Path(importlib.util.cache_from_source(str(wrapper))).exists()
    assert byte_compile(package)
    assert Path(importlib.util.cache_from_source(str(wrapper))).is_file()
    assert not byte_compile(tmp_path / "nothing-here")


def test_find_cuda_toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = fake_toolkit(tmp_path / "cuda-9.9")
    with pytest.raises(ToolkitError, match="not a CUDA toolkit"):
        find_cuda_toolkit(tmp_path)
    assert find_cuda_toolkit(cuda / "bin") == cuda.resolve()
    env = {"CUDA_HOME": str(cuda), "PATH": ""}
    assert find_cuda_toolkit(None, env) == cuda.resolve()
    # nvcc on PATH through a shell shim like /usr/local/bin/nvcc
    shim_dir = tmp_path / "shims"
    shim_dir.mkdir()
    (shim_dir / "nvcc").write_text(f'#!/bin/sh\nexec {cuda}/bin/nvcc "$@"\n')
    (shim_dir / "nvcc").chmod(0o755)
    assert find_cuda_toolkit(None, {"PATH": str(shim_dir)}) == cuda.resolve()


def test_toolkit_command(tmp_path: Path) -> None:
    cuda = fake_toolkit(tmp_path / "cuda")
    runner = CliRunner()
    ok = runner.invoke(toolkit_group, ["create", str(tmp_path / "sh"), "--cuda", str(cuda)])
    assert ok.exit_code == 0, ok.output
    assert "CMAKE_CUDA_COMPILER" in ok.output
    bad = runner.invoke(toolkit_group, ["create", str(tmp_path / "sh2"), "--cuda", str(tmp_path)])
    assert bad.exit_code == 1
    assert bad.output.strip().count("\n") == 0 and "not a CUDA toolkit" in bad.output
    assert "Traceback" not in bad.output


# --------------------------------------------------------------------------
# End to end with real compilers


def _real_cuda() -> Path | None:
    try:
        return find_cuda_toolkit(None)
    except ToolkitError:
        return None


CUDA = _real_cuda()
needs_cuda = pytest.mark.skipif(CUDA is None, reason="CUDA toolkit (nvcc, ptxas) not installed")


def hook_env(log: Path, hook: str | None = "add_comment") -> dict[str, str]:
    """Environment that logs wrapper runs and plugs in a test pipeline (None: the real one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTXASW_")}
    env.update(
        PTXASW_LOG=str(log),
        PTXASW_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join([str(SOURCES), str(REPO)]),
    )
    if hook is not None:
        env["PTXASW_PIPELINE"] = f"pipeline_hooks:{hook}"
    return env


def log_records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def shadow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CUDA is None:
        pytest.skip("CUDA toolkit (nvcc, ptxas) not installed")
    return create_shadow_toolkit(tmp_path_factory.mktemp("cuda") / "shadow", CUDA)


@needs_cuda
def test_nvcc_through_a_shadow_toolkit(shadow: Path, tmp_path: Path) -> None:
    log = tmp_path / "w.jsonl"
    out = tmp_path / "vecadd.cubin"
    cmd = [
        str(shadow / "bin" / "nvcc"),
        "-arch",
        "sm_90",
        "-cubin",
        str(SOURCES / "vecadd.cu"),
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, env=hook_env(log), capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"
    (rec,) = log_records(log)
    assert rec["tool"] == "ptxas" and rec["status"] == "ok" and rec["real_exit"] == 0
    assert rec["real"] == str((CUDA / "bin" / "ptxas").resolve())
    assert rec["inputs"][0]["rewritten"] is True and rec["inputs"][0]["input"].endswith(".ptx")
    # The real pipeline parses and prints nvcc's PTX without falling back (the synthesis
    # forced: under the cost model the drop-in would not parse it at all).
    env = {**hook_env(log, None), "PTXASW_PROFIT": "always"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert log_records(log)[-1]["status"] == "ok"
    names = [p["name"] for p in log_records(log)[-1]["inputs"][0]["passes"]]
    assert names == ["setup", "parse", "shuffle-synthesis", "print"]


@needs_cuda
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cmake_through_a_shadow_toolkit(shadow: Path, tmp_path: Path) -> None:
    log = tmp_path / "w.jsonl"
    build = tmp_path / "build"
    env = hook_env(log)
    configure = [
        "cmake",
        "-S",
        str(SOURCES / "cmake"),
        "-B",
        str(build),
        f"-DCMAKE_CUDA_COMPILER={shadow / 'bin' / 'nvcc'}",
        "-DCMAKE_CUDA_ARCHITECTURES=90",
    ]
    for cmd in (configure, ["cmake", "--build", str(build)]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    built = [r for r in log_records(log) if any(i["input"].endswith("vecadd.ptx") for i in r["inputs"])]
    assert built and built[-1]["status"] == "ok" and built[-1]["real_exit"] == 0


CLANG = shutil.which("clang++-19")


@needs_cuda
@pytest.mark.skipif(CLANG is None, reason="clang-19 not installed: run scripts/install-system-deps.sh")
def test_clang_with_ptxas_path(tmp_path: Path) -> None:
    assert CLANG is not None and CUDA is not None
    log = tmp_path / "w.jsonl"
    out = tmp_path / "k.o"
    cmd = [
        CLANG,
        "-x",
        "cuda",
        "-nocudainc",
        "-nocudalib",
        "-Wno-unknown-cuda-version",
        f"--cuda-path={CUDA}",
        "--cuda-gpu-arch=sm_90",
        "--cuda-device-only",
        f"--ptxas-path={WRAPPER_SHIM}",
        "-O3",
        "-c",
        str(SOURCES / "clang_kernel.cu"),
        "-o",
        str(out),
    ]
    env = hook_env(log)
    env["PTXASW_REAL_PTXAS"] = str(CUDA / "bin" / "ptxas")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"
    (rec,) = log_records(log)
    assert rec["status"] == "ok" and rec["inputs"][0]["input"].endswith(".s")
    assert rec["argv"][:4] == ["-m64", "-O3", "--gpu-name", "sm_90"]
    # The real pipeline parses and prints clang's PTX without falling back (the synthesis
    # forced, as above).
    env = {**hook_env(log, None), "PTXASW_PROFIT": "always"}
    env["PTXASW_REAL_PTXAS"] = str(CUDA / "bin" / "ptxas")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert log_records(log)[-1]["status"] == "ok"


def _gcc_offload() -> str | None:
    gcc = shutil.which("gcc-12")
    if gcc and glob.glob("/usr/lib/gcc/*/12/accel/nvptx-none/mkoffload") and shutil.which("nvptx-none-as"):
        return gcc
    return None


GCC = _gcc_offload()


@pytest.mark.skipif(
    GCC is None, reason="gcc-12-offload-nvptx not installed: run scripts/install-system-deps.sh"
)
def test_gcc_openacc_through_the_as_shim(tmp_path: Path) -> None:
    assert GCC is not None
    log = tmp_path / "w.jsonl"
    exe = tmp_path / "saxpy"
    cmd = [
        GCC,
        "-fopenacc",
        "-foffload=nvptx-none",
        f"-foffload-options=nvptx-none=-Wa,--no-verify -B{GCC_SHIM_DIR}",
        str(SOURCES / "openacc_saxpy.c"),
        "-o",
        str(exe),
    ]
    proc = subprocess.run(cmd, env=hook_env(log), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (rec,) = log_records(log)
    assert rec["tool"] == "as" and rec["status"] == "ok" and rec["real_exit"] == 0
    assert "--no-verify" in rec["argv"] and rec["inputs"][0]["rewritten"] is True
    assert MARK.encode() in exe.read_bytes()  # our PTX is what got embedded
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "21.0"
    # The real pipeline keeps GCC's marker comments, so its PTX is used, not the fallback
    # (its print claimed as a change: a pipeline that changes nothing hands `as` the user's file).
    env = hook_env(log, None)
    env["PTXASW_PIPELINE"] = "tests.fuzz.engine:reprint_as_changed"
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "ptxasw" not in proc.stderr, proc.stderr
    rec = log_records(log)[-1]
    assert rec["status"] == "ok" and rec["inputs"][0]["rewritten"] is True
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "21.0"
    # The default pipeline under the cost model could change nothing: `as` gets GCC's
    # PTX unread (no target on GCC's command line: the lowest calibration decides).
    proc = subprocess.run(
        cmd, env=hook_env(log, None), capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0 and "ptxasw" not in proc.stderr, proc.stderr
    rec = log_records(log)[-1]
    assert (
        rec["status"] == "unchanged" and rec["reason"].startswith("no shuffle pays") and rec["inputs"] == []
    )
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "21.0"


GFORTRAN = shutil.which("gfortran-12") if GCC is not None else None


@pytest.mark.skipif(
    GFORTRAN is None, reason="gfortran-12 with nvptx offloading missing: run scripts/install-system-deps.sh"
)
def test_gfortran_openacc_through_the_as_shim(tmp_path: Path) -> None:
    """A Fortran OpenACC build through GCC's ``as`` shim with every proven
    shuffle taken: GCC's lane-0 argument broadcasts followed, the stencils'
    neighbours shuffled (`tests/test_synthesis_gcc_openacc.py` checks that
    PTX in the interpreter), the module's ``.version`` raised for
    ``activemask``; the program links and runs (on the host here)."""
    assert GFORTRAN is not None
    log = tmp_path / "w.jsonl"
    exe = tmp_path / "stencils"
    cmd = [
        GFORTRAN,
        "-O2",
        "-fopenacc",
        "-foffload=nvptx-none",
        f"-foffload-options=nvptx-none=-Wa,--no-verify -B{GCC_SHIM_DIR}",
        str(REPO / "tests" / "corpus" / "gcc" / "acc_fortran.f90"),
        "-o",
        str(exe),
    ]
    env = {**hook_env(log, None), "PTXASW_PROFIT": "always"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (rec,) = log_records(log)
    assert rec["tool"] == "as" and rec["status"] == "ok" and rec["real_exit"] == 0
    (done,) = rec["inputs"]
    synthesis = next(p for p in done["passes"] if p["name"] == "shuffle-synthesis")
    # smooth1d's two neighbours, jacobi2d's u(i+1, j), lap3d's u(i-1, j, k) and u(i+1, j, k)
    assert done["rewritten"] is True and synthesis["shuffles"] == 5 and synthesis["partial"] == 0
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and [float(v) for v in run.stdout.split()] == [2.0, 1.0, 0.0]


CLANG_OPENMP = clang_openmp_offload()


@pytest.mark.skipif(
    CLANG_OPENMP is None, reason="clang-19 OpenMP offload not installed: run scripts/install-system-deps.sh"
)
def test_clang_openmp_offload_links_through_a_shadow_toolkit(shadow: Path, tmp_path: Path) -> None:
    """``clang -fopenmp --offload-arch=sm_80 -foffload-lto --cuda-path=SHADOW``:
    the link step hands ptxas the kernels with the device runtime linked in,
    and the drop-in rewrites them (the stencil's two neighbours become
    shuffles: `tests/test_synthesis_openmp.py` checks that PTX in the
    interpreter); the program links."""
    assert CLANG_OPENMP is not None
    log = tmp_path / "w.jsonl"
    out = tmp_path / "omp.exe"
    cmd = [CLANG_OPENMP, "-fopenmp", "--offload-arch=sm_80", "-O2", "-foffload-lto", f"--cuda-path={shadow}"]
    cmd += [str(REPO / "tests" / "corpus" / "openmp" / "omp_offload.c"), str(SOURCES / "omp_main.c")]
    env = {**hook_env(log, None), "PTXASW_PROFIT": "always"}
    cmd += ["-o", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.read_bytes()[:4] == b"\x7fELF"
    (rec,) = log_records(log)  # -foffload-lto: ptxas runs once, at the link
    assert rec["status"] == "ok" and rec["real_exit"] == 0
    (given,) = rec["inputs"]
    assert given["rewritten"] is True
    synthesis = next(p for p in given["passes"] if p["name"] == "shuffle-synthesis")
    assert synthesis["kernels"] == 5 and synthesis["shuffles"] >= 2 and not synthesis.get("partial")
