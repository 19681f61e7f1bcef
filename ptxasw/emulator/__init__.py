"""The emulator: instruction semantics written once over a value domain.

`semantics` holds the shared layer (domain and machine protocols, the
instruction semantics); `concrete` the NumPy domain and the grid interpreter
(the CPU reference, the CI oracle); `symbolic` the Z3 domain and the
symbolic executor whose memory traces the synthesis reads.
"""
