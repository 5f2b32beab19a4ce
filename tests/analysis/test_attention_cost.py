"""The attention cost model (`tawa.analysis.attention_cost`): the busiest
CTA's programs and key blocks, the estimate's terms, the choice following
from them, the variants held to the examples, and the fit
(`tawa.bench.fit_attention_cost`) recovering constants and reporting the
recorded ones' error on the H100 measurements in docs/perf/."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tawa.analysis import attention_cost
from tawa.analysis.attention_cost import (
    LAUNCH_S,
    VARIANTS,
    AttentionVariant,
    block_seconds,
    busiest_cta,
    choose,
    estimate,
)
from tawa.bench import fit_attention_cost
from tawa.bench.fit_attention_cost import Problem, fit, regrets


def test_busiest_cta_of_equal_programs_counts_rounds():
    # 132 programs of 128 rows (of 132 key blocks each): one round; 133: CTA 0 runs two.
    assert busiest_cta(128, 128, 128 * 132, 128 * 132, 1, False, 132) == (132, 1)
    assert busiest_cta(128, 128, 128 * 133, 128 * 133, 1, False, 132) == (2 * 133, 2)
    assert busiest_cta(128, 128, 1000, 1000, 4, False, 132) == (8, 1)  # 32 programs of ⌈1000/128⌉ blocks
    assert busiest_cta(128, 64, 0, 0, 4, False, 132) == (0, 0)


def test_busiest_cta_causal_takes_the_longest_first():
    # One head of 4 row blocks on 2 SMs: CTA 0 takes blocks 3 and 1 (4 + 2 key blocks).
    assert busiest_cta(128, 128, 512, 512, 1, True, 2) == (6, 2)
    # Two heads: programs 0, 2 of [3, 3, 2, 2, 1, 1, 0, 0] (row blocks): 4 + 3 + 2 + 1 on 2 SMs.
    assert busiest_cta(128, 128, 512, 512, 2, True, 2) == (10, 4)
    # Queries aligned with the last keys: 128 queries against 1024 keys see all of them.
    assert busiest_cta(128, 128, 128, 1024, 1, True, 132) == (8, 1)
    # A ragged last row block sees only the keys up to its last row.
    assert busiest_cta(128, 64, 200, 200, 1, True, 1) == (4 + 2, 2)


def test_estimate_is_launch_plus_programs_plus_blocks():
    v = AttentionVariant("attention_fwd", (), 128, 128, 2e-6, 1.5)
    blocks, programs = busiest_cta(128, 128, 4096, 4096, 64, False)
    expected = LAUNCH_S + programs * 2e-6 + blocks * 1.5 * block_seconds(v, 128)
    assert estimate(v, 128, 4096, 64, False) == pytest.approx(expected)
    assert block_seconds(v, 128) == pytest.approx(4 * 128 * 128 * 128 / (4096 * 1.41e9))


def test_the_choice_follows_the_constants_not_a_table():
    # Head dim 256: 80-key blocks (costlier programs, cheaper keys) on long sequences only.
    assert choose(256, False, 16384, 16).kernel == "attention_fwd_d256_n80"
    assert choose(256, False, 1024, 256).kernel == "attention_fwd_d256"
    # Head dim 64: few programs (one round either way) take the 128-row kernel, many the 192-row one.
    assert choose(64, False, 1930, 16).kernel == "attention_fwd_d64_m128"
    assert choose(64, False, 16384, 64).kernel == "attention_fwd_d64"
    # Without a problem: the first listed.
    assert choose(128, True) == VARIANTS[(128, True)][0]
    with pytest.raises(KeyError):
        choose(96, False, 1024, 8)
    # A costlier program moves the crossover: the same kernel list, other constants.
    n80 = VARIANTS[(256, False)][2]
    cheap = replace(n80, program_s=VARIANTS[(256, False)][1].program_s)
    assert estimate(cheap, 256, 1024, 256, False) < estimate(n80, 256, 1024, 256, False)


@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_variants_match_their_examples(key):
    """Each variant's rows and key block are its example's accumulators'."""
    import tawa
    from tawa.dialects import tile
    from tawa.torch.kernels import source

    for v in VARIANTS[key]:
        module = tawa.parse(source(v.kernel))
        dot = next(o for o in module.walk() if isinstance(o, tile.DotOp | tile.DotAsyncOp))
        assert tuple(dot.result.type.get_shape()) == (v.rows, v.key_block), v.label
        assert key[0] == dot.lhs.type.get_shape()[1], v.label
        assert all(k in ("early_release", "pin_waits", "pingpong") for k, _ in v.options), v.label


def test_fit_recovers_constants_from_synthetic_times(monkeypatch):
    truth = {v.label: replace(v, program_s=v.program_s * 1.3, block_factor=v.block_factor * 0.9)
             for vs in VARIANTS.values() for v in vs}
    monkeypatch.setattr(attention_cost, "LAUNCH_S", 5e-6)
    problems = []
    for (d, causal), vs in VARIANTS.items():
        for S, bh in ((256, 512), (1000, 64), (4096, 32), (16384, 16), (700, 300)):
            problems.append(Problem(d, bh, S, S, causal, {
                v.label: estimate(truth[v.label], d, S, bh, causal) for v in vs}))
    monkeypatch.setattr(attention_cost, "LAUNCH_S", LAUNCH_S)
    launch, fitted = fit(problems)
    assert launch == pytest.approx(5e-6)
    for label, v in fitted.items():
        assert v.program_s == pytest.approx(truth[label].program_s, rel=1e-6)
        assert v.block_factor == pytest.approx(truth[label].block_factor, rel=1e-6)
    assert max(regrets(fitted, launch, problems)) == pytest.approx(1.0)


def test_recorded_constants_on_the_measurements():
    """What docs/perf.md's "Attention cost model" reports: the recorded
    constants' error and the regret of their picks on the H100 data."""
    problems = fit_attention_cost.read(sorted(fit_attention_cost.PERF.glob(fit_attention_cost.PATTERN)))
    assert len(problems) >= 100
    recorded = fit_attention_cost.variants()
    errors = [abs(e) for es in fit_attention_cost.errors(recorded, problems).values() for e in es]
    assert sorted(errors)[len(errors) // 2] < 0.06
    r = regrets(recorded, LAUNCH_S, problems)
    assert fit_attention_cost.geomean(r) < 1.01 and max(r) < 1.06
