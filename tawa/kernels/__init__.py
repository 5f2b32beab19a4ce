"""Generated tile programs (kernel families) and their configuration spaces.

- `gemm_config`: `GemmConfig` (and its `Epilogue`), `unsupported(config)`,
  `gemm_grid(config, M, N)` (docs/runtime.md, "Configurations and autotuning");
- `gemm`: `gemm_source(config)`, the tile program of a configuration.
"""

from __future__ import annotations

from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, unsupported

__all__ = ["GemmConfig", "gemm_grid", "gemm_source", "unsupported"]
