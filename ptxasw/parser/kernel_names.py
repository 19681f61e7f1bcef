"""Kernels chosen by the name a user knows: ``-k stencil`` for ``_Z7stencilPKfPfi``.

C++ kernels (nvcc, clang) and Numba's are named by their Itanium-mangled
names, two hundred characters for a Numba kernel, which nobody types. As
Nsight Compute's ``--kernel-name`` does by default, a name that is no
kernel's own selects the kernels whose function name, the last identifier of
the mangled name (its namespaces, template arguments, parameter types and
ABI tags left out), is that name: every overload or instantiation of it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["base_name", "resolve_kernels"]

# What may follow ``_ZN`` before the nested name: the qualifiers of a member function.
_QUALIFIERS = "rVKRO"


def base_name(name: str) -> str:
    """The function name inside an Itanium-mangled ``name`` (``_Z7stencilPKfPfi``
    -> ``stencil``, ``_ZN6cudapy8__main__5lap2dB2v1B96...E5Array...`` ->
    ``lap2d``); ``name`` itself when it is not one (``extern "C"`` kernels,
    GCC's ``main$_omp_fn$0``)."""
    if not name.startswith("_Z"):
        return name
    rest, nested = name[2:], name.startswith("_ZN")
    if nested:
        rest = rest[1:].lstrip(_QUALIFIERS)
    last = None
    while rest[:1].isdigit():
        identifier, rest = _source_name(rest)
        if identifier is None:
            break
        last = identifier
        while rest.startswith("B") and rest[1:2].isdigit():  # an ABI tag: B <source-name>
            _, rest = _source_name(rest[1:])
        if not nested:
            break
    return last if last is not None else name


def _source_name(text: str) -> tuple[str | None, str]:
    """``<length><identifier>`` at the start of ``text``, and what follows."""
    digits = len(text) - len(text.lstrip("0123456789"))
    length = int(text[:digits])
    identifier = text[digits : digits + length]
    if len(identifier) < length:
        return None, text
    return identifier, text[digits + length :]


def resolve_kernels(names: Sequence[str], wanted: Sequence[str]) -> tuple[list[str], list[str]]:
    """The kernels of ``names`` that ``wanted`` selects, in the order asked,
    each once (a kernel's own name, or the function name of one or more:
    `base_name`), and the names in ``wanted`` that select none."""
    by_base: dict[str, list[str]] = {}
    for name in names:
        by_base.setdefault(base_name(name), []).append(name)
    known = set(names)
    chosen: dict[str, None] = {}
    missing: list[str] = []
    for name in wanted:
        kernels = [name] if name in known else by_base.get(name, [])
        if not kernels:
            missing.append(name)
        chosen.update(dict.fromkeys(kernels))
    return list(chosen), missing
