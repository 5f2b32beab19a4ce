"""Argument checks and launch geometry of `tawa.torch`'s operators (pure
Python: no torch, no GPU, so the CPU tests exercise all of it).

A tensor is described by a `TensorInfo` (`describe(t)` reads one from a
torch tensor, or from a fake/meta tensor inside `torch.compile`).  Each
operator's check returns the problem's sizes or raises a one-line error:
`TypeError` for a dtype, `ValueError` for a device, rank, shape or alignment
the kernels cannot take.  Layouts never raise: an operand that the kernels
cannot read in place is copied (`needs_copy`; attention's q, k, v:
`tma_readable`; what a kernel's threads address: `rows_contiguous`), `matmul_b_operand` and `matmul_a_operand` choose among the
GEMM kernels by the layouts B and A already have, and attention's output takes q's order of heads
and positions (`attention_out_strides`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from tawa.analysis.attention_cost import KERNEL_ROWS, AttentionVariant, choose
from tawa.runtime.arrays import is_dense_row_major
from tawa.runtime.launch import MAX_TMA_STRIDE, TMA_ALIGN
from tawa.target.hopper import SM_COUNT

ELEMENT_BYTES = {"bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float32": 4}
MATMUL_DTYPES = ("bfloat16", "float16")
ATTENTION_DTYPES = ("bfloat16",)
FP8_DTYPES = ("float8_e4m3fn",)
"""q, k, v dtypes of `attention_fp8` (its output is bf16)."""
FP8_HEAD_DIMS = (128,)
"""Head dims with an fp8 attention kernel (examples/attention_fwd_fp8.mlir)."""
FP8_KERNELS = {False: "attention_fwd_fp8", True: "attention_fwd_fp8_causal"}
"""causal → the fp8 attention kernel (128 query rows a program: `attention_grid`'s default)."""
FP8_KEY_ALIGN = 16
"""Vᵀ's rows (one per channel, of S keys in e4m3) are padded with zeros to a
multiple of this many keys: TMA needs 16-byte row strides."""
FLOAT32_NORMAL = (2.0**-126, (2.0 - 2.0**-23) * 2.0**127)
"""The least and greatest normal float32: the fp8 kernel takes its scales as f32."""
HEAD_DIMS = (64, 128, 256)
"""Head dims with an attention kernel (examples/attention_fwd_d64.mlir, attention_fwd.mlir,
attention_fwd_d256.mlir)."""
MATMUL_TILE = (128, 256)
"""Rows and columns of C per program of examples/matmul.mlir and gemm.mlir."""
@dataclass(frozen=True)
class TensorInfo:
    """What the checks need to know about a tensor."""

    shape: tuple[Any, ...]
    """Sizes (ints, or SymInts while torch.compile traces)."""
    dtype: str
    """torch's dtype name without `torch.`: "bfloat16"."""
    device: str
    """"cuda:0", "cpu", "meta"."""
    strides: tuple[int, ...] | None = None
    """In elements; None for fake tensors."""
    data_ptr: int | None = None
    """None for fake tensors."""

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    def __str__(self) -> str:
        return f"{self.dtype} tensor of shape [{', '.join(str(d) for d in self.shape)}] on {self.device}"


def describe(t: Any, fake: bool = False) -> TensorInfo:
    """A torch tensor's `TensorInfo`; `fake`: only its metadata (no storage)."""
    if not all(hasattr(t, a) for a in ("shape", "dtype", "device", "stride")):
        raise TypeError(f"expected a torch tensor, got {type(t).__name__}")
    dtype = str(t.dtype).removeprefix("torch.")
    if fake:
        return TensorInfo(tuple(t.shape), dtype, str(t.device))
    return TensorInfo(tuple(t.shape), dtype, str(t.device), tuple(t.stride()), int(t.data_ptr()))


@dataclass(frozen=True)
class MatmulProblem:
    M: Any
    N: Any
    K: Any
    out_shape: tuple[Any, ...]
    """a's leading dimensions, then N."""
    dtype: str


@dataclass(frozen=True)
class AttentionProblem:
    """q [B, H, S, D] over k, v [B, kv_heads, kv_len, D] (`attention_fp8`:
    kv_heads = H, kv_len = S)."""

    B: Any
    H: Any
    S: Any
    """Queries (q_len)."""
    D: Any
    kv_heads: Any = None
    """Key/value heads (H when left out): query head h reads h // (H / kv_heads)."""
    kv_len: Any = None
    """Keys (S when left out)."""

    def __post_init__(self) -> None:
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.H)
        if self.kv_len is None:
            object.__setattr__(self, "kv_len", self.S)

    @property
    def group(self) -> Any:
        """Query heads per key/value head."""
        return self.H // self.kv_heads if self.kv_heads else 1


