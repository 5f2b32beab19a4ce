"""`python -m tawa.bench WORKLOAD [options]`: benchmarks against vendor libraries.

Workloads: `gemm` (bf16 C = A·Bᵀ against cuBLAS); `gemm-variants` (tawa's
pipeline variants against each other and cuBLAS); `gemm-fp8` (e4m3 inputs
against cuBLAS's fp8 GEMM); `attention` (FlashAttention forward against torch
SDPA's cuDNN and FA2 backends; `attention --backward`: the backward pass);
`attention-ab` (two compilations of one
attention kernel against each other and cuDNN: the A/B behind a compiler
decision); `attention-variants` (every kernel the attention operators could
run on a problem, against each other and cuDNN: the attention cost model's data);
`memory` (softmax, norms and SwiGLU against torch eager, torch.compile and a
copy's bandwidth); `watchdog` (the GEMM with and without
the hang watchdog's bounded waits); `launch` (host time per call against
torch.matmul's); `model` (transformer forward passes, GPT-2 and
Llama style, with tawa's operators against torch's, eager, compiled and in
CUDA graphs; `model --train`: training steps); `plot` (draws a saved
result's JSON as a PNG); `python -m tawa.bench gemm -h`
lists its options.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    workloads = {
        "gemm": "tawa.bench.gemm",
        "gemm-variants": "tawa.bench.gemm_variants",
        "gemm-fp8": "tawa.bench.gemm_fp8",
        "attention": "tawa.bench.attention",
        "attention-ab": "tawa.bench.attention_ab",
        "attention-variants": "tawa.bench.attention_variants",
        "memory": "tawa.bench.memory",
        "watchdog": "tawa.bench.watchdog",
        "launch": "tawa.bench.launch",
        "model": "tawa.bench.model",
        "plot": "tawa.bench.plot",
    }
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in workloads:
        print(f"tawa.bench: error: unknown workload {name!r}; known: {', '.join(workloads)}", file=sys.stderr)
        return 2
    module = workloads[name]
    if name == "attention" and "--backward" in rest:  # the backward pass: its own module and options
        module, rest = "tawa.bench.attention_bwd", [a for a in rest if a != "--backward"]
    import importlib

    return importlib.import_module(module).main(rest)


if __name__ == "__main__":
    sys.exit(main())
