"""The shuffle-synthesis kernel suite: one registry for the tests, the rewrite tests and the GPU benchmark.

Every kernel of ``benchmarks/kernels/*.cu`` is described once here: its source,
PTX symbol, parameters, the block shapes real code launches it with, how to
make random arguments for a problem shape, its launch grid, which arguments it
writes and a NumPy reference computed from the mathematics. Keeping this in one
place means the CPU tests (concrete interpreter), the original-vs-rewritten
comparison and the GPU timing all run exactly the same launches.

Conventions
-----------
* A problem ``shape`` is ``(nx, ny)`` or ``(nx, ny, nz)`` with ``nx`` the
  fastest (contiguous) dimension; arrays are flat, row-major, ``nz*ny*nx``
  long. ``matmul`` takes ``(nx, ny, nk)`` and ``matvec`` ``(m, n)``.
* Blocks are ``(x, y, z)`` triples; `Kernel.grid` rounds the thread space up,
  so the last block of every dimension may be partial.
* Outputs start out as random values, not zeros: points a kernel must not
  write (the boundary) then show up as differences if they are written.
* `Kernel.reference` computes in float64 from the (float32 or float64) inputs
  and returns float64 arrays (int32 for ``gameoflife``). The CUDA code rounds
  every operation to the element type and nvcc contracts multiply-adds into
  FMAs, so float results agree only to a tolerance: `Kernel.check` accepts
  ``|out - ref| <= tol * max|ref|`` per output, with ``tol`` per kernel (1e-5
  for short float32 sums, 1e-4 for the long ones and ``sincos``, 1e-12 for
  float64, 0 for integers). A wrong neighbour or a stale lane changes a value
  by the size of a term, orders of magnitude above these bounds.
* Comparing two PTX versions of a kernel (original against rewritten) needs no
  tolerance: `run_kernel` with the same ``seed`` gives the same inputs, and
  the outputs must be equal bit for bit.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

HERE = Path(__file__).resolve().parent

Shape = tuple[int, ...]
Block = tuple[int, int, int]
Args = list  # NumPy arrays and NumPy scalars, in parameter order


# --------------------------------------------------------------------------
# Registry types


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``kind`` is ``f32``/``f64``/``i32`` with a ``*`` for pointers."""

    name: str
    kind: str

    @property
    def is_pointer(self) -> bool:
        return self.kind.endswith("*")

    @property
    def dtype(self) -> np.dtype:
        return np.dtype({"f32": np.float32, "f64": np.float64, "i32": np.int32}[self.kind.rstrip("*")])


class Case(NamedTuple):
    """One CI launch configuration: a problem shape and a block shape."""

    shape: Shape
    block: Block


