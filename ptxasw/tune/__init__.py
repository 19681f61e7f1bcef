"""``ptxasw tune``: measure on the GPU whether a kernel's shuffles pay, and remember it.

- `ptxasw.tune.variants`: the two variants of a kernel (the original and its
  ``normal`` rewrite with every proven shuffle), their hashes, and the real
  ``ptxas`` that assembles them;
- `ptxasw.tune.device`: the GPU behind a small protocol (CuPy, imported
  lazily; tests put a fake in its place);
- `ptxasw.tune.select`: run both on the same inputs, check them bit for bit,
  time them and decide; the verdict goes to `ptxasw.driver.tuning`.
"""
