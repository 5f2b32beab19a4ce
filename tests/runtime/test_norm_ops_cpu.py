"""`tawa.torch.rms_norm`, `layer_norm` and `add_rms_norm` without a GPU.

- The argument checks (`tawa.torch.norm_checks`) on plain `TensorInfo`s: no
  torch needed, these always run.
- The tile decision (`tawa.torch.norm_kernels.tile`) against the compiler's
  resource check: no torch, no GPU.
- With torch installed (skipped, saying why, without it): registration and
  schemas, the fake implementations on meta tensors (shapes, errors,
  `torch.compile(fullgraph=True)`), and the real implementations on CPU
  tensors whose kernel is the tile program itself, run by tawa's CPU
  interpreter with the tile the operator chose: the operator's glue (views,
  copies, grid, scalars, outputs) is checked against torch's own norms.
"""

from __future__ import annotations

from types import SimpleNamespace

import ml_dtypes
import pytest
from test_linear_cpu import info

import tawa.torch as tt
from tawa.torch import kernels, norm_kernels
from tawa.torch import norm_checks as nc

# --------------------------------------------------------------------------- checks (no torch)


def test_norm_problem_sizes():
    p = nc.check_norm("rms_norm", info([2, 7, 300]), [("weight", info([300]))])
    assert (p.M, p.N, p.shape) == (14, 300, (2, 7, 300))
    p = nc.check_norm("layer_norm", info([64]), [("weight", info([64])), ("bias", info([64]))])
    assert (p.M, p.N, p.shape) == (1, 64, (64,))
    p = nc.check_norm("add_rms_norm", info([3, 8]), [("weight", info([8]))], info([3, 8]))
    assert (p.M, p.N) == (3, 8)


X, W = info([4, 64]), info([64])


@pytest.mark.parametrize("op, args, error, message", [
    ("rms_norm", (info([4, 64], "float16"), [("weight", W)]), TypeError, "x is float16; supported: bfloat16"),
    ("rms_norm", (X, [("weight", info([64], "float32"))]), TypeError, "x is bfloat16 but weight is float32"),
    ("rms_norm", (X, [("weight", info([32]))]), ValueError, "weight must be [N] = [64] (x's last dimension), got shape [32]"),
    ("layer_norm", (X, [("weight", W), ("bias", info([1, 64]))]), ValueError, "bias must be [N] = [64]"),
    ("rms_norm", (info([]), [("weight", W)]), ValueError, "x must be [..., N], got a 0-d tensor"),
    ("rms_norm", (info([4, 64], device="cpu"), [("weight", info([64], device="cpu"))]), ValueError,
     "x is on cpu; tawa's kernels run on CUDA"),
    ("rms_norm", (X, [("weight", info([64], device="cuda:1"))]), ValueError, "x is on cuda:0 but weight on cuda:1"),
    ("add_rms_norm", (X, [("weight", W)], info([4, 32])), ValueError, "residual must have x's shape [4, 64], got [4, 32]"),
])
def test_norm_errors(op, args, error, message):
    with pytest.raises(error) as err:
        nc.check_norm(op, *args)
    text = str(err.value)
    assert message in text and text.startswith(f"tawa.torch.{op}: ") and "\n" not in text


@pytest.mark.parametrize("eps, error, message", [
    (0.0, ValueError, "eps must be positive and finite, got 0.0"),
    (float("inf"), ValueError, "eps must be positive and finite, got inf"),
    ("1e-6", TypeError, "eps must be a float, got str"),
    (True, TypeError, "eps must be a float, got bool"),
])
def test_eps_errors(eps, error, message):
    with pytest.raises(error, match="tawa.torch.rms_norm: " + message):
        nc.check_eps("rms_norm", eps)
    assert nc.check_eps("rms_norm", 1) == 1.0


