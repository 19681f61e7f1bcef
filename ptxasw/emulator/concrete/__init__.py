"""The concrete domain (NumPy lanes) and the grid interpreter built on it."""
