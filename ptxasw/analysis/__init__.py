"""Analyses over the IR: control-flow graph, dominators, loops, liveness."""
