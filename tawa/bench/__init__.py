"""Benchmarks of tawa's kernels against vendor libraries, timed in the same
run (`python -m tawa.bench gemm`; docs/runtime.md)."""