@dataclass(frozen=True)
class Kernel:
    """A suite kernel: how to build, launch and check it."""

    name: str
    source: Path
    symbol: str
    params: tuple[Param, ...]
    blocks: tuple[Block, ...]
    """The block shapes real code launches this kernel with (first: the usual one)."""
    outputs: tuple[int, ...]
    """Indices of the arguments the kernel writes (in-place inputs included)."""
    make_args: Callable[[Shape, np.random.Generator], Args]
    """Random arguments, in parameter order, for a problem shape."""
    reference: Callable[[Args], dict[int, np.ndarray]]
    """NumPy results from the mathematics, keyed by output argument index."""
    tolerance: float
    """Accepted error relative to the largest reference magnitude (see the module doc)."""
    radius: int
    """How far the kernel reads along x (the shuffle distance of interest); sizes CI shapes."""
    ndim: int
    description: str
    threads: Callable[[Shape], tuple[int, int, int]] | None = None
    """The thread space for a problem shape (default: the shape itself, padded with 1s)."""

    def thread_space(self, shape: Shape) -> tuple[int, int, int]:
        if self.threads is not None:
            return self.threads(shape)
        padded = (*shape, 1, 1)
        return (padded[0], padded[1], padded[2])

    def grid(self, shape: Shape, block: Sequence[int]) -> tuple[int, int, int]:
        """Blocks per dimension covering the thread space (the last block may be partial)."""
        space = self.thread_space(shape)
        b = (*block, 1, 1)
        return (-(-space[0] // b[0]), -(-space[1] // b[1]), -(-space[2] // b[2]))

    @property
    def dtype(self) -> np.dtype:
        """The element type of the first output."""
        return self.params[self.outputs[0]].dtype

    def check(self, outputs: dict[int, np.ndarray], reference: dict[int, np.ndarray]) -> list[str]:
        """Differences between kernel outputs and the reference beyond the tolerance (empty: equal)."""
        problems = []
        for index, ref in reference.items():
            out = np.asarray(outputs[index])
            name = self.params[index].name
            if out.shape != ref.shape:
                problems.append(f"{self.name}.{name}: shape {out.shape} != {ref.shape}")
                continue
            if self.tolerance == 0:
                bad = np.flatnonzero(out != ref)
                limit = 0.0
            else:
                err = np.abs(out.astype(np.float64) - ref)
                limit = self.tolerance * max(float(np.max(np.abs(ref))), 1e-30)
                bad = np.flatnonzero(~(err <= limit))
            if bad.size:
                first = bad[0]
                problems.append(
                    f"{self.name}.{name}: {bad.size} of {out.size} elements differ beyond {limit:.3g}, "
                    f"first at {first}: {out.flat[first]!r} vs reference {ref.flat[first]!r}"
                )
        return problems


# --------------------------------------------------------------------------
# Helpers for arguments and references


def _size(shape: Shape) -> int:
    return int(np.prod(shape))


def _uniform(rng: np.random.Generator, n: int, lo: float, hi: float, dtype=np.float32) -> np.ndarray:
    return rng.uniform(lo, hi, n).astype(dtype)


def _grid3(shape: Shape) -> tuple[int, int, int]:
    """(nz, ny, nx) of a 2-D or 3-D problem shape (nz = 1 in 2-D)."""
    nx, ny, *rest = shape
    return (rest[0] if rest else 1, ny, nx)


def _field(array: np.ndarray, shape: Shape) -> np.ndarray:
    """A flat array as float64 (nz, ny, nx)."""
    return np.asarray(array, dtype=np.float64).reshape(_grid3(shape))


class _Interior:
    """Shifted views of the points lo <= index < n - hi in every dimension of a problem.

    ``at(a, dx, dy, dz)`` is the field ``a`` read at (i+dx, j+dy, k+dz) for every
    interior point (i, j, k): the NumPy form of ``a[idx + dx + dy*nx + dz*nx*ny]``.
    In 2-D the z dimension has no halo.
    """

    def __init__(self, shape: Shape, lo: int, hi: int) -> None:
        self.nz, self.ny, self.nx = _grid3(shape)
        self.lo, self.hi = lo, hi
        self.zlo, self.zhi = (lo, hi) if len(shape) == 3 else (0, 0)

    def at(self, a: np.ndarray, dx: int = 0, dy: int = 0, dz: int = 0) -> np.ndarray:
        return a[
            self.zlo + dz : self.nz - self.zhi + dz,
            self.lo + dy : self.ny - self.hi + dy,
            self.lo + dx : self.nx - self.hi + dx,
        ]

    def store(self, out_initial: np.ndarray, shape: Shape, value: np.ndarray) -> np.ndarray:
        """The output array: its initial contents with the interior replaced by ``value``."""
        result = _field(out_initial, shape).copy()
        self.at(result)[...] = value
        return result.reshape(-1)


def _scalar(value: float, dtype: np.dtype) -> np.generic:
    return np.dtype(dtype).type(value)


def _p(spec: str) -> tuple[Param, ...]:
    """Parameters from ``"name:kind name:kind ..."``."""
    return tuple(Param(*item.split(":")) for item in spec.split())


# --------------------------------------------------------------------------
# Kernels: arguments and references


def _dims_args(shape: Shape) -> list[np.int32]:
    return [np.int32(n) for n in shape]


# vecadd -------------------------------------------------------------------


def _vecadd_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    return [_uniform(rng, n, -1, 1), _uniform(rng, n, -1, 1), _uniform(rng, n, -1, 1), *_dims_args(shape)]


def _vecadd_ref(args: Args) -> dict[int, np.ndarray]:
    return {2: args[0].astype(np.float64) + args[1]}


# sincos -------------------------------------------------------------------


def _sincos_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    x = _uniform(rng, n, -4, 4)
    x[rng.random(n) < 0.05] *= 3.0e4  # a few large arguments: the slow range reduction path
    return [x, _uniform(rng, n, -4, 4), _uniform(rng, n, -1, 1), *_dims_args(shape)]


def _sincos_ref(args: Args) -> dict[int, np.ndarray]:
    return {2: np.sin(args[0].astype(np.float64)) + np.cos(args[1].astype(np.float64))}


# divergence ---------------------------------------------------------------


def _divergence_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    fields = [_uniform(rng, n, -1, 1) for _ in range(4)]
    coeffs = [np.float32(rng.uniform(0.5, 2.0)) for _ in range(3)]
    return [*fields, *coeffs, *_dims_args(shape)]


def _divergence_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[7:10])
    g = _Interior(shape, 1, 1)
    u, v, w = (_field(a, shape) for a in args[:3])
    alpha, beta, gamma = (float(c) for c in args[4:7])
    value = (
        alpha * (g.at(u, 1) - g.at(u, -1))
        + beta * (g.at(v, 0, 1) - g.at(v, 0, -1))
        + gamma * (g.at(w, 0, 0, 1) - g.at(w, 0, 0, -1))
    )
    return {3: g.store(args[3], shape, value)}


# gradient -----------------------------------------------------------------


def _gradient_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    fields = [_uniform(rng, n, -1, 1) for _ in range(4)]
    coeffs = [np.float32(rng.uniform(0.5, 2.0)) for _ in range(3)]
    return [*fields, *coeffs, *_dims_args(shape)]


def _gradient_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[7:10])
    g = _Interior(shape, 1, 1)
    f = _field(args[0], shape)
    result = {}
    for out, coeff, step in ((1, args[4], (1, 0, 0)), (2, args[5], (0, 1, 0)), (3, args[6], (0, 0, 1))):
        minus = tuple(-s for s in step)
        result[out] = g.store(args[out], shape, 0.5 * float(coeff) * (g.at(f, *step) - g.at(f, *minus)))
    return result


# laplacian ----------------------------------------------------------------


def _laplacian_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    u, out = _uniform(rng, n, -1, 1), _uniform(rng, n, -1, 1)
    return [u, out, np.float32(-6.0 * 0.4), np.float32(0.4), *_dims_args(shape)]


def _laplacian_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[4:7])
    g = _Interior(shape, 1, 1)
    u = _field(args[0], shape)
    near = sum(g.at(u, *d) for d in _FACES)
    return {1: g.store(args[1], shape, float(args[2]) * g.at(u) + float(args[3]) * near)}


_FACES = ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1))


# jacobi -------------------------------------------------------------------


def _jacobi_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    weights = [np.float32(w) for w in (0.5, 0.1, 0.025)]
    return [_uniform(rng, n, -1, 1), _uniform(rng, n, -1, 1), *weights, *_dims_args(shape)]


def _jacobi_ref(args: Args) -> dict[int, np.ndarray]:
    shape = (int(args[5]), int(args[6]))
    g = _Interior(shape, 1, 1)
    a = _field(args[0], shape)
    edges = g.at(a, 0, -1) + g.at(a, -1) + g.at(a, 1) + g.at(a, 0, 1)
    corners = g.at(a, -1, -1) + g.at(a, 1, -1) + g.at(a, -1, 1) + g.at(a, 1, 1)
    w0, w1, w2 = (float(w) for w in args[2:5])
    return {1: g.store(args[1], shape, w0 * g.at(a) + w1 * edges + w2 * corners)}


# gameoflife ---------------------------------------------------------------


def _gameoflife_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    board = (rng.random(n) < 0.4).astype(np.int32)
    nxt = rng.integers(-5, 5, n, dtype=np.int32)
    return [board, nxt, *_dims_args(shape)]


