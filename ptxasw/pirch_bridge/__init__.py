"""Lifting warp-register-cache PTX to PIRCH InfReg-IR and the CPU back ends.

Not written yet.
"""
