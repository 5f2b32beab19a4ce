"""Loads placed by a loaded value: `tl.load(ref, offsets)` without a shape
reads one element (`tile.load_scalar`), and its value places other loads and
stores.  The examples examples/python/gather_rows.py (a row-block
gather, a kernel without dots: its consumers read the index and load the
block themselves) and examples/python/grouped_gemm.py (a table gives each
program its A row block and its expert; the producer reads both to place
its TMA loads, the consumers read the row block to place their store) and
examples/python/paged_gemm.py (a page table read in the K loop) and
examples/python/paged_attention.py (a block table and sequence lengths) are
checked in the tile interpreter against NumPy, through the whole
`tawa-hopper-pipeline` in the CTA simulator against the tile program (tables
permuted, entries repeated, entries past the tensors' ends, negative or
beyond 2^31 rows, which the guards of `tawa/transforms/partition/loaded_offsets.py`
turn into zeros, and programs past the table's end), and by ptxas; and what
stays refused is a one-line located error."""

from __future__ import annotations

import io
import runpy
from contextlib import redirect_stderr
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from ptxas_check import PTXAS, assert_assembles_without_spills, needs_ptxas
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.diagnostics import TawaError
from tawa.interpreters.schedule import Schedule
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.partition.warp_specialize import WarpSpecializePass
from tawa.transforms.prepare.prepare_ptx import PreparePtxPass
from tawa.verify.verify_protocol import VerifyProtocolPass

ROOT = Path(__file__).resolve().parents[2]
BF16 = ml_dtypes.bfloat16


@cache
def kernel(name: str):
    return runpy.run_path(str(ROOT / "examples" / "python" / f"{name}.py"))[name]


@cache
def lowered(name: str, **constexprs) -> ModuleOp:
    """The structured output the simulator runs (the PTX printer's input, less scf-to-cf)."""
    module = tawa.parse(kernel(name).ir(**constexprs), f"{name}.py")
    pipeline, ctx = HopperPipelinePass(prepare=False, stages=2), tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(2), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    return module


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


# --------------------------------------------------------------------------- the row-block gather

BM, BN = 64, 128


