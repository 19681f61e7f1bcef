"""Tests of the drop-in's "nothing to do" path: when the pipeline could change
no module whatever its text (synthesis off, or the cost model ruling out every
shuffle on the target with no ``ptxasw tune`` verdict against it), the wrapper
runs ptxas on the user's file without parsing it, and a shadow toolkit records
one fast entry that serves every file compiled with the same command line.

What matters: the answer agrees with what the pipeline would have done (the
same files reach ptxas), it is never given where the pipeline could change
something (forced synthesis, a verdict, a custom pipeline), bad settings are
still warned about once, and a shadow's any-input entry never hands ptxas a
rewritten copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ptxasw.driver import settings
from ptxasw.driver.cache import FAST_ANY_INPUT, FAST_MAGIC
from ptxasw.driver.pipeline import default_passes
from ptxasw.driver.ptxas import main
from ptxasw.synth.cost import NothingPaysPass
from tests.test_driver_fastpath import JACOBI, Shadow, copy_package, make_shadow
from tests.test_wrapper import HOOKS_DIR, MINI_PTX, Fake, install_fake, warnings_in

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No ptxasw setting of the caller's, a cache of the test's own, and the test pipelines importable."""
    import os

    for var in [v for v in os.environ if v.startswith(("PTXASW_", "FAKE_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("PTXASW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(HOOKS_DIR))
    return monkeypatch


@pytest.fixture
def fake_ptxas(tmp_path: Path, env: pytest.MonkeyPatch) -> Fake:
    """A stand-in for ptxas that records what it was given (`tests.test_wrapper`)."""
    return install_fake(tmp_path, env)


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    """A one-load kernel, and a second file with another text beside it."""
    p = tmp_path / "src" / "kernel.ptx"
    p.parent.mkdir()
    p.write_text(MINI_PTX)
    (p.parent / "jacobi.ptx").write_text(JACOBI.read_text())
    return p


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_package(tmp_path_factory.mktemp("site"))


@pytest.fixture
def shadow(tmp_path: Path, package_copy: Path) -> Shadow:
    return make_shadow(tmp_path, package_copy)


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """sm_90 as the drop-in's target, with the environment's settings and verdicts cleared."""
    for var in ("PTXASW_SYNTH", "PTXASW_PROFIT", "PTXASW_MODE", "PTXASW_MAX_DELTA", "PTXASW_UNSAFE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PTXASW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PTXASW_TUNE_DIR", raising=False)
    monkeypatch.setattr(settings, "TARGET_ARCH", "sm_90")
    return monkeypatch


def _verdict(cache: Path, arch: str = "sm_90") -> Path:
    """A stored verdict file for ``arch`` (its content does not matter to the question)."""
    path = cache / "tune" / arch / "k.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


# --------------------------------------------------------------------------
# The answer agrees with the default pipeline


def test_nothing_to_do_agrees_with_the_default_passes(target: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cases = [
        ({}, True),  # the model: nothing pays on sm_90
        ({"PTXASW_SYNTH": "0"}, True),
        ({"PTXASW_PROFIT": "always"}, False),
        ({"PTXASW_MODE": "nocorner", "PTXASW_UNSAFE": "1"}, False),  # the unsafe ablation pays
    ]
    for env, idle in cases:
        with pytest.MonkeyPatch.context() as mp:
            for k, v in env.items():
                mp.setenv(k, v)
            passes = default_passes()
            assert all(isinstance(p, NothingPaysPass) for p in passes) == idle, env
            assert (settings.nothing_to_do() is not None) == idle, env
    _verdict(tmp_path / "cache")
    assert settings.nothing_to_do() is None  # a verdict may overrule the model
    assert not isinstance(default_passes()[0], NothingPaysPass)


def test_the_reason_names_the_target(target: pytest.MonkeyPatch) -> None:
    why = settings.nothing_to_do()
    assert why is not None and why.startswith("no shuffle pays on sm_90 (")
    target.setenv("PTXASW_SYNTH", "0")
    assert settings.nothing_to_do() == "synthesis off (PTXASW_SYNTH=0)"


# --------------------------------------------------------------------------
# The Python wrapper


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_wrapper_hands_ptxas_the_users_file_and_logs_why(
    fake_ptxas: Fake, kernel: Path, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "w.jsonl"
    env.setenv("PTXASW_LOG", str(log))
    before = kernel.read_bytes()
    out = str(tmp_path / "k.cubin")
    assert main(["-arch", "sm_90", str(kernel), "-o", out]) == 0
    (call,) = fake_ptxas.calls()
    assert call["argv"][:4] == ["-arch", "sm_90", str(kernel), "-o"]  # the output is staged
    assert call["files"] == {str(kernel): MINI_PTX}
    (record,) = _log(log)
    assert record["status"] == "unchanged" and record["reason"].startswith("no shuffle pays on sm_90")
    assert record["inputs"] == []  # no pipeline ran
    assert kernel.read_bytes() == before
    assert not (tmp_path / "cache").exists()  # no result entry: there was no result to keep


def test_forced_synthesis_still_runs_the_pipeline(
    fake_ptxas: Fake, kernel: Path, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "w.jsonl"
    env.setenv("PTXASW_LOG", str(log))
    env.setenv("PTXASW_PROFIT", "always")
    jacobi = kernel.parent / "jacobi.ptx"
    assert main(["-arch", "sm_90", str(jacobi)]) == 0
    (record,) = _log(log)
    (inp,) = record["inputs"]
    assert record["status"] == "ok" and "parse" in [p["name"] for p in inp["passes"]]
    (call,) = fake_ptxas.calls()
    (text,) = call["files"].values()
    assert "shfl.sync" in text


def test_the_wrapper_imports_no_parser_when_there_is_nothing_to_do(fake_ptxas: Fake, kernel: Path) -> None:
    """The point of the path: neither the parser nor the solver is loaded."""
    import os

    probe = (
        "import sys; from ptxasw.driver.ptxas import main; rc = main(sys.argv[1:]);"
        "print(rc, *(m in sys.modules for m in ('lark', 'ptxasw.parser', 'ptxasw.ir', 'z3')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, "-arch", "sm_90", str(kernel)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=kernel.parent,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False", "False", "False", "False"]
    assert fake_ptxas.calls()[0]["argv"] == ["-arch", "sm_90", str(kernel)]


def test_a_bad_setting_is_still_warned_about_once(
    fake_ptxas: Fake, kernel: Path, env: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    env.setenv("PTXASW_MODE", "bogus")
    assert main(["-arch", "sm_90", str(kernel)]) == 0
    (line,) = warnings_in(capfd.readouterr().err)
    assert "PTXASW_MODE='bogus'" in line
    assert fake_ptxas.calls()[0]["argv"] == ["-arch", "sm_90", str(kernel)]


def test_a_custom_pipeline_always_runs(fake_ptxas: Fake, kernel: Path, env: pytest.MonkeyPatch) -> None:
    env.setenv("PTXASW_PIPELINE", "pipeline_hooks:add_comment")
    assert main(["-arch", "sm_90", str(kernel)]) == 0
    (call,) = fake_ptxas.calls()
    (text,) = call["files"].values()
    assert text != MINI_PTX  # the hook's edit reached ptxas


# --------------------------------------------------------------------------
# The shadow toolkit's any-input entry


def test_one_python_run_serves_every_file_of_a_command_line(
    shadow: Shadow, kernel: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.cubin"
    first = shadow.run("-arch", "sm_90", kernel, "-o", out)
    assert first.rc == 0 and not first.fast, first.stderr
    (entry,) = shadow.entries()
    assert entry.name == FAST_ANY_INPUT
    assert entry.read_text().splitlines() == [FAST_MAGIC, "unchanged", str(shadow.real.resolve()), "end"]
    other = kernel.parent / "jacobi.ptx"
    second = shadow.run("-arch", "sm_90", other, "-o", out)
    assert second.fast and second.argv == ["-arch", "sm_90", str(other), "-o", str(out)]
    assert out.read_text() == JACOBI.read_text()  # the user's text, not a rewrite
    assert second.visited == first.visited
    # Another command line is another key.
    assert not shadow.run("-arch", "sm_90", "-O2", other, "-o", out).fast


def test_forced_synthesis_records_per_file_entries_only(shadow: Shadow, kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    jacobi = kernel.parent / "jacobi.ptx"
    for _ in range(2):
        assert shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always").rc == 0
    assert "shfl.sync" in out.read_text()
    names = [e.name for e in shadow.entries()]
    assert names and FAST_ANY_INPUT not in names


def test_a_new_verdict_ends_the_any_input_entry(shadow: Shadow, kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    jacobi = kernel.parent / "jacobi.ptx"
    shadow.run("-arch", "sm_90", kernel, "-o", out)
    assert shadow.run("-arch", "sm_90", jacobi, "-o", out).fast
    _verdict(shadow.cache)
    assert not shadow.run("-arch", "sm_90", jacobi, "-o", out).fast  # the verdict is in the key
    # Python now runs the pipeline: no any-input entry under the new key.
    assert sum(e.name == FAST_ANY_INPUT for e in shadow.entries()) == 1


def test_an_any_input_entry_naming_a_copy_is_refused(shadow: Shadow, kernel: Path, tmp_path: Path) -> None:
    """Only ``unchanged`` may hold for any input: a path there (a corrupt or
    foreign entry) would assemble one file's rewrite for another."""
    out = tmp_path / "out.cubin"
    shadow.run("-arch", "sm_90", kernel, "-o", out)
    (entry,) = shadow.entries()
    lines = entry.read_text().splitlines()
    entry.write_text("\n".join([lines[0], str(kernel), *lines[2:]]) + "\n")
    other = kernel.parent / "jacobi.ptx"
    call = shadow.run("-arch", "sm_90", other, "-o", out)
    assert not call.fast and out.read_text() == JACOBI.read_text()
    assert str(kernel) not in [e.read_text().splitlines()[1] for e in shadow.entries() if e != entry]


# --------------------------------------------------------------------------
# Loads in inline assembly: where no shuffle pays, a reuse still does

TRITON_STENCIL = REPO / "tests" / "corpus" / "triton" / "stencil3.ptx"


def test_the_screen_finds_global_loads_in_inline_assembly_only() -> None:
    from ptxasw.synth.cost import masked_loads_in_inline_asm as screen

    assert screen(TRITON_STENCIL.read_text())
    assert not screen(MINI_PTX) and not screen(JACOBI.read_text())
    vote = "\t// begin inline asm\n\tactivemask.b32 %r1;\n\t// end inline asm\n"
    vote += "\t@%p1 ld.global.f32 %f1, [%rd1];\n"
    assert not screen(vote)  # inline asm, but the load is the compiler's
    cub = "\t// begin inline asm\n\tld.global.cg.u32 %r1, [%rd1];\n\t// end inline asm\n"
    assert not screen(cub)  # CUB's cache-hinted loads: unmasked


def test_ptx_with_masked_loads_in_inline_asm_gets_its_reuses_only(target: pytest.MonkeyPatch) -> None:
    from ptxasw.synth.synthesize import ShuffleSynthesisPass

    (screen,) = default_passes(TRITON_STENCIL.read_text())
    assert isinstance(screen, NothingPaysPass) and screen.synthesis is not None
    synthesis = screen.synthesis({"stencil3"}, 0)
    assert isinstance(synthesis, ShuffleSynthesisPass) and synthesis.options.max_delta == 0
    assert synthesis.kernels == {"stencil3"}
    (idle,) = default_passes(JACOBI.read_text())
    assert isinstance(idle, NothingPaysPass) and idle.synthesis is None


def test_the_wrapper_reuses_tritons_masked_loads_where_no_shuffle_pays(
    fake_ptxas: Fake, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "w.jsonl"
    env.setenv("PTXASW_LOG", str(log))
    ptx = tmp_path / "stencil3.ptx"
    ptx.write_text(TRITON_STENCIL.read_text())
    assert main(["--gpu-name=sm_90a", str(ptx), "-o", str(tmp_path / "k.cubin")]) == 0
    (record,) = _log(log)
    (inp,) = record["inputs"]
    (synthesis,) = [p for p in inp["passes"] if p["name"] == "shuffle-synthesis"]
    assert record["status"] == "ok" and synthesis["shuffles"] == 3, record
    (call,) = fake_ptxas.calls()
    (text,) = call["files"].values()
    assert text.count("ld.global") == TRITON_STENCIL.read_text().count("ld.global") - 3
    assert "shfl.sync" not in text  # reuses only: no shuffle pays on sm_90a


def test_an_any_input_entry_does_not_serve_inline_asm(shadow: Shadow, kernel: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cubin"
    shadow.run("-arch", "sm_90", kernel, "-o", out)
    assert [e.name for e in shadow.entries()] == [FAST_ANY_INPUT]
    triton = kernel.parent / "stencil3.ptx"
    triton.write_text(TRITON_STENCIL.read_text())
    call = shadow.run("-arch", "sm_90", triton, "-o", out)
    assert call.rc == 0 and not call.fast, call.stderr
    assert out.read_text().count("ld.global") == triton.read_text().count("ld.global") - 3


def test_inline_asm_without_masked_loads_takes_the_any_input_entry(
    shadow: Shadow, kernel: Path, tmp_path: Path
) -> None:
    """CUB's cache-hinted loads are inline assembly, unmasked: the script's
    awk finds no masked load in an inline-asm region, as Python's screen would
    not, and the any-input entry serves the file without Python."""
    out = tmp_path / "out.cubin"
    shadow.run("-arch", "sm_90", kernel, "-o", out)
    hinted = kernel.parent / "hinted.ptx"
    asm = "// begin inline asm\nld.global.cg.u32 %r9, [%rd9];\n// end inline asm\n"
    hinted.write_text(MINI_PTX + "\n" + asm + "@%p1 ld.global.u32 %r9, [%rd9];\n")
    call = shadow.run("-arch", "sm_90", hinted, "-o", out)
    assert call.rc == 0 and call.fast, call.stderr
    assert out.read_text() == hinted.read_text()


# --------------------------------------------------------------------------
# Vector loads: where no contiguous load's shuffle pays, a strided halo's may

VECTOR_HALO = REPO / "tests" / "fixtures" / "vector_halo.ptx"


def test_the_screen_finds_kernels_whose_halo_may_pay() -> None:
    from ptxasw.synth.cost import worth_a_look

    assert worth_a_look(VECTOR_HALO.read_text()) and worth_a_look(VECTOR_HALO.read_bytes())
    assert worth_a_look(TRITON_STENCIL.read_text())  # masked loads in inline assembly
    assert not worth_a_look(JACOBI.read_text()) and not worth_a_look(MINI_PTX)
    vector = "\tld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];\n"
    singles = "".join(f"\tld.global.nc.f32 %f5, [%rd1+{4 * k}];\n" for k in range(4))
    assert not worth_a_look(vector)  # vectors only
    assert worth_a_look(vector + singles)  # four single elements beside one vector
    assert not worth_a_look(vector + singles.replace("f32 %f5", "f64 %fd5"))  # of another width
    assert not worth_a_look(vector + singles.replace("ld.global", "ld.shared"))


def test_only_kernels_whose_halo_may_pay_are_analysed() -> None:
    """Counted off the instructions: the float4 box loads enough single
    elements beside its vectors for a kernel bound by L1, the row does not
    (4 beside 1 vector and 1 store). Triton's tiles load vectors only;
    Inductor's slice stencil loads as many ``.v2`` slices as single elements
    (its reuses come by the masked-load screen)."""
    from ptxasw.parser import parse_ptx
    from ptxasw.synth.cost import costs_for, strided_halo_may_pay

    def kernels(path: Path) -> list[str]:
        module = parse_ptx(path.read_text(), path.name)
        return [fn.name for fn in module.kernels if strided_halo_may_pay(fn, costs_for("sm_90"))]

    assert kernels(VECTOR_HALO) == ["box4_r2"]
    triton = REPO / "tests" / "corpus" / "triton"
    for name in ("add", "softmax", "stencil3", "inductor/triton_poi_fused_add_mul_slice_sub_0"):
        assert kernels(triton / f"{name}.ptx") == [], name


def test_the_wrapper_keeps_the_halo_shuffles_that_pay(
    fake_ptxas: Fake, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On sm_90 no contiguous load's shuffle pays, yet a file with vector
    loads is analysed: the 5-row float4 box keeps its 20 halo shuffles (L1
    bound: `ptxasw.synth.cost.shuffle_pays`), the row none (its halo is
    strided too, but the row is bound by what it moves: not even analysed)."""
    log = tmp_path / "w.jsonl"
    env.setenv("PTXASW_LOG", str(log))
    ptx = tmp_path / "halo.ptx"
    ptx.write_text(VECTOR_HALO.read_text())
    assert main(["-arch=sm_90", str(ptx), "-o", str(tmp_path / "k.cubin")]) == 0
    (record,) = _log(log)
    (inp,) = record["inputs"]
    (synthesis,) = [p for p in inp["passes"] if p["name"] == "shuffle-synthesis"]
    assert record["status"] == "ok" and synthesis["shuffles"] == 20, record
    (call,) = fake_ptxas.calls()
    (text,) = call["files"].values()
    box = text[text.index(".entry box4_r2") : text.index(".entry row4_r2")]
    row = text[text.index(".entry row4_r2") :]
    assert box.count("shfl.sync") == 20 and "shfl.sync" not in row


def test_an_any_input_entry_does_not_serve_vector_loads(shadow: Shadow, kernel: Path, tmp_path: Path) -> None:
    """The shadow script's awk screen finds the vector loads as Python's
    does: the file goes to Python, which rewrites the box's halo."""
    out = tmp_path / "out.cubin"
    shadow.run("-arch", "sm_90", kernel, "-o", out)
    assert [e.name for e in shadow.entries()] == [FAST_ANY_INPUT]
    halo = kernel.parent / "halo.ptx"
    halo.write_text(VECTOR_HALO.read_text())
    call = shadow.run("-arch", "sm_90", halo, "-o", out)
    assert call.rc == 0 and not call.fast, call.stderr
    assert out.read_text().count("shfl.sync") == 20


def test_the_scripts_awk_screen_answers_as_python_does(tmp_path: Path) -> None:
    """`SCREEN_AWK` (the shadow script's) and `worth_a_look` read the text
    alike, and where they look, the kernels' own count (on the parsed
    module) agrees: Triton's files (masked loads), the halo fixture, kernels
    with vectors only, and the counts just either side of the bound."""
    import shutil

    from ptxasw.parser import parse_ptx
    from ptxasw.synth.cost import (
        SCREEN_AWK,
        costs_for,
        masked_loads_in_inline_asm,
        strided_halo_may_pay,
        worth_a_look,
    )

    awk = shutil.which("awk")
    if awk is None:
        pytest.skip("no awk")

    def kernel(singles: int, vectors: int) -> str:
        body = "".join(f"\tld.global.nc.f32 %f{k}, [%rd1+{4 * k}];\n" for k in range(singles))
        body += "".join(f"\tld.global.nc.v4.f32 {{%f1, %f2, %f3, %f4}}, [%rd{k}];\n" for k in range(vectors))
        store = "\tst.global.v4.f32 [%rd9], {%f1, %f2, %f3, %f4};\n"
        return f".visible .entry k{singles}_{vectors}()\n{{\n{body}{store}}}\n"

    header = ".version 8.0\n.target sm_90\n.address_size 64\n\t.reg .f32 %f<99>;\n\t.reg .b64 %rd<10>;\n"
    made = {
        "just_enough": kernel(7, 1),  # 4 x 7 >= 3 x 4 + 4 x 4
        "one_short": kernel(6, 1),
        "second_kernel": kernel(2, 1) + kernel(20, 3),
        "vectors_only": kernel(0, 5),
    }
    files = sorted((REPO / "tests" / "corpus" / "triton").rglob("*.ptx"))
    files += [VECTOR_HALO, REPO / "tests" / "fixtures" / "vector_loads.ptx", JACOBI]
    for name, body in made.items():
        path = tmp_path / f"{name}.ptx"
        path.write_text(header + body)
        files.append(path)
    answers = {}
    for path in files:
        text = path.read_text()
        python = worth_a_look(text)
        assert (subprocess.run([awk, "-v", "L=4.0", SCREEN_AWK, str(path)]).returncode == 0) == python, path
        if not masked_loads_in_inline_asm(text):
            module = parse_ptx(text, path.name)
            assert any(strided_halo_may_pay(fn, costs_for("sm_90")) for fn in module.kernels) == python, path
        answers[path.stem] = python
    assert answers["just_enough"] and not answers["one_short"] and answers["second_kernel"]
    assert not answers["vectors_only"] and answers["vector_halo"] and not answers["jacobi"]
