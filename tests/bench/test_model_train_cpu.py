"""`python -m tawa.bench model --train` without a GPU: the training table
(torch's norms and rotary in place of tawa's, which have no backward), the
step's gradients against float32, a row's warm-up, check and timing on the
CPU with a stand-in `tawa.torch`, a wrong gradient caught, the CLI, and the
table and JSON of training rows from fake timings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tawa.bench import __main__ as bench_main
from tawa.bench import model
from tawa.bench.plot import check_spec

torch = pytest.importorskip("torch", reason="the model benchmark's CPU tests need torch (CPU build is enough)")

from test_model_cpu import GPT2, LLAMA, StandInTawa, rel, tiny_model  # noqa: E402

from tawa.bench import model_nets as nets  # noqa: E402
from tawa.bench import model_ops, model_run, model_train  # noqa: E402


def forward_only(fn):
    """A stand-in for a tawa operator without a backward: its output carries no gradient."""
    def op(*args):
        with torch.no_grad():
            return fn(*args)
    return op


def stand_in(**kw):
    """A stand-in tawa.torch with every operator; norms and rotary forward only."""
    return StandInTawa(linear=True, gated_mlp=True, grouped_heads=True,
                       layer_norm=forward_only(model_ops.torch_layer_norm),
                       rms_norm=forward_only(model_ops.torch_rms_norm),
                       rotary=forward_only(model_ops.torch_rotary), **kw)


def with_grad(layers, final):
    for t in model_train.weights_of(layers, final)[0]:
        t.requires_grad_()
    return layers, final


# --------------------------------------------------------------------------- the training table and step


def test_training_table_runs_torchs_norms_and_rotary():
    ops = model_ops.tawa_ops(stand_in())
    train = model_train.training_ops(ops)
    torch_ops = model_ops.torch_ops()
    assert (train.layer_norm, train.rms_norm, train.rotary) == (torch_ops.layer_norm, torch_ops.rms_norm,
                                                                torch_ops.rotary)
    assert train.linear is ops.linear and train.gated_mlp is ops.gated_mlp and train.attention is ops.attention
    assert train.notes["rms_norm"] == "F.rms_norm: tawa.torch.rms_norm has no backward (--train)"
    assert train.notes["rotary"].endswith(": tawa.torch.rotary has no backward (--train)")
    assert train.notes["linear"] == ops.notes["linear"]
    # Tables that run none of them are left as they are.
    assert model_train.training_ops(torch_ops) is torch_ops
    plain = model_ops.tawa_ops(StandInTawa(linear=True))
    assert model_train.training_ops(plain) is plain


def test_forward_only_norms_would_not_train():
    """Why the swap: with the stand-in's forward-only norms the norm weights get no gradient."""
    layers, final, x, rope = tiny_model(LLAMA)
    with_grad(layers, final)
    step = model_train.make_step(LLAMA, model_ops.tawa_ops(stand_in()), layers, final, x, rope,
                                 model_train.loss_probe(x.shape, "cpu", 1))
    with pytest.raises(RuntimeError, match="does not require grad|not have been used"):
        step()


@pytest.mark.parametrize("cfg", [GPT2, LLAMA], ids=["gpt2", "llama"])
def test_step_gradients_of_both_tables_agree(cfg):
    layers, final, x, rope = tiny_model(cfg)
    with_grad(layers, final)
    probe = model_train.loss_probe(x.shape, "cpu", 3)
    module = stand_in()
    train = model_train.training_ops(model_ops.tawa_ops(module))
    out_t, grads_t = model_train.make_step(cfg, train, layers, final, x, rope, probe)()
    out_r, grads_r = model_train.make_step(cfg, model_ops.torch_ops(), layers, final, x, rope, probe)()
    names = model_train.weights_of(layers, final)[1]
    assert len(grads_t) == len(names) == len(model_train.weights_of(layers, final)[0])
    assert names[0] == "0." + next(iter(layers[0])) and names[-1].startswith("final.")
    assert rel(out_t, out_r) < 1e-5 and not out_t.requires_grad
    total, worst, _ = model_train.grad_errors(grads_t, grads_r, names)
    assert total < 1e-5 and worst < 1e-4
    assert {c[0] for c in module.calls} >= {"linear", "attention"}  # tawa's entries ran in the step
    assert all(t.grad is None for t in model_train.weights_of(layers, final)[0])  # autograd.grad, no .grad


