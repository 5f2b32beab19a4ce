"""`tawa.runtime.autotune` without a GPU: the heuristic (the cost model's
choice), the candidates and their order, and the search driven by a fake
timer with known costs (the winner, the model's first candidates timed, the
cache written and re-read per shape, a corrupt cache, failing and
compiler-rejected candidates skipped)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import tawa
from tawa.analysis.gemm_cost import estimate
from tawa.kernels.gemm import GemmConfig, gemm_grid, gemm_source, unsupported
from tawa.runtime import autotune as at
from tawa.runtime.autotune import (
    DEFAULT_SPACE,
    GEMM_MAX_STAGES,
    KEEP,
    WIDE_SPACE,
    AutotuneCacheWarning,
    AutotuneError,
    Choice,
    GemmProblem,
    Space,
    autotune,
    candidates,
    compiler_rejects,
    heuristic,
    ranked,
    space_choices,
    split_for,
)

DEVICE = "Fake H100"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_heuristic():
    """The heuristic is the cost model's fastest candidate (tawa.analysis.gemm_cost;
    tests/analysis/test_gemm_cost.py tests its choices on edge shapes): these
    are its reasons, not a table's picks."""
    big_problem = GemmProblem(8192, 8192, 8192)
    big = heuristic(big_problem)
    assert big == ranked(big_problem, replace(DEFAULT_SPACE, split_k=(1,)))[0][0]
    assert big.options == {"stages": 0, "max_stages": GEMM_MAX_STAGES, "group_m": 8, "persistent": True}
    assert big.config.block_m * big.config.block_n >= 128 * 192  # a large tile: the fewest operand bytes per flop
    assert estimate(big_problem, big).step.bound in ("tensor", "smem")  # ... so the k-step is compute-bound
    assert heuristic(GemmProblem(4096, 4096, 4096, "f8E4M3FN")).config.block_k == 128  # 128-byte K steps
    # 1024³: 128x256 tiles would be 32 programs, one round on a quarter of the SMs; the choice has more.
    p = GemmProblem(1024, 1024, 1024)
    small = heuristic(p).config
    assert p.programs(small) > p.programs(GemmConfig(128, 256, 64))
    assert estimate(p, Choice(small)).total < estimate(p, Choice(GemmConfig(128, 256, 64))).total
    big_sms = heuristic(p, sms=8).config  # ... unless the GPU has few SMs: larger tiles
    assert big_sms.block_m * big_sms.block_n > small.block_m * small.block_n
    assert heuristic(GemmProblem(64, 8192, 8192)).config.block_m == 64  # no rows of padding
    assert heuristic(GemmProblem(8, 8, 8)).config.tile == (64, 64, 64)
    batched = heuristic(GemmProblem(512, 512, 64, batch=64))
    assert batched.config.batched and batched.grid(512, 512, 64)[2] == 64
    with pytest.raises(AutotuneError, match="MN-major"):
        heuristic(GemmProblem(256, 256, 256, "f8E4M3FN", b_layout="kn"))


def test_ties_at_the_dram_floor_go_to_the_shortest_main_loops():
    """80 rows of a 6344x6352 weight: the DRAM floor bounds many tiles alike (the same bytes in one
    round); a round's time is a soft bound of its loops and its DRAM time (`bound_norm`), so of
    them the one with the shortest main loops and epilogues comes first, not the space's first tile
    (128x80, which pads 80 rows to 128 and measured slower: docs/perf.md, "Ties at the DRAM floor");
    here a 64-row tile."""
    problem = GemmProblem(80, 6344, 6352)
    scored = ranked(problem)
    first = scored[0][1]
    floor = [(c, e) for c, e in scored if e.dram == first.dram and e.dram >= e.main + e.epilogue]
    assert len(floor) > 1 and first.dram >= first.main + first.epilogue  # the floor binds
    assert first.main + first.epilogue == min(e.main + e.epilogue for _, e in floor)
    assert scored[0][0].config.block_m == 64


