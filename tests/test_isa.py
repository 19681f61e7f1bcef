"""Tests of the PTX instruction table (ptxasw.ir.isa).

Instructions are built directly as IR so these tests depend on nothing but the
table and the IR; the mnemonic list below was collected from real nvcc/llc
output and from the inline PTX of the CUDA 13 headers (CCCL's cuda::ptx), so
``unknown_modifiers`` is checked against what compilers actually print
(GCC's nvptx back end, for one, writes ``set.u32.eq.u32`` and ``mov.v2.u32``).
"""

from __future__ import annotations

import pytest

from ptxasw.ir import (
    Address,
    FloatImm,
    Guard,
    Instruction,
    IntImm,
    ListOperand,
    Negated,
    Operand,
    PairOperand,
    ParenOperand,
    Register,
    Sink,
    Symbol,
    VectorOperand,
    isa,
)
from ptxasw.ir.isa import Family, MemoryEffect, ModifierKind, Role


def R(name: str) -> Register:
    return Register(name)


def V(*names: str) -> VectorOperand:
    return VectorOperand(tuple(Sink() if n == "_" else R(n) for n in names))


def A(base: str, offset: int = 0) -> Address:
    return Address(R(base) if base.startswith("%") else Symbol(base), offset)


def I(value: int) -> IntImm:  # noqa: E743 - short helper for immediates
    return IntImm(value)


def inst(mnemonic: str, *operands: Operand, guard: Guard | None = None) -> Instruction:
    opcode, modifiers = isa.split_mnemonic(mnemonic)
    return Instruction(opcode, modifiers, tuple(operands), guard)


def names(regs: list[Register]) -> list[str]:
    return [r.name for r in regs]


# --------------------------------------------------------------------------
# The table itself


def test_table_size_and_lookup() -> None:
    specs = isa.opcodes()
    assert len(specs) >= 180
    assert len({s.name for s in specs}) == len(specs)
    for spec in specs:
        assert isa.lookup(spec.name) is spec
        # A table name is its own mnemonic, with no modifiers.
        assert isa.split_mnemonic(spec.name) == (spec.name, ())
    with pytest.raises(KeyError):
        isa.lookup("frobnicate")


def test_every_opcode_is_documented_and_consistent() -> None:
    memory_families = {
        Family.MEMORY,
        Family.ASYNC_COPY,
        Family.ATOMIC,
        Family.TEXTURE,
        Family.SURFACE,
        Family.SYNC,
        Family.MATRIX,
        Family.MISC,
    }
    for spec in isa.opcodes():
        assert spec.summary and spec.summary[0].isupper() and spec.summary.endswith("."), spec.name
        assert (1, 0) <= spec.min_ptx <= (9, 0), spec.name
        assert isinstance(spec.family, Family)
        assert spec.forms, spec.name
        if spec.control_flow:
            assert spec.family in (Family.CONTROL, Family.MISC), spec.name
        if spec.family is Family.CONTROL:
            assert spec.control_flow, spec.name
        if spec.memory & (MemoryEffect.READ | MemoryEffect.WRITE | MemoryEffect.ATOMIC):
            assert spec.family in memory_families, spec.name
        if spec.memory & MemoryEffect.ATOMIC:
            assert spec.memory & MemoryEffect.READ and spec.memory & MemoryEffect.WRITE, spec.name
        if spec.family is Family.ATOMIC:
            assert spec.memory & MemoryEffect.ATOMIC, spec.name
        if spec.family is Family.VIDEO:
            assert spec.name.startswith("v"), spec.name
        if spec.name.startswith("cp."):
            assert spec.family is Family.ASYNC_COPY, spec.name
        if spec.name.startswith(("mbarrier.", "bar", "fence", "membar")):
            assert spec.family is Family.SYNC, spec.name
            # pending_count only decodes a state value it is given.
            assert spec.barrier or spec.name == "mbarrier.pending_count", spec.name
        if spec.name.startswith(("wmma.", "wgmma.", "tcgen05.", "mma")):
            assert spec.family is Family.MATRIX, spec.name
        if spec.family is Family.WARP:
            assert spec.warp_collective, spec.name
        if spec.barrier and not spec.name.startswith("mbarrier."):
            assert spec.memory & MemoryEffect.FENCE, spec.name


BRIEF_OPCODES = """
    add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi
    szext bmsk dp4a dp2a addc subc madc fma rcp sqrt rsqrt sin cos lg2 ex2 tanh copysign
    testp set setp selp slct and or xor not cnot lop3 shf shl shr mov shfl prmt ld ldu st
    st.async st.bulk multimem.ld_reduce multimem.st multimem.red prefetch prefetchu
    applypriority discard createpolicy isspacep cvta cvt cvt.pack mapa getctarank cp.async
    cp.async.commit_group cp.async.wait_group cp.async.wait_all cp.async.bulk
    cp.reduce.async.bulk cp.async.bulk.tensor cp.reduce.async.bulk.tensor
    cp.async.bulk.prefetch cp.async.bulk.prefetch.tensor cp.async.bulk.commit_group
    cp.async.bulk.wait_group tensormap.replace tensormap.cp_fenceproxy ldmatrix stmatrix
    movmatrix tex tld4 txq istypep suld sust sured suq bra brx.idx call ret exit bar barrier
    bar.warp.sync barrier.cluster membar fence atom red red.async mbarrier.init
    mbarrier.inval mbarrier.arrive mbarrier.arrive_drop mbarrier.test_wait mbarrier.try_wait
    mbarrier.pending_count mbarrier.expect_tx mbarrier.complete_tx vote match activemask
    redux griddepcontrol elect wmma.load wmma.store wmma.mma mma mma.sp wgmma.mma_async
    wgmma.mma_async.sp wgmma.fence wgmma.commit_group wgmma.wait_group tcgen05.mma
    tcgen05.ld tcgen05.st tcgen05.alloc tcgen05.dealloc tcgen05.cp tcgen05.commit
    stacksave stackrestore alloca trap brkpt pmevent nanosleep setmaxnreg
    clusterlaunchcontrol.try_cancel clusterlaunchcontrol.query_cancel vadd vsub vabsdiff vmin
    vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 vadd4 vsub4
    vavrg4 vabsdiff4 vmin4 vmax4 vset4
"""


def test_brief_instruction_list_is_covered() -> None:
    wanted = BRIEF_OPCODES.split()
    table = {s.name for s in isa.opcodes()}
    assert [w for w in wanted if w not in table] == []


def test_min_ptx_of_some_opcodes() -> None:
    assert isa.lookup("add").min_ptx == (1, 0)
    assert isa.lookup("shfl").min_ptx == (3, 0)
    assert isa.lookup("cp.async").min_ptx == (7, 0)
    assert isa.lookup("wgmma.mma_async").min_ptx == (8, 0)
    assert isa.lookup("tcgen05.mma").min_ptx == (8, 6)
    assert isa.lookup("tcgen05.ld.red").min_ptx == (8, 8)


# --------------------------------------------------------------------------
# Splitting mnemonics


