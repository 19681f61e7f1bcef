"""Tests of the result cache's size limit: trimming, the ``ptxasw cache`` command,
and builds through the drop-in around them (`ptxasw.driver.cache`, "Trimming").

What matters: the limit holds, recently used entries outlive old ones, the
verdicts of ``ptxasw tune`` are never trimmed, and no rewritten copy that a
shadow script may be about to assemble ever disappears, even with several
builds trimming at once. Times are set with os.utime, never waited for.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptxasw.driver import settings
from ptxasw.driver.cache import (
    FAST_LOCK,
    GRACE_SECONDS,
    TRIM_TO,
    CachedResult,
    FastRequest,
    ResultCache,
    cache_stats,
    clear_cache,
    maybe_trim,
    trim_cache,
    write_fast_entry,
)
from tests.test_driver_fastpath import JACOBI, Shadow, copy_package, make_shadow, warm
from tests.test_wrapper import MINI_PTX

REPO = Path(__file__).resolve().parent.parent
KiB = 1024
OLD = GRACE_SECONDS + 60  # seconds: older than the grace period


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package for the shadow script (the checkout changes under other edits)."""
    return copy_package(tmp_path_factory.mktemp("site"))


@pytest.fixture
def shadow(tmp_path: Path, site: Path) -> Shadow:
    """A shadow toolkit's bin/ptxas over a fake ptxas (tests/test_driver_fastpath.py)."""
    return make_shadow(tmp_path, site)