def check_devices(op: str, named: Sequence[tuple[str, TensorInfo]], fake: bool) -> None:
    """Every named tensor on one CUDA device (the first's), else a one-line
    ValueError of operator `op`."""
    # Inside torch.compile the checks see fake CUDA tensors; meta tensors
    # (shape propagation) are accepted there too.
    allowed = ("cuda", "meta") if fake else ("cuda",)
    for name, t in named:
        if t.device_type not in allowed:
            raise ValueError(
                f"tawa.torch.{op}: {name} is on {t.device}; tawa's kernels run on CUDA tensors (Hopper GPUs)"
            )
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.device != first.device:
            raise ValueError(f"tawa.torch.{op}: {first_name} is on {first.device} but {name} on {t.device}")


def _shape(t: TensorInfo) -> str:
    return f"[{', '.join(str(d) for d in t.shape)}]"


def check_matmul(a: TensorInfo, b: TensorInfo, transpose_b: bool, fake: bool = False) -> MatmulProblem:
    """a [..., M, K] · b [K, N] (or b [N, K] with `transpose_b`) → [..., M, N]."""
    if a.dtype not in MATMUL_DTYPES:
        raise TypeError(f"tawa.torch.matmul: a is {a.dtype}; supported: {', '.join(MATMUL_DTYPES)}")
    if b.dtype != a.dtype:
        raise TypeError(f"tawa.torch.matmul: a is {a.dtype} but b is {b.dtype}; both must have one dtype")
    check_devices("matmul", [("a", a), ("b", b)], fake)
    if len(a.shape) < 2:
        raise ValueError(f"tawa.torch.matmul: a must be [..., M, K], got shape {_shape(a)}")
    if len(b.shape) != 2:
        form = "[N, K]" if transpose_b else "[K, N]"
        raise ValueError(f"tawa.torch.matmul: b must be {form}, got shape {_shape(b)}")
    K = a.shape[-1]
    N, Kb = (b.shape[0], b.shape[1]) if transpose_b else (b.shape[1], b.shape[0])
    if Kb != K:
        form = "[N, K] (transpose_b)" if transpose_b else "[K, N]"
        raise ValueError(
            f"tawa.torch.matmul: a {_shape(a)} has K = {K} but b {_shape(b)}, read as {form}, has K = {Kb}"
        )
    align = TMA_ALIGN // ELEMENT_BYTES[a.dtype]
    if K % align != 0:
        raise ValueError(
            f"tawa.torch.matmul: K = {K} is not a multiple of {align}: the kernels read rows of K "
            f"{a.dtype} elements through TMA, which needs {TMA_ALIGN}-byte rows (pad K with zeros)"
        )
    M = prod(a.shape[:-1])
    return MatmulProblem(M, N, K, (*a.shape[:-1], N), a.dtype)


def check_attention(q: TensorInfo, k: TensorInfo, v: TensorInfo, fake: bool = False,
                    causal: bool = False) -> AttentionProblem:
    """q [B, H, S, D] over k, v [B, Hkv, Sk, D], bf16, D a head dim with a
    kernel, H a multiple of Hkv (grouped-query attention; Hkv = 1:
    multi-query); with `causal`, Sk >= S (the queries are the last S
    positions of the keys': causal aligned bottom-right)."""
    op = "attention"
    _check_operands(op, ATTENTION_DTYPES, q, k, v, fake)
    B, H, S, D = q.shape
    if k.shape != v.shape:
        raise ValueError(f"tawa.torch.{op}: k and v must have one shape [B, Hkv, Sk, D]; got k {_shape(k)}, "
                         f"v {_shape(v)}")
    Bk, Hkv, Sk, Dk = k.shape
    if Bk != B or Dk != D:
        raise ValueError(f"tawa.torch.{op}: q {_shape(q)} and k, v {_shape(k)} must have one batch and head dim "
                         "(q [B, H, S, D], k and v [B, Hkv, Sk, D])")
    _check_head_dim(op, HEAD_DIMS, D)
    if (Hkv == 0 and H != 0) or (Hkv != 0 and H % Hkv != 0):
        raise ValueError(f"tawa.torch.{op}: q has {H} heads, k and v {Hkv}: the query heads must be a multiple "
                         "of the key/value heads (grouped-query attention)")
    if causal and Sk < S:
        raise ValueError(f"tawa.torch.{op}: causal attention aligns the {S} queries with the last of the {Sk} "
                         "keys (bottom-right): it needs at least as many keys as queries")
    if Sk == 0 and S != 0 and B != 0 and H != 0:
        raise ValueError(f"tawa.torch.{op}: k and v have no keys (shape {_shape(k)}): softmax over no keys is "
                         "undefined")
    return AttentionProblem(B, H, S, D, Hkv, Sk)


