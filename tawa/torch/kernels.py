"""The compiled kernels behind `tawa.torch` (no torch needed).

Each operator runs one of the shipped examples.  `compiled(name, dtype,
**options)` compiles the example's function alone (the other functions of its
file, e.g. the causal variant, are dropped first: compiling lowers the whole
module) with the element type substituted, and caches the `tawa.Kernel` per
(kernel, dtype, options).  `OPTIONS` holds the options the operators use per
kernel (none: `tawa-hopper-pipeline`'s defaults, the deepest ring that fits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = {
    "matmul": "matmul.mlir",
    "gemm": "gemm.mlir",
    "attention_fwd": "attention_fwd.mlir",
    "attention_fwd_causal": "attention_fwd.mlir",
    "attention_fwd_d64": "attention_fwd_d64.mlir",
    "attention_fwd_d64_causal": "attention_fwd_d64.mlir",
    "attention_fwd_d256": "attention_fwd_d256.mlir",
    "attention_fwd_d256_causal": "attention_fwd_d256.mlir",
}
ELEMENT_TYPES = {"bfloat16": "bf16", "float16": "f16"}
"""torch dtype name → the IR element type the examples are instantiated with
(the examples are written in bf16; f16 is the same program)."""
OPTIONS: dict[str, dict[str, Any]] = {}
"""Compile options per kernel name for the operators (`tawa.compile` keywords)."""

_COMPILED: dict[tuple[Any, ...], Any] = {}


def source(name: str, dtype: str = "bfloat16") -> str:
    """The text of a module holding only example function `name`, in `dtype`."""
    from xdsl.dialects import func

    import tawa

    if name not in FILES:
        raise KeyError(f"tawa.torch has no kernel {name!r}; known: {', '.join(FILES)}")
    text = (EXAMPLES / FILES[name]).read_text()
    if dtype != "bfloat16":
        text = text.replace("bf16", ELEMENT_TYPES[dtype])
    module = tawa.parse(text)
    for op in list(module.body.block.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data != name:
            module.body.block.erase_op(op)
    return str(module)


def compiled(name: str, dtype: str = "bfloat16", **options: Any) -> Any:
    """The `tawa.Kernel` of example kernel `name` in `dtype` (compiled once
    per kernel, dtype and options in this process)."""
    key = (name, dtype, tuple(sorted((k, repr(v)) for k, v in options.items())))
    kernel = _COMPILED.get(key)
    if kernel is None:
        import tawa

        kernel = _COMPILED[key] = tawa.compile(source(name, dtype), name, **options)
    return kernel


def clear_cache() -> None:
    """Forgets the compiled kernels (tawa.runtime.clear_cache() forgets tawa.compile's)."""
    _COMPILED.clear()
