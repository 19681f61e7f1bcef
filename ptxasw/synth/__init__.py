"""Warp-shuffle detection and code generation over the emulator's memory traces.

Not written yet: it comes after the emulator.
"""
