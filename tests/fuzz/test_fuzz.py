"""A bounded, seeded fuzzing campaign for CI (``benchmarks/fuzz.py`` runs long ones).

Mutants of the corpus (when nvcc could build it; ``examples/`` always) go
through ``check`` and ``fmt`` in-process, a sample through ``trace`` and the
drop-in ptxas against NVIDIA's ptxas (when installed), and a few through the
real ``ptxasw`` program; see `tests.fuzz.engine` for what each must do. Then
the mutants that once found bugs are replayed by name.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptxasw.driver import ptxas as wrapper
from tests.fuzz.engine import KINDS, Case, Options, Seed, Tally, mutate, run_case

REPO = Path(__file__).resolve().parents[2]
CASES = 240
SEED = 20251123


def _ptxas() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    cand = "/usr/local/cuda/bin/ptxas"
    return cand if os.access(cand, os.X_OK) else None


@pytest.fixture(scope="module")
def seeds(request: pytest.FixtureRequest) -> list[Seed]:
    """examples/*.ptx, plus the small files of the compiled corpus when there is one."""
    found = [Seed.of(p) for p in sorted((REPO / "examples").glob("*.ptx"))]
    try:
        corpus = request.getfixturevalue("corpus")
    except pytest.skip.Exception:  # no nvcc: the examples still get fuzzed
        corpus = []
    found += [Seed.of(f.ptx_path, f.ptxas_flags) for f in corpus if f.ptx_path.stat().st_size < 12_000]
    return found


def test_mutations_are_deterministic_and_change_the_text() -> None:
    data = (REPO / "examples" / "jacobi.ptx").read_bytes()
    for kind in KINDS:
        a = mutate(data, kind, random.Random(kind))
        assert a == mutate(data, kind, random.Random(kind)), kind
        changed = sum(mutate(data, kind, random.Random(i)) != data for i in range(20))
        assert changed >= 15, kind  # (swapping two equal lines or tokens changes nothing)
    seen = {Case(1, i).make([Seed.of(REPO / "examples" / "jacobi.ptx")])[1] for i in range(200)}
    assert seen == set(KINDS)


def test_seeded_campaign(seeds: list[Seed], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PTXASW_PIPELINE", "PTXASW_DISABLE", "PTXASW_LOG", "PTXASW_TIMEOUT", "PTXASW_VISITED_PTXAS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.syspath_prepend(str(REPO))
    opts = Options(trace_every=24, dropin_every=12, limit_s=20.0, ptxas=_ptxas())
    tally = Tally()
    for i in range(CASES):
        tally.add(run_case(Case(SEED, i), seeds, tmp_path, opts))
    total = tally.total()
    assert total["cases"] == CASES and total["traced"] == CASES // 24
    if opts.ptxas is not None:
        assert total["dropin"] == CASES // 12
    report = "\n".join(
        f"case {f.case} {f.kind} {f.seed_file} {f.command}: {f.problem}: {f.detail}" for f in tally.findings
    )
    assert not tally.findings, "\n" + tally.table() + "\n" + report


@pytest.mark.parametrize("index", range(3))
def test_the_program_on_mutants(seeds: list[Seed], tmp_path: Path, index: int) -> None:
    """The real program, not click's test runner: exit 0 or one error line, no traceback."""
    base, kind, data = Case(SEED + 1, index).make(seeds)
    path = tmp_path / base.path.name
    path.write_bytes(data)
    for command in ("check", "fmt"):
        proc = subprocess.run(
            [sys.executable, "-m", "ptxasw.cli", command, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (kind, proc.stderr)
        if proc.returncode == 1:
            assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ptxasw: error: "), proc.stderr


# --------------------------------------------------------------------------
# Mutants that found bugs, replayed by name

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (".global .align 1 .b8 s[3] = {95,09,48};\n", "4:33"),  # a data initializer (a lexer token)
        (".visible .entry k()\n{\n\t.reg .b64 %rd<3>;\n\tld.u64 %rd1, [%rd2+09];\n\tret;\n}\n", "7:21"),
    ],
    ids=["initializer", "address-offset"],
)
def test_a_bad_octal_literal_is_a_located_error(tmp_path: Path, body: str, where: str) -> None:
    """Fuzzing found ``09`` (a flipped byte in a debug section) raising ValueError."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    path = tmp_path / "octal.ptx"
    path.write_text(HEADER + body)
    for command in ("check", "fmt"):
        result = CliRunner().invoke(cli, [command, str(path)])
        assert result.exit_code == 1
        assert result.stderr == f"ptxasw: error: {path}:{where}: bad integer '09' (a leading 0 means octal)\n"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (".align 4 coeffs[2] = {0, 0};\n", "4:8"),  # its .const and .b8 deleted
        (".attribute(.managed) x;\n", "4:12"),
    ],
    ids=["align-only", "attribute-only"],
)
def test_a_declaration_without_a_space_is_a_located_error(tmp_path: Path, body: str, where: str) -> None:
    """Fuzzing (seed 12, case 107543) deleted ``.const`` from a declaration,
    leaving only ``.align 4``: the front end looked for a qualifier token to
    locate the declaration and raised StopIteration in check and fmt."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    path = tmp_path / "decl.ptx"
    path.write_text(HEADER + body)
    for command in ("check", "fmt"):
        result = CliRunner().invoke(cli, [command, str(path)])
        assert result.exit_code == 1
        assert result.stderr == (
            f"ptxasw: error: {path}:{where}: declaration without a state space (.reg, .global, ...)\n"
        )


def test_a_semicolon_in_a_dwarf_section_is_an_error_as_in_ptxas(tmp_path: Path) -> None:
    """Fuzzing (seed 13, case 39030) put a ``;`` before a ``.b8`` line of a
    ``-G`` build's debug section. ptxas refuses it; the front end took it as
    the end of the line before, and the drop-in's reprint (without it)
    assembled where ptxas failed."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    path = tmp_path / "section.ptx"
    path.write_text(HEADER + ".section .debug_str\n{\n.b8 95\n; .b8 0\n}\n")
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"ptxasw: error: {path}:7:1: unexpected ';'")
    path.write_text(HEADER + ".section .debug_str\n{\n.b8 95\n.b8 0\n}\n")
    assert CliRunner().invoke(cli, ["check", str(path)]).exit_code == 0


def test_arithmetic_on_a_register_operand_is_an_error_as_in_ptxas(tmp_path: Path) -> None:
    """Fuzzing (seed 14, case 46793) flipped ``,`` into ``%`` in ``prmt.b32
    %r17, %r16, %r12, 8452``: ptxas refuses ``%r12% 8452``; the front end
    took it as a modulo, and fmt printed ``%r12%8452``, which does not read
    back. ``%p|%q`` (a pair of results) and ``[%rd1+4]`` stay PTX."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    body = (
        ".visible .entry k()\n{\n\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<2>;\n"
        "\tprmt.b32 %r1, %r2, %r3% 8452;\n\tret;\n}\n"
    )
    path = tmp_path / "prmt.ptx"
    path.write_text(HEADER + body)
    for command in ("check", "fmt"):
        result = CliRunner().invoke(cli, [command, str(path)])
        assert result.exit_code == 1
        where = f"{path}:9:2: '%r3%8452'"
        assert result.stderr.startswith(f"ptxasw: error: {where}: a register takes no arithmetic")
    pair_and_address = "setp.eq.u32 %p1|%p2, %r2, 0;\n\tld.u32 %r1, [%rd1+4];"
    fine = body.replace("prmt.b32 %r1, %r2, %r3% 8452;", pair_and_address)
    path.write_text(HEADER + fine)
    assert CliRunner().invoke(cli, ["check", str(path)]).exit_code == 0


def test_the_drop_in_leaves_non_ascii_ptx_to_ptxas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzzing found a flipped newline that put a non-ASCII byte into a comment in
    a function body: ptxas rejects the file, but our reprint (which drops such
    comments) assembled, so a build that must fail would have passed."""
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(HEADER.encode() + b".visible .entry k()\n{\n\t// asm\x8a\tret;\n\tret;\n}\n")
    outcome = wrapper.transform_ptx(ptx.read_bytes().decode("utf-8", "surrogateescape"), str(ptx), 10.0)
    assert outcome.status == "ok" and outcome.text is None and outcome.note == "not ASCII"
    utf8 = (HEADER + "// café\n").encode()
    assert wrapper.transform_ptx(utf8.decode(), "x.ptx", 10.0).note == "not ASCII"


def test_the_drop_in_leaves_ptx_with_a_nul_byte_to_ptxas(tmp_path: Path) -> None:
    """Fuzzing (case 61030 of seed 10, on 16 cores) put a NUL byte into a comment:
    ptxas stops reading there ("Unexpected EOF"), our reprint dropped the comment
    and assembled, so a build that must fail would have passed."""
    text = HEADER + ".visible .entry k()\n{\n\tret;\n} // calls\x00q\n"
    outcome = wrapper.transform_ptx(text, "k.ptx", 10.0)
    assert outcome.status == "ok" and outcome.text is None and outcome.note == "NUL byte"


@pytest.mark.parametrize("version", ["9.", "9.0e1"])
def test_a_version_that_is_not_major_dot_minor_is_a_located_error(tmp_path: Path, version: str) -> None:
    """Fuzzing found ``.version 9.`` (a truncated file) raising ValueError."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    path = tmp_path / "v.ptx"
    path.write_text(f".version {version}\n.target sm_90\n")
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: {path}:1:10: bad .version '{version}': expected MAJOR.MINOR\n"


def test_trace_reports_a_bad_kernel_as_the_users_error(tmp_path: Path) -> None:
    """Fuzzing found a deleted label reported as "internal error while analysing"."""
    from click.testing import CliRunner

    from ptxasw.cli import main as cli

    path = tmp_path / "label.ptx"
    path.write_text(HEADER + ".visible .entry k()\n{\n\tbra.uni $L__BB0_2;\n\tret;\n}\n")
    result = CliRunner().invoke(cli, ["trace", str(path)])
    assert result.exit_code == 1
    assert result.stderr == f"ptxasw: error: {path}:6:2: branch to unknown label $L__BB0_2\n"


def test_a_cubin_ptxas_itself_does_not_repeat_is_no_finding(tmp_path: Path) -> None:
    """ptxas assembled a mutant of dynpar's -c build (``st.param.b64 [%r2], 0``)
    to other code on every run (seed 20, case 60220). The drop-in's cubin is
    compared with ptxas's only where a second run of ptxas gives the first
    one's again: a stand-in ptxas that writes a new cubin on each run is no
    finding."""
    from tests.fuzz.engine import _check_dropin

    source = tmp_path / "k.ptx"
    source.write_text((REPO / "examples" / "jacobi.ptx").read_text())
    fake = tmp_path / "ptxas"
    fake.write_text(
        "#!/bin/sh\n"
        'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
        'date +%s%N > "$out"\n'
    )
    fake.chmod(0o755)
    found: list[tuple[str, str, str]] = []
    _check_dropin(
        Seed(source, "sm_80"),
        source,
        source.read_bytes(),
        tmp_path / "work",
        Options(ptxas=str(fake)),
        False,
        lambda command, problem, detail: found.append((command, problem, detail)),
    )
    assert found == []
