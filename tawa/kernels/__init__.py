"""Generated tile programs (kernel families) and their configuration spaces.

- `gemm`: `GemmConfig`, `gemm_source(config)`, `gemm_grid(config, M, N)`,
  `unsupported(config)` (docs/runtime.md, "Configurations and autotuning").
"""

from __future__ import annotations

from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, unsupported

__all__ = ["GemmConfig", "gemm_grid", "gemm_source", "unsupported"]
