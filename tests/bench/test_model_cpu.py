"""`python -m tawa.bench model` without a GPU: the transformers against a
float32 reference written here, the ops tables (which tawa operators are
used, with stand-in modules), a row's warm-up, check and timing on the CPU,
the CLI's errors, and the table, geomeans and JSON from fake timings."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest

from tawa.bench import __main__ as bench_main
from tawa.bench import model
from tawa.bench.plot import check_spec, ratios

torch = pytest.importorskip("torch", reason="the model benchmark's CPU tests need torch (CPU build is enough)")

from tawa.bench import model_nets as nets  # noqa: E402 (needs torch)
from tawa.bench import model_ops, model_run  # noqa: E402

GPT2 = nets.ModelConfig("gpt2-tiny", "gpt2", width=32, heads=4, kv_heads=4, head_dim=8, layers=2, hidden=128)
LLAMA = nets.ModelConfig("llama-tiny", "llama", width=32, heads=4, kv_heads=2, head_dim=8, layers=2, hidden=48)


def tiny_model(cfg, batch=2, seq=7, dtype=torch.float32, seed=0):
    """Weights and input of `cfg`; the QKV projection scaled up so attention
    is far from uniform (a mask or rotary slip then shows)."""
    g = torch.Generator().manual_seed(seed)
    layers, final = nets.init_weights(cfg, dtype=dtype, generator=g)
    for w in layers:
        w["w_qkv"] *= 25
    x = nets.embedded_tokens(cfg, batch, seq, dtype=dtype, generator=g) * 50
    rope = nets.rope_tables(cfg, seq, dtype=dtype) if cfg.family == "llama" else None
    return layers, final, x, rope


def rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


# --------------------------------------------------------------------------- an independent float64 reference


def ref_layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def ref_rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def ref_gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def ref_silu(x):
    return x / (1 + torch.exp(-x))


def ref_rope(x, base):
    """x [B, S, H, D] rotated: channel i and i + D/2 as one complex number,
    turned by position·base^(-2i/D)."""
    B, S, H, D = x.shape
    half = D // 2
    z = torch.complex(x[..., :half], x[..., half:])
    theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / D)
    turn = torch.polar(torch.ones(S, half, dtype=torch.float64), torch.arange(S, dtype=torch.float64)[:, None] * theta)
    z = z * turn[None, :, None, :]
    return torch.cat([z.real, z.imag], dim=-1)


def ref_attention(q, k, v):
    """Causal softmax attention, head by head: q [B, S, H, D], k, v [B, S, Hkv, D]."""
    B, S, H, D = q.shape
    group = H // k.shape[2]
    out = torch.empty_like(q)
    for b in range(B):
        for h in range(H):
            scores = q[b, :, h] @ k[b, :, h // group].T / math.sqrt(D)
            for i in range(S):
                row = scores[i, : i + 1]
                p = torch.exp(row - row.max())
                out[b, i, h] = (p / p.sum()) @ v[b, : i + 1, h // group]
    return out


def ref_model(cfg, layers, final, x):
    x = x.double()
    H, Hkv, D = cfg.heads, cfg.kv_heads, cfg.head_dim
    B, S, _ = x.shape
    for w in (dict((k, t.double()) for k, t in layer.items()) for layer in layers):
        norm = ((lambda t, name: ref_layer_norm(t, w[name + "_w"], w[name + "_b"], cfg.eps))
                if cfg.family == "gpt2" else (lambda t, name: ref_rms_norm(t, w[name], cfg.eps)))
        h = norm(x, "ln1" if cfg.family == "gpt2" else "attn_norm")
        wq, wk, wv = w["w_qkv"].split([H * D, Hkv * D, Hkv * D])
        bq, bk, bv = w["b_qkv"].split([H * D, Hkv * D, Hkv * D]) if "b_qkv" in w else (0, 0, 0)
        q = (h @ wq.T + bq).view(B, S, H, D)
        k = (h @ wk.T + bk).view(B, S, Hkv, D)
        v = (h @ wv.T + bv).view(B, S, Hkv, D)
        if cfg.family == "llama":
            q, k = ref_rope(q, cfg.rope_base), ref_rope(k, cfg.rope_base)
        o = ref_attention(q, k, v).reshape(B, S, H * D)
        x = x + o @ w["w_o"].T + w.get("b_o", 0)
        h = norm(x, "ln2" if cfg.family == "gpt2" else "mlp_norm")
        if cfg.family == "gpt2":
            x = x + ref_gelu_tanh(h @ w["w_fc"].T + w["b_fc"]) @ w["w_proj"].T + w["b_proj"]
        else:
            x = x + (ref_silu(h @ w["w_gate"].T) * (h @ w["w_up"].T)) @ w["w_down"].T
    f = {k: t.double() for k, t in final.items()}
    return ref_layer_norm(x, f["w"], f["b"], cfg.eps) if cfg.family == "gpt2" else ref_rms_norm(x, f["w"], cfg.eps)


@pytest.mark.parametrize("cfg", [GPT2, LLAMA, replace(LLAMA, kv_heads=1), replace(LLAMA, kv_heads=4)],
                         ids=["gpt2", "llama-gqa2", "llama-mqa", "llama-mha"])
def test_models_with_torch_ops_match_the_reference(cfg):
    layers, final, x, rope = tiny_model(cfg)
    out = nets.forward(cfg, model_ops.torch_ops(), layers, final, x, rope)
    assert out.shape == x.shape and out.dtype == torch.float32
    assert rel(out, ref_model(cfg, layers, final, x)) < 1e-5


def test_the_reference_tells_a_wrong_model():
    """The check has teeth: attention without the mask, or without rotary
    embeddings, is far from the reference."""
    layers, final, x, rope = tiny_model(LLAMA)
    ref = ref_model(LLAMA, layers, final, x)
    torch_ops = model_ops.torch_ops()
    unmasked = replace(torch_ops, attention=lambda q, k, v, causal, scale: torch_ops.attention(q, k, v, False, scale))
    unrotated = replace(torch_ops, rotary=lambda x, cos, sin, heads: x[..., : heads * cos.shape[-1]])
    for wrong in (unmasked, unrotated):
        assert rel(nets.forward(LLAMA, wrong, layers, final, x, rope), ref) > 1e-2


def test_bf16_model_and_float32_reference_helper():
    layers, final, x, rope = tiny_model(GPT2, dtype=torch.bfloat16)
    out = nets.forward(GPT2, model_ops.torch_ops(), layers, final, x, rope)
    ref = model_run.float32_reference(GPT2, layers, final, x, rope)
    assert out.dtype == torch.bfloat16 and ref.dtype == torch.float32
    assert rel(ref, ref_model(GPT2, layers, final, x)) < 1e-5
    assert 0 < model_run.relative_error(out, ref) < model_run.TOLERANCE


def test_qkv_views_and_merged_heads():
    qkv = torch.randn(2, 5, (4 + 2 * 2) * 8)
    q, k, v = nets.split_heads(qkv, LLAMA)
    assert q.shape == (2, 4, 5, 8) and k.shape == v.shape == (2, 2, 5, 8)
    assert all(t.data_ptr() >= qkv.data_ptr() and t._base is qkv for t in (q, k, v))  # views, no copy
    assert torch.equal(v[1, 1, 3], qkv[1, 3, (4 + 2 + 1) * 8 : (4 + 2 + 2) * 8])
    o = torch.randn(2, 5, 4, 8).transpose(1, 2)  # laid out [B, S, H, D]
    assert nets.merge_heads(o).data_ptr() == o.data_ptr()
    assert torch.equal(nets.merge_heads(o.contiguous()), o.transpose(1, 2).reshape(2, 5, 32))


def test_models_of_the_benchmark():
    assert tuple(nets.MODELS) == model.DEFAULT_MODELS
    gpt2, wide, llama = (nets.MODELS[n] for n in model.DEFAULT_MODELS)
    assert (gpt2.width, gpt2.heads, gpt2.head_dim, gpt2.layers, gpt2.hidden) == (1024, 16, 64, 24, 4096)
    assert (wide.width, wide.heads, wide.head_dim, wide.hidden) == (2048, 32, 64, 8192)
    assert (llama.width, llama.heads, llama.kv_heads, llama.head_dim, llama.hidden) == (4096, 32, 8, 128, 14336)
    assert llama.with_layers(2).layers == 2 and llama.with_layers(None) is llama


# --------------------------------------------------------------------------- ops tables


class StandInTawa(SimpleNamespace):
    """A stand-in `tawa.torch`: float32 torch computations that record their calls."""

    def __init__(self, *, linear=False, gated_mlp=False, grouped_heads=False, **extra):
        super().__init__(**extra)
        self.calls = []
        self.matmul = self._matmul
        self.attention = self._attention
        self.grouped_heads = grouped_heads
        if linear:
            self.linear = self._linear
        if gated_mlp:
            self.gated_mlp = self._gated_mlp

    def _matmul(self, a, b, transpose_b=False):
        self.calls.append(("matmul", transpose_b))
        return a @ (b.T if transpose_b else b)

    def _linear(self, x, w, bias=None, activation=None, residual=None):
        self.calls.append(("linear", bias is not None, activation, residual is not None))
        return model_ops.epilogue(x @ w.T, bias, activation, residual)

    def _gated_mlp(self, x, w_gate, w_up):
        self.calls.append(("gated_mlp",))
        return torch.nn.functional.silu(x @ w_gate.T) * (x @ w_up.T)

    def _attention(self, q, k, v, causal=False, scale=None):
        if k.shape[1] != q.shape[1] and not self.grouped_heads:
            raise ValueError("tawa.torch.attention: q, k and v must have one shape")
        if q.device.type != "meta":  # the probe's calls are not the model's
            self.calls.append(("attention", q.shape[1], k.shape[1]))
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        s = (q @ k.transpose(-1, -2)) * (scale or 1 / math.sqrt(q.shape[-1]))
        if causal:
            n = q.shape[-2]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v


def test_tawa_table_today_uses_matmul_and_the_stand_ins():
    module = StandInTawa()
    ops = model_ops.tawa_ops(module)
    assert ops.notes["linear"].startswith("tawa.torch.matmul, then torch's") and "stand-in" in ops.notes["linear"]
    assert ops.notes["gated_mlp"] == "two tawa.torch.matmul, torch's silu and product (stand-in)"
    assert ops.notes["attention_gqa"].startswith("k, v expanded to q's heads by repeat_interleave")
    assert ops.notes["rms_norm"] == "F.rms_norm: no tawa operator"
    for cfg in (GPT2, LLAMA):
        module.calls.clear()
        layers, final, x, rope = tiny_model(cfg)
        out = nets.forward(cfg, ops, layers, final, x, rope)
        assert rel(out, nets.forward(cfg, model_ops.torch_ops(), layers, final, x, rope)) < 1e-5
        kinds = {c[0] for c in module.calls}
        assert kinds == {"matmul", "attention"}
        assert all(c[1] for c in module.calls if c[0] == "matmul")  # x·wᵀ as transpose_b
        assert {c[1:] for c in module.calls if c[0] == "attention"} == {(cfg.heads, cfg.heads)}  # k, v expanded
        assert ops.described(nets.USES[cfg.family]).keys() == set(nets.USES[cfg.family])


@pytest.mark.slow
def test_tawa_table_uses_the_fused_operators_when_present():
    module = StandInTawa(linear=True, gated_mlp=True, grouped_heads=True)
    ops = model_ops.tawa_ops(module)
    assert ops.notes["linear"] == "tawa.torch.linear (bias, activation and residual add in its epilogue)"
    assert ops.notes["gated_mlp"] == "tawa.torch.gated_mlp"
    assert ops.notes["attention_gqa"] == "tawa.torch.attention on k, v with fewer heads"
    assert not any("stand-in" in n for n in ops.notes.values())
    for cfg in (GPT2, LLAMA):
        module.calls.clear()
        layers, final, x, rope = tiny_model(cfg)
        out = nets.forward(cfg, ops, layers, final, x, rope)
        assert rel(out, nets.forward(cfg, model_ops.torch_ops(), layers, final, x, rope)) < 1e-5
        assert "matmul" not in {c[0] for c in module.calls}
        linears = [c[1:] for c in module.calls if c[0] == "linear"]
        assert {c[1:] for c in module.calls if c[0] == "attention"} == {(cfg.heads, cfg.kv_heads)}
        per_layer = cfg.layers
        if cfg.family == "gpt2":  # qkv; o + residual; fc + gelu; proj + residual: all with biases
            assert linears == [(True, None, False), (True, None, True), (True, "gelu_tanh", False),
                               (True, None, True)] * per_layer
        else:  # qkv; o + residual; gated MLP; down + residual
            assert linears == [(False, None, False), (False, None, True), (False, None, True)] * per_layer
            assert [c for c in module.calls if c[0] == "gated_mlp"] == [("gated_mlp",)] * per_layer


def test_tawa_table_with_linear_but_no_gated_mlp():
    module = StandInTawa(linear=True)
    ops = model_ops.tawa_ops(module)
    assert ops.notes["gated_mlp"].startswith("tawa.torch.linear with silu, tawa.torch.linear")
    layers, final, x, rope = tiny_model(LLAMA)
    out = nets.forward(LLAMA, ops, layers, final, x, rope)
    assert rel(out, nets.forward(LLAMA, model_ops.torch_ops(), layers, final, x, rope)) < 1e-5
    assert ("linear", False, "silu", False) in module.calls


def test_norms_are_called_when_present():
    def rms_norm(x, w, eps):
        return model_ops.torch_rms_norm(x, w, eps)

    def layer_norm(x, w, b, eps):
        return model_ops.torch_layer_norm(x, w, b, eps)

    ops = model_ops.tawa_ops(StandInTawa(rms_norm=rms_norm, layer_norm=layer_norm))
    assert (ops.notes["rms_norm"], ops.notes["layer_norm"]) == ("tawa.torch.rms_norm", "tawa.torch.layer_norm")
    assert ops.rms_norm is rms_norm and ops.layer_norm is layer_norm


def test_rotary_is_called_when_present():
    calls = []

    def rotary(x, cos, sin, heads):
        calls.append(heads)
        return model_ops.torch_rotary(x, cos, sin, heads)

    ops = model_ops.tawa_ops(StandInTawa(rotary=rotary))
    assert ops.notes["rotary"].startswith("tawa.torch.rotary") and ops.rotary is rotary
    layers, final, x, rope = tiny_model(LLAMA)
    out = nets.forward(LLAMA, ops, layers, final, x, rope)
    assert rel(out, nets.forward(LLAMA, model_ops.torch_ops(), layers, final, x, rope)) < 1e-5
    assert calls == [LLAMA.heads + LLAMA.kv_heads] * LLAMA.layers


def test_grouped_heads_probe():
    assert not model_ops.takes_grouped_heads(StandInTawa().attention)
    assert model_ops.takes_grouped_heads(StandInTawa(grouped_heads=True).attention)
    assert not model_ops.takes_grouped_heads(lambda q, k, v, causal, scale: q[:, :1])  # a wrong shape

    def refuses_meta(q, k, v, causal, scale):
        raise NotImplementedError("no meta kernel")
    assert not model_ops.takes_grouped_heads(refuses_meta)


def test_the_real_tawa_table_builds_without_a_gpu():
    import tawa.torch as tt

    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    ops = model_ops.tawa_ops()
    assert ops.name == "tawa"
    assert ("stand-in" in ops.notes["linear"]) == (not hasattr(tt, "linear"))
    assert ("stand-in" in ops.notes["gated_mlp"]) == (not hasattr(tt, "gated_mlp"))
    assert ("stand-in" in ops.notes["attention_gqa"]) == (not model_ops.takes_grouped_heads(tt.attention))


# --------------------------------------------------------------------------- a row on the CPU


@pytest.fixture
def cpu_timers(monkeypatch):
    """`measure` on the CPU: synchronize is a no-op, two rounds are fast."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(model_run, "ROUND_MS", 0.0)