def test_rotary_problem():
    p = nc.check_rotary(info([2, 10, 6 * 64]), info([10, 64]), info([10, 64]), 5)
    assert (p.M, p.S, p.W, p.D, p.heads, p.out_shape) == (20, 10, 384, 64, 5, (2, 10, 320))
    assert nc.check_rotary(info([10, 128]), info([10, 64]), info([10, 64]), None).heads == 2


C = info([10, 64])


@pytest.mark.parametrize("args, error, message", [
    ((info([10, 128], "float16"), C, C, None), TypeError, "x is float16; supported: bfloat16"),
    ((info([10, 128]), info([10, 64], "float32"), C, None), TypeError, "x is bfloat16 but cos is float32"),
    ((info([128]), C, C, None), ValueError, "x must be [..., S, W] (positions, then heads of D), got shape [128]"),
    ((info([2, 12, 128]), C, C, None), ValueError, "cos must be [S, D] with S = 12 (x's positions), got shape [10, 64]"),
    ((info([10, 128]), C, info([10, 32]), None), ValueError, "sin [10, 32] must have cos's shape [10, 64]"),
    ((info([10, 120]), info([10, 24]), info([10, 24]), None), ValueError, "D = 24 channels: D must be a power of two"),
    ((info([10, 96]), C, C, None), ValueError, "x's rows of 96 are not whole heads of D = 64; give heads"),
    ((info([10, 128]), C, C, 3), ValueError, "heads = 3 of D = 64 do not fit x's rows of 128"),
    ((info([10, 128]), C, C, 1.0), TypeError, "heads must be an int or None, got float"),
])
def test_rotary_errors(args, error, message):
    with pytest.raises(error) as err:
        nc.check_rotary(*args)
    text = str(err.value)
    assert message in text and text.startswith("tawa.torch.rotary: ") and "\n" not in text


@pytest.mark.parametrize("ctas, M, want", [
    # CTAs per SM of BLOCK_M = 1, 2, 4, 8, 16 at BLOCK_N = 1024 (32 refused by the resource check)
    ((9, 7, 5, 4, 2), None, 8),  # 4 x 8 = 32 ties 2 x 16: more CTAs
    ((9, 7, 5, 3, 2), None, 16),  # 2 x 16 = 32 over 3 x 8 = 24
    ((9, 7, 5, 4, 2), 4096, 4),  # 32 rows an SM, 16 counted: 4 x 5 = 20, 8 x 4, 16 x 2 tie at 16: more CTAs
    ((9, 7, 5, 4, 2), 1000, 4),  # of the tiles of 4096 values or more only 4 rows leaves every SM a
    # program (250 programs; 8 rows: 125), and 1 and 2 rows (fewer values) come after it
    ((9, 7, 5, 4, 2), 500, 1),  # 4 rows an SM, 2 counted: every tile ties, but 4 rows a program (4096
    # values) would leave SMs without one (125 programs < 132): 1 row, the most CTAs
    ((9, 7, 6, 4, 2), 4096, 4),  # 24 ≥ 16: 4 rows, 6 CTAs
    ((9, 9, 9, 9, 9), None, 16),  # the same CTAs for every tile: the most rows
])
def test_the_rows_in_flight_rule(monkeypatch, ctas, M, want):
    """The choice among the tiles that fit, from each one's CTAs per SM
    (a stand-in for tawa-occupancy's decision) and the call's rows."""
    from tawa.diagnostics import TawaError
    from tawa.torch import kernels

    def compile_one(name, BLOCK_M, BLOCK_N):
        if BLOCK_M * BLOCK_N > 16384:
            raise TawaError(f"{kernels.RESOURCE_CHECK} too many registers")
        return SimpleNamespace(abi=SimpleNamespace(ctas_per_sm=ctas[BLOCK_M.bit_length() - 1]),
                               assemble=lambda: SimpleNamespace(spill_bytes=0))

    monkeypatch.setattr(norm_kernels, "_compile", lambda name, **c: compile_one(name, **c))
    norm_kernels.clear_cache()
    try:
        assert norm_kernels.tile("rmsnorm", 1000, M) == {"BLOCK_M": want, "BLOCK_N": 1024}
    finally:
        norm_kernels.clear_cache()


