"""The shared layer: value-domain and machine protocols, instruction semantics.

Nothing here imports a domain; each domain (concrete, symbolic, the lifter's
LLVM domain) implements `domain.Domain` and runs `instructions.Semantics`.
"""
