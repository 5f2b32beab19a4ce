"""Split-K GEMMs at run time: the split kernel, then the sum of its partials.

    config = GemmConfig(64, 256, 64, split_k=4)
    gemm = gemm_kernel(config)                  # a SplitKGemm (a tawa.Kernel when split_k = 1)
    gemm(A, B, C, M, N, K, grid=gemm_grid(config, M, N))

A split configuration (`tawa.kernels.gemm`, `split_k` = S > 1) is two
programs: the split program writes S partial sums of C into an f32
workspace W (S×M×N), and the reduce program sums them into C.
`tawa-hopper-pipeline` compiles both (the reduce program, which has no dot,
with every op in the consumer warp groups; both are GPU-tested), but
`SplitKGemm` launches only the compiled split kernel and then sums W with
torch on the same stream (on the H100 as fast as the reduce program for
two partials: docs/perf.md, "Cheaper softmax reductions") — one
`torch.sum` into an f32 C; one `torch.add(W[0], W[1], out=C)` for S = 2
(f32 math, rounded once on the store); else `torch.sum` into an f32
scratch slab and a copy into C.  Either way every partial is added in f32
and C is rounded once, as the reduce program (`gemm_reduce_source`, run by
the CPU simulator) defines; torch may add the S partials in another order
than s = 0, 1, ... (last-bit differences).

The workspace is allocated with `torch.empty` (never zeroed: the split
kernel writes every element of W — a K-slice past K stores zeros — before
the reduction reads it) and kept per (device, stream, S, M, N): a call on
another stream gets its own, so concurrent GEMMs of one shape never share
one (torch keeps cuBLAS workspaces per stream for the same reason).  A
call while a CUDA graph is being captured may allocate its workspace then
(torch allocates from the graph's pool); the graph's replays use it, and
the cache keeps it alive.  `clear_workspaces()` frees them all.
"""

from __future__ import annotations

from typing import Any

from tawa.diagnostics import TawaError
from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, workspace_shape

WHERE = "tawa.splitk"
TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
"""C's element type → torch dtype name."""

_WORKSPACES: dict[tuple[Any, ...], Any] = {}


def gemm_kernel(config: GemmConfig, name: str | None = None, **options: Any) -> Any:
    """The launchable GEMM of `config`: `tawa.compile(gemm_source(config,
    name), ...)` with `options`, wrapped in a `SplitKGemm` when
    `config.split_k` > 1.  Either is called as `(A, B, C, M, N, K,
    grid=gemm_grid(config, M, N), stream=None)`."""
    from tawa.runtime.compiler import compile

    kernel = compile(gemm_source(config, name), name or config.kernel, **options)
    return SplitKGemm(config, kernel) if config.split_k > 1 else kernel


def clear_workspaces() -> None:
    """Frees the cached split-K workspaces (torch returns them to its allocator)."""
    _WORKSPACES.clear()


def workspace_rows(config: GemmConfig) -> int:
    """Slabs of M×N f32 a split GEMM's workspace holds: the S partials, and
    an f32 sum for a 16-bit C summed over more than two partials."""
    return config.split_k + (config.c_dtype != "f32" and config.split_k > 2)