def test_a_tile_that_spills_is_passed_over(monkeypatch):
    """The rows-in-flight rule's first choice (8 rows, 4 CTAs) spills in
    ptxas: the next in its order (16 rows, 2 CTAs) is taken; where every
    tile spills, the last (correct, only slower)."""
    from tawa.diagnostics import TawaError
    from tawa.torch import kernels

    def compile_one(spilling, BLOCK_M, BLOCK_N):
        if BLOCK_M * BLOCK_N > 16384:
            raise TawaError(f"{kernels.RESOURCE_CHECK} too many registers")
        spills = 8 if BLOCK_M in spilling else 0
        return SimpleNamespace(abi=SimpleNamespace(ctas_per_sm=(9, 7, 5, 4, 2)[BLOCK_M.bit_length() - 1]),
                               assemble=lambda: SimpleNamespace(spill_bytes=spills))

    for spilling, want in (((8,), 16), ((1, 2, 4, 8, 16), 1)):
        monkeypatch.setattr(norm_kernels, "_compile", lambda name, s=spilling, **c: compile_one(s, **c))
        norm_kernels.clear_cache()
        try:
            assert norm_kernels.tile("rmsnorm", 1000)["BLOCK_M"] == want
        finally:
            norm_kernels.clear_cache()


def test_tiles_keep_the_most_rows_in_flight_per_sm():
    """Rows a program × the CTAs per SM tawa-occupancy fits for that tile,
    the most of them, then the most CTAs: 8x1024 RMSNorm (4 CTAs, 32 rows)
    for many rows; 4x4096 (2 × 4) over 2x4096 (3 × 2); LayerNorm 1x4096
    (4 × 1 ties 2 × 2: more CTAs); a 2x8192 LayerNorm tile needs more
    registers than a thread has (the compiler refuses it), so it takes 1 row.
    For M rows, rows in flight count up to half of the rows an SM has to do,
    and tiles of 4096 values or more come first where M rows still give
    every SM a program at them: 4096 rows of 1024 (32 an SM, 16 counted)
    take 4x1024, 5 CTAs; 512 rows of 4096 one a program; 37 rows of 1000 one
    a program (a 4-row tile would leave all but 10 SMs idle); 771 rows of
    280 four a program (193 programs; 8 rows would leave SMs idle, and a
    tile of fewer rows than warps splits its rows among them)."""
    assert norm_kernels.tile("rmsnorm", 1000) == {"BLOCK_M": 8, "BLOCK_N": 1024}
    assert norm_kernels.tile("rmsnorm", 4096) == {"BLOCK_M": 4, "BLOCK_N": 4096}
    assert norm_kernels.tile("layernorm", 4096) == {"BLOCK_M": 1, "BLOCK_N": 4096}
    assert norm_kernels.tile("layernorm", 8000) == {"BLOCK_M": 1, "BLOCK_N": 8192}
    assert norm_kernels.tile("rmsnorm", 1000, 4096) == {"BLOCK_M": 4, "BLOCK_N": 1024}
    assert norm_kernels.tile("rmsnorm", 1000, 37) == {"BLOCK_M": 1, "BLOCK_N": 1024}
    assert norm_kernels.tile("rmsnorm", 280, 771) == {"BLOCK_M": 4, "BLOCK_N": 512}
    assert norm_kernels.elementwise_tile("swiglu", 1000) == {"BLOCK_M": 16, "BLOCK_N": 512}
    assert norm_kernels.elementwise_tile("swiglu", 1000, 4096) == {"BLOCK_M": 16, "BLOCK_N": 512}
    assert norm_kernels.elementwise_tile("swiglu", 1000, 37) == {"BLOCK_M": 1, "BLOCK_N": 512}  # 74 programs
    assert norm_kernels.tile("rmsnorm", 4096, 512) == {"BLOCK_M": 1, "BLOCK_N": 4096}
    assert norm_kernels.kernel("rmsnorm", 1000, 4096)[1] == 4
    # Rows that fit the registers: the one-pass twin at a norm's tile; wider rows (a row of
    # 32768 f32 is 256 values a thread): the kernel that loops over them in chunks.
    assert norm_kernels.program("add_rmsnorm", 300) == "add_rmsnorm_row"
    assert norm_kernels.tile("add_rmsnorm", 300) == {"BLOCK_M": 16, "BLOCK_N": 512}
    assert norm_kernels.program("add_rmsnorm", 4096) == "add_rmsnorm_row"
    assert norm_kernels.tile("add_rmsnorm", 4096) == {"BLOCK_M": 4, "BLOCK_N": 4096}
    assert norm_kernels.program("add_rmsnorm", 32768) == "add_rmsnorm"
    assert norm_kernels.program("rmsnorm", 300) == "rmsnorm"
    assert norm_kernels.program("rmsnorm", 32768) == "rmsnorm_chunked"
    assert norm_kernels.program("layernorm", 16384) == "layernorm_chunked"  # its weights beside the row
    # a chunked program takes chunks of one row (the rows its second loop reads again stay in
    # L2), 8192 columns (half the tile's registers), whatever the row count
    for name in ("rmsnorm", "layernorm", "softmax", "add_rmsnorm"):
        for M in (None, 100, 512):
            assert norm_kernels.tile(name, 32768, M) == {"BLOCK_M": 1, "BLOCK_N": 8192}
    assert norm_kernels.program("softmax", 32768) == "softmax_chunked"  # online
    assert norm_kernels.rotary_tile(24, 128) == {"BLOCK_M": 8, "HALF": 64}  # 8 divides 24


