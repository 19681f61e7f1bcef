"""Control-flow graph of a PTX function, with the analyses the emulator needs.

The symbolic emulator walks a kernel block by block (paper, section 4.2): it
forks the register environment at a divergent branch, stops a flow when it
re-enters an iterative block (a loop header), and the concrete interpreter
re-joins the lanes of a warp at the branch's reconvergence point. Shuffle
synthesis (section 5.1) only pairs loads on straight-line code and asks live
variable analysis whether a source value may come from another iteration.
All of that needs the same few facts about a function, computed here once:

* basic blocks and typed edges (:func:`build_cfg`, :class:`CFG`);
* dominators and post-dominators (the latter give reconvergence points);
* natural loops with their nesting, and whether the graph is reducible;
* register liveness per block and per instruction.

Structure
---------
PTX bodies nest ``{ }`` blocks, which are only scopes: they are flattened in
text order into :attr:`CFG.statements` (declarations and directives kept,
since they do not execute they never split a block) and
:attr:`CFG.instructions`. A basic block starts at a label or after a
terminator and ends at ``bra``, ``brx.idx``, ``ret``, ``exit`` or ``trap``;
``call`` returns and so does not end a block. A guarded terminator also falls
through (its guard may be false). Consecutive labels with nothing executable
between them name one block.

Labels are scoped like other names in PTX: inline assembly that the compiler
inlined twice brings two ``{ LAB: ... bra LAB; }`` blocks with the same label
name, so branch targets are resolved from the branch's own scope outwards.

Nodes of :attr:`CFG.graph` are block ids (ints, text order, the entry is 0)
plus one virtual exit node, :attr:`CFG.exit` ``== len(blocks)``, so every node
indexes a dense array. Every ``ret``/``exit``/``trap`` has an edge to it, and so
does the last block when control falls off the end of the body.

Register names in liveness results are plain strings (``ir.Register.name``);
special registers (``%tid``, ``%laneid``...) are not tracked, and registers
declared under the same name in different ``{ }`` scopes are one name here,
which can only make liveness larger (safe for its users), never smaller.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import TypeVar

import networkx as nx

from ptxasw.errors import PtxError
from ptxasw.ir import (
    Block,
    Function,
    Instruction,
    Label,
    Register,
    Statement,
    Symbol,
    TargetList,
    isa,
)

# PTX's predefined read-only registers are never defined in a function, so
# liveness ignores them; the instruction table owns the list of their names.
from ptxasw.ir.isa import is_special_register

__all__ = [
    "CFG",
    "BasicBlock",
    "CFGError",
    "EdgeKind",
    "Loop",
    "build_cfg",
    "is_special_register",
]


class CFGError(PtxError):
    """The body's control flow is malformed: an unknown or duplicate label, a
    ``brx.idx`` without its ``.branchtargets`` table."""


class EdgeKind(StrEnum):
    """The ``kind`` attribute of an edge of :attr:`CFG.graph`.

    A StrEnum, so ``data["kind"] == "taken"`` works as well.
    """

    TAKEN = "taken"  # the target of a guarded bra
    FALLTHROUGH = "fallthrough"  # into the next block: no terminator, or a false guard
    JUMP = "jump"  # the target of an unguarded bra
    TABLE = "table"  # a target of brx.idx
    EXIT = "exit"  # ret/exit/trap to the virtual exit node


# --------------------------------------------------------------------------
# Data


@dataclass(slots=True, eq=False)
class BasicBlock:
    """A maximal straight-line run of instructions.

    ``start``/``stop`` index :attr:`CFG.instructions` (``instructions ==
    cfg.instructions[start:stop]``) and ``stmt_start``/``stmt_stop`` index
    :attr:`CFG.statements`, from the block's first label to its last
    instruction, so a later stage (the rewriter) can map back to the text.
    ``targets`` are the successors when the terminator fires, in operand order
    (the ``.branchtargets`` order for ``brx.idx``, duplicates kept; the exit
    node for ``ret``/``exit``/``trap``); ``fallthrough`` is the successor when
    it does not (or when there is no terminator), None after an unguarded
    terminator. An emulator needs exactly these two, which the graph alone
    cannot give when a guarded ``bra`` targets the next block.
    """

    id: int
    label: str | None
    labels: tuple[str, ...]
    instructions: list[Instruction]
    start: int
    stop: int
    stmt_start: int
    stmt_stop: int
    targets: tuple[int, ...] = ()
    fallthrough: int | None = None

    @property
    def index_range(self) -> range:
        """Indexes of this block's instructions in :attr:`CFG.instructions`."""
        return range(self.start, self.stop)

    @property
    def statement_range(self) -> range:
        """Indexes of this block's statements in :attr:`CFG.statements`."""
        return range(self.stmt_start, self.stmt_stop)

    @property
    def terminator(self) -> Instruction | None:
        """The ending ``bra``/``brx.idx``/``ret``/``exit``/``trap``, if any."""
        if self.instructions and _is_terminator(self.instructions[-1]):
            return self.instructions[-1]
        return None

    def __repr__(self) -> str:
        name = f" {self.label}" if self.label else ""
        return f"<BasicBlock {self.id}{name} [{self.start}:{self.stop}]>"


