"""Program order (tawa.analysis.program_order): the longest-first, column
and paired ids are bijections of the grid in the stated order, the analyses
behind `order=auto` accept exactly the loops whose work grows with program
id 0 and the kernels whose streamed tiles do not depend on it, and attention
in longest-first, paired and column order computes what the tile program
computes on the CTA simulator, with fewer CTAs than programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from example_cases import BF16, EXAMPLES, fresh_outputs
from example_cases import Case as ExampleCase
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

import tawa
from tawa.analysis.program_order import (
    ORDER_ATTR,
    pair_reuse_bytes,
    streams_shared_along_pid0,
    work_grows_with_pid0,
)
from tawa.diagnostics import TawaError
from tawa.interpreters.arith import TensorArithFunctions
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.utils import column_ids, longest_first_ids, pair_members, paired_ids


def _ids_function(axes: int, order=longest_first_ids) -> Interpreter:
    """An interpreter holding @ids(t, gx, gy[, gz]) -> the ids of t in `order`."""
    block = Block(arg_types=[IndexType()] * (1 + axes))
    ids = order(block.args[0], list(block.args[1:]), InsertPoint.at_end(block))
    block.add_op(func.ReturnOp(*ids.values()))
    module = ModuleOp([func.FuncOp("ids", ([IndexType()] * (1 + axes), [IndexType()] * axes), Region(block))])
    interp = Interpreter(module)
    interp.register_implementations(TensorArithFunctions())
    interp.register_implementations(FuncFunctions())
    return interp


@pytest.mark.parametrize("axes", [2, 3])
def test_longest_first_is_a_descending_bijection(axes: int):
    interp = _ids_function(axes)
    for grid in itertools.product(range(1, 5), range(1, 4), *([range(1, 3)] if axes == 3 else [])):
        programs = int(np.prod(grid))
        got = [tuple(int(v) for v in interp.call_op("ids", (t, *grid))) for t in range(programs)]
        assert sorted(got) == list(itertools.product(*(range(g) for g in grid))), grid
        rest = programs // grid[0]
        for t, ids in enumerate(got):
            r = t % rest
            assert ids == (grid[0] - 1 - t // rest, r % grid[1], *([r // grid[1]] if axes == 3 else [])), (grid, t)


@pytest.mark.parametrize("axes", [2, 3])
def test_column_is_a_bijection_with_pid0_fastest(axes: int):
    interp = _ids_function(axes, column_ids)
    for grid in itertools.product(range(1, 5), range(1, 4), *([range(1, 3)] if axes == 3 else [])):
        programs = int(np.prod(grid))
        got = [tuple(int(v) for v in interp.call_op("ids", (t, *grid))) for t in range(programs)]
        # pid_0 fastest, then pid_1, then pid_2: the reversed lexicographic order of the grid.
        assert got == [ids[::-1] for ids in itertools.product(*(range(g) for g in reversed(grid)))], grid


@pytest.mark.parametrize(("file", "kernel", "shared"), [
    ("attention_fwd.mlir", "attention_fwd", True), ("attention_fwd_d64.mlir", "attention_fwd_d64", True),
    ("gemm_chain.mlir", "gemm_chain", True), ("attention_fwd.mlir", "attention_fwd_causal", False),
    ("attention_fwd_bias.mlir", "attention_fwd_bias", False), ("gemm.mlir", "gemm", False),
    ("gemm_softmax.mlir", "gemm_softmax", False)])
def test_streams_shared_along_pid0(file: str, kernel: str, shared: bool):
    # Non-causal attention's K and V belong to the head (pid_1); causal attention's key loop stops
    # at the diagonal (pid_0), the bias is read per query block, and a GEMM's A tiles are its rows.
    module = tawa.parse((EXAMPLES / file).read_text())
    [f] = [f for f in module.ops if f.sym_name.data == kernel]
    assert streams_shared_along_pid0(f) is shared


def _paired_function(axes: int, short_first: bool = False) -> Interpreter:
    """@pair(q, half, gx, gy[, gz]) -> members; @ids(q, m, half, gx, gy[, gz]) -> the paired ids."""
    index = IndexType()
    members_block = Block(arg_types=[index] * (3 + axes - 1))
    q, half, *grid = members_block.args
    members_block.add_op(func.ReturnOp(pair_members(q, half, grid[0], InsertPoint.at_end(members_block))))
    ids_block = Block(arg_types=[index] * (3 + axes))
    q, m, half, *grid = ids_block.args
    ids = paired_ids(q, m, half, list(grid), InsertPoint.at_end(ids_block), short_first)
    ids_block.add_op(func.ReturnOp(*ids.values()))
    module = ModuleOp([
        func.FuncOp("pair", ([index] * (2 + axes), [index]), Region(members_block)),
        func.FuncOp("ids", ([index] * (3 + axes), [index] * axes), Region(ids_block)),
    ])
    interp = Interpreter(module)
    interp.register_implementations(TensorArithFunctions())
    interp.register_implementations(FuncFunctions())
    return interp


@pytest.mark.parametrize("short_first", [False, True], ids=["long-first", "short-first"])
@pytest.mark.parametrize("axes", [2, 3])
def test_paired_is_a_bijection_of_balanced_pairs(axes: int, short_first: bool):
    """Over every pair and its members: each program once; a pair's pid_0 sum
    to gx - 1 (so their causal work is the same for every pair), the heavier
    first (the lighter with `short_first`); consecutive pairs of one column
    (pid_1, pid_2) together."""
    interp = _paired_function(axes, short_first)
    for grid in itertools.product(range(1, 6), range(1, 4), *([range(1, 3)] if axes == 3 else [])):
        half = (grid[0] + 1) // 2
        pairs = half * int(np.prod(grid[1:]))
        got = []
        for q in range(pairs):
            (members,) = interp.call_op("pair", (q, half, *grid))
            ids = [tuple(int(v) for v in interp.call_op("ids", (q, m, half, *grid))) for m in range(members)]
            assert len(ids) == (1 if grid[0] % 2 and q % half == half - 1 else 2), (grid, q)
            assert ids[0][0] + ids[-1][0] == grid[0] - 1, (grid, q, ids)  # the same program when alone
            first, last = (ids[-1][0], ids[0][0]) if short_first else (ids[0][0], ids[-1][0])
            assert first >= last and all(i[1:] == ids[0][1:] for i in ids), (grid, q, ids)
            r = q // half
            assert ids[0][1:] == (r % grid[1], *([r // grid[1]] if axes == 3 else [])), (grid, q)
            got += ids
        assert sorted(got) == list(itertools.product(*(range(g) for g in grid))), grid


KERNEL = """
func.func @k(%n: index, %m: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cm1 = arith.constant -1 : index
  %p = tile.program_id 0
  %q = tile.program_id 1
  %p64 = arith.muli %p, %c64 : index
  {body}
  scf.for %i = {lb} to %ub step %c1 {{
  }}
  func.return
}}
"""

GROWS = {
    "causal bound": "%d = arith.addi %p64, %c64 : index\n %ub = arith.minui %d, %n : index",
    "ceildiv and casts": (
        "%a = arith.index_cast %p64 : index to i32\n %b = arith.extui %a : i32 to i64\n"
        "%c = arith.index_cast %b : i64 to index\n %ub = arith.ceildivui %c, %c64 : index"
    ),
    "max of growing values": "%d = arith.addi %p, %q : index\n %ub = arith.maxsi %d, %p64 : index",
    "minus a fixed value": "%ub = arith.subi %p64, %n : index",
}
FLAT_OR_OTHER = {
    "fixed bound": "%ub = arith.addi %n, %q : index",
    "shrinking bound": "%ub = arith.subi %n, %p64 : index",
    "negative factor": "%ub = arith.muli %p, %cm1 : index",
    "unknown factor": "%ub = arith.muli %p, %m : index",
    "division by a variable": "%ub = arith.divui %n, %p : index",
    "select": "%c = arith.cmpi ult, %p, %n : index\n %ub = arith.select %c, %p, %n : index",
}


@pytest.mark.parametrize("body", GROWS.values(), ids=GROWS.keys())
def test_growing_bounds(body: str):
    kernel = tawa.parse(KERNEL.format(body=body, lb="%c0")).body.block.first_op
    assert work_grows_with_pid0(kernel) is not None


@pytest.mark.parametrize("body", FLAT_OR_OTHER.values(), ids=FLAT_OR_OTHER.keys())
def test_other_bounds(body: str):
    kernel = tawa.parse(KERNEL.format(body=body, lb="%c0")).body.block.first_op
    assert work_grows_with_pid0(kernel) is None


def test_lower_bound_moving_with_pid0():
    """A window that slides with pid_0 (lb and ub both grow) is not growing work."""
    body = "%ub = arith.addi %p64, %c64 : index"
    kernel = tawa.parse(KERNEL.format(body=body, lb="%p64")).body.block.first_op
    assert work_grows_with_pid0(kernel) is None


@pytest.mark.parametrize(("order", "persistent", "ctas"), [
    ("longest-first", False, None), *(pytest.param(*case, marks=pytest.mark.slow) for case in [
        ("longest-first", True, 4), ("paired", True, 3), ("auto", True, 3), ("paired-short-first", True, 3)])],
    ids=["longest-first-persistent", "longest-first-one-cta-per-program", "paired", "auto", "paired-short-first"])
def test_causal_attention_orders_on_the_simulator(order: str, persistent: bool, ctas: int | None):
    """The whole pipeline on S = 300 (3 query blocks, the last ragged) and 2
    heads against the tile program.  longest-first, persistent: the 6
    programs on 4 CTAs (CTAs 0 and 1 run query block 2, then block 0);
    without tawa-persistent, CTA ids mapped to programs.  paired (auto's
    choice for a persistent causal kernel): 4 pairs on 3 CTAs — CTA 0 runs
    blocks 2 and 0 of head 0, then block 1 of head 1 alone (short first:
    blocks 0 and 2)."""
    _order_on_the_simulator("attention_fwd_causal", "paired" if order == "auto" else order, seed=12,
                            persistent=persistent, order=order, ctas=ctas)


@pytest.mark.parametrize("persistent", [pytest.param(True, marks=pytest.mark.slow), False], ids=["persistent", "one-cta-per-program"])
def test_column_order_attention_on_the_simulator(persistent: bool):
    """Non-causal attention in auto's column order, S = 300 (3 query blocks,
    the last ragged) and 2 heads, against the tile program: persistent, the 6
    programs on 4 CTAs (CTA 0 runs block 0 of head 0, then block 1 of head 1);
    without tawa-persistent, program id = CTA id."""
    _order_on_the_simulator("attention_fwd", "column", seed=13, persistent=persistent, ctas=4 if persistent else None)


def _order_on_the_simulator(kernel: str, expected: str, seed: int, ctas: int | None, **options) -> None:
    """`kernel` of examples/attention_fwd.mlir through the pipeline with
    `options` runs in order `expected` and computes what the tile program
    computes, at S = 300 (3 query blocks, the last ragged) with 2 batches of
    one head (which take the place of 2 heads: program id 2 counts them), on
    `ctas` CTAs (None: one per program)."""
    source = tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")
    module = ModuleOp([f.clone() for f in source.ops if f.sym_name.data == kernel])
    HopperPipelinePass.of(prepare=False, **options).apply(tawa.context(), module)
    assert module.body.block.first_op.attributes[ORDER_ATTR].data == expected
    rng = np.random.default_rng(seed)
    seq, batch = 300, 2  # two batches of one head: grid (3, 1, 2), the programs of two heads before
    q, k, v = (rng.standard_normal((batch, 1, seq, 128)).astype(BF16) for _ in range(3))
    o = np.full((batch, 1, seq, 128), np.nan, BF16)
    c = ExampleCase([q, k, v, o, seq, seq, np.float32(0.088), 1], (3, 1, batch), (3,))
    want, got = fresh_outputs(c), fresh_outputs(c)
    tawa.interpret(source, kernel, c.grid, *want)
    tawa.interpret(module, kernel, c.grid, *got, schedule=Schedule("random", seed=seed), ctas=ctas)
    w, g = want[3].astype(np.float64), got[3].astype(np.float64)
    assert not np.isnan(g).any(), f"{int(np.isnan(g).sum())} output elements never written"
    assert np.linalg.norm(g - w) / np.linalg.norm(w) <= 1e-2


@pytest.mark.parametrize("order", ["paired", "paired-short-first"])
def test_paired_needs_a_persistent_kernel(order: str):
    source = tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")
    with pytest.raises(TawaError, match=rf"order '{order}' needs a persistent kernel") as err:
        HopperPipelinePass(prepare=False, persistent=False, order=order).apply(tawa.context(), source)
    assert str(err.value).startswith("examples/attention_fwd.mlir:"), str(err.value)


# The causal kernels' bytes between a key block's two reads in paired order
# (`pair_reuse_bytes`, MiB) and the order auto takes for them.
PAIR_REUSE = {
    ("attention_fwd.mlir", "attention_fwd_causal"): (16.5, "paired"),
    ("attention_fwd_d64.mlir", "attention_fwd_d64_causal"): (8.25, "paired"),
    ("attention_fwd_d64.mlir", "attention_fwd_d64_causal_m192"): (12.375, "paired"),
    ("attention_fwd_d256.mlir", "attention_fwd_d256_causal"): (33.0, "paired-short-first"),
    ("attention_fwd_d256_n80.mlir", "attention_fwd_d256_n80_causal"): (33.0, "paired-short-first"),
    ("attention_fwd_fp8.mlir", "attention_fwd_fp8_causal"): (8.25, "paired"),
}


@pytest.mark.parametrize(("file", "kernel"), [pair if pair[1] == "attention_fwd_d256_causal" else pytest.param(*pair, marks=pytest.mark.slow)
                                               for pair in PAIR_REUSE], ids=[k for _, k in PAIR_REUSE])
def test_auto_runs_the_short_member_first_where_a_pair_outruns_the_l2(file: str, kernel: str):
    """2·SM_COUNT·(iterations per program id 0)·(bytes per iteration): head
    dim 256's 64 KiB of K and V per 64 keys, two blocks per 128 query rows,
    is 33 MiB, over half the 50 MiB L2; head dim 128's one 128-key block of
    64 KiB is 16.5 MiB.  The whole pipeline records the order it took."""
    mib, order = PAIR_REUSE[(file, kernel)]
    source = tawa.parse((EXAMPLES / file).read_text())
    module = ModuleOp([f.clone() for f in source.ops if f.sym_name.data == kernel])
    HopperPipelinePass().specialize_pass().apply(tawa.context(), module)
    loop = work_grows_with_pid0(module.body.block.first_op)
    assert loop is not None and pair_reuse_bytes(loop) == mib * 2**20
    module = ModuleOp([f.clone() for f in source.ops if f.sym_name.data == kernel])
    HopperPipelinePass(prepare=False).apply(tawa.context(), module)
    assert module.body.block.first_op.attributes[ORDER_ATTR].data == order


LOADING = """
func.func @k(%A: memref<?x?xbf16>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %p = tile.program_id 0
  %p64 = arith.muli %p, %c64 : index
  {body}
  scf.for %i = %c0 to %ub step %c32 {{
    %t = tile.load %A[%i, %c0] : memref<?x?xbf16> -> tensor<32x16xbf16>
  }}
  func.return
}}
"""


@pytest.mark.parametrize(("body", "reuse"), [
    ("%d = arith.addi %p64, %c64 : index\n %ub = arith.minui %d, %n : index", 2 * 132 * 2 * 1024),
    ("%d = arith.index_cast %p64 : index to i32\n %e = arith.index_cast %d : i32 to index\n"
     " %ub = arith.ceildivui %e, %c32 : index", 2 * 132 * 1024 // 16),
    ("%c = arith.cmpi ult, %p64, %n : index\n %ub = arith.select %c, %p64, %n : index", None),
], ids=["causal bound", "ceildiv and casts", "select"])
def test_pair_reuse_bytes_of_a_loop(body: str, reuse: int | None):
    """The growth of the trip count per program id 0 (64 rows of 32 a step:
    2; 64 / 32 rows of 32 a step: 1/16) times 2·132 CTAs times the bytes the
    body loads (32×16 bf16: 1 KiB); None where a bound is not affine in
    program id 0."""
    kernel = tawa.parse(LOADING.format(body=body)).body.block.first_op
    loop = next(o for o in kernel.walk() if isinstance(o, scf.ForOp))
    assert pair_reuse_bytes(loop) == reuse