@pytest.mark.parametrize(
    ("text", "opcode", "modifiers"),
    [
        ("ld.global.nc.v4.f32", "ld", (".global", ".nc", ".v4", ".f32")),
        ("add.s32", "add", (".s32",)),
        ("add.cc.u32", "add", (".cc", ".u32")),
        ("bar.sync", "bar", (".sync",)),
        ("bar.cta.sync", "bar", (".cta", ".sync")),
        ("bar.warp.sync", "bar.warp.sync", ()),
        ("barrier.sync.aligned", "barrier", (".sync", ".aligned")),
        ("barrier.cluster.arrive.release", "barrier.cluster", (".arrive", ".release")),
        ("shfl.sync.bfly.b32", "shfl", (".sync", ".bfly", ".b32")),
        ("vote.sync.ballot.b32", "vote", (".sync", ".ballot", ".b32")),
        ("match.any.sync.b32", "match", (".any", ".sync", ".b32")),
        ("brx.idx.uni", "brx.idx", (".uni",)),
        ("cvt.pack.sat.u8.s32.b32", "cvt.pack", (".sat", ".u8", ".s32", ".b32")),
        ("cvt.rn.satfinite.e4m3x2.f32", "cvt", (".rn", ".satfinite", ".e4m3x2", ".f32")),
        (
            "cp.async.ca.shared.global.L2::cache_hint",
            "cp.async",
            (".ca", ".shared", ".global", ".L2::cache_hint"),
        ),
        ("cp.async.wait_group", "cp.async.wait_group", ()),
        (
            "cp.async.mbarrier.arrive.noinc.shared.b64",
            "cp.async.mbarrier.arrive",
            (".noinc", ".shared", ".b64"),
        ),
        (
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "cp.async.bulk.tensor",
            (".2d", ".shared::cluster", ".global", ".tile", ".mbarrier::complete_tx::bytes"),
        ),
        (
            "cp.async.bulk.prefetch.tensor.2d.L2.global.tile",
            "cp.async.bulk.prefetch.tensor",
            (".2d", ".L2", ".global", ".tile"),
        ),
        (
            "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32",
            "cp.reduce.async.bulk",
            (".global", ".shared::cta", ".bulk_group", ".add", ".u32"),
        ),
        (
            "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
            "mbarrier.arrive",
            (".expect_tx", ".release", ".cta", ".shared::cta", ".b64"),
        ),
        (
            "mbarrier.try_wait.parity.shared::cta.b64",
            "mbarrier.try_wait",
            (".parity", ".shared::cta", ".b64"),
        ),
        (
            "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
            "mma.sp::ordered_metadata",
            (".sync", ".aligned", ".m16n8k32", ".row", ".col", ".f32", ".f16", ".f16", ".f32"),
        ),
        (
            "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
            "mma.sp",
            (".sync", ".aligned", ".m16n8k32", ".row", ".col", ".f32", ".f16", ".f16", ".f32"),
        ),
        (
            "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16",
            "wgmma.mma_async.sp",
            (".sync", ".aligned", ".m64n8k32", ".f32", ".f16", ".f16"),
        ),
        (
            "wmma.load.a.sync.aligned.row.m16n16k16.global.f16",
            "wmma.load",
            (".a", ".sync", ".aligned", ".row", ".m16n16k16", ".global", ".f16"),
        ),
        ("tcgen05.wait::ld.sync.aligned", "tcgen05.wait::ld", (".sync", ".aligned")),
        ("tcgen05.fence::before_thread_sync", "tcgen05.fence::before_thread_sync", ()),
        (
            "tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32",
            "tcgen05.ld.red",
            (".sync", ".aligned", ".32x32b", ".x2", ".min", ".f32"),
        ),
        ("tcgen05.mma.ws.sp.cta_group::1.kind::f16", "tcgen05.mma.ws.sp", (".cta_group::1", ".kind::f16")),
        (
            "ld.global.L1::evict_last.L2::cache_hint.v2.u64",
            "ld",
            (".global", ".L1::evict_last", ".L2::cache_hint", ".v2", ".u64"),
        ),
        (
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32",
            "st.async",
            (".shared::cluster", ".mbarrier::complete_tx::bytes", ".v4", ".b32"),
        ),
        (
            "clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128",
            "clusterlaunchcontrol.query_cancel",
            (".get_first_ctaid::x", ".b32", ".b128"),
        ),
        ("ret", "ret", ()),
        ("tex.2d.v4.f32.f32", "tex", (".2d", ".v4", ".f32", ".f32")),
    ],
)
def test_split_mnemonic(text: str, opcode: str, modifiers: tuple[str, ...]) -> None:
    assert isa.split_mnemonic(text) == (opcode, modifiers)
    assert opcode + "".join(modifiers) == text


@pytest.mark.parametrize("text", ["frob", "frob.s32", "ldx.global.f32", "", "cp", "tcgen05"])
def test_unknown_opcode(text: str) -> None:
    with pytest.raises(isa.UnknownOpcode) as info:
        isa.split_mnemonic(text)
    assert isinstance(info.value, ValueError)
    assert info.value.text == text


def test_split_is_cached() -> None:
    a = isa.split_mnemonic("ld.shared.v2.f32")
    assert isa.split_mnemonic("ld.shared.v2.f32") is a