class SplitKGemm:
    """A split configuration's split kernel (a `tawa.Kernel` of
    `gemm_source(config)`) and its reduction (module docstring), launched
    as one GEMM: `gemm(A, B, C, M, N, K, grid=..., stream=None)` with torch
    tensors.  `workspace(C, M, N)` is the W (S×M×N f32) a call with that C
    uses (the GPU tests poison it)."""

    def __init__(self, config: GemmConfig, kernel: Any):
        if config.split_k < 2:
            raise TawaError(f"{config.id}: a SplitKGemm needs split_k > 1", WHERE)
        self.config, self.kernel = config, kernel

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def ptx(self) -> str:
        """The split kernel's PTX (the reduction is torch's)."""
        return self.kernel.ptx

    @property
    def abi(self) -> Any:
        return self.kernel.abi

    def assemble(self) -> Any:
        return self.kernel.assemble()

    def load(self, device: int | None = None) -> Any:
        """Loads the split kernel (the reduction needs nothing loaded)."""
        return self.kernel.load(device)

    def _check(self, C: Any, M: int, N: int, grid: Any) -> None:
        want = gemm_grid(self.config, M, N)
        got = tuple(grid) if isinstance(grid, tuple | list) else (grid,)
        if got != want:
            raise TawaError(f"@{self.name} ({self.config.id}): grid {got} for M = {M}, N = {N}; expected {want} "
                            f"(the third axis is the {self.config.split_k} K-slices)", WHERE)
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or not isinstance(C, torch.Tensor):
            raise TawaError(f"@{self.name} ({self.config.id}): C is a {type(C).__name__}; a split-K GEMM "
                            "takes torch tensors (its partial sums are added with torch)", WHERE)
        dtype = getattr(torch, TORCH_DTYPES[self.config.c_dtype])
        if C.dtype != dtype or tuple(C.shape) != (M, N):
            raise TawaError(f"@{self.name} ({self.config.id}): C is a {str(C.dtype).removeprefix('torch.')} "
                            f"tensor of shape {tuple(C.shape)}; expected {TORCH_DTYPES[self.config.c_dtype]} "
                            f"of shape ({M}, {N})", WHERE)

    def workspace(self, C: Any, M: int, N: int, stream: Any = None) -> Any:
        """The workspace W (S×M×N f32 view) of a call with output C on
        `stream` (default: the current one), allocated on first use."""
        return self._workspace(C, M, N, self._stream(C, stream))[1]

    def _workspace(self, C: Any, M: int, N: int, stream: Any) -> tuple[Any, Any]:
        """(the whole workspace, its S partials' view W), made once per key."""
        import torch

        S, rows = self.config.split_k, workspace_rows(self.config)
        handle = None if stream is None else stream.cuda_stream
        key = (str(C.device), handle, S, rows, M, N)
        hit = _WORKSPACES.get(key)
        if hit is None:
            shape = (rows, *workspace_shape(self.config, M, N)[1:])
            ws = torch.empty(shape, dtype=torch.float32, device=C.device)
            hit = _WORKSPACES[key] = (ws, ws[:S])
        return hit

    @staticmethod
    def _stream(C: Any, stream: Any) -> Any:
        """The torch stream the call runs on (None for CPU tensors)."""
        import torch

        if C.device.type != "cuda":
            return None
        if stream is None:
            return torch.cuda.current_stream(C.device)
        if isinstance(stream, torch.cuda.Stream):
            return stream
        handle = stream if isinstance(stream, int) else stream.cuda_stream
        return torch.cuda.ExternalStream(handle, device=C.device)

    def __call__(self, A: Any, B: Any, C: Any, M: int, N: int, K: int, *, grid: Any, stream: Any = None) -> None:
        """C = A·B (as the configuration's layout says) through W: the split
        kernel, then the reduction, both on `stream` (default: torch's
        current stream), asynchronously."""
        self._check(C, M, N, grid)
        if M == 0 or N == 0:
            return
        import torch

        on = self._stream(C, stream)
        ws, W = self._workspace(C, M, N, on)
        S = self.config.split_k
        if stream is None:
            # The kernel's fast path (its launch key) needs stream=None: it then runs on torch's
            # current stream, `on`, as does the reduction.
            self.kernel(A, B, W, M, N, K, grid=grid)
            reduce_partials(ws, C, S)
            return
        self.kernel(A, B, W, M, N, K, grid=grid, stream=on)
        with torch.cuda.stream(on):
            reduce_partials(ws, C, S)


def reduce_partials(ws: Any, C: Any, split_k: int) -> None:
    """C = Σₛ ws[s] over s < split_k, added in f32 and rounded once to C's
    type (what `gemm_reduce_source` computes), on torch's current stream:
    one kernel for an f32 C or two partials, else a sum into the f32 slab
    ws[split_k] and a copy into C."""
    import torch

    W = ws[:split_k]
    if C.dtype == torch.float32:
        torch.sum(W, 0, out=C)
    elif split_k == 2:
        torch.add(W[0], W[1], out=C)  # f32 math, one rounding on the store
    else:
        total = ws[split_k]
        torch.sum(W, 0, out=total)
        C.copy_(total)


__all__ = ["SplitKGemm", "clear_workspaces", "gemm_kernel", "reduce_partials", "workspace_rows"]
