"""The concrete interpreter against NumPy: real nvcc PTX run on the CPU.

Kernels are our own CUDA sources in ``tests/kernels/``, compiled with this
machine's nvcc (``--ptx -arch=sm_80 -O3``) once and cached in pytest's cache
directory, keyed by a hash of the source and the flags. Sizes are odd on
purpose (partial blocks, partial warps, 2D/3D grids that do not divide).
Arithmetic that the GPU rounds exactly is compared bit for bit; hand-written
PTX covers what nvcc rarely emits (``brx.idx``, generic addressing).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ptxasw import ir
from ptxasw.emulator.concrete.interpreter import EmulationError, launch
from ptxasw.errors import PtxError
from ptxasw.parser import parse_ptx

KERNELS = Path(__file__).parent / "kernels"
# The sources these tests use (the folder is shared with other test files).
SOURCES = ("basics", "stencils", "shared", "warp", "atomics", "calls")
NVCC_FLAGS = ["--ptx", "-arch=sm_80", "-O3"]


# --------------------------------------------------------------------------
# Compiling (cached)


def _cache_dir(request: pytest.FixtureRequest, factory: pytest.TempPathFactory) -> Path:
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("ptxasw-kernels"))
    return factory.mktemp("kernels")


@pytest.fixture(scope="session")
def kernels(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ir.Module]:
    """The kernel sources of `SOURCES` as parsed modules (compiled in parallel)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found on PATH: the interpreter tests compile CUDA kernels")
    cache = _cache_dir(request, tmp_path_factory)
    jobs: dict[str, tuple[Path, subprocess.Popen[bytes] | None]] = {}
    for source in (KERNELS / f"{name}.cu" for name in SOURCES):
        key = hashlib.sha256(source.read_bytes() + " ".join(NVCC_FLAGS).encode()).hexdigest()[:16]
        out = cache / f"{source.stem}-{key}.ptx"
        proc = None
        if not out.exists():
            tmp = out.with_suffix(".tmp.ptx")
            proc = subprocess.Popen(
                [nvcc, *NVCC_FLAGS, str(source), "-o", str(tmp)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        jobs[source.stem] = (out, proc)
    modules = {}
    for name, (out, proc) in jobs.items():
        if proc is not None:
            log, _ = proc.communicate()
            if proc.returncode != 0:
                pytest.fail(f"nvcc failed on {name}.cu:\n{log.decode(errors='replace')}")
            out.with_suffix(".tmp.ptx").replace(out)
        modules[name] = parse_ptx(out.read_text(), str(out))
    return modules


def ptx(text: str, name: str = "hand.ptx") -> ir.Module:
    header = ".version 8.0\n.target sm_80\n.address_size 64\n"
    return parse_ptx(header + text, name)


def blocks(n: int, block: int) -> int:
    return -(-n // block)


RNG = np.random.default_rng(1234)


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    """Bit-for-bit equality of float arrays (NaN payloads and zero signs included)."""
    assert a.dtype == b.dtype
    view = {4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    bad = np.flatnonzero(a.view(view) != b.view(view))
    assert bad.size == 0, f"{bad.size} differ, first at {bad[0]}: {a.flat[bad[0]]!r} vs {b.flat[bad[0]]!r}"


def round_fraction(value: Fraction, dtype: type[np.floating]) -> np.floating:
    """Correctly rounded (to nearest even) value of an exact rational."""
    big = np.finfo(dtype).max
    limit = Fraction(float(big)) + (Fraction(float(big)) - Fraction(float(np.nextafter(big, dtype(0))))) / 2
    if abs(value) >= limit:  # rounds to infinity
        return dtype(np.inf) if value > 0 else dtype(-np.inf)
    with np.errstate(over="ignore"):
        guess = dtype(float(value))
    if not np.isfinite(guess):
        guess = big if value > 0 else -big
    best = guess
    for cand in (np.nextafter(guess, dtype(-np.inf)), np.nextafter(guess, dtype(np.inf))):
        if not np.isfinite(cand):
            continue
        d_best, d_cand = abs(Fraction(float(best)) - value), abs(Fraction(float(cand)) - value)
        if d_cand < d_best or (d_cand == d_best and int(cand.view(f"u{cand.itemsize}")) % 2 == 0):
            best = cand
    return best


def exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for i, (x, y, z) in enumerate(zip(a, b, c, strict=True)):
        out[i] = round_fraction(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), a.dtype.type)
    return out


# --------------------------------------------------------------------------
# Element-wise kernels


def test_vec_add_partial_warps(kernels):
    n = 1000
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    result = launch(kernels["basics"], "vec_add", (blocks(n, 100),), (100,), [a, b, c, n])
    same_bits(c, a + b)  # updated in place
    same_bits(result.buffers[2], a + b)
    assert result.buffers[3] is None and not result.warnings


def _special_floats(dtype: type[np.floating], n: int) -> np.ndarray:
    info = np.finfo(dtype)
    specials = [
        0.0,
        -0.0,
        1.0,
        -3.5,
        info.tiny,
        info.tiny / 8,
        -info.tiny / 3,
        info.max,
        -info.max,
        np.inf,
        -np.inf,
        1e-3,
        7.0,
    ]
    x = (RNG.standard_normal(n) * RNG.choice([1e-30, 1e-3, 1.0, 1e20], n)).astype(dtype)
    x[: len(specials)] = np.array(specials, dtype=dtype)
    return x


def test_float_ops_bit_exact(kernels):
    n = 333
    x = _special_floats(np.float32, n)
    y = np.roll(_special_floats(np.float32, n), 5)
    z = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(8 * n, np.float32)
    launch(kernels["basics"], "float_ops", (blocks(n, 64),), (64,), [x, y, z, out, n])
    with np.errstate(all="ignore"):
        same_bits(out[0 * n : 1 * n], x + y)
        same_bits(out[1 * n : 2 * n], x - y)
        same_bits(out[2 * n : 3 * n], x * y)
        want_div = x / y
        want_div[np.isnan(want_div)] = np.float32(np.nan)  # the GPU's canonical NaN
        got_div = out[3 * n : 4 * n]
        nan = np.isnan(want_div)
        same_bits(got_div[~nan], want_div[~nan])
        assert np.isnan(got_div[nan]).all()
        same_bits(out[4 * n : 5 * n], np.sqrt(np.abs(x)))
        finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
        same_bits(out[5 * n : 6 * n][finite], exact_fma(x[finite], y[finite], z[finite]))
        assert np.array_equal(out[6 * n : 7 * n], np.fmin(x, y))
        assert np.array_equal(out[7 * n : 8 * n], np.fmax(x, y))


def test_double_ops_bit_exact(kernels):
    n = 200
    x = _special_floats(np.float64, n)[20:]
    y = (RNG.standard_normal(x.size) * 1e3).astype(np.float64)
    z = RNG.standard_normal(x.size).astype(np.float64)
    n = x.size
    out = np.zeros(6 * n, np.float64)
    launch(kernels["basics"], "double_ops", (blocks(n, 96),), (96,), [x, y, z, out, n])
    same_bits(out[0:n], x + y)
    same_bits(out[n : 2 * n], x - y)
    same_bits(out[2 * n : 3 * n], x * y)
    same_bits(out[3 * n : 4 * n], x / y)
    same_bits(out[4 * n : 5 * n], np.sqrt(np.abs(x)))
    same_bits(out[5 * n : 6 * n], exact_fma(x, y, z))


def test_int_ops(kernels):
    n = 517
    x = RNG.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    y = RNG.integers(-1000, 1000, n).astype(np.int32)
    y[:3] = [0, -1, 1]
    x[:3] = [5, -(2**31), 7]
    out = np.zeros(6 * n, np.int32)
    fout = np.zeros(n, np.float32)
    launch(kernels["basics"], "int_ops", (blocks(n, 128),), (128,), [x, y, out, fout, n])
    xs, ys = x.astype(np.int64), np.where(y == 0, 1, y).astype(np.int64)
    quot = np.trunc(xs / ys).astype(np.int64)
    quot = np.where((xs == -(2**31)) & (ys == -1), -(2**31), quot)
    assert np.array_equal(out[0:n], quot.astype(np.int32))
    assert np.array_equal(out[n : 2 * n], (xs - np.trunc(xs / ys).astype(np.int64) * ys).astype(np.int32))
    assert np.array_equal(out[2 * n : 3 * n], (x << 3) ^ (y >> 2))
    assert np.array_equal(out[3 * n : 4 * n], (x.view(np.uint32) >> 5).view(np.int32))
    popc = np.array([bin(v & 0xFFFFFFFF).count("1") for v in x.tolist()])
    clz = np.array([32 - (v & 0xFFFFFFFF).bit_length() for v in y.tolist()])
    assert np.array_equal(out[4 * n : 5 * n], popc + clz)
    assert np.array_equal(out[5 * n : 6 * n], np.minimum(x, y) - np.maximum(x, y))
    same_bits(fout, x.astype(np.float32) * np.float32(0.5))


def test_data_dependent_loop(kernels):
    n = 300
    start = RNG.integers(1, 5000, n).astype(np.uint32)
    steps = np.zeros(n, np.int32)
    launch(kernels["basics"], "collatz", (blocks(n, 64),), (64,), [start, steps, n])

    def collatz(v: int) -> int:
        count = 0
        while v != 1:
            v = 3 * v + 1 if v & 1 else v // 2
            count += 1
        return count

    assert steps.tolist() == [collatz(int(v)) for v in start]


def test_grid_stride_2d(kernels):
    nx, ny = 37, 23
    a = RNG.standard_normal((ny, nx)).astype(np.float32)
    want = a * np.float32(1.75)
    launch(kernels["basics"], "scale2d", (3, 2), (8, 4), [a, nx, ny, np.float32(1.75)])
    same_bits(a, want)


def test_struct_param_const_and_device_globals(kernels):
    n = 77
    params = np.zeros((), dtype=[("offset", "<i4"), ("scale", "<f4"), ("bias", "<f8")])
    params["offset"], params["scale"], params["bias"] = 3, 2.0, 0.125
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float64)
    result = launch(kernels["basics"], "with_struct", (2,), (64,), [params.tobytes(), x, out, n])
    coef = np.array([1.0, 0.5, 0.25, 0.125], np.float32)[np.arange(n) & 3]
    v = x * (np.float32(2.0) * coef)
    same_bits(out, (v.astype(np.float64) + 0.125) + (3 + 1))
    assert int(result.globals["calls_made"].view(np.int32)[0]) == n


# --------------------------------------------------------------------------
# Stencils (divergence at the boundaries)


def jacobi_reference(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    s = (a[1:-1, :-2] + a[1:-1, 2:]) + (a[:-2, 1:-1] + a[2:, 1:-1])
    out[1:-1, 1:-1] = np.float32(0.25) * s
    return out


@pytest.mark.parametrize(("nx", "ny"), [(64, 64), (37, 23)])
def test_jacobi2d(kernels, nx, ny):
    a = RNG.standard_normal((ny, nx)).astype(np.float32)
    out = np.zeros_like(a)
    grid = (blocks(nx, 16), blocks(ny, 16))
    result = launch(kernels["stencils"], "jacobi2d", grid, (16, 16), [a, out, nx, ny])
    same_bits(out, jacobi_reference(a))
    assert result.steps > 0 and not result.warnings


def test_stencil3d(kernels):
    nx, ny, nz = 19, 13, 11
    a = RNG.standard_normal((nz, ny, nx))
    out = np.zeros_like(a)
    launch(
        kernels["stencils"],
        "stencil3d",
        (blocks(nx, 8), blocks(ny, 4), blocks(nz, 4)),
        (8, 4, 4),
        [a, out, nx, ny, nz],
    )
    p = np.pad(a, 1, mode="edge")
    c = p[1:-1, 1:-1, 1:-1]
    s = ((p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:]) + (p[1:-1, :-2, 1:-1] + p[1:-1, 2:, 1:-1])) + (
        p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1]
    )
    same_bits(out, 0.5 * c + s * (1.0 / 12.0))


# --------------------------------------------------------------------------
# Shared memory and barriers


def test_tiled_transpose(kernels):
    w, h = 67, 45
    a = RNG.standard_normal((h, w)).astype(np.float32)
    out = np.zeros((w, h), np.float32)
    launch(kernels["shared"], "transpose", (blocks(w, 32), blocks(h, 32)), (32, 8), [a, out, w, h])
    same_bits(out, a.T.copy())


def test_block_reduction_dynamic_shared(kernels):
    n, block = 1000, 128
    x = RNG.integers(-50, 100, n).astype(np.int32)
    nb = blocks(n, block)
    sums = np.zeros(nb, np.int32)
    pos = np.zeros(nb, np.int32)
    launch(kernels["shared"], "block_sum", (nb,), (block,), [x, sums, pos, n], shared_bytes=block * 4)
    padded = np.zeros(nb * block, np.int32)
    padded[:n] = x
    assert sums.tolist() == padded.reshape(nb, block).sum(axis=1).tolist()
    assert pos.tolist() == (padded.reshape(nb, block) > 0).sum(axis=1).tolist()


def test_syncthreads_and_or(kernels):
    nb, block = 4, 96
    x = RNG.integers(1, 100, nb * block).astype(np.int32)
    x[5] = -1  # block 0: not all positive
    x[2 * block + 7] = 500  # block 2: one above 100
    all_out = np.zeros(nb, np.int32)
    any_out = np.zeros(nb, np.int32)
    launch(kernels["shared"], "block_vote", (nb,), (block,), [x, all_out, any_out])
    assert all_out.tolist() == [0, 1, 1, 1]
    assert any_out.tolist() == [0, 0, 1, 0]


# --------------------------------------------------------------------------
# Warp-level primitives


def _warps(v: np.ndarray) -> np.ndarray:
    return v.reshape(-1, 32)


def test_shuffles(kernels):
    n, block = 1000, 96
    nt = blocks(n, block) * block
    v = np.zeros(nt, np.int32)
    v[:n] = RNG.integers(-1000, 1000, n)
    out = np.zeros(6 * n, np.int32)
    launch(kernels["warp"], "shuffles", (blocks(n, block),), (block,), [v[:n].copy(), out, n])
    lane = np.arange(32)
    w = _warps(v).astype(np.int64)
    s = w.copy()
    for off in (16, 8, 4, 2, 1):
        src = lane + off
        s = s + np.where(src <= 31, s[:, np.minimum(src, 31)], s)
    xs = w.copy()
    for off in (1, 2, 4, 8, 16):
        xs = xs + xs[:, lane ^ off]
    scan = w.copy()
    for off in (1, 2, 4, 8):
        src = lane - off
        t = np.where(src >= (lane & ~15), scan[:, np.maximum(src, 0)], scan)
        scan = scan + np.where((lane & 15) >= off, t, 0)
    bcast = w[:, (lane & ~7) | 3]
    rot = w[:, (lane + 1) & 31]
    src = lane + 2
    down8 = np.where(src <= (lane | 7), w[:, np.minimum(src, 31)], w)
    got = out.reshape(n, 6)
    for k, want in enumerate([s, xs, scan, bcast, rot, down8]):
        assert np.array_equal(got[:, k], want.reshape(-1)[:n].astype(np.int32)), k


def test_votes(kernels):
    n, block = 200, 64
    nt = blocks(n, block) * block
    v = np.zeros(nt, np.int32)
    v[:n] = RNG.integers(-5, 60, n)
    out = np.zeros(4 * n, np.uint32)
    launch(kernels["warp"], "votes", (blocks(n, block),), (block,), [v[:n].copy(), out, n])
    bit = (1 << np.arange(32)).astype(np.uint64)
    got = out.reshape(n, 4)
    for wi, w in enumerate(_warps(v)):
        ballot = int(((w > 0) * bit).sum())
        odd = (w & 1) != 0
        active = int((odd * bit).sum())
        inner = (int(((odd & (w > 10)) * bit).sum()) | (active << 1)) & 0xFFFFFFFF
        for lane in range(32):
            i = wi * 32 + lane
            if i >= n:
                continue
            want = [ballot, int((w >= 0).all()), int((w > 50).any()), inner if odd[lane] else 0]
            assert got[i].tolist() == want, (i, got[i].tolist(), want)


def test_match_and_redux(kernels):
    n, block = 150, 64
    nt = blocks(n, block) * block
    v = np.full(nt, -1, np.int32)
    v[:n] = RNG.integers(0, 6, n)
    out = np.zeros(6 * n, np.uint32)
    launch(kernels["warp"], "match_redux", (blocks(n, block),), (block,), [v[:n].copy(), out, n])
    bit = (1 << np.arange(32)).astype(np.uint64)
    got = out.reshape(n, 6)
    for wi, w in enumerate(_warps(v)):
        u = w.view(np.uint32).astype(np.uint64)
        for lane in range(32):
            i = wi * 32 + lane
            if i >= n:
                continue
            same = int(((w == w[lane]) * bit).sum())
            want = [
                same,
                0,
                int(u.sum()) & 0xFFFFFFFF,
                int(w.min()) & 0xFFFFFFFF,
                int(u.max()),
                int(np.bitwise_xor.reduce(u)),
            ]
            assert got[i].tolist() == want, (i, got[i].tolist(), want)


# --------------------------------------------------------------------------
# Atomics


def test_histogram_atomics(kernels):
    n, bins = 1000, 37
    data = RNG.integers(0, 10_000, n).astype(np.int32)
    hist = np.zeros(bins, np.int32)
    fsum = np.zeros(1, np.float32)
    launch(kernels["atomics"], "histogram", (blocks(n, 128),), (128,), [data, hist, fsum, n, bins])
    assert hist.tolist() == np.bincount(data % bins, minlength=bins).tolist()
    assert fsum[0] == float((data & 7).sum())


def test_atomic_misc(kernels):
    n = 333
    data = RNG.integers(-500, 500, n).astype(np.int32)
    imax = np.array([-(2**31), 2**31 - 1], np.int32)
    counter = np.array([0, 3, 0], np.uint32)
    fmax = np.array([-np.inf], np.float32)
    total = np.zeros(1, np.uint64)
    last = np.zeros(1, np.int32)
    args = [data, imax, counter, fmax, total, last, n]
    launch(kernels["atomics"], "atomic_misc", (blocks(n, 64),), (64,), args)
    assert imax.tolist() == [data.max(), data.min()]
    dec = 3
    for _ in range(n):
        dec = 7 if dec == 0 or dec > 7 else dec - 1
    bits = 0
    for v in data.tolist():
        bits |= 1 << (v & 31)
    assert counter.tolist() == [n, dec, bits]
    assert fmax[0] == np.float32(data.max()) * np.float32(0.5)
    assert int(total[0]) == int(data.astype(np.int64).sum()) % 2**64
    assert last[0] == 1


# --------------------------------------------------------------------------
# Calls, recursion, local memory, function pointers, printf, assert


def test_calls_recursion_local_and_pointers(kernels):
    n = 100
    v = RNG.integers(0, 40, n).astype(np.int32)
    out = np.zeros(4 * n, np.int32)
    fout = np.zeros(n, np.float32)
    result = launch(kernels["calls"], "calls", (blocks(n, 48),), (48,), [v, out, fout, n])
    fib = [0, 1]
    while len(fib) < 12:
        fib.append(fib[-1] + fib[-2])
    got = out.reshape(n, 4)
    for i, x in enumerate(v.tolist()):
        k = (x & 15) + 1
        want = [
            fib[x % 12],
            sum(x * j + i for j in range(k)),
            x * ((x * 7) % 24) + i,
            2 * x if x % 2 == 0 else x * x,
        ]
        assert got[i].tolist() == want, i
    same_bits(fout, np.float32(1.5) * v.astype(np.float32) + np.float32(0.25))
    assert not result.warnings


def test_printf(kernels):
    n = 23
    x = (np.arange(n) * 0.5).astype(np.float32)
    result = launch(kernels["calls"], "hello", (1,), (32,), [x, n])
    want = [f"thread {i}: x={x[i]:f} {'odd' if i % 2 else 'even'} {i * 3}" for i in range(0, n, 5)]
    assert result.printf == want
    assert result.printf_records[1].tid == (5, 0, 0)


def test_device_assert(kernels):
    x = np.arange(40, dtype=np.int32)
    launch(kernels["calls"], "checked", (1,), (64,), [x, 40])
    x[33] = -1
    with pytest.raises(EmulationError, match=r"Assertion `x\[i\] >= 0` failed.*thread \(33, 0, 0\)"):
        launch(kernels["calls"], "checked", (1,), (64,), [x, 40])


# --------------------------------------------------------------------------
# Errors and budgets


def test_out_of_bounds_names_the_instruction(kernels):
    a = np.zeros(10, np.float32)
    with pytest.raises(EmulationError) as info:
        launch(kernels["basics"], "vec_add", (1,), (32,), [a, a.copy(), a.copy(), 20])
    text = str(info.value)
    assert re.search(r"basics-\w+\.ptx:\d+:\d+: ld\.global", text), text
    assert re.search(r"past the end of buffer 'arg[01] \(vec_add_param_[01]\)' \(size 40\)", text), text


def test_step_budget(kernels):
    start = np.array([27, 97], np.uint32)
    with pytest.raises(EmulationError, match="step budget exceeded"):
        launch(kernels["basics"], "collatz", (1,), (2,), [start, np.zeros(2, np.int32), 2], max_steps=200)


def test_bad_launches(kernels):
    with pytest.raises(PtxError, match="no kernel named"):
        launch(kernels["basics"], "nope", (1,), (1,), [])
    with pytest.raises(PtxError, match="takes 4 parameters"):
        launch(kernels["basics"], "vec_add", (1,), (1,), [])
    with pytest.raises(PtxError, match="1024"):
        launch(kernels["basics"], "vec_add", (1,), (2048,), [np.zeros(1, np.float32)] * 3 + [1])


# --------------------------------------------------------------------------
# Hand-written PTX


BRX = """
.visible .entry switchy(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    rem.u32 %r2, %r1, 3;
    ts: .branchtargets L0, L1, L2;
    brx.idx %r2, ts;
L0:
    add.u32 %r3, %r1, 100;
    bra.uni DONE;
L1:
    mul.lo.u32 %r3, %r1, 2;
    bra.uni DONE;
L2:
    neg.s32 %r3, %r1;
DONE:
    activemask.b32 %r4;
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
}
"""


def test_brx_idx_diverges_and_reconverges():
    out = np.zeros((40, 2), np.int32)
    launch(ptx(BRX), "switchy", (1,), (40,), [out])
    t = np.arange(40)
    want = np.where(t % 3 == 0, t + 100, np.where(t % 3 == 1, 2 * t, -t))
    assert out[:, 0].tolist() == want.tolist()
    # after DONE every lane of the warp is active again (8 lanes in the partial warp)
    assert out[:32, 1].view(np.uint32).tolist() == [0xFFFFFFFF] * 32
    assert out[32:, 1].tolist() == [0xFF] * 8


SPACES = """
.const .align 4 .u32 cst[4] = {11, 22, 33, 44};
.visible .entry spaces(.param .u64 out)
{
    .shared .align 8 .b8 sh[256];
    .local .align 8 .b8 loc[16];
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<24>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd2, sh;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    cvta.shared.u64 %rd5, %rd4;
    mul.lo.u32 %r2, %r1, 10;
    st.u32 [%rd5], %r2;
    bar.sync 0;
    xor.b32 %r3, %r1, 1;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd2, %rd6;
    ld.shared.u32 %r4, [%rd7];
    mov.u64 %rd8, loc;
    cvta.local.u64 %rd9, %rd8;
    add.u32 %r5, %r1, 7;
    st.u32 [%rd9+4], %r5;
    ld.local.u32 %r6, [%rd8+4];
    isspacep.shared %p1, %rd5;
    isspacep.local %p2, %rd9;
    isspacep.global %p3, %rd1;
    isspacep.global %p4, %rd5;
    isspacep.const %p5, %rd9;
    cvta.to.shared.u64 %rd10, %rd5;
    sub.s64 %rd11, %rd10, %rd4;
    cvt.u32.u64 %r7, %rd11;
    mov.u64 %rd12, cst;
    cvta.const.u64 %rd13, %rd12;
    ld.u32 %r8, [%rd13+8];
    isspacep.const %p6, %rd13;
    selp.u32 %r9, 1, 0, %p1;
    selp.u32 %r10, 2, 0, %p2;
    selp.u32 %r11, 4, 0, %p3;
    selp.u32 %r12, 8, 0, %p4;
    selp.u32 %r13, 16, 0, %p5;
    selp.u32 %r14, 32, 0, %p6;
    or.b32 %r9, %r9, %r10;
    or.b32 %r9, %r9, %r11;
    or.b32 %r9, %r9, %r12;
    or.b32 %r9, %r9, %r13;
    or.b32 %r9, %r9, %r14;
    mul.wide.u32 %rd14, %r1, 20;
    add.s64 %rd15, %rd1, %rd14;
    st.global.u32 [%rd15], %r4;
    st.global.u32 [%rd15+4], %r6;
    st.global.u32 [%rd15+8], %r9;
    st.global.u32 [%rd15+12], %r7;
    st.global.u32 [%rd15+16], %r8;
    ret;
}
"""


def test_generic_addressing_cvta_isspacep():
    n = 48
    out = np.zeros((n, 5), np.uint32)
    launch(ptx(SPACES), "spaces", (1,), (n,), [out])
    t = np.arange(n)
    assert out[:, 0].tolist() == ((t ^ 1) * 10).tolist()  # generic store, shared load of the neighbour
    assert out[:, 1].tolist() == (t + 7).tolist()  # generic store, local load
    assert out[:, 2].tolist() == [1 | 2 | 4 | 32] * n
    assert out[:, 3].tolist() == [0] * n  # cvta.to.shared(cvta.shared(a)) == a
    assert out[:, 4].tolist() == [33] * n


def test_generic_null_pointer_is_reported():
    text = """
.visible .entry null(.param .u64 p)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 0;
    ld.u32 %r1, [%rd1];
    ret;
}
"""
    with pytest.raises(EmulationError, match=r"hand\.ptx:\d+:\d+: ld\.u32: generic address 0x0 is a null"):
        launch(ptx(text), "null", (1,), (1,), [np.zeros(1, np.uint32)])


def test_unsupported_instruction_warns_once_and_gives_zero():
    text = """
.global .texref tex;
.visible .entry usetex(.param .u64 out)
{
    .reg .f32 %f<5>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.f32 %f1, 0f3F800000;
    tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex, {%r1}];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f1;
    ret;
}
"""
    out = np.ones(64, np.float32)
    result = launch(ptx(text), "usetex", (1,), (64,), [out])
    assert out.tolist() == [0.0] * 64
    assert len(result.warnings) == 1 and "tex.1d" in result.warnings[0]


def test_barrier_deadlock_is_reported():
    text = """
.visible .entry stuck()
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra SKIP;
    bar.sync 1;
SKIP:
    bar.sync 0;
    ret;
}
"""
    with pytest.raises(EmulationError, match="can never complete"):
        launch(ptx(text), "stuck", (1,), (64,), [])


# --------------------------------------------------------------------------
# The command line


def test_run_cli(kernels, tmp_path):
    from click.testing import CliRunner

    from ptxasw.cli.run import run_command

    src = Path(kernels["basics"].path)
    a = np.arange(50, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    runner = CliRunner()
    res = runner.invoke(
        run_command,
        [
            str(src),
            "--kernel",
            "vec_add",
            "--grid",
            "2",
            "--block",
            "32",
            "--arg",
            str(tmp_path / "a.npy"),
            "--arg",
            str(tmp_path / "a.npy"),
            "--arg",
            "zeros:f32:50@out",
            "--arg",
            "i32:50",
            "-o",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    got = np.load(tmp_path / "out" / "arg2.npy")
    same_bits(got, a + a)
    assert not (tmp_path / "out" / "arg0.npy").exists()

    bad = runner.invoke(run_command, [str(src), "--kernel", "vec_add", "--block", "32", "--arg", "q32:1"])
    assert bad.exit_code == 1 and "unknown type 'q32'" in bad.output
    assert "Traceback" not in bad.output

    oob = runner.invoke(
        run_command,
        [
            str(src),
            "--kernel",
            "vec_add",
            "--block",
            "32",
            "--arg",
            "zeros:f32:4",
            "--arg",
            "zeros:f32:4",
            "--arg",
            "zeros:f32:4",
            "--arg",
            "i32:32",
        ],
    )
    assert oob.exit_code == 1
    assert re.search(r"ptxasw: error: .*\.ptx:\d+:\d+: ld\.global", oob.output), oob.output

    broken = tmp_path / "broken.ptx"
    broken.write_text(".version 8.0\n.target sm_80\n.entry k( { ret; }\n")
    syn = runner.invoke(run_command, [str(broken), "--block", "1"])
    assert syn.exit_code == 1 and re.search(r"broken\.ptx:\d+:\d+:", syn.output), syn.output


def test_lanes_leave_a_loop_differently(kernels):
    n = 64
    limit = RNG.integers(0, 60, n).astype(np.int32)
    out = np.full(n, -7, np.int32)
    active = np.zeros(n, np.uint32)
    launch(kernels["basics"], "early_exit", (2,), (32,), [limit, out, active])
    returned = np.zeros(n, bool)
    want = np.full(n, -7)
    for t, lim in enumerate(limit.tolist()):
        acc = 0
        for k in range(40):
            if k == lim:
                returned[t] = True
                break
            acc += k * (lim & 3)
            if acc > 60:
                break
        if not returned[t]:
            want[t] = acc
    assert out.tolist() == want.tolist()
    # The lanes that return leave at once (ptxas makes the branch to `ret` a
    # predicated EXIT); the others meet again after the loop, however they
    # left it, so __activemask() there names exactly them (as on an H200).
    for w in range(2):
        alive = ~returned[32 * w : 32 * w + 32]
        mask = int(((1 << np.arange(32)) * alive).sum())
        assert active[32 * w : 32 * w + 32][alive].tolist() == [mask] * int(alive.sum())


ATOMS = """
.global .align 8 .f64 gv[2] = {0d3FF0000000000000, 0d4000000000000000};
.global .align 8 .u64 gp[2] = {generic(gv), gv+8};
.visible .entry atoms(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    .reg .f64 %fd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    ld.global.u64 %rd2, [gp];
    cvt.rn.f64.u32 %fd1, %r1;
    atom.add.f64 %fd2, [%rd2], %fd1;
    ld.global.u64 %rd3, [gp+8];
    ld.f64 %fd3, [%rd3];
    mov.b32 %r2, 0x3C003C00;
    red.global.add.noftz.f16x2 [%rd1], %r2;
    cvt.u64.u32 %rd4, %r1;
    add.u64 %rd5, %rd4, 1;
    atom.global.cas.b64 %rd6, [%rd1+8], %rd4, %rd5;
    mul.wide.u32 %rd7, %r1, 8;
    add.s64 %rd8, %rd1, %rd7;
    st.global.f64 [%rd8+16], %fd2;
    st.global.f64 [%rd8+272], %fd3;
    ret;
}
"""


def test_atomics_f64_f16x2_cas64_and_pointer_initialisers():
    out = np.zeros(2 + 32 + 32, np.uint64)
    result = launch(ptx(ATOMS), "atoms", (1,), (32,), [out])
    halves = out[:1].view(np.float16)
    assert halves[:2].tolist() == [32.0, 32.0]  # 32 lanes added (1.0, 1.0)
    assert int(out[1]) == 32  # lane order: every compare-and-swap succeeds in turn
    olds = out[2:34].view(np.float64)
    assert olds.tolist() == (1.0 + np.cumsum(np.arange(32)) - np.arange(32)).tolist()
    assert out[34:].view(np.float64).tolist() == [2.0] * 32
    assert result.globals["gv"].view(np.float64)[0] == 1.0 + sum(range(32))


BARRIERS = """
.visible .entry named(.param .u64 out)
{
    .shared .align 4 .u32 flag[5];
    .reg .pred %p<3>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    shr.u32 %r3, %r2, 1;
    add.u32 %r4, %r3, 1;
    mov.u32 %r5, flag;
    shl.b32 %r6, %r2, 2;
    add.u32 %r7, %r5, %r6;
    add.u32 %r8, %r2, 10;
    st.shared.u32 [%r7], %r8;
    bar.sync %r4, 64;
    xor.b32 %r9, %r2, 1;
    shl.b32 %r10, %r9, 2;
    add.u32 %r11, %r5, %r10;
    ld.shared.u32 %r12, [%r11];
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r12;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r2, 1;
    @!%p1 bra CONSUMER;
    mov.u32 %r13, 99;
    st.shared.u32 [flag+16], %r13;
    bar.arrive 3, 64;
    bra.uni END;
CONSUMER:
    @!%p2 bra END;
    bar.sync 3, 64;
    ld.shared.u32 %r14, [flag+16];
    st.global.u32 [%rd3+4], %r14;
END:
    ret;
}
"""


def test_named_barriers_and_arrive():
    out = np.zeros((128, 2), np.uint32)
    launch(ptx(BARRIERS), "named", (1,), (128,), [out])
    warp = np.arange(128) // 32
    assert out[:, 0].tolist() == ((warp ^ 1) + 10).tolist()
    assert out[32:64, 1].tolist() == [99] * 32


ELECT = """
.visible .entry elect_test(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mov.u32 %r3, 77;
    mov.u32 %r4, 0;
    mov.u32 %r5, 0;
    setp.ne.u32 %p1, %r2, 1;
    @%p1 bra SKIP;
    activemask.b32 %r6;
    elect.sync %r3|%p2, %r6;
    selp.u32 %r4, 1, 0, %p2;
    vote.sync.uni.pred %p3, %p2, %r6;
    selp.u32 %r5, 1, 0, %p3;
SKIP:
    mul.wide.u32 %rd2, %r1, 12;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    st.global.u32 [%rd3+8], %r5;
    ret;
}
"""


def test_elect_and_vote_uni_in_divergent_code():
    out = np.zeros((40, 3), np.uint32)
    launch(ptx(ELECT), "elect_test", (1,), (40,), [out])
    t = np.arange(40)
    active = t % 4 == 1
    assert out[~active, 0].tolist() == [77] * int((~active).sum())
    assert out[active, 0].tolist() == [1] * int(active.sum())  # leader: lowest active lane
    assert out[:, 1].tolist() == [int(i in (1, 33)) for i in range(40)]
    # vote.uni: warp 0 has 8 active lanes that disagree; warp 1 has two (33, 37) that disagree too
    assert out[:, 2].tolist() == [0] * 40


def test_runaway_recursion_is_reported():
    text = """
.func forever()
{
    call forever;
    ret;
}
.visible .entry recurse()
{
    call forever;
    ret;
}
"""
    with pytest.raises(EmulationError, match="call depth exceeds"):
        launch(ptx(text), "recurse", (1,), (32,), [])


GUARDED_BRX = """
.visible .entry g(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.lt.u32 %p1, %r1, 20;
    ts: .branchtargets A, B;
    @%p1 brx.idx %r2, ts;
    mov.u32 %r3, 7;
    bra.uni DONE;
A:
    mov.u32 %r3, 100;
    bra.uni DONE;
B:
    mov.u32 %r3, 200;
DONE:
    activemask.b32 %r4;
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {%r3, %r4};
    ret;
}
"""


def test_guarded_brx_idx_three_way_split():
    out = np.zeros((32, 2), np.uint32)
    launch(ptx(GUARDED_BRX), "g", 1, 32, [out])
    t = np.arange(32)
    assert out[:, 0].tolist() == np.where(t < 20, np.where(t % 2, 200, 100), 7).tolist()
    assert out[:, 1].tolist() == [0xFFFFFFFF] * 32


def test_the_same_array_twice_is_one_buffer(kernels):
    a = np.arange(50, dtype=np.float32)
    result = launch(kernels["basics"], "vec_add", (1,), (64,), [a, a, a, 50])
    assert a.tolist() == (2 * np.arange(50)).tolist()
    assert result.buffers[0].tolist() == a.tolist()


SPECIALS = """
.visible .entry specials(.param .u64 out)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %ntid.y;
    mad.lo.u32 %r6, %r3, %r5, %r2;
    mad.lo.u32 %r7, %r6, %r4, %r1;
    mov.u32 %r8, %laneid;
    mov.u32 %r9, %warpid;
    mov.u32 %r10, %lanemask_lt;
    mov.u32 %r11, %ctaid.y;
    mov.u32 %r12, %nctaid.z;
    mov.u32 %r13, %dynamic_smem_size;
    mov.u32 %r14, %ctaid.x;
    mov.u32 %r15, %nctaid.x;
    mad.lo.u32 %r14, %r11, %r15, %r14;
    mul.lo.u32 %r15, %r4, %r5;
    mov.u32 %r0, %ntid.z;
    mul.lo.u32 %r15, %r15, %r0;
    mad.lo.u32 %r14, %r14, %r15, %r7;
    mul.wide.u32 %rd2, %r14, 32;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r7, %r8, %r9, %r10};
    st.global.v4.u32 [%rd3+16], {%r11, %r12, %r13, %r1};
    ret;
}
"""


def test_special_registers_3d_block_partial_warp():
    block = (5, 3, 3)  # 45 threads: a full warp and one of 13 lanes
    out = np.zeros((2, 2, 45, 8), np.uint32)
    launch(ptx(SPECIALS), "specials", (2, 2, 1), block, [out], shared_bytes=48)
    t = np.arange(45)
    lane = t % 32
    for cy in range(2):
        for cx in range(2):
            rows = out[cy, cx]
            assert rows[:, 0].tolist() == t.tolist()  # x fastest, then y, then z
            assert rows[:, 1].tolist() == lane.tolist()
            assert rows[:, 2].tolist() == (t // 32).tolist()
            assert rows[:, 3].tolist() == ((1 << lane) - 1).tolist()
            assert rows[:, 4].tolist() == [cy] * 45
            assert rows[:, 5].tolist() == [1] * 45
            assert rows[:, 6].tolist() == [48] * 45
            assert rows[:, 7].tolist() == (t % 5).tolist()


def test_float_atomic_nan_results_follow_the_gpu() -> None:
    """Measured on an H200: canonical NaN for f32/f16/bf16 adds, f64 keeps the NaN operand."""
    from ptxasw.emulator.concrete.atomics import atomic_function

    add_f32 = atomic_function("add", ".f32", 4)
    add_f64 = atomic_function("add", ".f64", 8)
    add_f16 = atomic_function("add", ".f16", 2)
    add_bf16 = atomic_function("add", ".bf16", 2)
    assert add_f32 and add_f64 and add_f16 and add_bf16
    assert add_f32(0x7F800000, 0xFF800000, 0) == 0x7FFFFFFF  # inf + -inf
    assert add_f32(0x7FC00123, 0x3F800000, 0) == 0x7FFFFFFF  # payload not kept
    assert add_f32(0x3F800000, 0x3F800000, 0) == 0x40000000
    signalling = 0x7FF4000000000001
    assert add_f64(signalling, 0x3FF0000000000000, 0) == signalling
    assert add_f64(0x3FF0000000000000, signalling, 0) == signalling
    assert add_f16(0x7C00, 0xFC00, 0) == 0x7FFF
    assert add_bf16(0x7F80, 0xFF80, 0) == 0x7FFF
