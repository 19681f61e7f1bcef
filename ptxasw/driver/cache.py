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
    "FAST_KEYED_ENV",
    "FAST_MAGIC",
    "FAST_SKIP_ENV",
    "CachedResult",
    "FastRequest",
    "ResultCache",
    "cache_dir",
    "default_cache_dir",
    "directory_setting",
    "fast_protocol",
    "package_files",
    "replace_atomically",
    "write_fast_entry",
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
        return _write_atomic(path, payload.encode("utf-8", "surrogateescape"))


def replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder
    and a rename, so that a concurrent reader never sees a torn file (the
    last writer wins); raises OSError, leaving no temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------
# Fast entries: the shadow toolkit's bin/ptxas skips Python on a known command line
#
# Why: a warm build through the wrapper pays Python's start-up and imports
# (40-70 ms) for a file whose result is known, while ptxas itself takes
# 20-60 ms. The shell script of a shadow toolkit (`ptxasw.driver.toolkit`)
# therefore hashes what decides the result itself, with one `stat` and one
# `sha256sum` process, and looks the hash up here: a hit names what to
# assemble, and the script execs the real ptxas on it. Everything else goes to
# Python as before, which writes the entry after a run whose outcome is final.
#
# The key is two SHA-256 digests: ``h1`` over a header (protocol, the real
# ptxas and interpreter paths, the cache and verdict folders, the target,
# the raw value of every setting in `FAST_KEYED_ENV`, the command line with
# the PTX input and the ``-o`` value replaced by placeholders, since nvcc
# names both after its process id) followed by `stat` lines (device, inode,
# size, modification and change time) of the interpreter, the real ptxas,
# every module and folder of the package and the target's verdicts; ``h2``
# over the PTX file. So an edited, reinstalled or upgraded ptxasw, another
# ptxas, a new verdict or another setting simply misses. The Python side
# never recomputes ``h1`` (it cannot see what `stat` printed before it
# started); it checks everything else the script claims against its own
# reading (`FastRequest`) and writes nothing on any doubt.
#
# An entry ``fast/<h1>/<h2>`` is four lines: `FAST_MAGIC`, ``unchanged`` (run
# ptxas on the user's file) or the absolute path of the rewritten PTX (kept
# as ``fast/ptx/<sha256 of the text>.ptx``), the value of
# PTXASW_VISITED_PTXAS for ptxas (the loop guard), and ``end`` (a torn entry
# cannot pass for a whole one).

FAST_FORMAT = 1
FAST_MAGIC = f"ptxasw-fast-{FAST_FORMAT}"
FAST_DIR = "fast"

#: Settings whose raw values are part of a fast entry's key: every setting of
#: the drop-in that can change what it does for a given command line, except
#: those in `FAST_SKIP_ENV`. A new one must be added here (the protocol
#: changes with this list, so older shadow scripts stop being served).
FAST_KEYED_ENV = (
    "PTXASW_CACHE_DIR",
    "PTXASW_MAX_DELTA",
    "PTXASW_MODE",
    "PTXASW_PROFIT",
    "PTXASW_SYNTH",
    "PTXASW_TIMEOUT",
    "PTXASW_TUNE_DIR",
    "PTXASW_UNSAFE",
)

#: Settings that, when non-empty, send every invocation to Python: a log
#: record to write, the wrapper disabled, a custom pipeline, or a nested run.
FAST_SKIP_ENV = ("PTXASW_DISABLE", "PTXASW_LOG", "PTXASW_PIPELINE", "PTXASW_VISITED_PTXAS")

#: ``directory_setting``'s words for "none", as sh case patterns.
OFF_PATTERNS = "[Oo][Ff][Ff] | 0 | [Nn][Oo][Nn][Ee] | [Ff][Aa][Ll][Ss][Ee]"


def package_root() -> Path:
    """The folder of the ptxasw package this process runs."""
    import ptxasw

    return Path(ptxasw.__file__).resolve().parent


