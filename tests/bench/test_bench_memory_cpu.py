"""`python -m tawa.bench memory`'s tiles, byte counts and arguments (no GPU)."""

from __future__ import annotations

import pytest

from tawa.bench.memory import (
    KERNELS,
    RANDOM_ELEMENTS,
    RANDOM_M,
    RANDOM_N,
    SHAPES,
    blocks,
    described,
    main,
    moved_bytes,
    random_shapes,
    summary,
)
from tawa.torch import norm_kernels


@pytest.mark.parametrize("kernel", KERNELS)
def test_tiles_are_the_operators(kernel, monkeypatch):
    """Each kernel takes the tile tawa.torch's operators decide: the row
    kernels' for the row count and width, SwiGLU's elementwise tile."""
    monkeypatch.setattr(norm_kernels, "tile", lambda name, N, M=None: ("tile", name, N, M))
    monkeypatch.setattr(norm_kernels, "elementwise_tile", lambda name, N, M=None: ("elementwise", name, N, M))
    b = blocks(kernel, 1000, 4096)
    assert b == (("elementwise" if kernel == "swiglu" else "tile"), kernel, 1000, 4096)


@pytest.mark.parametrize("N", [1000, 4096])
def test_row_tiles_cover_the_row(N):
    for kernel in ("softmax", "add_rmsnorm"):
        b = norm_kernels.tile(kernel, N)
        assert b["BLOCK_M"] * b["BLOCK_N"] <= max(norm_kernels.TILE_ELEMENTS, b["BLOCK_N"])
        assert b["BLOCK_N"] >= N > b["BLOCK_N"] - norm_kernels.ROW_UNIT  # the whole row (one pass)


def test_rows_say_which_program_and_tile_ran():
    """Each row names the program and tile that ran: a one-pass program's
    whole rows, a chunked one's chunk."""
    assert described("rmsnorm", 4096, 1000) == "rmsnorm 4x1024"
    assert described("swiglu", 4096, 768) == "swiglu 32x256"
    assert described("softmax", 2048, 32768) == "softmax_chunked 1x8192"
    assert described("add_rmsnorm", 100, 16685) == "add_rmsnorm 1x8192"


def test_moved_bytes_count_each_tensor_once():
    M, N = 4096, 1024
    assert moved_bytes("softmax", M, N) == 2 * 2 * M * N
    assert moved_bytes("add_rmsnorm", M, N) == 2 * (4 * M * N + N)  # x, r read; y, s written; w
    assert moved_bytes("layernorm", M, N) == 2 * (2 * M * N + 2 * N)
    assert all(M * N >= 4096 * 768 for M, N in SHAPES)
    assert any(N & (N - 1) for _, N in SHAPES)  # a row narrower than its tile


@pytest.mark.parametrize("text", ["4096", "4096x", "0x768", "ax768", "4096x768x2"])
def test_bad_shape_is_one_line(text, capsys):
    assert main(["--shape", "64x256", "--shape", text]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(text) in err and "MxN" in err


def test_bad_rounds_is_one_line(capsys):
    assert main(["--rounds", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rounds" in err


def test_random_shapes_are_drawn_in_range_and_repeat_by_seed():
    shapes = random_shapes(200, 7)
    assert shapes == random_shapes(200, 7) and shapes != random_shapes(200, 8)
    for M, N in shapes:
        assert 1 <= M <= RANDOM_M[1] and RANDOM_N[0] <= N <= RANDOM_N[1] and N % 8 == 0
        assert M * N <= RANDOM_ELEMENTS
    assert any(N & (N - 1) for _, N in shapes)  # widths that are not powers of two
    assert len({M for M, _ in shapes}) > 100  # drawn, not a list


@pytest.mark.parametrize("argv", [["--random", "0"], ["--random", "3", "--shape", "64x256"]])
def test_bad_random_is_one_line(argv, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--random" in err


def test_summary_gives_the_geomean_and_minimum_per_kernel():
    rows = [
        {"kernel": "rmsnorm", "ms": {"tawa": 1.0, "eager": 2.0, "compile": 0.5}},
        {"kernel": "rmsnorm", "ms": {"tawa": 1.0, "eager": 8.0, "compile": 2.0}},
        {"kernel": "softmax", "ms": {"eager": 1.0, "compile": 1.0}},  # tawa did not compile: left out
    ]
    assert summary(rows) == [
        "     rmsnorm: 2 rows, vs eager geomean 4.00, min 2.00; vs compile geomean 1.00, min 0.50",
        "         all: 2 rows, vs eager geomean 4.00, min 2.00; vs compile geomean 1.00, min 0.50",
    ]


def test_summary_gives_a_variant_against_tawa():
    rows = [{"kernel": "swiglu", "ms": {"tawa": 1.0, "eager": 1.0, "compile": 1.0, "variant": 0.5}},
            {"kernel": "swiglu", "ms": {"tawa": 1.0, "eager": 1.0, "compile": 1.0, "variant": 2.0}}]
    assert summary(rows)[0].endswith("; variant vs tawa geomean 1.000, min 0.500, max 2.000")


def test_bad_variant_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--variant", "once_depth"])
    assert err.value.code == 2 and "expected KEY=VALUE" in capsys.readouterr().err