def source(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "src" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def no_size_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set the limit themselves (write_fast_entry reads it from the environment)."""
    monkeypatch.setenv("PTXASW_CACHE_SIZE", "0")


def put(store: ResultCache, name: str, size: int = 3000) -> Path:
    """A result entry of about ``size`` bytes; its path."""
    key = store.key(name, {})
    assert store.put(key, CachedResult(name * (size // len(name)), []))
    return store.directory / key[:2] / f"{key[2:]}.json"


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def fast_entry(cache: Path, text: str | None, h1: str = "a" * 64, data: bytes | None = None) -> Path:
    """A fast entry for the PTX ``data`` under ``h1`` assembling ``text``; its path."""
    data = data if data is not None else (text or "unchanged").encode() + os.urandom(8).hex().encode()
    h2 = hashlib.sha256(data).hexdigest()
    req = FastRequest("p", h1, h2, 1, (), "sm_90", cache, None)
    assert write_fast_entry(req, data, text, "/bin/ptxas")
    return cache / "fast" / h1 / h2


def copy_of(text: str, cache: Path) -> Path:
    return cache / "fast" / "ptx" / f"{hashlib.sha256(text.encode()).hexdigest()}.ptx"


def sizes(cache: Path) -> int:
    return cache_stats(cache, 0, None).size


def disk(path: Path) -> int:
    st = path.stat()
    return max(st.st_size, st.st_blocks * 512)


# --------------------------------------------------------------------------
# The limit and what goes first


def test_the_drop_in_keeps_the_limit(tmp_path: Path) -> None:
    """Writing through ResultCache with a 64 KiB limit never lets the cache grow past it.
    (A 4 KiB write is more than 5 % of the limit: every write trims.)"""
    limit = 64 * KiB
    store = ResultCache(tmp_path, limit)
    for i in range(100):
        put(store, f"entry {i} ")
        assert sizes(tmp_path) <= limit
    stats = cache_stats(tmp_path, limit, None)
    assert stats.results > 0 and stats.size <= limit
    # The newest entries are the ones left.
    assert ResultCache(tmp_path).get(store.key("entry 99 ", {})) is not None
    assert ResultCache(tmp_path).get(store.key("entry 0 ", {})) is None


def test_a_trim_goes_below_the_limit_and_leaves_a_cache_under_it_alone(tmp_path: Path) -> None:
    store = ResultCache(tmp_path)
    for i in range(30):
        put(store, f"e{i} ")
    size = sizes(tmp_path)
    report = trim_cache(tmp_path, size)  # exactly at the limit: nothing to do
    assert report.results == 0 and sizes(tmp_path) == size
    report = trim_cache(tmp_path, size // 2)
    assert report.results > 0 and report.size_after == sizes(tmp_path) <= TRIM_TO * size // 2
    assert report.size_before == size and report.freed == size - report.size_after
    assert trim_cache(tmp_path, 0).results == 0  # 0: no limit


def test_trimming_now_and_then(tmp_path: Path) -> None:
    """maybe_trim trims with a probability of the bytes written over 5 % of the limit."""
    store = ResultCache(tmp_path)
    paths = [put(store, f"x{i} ", 30_000) for i in range(10)]
    limit = sizes(tmp_path) // 2
    written = 4 * KiB  # one disk block: a chance of 4 KiB / (5 % of the limit)
    chance = written / (0.05 * limit)
    assert chance < 1
    maybe_trim(tmp_path, written, limit, chance=lambda: chance * 1.01)
    assert all(p.exists() for p in paths)
    maybe_trim(tmp_path, written, 0, chance=lambda: 0.0)  # no limit: never
    assert all(p.exists() for p in paths)
    maybe_trim(tmp_path, written, limit, chance=lambda: chance * 0.99)
    assert sizes(tmp_path) <= limit


def test_recently_hit_entries_survive_and_old_ones_go(tmp_path: Path) -> None:
    store = ResultCache(tmp_path)
    paths = [put(store, f"r{i} ") for i in range(20)]
    for i, p in enumerate(paths):
        age(p, 1000 - i)  # r0 is the oldest
    hits = [0, 1, 2]
    for i in hits:
        assert store.get(store.key(f"r{i} ", {})) is not None  # a hit refreshes the time
    trim_cache(tmp_path, sizes(tmp_path) // 2)
    left = [i for i, p in enumerate(paths) if p.exists()]
    assert set(hits) <= set(left)
    # Everything else that is left is newer than everything that went.
    gone = [i for i in range(20) if i not in left]
    assert gone and min(set(left) - set(hits)) > max(gone)


def test_results_go_before_fast_entries(tmp_path: Path) -> None:
    store = ResultCache(tmp_path)
    results = [put(store, f"f{i} ") for i in range(10)]
    entries = [fast_entry(tmp_path, None, data=f"ptx {i}".encode()) for i in range(10)]
    for p in entries:
        age(p, 5000)  # older than every result: still results go first
    half = sum(disk(p) for p in results) // 2
    report = trim_cache(tmp_path, int((sizes(tmp_path) - half) / TRIM_TO))
    assert report.results > 0 and report.fast_entries == 0
    assert all(p.exists() for p in entries)
    report = trim_cache(tmp_path, 1)
    assert report.fast_entries == 10 and not any(p.exists() for p in results + entries)
    assert not list((tmp_path / "fast").glob("?" * 64))  # emptied fast/<h1>/ folders go too


def test_tune_verdicts_are_never_trimmed(tmp_path: Path) -> None:
    verdicts = tmp_path / "tune" / "sm_90"
    verdicts.mkdir(parents=True)
    for i in range(5):
        v = verdicts / f"{i:064x}.json"
        v.write_text("{}" + " " * 50_000)
        age(v, 10 * OLD)
    # Files shaped like cache entries, inside tune/: still verdicts.
    (tmp_path / "tune" / "ab").mkdir()
    lookalike = tmp_path / "tune" / "ab" / ("c" * 62 + ".json")
    lookalike.write_text("{}")
    store = ResultCache(tmp_path, 8 * KiB)
    for i in range(10):
        put(store, f"t{i} ")
    before = sorted(p for p in (tmp_path / "tune").rglob("*"))
    assert sizes(tmp_path) <= 8 * KiB  # verdicts do not count
    trim_cache(tmp_path, 1)
    clear_cache(tmp_path)
    assert sorted(p for p in (tmp_path / "tune").rglob("*")) == before
    stats = cache_stats(tmp_path, 1, tmp_path / "tune")
    assert stats.results == 0 and stats.verdicts == 6
    report = clear_cache(tmp_path, tmp_path / "tune")  # asked for: they go
    assert report.verdicts == 6 and not list((tmp_path / "tune").rglob("*.json"))


def test_files_that_are_not_the_caches_are_left_alone(tmp_path: Path) -> None:
    """A cache folder shared with other things (the parser's grammar cache, a
    mistaken PTXASW_CACHE_DIR) loses only files shaped like cache entries."""
    others = [
        tmp_path / "ptx-grammar-1.lark-cache",
        tmp_path / "ab" / "notes.txt",
        tmp_path / "ab" / ("d" * 64 + ".json"),
        tmp_path / "fast" / "ptx" / "mine.ptx",
        tmp_path / "pirch" / ("e" * 64 + ".o"),
    ]
    for p in others:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x" * 10_000)
        age(p, 10 * OLD)
    put(ResultCache(tmp_path), "gone ")
    clear_cache(tmp_path, tmp_path / "tune")
    assert all(p.exists() for p in others) and cache_stats(tmp_path, 0, None).results == 0


# --------------------------------------------------------------------------
# Rewritten copies


def test_a_copy_named_by_an_entry_is_never_removed(tmp_path: Path) -> None:
    text = "// rewritten\n" * 1000
    entry = fast_entry(tmp_path, text)
    copy = copy_of(text, tmp_path)
    age(copy, 10 * OLD)
    age(entry, 10 * OLD)  # older than everything else, and its copy too
    store = ResultCache(tmp_path)
    for i in range(5):
        put(store, f"c{i} ")
    for limit in (1 << 30, sizes(tmp_path) - 1):  # garbage collection alone; results going
        report = trim_cache(tmp_path, limit)
        assert entry.exists() and copy.exists() and report.copies == 0
    assert report.results > 0 and copy.stat().st_mtime < time.time() - OLD


def test_removing_an_entry_restarts_its_copys_grace_period(tmp_path: Path) -> None:
    text = "// rewritten\n" * 1000
    entry = fast_entry(tmp_path, text)
    copy = copy_of(text, tmp_path)
    age(copy, 10 * OLD)
    report = trim_cache(tmp_path, 1)
    assert not entry.exists() and copy.exists()  # the entry went; a script may have just read it
    assert copy.stat().st_mtime > time.time() - 60
    assert report.waiting == 1 and report.copies == 0
    # The next trim within the grace period keeps it; after it, the copy goes.
    assert trim_cache(tmp_path, 1).copies == 0 and copy.exists()
    age(copy, OLD)
    assert trim_cache(tmp_path, 1).copies == 1 and not copy.exists()


def test_an_orphaned_copy_goes_only_after_the_grace_period(tmp_path: Path) -> None:
    text = "orphan\n" * 500
    copy = copy_of(text, tmp_path)
    copy.parent.mkdir(parents=True)
    copy.write_text(text)  # as a writer that was killed before it wrote the entry
    temp = copy.parent / ".tmp-dead"
    temp.write_text("half")
    limit = 1 << 30  # far under the limit: garbage still goes
    report = trim_cache(tmp_path, limit)
    assert copy.exists() and temp.exists() and report.waiting == 1
    age(copy, GRACE_SECONDS - 60)
    age(temp, GRACE_SECONDS - 60)
    assert trim_cache(tmp_path, limit).copies == 0 and copy.exists() and temp.exists()
    age(copy, OLD)
    age(temp, OLD)
    report = trim_cache(tmp_path, limit)
    assert report.copies == 1 and report.temporaries == 1 and not copy.exists() and not temp.exists()


def test_a_replaced_entry_restarts_its_old_copys_grace_period(tmp_path: Path) -> None:
    data = b"the same ptx"
    first = fast_entry(tmp_path, "first\n" * 100, data=data)
    old = copy_of("first\n" * 100, tmp_path)
    age(old, 10 * OLD)
    assert fast_entry(tmp_path, "second\n" * 100, data=data) == first  # same key, another rewrite
    assert old.stat().st_mtime > time.time() - 60
    assert trim_cache(tmp_path, 1 << 30).copies == 0 and old.exists()


@contextlib.contextmanager
def fast_lock(cache: Path, mode: int) -> Iterator[None]:
    """Hold the copy lock as a writer (shared) or a trim (exclusive) would."""
    with open(cache / FAST_LOCK, "a") as f:
        fcntl.flock(f, mode)
        yield


def test_copies_stay_while_a_writer_may_be_naming_them(tmp_path: Path) -> None:
    """A writer between its copy and its entry holds the lock shared: a trim then
    collects no copy (it could be the one the entry is about to name)."""
    text = "keep me\n" * 100
    entry = fast_entry(tmp_path, text)
    copy = copy_of(text, tmp_path)
    entry.unlink()  # as if the entry were not written yet
    age(copy, 10 * OLD)
    with fast_lock(tmp_path, fcntl.LOCK_SH):
        assert trim_cache(tmp_path, 1 << 30).copies == 0 and copy.exists()
    assert trim_cache(tmp_path, 1 << 30).copies == 1 and not copy.exists()


def test_a_writer_writes_nothing_while_copies_are_collected(tmp_path: Path) -> None:
    data = b"some ptx"
    request = FastRequest("p", "b" * 64, hashlib.sha256(data).hexdigest(), 1, (), "sm_90", tmp_path, None)
    tmp_path.joinpath(FAST_LOCK).touch()
    with fast_lock(tmp_path, fcntl.LOCK_EX):
        assert not write_fast_entry(request, data, "text\n", "/x")
    assert not (tmp_path / "fast").exists()
    assert write_fast_entry(request, data, "text\n", "/x")


# --------------------------------------------------------------------------
# Several builds at once


def _writer(cache: str, seed: int, rounds: int, texts: list[str]) -> None:
    """A build: results and fast entries (naming copies the cache may already hold), and trims."""
    store = ResultCache(Path(cache), 64 * KiB)
    for i in range(rounds):
        put(store, f"w{seed}-{i} ", 2000)
        text = texts[(seed + i) % len(texts)]
        data = f"ptx {seed} {i}".encode()
        h2 = hashlib.sha256(data).hexdigest()
        request = FastRequest("p", f"{seed % 3:064x}", h2, 1, (), "sm_90", Path(cache), None)
        write_fast_entry(request, data, text, "/x")
        if i % 7 == 0:
            trim_cache(Path(cache), 64 * KiB)


def _reader(cache: str, rounds: int) -> None:
    """A shadow script: every entry it reads names a copy that is there."""
    fast = Path(cache) / "fast"
    for _ in range(rounds):
        for entry in _fast_entries(fast):
            try:
                lines = entry.read_text().splitlines()
            except OSError:
                continue  # trimmed between the listing and the read
            if len(lines) == 4 and lines[1].startswith("/"):
                assert Path(lines[1]).is_file(), f"{entry} names {lines[1]}, which is gone"


def _fast_entries(fast: Path) -> list[Path]:
    """The entries under ``fast/``, while trims remove them and their folders."""
    found = []
    for h1 in os.listdir(fast) if fast.is_dir() else []:
        if h1 != "ptx":
            with contextlib.suppress(OSError):
                found += [fast / h1 / h2 for h2 in os.listdir(fast / h1)]
    return found


def test_concurrent_builds_and_trims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three writers (each trimming now and then, and on their writes) and a reader
    at once, over copies that are old and unnamed when they start: no crash, no
    torn entry, and no entry ever names a missing copy."""
    monkeypatch.setenv("PTXASW_CACHE_SIZE", "64K")  # write_fast_entry's trims
    cache = tmp_path / "cache"
    texts = [f"// rewrite {k}\n" * 300 for k in range(6)]
    for t in texts:
        copy = copy_of(t, cache)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(t)
        age(copy, 10 * OLD)  # garbage a trim may collect, until a writer names it again
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(cache), s, 120, texts)) for s in range(3)]
    procs.append(ctx.Process(target=_reader, args=(str(cache), 200)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    _reader(str(cache), 1)
    for result in cache.glob("??/*.json"):
        assert json.loads(result.read_text())["format"] == 1  # whole, never torn
    assert not list(cache.rglob(".tmp-*"))
    # Untrimmed, 360 results and 360 fast entries would take about 3 MB.
    assert sizes(cache) < 4 * 64 * KiB


# --------------------------------------------------------------------------
# The drop-in: fail-open around trimming


def test_a_build_succeeds_after_its_entries_were_trimmed(shadow: Shadow, tmp_path: Path) -> None:
    jacobi = source(tmp_path, "jacobi.ptx", JACOBI.read_text())
    out = tmp_path / "out.cubin"
    _, second = warm(shadow, "-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    rewritten = out.read_text()
    copy = Path(second.argv[2])
    age(copy, 10 * OLD)
    report = trim_cache(shadow.cache, 1)  # every result and fast entry goes
    assert report.results == 1 and report.fast_entries == 1 and copy.exists()
    assert shadow.entries() == [] and cache_stats(shadow.cache, 0, None).results == 0
    out.unlink()
    again = shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    assert again.rc == 0 and not again.fast and again.stderr == ""
    assert out.read_text() == rewritten
    # The copy outlived its grace period and went: Python writes it again, then hits resume.
    trim_cache(shadow.cache, 1)
    age(copy, OLD)
    assert trim_cache(shadow.cache, 1 << 30).copies == 1 and not copy.exists()
    assert not shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always").fast
    assert copy.exists()
    hit = shadow.run("-arch", "sm_90", jacobi, "-o", out, PTXASW_PROFIT="always")
    assert hit.fast and out.read_text() == rewritten


def test_builds_under_a_tiny_limit_trim_as_they_go(shadow: Shadow, tmp_path: Path) -> None:
    """Every write of a build under a 1 KiB limit trims: each file still assembles right."""
    src = tmp_path / "many"
    src.mkdir()
    for i in range(4):
        ptx = src / f"k{i}.ptx"
        ptx.write_text(MINI_PTX.replace("copy_one", f"copy_{i}"))
        call = shadow.run(
            "-arch", "sm_90", ptx, "-o", src / f"k{i}.out", PTXASW_PROFIT="always", PTXASW_CACHE_SIZE="1K"
        )
        assert call.rc == 0 and call.stderr == "" and (src / f"k{i}.out").read_text() == ptx.read_text()
    assert cache_stats(shadow.cache, 0, None).results <= 1


def read_only(folder: Path) -> list[Path]:
    """Make ``folder`` and everything in it unwritable, even for root (chattr +i);
    the paths changed. Skips the test when that cannot be done."""
    paths = [folder, *folder.rglob("*")]
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "-R", "+i", str(folder)], capture_output=True).returncode == 0
    else:
        for p in paths:
            p.chmod(p.stat().st_mode & 0o555)
        done = True
    probe = folder / "probe"
    try:
        probe.write_text("")
    except OSError:
        return paths
    probe.unlink()
    writable(folder, paths)
    pytest.skip("cannot make a folder read-only here" if done else "chattr failed")


def writable(folder: Path, paths: list[Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-R", "-i", str(folder)], capture_output=True)
    else:
        for p in paths:
            p.chmod(p.stat().st_mode | 0o200)


def test_a_read_only_cache_is_skipped_without_a_word(shadow: Shadow, tmp_path: Path) -> None:
    mini = source(tmp_path, "mini.ptx", MINI_PTX)
    out = tmp_path / "out.cubin"
    warm(shadow, "-arch", "sm_90", mini, "-o", out, PTXASW_PROFIT="always")
    (shadow.cache / "fast" / "ptx").mkdir(exist_ok=True)
    orphan = shadow.cache / "fast" / "ptx" / ("f" * 64 + ".ptx")
    orphan.write_text("old")
    age(orphan, 10 * OLD)
    listing = sorted(shadow.cache.rglob("*"))
    paths = read_only(shadow.cache)
    try:
        other = source(tmp_path, "other.ptx", MINI_PTX.replace("copy_one", "copy_other"))
        for ptx in (mini, other):  # a result hit (no time refresh possible) and a miss (no write possible)
            call = shadow.run(
                "-arch", "sm_90", ptx, "-o", out, PTXASW_PROFIT="always", PTXASW_CACHE_SIZE="1K"
            )
            assert call.rc == 0 and call.stderr == "" and out.read_text() == ptx.read_text()
        maybe_trim(shadow.cache, 1 << 20, 1, chance=lambda: 0.0)  # never raises
        assert sorted(shadow.cache.rglob("*")) == listing
        cli = run_cli(shadow.cache, "--trim", PTXASW_CACHE_SIZE="1")
        assert cli.returncode == 1 and cli.stderr.count("\n") == 1 and cli.stderr.startswith("ptxasw: error:")
        assert sorted(shadow.cache.rglob("*")) == listing
    finally:
        writable(shadow.cache, paths)


# --------------------------------------------------------------------------
# PTXASW_CACHE_SIZE


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("", 1 << 30),
        ("0", 0),
        ("4096", 4096),
        ("500M", 500 << 20),
        ("2G", 2 << 30),
        ("2GiB", 2 << 30),
        ("10k", 10 << 10),
        ("1.5G", 3 << 29),
    ],
)
def test_size_values(value: str, size: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert settings.cache_size({"PTXASW_CACHE_SIZE": value}, warn=True) == size
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["lots", "-1", "1X", "G", "nan", "inf", "1e400"])
def test_bad_size_values_warn_once_and_give_the_default(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert settings.cache_size({"PTXASW_CACHE_SIZE": value}, warn=True) == settings.DEFAULT_CACHE_SIZE
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("ptxasw: warning: PTXASW_CACHE_SIZE=")
    assert settings.cache_size({"PTXASW_CACHE_SIZE": value}) == settings.DEFAULT_CACHE_SIZE
    assert capsys.readouterr().err == ""


def test_the_drop_in_warns_once_per_run_about_a_bad_size(shadow: Shadow, tmp_path: Path) -> None:
    mini = source(tmp_path, "mini.ptx", MINI_PTX)
    out = tmp_path / "out.cubin"
    for _ in range(2):  # no fast entry is recorded while it warns: every run says it
        call = shadow.run("-arch", "sm_90", mini, "-o", out, PTXASW_PROFIT="always", PTXASW_CACHE_SIZE="big")
        assert call.rc == 0 and not call.fast and out.read_text() == MINI_PTX
        assert [line for line in call.stderr.splitlines() if "ptxasw" in line] == [
            "ptxasw: warning: PTXASW_CACHE_SIZE='big' is not a size (500M, 2G, 0 for no limit); using 1G"
        ]


# --------------------------------------------------------------------------
# ptxasw cache


def run_cli(cache: Path | str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PTXASW_")}
    full.update({"PTXASW_CACHE_DIR": str(cache), **env})
    return subprocess.run(
        [sys.executable, "-m", "ptxasw", "cache", *args],
        env=full,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def filled(cache: Path) -> None:
    """Four results (two old), three fast entries (one with a copy) and two verdicts."""
    store = ResultCache(cache)
    for i in range(4):
        p = put(store, f"cli{i} ")
        if i < 2:
            age(p, 1000)
    fast_entry(cache, "// a rewrite\n" * 200)
    fast_entry(cache, None)
    fast_entry(cache, None)
    (cache / "tune" / "sm_90").mkdir(parents=True)
    for i in range(2):
        (cache / "tune" / "sm_90" / f"{i:064x}.json").write_text("{}")


def test_cli_stats(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    filled(cache)
    said = run_cli(cache, "--json", PTXASW_CACHE_SIZE="2G")
    assert said.returncode == 0, said.stderr
    stats = json.loads(said.stdout)
    assert stats["directory"] == str(cache) and stats["limit"] == 2 << 30
    assert (stats["results"], stats["fast_entries"], stats["copies"], stats["verdicts"]) == (4, 3, 1, 2)
    assert stats["size"] == sizes(cache) > 0
    text = run_cli(cache)
    assert text.returncode == 0 and text.stderr == ""
    lines = text.stdout.splitlines()
    assert lines[0] == f"directory  {cache}"
    assert lines[1].endswith("of 1.0 GiB (PTXASW_CACHE_SIZE)")
    assert "results    4" in lines and "fast       3 entries, 1 rewritten copies" in lines
    assert lines[-1].startswith("verdicts   2 in ")
    assert run_cli(tmp_path / "absent", "--stats").returncode == 0


def test_cli_stats_shows_other_tools_files_apart(tmp_path: Path) -> None:
    """The lifter's compiled kernels and the parser's tables share the default
    folder: shown, never counted in the size or trimmed."""
    cache = tmp_path / "cache"
    filled(cache)
    size = sizes(cache)
    (cache / "pirch" / "ab").mkdir(parents=True)
    (cache / "pirch" / "ab" / "kernel.so").write_bytes(b"\0" * 100_000)
    (cache / "grammar.lark-cache").write_bytes(b"\0" * 5000)
    stats = json.loads(run_cli(cache, "--json").stdout)
    assert stats["size"] == size and stats["other_names"] == ["grammar.lark-cache", "pirch/"]
    assert stats["other"] >= 105_000
    (line,) = [ln for ln in run_cli(cache).stdout.splitlines() if ln.startswith("other")]
    assert "in grammar.lark-cache, pirch/ (not the drop-in's" in line
    assert run_cli(cache, "--trim", PTXASW_CACHE_SIZE="1").returncode == 0
    assert (cache / "pirch" / "ab" / "kernel.so").stat().st_size == 100_000
    assert (cache / "grammar.lark-cache").exists()


def test_cli_trim(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    filled(cache)
    limit = sizes(cache) - 1
    said = run_cli(cache, "--trim", "--json", PTXASW_CACHE_SIZE=str(limit))
    assert said.returncode == 0, said.stderr
    report = json.loads(said.stdout)
    assert 1 <= report["results"] <= 2 and report["fast_entries"] == 0  # old results were enough
    assert report["size_after"] == sizes(cache) <= TRIM_TO * limit
    left = 4 - report["results"]
    assert cache_stats(cache, 0, None).results == left
    text = run_cli(cache, "--trim", PTXASW_CACHE_SIZE="1")
    assert text.returncode == 0 and text.stderr == ""
    out = text.stdout.splitlines()
    assert out[0].startswith(f"trimmed {cache}: ") and out[0].endswith("(limit 1 B)")
    assert out[1].startswith(f"removed {left} results, 3 fast entries, 0 rewritten copies, 0 temporary files")
    assert out[2].startswith("1 rewritten copies (") and "a build may be using them" in out[2]
    assert len(list((cache / "tune").rglob("*.json"))) == 2


def test_cli_clear(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    filled(cache)
    said = run_cli(cache, "--clear")
    assert said.returncode == 0 and said.stderr == ""
    assert said.stdout.splitlines()[1].startswith("removed 4 results, 3 fast entries")
    stats = cache_stats(cache, 0, cache / "tune")
    assert (stats.results, stats.fast_entries, stats.verdicts) == (0, 0, 2)
    said = run_cli(cache, "--clear", "--tune", "--json")
    assert said.returncode == 0 and json.loads(said.stdout)["verdicts"] == 2
    assert cache_stats(cache, 0, cache / "tune").verdicts == 0


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--tune"], {}, "--tune goes with --clear"),
        (["--trim", "--clear"], {}, "give one of"),
        (["--trim"], {"PTXASW_CACHE_DIR": "off"}, "the result cache is off"),
        (["--stats"], {"PTXASW_CACHE_DIR": "FILE"}, "is not a folder"),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], env: dict[str, str], says: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {k: v.replace("FILE", str(blocker)) for k, v in env.items()}
    said = run_cli(tmp_path / "cache", *args, **env)
    assert said.returncode == 1 and said.stdout == ""
    assert said.stderr.count("\n") == 1 and said.stderr.startswith("ptxasw: error: ") and says in said.stderr


def test_cli_bad_size_warns_once(tmp_path: Path) -> None:
    said = run_cli(tmp_path / "cache", PTXASW_CACHE_SIZE="12Q")
    assert said.returncode == 0 and said.stderr.count("PTXASW_CACHE_SIZE") == 1
    assert "of 1.0 GiB" in said.stdout
