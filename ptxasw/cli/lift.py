"""``ptxasw lift``: lift a warp-synchronous PTX kernel to InfReg-IR or host code.

``--target infreg`` writes the LLVM IR of the lifted kernel with PIRCH
metadata; ``--target llvm`` the same IR without it, or (``--emit asm|obj``)
compiled for this host. The kernel's entry takes ``(params, shared,
shared_stride, ctaid_x0, ctaid_y, ctaid_z, nctaid_x, nctaid_y, nctaid_z)``
(see `ptxasw.pirch_bridge.lift`). What cannot be lifted exactly is refused
with one ``file:line:col: message`` line and exit status 1.
"""

from __future__ import annotations

import os
import sys

import click

from ptxasw.cli.common import fail, output_error, write_text
from ptxasw.errors import PtxError


@click.command("lift")
@click.argument("source", metavar="IN.ptx")
@click.option("--kernel", "-k", help="Kernel to lift (default: the module's only kernel).")
@click.option(
    "--target",
    type=click.Choice(["infreg", "llvm", "avx512", "ve"]),
    default="infreg",
    show_default=True,
    help="What to emit.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Output file (default: stdout).")
@click.option("--emit", "what", type=click.Choice(["ir", "asm", "obj"]), default="ir", show_default=True)
@click.option("--wg-size", type=int, default=None, help="Work-group size (default: the kernel's .reqntid).")
@click.option(
    "--wg-pack",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Blocks (work groups) per call.",
)
@click.option(
    "--block", default=None, help="Block shape X[,Y[,Z]] of several warps (default: --wg-size, .reqntid)."
)
def lift_command(
    source: str,
    kernel: str | None,
    target: str,
    output: str | None,
    what: str,
    wg_size: int | None,
    wg_pack: int,
    block: str | None,
) -> None:
    """Lift a kernel to PIRCH InfReg-IR (LLVM) or host code."""
    try:
        _lift(source, kernel, target, output, what, wg_size, wg_pack, block)
    except PtxError as exc:
        fail(exc)
    except Exception as exc:  # a lifter bug must still be one line for users
        if os.environ.get("PTXASW_DEBUG"):
            raise
        click.echo(
            f"ptxasw: error: internal error while lifting {source}: {type(exc).__name__}: {exc}", err=True
        )
        sys.exit(1)


def _lift(
    source: str,
    kernel: str | None,
    target: str,
    output: str | None,
    what: str,
    wg_size: int | None,
    wg_pack: int,
    block: str | None,
) -> None:
    from ptxasw.cli.run import parse_dims
    from ptxasw.parser import read_ptx
    from ptxasw.pirch_bridge.backends import emit
    from ptxasw.pirch_bridge.lift import lift_kernel

    if what == "obj" and output is None:
        raise PtxError("--emit obj needs -o FILE")
    module = read_ptx(source)
    shape = parse_dims(block, "block") if block is not None else None
    lifted = lift_kernel(module, kernel, wg_size=wg_size, wg_pack=wg_pack, block=shape)
    result = emit(lifted, target, what)
    if isinstance(result, bytes):
        assert output is not None
        try:
            with open(output, "wb") as f:
                f.write(result)
        except OSError as exc:
            raise output_error(output, exc) from None
    elif output is None:
        click.echo(result, nl=False)
    else:
        write_text(output, result)
