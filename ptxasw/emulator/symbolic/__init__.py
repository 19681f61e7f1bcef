"""The symbolic domain (Z3 bit-vectors) and the symbolic executor with its traces."""