def _gameoflife_ref(args: Args) -> dict[int, np.ndarray]:
    shape = (int(args[2]), int(args[3]))
    g = _Interior(shape, 1, 1)
    b = np.asarray(args[0]).reshape(_grid3(shape))
    count = sum(g.at(b, dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (dx, dy) != (0, 0))
    alive = (count == 3) | ((count == 2) & (g.at(b) != 0))
    result = np.asarray(args[1]).reshape(_grid3(shape)).copy()
    g.at(result)[...] = alive.astype(np.int32)
    return {1: result.reshape(-1)}


# gaussblur ----------------------------------------------------------------

_BINOMIAL5 = np.array([1, 4, 6, 4, 1], dtype=np.float64) / 16


def _gaussblur_args(dtype: type) -> Callable[[Shape, np.random.Generator], Args]:
    def make(shape: Shape, rng: np.random.Generator) -> Args:
        n = _size(shape)
        return [_uniform(rng, n, 0, 1, dtype), _uniform(rng, n, -1, 1, dtype), *_dims_args(shape)]

    return make


def _gaussblur_ref(args: Args) -> dict[int, np.ndarray]:
    shape = (int(args[2]), int(args[3]))
    g = _Interior(shape, 2, 2)
    a = _field(args[0], shape)
    value = sum(
        _BINOMIAL5[dy + 2] * _BINOMIAL5[dx + 2] * g.at(a, dx, dy)
        for dy in range(-2, 3)
        for dx in range(-2, 3)
    )
    return {1: g.store(args[1], shape, value)}


# matmul / matvec ----------------------------------------------------------


def _matmul_args(shape: Shape, rng: np.random.Generator) -> Args:
    nx, ny, nk = shape
    a = _uniform(rng, ny * nk, -1, 1)
    b = _uniform(rng, nk * nx, -1, 1)
    return [a, b, _uniform(rng, ny * nx, -1, 1), np.int32(nx), np.int32(ny), np.int32(nk)]


def _matmul_ref(args: Args) -> dict[int, np.ndarray]:
    nx, ny, nk = (int(n) for n in args[3:6])
    a = args[0].astype(np.float64).reshape(ny, nk)
    b = args[1].astype(np.float64).reshape(nk, nx)
    return {2: (a @ b).reshape(-1)}


def _matvec_args(shape: Shape, rng: np.random.Generator) -> Args:
    m, n = shape
    return [
        _uniform(rng, m * n, -1, 1),
        _uniform(rng, n, -1, 1),
        _uniform(rng, m, -1, 1),
        np.int32(m),
        np.int32(n),
    ]


def _matvec_ref(args: Args) -> dict[int, np.ndarray]:
    m, n = int(args[3]), int(args[4])
    return {2: args[0].astype(np.float64).reshape(m, n) @ args[1].astype(np.float64)}


# tricubic / tricubic2 -----------------------------------------------------


def _lagrange4(t: np.ndarray) -> list[np.ndarray]:
    """Cubic Lagrange weights of the nodes -1, 0, 1, 2 at t."""
    return [
        -t * (t - 1) * (t - 2) / 6,
        (t + 1) * (t - 1) * (t - 2) / 2,
        -(t + 1) * t * (t - 2) / 2,
        (t + 1) * t * (t - 1) / 6,
    ]


def _catmull_rom4(t: np.ndarray) -> list[np.ndarray]:
    """Catmull-Rom weights of the nodes -1, 0, 1, 2 at t."""
    t2, t3 = t * t, t * t * t
    return [
        0.5 * (-t3 + 2 * t2 - t),
        0.5 * (3 * t3 - 5 * t2 + 2),
        0.5 * (-3 * t3 + 4 * t2 + t),
        0.5 * (t3 - t2),
    ]


def _tricubic_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    offsets = [_uniform(rng, n, 0, 1) for _ in range(3)]
    return [_uniform(rng, n, -1, 1), *offsets, _uniform(rng, n, -1, 1), *_dims_args(shape)]


def _tricubic_ref(
    weights: Callable[[np.ndarray], list[np.ndarray]],
) -> Callable[[Args], dict[int, np.ndarray]]:
    def reference(args: Args) -> dict[int, np.ndarray]:
        shape = tuple(int(n) for n in args[5:8])
        g = _Interior(shape, 1, 2)
        u = _field(args[0], shape)
        wx, wy, wz = (weights(g.at(_field(a, shape))) for a in args[1:4])
        value = sum(
            wz[c] * wy[b] * wx[a] * g.at(u, a - 1, b - 1, c - 1)
            for c in range(4)
            for b in range(4)
            for a in range(4)
        )
        return {4: g.store(args[4], shape, value)}

    return reference


# uxx1 ---------------------------------------------------------------------


def _uxx1_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    stresses = [_uniform(rng, n, -1, 1) for _ in range(3)]
    coeffs = [np.float32(0.1), np.float32(9.0 / 8.0), np.float32(-1.0 / 24.0)]
    return [_uniform(rng, n, -1, 1), *stresses, _uniform(rng, n, 1, 2), *coeffs, *_dims_args(shape)]


def _uxx1_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[8:11])
    g = _Interior(shape, 2, 2)
    u1, xx, xy, xz, d = (_field(a, shape) for a in args[:5])
    dth, c1, c2 = (float(c) for c in args[5:8])
    d1 = 0.25 * (g.at(d) + g.at(d, 0, -1) + g.at(d, 0, 0, -1) + g.at(d, 0, -1, -1))
    sx = c1 * (g.at(xx) - g.at(xx, -1)) + c2 * (g.at(xx, 1) - g.at(xx, -2))
    sy = c1 * (g.at(xy) - g.at(xy, 0, -1)) + c2 * (g.at(xy, 0, 1) - g.at(xy, 0, -2))
    sz = c1 * (g.at(xz) - g.at(xz, 0, 0, -1)) + c2 * (g.at(xz, 0, 0, 1) - g.at(xz, 0, 0, -2))
    return {0: g.store(args[0], shape, g.at(u1) + dth / d1 * (sx + sy + sz))}


# wave13pt -----------------------------------------------------------------


def _wave13pt_args(dtype: type) -> Callable[[Shape, np.random.Generator], Args]:
    def make(shape: Shape, rng: np.random.Generator) -> Args:
        n = _size(shape)
        fields = [_uniform(rng, n, -1, 1, dtype) for _ in range(3)]
        c = 0.1  # (c dt / h)^2
        coeffs = [_scalar(v, dtype) for v in (2 - 7.5 * c, 4 / 3 * c, -1 / 12 * c)]
        return [*fields, *coeffs, *_dims_args(shape)]

    return make