def test_wide_rows_load_their_chunks_in_several_ctas_an_sm():
    """The chunked programs' consumers load their chunks themselves
    (`CHUNKED_OPTIONS`): no TMA producer, no `setmaxnreg`, several CTAs an
    SM, one CTA per program (not persistent), and no spills."""
    for name in ("rmsnorm", "layernorm", "add_rmsnorm", "softmax"):
        kernel, block_m = norm_kernels.kernel(name, 20480, 4096)
        assert norm_kernels.program(name, 20480) in norm_kernels.CHUNKED_PROGRAMS
        assert block_m == 1
        assert "cp.async.bulk.tensor" not in kernel.ptx and "setmaxnreg" not in kernel.ptx, name
        assert kernel.abi.ctas_per_sm >= 2 and not kernel.abi.persistent, name
        assert not kernels.spills(kernel), name
    # the one-pass programs keep the pipeline's defaults
    assert norm_kernels.options("rmsnorm") is None and norm_kernels.options("rmsnorm_chunked") is not None


@pytest.mark.parametrize("N, rows, want", [
    (100, 4, 128), (256, 4, 256), (300, 4, 512), (700, 4, 768), (768, 8, 768), (768, 2, 1024), (768, 1, 1024),
    (1000, 4, 1024), (1536, 4, 1536), (1536, 2, 1536), (3000, 4, 3072), (3000, 2, 3072), (3000, 1, 3072),
    (5120, 1, 5120), (6720, 4, 6912), (6720, 2, 7168), (6720, 1, 7168), (11008, 1, 11264), (16384, 1, 16384),
])
def test_row_tiles_take_whole_warp_rows(N, rows, want):
    """A row kernel's BLOCK_N is the row rounded up to whole rows of a warp's
    vectors (256 bf16) for each warp along the row, or to a power of two
    where that is less: at 768 each lane of a 4-row tile holds three vectors,
    where a 1024-column tile would leave a quarter of the lanes nothing but
    masked columns; a 1-row tile shares its row among the 4 warps, so its
    BLOCK_N is a multiple of 1024 (6912 = 27 units would leave three of
    them holding copies). Every warp of the blocked layout holds its own
    values wherever the row is at least a unit a warp."""
    from tawa.dialects.nvgpu.layouts import Replicated, blocked_layout

    assert norm_kernels._row_columns(N, rows) == want
    per_row = 4 // min(4, rows)
    assert want >= N and (want - N < norm_kernels.ROW_UNIT * per_row or want & (want - 1) == 0)
    if want >= norm_kernels.ROW_UNIT * per_row:
        layout = blocked_layout((rows, want), 2)
        assert not any(isinstance(d, Replicated) for d in (*layout.warp_dims, *layout.lane_dims)), layout


