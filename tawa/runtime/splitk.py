"""Split-K GEMMs at run time: one launch, the partials reduced inside it.

    config = GemmConfig(64, 256, 64, split_k=4)
    gemm = gemm_kernel(config)                  # a SplitKGemm (a tawa.Kernel when split_k = 1)
    gemm(A, B, C, M, N, K, grid=gemm_grid(config, M, N))

A split configuration (`tawa.kernels.gemm`, `split_k` = S > 1) is one
program, `@gemm_splitk(A, B, C, W, Counters, M, N, K)`: program (m, n, s)
stores its partial sum of K-slice s into the f32 workspace W (S×M×N) and
arrives at its tile's counter (`tile.counter_arrive`); the last of the S to
arrive sums the tile's S partials in f32, in slice order, and stores C.  No
program waits for another, so any order of programs (and any number of them
resident) is correct.  The counter wraps back to 0 at the last arrival, so
counters zeroed once serve every later launch, a replayed CUDA graph's too.

`SplitKGemm` holds the workspace: W (`torch.empty`: every program writes
its partial before arriving, and only the last reads them) and the
counters (`torch.zeros`, one int32 per tile of C, zeroed on the stream of
the call that made them), kept per (device, stream, S, M, N): a call on
another stream gets its own, so concurrent GEMMs of one shape never share
counters (torch keeps cuBLAS workspaces per stream for the same reason).  A
call while a CUDA graph is being captured may allocate its workspace then
(torch allocates from the graph's pool, and the zeroing is captured too);
the graph's replays use it, and the cache keeps it alive.
`clear_workspaces()` frees them all but those a launch template holds.

`template(A, B, C, M, N, K, grid=...)` makes a launch template of calls
laid out like these on the current stream (the kernel's template, with the
workspace's addresses fixed): `tawa.torch.matmul` launches a split GEMM on
new tensors through it as it does an unsplit one.
"""

from __future__ import annotations

from typing import Any

from tawa.diagnostics import TawaError
from tawa.kernels.gemm import GemmConfig, counters_shape, gemm_grid, gemm_source, workspace_shape

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