def _wave13pt_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[6:9])
    g = _Interior(shape, 2, 2)
    w0, w1 = _field(args[0], shape), _field(args[1], shape)
    near = sum(g.at(w1, *d) for d in _FACES)
    far = sum(g.at(w1, *(2 * s for s in d)) for d in _FACES)
    m0, m1, m2 = (float(c) for c in args[3:6])
    return {2: g.store(args[2], shape, m0 * g.at(w1) + m1 * near + m2 * far - g.at(w0))}


# whispering ---------------------------------------------------------------


def _whispering_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    nx, ny = shape
    fields = [_uniform(rng, n, -1, 1) for _ in range(3)]
    # ce = dt / (eps h): a dielectric disk (eps = 4) in vacuum.
    y, x = np.mgrid[0:ny, 0:nx]
    disk = (x - nx / 2) ** 2 + (y - ny / 2) ** 2 < (min(nx, ny) / 3) ** 2
    ce = np.where(disk, 0.5 / 4.0, 0.5).astype(np.float32).reshape(-1)
    outs = [_uniform(rng, n, -1, 1) for _ in range(3)]
    return [*fields, ce, *outs, np.float32(0.5), *_dims_args(shape)]


def _whispering_ref(args: Args) -> dict[int, np.ndarray]:
    shape = (int(args[8]), int(args[9]))
    g = _Interior(shape, 1, 1)
    ex, ey, hz, ce = (_field(a, shape) for a in args[:4])
    ch = float(args[7])
    h = g.at(hz)
    exn = g.at(ex) + g.at(ce) * (h - g.at(hz, 0, -1))
    eyn = g.at(ey) - g.at(ce) * (h - g.at(hz, -1))
    exn_up = g.at(ex, 0, 1) + g.at(ce, 0, 1) * (g.at(hz, 0, 1) - h)
    eyn_right = g.at(ey, 1) - g.at(ce, 1) * (g.at(hz, 1) - h)
    hzn = h + ch * ((exn_up - exn) - (eyn_right - eyn))
    return {4: g.store(args[4], shape, exn), 5: g.store(args[5], shape, eyn), 6: g.store(args[6], shape, hzn)}


# lapgsrb ------------------------------------------------------------------


def _lapgsrb_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    u, f = _uniform(rng, n, -1, 1), _uniform(rng, n, -1, 1)
    a = _uniform(rng, n, 0.5, 1.5)
    bx, by, bz = (_uniform(rng, n, 0.5, 1.5) for _ in range(3))
    dinv = _uniform(rng, n, 0.05, 0.15)
    color = np.int32(rng.integers(0, 2))
    return [u, f, a, bx, by, bz, dinv, np.float32(0.5), np.float32(0.8), color, *_dims_args(shape)]


def _lapgsrb_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[10:13])
    g = _Interior(shape, 1, 1)
    u, f, a, bx, by, bz, dinv = (_field(x, shape) for x in args[:7])
    alpha, beta_h2inv, color = float(args[7]), float(args[8]), int(args[9])
    c = g.at(u)
    div = (
        g.at(bx, 1) * (g.at(u, 1) - c)
        - g.at(bx) * (c - g.at(u, -1))
        + g.at(by, 0, 1) * (g.at(u, 0, 1) - c)
        - g.at(by) * (c - g.at(u, 0, -1))
        + g.at(bz, 0, 0, 1) * (g.at(u, 0, 0, 1) - c)
        - g.at(bz) * (c - g.at(u, 0, 0, -1))
    )
    relaxed = c + g.at(dinv) * (g.at(f) - (alpha * g.at(a) * c - beta_h2inv * div))
    k, j, i = np.meshgrid(*(np.arange(g.lo, n - g.hi) for n in (g.nz, g.ny, g.nx)), indexing="ij")
    value = np.where((i + j + k + color) % 2 == 0, relaxed, c)
    return {0: g.store(args[0], shape, value)}


# hypterm ------------------------------------------------------------------

_D8 = ((1, 0.8), (2, -0.2), (3, 4.0 / 105.0), (4, -1.0 / 280.0))


def _d8(g: _Interior, fn: Callable[[tuple[int, int, int]], np.ndarray], axis: int) -> np.ndarray:
    """8th-order central difference (times h) of the pointwise expression ``fn(offset)`` along ``axis``."""

    def offset(s: int) -> tuple[int, int, int]:
        return tuple(s if a == axis else 0 for a in range(3))  # type: ignore[return-value]

    return sum(c * (fn(offset(s)) - fn(offset(-s))) for s, c in _D8)


def _hypterm_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    cons = [_uniform(rng, n, -1, 1) for _ in range(3)] + [_uniform(rng, n, 2, 3)]
    prim = [_uniform(rng, n, -1, 1) for _ in range(3)] + [_uniform(rng, n, 1, 2)]
    fluxes = [_uniform(rng, n, -1, 1) for _ in range(5)]
    return [*cons, *prim, *fluxes, np.float32(1.0), np.float32(1.25), np.float32(0.8), *_dims_args(shape)]


def _hypterm_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[16:19])
    g = _Interior(shape, 4, 4)
    mx, my, mz, e, qu, qv, qw, p = (_field(a, shape) for a in args[:8])
    rd = [float(r) for r in args[13:16]]
    vel = (qu, qv, qw)

    def at(a: np.ndarray) -> Callable[[tuple[int, int, int]], np.ndarray]:
        return lambda o: g.at(a, *o)

    def flux(momentum: np.ndarray, pressure_axis: int | None) -> np.ndarray:
        total = 0.0
        for axis in range(3):

            def term(o: tuple[int, int, int], axis: int = axis) -> np.ndarray:
                value = g.at(momentum, *o) * g.at(vel[axis], *o)
                return value + g.at(p, *o) if axis == pressure_axis else value

            total = total + _d8(g, term, axis) * rd[axis]
        return -total

    rho = -(_d8(g, at(mx), 0) * rd[0] + _d8(g, at(my), 1) * rd[1] + _d8(g, at(mz), 2) * rd[2])
    energy = -sum(
        _d8(g, lambda o, a=axis: (g.at(e, *o) + g.at(p, *o)) * g.at(vel[a], *o), axis) * rd[axis]
        for axis in range(3)
    )
    values = [rho, flux(mx, 0), flux(my, 1), flux(mz, 2), energy]
    return {8 + n: g.store(args[8 + n], shape, v) for n, v in enumerate(values)}