def test_float32_grads_on_bf16_weights():
    layers, final, x, rope = tiny_model(GPT2, dtype=torch.bfloat16)
    with_grad(layers, final)
    probe = model_train.loss_probe(x.shape, "cpu", 3)
    ref = model_train.float32_grads(GPT2, layers, final, x, rope, probe)
    assert all(g.dtype == torch.float32 for g in ref)
    _, grads = model_train.make_step(GPT2, model_ops.torch_ops(), layers, final, x, rope, probe)()
    names = model_train.weights_of(layers, final)[1]
    total, worst, _ = model_train.grad_errors(grads, ref, names)
    assert 0 < total < model_train.GRAD_TOLERANCE and worst < model_train.WEIGHT_TOLERANCE


def test_grad_errors():
    a, b = torch.tensor([3.0, 4.0]), torch.tensor([0.0, 1.0])
    total, worst, name = model_train.grad_errors([a, b], [a, b * 2], ["x", "y"])
    assert total == pytest.approx(1 / math.sqrt(25 + 4)) and worst == pytest.approx(0.5) and name == "y"
    zero_total, zero_worst, _ = model_train.grad_errors([b * 0], [b * 0], ["z"])
    assert math.isnan(zero_total) and zero_worst == 0.0
    assert model_train.grad_errors([b], [b * 0], ["z"])[1] == math.inf
    nan = model_train.grad_errors([a, b * math.nan], [a, b], ["x", "y"])
    assert math.isnan(nan[0]) and nan[2] == "y"
    with pytest.raises(ValueError):
        model_train.grad_errors([a], [a, b], ["x", "y"])


# --------------------------------------------------------------------------- a row on the CPU


