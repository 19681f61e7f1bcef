"""``python -m ptxasw``: the same as the ``ptxasw`` command."""

from ptxasw.cli import main

main()
