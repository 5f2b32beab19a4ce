"""The register-layout algebra against the PTX ISA's wgmma fragment figures
and the layout the H100 here produced (shared/reference/hopper-verified.md
§1 row 9), by brute force over every thread and register."""

from __future__ import annotations

import pytest

from tawa.dialects.nvgpu.layouts import (
    NAMED_LAYOUTS,
    VECTOR_BYTES,
    WGMMA,
    WGMMA_COL,
    WGMMA_ROW,
    Replicated,
    TiledLayout,
    blocked_layout,
    fold_steps,
    layout_name,
    wgmma_layout,
)

WIDTHS = [8, 16, 64, 128, 136, 256]


def verified_accumulator(t: int, i: int) -> tuple[int, int]:
    """The accumulator map measured on the H100: thread t's f32 register i."""
    return 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (t % 4) + i % 2


@pytest.mark.parametrize("n", WIDTHS)
def test_accumulator_matches_the_hardware(n):
    shape = (64, n)
    assert WGMMA.values_per_thread(shape) == n // 2
    for t in range(128):
        for i in range(n // 2):
            assert WGMMA.thread_coords(shape, t, i) == verified_accumulator(t, i)


@pytest.mark.parametrize("n", WIDTHS)
def test_accumulator_holds_every_element_once(n):
    owners = WGMMA.element_map((64, n))
    assert sorted(owners) == [(r, c) for r in range(64) for c in range(n)]
    assert all(len(o) == 1 for o in owners.values())


def test_a_operand_registers_follow_the_isa_figure():
    """PTX ISA, "wgmma .m64nNk16 register fragment layout for matrix A": the
    four 32-bit registers a0..a3 of a thread hold (r, c..c+1), (r+8, c..c+1),
    (r, c+8..c+9), (r+8, c+8..c+9), with r = 16·warp + lane/4 and c = 2·(lane%4)."""
    shape = (64, 16)
    assert WGMMA.vector_length(shape) == 2 and WGMMA.values_per_thread(shape) == 8
    for t in range(128):
        r, c = 16 * (t // 32) + (t % 32) // 4, 2 * (t % 4)
        expected = [(r, c), (r + 8, c), (r, c + 8), (r + 8, c + 8)]
        for reg, (er, ec) in enumerate(expected):
            pair = [WGMMA.thread_coords(shape, t, 2 * reg + v) for v in (0, 1)]
            assert pair == [(er, ec), (er, ec + 1)]


def test_row_reduction_gives_the_row_layout_and_quad_shuffles():
    red = WGMMA.reduce((64, 256), 1)
    assert red.layout == WGMMA_ROW
    assert red.lane_masks == (1, 2)
    # Each thread folds its 64 values of each of its 2 rows.
    assert [len(g) for g in red.sources] == [64, 64]
    for row_value, group in enumerate(red.sources):
        for i in group:
            assert (i // 2) % 2 == row_value


def test_row_layout_is_held_by_the_four_lanes_of_a_quad():
    owners = WGMMA_ROW.element_map((64,))
    assert sorted(owners) == [(r,) for r in range(64)]
    for (row,), holders in owners.items():
        threads = sorted(t for t, _ in holders)
        base = 32 * (row // 16) + 4 * (row % 8)
        assert threads == [base, base + 1, base + 2, base + 3]
        assert {v for _, v in holders} == {(row % 16) // 8}


def test_column_layout_is_replicated_over_warps_and_rows():
    assert WGMMA.reduced_layout((64, 128), 0) == WGMMA_COL
    owners = WGMMA_COL.element_map((128,))
    assert all(len(h) == 32 for h in owners.values())  # 4 warps x 8 lanes
    with pytest.raises(ValueError, match="crosses warps"):
        WGMMA.reduce((64, 128), 0)


@pytest.mark.parametrize("axis,reduced", [(1, WGMMA_ROW), (0, WGMMA_COL)])
def test_broadcast_reads_the_reduced_value_of_the_same_element(axis, reduced):
    shape = (64, 64)
    out_shape = (shape[1 - axis],)
    sources = WGMMA.broadcast_sources(shape, axis, reduced)
    for t in range(128):
        for i, j in enumerate(sources):
            full = WGMMA.thread_coords(shape, t, i)
            assert reduced.thread_coords(out_shape, t, j) == (full[1 - axis],)


def test_two_warp_groups_side_by_side():
    layout = wgmma_layout(2)
    shape = (128, 64)
    owners = layout.element_map(shape)
    assert sorted(owners) == [(r, c) for r in range(128) for c in range(64)]
    assert all(len(o) == 1 for o in owners.values())
    for t in range(256):
        for i in range(layout.values_per_thread(shape)):
            r, c = verified_accumulator(t % 128, i)
            assert layout.thread_coords(shape, t, i) == (r + 64 * (t // 128), c)
    assert wgmma_layout(1) == WGMMA


def test_thread_terms_and_value_offsets_compose_the_map():
    shape = (64, 32)
    assert WGMMA.value_offsets(shape, 0)[:4] == (0, 0, 8, 8)
    assert WGMMA.value_offsets(shape, 1)[:6] == (0, 1, 0, 1, 8, 9)
    rows = {(t.source, t.divisor, t.size, t.stride) for t in WGMMA.thread_terms(shape, 0)}
    assert rows == {("warp", 1, 4, 16), ("lane", 4, 8, 1)}
    cols = {(t.source, t.divisor, t.size, t.stride) for t in WGMMA.thread_terms(shape, 1)}
    assert cols == {("lane", 1, 4, 2)}


def test_invalid_layouts_and_shapes_are_rejected():
    with pytest.raises(ValueError, match="does not divide"):
        TiledLayout(((64, 8), (16, 3)), (-4,), (-3,), -1)
    with pytest.raises(ValueError, match="distinct"):
        TiledLayout(((64, 8), (16, 8)), (-3,), (-3,), -1)
    with pytest.raises(ValueError, match="not a multiple"):
        WGMMA.tiled_dims((64, 12))
    with pytest.raises(ValueError, match="rank-2"):
        WGMMA.tiled_dims((64,))
    with pytest.raises(ValueError, match="warps"):
        TiledLayout(((64, 8), (16, 8), (8, 8), (1, 2)), (-8,), (-4,), -1).check_warp_group((64, 64))


def test_named_layouts_print_by_name():
    for name, layout in NAMED_LAYOUTS.items():
        assert layout_name(layout) == name
    assert layout_name(TiledLayout(((8,),), (Replicated(4),), (Replicated(32),), -1)) is None


def test_k_slices_of_the_a_operand_are_its_registers():
    """k16 block j of a 64xK wgmma fragment is values 8j..8j+7 (packed
    registers 4j..4j+3), held by the same threads: no data moves."""
    shape = (64, 64)
    for j in range(4):
        assert WGMMA.slice_values(shape, 1, 16 * j, 16) == tuple(range(8 * j, 8 * j + 8))
    with pytest.raises(ValueError, match="not a sub-tile"):
        WGMMA.slice_values(shape, 1, 4, 16)
    with pytest.raises(ValueError, match="not a multiple"):
        WGMMA.slice_values(shape, 0, 0, 16)
    # The lower 64 rows of a 128-row fragment are its second row tile.
    lower = WGMMA.slice_values((128, 64), 0, 64, 64)
    for t in (0, 77, 127):
        for i, v in enumerate(lower):
            r, c = WGMMA.thread_coords((64, 64), t, i)
            assert WGMMA.thread_coords((128, 64), t, v) == (r + 64, c)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 31, 32, 64])
def test_fold_steps_combine_every_value_once_into_the_first(n):
    """Each step folds a live slot into another, every value reaches slot 0
    exactly once, and a folded slot is never read again."""
    slots: list[list[int] | None] = [[i] for i in range(n)]
    for a, b in fold_steps(n):
        assert slots[a] is not None and slots[b] is not None
        slots[a], slots[b] = slots[a] + slots[b], None
    assert sorted(slots[0]) == list(range(n))
    assert len(fold_steps(n)) == n - 1


def test_fold_steps_keep_four_chains_then_a_tree():
    assert fold_steps(8) == ((0, 4), (1, 5), (2, 6), (3, 7), (0, 2), (1, 3), (0, 1))
    # A 128-column wgmma row: 32 values per thread, dependent steps 7 per chain + 2, not 31.
    depth = [0] * 32
    for a, b in fold_steps(32):
        depth[a] = max(depth[a], depth[b]) + 1
    assert depth[0] == 9
    assert fold_steps(32, chains=1) == tuple((0, i) for i in range(1, 32))


BLOCKED_SHAPES = [((16, 1024), 2), ((4, 4096), 2), ((1, 4096), 2), ((256, 128), 4), ((64, 128), 4), ((2, 256), 2),
                  ((1, 64), 2), ((3, 64), 2), ((1, 1), 4), ((5, 7), 4), ((48, 200), 2), ((32, 8), 1)]


@pytest.mark.parametrize(("shape", "element_bytes"), BLOCKED_SHAPES)
def test_blocked_layout_holds_every_element_equally_often(shape, element_bytes):
    layout = blocked_layout(shape, element_bytes)
    layout.check_warp_group(shape)
    owners = layout.element_map(shape)
    assert sorted(owners) == [(r, c) for r in range(shape[0]) for c in range(shape[1])]
    copies = {len(held) for held in owners.values()}
    assert copies == {layout.copies()} and 128 % layout.copies() == 0


def test_blocked_layout_copies():
    """`copies()`: the threads holding each value. Columns with few factors
    of two leave most threads holding copies (1000 = 8 x 125: 2 lanes of
    4-value f32 vectors), what check-resources' advice names."""
    assert blocked_layout((16, 1024), 2).copies() == 1
    assert blocked_layout((1, 1000), 4).copies() == 64
    assert blocked_layout((3, 100), 4).copies() == 128
    assert blocked_layout((3, 128), 4).copies() == 4  # one warp's 32 lanes: 3 rows give the warps nothing


@pytest.mark.parametrize(("shape", "element_bytes"), BLOCKED_SHAPES)
def test_blocked_layout_vectors_are_contiguous_row_segments(shape, element_bytes):
    layout = blocked_layout(shape, element_bytes)
    v = layout.vector_length(shape)
    assert v * element_bytes <= VECTOR_BYTES and shape[1] % v == 0
    for t in (0, 37, 127):
        for i in range(0, layout.values_per_thread(shape), v):
            r, c = layout.thread_coords(shape, t, i)
            assert c % v == 0
            assert [layout.thread_coords(shape, t, i + j) for j in range(v)] == [(r, c + j) for j in range(v)]


def test_blocked_layout_worked_example():
    shape = (16, 1024)
    layout = blocked_layout(shape, 2)
    assert layout.values_per_thread(shape) == 128 and layout.vector_length(shape) == 8
    # Warp w holds rows w, w + 4, ...; lane l columns 8l..8l+7 of each 256-column block.
    for t in (0, 33, 100, 127):
        rows = {layout.thread_coords(shape, t, i)[0] for i in range(128)}
        cols = {layout.thread_coords(shape, t, i)[1] for i in range(128)}
        assert rows == {t // 32 + 4 * k for k in range(4)}
        assert cols == {256 * b + 8 * (t % 32) + j for b in range(4) for j in range(8)}
    # A warp's 32 lanes read 512 contiguous bytes of one row.
    first = sorted(layout.thread_coords(shape, t, 0) for t in range(32))
    assert first == [(0, 8 * lane) for lane in range(32)]
    # The row reduction stays in the warp: butterfly shuffles over all 32 lanes.
    assert layout.reduce(shape, 1).lane_masks == (1, 2, 4, 8, 16)


def test_blocked_rows_that_warps_cannot_split_reduce_across_warps():
    # One row of 4096 bf16: the 4 warps split the columns, so the row's sum needs shared memory.
    with pytest.raises(ValueError, match="crosses warps"):
        blocked_layout((1, 4096), 2).reduce((1, 4096), 1)
    with pytest.raises(ValueError, match="no blocked layout"):
        blocked_layout((0, 64), 2)


@pytest.mark.parametrize(("shape", "axis"), [((1, 4096), 1), ((2, 8192), 1), ((32, 256), 0), ((3, 64), 1)])
def test_reduction_across_warps_combines_every_partial_once(shape, axis):
    """Within each thread, over the lane masks, then over the partner warps: every element of
    the reduced axis reaches every copy of its result exactly once (brute force)."""
    layout = blocked_layout(shape, 2)
    red = layout.reduce(shape, axis, across_warps=True)
    out_shape = shape[:axis] + shape[axis + 1:]
    owners = red.layout.element_map(out_shape)
    for t in (0, 45, 127):
        warp, lane = divmod(t, 32)
        seen = []
        for w in red.partner_warps(warp):
            assert red.partner_warps(w) == red.partner_warps(warp)  # one order for every copy
            lanes = {lane}
            for mask in red.lane_masks:
                lanes |= {x ^ mask for x in lanes}
            for x in lanes:
                for j, group in enumerate(red.sources):
                    seen += [(j, layout.thread_coords(shape, 32 * w + x, i)) for i in group]
        for j in range(len(red.sources)):
            target = red.layout.thread_coords(out_shape, t, j)
            assert (t, j) in owners[target]
            got = sorted(c for k, c in seen if k == j)
            want = sorted(tuple(c if a != axis else i for a, c in enumerate((*target[:axis], 0, *target[axis:])))
                          for i in range(shape[axis]))
            assert got == want


def test_warps_split_a_one_row_tile_four_ways():
    red = blocked_layout((1, 4096), 2).reduce((1, 4096), 1, across_warps=True)
    assert red.warps == 4 and red.warp_digits == ((1, 4),)
    assert all(red.partner_warps(w) == (0, 1, 2, 3) for w in range(4))
    red = blocked_layout((2, 8192), 2).reduce((2, 8192), 1, across_warps=True)
    assert red.warps == 2 and [red.partner_warps(w) for w in range(4)] == [(0, 1), (0, 1), (2, 3), (2, 3)]
    assert blocked_layout((16, 1024), 2).reduce((16, 1024), 1, across_warps=True).warps == 1


def movmatrix_source(lane: int, value: int) -> tuple[int, int]:
    """`movmatrix.sync.aligned.m8n8.trans.b16` as the PTX ISA states it: the
    8x8 matrix of a packed register, lane l holding row l/4, columns
    2·(l%4) and that + 1, comes back transposed in the same places; so
    lane l's value v (of the pair) is the element [2·(l%4) + v][l/4] of
    the input, which lane 4·(2·(l%4) + v) + (l/4)/2 held as its value
    (l/4) % 2.  (lane, value of the pair) of the input for each output."""
    return 4 * (2 * (lane % 4) + value) + lane // 8, (lane // 4) % 2


@pytest.mark.parametrize("n", [8, 16, 40, 128, 256])
def test_transposed_accumulator_is_movmatrix_of_each_register(n):
    """`WGMMA_T` of the Nx64 tile is what movmatrix.trans of every packed
    register of a 64xN 16-bit `WGMMA` fragment leaves in each thread:
    thread t's value i holds element (c, r) of the transpose where the
    lane movmatrix read it from held (r, c), register index kept."""
    from tawa.dialects.nvgpu.layouts import WGMMA_T

    WGMMA_T.check_warp_group((n, 64))
    assert WGMMA_T.values_per_thread((n, 64)) == WGMMA.values_per_thread((64, n))
    for t in range(128):
        warp, lane = divmod(t, 32)
        for i in range(WGMMA.values_per_thread((64, n))):
            src_lane, src_half = movmatrix_source(lane, i % 2)
            r, c = WGMMA.thread_coords((64, n), 32 * warp + src_lane, i - i % 2 + src_half)
            assert WGMMA_T.thread_coords((n, 64), t, i) == (c, r)
    assert layout_name(WGMMA_T) == "wgmma_t" and NAMED_LAYOUTS["wgmma_t"] is WGMMA_T
    assert WGMMA_T.vector_length((n, 64)) == 2
    assert WGMMA_T.value_offsets((n, 64), 1)[1] - WGMMA_T.value_offsets((n, 64), 1)[0] == 1  # pairs along a row
