"""Z3's C API getters without the error check z3py adds after every call.

Each wrapper in ``z3.z3core`` makes a second foreign call to ask whether the
first failed. The getters here read a live term and cannot fail, so code
that walks many subterms (`snapshot`, `affine`, the domain's width reads)
calls the foreign functions directly. The first argument is always the
context's raw reference (``term.ctx.ref()``), the rest raw ASTs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3.z3core as capi

__all__ = [
    "app_arg",
    "app_decl",
    "args",
    "ast_id",
    "ast_kind",
    "bv_size",
    "decl_kind",
    "decl_name",
    "int_param",
    "is_numeral",
    "num_args",
    "num_params",
    "numeral",
    "numeral_string",
    "operator",
    "param_kind",
    "sort",
    "sort_kind",
    "symbol_string",
]


def _unchecked(wrapper: Callable[..., Any]) -> Callable[..., Any]:
    """The foreign function behind a z3core wrapper. Falls back to the
    wrapper when z3's bindings are laid out differently."""
    defaults = getattr(wrapper, "__defaults__", None) or ()
    for d in defaults:
        f = getattr(d, "f", None)
        if callable(f):
            return f  # type: ignore[no-any-return]
    return wrapper


ast_id = _unchecked(capi.Z3_get_ast_id)
ast_kind = _unchecked(capi.Z3_get_ast_kind)
app_decl = _unchecked(capi.Z3_get_app_decl)
decl_kind = _unchecked(capi.Z3_get_decl_kind)
num_args = _unchecked(capi.Z3_get_app_num_args)
app_arg = _unchecked(capi.Z3_get_app_arg)
sort = _unchecked(capi.Z3_get_sort)
sort_kind = _unchecked(capi.Z3_get_sort_kind)
bv_size = _unchecked(capi.Z3_get_bv_sort_size)
int_param = _unchecked(capi.Z3_get_decl_int_parameter)
num_params = _unchecked(capi.Z3_get_decl_num_parameters)
param_kind = _unchecked(capi.Z3_get_decl_parameter_kind)


# These return strings: the wrappers convert them (and check errors), keep them.
decl_name = capi.Z3_get_decl_name
symbol_string = capi.Z3_get_symbol_string
numeral_string = capi.Z3_get_numeral_string


def is_numeral(ctx: Any, ast: Any) -> bool:
    """Whether ``ast`` is a numeral (`z3.is_bv_value` of a bit-vector term)."""
    return bool(ast_kind(ctx, ast) == capi.Z3_NUMERAL_AST)


def numeral(ctx: Any, ast: Any) -> int | None:
    """The value of a numeral, None for anything else."""
    if not is_numeral(ctx, ast):
        return None
    return int(numeral_string(ctx, ast))


def operator(ctx: Any, ast: Any) -> int:
    """The operator (`z3.Z3_OP_*`) of an application, -1 for anything else."""
    if ast_kind(ctx, ast) != capi.Z3_APP_AST:
        return -1
    return int(decl_kind(ctx, app_decl(ctx, ast)))


def args(ctx: Any, ast: Any) -> list[Any]:
    """The arguments of an application."""
    return [app_arg(ctx, ast, i) for i in range(num_args(ctx, ast))]