# Mnemonics printed by nvcc 13, llc 14, GCC 12 (nvptx offloading: libgomp, newlib) and the
# inline PTX of the CUDA 13 headers.
REAL_MNEMONICS = """
abs.f16 abs.f32 abs.s32 abs.bf16 abs.ftz.f32 activemask.b32 add.s16 add.u32 add.f16x2 add.s16x2
add.cc.u32 add.rn.ftz.f32 add.sat.s32 add.f32x2 add.rn.f32.f16 addc.cc.u32 addc.u32 and.b16 and.b32
and.b64 and.pred atom.min.acq_rel.cta.s64 atom.min.release.sys.u64 atom.and.acq_rel.cluster.b64
atom.exch.acquire.cluster.b32 atom.global.cas.b32 atom.shared.add.u32 atom.global.cta.add.f32
atom.global.add.noftz.bf16x2 atom.global.v4.f32.add atom.add.L2::cache_hint.u64
atom.shared::cluster.cas.b128 bar.sync bar.arrive bar.red.popc.u32 bar.red.and.pred bar.warp.sync
barrier.sync barrier.sync.aligned barrier.cluster.wait barrier.cluster.arrive
barrier.cluster.wait.acquire barrier.cluster.arrive.release barrier.cluster.arrive.relaxed.aligned
bfe.s32 bfe.u32 bfe.u64 bfi.b32 bfi.b64 bfind.s64 bfind.u64 bfind.shiftamt.u32 bfind.shiftamt.u64
bmsk.clamp.b32 bmsk.wrap.b32 bra bra.uni brev.b32 brx.idx call call.uni
clusterlaunchcontrol.query_cancel.is_canceled.pred.b128
clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128
clusterlaunchcontrol.query_cancel.get_first_ctaid::y.b32.b128
clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128
clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128
clz.b32 clz.b64 cnot.b32 copysign.f32 copysign.f64 cos.approx.f32 cos.approx.ftz.f32
cp.async.ca.shared.global cp.async.cg.shared.global cp.async.cg.shared.global.L2::128B
cp.async.bulk.global.shared::cta.bulk_group cp.async.bulk.global.shared::cta.bulk_group.cp_mask
cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes
cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
cp.async.bulk.commit_group cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes
cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.cta_group::2
cp.async.bulk.tensor.2d.shared::cta.global.tile::gather4.mbarrier::complete_tx::bytes
cp.async.bulk.prefetch.L2.global cp.async.bulk.prefetch.tensor.2d.L2.global.tile
cp.async.bulk.wait_group cp.async.bulk.wait_group.read cp.async.commit_group
cp.async.mbarrier.arrive.b64 cp.async.mbarrier.arrive.noinc.b64 cp.async.mbarrier.arrive.shared.b64
cp.async.wait_all cp.async.wait_group cp.reduce.async.bulk.global.shared::cta.bulk_group.max.s64
cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16
cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.dec.u32
cp.reduce.async.bulk.tensor.2d.global.shared::cta.or.tile.bulk_group
cp.reduce.async.bulk.tensor.5d.global.shared::cta.inc.tile.bulk_group
createpolicy.fractional.L2::evict_last.b64
createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 cvt.rn.f64.s64 cvt.rm.bf16.f32
cvt.rni.u64.f16 cvt.rpi.u32.f16 cvt.u64.u32 cvt.rzi.s32.f32 cvt.rn.satfinite.e4m3x2.f32
cvt.rn.f16x2.e5m2x2 cvt.rs.relu.satfinite.e4m3x4.f32 cvt.rna.satfinite.tf32.f32
cvt.rz.satfinite.ue8m0x2.f32 cvt.rn.bf16x2.ue8m0x2 cvt.rn.satfinite.e2m1x2.f32
cvt.pack.sat.u4.s32.b32 cvta.local.u64 cvta.param.u64 cvta.const.u64 cvta.global.u64
cvta.to.global.u64 cvta.shared::cluster.u32 div.s64 div.rn.f64 div.rn.f32 div.rn.ftz.f32
div.full.f32 div.approx.ftz.f32 dp2a.hi.s32.s32 dp2a.lo.u32.u32 dp4a.s32.s32 dp4a.u32.u32 elect.sync
ex2.approx.f32 ex2.approx.ftz.f32 ex2.approx.ftz.bf16x2 exit fence.sc.cta fence.acq_rel.gpu
fence.proxy.async fence.proxy.async.global fence.proxy.async.shared::cta
fence.proxy.tensormap::generic.acquire.gpu fence.proxy.tensormap::generic.release.cta
fence.mbarrier_init.release.cluster
fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster
fence.acquire.sync_restrict::shared::cluster.cluster fence.proxy.alias fma.rn.f64 fma.rm.f32
fma.rn.f16 fma.rn.relu.bf16 fma.rn.ftz.sat.f16x2 fma.rn.oob.relu.bf16 fma.rn.f32.bf16
getctarank.shared::cluster.u32 griddepcontrol.launch_dependents griddepcontrol.wait isspacep.local
isspacep.shared::cluster ld.relaxed.cta.f64 ld.global.cv.v4.s32 ld.volatile.global.u32
ld.global.L1::no_allocate.L2::cache_hint.L2::64B.b16 ld.global.nc.L1::no_allocate.L2::256B.v4.f32
ld.param.u64 ld.param::entry.b32 ld.acquire.gpu.global.b32 ld.mmio.relaxed.sys.global.u32
ld.global.v8.f32 ld.shared::cluster.u32 ld.global.b128 ldu.global.f32
ldmatrix.sync.aligned.m8n8.x2.shared.b16 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8x16.b6x16_p32 lg2.approx.f32 lg2.approx.ftz.f32
lop3.b32 lop3.or.b32 mad.hi.u32 mad.lo.cc.u32 mad.lo.s32 mad.wide.u32 mad.rn.f32 mad.hi.sat.s32
madc.hi.cc.u32 madc.hi.u32 mad24.lo.s32 mapa.shared::cluster.u32 mapa.u64 match.all.sync.b32
match.any.sync.b32 match.any.sync.b64 max.f64 max.s32 max.f32 max.bf16 max.relu.s16x2 max.NaN.f32
mbarrier.arrive.noComplete.shared.b64 mbarrier.arrive.relaxed.cta.shared::cta.b64
mbarrier.arrive.release.cluster.shared::cluster.b64
mbarrier.arrive.expect_tx.relaxed.cluster.shared::cta.b64 mbarrier.arrive_drop.noComplete.shared.b64
mbarrier.arrive_drop.shared.b64 mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64
mbarrier.complete_tx.relaxed.cta.shared::cta.b64 mbarrier.init.shared.b64
mbarrier.init.shared::cta.b64 mbarrier.inval.shared.b64 mbarrier.pending_count.b64
mbarrier.test_wait.acquire.cta.shared::cta.b64
mbarrier.test_wait.parity.relaxed.cluster.shared::cta.b64 mbarrier.try_wait.parity.shared.b64
mbarrier.try_wait.acquire.cluster.shared::cta.b64 membar.cta membar.gl membar.sys membar.proxy.alias
min.f32 min.s32 min.s16x2 min.NaN.bf16 min.xorsign.abs.f16 min.u16x2
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32
mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc
mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e5m2.f32
mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3
mov.u16 mov.u64 mov.b32 mov.pred mov.b128 movmatrix.sync.aligned.m8n8.trans.b16 mul.bf16 mul.hi.s64
mul.ftz.f32 mul.rn.ftz.f32 mul.wide.s32 mul.lo.s32 mul24.hi.u32
multimem.ld_reduce.weak.global.add.u64 multimem.ld_reduce.acquire.sys.global.max.u64
multimem.ld_reduce.add.acc::f32.v2.f16x2 multimem.ld_reduce.relaxed.cta.min.v2.e4m3x2
multimem.red.release.gpu.global.add.u32 multimem.red.release.cta.global.add.v4.f32
multimem.st.release.sys.global.b32 multimem.st.relaxed.cluster.global.b32 nanosleep.u32 neg.s32
neg.f16 neg.ftz.f16x2 not.b16 not.pred or.b64 or.pred pmevent pmevent.mask popc.b32 popc.b64
prefetch.global.L2 prefetch.global.L1 prefetch.local.L1 prefetch.tensormap prefetch.const.tensormap
prefetch.global.L2::evict_last prefetchu.L1 prmt.b32 prmt.b32.ecr prmt.b32.rc16 prmt.b32.b4e
rcp.rp.f32 rcp.rn.f64 rcp.approx.ftz.f64 rcp.approx.ftz.f32 red.and.relaxed.cta.b32
red.global.add.f32 red.global.add.noftz.f16x2 red.shared::cluster.add.u32
red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.max.s32
red.async.release.gpu.global.add.u32 redux.sync.xor.b32 redux.sync.min.s32
redux.sync.min.abs.NaN.f32 rem.s32 rem.u64 ret ret.uni rsqrt.approx.f32 rsqrt.approx.ftz.f64 sad.u32
selp.b32 selp.f32 set.eq.f16x2.f16x2 set.lt.u32.f32 set.gt.ftz.u32.f32
setmaxnreg.inc.sync.aligned.u32 setmaxnreg.dec.sync.aligned.u32 setp.ge.s32 setp.lt.and.f32
setp.gtu.ftz.f32 setp.ne.b16 setp.lo.u32 setp.hs.u64 setp.nan.f64 setp.lt.bf16x2 shf.l.wrap.b32
shf.r.clamp.b32 shfl.sync.idx.b32 shfl.sync.down.b32 shfl.down.b32 shfl.bfly.b32 shl.b32 shr.s64
shr.u16 sin.approx.f32 slct.f32.s32 slct.ftz.f32.f32 sqrt.rn.f32 sqrt.approx.ftz.f32
st.global.v4.b32 st.param.b32 st.shared.u32 st.local.f64 st.global.wb.u8 st.release.gpu.global.u32
st.param::func.b64 st.global.L1::no_allocate.v8.f32
st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.s32 st.async.mmio.release.sys.global.b32
st.bulk.weak.shared::cta stackrestore.u64 stacksave.u64 alloca.u64
stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 sub.s16 sub.cc.u64 sub.rn.bf16x2 subc.cc.u32
suld.b.2d.b32.clamp suld.b.a2d.v4.b32.trap sust.b.2d.b32.trap sust.p.3d.v4.f32.zero
sured.b.add.1d.u32.trap suq.width.b32 szext.clamp.s32 tanh.approx.f32 tanh.approx.bf16x2
tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32
tensormap.replace.tile.global_address.global.b1024.b64
tensormap.replace.tile.box_dim.global.b1024.b32
tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned
testp.finite.f32 testp.notanumber.f64 tex.1d.v4.f32.s32 tex.level.2d.v4.f32.f32
tex.grad.3d.v4.s32.f32 tex.a2d.v4.u32.f32 tld4.r.2d.v4.f32.f32 tld4.a.cube.v4.s32.f32 txq.width.b32
txq.level.width.b32 txq.num_mipmap_levels.b32 istypep.texref istypep.surfref trap brkpt
vabsdiff4.u32.u32.u32 vadd.s32.u32.s32.sat.min vmad.s32.u32.u32.sat.shr15 vset.u32.u32.lt.add
vshl.u32.u32.u32.clamp.add vadd2.u32.u32.u32.sat vavrg4.u32.u32.u32 vset2.s32.s32.ge.add
vote.sync.ballot.b32 vote.sync.all.pred vote.ballot.b32 vote.uni.pred
wgmma.commit_group.sync.aligned wgmma.fence.sync.aligned wgmma.wait_group.sync.aligned
wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16
wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.u8.satfinite
wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.bf16.bf16
wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc
wmma.load.c.sync.aligned.row.m16n16k16.global.f32 wmma.load.a.sync.aligned.col.m8n32k16.shared.bf16
wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32
wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32
wmma.store.d.sync.aligned.row.m16n16k16.global.f32 xor.b64 xor.pred
tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32
tcgen05.dealloc.cta_group::2.sync.aligned.b32
tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
tcgen05.ld.sync.aligned.16x64b.x8.pack::16b.b32 tcgen05.ld.sync.aligned.16x32bx2.x2.b32
tcgen05.st.sync.aligned.32x32b.x128.unpack::16b.b32 tcgen05.cp.cta_group::1.128x256b
tcgen05.cp.cta_group::2.64x128b.warpx2::02_13.b8x16.b6x16_p32 tcgen05.cp.cta_group::1.32x128b.warpx4
tcgen05.shift.cta_group::1.down tcgen05.mma.cta_group::1.kind::f16
tcgen05.mma.cta_group::2.kind::mxf4nvf4.block_scale.scale_vec::4X
tcgen05.mma.cta_group::1.kind::tf32.collector::a::fill
tcgen05.mma.sp.cta_group::1.kind::i8.ashift.collector::a::lastuse
tcgen05.mma.ws.cta_group::1.kind::f8f6f4.collector::b2::discard
tcgen05.mma.ws.sp.cta_group::1.kind::i8
tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64
tcgen05.wait::ld.sync.aligned tcgen05.wait::st.sync.aligned tcgen05.fence::before_thread_sync
tcgen05.fence::after_thread_sync tcgen05.ld.red.sync.aligned.32x32b.x2.max.abs.NaN.f32
set.u32.eq.u32 set.u32.ge.s32 mov.v2.u64 vadd.u32.u32.u32.add ld.cg.s32 cvt.rmi.f64.f64 st.v2.u64
testp.infinite.f64 ld.const.f64 mul.wide.u16 setp.num.f32
"""