def test_columns_cut_to_the_problem():
    """The default space offers every BLOCK_N of 16-column steps from 64 to 256: a skinny N takes
    the tile that pads it least where the model says so (312 columns: two tiles of 160, not 192)."""
    assert {bn for bm, bn, *_ in DEFAULT_SPACE.tiles} == set(range(64, 257, 16))
    assert heuristic(GemmProblem(11952, 312, 16824)).config.block_n == 160


def test_b_read_mn_major_takes_tiles_of_whole_swizzle_spans():
    """A K×N B tile's rows are BLOCK_N wide: only widths of whole 128-byte
    swizzle spans are offered (64-column multiples of bf16), where an N×K B
    keeps every width; llama's weight gradient (dW = dYᵀ·X, both read
    MN-major) took 128x176 (a 32-byte swizzle) on the H200's parameters."""
    from tawa.analysis.gemm_cost import FITTED_H200
    from tawa.analysis.smem_plan import slot_swizzle
    from tawa.runtime.gemm_choice import space_choices, swizzled_block_ns

    kn, nk = GemmProblem(2048, 11008, 4096, b_layout="kn"), GemmProblem(2048, 11008, 4096)
    assert swizzled_block_ns(kn) == (64, 128, 192, 256)
    assert 176 in swizzled_block_ns(nk)
    assert all(slot_swizzle(c.config.block_n * 2) == 128 for c in space_choices(kn) if not c.config.transposed)
    assert any(c.config.block_n % 64 for c in space_choices(nk))
    dw = GemmProblem(4096, 14336, 16384, b_layout="kn", a_layout="km")
    assert heuristic(dw, params=FITTED_H200).config.block_n % 64 == 0
    # A problem narrower than a span still gets the one-span tile.
    assert {c.config.block_n for c in space_choices(GemmProblem(4096, 40, 4096, b_layout="kn"))
            if not c.config.transposed} == {64}


def test_a_small_m_is_computed_transposed():
    """Where M is the smaller side of an A·Bᵀ into 16-bit C and fits one tile's columns, the space
    also offers Cᵀ = B·Aᵀ (`GemmConfig.transposed`: B's rows on the tile's rows, the M rows on its
    columns, which come in wgmma's steps of 8 where rows come in 64), split in K as the other
    tiles are, without clusters, warp groups of 64 rows; the model prices such a tile as the
    mirrored problem's and takes it where it pads less."""
    p = GemmProblem(24, 6616, 1952)
    offered = [c for c in space_choices(p) if c.config.transposed]
    assert offered and all(c.cluster == 1 and c.group_rows == 64 for c in offered)
    assert {c.config.tile for c in offered} == {(64, 24, 64), (128, 24, 64)}  # 24 columns hold the 24 rows
    # A long K: the transposed tiles are offered split where the model says a split pays.
    long_k = GemmProblem(16, 768, 12592)
    assert any(c.config.transposed and c.config.split_k > 1 for c in space_choices(long_k))
    for c in space_choices(long_k):
        if c.config.transposed and c.config.split_k > 1:
            assert c.config.split_k == split_for(long_k, c.config.replace(split_k=1)), c
    assert {c.config.tile[1] for c in space_choices(GemmProblem(136, 8128, 1112)) if c.config.transposed} == {136}
    assert {c.config.tile[1] for c in space_choices(GemmProblem(13, 8128, 1112)) if c.config.transposed} == {16}
    choice = heuristic(p, split=True)
    assert choice.config.transposed and choice.config.block_n == 24 and choice.grid(24, 6616) == (104, 1)
    assert Choice.from_dict(json.loads(json.dumps(choice.as_dict()))) == choice  # an autotune cache entry
    mirrored = Choice(choice.config.replace(transposed=False))
    assert estimate(p, choice).total == estimate(p.mirrored(), mirrored).total
    assert (p.mirrored().M, p.mirrored().N, p.mirrored().K, p.mirrored().types) == (6616, 24, 1952, p.types)
    for q in (GemmProblem(6616, 24, 1952), GemmProblem(24, 6616, 1952, batch=2),
              GemmProblem(24, 6616, 1952, c_dtype="f32"), GemmProblem(24, 6616, 1952, b_layout="kn"),
              GemmProblem(264, 6616, 1952)):
        assert not q.transposable and not any(c.config.transposed for c in space_choices(q)), q
    # Where the rows already fit, the plain tile stays (128 rows of an 8192x8192 weight).
    assert not heuristic(GemmProblem(128, 8192, 8192), split=True).config.transposed
    # What a transposed configuration is: its own grid and name, and nothing it cannot generate.
    config = GemmConfig(128, 32, 64, transposed=True)
    assert config.id == "128x32x64-t" and gemm_grid(config, 40, 300) == (3, 2)
    assert "tile.trans" in gemm_source(config) and unsupported(config) is None
    assert unsupported(config.replace(split_k=2)) is None
    for other in (config.replace(batched=True), config.replace(c_dtype="f32"), config.replace(b_layout="kn")):
        assert unsupported(other).startswith("transposed: "), other


