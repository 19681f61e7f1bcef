"""The ``ptxasw`` command line.

One click group; each command is a module of this package, loaded only when
it runs. Every command reads PTX through the one front end and reports bad
input as a single ``file:line:col: message`` line with exit code 1, never a
traceback.
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import click

from ptxasw import __version__


class LazyGroup(click.Group):
    """Subcommands whose modules load only when used.

    The emulator commands pull in NumPy and Z3, a few hundred milliseconds
    that ``fmt`` and ``check`` should not pay; each module is imported when
    its command is asked for.
    """

    lazy: ClassVar[dict[str, str]] = {
        "analyze": "ptxasw.cli.analyze:analyze_command",
        "cache": "ptxasw.cli.cache:cache_command",
        "check": "ptxasw.cli.check:check",
        "fmt": "ptxasw.cli.fmt:fmt",
        "lift": "ptxasw.cli.lift:lift_command",
        "rewrite": "ptxasw.cli.rewrite:rewrite_command",
        "run": "ptxasw.cli.run:run_command",
        "toolkit": "ptxasw.cli.toolkit:toolkit_group",
        "trace": "ptxasw.cli.trace:trace_command",
        "tune": "ptxasw.cli.tune:tune_command",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module_name, attr = self.lazy[name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="ptxasw")
def main() -> None:
    """ptxasw: PTX analysis and rewriting that sits where ptxas sits."""


if __name__ == "__main__":  # pragma: no cover
    main()
