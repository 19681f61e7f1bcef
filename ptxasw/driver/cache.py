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

``PTXASW_CACHE_SIZE`` bounds it (default 1G, `ptxasw.driver.settings.cache_size`):
now and then a write trims the cache below the limit, least recently used
results first (see "Trimming" below); ``ptxasw cache`` shows, trims or clears
it. The verdicts of ``ptxasw tune`` in ``tune/`` are user data, not cache:
never counted, never trimmed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_CACHE_DIR",
    "FAST_ANY_INPUT",
    "FAST_KEYED_ENV",
    "FAST_MAGIC",
    "FAST_SKIP_ENV",
    "CacheStats",
    "CachedResult",
    "FastRequest",
    "ResultCache",
    "TrimReport",
    "cache_dir",
    "cache_stats",
    "clear_cache",
    "default_cache_dir",
    "directory_setting",
    "fast_protocol",
    "maybe_trim",
    "package_files",
    "replace_atomically",
    "trim_cache",
    "write_any_input_entry",
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
    """Entries by key in one directory (two-character fan-out). ``limit``: the
    size `put` keeps the directory under (`maybe_trim`; 0: no limit)."""

    def __init__(self, directory: Path, limit: int = 0) -> None:
        self.directory = directory
        self.limit = limit

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
        """The entry, or None. A hit refreshes the entry's time: trimming goes
        by it, least recently used first."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8", errors="surrogateescape"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        text = data.get("text")
        passes = data.get("passes")
        if (text is not None and not isinstance(text, str)) or not isinstance(passes, list):
            return None
        with contextlib.suppress(OSError):  # a read-only cache still serves
            os.utime(path)
        return CachedResult(text, passes)

    def put(self, key: str, result: CachedResult) -> bool:
        """Store ``result`` atomically; False when the directory is not writable."""
        path = self._path(key)
        payload = json.dumps({"format": _FORMAT, "text": result.text, "passes": result.passes})
        data = payload.encode("utf-8", "surrogateescape")
        if not _write_atomic(path, data):
            return False
        maybe_trim(self.directory, len(data), self.limit)
        return True


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
#: The folder of rewritten copies under `FAST_DIR`.
COPIES_DIR = "ptx"
#: The name of an entry under ``fast/<h1>/`` that holds for any PTX file
#: (``unchanged``): written when the pipeline could change nothing whatever
#: the text (`ptxasw.driver.settings.nothing_to_do`), so one Python run per
#: command line serves every file a build compiles with it. Not a hex digest,
#: so it never meets an ``h2``.
FAST_ANY_INPUT = "any-input"

#: Settings whose raw values are part of a fast entry's key: every setting of
#: the drop-in that can change what it does for a given command line, except
#: those in `FAST_SKIP_ENV`. A new one must be added here (the protocol
#: changes with this list, so older shadow scripts stop being served).
#: ``PTXASW_CACHE_SIZE`` changes no output, but a bad value is warned about,
#: which a hit would not repeat: keyed, a run under a new value goes to Python
#: once (which records no entry while it warns, as for every setting).
FAST_KEYED_ENV = (
    "PTXASW_CACHE_DIR",
    "PTXASW_CACHE_SIZE",
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
    try:
        request.cache.mkdir(parents=True, exist_ok=True)
        # Shared with other writers; excludes a trim's collection of copies (see "Trimming").
        with _flock(request.cache / FAST_LOCK, fcntl.LOCK_SH) as held:
            written = _write_fast_entry_locked(request, text, visited) if held else None
    except OSError:
        return False
    if written is None:
        return False
    from ptxasw.driver.settings import cache_size

    maybe_trim(request.cache, written, cache_size())
    return True


def _write_fast_entry_locked(request: FastRequest, text: str | None, visited: str) -> int | None:
    """`write_fast_entry`'s writes: the bytes written, or None when they failed."""
    fast = request.cache / FAST_DIR
    path = fast / request.h1 / request.h2
    # A script may have read the entry this one replaces and be about to run
    # ptxas on the copy it names: that copy starts its grace period again.
    _touch_copy(fast, _named_copy(path))
    what, written = "unchanged", 0
    if text is not None:
        payload = text.encode("utf-8", "surrogateescape")
        copy = fast / COPIES_DIR / f"{hashlib.sha256(payload).hexdigest()}.ptx"
        if not _write_atomic(copy, payload, keep_same_size=True):
            return None
        what, written = str(copy), len(payload)
    entry = _entry_bytes(what, visited)
    return written + len(entry) if _write_atomic(path, entry) else None


