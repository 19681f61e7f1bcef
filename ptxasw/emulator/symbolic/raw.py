"""Z3's C API getters without the error check z3py adds after every call.

Each wrapper in ``z3.z3core`` makes a second foreign call to ask whether the
first failed. The getters here read a live term and cannot fail, so code
that walks many subterms (`snapshot`, `affine`, the domain's width reads)
calls the foreign functions directly. The first argument is always the
context's raw reference (``term.ctx.ref()``), the rest raw ASTs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import z3.z3core as capi

__all__ = [
    "app_arg",
    "app_decl",
    "args",
    "ast_id",
    "ast_kind",
    "bv_size",
    "by_address",
    "decl_kind",
    "decl_name",
    "int_param",
    "is_numeral",
    "name",
    "num_args",
    "num_params",
    "numeral",
    "numeral_string",
    "operator",
    "param_kind",
    "sort",
    "sort_kind",
    "symbol_string",
    "walk_apps",
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


def name(ctx: Any, decl: Any) -> str:
    """A declaration's name (the string of its symbol)."""
    return str(symbol_string(ctx, decl_name(ctx, decl)))


def operator(ctx: Any, ast: Any) -> int:
    """The operator (`z3.Z3_OP_*`) of an application, -1 for anything else."""
    if ast_kind(ctx, ast) != capi.Z3_APP_AST:
        return -1
    return int(decl_kind(ctx, app_decl(ctx, ast)))


def args(ctx: Any, ast: Any) -> list[Any]:
    """The arguments of an application."""
    return [app_arg(ctx, ast, i) for i in range(num_args(ctx, ast))]


def walk_apps(
    ctx: Any, root: Any, visit: Callable[[Any, int, list[Any]], bool], limit: int | None = None
) -> bool:
    """Visit each application in the DAG under ``root`` once, a node before
    its arguments: ``visit(node, node_id, arguments)`` says whether to go
    into the arguments. False when the walk stopped past ``limit`` nodes."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        nid = ast_id(ctx, node)
        if nid in seen or ast_kind(ctx, node) != capi.Z3_APP_AST:
            continue
        seen.add(nid)
        if limit is not None and len(seen) > limit:
            return False
        kids = args(ctx, node)
        if visit(node, nid, kids):
            stack.extend(kids)
    return True


def _by_address(function: Any, restype: Any, *argtypes: Any) -> Callable[..., Any]:
    """``function`` again, declared to take and return plain addresses and
    integers. z3core declares its arguments as classes whose ``from_param``
    is a Python method, which ctypes calls once per argument; with
    ``c_void_p`` the conversion stays in C (a third less per call), and
    results come back as ints instead of wrapper objects."""
    address = ctypes.cast(function, ctypes.c_void_p).value
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)  # type: ignore[no-any-return]


_P, _U = ctypes.c_void_p, ctypes.c_uint

# For walks over many subterms that never hand a term back to z3py (an
# address is not an ``Ast``: z3core would pass it as a C int). Every
# argument after the context's address is an AST's, declaration's or
# symbol's address (``.value`` of the z3py wrapper), or an index.
by_address = SimpleNamespace(
    ast_id=_by_address(ast_id, _U, _P, _P),
    ast_kind=_by_address(ast_kind, ctypes.c_int, _P, _P),
    app_decl=_by_address(app_decl, _P, _P, _P),
    decl_range=_by_address(_unchecked(capi.Z3_get_range), _P, _P, _P),
    decl_kind=_by_address(decl_kind, ctypes.c_int, _P, _P),
    num_args=_by_address(num_args, _U, _P, _P),
    app_arg=_by_address(app_arg, _P, _P, _P, _U),
    sort=_by_address(sort, _P, _P, _P),
    sort_kind=_by_address(sort_kind, ctypes.c_int, _P, _P),
    bv_size=_by_address(bv_size, _U, _P, _P),
    int_param=_by_address(int_param, ctypes.c_int, _P, _P, _U),
    num_params=_by_address(num_params, _U, _P, _P),
    param_kind=_by_address(param_kind, ctypes.c_int, _P, _P, _U),
    decl_name=_by_address(_unchecked(capi.Z3_get_decl_name), _P, _P, _P),
    # Z3 owns the returned buffer until its next call: ctypes copies it
    # into ``bytes`` at once.
    symbol_string=_by_address(_unchecked(capi.Z3_get_symbol_string), ctypes.c_char_p, _P, _P),
    numeral_string=_by_address(_unchecked(capi.Z3_get_numeral_string), ctypes.c_char_p, _P, _P),
    ast_to_string=_by_address(_unchecked(capi.Z3_ast_to_string), ctypes.c_char_p, _P, _P),
)