@pytest.fixture
def cpu_timers(monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(model_run, "ROUND_MS", 0.0)


def bf16_model(cfg):
    layers, final, x, rope = tiny_model(cfg, dtype=torch.bfloat16)
    with_grad(layers, final)
    return layers, final, x, rope, model_train.loss_probe(x.shape, "cpu", 5)


@pytest.mark.parametrize("cfg", [GPT2, LLAMA], ids=["gpt2", "llama"])
def test_measure_train_checks_then_times(cpu_timers, cfg):
    layers, final, x, rope, probe = bf16_model(cfg)
    ref = model_train.float32_grads(cfg, layers, final, x, rope, probe)
    tables = {"tawa": model_train.training_ops(model_ops.tawa_ops(stand_in())), "torch": model_ops.torch_ops()}
    row = model_train.TrainRow(cfg.name, 2, 7, "train")
    logged = []
    model_train.measure_train(row, cfg, tables, layers, final, x, rope, probe, ref, 2, logged.append)
    assert row.correct, row.failure
    assert len(row.tawa_ms) == len(row.torch_ms) == 2 * model_run.MIN_ITERS
    assert all(t > 0 for t in row.tawa_ms + row.torch_ms)
    assert row.err_vs_torch < model_train.GRAD_TOLERANCE and row.worst_vs_torch < model_train.WEIGHT_TOLERANCE
    assert row.worst_weight in model_train.weights_of(layers, final)[1]
    assert 0 < row.tawa_err_vs_f32 < model_train.GRAD_TOLERANCE
    assert 0 < row.torch_err_vs_f32 < model_train.GRAD_TOLERANCE
    assert row.out_err_vs_torch < 1e-2
    assert [line.split(":")[1].split()[0] for line in logged] == ["tawa", "torch"]
    assert "worst weight" in model.format_table([row], {**META, "train": True})


def test_measure_train_fails_a_wrong_weight_gradient_untimed(cpu_timers):
    """A linear whose weight gradient comes out 1.5 times what it is (the GELU layer's only)."""
    layers, final, x, rope, probe = bf16_model(GPT2)
    torch_ops = model_ops.torch_ops()

    def linear(x, w, bias=None, activation=None, residual=None):
        if activation == "gelu_tanh":
            w = w.detach() + 1.5 * (w - w.detach())  # the value of w, 1.5 times its gradient
        return torch_ops.linear(x, w, bias, activation, residual)

    wrong = model_train.training_ops(model_ops.Ops("tawa", linear, torch_ops.gated_mlp, torch_ops.attention,
                                                   torch_ops.layer_norm, torch_ops.rms_norm, torch_ops.rotary,
                                                   dict(torch_ops.notes)))
    row = model_train.TrainRow("gpt2-tiny", 2, 7, "train")
    model_train.measure_train(row, GPT2, {"tawa": wrong, "torch": torch_ops}, layers, final, x, rope, probe, None, 2,
                              lambda s: None)
    assert not row.correct and row.tawa_ms == row.torch_ms == []
    assert row.worst_weight.endswith(".w_fc") and row.worst_vs_torch == pytest.approx(0.5, rel=0.05)
    assert row.out_err_vs_torch == 0


def test_train_row_check():
    row = model_train.TrainRow("m", 1, 1, "train", err_vs_torch=1e-2, worst_vs_torch=0.3, worst_weight="0.w_o")
    row.check()
    assert row.failure == "relative error of a weight's gradient above 0.2: 0.w_o 3.00e-01"
    row = model_train.TrainRow("m", 1, 1, "train", err_vs_torch=0.06, worst_vs_torch=0.1, worst_weight="0.w_o")
    row.check()
    assert row.failure == "relative error above 0.05: tawa vs torch 6.00e-02"
    row = model_train.TrainRow("m", 1, 1, "train", err_vs_torch=1e-2, worst_vs_torch=math.nan)
    row.check()
    assert "nan" in row.failure


# --------------------------------------------------------------------------- the command line, table and JSON


@pytest.mark.parametrize("argv", [["--train", "--modes", "eager"], ["--train", "--tp", "2"]])
def test_train_takes_no_modes_or_tp(capsys, argv):
    with pytest.raises(SystemExit) as info:
        bench_main.main(["model", *argv])
    assert info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "python -m tawa.bench model: error: --train runs eager training steps on one GPU: without --modes and --tp"


def test_train_without_a_gpu_says_why(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the run would start")
    assert model.main(["--train", "--models", "gpt2-1024", "--shapes", "1x128"]) == 1
    assert capsys.readouterr().err.strip() == \
        "tawa.bench model: error: needs a CUDA GPU (torch.cuda.is_available() is False)"


META = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2000-01-01 10:00 UTC", "rounds": 3, "torch": "2.9", "tawa": "0.1"}


def fake_train_rows():
    fast = model_train.TrainRow("gpt2-1024", 8, 1024, "train", tawa_ms=[30.0, 31.0], torch_ms=[33.0, 33.0],
                                err_vs_torch=2e-2, tawa_err_vs_f32=1.5e-2, torch_err_vs_f32=1.4e-2,
                                worst_vs_torch=4e-2, worst_weight="3.ln1_b", out_err_vs_torch=1.2e-2)
    wrong = model_train.TrainRow("llama-4096", 1, 128, "train", err_vs_torch=0.4, worst_vs_torch=1.0,
                                 worst_weight="0.w_gate", out_err_vs_torch=1e-2)
    wrong.check()
    return [fast, wrong]


def test_train_table():
    lines = model.format_table(fake_train_rows(), {**META, "train": True}).splitlines()
    assert lines[0] == "tawa's operators in transformer training steps vs torch's, on NVIDIA H100 80GB HBM3, " \
        "2000-01-01 10:00 UTC"
    assert "median per step" in lines[1] and "torch's norms and rotary" in lines[1]
    assert lines[2].endswith("errors: relative, the weights' gradients (all together)")
    fast = next(line for line in lines if "8x1024" in line)
    assert fast.split()[:9] == ["gpt2-1024", "8x1024", "train", "30.500", "33.000", "1.082", "2.00e-02",
                                "1.50e-02", "1.40e-02"]
    assert fast.endswith("  worst weight 3.ln1_b 4.00e-02; output 1.20e-02")
    wrong = next(line for line in lines if "FAILED" in line)
    assert wrong.endswith("FAILED: relative error above 0.05: tawa vs torch 4.00e-01")
    assert lines[-1] == "train: geomean tawa/torch 1.082 over 1 rows (1 failed, left out); min 1.082 (gpt2-1024 8x1024)"
    # The forward table is as it was.
    assert model.format_table([], META).splitlines()[0].startswith("tawa's operators in transformer forward passes")


def test_train_json_and_plot(tmp_path):
    path = tmp_path / "train.json"
    model.write_json(path, fake_train_rows(), {**META, "train": True})
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    first, wrong = data["results"]
    assert first["mode"] == "train" and first["worst_weight"] == "3.ln1_b" and first["worst_vs_torch"] == 4e-2
    assert first["out_err_vs_torch"] == 1.2e-2 and first["ratio"] == pytest.approx(33 / 30.5)
    assert first["tawa_ms_per_step"] == [30.0, 31.0] and "tawa_ms_per_forward" not in first
    assert wrong["correct"] is False and wrong["tawa_ms"] is None
    assert data["geomean"]["train"]["rows"] == 1 and data["train"] is True
    spec = check_spec(data["plot"])
    assert spec["title"].startswith("transformer training step,") and spec["labels"][0] == "gpt2-1024 8x1024 train"


# --------------------------------------------------------------------------- the real tawa table on the CPU


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [nets.ModelConfig("gpt2-d64", "gpt2", 128, 2, 2, 64, 2, 256),
                                 nets.ModelConfig("llama-d128", "llama", 256, 2, 1, 128, 1, 192)],
                         ids=["gpt2", "llama-gqa2"])
def test_a_step_with_the_real_tawa_table(cfg, monkeypatch):
    """`training_ops(tawa_ops())` as `--train` builds it, on CPU tensors:
    tawa.torch's autograd (linear, gated_mlp, attention with grouped heads,
    on the model's fused-QKV views) with attention's training kernels run by
    the interpreter and the GEMMs by the float32 stand-ins of
    tests/runtime; the weights' gradients against float32."""
    import tawa.torch as tt

    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "runtime"))
    from test_autograd_cpu import Interpreted
    from test_linear_cpu import StandIn as LinearStandIn
    from test_norm_ops_cpu import Interpreted as NormInterpreted
    from test_torch_cpu import StandIn as KernelStandIn

    from tawa.torch import attention_bwd_kernels as abk
    from tawa.torch import calls, checks, kernels, linear_kernels, norm_kernels

    launches = {"attention": [], "matmul": [], "linear": [], "norms": []}
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(abk, "_compile", lambda name, **values: Interpreted(name, values, launches["attention"]))
    monkeypatch.setattr(kernels, "compiled", lambda name, dtype=None, **o: KernelStandIn(name, dtype, launches["matmul"]))
    monkeypatch.setattr(linear_kernels, "build", lambda choice: LinearStandIn(choice, launches["linear"]))
    monkeypatch.setattr(norm_kernels, "_compile", lambda name, **tile: NormInterpreted(name, tile, launches["norms"]))
    calls.forget()
    linear_kernels.clear_cache()
    kernels.clear_cache()
    norm_kernels.clear_cache()
    try:
        g = torch.Generator().manual_seed(0)
        layers, final = with_grad(*nets.init_weights(cfg, dtype=torch.bfloat16, generator=g))
        x = nets.embedded_tokens(cfg, 1, 72, generator=g)
        rope = nets.rope_tables(cfg, 72) if cfg.family == "llama" else None
        probe = model_train.loss_probe(x.shape, "cpu", 1)
        ops = model_train.training_ops(model_ops.tawa_ops())
        assert not any("stand-in" in note for note in ops.notes.values())
        _, grads = model_train.make_step(cfg, ops, layers, final, x, rope, probe)()
        ref = model_train.float32_grads(cfg, layers, final, x, rope, probe)
        total, worst, name = model_train.grad_errors(grads, ref, model_train.weights_of(layers, final)[1])
        assert total < 1e-2 and worst < 3e-2, (total, worst, name)
        assert {launch[0] for launch in launches["attention"]} == {abk.FWD, abk.PRE, abk.DKDV, abk.DQ}
        assert launches["linear"] and launches["matmul"]  # forward GEMMs and the backward's products
        if cfg.family == "llama":  # the gate and its gradient on the elementwise kernels
            assert {launch[0] for launch in launches["norms"]} >= {"swiglu", "swiglu_bwd"}
    finally:
        calls.forget()
        linear_kernels.clear_cache()
        kernels.clear_cache()
        norm_kernels.clear_cache()
