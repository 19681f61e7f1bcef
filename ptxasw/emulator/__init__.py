"""Instruction semantics over two value domains (Z3 symbolic, NumPy concrete).

Not written yet: see the emulator issue. The package exists so the layout of
DESIGN.md holds from the start.
"""
