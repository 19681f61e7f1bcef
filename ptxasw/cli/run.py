"""``ptxasw run``: execute a kernel of a PTX file on the CPU with the interpreter.

Arguments follow the kernel's parameters in order (``--arg`` repeated):

=====================  =====================================================
``a.npy``              an array loaded from a ``.npy`` file (a device buffer)
``zeros:f32:1024``     a new zero array (shape ``1024`` or ``64x64``)
``i32:5``              a scalar: ``i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64``
``...@out``            (after an array) mark it as an output
=====================  =====================================================

After the run every array argument (or, when some are marked ``@out``, only
those) is written to ``OUTDIR/argN.npy`` (N = parameter position), and a
summary, the device ``printf`` output and the interpreter's warnings are
printed. Errors are one line, ``file:line:col: message`` or ``ptxasw: error:
...``, with exit status 1 (set ``PTXASW_DEBUG=1`` to see a traceback for an
internal error instead).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from ptxasw.cli.common import name_list, output_error, select_kernels
from ptxasw.errors import PtxError

__all__ = ["ArgSpec", "parse_arg", "parse_dims", "run_command"]

_SCALARS = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "s8": np.int8,
    "s16": np.int16,
    "s32": np.int32,
    "s64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}


@dataclass
class ArgSpec:
    """One parsed ``--arg``: the value passed to the kernel and whether it is
    a marked output."""

    text: str
    value: np.ndarray | np.generic
    output: bool = False


def parse_dims(text: str, what: str) -> tuple[int, int, int]:
    """``"64"``, ``"64,4"`` or ``"64,4,2"`` -> a 3-tuple (missing dimensions are 1)."""
    try:
        dims = [int(part) for part in text.replace("x", ",").split(",")]
    except ValueError:
        raise PtxError(f"bad --{what} '{text}': expected X[,Y[,Z]] with positive integers") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise PtxError(f"bad --{what} '{text}': expected X[,Y[,Z]] with positive integers")
    dims += [1] * (3 - len(dims))
    return dims[0], dims[1], dims[2]


def _dtype(name: str, text: str) -> type[np.generic]:
    try:
        return _SCALARS[name]
    except KeyError:
        known = ", ".join(_SCALARS)
        raise PtxError(f"bad --arg '{text}': unknown type '{name}' (use one of {known})") from None


def parse_arg(text: str) -> ArgSpec:
    """Parse one ``--arg`` (see the module documentation)."""
    body, output = text, False
    if body.endswith("@out"):
        body, output = body[: -len("@out")], True
    if body.startswith("zeros:"):
        parts = body.split(":")
        if len(parts) != 3:
            raise PtxError(f"bad --arg '{text}': expected zeros:TYPE:SHAPE, e.g. zeros:f32:1024")
        dtype = _dtype(parts[1], text)
        try:
            shape = tuple(int(d) for d in parts[2].split("x"))
        except ValueError:
            raise PtxError(f"bad --arg '{text}': shape must be N or NxM...") from None
        if any(d < 0 for d in shape):
            raise PtxError(f"bad --arg '{text}': negative dimension")
        return ArgSpec(text, np.zeros(shape, dtype=dtype), output)
    if body.endswith(".npy"):
        try:
            array = np.load(body, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise PtxError(f"bad --arg '{text}': cannot load {body}: {exc}") from None
        return ArgSpec(text, np.ascontiguousarray(array), output)
    name, sep, value = body.partition(":")
    if not sep:
        raise PtxError(f"bad --arg '{text}': expected FILE.npy, zeros:TYPE:SHAPE or TYPE:VALUE")
    if output:
        raise PtxError(f"bad --arg '{text}': only arrays can be marked @out")
    dtype = _dtype(name, text)
    try:
        if np.dtype(dtype).kind == "f":
            scalar = dtype(float(value))
        else:
            info = np.iinfo(dtype)
            number = int(value, 0)
            if not info.min <= number <= info.max:
                raise PtxError(f"bad --arg '{text}': {number} does not fit {name}")
            scalar = dtype(number)
    except ValueError:
        raise PtxError(f"bad --arg '{text}': '{value}' is not a {name} value") from None
    return ArgSpec(text, scalar, False)


@click.command("run")
@click.argument("source", metavar="IN.ptx")
@click.option("--kernel", "-k", help="Kernel to launch (default: the module's only kernel).")
@click.option("--grid", default="1", show_default=True, help="Grid size X[,Y[,Z]].")
@click.option("--block", required=True, help="Block size X[,Y[,Z]].")
@click.option(
    "--shared", "shared_bytes", default=0, type=click.IntRange(min=0), help="Dynamic shared memory in bytes."
)
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="ARG",
    help="A kernel argument, in parameter order: FILE.npy[@out], zeros:TYPE:SHAPE[@out], TYPE:VALUE.",
)
@click.option(
    "-o",
    "--outdir",
    default=".",
    type=click.Path(file_okay=False),
    help="Where to write the output arrays (argN.npy); created if missing, but not its parents.",
)
@click.option(
    "--max-steps",
    default=50_000_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Give up after this many warp-instructions.",
)
@click.option(
    "--engine",
    type=click.Choice(["interp", "llvm", "avx512", "ve-emulated"]),
    default="interp",
    show_default=True,
    help="interp: the reference interpreter; llvm, avx512, ve-emulated: lifted (ptxasw lift) "
    "and run natively (ve-emulated: the VE module with its intrinsics defined for this host).",
)
def run_command(
    source: str,
    kernel: str | None,
    grid: str,
    block: str,
    shared_bytes: int,
    args: tuple[str, ...],
    outdir: str,
    max_steps: int,
    engine: str = "interp",
) -> None:
    """Run a kernel on the CPU (the reference interpreter) and save its arrays."""
    try:
        _run(source, kernel, grid, block, shared_bytes, args, outdir, max_steps, engine)
    except PtxError as exc:
        click.echo(f"ptxasw: error: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # an interpreter bug must still be one line for users
        if os.environ.get("PTXASW_DEBUG"):
            raise
        click.echo(
            f"ptxasw: error: internal error while running {source}: {type(exc).__name__}: {exc}", err=True
        )
        sys.exit(1)


def _run(
    source: str,
    kernel: str | None,
    grid: str,
    block: str,
    shared_bytes: int,
    arg_texts: tuple[str, ...],
    outdir: str,
    max_steps: int,
    engine: str = "interp",
) -> None:
    from ptxasw.emulator.concrete.interpreter import launch
    from ptxasw.parser import read_ptx

    g = parse_dims(grid, "grid")
    b = parse_dims(block, "block")
    specs = [parse_arg(text) for text in arg_texts]
    module = read_ptx(source)
    names = [k.name for k in module.kernels]
    chosen = select_kernels(names, [kernel]) if kernel is not None else names
    if len(chosen) != 1:
        raise PtxError(
            f"{source} has {len(chosen)} kernels{'' if kernel is None else ' named ' + kernel}"
            f" ({name_list(chosen)}); choose one with --kernel"
        )
    kernel = chosen[0]
    out = Path(outdir)
    if any(isinstance(s.value, np.ndarray) for s in specs):
        _make_outdir(out)  # before the run: a long run must not end in "cannot write"
    if engine != "interp":
        from ptxasw.pirch_bridge.runtime import run_lifted

        lifted = run_lifted(module, kernel, g, b, [s.value for s in specs], shared_bytes, engine=engine)
        _save(specs, lifted.buffers, out)
        click.echo(
            f"ran {kernel} grid {g} block {b} lifted ({engine}): {lifted.seconds:.3f} s "
            f"(compiling {lifted.compile_seconds:.3f} s)",
            err=True,
        )
        return
    result = launch(module, kernel, g, b, [s.value for s in specs], shared_bytes, max_steps=max_steps)

    for line in result.printf:
        click.echo(line)
    for warning in result.warnings:
        click.echo(f"ptxasw: warning: {warning}", err=True)
    written = _save(specs, result.buffers, out, announce=False)
    rate = result.steps_per_second
    click.echo(
        f"ran {kernel} grid {g} block {b}: {result.steps} warp-instructions in "
        f"{result.seconds:.3f} s ({rate:,.0f}/s); {len(result.printf)} printf, "
        f"{len(result.warnings)} warnings",
        err=True,
    )
    for path in written:
        click.echo(f"wrote {path}", err=True)


def _save(
    specs: list[ArgSpec], buffers: list[np.ndarray | None], out: Path, announce: bool = True
) -> list[str]:
    """Write every array argument (only the @out ones when some are marked) as OUTDIR/argN.npy."""
    marked = any(s.output for s in specs)
    written = []
    for i, (spec, buffer) in enumerate(zip(specs, buffers, strict=True)):
        if buffer is None or (marked and not spec.output):
            continue
        path = out / f"arg{i}.npy"
        try:
            with open(path, "wb") as f:
                np.save(f, buffer)
        except OSError as exc:
            raise output_error(path, exc) from None
        written.append(str(path))
    if announce:
        for path in written:
            click.echo(f"wrote {path}", err=True)
    return written


def _make_outdir(out: Path) -> None:
    """Create OUTDIR if missing (not its parents: a typo must not build a tree) and check it is writable."""
    try:
        out.mkdir(exist_ok=True)
    except OSError as exc:
        raise output_error(out, exc) from None
    if not out.is_dir():
        raise PtxError(f"cannot write {out}: Not a directory")
    if not os.access(out, os.W_OK | os.X_OK):
        raise PtxError(f"cannot write {out}: Permission denied")