def test_real_mnemonics_split_and_have_no_unknown_modifiers() -> None:
    for text in REAL_MNEMONICS.split():
        opcode, mods = isa.split_mnemonic(text)
        assert opcode + "".join(mods) == text
        assert isa.unknown_modifiers(Instruction(opcode, mods, ())) == [], text


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("ld.glob.f32", [".glob"]),
        ("add.lt.s32", [".lt"]),
        ("st.global.nc.rn.f32", [".rn"]),
        ("setp.lt.wide.s32", [".wide"]),
        ("mov.f23", [".f23"]),
        ("bar.sync.bfly", [".bfly"]),
        ("shfl.sync.left.b32", [".left"]),
        ("tcgen05.mma.cta_group::1.kind::f16.collector::z::fill", [".collector::z::fill"]),
    ],
)
def test_unknown_modifiers_are_reported(text: str, bad: list[str]) -> None:
    assert isa.unknown_modifiers(inst(text)) == bad


def test_unknown_modifiers_of_an_opcode_missing_from_the_table() -> None:
    assert isa.unknown_modifiers(Instruction("frob", (".x",), ())) == [".x"]


# --------------------------------------------------------------------------
# Modifier classification


@pytest.mark.parametrize(
    ("modifier", "kind"),
    [
        (".f32", ModifierKind.TYPE),
        (".f16x2", ModifierKind.TYPE),
        (".e4m3x2", ModifierKind.TYPE),
        (".b128", ModifierKind.TYPE),
        (".pred", ModifierKind.TYPE),
        (".bf16", ModifierKind.TYPE),
        (".global", ModifierKind.STATE_SPACE),
        (".shared::cta", ModifierKind.STATE_SPACE),
        (".shared::cluster", ModifierKind.STATE_SPACE),
        (".param::entry", ModifierKind.STATE_SPACE),
        (".v4", ModifierKind.VECTOR),
        (".v8", ModifierKind.VECTOR),
        (".rn", ModifierKind.ROUNDING),
        (".rzi", ModifierKind.ROUNDING),
        (".rs", ModifierKind.ROUNDING),
        (".lt", ModifierKind.COMPARE),
        (".geu", ModifierKind.COMPARE),
        (".ls", ModifierKind.COMPARE),
        (".and", ModifierKind.BOOL_OP),
        (".xor", ModifierKind.BOOL_OP),
        (".nc", ModifierKind.CACHE),
        (".cg", ModifierKind.CACHE),
        (".L2::cache_hint", ModifierKind.CACHE),
        (".L2::128B", ModifierKind.CACHE),
        (".L1::evict_last", ModifierKind.EVICTION),
        (".L1::no_allocate", ModifierKind.EVICTION),
        (".gpu", ModifierKind.SCOPE),
        (".cta", ModifierKind.SCOPE),
        (".gl", ModifierKind.SCOPE),
        (".acquire", ModifierKind.SEMANTICS),
        (".volatile", ModifierKind.SEMANTICS),
        (".mmio", ModifierKind.SEMANTICS),
        (".weak", ModifierKind.SEMANTICS),
        (".sat", ModifierKind.SATURATE),
        (".satfinite", ModifierKind.SATURATE),
        (".ftz", ModifierKind.FTZ),
        (".approx", ModifierKind.APPROX),
        (".full", ModifierKind.APPROX),
        (".lo", ModifierKind.MODE),
        (".wide", ModifierKind.MODE),
        (".bfly", ModifierKind.MODE),
        (".sync", ModifierKind.MODE),
        (".aligned", ModifierKind.MODE),
        (".uni", ModifierKind.MODE),
        (".cc", ModifierKind.MODE),
        (".mbarrier::complete_tx::bytes", ModifierKind.MODE),
        (".m16n8k16", ModifierKind.SHAPE),
        (".2d", ModifierKind.SHAPE),
        (".x4", ModifierKind.SHAPE),
        (".32x32b", ModifierKind.SHAPE),
        (".m8n8", ModifierKind.SHAPE),
        (".row", ModifierKind.LAYOUT),
        (".col", ModifierKind.LAYOUT),
        (".trans", ModifierKind.LAYOUT),
        (".zork", ModifierKind.OTHER),
    ],
)
def test_classify_modifier(modifier: str, kind: ModifierKind) -> None:
    assert isa.classify_modifier(modifier) is kind


def test_classify_modifier_in_context() -> None:
    assert isa.classify_modifier(".lo", "mul") is ModifierKind.MODE
    assert isa.classify_modifier(".lo", "setp") is ModifierKind.COMPARE
    assert isa.classify_modifier(".hi", "set") is ModifierKind.COMPARE
    assert isa.classify_modifier(".and", "setp") is ModifierKind.BOOL_OP
    assert isa.classify_modifier(".and", "atom") is ModifierKind.MODE
    assert isa.classify_modifier(".xor", "redux") is ModifierKind.MODE


def test_modifier_order_does_not_change_meaning() -> None:
    ops = (R("%f1"), A("%rd1", 8))
    a = inst("ld.global.f32", *ops)
    b = inst("ld.f32.global", *ops)
    for fn in (
        isa.state_space,
        isa.instruction_type,
        isa.access_bytes,
        isa.vector_width,
        isa.defs,
        isa.uses,
        isa.operand_infos,
        isa.unknown_modifiers,
        isa.memory_effect,
    ):
        assert fn(a) == fn(b), fn.__name__
    c = inst("ld.v4.nc.global.f32", V("%f1", "%f2", "%f3", "%f4"), A("%rd1"))
    d = inst("ld.global.nc.v4.f32", V("%f1", "%f2", "%f3", "%f4"), A("%rd1"))
    assert isa.access_bytes(c) == isa.access_bytes(d) == 16
    assert isa.defs(c) == isa.defs(d)


# --------------------------------------------------------------------------
# Types, spaces and widths


def test_types() -> None:
    cvt = inst("cvt.rn.f32.s32", R("%f1"), R("%r1"))
    assert isa.instruction_type(cvt) == ".f32"
    assert isa.source_type(cvt) == ".s32"
    assert [i.type for i in isa.operand_infos(cvt)] == [".f32", ".s32"]
    setp = inst("setp.lt.s32", R("%p1"), R("%r1"), I(0))
    assert isa.instruction_type(setp) == isa.source_type(setp) == ".s32"
    assert [i.type for i in isa.operand_infos(setp)] == [".pred", ".s32", ".s32"]
    st = inst("set.lt.u32.f32", R("%r1"), R("%f1"), R("%f2"))
    assert [i.type for i in isa.operand_infos(st)] == [".u32", ".f32", ".f32"]
    slct = inst("slct.f32.s32", R("%f1"), R("%f2"), R("%f3"), R("%r1"))
    assert [i.type for i in isa.operand_infos(slct)] == [".f32", ".f32", ".f32", ".s32"]
    assert isa.instruction_type(inst("ret")) is None
    assert isa.instruction_types(inst("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")) == (
        ".f32",
        ".bf16",
        ".bf16",
        ".f32",
    )


def test_wide_and_hi_multiplies() -> None:
    wide = inst("mul.wide.s32", R("%rd1"), R("%r1"), R("%r2"))
    assert isa.instruction_type(wide) == ".s32"
    assert [i.type for i in isa.operand_infos(wide)] == [".s64", ".s32", ".s32"]
    madw = inst("mad.wide.u32", R("%rd1"), R("%r1"), R("%r2"), R("%rd2"))
    assert [i.type for i in isa.operand_infos(madw)] == [".u64", ".u32", ".u32", ".u64"]
    hi = inst("mul.hi.u32", R("%r1"), R("%r2"), R("%r3"))
    assert [i.type for i in isa.operand_infos(hi)] == [".u32"] * 3
    assert names(isa.defs(hi)) == ["%r1"] and names(isa.uses(hi)) == ["%r2", "%r3"]