def gather_case(seed: int, programs: int = 8):
    """X of 5 row blocks (the last ragged); an index table with repeats,
    indices past X, a negative one and one whose rows lie beyond 2^31 (all
    three read zeros) and, for the last program, no entry at all (its index
    and scale read 0)."""
    rng = np.random.default_rng(seed)
    rows, n = 5 * BM - 10, 200
    x = rng.standard_normal((rows, n)).astype(BF16)
    idx = rng.permutation(np.array([3, 0, 3, 4, 7, -1, 2**31 - 1], np.int32))  # 3 twice
    scale = rng.uniform(0.5, 2.0, len(idx)).astype(np.float32)
    padded = np.zeros((5 * BM, n))
    padded[:rows] = f64(x)
    ref = np.zeros((programs * BM, n))
    for i, (j, s) in enumerate(zip(idx, scale)):
        if 0 <= j < 5:
            ref[i * BM:(i + 1) * BM] = f64((padded[j * BM:(j + 1) * BM] * np.float64(s)).astype(BF16))
    return x, idx, scale, n, ref, (programs, -(-n // BN))


@pytest.mark.parametrize("seed", [0, 1])
def test_gather_interpreter_matches_numpy(seed: int):
    x, idx, scale, n, ref, grid = gather_case(seed)
    out = np.full(ref.shape, np.nan, BF16)
    kernel("gather_rows").interpret(grid, x, idx, scale, out, n)
    assert np.array_equal(f64(out), ref)


@pytest.mark.parametrize("seed", [0, 1])
def test_gather_simulator_matches_the_tile_program(seed: int):
    x, idx, scale, n, ref, grid = gather_case(seed)
    got = np.full(ref.shape, np.nan, BF16)
    tawa.interpret(lowered("gather_rows"), "gather_rows", grid, x, idx, scale, got, n,
                   schedule=Schedule("random", seed=seed), ctas=2)
    assert np.array_equal(f64(got), ref)  # one rounding per element in both: bit for bit


# --------------------------------------------------------------------------- the grouped GEMM

GM = 128


def grouped_case(seed: int, m: int = 3 * GM - 20, n: int = 100, k: int = 3 * 64 - 20, experts: int = 3):
    """Row blocks in a shuffled order, experts repeated, and experts past
    the last, negative or beyond 2^31 rows of W (their W reads zeros); a
    ragged last row block, N and K."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(BF16)
    w = rng.standard_normal((experts, n, k)).astype(BF16)
    blocks = -(-m // GM)
    choices = [0, 2, experts, -1, 2**31 - 1]
    table = np.stack([rng.permutation(blocks), rng.choice(choices, blocks)], axis=1).astype(np.int32)
    ref = np.zeros((m, n))
    for blk, e in table:
        rows = slice(blk * GM, min(blk * GM + GM, m))
        if 0 <= e < experts:
            ref[rows] = f64(a[rows]) @ f64(w[e]).T
    return a, w, table, n, k, ref, (blocks, -(-n // 128))


@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_gemm_interpreter_matches_numpy(seed: int):
    a, w, table, n, k, ref, grid = grouped_case(seed)
    out = np.full(ref.shape, np.nan, BF16)
    kernel("grouped_gemm").interpret(grid, a, w, table, out, n, k)
    assert not np.isnan(f64(out)).any()
    assert np.linalg.norm(f64(out) - ref) / np.linalg.norm(ref) < 1e-2


@pytest.mark.parametrize("seed, k", [(0, 3 * 64 - 20), (1, 64), (2, 5 * 64)])
def test_grouped_gemm_simulator_matches_the_tile_program(seed: int, k: int):
    """K loops of 1, 3 and 5 iterations against a ring of 2 slots."""
    a, w, table, n, k, _, grid = grouped_case(seed, k=k)
    want = np.full((a.shape[0], n), np.nan, BF16)
    kernel("grouped_gemm").interpret(grid, a, w, table, want, n, k)
    got = np.full_like(want, np.nan)
    tawa.interpret(lowered("grouped_gemm"), "grouped_gemm", grid, a, w, table, got, n, k,
                   schedule=Schedule("random", seed=seed), ctas=2)
    assert not np.isnan(f64(got)).any(), f"{int(np.isnan(f64(got)).sum())} elements of C never written"
    assert np.linalg.norm(f64(got) - f64(want)) / np.linalg.norm(f64(want)) <= 1e-2


@pytest.mark.parametrize("name", ["gather_rows", "grouped_gemm"])
def test_partitions_match_the_tile_program(name: str):
    """After `tawa-warp-specialize` (the aref level: each partition reads
    the table, accesses placed by it are guarded), bit for bit."""
    module = tawa.parse(kernel(name).ir(), f"{name}.py")
    WarpSpecializePass(strict=True).apply(tawa.context(), module)
    if name == "gather_rows":
        x, idx, scale, n, _, grid = gather_case(3)
        args = [x, idx, scale]
        shape, rest = (grid[0] * BM, n), [n]
    else:
        a, w, table, n, k, _, grid = grouped_case(3)
        args, shape, rest = [a, w, table], (a.shape[0], n), [n, k]
    want, got = np.full(shape, np.nan, BF16), np.full(shape, np.nan, BF16)
    kernel(name).interpret(grid, *args, want, *rest)
    tawa.interpret(module, name, grid, *args, got, *rest, schedule=Schedule("random", seed=3))
    assert np.array_equal(f64(want), f64(got), equal_nan=True)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("persistent", [True, False])
def test_grouped_gemm_protocol_is_proved(stages: int, persistent: bool):
    """The barrier protocol of the lowered grouped GEMM is proved at every
    ring depth, persistent or not: the table's values are data to the proof
    (they place TMA boxes, which it does not follow), so the proof is the
    GEMM's."""
    module = tawa.parse(kernel("grouped_gemm").ir(), "grouped_gemm.py")
    HopperPipelinePass(stages=stages, persistent=persistent, prepare=False).apply(tawa.context(), module)
    assert sum(o.name == "nvgpu.load_global_scalar" for o in module.walk()) == 3
    VerifyProtocolPass().apply(tawa.context(), module)


def test_grouped_gemm_producer_reads_the_table():
    """Both partitions read the table: the producer its two entries (they
    place A's and W's TMA loads), the consumers the row block (it places
    their store)."""
    ptx_module = lowered("grouped_gemm")
    loads = [o for o in ptx_module.walk() if o.name == "nvgpu.load_global_scalar"]
    assert len(loads) == 3


@needs_ptxas
@pytest.mark.parametrize("name, constexprs", [("gather_rows", {}), ("grouped_gemm", {}),
                                              ("grouped_gemm", {"BLOCK_M": 64, "BLOCK_N": 256}),
                                              ("paged_attention", {}), ("paged_attention", {"HEAD_DIM": 64}),
                                              ("paged_attention", {"CAUSAL": True})])
def test_examples_assemble_without_spills(tmp_path: Path, name: str, constexprs: dict):
    ptx = kernel(name).compile(**constexprs).ptx
    assert "ld.global.b32" in ptx
    assert_assembles_without_spills(ptx, tmp_path)


# --------------------------------------------------------------------------- a table read in the K loop

@pytest.mark.parametrize("seed", [0, 1])
def test_a_page_table_read_in_the_k_loop(tmp_path: Path, seed: int):
    """examples/python/paged_gemm.py: B stored as pages (one BLOCK_N x
    BLOCK_K tile of Bᵀ's column block and K block each, in a shuffled pool):
    the producer reads the page of every K step (the basis of paged
    attention's block table) and places that step's TMA load with it; the
    whole pipeline in the CTA simulator matches the tile program, and the
    tile program matches NumPy."""
    k_ = kernel("paged_gemm")
    rng = np.random.default_rng(seed)
    m, n_blocks, k_blocks = 2 * 128 - 30, 2, 3
    a = rng.standard_normal((m, k_blocks * 64)).astype(BF16)
    pages = rng.permutation(n_blocks * k_blocks + 1)[: n_blocks * k_blocks].reshape(n_blocks, k_blocks).astype(np.int32)
    pool = rng.standard_normal(((n_blocks * k_blocks + 1) * 128, 64)).astype(BF16)
    b = np.zeros((n_blocks * 128, k_blocks * 64))
    for j in range(n_blocks):
        for kb in range(k_blocks):
            b[j * 128:(j + 1) * 128, kb * 64:(kb + 1) * 64] = f64(pool[pages[j, kb] * 128:(pages[j, kb] + 1) * 128])
    grid, k = (2, n_blocks), k_blocks * 64
    want = np.full((m, n_blocks * 128), np.nan, BF16)
    k_.interpret(grid, a, pool, pages, want, k)
    ref = f64(a) @ b.T
    assert np.linalg.norm(f64(want) - ref) / np.linalg.norm(ref) < 1e-2
    got = np.full_like(want, np.nan)
    tawa.interpret(lowered("paged_gemm"), "paged_gemm", grid, a, pool, pages, got, k, schedule=Schedule("random", seed=seed), ctas=2)
    assert not np.isnan(f64(got)).any()
    assert np.linalg.norm(f64(got) - f64(want)) / np.linalg.norm(f64(want)) <= 1e-2
    if PTXAS is not None and seed == 0:
        assert_assembles_without_spills(k_.compile().ptx, tmp_path)


# --------------------------------------------------------------------------- paged attention


def paged_attention_case(seed: int, causal: bool, d: int = 64):
    """Two sequences of different lengths in shuffled pages of 128 keys
    (grouped-query heads: two query heads per key/value head); the table
    entry past the shorter one's end points outside the pool.  Causal: the
    queries are each sequence's last q_len positions."""
    rng = np.random.default_rng(seed)
    batch, heads, group, q_len, kv_len, bn = 2, 2, 2, 100, 300, 128
    n_pages = -(-kv_len // bn)
    pool = 2 * batch * n_pages + 1
    q = rng.standard_normal((batch, heads, q_len, d)).astype(BF16)
    kc = rng.standard_normal((pool, heads // group, bn, d)).astype(BF16)
    vc = rng.standard_normal((pool, heads // group, bn, d)).astype(BF16)
    table = rng.permutation(pool)[: batch * n_pages].reshape(batch, n_pages).astype(np.int32)
    lens = np.array([kv_len, 170], np.int32)
    table[1, 2] = -7  # keys 256.. of a sequence of 170: never read
    ref = np.zeros((batch, heads, q_len, d))
    for b in range(batch):
        n = int(lens[b])
        keys = np.concatenate([f64(kc[table[b, j]]) for j in range(-(-n // bn))], axis=1)[:, :n]
        vals = np.concatenate([f64(vc[table[b, j]]) for j in range(-(-n // bn))], axis=1)[:, :n]
        for h in range(heads):
            s = f64(q[b, h]) @ keys[h // group].T / np.sqrt(d)
            if causal:
                s[np.arange(n)[None, :] > np.arange(q_len)[:, None] + n - q_len] = -np.inf
            p = np.exp(s - s.max(1, keepdims=True))
            ref[b, h] = (p / p.sum(1, keepdims=True)) @ vals[h // group]
    args = (q, kc, vc, table, lens)
    rest = (q_len, kv_len, float(1 / np.sqrt(d)), group)
    return args, rest, ref, (-(-q_len // 128), heads, batch)


@pytest.mark.parametrize("causal", [False, True])
def test_paged_attention_matches_numpy_in_the_simulator(causal: bool):
    """examples/python/paged_attention.py: the producer reads each key
    block's page, the consumers each sequence's length (its keys' mask, and
    where its queries sit for the causal mask); the whole pipeline in the
    CTA simulator against the tile program, and that against NumPy."""
    args, rest, ref, grid = paged_attention_case(0, causal)
    want = np.full(ref.shape, np.nan, BF16)
    kernel("paged_attention").interpret(grid, *args, want, *rest, HEAD_DIM=64, CAUSAL=causal)
    assert np.linalg.norm(f64(want) - ref) / np.linalg.norm(ref) < 1e-2
    got = np.full_like(want, np.nan)
    tawa.interpret(lowered("paged_attention", HEAD_DIM=64, CAUSAL=causal), "paged_attention", grid, *args, got,
                   *rest, schedule=Schedule("random", seed=0), ctas=2)
    assert not np.isnan(f64(got)).any()
    assert np.linalg.norm(f64(got) - f64(want)) / np.linalg.norm(f64(want)) <= 1e-3


# --------------------------------------------------------------------------- a loaded offset through scf.if

IF_YIELD = """
func.func @k(%X: memref<?x?xf32>, %Out: memref<?x?xf32>, %Idx: memref<?xi32>, %flag: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %pid = tile.program_id 0
  %i = tile.load_scalar %Idx[%pid] : memref<?xi32> -> i32
  %ii = arith.index_cast %i : i32 to index
  %use = arith.cmpi ne, %flag, %c0 : index
  %row = scf.if %use -> (index) {
    %r = arith.muli %ii, %c64 : index
    scf.yield %r : index
  } else {
    scf.yield %c0 : index
  }
  %x = tile.load %X[%row, %c0] : memref<?x?xf32> -> tensor<64x64xf32>
  %m0 = arith.muli %pid, %c64 : index
  tile.store %x, %Out[%m0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  func.return
}
"""


@pytest.mark.parametrize("flag", [1, 0])
def test_a_loaded_offset_yielded_by_scf_if_is_guarded(tmp_path: Path, flag: int):
    """An offset that an `scf.if` yields from a loaded value is guarded too
    (a negative entry and one past X read zeros, in the simulator as in
    the tile program)."""
    module = tawa.parse(IF_YIELD, "if_yield.mlir")
    WarpSpecializePass(strict=True).apply(tawa.context(), module)
    assert "%row_guarded = arith.select" in str(module)
    rng = np.random.default_rng(flag)
    x = rng.standard_normal((200, 64)).astype(np.float32)
    idx = np.array([2, -1, 7, 1], np.int32)
    want = np.full((256, 64), np.nan, np.float32)
    got = want.copy()
    tawa.interpret(IF_YIELD, "k", (4,), x, want, idx, flag)
    module = tawa.parse(IF_YIELD, "if_yield.mlir")
    pipeline, ctx = HopperPipelinePass(prepare=False, stages=2), tawa.context()
    for p in [pipeline.specialize_pass(), *pipeline.steps(2), *PreparePtxPass.steps()[:-1]]:
        p.apply(ctx, module)
    tawa.interpret(module, "k", (4,), x, got, idx, flag, schedule=Schedule("random", seed=flag), ctas=2)
    assert np.array_equal(want, got)
    if PTXAS is not None and flag:
        assert_assembles_without_spills(tawa.compile(IF_YIELD, "k").ptx, tmp_path)


# --------------------------------------------------------------------------- what stays refused

def write_kernel(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "k.py"
    path.write_text("import tawa\nimport tawa.language as tl\n\n\n" + body)
    return path


def compile_error(path: Path) -> str:
    k = runpy.run_path(str(path))["k"]
    with pytest.raises(TawaError) as err, redirect_stderr(io.StringIO()):
        k.compile()
    return str(err.value)


def test_a_table_the_kernel_writes_is_refused(tmp_path: Path):
    path = write_kernel(tmp_path, '''@tawa.kernel
def k(X: tl.tensor_ref(tl.f32, 2), Idx: tl.tensor_ref(tl.i32, 2)):
    pid = tl.program_id(0)
    i = tl.load(Idx, (pid, 0)).to(tl.index)
    tl.store(Idx, (pid, 0), tl.zeros((1, 1), tl.i32))
    tl.store(X, (pid * 64, 0), tl.load(X, (i * 64, 0), (64, 64)))
''')
    msg = compile_error(path)
    assert msg.startswith(f"{path}:6:1: error: tawa-warp-specialize left @k unchanged: the tile.load_scalar "
                          f"(at {path}:8:9) reads Idx, which 'tile.store' (at {path}:9:5) writes")
    assert "\n" not in msg


def test_a_trip_count_read_from_memory_is_refused(tmp_path: Path):
    path = write_kernel(tmp_path, '''@tawa.kernel
def k(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), Lens: tl.tensor_ref(tl.i32, 1),
      C: tl.tensor_ref(tl.bf16, 2)):
    pid = tl.program_id(0)
    kt = tl.load(Lens, (pid,)).to(tl.index)
    acc = tl.zeros((128, 128), tl.f32)
    for k in tl.range(0, kt, 64):
        acc = tl.dot(tl.load(A, (pid * 128, k), (128, 64)), tl.load(B, (0, k), (128, 64)), acc, trans_b=True)
    tl.store(C, (pid * 128, 0), acc.to(tl.bf16))
''')
    msg = compile_error(path)
    assert f"the bounds of the scf.for (at {path}:11:5) depend on the tile.load_scalar (at {path}:9:10)" in msg
    assert "variable-length loop" in msg and "\n" not in msg


def test_a_table_read_by_a_cluster_is_refused():
    """CTAs of a cluster differ in program id 0, so their table entries (and
    the tiles those place) differ: nothing is shared, a located error."""
    with pytest.raises(TawaError, match=r"grouped_gemm\.py:\d+:1: error: tawa-cluster: @grouped_gemm loads no tile"):
        kernel("grouped_gemm").compile({"cluster": 2})


@pytest.mark.parametrize("body, message", [
    ("def k(X: tl.tensor_ref(tl.bf16, 1)):\n    x = tl.load(X, (0,))\n",
     "7:9: error: tl.load: a scalar (no shape) is read from an i32 or f32 tensor_ref, but X holds bf16"),
    ("def k(X: tl.tensor_ref(tl.i32, 2)):\n    x = tl.load(X, (0,))\n",
     "7:9: error: tl.load: X has rank 2 but 1 offsets are given"),
])
def test_front_end_errors(tmp_path: Path, body: str, message: str):
    path = write_kernel(tmp_path, "@tawa.kernel\n" + body)
    k = runpy.run_path(str(path))["k"]
    with pytest.raises(TawaError) as err:
        k.ir()
    assert str(err.value) == f"{path}:{message}"


def test_the_protocol_proof_refuses_a_trip_count_it_cannot_compute(tmp_path: Path, monkeypatch):
    """Without `tawa-warp-specialize`'s refusal, the protocol proof still
    refuses a loop bound read from memory: a loaded value is data to it
    (`nvgpu.load_global_scalar` is opaque), like TMA coordinates, so a
    protocol that depends on one is an error, never a proof."""
    from tawa.transforms.partition import warp_specialize

    monkeypatch.setattr(warp_specialize, "_loaded_scalar", lambda *values: None)
    path = write_kernel(tmp_path, '''@tawa.kernel
def k(A: tl.tensor_ref(tl.bf16, 2), B: tl.tensor_ref(tl.bf16, 2), Lens: tl.tensor_ref(tl.i32, 1),
      C: tl.tensor_ref(tl.bf16, 2)):
    pid = tl.program_id(0)
    kt = tl.load(Lens, (pid,)).to(tl.index)
    acc = tl.zeros((128, 128), tl.f32)
    for k in tl.range(0, kt, 64):
        acc = tl.dot(tl.load(A, (pid * 128, k), (128, 64)), tl.load(B, (0, k), (128, 64)), acc, trans_b=True)
    tl.store(C, (pid * 128, 0), acc.to(tl.bf16))
''')
    msg = compile_error(path)
    assert "tawa-verify-protocol" in msg and "does not compute (data)" in msg, msg
