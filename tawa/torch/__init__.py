"""tawa's kernels as torch operators (docs/runtime.md, ## tawa.torch).

    import tawa.torch
    c = tawa.torch.matmul(a, b)                      # a [..., M, K] · b [K, N]
    c = tawa.torch.matmul(x, w, transpose_b=True)    # x · wᵀ, w [N, K] (nn.Linear)
    o = tawa.torch.attention(q, k, v, causal=True)   # q [B, H, S, D], k, v [B, Hkv, Sk, D]
    o = tawa.torch.attention_fp8(q8, k8, v8, v_scale=s)  # e4m3 [B, H, S, 128] → bf16
    c = tawa.torch.matmul_fp8(a8, b8, scale_a, scale_b)   # as torch._scaled_mm → bf16
    y = tawa.torch.linear(x, w, bias, activation="gelu_tanh", residual=r)
    y = tawa.torch.rms_norm(x, weight)                # also layer_norm, add_rms_norm
    qk = tawa.torch.rotary(qkv, cos, sin, heads=H + Hkv)

`attention_fp8` takes per-tensor scales (q_scale, k_scale, v_scale: the
tensors are q_scale·q8, ...) and transposes v into a padded buffer each call.

Each is a `torch.library` operator (`torch.ops.tawa.matmul`,
`torch.ops.tawa.attention`, ..., `torch.ops.tawa.rotary`) with fake
implementations, so they work inside `torch.compile`d models (as opaque
calls) and in CUDA graphs.  matmul, attention (head dims 64 and 128),
linear and gated_mlp have backward passes (`tawa.torch.grads`; docs/runtime.md,
"Autograd"); the others are forward only.  An
eager call on plain tensors (every operator but attention_fp8) runs the
operator's implementation without the dispatcher, and a call on tensors laid out like an earlier call's reuses
its checked launch (`tawa.torch.calls`).

`import tawa` never imports torch; `import tawa.torch` does, and registers
the operators, when torch ≥ 2.5 is installed.  Without it the import still
succeeds (the argument checks in `tawa.torch.checks` need no torch) and the
operators raise ImportError saying why.
"""

from __future__ import annotations

from typing import Any

from tawa.torch import checks, kernels

MIN_TORCH = (2, 5)
"""torch.library.infer_schema (with register_fake, which `tawa.torch.library`
registers the operators with) arrived in torch 2.5."""


def _torch_problem() -> str | None:
    """Why the operators cannot be registered here, or None."""
    try:
        import torch
    except ImportError as err:
        return f"tawa.torch needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (pip install torch): {err}"
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())
    lib = torch.library
    if version < MIN_TORCH or not (hasattr(lib, "infer_schema") and hasattr(lib, "register_fake")):
        return (
            f"tawa.torch needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (torch.library.infer_schema, "
            f"register_fake); found torch {torch.__version__}"
        )
    return None


UNAVAILABLE = _torch_problem()
"""Why the operators are unavailable, or None when they are registered."""

if UNAVAILABLE is None:
    from tawa.torch import calls as _calls
    from tawa.torch import grads as _grads
    from tawa.torch import ops as _ops  # registers tawa::matmul, tawa::attention, tawa::attention_fp8


def _require() -> None:
    if UNAVAILABLE is not None:
        raise ImportError(UNAVAILABLE)


def matmul(a: Any, b: Any, *, transpose_b: bool = False) -> Any:
    """a [..., M, K] · b [K, N], or a · bᵀ for b [N, K] with `transpose_b`;
    bf16 or f16 (one dtype), f32 accumulation, a new [..., M, N] tensor of
    a's dtype.  K must be a multiple of 8 (16-byte rows for TMA); any
    layout of b is read (in place when row-major [K, N] or [N, K], else
    copied), and a is copied unless dense and 16-byte aligned."""
    _require()
    route = _calls.route(a, b)  # the implementation or the autograd function without the dispatcher
    if route is _calls.IMPLEMENTATION:
        return _calls.matmul(a, b, transpose_b)
    if route is _calls.FUNCTION:
        return _grads.Matmul.apply(a, b, transpose_b)
    return _ops.matmul(a, b, transpose_b)


def attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """softmax(q·kᵀ·scale)·v for bf16 q [B, H, S, D] and k, v [B, Hkv, Sk, D],
    D in 64, 128, 256: query head h attends with key/value head
    h // (H / Hkv) (grouped-query attention; H a multiple of Hkv), and
    `causal` masks key j for query i when j > i + Sk - S (aligned
    bottom-right, Sk >= S: torch's `is_causal` where S = Sk).  `scale`
    defaults to 1/√D (a given one must be positive).  Views a tensor map
    describes (the permuted output of a fused QKV projection, [B, S, H, D]
    transposed) are read in place, others copied; the new [B, H, S, D]
    output is a transposed [B, S, H, D] tensor when q is one, else dense
    (docs/runtime.md, "Attention layouts")."""
    _require()
    plain = isinstance(causal, bool) and (scale is None or type(scale) in (int, float))
    route = _calls.route(q, k, v) if plain else _calls.DISPATCHER
    if route is _calls.IMPLEMENTATION:
        return _calls.attention(q, k, v, causal, None if scale is None else float(scale))
    if route is _calls.FUNCTION:
        return _grads.Attention.apply(q, k, v, causal, None if scale is None else float(scale))
    return _ops.attention(q, k, v, causal, scale)