def write_any_input_entry(request: FastRequest, visited: str) -> bool:
    """Record that every PTX file under ``h1`` assembles as it is (see
    `FAST_ANY_INPUT`); False when it was not written."""
    if "\n" in visited:
        return False
    path = request.cache / FAST_DIR / request.h1 / FAST_ANY_INPUT
    return _write_atomic(path, _entry_bytes("unchanged", visited))


def _entry_bytes(what: str, visited: str) -> bytes:
    """A fast entry's four lines (the format above): what to assemble, the loop guard."""
    return f"{FAST_MAGIC}\n{what}\n{visited}\nend\n".encode("utf-8", "surrogateescape")


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


# --------------------------------------------------------------------------
# Trimming: the cache stays under PTXASW_CACHE_SIZE
#
# What counts is what the cache holds on disk: result entries, fast entries,
# rewritten copies and temporary files left by killed writers. The verdicts
# of ``ptxasw tune`` (``tune/``) are measurements, not cache: never counted,
# never trimmed; only `clear_cache` with ``verdicts`` removes them. A trim
# touches nothing but files of these exact shapes (hex names in their
# folders), so a cache directory pointed at a busy folder loses nothing else.
#
# What goes, until the cache is at `TRIM_TO` of the limit: first garbage
# (temporary files, and copies no entry names, older than `GRACE_SECONDS`),
# then result entries least recently used first (`ResultCache.get` refreshes
# an entry's time on a hit), then fast entries oldest first. Losing either
# costs one run through Python, which writes the entry again.
#
# Copies must never go while a build may still run ptxas on them. The shell
# script of a shadow toolkit reads an entry, checks that the copy it names
# exists, and execs ptxas on that path: between the read and ptxas opening the
# file there is no lock, only a few milliseconds. So a copy is removed only
# when no entry names it AND its time is older than `GRACE_SECONDS` (ten
# minutes: far beyond that window), and whatever stops an entry naming a copy
# first sets the copy's time to now: a trim removing the entry, `clear_cache`,
# a writer replacing it. A script that read the entry just before has long
# exec'd ptxas, which has the file open, before the copy can go. Writers of
# fast entries hold a shared lock (`FAST_LOCK`) while they write a copy and the
# entry naming it; a trim collects copies holding it exclusively, so it never
# sees a copy that a half-written entry is about to name. A trim that cannot
# get it soon leaves the copies for the next one; a writer that cannot get it
# writes no entry (a fast entry is an optimisation).
#
# When: after a write, with a probability of the bytes written over
# `TRIM_EVERY` of the limit. On average a trim follows every 5 % of the limit
# written, so the cache overshoots the limit by about that much, and the walk
# a trim costs (a stat per file) is paid once per as many writes as the cache
# holds files over 20: about 20 stats per write, and none at all on most
# invocations. No counter or stamp file is shared between builds (nothing to
# contend on or to lose when a build is killed), and a burst of writes is
# trimmed as soon as it is written, which a once-an-hour stamp would not do.
# Trims of concurrent builds are serialised by a lock (`TRIM_LOCK`) taken
# without waiting: a build that finds it taken does not trim.