@dataclass(slots=True, eq=False)
class Loop:
    """A natural loop: all back edges to one header, merged.

    ``body`` includes the header; ``exits`` are the edges that leave the body
    (their target may be the exit node); ``depth`` is 1 for an outermost loop.
    """

    header: int
    body: frozenset[int]
    latches: tuple[int, ...]
    back_edges: tuple[tuple[int, int], ...]
    exits: tuple[tuple[int, int], ...]
    parent: Loop | None = None
    children: list[Loop] = field(default_factory=list)
    depth: int = 1

    def __contains__(self, block: int) -> bool:
        return block in self.body

    def __repr__(self) -> str:
        return f"<Loop header={self.header} blocks={len(self.body)} depth={self.depth}>"


def _is_terminator(inst: Instruction) -> bool:
    return isa.is_branch(inst) or isa.is_return(inst)


# --------------------------------------------------------------------------
# Building


@dataclass(slots=True)
class _Flat:
    """The flattened body plus what name resolution needs."""

    statements: list[Statement] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    inst_scope: list[int] = field(default_factory=list)  # scope of each instruction
    stmt_scope: list[int] = field(default_factory=list)  # scope of each statement
    scope_parent: list[int] = field(default_factory=list)  # -1 for the body itself
    # (scope, name) -> (table, scope): the scope is where its labels resolve from.
    tables: dict[tuple[int, str], tuple[TargetList, int]] = field(default_factory=dict)


def _flatten(body: Block) -> _Flat:
    flat = _Flat()
    flat.scope_parent.append(-1)
    # Iterative walk: (statements, position, scope) frames.
    stack: list[tuple[list[Statement], int, int]] = [(body.body, 0, 0)]
    while stack:
        stmts, pos, scope = stack.pop()
        while pos < len(stmts):
            stmt = stmts[pos]
            pos += 1
            if isinstance(stmt, Block):
                stack.append((stmts, pos, scope))
                flat.scope_parent.append(scope)
                stack.append((stmt.body, 0, len(flat.scope_parent) - 1))
                break
            flat.statements.append(stmt)
            flat.stmt_scope.append(scope)
            if isinstance(stmt, Instruction):
                flat.instructions.append(stmt)
                flat.inst_scope.append(scope)
            elif isinstance(stmt, TargetList) and stmt.kind == ".branchtargets":
                flat.tables[(scope, stmt.label)] = (stmt, scope)
    return flat


_T = TypeVar("_T")


def _resolve(scope: int, name: str, table: dict[tuple[int, str], _T], parents: list[int]) -> _T | None:
    """Look ``name`` up from ``scope`` outwards, as PTX scopes names."""
    while scope >= 0:
        found = table.get((scope, name))
        if found is not None:
            return found
        scope = parents[scope]
    return None