# seismic_rhs --------------------------------------------------------------

_D4 = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))  # 4th-order first difference, times 12 h
_D4_2 = ((-2, -1.0), (-1, 16.0), (0, -30.0), (1, 16.0), (2, -1.0))  # second difference, times 12 h^2


def _unit(axis: int, s: int) -> np.ndarray:
    v = np.zeros(3, dtype=int)
    v[axis] = s
    return v


def _seismic_args(shape: Shape, rng: np.random.Generator) -> Args:
    n = _size(shape)
    u = [_uniform(rng, n, -1, 1) for _ in range(3)]
    mu, la, rho = (_uniform(rng, n, 1, 2) for _ in range(3))
    outs = [_uniform(rng, n, -1, 1) for _ in range(3)]
    return [*u, mu, la, rho, *outs, np.float32(0.5), *_dims_args(shape)]


def _seismic_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[10:13])
    g = _Interior(shape, 2, 2)
    u = [_field(a, shape) for a in args[:3]]
    mu, la, rho = (_field(a, shape) for a in args[3:6])
    h = float(args[9])

    def at(a: np.ndarray, o: np.ndarray) -> np.ndarray:
        return g.at(a, *(int(x) for x in o))

    def d1(a: np.ndarray, axis: int, base: np.ndarray | None = None) -> np.ndarray:
        base = np.zeros(3, dtype=int) if base is None else base
        return sum(c * at(a, base + _unit(axis, s)) for s, c in _D4) / (12 * h)

    def d2(a: np.ndarray, axis: int) -> np.ndarray:
        return sum(c * at(a, _unit(axis, s)) for s, c in _D4_2) / (12 * h * h)

    def dd(a: np.ndarray, ax1: int, ax2: int) -> np.ndarray:
        return sum(c * d1(a, ax2, _unit(ax1, s)) for s, c in _D4) / (12 * h)

    m, lam = g.at(mu), g.at(la)
    du = [[d1(u[c], d) for d in range(3)] for c in range(3)]  # du[c][d] = d u_c / d x_d
    dmu = [d1(mu, d) for d in range(3)]
    divu = du[0][0] + du[1][1] + du[2][2]
    result = {}
    for c in range(3):
        others = [d for d in range(3) if d != c]
        rhs = (
            (lam + 2 * m) * d2(u[c], c)
            + m * sum(d2(u[c], d) for d in others)
            + (lam + m) * sum(dd(u[d], c, d) for d in others)
            + d1(la, c) * divu
            + sum(dmu[d] * (du[c][d] + du[d][c]) for d in range(3))
        )
        result[6 + c] = g.store(args[6 + c], shape, rhs / g.at(rho))
    return result


# deriv8 -------------------------------------------------------------------


def _deriv8_args(dtype: type) -> Callable[[Shape, np.random.Generator], Args]:
    def make(shape: Shape, rng: np.random.Generator) -> Args:
        n = _size(shape)
        fields = [_uniform(rng, n, -1, 1, dtype) for _ in range(7)]
        scales = [_scalar(v, dtype) for v in (1.0, 1.25, 0.8)]
        return [*fields, *scales, *_dims_args(shape)]

    return make


def _deriv8_ref(args: Args) -> dict[int, np.ndarray]:
    shape = tuple(int(n) for n in args[10:13])
    g = _Interior(shape, 4, 4)
    u, v, w = (_field(a, shape) for a in args[:3])
    rd = [float(r) for r in args[7:10]]

    def d(a: np.ndarray, axis: int) -> np.ndarray:
        return _d8(g, lambda o: g.at(a, *o), axis) * rd[axis]

    values = {
        3: d(u, 0) + d(v, 1) + d(w, 2),
        4: d(w, 1) - d(v, 2),
        5: d(u, 2) - d(w, 0),
        6: d(v, 0) - d(u, 1),
    }
    return {i: g.store(args[i], shape, value) for i, value in values.items()}


# --------------------------------------------------------------------------
# The registry

_B2D = ((32, 8, 1), (16, 16, 1), (128, 1, 1), (64, 4, 1))
_B3D = ((32, 8, 1), (64, 4, 1), (128, 1, 1), (32, 4, 2))
_DIMS2 = "nx:i32 ny:i32"
_DIMS3 = "nx:i32 ny:i32 nz:i32"


def _kernel(
    name: str,
    params: str,
    outputs: tuple[int, ...],
    make_args: Callable[[Shape, np.random.Generator], Args],
    reference: Callable[[Args], dict[int, np.ndarray]],
    *,
    description: str,
    ndim: int = 3,
    radius: int = 0,
    tolerance: float = 1e-5,
    source: str | None = None,
    symbol: str | None = None,
    blocks: tuple[Block, ...] | None = None,
    threads: Callable[[Shape], tuple[int, int, int]] | None = None,
) -> Kernel:
    return Kernel(
        name=name,
        source=HERE / f"{source or name}.cu",
        symbol=symbol or name,
        params=_p(params),
        blocks=blocks or (_B3D if ndim == 3 else _B2D),
        outputs=outputs,
        make_args=make_args,
        reference=reference,
        tolerance=tolerance,
        radius=radius,
        ndim=ndim,
        description=description,
        threads=threads,
    )


def _gaussblur(name: str, real: str, dtype: type, tolerance: float) -> Kernel:
    return _kernel(
        name,
        f"in:{real}* out:{real}* {_DIMS2}",
        (1,),
        _gaussblur_args(dtype),
        _gaussblur_ref,
        ndim=2,
        radius=2,
        tolerance=tolerance,
        source="gaussblur",
        description=f"5x5 binomial blur of a 2-D image ({real}); 25 loads, 5 per row at idx-2..idx+2",
    )


def _wave13pt(name: str, real: str, dtype: type, tolerance: float) -> Kernel:
    return _kernel(
        name,
        f"w0:{real}* w1:{real}* w2:{real}* m0:{real} m1:{real} m2:{real} {_DIMS3}",
        (2,),
        _wave13pt_args(dtype),
        _wave13pt_ref,
        radius=2,
        tolerance=tolerance,
        source="wave13pt",
        description=f"3-D wave equation leapfrog step, 13-point 4th-order Laplacian ({real}); 14 loads",
    )