#: Where a trim brings a cache that is over its limit (a fraction of it).
TRIM_TO = 0.9
#: On average a trim follows every this fraction of the limit written.
TRIM_EVERY = 0.05
#: How long a copy no entry names is kept after it was last touched (seconds).
GRACE_SECONDS = 600.0
#: Lock files in the cache directory: one trim at a time; copy writers against copy collection.
TRIM_LOCK = ".trim-lock"
FAST_LOCK = ".fast-lock"
_TEMP_PREFIX = ".tmp-"
_HEX = frozenset("0123456789abcdef")
_BLOCK = 4096


@dataclass
class TrimReport:
    """What a trim or a clear did (sizes in bytes on disk)."""

    size_before: int = 0
    size_after: int = 0
    limit: int = 0
    results: int = 0
    fast_entries: int = 0
    copies: int = 0
    temporaries: int = 0
    verdicts: int = 0
    freed: int = 0
    #: copies no entry names that stay until their grace period is over, and their size
    waiting: int = 0
    waiting_size: int = 0
    #: another process was trimming: nothing was done
    skipped: bool = False
    #: "path: reason" for each file that could not be removed
    failed: list[str] = field(default_factory=list)


@dataclass
class CacheStats:
    """What a cache directory holds (sizes in bytes on disk)."""

    directory: str
    size: int
    limit: int
    results: int
    fast_entries: int
    copies: int
    temporaries: int
    verdicts: int
    verdicts_directory: str | None
    #: what else the folder holds (other tools' files: the lifter's compiled
    #: kernels, the parser's tables): never counted, trimmed or cleared here
    other: int = 0
    other_names: list[str] = field(default_factory=list)


@dataclass
class _File:
    path: Path
    size: int
    mtime: float


@dataclass
class _Inventory:
    results: list[_File] = field(default_factory=list)
    fast: list[_File] = field(default_factory=list)
    copies: list[_File] = field(default_factory=list)
    temporaries: list[_File] = field(default_factory=list)

    def size(self) -> int:
        groups = (self.results, self.fast, self.copies, self.temporaries)
        return sum(f.size for group in groups for f in group)