def build_cfg(fn: Function) -> CFG:
    """Split ``fn``'s body into basic blocks and connect them.

    Raises :class:`CFGError` for a branch to a label that is not in scope, a
    label defined twice in one scope, or a ``brx.idx`` whose table is missing,
    and ValueError for a declaration without a body.
    """
    if fn.body is None:
        raise ValueError(f"function {fn.name} has no body")
    flat = _flatten(fn.body)
    blocks: list[BasicBlock] = []
    label_at: dict[tuple[int, str], int] = {}  # (scope, label) -> block id
    block_of_index: list[int] = [0] * len(flat.instructions)

    cur: BasicBlock | None = None
    inst_index = 0
    for stmt_index, stmt in enumerate(flat.statements):
        if isinstance(stmt, Label):
            if cur is None or cur.start != inst_index:  # no block, or it has instructions
                cur = BasicBlock(
                    len(blocks), stmt.name, (), [], inst_index, inst_index, stmt_index, stmt_index
                )
                blocks.append(cur)
            elif cur.label is None:
                cur.label = stmt.name
            cur.labels = (*cur.labels, stmt.name)
            key = (flat.stmt_scope[stmt_index], stmt.name)
            if key in label_at:
                raise CFGError(f"label {stmt.name} defined twice in one scope", stmt.loc)
            label_at[key] = cur.id
            cur.stmt_stop = stmt_index + 1
        elif isinstance(stmt, Instruction):
            if cur is None:
                cur = BasicBlock(len(blocks), None, (), [], inst_index, inst_index, stmt_index, stmt_index)
                blocks.append(cur)
            block_of_index[inst_index] = cur.id
            inst_index += 1
            cur.stop = inst_index
            cur.stmt_stop = stmt_index + 1
            if _is_terminator(stmt):
                cur = None
    if not blocks:  # a body without instructions or labels still has an entry
        blocks.append(BasicBlock(0, None, (), [], 0, 0, 0, 0))

    exit_id = len(blocks)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(exit_id + 1))

    def add_edge(u: int, v: int, kind: EdgeKind) -> None:
        data = graph.get_edge_data(u, v)
        if data is None:
            graph.add_edge(u, v, kind=kind, kinds=(kind,))
        elif kind not in data["kinds"]:
            data["kinds"] = (*data["kinds"], kind)

    for block in blocks:
        block.instructions = flat.instructions[block.start : block.stop]
        next_id = block.id + 1  # == exit_id after the last block: falling off the end
        term = block.terminator
        if term is None:
            block.fallthrough = next_id
            add_edge(block.id, next_id, EdgeKind.FALLTHROUGH)
            continue
        scope = flat.inst_scope[block.stop - 1]
        if isa.is_return(term):
            block.targets = (exit_id,)
            add_edge(block.id, exit_id, EdgeKind.EXIT)
        elif term.opcode == "bra":
            names = isa.branch_targets(term)
            if not names:
                raise CFGError("bra without a label operand", term.loc)
            target = _resolve(scope, names[0], label_at, flat.scope_parent)
            if target is None:
                raise CFGError(f"branch to unknown label {names[0]}", term.loc)
            block.targets = (target,)
            add_edge(block.id, target, EdgeKind.JUMP if term.guard is None else EdgeKind.TAKEN)
        else:  # brx.idx
            block.targets = _table_targets(term, scope, flat, label_at)
            for target in block.targets:
                add_edge(block.id, target, EdgeKind.TABLE)
        if term.guard is not None:
            block.fallthrough = next_id
            add_edge(block.id, next_id, EdgeKind.FALLTHROUGH)
    return CFG(fn, flat.statements, flat.instructions, blocks, graph, block_of_index)


def _table_targets(
    term: Instruction, scope: int, flat: _Flat, label_at: dict[tuple[int, str], int]
) -> tuple[int, ...]:
    """Blocks of a ``brx.idx``'s ``.branchtargets`` list, in list order.

    The table is found from the branch's scope outwards; its labels from the
    table's own scope outwards (the scope it was written in).
    """
    operand = term.operands[1] if len(term.operands) > 1 else None
    if not isinstance(operand, Symbol):
        raise CFGError("brx.idx without a .branchtargets operand", term.loc)
    found = _resolve(scope, operand.name, flat.tables, flat.scope_parent)
    if found is None:
        raise CFGError(f"brx.idx: no .branchtargets list named {operand.name}", term.loc)
    table, table_scope = found
    out: list[int] = []
    for name in table.targets:
        target = _resolve(table_scope, name, label_at, flat.scope_parent)
        if target is None:
            raise CFGError(f".branchtargets {table.label}: unknown label {name}", table.loc)
        out.append(target)
    return tuple(out)


# --------------------------------------------------------------------------
# Trees (dominator and post-dominator) with O(1) ancestor queries


class _Tree:
    """A rooted tree given by parent links, numbered by DFS so that "is ``a``
    an ancestor of ``b``" is two comparisons instead of a walk up the tree
    (loop detection asks it once per edge)."""

    __slots__ = ("children", "parent", "post", "pre")

    def __init__(self, parent: dict[int, int | None], size: int) -> None:
        self.parent = parent
        self.children: list[list[int]] = [[] for _ in range(size)]
        roots = []
        for node, par in parent.items():
            if par is None:
                roots.append(node)
            else:
                self.children[par].append(node)
        self.pre = [-1] * size
        self.post = [-1] * size
        clock = 0
        for root in roots:
            stack: list[tuple[int, Iterator[int]]] = [(root, iter(self.children[root]))]
            self.pre[root] = clock
            clock += 1
            while stack:
                node, it = stack[-1]
                child = next(it, None)
                if child is None:
                    stack.pop()
                    self.post[node] = clock
                    clock += 1
                else:
                    self.pre[child] = clock
                    clock += 1
                    stack.append((child, iter(self.children[child])))

    def ancestor(self, a: int, b: int) -> bool:
        """``a`` is ``b`` or an ancestor of it (both must be in the tree)."""
        pre_a = self.pre[a]
        return pre_a >= 0 and self.pre[b] >= 0 and pre_a <= self.pre[b] and self.post[b] <= self.post[a]


