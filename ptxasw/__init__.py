"""ptxasw: a PTX-level post-processor that sits where NVIDIA's ``ptxas`` sits.

See DESIGN.md for the pipeline: parser -> typed IR -> CFG -> emulator ->
shuffle synthesis / PIRCH lifting -> printer -> real ``ptxas``.
"""

__version__ = "0.1.0"
