"""The PIRCH evidence kernels: registry, NumPy references and cached nvcc builds.

Every kernel of ``benchmarks/pirch/*.cu`` is described once here, so the tests
(``tests/test_pirch_kernels.py``), the speed benchmark (``benchmarks/lift_speed.py``)
and anyone comparing engines by hand agree on the symbol, the launch shape,
the arguments and what the right answer is.

A `Kernel` is one kernel in one element type (``gemm_f32``); its CUDA symbol
for a work-group size is ``gemm_f32_wg8`` (`Kernel.symbol`). Arguments come
from ``make_args(batch, wg, rng, special)`` in the kernel's parameter order:
NumPy arrays shaped per batch item (``(batch, wg, wg)`` for a matrix) and
NumPy scalars typed as the parameter. ``special=True`` mixes NaN, infinities,
-0.0, subnormals and huge values into float inputs and wrap-around values
into integer ones: those runs are for bit-exact comparisons between engines.
``reference(args, wg)`` returns the expected contents of the output arguments
(``outputs``, indices into ``args``) for tolerance-based comparison
(`check_outputs`); most references follow the kernel's order of operations,
so only FMA contraction separates them from the GPU.

`compile_ptx` runs nvcc (``-O3`` or ``-G``) once per source file, target and
mode; the PTX is cached by a hash of the sources, the flags and nvcc's version
under ``$PTXASW_CORPUS_CACHE/pirch`` (or ``~/.cache/ptxasw/pirch-kernels``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WG_SIZES = (4, 8, 16, 32)
ARCHS = ("sm_75", "sm_90")
REDUCE_BLOCK = 128  # block.cu's REDUCE_BLOCK
TILE, TILE_ROWS = 32, 8  # block.cu's transpose tile
TRANSPOSE_SHAPE = (40, 72)  # rows, cols of a transpose item: partial tiles on both axes

Args = list[object]
Shape = tuple[int, ...]


class CompileError(RuntimeError):
    """nvcc refused a source file (the message holds its output)."""


# --------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Kernel:
    """One evidence kernel in one element type (see the module docstring)."""

    name: str
    source: str
    dtype: np.dtype
    make_args: Callable[[int, int, np.random.Generator, bool], Args]
    outputs: tuple[int, ...]
    launch_shape: Callable[[int, int], tuple[Shape, Shape]]
    reference: Callable[[Args, int], list[np.ndarray]]
    wg_sizes: tuple[int, ...] = WG_SIZES
    per_wg: bool = True  # one entry per WG_SIZE (``NAME_wgN``); multi-warp kernels have one
    rtol: float = 0.0
    atol: float = 0.0
    batched: bool = False  # one of borG's batched kernels (C and OpenCL references, benchmark)
    # nvcc fuses a*b + c into fma: on special inputs an overflowing product need not
    # become inf inside an fma, so the unfused reference's inf/NaN elements are not compared.
    contracts: bool = False

    @property
    def base(self) -> str:
        """The kernel without its element type: ``gemm`` for ``gemm_f32``."""
        return self.name.rsplit("_", 1)[0] if self.name.endswith(("_f32", "_f64", "_u32")) else self.name

    @property
    def precision(self) -> str:
        return {np.float32: "single", np.float64: "double"}.get(self.dtype.type, str(self.dtype))

    def symbol(self, wg: int) -> str:
        """The CUDA/PTX entry name for work-group size ``wg``."""
        if wg not in self.wg_sizes:
            raise ValueError(f"{self.name}: no build for WG_SIZE {wg} (has {self.wg_sizes})")
        return f"{self.name}_wg{wg}" if self.per_wg else self.name

    def args(self, batch: int, wg: int, seed: int = 0, special: bool = False) -> Args:
        return self.make_args(batch, wg, np.random.default_rng(seed), special)


KERNELS: dict[str, Kernel] = {}


def _register(kernel: Kernel) -> None:
    KERNELS[kernel.name] = kernel


def kernels(source: str | None = None, batched: bool | None = None) -> list[Kernel]:
    """The registered kernels, optionally only those of one source file or of borG's set."""
    return [
        k
        for k in KERNELS.values()
        if (source is None or k.source == source) and (batched is None or k.batched == batched)
    ]