# --------------------------------------------------------------------------
# The graph and its analyses


class CFG:
    """Basic blocks of one function, their graph and (lazily) its analyses.

    Every analysis is computed on first use and cached; the CFG is read-only
    once built (rebuild it after rewriting the function).
    """

    def __init__(
        self,
        function: Function,
        statements: list[Statement],
        instructions: list[Instruction],
        blocks: list[BasicBlock],
        graph: nx.DiGraph,
        block_of_index: list[int],
    ) -> None:
        self.function = function
        self.statements = statements
        self.instructions = instructions
        self.blocks = blocks
        self.graph = graph
        self.entry = 0
        self.exit = len(blocks)
        self._block_of_index = block_of_index
        self._index_of_id = {id(inst): i for i, inst in enumerate(instructions)}
        self._live_after_cache: dict[int, list[int]] = {}
        self._names_cache: dict[int, frozenset[str]] = {}
        self._innermost_loop: dict[int, Loop] = {}  # filled by `loops`

    def __repr__(self) -> str:
        return f"<CFG {self.function.name}: {len(self.blocks)} blocks, {self.graph.number_of_edges()} edges>"

    # ---- navigation -------------------------------------------------------

    def successors(self, block: int) -> list[int]:
        return list(self.graph.successors(block))

    def predecessors(self, block: int) -> list[int]:
        return list(self.graph.predecessors(block))

    def edge_kind(self, u: int, v: int) -> EdgeKind:
        """The kind of edge ``u -> v`` (the first, when a guarded branch's
        target is also its fall-through: the edge's ``kinds`` has both)."""
        kind: EdgeKind = self.graph.edges[u, v]["kind"]
        return kind

    def index_of(self, inst: Instruction | int) -> int:
        """Position of an instruction in :attr:`instructions` (by identity)."""
        if isinstance(inst, int):
            if not -len(self.instructions) <= inst < len(self.instructions):
                raise IndexError(f"instruction index {inst} out of range")
            return inst % len(self.instructions)
        try:
            return self._index_of_id[id(inst)]
        except KeyError:
            raise KeyError(f"instruction {inst.mnemonic} is not in this CFG") from None

    def block_of(self, inst: Instruction | int) -> int:
        """The block holding an instruction (or instruction index)."""
        return self._block_of_index[self.index_of(inst)]

    def block_of_label(self, name: str) -> int:
        """The block a label starts. KeyError if absent; CFGError if the name
        is defined in several scopes (resolve it through a branch instead)."""
        found = self._label_blocks.get(name)
        if found is None:
            raise KeyError(name)
        if len(found) > 1:
            raise CFGError(f"label {name} is defined in several scopes")
        return found[0]

    @cached_property
    def _label_blocks(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for b in self.blocks:
            for name in b.labels:
                out.setdefault(name, []).append(b.id)
        return out

    # ---- depth-first search -----------------------------------------------

    @cached_property
    def _dfs(self) -> tuple[list[int], list[tuple[int, int]]]:
        """Postorder of the nodes reachable from the entry, and the retreating
        edges (to a node still on the DFS stack).

        Successors are visited highest id first, so the reverse postorder
        follows the text where it can (a fall-through block comes before a
        branch target further down).
        """
        size = self.exit + 1
        succs = [sorted(self.graph.successors(u), reverse=True) for u in range(size)]
        state = bytearray(size)  # 0 new, 1 on stack, 2 done
        post: list[int] = []
        retreating: list[tuple[int, int]] = []
        state[self.entry] = 1
        stack: list[tuple[int, Iterator[int]]] = [(self.entry, iter(succs[self.entry]))]
        while stack:
            u, it = stack[-1]
            for v in it:
                if state[v] == 0:
                    state[v] = 1
                    stack.append((v, iter(succs[v])))
                    break
                if state[v] == 1:
                    retreating.append((u, v))
            else:
                stack.pop()
                state[u] = 2
                post.append(u)
        return post, retreating

    @cached_property
    def reachable(self) -> frozenset[int]:
        """Nodes reachable from the entry (the exit node included if it is)."""
        return frozenset(self._dfs[0])

    @cached_property
    def unreachable(self) -> tuple[int, ...]:
        """Blocks no path from the entry reaches (e.g. code after an unguarded
        ``bra`` without a label). They have no dominators and belong to no loop,
        but they do get post-dominators and liveness."""
        reach = self.reachable
        return tuple(b.id for b in self.blocks if b.id not in reach)

    def reverse_postorder(self) -> list[int]:
        """Reachable blocks in reverse postorder (the exit node left out): every
        block comes before its successors except along back edges, the order a
        forward data-flow analysis or an emulator's worklist wants."""
        return [n for n in reversed(self._dfs[0]) if n != self.exit]

    # ---- dominators -------------------------------------------------------

    @cached_property
    def idom(self) -> dict[int, int | None]:
        """Immediate dominator of every node reachable from the entry; None
        for the entry itself. Unreachable blocks are not keys."""
        found = nx.immediate_dominators(self.graph, self.entry)
        found.pop(self.entry, None)  # networkx < 3.5 maps start to itself
        idom: dict[int, int | None] = {self.entry: None}
        idom.update(found)
        return idom

    def dominators(self) -> dict[int, int | None]:
        """See :attr:`idom`."""
        return self.idom

    @cached_property
    def _dom_tree(self) -> _Tree:
        return _Tree(self.idom, self.exit + 1)

    def dominates(self, a: int, b: int) -> bool:
        """Every path from the entry to ``b`` passes ``a`` (reflexive). False
        when either is unreachable."""
        return self._dom_tree.ancestor(a, b)

    @cached_property
    def virtual_exit_edges(self) -> tuple[tuple[int, int], ...]:
        """Edges ``(b, exit)`` added, for post-dominance only, from blocks that
        cannot reach the exit (an infinite loop such as ``$L: bra $L;``).

        Post-dominators are dominators of the reversed graph rooted at the exit;
        a block with no path to the exit would have none. So for every region
        that cannot reach the exit (each sink strongly connected component of
        that part of the graph) its last block in text order gets a virtual
        edge to the exit, as if the loop could end there. Every block then has
        an immediate post-dominator; inside such a region it is what it would
        be if the loop left from that block. These edges are not in
        :attr:`graph`.
        """
        can_reach = nx.ancestors(self.graph, self.exit) | {self.exit}
        stuck = [n for n in range(self.exit) if n not in can_reach]
        if not stuck:
            return ()
        sub = self.graph.subgraph(stuck)
        cond = nx.condensation(sub)
        edges = []
        for scc in cond.nodes:
            if cond.out_degree(scc) == 0:
                edges.append((max(cond.nodes[scc]["members"]), self.exit))
        return tuple(sorted(edges))

    @cached_property
    def ipdom(self) -> dict[int, int | None]:
        """Immediate post-dominator of every block (an int, possibly the exit
        node); None for the exit node. See :attr:`virtual_exit_edges` for
        blocks that never reach the exit."""
        return self._immediate_post_dominators(frozenset())

    @cached_property
    def exit_branches(self) -> frozenset[int]:
        """Blocks ending in a ``bra`` to a block that starts with an unguarded
        ``ret``/``exit`` (not the fall-through block).

        ptxas turns such a branch into a predicated ``EXIT``/``RET``: the lanes
        that take it leave at once instead of waiting at the ``ret`` block for
        the others. An emulator that does the same keeps ``__activemask()`` and
        votes after an early ``return`` inside a loop equal to the GPU's
        (checked on an H200); see `reconvergence_point`.
        """
        out: set[int] = set()
        for block in self.blocks:
            term = block.terminator
            if term is None or term.opcode != "bra" or not block.targets:
                continue
            target = block.targets[0]
            if target == self.exit or target == block.fallthrough:
                continue
            first = self.blocks[target].instructions
            if first and first[0].opcode in ("ret", "exit") and first[0].guard is None:
                out.add(block.id)
        return frozenset(out)

    @cached_property
    def _ipdom_ignoring_exit_branches(self) -> dict[int, int | None]:
        if not self.exit_branches:
            return self.ipdom
        return self._immediate_post_dominators(
            frozenset((b, self.blocks[b].targets[0]) for b in self.exit_branches)
        )

    def _immediate_post_dominators(self, dropped: frozenset[tuple[int, int]]) -> dict[int, int | None]:
        """Immediate dominators of the reversed graph rooted at the exit, with
        the virtual exit edges and without the ``dropped`` edges."""
        rev = nx.DiGraph()  # without edge data: graph.reverse(copy=True) deep-copies it
        rev.add_nodes_from(self.graph)
        rev.add_edges_from((v, u) for u, v in self.graph.edges if (u, v) not in dropped)
        rev.add_edges_from((v, u) for u, v in self.virtual_exit_edges)
        if dropped:
            # Blocks that reached the exit only through a dropped edge need a way
            # out. The block whose edge was dropped is where its lanes leave, so
            # it gets the exit edge: a loop left only by an early ``return``
            # (``-G`` code) keeps its own joins inside, rather than every branch
            # in it meeting only at the exit.
            reach = nx.descendants(rev, self.exit) | {self.exit}
            for u, _ in sorted(dropped):
                if u not in reach:
                    rev.add_edge(self.exit, u)
            reach = nx.descendants(rev, self.exit) | {self.exit}
            for b in self.graph:
                if b not in reach:
                    rev.add_edge(self.exit, b)
        found = nx.immediate_dominators(rev, self.exit)
        found.pop(self.exit, None)
        ipdom: dict[int, int | None] = {self.exit: None}
        ipdom.update(found)
        return ipdom

    def post_dominators(self) -> dict[int, int | None]:
        """See :attr:`ipdom`."""
        return self.ipdom

    @cached_property
    def _postdom_tree(self) -> _Tree:
        return _Tree(self.ipdom, self.exit + 1)

    def post_dominates(self, a: int, b: int) -> bool:
        """Every path from ``b`` to the exit passes ``a`` (reflexive)."""
        return self._postdom_tree.ancestor(a, b)

    def reconvergence_point(self, block: int, *, ignoring_exit_branches: bool = False) -> int:
        """Where the lanes that diverged at ``block``'s branch meet again: its
        immediate post-dominator (the join of a SIMT reconvergence stack).

        May be :attr:`exit` when the paths only meet by leaving the function
        (e.g. one side returns). With ``ignoring_exit_branches`` the branch
        edges of :attr:`exit_branches` do not count: the lanes that take them
        retire on the spot and join nobody, so the lanes that stay reconverge
        where they would if the early leavers did not exist.
        """
        ipdom = self._ipdom_ignoring_exit_branches if ignoring_exit_branches else self.ipdom
        point = ipdom[block]
        if point is None:
            raise ValueError("the exit node has no reconvergence point")
        return point

    # ---- loops ------------------------------------------------------------

    @cached_property
    def back_edges(self) -> tuple[tuple[int, int], ...]:
        """Edges ``u -> h`` whose target dominates their source (self-loops
        included), in (source, target) order."""
        reach = self.reachable
        return tuple(sorted((u, h) for u, h in self.graph.edges if u in reach and self.dominates(h, u)))

    @cached_property
    def irreducible_edges(self) -> tuple[tuple[int, int], ...]:
        """Retreating edges of the depth-first search that are not back edges.

        Non-empty exactly when the graph is irreducible (a cycle with two
        entries): such a cycle is not a natural loop and :meth:`natural_loops`
        does not report it; an emulator must bound it some other way.
        """
        return tuple(sorted((u, v) for u, v in self._dfs[1] if not self.dominates(v, u)))

    @property
    def is_reducible(self) -> bool:
        return not self.irreducible_edges

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        """Natural loops, outermost first (by header order within a depth)."""
        latches_of: dict[int, list[int]] = {}
        for u, h in self.back_edges:
            latches_of.setdefault(h, []).append(u)
        found: list[Loop] = []
        for header, latches in latches_of.items():
            body = {header}
            work = [u for u in latches if u != header]
            body.update(work)
            while work:
                node = work.pop()
                for pred in self.graph.predecessors(node):
                    if pred not in body and pred in self.reachable:
                        body.add(pred)
                        work.append(pred)
            exits = tuple(sorted((u, v) for u in body for v in self.graph.successors(u) if v not in body))
            found.append(
                Loop(
                    header=header,
                    body=frozenset(body),
                    latches=tuple(sorted(latches)),
                    back_edges=tuple((u, header) for u in sorted(latches)),
                    exits=exits,
                )
            )
        # Natural loops with different headers are nested or disjoint, and an
        # enclosing loop is strictly larger: visit largest first, and the
        # innermost loop seen so far holding a header is that loop's parent.
        found.sort(key=lambda loop: (-len(loop.body), loop.header))
        innermost: dict[int, Loop] = {}
        for loop in found:
            parent = innermost.get(loop.header)
            if parent is not None:
                loop.parent = parent
                loop.depth = parent.depth + 1
                parent.children.append(loop)
            for b in loop.body:
                innermost[b] = loop
        self._innermost_loop = innermost
        return tuple(sorted(found, key=lambda loop: (loop.depth, loop.header)))

    def natural_loops(self) -> tuple[Loop, ...]:
        """See :attr:`loops`."""
        return self.loops

    def loop_of(self, block: int) -> Loop | None:
        """The innermost natural loop holding ``block``, if any."""
        _ = self.loops
        return self._innermost_loop.get(block)

    def loop_depth(self, block: int) -> int:
        """How many natural loops hold ``block`` (0 outside any loop)."""
        loop = self.loop_of(block)
        return 0 if loop is None else loop.depth

    @cached_property
    def structured_order(self) -> tuple[int, ...]:
        """The reachable blocks in an order where every edge but a back edge goes
        forward and every loop's blocks are contiguous, header first: the nearest
        such order to the text's (a topological sort by block number, each inner
        loop taken as one node). A SIMT scheduler that always runs the earliest
        block with waiting threads then reconverges them at joins and runs a loop
        to its end before its exits. Needs reducible control flow."""
        back = set(self.back_edges)
        blocks = [b.id for b in self.blocks if b.id in self.reachable]

        def order(members: set[int], loop: Loop | None) -> list[int]:
            def node(b: int) -> int:  # b, or the header of the child loop of ``loop`` holding it
                inner = self.loop_of(b)
                while inner is not None and inner.parent is not loop:
                    inner = inner.parent
                return b if inner is None or inner is loop else inner.header

            nodes = {node(b) for b in members}
            preds: dict[int, set[int]] = {n: set() for n in nodes}
            succs: dict[int, set[int]] = {n: set() for n in nodes}
            for u in members:
                for v in self.graph.successors(u):
                    if v in members and (u, v) not in back and node(u) != node(v):
                        succs[node(u)].add(node(v))
                        preds[node(v)].add(node(u))
            ready = [n for n in nodes if not preds[n]]
            heapq.heapify(ready)
            out: list[int] = []
            while ready:
                n = heapq.heappop(ready)
                child = self.loop_of(n)
                if n not in members or child is None or child is loop or child.header != n:
                    out.append(n)
                else:
                    out += order(set(child.body), child)
                for m in succs[n]:
                    preds[m].discard(n)
                    if not preds[m]:
                        heapq.heappush(ready, m)
            return out

        result = order(set(blocks), None)
        if len(result) != len(blocks):
            raise CFGError(f"{self.function.name}: no structured order (irreducible control flow)")
        return tuple(result)

    # ---- liveness ---------------------------------------------------------
    #
    # Sets of registers are Python ints used as bit sets (bit i = register
    # self._reg_names[i]): union and difference are then single big-int
    # operations, which keeps a 100k-instruction function in the fast path.

    @cached_property
    def _reg_masks(self) -> tuple[list[int], list[int], list[str], int]:
        """Per instruction: the registers it reads (uses) and the ones it
        certainly overwrites (kills); the names behind the bits; and the
        registers live at the exit (``.reg`` return parameters, read by the
        caller).

        A guarded instruction kills nothing (its write may not happen), nor
        does a write to one element of a vector register (``%v.x``).
        """
        bit: dict[str, int] = {}
        names: list[str] = []

        def index(name: str) -> int:
            i = bit.get(name)
            if i is None:
                i = bit[name] = len(names)
                names.append(name)
            return i

        special: dict[str, bool] = {}

        def mask(regs: Iterable[Register], partial_ok: bool) -> int:
            m = 0
            for reg in regs:
                name = reg.name
                spec = special.get(name)
                if spec is None:
                    spec = special[name] = is_special_register(name)
                if spec or (reg.selector is not None and not partial_ok):
                    continue
                m |= 1 << index(name)
            return m

        uses: list[int] = []
        kills: list[int] = []
        for inst in self.instructions:
            uses.append(mask(isa.uses(inst), True))
            kills.append(0 if inst.guard is not None else mask(isa.defs(inst), False))
        # Registers returned through .reg return parameters are read at the exit.
        ret_regs = [Register(p.name) for p in (self.function.returns or []) if p.space == ".reg"]
        return uses, kills, names, mask(ret_regs, True)

    @cached_property
    def _liveness(self) -> tuple[list[int], list[int]]:
        """Live-in and live-out bit sets of every node (index = node id)."""
        uses, kills, _, exit_live = self._reg_masks
        size = self.exit + 1
        gen = [0] * size
        kill = [0] * size
        for b in self.blocks:
            g = k = 0
            for i in range(b.stop - 1, b.start - 1, -1):
                g = (g & ~kills[i]) | uses[i]
                k |= kills[i]
            gen[b.id] = g
            kill[b.id] = k
        live_in = gen[:]
        live_in[self.exit] = exit_live
        live_out = [0] * size
        # Backward problem: visit in postorder (successors first), then the
        # unreachable blocks; re-queue predecessors whose input changed.
        order = [n for n in self._dfs[0] if n != self.exit] + list(self.unreachable)
        queued = bytearray(size)
        work = deque(order)
        for n in order:
            queued[n] = 1
        succs = [list(self.graph.successors(n)) for n in range(size)]
        preds = [list(self.graph.predecessors(n)) for n in range(size)]
        while work:
            n = work.popleft()
            queued[n] = 0
            out = 0
            for s in succs[n]:
                out |= live_in[s]
            live_out[n] = out
            new_in = gen[n] | (out & ~kill[n])
            if new_in != live_in[n]:
                live_in[n] = new_in
                for p in preds[n]:
                    if not queued[p]:
                        queued[p] = 1
                        work.append(p)
        return live_in, live_out

    def _names(self, m: int) -> frozenset[str]:
        cached = self._names_cache.get(m)
        if cached is None:
            names = self._reg_masks[2]
            out = []
            rest = m
            while rest:
                low = rest & -rest
                out.append(names[low.bit_length() - 1])
                rest ^= low
            cached = self._names_cache[m] = frozenset(out)
        return cached

    def live_in(self, block: int) -> frozenset[str]:
        """Registers that may be read, before any certain write, on some path
        from the start of ``block``."""
        return self._names(self._liveness[0][block])

    def live_out(self, block: int) -> frozenset[str]:
        """Registers live at the end of ``block`` (live into a successor)."""
        return self._names(self._liveness[1][block])

    def _block_live_after(self, block: int) -> list[int]:
        """Live-after bit sets of each instruction of ``block``, computed once
        per block on first request (linear in the block's length)."""
        cached = self._live_after_cache.get(block)
        if cached is None:
            uses, kills, _, _ = self._reg_masks
            b = self.blocks[block]
            live = self._liveness[1][block]
            cached = [0] * (b.stop - b.start)
            for i in range(b.stop - 1, b.start - 1, -1):
                cached[i - b.start] = live
                live = (live & ~kills[i]) | uses[i]
            self._live_after_cache[block] = cached
        return cached

    def live_after(self, inst: Instruction | int) -> frozenset[str]:
        """Registers live right after an instruction (or instruction index)."""
        i = self.index_of(inst)
        block = self._block_of_index[i]
        return self._names(self._block_live_after(block)[i - self.blocks[block].start])

    def live_before(self, inst: Instruction | int) -> frozenset[str]:
        """Registers live right before an instruction."""
        i = self.index_of(inst)
        uses, kills, _, _ = self._reg_masks
        block = self._block_of_index[i]
        after = self._block_live_after(block)[i - self.blocks[block].start]
        return self._names((after & ~kills[i]) | uses[i])

    # ---- debugging --------------------------------------------------------

    def to_dot(self, max_instructions: int = 6) -> str:
        """Graphviz text of the graph: blocks with their first instructions,
        edges labelled by kind (dashed: virtual post-dominance edges)."""

        def esc(text: str) -> str:
            return text.replace("\\", "\\\\").replace('"', '\\"')

        lines = [f'digraph "{esc(self.function.name)}" {{', "  node [shape=box, fontname=monospace];"]
        for b in self.blocks:
            head = f"B{b.id}" + (f" {b.label}" if b.label else "")
            body = [head]
            for inst in b.instructions[:max_instructions]:
                guard = ""
                if inst.guard is not None:
                    guard = f"@{'!' if inst.guard.negated else ''}{inst.guard.predicate.name} "
                body.append(guard + inst.mnemonic)
            if len(b.instructions) > max_instructions:
                body.append(f"... {len(b.instructions) - max_instructions} more")
            text = "\\l".join(esc(line) for line in body) + "\\l"
            lines.append(f'  {b.id} [label="{text}"];')
        lines.append(f'  {self.exit} [label="EXIT", shape=oval];')
        for u, v, data in self.graph.edges(data=True):
            lines.append(f'  {u} -> {v} [label="{"/".join(data["kinds"])}"];')
        for u, v in self.virtual_exit_edges:
            lines.append(f'  {u} -> {v} [style=dashed, label="virtual"];')
        lines.append("}")
        return "\n".join(lines)