def test_mixed_precision_and_packed_types() -> None:
    add = inst("add.rn.f32.f16", R("%f1"), R("%h1"), R("%f2"))
    assert [i.type for i in isa.operand_infos(add)] == [".f32", ".f16", ".f32"]
    fma = inst("fma.rn.f32.bf16", R("%f1"), R("%h1"), R("%h2"), R("%f2"))
    assert [i.type for i in isa.operand_infos(fma)] == [".f32", ".bf16", ".bf16", ".f32"]
    cvt = inst("cvt.rn.satfinite.e4m3x2.f32", R("%h1"), R("%f1"), R("%f2"))
    assert [i.type for i in isa.operand_infos(cvt)] == [".e4m3x2", ".f32", ".f32"]
    rs = inst("cvt.rs.satfinite.e4m3x4.f32", R("%r1"), V("%f1", "%f2", "%f3", "%f4"), R("%r2"))
    assert [i.type for i in isa.operand_infos(rs)] == [".e4m3x4", ".f32", ".b32"]
    assert names(isa.uses(rs)) == ["%f1", "%f2", "%f3", "%f4", "%r2"]
    dp = inst("dp4a.u32.s32", R("%r1"), R("%r2"), R("%r3"), R("%r4"))
    assert [i.type for i in isa.operand_infos(dp)] == [".s32", ".u32", ".s32", ".s32"]
    dpu = inst("dp4a.u32.u32", R("%r1"), R("%r2"), R("%r3"), R("%r4"))
    assert isa.operand_infos(dpu)[0].type == ".u32"


def test_instruction_family_refines_by_type() -> None:
    assert isa.instruction_family(inst("add.s32")) is Family.INTEGER
    assert isa.instruction_family(inst("add.f32")) is Family.FLOAT
    assert isa.instruction_family(inst("add.rn.f16x2")) is Family.HALF
    assert isa.instruction_family(inst("fma.rn.bf16")) is Family.HALF
    assert isa.instruction_family(inst("fma.rn.f64")) is Family.FLOAT
    assert isa.instruction_family(inst("ld.global.f16")) is Family.MEMORY


@pytest.mark.parametrize(
    ("text", "space"),
    [
        ("ld.global.nc.v4.f32", ".global"),
        ("ld.f32", "generic"),
        ("ld.param::entry.u64", ".param::entry"),
        ("st.shared::cta.u32", ".shared::cta"),
        ("atom.shared::cluster.add.u32", ".shared::cluster"),
        ("atom.add.u32", "generic"),
        ("red.global.add.f32", ".global"),
        ("cp.async.ca.shared.global", ".shared"),
        ("cvta.to.global.u64", ".global"),
        ("isspacep.shared", ".shared"),
        ("add.s32", None),
        ("bar.sync", None),
        ("tex.2d.v4.f32.f32", ".tex"),
        ("suld.b.2d.b32.trap", ".surf"),
        ("tcgen05.ld.sync.aligned.32x32b.x1.b32", ".tmem"),
        ("mbarrier.init.b64", "generic"),
        ("prefetch.L1", "generic"),
    ],
)
def test_state_space(text: str, space: str | None) -> None:
    assert isa.state_space(inst(text)) == space


def test_state_spaces_in_order() -> None:
    bulk = inst("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes")
    assert isa.state_spaces(bulk) == (".shared::cluster", ".global")


@pytest.mark.parametrize(
    ("text", "operands", "width", "nbytes"),
    [
        ("ld.global.f32", (R("%f1"), A("%rd1")), 1, 4),
        ("ld.global.nc.v4.f32", (V("%f1", "%f2", "%f3", "%f4"), A("%rd1")), 4, 16),
        ("ld.global.v2.u64", (V("%rd1", "%rd2"), A("%rd3")), 2, 16),
        ("ld.global.v8.f32", (V(*[f"%f{i}" for i in range(8)]), A("%rd1")), 8, 32),
        ("ld.shared.u8", (R("%rs1"), A("%r1")), 1, 1),
        ("ld.global.b128", (R("%q1"), A("%rd1")), 1, 16),
        ("st.global.v2.f16x2", (A("%rd1"), V("%r1", "%r2")), 2, 8),
        ("atom.global.add.u64", (R("%rd1"), A("%rd2"), R("%rd3")), 1, 8),
        ("atom.shared.cas.b128", (R("%q1"), A("%r1"), R("%q2"), R("%q3")), 1, 16),
        ("red.global.add.f32", (A("%rd1"), R("%f1")), 1, 4),
        ("cp.async.cg.shared.global", (A("%r1"), A("%rd1"), I(16)), 1, 16),
        ("cp.async.ca.shared.global", (A("%r1"), A("%rd1"), I(4), R("%r2")), 1, 4),
        (
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            (A("%r1"), A("%rd1"), R("%r2"), A("%r3")),
            1,
            None,
        ),
        ("mbarrier.init.shared.b64", (A("%r1"), I(32)), 1, 8),
        ("add.s32", (R("%r1"), R("%r2"), R("%r3")), 1, None),
    ],
)
def test_vector_width_and_access_bytes(
    text: str, operands: tuple[Operand, ...], width: int, nbytes: int | None
) -> None:
    i = inst(text, *operands)
    assert isa.vector_width(i) == width
    assert isa.access_bytes(i) == nbytes


# --------------------------------------------------------------------------
# Defs and uses of every irregular form


def check(i: Instruction, defs: list[str], uses: list[str]) -> None:
    assert names(isa.defs(i)) == defs, i.mnemonic
    assert names(isa.uses(i)) == uses, i.mnemonic
    assert len(isa.operand_infos(i)) == len(i.operands)


def test_stores_and_no_def_instructions() -> None:
    check(inst("st.global.f32", A("%rd1", 4), R("%f1")), [], ["%rd1", "%f1"])
    check(
        inst("st.global.v4.f32", A("%rd1"), V("%f1", "%f2", "%f3", "%f4")),
        [],
        ["%rd1", "%f1", "%f2", "%f3", "%f4"],
    )
    check(inst("st.global.L2::cache_hint.u32", A("%rd1"), R("%r1"), R("%rd9")), [], ["%rd1", "%r1", "%rd9"])
    check(inst("red.global.add.u32", A("%rd1"), R("%r1")), [], ["%rd1", "%r1"])
    check(
        inst("sust.b.2d.b32.trap", ListOperand((R("%rd1"), V("%r1", "%r2"))), V("%r3")),
        [],
        ["%rd1", "%r1", "%r2", "%r3"],
    )
    check(inst("cp.async.ca.shared.global", A("%r1"), A("%rd1"), I(4)), [], ["%r1", "%rd1"])
    check(inst("bar.sync", I(0)), [], [])
    check(inst("bar.sync", R("%r1"), R("%r2")), [], ["%r1", "%r2"])
    check(inst("prefetch.global.L2", A("%rd1")), [], ["%rd1"])
    check(inst("trap"), [], [])
    check(inst("exit"), [], [])
    check(inst("ret"), [], [])
    check(inst("bra", Symbol("$L__BB0_2"), guard=Guard(R("%p1"))), [], ["%p1"])
    check(inst("bra.uni", Symbol("L1"), guard=Guard(R("%p2"), negated=True)), [], ["%p2"])


def test_loads() -> None:
    check(inst("ld.global.f32", R("%f1"), A("%rd1", 8)), ["%f1"], ["%rd1"])
    check(inst("ld.param.u64", R("%rd1"), A("kernel_param_0")), ["%rd1"], [])
    check(
        inst("ld.global.nc.v4.f32", V("%f1", "_", "%f3", "%f4"), A("%rd1")), ["%f1", "%f3", "%f4"], ["%rd1"]
    )
    check(inst("ld.global.L2::cache_hint.b32", R("%r1"), A("%rd1"), R("%rd2")), ["%r1"], ["%rd1", "%rd2"])
    check(inst("ldu.global.f32", R("%f1"), A("%rd1")), ["%f1"], ["%rd1"])
    check(inst("ld.shared.u32", R("%r1"), Address(None, 64)), ["%r1"], [])
    infos = isa.operand_infos(inst("ld.global.v2.f32", V("%f1", "%f2"), A("%rd1")))
    assert infos[0] == isa.OperandInfo(Role.DEF, ".f32", False)
    assert infos[1] == isa.OperandInfo(Role.USE, None, True)


