"""Comparing cubins (CUDA ELF objects) produced by ptxas.

ptxas is deterministic and ignores the input's file name and whitespace, so
two PTX texts that mean the same thing give byte-identical cubins, with one
documented exception: builds with debug or line information (-G, -lineinfo)
embed the PTX text itself, comments removed and one entry a line
(``.nv_debug_ptx_txt``), and a SASS-to-PTX-line table (``.nv_debug_line_sass``,
with its relocations).
Those two sections depend on the layout of the text, not its meaning; every
other section must still be identical.
"""

from __future__ import annotations

import io

from elftools.elf.elffile import ELFFile

from ptxasw.driver.assembler import PTX_LAYOUT_SECTIONS

__all__ = ["PTX_LAYOUT_SECTIONS", "differing_sections", "sections"]


def sections(cubin: bytes) -> dict[str, bytes]:
    """Section name -> contents (empty for sections without file data)."""
    elf = ELFFile(io.BytesIO(cubin))
    return {s.name: (s.data() if s["sh_type"] != "SHT_NOBITS" else b"") for s in elf.iter_sections()}


def differing_sections(a: bytes, b: bytes) -> list[str]:
    """Names of sections whose contents differ, ignoring only the PTX-layout ones.

    An empty list means the two objects have the same code, data, symbols,
    relocations and debug information for the user's source.
    """
    if a == b:
        return []
    sa, sb = sections(a), sections(b)
    names = sorted(set(sa) | set(sb))
    return [n for n in names if n not in PTX_LAYOUT_SECTIONS and sa.get(n) != sb.get(n)]
