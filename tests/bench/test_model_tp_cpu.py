"""`python -m tawa.bench model --tp N` without GPUs: the split of each
model's weights and its row-parallel layers, run by N threads that sum
their partial products through a stand-in all-reduce, against the whole
model; the CLI's refusals."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from tawa.bench import model

torch = pytest.importorskip("torch", reason="the model benchmark's CPU tests need torch (CPU build is enough)")

from test_model_cpu import GPT2, LLAMA, rel, tiny_model  # noqa: E402

from tawa.bench import model_nets as nets  # noqa: E402 (needs torch)
from tawa.bench import model_ops, model_tp  # noqa: E402


class StandInAllReduce:
    """`dist.all_reduce` for `world` threads: each adds its tensor into a
    shared sum; all get the sum back."""

    def __init__(self, world):
        self.barrier, self.sum, self.calls = threading.Barrier(world), None, 0

    def __call__(self, t, group=None):
        if self.barrier.wait() == 0:
            self.sum, self.calls = torch.zeros_like(t), self.calls + 1
        self.barrier.wait()
        self._add(t)
        self.barrier.wait()
        t.copy_(self.sum)
        self.barrier.wait()

    _lock = threading.Lock()

    def _add(self, t):
        with self._lock:
            self.sum += t


@pytest.mark.parametrize("cfg, world", [(GPT2, 2), (GPT2, 4), (LLAMA, 2), (replace(LLAMA, kv_heads=4), 2),
                                        (replace(LLAMA, kv_heads=4), 4)],
                         ids=["gpt2-2", "gpt2-4", "llama-gqa2-2", "llama-mha-2", "llama-mha-4"])
def test_split_model_equals_the_whole(cfg, world, monkeypatch):
    import torch.distributed as dist

    reduce = StandInAllReduce(world)
    monkeypatch.setattr(dist, "all_reduce", reduce)
    layers, final, x, rope = tiny_model(cfg)
    whole = nets.forward(cfg, model_ops.torch_ops(), layers, final, x, rope)
    outs = [None] * world

    def rank(r):
        tp = model_tp.TensorParallel(r, world)
        shards = [tp.shard(cfg, w) for w in layers]
        outs[r] = nets.forward(tp.config(cfg), tp.ops(model_ops.torch_ops()), shards, final, x, rope)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for out in outs:
        assert rel(out, whole) < 1e-5
    assert reduce.calls == 2 * cfg.layers  # the output projection and the MLP's last layer


def test_shards_hold_this_ranks_heads():
    cfg = LLAMA  # 4 query heads, 2 KV heads of 8
    layers, *_ = tiny_model(cfg)
    w = layers[0]
    s = model_tp.TensorParallel(1, 2).shard(cfg, w)
    assert torch.equal(s["w_qkv"], torch.cat([w["w_qkv"][16:32], w["w_qkv"][40:48], w["w_qkv"][56:64]]))
    assert torch.equal(s["w_o"], w["w_o"][:, 16:32]) and torch.equal(s["w_gate"], w["w_gate"][24:48])
    assert torch.equal(s["w_down"], w["w_down"][:, 24:48]) and torch.equal(s["attn_norm"], w["attn_norm"])
    assert model_tp.TensorParallel(1, 2).config(cfg) == replace(cfg, heads=2, kv_heads=1, hidden=24)
    with pytest.raises(ValueError, match="kv_heads = 2 do not split over 4 GPUs"):
        model_tp.TensorParallel(0, 4).config(cfg)


def test_a_row_parallel_layer_takes_no_activation(monkeypatch):
    ops = model_tp.TensorParallel(0, 2).ops(model_ops.torch_ops())
    with pytest.raises(ValueError, match="row-parallel"):
        ops.linear(torch.ones(2, 4), torch.ones(4, 4), activation="relu", residual=torch.ones(2, 4))
    assert "tensor-parallel over 2 GPUs" in ops.notes["linear"]


def test_tp_refuses_compile_mode(capsys):
    assert model.main(["--tp", "2", "--modes", "compile,graph"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tp runs the modes eager, graph, not compile" in err
