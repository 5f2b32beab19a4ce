"""tawa's tile language: what `@tawa.kernel` functions are written in.

    import tawa
    import tawa.language as tl

    @tawa.kernel
    def gemm(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2),
             C: tl.tensor_ref(tl.bf16, 2), M: tl.index, N: tl.index, K: tl.index,
             BLOCK_M: tl.constexpr = 128, BLOCK_N: tl.constexpr = 256,
             BLOCK_K: tl.constexpr = 64):
        m0 = tl.program_id(0) * BLOCK_M
        n0 = tl.program_id(1) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.f32)
        for k in tl.range(0, K, BLOCK_K):
            a = tl.load(A, (m0, k), (BLOCK_M, BLOCK_K))
            b = tl.load(B, (n0, k), (BLOCK_N, BLOCK_K))
            acc = tl.dot(a, b, acc, trans_b=True)
        tl.store(C, (m0, n0), acc.to(tl.bf16))

The functions here are never called by Python: `tawa.frontend` reads the
kernel's source and turns each call into `tile` IR (docs/frontend.md).  Their
signatures and docstrings are the language reference; calling one outside a
kernel raises `RuntimeError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class dtype:
    """An element type: `name` as the language spells it, `ir` as the IR does."""

    name: str
    ir: str
    kind: str
    """'float', 'int' (i1, i32, ...) or 'index'."""
    bits: int
    supported: bool = True
    """False for types Python programs may name but tile programs cannot hold."""

    def __repr__(self) -> str:
        return f"tl.{self.name}"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """Integers, `index` included."""
        return self.kind in ("int", "index")


bf16 = dtype("bf16", "bf16", "float", 16)
f16 = dtype("f16", "f16", "float", 16)
f32 = dtype("f32", "f32", "float", 32)
f8e4m3fn = dtype("f8e4m3fn", "f8E4M3FN", "float", 8)
f8e5m2 = dtype("f8e5m2", "f8E5M2", "float", 8)
f64 = dtype("f64", "f64", "float", 64, supported=False)
i1 = dtype("i1", "i1", "int", 1)
i32 = dtype("i32", "i32", "int", 32)
i64 = dtype("i64", "i64", "int", 64, supported=False)
index = dtype("index", "index", "index", 64)
"""Sizes and element offsets (also a parameter annotation: `M: tl.index`)."""

DTYPES = {d.name: d for d in (bf16, f16, f32, f8e4m3fn, f8e5m2, f64, i1, i32, i64, index)}


@dataclass(frozen=True)
class tensor_ref:
    """Parameter annotation of a global tensor: `tl.tensor_ref(tl.bf16, 2)` is
    the kernel argument `memref<?x?xbf16>` (an array of that rank and dtype)."""

    dtype: Any
    rank: int

    def __repr__(self) -> str:
        return f"tl.tensor_ref({self.dtype!r}, {self.rank})"


class constexpr:
    """Parameter annotation of a compile-time value (tile sizes, flags): given
    at specialization, `kernel.ir(BLOCK_M=128)`, or by the parameter's default.
    Python evaluates expressions and `if` statements over constexprs while
    the kernel is built; the IR holds only their results."""


class _Builtin:
    """A function of the language: `tawa.frontend` builds its IR."""

    def __init__(self, fn: Any):
        self.name = fn.__name__.rstrip("_")
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"tl.{self.name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"tl.{self.name} can only be used inside a @tawa.kernel function")


def _builtin(fn: Any) -> _Builtin:
    return _Builtin(fn)


@_builtin
def program_id(axis):
    """This program's id along launch-grid axis `axis` (0, 1 or 2): an index."""


@_builtin
def num_programs(axis):
    """The launch grid's size along axis `axis`: an index."""