def test_clusters_only_where_b_tiles_split_into_bands():
    """A 2-CTA cluster multicasts B in two row bands of whole swizzle spans:
    [BLOCK_N, 64] bf16 tiles ([N, K] B) split, [64, BLOCK_N > 64] ([K, N] B,
    rows of 256 bytes or more) do not, and the space does not offer them
    there (tawa-cluster would refuse the kernel)."""
    wide = Space(tiles=((128, 256), (128, 128), (64, 128), (64, 64)))
    for layout in ("nk", "kn"):
        for c in space_choices(GemmProblem(999, 768, 1032, b_layout=layout), wide):
            if c.cluster > 1:
                assert layout == "nk" or c.config.block_n * 2 == 128, c
    kn = space_choices(GemmProblem(999, 768, 1032, b_layout="kn"), wide)
    assert {c.config.block_n for c in kn if c.cluster > 1} == {64}
    # The heuristic's choice for a [K, N] B with K·2 bytes 16 mod 32 compiles.
    choice = heuristic(GemmProblem(999, 768, 1032, b_layout="kn"))
    tawa.compile(gemm_source(choice.config), choice.config.kernel, **choice.options)


def test_candidates_are_pruned_and_ranked():
    wide = Space(tiles=((192, 256), (128, 256), (128, 128), (64, 128)), group_m=(4, 8, 16))
    problem = GemmProblem(8192, 8192, 8192)
    listed = space_choices(problem, wide)
    assert all(unsupported(c.config) is None for c in listed)  # 192x256 is out (launch registers)
    assert {c.config.tile for c in listed} == {(128, 256, 64), (128, 128, 64), (64, 128, 64)}
    assert len(listed) == 3 * 3 * 2  # × group-m × cluster (1 and 2)
    every = candidates(problem, wide)
    assert every[0] == heuristic(problem)  # first, whether or not the space holds it
    assert set(every[1:]) == set(listed) - {every[0]}
    times = [estimate(problem, c).total for c in every[1:]]
    assert times == sorted(times)  # then as the model ranks them
    # Tiles larger than the problem go; group-m values ≥ the grid's rows order alike: one is kept.
    skinny = [c for c in space_choices(GemmProblem(64, 8192, 512), wide) if not c.config.transposed]
    assert {c.config.tile for c in skinny} == {(64, 128, 64)} and [c.group_m for c in skinny] == [4]
    assert len(space_choices(GemmProblem(4096, 4096, 4096), WIDE_SPACE)) > len(candidates(GemmProblem(4096, 4096, 4096)))
    # The default space: 256x128 only as two warp groups of 128 rows (4 ring slots, not 3).
    default = candidates(GemmProblem(4096, 4096, 4096))
    assert {c.group_rows for c in default if c.config.tile[:2] == (256, 128)} == {128}
    assert all(c.group_rows == 64 for c in default if c.config.tile[:2] != (256, 128))


