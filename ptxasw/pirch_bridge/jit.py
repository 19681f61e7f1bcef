"""Compile LLVM IR for this host in process (llvmlite's MCJIT), cached by content.

Why in process: llvmlite bundles its own LLVM, so a lifted kernel runs with
no external compiler; a ctypes call into JIT-compiled code releases the GIL,
so the runtime can run work groups on several threads. The optimised object
code is cached on disk (keyed by the IR text, the host CPU and llvmlite's
LLVM version), so a kernel is compiled once per machine; `compile_ir` also
keeps engines of this process, so compiling the same text twice is free.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm

__all__ = ["Compiled", "cache_dir", "compile_ir", "host_target_machine", "optimise"]

_lock = threading.Lock()
_engines: dict[str, Compiled] = {}
_initialised = False


@dataclass
class Compiled:
    """A module compiled and loaded: function addresses by name."""

    engine: llvm.ExecutionEngine
    module: llvm.ModuleRef
    key: str

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise KeyError(f"no function {name} in the compiled module")
        return addr

    def global_address(self, name: str) -> int:
        return self.engine.get_global_value_address(name)


def _init() -> None:
    global _initialised
    if not _initialised:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _initialised = True


def host_target_machine(opt: int = 3) -> llvm.TargetMachine:
    """The host CPU with all its features (AVX-512 where it has it)."""
    _init()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=opt, jit=True)


def optimise(module: llvm.ModuleRef, tm: llvm.TargetMachine, level: int = 3) -> None:
    """LLVM's standard ``-O<level>`` pipeline, in place."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


def cache_dir() -> Path:
    """Where compiled objects are kept (``PTXASW_CACHE`` or ``~/.cache/ptxasw``)."""
    root = os.environ.get("PTXASW_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ptxasw")
    return Path(root) / "pirch"


def _key(text: str, tm: llvm.TargetMachine) -> str:
    h = hashlib.sha256()
    for part in (text, tm.triple, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()):
        h.update(part.encode())
        h.update(b"\0")
    h.update(repr(llvm.llvm_version_info).encode())
    return h.hexdigest()


def compile_ir(text: str, opt: int = 3) -> Compiled:
    """Parse, verify, optimise and load ``text``; the same text twice gives the same engine."""
    _init()
    tm = host_target_machine(opt)
    key = _key(text, tm)
    with _lock:
        hit = _engines.get(key)
        if hit is not None:
            return hit
        module = llvm.parse_assembly(text)
        module.verify()
        path = cache_dir() / f"{key}.o"
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        if path.is_file():
            engine.add_object_file(llvm.ObjectFileRef.from_data(path.read_bytes()))
        else:
            optimise(module, tm, opt)
            obj = tm.emit_object(module)
            _store(path, obj)
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        compiled = Compiled(engine, module, key)
        _engines[key] = compiled
        return compiled


def _store(path: Path, data: bytes) -> None:
    """Write atomically; a cache that cannot be written is only slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