@_builtin
def load(ref, offsets, shape=None):
    """The tile of constexpr `shape` whose first element is at `offsets` (one
    index per dimension of `ref`).  A shape of lower rank than `ref` covers its
    trailing dimensions.  Elements outside `ref` read as 0.  Without `shape`,
    the one element at `offsets` as a scalar (an i32 or f32 `ref`): a row
    index or table entry that may place other loads and stores."""


@_builtin
def store(ref, offsets, value):
    """Writes tile `value` (of `ref`'s dtype) at `offsets`; elements outside
    `ref` are dropped."""


@_builtin
def atomic_add(ref, offsets, value):
    """Adds f32 tile `value` into `ref` (f32) at `offsets`, each element
    atomically (relaxed, GPU scope): programs may add into the same
    elements in any order.  Elements outside `ref` are dropped."""


@_builtin
def dot(a, b, acc=None, trans_b=False, trans_a=False):
    """`a · b + acc` in f32 (`a · bᵀ + acc` with `trans_b`, `aᵀ · b + acc`
    with `trans_a`); `acc` defaults to zeros.  a is M×K (K×M with trans_a:
    loaded as stored, read transposed in place; 16-bit types only), b is
    K×N (N×K with trans_b)."""


@_builtin
def zeros(shape, dtype):
    """A tile of zeros of constexpr `shape`."""


@_builtin
def full(shape, value, dtype):
    """A tile of constexpr `shape` whose every element is `value`."""


@_builtin
def arange(start, end=None):
    """The i32 tile [start, ..., end-1] (`arange(n)`: [0, ..., n-1]); start
    and end are constexprs."""


@_builtin
def trans(x):
    """The transpose of a 2-D tile (also `x.T`)."""


@_builtin
def expand_dims(x, axis):
    """`x` with a dimension of extent 1 inserted at `axis` (also `x[None, :]`)."""


@_builtin
def broadcast_to(x, shape):
    """`x` broadcast to constexpr `shape` (NumPy rules)."""


@_builtin
def where(mask, x, y):
    """Elementwise `mask ? x : y`; the three broadcast together."""


@_builtin
def maximum(x, y):
    """Elementwise maximum (of floats: NaN-propagating)."""


@_builtin
def minimum(x, y):
    """Elementwise minimum."""


@_builtin
def max(x, axis):
    """The maximum of tile `x` along `axis`, which is removed."""


@_builtin
def sum(x, axis):
    """The sum of tile `x` along `axis`, which is removed."""


@_builtin
def exp(x):
    """eˣ, elementwise."""


@_builtin
def exp2(x):
    """2ˣ, elementwise."""


@_builtin
def log(x):
    """ln x, elementwise."""


@_builtin
def log2(x):
    """log₂ x, elementwise."""


@_builtin
def sqrt(x):
    """√x, elementwise."""


@_builtin
def rsqrt(x):
    """1/√x, elementwise."""


@_builtin
def tanh(x):
    """tanh x, elementwise."""


@_builtin
def abs(x):
    """|x|, elementwise."""


@_builtin
def range(start, end=None, step=1):
    """Only as `for i in tl.range(start, end, step)`: an `scf.for` loop over
    index values.  Names assigned in the body and defined before it are its
    loop-carried values (they must keep their shape and dtype)."""


def cdiv(a: int, b: int) -> int:
    """⌈a / b⌉ of integers: a plain Python function, so kernels use it on
    constexprs and hosts on grid sizes."""
    return -(-a // b)


__all__ = [
    "DTYPES", "abs", "arange", "atomic_add", "bf16", "broadcast_to", "cdiv", "constexpr", "dot", "dtype", "exp",
    "exp2", "expand_dims", "f8e4m3fn", "f8e5m2", "f16", "f32", "f64", "full", "i1", "i32", "i64",
    "index", "load", "log", "log2", "max", "maximum", "minimum", "num_programs", "program_id",
    "range", "rsqrt", "sqrt", "store", "sum", "tanh", "tensor_ref", "trans", "where", "zeros",
]