COSTS = {(128, 256): 1.0, (128, 128): 0.5, (64, 128): 0.7}


def fake_measure(calls):
    def measure(choice, kernel):
        calls.append(choice.config.tile[:2])
        assert kernel == ("built", choice)
        return COSTS.get(choice.config.tile[:2], 2.0)

    return measure


def fake_build(choice):
    return ("built", choice)


SPACE = Space(tiles=tuple(COSTS))
CHOICES = [Choice(GemmConfig(*tile, 64)) for tile in COSTS]
"""The three tiles of `COSTS`, 128x256 first (as if the heuristic's)."""


def test_fastest_wins_and_is_cached(cache_dir):
    problem, calls = GemmProblem(8192, 8192, 4000), []
    choices = CHOICES
    best = autotune(problem, choices=choices, build=fake_build, measure=fake_measure(calls), device=DEVICE, sms=132)
    assert best.config.tile == (128, 128, 64)
    assert sorted(calls[:3]) == sorted(COSTS) and sorted(calls) == sorted(list(COSTS) * 3)  # 3 rounds, interleaved
    entries = json.loads((cache_dir / "autotune" / "gemm.json").read_text())["entries"]
    ((key, entry),) = entries.items()
    assert key.startswith(f"{DEVICE} | bf16xbf16->bf16 nk | 8192x8192x4000 | tawa {tawa.__version__} | ")
    assert entry["ms"] == 0.5 and len(entry["timed"]) == 3 and Choice.from_dict(entry["choice"]) == best

    def never(choice, kernel):
        raise AssertionError("timed although cached")

    # The same shape is read back, not timed; another shape is timed (the model's choices are per shape).
    assert autotune(problem, choices=choices, build=fake_build, measure=never, device=DEVICE, sms=132) == best
    other_shape = GemmProblem(8192, 8192, 3000)
    autotune(other_shape, choices=choices, build=fake_build, measure=fake_measure([]), device=DEVICE, sms=132)
    # Another GPU is another entry.
    other = autotune(problem, choices=choices, build=fake_build, measure=fake_measure([]), device="Other", sms=132)
    assert other == best and len(json.loads((cache_dir / "autotune" / "gemm.json").read_text())["entries"]) == 3
    # cache=False neither reads nor writes.
    calls.clear()
    autotune(problem, choices=choices, build=fake_build, measure=fake_measure(calls), device=DEVICE, sms=132,
             cache=False, rounds=1)
    assert len(calls) == 3


def test_autotune_times_the_models_first_candidates():
    """By default `autotune` times the first `KEEP` of `candidates`: the
    heuristic's choice and those the cost model ranks next; `keep=None`
    times them all."""
    problem = GemmProblem(4096, 4096, 4096)
    timed = []

    def measure(choice, kernel):
        timed.append(choice)
        return 1.0

    best = autotune(problem, build=fake_build, measure=measure, device=DEVICE, sms=132, cache=False, rounds=1)
    assert timed == candidates(problem)[:KEEP] and best == heuristic(problem)
    timed.clear()
    autotune(problem, build=fake_build, measure=measure, device=DEVICE, sms=132, cache=False, rounds=1, keep=None)
    assert timed == candidates(problem) and len(timed) > KEEP
    with pytest.raises(AutotuneError, match="keep must be at least 1"):
        autotune(problem, build=fake_build, measure=measure, device=DEVICE, sms=132, cache=False, keep=0)