def test_setp_and_set() -> None:
    check(
        inst("setp.lt.s32", PairOperand(R("%p1"), R("%p2")), R("%r1"), R("%r2")),
        ["%p1", "%p2"],
        ["%r1", "%r2"],
    )
    check(inst("setp.lt.and.s32", R("%p1"), R("%r1"), I(5), Negated(R("%p3"))), ["%p1"], ["%r1", "%p3"])
    check(inst("setp.ne.s32", PairOperand(Sink(), R("%p2")), R("%r1"), I(0)), ["%p2"], ["%r1"])
    info = isa.operand_infos(inst("setp.lt.s32", PairOperand(R("%p1"), R("%p2")), R("%r1"), R("%r2")))
    assert info[0] == isa.OperandInfo(Role.DEF, ".pred")
    check(inst("set.lt.or.u32.f32", R("%r1"), R("%f1"), R("%f2"), R("%p1")), ["%r1"], ["%f1", "%f2", "%p1"])
    check(inst("selp.b32", R("%r1"), R("%r2"), I(7), R("%p1")), ["%r1"], ["%r2", "%p1"])


def test_shuffles_and_warp_collectives() -> None:
    shfl = inst("shfl.sync.down.b32", PairOperand(R("%r1"), R("%p1")), R("%r2"), I(1), I(31), I(-1))
    check(shfl, ["%r1", "%p1"], ["%r2"])
    assert isa.operand_infos(shfl)[0] == isa.OperandInfo(Role.DEF, None)
    assert isa.typed_defs(shfl) == [(R("%r1"), ".b32"), (R("%p1"), ".pred")]
    check(
        inst("shfl.sync.idx.b32", R("%r1"), R("%r2"), R("%r3"), I(31), R("%r4")),
        ["%r1"],
        ["%r2", "%r3", "%r4"],
    )
    check(inst("shfl.up.b32", PairOperand(R("%r1"), R("%p1")), R("%r2"), I(1), I(0)), ["%r1", "%p1"], ["%r2"])
    check(inst("vote.sync.ballot.b32", R("%r1"), R("%p1"), I(-1)), ["%r1"], ["%p1"])
    assert isa.typed_defs(inst("vote.sync.ballot.b32", R("%r1"), R("%p1"), I(-1))) == [(R("%r1"), ".b32")]
    vote_all = inst("vote.sync.all.pred", R("%p2"), Negated(R("%p1")), R("%r9"))
    check(vote_all, ["%p2"], ["%p1", "%r9"])
    assert isa.typed_defs(vote_all) == [(R("%p2"), ".pred")]
    check(inst("activemask.b32", R("%r1")), ["%r1"], [])
    check(inst("redux.sync.add.s32", R("%r1"), R("%r2"), I(-1)), ["%r1"], ["%r2"])
    check(inst("elect.sync", PairOperand(R("%r1"), R("%p1")), I(-1)), ["%r1", "%p1"], [])
    check(inst("elect.sync", PairOperand(Sink(), R("%p1")), R("%r5")), ["%p1"], ["%r5"])
    check(inst("match.any.sync.b32", R("%r1"), R("%r2"), I(-1)), ["%r1"], ["%r2"])
    check(
        inst("match.all.sync.b32", PairOperand(R("%r1"), R("%p1")), R("%r2"), R("%r3")),
        ["%r1", "%p1"],
        ["%r2", "%r3"],
    )
    check(inst("match.all.sync.b64", R("%r1"), R("%rd2"), R("%r3")), ["%r1"], ["%rd2", "%r3"])
    check(inst("bar.warp.sync", I(-1)), [], [])
    check(inst("bar.warp.sync", R("%r1")), [], ["%r1"])
    check(inst("bar.red.popc.u32", R("%r1"), I(0), R("%p1")), ["%r1"], ["%p1"])
    check(inst("bar.red.and.pred", R("%p2"), I(0), R("%r3"), Negated(R("%p1"))), ["%p2"], ["%r3", "%p1"])
    for text in (
        "shfl.sync.idx.b32",
        "vote.sync.any.pred",
        "match.any.sync.b32",
        "redux.sync.min.u32",
        "activemask.b32",
        "elect.sync",
        "bar.warp.sync",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        "wgmma.fence.sync.aligned",
    ):
        assert isa.lookup(isa.split_mnemonic(text)[0]).warp_collective, text


def test_atomics_and_mbarriers() -> None:
    check(inst("atom.global.add.u32", R("%r1"), A("%rd1"), R("%r2")), ["%r1"], ["%rd1", "%r2"])
    check(
        inst("atom.global.cas.b32", R("%r1"), A("%rd1"), R("%r2"), R("%r3")), ["%r1"], ["%rd1", "%r2", "%r3"]
    )
    cas = inst("atom.global.cas.b32", R("%r1"), A("%rd1"), R("%r2"), R("%r3"))
    assert [i.type for i in isa.operand_infos(cas)] == [".b32", None, ".b32", ".b32"]
    hint = inst("atom.global.add.L2::cache_hint.u32", R("%r1"), A("%rd1"), R("%r2"), R("%rd5"))
    assert [i.type for i in isa.operand_infos(hint)] == [".u32", None, ".u32", ".b64"]
    check(
        inst(
            "atom.global.v4.f32.add", V("%f1", "%f2", "%f3", "%f4"), A("%rd1"), V("%f5", "%f6", "%f7", "%f8")
        ),
        ["%f1", "%f2", "%f3", "%f4"],
        ["%rd1", "%f5", "%f6", "%f7", "%f8"],
    )
    check(inst("mbarrier.arrive.shared.b64", R("%rd1"), A("%r1")), ["%rd1"], ["%r1"])
    check(inst("mbarrier.arrive.release.cluster.shared::cluster.b64", Sink(), A("%r1")), [], ["%r1"])
    check(inst("mbarrier.arrive.expect_tx.shared::cta.b64", R("%rd1"), A("%r1"), I(1024)), ["%rd1"], ["%r1"])
    check(inst("mbarrier.test_wait.shared.b64", R("%p1"), A("%r1"), R("%rd1")), ["%p1"], ["%r1", "%rd1"])
    tw = inst("mbarrier.try_wait.parity.shared::cta.b64", R("%p1"), A("%r1"), R("%r2"), R("%r3"))
    check(tw, ["%p1"], ["%r1", "%r2", "%r3"])
    assert [i.type for i in isa.operand_infos(tw)] == [".pred", None, ".b32", ".u32"]
    check(inst("mbarrier.init.shared.b64", A("%r1"), R("%r2")), [], ["%r1", "%r2"])
    check(inst("mbarrier.pending_count.b64", R("%r1"), R("%rd1")), ["%r1"], ["%rd1"])
    check(inst("mbarrier.expect_tx.relaxed.cta.shared::cta.b64", A("%r1"), R("%r2")), [], ["%r1", "%r2"])
    check(inst("cp.async.mbarrier.arrive.noinc.shared.b64", A("%r1")), [], ["%r1"])


def test_calls() -> None:
    # call (r), f, (a, b);
    with_ret = inst(
        "call.uni",
        ParenOperand((R("%r1"), R("%r2"))),
        Symbol("f"),
        ParenOperand((R("%r3"), Symbol("param1"))),
    )
    check(with_ret, ["%r1", "%r2"], ["%r3"])
    assert [i.role for i in isa.operand_infos(with_ret)] == [Role.DEF, Role.USE, Role.USE]
    # call f, (a);  -- the first parenthesised list is the arguments
    no_ret = inst("call", Symbol("f"), ParenOperand((R("%r3"),)))
    check(no_ret, [], ["%r3"])
    assert [i.role for i in isa.operand_infos(no_ret)] == [Role.USE, Role.USE]
    # call (r), f;
    check(inst("call", ParenOperand((R("%r1"),)), Symbol("f")), ["%r1"], [])
    # call f;
    check(inst("call", Symbol("f")), [], [])
    # indirect: call (retval0), %rd5, (param0), prototype_0;
    indirect = inst(
        "call",
        ParenOperand((Symbol("retval0"),)),
        R("%rd5"),
        ParenOperand((Symbol("param0"),)),
        Symbol("prototype_0"),
    )
    check(indirect, [], ["%rd5"])
    assert isa.is_call(indirect) and not isa.is_branch(indirect)