def _deriv8(name: str, real: str, dtype: type, tolerance: float) -> Kernel:
    return _kernel(
        name,
        f"u:{real}* v:{real}* w:{real}* div:{real}* cx:{real}* cy:{real}* cz:{real}* "
        f"rdx:{real} rdy:{real} rdz:{real} {_DIMS3}",
        (3, 4, 5, 6),
        _deriv8_args(dtype),
        _deriv8_ref,
        radius=4,
        tolerance=tolerance,
        source="deriv8",
        description=f"divergence and curl with 8th-order first derivatives ({real}); 72 loads",
    )


KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        _kernel(
            "divergence",
            f"u:f32* v:f32* w:f32* div:f32* alpha:f32 beta:f32 gamma:f32 {_DIMS3}",
            (3,),
            _divergence_args,
            _divergence_ref,
            radius=1,
            description="div of a 3-D vector field, 2nd-order central differences; 6 loads, u at idx+-1",
        ),
        _kernel(
            "gameoflife",
            f"board:i32* next:i32* {_DIMS2}",
            (1,),
            _gameoflife_args,
            _gameoflife_ref,
            ndim=2,
            radius=1,
            tolerance=0.0,
            description="one Game of Life generation (int 0/1 board); 9 loads, 3 per row",
        ),
        _gaussblur("gaussblur", "f32", np.float32, 1e-5),
        _gaussblur("gaussblur_f64", "f64", np.float64, 1e-12),
        _kernel(
            "gradient",
            f"f:f32* gx:f32* gy:f32* gz:f32* rhx:f32 rhy:f32 rhz:f32 {_DIMS3}",
            (1, 2, 3),
            _gradient_args,
            _gradient_ref,
            radius=1,
            description="grad of a 3-D scalar field into three arrays (may alias); 6 loads",
        ),
        _kernel(
            "jacobi",
            f"in:f32* out:f32* w0:f32 w1:f32 w2:f32 {_DIMS2}",
            (1,),
            _jacobi_args,
            _jacobi_ref,
            ndim=2,
            radius=1,
            description="weighted 2-D 9-point Jacobi sweep; 9 loads, 3 per row",
        ),
        _kernel(
            "lapgsrb",
            "u:f32* f:f32* a:f32* bx:f32* by:f32* bz:f32* dinv:f32* alpha:f32 beta_h2inv:f32 color:i32 "
            + _DIMS3,
            (0,),
            _lapgsrb_args,
            _lapgsrb_ref,
            radius=1,
            description="red-black Gauss-Seidel half sweep, variable Helmholtz operator, in place; 16 loads",
        ),
        _kernel(
            "laplacian",
            f"u:f32* out:f32* c0:f32 c1:f32 {_DIMS3}",
            (1,),
            _laplacian_args,
            _laplacian_ref,
            radius=1,
            description="3-D 7-point Laplacian; 7 loads, u at idx-1, idx, idx+1",
        ),
        _kernel(
            "matmul",
            "a:f32* b:f32* c:f32* nx:i32 ny:i32 nk:i32",
            (2,),
            _matmul_args,
            _matmul_ref,
            ndim=2,
            tolerance=1e-5,
            threads=lambda shape: (shape[0], shape[1], 1),
            description="C = A B, one thread per element of C, sequential k loop; no neighbour reuse",
        ),
        _kernel(
            "matvec",
            "a:f32* x:f32* y:f32* m:i32 n:i32",
            (2,),
            _matvec_args,
            _matvec_ref,
            ndim=1,
            blocks=((128, 1, 1), (256, 1, 1), (64, 1, 1)),
            threads=lambda shape: (shape[0], 1, 1),
            description="y = A x, one thread per row, sequential loop; no neighbour reuse",
        ),
        _kernel(
            "sincos",
            f"x:f32* y:f32* xy:f32* {_DIMS3}",
            (2,),
            _sincos_args,
            _sincos_ref,
            tolerance=1e-6,
            symbol="sincos_kernel",
            description="xy = sin(x) + cos(y) pointwise (libm, slow range reduction for large x); 2 loads",
        ),
        _kernel(
            "tricubic",
            f"u:f32* dx:f32* dy:f32* dz:f32* out:f32* {_DIMS3}",
            (4,),
            _tricubic_args,
            _tricubic_ref(_lagrange4),
            radius=2,
            tolerance=1e-5,
            description="tricubic Lagrange interpolation from the 4x4x4 neighbourhood; 67 loads",
        ),
        _kernel(
            "tricubic2",
            f"u:f32* dx:f32* dy:f32* dz:f32* out:f32* {_DIMS3}",
            (4,),
            _tricubic_args,
            _tricubic_ref(_catmull_rom4),
            radius=2,
            tolerance=1e-5,
            description="tricubic Catmull-Rom interpolation, evaluated separably (rows first); 67 loads",
        ),
        _kernel(
            "uxx1",
            f"u1:f32* xx:f32* xy:f32* xz:f32* d:f32* dth:f32 c1:f32 c2:f32 {_DIMS3}",
            (0,),
            _uxx1_args,
            _uxx1_ref,
            radius=2,
            description="staggered 4th-order elastic velocity update (AWP-ODC uxx1), in place; 17 loads",
        ),
        _kernel(
            "vecadd",
            f"a:f32* b:f32* c:f32* {_DIMS3}",
            (2,),
            _vecadd_args,
            _vecadd_ref,
            tolerance=1e-7,
            description="c = a + b over a 3-D grid; 2 loads",
        ),
        _wave13pt("wave13pt", "f32", np.float32, 1e-5),
        _wave13pt("wave13pt_f64", "f64", np.float64, 1e-12),
        _kernel(
            "whispering",
            f"ex:f32* ey:f32* hz:f32* ce:f32* ex2:f32* ey2:f32* hz2:f32* ch:f32 {_DIMS2}",
            (4, 5, 6),
            _whispering_args,
            _whispering_ref,
            ndim=2,
            radius=1,
            description="2-D TE FDTD step (E then H, dielectric disk), outputs may alias; 12 loads",
        ),
        _kernel(
            "hypterm",
            "imx:f32* imy:f32* imz:f32* iene:f32* qu:f32* qv:f32* qw:f32* qpres:f32* flux_rho:f32* "
            f"flux_mx:f32* flux_my:f32* flux_mz:f32* flux_e:f32* rdx:f32 rdy:f32 rdz:f32 {_DIMS3}",
            (8, 9, 10, 11, 12),
            _hypterm_args,
            _hypterm_ref,
            radius=4,
            tolerance=1e-4,
            description="compressible Navier-Stokes hyperbolic fluxes (ExpCNS hypterm), 8th order; 144 loads",
        ),
        _kernel(
            "seismic_rhs",
            f"ux:f32* uy:f32* uz:f32* mu:f32* la:f32* rho:f32* ax:f32* ay:f32* az:f32* h:f32 {_DIMS3}",
            (6, 7, 8),
            _seismic_args,
            _seismic_ref,
            radius=2,
            tolerance=1e-4,
            description="4th-order elastic RHS, variable mu and lambda (SW4 rhs4th3fort); 162 loads",
        ),
        _deriv8("deriv8", "f32", np.float32, 1e-4),
        _deriv8("deriv8_f64", "f64", np.float64, 1e-12),
    )
}