def check_attention_fp8(q: TensorInfo, k: TensorInfo, v: TensorInfo, fake: bool = False,
                        v_transposed: bool = False) -> AttentionProblem:
    """q, k, v [B, H, S, 128], one shape, float8_e4m3fn; with `v_transposed`,
    v is given as Vᵀ [B, H, 128, S]."""
    if v_transposed and len(v.shape) == 4:  # checked as the V it holds
        v = TensorInfo((*v.shape[:2], v.shape[3], v.shape[2]), v.dtype, v.device)
    return _check_attention("attention_fp8", FP8_DTYPES, FP8_HEAD_DIMS, q, k, v, fake)


def vt_in_place(vt: TensorInfo) -> bool:
    """Whether the fp8 kernel reads a given Vᵀ [B, H, 128, S] as it is: dense,
    16-byte aligned, S a multiple of `FP8_KEY_ALIGN` (whole TMA rows)."""
    return not needs_copy(vt) and vt.shape[3] % FP8_KEY_ALIGN == 0


def _check_operands(op: str, dtypes: Sequence[str], q: TensorInfo, k: TensorInfo, v: TensorInfo,
                    fake: bool) -> None:
    named = [("q", q), ("k", k), ("v", v)]
    for name, t in named:
        if t.dtype not in dtypes:
            raise TypeError(f"tawa.torch.{op}: {name} is {t.dtype}; supported: {', '.join(dtypes)}")
    check_devices(op, named, fake)
    for name, t in named:
        if len(t.shape) != 4:
            raise ValueError(f"tawa.torch.{op}: {name} must be [B, H, S, D], got shape {_shape(t)}")


def _check_head_dim(op: str, head_dims: Sequence[int], D: Any) -> None:
    if D not in head_dims:
        raise ValueError(
            f"tawa.torch.{op}: head dim D = {D} has no kernel; supported: {', '.join(map(str, head_dims))}"
        )


def _check_attention(op: str, dtypes: Sequence[str], head_dims: Sequence[int], q: TensorInfo, k: TensorInfo,
                     v: TensorInfo, fake: bool) -> AttentionProblem:
    _check_operands(op, dtypes, q, k, v, fake)
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(
            f"tawa.torch.{op}: q, k and v must have one shape [B, H, S, D] (self-attention, "
            f"equal lengths and heads); got q {_shape(q)}, k {_shape(k)}, v {_shape(v)}"
        )
    B, H, S, D = q.shape
    _check_head_dim(op, head_dims, D)
    return AttentionProblem(B, H, S, D)


def rows_contiguous(shape: Sequence[Any], strides: Sequence[int]) -> bool:
    """Whether a kernel that addresses a tensor itself (`KernelABI.addressed`:
    its threads load or store it, taking its strides as parameters) reads
    or writes it in place: its last dimension contiguous, every other
    stride (of a dimension longer than 1) positive — what the runtime's
    launch check accepts.  A head of a fused QKV projection's output, or
    attention's seq-major O and dO, is; a transposed view or a broadcast
    (stride 0) is not."""
    if shape and shape[-1] > 1 and strides[-1] != 1:
        return False
    return all(st > 0 for d, st in zip(shape[:-1], strides[:-1]) if d > 1)


