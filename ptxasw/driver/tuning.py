"""Measured verdicts of ``ptxasw tune``: whether a kernel's shuffles pay on a GPU.

The cost model (`ptxasw.synth.cost`) guesses per load; ``ptxasw tune`` times
the original kernel against its rewrite on the GPU and stores the outcome
here: ``shuffle`` (keep every proven shuffle) or ``original`` (keep none).
The drop-in consults the store before the cost model.

Why the key is what it is: the drop-in must find a verdict again from what
it sees when the same kernel comes back, so a verdict is filed under a hash
of the kernel's text as ptxasw prints it, the target architecture and the
synthesis settings that change the rewrite (mode, largest delta), plus a
format version. The tool's own fingerprint is deliberately not part of it:
a verdict is a measurement of the GPU and should survive upgrades of
ptxasw. What must not survive is a *different rewrite*, so each verdict also
records the hash of the rewritten kernel it measured; the drop-in applies it
only when today's rewrite hashes the same.

Where: ``$PTXASW_TUNE_DIR`` if set (``off`` ignores every verdict), else the
``tune/`` folder of the drop-in's cache directory (`ptxasw.driver.cache`).
``PTXASW_CACHE_DIR=off`` turns off the *result* cache only: verdicts are
explicit user data, like a profile for profile-guided optimisation, so they
still apply (from ``tune/`` under the default cache directory). Entries are
``tune/<arch>/<key>.json``, written to a temporary file and renamed, so
concurrent builds never read a torn verdict.

Standard library only: the wrapper process reads the store's state (for its
result cache key) before it forks the pipeline, and must stay light.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CHOICES",
    "ENV_TUNE_DIR",
    "FORMAT",
    "Verdict",
    "VerdictStore",
    "open_store",
    "store_state",
    "text_hash",
    "tune_dir",
]

ENV_TUNE_DIR = "PTXASW_TUNE_DIR"
FORMAT = 1
#: What a verdict may say: keep every proven shuffle, or none.
CHOICES = ("shuffle", "original")


def text_hash(text: str) -> str:
    """The SHA-256 of a kernel's printed text (the store's identity of a kernel)."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class Verdict:
    """One measurement's outcome, and enough of the measurement to judge it later."""

    kernel: str
    arch: str
    mode: str
    max_delta: int
    kernel_hash: str
    rewrite_hash: str
    choice: str
    original_ms: float | None = None
    shuffle_ms: float | None = None
    margin: float | None = None
    shuffles: int | None = None
    device: str | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        """original / rewrite time (> 1: the shuffles are faster)."""
        if not self.original_ms or not self.shuffle_ms:
            return None
        return self.original_ms / self.shuffle_ms


def tune_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The verdict store's directory, or None when verdicts are off (see the module doc)."""
    from ptxasw.driver.cache import cache_dir, default_cache_dir, directory_setting

    env = os.environ if env is None else env
    return directory_setting(
        env.get(ENV_TUNE_DIR, ""), lambda: (cache_dir(env) or default_cache_dir(env)) / "tune"
    )


def _arch_folder(arch: str) -> str:
    """A folder name for ``arch`` (``sm_90a``); anything odd becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", arch) or "_"


class VerdictStore:
    """Verdicts by key in one directory, one sub-folder per target architecture."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(kernel_hash: str, arch: str, mode: str, max_delta: int) -> str:
        """The file name of a kernel's verdict for a target and settings."""
        h = hashlib.sha256(f"ptxasw-tune-{FORMAT};{arch};{mode};{max_delta};{kernel_hash}".encode())
        return h.hexdigest()

    def path(self, kernel_hash: str, arch: str, mode: str, max_delta: int) -> Path:
        key = self.key(kernel_hash, arch, mode, max_delta)
        return self.directory / _arch_folder(arch) / f"{key}.json"

    def get(self, kernel_hash: str, arch: str, mode: str, max_delta: int) -> Verdict | None:
        """The stored verdict, or None (none stored, unreadable, or another format)."""
        try:
            path = self.path(kernel_hash, arch, mode, max_delta)
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        data.pop("format")
        try:
            verdict = Verdict(**data)
        except TypeError:
            return None
        identity = (verdict.kernel_hash, verdict.arch, verdict.mode, verdict.max_delta)
        if verdict.choice not in CHOICES or identity != (kernel_hash, arch, mode, max_delta):
            return None
        return verdict

    def put(self, verdict: Verdict) -> Path:
        """Store ``verdict`` atomically (replacing an older one); raises OSError."""
        if verdict.choice not in CHOICES:
            raise ValueError(f"a verdict is one of {CHOICES}, not {verdict.choice!r}")
        path = self.path(verdict.kernel_hash, verdict.arch, verdict.mode, verdict.max_delta)
        payload = json.dumps({"format": FORMAT, **asdict(verdict)}, indent=1, sort_keys=True) + "\n"
        from ptxasw.driver.cache import replace_atomically

        replace_atomically(path, payload.encode("utf-8"))
        return path

    def has_any(self, arch: str) -> bool:
        """Whether any verdict is stored for ``arch`` (cheap: one directory listing)."""
        return bool(self._entries(arch))

    def state(self, arch: str) -> str:
        """A digest of every verdict stored for ``arch`` (names, sizes, times); ``""``
        when there are none. The drop-in's result cache key includes it, so a
        result computed before a new verdict is not served after it."""
        entries = self._entries(arch)
        if not entries:
            return ""
        h = hashlib.sha256()
        for name, size, mtime in entries:
            h.update(f"{name}:{size}:{mtime};".encode())
        return h.hexdigest()

    def _entries(self, arch: str) -> list[tuple[str, int, int]]:
        folder = self.directory / _arch_folder(arch)
        found = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.name.endswith(".json") and not entry.name.startswith("."):
                        with contextlib.suppress(OSError):
                            st = entry.stat()
                            found.append((entry.name, st.st_size, st.st_mtime_ns))
        except OSError:
            return []
        return sorted(found)


def open_store(env: Mapping[str, str] | None = None) -> VerdictStore | None:
    """The store the environment names, or None when verdicts are off."""
    directory = tune_dir(env)
    return None if directory is None else VerdictStore(directory)


def store_state(arch: str | None, env: Mapping[str, str] | None = None) -> str:
    """`VerdictStore.state` of the environment's store for ``arch`` (``""``: none apply)."""
    store = open_store(env)
    if store is None or not arch:
        return ""
    return store.state(arch)
