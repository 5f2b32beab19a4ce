"""The compiled kernels behind `tawa.torch` (no torch needed).

Each operator runs one of the shipped examples.  `compiled(name, dtype,
**options)` compiles the example's function alone (the other functions of its
file, e.g. the causal variant, are dropped first: compiling lowers the whole
module) with the element type substituted (except in the kernels of
`AS_WRITTEN`, fp8 attention, compiled as written in their one dtype), and
caches the `tawa.Kernel` per (kernel, dtype, options).  The attention
operators take a kernel and its compile options per problem from the cost
model (`tawa.analysis.attention_cost`); `OPTIONS` adds a user's own options
per kernel on top (`options_for(name)`; empty: the compiler's choices).

The matmul kernels ("matmul": B K×N, "gemm": B N×K; "matmul_at" and
"gemm_at" the same with A stored K×M, read transposed in place) are
generated per problem instead (`tawa.kernels.gemm`): `matmul_choice` picks the tile
configuration, the heuristic's with K split where the cost model says a
split pays (`tawa.runtime.autotune.heuristic(split=True)`), or the
autotuned one when `$TAWA_AUTOTUNE` is 1 (timed on the first call of each
shape bucket, kept in the on-disk cache); `compiled(name, dtype,
config=...)` compiles it; `matmul_kernel` remembers the kernel and grid per
problem (a warm call is one dictionary look-up; `clear_cache()` after
changing `OPTIONS`).  A split-K choice is a
`tawa.runtime.splitk.SplitKGemm`: one launch whose last program per tile
sums the partials, called like the others; its workspace and tile
counters are cached per device, stream and shape.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tawa.target.hopper import SM_COUNT

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = {
    "matmul": "matmul.mlir",
    "gemm": "gemm.mlir",
    "attention_fwd": "attention_fwd.mlir",
    "attention_fwd_causal": "attention_fwd.mlir",
    "attention_fwd_d64": "attention_fwd_d64.mlir",
    "attention_fwd_d64_m128": "attention_fwd_d64.mlir",
    "attention_fwd_d64_causal": "attention_fwd_d64.mlir",
    "attention_fwd_d64_causal_m192": "attention_fwd_d64.mlir",
    "attention_fwd_d256": "attention_fwd_d256.mlir",
    "attention_fwd_d256_causal": "attention_fwd_d256.mlir",
    "attention_fwd_d256_n80": "attention_fwd_d256_n80.mlir",
    "attention_fwd_d256_n80_causal": "attention_fwd_d256_n80.mlir",
    "attention_fwd_fp8": "attention_fwd_fp8.mlir",
    "attention_fwd_fp8_causal": "attention_fwd_fp8.mlir",
}
ELEMENT_TYPES = {"bfloat16": "bf16", "float16": "f16"}
"""torch dtype name → the IR element type the examples are instantiated with
(the examples are written in bf16; f16 is the same program)."""
AS_WRITTEN = {"attention_fwd_fp8": "float8_e4m3fn", "attention_fwd_fp8_causal": "float8_e4m3fn"}
"""Kernels compiled exactly as their example is written, with the dtype of
their inputs: no element type is substituted (the `bf16` of
attention_fwd_fp8.mlir is its output's), and no other dtype is taken."""
OPTIONS: dict[str, dict[str, Any]] = {}
"""Compile options per kernel name that a user sets for the operators
(`tawa.compile` keywords, e.g. `OPTIONS["gemm"] = {"stages": 3}`), on top of
the compiler's and the cost model's choices; empty as shipped."""


def options_for(name: str) -> dict[str, Any]:
    """The options a user set for kernel `name` (`OPTIONS`)."""
    return dict(OPTIONS.get(name, {}))


MATMUL_LAYOUTS = {"matmul": "kn", "gemm": "nk", "matmul_at": "kn", "gemm_at": "nk"}
"""B's layout of each matmul kernel (`GemmConfig.b_layout`)."""
MATMUL_A_LAYOUTS = {"matmul": "mk", "gemm": "mk", "matmul_at": "km", "gemm_at": "km"}
"""A's layout of each matmul kernel (`GemmConfig.a_layout`): "km" reads the
transpose of a row-major [K, M] (a weight gradient's dYᵀ) in place."""


def matmul_kernel_name(b_name: str, a_transposed: bool) -> str:
    """The matmul kernel of B's kernel name ("matmul" or "gemm") with A
    read as [M, K] or, `a_transposed`, as the transpose of a [K, M]."""
    return f"{b_name}_at" if a_transposed else b_name
AUTOTUNE_ENV = "TAWA_AUTOTUNE"
"""Set to 1 to autotune the matmul configurations instead of using the heuristic's."""

_COMPILED: dict[tuple[Any, ...], Any] = {}
_CHOICES: dict[tuple[Any, ...], Any] = {}
_MATMULS: dict[tuple[Any, ...], tuple[Any, Any, tuple[int, ...]]] = {}


def default_dtype(name: str) -> str:
    """The dtype kernel `name` is written in: bf16, or its `AS_WRITTEN` one."""
    return AS_WRITTEN.get(name, "bfloat16")


def source(name: str, dtype: str | None = None) -> str:
    """The text of a module holding only example function `name`, in `dtype`
    (default: the one it is written in, `default_dtype`)."""
    from xdsl.dialects import func

    import tawa

    if name not in FILES:
        raise KeyError(f"tawa.torch has no kernel {name!r}; known: {', '.join(FILES)}")
    dtype = dtype or default_dtype(name)
    text = (EXAMPLES / FILES[name]).read_text()
    if name in AS_WRITTEN:
        if dtype != AS_WRITTEN[name]:
            raise ValueError(f"tawa.torch kernel {name!r} takes {AS_WRITTEN[name]} only, not {dtype}")
    elif dtype != "bfloat16":
        text = text.replace("bf16", ELEMENT_TYPES[dtype])
    module = tawa.parse(text)
    for op in list(module.body.block.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data != name:
            module.body.block.erase_op(op)
    return str(module)


def compiled(name: str, dtype: str | None = None, config: Any = None, **options: Any) -> Any:
    """The `tawa.Kernel` of example kernel `name` in `dtype` (default: the
    one it is written in), or of the generated GEMM `config` (a
    `tawa.kernels.GemmConfig`) named `name` (compiled once per kernel, dtype,
    config and options in this process)."""
    dtype = dtype or default_dtype(name)
    key = (name, dtype, config, tuple(sorted((k, repr(v)) for k, v in options.items())))
    kernel = _COMPILED.get(key)
    if kernel is None:
        import tawa

        if config is None:
            kernel = tawa.compile(source(name, dtype), name, **options)
        else:
            from tawa.runtime.splitk import gemm_kernel

            kernel = gemm_kernel(config, name, **options)  # split-K: a SplitKGemm (kernel + workspace)
        _COMPILED[key] = kernel
    return kernel


def matmul_choice(name: str, dtype: str, M: int, N: int, K: int, sms: int = SM_COUNT, tune: bool = True) -> Any:
    """The configuration (`tawa.runtime.autotune.Choice`) matmul kernel
    `name` runs for an M×N×K problem in `dtype`: the heuristic's (K split
    where the model says it pays: grids under a wave with long K), or with
    `$TAWA_AUTOTUNE=1` and `tune` (false while a CUDA graph is captured:
    nothing can be timed then) the autotuned one.  Remembered per problem
    in this process, so that a captured call reuses its warm-up's kernel."""
    key = (name, dtype, M, N, K)
    choice = _CHOICES.get(key)
    if choice is None:
        from tawa.runtime.autotune import GemmProblem, autotune, heuristic, machine_parameters

        t = ELEMENT_TYPES[dtype]
        problem = GemmProblem(M, N, K, t, t, t, MATMUL_LAYOUTS[name], a_layout=MATMUL_A_LAYOUTS[name])
        if tune and os.environ.get(AUTOTUNE_ENV) == "1":
            choice = autotune(problem, sms=sms)
        else:
            choice = heuristic(problem, sms, split=True, params=machine_parameters())  # partial sums of f32: C only
        _CHOICES[key] = choice
    return choice


def matmul_kernel(name: str, dtype: str, M: int, N: int, K: int, sms: int = SM_COUNT,
                  tune: bool = True) -> tuple[Any, tuple[int, ...]]:
    """The compiled kernel and launch grid of `matmul_choice(...)` (with
    `OPTIONS[name]` on top of its options), remembered per problem.  An entry
    records the `compiled` that made it: a substituted one (the CPU tests'
    stand-ins) is asked again."""
    key = (name, dtype, M, N, K)
    hit = _MATMULS.get(key)
    if hit is not None and hit[0] is compiled:
        return hit[1], hit[2]
    choice = matmul_choice(name, dtype, M, N, K, sms, tune)
    # A C whose rows are not whole 16-byte units launches the kernel's
    # thread-epilogue twin (tawa.Kernel.fallback).
    options = {**choice.options, **OPTIONS.get(name, {})}
    kernel = compiled(name, dtype, config=choice.config, **options)
    grid = choice.grid(M, N)
    _MATMULS[key] = (compiled, kernel, grid)
    return kernel, grid


_PYTHON_EXAMPLES: dict[str, Any] = {}
RESOURCE_CHECK = "tawa-check-resources:"
"""How the compiler's resource check (registers, shared memory) begins its diagnostics."""


def python_example(stem: str) -> Any:
    """The module of examples/python/<stem>.py, loaded once: its
    `@tawa.kernel` functions are the kernels of the norm, rotary and
    attention-gradient operators."""
    loaded = _PYTHON_EXAMPLES.get(stem)
    if loaded is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location(f"tawa_examples_{stem}", EXAMPLES / "python" / f"{stem}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        _PYTHON_EXAMPLES[stem] = loaded
    return loaded


def first_that_fits(compile_one: Any, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first of `candidates` (constexprs, largest tile first) whose
    kernel `compile_one(**candidate)` compiles (`those_that_fit`); None when
    the resource check refuses them all."""
    return next((candidate for candidate, _ in those_that_fit(compile_one, candidates)), None)


def those_that_fit(compile_one: Any, candidates: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Each of `candidates` (constexprs) whose kernel `compile_one(**candidate)`
    compiles, with that kernel, in order, skipping those the compiler's
    resource check refuses (more registers or shared memory than there
    are).  Any other compile error is raised."""
    from tawa.diagnostics import TawaError

    for candidate in candidates:
        try:
            kernel = compile_one(**candidate)
        except TawaError as err:
            if RESOURCE_CHECK not in str(err):
                raise
            continue
        yield candidate, kernel


def spills(kernel: Any) -> bool:
    """Whether ptxas spills registers of `kernel` to local memory (it is
    assembled, or its cubin found in the cache: the launch needs it anyway).
    A tile chooser takes the next candidate instead: the compiler's register
    estimate can fall short of what ptxas keeps live across a loop, and a
    spilling memory-bound kernel adds local-memory traffic to its own."""
    from tawa.runtime.ptxas import RegisterSpillWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegisterSpillWarning)
        return kernel.assemble().spill_bytes > 0


def clear_cache() -> None:
    """Forgets the compiled kernels, matmul choices and split-K workspaces
    (tawa.runtime.clear_cache() forgets tawa.compile's)."""
    from tawa.runtime.splitk import clear_workspaces

    _COMPILED.clear()
    _CHOICES.clear()
    _MATMULS.clear()
    clear_workspaces()