@pytest.mark.parametrize("N, want", [(200, 256), (512, 512), (768, 256), (1024, 512), (1280, 256),
                                     (1536, 512), (4096, 512), (11008, 256)])
def test_elementwise_tiles_pad_the_row_least(N, want):
    """SwiGLU's column tile: the whole row up to 512 columns, else the
    multiple of 256 up to 512 that pads the row least, the wider at a tie
    (768: three programs of 256 columns, none masked, not two of 512)."""
    t = norm_kernels.elementwise_tile("swiglu", N)
    assert t["BLOCK_N"] == want
    assert t["BLOCK_M"] * want <= norm_kernels.TILE_ELEMENTS // 2


def test_rotary_rows_divide_each_sequence_length_asked_in_turn():
    """A program's rows are positions of one sequence, so BLOCK_M divides S
    whatever was asked before: a tile remembered for S = 128 (more rows) is
    not handed to S = 100 (4 rows), whose programs would straddle two
    sequences and read cos and sin past S."""
    long = norm_kernels.rotary_tile(128, 128)["BLOCK_M"]
    assert long > 4 and 128 % long == 0
    assert norm_kernels.rotary_tile(100, 128)["BLOCK_M"] == 4
    assert norm_kernels.rotary_tile(7, 128)["BLOCK_M"] == 1
    assert norm_kernels.rotary_tile(128, 128)["BLOCK_M"] == long
    assert norm_kernels.rotary_kernel(100, 128)[1] == 4


# --------------------------------------------------------------------------- with torch


@pytest.fixture
def torch():
    if tt.UNAVAILABLE is not None:
        pytest.skip(tt.UNAVAILABLE)
    import torch

    return torch


def test_without_torch_the_operators_say_why():
    if tt.UNAVAILABLE is None:
        pytest.skip("torch is installed here: the operators are registered")
    for call in (lambda: tt.rms_norm(None, None), lambda: tt.layer_norm(None, None, None),
                 lambda: tt.add_rms_norm(None, None, None)):
        with pytest.raises(ImportError, match=r"tawa.torch needs torch >= 2\.5"):
            call()


def test_operators_are_registered(torch):
    schemas = {name: str(getattr(torch.ops.tawa, name).default._schema)
               for name in ("rms_norm", "layer_norm", "add_rms_norm", "rotary")}
    assert schemas == {
        "rms_norm": "tawa::rms_norm(Tensor x, Tensor weight, float eps) -> Tensor",
        "layer_norm": "tawa::layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor",
        "add_rms_norm": "tawa::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor)",
        "rotary": "tawa::rotary(Tensor x, Tensor cos, Tensor sin, SymInt? heads) -> Tensor",
    }