def package_files(root: Path) -> list[str]:
    """What of the package (relative to its folder) the script stats: every .py
    and .lark file, and every folder (a file added or removed changes its
    folder's times). A fixed list, not globs (which cost dash more than the
    `stat` itself); the protocol includes it, so a package whose files are no
    longer these gets no entries from an older script."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        rel = Path(dirpath).relative_to(root)
        found.append(str(rel))
        found += [str(rel / f) for f in sorted(filenames) if f.endswith((".py", ".lark"))]
    return found


def fast_protocol(root: Path | None = None) -> str:
    """What a shadow script and this package must agree on to share fast entries:
    the entry format, the keyed and skipping settings, the package folder and
    what of it is stat'ed. Written into the script; a script made by another
    version or for another installation is not served entries. ``root``: a
    package folder (default: the running one, worked out once per process)."""
    return _running_protocol() if root is None else _protocol_of(root)


@cache
def _running_protocol() -> str:
    return _protocol_of(package_root())


def _protocol_of(root: Path) -> str:
    text = ";".join([FAST_MAGIC, *FAST_KEYED_ENV, "|", *FAST_SKIP_ENV, "|", str(root), *package_files(root)])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:20]


@dataclass(frozen=True)
class FastRequest:
    """What the shadow script computed for this invocation (it missed): the key
    and its reading of the command line and the environment, for Python to
    check before it writes an entry under that key."""

    protocol: str
    h1: str
    h2: str
    input_index: int  # 1-based position of the PTX file in argv
    output_indices: tuple[int, ...]  # 1-based positions of -o values (placeholders in the key)
    arch: str
    cache: Path
    tune: Path | None

    @classmethod
    def parse(cls, payload: str | None) -> FastRequest | None:
        """The script's newline-separated fields; None when absent or malformed."""
        fields = (payload or "").split("\n")
        if len(fields) != 8:
            return None
        protocol, h1, h2, index, outs, arch, cache_path, tune = fields
        hexdigits = set("0123456789abcdef")
        if len(h1) != 64 or len(h2) != 64 or not set(h1 + h2) <= hexdigits or not index.isdigit():
            return None
        if not all(o.isdigit() for o in outs.split()) or not cache_path.startswith("/"):
            return None
        return cls(
            protocol,
            h1,
            h2,
            int(index),
            tuple(int(o) for o in outs.split()),
            arch,
            Path(cache_path),
            Path(tune) if tune else None,
        )

    def agrees(self, env: Mapping[str, str] | None = None) -> bool:
        """Whether this process would read the same protocol, cache and verdict folders."""
        from ptxasw.driver.tuning import tune_dir

        env = os.environ if env is None else env
        if self.protocol != fast_protocol() or any(env.get(v) for v in FAST_SKIP_ENV):
            return False
        return self.cache == cache_dir(env) and self.tune == tune_dir(env)


def write_fast_entry(request: FastRequest, data: bytes, text: str | None, visited: str) -> bool:
    """Record that the PTX ``data`` (``h2``) under ``h1`` assembles as ``text``
    (None: the user's file as it is); False when it was not written (the
    request does not hold for ``data``, or the cache is not writable)."""
    if hashlib.sha256(data).hexdigest() != request.h2 or "\n" in visited:
        return False
    fast = request.cache / FAST_DIR
    what = "unchanged"
    if text is not None:
        payload = text.encode("utf-8", "surrogateescape")
        copy = fast / "ptx" / f"{hashlib.sha256(payload).hexdigest()}.ptx"
        if not _write_atomic(copy, payload, keep_same_size=True):
            return False
        what = str(copy)
    entry = f"{FAST_MAGIC}\n{what}\n{visited}\nend\n".encode("utf-8", "surrogateescape")
    return _write_atomic(fast / request.h1 / request.h2, entry)


def _write_atomic(path: Path, data: bytes, *, keep_same_size: bool = False) -> bool:
    """Write ``data`` to ``path`` through a temporary file and a rename; False on OSError.
    ``keep_same_size``: a content-addressed file already there with the right size stays."""
    try:
        if keep_same_size and path.stat().st_size == len(data):
            return True
    except OSError:
        pass
    try:
        replace_atomically(path, data)
    except OSError:
        return False
    return True
