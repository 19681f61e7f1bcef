"""NVIDIA's ptxas as a function from PTX text to bytes, for asking it questions.

`ptxasw.synth.pinning` finds which product ptxas fuses in a sum by
assembling variants of the module and comparing the bytes, so it must run
ptxas as the build does: the same executable and the options that change
code (the target, ``-O``, ``--fmad``, ``-G``, register limits...), not the
ones that name files or only print. The drop-in passes its command line
(`code_options`); the commands use the ptxas they find and the module's
``.target``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the drop-in's fast path imports this module, and no IR
    from ptxasw import ir

__all__ = [
    "CODE_OPTIONS",
    "PTX_LAYOUT_SECTIONS",
    "Assemble",
    "assembler",
    "code_of",
    "code_sections",
    "module_arch",
]

#: PTX text -> what ptxas made of it (None: it failed or timed out).
Assemble = Callable[[str], bytes | None]

#: ptxas options (long names) that change the code it writes.
CODE_OPTIONS = frozenset(
    {
        "Ofast-compile",
        "allow-expensive-optimizations",
        "compile-only",
        "def-load-cache",
        "def-store-cache",
        "device-debug",
        "device-function-maxrregcount",
        "disable-optimizer-constants",
        "dont-merge-basicblocks",
        "entry",
        "extensible-whole-program",
        "fmad",
        "force-load-cache",
        "force-store-cache",
        "generate-line-info",
        "gpu-name",
        "legacy-bar-warp-wide-behavior",
        "machine",
        "maxntid",
        "maxrregcount",
        "minnctapersm",
        "opt-level",
        "optimize-float-atomics",
        "override-directive-values",
        "position-independent-code",
        "register-usage-level",
        "return-at-end",
        "sp-bounds-check",
    }
)


#: Sections of a cubin that follow the PTX text's layout, not its meaning:
#: ``-G`` and ``-lineinfo`` builds embed the PTX text (``.nv_debug_ptx_txt``)
#: and a SASS-to-PTX-line table. Two texts that differ in one modifier differ
#: there whatever the code.
PTX_LAYOUT_SECTIONS = frozenset(
    {".nv_debug_ptx_txt", ".nv_debug_line_sass", ".rel.nv_debug_line_sass", ".rela.nv_debug_line_sass"}
)


#: A relocatable (``-c``) debug build names each function's PTX-text section
#: after a hash of the text (``.nv_debug_ptx_txt.1640557740``, as clang's
#: OpenMP offload builds with ``-g`` have it): the hash follows the layout too.
_HASHED_NAME = re.compile(rb"(\.nv_debug_ptx_txt\.)(\d+)")
_NAME_TABLES = frozenset({".shstrtab", ".strtab"})


def _unhashed(data: bytes) -> bytes:
    """``data`` with each hashed PTX-text section name's digits masked (same length)."""
    return _HASHED_NAME.sub(lambda m: m.group(1) + b"#" * len(m.group(2)), data)


def code_sections(cubin: bytes) -> dict[str, bytes] | None:
    """``cubin``'s sections by name, in file order, without the PTX-layout
    ones, and with the hashes in names of PTX-text sections masked (equal for
    two cubins of the same code); None for what is not an ELF object."""
    import io

    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(cubin))
        found: dict[str, bytes] = {}
        for s in elf.iter_sections():
            if s.name in PTX_LAYOUT_SECTIONS or s.name.startswith(".nv_debug_ptx_txt."):
                continue
            data = s.data() if s["sh_type"] != "SHT_NOBITS" else b""
            found[s.name] = _unhashed(data) if s.name in _NAME_TABLES else data
        return found
    except (ELFError, ValueError):
        return None


def code_of(cubin: bytes) -> bytes:
    """``cubin`` as `code_sections` keeps it, in one string (equal for two
    cubins of the same code; a non-ELF input is compared whole)."""
    found = code_sections(cubin)
    if found is None:
        return cubin
    return b"\1".join(name.encode() + b"\0" + data for name, data in found.items())


def assembler(command: Sequence[str], timeout_s: float = 60.0, remember: int = 8) -> Assemble:
    """``command`` (ptxas and its options) run on a PTX text in a private
    directory: the cubin's code (`code_of`), or None when ptxas fails.

    ptxas is deterministic, and the questions about a kernel start from the
    same text (the kernel as it stands, asked whether ptxas fuses anything,
    then which product it fuses): the answers for the last ``remember``
    texts are kept, so that text is assembled once."""
    prefix = list(command)
    answers: dict[bytes, bytes | None] = {}

    def assemble(text: str) -> bytes | None:
        key = hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()
        if key not in answers:
            if len(answers) >= remember:
                del answers[next(iter(answers))]
            answers[key] = _run(text)
        return answers[key]

    def _run(text: str) -> bytes | None:
        with tempfile.TemporaryDirectory(prefix="ptxasw-pin-") as tmp:
            ptx, out = Path(tmp) / "in.ptx", Path(tmp) / "out.cubin"
            ptx.write_text(text, encoding="utf-8", errors="surrogateescape")
            try:
                proc = subprocess.run(
                    [*prefix, str(ptx), "-o", str(out)], capture_output=True, timeout=timeout_s, check=False
                )
            except (OSError, subprocess.TimeoutExpired):
                return None
            return code_of(out.read_bytes()) if proc.returncode == 0 and out.exists() else None

    return assemble


def module_arch(module: ir.Module) -> str | None:
    """The first ``sm_XX`` of the module's ``.target`` (what ptxas would be asked for)."""
    from ptxasw import ir

    for item in module.items:
        if isinstance(item, ir.Target):
            for target in item.targets:
                if target.startswith("sm_"):
                    return target
    return None