def test_meta_shapes_and_errors(torch):
    bf = dict(dtype=torch.bfloat16, device="meta")
    x, w = torch.empty(2, 5, 96, **bf), torch.empty(96, **bf)
    assert tt.rms_norm(x, w).shape == (2, 5, 96)
    assert tt.layer_norm(x.transpose(0, 1), w, w).shape == (5, 2, 96)
    y, s = tt.add_rms_norm(x, x, w)
    assert y.shape == s.shape == (2, 5, 96)
    assert tt.rotary(x, w[:32].expand(5, 32), w[:32].expand(5, 32), 2).shape == (2, 5, 64)
    with pytest.raises(TypeError, match="tawa.torch.layer_norm: bias must be a tensor, got None"):
        tt.layer_norm(x, w, None)
    with pytest.raises(ValueError, match="tawa.torch.rms_norm: eps must be positive"):
        tt.rms_norm(x, w, eps=-1e-6)
    with pytest.raises(ValueError, match="eps must be positive"):  # the operator itself checks too
        torch.ops.tawa.rms_norm(x, w, -1.0)
    with pytest.raises(TypeError, match="tawa.torch.add_rms_norm: x is float32"):
        tt.add_rms_norm(x.float(), x.float(), w.float())


def test_cpu_tensors_are_refused(torch):
    x = torch.ones(4, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="tawa.torch.rms_norm: x is on cpu; tawa's kernels run on CUDA"):
        tt.rms_norm(x, x[0])


def test_torch_compile_fullgraph_on_meta_tensors(torch):
    def block(x, r, w, b):
        y, s = tt.add_rms_norm(x, r, w, 1e-5)
        return tt.layer_norm(tt.rms_norm(y, w), w, b) + s

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    bf = dict(dtype=torch.bfloat16, device="meta")
    out = compiled(torch.empty(2, 8, 64, **bf), torch.empty(2, 8, 64, **bf), torch.empty(64, **bf),
                   torch.empty(64, **bf))
    assert (out.shape, out.dtype) == ((2, 8, 64), torch.bfloat16)


BF16 = ml_dtypes.bfloat16


class Interpreted:
    """Kernel `name` with its tile, run by the CPU interpreter on the torch
    CPU tensors a launch passes (bf16 arrays shared, written in place)."""

    def __init__(self, name, tile, launches):
        self.name, self.tile, self.launches = name, tile, launches
        self.abi = SimpleNamespace(ctas_per_sm=1)  # (the row kernels' tile choice reads it)

    def assemble(self):
        return SimpleNamespace(spill_bytes=0)  # (the tile choice takes no spilling tile)

    def __call__(self, *args, grid):
        import torch

        self.launches.append((self.name, self.tile, grid, args))
        arrays = [a.view(torch.int16).numpy().view(BF16) if isinstance(a, torch.Tensor) else a for a in args]
        for a in args:  # the kernels take row strides: contiguous rows, as the runtime requires
            assert not isinstance(a, torch.Tensor) or a.dim() < 2 or a.stride(-1) == 1
        getattr(norm_kernels.norms(), self.name).interpret(grid, *arrays, **self.tile)


@pytest.fixture
def interpreted(torch, monkeypatch):
    """Real implementations on CPU tensors, kernels run by the interpreter."""
    from tawa.torch import calls as calls_module
    from tawa.torch import checks

    launches = []
    monkeypatch.setattr(checks, "check_devices", lambda *args: None)
    monkeypatch.setattr(norm_kernels, "_compile", lambda name, **tile: Interpreted(name, tile, launches))
    calls_module.forget()
    norm_kernels.clear_cache()
    yield launches
    calls_module.forget()
    norm_kernels.clear_cache()


def rand(torch, g, *shape):
    return torch.randn(*shape, generator=g).to(torch.bfloat16)


def close(torch, got, want):
    assert not got.isnan().any()
    torch.testing.assert_close(got.float(), want.float(), atol=3e-2, rtol=3e-2)


def test_rms_norm_and_layer_norm(torch, interpreted):
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    x = rand(torch, g, 3, 7, 200)  # 21 ragged rows of 200 (BLOCK_N 256)
    w, b = rand(torch, g, 200), rand(torch, g, 200)
    close(torch, tt._norm_ops.rms_norm_impl(x, w, 1e-6), F.rms_norm(x.float(), (200,), w.float(), 1e-6))
    close(torch, tt._norm_ops.layer_norm_impl(x, w, b, 1e-5), F.layer_norm(x.float(), (200,), w.float(), b.float(), 1e-5))
    (name, tile, grid, args), _ = interpreted
    assert (name, tile, grid) == ("rmsnorm", {"BLOCK_M": 1, "BLOCK_N": 256}, (21,))  # a row a program: 21 rows
    assert [tuple(a.shape) for a in args[:3]] == [(21, 200), (200,), (21, 200)] and args[3:] == (21, 200, 1e-6)