def sources() -> list[str]:
    return sorted({k.source for k in KERNELS.values()})


# --------------------------------------------------------------------------
# Inputs


def _specials(dtype: np.dtype) -> np.ndarray:
    info = np.finfo(dtype)
    return np.array(
        [np.nan, np.inf, -np.inf, -0.0, 0.0, info.smallest_subnormal, -info.tiny, info.max, -info.max, 1.0],
        dtype=dtype,
    )


def sprinkle(values: np.ndarray, rng: np.random.Generator, fraction: float = 0.15) -> np.ndarray:
    """Replace a random ``fraction`` of ``values`` by special values of its type (in place).

    Every special value appears at least once when the array has room for all.
    """
    flat = values.reshape(-1)
    if np.issubdtype(values.dtype, np.floating):
        pool = _specials(values.dtype)
    else:
        pool = np.array([0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0, 1, 0xFFFFFFFE], dtype=np.uint64).astype(
            values.dtype
        )
    count = min(flat.size, max(int(fraction * flat.size), pool.size))
    where = rng.permutation(flat.size)[:count]
    chosen = np.concatenate([pool, rng.choice(pool, max(count - pool.size, 0))])[:count]
    flat[where] = chosen
    return values


def _normal(rng: np.random.Generator, shape: Shape, dtype: np.dtype, special: bool) -> np.ndarray:
    values = rng.standard_normal(shape).astype(dtype)
    return sprinkle(values, rng) if special else values


def _u32(rng: np.random.Generator, shape: Shape, special: bool) -> np.ndarray:
    values = rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32)
    return sprinkle(values, rng) if special else values


def _one_item_per_block(batch: int, wg: int) -> tuple[Shape, Shape]:
    return (batch,), (wg,)


def _items_n(wg: int) -> int:
    """Values per item for reduce/scan: several WG-wide steps and a partial one."""
    return 3 * wg + 5


# --------------------------------------------------------------------------
# borG's batched kernels (borg.cu)


def _gema_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        a = _normal(rng, (batch, wg, wg), dtype, special)
        b = _normal(rng, (batch, wg, wg), dtype, special)
        return [a, b, np.zeros_like(a), dtype.type(1.5), dtype.type(-0.75)]

    return make


def _gema_ref(args: Args, wg: int) -> list[np.ndarray]:
    a, b, _, alpha, beta = args
    with np.errstate(all="ignore"):
        return [alpha * a + beta * b]


def _gemm_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        a = _normal(rng, (batch, wg, wg), dtype, special)
        b = _normal(rng, (batch, wg, wg), dtype, special)
        return [a, b, np.zeros_like(a)]

    return make


def _gemm_ref(args: Args, wg: int) -> list[np.ndarray]:
    a, b, c = args
    out = np.zeros_like(c)
    with np.errstate(all="ignore"):
        for k in range(wg):  # the kernel's order: outer products k = 0, 1, ...
            out += a[:, :, k : k + 1] * b[:, k : k + 1, :]
    return [out]


def _trsv_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    """A packed LU (L unit lower with small entries, U diagonally dominant) and a right-hand side."""

    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        lu = rng.uniform(-1.0, 1.0, (batch, wg, wg))
        lu[:, np.tril_indices(wg, -1)[0], np.tril_indices(wg, -1)[1]] /= wg
        idx = np.arange(wg)
        lu[:, idx, idx] = rng.uniform(wg, 2 * wg, (batch, wg)) * rng.choice([-1.0, 1.0], (batch, wg))
        lu = lu.astype(dtype)
        x = _normal(rng, (batch, wg), dtype, special)
        if special:
            sprinkle(lu, rng, 0.03)
        return [lu, x]

    return make