def attention_fp8(
    q: Any,
    k: Any,
    v: Any,
    causal: bool = False,
    scale: float | None = None,
    q_scale: float = 1.0,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
    v_transposed: bool = False,
) -> Any:
    """v_scale·softmax((q_scale·q)·(k_scale·k)ᵀ·scale)·v, masked causally
    with `causal`, for float8_e4m3fn q, k, v of one shape [B, H, S, 128]
    (per-tensor scales: q_scale·q is the tensor q quantizes); `scale`
    defaults to 1/√128.  Every scale must be a positive finite float.  A new
    dense bf16 [B, H, S, 128] tensor.  The kernel takes Vᵀ: v is transposed
    into a fresh zero-padded [B·H, 128, S rounded up to 16] buffer each call,
    unless `v_transposed` says v is given as Vᵀ [B, H, 128, S], which is read
    in place when dense, 16-byte aligned and S a multiple of 16 (the fast
    path: the transpose costs more than the kernel on short sequences);
    non-dense or misaligned q, k are copied first."""
    _require()
    scale, q_scale, k_scale, v_scale = checks.fp8_scales(scale, q_scale, k_scale, v_scale)
    return _ops.attention_fp8(q, k, v, causal, scale, q_scale, k_scale, v_scale, v_transposed)


__all__ = ["UNAVAILABLE", "attention", "attention_fp8", "checks", "kernels", "matmul"]


# --------------------------------------------------------------------------- fused linear operators

from tawa.torch import linear_checks  # noqa: E402  (no torch needed)

if UNAVAILABLE is None:
    from tawa.torch import linear_ops as _linear_ops  # registers tawa::linear, tawa::gated_mlp


def linear(x: Any, w: Any, bias: Any = None, activation: str | None = None, residual: Any = None) -> Any:
    """activation(x · wᵀ + bias) + residual in one kernel: x [..., K], w [N, K]
    (an nn.Linear weight), bias [N], residual [..., N], all bf16 or all f16;
    `activation` None, "gelu_tanh", "silu" or "relu", applied in f32.  A new
    [..., N] tensor of x's dtype.  K must be a multiple of 8; operands a
    tensor map cannot read (x, w) or whose rows are not contiguous and evenly
    spaced (bias, residual) are copied (docs/runtime.md, "Fused linear operators")."""
    _require()
    linear_checks.check_activation("linear", activation)
    tensors = [t for t in (x, w, bias, residual) if t is not None]
    route = _calls.route(*tensors)
    if route is _calls.IMPLEMENTATION:
        return _linear_ops.linear_impl(x, w, bias, activation, residual)
    if route is _calls.FUNCTION:
        return _grads.Linear.apply(x, w, bias, activation, residual)
    return _linear_ops.linear(x, w, bias, activation, residual)


def gated_mlp(x: Any, w_gate: Any, w_up: Any, activation: str = "silu") -> Any:
    """activation(x · w_gateᵀ) · (x · w_upᵀ) in one kernel (SwiGLU with the
    default "silu"; GeGLU with "gelu_tanh"): x [..., K], w_gate and w_up
    [N, K], all bf16 or all f16; both products accumulate in f32 side by
    side and are never stored.  A new [..., N] tensor of x's dtype."""
    _require()
    linear_checks.check_activation("gated_mlp", activation, allow_none=False)
    route = _calls.route(x, w_gate, w_up)
    if route is _calls.IMPLEMENTATION:
        return _linear_ops.gated_mlp_impl(x, w_gate, w_up, activation)
    if route is _calls.FUNCTION:
        return _grads.GatedMlp.apply(x, w_gate, w_up, activation)
    return _linear_ops.gated_mlp(x, w_gate, w_up, activation)


__all__ += ["gated_mlp", "linear", "linear_checks"]


# --------------------------------------------------------------------------- scaled fp8 GEMM

from tawa.torch import fp8_checks  # noqa: E402  (no torch needed)

if UNAVAILABLE is None:
    from tawa.torch import fp8_ops as _fp8_ops  # registers tawa::matmul_fp8