class SplitKGemm:
    """A split configuration's kernel (a `tawa.Kernel` of
    `gemm_source(config)`) and its workspace (module docstring), called as
    a GEMM: `gemm(A, B, C, M, N, K, grid=..., stream=None)` with torch
    tensors.  `workspace(C, M, N)` is the W (S×M×N f32) a call with that C
    uses (the GPU tests poison it), `counters(C, M, N)` its tile counters."""

    def __init__(self, config: GemmConfig, kernel: Any):
        if config.split_k < 2:
            raise TawaError(f"{config.id}: a SplitKGemm needs split_k > 1", WHERE)
        self.config, self.kernel = config, kernel

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def ptx(self) -> str:
        return self.kernel.ptx

    @property
    def abi(self) -> Any:
        return self.kernel.abi

    def assemble(self) -> Any:
        return self.kernel.assemble()

    def load(self, device: int | None = None) -> Any:
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
                            "takes torch tensors (its workspace is torch's)", WHERE)
        dtype = getattr(torch, TORCH_DTYPES[self.config.c_dtype])
        if C.dtype != dtype or tuple(C.shape) != (M, N):
            raise TawaError(f"@{self.name} ({self.config.id}): C is a {str(C.dtype).removeprefix('torch.')} "
                            f"tensor of shape {tuple(C.shape)}; expected {TORCH_DTYPES[self.config.c_dtype]} "
                            f"of shape ({M}, {N})", WHERE)

    def workspace(self, C: Any, M: int, N: int, stream: Any = None) -> Any:
        """The workspace W (S×M×N f32) of a call with output C on `stream`
        (default: the current one), allocated on first use."""
        return self._workspace(C, M, N, self._stream(C, stream))[0]

    def counters(self, C: Any, M: int, N: int, stream: Any = None) -> Any:
        """The tile counters (int32, one per tile of C) of a call with
        output C on `stream`: all 0 between launches."""
        return self._workspace(C, M, N, self._stream(C, stream))[1]

    def _workspace(self, C: Any, M: int, N: int, stream: Any) -> tuple[Any, Any]:
        """(W, counters), made once per key; the counters are zeroed on
        `stream`, so the first launch there finds them zero."""
        import torch

        handle = None if stream is None else stream.cuda_stream
        # Keyed by the buffers' shapes: configurations whose W and counters are shaped alike share
        # them (every launch leaves the counters at 0), and no kernel gets another's shape (a
        # transposed program's W is S×N×M where a plain one's of the same S, M, N is S×M×N).
        shapes = workspace_shape(self.config, M, N), counters_shape(self.config, M, N)
        key = (str(C.device), handle, shapes)
        hit = _WORKSPACES.get(key)
        if hit is None:
            W = torch.empty(shapes[0], dtype=torch.float32, device=C.device)
            if stream is None:
                counters = torch.zeros(shapes[1], dtype=torch.int32, device=C.device)
            else:
                with torch.cuda.stream(stream):
                    counters = torch.zeros(shapes[1], dtype=torch.int32, device=C.device)
            hit = _WORKSPACES[key] = (W, counters)
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

    def template(self, A: Any, B: Any, C: Any, M: int, N: int, K: int, *, grid: Any) -> Any:
        """A `SplitLaunch` that launches calls with A, B, C laid out like these
        on the current stream, `launch((A_ptr, B_ptr, C_ptr))`; None where the
        kernel has no template (`tawa.Kernel.template`) or nothing is launched."""
        self._check(C, M, N, grid)
        if M == 0 or N == 0:
            return None
        on = self._stream(C, None)
        W, counters = self._workspace(C, M, N, on)
        bound = self.kernel.template(A, B, C, W, counters, M, N, K, grid=grid)
        if bound is None:
            return None
        return SplitLaunch(bound, W, counters, on)

    def __call__(self, A: Any, B: Any, C: Any, M: int, N: int, K: int, *, grid: Any, stream: Any = None) -> None:
        """C = A·B (as the configuration's layout says): one launch of the
        split kernel on `stream` (default: torch's current stream),
        asynchronously."""
        self._check(C, M, N, grid)
        if M == 0 or N == 0:
            return
        on = self._stream(C, stream)
        W, counters = self._workspace(C, M, N, on)
        if stream is None:
            # The kernel's fast path (its launch key) needs stream=None: it then runs on torch's
            # current stream, `on`, where the counters were zeroed.
            self.kernel(A, B, C, W, counters, M, N, K, grid=grid)
            return
        self.kernel(A, B, C, W, counters, M, N, K, grid=grid, stream=on)


class SplitLaunch:
    """A split GEMM's launch template (`SplitKGemm.template`): the kernel's
    `BoundLaunch` with W's and the counters' addresses fixed.  It holds the
    workspace (alive while the template is) and launches only on the stream
    that workspace belongs to: `launch(ptrs)` is False, with nothing
    launched, on another stream (the call then takes `SplitKGemm.__call__`,
    which finds or makes that stream's workspace)."""

    def __init__(self, bound: Any, W: Any, counters: Any, stream: Any):
        import torch

        self.bound, self.workspace = bound, (W, counters)
        self._fixed = (W.data_ptr(), counters.data_ptr())
        self._stream = stream.cuda_stream
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        index = stream.device.index
        self._current = (lambda: raw(index)) if raw is not None else (lambda: torch.cuda.current_stream(index).cuda_stream)

    def launch(self, ptrs: Any) -> bool:
        if self._current() != self._stream:
            return False
        return self.bound.launch((*ptrs, *self._fixed))


__all__ = ["SplitKGemm", "SplitLaunch", "clear_workspaces", "gemm_kernel"]
