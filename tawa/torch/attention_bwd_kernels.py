"""The compiled kernels behind attention's gradient (no torch needed).

They are the tile programs of examples/python/attention_bwd.py (`module()`
loads them): `attention_fwd_lse` (the forward pass that also stores each
query row's log-sum-exp, run when a gradient will flow through the call),
`attention_bwd_preprocess` (Delta = rowsum(dO ∘ O)), and dQ, dK, dV by one
of two paths (`DQ_PATHS`; `DQ_PATH` is the one the operator runs, a
module-level switch the benchmark flips, not a user option):

* "kernel": `attention_bwd_dkdv`, then `attention_bwd_dq`, a separate
  kernel that recomputes S and dP;
* "atomic": `attention_bwd_dkdvdq`, the dK/dV kernel that also adds each
  key block's share of dQᵀ = Kᵀ·dSᵀ into a zeroed f32 dQᵀ [B, H, D, S]
  with `tl.atomic_add` (bulk reductions), then `attention_bwd_dq_convert`
  (transpose, scale and round to bf16).

A kernel that loops over key blocks or runs one program per key block
(the dK/dV kernels, the dQ kernel) takes the largest of its `KEY_BLOCKS` at
which both its causal and its plain kernel compile (`_key_block`: the
compiler's resource check refuses a block that needs more registers or
shared memory than a consumer has, docs/passes.md "Attention backward"):
a larger key block is fewer, larger wgmmas and ring steps for the same
work; the others' tiles are fixed.  `unavailable(path, D)` says why a path cannot run at head dim D
(a kernel that does not compile), or None.  The dK/dV kernels run one program per key block of a key/value
head (they loop over its group of query heads); the others one per query
block of a query head.

`kernel(name, D, causal)` is the compiled `tawa.Kernel` (remembered per
kernel and constexprs), `grid(name, D, ...)` its launch grid.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tawa.torch import kernels

HEAD_DIMS = (64, 128)
"""Head dims with backward kernels."""
FWD, PRE, DKDV, DQ = "attention_fwd_lse", "attention_bwd_preprocess", "attention_bwd_dkdv", "attention_bwd_dq"
DKDVDQ, CONVERT = "attention_bwd_dkdvdq", "attention_bwd_dq_convert"
KERNELS = (FWD, PRE, DKDV, DQ, DKDVDQ, CONVERT)
CAUSAL_KERNELS = (FWD, DKDV, DQ, DKDVDQ)
"""The kernels that take a CAUSAL constexpr (the preprocess and conversion have no mask)."""
KEY_BLOCK_KERNELS = (DKDV, DKDVDQ)
"""The kernels with one program per key block (of a key/value head)."""

DQ_PATHS = ("kernel", "atomic")
"""How the backward gets dQ: a separate dQ kernel, or atomic adds by the dK/dV kernel."""
DQ_PATH = "kernel"
"""The path `tawa::attention_bwd` runs (`dq_path` switches it for a while)."""
PATH_KERNELS = {"kernel": (PRE, DKDV, DQ), "atomic": (PRE, DKDVDQ, CONVERT)}
"""The backward's kernels on each path, in launch order."""

KEY_BLOCKS = {DKDV: (128, 64), DKDVDQ: (128, 64), DQ: (128, 64)}
"""Each kernel's key blocks, tried largest first.  The atomic dK/dV
kernel takes only the one equal to the head dim: its dQᵀ share has
HEAD_DIM rows, and every accumulator of a kernel has the rows its warp
groups own (docs/passes.md, "Attention backward")."""
QUERY_BLOCKS = {DKDV: 64, DKDVDQ: 64, DQ: 128}
"""Each key-blocked kernel's query block: the rows of Q a dK/dV step
reads, the rows of a dQ program."""
_KERNELS: dict[tuple[Any, ...], Any] = {}
_KEY_BLOCK_TILES: dict[tuple[str, int], dict[str, int]] = {}
_UNAVAILABLE: dict[tuple[str, int], str | None] = {}


@contextlib.contextmanager
def dq_path(path: str) -> Iterator[None]:
    """Runs the backward on `path` (one of `DQ_PATHS`) inside the block."""
    global DQ_PATH
    if path not in DQ_PATHS:
        raise ValueError(f"no dQ path {path!r}; known: {', '.join(DQ_PATHS)}")
    before, DQ_PATH = DQ_PATH, path
    try:
        yield
    finally:
        DQ_PATH = before