def test_rows_wider_than_the_registers_loop_over_chunks(torch, interpreted):
    """Rows no whole-row tile holds (past 16384 columns) run the chunked
    programs: two loops over chunks of 8192 columns, the last ragged;
    LayerNorm's variance from merged chunk statistics, on inputs far from 0."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(5)
    N = 16384 + 300
    x, r = rand(torch, g, 3, N) * 4 + 20, rand(torch, g, 3, N)
    w, b = rand(torch, g, N), rand(torch, g, N)
    assert nc.check_norm("rms_norm", info([3, N]), [("weight", info([N]))]).N == N
    close(torch, tt._norm_ops.rms_norm_impl(x, w, 1e-6), F.rms_norm(x.float(), (N,), w.float(), 1e-6))
    close(torch, tt._norm_ops.layer_norm_impl(x, w, b, 1e-5), F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5))
    y, s = tt._norm_ops.add_rms_norm_impl(x, r, w, 1e-6)
    close(torch, s, x + r)
    close(torch, y, F.rms_norm((x + r).float(), (N,), w.float(), 1e-6))
    assert [(name, tile["BLOCK_N"]) for name, tile, _, _ in interpreted] == [
        ("rmsnorm_chunked", 8192), ("layernorm_chunked", 8192), ("add_rmsnorm", 8192)]


def test_add_rms_norm_and_copies(torch, interpreted):
    F = torch.nn.functional
    g = torch.Generator().manual_seed(1)
    x = rand(torch, g, 40, 96).t()  # not row-major: copied
    r, w = rand(torch, g, 96, 40), rand(torch, g, 40)
    y, s = tt._norm_ops.add_rms_norm_impl(x, r, w, 1e-6)
    want_s = x + r  # rounded to bf16, as the kernel does
    close(torch, s, want_s)
    close(torch, y, F.rms_norm(want_s.float(), (40,), w.float(), 1e-6))
    (name, tile, grid, args), = interpreted
    assert (name, tile, grid) == ("add_rmsnorm_row", {"BLOCK_M": 1, "BLOCK_N": 64}, (96,))  # the row fits: one pass
    assert args[0].data_ptr() != x.data_ptr() and args[1].data_ptr() == r.data_ptr()


def test_column_slices_read_in_place(torch, interpreted):
    """x and the residual as column slices of fused projections [B, S, 3·N]
    (rows contiguous, rows one stride apart): the kernels take their row
    stride, so nothing is copied; the outputs are new dense tensors."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(4)
    B, S, N = 2, 9, 96
    wide = rand(torch, g, B, S, 3 * N)
    x, r = wide[..., N : 2 * N], rand(torch, g, B, S, 3 * N)[..., :N]
    w = rand(torch, g, N)
    close(torch, tt._norm_ops.rms_norm_impl(x, w, 1e-6), F.rms_norm(x.float(), (N,), w.float(), 1e-6))
    y, s = tt._norm_ops.add_rms_norm_impl(x, r, w, 1e-6)
    close(torch, s, x + r)
    close(torch, y, F.rms_norm((x + r).float(), (N,), w.float(), 1e-6))
    (_, _, _, norm), (_, _, _, add) = interpreted
    assert norm[0].data_ptr() == x.data_ptr() and norm[0].stride() == (3 * N, 1)
    assert add[0].data_ptr() == x.data_ptr() and add[1].data_ptr() == r.data_ptr() and add[1].stride() == (3 * N, 1)
    assert y.is_contiguous() and s.is_contiguous()