@pytest.mark.parametrize("cfg", [GPT2, pytest.param(LLAMA, marks=pytest.mark.slow)], ids=["gpt2", "llama"])
def test_measure_checks_then_times_both_variants(cpu_timers, cfg):
    layers, final, x, rope = tiny_model(cfg, dtype=torch.bfloat16)
    ref = model_run.float32_reference(cfg, layers, final, x, rope)
    tables = {"tawa": model_ops.tawa_ops(StandInTawa()), "torch": model_ops.torch_ops()}
    row = model.Row(cfg.name, 2, 7, "eager")
    logged = []
    model_run.measure(row, cfg, tables, layers, final, x, rope, ref, 2, logged.append)
    assert row.correct, row.failure
    assert len(row.tawa_ms) == len(row.torch_ms) == 2 * model_run.MIN_ITERS
    assert all(t > 0 for t in row.tawa_ms + row.torch_ms)
    assert 0 < row.tawa_err_vs_f32 < model_run.TOLERANCE and 0 < row.torch_err_vs_f32 < model_run.TOLERANCE
    assert row.err_vs_torch < model_run.TOLERANCE
    assert [line.split(":")[1].split()[0] for line in logged] == ["tawa", "torch"]


def test_measure_fails_a_wrong_row_untimed(cpu_timers):
    layers, final, x, rope = tiny_model(GPT2, dtype=torch.bfloat16)
    torch_ops = model_ops.torch_ops()
    unmasked = replace(torch_ops, name="tawa",
                       attention=lambda q, k, v, causal, scale: torch_ops.attention(q, k, v, False, scale))
    row = model.Row("gpt2-tiny", 2, 7, "eager")
    model_run.measure(row, GPT2, {"tawa": unmasked, "torch": torch_ops}, layers, final, x, rope, None, 2,
                      lambda s: None)
    assert not row.correct and row.failure.startswith("relative error above 0.05: tawa vs torch")
    assert row.tawa_ms == row.torch_ms == []


