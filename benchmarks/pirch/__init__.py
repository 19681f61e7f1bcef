"""PIRCH evidence kernels (CUDA), their C and OpenCL references, and the registry (suite.py)."""