def test_a_call_is_remembered_per_layout(torch, interpreted):
    g = torch.Generator().manual_seed(2)
    w = rand(torch, g, 64)
    for _ in range(3):
        tt._norm_ops.rms_norm_impl(rand(torch, g, 5, 64), w, 1e-6)
    tt._norm_ops.rms_norm_impl(rand(torch, g, 5, 64), w, 1e-5)  # another eps: another call
    from tawa.torch.norm_ops import _CALLS

    assert len(_CALLS) == 2 and len(interpreted) == 4


def test_empty_inputs_launch_nothing(torch, interpreted):
    x = torch.empty(0, 64, dtype=torch.bfloat16)
    w = torch.ones(64, dtype=torch.bfloat16)
    assert tt._norm_ops.rms_norm_impl(x, w, 1e-6).shape == (0, 64)
    y, s = tt._norm_ops.add_rms_norm_impl(x, x, w, 1e-6)
    assert y.shape == s.shape == (0, 64) and not interpreted


def rotate_half(torch, x, cos, sin):
    first, second = x.float().chunk(2, dim=-1)
    return x.float() * cos.float() + torch.cat((-second, first), dim=-1) * sin.float()


def test_rotary_of_a_fused_projection(torch, interpreted):
    """q and k heads of a fused QKV projection [B, S, (H + 2·Hkv)·D] rotated
    side by side; positions restart with each sequence (S = 12: 4 rows a program)."""
    g = torch.Generator().manual_seed(3)
    B, S, H, Hkv, D = 2, 12, 4, 2, 32
    qkv = rand(torch, g, B, S, (H + 2 * Hkv) * D)
    angles = torch.randn(S, D // 2, generator=g).repeat(1, 2)
    cos, sin = angles.cos().to(torch.bfloat16), angles.sin().to(torch.bfloat16)
    y = tt._norm_ops.rotary_impl(qkv, cos, sin, H + Hkv)
    assert y.shape == (B, S, (H + Hkv) * D)
    heads = qkv[..., : (H + Hkv) * D].unflatten(-1, (H + Hkv, D))
    want = rotate_half(torch, heads, cos[:, None], sin[:, None]).flatten(-2)
    close(torch, y, want)
    (name, tile, grid, _), = interpreted
    assert (name, tile, grid) == ("rotary", {"BLOCK_M": 4, "HALF": 16}, (6, H + Hkv))


def test_swiglu_grad(torch, interpreted):
    """dG and dU of silu(G)·U in one kernel, against torch autograd in float32;
    a transposed dY is copied, G and U read in place; empty tensors launch nothing."""
    g = torch.Generator().manual_seed(4)
    dy = rand(torch, g, 700, 37).t()  # not row-major: copied
    G, U = rand(torch, g, 37, 700), rand(torch, g, 37, 700)
    dg, du = tt._norm_ops.swiglu_grad_impl(dy, G, U)
    gf, uf = G.float().requires_grad_(), U.float().requires_grad_()
    (torch.nn.functional.silu(gf) * uf).backward(dy.float())
    close(torch, dg, gf.grad)
    close(torch, du, uf.grad)
    (name, tile, grid, args), = interpreted
    assert name == "swiglu_bwd" and grid == (-(-37 // tile["BLOCK_M"]), -(-700 // tile["BLOCK_N"]))
    assert args[0].data_ptr() != dy.data_ptr() and args[1].data_ptr() == G.data_ptr() and args[5:] == (37, 700)
    empty = torch.empty(0, 8, dtype=torch.bfloat16)
    assert [t.shape for t in tt._norm_ops.swiglu_grad_impl(empty, empty, empty)] == [(0, 8), (0, 8)]
    assert len(interpreted) == 1
    with pytest.raises(ValueError, match="u must have dy's shape"):
        tt._norm_ops.swiglu_grad_impl(G, G, U[:5])
    with pytest.raises(TypeError, match="dy is float32"):
        tt._norm_ops.swiglu_grad_impl(G.float(), G, U)