def tma_readable(t: TensorInfo) -> bool:
    """Whether a tensor map can describe `t` as it is: its last dimension
    contiguous, every other stride (of a dimension longer than 1) positive,
    a multiple of 16 bytes and below 2^40 bytes, its address 16-byte aligned.
    The permuted [B, S, 3, H, D] output of a fused QKV projection is; a
    view whose rows are not contiguous (the transpose of the last two
    dimensions, a slice with a step), or whose head dim is not a whole
    number of 16-byte units apart, is not."""
    assert t.strides is not None and t.data_ptr is not None, "a real tensor"
    itemsize = ELEMENT_BYTES[t.dtype]
    if t.data_ptr % TMA_ALIGN or (t.shape and t.shape[-1] > 1 and t.strides[-1] != 1):
        return False
    return all(0 < st * itemsize < MAX_TMA_STRIDE and (st * itemsize) % TMA_ALIGN == 0
               for d, st in zip(t.shape[:-1], t.strides[:-1]) if d > 1)


def seq_major(shape: Sequence[Any], strides: Sequence[Any]) -> bool:
    """Whether a [B, H, S, D] tensor of these strides steps over its heads
    faster than over its positions (a [B, S, H, D] tensor transposed, or
    the permuted output of a fused QKV projection): attention's output then
    takes the same order (`attention_out_strides`)."""
    _, H, S, _ = shape
    return H > 1 and S > 1 and strides[2] > strides[1]


def attention_out_strides(q_shape: Sequence[Any], q_strides: Sequence[Any]) -> tuple[Any, ...]:
    """The strides of attention's output O [B, H, S, D]: those of a
    [B, S, H, D] tensor transposed when q is seq-major (`seq_major`), so
    that `O.transpose(1, 2).reshape(B, S, H·D)`, the next projection's
    input, is a view; else dense."""
    B, H, S, D = q_shape
    if seq_major(q_shape, q_strides):
        return (S * H * D, D, H * D, 1)
    return (H * S * D, S * D, D, 1)


def attention_scale(head_dim: int, scale: float | None) -> float:
    """The softmax scale: 1/√D by default; a given one must be positive and
    finite (the kernels take each row's max before scaling, which is only
    the max after it for a positive scale)."""
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    return _positive("attention", "scale", float(scale))


def _positive(op: str, name: str, value: float) -> float:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"tawa.torch.{op}: {name} must be positive and finite, got {value}")
    return value


def _real(op: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"tawa.torch.{op}: {name} must be a float, got {type(value).__name__}")
    return float(value)


def fp8_scales(scale: Any, q_scale: Any, k_scale: Any, v_scale: Any) -> tuple[float, float, float, float]:
    """`attention_fp8`'s scales as floats, `scale` 1/√128 when None: each
    must be a real number (`TypeError` for a tensor, a bool or a string:
    pass Python floats), positive and finite (`ValueError`)."""
    named = {"scale": scale, "q_scale": q_scale, "k_scale": k_scale, "v_scale": v_scale}
    if scale is None:
        named["scale"] = 1.0 / math.sqrt(FP8_HEAD_DIMS[0])
    s, q, k, v = (_positive("attention_fp8", n, _real("attention_fp8", n, x)) for n, x in named.items())
    return s, q, k, v


def attention_fp8_scales(scale: Any, q_scale: Any, k_scale: Any, v_scale: Any) -> tuple[float, float]:
    """The fp8 kernel's (sm_scale, v_scale): sm_scale = scale·q_scale·k_scale
    (q = q_scale·q8 and k = k_scale·k8 give q·kᵀ·scale = q8·k8ᵀ·sm_scale).
    Both are f32 arguments: each must come out a normal float32."""
    scale, q_scale, k_scale, v_scale = fp8_scales(scale, q_scale, k_scale, v_scale)
    sm_scale = scale * q_scale * k_scale
    low, high = FLOAT32_NORMAL
    for name, value in (("scale·q_scale·k_scale", sm_scale), ("v_scale", v_scale)):
        if not low <= value <= high:
            raise ValueError(
                f"tawa.torch.attention_fp8: {name} = {value:g} is not a normal float32 (the kernel takes it as f32)"
            )
    return sm_scale, v_scale


def attention_variant(head_dim: int, causal: bool, S: int | None = None, batch_heads: int | None = None,
                      sms: int = SM_COUNT, kv_len: int | None = None) -> AttentionVariant:
    """The attention kernel (and its compile options) for a head dim: with the
    problem's sequence lengths and batch·heads, the one the cost model expects
    to finish first (`tawa.analysis.attention_cost.choose`); without them the
    first listed."""
    return choose(head_dim, causal, S, batch_heads, kv_len, sms)