def test_the_heuristic_stays_unless_beaten_by_more_than_the_margin():
    """Each candidate's time is the median of its rounds; the first (the
    heuristic's) is kept unless another is faster by more than `margin`."""
    choices = [Choice(GemmConfig(128, 256, 64)), Choice(GemmConfig(128, 128, 64)), Choice(GemmConfig(64, 128, 64))]
    rounds = {c.id: iter(t) for c, t in zip(choices, ([1.0, 1.0, 5.0], [0.99, 0.5, 0.99], [0.985, 2.0, 0.975]))}

    def measure(choice, kernel):
        return next(rounds[choice.id])

    def tune(**kw):
        return autotune(GemmProblem(4096, 4096, 4096), choices=choices, build=fake_build, measure=measure,
                        device=DEVICE, sms=132, cache=False, **kw)

    assert tune() == choices[0]  # medians 1.0, 0.99, 0.985: within 2% of the heuristic's
    for c, t in zip(choices, ([1.0] * 3, [0.99] * 3, [0.97] * 3)):
        rounds[c.id] = iter(t)
    assert tune() == choices[2]  # beyond the margin
    for c, t in zip(choices, ([1.0] * 3, [0.99] * 3, [0.985] * 3)):
        rounds[c.id] = iter(t)
    assert tune(margin=0.0) == choices[2]
    with pytest.raises(AutotuneError, match="rounds and keep must be at least 1"):
        tune(rounds=0)


def test_a_candidate_that_fails_in_a_later_round_is_skipped():
    failures = {"128x128x64 stages=auto group_m=8": 2}

    def measure(choice, kernel):
        if choice.id in failures:
            failures[choice.id] -= 1
            if failures[choice.id] == 0:
                raise RuntimeError("CUDA_ERROR_LAUNCH_TIMEOUT")
        return COSTS[choice.config.tile[:2]]

    best = autotune(GemmProblem(4096, 4096, 4096), choices=CHOICES, build=fake_build, measure=measure, device=DEVICE,
                    sms=132, cache=False)
    assert best.config.tile == (64, 128, 64)


def test_one_entry_per_shape():
    """Each shape has its own entry: M = 129 and M = 256, one bucket apart
    before, are tuned each on their own candidates (M = 129 drops 256-row
    tiles, which 192 covers)."""
    costs = {**COSTS, (256, 128): 0.1}

    def measure(choice, kernel):
        return costs.get(choice.config.tile[:2], 2.0)

    space = Space(tiles=tuple(costs))
    assert (256, 128, 64) not in {c.config.tile for c in candidates(GemmProblem(129, 4096, 512), space)}
    best = autotune(GemmProblem(129, 4096, 512), space=space, build=fake_build, measure=measure, device=DEVICE,
                    sms=132, keep=None)
    assert best.config.tile[:2] != (256, 128)
    wide = autotune(GemmProblem(256, 4096, 512), space=space, build=fake_build, measure=measure, device=DEVICE,
                    sms=132, keep=None)
    assert wide.config.tile == (256, 128, 64)
    assert len(json.loads((at.cache_path()).read_text())["entries"]) == 2


@pytest.mark.parametrize("content", ["{not json", '{"format": 99, "entries": {}}', "\udcff"])
def test_a_corrupt_cache_is_ignored_with_a_warning(cache_dir, content):
    path = cache_dir / "autotune" / "gemm.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    with pytest.warns(AutotuneCacheWarning, match="ignoring the autotune cache"):
        best = autotune(GemmProblem(4096, 4096, 4096), choices=CHOICES, build=fake_build, measure=fake_measure([]),
                        device=DEVICE, sms=132)
    assert best.config.tile == (128, 128, 64)
    assert len(json.loads(path.read_text())["entries"]) == 1  # rewritten


