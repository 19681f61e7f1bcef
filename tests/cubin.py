"""Comparing cubins (CUDA ELF objects) produced by ptxas.

ptxas is deterministic and ignores the input's file name and whitespace, so
two PTX texts that mean the same thing give byte-identical cubins, with one
documented exception: builds with debug or line information (-G, -lineinfo)
embed the PTX text itself, comments removed and one entry a line
(``.nv_debug_ptx_txt``), and a SASS-to-PTX-line table (``.nv_debug_line_sass``,
with its relocations).
Those two sections depend on the layout of the text, not its meaning (in a
relocatable build, their names carry a hash of the text too); every other
section must still be identical, but for one more thing of the layout: ptxas
names a function-scope variable after the line that declares it
(``$___shared4__2250``, ``$__$str$6__230``), in the string table.
"""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile

from ptxasw.driver.assembler import PTX_LAYOUT_SECTIONS, code_sections

__all__ = ["PTX_LAYOUT_SECTIONS", "assert_assembles", "differing_sections", "same_code", "sections"]


def sections(cubin: bytes) -> dict[str, bytes]:
    """Section name -> contents (empty for sections without file data)."""
    elf = ELFFile(io.BytesIO(cubin))
    return {s.name: (s.data() if s["sh_type"] != "SHT_NOBITS" else b"") for s in elf.iter_sections()}


def differing_sections(a: bytes, b: bytes) -> list[str]:
    """Names of sections whose contents differ, ignoring only the PTX-layout
    ones (and the text hashes in their names: `code_sections`).

    An empty list means the two objects have the same code, data, symbols,
    relocations and debug information for the user's source.
    """
    if a == b:
        return []
    sa, sb = code_sections(a), code_sections(b)
    assert sa is not None and sb is not None, "not ELF objects"
    names = sorted(set(sa) | set(sb))
    return [n for n in names if sa.get(n) != sb.get(n)]


#: The names ptxas gives function-scope variables: their declaring PTX line
#: last; and the names of a relocatable debug build's PTX-text sections: a
#: hash of the text last.
_LAYOUT_NAMED = re.compile(rb"(\$__[^\0]*?__|\.nv_debug_ptx_txt\.)\d+(?=\0)")
#: Sections that hold offsets into the string tables: a name of another
#: length moves every later name, and these change with it.
_NAME_OFFSETS = frozenset({".symtab", ".nv_debug.shared"})
_NAME_TABLES = (".strtab", ".shstrtab")


def same_code(a: bytes, b: bytes) -> bool:
    """Equal but for what follows the PTX text's layout: the sections
    `differing_sections` ignores, the line numbers and text hashes in the
    names above (in the string tables), and, where such a name's length
    differs, the offsets of the names after it (`_NAME_OFFSETS`)."""
    differ = set(differing_sections(a, b))
    if not differ:
        return True
    sa, sb = sections(a), sections(b)
    moved = any(len(sa.get(t, b"")) != len(sb.get(t, b"")) for t in _NAME_TABLES)
    layout = set(_NAME_TABLES) | (_NAME_OFFSETS if moved else set())
    if differ - layout:
        return False
    return all(_names(sa.get(t, b"")) == _names(sb.get(t, b"")) for t in _NAME_TABLES)


def _names(table: bytes) -> bytes:
    return _LAYOUT_NAMED.sub(rb"\1N", table)


def assert_assembles(text: str, folder: Path, arch: str, *options: str) -> bytes:
    """The cubin the real ptxas makes of ``text`` for ``arch`` (written
    and assembled in ``folder``), failing the test with ptxas's message
    where it refuses the text."""
    source, cubin = folder / "assembled.ptx", folder / "assembled.cubin"
    source.write_text(text)
    command = ["ptxas", f"-arch={arch}", *options, str(source), "-o", str(cubin)]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return cubin.read_bytes()
