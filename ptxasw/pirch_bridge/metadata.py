"""PIRCH metadata: what makes the lifted LLVM IR InfReg-IR.

Every vector value of a lifted function is an InfReg: lane ``ix`` holds work
item ``wi.ix`` of work group ``wg.ix`` of the call, whose first lane is
``wg.off``; ``wg.size`` items form a group. One node says this for the
whole function (all InfRegs share the layout) and is attached as ``!pirch``
to every instruction that produces one; the ``alloca`` of a PTX register
also names it (``!pirch.reg``). Back ends that re-partition InfRegs (native
vector widths, VE's vector length) read the layout from here instead of
assuming it. The metadata never changes what the code computes, so the IR
stays valid LLVM for any LLVM tool.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxasw.pirch_bridge.lift import LiftedKernel

__all__ = ["annotate", "layout_node"]


def layout_node(module: ll.Module, wg_size: int, wg_pack: int) -> ll.MDValue:
    """The ``!pirch`` node of a ``wg_size`` x ``wg_pack`` lane layout."""
    i32 = ll.IntType(32)
    lanes = wg_size * wg_pack

    def ints(values: list[int]) -> ll.MDValue:
        return module.add_metadata([ll.Constant(i32, v) for v in values])

    return module.add_metadata(
        [
            "ix",
            ints(list(range(lanes))),
            "wi.ix",
            ints([i % wg_size for i in range(lanes)]),
            "wg.size",
            ll.Constant(i32, wg_size),
            "wg.off",
            ints([g * wg_size for g in range(wg_pack)]),
            "wg.ix",
            ints([i // wg_size for i in range(lanes)]),
        ]
    )


def annotate(lifted: LiftedKernel) -> int:
    """Attach the PIRCH metadata to ``lifted``'s kernel; returns how many InfRegs were marked."""
    module = lifted.module
    node = layout_node(module, lifted.wg_size, lifted.groups)
    lanes = lifted.wg_size * lifted.groups
    fn = module.get_global(lifted.function)
    count = 0
    reg_names = {name.lstrip("%").replace(".", "_"): name for name in lifted.registers}
    for block in fn.blocks:
        for inst in block.instructions:
            t = inst.type
            if isinstance(inst, ll.AllocaInstr):
                name = reg_names.get(inst.name)
                if name is not None:
                    inst.set_metadata("pirch.reg", module.add_metadata([name]))
                    inst.set_metadata("pirch", node)
                    count += 1
            elif isinstance(t, ll.VectorType) and t.count == lanes:
                inst.set_metadata("pirch", node)
                count += 1
    kernels = module.add_named_metadata("pirch.kernels")
    kernels.add(module.add_metadata([fn, node]))
    return count