def test_failing_candidates_are_skipped(cache_dir):
    def measure(choice, kernel):
        if choice.config.tile[:2] == (128, 128):
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
        return COSTS[choice.config.tile[:2]]

    logged = []
    best = autotune(GemmProblem(4096, 4096, 4096), choices=CHOICES, build=fake_build, measure=measure, device=DEVICE,
                    sms=132, log=logged.append)
    assert best.config.tile == (64, 128, 64)
    (entry,) = json.loads((cache_dir / "autotune" / "gemm.json").read_text())["entries"].values()
    assert entry["skipped"] == {"128x128x64 stages=auto group_m=8": "CUDA_ERROR_ILLEGAL_ADDRESS"}
    assert any("skipped 128x128x64" in line for line in logged)

    def broken(choice, kernel):
        raise RuntimeError("no GPU")

    with pytest.raises(AutotuneError, match=r"none of the 3 candidates built and ran; .*: no GPU"):
        autotune(GemmProblem(2048, 2048, 2048), choices=CHOICES, build=fake_build, measure=broken, device=DEVICE, sms=132)


def test_candidates_the_compiler_rejects_are_dropped():
    """The compiler's own checks build each candidate (tawa-check-resources
    rejects 192x256: its wgmma does not fit 512 threads' launch registers)."""

    def build(choice):
        why = at.compiler_rejects(choice.config, choice.options)
        if why:
            raise AutotuneError(why)
        return ("built", choice)

    choices = [Choice(GemmConfig(192, 256, 64)), Choice(GemmConfig(128, 256, 64)), Choice(GemmConfig(64, 128, 64))]
    best = autotune(GemmProblem(4096, 4096, 4096), choices=choices, build=build, measure=fake_measure([]),
                    device=DEVICE, sms=132, cache=False)
    assert best.config.tile == (64, 128, 64)


def test_public_api():
    assert tawa.autotune is autotune
    assert Choice(GemmConfig()).source().startswith("func.func @gemm(")


def test_deferred_stores_are_a_choice_of_the_wide_space():
    """`Choice(defer_stores=True)` compiles with `tawa-defer-stores`, round-trips
    through the cache's dict, and the wide space offers it for persistent
    kernels only; a choice without it keeps the options (and cache keys) it had."""
    plain = Choice(GemmConfig(128, 256, 64))
    deferred = Choice(GemmConfig(128, 256, 64), defer_stores=True)
    assert "defer_stores" not in plain.options and deferred.options["defer_stores"] is True
    assert deferred.id.endswith(" defer-stores") and Choice.from_dict(deferred.as_dict()) == deferred
    assert Choice.from_dict(plain.as_dict()) == plain
    wide = space_choices(GemmProblem(4096, 4096, 4096), WIDE_SPACE)
    assert any(c.defer_stores for c in wide)
    assert all(c.persistent for c in wide if c.defer_stores)
    assert not any(c.defer_stores for c in candidates(GemmProblem(4096, 4096, 4096)))


def test_a_cached_choice_with_teams_is_stale(cache_dir):
    """A cache entry whose choice has teams of consumers (which the compiler
    no longer has) is ignored with a warning, and the shape tuned again."""
    problem = GemmProblem(8192, 8192, 4000)
    best = autotune(problem, choices=CHOICES, build=fake_build, measure=fake_measure([]), device=DEVICE, sms=132)
    path = cache_dir / "autotune" / "gemm.json"
    data = json.loads(path.read_text())
    ((key, entry),) = data["entries"].items()
    entry["choice"]["teams"] = 2
    path.write_text(json.dumps(data))
    calls = []
    with pytest.warns(AutotuneCacheWarning, match="ignoring a bad entry .*teams"):
        again = autotune(problem, choices=CHOICES, build=fake_build, measure=fake_measure(calls), device=DEVICE,
                         sms=132)
    assert again == best and calls  # timed again
    assert "teams" not in json.loads(path.read_text())["entries"][key]["choice"]  # rewritten


