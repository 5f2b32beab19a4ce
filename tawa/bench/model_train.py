"""`python -m tawa.bench model --train`: a training step of each transformer
of `python -m tawa.bench model` with tawa's operators against the same step
with torch's, timed in the same run (tawa.bench.model's rows, mode `train`).

A step is the forward pass and the backward pass of a scalar loss,
`mean(final hidden states (float32) ∘ P)` for a fixed random float32 P of
the output's shape (`loss_probe`), to the gradients of every weight
(`torch.autograd.grad(loss, weights)`: the weights require grad, the input
does not; new gradient tensors every step, as after `zero_grad(set_to_none=True)`).
Eager only: wall clock from the call to a `torch.cuda.synchronize()` after
the gradients (host time included), both variants alternating step by step
as the forward rows do (`model_run.interleaved`).

The tawa table is `training_ops(tawa_ops())`: tawa's linear layers
(`tawa.torch.linear`, `gated_mlp`) and attention, whose backward passes run
on tawa's kernels (docs/runtime.md, "Autograd"); the norms and the rotary
embedding are torch's, since `tawa.torch.layer_norm`, `rms_norm` and
`rotary` have no backward.  The JSON's `ops` says what each entry ran.

Checked before timed: every weight's gradient of tawa's step against
torch's, after the warm-up: the error of all of them together (relative
Frobenius norm over the weights' gradients as one vector) must be within
`GRAD_TOLERANCE`, and the worst single weight's within `WEIGHT_TOLERANCE`;
on each model's smallest shape both variants' gradients are also compared
with a float32 step of the torch table on the bf16 weights (TF32 off).  A
row that fails is not timed, and the command exits 1.
"""

from __future__ import annotations

import datetime
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from tawa.bench.gemm import BenchError
from tawa.bench.model_run import (
    PROG,
    SEED,
    WARMUP,
    Row,
    cuda_torch,
    input_seed,
    interleaved,
    iters_for,
    logged_ops,
    relative_error,
    tokens,
)

GRAD_TOLERANCE = 5e-2
"""Relative error of the weights' gradients, all together (tawa against
torch, and each against float32).  torch's bf16 gradients of six-layer
models were 8e-3 from float32 on the CPU; a wrong gradient of one kind of
weight moves it by more."""
WEIGHT_TOLERANCE = 0.2
"""Relative error allowed for any one weight's gradient.  torch's bf16
gradients of the LayerNorm biases before the QKV projection were 2.5-3.2e-2
from float32 (the others at most 1e-2) on the CPU; a dropped or misplaced
gradient is off by about 1."""
TORCH_IN_TRAINING = ("layer_norm", "rms_norm", "rotary")
"""The tawa table's entries run by torch in a training step: tawa's
operators for them have no backward."""


@dataclass
class TrainRow(Row):
    """A training row: `err_vs_torch`, `tawa_err_vs_f32` and `torch_err_vs_f32`
    are the weights' gradients' errors (all weights together); the times are
    per step."""

    worst_vs_torch: float = math.nan
    """The largest relative error of one weight's gradient, tawa against torch."""
    worst_weight: str = ""
    """Which weight that is (`layer.name`, `final.name`)."""
    out_err_vs_torch: float = math.nan
    """tawa's final hidden states against torch's (shown, not checked)."""

    def check(self, tolerance: float = GRAD_TOLERANCE) -> None:
        super().check(tolerance)
        if not self.failure and not self.worst_vs_torch <= WEIGHT_TOLERANCE:
            self.failure = (f"relative error of a weight's gradient above {WEIGHT_TOLERANCE:g}: "
                            f"{self.worst_weight} {self.worst_vs_torch:.2e}")

    @property
    def detail(self) -> str:
        """What the table adds to the row's line."""
        if math.isnan(self.worst_vs_torch):
            return ""
        return f"  worst weight {self.worst_weight} {self.worst_vs_torch:.2e}; output {self.out_err_vs_torch:.2e}"

    def as_dict(self) -> dict[str, Any]:
        data = super().as_dict()
        data["tawa_ms_per_step"], data["torch_ms_per_step"] = (data.pop("tawa_ms_per_forward"),
                                                               data.pop("torch_ms_per_forward"))
        return {**data, "worst_vs_torch": self.worst_vs_torch, "worst_weight": self.worst_weight,
                "out_err_vs_torch": self.out_err_vs_torch}


