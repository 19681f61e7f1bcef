"""Real compiler output: parse, round-trip to an equal IR, and assemble to the same cubin.

ptxas output is deterministic and independent of the input's file name,
directory and whitespace, so the original and the printed PTX must give
byte-identical cubins; debug and line-info builds embed the PTX text and its
line numbers, and there every other section must be identical (tests/cubin.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ptxasw.ir import isa
from ptxasw.ir.printer import print_module
from ptxasw.parser import parse_file, parse_ptx
from tests.corpus.build import CorpusFile
from tests.cubin import differing_sections, same_code

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not found on PATH")


def assemble(ptx: Path, entry: CorpusFile, out: Path) -> bytes:
    cmd = ["ptxas", f"-arch={entry.arch}", *entry.ptxas_flags, str(ptx), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return out.read_bytes()


def test_corpus_round_trips_to_equal_ir(corpus: list[CorpusFile]) -> None:
    instructions = 0
    for entry in corpus:
        module = parse_file(entry.ptx_path)
        printed = print_module(module)
        again = parse_ptx(printed, str(entry.ptx_path) + ".printed")
        assert again == module, entry.name
        assert print_module(again) == printed, entry.name
        instructions += sum(1 for _ in module.instructions())
    assert instructions > 10_000


def test_gcc_offload_ptx_round_trips(gcc_corpus: list[CorpusFile]) -> None:
    """GCC's PTX: equal IR and every marker comment kept.

    ptxas cannot assemble it alone (nvptx-tools' linker first merges library
    declarations: it calls sqrtf without a prototype, for one), so the cubin
    comparison does not apply; tests/test_toolchain.py builds and runs GCC
    programs through the shim instead.
    """
    for entry in gcc_corpus:
        text = entry.ptx_path.read_text()
        module = parse_ptx(text, str(entry.ptx_path))
        printed = print_module(module)
        assert parse_ptx(printed) == module, entry.name
        markers = [line.strip() for line in text.splitlines() if line.startswith("// BEGIN")]
        assert markers and markers == [line for line in printed.splitlines() if line.startswith("// BEGIN")]


def test_corpus_uses_only_known_modifiers_and_operand_counts(corpus: list[CorpusFile]) -> None:
    """The table knows every modifier and operand count compilers emit, so
    `ptxasw check` warns about none of them (no false alarms on real output)."""
    unknown = set()
    for entry in corpus:
        for inst in parse_file(entry.ptx_path).instructions():
            unknown.update((inst.opcode, modifier) for modifier in isa.unknown_modifiers(inst))
            problem = isa.operand_count_problem(inst)
            if problem is not None:
                unknown.add((inst.mnemonic, problem))
    assert not unknown


@needs_ptxas
def test_printed_ptx_assembles_to_identical_cubin(corpus: list[CorpusFile], tmp_path: Path) -> None:
    mismatched: dict[str, list[str]] = {}
    identical = 0
    for entry in corpus:
        printed = tmp_path / (entry.ptx_path.stem + ".printed.ptx")
        printed.write_text(print_module(parse_file(entry.ptx_path)))
        original_cubin = assemble(entry.ptx_path, entry, tmp_path / "original.cubin")
        printed_cubin = assemble(printed, entry, tmp_path / "printed.cubin")
        if original_cubin == printed_cubin:
            identical += 1
            continue
        # Only in what follows the text's layout (debug sections, line-named variables).
        if not same_code(original_cubin, printed_cubin):
            mismatched[entry.name] = differing_sections(original_cubin, printed_cubin)
    assert not mismatched
    assert identical >= len(corpus) // 2
