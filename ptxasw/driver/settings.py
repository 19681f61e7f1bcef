"""What the environment asks of the drop-in's pipeline, read without heavy imports.

The wrapper process reads these (for its result cache key, and to see
whether the pipeline can change anything at all) before it forks the
pipeline's child, and must stay light: the standard library, the cost model
and the verdict store, no parser and no solver.

``PTXASW_MODE``       ``normal`` (default); ``noload``/``nocorner`` are the paper's
                      ablations, wrong at warp edges: refused (with a warning) unless
                      ``PTXASW_UNSAFE=1``.
``PTXASW_MAX_DELTA``  the largest shuffle distance (default 31).
``PTXASW_SYNTH=0``    no synthesis: the drop-in hands ``ptxas`` the file unparsed (`nothing_to_do`).
``PTXASW_PROFIT``     ``model`` (default): keep only the shuffles the cost model says
                      pay on the target (`ptxasw.synth.cost`); ``always``: every proven one.
``PTXASW_CACHE_SIZE`` the result cache's size limit (`ptxasw.driver.cache`): bytes, or a
                      number with K, M, G or T (powers of 1024: ``500M``, ``2G``); ``0``:
                      no limit; default 1G.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "ENV_CACHE_SIZE",
    "ENV_MAX_DELTA",
    "ENV_MODE",
    "ENV_PROFIT",
    "ENV_SYNTH",
    "ENV_UNSAFE",
    "PTXAS_COMMAND",
    "TARGET_ARCH",
    "cache_size",
    "model_rules_out_shuffles",
    "nothing_to_do",
    "synthesis_settings",
]

ENV_MODE = "PTXASW_MODE"
ENV_MAX_DELTA = "PTXASW_MAX_DELTA"
ENV_UNSAFE = "PTXASW_UNSAFE"
ENV_SYNTH = "PTXASW_SYNTH"
ENV_PROFIT = "PTXASW_PROFIT"
ENV_CACHE_SIZE = "PTXASW_CACHE_SIZE"

DEFAULT_CACHE_SIZE = 1 << 30
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

#: The GPU the module is assembled for (``ptxas --gpu-name``), set by the
#: drop-in before it runs the pipeline; None when unknown.
TARGET_ARCH: str | None = None

#: The real ptxas and the options of the build's command line that change
#: the code (`ptxasw.driver.assembler.CODE_OPTIONS`), set by the drop-in:
#: the synthesis asks it which products it fuses (`ptxasw.synth.pinning`).
PTXAS_COMMAND: list[str] | None = None


def synthesis_settings(env: Mapping[str, str] | None = None, *, warn: bool = False) -> dict[str, str]:
    """The synthesis settings the environment asks for, as strings (also the
    drop-in's cache key). Bad values are replaced by the defaults, each with
    one warning on stderr when ``warn``."""
    env = os.environ if env is None else env

    def complain(message: str) -> None:
        if warn:
            print(f"ptxasw: warning: {message}", file=sys.stderr, flush=True)

    mode = env.get(ENV_MODE, "normal") or "normal"
    if mode not in ("normal", "noload", "nocorner"):
        complain(f"{ENV_MODE}={mode!r} is not normal, noload or nocorner; using normal")
        mode = "normal"
    elif mode != "normal" and env.get(ENV_UNSAFE) != "1":
        complain(
            f"{ENV_MODE}={mode} gives wrong results at warp edges; "
            f"set {ENV_UNSAFE}=1 to allow it; using normal"
        )
        mode = "normal"
    max_delta = env.get(ENV_MAX_DELTA, "31") or "31"
    if not max_delta.isdigit() or int(max_delta) > 31:
        complain(f"{ENV_MAX_DELTA}={max_delta!r} is not a number from 0 to 31; using 31")
        max_delta = "31"
    synth = "0" if env.get(ENV_SYNTH, "1") == "0" else "1"
    profit = env.get(ENV_PROFIT, "model") or "model"
    if profit not in ("model", "always"):
        complain(f"{ENV_PROFIT}={profit!r} is not model or always; using model")
        profit = "model"
    return {
        "mode": mode,
        "max_delta": str(int(max_delta)),
        "synth": synth,
        "profit": profit,
        "arch": TARGET_ARCH or "",
    }


def nothing_to_do() -> str | None:
    """Why the default passes cannot change any module under this environment
    and target, or None when they may.

    Then the drop-in need not parse at all: it hands ``ptxas`` the user's file
    at the cost of starting Python (the parse, the imports behind it and the
    printing were most of a cold run's overhead), and a shadow toolkit records
    that for every file of the same command line (`ptxasw.driver.cache`). The
    answer agrees with `ptxasw.driver.pipeline.default_passes`: synthesis off,
    or the cost model ruling out every shuffle on the target with no
    ``ptxasw tune`` verdict that could overrule it. Bad settings are warned
    about here only when the answer is a reason: otherwise the pipeline runs
    and warns itself (once).
    """
    settings = synthesis_settings()
    if settings["synth"] == "0":
        reason = "synthesis off (PTXASW_SYNTH=0)"
    elif model_rules_out_shuffles(settings):
        from ptxasw.synth.cost import unprofitable_reason

        reason = unprofitable_reason(settings["arch"] or None, settings["mode"])
    else:
        return None
    synthesis_settings(warn=True)
    return reason


def model_rules_out_shuffles(settings: dict[str, str]) -> bool:
    """Whether the cost model keeps no shuffle on the target and no stored
    verdict of ``ptxasw tune`` overrides it (the model applies to every load)."""
    from ptxasw.synth.cost import nothing_pays

    if settings["profit"] != "model" or not nothing_pays(settings["arch"] or None, settings["mode"]):
        return False
    from ptxasw.driver.tuning import store_state

    return not store_state(settings["arch"])


def cache_size(env: Mapping[str, str] | None = None, *, warn: bool = False) -> int:
    """The result cache's size limit in bytes (0: no limit). A bad value gives
    the default, with one warning on stderr when ``warn``: a cache that grows
    without bound, or one trimmed to nothing, would hide the mistake."""
    env = os.environ if env is None else env
    raw = env.get(ENV_CACHE_SIZE, "")
    if not raw.strip():
        return DEFAULT_CACHE_SIZE
    size = _parse_size(raw)
    if size is None:
        if warn:
            print(
                f"ptxasw: warning: {ENV_CACHE_SIZE}={raw!r} is not a size (500M, 2G, 0 for no limit); "
                f"using 1G",
                file=sys.stderr,
                flush=True,
            )
        return DEFAULT_CACHE_SIZE
    return size


def _parse_size(text: str) -> int | None:
    """``1048576``, ``500M``, ``1.5G``, ``2GiB``, ``0`` as bytes; None when not a size."""
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = text[-1:] if text[-1:] in _SIZE_UNITS else ""
    number = text[: len(text) - len(unit)].strip()
    try:
        value = float(number)
    except ValueError:
        return None
    if not (value >= 0 and value * _SIZE_UNITS[unit] < 1 << 63):  # false for nan and inf
        return None
    return math.ceil(value * _SIZE_UNITS[unit])  # 0.5 is one byte, not no limit