def training_ops(ops: Any) -> Any:
    """`ops` (a `model_ops.Ops`) for a training step: the entries of
    `TORCH_IN_TRAINING` that run a tawa operator run torch's instead
    (their notes say so); a table that runs none of them is returned as it is."""
    from tawa.bench import model_ops

    torch_ops = model_ops.torch_ops()
    changes: dict[str, Any] = {}
    notes = dict(ops.notes)
    for entry in TORCH_IN_TRAINING:
        if notes.get(entry, "").startswith("tawa.torch."):
            changes[entry] = getattr(torch_ops, entry)
            notes[entry] = f"{torch_ops.notes[entry]}: tawa.torch.{entry} has no backward (--train)"
    return replace(ops, notes=notes, **changes) if changes else ops


def weights_of(layers: Sequence[dict[str, Any]], final: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """Every weight tensor of the model, and its name (`3.w_qkv`, `final.w`)."""
    tensors, names = [], []
    for i, w in enumerate(layers):
        for key, t in w.items():
            tensors.append(t)
            names.append(f"{i}.{key}")
    for key, t in final.items():
        tensors.append(t)
        names.append(f"final.{key}")
    return tensors, names


def loss_probe(shape: Sequence[int], device: Any, seed: int) -> Any:
    """The fixed random float32 tensor P of the loss mean(out ∘ P)."""
    import torch

    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(*shape, generator=generator, device=device)


def make_step(cfg: Any, ops: Any, layers: Sequence[dict[str, Any]], final: dict[str, Any], x: Any, rope: Any,
              probe: Any) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
    """One training step of the model on x with `ops`: (final hidden states,
    the gradients of every weight, in `weights_of`'s order)."""
    import torch

    from tawa.bench import model_nets as nets

    params, _ = weights_of(layers, final)

    def step() -> tuple[Any, tuple[Any, ...]]:
        out = nets.forward(cfg, ops, layers, final, x, rope)
        loss = (out.float() * probe).mean()
        return out.detach(), torch.autograd.grad(loss, params)
    return step


def grad_errors(got: Sequence[Any], want: Sequence[Any], names: Sequence[str]) -> tuple[float, float, str]:
    """(relative error of all gradients together, the largest of one
    weight's, that weight's name); float64 sums, NaN where not finite."""
    num = den = 0.0
    worst, worst_name = -1.0, ""
    for g, w, name in zip(got, want, names, strict=True):
        diff = float((g.double() - w.double()).norm())
        size = float(w.double().norm())
        num, den = num + diff * diff, den + size * size
        err = diff / size if size > 0 else (0.0 if diff == 0 else math.inf)
        if not err <= worst:  # NaN is the worst
            worst, worst_name = err, name
    return math.sqrt(num) / math.sqrt(den) if den > 0 else math.nan, worst, worst_name


def float32_grads(cfg: Any, layers: Sequence[dict[str, Any]], final: dict[str, Any], x: Any, rope: Any,
                  probe: Any) -> tuple[Any, ...]:
    """The torch table's step in float32 on float32 copies of the bf16
    weights (TF32 off): the weights' gradients."""
    import torch

    from tawa.bench.model_ops import torch_ops

    def f32(w: dict[str, Any]) -> dict[str, Any]:
        return {k: v.detach().float().requires_grad_() for k, v in w.items()}

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        rope32 = None if rope is None else tuple(t.float() for t in rope)
        step = make_step(cfg, torch_ops(), [f32(w) for w in layers], f32(final), x.float(), rope32, probe)
        return step()[1]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def measure_train(row: TrainRow, cfg: Any, tables: dict[str, Any], layers: Sequence[dict[str, Any]],
                  final: dict[str, Any], x: Any, rope: Any, probe: Any, ref: Sequence[Any] | None, rounds: int,
                  log: Callable[[str], None]) -> None:
    """Warms up, checks and times both variants' training steps (fills `row`);
    `ref`: the float32 gradients, or None."""
    from tawa.bench.model_run import WallClock

    _, names = weights_of(layers, final)
    timers: dict[str, Any] = {}
    for name, ops in tables.items():
        start = time.perf_counter()
        timers[name] = WallClock(make_step(cfg, ops, layers, final, x, rope, probe))
        for _ in range(WARMUP):
            timers[name]()
        log(f"{row.model} {row.shape} train: {name} warmed up in {time.perf_counter() - start:.1f} s")
    estimate = max(timer() for timer in timers.values())
    (tawa_out, tawa_grads), (torch_out, torch_grads) = timers["tawa"].out, timers["torch"].out
    row.err_vs_torch, row.worst_vs_torch, row.worst_weight = grad_errors(tawa_grads, torch_grads, names)
    row.out_err_vs_torch = relative_error(tawa_out, torch_out)
    if ref is not None:
        row.tawa_err_vs_f32 = grad_errors(tawa_grads, ref, names)[0]
        row.torch_err_vs_f32 = grad_errors(torch_grads, ref, names)[0]
    row.check()
    if not row.correct:
        return
    for timer in timers.values():
        timer.out = None  # the gradients checked: let the steps' memory go
    times = interleaved(timers, rounds, iters_for(estimate))
    row.tawa_ms, row.torch_ms = times["tawa"], times["torch"]


def run(model_names: Sequence[str], shapes: Sequence[tuple[int, int]], rounds: int, layers: int | None,
        log: Callable[[str], None],
        on_row: Callable[[list[Row], dict[str, Any]], None] = lambda rows, meta: None,
        ) -> tuple[list[Row], dict[str, Any]]:
    """The training rows of every model and shape (module docstring)."""
    torch = cuda_torch()
    import tawa
    from tawa.bench import model_nets as nets
    from tawa.bench import model_ops

    try:
        tables = {"tawa": training_ops(model_ops.tawa_ops()), "torch": model_ops.torch_ops()}
    except ImportError as err:
        raise BenchError(str(err)) from None
    torch.manual_seed(SEED)
    configs = [nets.MODELS[name].with_layers(layers) for name in model_names]
    meta: dict[str, Any] = {
        "workload": "transformer training steps (forward + backward of a scalar loss to every weight's "
                    "gradient), bf16, eager, tawa's operators vs torch's",
        "train": True,
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__, "tawa": tawa.__version__,
        "rounds": rounds, "tolerance": GRAD_TOLERANCE, "weight_tolerance": WEIGHT_TOLERANCE, "seed": SEED,
        "loss": "mean(final hidden states in float32 * a fixed random float32 tensor of their shape)",
        "timing": {"train": "wall clock from the call to a synchronize after torch.autograd.grad(loss, every "
                            "weight); eager"},
        "models": {cfg.name: asdict(cfg) for cfg in configs},
        "tensor_parallel": 1,
        "ops": logged_ops(configs, tables, log),
    }
    rows: list[Row] = []
    smallest = min(shapes, key=lambda s: (s[0] * s[1], s))
    for cfg in configs:
        generator = torch.Generator(device="cuda").manual_seed(SEED)
        weights, final = nets.init_weights(cfg, "cuda", torch.bfloat16, generator)
        for t in weights_of(weights, final)[0]:
            t.requires_grad_()
        for B, S in shapes:
            x = tokens(cfg, B, S)
            rope = nets.rope_tables(cfg, S, "cuda") if cfg.family == "llama" else None
            probe = loss_probe(x.shape, "cuda", input_seed(B, S) + 1)
            row = TrainRow(cfg.name, B, S, "train")
            try:
                ref = float32_grads(cfg, weights, final, x, rope, probe) if (B, S) == smallest else None
                measure_train(row, cfg, tables, weights, final, x, rope, probe, ref, rounds, log)
            except Exception as err:  # the row fails, loudly; the others still run
                lines = str(err).strip().splitlines()
                row.failure = f"{type(err).__name__}: {lines[0] if lines else ''}"
            ref = None
            if row.correct:
                log(f"{row.model} {row.shape} train: tawa {row.tawa_median:.3f} ms, torch "
                    f"{row.torch_median:.3f} ms, tawa/torch {row.ratio:.3f}")
            else:
                print(f"{PROG}: error: {row.model} {row.shape} train: {row.failure}", file=sys.stderr, flush=True)
            rows.append(row)
            on_row(rows, meta)
            del x, rope, probe
            torch.cuda.empty_cache()
        del weights, final
        torch.cuda.empty_cache()
    return rows, meta
