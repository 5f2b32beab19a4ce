"""`python -m tawa.bench attention --backward` without a GPU: its arguments
and rows, TFLOP/s, the table, summary, JSON and plot from fake timings,
and a row's check and timing glue on CPU tensors (a stand-in attention, and
tawa.torch.attention with its training kernels run by the interpreter)."""

from __future__ import annotations

import json
import math
import types

import pytest

from tawa.bench import __main__ as bench_main
from tawa.bench import attention, attention_bwd
from tawa.bench.plot import check_spec, ratios

# --------------------------------------------------------------------------- arguments and rows


@pytest.mark.parametrize("argv, message", [
    (["--head-dim", "256"], "nothing to time: head dim 256: not timed: head dim D = 256 has no backward kernels"),
    (["--random", "0"], "--random takes N >= 1, without --head-dim"),
    (["--random", "3", "--head-dim", "64"], "--random takes N >= 1, without --head-dim"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--dq", "kernel,fast"], "--dq takes paths of kernel, atomic separated by commas, got 'kernel,fast'"),
])
def test_misuse_is_one_line(argv, message, capsys):
    assert bench_main.main(["attention", "--backward", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tawa.bench attention --backward: error: {message}"), err


def test_the_flag_reaches_the_backward_anywhere_in_the_arguments(monkeypatch):
    seen = []
    monkeypatch.setattr(attention_bwd, "main", lambda argv: seen.append(argv) or 7)
    assert bench_main.main(["attention", "--rounds", "2", "--backward", "--json", "x.json"]) == 7
    assert seen == [["--rounds", "2", "--json", "x.json"]]


def test_the_forward_module_itself_points_to_the_command(capsys):
    assert attention.main(["--backward"]) == 1
    assert capsys.readouterr().err == ("tawa.bench attention: error: --backward is tawa.bench.attention_bwd's: run "
                                       "`python -m tawa.bench attention --backward`\n")


def test_bad_head_dim_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        bench_main.main(["attention", "--backward", "--head-dim", "96"])
    assert info.value.code == 2
    assert "argument --head-dim: invalid choice: 96" in capsys.readouterr().err


def test_without_a_gpu_it_says_why(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the run would start")
    assert bench_main.main(["attention", "--backward", "--head-dim", "64"]) == 1
    assert capsys.readouterr().err == \
        "tawa.bench attention --backward: error: needs a CUDA GPU (torch.cuda.is_available() is False)\n"


def test_rows_are_the_forward_table_at_head_dims_64_and_128():
    rows, notes = attention_bwd.problems(None, None, 0)
    assert rows == attention.fixed_problems([64, 128]) and len(rows) == 16
    assert notes == ["head dim 256: not timed: head dim D = 256 has no backward kernels "
                     "(examples/python/attention_bwd.py compiles for 64 and 128)"]
    assert attention_bwd.problems([128, 128], None, 0) == (attention.fixed_problems([128]), [])
    assert attention_bwd.problems([256, 64], None, 0)[0] == attention.fixed_problems([64])


def test_random_rows_draw_head_dims_with_a_backward():
    rows, _ = attention_bwd.problems(None, 60, 5)
    assert rows == attention_bwd.problems(None, 60, 5)[0] and len(rows) == 60
    assert {d for d, *_ in rows} == {64, 128} and {c for *_, c in rows} == {False, True}
    # The forward's draws are what they were (the head dims' default is the forward's).
    assert attention.random_problems(40, 7) == attention.random_problems(40, 7, head_dims=(256, 64, 128))
    assert {d for d, *_ in attention.random_problems(40, 7)} == {64, 128, 256}


def test_backward_tflops_are_two_and_a_half_forwards():
    times = {"tawa": [2.0, 1.0, 3.0], "cuDNN": [4.0]}
    tf = attention_bwd.backward_tflops(times, 1, 1024, 128, False, 16)
    forward = attention.tflops(times, 1, 1024, 128, False, 16)
    assert tf["tawa"] == pytest.approx(2.5 * forward["tawa"]) == pytest.approx(10 * 16 * 1024**2 * 128 / 2e9)
    causal = attention_bwd.backward_tflops(times, 1, 1024, 128, True, 16)
    assert causal["cuDNN"] == pytest.approx(tf["cuDNN"] / 2)


# --------------------------------------------------------------------------- table, summary, JSON, plot

META = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2000-01-01 10:00 UTC", "rounds": 3}


def fake_row(d=128, S=4096, causal=False, tflops=(400.0, 380.0, 250.0), err=(3e-3, 4e-3, 2e-3), finite=True):
    return {"d": d, "B": 4, "H": 16, "S": S, "causal": causal, "finite": finite,
            "rel_err": dict(zip(attention_bwd.GRADS, err)),
            "baseline_rel_err": {"cuDNN": 3.5e-3, "FA2": math.nan},
            "tflops": dict(zip(attention.BACKENDS, tflops)), "ms_per_round": {"tawa": [1.0]}}


def fake_rows():
    return [fake_row(), fake_row(64, 1024, True, (300.0, 330.0, math.nan)),
            fake_row(64, 512, True, (math.nan,) * 3, err=(0.5, 3e-3, 3e-3))]


def test_row_line_and_wrong_rows():
    good, slow, wrong = fake_rows()
    assert attention_bwd.row_ok(good) and not attention_bwd.row_ok(wrong)
    assert not attention_bwd.row_ok(fake_row(finite=False))
    assert not attention_bwd.row_ok(fake_row(err=(3e-3, math.nan, 3e-3)))
    assert attention_bwd.format_row(good).split() == [
        "128", "4", "16", "4096", "False", "400.0", "380.0", "250.0", "1.053", "1.600",
        "3.00e-03", "4.00e-03", "2.00e-03", "3.50e-03", "nan"]
    assert attention_bwd.format_row(wrong).endswith(
        f"  WRONG: relative error above {attention_bwd.TOLERANCE:g}; not timed")
    assert attention_bwd.format_row(fake_row(finite=False)).endswith("WRONG: gradients not finite (unwritten elements?)")
    assert len(attention_bwd.HEADER) == len(attention_bwd.format_row(good))  # the columns line up


def test_dq_paths_and_their_names():
    assert attention_bwd.dq_paths("atomic, kernel,atomic") == ("atomic", "kernel")
    assert [attention_bwd.variant(p, ("kernel", "atomic")) for p in ("kernel", "atomic")] == ["tawa", "tawa-atomic"]
    with pytest.raises(ValueError, match="--dq takes paths"):
        attention_bwd.dq_paths(" , ")


def test_other_paths_follow_the_row():
    row = fake_row()
    row["tflops"]["tawa-atomic"] = 456.0
    row["paths"] = {"tawa-atomic": {"rel_err": dict(zip(attention_bwd.GRADS, (5e-3, 4e-3, 2e-3))), "finite": True}}
    line = attention_bwd.format_row(row)
    assert line.endswith(f"  tawa-atomic: 456.0 ({456 / 380:.3f}x cuDNN; err 5.00e-03 4.00e-03 2.00e-03)")
    failed = {**fake_row(), "paths": {"tawa-atomic": {"rel_err": {g: math.nan for g in attention_bwd.GRADS},
                                                       "finite": False, "error": "ValueError: no"}}}
    assert attention_bwd.format_row(failed).endswith("  tawa-atomic: FAILED: ValueError: no")
    text = attention_bwd.summary([row, failed])
    assert text.endswith(f"; tawa-atomic/cuDNN: geomean {456 / 380:.3f}, min {456 / 380:.3f}")
    spec = check_spec(attention_bwd.plot_spec([row, failed], META))
    assert spec["series"]["tawa-atomic"][0] == 456.0 and math.isnan(spec["series"]["tawa-atomic"][1])


def test_a_row_that_raised():
    row = attention_bwd.failed_row((128, 1, 16, 16384, True), RuntimeError("CUDA out of memory.\nmore"))
    assert not attention_bwd.row_ok(row)
    assert attention_bwd.format_row(row).endswith("  FAILED: RuntimeError: CUDA out of memory.")
    assert attention_bwd.summary([row, fake_row()]).endswith("(1 wrong row left out)")
    assert json.loads(json.dumps(attention_bwd.report([row], META)))["results"][0]["error"].startswith("RuntimeError")


def test_summary_leaves_wrong_rows_out():
    text = attention_bwd.summary(fake_rows())
    cudnn = math.sqrt(400 / 380 * 300 / 330)
    assert text == (f"tawa/cuDNN: geomean {cudnn:.3f}, min {300 / 330:.3f}; tawa/FA2: geomean nan, min 1.600 "
                    "(1 wrong row left out)")
    assert attention_bwd.summary(fake_rows()[:1]).endswith("tawa/FA2: geomean 1.600, min 1.600")


def test_json_and_plot():
    data = json.loads(json.dumps(attention_bwd.report(fake_rows(), META)))
    assert data["gpu"] == META["gpu"] and len(data["results"]) == 3
    assert data["geomean"]["cuDNN"] == pytest.approx(math.sqrt(400 / 380 * 300 / 330))
    assert data["results"][0]["rel_err"] == {"dq": 3e-3, "dk": 4e-3, "dv": 2e-3}
    spec = check_spec(data["plot"])
    assert spec["labels"] == ["d128 4x16x4096", "d64 4x16x1024 causal", "d64 4x16x512 causal"]
    assert set(spec["series"]) == {"tawa", "cuDNN", "FA2"} and spec["ratio"] == ["tawa", "cuDNN"]
    assert "backward" in spec["title"] and "2.5" in spec["ylabel"]
    r = ratios(attention_bwd.plot_spec(fake_rows(), META))
    assert r[0] == pytest.approx(400 / 380) and math.isnan(r[2])


# --------------------------------------------------------------------------- a row on the CPU


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="needs torch (the CPU build is enough)")


def sdpa_attention(torch, flip_mask=False):
    def attention(q, k, v, causal=False):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal != flip_mask)
    return attention


def fake_timer(seen):
    """`interleaved`'s stand-in: runs each backward call once, 1 ms a round."""
    def timed(calls, rounds):
        for name, call in calls.items():
            seen[name] = call()
        return {name: [1.0] * rounds for name in calls}
    return timed


@pytest.mark.parametrize("problem", [(64, 1, 2, 70, True), (128, 2, 1, 40, False)])
def test_measure_checks_then_times(torch, problem):
    seen, poisoned = {}, []
    row = attention_bwd.measure(problem, sdpa_attention(torch), {"cuDNN": None, "FA2": None}, 2, device="cpu",
                                poison=poisoned.append, timed=fake_timer(seen))
    d, B, H, S, causal = problem
    assert attention_bwd.row_ok(row), row
    assert poisoned == [8 * B * H * S * d * 2]
    assert all(0 < e < 1e-2 for e in row["rel_err"].values()) and row["finite"]
    assert all(0 < e < 1e-2 for e in row["baseline_rel_err"].values())
    assert row["ms_per_round"] == {n: [1.0, 1.0] for n in ("tawa", "cuDNN", "FA2")}
    assert row["tflops"]["tawa"] == pytest.approx(2.5 * 4 * B * H * S * S * d * (0.5 if causal else 1) / 1e9)
    for grads in seen.values():  # dq, dk, dv of q's shape, every call
        assert [tuple(g.shape) for g in grads] == [(B, H, S, d)] * 3
    assert attention_bwd.format_row(row)  # prints


def test_the_backward_call_runs_again_and_again(torch):
    q, k, v, do = (torch.randn(1, 1, 16, 64, dtype=torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    call = attention_bwd.backward_call(lambda: sdpa_attention(torch)(q, k, v, True), (q, k, v), do)
    first, second = call(), call()
    assert all(torch.equal(a, b) for a, b in zip(first, second)) and q.grad is None


def test_measure_fails_wrong_gradients_untimed(torch):
    seen = {}
    row = attention_bwd.measure((64, 1, 2, 33, True), sdpa_attention(torch, flip_mask=True), {"cuDNN": None}, 2,
                                device="cpu", timed=fake_timer(seen))
    assert not attention_bwd.row_ok(row) and seen == {}
    assert all(e > 0.1 for e in row["rel_err"].values()) and math.isnan(row["tflops"]["tawa"])
    assert "WRONG" in attention_bwd.format_row({**row, "tflops": {n: math.nan for n in attention.BACKENDS},
                                                "baseline_rel_err": {"cuDNN": 1e-3, "FA2": math.nan}})


def test_a_baseline_that_refuses_the_row_is_nan(torch, monkeypatch):
    def forward_of(backend, q, k, v, causal):
        if backend == "refuses":
            def refuse():
                raise RuntimeError("No available kernel")
            return refuse
        return lambda: sdpa_attention(torch)(q, k, v, causal)

    monkeypatch.setattr(attention_bwd, "sdpa_forward", forward_of)
    seen = {}

    def timed(calls, rounds):
        out = {}
        for name, call in calls.items():
            try:
                seen[name] = call()
                out[name] = [1.0] * rounds
            except RuntimeError:
                out[name] = [math.nan] * rounds
        return out

    row = attention_bwd.measure((64, 1, 1, 20, False), sdpa_attention(torch), {"cuDNN": "refuses", "FA2": None}, 1,
                                device="cpu", timed=timed)
    assert attention_bwd.row_ok(row) and set(seen) == {"tawa", "FA2"}
    assert math.isnan(row["baseline_rel_err"]["cuDNN"]) and math.isnan(row["tflops"]["cuDNN"])


def test_measure_times_each_path_and_reports_one_that_cannot_run(torch):
    """`paths`: the first is "tawa", the others are checked and timed as
    "tawa-<path>" with the operator switched to them; one that raises is
    reported, not timed."""
    from tawa.torch import attention_bwd_kernels as abk

    ran = []

    def attention(q, k, v, causal=False):
        ran.append(abk.DQ_PATH)
        return sdpa_attention(torch)(q, k, v, causal)

    seen = {}
    row = attention_bwd.measure((64, 1, 1, 20, True), attention, {}, 1, device="cpu", timed=fake_timer(seen),
                                paths=("atomic", "kernel"))
    assert attention_bwd.row_ok(row) and set(seen) == {"tawa", "tawa-kernel"}
    assert attention_bwd.row_ok(row["paths"]["tawa-kernel"]) and ran[:2] == ["atomic", "kernel"]
    assert not math.isnan(row["tflops"]["tawa-kernel"]) and abk.DQ_PATH == "kernel"

    def refusing(q, k, v, causal=False):
        if abk.DQ_PATH == "atomic":
            raise ValueError("tawa.torch.attention_bwd: the 'atomic' dQ path cannot run at head dim 64: no")
        return sdpa_attention(torch)(q, k, v, causal)

    seen = {}
    row = attention_bwd.measure((64, 1, 1, 20, True), refusing, {}, 1, device="cpu", timed=fake_timer(seen),
                                paths=("kernel", "atomic"))
    assert attention_bwd.row_ok(row) and set(seen) == {"tawa"}
    assert row["paths"]["tawa-atomic"]["error"].startswith("ValueError: tawa.torch.attention_bwd: the 'atomic'")
    assert math.isnan(row["tflops"]["tawa-atomic"]) and "tawa-atomic: FAILED" in attention_bwd.format_row(
        {**row, "tflops": {**row["tflops"], "cuDNN": 1.0, "FA2": 1.0}, "baseline_rel_err": {"cuDNN": 0, "FA2": 0}})


class Interpreted:
    """A training kernel of examples/python/attention_bwd.py run by the CPU
    interpreter on the CPU tensors a launch passes (written in place)."""

    abi = types.SimpleNamespace(addressed=())

    def __init__(self, name, values):
        self.name, self.values = name, values

    def __call__(self, *args, grid):
        import ml_dtypes
        import torch

        from tawa.torch import attention_bwd_kernels as abk

        arrays = [(a.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if a.dtype == torch.bfloat16 else a.numpy())
                  if isinstance(a, torch.Tensor) else a for a in args]
        getattr(abk.module(), self.name).interpret(grid, *arrays, **self.values)


@pytest.mark.slow
def test_measure_with_tawas_backward_in_the_interpreter(torch, monkeypatch):
    """The row's glue around the real `tawa.torch.attention` (its autograd,
    attention_fwd_lse and the backward kernels of both dQ paths, interpreted)."""
    import tawa.torch as tt

    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    from tawa.torch import attention_bwd_kernels as abk
    from tawa.torch import calls, checks

    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(abk, "_compile", lambda name, **values: Interpreted(name, values))
    calls.forget()
    try:
        seen = {}
        row = attention_bwd.measure((64, 1, 2, 70, True), tt.attention, {"cuDNN": None}, 1, device="cpu",
                                    timed=fake_timer(seen), paths=("kernel", "atomic"))
        assert attention_bwd.row_ok(row), row
        assert all(e < 1e-2 for e in row["rel_err"].values())
        assert attention_bwd.row_ok(row["paths"]["tawa-atomic"]) and set(seen) == {"tawa", "tawa-atomic", "cuDNN"}
        wrong = attention_bwd.measure((64, 1, 1, 40, True), lambda q, k, v, causal: tt.attention(q, k, v, causal=False),
                                      {}, 1, device="cpu", timed=fake_timer({}))
        assert not attention_bwd.row_ok(wrong)
    finally:
        calls.forget()
