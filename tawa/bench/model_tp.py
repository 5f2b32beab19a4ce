"""`python -m tawa.bench model --tp N`: the model benchmark tensor-parallel
over N GPUs of one host, one process per GPU, through `torch.distributed`
(NCCL), with tawa's operators inside each process.

Megatron's split of a transformer layer, with both variants (tawa's
operators and torch's) split alike:

* **column-parallel** layers — the fused QKV projection, GPT-2's first MLP
  layer, Llama's gate and up projections — keep the rows of the weight (and
  bias) that produce this rank's heads or hidden units: each rank holds
  H/N query heads and Hkv/N key/value heads (`shard`), and computes
  attention on them alone;
* **row-parallel** layers — the attention output projection, GPT-2's second
  MLP layer, Llama's down projection — keep the matching columns of the
  weight: each rank's product is a partial sum over its slice of K, summed
  over the ranks by one all-reduce.  These are the linear layers that add
  the residual stream (`model_nets`' blocks pass `residual=`), so
  `tp_ops` recognises them by it: rank 0 adds the bias and the residual in
  its epilogue, the others add nothing, and the sum over ranks is the layer;
* norms, the rotary embedding and the final norm run replicated.

Every rank draws the whole model from the same seed and keeps its shard,
so the ranks' weights agree; all ranks hold the same hidden states after
each all-reduce, so each checks the same errors, and the forwards they
time run the same collectives in the same order (`agree`: the number of
forwards timed is the ranks' maximum).  Rank 0 reports.  The check is
against the float32 reference of the whole, unsplit model.
`compile` mode is not offered here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

COLUMN_PARALLEL = ("w_fc", "b_fc", "w_gate", "w_up")
"""Weights split by rows (outputs) besides the QKV projection's."""
ROW_PARALLEL = ("w_o", "w_proj", "w_down")
"""Weights split by columns (inputs): partial sums, all-reduced."""
MODES = ("eager", "graph")


@dataclass(frozen=True)
class TensorParallel:
    rank: int
    world: int
    group: Any = None
    """The process group (None: the default one)."""

    def config(self, cfg: Any) -> Any:
        """The sizes one rank computes: its heads and hidden units."""
        for what, n in (("heads", cfg.heads), ("kv_heads", cfg.kv_heads), ("hidden", cfg.hidden)):
            if n % self.world:
                raise ValueError(f"{cfg.name}: {what} = {n} do not split over {self.world} GPUs")
        return replace(cfg, heads=cfg.heads // self.world, kv_heads=cfg.kv_heads // self.world,
                       hidden=cfg.hidden // self.world)

    def shard(self, cfg: Any, layer: dict[str, Any]) -> dict[str, Any]:
        """This rank's part of one layer's weights (module docstring)."""
        D, r, n = cfg.head_dim, self.rank, self.world
        h, hk = cfg.heads // n, cfg.kv_heads // n
        q_rows = slice(r * h * D, (r + 1) * h * D)
        k_rows = slice((cfg.heads + r * hk) * D, (cfg.heads + (r + 1) * hk) * D)
        v_rows = slice((cfg.heads + cfg.kv_heads + r * hk) * D, (cfg.heads + cfg.kv_heads + (r + 1) * hk) * D)
        out: dict[str, Any] = {}
        for name, t in layer.items():
            if name in ("w_qkv", "b_qkv"):
                import torch

                t = torch.cat([t[q_rows], t[k_rows], t[v_rows]])
            elif name in COLUMN_PARALLEL:
                part = t.shape[0] // n
                t = t[r * part:(r + 1) * part]
            elif name in ROW_PARALLEL:
                part = t.shape[1] // n
                t = t[:, r * part:(r + 1) * part]
            out[name] = t.contiguous()
        return out

    def ops(self, ops: Any) -> Any:
        """`ops` with row-parallel linear layers: those given a residual."""
        import torch.distributed as dist

        inner, first = ops.linear, self.rank == 0

        def linear(x: Any, w: Any, bias: Any = None, activation: str | None = None, residual: Any = None) -> Any:
            if residual is None:
                return inner(x, w, bias, activation)
            if activation is not None:
                raise ValueError("a row-parallel layer sums partial products: its activation would come after the sum")
            y = inner(x, w, bias if first else None, None, residual if first else None)
            dist.all_reduce(y, group=self.group)
            return y

        notes = {**ops.notes, "linear": ops.notes["linear"] + f"; tensor-parallel over {self.world} GPUs "
                 "(row-parallel layers all-reduced by NCCL)"}
        return replace(ops, linear=linear, notes=notes)

    def agree(self, value: float) -> float:
        """The ranks' maximum of `value` (every rank calls it, in step)."""
        import torch
        import torch.distributed as dist

        t = torch.tensor([value], dtype=torch.float64, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return float(t.item())


def worker(rank: int, world: int, port: int, options: dict[str, Any], report: Any, write_json: Any) -> None:
    """One rank: joins the group, runs the rows with `TensorParallel`; rank 0
    logs them, writes the JSON after each row (`write_json(path, rows,
    meta)`) and reports them (`report(rows, meta, plot)` → exit status), and
    a failed report exits 1."""
    import sys
    import time

    import torch
    import torch.distributed as dist

    from tawa.bench.model_run import run

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    started = time.perf_counter()

    def log(line: str) -> None:
        if rank == 0:
            print(f"[{time.perf_counter() - started:6.1f} s] {line}", file=sys.stderr, flush=True)

    def on_row(rows: list[Any], meta: dict[str, Any]) -> None:
        if rank == 0 and options["json"]:
            write_json(options["json"], rows, meta)

    try:
        rows, meta = run(options["models"], options["shapes"], options["modes"], options["rounds"],
                         options["layers"], log, on_row, tp=TensorParallel(rank, world))
        code = report(rows, meta, options["plot"]) if rank == 0 else 0
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if code:
        raise SystemExit(code)


def spawn(world: int, options: dict[str, Any], report: Any, write_json: Any) -> None:
    """Runs `worker` on `world` GPUs of this host, one process each (raises
    when a rank fails); `options`: the command's parsed arguments; `report`
    and `write_json`: module-level functions (the processes unpickle them)."""
    import socket

    import torch
    import torch.multiprocessing as mp

    from tawa.bench.gemm import BenchError

    if torch.cuda.device_count() < world:
        raise BenchError(f"--tp {world} needs {world} GPUs; this host has {torch.cuda.device_count()}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, port, options, report, write_json), nprocs=world, join=True)