@pytest.mark.slow
def test_measure_compiles_each_block(cpu_timers, monkeypatch):
    """The compile mode traces both tables' blocks (aot_eager here: no C++ compiler needed)."""
    monkeypatch.setattr(model_run, "COMPILE_OPTIONS", {"dynamic": False, "backend": "aot_eager"})
    torch._dynamo.reset()
    layers, final, x, rope = tiny_model(LLAMA, dtype=torch.bfloat16)
    tables = {"tawa": model_ops.tawa_ops(StandInTawa()), "torch": model_ops.torch_ops()}
    row = model.Row("llama-tiny", 2, 7, "compile")
    model_run.measure(row, LLAMA, tables, layers, final, x, rope, None, 1, lambda s: None)
    torch._dynamo.reset()
    assert row.correct, row.failure
    assert len(row.tawa_ms) == model_run.MIN_ITERS


def test_interleaved_alternates_forward_by_forward():
    order = []
    calls = {"tawa": lambda: order.append("A") or 2.0, "torch": lambda: order.append("B") or 1.0}
    times = model_run.interleaved(calls, rounds=2, iters=2)
    assert "".join(order) == "ABBAABBA"
    assert times == {"tawa": [2.0] * 4, "torch": [1.0] * 4}


def test_iters_for():
    assert model_run.iters_for(50.0) == 4  # 200 ms a round
    assert model_run.iters_for(1000.0) == model_run.MIN_ITERS
    assert model_run.iters_for(0.5) == model_run.MAX_ITERS
    assert model_run.iters_for(math.nan) == model_run.MIN_ITERS


