"""The floating-point formats PTX uses: their layouts, and nothing that
computes with them (`floats` rounds into them), so that a layer which only
needs a format's layout does not load NumPy with the arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FORMATS", "FloatFormat"]


@dataclass(frozen=True, slots=True)
class FloatFormat:
    """A binary floating-point format as PTX uses it.

    ``ieee``: the all-ones exponent encodes infinity (zero mantissa) and NaN.
    ``nan``: the canonical NaN encoding (None when the format has no NaN).
    ``max_finite``: encoding of the largest finite magnitude.
    ``shift``: the value bits sit this many bits up in the register (tf32
    keeps the f32 layout with the low 13 bits zero).
    """

    name: str
    ebits: int
    mbits: int
    bias: int
    ieee: bool
    nan: int | None
    max_finite: int
    shift: int = 0

    @property
    def sign_pos(self) -> int:
        return self.ebits + self.mbits

    @property
    def storage_bits(self) -> int:
        return 1 + self.ebits + self.mbits + self.shift


FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat(".f64", 11, 52, 1023, True, 0x7FFF_FFFF_FFFF_FFFF, 0x7FEF_FFFF_FFFF_FFFF),
        FloatFormat(".f32", 8, 23, 127, True, 0x7FFF_FFFF, 0x7F7F_FFFF),
        FloatFormat(".f16", 5, 10, 15, True, 0x7FFF, 0x7BFF),
        FloatFormat(".bf16", 8, 7, 127, True, 0x7FFF, 0x7F7F),
        FloatFormat(".tf32", 8, 10, 127, True, 0x3FFFF, 0x3FBFF, shift=13),
        FloatFormat(".e4m3", 4, 3, 7, False, 0x7F, 0x7E),
        FloatFormat(".e5m2", 5, 2, 15, True, 0x7F, 0x7B),
        FloatFormat(".e2m3", 2, 3, 1, False, None, 0x1F),
        FloatFormat(".e3m2", 3, 2, 3, False, None, 0x1F),
        FloatFormat(".e2m1", 2, 1, 1, False, None, 0x7),
    )
}
