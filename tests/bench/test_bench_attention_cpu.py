"""`python -m tawa.bench attention`'s problem lists and arguments (no GPU)."""

from __future__ import annotations

import pytest

from tawa.bench.attention import (
    HEAD_DIMS,
    RANDOM_MAX_TOKENS,
    RANDOM_SEQ,
    SHAPES,
    fixed_problems,
    main,
    random_problems,
)


def test_random_problems_are_reproducible_and_in_range():
    problems = random_problems(200, 7)
    assert problems == random_problems(200, 7)
    assert problems != random_problems(200, 8)
    for d, B, H, S, causal in problems:
        assert d in HEAD_DIMS and isinstance(causal, bool)
        assert RANDOM_SEQ[0] <= S <= RANDOM_SEQ[1]
        assert B >= 1 and H >= 1 and B * H * S <= max(RANDOM_MAX_TOKENS, S)
    # Ragged lengths, every head dim and both causalities are drawn.
    assert any(S % 64 for _, _, _, S, _ in problems)
    assert {d for d, *_ in problems} == set(HEAD_DIMS)
    assert {c for *_, c in problems} == {False, True}


def test_fixed_problems_are_the_table():
    assert len(fixed_problems([64, 128])) == 2 * 2 * len(SHAPES)
    assert (128, 1, 16, 16384, True) in fixed_problems([128])


@pytest.mark.parametrize("argv", [["--random", "0"], ["--random", "3", "--dtype", "fp8"],
                                  ["--random", "3", "--head-dim", "64"]])
def test_random_misuse_is_one_line(argv, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--random" in err


def test_explain_lists_every_variant_and_the_choice(capsys):
    from tawa.analysis.attention_cost import VARIANTS, choose

    assert main(["--explain", "64x1x16x1930", "256x4x16x2048", "--causal"]) == 0
    out = capsys.readouterr().out
    for v in VARIANTS[(64, True)] + VARIANTS[(256, True)]:
        assert v.label in out
    assert f"choice: {choose(64, True, 1930, 16).label}\n" in out
    assert out.count("<- choice") == 2 and out.count("busiest CTA") == 6


@pytest.mark.parametrize("argv, message", [(["--explain", "1x2"], "not a problem DxBxHxS"),
                                           (["--explain", "96x1x1x64"], "head dim 96 has no attention kernel")])
def test_explain_misuse_is_one_line(argv, message, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
