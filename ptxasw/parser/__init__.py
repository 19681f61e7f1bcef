"""The PTX front end: grammar, typed IR, instruction table and printer."""

from ptxasw.ir.printer import print_module
from ptxasw.parser.frontend import parse_file, parse_ptx, read_ptx

__all__ = ["parse_file", "parse_ptx", "print_module", "read_ptx"]