def test_texture_and_surface() -> None:
    tex = inst(
        "tex.2d.v4.f32.f32", V("%f1", "%f2", "%f3", "%f4"), ListOperand((Symbol("tex0"), V("%f5", "%f6")))
    )
    check(tex, ["%f1", "%f2", "%f3", "%f4"], ["%f5", "%f6"])
    assert isa.operand_infos(tex)[1].is_address
    assert isa.operand_infos(tex)[0].type == ".f32"
    tex_p = inst(
        "tex.level.2d.v4.f32.f32",
        PairOperand(V("%f1", "%f2", "%f3", "%f4"), R("%p1")),
        ListOperand((R("%rd1"), V("%f5", "%f6"))),
        R("%f7"),
    )
    check(tex_p, ["%f1", "%f2", "%f3", "%f4", "%p1"], ["%rd1", "%f5", "%f6", "%f7"])
    check(
        inst(
            "tld4.r.2d.v4.s32.f32", V("%r1", "%r2", "%r3", "%r4"), ListOperand((R("%rd1"), V("%f1", "%f2")))
        ),
        ["%r1", "%r2", "%r3", "%r4"],
        ["%rd1", "%f1", "%f2"],
    )
    check(inst("txq.width.b32", R("%r1"), A("%rd1")), ["%r1"], ["%rd1"])
    check(inst("istypep.texref", R("%p1"), R("%rd1")), ["%p1"], ["%rd1"])
    check(
        inst(
            "suld.b.2d.v4.b32.trap", V("%r1", "%r2", "%r3", "%r4"), ListOperand((R("%rd1"), V("%r5", "%r6")))
        ),
        ["%r1", "%r2", "%r3", "%r4"],
        ["%rd1", "%r5", "%r6"],
    )
    check(inst("suq.width.b32", R("%r1"), A("surf0")), ["%r1"], [])


def test_matrix_instructions() -> None:
    wl = inst(
        "wmma.load.a.sync.aligned.row.m16n16k16.global.f16",
        V(*[f"%r{i}" for i in range(1, 9)]),
        A("%rd1"),
        R("%r9"),
    )
    check(wl, [f"%r{i}" for i in range(1, 9)], ["%rd1", "%r9"])
    assert isa.operand_infos(wl)[0].type == ".f16x2"
    ws = inst(
        "wmma.store.d.sync.aligned.row.m16n16k16.global.f32",
        A("%rd1"),
        V(*[f"%f{i}" for i in range(1, 9)]),
        R("%r9"),
    )
    check(ws, [], ["%rd1", *[f"%f{i}" for i in range(1, 9)], "%r9"])
    wm = inst(
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16",
        V("%f1", "%f2"),
        V("%r1", "%r2"),
        V("%r3", "%r4"),
        V("%r5", "%r6"),
    )
    check(wm, ["%f1", "%f2"], ["%r1", "%r2", "%r3", "%r4", "%r5", "%r6"])
    assert [i.type for i in isa.operand_infos(wm)] == [".f32", ".f16x2", ".f16x2", ".f16x2"]
    mma = inst(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        V("%f1", "%f2", "%f3", "%f4"),
        V("%r1", "%r2", "%r3", "%r4"),
        V("%r5", "%r6"),
        V("%f1", "%f2", "%f3", "%f4"),
    )
    check(
        mma,
        ["%f1", "%f2", "%f3", "%f4"],
        ["%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%f1", "%f2", "%f3", "%f4"],
    )
    assert [i.role for i in isa.operand_infos(mma)] == [Role.DEF, Role.USE, Role.USE, Role.USE]
    assert [i.type for i in isa.operand_infos(mma)] == [".f32", ".b32", ".b32", ".f32"]
    sp = inst(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32",
        V("%f1", "%f2"),
        V("%r1", "%r2"),
        V("%r3", "%r4"),
        V("%f3", "%f4"),
        R("%r5"),
        I(0),
    )
    check(sp, ["%f1", "%f2"], ["%r1", "%r2", "%r3", "%r4", "%f3", "%f4", "%r5"])
    assert isa.lookup(sp.opcode).name == "mma.sp::ordered_metadata"
    wg = inst(
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16",
        V("%f1", "%f2", "%f3", "%f4"),
        R("%rd1"),
        R("%rd2"),
        R("%p1"),
        I(1),
        I(1),
        I(0),
        I(0),
    )
    check(wg, ["%f1", "%f2", "%f3", "%f4"], ["%f1", "%f2", "%f3", "%f4", "%rd1", "%rd2", "%p1"])
    infos = isa.operand_infos(wg)
    assert infos[0] == isa.OperandInfo(Role.DEFUSE, ".f32")
    assert infos[1].type == ".b64" and infos[3].type == ".pred"
    wg_reg = inst(
        "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16",
        V("%r1", "%r2"),
        V("%r3", "%r4", "%r5", "%r6"),
        R("%rd2"),
        I(1),
        I(1),
        I(1),
        I(0),
    )
    check(wg_reg, ["%r1", "%r2"], ["%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%rd2"])
    assert isa.operand_infos(wg_reg)[1].type == ".b32"
    check(
        inst("ldmatrix.sync.aligned.m8n8.x4.shared.b16", V("%r1", "%r2", "%r3", "%r4"), A("%r5")),
        ["%r1", "%r2", "%r3", "%r4"],
        ["%r5"],
    )
    check(
        inst("stmatrix.sync.aligned.m8n8.x2.shared.b16", A("%r5"), V("%r1", "%r2")), [], ["%r5", "%r1", "%r2"]
    )
    check(inst("movmatrix.sync.aligned.m8n8.trans.b16", R("%r1"), R("%r2")), ["%r1"], ["%r2"])
    check(inst("wgmma.wait_group.sync.aligned", I(0)), [], [])
    check(inst("tcgen05.ld.sync.aligned.32x32b.x2.b32", V("%r1", "%r2"), A("%r3")), ["%r1", "%r2"], ["%r3"])
    check(
        inst("tcgen05.ld.red.sync.aligned.32x32b.x2.min.f32", V("%f1", "%f2"), R("%f3"), A("%r3")),
        ["%f1", "%f2", "%f3"],
        ["%r3"],
    )
    check(inst("tcgen05.st.sync.aligned.16x32bx2.x1.b32", A("%r3"), I(2), V("%r1")), [], ["%r3", "%r1"])
    check(
        inst("tcgen05.mma.cta_group::1.kind::f16", A("%r1"), R("%rd1"), R("%rd2"), R("%r2"), R("%p1")),
        [],
        ["%r1", "%rd1", "%rd2", "%r2", "%p1"],
    )
    check(inst("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", A("%r1"), I(32)), [], ["%r1"])


def test_moves_and_conversions() -> None:
    unpack = inst("mov.b64", V("%r1", "%r2"), R("%rd1"))
    check(unpack, ["%r1", "%r2"], ["%rd1"])
    assert [i.type for i in isa.operand_infos(unpack)] == [".b32", ".b64"]
    pack = inst("mov.b64", R("%rd1"), V("%r1", "%r2"))
    check(pack, ["%rd1"], ["%r1", "%r2"])
    assert [i.type for i in isa.operand_infos(pack)] == [".b64", ".b32"]
    quad = inst("mov.b64", R("%rd1"), V("%rs1", "%rs2", "%rs3", "%rs4"))
    assert isa.operand_infos(quad)[1].type == ".b16"
    check(inst("mov.u32", R("%r1"), Register("%tid", "x")), ["%r1"], ["%tid"])
    # GCC moves whole vector registers: mov.v2.u32 %r47, {0, -1};
    gcc = inst("mov.v2.u32", R("%r47"), VectorOperand((I(0), I(-1))))
    check(gcc, ["%r47"], [])
    assert [i.type for i in isa.operand_infos(gcc)] == [".u32", ".u32"]
    assert isa.unknown_modifiers(gcc) == []
    check(inst("mov.u64", R("%rd1"), Symbol("global_array")), ["%rd1"], [])
    check(inst("mov.f32", R("%f1"), FloatImm("f", "0f3F800000")), ["%f1"], [])
    check(inst("cvta.to.global.u64", R("%rd2"), R("%rd1")), ["%rd2"], ["%rd1"])
    check(inst("cvta.global.u64", R("%rd2"), Symbol("gvar")), ["%rd2"], [])
    check(inst("isspacep.global", R("%p1"), R("%rd1")), ["%p1"], ["%rd1"])
    check(
        inst("cvt.pack.sat.u8.s32.b32", R("%r1"), R("%r2"), R("%r3"), R("%r4")),
        ["%r1"],
        ["%r2", "%r3", "%r4"],
    )
    packed = isa.operand_infos(inst("cvt.pack.sat.u8.s32.b32", R("%r1"), R("%r2"), R("%r3"), R("%r4")))
    assert [i.type for i in packed] == [".b32", ".s32", ".s32", ".b32"]
    check(inst("prmt.b32", R("%r1"), R("%r2"), R("%r3"), I(0x3210)), ["%r1"], ["%r2", "%r3"])
    check(inst("prmt.b32", R("%r1"), R("%r2"), R("%r3"), R("%r4")), ["%r1"], ["%r2", "%r3", "%r4"])
    check(inst("mapa.shared::cluster.u32", R("%r1"), R("%r2"), R("%r3")), ["%r1"], ["%r2", "%r3"])
    check(inst("getctarank.shared::cluster.u32", R("%r1"), R("%r2")), ["%r1"], ["%r2"])
    check(inst("createpolicy.fractional.L2::evict_last.b64", R("%rd1"), FloatImm("dec", "1.0")), ["%rd1"], [])


