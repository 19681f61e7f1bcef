"""``ptxasw tune``: time a kernel and its shuffle rewrite on the GPU; the drop-in keeps the faster.

For each kernel: the original and the proven ``normal`` rewrite (every proven
shuffle, as ``PTXASW_PROFIT=always`` keeps) are assembled with the real
``ptxas`` for ``-arch``, run on the same inputs (every array must come out bit
for bit the same), timed with CUDA events (median of ``--runs`` samples after
``--warmup``), and the shuffles are kept only if they win by more than
``--margin``. The verdict is stored (`ptxasw.driver.tuning`) where the
drop-in ``ptxas`` finds it: with ``PTXASW_PROFIT=model`` (the default) a
kernel with a verdict keeps all its proven shuffles or none, whatever the cost
model says. Run it with the same ``PTXASW_CACHE_DIR``/``PTXASW_TUNE_DIR`` and
``PTXASW_MAX_DELTA`` as the build.

Example (the jacobi example on an H100, 4096x4096 floats)::

    ptxasw tune examples/jacobi.ptx -arch sm_90 --grid 128,512 --block 32,8 \\
        rand:f32:16777216 zeros:f32:16777216@out i32:4096 i32:4096

Arguments follow the kernel's parameters in order, as ``ptxasw run`` takes
them (``FILE.npy``, ``zeros:TYPE:SHAPE``, ``TYPE:VALUE``, ``@out`` marks an
output), plus ``rand:TYPE:SHAPE`` (uniform in [0, 1) for floats, 0..99 for
integers; ``--seed``). The outputs compared are the ``@out`` arrays, or every
array when none is marked. Needs CuPy (``pip install 'ptxasw[gpu]'``), a CUDA
GPU and NVIDIA's ``ptxas``; without one of them: one error line, exit 1. Exit 1
also when a rewrite computes different values (a bug: it is reported).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np

from ptxasw.cli.common import name_list, select_kernels
from ptxasw.errors import PtxError

if TYPE_CHECKING:
    from ptxasw import ir
    from ptxasw.cli.run import ArgSpec

__all__ = ["parse_tune_arg", "tune_command"]


def parse_tune_arg(text: str, rng: np.random.Generator) -> ArgSpec:
    """`ptxasw.cli.run.parse_arg`, plus ``rand:TYPE:SHAPE[@out]``."""
    from ptxasw.cli.run import ArgSpec, parse_arg

    if not text.startswith("rand:"):
        return parse_arg(text)
    spec = parse_arg("zeros:" + text[len("rand:") :])
    array = spec.value
    assert isinstance(array, np.ndarray)
    if array.dtype.kind == "f":
        values = rng.random(array.shape).astype(array.dtype)
    else:
        values = rng.integers(0, 100, array.shape).astype(array.dtype)
    return ArgSpec(text, values, spec.output)


@click.command("tune")
@click.argument("source", metavar="IN.ptx")
@click.argument("arg_texts", nargs=-1, metavar="ARG...")
@click.option("-k", "--kernel", "kernels", multiple=True, help="Only this kernel (repeatable; default: all).")
@click.option("-arch", "--arch", "arch", required=True, metavar="sm_XX", help="Target GPU, as ptxas's -arch.")
@click.option("--grid", default="1", show_default=True, help="Grid size X[,Y[,Z]].")
@click.option("--block", required=True, help="Block size X[,Y[,Z]].")
@click.option("--arg", "more_args", multiple=True, metavar="ARG", help="A kernel argument (after the ARGs).")
@click.option("--runs", default=31, show_default=True, type=click.IntRange(min=1), help="Timed samples.")
@click.option("--warmup", default=5, show_default=True, type=click.IntRange(min=0), help="Untimed samples.")
@click.option(
    "--margin",
    default=0.01,
    show_default=True,
    type=click.FloatRange(min=0.0),
    help="Keep the shuffles only if faster by more than this fraction.",
)
@click.option(
    "--max-delta",
    type=click.IntRange(0, 31),
    default=None,
    help="Largest shuffle distance |N| [default: PTXASW_MAX_DELTA, else 31: as the drop-in].",
)
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0.0, min_open=True),
    default=10.0,
    show_default=True,
    help="Analysis seconds per kernel.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the rand: arguments.")
@click.option("--no-store", is_flag=True, help="Measure and report only; store no verdict.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def tune_command(
    source: str,
    arg_texts: tuple[str, ...],
    kernels: tuple[str, ...],
    arch: str,
    grid: str,
    block: str,
    more_args: tuple[str, ...],
    runs: int,
    warmup: int,
    margin: float,
    max_delta: int | None,
    time_budget: float,
    seed: int,
    no_store: bool,
    as_json: bool,
) -> None:
    """Time each kernel against its shuffle rewrite on the GPU and store which is faster."""
    from ptxasw.tune.device import DeviceError

    try:
        rows, header = _tune(
            source, (*arg_texts, *more_args), kernels, arch, grid, block,
            runs, warmup, margin, max_delta, time_budget, seed, no_store,
        )  # fmt: skip
    except (PtxError, DeviceError) as exc:
        click.echo(f"ptxasw: error: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug must still be one line for users
        if os.environ.get("PTXASW_DEBUG"):
            raise
        click.echo(
            f"ptxasw: error: internal error while tuning {source}: {type(exc).__name__}: {exc}", err=True
        )
        sys.exit(1)
    for row in rows:
        if row.error:
            click.echo(f"ptxasw: error: {row.error}", err=True)
    if as_json:
        click.echo(json.dumps({**header, "kernels": [r.as_json() for r in rows]}, indent=1))
    else:
        _print_table(header, rows)
    if any(r.bug for r in rows):
        sys.exit(1)


def _tune(
    source: str,
    arg_texts: tuple[str, ...],
    kernels: tuple[str, ...],
    arch: str,
    grid: str,
    block: str,
    runs: int,
    warmup: int,
    margin: float,
    max_delta: int | None,
    time_budget: float,
    seed: int,
    no_store: bool,
) -> tuple[list, dict]:
    """Check everything that can fail in one line before the analysis, then tune."""
    from ptxasw.cli.run import parse_dims
    from ptxasw.driver import tuning
    from ptxasw.driver.ptxas import WrapperError, find_real_ptxas
    from ptxasw.driver.settings import synthesis_settings
    from ptxasw.tune import device as gpu
    from ptxasw.tune.session import Settings, tune_kernels

    g, b = parse_dims(grid, "grid"), parse_dims(block, "block")
    rng = np.random.default_rng(seed)
    specs = [parse_tune_arg(text, rng) for text in arg_texts]
    text, module = _read(source)
    names = [fn.name for fn in module.kernels]
    chosen = select_kernels(names, kernels) or names
    if not chosen:
        raise PtxError(f"{source}: no kernel")
    for name in chosen:
        params = len(module.function(name).params)
        if params != len(specs):
            raise PtxError(f"{name} takes {params} parameters; {len(specs)} ARGs given")
    if max_delta is None:
        max_delta = int(synthesis_settings()["max_delta"])
    try:
        ptxas = find_real_ptxas()
    except WrapperError as exc:
        raise PtxError(str(exc)) from None
    store = None if no_store else tuning.open_store()
    if not no_store and store is None:
        raise PtxError(f"{tuning.ENV_TUNE_DIR} is off: nowhere to store verdicts (use --no-store)")
    device = gpu.open_gpu()
    values = [s.value for s in specs]
    marked = [i for i, s in enumerate(specs) if s.output]
    compare = marked or [i for i, v in enumerate(values) if isinstance(v, np.ndarray)]
    settings = Settings(arch, runs, warmup, margin, max_delta, time_budget)
    rows = tune_kernels(
        module, text, chosen, g, b, values, compare, device, ptxas, settings, store,
        progress=lambda line: click.echo(f"ptxasw: {line}", err=True),
    )  # fmt: skip
    header = {
        "file": source,
        "arch": arch,
        "device": getattr(device, "name", None),
        "grid": list(g),
        "block": list(b),
        "runs": runs,
        "margin": margin,
        "store": str(store.directory) if store is not None else None,
    }
    return rows, header


def _read(source: str) -> tuple[str, ir.Module]:
    """The text (decoded as the drop-in decodes it: the original measured is what
    ptxas would get) and the module of ``source`` (``-``: standard input)."""
    from ptxasw.parser import parse_ptx

    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise PtxError(f"{source}: {exc.strerror or exc}") from None
    text = data.decode("utf-8", "surrogateescape")
    return text, parse_ptx(text, "<stdin>" if source == "-" else source)


def _print_table(header: dict, rows: list) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"ptxasw tune: {header['file']} on {header['device']} ({header['arch']})")
    for column in ("kernel", "shuffles", "original ms", "shuffle ms", "speed-up", "verdict"):
        left = column in ("kernel", "verdict")
        # Mangled names are long: wrap them rather than cut them on a narrow terminal.
        table.add_column(column, justify="left" if left else "right", overflow="fold" if left else "ellipsis")
    for r in rows:
        table.add_row(
            r.kernel,
            f"{r.shuffles}/{r.loads}",
            f"{r.original_ms:.4f}" if r.original_ms else "-",
            f"{r.shuffle_ms:.4f}" if r.shuffle_ms else "-",
            f"{r.speedup:.3f}" if r.speedup else "-",
            r.verdict or "nothing to tune",
        )
    Console().print(table)
    stored = [r for r in rows if r.stored]
    if stored:
        names = name_list([r.kernel for r in stored])
        click.echo(f"stored {len(stored)} verdict(s) under {header['store']}: {names}")