def maybe_trim(
    directory: Path, written: int, limit: int, chance: Callable[[], float] = random.random
) -> None:
    """After ``written`` bytes went into the cache, trim it now and then (the
    rule is in the comment above; ``written`` counts in whole disk blocks).
    Never raises: the drop-in is fail-open, and a cache it cannot trim is
    skipped without a word."""
    on_disk = -(-max(written, 1) // _BLOCK) * _BLOCK
    if limit <= 0 or chance() * TRIM_EVERY * limit >= on_disk:
        return
    try:
        trim_cache(directory, limit)
    except Exception:  # trimming is housekeeping: never let it fail a build
        return


def trim_cache(directory: Path, limit: int) -> TrimReport:
    """Remove garbage, and bring a cache over ``limit`` bytes (0: no limit) to
    `TRIM_TO` of it. ``skipped`` when another process is trimming. Raises
    OSError when the directory's lock cannot be made (not writable)."""
    return _trim(directory, limit, everything=False)


def clear_cache(directory: Path, verdicts: Path | None = None) -> TrimReport:
    """Remove every entry; copies that an entry named until now stay for
    their grace period (a build may be about to use them). ``verdicts``: also
    remove the ``ptxasw tune`` verdicts in that folder."""
    report = _trim(directory, 0, everything=True)
    if verdicts is not None and not report.skipped:
        for f in _verdict_files(verdicts):
            report.verdicts += _remove(f, report) > 0
        for arch in _listing(verdicts):
            with contextlib.suppress(OSError):
                os.rmdir(arch.path)
    return report


def cache_stats(directory: Path, limit: int, verdicts: Path | None) -> CacheStats:
    """Counts and size of the cache in ``directory`` (an absent one is empty)."""
    inv = _inventory(directory)
    return CacheStats(
        str(directory),
        inv.size(),
        limit,
        len(inv.results),
        len(inv.fast),
        len(inv.copies),
        len(inv.temporaries),
        len(_verdict_files(verdicts)) if verdicts is not None else 0,
        None if verdicts is None else str(verdicts),
        *_others(directory),
    )


def _others(directory: Path) -> tuple[int, list[str]]:
    """Bytes on disk and names of what the folder holds besides the cache, its
    locks and ``tune/`` (folders are summed whole, links not followed)."""
    total, names = 0, []
    for top in _listing(directory):
        name = top.name
        ours = (_is_hex(name, 2) or name == FAST_DIR) and top.is_dir(follow_symlinks=False)
        if ours or name in ("tune", TRIM_LOCK, FAST_LOCK):
            continue
        folder = top.is_dir(follow_symlinks=False)
        names.append(name + ("/" if folder else ""))
        for path in [Path(top.path), *(Path(top.path).rglob("*") if folder else [])]:
            with contextlib.suppress(OSError):
                st = path.lstat()
                if stat.S_ISREG(st.st_mode):
                    total += st.st_blocks * 512
    return total, sorted(names)


def _trim(directory: Path, limit: int, *, everything: bool) -> TrimReport:
    report = TrimReport(limit=limit)
    if not directory.is_dir():
        return report
    with _flock(directory / TRIM_LOCK, fcntl.LOCK_EX) as held:
        if not held:
            report.skipped = True
            return report
        inv = _inventory(directory)
        report.size_before = size = inv.size()
        stale = time.time() - GRACE_SECONDS
        for f in inv.temporaries:
            if f.mtime < stale:
                size -= _remove(f, report)
                report.temporaries += 1
        size -= _collect_copies(directory, report)
        if everything or (limit > 0 and size > limit):
            size = _evict(directory, inv, size, 0 if everything else int(limit * TRIM_TO), report)
        report.size_after = size
    return report


def _evict(directory: Path, inv: _Inventory, size: int, target: int, report: TrimReport) -> int:
    """Remove results (least recently used first), then fast entries (oldest
    first), until the cache is at ``target`` once the copies no longer named
    are gone; the size left now."""
    for f in sorted(inv.results, key=lambda f: f.mtime):
        if size - report.waiting_size <= target:
            return size
        freed = _remove(f, report)
        report.results += freed > 0
        size -= freed
    fast = directory / FAST_DIR
    copy_sizes = {f.path.name: f.size for f in inv.copies}
    named = Counter(_named_copy(f.path) for f in inv.fast)
    for f in sorted(inv.fast, key=lambda f: f.mtime):
        if size - report.waiting_size <= target:
            break
        copy = _named_copy(f.path)
        _touch_copy(fast, copy)  # first: see "Copies must never go..." above
        freed = _remove(f, report)
        report.fast_entries += freed > 0
        size -= freed
        named[copy] -= 1
        if copy is not None and named[copy] == 0 and copy in copy_sizes:
            report.waiting += 1
            report.waiting_size += copy_sizes[copy]
        # An emptied fast/<h1>/ goes (a writer that loses that race writes no entry).
        with contextlib.suppress(OSError):
            os.rmdir(f.path.parent)
    return size


def _collect_copies(directory: Path, report: TrimReport) -> int:
    """Remove the copies no entry names whose grace period is over; the bytes freed.
    Counts those still in their grace period in ``report.waiting``."""
    fast = directory / FAST_DIR
    if not (fast / COPIES_DIR).is_dir():
        return 0
    freed = 0
    with _flock(directory / FAST_LOCK, fcntl.LOCK_EX, tries=20) as held:
        if not held:
            return 0  # writers are busy: the copies wait for the next trim
        named = {_named_copy(Path(e.path)) for h1 in _fast_folders(fast) for e in _listing(h1)}
        stale = time.time() - GRACE_SECONDS
        for entry in _listing(fast / COPIES_DIR):
            f = _regular(entry) if _is_copy_name(entry.name) and entry.name not in named else None
            if f is None:
                continue
            if f.mtime >= stale:  # no writer can touch it between this stat and the unlink: we hold the lock
                report.waiting += 1
                report.waiting_size += f.size
                continue
            removed = _remove(f, report)
            report.copies += removed > 0
            freed += removed
    return freed


def _inventory(directory: Path) -> _Inventory:
    """Every file of the cache in ``directory``, by kind (tune/ is not looked at)."""
    inv = _Inventory()
    for top in _listing(directory):
        if _is_hex(top.name, 2) and top.is_dir(follow_symlinks=False):
            for entry in _listing(Path(top.path)):
                _sort_into(inv, entry, inv.results if _is_result_name(entry.name) else None)
        elif top.name == FAST_DIR and top.is_dir(follow_symlinks=False):
            fast = Path(top.path)
            for entry in _listing(fast / COPIES_DIR):
                _sort_into(inv, entry, inv.copies if _is_copy_name(entry.name) else None)
            for h1 in _fast_folders(fast):
                for entry in _listing(h1):
                    _sort_into(inv, entry, inv.fast)
    return inv


def _sort_into(inv: _Inventory, entry: os.DirEntry[str], kind: list[_File] | None) -> None:
    """File ``entry`` under ``kind``, or under temporaries when it is one; other files are not ours."""
    if entry.name.startswith(_TEMP_PREFIX):
        kind = inv.temporaries
    f = _regular(entry) if kind is not None else None
    if f is not None and kind is not None:
        kind.append(f)


def _fast_folders(fast: Path) -> list[Path]:
    """The ``fast/<h1>/`` folders."""
    return [Path(e.path) for e in _listing(fast) if _is_hex(e.name, 64) and e.is_dir(follow_symlinks=False)]


def _verdict_files(tune: Path | None) -> list[_File]:
    """The verdicts (and temporary files) under ``tune/<arch>/``."""
    found: list[_File] = []
    for arch in _listing(tune) if tune is not None else []:
        if arch.is_dir(follow_symlinks=False):
            for entry in _listing(Path(arch.path)):
                ours = entry.name.endswith(".json") or entry.name.startswith(_TEMP_PREFIX)
                f = _regular(entry) if ours else None
                if f is not None:
                    found.append(f)
    return found


def _named_copy(entry: Path) -> str | None:
    """The file name of the copy a fast entry names, or None (``unchanged``, unreadable)."""
    try:
        with open(entry, encoding="utf-8", errors="surrogateescape") as f:
            f.readline()
            what = f.readline().rstrip("\n")
    except OSError:
        return None
    return os.path.basename(what) if what.startswith("/") else None


def _touch_copy(fast: Path, name: str | None) -> None:
    """Restart the grace period of copy ``name`` (see the comment above)."""
    if name is not None and _is_copy_name(name):
        with contextlib.suppress(OSError):
            os.utime(fast / COPIES_DIR / name)


def _remove(f: _File, report: TrimReport) -> int:
    """Unlink ``f``; the bytes freed (0 when it was gone already or could not go)."""
    try:
        os.unlink(f.path)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        report.failed.append(f"{f.path}: {exc.strerror or exc}")
        return 0
    report.freed += f.size
    return f.size


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; none when it is absent or unreadable."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def _regular(entry: os.DirEntry[str]) -> _File | None:
    """A regular file's size on disk and time; None for anything else or a file that went."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return _File(Path(entry.path), max(st.st_size, getattr(st, "st_blocks", 0) * 512), st.st_mtime)


def _is_hex(name: str, length: int) -> bool:
    return len(name) == length and set(name) <= _HEX


def _is_result_name(name: str) -> bool:
    return name.endswith(".json") and _is_hex(name[:-5], 62)


def _is_copy_name(name: str) -> bool:
    return name.endswith(".ptx") and _is_hex(name[:-4], 64)


@contextlib.contextmanager
def _flock(path: Path, mode: int, tries: int = 1) -> Iterator[bool]:
    """Try to hold ``flock`` ``mode`` on ``path`` (made when missing) without
    waiting, ``tries`` times 5 ms apart; yields whether it is held. Raises
    OSError when the file cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        held = False
        for attempt in range(tries):
            if attempt:
                time.sleep(0.005)
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            held = True
            break
        yield held
    finally:
        os.close(fd)  # releases the lock
