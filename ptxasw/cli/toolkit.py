"""``ptxasw toolkit``: make shadow CUDA toolkits whose ``bin/ptxas`` is ptxasw."""

from __future__ import annotations

from pathlib import Path

import click

from ptxasw.driver.toolkit import ToolkitError, create_shadow_toolkit, find_cuda_toolkit


@click.group("toolkit")
def toolkit_group() -> None:
    """Shadow CUDA toolkits whose ptxas is ptxasw (for nvcc, CMake, CUDA_HOME)."""


@toolkit_group.command("create")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--cuda",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Real CUDA toolkit (default: $CUDA_HOME, $CUDA_PATH, nvcc on PATH, /usr/local/cuda).",
)
def create_command(dest: Path, cuda: Path | None) -> None:
    """Create a shadow toolkit in DEST; then use DEST/bin/nvcc or CUDA_HOME=DEST."""
    try:
        out = create_shadow_toolkit(dest, cuda)
    except (ToolkitError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    real = find_cuda_toolkit(out)
    click.echo(f"shadow toolkit {out} -> {real}")
    click.echo(f"  nvcc:  {out / 'bin' / 'nvcc'}")
    click.echo(f"  cmake: -DCMAKE_CUDA_COMPILER={out / 'bin' / 'nvcc'}")
