"""Device ``printf`` (``vprintf``): the argument buffer's layout and the text.

CUDA compiles ``printf(fmt, ...)`` to ``vprintf(fmt, buffer)``, where the
buffer holds the arguments one after another, each aligned to its size:
integers as 4 bytes (8 with an ``l``/``ll``/``z``/``j``/``t`` length), floats
promoted to doubles, pointers and strings as 8-byte addresses. The
interpreter reads that buffer (`printf_arg_bytes` says how much) and formats
it (`format_printf`) into a `PrintfRecord`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from ptxasw.ir.layout import round_up


@dataclass(slots=True)
class PrintfRecord:
    """One ``printf`` call of one thread: the format, the raw argument buffer
    (as the device laid it out) and the decoded text."""

    format: str
    args: bytes
    text: str
    ctaid: tuple[int, int, int]
    tid: tuple[int, int, int]


FORMAT_RE = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d*))?"
    r"(?P<len>hh|h|ll|l|j|z|t|L)?(?P<conv>[diouxXeEfFgGaAcspn%])"
)


def format_printf(fmt: str, args: bytes, read_string: Callable[[int], str]) -> str:
    """Format like the device ``printf``: every argument is aligned to its
    size in the argument buffer; floats arrive as doubles, integers as 4 bytes
    (8 with an ``l``/``ll``/``z``/``j``/``t`` length), pointers as 8."""
    pos = 0
    out: list[str] = []
    last = 0

    def take(size: int) -> int:
        nonlocal pos
        pos = round_up(pos, size)
        raw = args[pos : pos + size]
        pos += size
        return int.from_bytes(raw.ljust(size, b"\0"), "little")

    for match in FORMAT_RE.finditer(fmt):
        out.append(fmt[last : match.start()])
        last = match.end()
        conv = match["conv"]
        if conv == "%":
            out.append("%")
            continue
        width = match["width"] or ""
        if width == "*":
            width = str(_signed(take(4), 32))
        prec = match["prec"]
        if prec == "*":
            prec = str(_signed(take(4), 32))
        spec = "%" + match["flags"] + width + ("" if prec is None else "." + prec)
        size = _argument_size(match)
        value = take(size)
        if conv in "di":
            out.append((spec + "d") % _signed(value, size * 8))
        elif conv in "ouxX":
            out.append((spec + conv.replace("u", "d")) % value)
        elif conv == "c":
            out.append((spec + "c") % chr(value & 0xFF))
        elif conv in "eEfFgG":
            out.append((spec + conv) % _double(value))
        elif conv in "aA":
            text = _double(value).hex()
            out.append(text.upper() if conv == "A" else text)
        elif conv == "s":
            out.append((spec + "s") % read_string(value))
        elif conv == "p":
            out.append(f"{value:#x}")
        # %n writes nothing here
    out.append(fmt[last:])
    return "".join(out)


def _argument_size(match: re.Match[str]) -> int:
    """Bytes one conversion's argument takes: ints 4 (8 with a long length
    modifier), characters 4 (``%lc`` too: a promoted ``wint_t``), the rest 8."""
    conv = match["conv"]
    if conv == "c":
        return 4
    if conv in "diouxX":
        return 8 if match["len"] in ("l", "ll", "j", "z", "t") else 4
    return 8


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def printf_arg_bytes(fmt: str) -> int:
    """Size of the argument buffer a format needs (each argument aligned)."""
    pos = 0
    for match in FORMAT_RE.finditer(fmt):
        conv = match["conv"]
        if conv == "%":
            continue
        for star in (match["width"], match["prec"]):
            if star == "*":
                pos = round_up(pos, 4) + 4
        size = _argument_size(match)
        pos = round_up(pos, size) + size
    return pos