@pytest.mark.slow
def test_warp_groups_of_128_rows_are_a_choice_of_the_wide_space():
    """`Choice(group_rows=128)` compiles with warp groups that own 128 rows
    (`consumer_warps`: two for a 256x128 tile, one for a 128x128 tile),
    round-trips through the cache's dict, and the wide
    space offers it only where the tile splits into whole 128-row warp
    groups whose accumulators fit (128x128 at most); the compiler accepts
    what it offers and rejects a 128x256 warp group."""
    coop = Choice(GemmConfig(256, 128, 64), group_rows=128)
    assert coop.options["consumer_warps"] == 8 and "consumer_warps" not in Choice(GemmConfig(256, 128, 64)).options
    assert coop.options["staging"] == "single"  # 4 stages, not 3 (docs/perf.md, "fp8 attention")
    assert coop.id.endswith(" group-rows=128") and Choice.from_dict(coop.as_dict()) == coop
    one = Choice(GemmConfig(128, 128, 64), group_rows=128)
    assert one.options["consumer_warps"] == 4
    assert Choice.from_dict(one.as_dict()) == one
    wide = space_choices(GemmProblem(4096, 4096, 4096), WIDE_SPACE)
    wide_rows = [c for c in wide if c.group_rows == 128]
    assert {(c.config.block_m, c.config.block_n) for c in wide_rows} >= {(256, 128), (128, 128)}
    assert all(c.config.block_m % 128 == 0 and c.config.block_n <= 128 for c in wide_rows)
    assert {c.config.tile[:2] for c in candidates(GemmProblem(4096, 4096, 4096)) if c.group_rows != 64} == {(256, 128)}
    for choice in (coop, one):
        assert compiler_rejects(choice.config, choice.options) is None, choice.id
    assert "128x256xf32 accumulator" in compiler_rejects(GemmConfig(128, 256, 64), {"consumer_warps": 4})


def test_reshaped_keeps_each_warp_groups_accumulator():
    """`Choice.reshaped` (what `bench gemm --group-rows` runs): a warp group
    of R rows owns R x (64·BLOCK_N / R)."""
    base = Choice(GemmConfig(128, 256, 64))
    assert base.reshaped() == base
    assert base.reshaped(group_rows=128) == Choice(GemmConfig(256, 128, 64), group_rows=128)
    with pytest.raises(ValueError, match="not a choice of 64-row warp groups"):
        base.reshaped(group_rows=128).reshaped(group_rows=128)


def test_machine_parameters_without_a_device():
    """Without a CUDA device (or torch and CuPy not imported) the model takes the H100's parameters;
    the heuristic takes a device's parameters where given, and they may choose another tile."""
    from tawa.analysis.gemm_cost import FITTED, FITTED_H200
    from tawa.runtime.autotune import machine_parameters

    assert machine_parameters() is FITTED
    p = GemmProblem(2616, 360, 10000)
    assert heuristic(p, split=True) == heuristic(p, split=True, params=FITTED)
    assert heuristic(p, split=True, params=FITTED_H200) != heuristic(p, split=True, params=FITTED)


def test_fastest_is_the_first_of_the_ranking():
    """`fastest` (the heuristic's) takes what `ranked` puts first, ties and all, while planning the
    rings only of the candidates that can win (each bounded first at its deepest ring)."""
    from tawa.analysis import gemm_cost

    problems = [GemmProblem(8192, 8192, 8192), GemmProblem(80, 6344, 6352), GemmProblem(16, 768, 12592),
                GemmProblem(1024, 1024, 1024), GemmProblem(368, 9496, 3192), GemmProblem(64, 64, 65536),
                GemmProblem(4096, 4096, 4096, "f8E4M3FN", "f8E4M3FN", "bf16"), GemmProblem(999, 520, 256)]
    for p in problems:
        assert at.fastest(p) == ranked(p)[0][0], p
    for p in problems[2:4]:  # explicit ring depths and splits too
        assert at.fastest(p, WIDE_SPACE) == ranked(p, WIDE_SPACE)[0][0], p
    gemm_cost._decided_stages.cache_clear()
    at.fastest(GemmProblem(8192, 8192, 8192))
    planned = gemm_cost._decided_stages.cache_info().currsize
    gemm_cost._decided_stages.cache_clear()
    ranked(GemmProblem(8192, 8192, 8192))
    assert planned < gemm_cost._decided_stages.cache_info().currsize