def _trsv_ref(args: Args, wg: int) -> list[np.ndarray]:
    lu, b = args
    v = b.copy()
    with np.errstate(all="ignore"):
        for k in range(wg):  # forward, unit diagonal
            v[:, k + 1 :] -= lu[:, k + 1 :, k] * v[:, k : k + 1]
        for k in range(wg - 1, -1, -1):  # backward
            v[:, k] = v[:, k] / lu[:, k, k]
            v[:, :k] -= lu[:, :k, k] * v[:, k : k + 1]
    return [v]


def pivot_min(dtype: np.dtype) -> np.floating:
    """The static-pivoting threshold of borg.cu's ldu: machine epsilon of the type."""
    return np.finfo(dtype).eps


def _ldu_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        a = rng.standard_normal((batch, wg, wg))
        idx = np.arange(wg)
        a[:, idx, idx] += wg * rng.choice([-1.0, 1.0], (batch, wg))  # diagonally dominant: no pivoting needed
        a = a.astype(dtype)
        if special:
            sprinkle(a, rng, 0.05)
            a[0, 0, 0] = 0.0  # a zero pivot: static pivoting replaces it
        return [a]

    return make


def _ldu_ref(args: Args, wg: int) -> list[np.ndarray]:
    (a,) = args
    a = a.copy()
    tiny = pivot_min(a.dtype)
    with np.errstate(all="ignore"):
        for s in range(wg):
            piv = a[:, s, :].copy()  # the pivot row as broadcast before the step
            p = piv[:, s]
            p = np.where(np.abs(p) < tiny, np.where(p < 0, -tiny, tiny).astype(a.dtype), p)
            a[:, s, s] = p
            a[:, s + 1 :, s] = a[:, s + 1 :, s] / p[:, None]
            a[:, s, s + 1 :] = a[:, s, s + 1 :] / p[:, None]
            a[:, s + 1 :, s + 1 :] -= a[:, s + 1 :, s : s + 1] * piv[:, None, s + 1 :]
    return [a]


