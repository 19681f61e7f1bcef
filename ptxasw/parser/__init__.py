"""The PTX front end: Lark grammar, lexer and the transformer that builds the IR.

`parse_ptx` (text), `parse_file` and `read_ptx` (a path or ``-``) return an
`ptxasw.ir.Module` (`read_kernels`: with only the kernels asked for parsed);
errors are `ptxasw.errors.PtxError` with a position.
"""

from ptxasw.parser.frontend import parse_file, parse_ptx, read_kernels, read_ptx, read_text

__all__ = ["parse_file", "parse_ptx", "read_kernels", "read_ptx", "read_text"]
