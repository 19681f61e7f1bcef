"""The drop-in's result cache: an unchanged PTX file is not analysed twice.

A build that recompiles a file whose PTX did not change (a header touched,
``make clean``, a CMake reconfigure) should pay ``ptxas``, not the symbolic
analysis again. The key is a hash of the PTX text, the target architecture,
the synthesis options, the pipeline and the tool itself (its version and the
size and modification time of every module of the package, so an edited
checkout never reads results of its former self). An entry holds what the
pipeline produced: the rewritten text, or nothing when it changed nothing,
and the pass records for the log.

``PTXASW_CACHE_DIR`` names the directory (default: ``$XDG_CACHE_HOME/ptxasw``
or ``~/.cache/ptxasw``; ``off`` disables the cache). Entries are written to a
temporary file in the same directory and renamed into place, so concurrent
builds never read a torn entry: the last writer of equal content wins. A
cache that cannot be read or written is skipped without a word.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_CACHE_DIR",
    "CachedResult",
    "ResultCache",
    "cache_dir",
    "default_cache_dir",
    "directory_setting",
]

ENV_CACHE_DIR = "PTXASW_CACHE_DIR"
_FORMAT = 1


@dataclass
class CachedResult:
    """A cache entry: the text to assemble (None: the input unchanged) and the pass records."""

    text: str | None
    passes: list[dict[str, Any]]


def cache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The cache directory, or None when disabled."""
    env = os.environ if env is None else env
    return directory_setting(env.get(ENV_CACHE_DIR, ""), lambda: default_cache_dir(env))


def directory_setting(value: str, default: Callable[[], Path]) -> Path | None:
    """A directory named by an environment setting: ``off`` (``0``, ``none``, ``false``)
    means none, an empty value ``default()``."""
    if value.lower() in ("off", "0", "none", "false"):
        return None
    return Path(value) if value else default()


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/ptxasw``, or ``~/.cache/ptxasw``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptxasw"


@cache
def _tool_fingerprint() -> str:
    """The package's version and its modules' sizes and times (an edited checkout is another tool)."""
    import ptxasw

    root = Path(ptxasw.__file__).parent
    h = hashlib.sha256(ptxasw.__version__.encode())
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".lark"):
            try:
                st = path.stat()
            except OSError:
                continue
            h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


class ResultCache:
    """Entries by key in one directory (two-character fan-out)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def key(text: str, context: Mapping[str, str]) -> str:
        h = hashlib.sha256()
        h.update(f"ptxasw-cache-{_FORMAT};{_tool_fingerprint()};".encode())
        for name in sorted(context):
            h.update(f"{name}={context[name]};".encode())
        h.update(text.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> CachedResult | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8", errors="surrogateescape"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        text = data.get("text")
        passes = data.get("passes")
        if (text is not None and not isinstance(text, str)) or not isinstance(passes, list):
            return None
        return CachedResult(text, passes)

    def put(self, key: str, result: CachedResult) -> bool:
        """Store ``result`` atomically; False when the directory is not writable."""
        path = self._path(key)
        payload = json.dumps({"format": _FORMAT, "text": result.text, "passes": result.passes})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(payload)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return False
        return True