def matmul_fp8(a: Any, b: Any, scale_a: Any, scale_b: Any, out_dtype: Any = None) -> Any:
    """scale_a · scale_b · (a · b) for fp8 a [M, K] and b [K, N] (e4m3 or
    e5m2), f32 accumulation, a new [M, N] tensor of `out_dtype` (bf16 by
    default; f16, f32): what `torch._scaled_mm(a, b, scale_a, scale_b,
    out_dtype=...)` computes.  Scales are float32 tensors, per tensor (one
    element) or per row (scale_a [M, 1], scale_b [1, N]); the kernel reads
    them on the device.  K must be a multiple of 16; b is read in place where
    it is the transpose of a row-major [N, K] (as `torch._scaled_mm` takes
    it), else copied.  No backward pass (docs/runtime.md, "Scaled fp8 GEMM")."""
    _require()
    if _calls.eager(a, b, scale_a, scale_b):
        return _fp8_ops.matmul_fp8_impl(a, b, scale_a, scale_b, out_dtype)
    return _fp8_ops.matmul_fp8(a, b, scale_a, scale_b, out_dtype)


__all__ += ["fp8_checks", "matmul_fp8"]


# --------------------------------------------------------------------------- normalization

from tawa.torch import norm_checks  # noqa: E402  (no torch needed)

if UNAVAILABLE is None:
    from tawa.torch import norm_ops as _norm_ops  # registers the norms, rotary and swiglu_grad


def _norm_tensors(op: str, **tensors: Any) -> list[Any]:
    """The given tensors; a missing one is a one-line TypeError naming it."""
    for name, t in tensors.items():
        if t is None:
            raise TypeError(f"tawa.torch.{op}: {name} must be a tensor, got None")
    return list(tensors.values())


def rms_norm(x: Any, weight: Any, eps: float = 1e-6) -> Any:
    """x / √(mean(x²) + eps) · weight over x's last dimension, N: x [..., N]
    and weight [N] bf16, f32 math, one kernel (any N; x is read in place
    when its rows are contiguous and evenly spaced, a column slice included,
    else copied).  A new tensor of x's shape (docs/runtime.md,
    "Normalization and rotary operators")."""
    _require()
    tensors = _norm_tensors("rms_norm", x=x, weight=weight)
    eps = norm_checks.check_eps("rms_norm", eps)
    if _calls.eager(*tensors):
        return _norm_ops.rms_norm_impl(x, weight, eps)
    return _norm_ops.rms_norm(x, weight, eps)


def layer_norm(x: Any, weight: Any, bias: Any, eps: float = 1e-5) -> Any:
    """(x − mean) / √(var + eps) · weight + bias over x's last dimension
    (biased variance, as `F.layer_norm`): x [..., N], weight and bias [N],
    bf16, f32 math, one kernel.  A new tensor of x's shape."""
    _require()
    tensors = _norm_tensors("layer_norm", x=x, weight=weight, bias=bias)
    eps = norm_checks.check_eps("layer_norm", eps)
    if _calls.eager(*tensors):
        return _norm_ops.layer_norm_impl(x, weight, bias, eps)
    return _norm_ops.layer_norm(x, weight, bias, eps)


def add_rms_norm(x: Any, residual: Any, weight: Any, eps: float = 1e-6) -> tuple[Any, Any]:
    """(rms_norm(s, weight, eps), s) for s = x + residual, in one kernel that
    reads x and residual once: the normalized tensor and the new residual
    stream (s rounded to bf16 before it is normalized, as torch computes
    `rms_norm(x + residual)` in bf16).  x and residual of one shape [..., N]."""
    _require()
    tensors = _norm_tensors("add_rms_norm", x=x, residual=residual, weight=weight)
    eps = norm_checks.check_eps("add_rms_norm", eps)
    if _calls.eager(*tensors):
        return _norm_ops.add_rms_norm_impl(x, residual, weight, eps)
    return _norm_ops.add_rms_norm(x, residual, weight, eps)


__all__ += ["add_rms_norm", "layer_norm", "norm_checks", "rms_norm"]


def rotary(x: Any, cos: Any, sin: Any, heads: int | None = None) -> Any:
    """The rotary embedding of the first `heads` heads of x [..., S, W]
    (default: all W / D), each head D channels, in rotate-half pairs (Llama's
    convention): for channel j < D/2 of a head at position s,
    y[j] = x[j]·cos[s, j] − x[j + D/2]·sin[s, j] and
    y[j + D/2] = x[j + D/2]·cos[s, j + D/2] + x[j]·sin[s, j + D/2];
    cos and sin [S, D], bf16, f32 math, one kernel.  A new [..., S, heads·D]
    tensor.  The rows of a fused QKV projection [B, S, (H + 2·Hkv)·D] with
    heads = H + Hkv give q and k rotated side by side, v left where it is
    (docs/runtime.md, "Normalization and rotary operators")."""
    _require()
    tensors = _norm_tensors("rotary", x=x, cos=cos, sin=sin)
    if _calls.eager(*tensors):
        return _norm_ops.rotary_impl(x, cos, sin, heads)
    return _norm_ops.rotary(x, cos, sin, heads)


__all__ += ["rotary"]