# --------------------------------------------------------------------------- the command line


def test_parse_arguments():
    assert model.parse_models("llama-4096, gpt2-1024,llama-4096") == ["llama-4096", "gpt2-1024"]
    assert model.parse_shapes("1x128,8×1024,1x128") == [(1, 128), (8, 1024)]
    assert model.parse_modes("graph,eager") == ["eager", "graph"]  # the table's order
    assert model.positive("3") == 3


@pytest.mark.parametrize("argv, message", [
    (["--models", "gpt3"], "argument --models: unknown model 'gpt3'; known: gpt2-1024, gpt2-2048, llama-4096"),
    (["--models", ","], "argument --models: no models given"),
    (["--shapes", "8x"], "argument --shapes: bad shape '8x': expected BxS (batch x sequence), e.g. 8x1024"),
    (["--shapes", "0x128"], "argument --shapes: bad shape '0x128': expected BxS (batch x sequence), e.g. 8x1024"),
    (["--shapes", "1x2x3"], "argument --shapes: bad shape '1x2x3': expected BxS (batch x sequence), e.g. 8x1024"),
    (["--modes", "eager,fast"], "argument --modes: unknown mode 'fast'; known: eager, compile, graph"),
    (["--rounds", "0"], "argument --rounds: expected a positive integer, got '0'"),
    (["--layers", "two"], "argument --layers: expected a positive integer, got 'two'"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        bench_main.main(["model", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"python -m tawa.bench model: error: {message}", err


def test_without_torch_the_benchmark_says_why(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert bench_main.main(["model", "--models", "gpt2-1024", "--shapes", "1x128", "--modes", "eager"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("tawa.bench model: error: needs torch with CUDA") and "\n" not in err


def test_without_a_gpu_the_benchmark_says_why(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the run would start")
    assert model.main(["--models", "gpt2-1024", "--shapes", "1x128", "--modes", "eager"]) == 1
    assert capsys.readouterr().err.strip() == \
        "tawa.bench model: error: needs a CUDA GPU (torch.cuda.is_available() is False)"


def test_listed_as_a_workload(capsys):
    assert bench_main.main(["--help"]) == 0
    assert "`model` (transformer forward passes" in capsys.readouterr().out


# --------------------------------------------------------------------------- table, geomeans, JSON


META = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2000-01-01 10:00 UTC", "rounds": 3, "torch": "2.9", "tawa": "0.1"}


def fake_rows():
    fast = model.Row("gpt2-1024", 8, 1024, "eager", tawa_ms=[10.0, 9.0, 11.0], torch_ms=[12.0, 12.0, 12.0],
                     err_vs_torch=4e-3)
    slow = model.Row("gpt2-1024", 1, 128, "eager", tawa_ms=[20.0], torch_ms=[5.0], err_vs_torch=3e-3,
                     tawa_err_vs_f32=5e-3, torch_err_vs_f32=4e-3)
    graph = model.Row("llama-4096", 4, 4096, "graph", tawa_ms=[30.0], torch_ms=[33.0], err_vs_torch=6e-3)
    wrong = model.Row("llama-4096", 1, 128, "graph", err_vs_torch=0.4)
    wrong.check()
    return [fast, slow, graph, wrong]


def test_row_check_and_ratio():
    fast, slow, graph, wrong = fake_rows()
    assert fast.ratio == pytest.approx(12.0 / 10.0) and slow.ratio == pytest.approx(0.25)
    assert wrong.failure == "relative error above 0.05: tawa vs torch 4.00e-01" and not wrong.correct
    nan = model.Row("m", 1, 1, "eager", err_vs_torch=math.nan)
    nan.check()
    assert "tawa vs torch nan" in nan.failure
    f32 = model.Row("m", 1, 1, "eager", err_vs_torch=1e-3, tawa_err_vs_f32=1e-3, torch_err_vs_f32=0.2)
    f32.check()
    assert f32.failure == "relative error above 0.05: torch vs float32 2.00e-01"
    for ok in fake_rows()[:3]:
        ok.check()
        assert ok.correct


def test_geomeans_per_mode_leave_failed_rows_out():
    g = model.geomeans(fake_rows())
    assert g["eager"] == {"geomean": pytest.approx(math.sqrt(1.2 * 0.25)), "rows": 2, "of": 2,
                          "min": pytest.approx(0.25), "min_row": "gpt2-1024 1x128"}
    assert g["graph"]["rows"] == 1 and g["graph"]["of"] == 2 and g["graph"]["geomean"] == pytest.approx(1.1)


def test_table():
    lines = model.format_table(fake_rows(), META).splitlines()
    assert lines[0] == "tawa's operators in transformer forward passes vs torch's, on NVIDIA H100 80GB HBM3, " \
        "2000-01-01 10:00 UTC"
    fast = next(line for line in lines if "8x1024" in line)
    assert fast.split() == ["gpt2-1024", "8x1024", "eager", "10.000", "12.000", "1.200", "4.00e-03", "-", "-"]
    slow = next(line for line in lines if "1x128" in line and "eager" in line)
    assert slow.split()[-2:] == ["5.00e-03", "4.00e-03"]
    wrong = next(line for line in lines if "FAILED" in line)
    assert wrong.split()[:6] == ["llama-4096", "1x128", "graph", "nan", "nan", "nan"]
    assert wrong.endswith("FAILED: relative error above 0.05: tawa vs torch 4.00e-01")
    assert lines[-2] == f"eager: geomean tawa/torch {math.sqrt(0.3):.3f} over 2 rows; min 0.250 (gpt2-1024 1x128)"
    assert lines[-1] == "graph: geomean tawa/torch 1.100 over 1 rows (1 failed, left out); min 1.100 (llama-4096 4x4096)"


def test_json_and_plot(tmp_path):
    meta = {**META, "ops": {"gpt2-1024": {"tawa": {"linear": "tawa.torch.matmul, ..."}}}}
    path = tmp_path / "out" / "model.json"
    model.write_json(path, fake_rows(), meta)
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert data["gpu"] == META["gpu"] and data["ops"] == meta["ops"]
    first, wrong = data["results"][0], data["results"][3]
    assert first["tawa_ms"] == 10.0 and first["torch_ms"] == 12.0 and first["ratio"] == pytest.approx(1.2)
    assert first["tawa_ms_per_forward"] == [10.0, 9.0, 11.0] and first["correct"] is True
    assert first["tawa_err_vs_f32"] is None
    assert wrong["correct"] is False and wrong["tawa_ms"] is None and wrong["failure"].startswith("relative error")
    assert data["geomean"]["graph"]["rows"] == 1
    spec = check_spec(data["plot"])
    assert spec["labels"][0] == "gpt2-1024 8x1024 eager" and spec["series"]["torch"] == [1.0] * 4
    assert ratios(model.plot_spec(fake_rows(), META))[:3] == [pytest.approx(1.2), pytest.approx(0.25),
                                                              pytest.approx(1.1)]