# The KernelGen OpenACC suite of the PTXASW paper (Table 2) and the application stencils (section 8.5).
KERNELGEN = (
    *("divergence", "gameoflife", "gaussblur", "gradient", "jacobi", "lapgsrb", "laplacian", "matmul"),
    *("matvec", "sincos", "tricubic", "tricubic2", "uxx1", "vecadd", "wave13pt", "whispering"),
)
APPLICATIONS = ("hypterm", "seismic_rhs", "deriv8")
WIDE_STENCILS = ("gaussblur", "tricubic", "tricubic2", "lapgsrb", "wave13pt", *APPLICATIONS)


def get(kernel: str | Kernel) -> Kernel:
    """The registry entry of a kernel given by name (or the entry itself)."""
    if isinstance(kernel, Kernel):
        return kernel
    try:
        return KERNELS[kernel]
    except KeyError:
        raise KeyError(f"no suite kernel {kernel!r} (known: {', '.join(KERNELS)})") from None


# --------------------------------------------------------------------------
# CI shapes


def small_shapes(kernel: str | Kernel) -> list[Case]:
    """Small odd launches for CI: partial warps and blocks, blockDim.x of 8, 16, 48, a one-block grid.

    Sizes grow with the kernel's read radius so that every configuration has
    interior points in several warps, and stay small enough for the concrete
    interpreter (a few thousand threads per launch at most).
    """
    k = get(kernel)
    natural = k.blocks[0]
    if k.name == "matvec":
        return [
            Case((77, 13), natural),
            Case((77, 13), (48, 1, 1)),
            Case((45, 9), (16, 1, 1)),
            Case((29, 5), (8, 1, 1)),
        ]
    if k.name == "matmul":
        return [
            Case((37, 11, 7), natural),
            Case((37, 11, 7), (48, 2, 1)),
            Case((21, 9, 5), (8, 8, 1)),
            Case((13, 7, 3), (16, 8, 1)),
        ]
    r = max(k.radius, 1)
    if k.ndim == 2:
        ny = 2 * r + 9
        return [
            Case((37, ny), natural),
            Case((37, ny), (48, 2, 1)),
            Case((45, ny - 2), (8, 4, 1)),
            Case((37, ny), (16, 16, 1)),
            Case((29, 2 * r + 5), (32, 16, 1)),  # one block
        ]
    side = 2 * r + 3  # at least one interior plane (three with radius 1)
    # One block covers the whole problem where 1024 threads allow it, else a whole x-y plane.
    one_block = (16, side, side) if 16 * side * side <= 1024 else (16, side, 1)
    return [
        Case((37, side + 2, side), natural),
        Case((37, side, side), (48, 2, 1)),
        Case((21, side + 2, side), (8, 4, 2)),
        Case((13, side, side), one_block),
    ]


def bytes_per_point(kernel: str | Kernel) -> int:
    """Bytes of array data per grid point (every pointer parameter holds one element per point)."""
    k = get(kernel)
    return sum(p.dtype.itemsize for p in k.params if p.is_pointer)


