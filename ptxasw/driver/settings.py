"""What the environment asks of the drop-in's pipeline, read without heavy imports.

The wrapper process reads these (for its result cache key) before it forks
the pipeline's child, and must stay light: standard library only.

``PTXASW_MODE``       ``normal`` (default); ``noload``/``nocorner`` are the paper's
                      ablations, wrong at warp edges: refused (with a warning) unless
                      ``PTXASW_UNSAFE=1``.
``PTXASW_MAX_DELTA``  the largest shuffle distance (default 31).
``PTXASW_SYNTH=0``    no synthesis: parse and print only.
``PTXASW_PROFIT``     ``model`` (default): keep only the shuffles the cost model says
                      pay on the target (`ptxasw.synth.cost`); ``always``: every proven one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = [
    "ENV_MAX_DELTA",
    "ENV_MODE",
    "ENV_PROFIT",
    "ENV_SYNTH",
    "ENV_UNSAFE",
    "TARGET_ARCH",
    "synthesis_settings",
]

ENV_MODE = "PTXASW_MODE"
ENV_MAX_DELTA = "PTXASW_MAX_DELTA"
ENV_UNSAFE = "PTXASW_UNSAFE"
ENV_SYNTH = "PTXASW_SYNTH"
ENV_PROFIT = "PTXASW_PROFIT"

#: The GPU the module is assembled for (``ptxas --gpu-name``), set by the
#: drop-in before it runs the pipeline; None when unknown.
TARGET_ARCH: str | None = None


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
