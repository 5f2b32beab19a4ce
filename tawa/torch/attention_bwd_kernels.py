"""The compiled kernels behind attention's gradient (no torch needed).

They are the tile programs of examples/python/attention_bwd.py (`module()`
loads them): `attention_fwd_lse` (the forward pass that also stores each
query row's log-sum-exp, run when a gradient will flow through the call),
`attention_bwd_preprocess` (Delta = rowsum(dO ∘ O)), `attention_bwd_dkdv`
and `attention_bwd_dq`.  The dK/dV kernel's key block is the largest of
128 and 64 whose kernel the compiler's resource check accepts (`_dkdv_tile`:
at head dim 128 its 128-key blocks need more registers than a consumer
thread has, docs/passes.md "Attention backward"); the others' tiles are
fixed.

`kernel(name, D, causal)` is the compiled `tawa.Kernel` (remembered per
kernel and constexprs), `grid(name, D, ...)` its launch grid.
"""

from __future__ import annotations

from typing import Any

from tawa.torch import kernels

HEAD_DIMS = (64, 128)
"""Head dims with backward kernels."""
FWD, PRE, DKDV, DQ = "attention_fwd_lse", "attention_bwd_preprocess", "attention_bwd_dkdv", "attention_bwd_dq"
CAUSAL_KERNELS = (FWD, DKDV, DQ)
"""The kernels that take a CAUSAL constexpr (the preprocess has no mask)."""

DKDV_KEY_BLOCKS = (128, 64)
"""Keys per dK/dV program, tried largest first (`_dkdv_tile`)."""
_KERNELS: dict[tuple[Any, ...], Any] = {}
_DKDV_TILES: dict[int, dict[str, int]] = {}


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
    if name == PRE:
        return {"BLOCK_M": 64}
    if name == DKDV:
        return _dkdv_tile(D)
    if name == DQ:
        return {"BLOCK_M": 128, "BLOCK_N": 64}
    raise KeyError(f"no attention training kernel {name!r}; known: {', '.join((FWD, PRE, DKDV, DQ))}")


def _dkdv_tile(D: int) -> dict[str, int]:
    """The dK/dV kernel's blocks at head dim D: 128 keys a program where both
    its causal and its plain kernel fit the registers (the resource check),
    else 64."""
    hit = _DKDV_TILES.get(D)
    if hit is None:
        def both(**blocks: int) -> None:
            for causal in (False, True):
                _compile(DKDV, **blocks, HEAD_DIM=D, CAUSAL=causal)

        hit = kernels.first_that_fits(both, [{"BLOCK_M": 64, "BLOCK_N": n} for n in DKDV_KEY_BLOCKS])
        if hit is None:
            raise ValueError(f"tawa.torch.attention: the dK/dV kernel at head dim {D} fits no key block of "
                             f"{', '.join(map(str, DKDV_KEY_BLOCKS))}")
        _DKDV_TILES[D] = hit
    return dict(hit)


def constexprs(name: str, D: int, causal: bool) -> dict[str, Any]:
    """Every constexpr kernel `name` is compiled with."""
    values: dict[str, Any] = {**tile(name, D), "HEAD_DIM": D}
    if name in CAUSAL_KERNELS:
        values["CAUSAL"] = bool(causal)
    return values


def grid(name: str, D: int, q_len: int, kv_len: int, heads: int, batch: int) -> tuple[int, int, int]:
    """(blocks, heads, batch): one program per block of queries (per block of
    keys for the dK/dV kernel) of one head of one sequence."""
    t = tile(name, D)
    rows, n = (t["BLOCK_N"], kv_len) if name == DKDV else (t["BLOCK_M"], q_len)
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
    _DKDV_TILES.clear()
