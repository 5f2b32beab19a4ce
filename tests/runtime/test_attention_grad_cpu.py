"""`tawa::attention_bwd` on both dQ paths without a GPU (docs/runtime.md,
"Autograd"): the training kernels of examples/python/attention_bwd.py run
by the CPU interpreter on CPU tensors (tests/runtime/test_autograd_cpu.py's
`kernels_on_cpu`), against torch autograd of float32 attention.

* "kernel": Delta, the dK/dV kernel, the dQ kernel;
* "atomic": Delta, the dK/dV kernel that adds dQᵀ into a zeroed f32 buffer,
  the conversion to bf16 (`attention_bwd_kernels.dq_path` switches).

Grouped-query heads take no copies: every kernel gets k and v as given
(their data pointers), the dK/dV kernels one program per key/value head.
"""

from __future__ import annotations

import math

import pytest
from test_autograd_cpu import attention_reference, close, kernels_on_cpu, leaves, torch  # noqa: F401

import tawa.torch as tt
from tawa.torch import attention_bwd_kernels as abk


def _case(path, D, causal, H, Hkv, S, SK, slow=False):
    label = f"{path}-d{D}-{'causal' if causal else 'full'}-{H}on{Hkv}-{S}x{SK}"
    return pytest.param(path, D, causal, H, Hkv, S, SK, id=label, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("path, D, causal, H, Hkv, S, SK", [
    _case("atomic", 64, True, 2, 2, 70, 100, slow=True),
    _case("atomic", 64, False, 4, 1, 70, 100),  # 4 query heads per key/value head
    _case("kernel", 64, True, 4, 1, 50, 80),
    _case("kernel", 128, False, 4, 2, 65, 130, slow=True),
    _case("atomic", 128, True, 4, 2, 65, 130, slow=True),
])
def test_gradients_on_each_path(torch, kernels_on_cpu, seed, path, D, causal, H, Hkv, S, SK):  # noqa: F811
    g = torch.Generator().manual_seed(seed)
    B = 1
    (q, k, v), (qf, kf, vf) = leaves(torch, *(torch.randn(B, h, n, D, generator=g)
                                              for h, n in ((H, S), (Hkv, SK), (Hkv, SK))))
    do = torch.randn(B, H, S, D, generator=g).to(torch.bfloat16)
    with abk.dq_path(path):
        o = tt.attention(q, k, v, causal=causal)
        o.backward(do)
    assert abk.DQ_PATH == "kernel"  # switched back
    scale = 1 / math.sqrt(D)
    ref = attention_reference(torch, qf, kf, vf, scale, causal)
    ref.backward(do.float())
    for name, got, want in (("dQ", q.grad, qf.grad), ("dK", k.grad, kf.grad), ("dV", v.grad, vf.grad)):
        assert got.shape == want.shape and got.dtype == torch.bfloat16
        close(torch, got, want, name)
    launches = kernels_on_cpu["attention"]
    assert [name for name, *_ in launches] == [abk.FWD, *abk.PATH_KERNELS[path]]
    (_, _, _, _), _, (dkdv, values, grid, args), (last, _, last_grid, last_args) = launches
    group = H // Hkv
    # k and v as given, however grouped; one dK/dV program per key block of a key/value head.
    assert args[1].data_ptr() == k.data_ptr() and args[2].data_ptr() == v.data_ptr()
    assert args[1].shape == (B, Hkv, SK, D)
    assert grid == (-(-SK // values["BLOCK_N"]), Hkv, B) and args[-4:] == (S, SK, scale, group)
    if path == "kernel":
        assert last_grid == (-(-S // 128), H, B) and last_args[-4:] == (S, SK, scale, group)
    else:
        dq_sum = args[8]
        assert dq_sum.dtype == torch.float32 and dq_sum.shape == (B, H, D, S)  # dQᵀ's sum
        assert last_args[0] is dq_sum and last_grid == (-(-S // 64), H, B) and last_args[2] == scale


def test_an_unknown_path_is_refused():
    with pytest.raises(ValueError, match="no dQ path 'fast'; known: kernel, atomic"):
        with abk.dq_path("fast"):
            pass
    assert abk.DQ_PATH == "kernel"


def test_a_layout_seen_before_is_not_checked_again(torch, kernels_on_cpu, monkeypatch):  # noqa: F811
    """A training step's new tensors of the same layouts: the second step runs
    the same kernels on its own tensors without checking again (the checks'
    decisions are remembered per layout); another layout is checked."""
    from tawa.torch import attention_grad, checks

    checked = []
    check = checks.check_attention
    monkeypatch.setattr(checks, "check_attention", lambda *a, **kw: checked.append(a) or check(*a, **kw))
    B, H, S, D = 1, 2, 40, 64

    def step(S):
        (q, k, v), _ = leaves(torch, *(torch.randn(B, H, S, D) for _ in range(3)))
        tt.attention(q, k, v, causal=True).backward(torch.randn(B, H, S, D).to(torch.bfloat16))
        return q, k, v

    step(S)
    assert len(checked) == 2  # the forward's and the backward's
    launches = kernels_on_cpu["attention"]
    del launches[:]
    q, k, v = step(S)
    assert len(checked) == 2 and [name for name, *_ in launches] == [abk.FWD, abk.PRE, abk.DKDV, abk.DQ]
    assert [a.data_ptr() for a in launches[2][3][:3]] == [t.data_ptr() for t in (q, k, v)]
    assert q.grad is not None and k.grad is not None and v.grad is not None
    step(S + 8)
    assert len(checked) == 4
    # An error is not remembered: the same bad call is refused every time.
    bad = torch.zeros(B, H, S, 96, dtype=torch.bfloat16)
    for _ in range(2):
        with pytest.raises(ValueError, match="head dim"):
            attention_grad.attention_fwd_lse_impl(bad, bad, bad, False, None)