def unavailable(path: str, D: int) -> str | None:
    """Why the backward cannot take `path` at head dim D (a kernel that does
    not compile: the compiler's one-line error), or None.  Compiles the
    path's kernels, causal and not, once per process."""
    key = (path, D)
    if key not in _UNAVAILABLE:
        from tawa.diagnostics import TawaError

        try:
            for name in PATH_KERNELS[path]:
                for causal in (False, True):
                    kernel(name, D, causal)
            _UNAVAILABLE[key] = None
        except (TawaError, ValueError) as err:
            _UNAVAILABLE[key] = str(err).strip().splitlines()[0]
    return _UNAVAILABLE[key]


def module() -> Any:
    """The module of examples/python/attention_bwd.py (loaded once)."""
    return kernels.python_example("attention_bwd")


def unsupported(D: int) -> str | None:
    """Why attention of head dim D has no backward, or None."""
    if D in HEAD_DIMS:
        return None
    return (f"head dim D = {D} has no backward kernels (examples/python/attention_bwd.py compiles for "
            f"{' and '.join(map(str, HEAD_DIMS))})")


def tile(name: str, D: int) -> dict[str, int]:
    """The block constexprs of kernel `name` at head dim D."""
    if name == FWD:
        return {"BLOCK_M": 128, "BLOCK_N": 128}
    if name in (PRE, CONVERT):
        return {"BLOCK_M": 64}
    if name in KEY_BLOCKS:
        return _key_block(name, D)
    raise KeyError(f"no attention training kernel {name!r}; known: {', '.join(KERNELS)}")


def _key_block(name: str, D: int) -> dict[str, int]:
    """A key-blocked kernel's blocks at head dim D: its query block and the
    most keys (of its `KEY_BLOCKS`) at which both its causal and its plain
    kernel fit the registers and shared memory (the resource check)."""
    hit = _KEY_BLOCK_TILES.get((name, D))
    if hit is None:
        def both(**blocks: int) -> None:
            for causal in (False, True):
                _compile(name, **blocks, HEAD_DIM=D, CAUSAL=causal)

        # The atomic kernel's dQᵀ share has D rows, which must be its key block's.
        blocks = [n for n in KEY_BLOCKS[name] if name != DKDVDQ or n == D]
        hit = kernels.first_that_fits(both, [{"BLOCK_M": QUERY_BLOCKS[name], "BLOCK_N": n} for n in blocks])
        if hit is None:
            raise ValueError(f"tawa.torch.attention: {name} at head dim {D} fits no key block of "
                             f"{', '.join(map(str, KEY_BLOCKS[name]))}")
        _KEY_BLOCK_TILES[(name, D)] = hit
    return dict(hit)


def constexprs(name: str, D: int, causal: bool) -> dict[str, Any]:
    """Every constexpr kernel `name` is compiled with."""
    values: dict[str, Any] = {**tile(name, D), "HEAD_DIM": D}
    if name in CAUSAL_KERNELS:
        values["CAUSAL"] = bool(causal)
    return values


def grid(name: str, D: int, q_len: int, kv_len: int, heads: int, batch: int) -> tuple[int, int, int]:
    """(blocks, heads, batch): one program per block of queries of one head
    of one sequence; for the dK/dV kernels one per block of keys, `heads`
    then the key/value heads."""
    t = tile(name, D)
    rows, n = (t["BLOCK_N"], kv_len) if name in KEY_BLOCK_KERNELS else (t["BLOCK_M"], q_len)
    return (-(-n // rows), heads, batch)


def _compile(name: str, **values: Any) -> Any:
    key = (name, *sorted(values.items()))
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = getattr(module(), name).compile(**values)
    return kernel


def kernel(name: str, D: int, causal: bool) -> Any:
    """The compiled kernel `name` for head dim D (`constexprs`)."""
    return _compile(name, **constexprs(name, D, causal))


def clear_cache() -> None:
    """Forgets the kernels compiled and the tiles chosen in this process."""
    _KERNELS.clear()
    _KEY_BLOCK_TILES.clear()
    _UNAVAILABLE.clear()