def ldu_factors(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """L (unit lower), D (diagonal) and U (unit upper) of ldu's in-place output, per item."""
    n = packed.shape[-1]
    eye = np.eye(n, dtype=packed.dtype)
    lower = np.tril(packed, -1) + eye
    upper = np.triu(packed, 1) + eye
    diag = np.einsum("...ii->...i", packed)[..., None] * eye
    return lower, diag, upper


for _t in (np.float32, np.float64):
    _dt = np.dtype(_t)
    _s = {np.float32: "f32", np.float64: "f64"}[_t]
    _single = _t is np.float32
    _register(
        Kernel(
            f"gema_{_s}", "borg", _dt, _gema_args(_dt), (2,), _one_item_per_block, _gema_ref,
            rtol=1e-6 if _single else 1e-14, atol=1e-6 if _single else 1e-14, batched=True, contracts=True,
        )
    )  # fmt: skip
    _register(
        Kernel(
            f"gemm_{_s}", "borg", _dt, _gemm_args(_dt), (2,), _one_item_per_block, _gemm_ref,
            rtol=1e-5 if _single else 1e-13, atol=1e-5 if _single else 1e-13, batched=True, contracts=True,
        )
    )  # fmt: skip
    _register(
        Kernel(
            f"trsv_{_s}", "borg", _dt, _trsv_args(_dt), (1,), _one_item_per_block, _trsv_ref,
            rtol=1e-5 if _single else 1e-13, atol=1e-6 if _single else 1e-14, batched=True, contracts=True,
        )
    )  # fmt: skip
    _register(
        Kernel(
            f"ldu_{_s}", "borg", _dt, _ldu_args(_dt), (0,), _one_item_per_block, _ldu_ref,
            rtol=1e-4 if _single else 1e-12, atol=1e-5 if _single else 1e-13, batched=True, contracts=True,
        )
    )  # fmt: skip


# --------------------------------------------------------------------------
# Warp collectives (warp.cu)


def _tree_down(acc: np.ndarray, wg: int) -> np.ndarray:
    """Lane 0's value after the kernel's __shfl_down_sync tree over axis -1 (length wg)."""
    acc = acc.copy()
    off = wg // 2
    while off > 0:
        acc[..., : wg - off] = acc[..., : wg - off] + acc[..., off:]
        off //= 2
    return acc[..., 0]


def _per_lane_sums(x: np.ndarray, wg: int) -> np.ndarray:
    """Each lane's strided sum (lane l adds x[l], x[l + wg], ... in that order)."""
    batch, n = x.shape
    acc = np.zeros((batch, wg), dtype=x.dtype)
    for base in range(0, n, wg):
        chunk = x[:, base : base + wg]
        acc[:, : chunk.shape[1]] += chunk
    return acc


def _data(dtype: np.dtype) -> Callable[[np.random.Generator, Shape, bool], np.ndarray]:
    if dtype == np.uint32:
        return lambda rng, shape, special: _u32(rng, shape, special)
    return lambda rng, shape, special: _normal(rng, shape, dtype, special)


def _reduce_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    data = _data(dtype)

    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        n = _items_n(wg)
        return [data(rng, (batch, n), special), np.zeros(batch, dtype), np.int32(n)]

    return make


def _reduce_ref(args: Args, wg: int) -> list[np.ndarray]:
    x = args[0]
    with np.errstate(all="ignore"):
        return [_tree_down(_per_lane_sums(x, wg), wg)]


def _scan_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    data = _data(dtype)

    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        n = _items_n(wg)
        x = data(rng, (batch, n), special)
        return [x, np.zeros_like(x), np.int32(n)]

    return make


def _scan_ref(args: Args, wg: int) -> list[np.ndarray]:
    x = args[0]
    batch, n = x.shape
    out = np.zeros_like(x)
    carry = np.zeros(batch, dtype=x.dtype)
    with np.errstate(all="ignore"):
        for base in range(0, n, wg):
            v = np.zeros((batch, wg), dtype=x.dtype)
            width = min(wg, n - base)
            v[:, :width] = x[:, base : base + width]
            d = 1
            while d < wg:  # Hillis-Steele, as the kernel
                v[:, d:] = v[:, d:] + v[:, :-d].copy()
                d *= 2
            v += carry[:, None]
            out[:, base : base + width] = v[:, :width]
            carry = v[:, wg - 1].copy()
    return [out]


def _butterfly(x: np.ndarray, wg: int, op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    v = x.copy()
    lanes = np.arange(wg)
    off = wg // 2
    while off > 0:
        v = op(v, v[:, lanes ^ off])
        off //= 2
    return v


def _allreduce_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    data = _data(dtype)

    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        x = data(rng, (batch, wg), special)
        return [x, np.zeros_like(x), np.zeros_like(x)]

    return make


def _allreduce_ref(args: Args, wg: int) -> list[np.ndarray]:
    x = args[0]
    with np.errstate(all="ignore"):
        total = _butterfly(x, wg, np.add)
        # fmax: NaN loses against a number (CUDA fmaxf and max.f32); integer max plainly.
        largest = _butterfly(x, wg, np.fmax if np.issubdtype(x.dtype, np.floating) else np.maximum)
    return [total, largest]


SEGBCAST_SRC = 3  # segbcast's run-time source lane (larger than the narrowest segment on purpose)


def _segbcast_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        x = _normal(rng, (batch, wg), dtype, special)
        return [x, np.zeros((batch, wg, 2), dtype), np.int32(SEGBCAST_SRC)]

    return make


def _segbcast_ref(args: Args, wg: int) -> list[np.ndarray]:
    x, _, src = args
    seg = wg // 2
    lanes = np.arange(wg)
    start = lanes & ~(seg - 1)
    out = np.empty((x.shape[0], wg, 2), x.dtype)
    out[:, :, 0] = x[:, start + (int(src) % seg)]
    out[:, :, 1] = x[:, start + ((lanes * 3 + int(src)) % seg)]
    return [out]


for _t, _s in ((np.float32, "f32"), (np.float64, "f64"), (np.uint32, "u32")):
    _dt = np.dtype(_t)
    _exact = _t is np.uint32
    _rt = 0.0 if _exact else (1e-6 if _t is np.float32 else 1e-14)
    _register(Kernel(f"reduce_{_s}", "warp", _dt, _reduce_args(_dt), (1,), _one_item_per_block, _reduce_ref,
                     rtol=_rt, atol=_rt))  # fmt: skip
    _register(Kernel(f"scan_{_s}", "warp", _dt, _scan_args(_dt), (1,), _one_item_per_block, _scan_ref,
                     rtol=_rt, atol=_rt))  # fmt: skip
    _register(Kernel(f"allreduce_{_s}", "warp", _dt, _allreduce_args(_dt), (1, 2), _one_item_per_block,
                     _allreduce_ref, rtol=_rt, atol=_rt))  # fmt: skip
    if not _exact:
        _register(Kernel(f"segbcast_{_s}", "warp", _dt, _segbcast_args(_dt), (1,), _one_item_per_block,
                         _segbcast_ref))  # fmt: skip


# --------------------------------------------------------------------------
# Votes, match and redux (vote.cu)

VOTE_THRESHOLD = np.float32(0.25)


def _vote_args(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
    x = _normal(rng, (batch, wg), np.dtype(np.float32), special)
    x[0, :] = 1.0  # one item where every lane votes yes
    if batch > 1:
        x[1, :] = -1.0  # and one where none does
    packed = np.full((batch, wg), -1, np.int32)
    return [x, VOTE_THRESHOLD, np.zeros((batch, 4), np.uint32), packed]


def _vote_ref(args: Args, wg: int) -> list[np.ndarray]:
    x, thr, _, packed = args
    with np.errstate(invalid="ignore"):
        pred = x > thr
    ballot = (pred.astype(np.uint64) << np.arange(wg, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    votes = np.stack([pred.any(axis=1), pred.all(axis=1), ballot, pred.sum(axis=1)], axis=1).astype(np.uint32)
    compact = packed.copy()
    for b in range(x.shape[0]):
        lanes = np.flatnonzero(pred[b])
        compact[b, : lanes.size] = lanes
    return [votes, compact]


def _match_args(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
    keys = rng.integers(0, 4, size=(batch, wg), dtype=np.uint32)
    if special:
        sprinkle(keys, rng, 0.3)
    return [keys, np.zeros((batch, wg, 3), np.uint32)]


def _match_ref(args: Args, wg: int) -> list[np.ndarray]:
    keys = args[0]
    same = keys[:, :, None] == keys[:, None, :]  # [b, lane, other]
    masks = (same.astype(np.uint64) << np.arange(wg, dtype=np.uint64)).sum(axis=2).astype(np.uint32)
    first = same.argmax(axis=2).astype(np.uint32)
    return [np.stack([masks, same.sum(axis=2).astype(np.uint32), first], axis=2)]


def _redux_args(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
    return [_u32(rng, (batch, wg), special), np.zeros((batch, 3), np.uint32)]


def _redux_ref(args: Args, wg: int) -> list[np.ndarray]:
    x = args[0]
    total = x.astype(np.uint64).sum(axis=1).astype(np.uint32)  # wraps modulo 2**32
    smin = x.view(np.int32).min(axis=1).view(np.uint32)
    return [np.stack([total, smin, x.max(axis=1)], axis=1)]


_register(Kernel("vote", "vote", np.dtype(np.float32), _vote_args, (2, 3), _one_item_per_block, _vote_ref))
_register(Kernel("match", "vote", np.dtype(np.uint32), _match_args, (1,), _one_item_per_block, _match_ref))
_register(Kernel("redux", "vote", np.dtype(np.uint32), _redux_args, (1,), _one_item_per_block, _redux_ref))


# --------------------------------------------------------------------------
# Multi-warp kernels with shared memory (block.cu)

BLOCK_REDUCE_N = 300  # values per item: two strided rounds of 128 and a partial one


def _block_reduce_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        x = _normal(rng, (batch, BLOCK_REDUCE_N), dtype, special)
        return [x, np.zeros(batch, dtype), np.int32(BLOCK_REDUCE_N)]

    return make


def _block_reduce_ref(args: Args, wg: int) -> list[np.ndarray]:
    x = args[0]
    with np.errstate(all="ignore"):
        per_thread = _per_lane_sums(x, REDUCE_BLOCK).reshape(x.shape[0], REDUCE_BLOCK // 32, 32)
        warps = np.zeros((x.shape[0], 32), x.dtype)
        warps[:, : REDUCE_BLOCK // 32] = _tree_down(per_thread, 32)
        return [_tree_down(warps, 32)]


def _block_reduce_shape(batch: int, wg: int) -> tuple[Shape, Shape]:
    return (batch,), (REDUCE_BLOCK,)


def _transpose_args(dtype: np.dtype) -> Callable[[int, int, np.random.Generator, bool], Args]:
    def make(batch: int, wg: int, rng: np.random.Generator, special: bool) -> Args:
        rows, cols = TRANSPOSE_SHAPE
        x = _normal(rng, (batch, rows, cols), dtype, special)
        return [x, np.zeros((batch, cols, rows), dtype), np.int32(rows), np.int32(cols)]

    return make


def _transpose_ref(args: Args, wg: int) -> list[np.ndarray]:
    return [np.ascontiguousarray(np.swapaxes(args[0], 1, 2))]


def _transpose_shape(batch: int, wg: int) -> tuple[Shape, Shape]:
    rows, cols = TRANSPOSE_SHAPE
    return (-(-cols // TILE), -(-rows // TILE), batch), (TILE, TILE_ROWS, 1)


for _t, _s in ((np.float32, "f32"), (np.float64, "f64")):
    _dt = np.dtype(_t)
    _rt = 1e-6 if _t is np.float32 else 1e-14
    _register(Kernel(f"block_reduce_{_s}", "block", _dt, _block_reduce_args(_dt), (1,), _block_reduce_shape,
                     _block_reduce_ref, wg_sizes=(32,), per_wg=False, rtol=_rt, atol=_rt))  # fmt: skip
    _register(Kernel(f"transpose_{_s}", "block", _dt, _transpose_args(_dt), (1,), _transpose_shape,
                     _transpose_ref, wg_sizes=(32,), per_wg=False))  # fmt: skip


# --------------------------------------------------------------------------
# Checking


def mismatches(kernel: Kernel, got: np.ndarray, want: np.ndarray, special: bool = False) -> str | None:
    """None when ``got`` matches ``want`` within the kernel's tolerance, else what differs.

    NaN matches NaN (any payload); integers and zero-tolerance kernels must be
    equal. On ``special`` inputs of a kernel that `Kernel.contracts`, elements
    whose reference is not finite are not compared: fma(huge, x, -huge*y) is
    finite where the unfused reference gets inf - inf = NaN, and the reverse.
    """
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape}/{got.dtype} != {want.shape}/{want.dtype}"
    if np.issubdtype(want.dtype, np.floating):
        with np.errstate(all="ignore"):
            both_nan = np.isnan(got) & np.isnan(want)
            same = (got == want) | both_nan
            close = np.abs(got.astype(np.float64) - want) <= kernel.atol + kernel.rtol * np.abs(want)
        ok = same | close
        if special and kernel.contracts:
            ok |= ~np.isfinite(want)
    else:
        ok = got == want
    bad = np.flatnonzero(~ok.reshape(-1))
    if bad.size == 0:
        return None
    i = np.unravel_index(bad[0], got.shape)
    return f"{bad.size} of {got.size} differ; first at {tuple(map(int, i))}: got {got[i]!r}, want {want[i]!r}"


def check_outputs(
    kernel: Kernel, args: Args, results: Sequence[np.ndarray], wg: int, special: bool = False
) -> list[str]:
    """Compare the output arguments ``results`` (parallel to kernel.outputs) with the reference.

    ``args`` must be the inputs as they were before the launch.
    """
    problems = []
    for index, got, want in zip(kernel.outputs, results, kernel.reference(args, wg), strict=True):
        message = mismatches(kernel, np.asarray(got).reshape(want.shape), want, special)
        if message:
            problems.append(f"{kernel.symbol(wg)} argument {index}: {message}")
    return problems


# --------------------------------------------------------------------------
# Building


def cache_dir() -> Path:
    """Where built PTX and C references are kept.

    ``$PTXASW_CORPUS_CACHE/pirch`` when set, else ``~/.cache/ptxasw/pirch-kernels``.
    """
    env = os.environ.get("PTXASW_CORPUS_CACHE")
    base = Path(env).expanduser() if env else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
    path = base / "pirch" if env else base / "ptxasw" / "pirch-kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None


@cache
def _nvcc_version() -> str:
    return subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout


def nvcc_flags(arch: str, debug: bool) -> list[str]:
    return ["--ptx", f"-arch={arch}", "-G" if debug else "-O3", f"-I{HERE}"]


def compile_ptx(kernel: Kernel | str, arch: str = "sm_90", debug: bool = False) -> Path:
    """The PTX of a kernel's source file (or of a source named by its stem) for ``arch``.

    ``debug`` builds with ``-G``, else ``-O3``. Cached by content: a rebuild
    happens only when a source, the shared header, the flags or nvcc change.
    """
    source = HERE / f"{kernel.source if isinstance(kernel, Kernel) else kernel}.cu"
    flags = nvcc_flags(arch, debug)
    digest = hashlib.sha256()
    for part in (source.read_bytes(), (HERE / "pirch.cuh").read_bytes(), " ".join(flags[:-1]).encode()):
        digest.update(part)
    digest.update(_nvcc_version().encode())
    out = cache_dir() / f"{source.stem}-{arch}-{'G' if debug else 'O3'}-{digest.hexdigest()[:16]}.ptx"
    if out.exists():
        return out
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(["nvcc", *flags, str(source), "-o", str(tmp)], capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise CompileError(f"nvcc {' '.join(flags)} {source.name} failed:\n{proc.stdout}{proc.stderr}")
    tmp.replace(out)
    return out


def compile_all(
    configs: Sequence[tuple[str, str, bool]] | None = None, jobs: int | None = None
) -> dict[tuple[str, str, bool], Path]:
    """Build (source, arch, debug) configurations in parallel; all of them by default."""
    if configs is None:
        configs = [(s, a, d) for s in sources() for a in ARCHS for d in (False, True)]
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        paths = pool.map(lambda c: compile_ptx(c[0], c[1], c[2]), configs)
        return dict(zip(configs, paths, strict=True))


@cache
def load_module(source: str, arch: str = "sm_90", debug: bool = False):  # -> ptxasw.ir.Module
    """The parsed PTX of a source file (parsed once per process)."""
    from ptxasw.parser import parse_ptx

    path = compile_ptx(source, arch, debug)
    return parse_ptx(path.read_text(), str(path))


def run_interpreter(
    kernel: Kernel, wg: int, args: Args, arch: str = "sm_90", debug: bool = False
) -> list[np.ndarray]:
    """Launch ``kernel`` in ptxasw's concrete interpreter; the output arguments' final contents.

    ``args`` are left as they were (the launch works on copies), so they can
    still be handed to the reference or to another engine.
    """
    from ptxasw.emulator.concrete.interpreter import launch

    grid, block = kernel.launch_shape(_batch_of(args), wg)
    fresh = copy_args(args)
    result = launch(
        load_module(kernel.source, arch, debug), kernel.symbol(wg), grid, block, fresh, strict=True
    )
    return [result.buffers[i] for i in kernel.outputs]


def copy_args(args: Args) -> Args:
    """Arrays copied, scalars shared: one engine's in-place writes do not reach another's inputs."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _batch_of(args: Args) -> int:
    return next(a.shape[0] for a in args if isinstance(a, np.ndarray))
