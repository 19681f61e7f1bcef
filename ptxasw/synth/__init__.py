"""Warp-shuffle synthesis: global loads a neighbouring lane already loaded become shuffles.

`detect` finds each load's source load and distance N over the symbolic
executor's traces, `codegen` writes the shuffle with its corner-case fallback
through the IR builder, `prove` checks every rewrite on the rewritten kernel,
`cost` says whether a shuffle pays on the target (`tuned` applies measured
verdicts), `synthesize` is the pipeline pass, and `report`/`html` the
``ptxasw analyze`` output.
"""