def attention_fp8_kernel(causal: bool) -> str:
    """The fp8 attention kernel (examples/attention_fwd_fp8.mlir)."""
    return FP8_KERNELS[bool(causal)]


def fp8_padded_keys(S: int) -> int:
    """Keys of each Vᵀ row the fp8 kernel reads: S rounded up to a multiple
    of `FP8_KEY_ALIGN` (the padding is zeros; seq_len masks it)."""
    return -(-S // FP8_KEY_ALIGN) * FP8_KEY_ALIGN


def needs_copy(t: TensorInfo) -> bool:
    """Whether the kernels cannot read `t` in place: TMA needs a dense
    row-major array at a 16-byte-aligned address."""
    assert t.strides is not None and t.data_ptr is not None, "a real tensor"
    itemsize = ELEMENT_BYTES[t.dtype]
    dense = is_dense_row_major(t.shape, [s * itemsize for s in t.strides], itemsize)
    return not dense or t.data_ptr % TMA_ALIGN != 0


def matmul_a_operand(a_mk: TensorInfo) -> tuple[bool, bool]:
    """How the kernels read A seen as [M, K]: (transposed, copied).

    - A row-major [M, K] at a 16-byte-aligned address: read in place (the
      kernels' K is a multiple of 16 bytes: `check_matmul`);
    - A the transpose of a row-major [K, M] with 16-byte rows (M a multiple
      of 8 bf16; a weight gradient's dYᵀ): read in place, MN-major (the
      "_at" kernels: `GemmConfig.a_layout = "km"`);
    - anything else: a dense [M, K] copy.
    """
    assert a_mk.strides is not None and a_mk.data_ptr is not None, "a real tensor"
    M, K = a_mk.shape
    aligned = a_mk.data_ptr % TMA_ALIGN == 0
    itemsize = ELEMENT_BYTES[a_mk.dtype]
    bytes_mk = [s * itemsize for s in a_mk.strides]
    if is_dense_row_major((M, K), bytes_mk, itemsize):
        return False, not aligned
    if aligned and is_dense_row_major((K, M), bytes_mk[::-1], itemsize) and (M * itemsize) % TMA_ALIGN == 0:
        return True, False
    return False, True


def matmul_b_operand(b_kn: TensorInfo) -> tuple[str, bool]:
    """The kernel for B seen as [K, N], and whether its operand is a copy.

    - B row-major [K, N] with 16-byte rows: @matmul reads it in place;
    - B the transpose of a row-major [N, K] (an `nn.Linear` weight): @gemm
      reads that in place;
    - anything else: @gemm on a dense [N, K] copy (whose rows, of K
      elements, are aligned since K is).
    """
    assert b_kn.strides is not None and b_kn.data_ptr is not None, "a real tensor"
    K, N = b_kn.shape
    aligned = b_kn.data_ptr % TMA_ALIGN == 0
    itemsize = ELEMENT_BYTES[b_kn.dtype]
    bytes_kn = [s * itemsize for s in b_kn.strides]
    if is_dense_row_major((K, N), bytes_kn, itemsize) and (N * itemsize) % TMA_ALIGN == 0:
        return "matmul", not aligned
    if is_dense_row_major((N, K), bytes_kn[::-1], itemsize):
        return "gemm", not aligned
    return "gemm", True


def matmul_grid(M: int, N: int) -> tuple[int, int]:
    """(⌈M/128⌉, ⌈N/256⌉): one program per tile of C."""
    return (-(-M // MATMUL_TILE[0]), -(-N // MATMUL_TILE[1]))


def attention_grid(S: int, heads: int, kernel: str, batch: int | None = None) -> tuple[int, ...]:
    """(⌈S/rows⌉, heads, batch) for attention `kernel`: one program per
    `KERNEL_ROWS[kernel]` query rows (128 for the fp8 kernels) of one head of
    one batch.
    Without `batch` (the fp8 kernel, whose program id 1 counts B·H heads):
    (⌈S/rows⌉, heads)."""
    blocks = -(-S // KERNEL_ROWS.get(kernel, 128))
    return (blocks, heads) if batch is None else (blocks, heads, batch)