def gpu_shapes(kernel: str | Kernel, l2_bytes: int = 16 << 20, dram_bytes: int = 1 << 30) -> dict[str, Shape]:
    """Problem shapes for GPU timing: ``l2`` (arrays of ~16 MiB in all: resident in an H100's 50 MB L2)
    and ``dram`` (~1 GiB: every sweep streams from DRAM). ``nx`` is a multiple of 32 as production grids
    usually are; the interior (and so the edge warps) comes from the bounds checks."""
    k = get(kernel)
    if k.name == "matmul":  # 3 n^2 floats; n^3 work keeps the DRAM size moderate
        return {"l2": (1024, 1024, 1024), "dram": (4096, 4096, 4096)}
    if k.name == "matvec":  # m n + n + m floats
        return {"l2": (2048, 2048), "dram": (16384, 16384)}
    shapes = {}
    for label, budget in (("l2", l2_bytes), ("dram", dram_bytes)):
        points = budget // bytes_per_point(k)
        if k.ndim == 2:
            nx = 1024 if label == "l2" else 8192
            shapes[label] = (nx, max(points // nx, 2 * k.radius + 3))
        else:
            nx = 256 if label == "l2" else 512
            side = max(int((points / nx) ** 0.5), 2 * k.radius + 3)
            shapes[label] = (nx, side, max(points // (nx * side), 2 * k.radius + 3))
    return shapes


# --------------------------------------------------------------------------
# Compiling


def cache_dir() -> Path:
    """Where compiled PTX is kept: ``$PTXASW_CORPUS_CACHE/kernel-suite`` or a per-user temporary folder."""
    env = os.environ.get("PTXASW_CORPUS_CACHE")
    base = Path(env).expanduser() if env else Path(tempfile.gettempdir()) / f"ptxasw-cache-{os.getuid()}"
    path = base / "kernel-suite"
    path.mkdir(parents=True, exist_ok=True)
    return path


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _source_text(source: Path) -> bytes:
    """The source and the local files it includes (the cache key must change when either does)."""
    text = source.read_bytes()
    parts = [text]
    for name in _INCLUDE.findall(text.decode(errors="replace")):
        included = source.parent / name
        if included.exists():
            parts.append(_source_text(included))
    return b"\0".join(parts)


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout


def find_nvcc() -> str | None:
    return shutil.which("nvcc")


def compile_ptx(
    kernel_or_source: str | Kernel | Path,
    arch: str = "sm_90",
    debug: bool = False,
    out_dir: Path | None = None,
) -> Path:
    """PTX of a suite kernel (or any ``.cu`` file): ``nvcc --ptx -O3 -arch=ARCH`` (``-G`` when ``debug``).

    The result is cached by the content of the source (and the files it
    includes), the flags and the nvcc version, so each configuration compiles
    once; writes are atomic, so concurrent callers are safe.
    """
    source = kernel_or_source if isinstance(kernel_or_source, Path) else get(kernel_or_source).source
    nvcc = find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH: compiling the kernel suite needs the CUDA toolkit")
    flags = ["--ptx", f"-arch={arch}", "-G" if debug else "-O3"]
    key = hashlib.sha256(_source_text(source) + " ".join(flags).encode() + _nvcc_version(nvcc).encode())
    folder = out_dir or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{source.stem}-{arch}{'-G' if debug else ''}-{key.hexdigest()[:16]}.ptx"
    if out.exists():
        return out
    tmp = out.with_name(f"{out.stem}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    proc = subprocess.run(
        [nvcc, *flags, str(source), "-o", str(tmp)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"nvcc {' '.join(flags)} {source} failed:\n{proc.stdout}{proc.stderr}")
    os.replace(tmp, out)
    return out


def compile_many(
    requests: Iterable[tuple[str | Kernel | Path, str, bool]], jobs: int | None = None
) -> dict[tuple[str | Kernel | Path, str, bool], Path]:
    """`compile_ptx` for many ``(kernel_or_source, arch, debug)`` at once, in parallel (nvcc waits on I/O)."""
    todo = list(dict.fromkeys(requests))
    with ThreadPoolExecutor(max_workers=jobs or max(2, 2 * (os.cpu_count() or 1))) as pool:
        paths = pool.map(lambda r: compile_ptx(r[0], r[1], r[2]), todo)
        return dict(zip(todo, paths, strict=True))


# --------------------------------------------------------------------------
# Running in the concrete interpreter


@functools.lru_cache(maxsize=64)
def _parsed(path: str, mtime_ns: int, size: int):
    from ptxasw.parser import parse_ptx

    return parse_ptx(Path(path).read_text(), path)


def load_module(ptx: str | Path | object):
    """A parsed module from a PTX path (cached per file version) or a module as is."""
    if isinstance(ptx, str | Path):
        st = Path(ptx).stat()
        return _parsed(str(ptx), st.st_mtime_ns, st.st_size)
    return ptx


def global_loads(module, symbol: str) -> int:
    """How many global-memory loads the PTX of one kernel has (the paper's Table-2 denominator)."""
    from ptxasw.ir import isa

    fn = module.function(symbol)
    return sum(1 for inst in fn.instructions() if isa.is_load(inst) and isa.state_space(inst) == ".global")


def launch_args(kernel: str | Kernel, shape: Shape, seed: int) -> Args:
    """The random arguments `run_kernel` uses for ``seed`` (fresh arrays each call)."""
    return get(kernel).make_args(tuple(shape), np.random.default_rng(seed))


def run_kernel(
    ptx_path_or_module: str | Path | object,
    kernel: str | Kernel,
    shape: Shape,
    block: Sequence[int],
    seed: int = 0,
) -> dict[int, np.ndarray]:
    """Run a suite kernel in the concrete interpreter on ``make_args(shape, rng(seed))``.

    Returns the output arguments by index. Calling it with the same ``seed`` on
    two PTX versions of the kernel (original and rewritten) runs both on the
    same inputs, so their outputs can be compared bit for bit.
    """
    from ptxasw.emulator.concrete.interpreter import launch

    k = get(kernel)
    args = launch_args(k, shape, seed)
    block3 = tuple((*block, 1, 1)[:3])
    result = launch(load_module(ptx_path_or_module), k.symbol, k.grid(shape, block3), block3, args)
    if result.warnings:
        raise RuntimeError(f"{k.name}: the interpreter did not model everything: {result.warnings}")
    return {i: result.buffers[i] for i in k.outputs}


def same_bits(a: dict[int, np.ndarray], b: dict[int, np.ndarray]) -> list[int]:
    """Output indices whose arrays differ in any bit (NaN payloads and zero signs included)."""
    differ = []
    for i in a:
        x, y = np.ascontiguousarray(a[i]), np.ascontiguousarray(b[i])
        if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
            differ.append(i)
    return differ


# --------------------------------------------------------------------------
# Command line: the interpreter on the CI cases, as a table


def _measure(names: list[str]) -> list[dict]:
    rows = []
    paths = compile_many((n, "sm_90", False) for n in names)
    for name in names:
        k = KERNELS[name]
        ptx = paths[(name, "sm_90", False)]
        loads = global_loads(load_module(ptx), k.symbol)
        started = time.perf_counter()
        problems = []
        threads = 0
        for seed, case in enumerate(small_shapes(k)):
            out = run_kernel(ptx, k, case.shape, case.block, seed)
            problems += k.check(out, k.reference(launch_args(k, case.shape, seed)))
            threads += int(np.prod(k.grid(case.shape, case.block))) * int(np.prod(case.block))
        rows.append(
            {
                "kernel": name,
                "global_loads": loads,
                "cases": len(small_shapes(k)),
                "threads": threads,
                "interpreter_seconds": round(time.perf_counter() - started, 3),
                "ok": not problems,
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="kernel names (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    opts = parser.parse_args(argv)
    names = opts.kernels or list(KERNELS)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        parser.error(f"no suite kernel {unknown[0]!r} (known: {', '.join(KERNELS)})")
    rows = _measure(names)
    if opts.json:
        print(json.dumps({"rows": rows}, indent=2))
    else:
        print(f"{'kernel':<14} {'ld.global':>9} {'cases':>5} {'threads':>8} {'interp s':>9}  ok")
        for r in rows:
            print(
                f"{r['kernel']:<14} {r['global_loads']:>9} {r['cases']:>5} {r['threads']:>8} "
                f"{r['interpreter_seconds']:>9.3f}  {'yes' if r['ok'] else 'NO'}"
            )
        print(f"total interpreter time: {sum(r['interpreter_seconds'] for r in rows):.1f} s")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
