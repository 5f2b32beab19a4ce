"""GEMMs that read A transposed in place (`GemmConfig.a_layout="km"`,
wgmma's MN-major A) on a Hopper GPU.

- Generated configurations in all four layouts (A M×K or K×M, B N×K or
  K×N), 64- and 128-row warp groups, split-K, bf16 and f16, on ragged
  shapes, C poisoned with NaN and a sentinel after it (`run_poisoned`).
- `tawa.torch.matmul(dy.t(), b)`: A the transpose of a row-major [K, M]
  is read in place by the "_at" kernels (no copy), in both B layouts, the
  output a NaN-poisoned block; an A neither layout describes is copied.
- The linear backward: dW = dY'ᵀ·X (and gated_mlp's dW_gate, dW_up) runs
  on the "_at" kernels against float32 references, pools poisoned.

Run: `pytest -m gpu tests/runtime/test_matmul_a_layout_gpu.py` on an H100.
"""

from __future__ import annotations

import pytest
from gemm_poisoned import run_poisoned
from test_autograd_gpu import check_grad, poison_pools, randn, twins
from test_torch_gpu import check_output, poison_next, rel_err

import tawa.torch as tt
from tawa.kernels.gemm import GemmConfig
from tawa.runtime.autotune import Choice

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch(cuda):
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


CHOICES = [
    Choice(GemmConfig(128, 256, 64, a_layout="km")),
    Choice(GemmConfig(128, 256, 64, a_layout="km", b_layout="kn")),
    Choice(GemmConfig(128, 128, 64, a_layout="mk", b_layout="kn")),
    Choice(GemmConfig(128, 128, 64, a_layout="mk")),
    Choice(GemmConfig(64, 128, 64, "f16", "f16", "f16", a_layout="km")),
    Choice(GemmConfig(256, 128, 64, a_layout="km"), group_rows=128),
    Choice(GemmConfig(64, 256, 64, a_layout="km", split_k=4)),
    Choice(GemmConfig(128, 128, 64, a_layout="km", b_layout="kn", split_k=2)),
]
SHAPES = [(200, 136, 264), (1000, 1000, 1032), (64, 72, 8)]
"""Ragged M and N (multiples of 8: A's K×M rows must be 16 bytes), K ragged and short."""


@pytest.mark.parametrize("M, N, K", SHAPES, ids=str)
@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: f"{c.config.id}-rows{c.group_rows}")
def test_generated_layouts(torch, seed, choice, M, N, K):
    run_poisoned(torch, choice, M, N, K, seed)


def _last_call():
    """The call the last matmul made (the tests forget the calls first)."""
    from tawa.torch import calls

    return next(reversed(calls._MATMUL.values()))


def _forget():
    from tawa.torch import calls

    calls.forget()


@pytest.mark.parametrize("b_kn", [True, False], ids=["b_kn", "b_nk"])
@pytest.mark.parametrize("M, N, K", [(264, 200, 1000), (768, 3072, 8192), (8, 64, 24)], ids=str)
def test_matmul_reads_a_transposed_a_in_place(torch, seed, b_kn, M, N, K):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dy = randn(torch, g, K, M)  # [K, M]: A = dyᵀ
    b = randn(torch, g, K, N) if b_kn else randn(torch, g, N, K).t()
    _forget()
    ptr = poison_next(torch, (M, N), torch.bfloat16)
    c = tt.matmul(dy.t(), b)
    check_output(torch, c, ptr)
    call = _last_call()
    assert call.a_transposed and not call.copy_a and not call.copy_b
    err = rel_err(c, dy.float().T @ b.float())
    assert err <= 1e-2, f"relative error {err:.3g}"


def test_matmul_copies_an_a_neither_layout_describes(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = randn(torch, g, 256, 400)[:, ::2].t()  # [200, 256], strides (2, 400)
    b = randn(torch, g, 256, 136)
    _forget()
    ptr = poison_next(torch, (200, 136), torch.bfloat16)
    c = tt.matmul(a, b)
    check_output(torch, c, ptr)
    call = _last_call()
    assert call.copy_a and not call.a_transposed
    assert rel_err(c, a.float() @ b.float()) <= 1e-2


@pytest.mark.parametrize("lead, N, K", [((1000,), 264, 200), ((3, 333), 1032, 768), ((8, 1024), 768, 768)], ids=str)
def test_linear_weight_gradient_on_the_at_kernels(torch, seed, lead, N, K):
    g = torch.Generator(device="cuda").manual_seed(seed)
    (x, w), (xf, wf) = twins(torch, randn(torch, g, *lead, K), randn(torch, g, N, K, scale=K**-0.5))
    dy = randn(torch, g, *lead, N)
    from tawa.torch import calls

    calls.forget()
    poison_pools(torch)
    y = tt.linear(x, w, None, "gelu_tanh")
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    act = torch.nn.functional.gelu(xf @ wf.T, approximate="tanh")
    act.backward(dy.float())
    check_grad(torch, "dX", x.grad, xf.grad, x.shape)
    check_grad(torch, "dW", w.grad, wf.grad, w.shape)
    # dW = dY'ᵀ·X ran on an "_at" kernel with dY'ᵀ read in place.
    assert any(c.a_transposed and not c.copy_a for c in calls._MATMUL.values())


def test_gated_mlp_weight_gradients_on_the_at_kernels(torch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    K, N = 256, 688
    (x, wg, wu), (xf, wgf, wuf) = twins(torch, randn(torch, g, 2, 150, K),
                                        *(randn(torch, g, N, K, scale=K**-0.5) for _ in range(2)))
    dy = randn(torch, g, 2, 150, N)
    from tawa.torch import calls

    calls.forget()
    poison_pools(torch)
    y = tt.gated_mlp(x, wg, wu, "silu")
    poison_pools(torch)
    y.backward(dy)
    torch.cuda.synchronize()
    (torch.nn.functional.silu(xf @ wgf.T) * (xf @ wuf.T)).backward(dy.float())
    for name, t, tf in (("dX", x, xf), ("dW_gate", wg, wgf), ("dW_up", wu, wuf)):
        check_grad(torch, name, t.grad, tf.grad, t.shape)
    assert sum(c.a_transposed and not c.copy_a for c in calls._MATMUL.values()) >= 1