def test_integer_oddities() -> None:
    check(inst("lop3.b32", R("%r1"), R("%r2"), R("%r3"), R("%r4"), I(0x96)), ["%r1"], ["%r2", "%r3", "%r4"])
    lop = inst(
        "lop3.or.b32", PairOperand(R("%r1"), R("%p1")), R("%r2"), R("%r3"), R("%r4"), I(0x80), R("%p2")
    )
    check(lop, ["%r1", "%p1"], ["%r2", "%r3", "%r4", "%p2"])
    check(inst("add.cc.u32", R("%r1"), R("%r2"), R("%r3")), ["%r1"], ["%r2", "%r3"])
    check(inst("addc.cc.u32", R("%r4"), R("%r5"), I(0)), ["%r4"], ["%r5"])
    check(inst("dp4a.s32.s32", R("%r1"), R("%r2"), R("%r3"), R("%r4")), ["%r1"], ["%r2", "%r3", "%r4"])
    check(inst("bfind.u32", R("%r1"), R("%r2")), ["%r1"], ["%r2"])
    check(inst("bfind.shiftamt.u64", R("%r1"), R("%rd2")), ["%r1"], ["%rd2"])
    assert isa.operand_infos(inst("bfind.u64", R("%r1"), R("%rd2")))[0].type == ".u32"
    check(inst("szext.wrap.s32", R("%r1"), R("%r2"), I(8)), ["%r1"], ["%r2"])
    check(inst("bfe.u32", R("%r1"), R("%r2"), I(8), R("%r3")), ["%r1"], ["%r2", "%r3"])
    check(inst("bfi.b32", R("%r1"), R("%r2"), R("%r3"), I(0), I(8)), ["%r1"], ["%r2", "%r3"])
    check(inst("shf.r.clamp.b32", R("%r1"), R("%r2"), R("%r3"), R("%r4")), ["%r1"], ["%r2", "%r3", "%r4"])
    check(inst("min.f32", R("%f1"), R("%f2"), R("%f3"), R("%f4")), ["%f1"], ["%f2", "%f3", "%f4"])
    check(inst("mad.lo.s32", R("%r1"), R("%r1"), R("%r2"), R("%r1")), ["%r1"], ["%r1", "%r2", "%r1"])
    check(
        inst("vadd2.u32.u32.u32.sat", Register("%r1", "h0"), R("%r2"), R("%r3"), R("%r4")),
        ["%r1"],
        ["%r2", "%r3", "%r4"],
    )
    check(inst("stacksave.u64", R("%rd1")), ["%rd1"], [])
    check(inst("stackrestore.u64", R("%rd1")), [], ["%rd1"])
    check(inst("alloca.u64", R("%rd1"), R("%rd2"), I(16)), ["%rd1"], ["%rd2"])
    check(
        inst("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128", R("%p1"), R("%q1")), ["%p1"], ["%q1"]
    )
    check(
        inst(
            "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128",
            V("%r1", "%r2", "%r3", "_"),
            R("%q1"),
        ),
        ["%r1", "%r2", "%r3"],
        ["%q1"],
    )


def test_carry_flag_is_implicit() -> None:
    add_cc = inst("add.cc.u32", R("%r1"), R("%r2"), R("%r3"))
    addc = inst("addc.u32", R("%r4"), R("%r5"), R("%r6"))
    assert isa.writes_carry(add_cc) and not isa.reads_carry(add_cc)
    assert isa.reads_carry(addc) and not isa.writes_carry(addc)
    assert isa.writes_carry(inst("madc.hi.cc.u32")) and isa.reads_carry(inst("madc.hi.cc.u32"))
    assert not isa.writes_carry(inst("add.u32"))


def test_guard_and_expression_operands() -> None:
    i = inst("add.s32", R("%r1"), R("%r2"), I(1), guard=Guard(R("%p9"), negated=True))
    check(i, ["%r1"], ["%p9", "%r2"])
    assert isa.typed_uses(i)[0] == (R("%p9"), ".pred")


def test_unusual_operand_counts_do_not_crash() -> None:
    # Too many and too few operands still give one info per operand.
    many = inst("add.s32", R("%r1"), R("%r2"), R("%r3"), R("%r4"))
    assert len(isa.operand_infos(many)) == 4
    assert names(isa.defs(many)) == ["%r1"]
    assert names(isa.uses(many)) == ["%r2", "%r3", "%r4"]
    few = inst("st.global.u32", A("%rd1"))
    assert names(isa.uses(few)) == ["%rd1"]
    foreign = Instruction("frob", (), (R("%r1"), A("%rd1")))
    assert [i.role for i in isa.operand_infos(foreign)] == [Role.USE, Role.USE]
    assert names(isa.defs(foreign)) == []
    assert isa.state_space(foreign) is None


# --------------------------------------------------------------------------
# Control flow and memory predicates


def test_branch_targets_and_control_flow() -> None:
    bra = inst("bra.uni", Symbol("$L__BB0_3"))
    assert isa.is_branch(bra) and isa.branch_targets(bra) == ["$L__BB0_3"]
    brx = inst("brx.idx", R("%r1"), Symbol("jump_table"))
    assert isa.is_branch(brx) and isa.branch_targets(brx) == ["jump_table"]
    check(brx, [], ["%r1"])
    assert isa.branch_targets(inst("ret")) == []
    assert not isa.is_branch(inst("call", Symbol("f")))
    for text in ("ret", "exit", "trap"):
        assert isa.is_return(inst(text))
        assert isa.lookup(text).control_flow
    for text in ("bra", "brx.idx", "call"):
        assert isa.lookup(text).control_flow
    assert not isa.lookup("add").control_flow


def test_memory_predicates() -> None:
    load = inst("ld.global.nc.f32", R("%f1"), A("%rd1"))
    store = inst("st.global.f32", A("%rd1"), R("%f1"))
    atom = inst("atom.global.add.u32", R("%r1"), A("%rd1"), R("%r2"))
    assert isa.is_load(load) and not isa.is_store(load) and not isa.is_atomic(load)
    assert isa.is_store(store) and not isa.is_load(store)
    assert isa.is_atomic(atom) and not isa.is_load(atom) and not isa.is_store(atom)
    assert isa.is_atomic(inst("red.global.add.u32"))
    assert isa.is_load(inst("tex.2d.v4.f32.f32")) and isa.is_load(inst("ldu.global.f32"))
    assert not isa.is_load(inst("prefetch.global.L2"))
    assert isa.is_store(inst("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32"))
    assert not isa.is_load(inst("add.s32"))
    assert isa.memory_effect(inst("ld.acquire.gpu.global.u32")) == MemoryEffect.READ | MemoryEffect.FENCE
    assert isa.memory_effect(inst("ld.global.u32")) == MemoryEffect.READ
    assert isa.memory_effect(inst("cp.async.ca.shared.global")) & MemoryEffect.ASYNC
    assert isa.lookup("cp.async.wait_group").barrier
    assert isa.lookup("membar").barrier and isa.lookup("fence").barrier
    assert isa.lookup("mbarrier.try_wait").barrier
    assert not isa.lookup("ld").barrier
