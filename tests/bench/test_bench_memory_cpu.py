"""`python -m tawa.bench memory`'s tiles, byte counts and arguments (no GPU)."""

from __future__ import annotations

import pytest

from tawa.bench.memory import CHUNK, KERNELS, SHAPES, TILE_ELEMENTS, blocks, main, moved_bytes


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("N", [1000, 1024, 4096, 8192])
def test_tiles_cover_the_row_and_keep_their_size(kernel, N):
    b = blocks(kernel, N)
    assert b["BLOCK_M"] * b["BLOCK_N"] <= max(TILE_ELEMENTS, b["BLOCK_N"])
    if kernel == "add_rmsnorm":
        assert b["BLOCK_N"] == CHUNK  # loops over the row
    elif kernel != "swiglu":
        assert b["BLOCK_N"] >= N > b["BLOCK_N"] // 2  # the whole row, a power of two


def test_moved_bytes_count_each_tensor_once():
    M, N = 4096, 1024
    assert moved_bytes("softmax", M, N) == 2 * 2 * M * N
    assert moved_bytes("add_rmsnorm", M, N) == 2 * (4 * M * N + N)  # x, r read; y, s written; w
    assert moved_bytes("layernorm", M, N) == 2 * (2 * M * N + 2 * N)
    assert all(M * N >= 4096 * 1024 for M, N in SHAPES)


def test_bad_rounds_is_one_line(capsys):
    assert main(["--rounds", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rounds" in err
