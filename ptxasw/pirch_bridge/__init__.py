"""Lifting warp-synchronous PTX to PIRCH InfReg-IR and running it on the CPU.

A kernel written in the warp-register-cache idiom (one warp = one work group,
registers as a cache, data exchanged with ``shfl.sync``) becomes one LLVM
function over InfRegs, ``<L x iN>`` vectors whose lanes are the work items of
``WG_PACK`` CTAs (CoRe/PIRCH/borG paper, section 3). The pieces, one job each:

- `domain`: `LLVMDomain`, the third implementation of the semantics' value
  domain: the shared `Semantics` and warp collectives emit LLVM IR through it
  (no second table of instruction semantics), bit-exact with the interpreter;
- `machine`: `LiftMachine`, where registers and memory live in the lifted
  function (allocas, host pointers, per-CTA shared windows, per-lane frames),
  strict: what it cannot lift exactly is refused with ``file:line:col``;
- `lift`: `lift_kernel`, the control flow (masked SIMT execution with a
  dispatcher, full-mask fast paths, if-conversion) and the grid entry point;
- `metadata`: the PIRCH layout metadata that makes the IR InfReg-IR;
- `backends`: the targets (`backends.emit`): ``infreg`` and ``llvm``; ``avx512``,
  C with AVX-512 intrinsics translated from the lifted module; ``ve``, the
  module lowered to the NEC SX-Aurora intrinsics ``llvm.ve.vl.*``;
- `jit` and `runtime`: compile for this host (cached by content) and launch a
  grid over NumPy arrays on several threads (`runtime.launch_lifted`,
  `runtime.run_lifted`, used by ``ptxasw run --engine llvm|avx512|ve-emulated``;
  ``ve-emulated`` runs the VE module with each intrinsic defined for this host).

Command line: ``ptxasw lift IN.ptx [--kernel K] --target {infreg,llvm,avx512,ve}
[--emit ir|asm|obj] [-o OUT] [--wg-size N] [--wg-pack N] [--block X,Y,Z]``.
"""
