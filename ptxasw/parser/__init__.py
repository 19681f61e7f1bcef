"""The PTX front end: grammar, typed IR, instruction table and printer."""

from ptxasw.parser.frontend import parse_file, parse_ptx, read_ptx
from ptxasw.parser.printer import print_module

__all__ = ["parse_file", "parse_ptx", "print_module", "read_ptx"]
