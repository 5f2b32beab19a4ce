"""The mutation fuzzer (tawa/tools/fuzz.py; docs/testing.md, "Fuzzing").

The main test runs a few hundred seeded mutants of the examples through
tawa-hopper-pipeline to PTX, tawa-warp-specialize and the CPU interpreter and
asserts that every failure is one located `file:line:col: error:` line:
no internal error, no unlocated error, no hang.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tawa.tools import fuzz, mutations

SEED = 0
COUNT = 200


PTXAS = shutil.which("ptxas")
ASSEMBLED = 6
"""Exit-0 PTX outputs of the main test that ptxas assembles (each takes a
second or two; the slow campaign assembles them all)."""


@pytest.mark.slow
def test_mutants_fail_only_with_located_errors():
    start = time.perf_counter()
    # 60 s, not the tool's 20: a first compile of a two-ring kernel at depth 4
    # spends ~10 s in tawa-verify-protocol, twice that on CI's 2 busy cores;
    # a real hang never finishes.
    campaign = fuzz.fuzz(SEED, COUNT, ["hopper", "ws", "interp"], timeout=60.0, ptxas=PTXAS,
                         ptxas_limit=ASSEMBLED)
    seconds = time.perf_counter() - start
    report = "\n".join(
        f"{o.kind}: {o.pipeline} {m.describe()}: {o.message}" for m, o in campaign.bad
    )
    assert not campaign.bad, f"{len(campaign.bad)} bad outcomes:\n{report}\n{campaign.summary()}"
    # Each mutant ran through each pipeline, and the mutations are not all
    # fatal: some mutants compile (the passes see varied valid input) and
    # some fail with located errors.
    for pipeline in ("hopper", "ws", "interp"):
        assert sum(campaign.counts[pipeline, k] for k in ("ok", "located", "slow")) == COUNT
        assert campaign.counts[pipeline, "ok"] >= COUNT // 10
        assert campaign.counts[pipeline, "located"] >= COUNT // 2
    # Every exit-0 PTX assembles ("rejected" is a bad outcome): a sample here.
    assert campaign.assembled == (ASSEMBLED if PTXAS else 0)
    print(f"{COUNT} mutants in {seconds:.1f} s\n{campaign.summary()}")


PYTHON_COUNT = 150
API_COUNT = 60
"""The fast tier's share of Python mutants and API calls: a few seconds
together (the first call that compiles a GEMM takes two of them); the slow
campaign runs 700 of each."""


def test_python_kernel_mutants_fail_only_with_located_errors():
    """Mutated Python kernels through `python -m tawa.frontend` (their IR
    through the pipelines is the slow campaign's)."""
    campaign = fuzz.fuzz(SEED, PYTHON_COUNT, [], inputs=["python"], timeout=60.0)
    report = "\n".join(f"{o.kind}: {o.pipeline} {m.describe()}: {o.message}" for m, o in campaign.bad)
    assert not campaign.bad, f"{len(campaign.bad)} bad outcomes:\n{report}\n{campaign.summary()}"
    assert campaign.counts["frontend", "ok"] >= PYTHON_COUNT // 10
    assert campaign.counts["frontend", "located"] >= PYTHON_COUNT // 2
    assert campaign.counts["frontend", "ok"] + campaign.counts["frontend", "located"] == PYTHON_COUNT


def test_api_misuse_is_one_line_tawa_errors():
    """Mutated calls of tawa.compile, tawa.parse, tawa.interpret, a Python
    kernel's methods, tawa-run and tawa-opt: each returns or raises one
    TawaError line (no other exception, no argparse exit status 2)."""
    campaign = fuzz.fuzz(SEED, API_COUNT, [], inputs=["api"], timeout=60.0)
    report = "\n".join(f"{o.kind}: {o.pipeline} {m.describe()}: {o.message}" for m, o in campaign.bad)
    assert not campaign.bad, f"{len(campaign.bad)} bad outcomes:\n{report}\n{campaign.summary()}"
    counts = {k: campaign.counts["api", k] for k in ("ok", "located", "refused")}
    assert sum(counts.values()) == API_COUNT and counts["ok"] >= API_COUNT // 20, counts
    assert counts["refused"] >= API_COUNT // 4 and counts["located"] >= API_COUNT // 10, counts


@pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH")
def test_exit_0_ptx_of_mutants_assembles(tmp_path):
    """The first three .mlir mutants of seed 0 that tawa-hopper-pipeline
    compiles (with their options): ptxas accepts their PTX (the slow
    campaign assembles every one)."""
    assembled = []
    for mutant in fuzz.mutants(["mlir"], SEED, 0, 100):
        [outcome] = fuzz.run_mutant(mutant, ["hopper"], tmp_path, timeout=120.0)
        assert outcome.kind not in fuzz.BAD, f"{outcome.kind}: {mutant.describe()}: {outcome.message}"
        if outcome.kind == "ok":
            assert fuzz.ptxas_rejects(outcome.stdout, tmp_path, PTXAS) is None, mutant.describe()
            assembled.append(mutant.describe())
            if len(assembled) == 3:
                break
    assert len(assembled) == 3, assembled


@pytest.mark.slow
def test_long_campaign():
    """docs/testing.md's campaign: 700 mutants of each input, the .mlir ones
    and the IR of the Python ones through hopper, ws and interp, every exit-0
    PTX assembled."""
    # 120 s: an attention kernel's compile took 29 s alone and passed 60 s on the busy machine.
    campaign = fuzz.fuzz(9, 700, ["hopper", "ws", "interp"], inputs=fuzz.INPUTS, timeout=120.0, ptxas=PTXAS)
    report = "\n".join(f"{o.kind}: {o.pipeline} {m.describe()}: {o.message}" for m, o in campaign.bad)
    assert not campaign.bad, f"{len(campaign.bad)} bad outcomes:\n{report}\n{campaign.summary()}"
    print(campaign.summary())


def test_mutants_are_deterministic():
    sources = fuzz.examples()
    first = [fuzz.make_mutant(5, i, sources) for i in range(80)]
    again = [fuzz.make_mutant(5, i, sources) for i in range(80)]
    assert [(m.example, m.mutations, m.data) for m in first] == [
        (m.example, m.mutations, m.data) for m in again
    ]
    assert len({m.data for m in first}) > 60  # and they differ from each other
    # 80 draws see every kind of mutation (which ones 40 draws see depends on the examples)
    assert {name for m in first for name in m.mutations} >= {"delete_line", "insert_byte", "swap_op", "truncate"}
    for kind in ("python", "api"):
        again = [m.describe() for m in fuzz.mutants([kind], 5, 0, 80)]
        assert [m.describe() for m in fuzz.mutants([kind], 5, 0, 80)] == again
        assert len(set(again)) > 60


@pytest.mark.parametrize(
    ("pipeline", "status", "stderr", "kind"),
    [
        ("api", 1, "tawa.compile: error: unknown option 'x'\n", "refused"),
        ("api", 1, "<input>:3:5: error: expected ':'\n", "located"),
        ("api", 2, "usage: tawa-run ...\ntawa-run: error: unrecognized arguments: --x\n", "internal"),
        ("api", 1, "something went wrong\n", "unlocated"),
        ("frontend", 1, "tawa.frontend: error: --constexpr expects NAME=VALUE\n", "unlocated"),
        ("frontend", 1, "Traceback (most recent call last):\n  ...\nKeyError: 1\n", "internal"),
    ],
)
def test_classify_api_and_frontend(pipeline, status, stderr, kind):
    assert fuzz.classify(pipeline, status, "", stderr).kind == kind


@pytest.mark.parametrize(
    ("status", "stderr", "kind"),
    [
        (0, "", "ok"),
        (0, "f.mlir:1:1: remark: tawa-warp-specialize left @f unchanged: why\n", "ok"),
        (1, "f.mlir:3:5: error: tile.dot contraction sizes differ\n", "located"),
        (1, "tawa-opt: error: nvgpu.smem needs positive static dims\n", "unlocated"),
        (1, "tawa: error: @f: arguments of type f16 are not supported\n", "unlocated"),
        (1, "tawa-opt: error: internal error: KeyError: x (set TAWA_TRACEBACK=1 ...)\n", "internal"),
        (1, "f.mlir:3:5: error: tile.reduce: internal error: ValueError: x\n", "internal"),
        ("internal", "RecursionError: maximum recursion depth exceeded\n", "internal"),
        ("hang", "", "hang"),
    ],
)
def test_classify(status, stderr, kind):
    assert fuzz.classify("hopper", status, "", stderr).kind == kind


def test_interpreter_timeouts_are_slow_not_hangs():
    assert fuzz.classify("interp", "hang", "", "").kind == "slow"


def test_time_limit_interrupts_a_hang():
    def spin(argv):
        while True:
            pass

    start = time.perf_counter()
    assert fuzz._call(spin, [], timeout=0.2)[0] == "hang"
    assert time.perf_counter() - start < 5


def test_escaping_exception_is_internal():
    def crash(argv):
        raise RecursionError("maximum recursion depth exceeded")

    status, _, stderr = fuzz._call(crash, [], timeout=5)
    assert fuzz.classify("ws", status, "", stderr).kind == "internal"


def test_cli_summary_and_exit_status(capsys):
    assert fuzz.main(["--seed", "1", "--count", "6", "--pipeline", "ws"]) == 0
    out = capsys.readouterr().out
    assert "6 mutants of seed 1" in out and out.splitlines()[-1].startswith("ws")


@pytest.mark.slow
def test_ptxas_check_catches_a_constant_overflow(tmp_path, capsys):
    """--ptxas counts exit-0 PTX that ptxas rejects (as an index constant of
    2^70 once produced); here the overflow is put into valid PTX by hand."""
    import re
    import shutil

    from tawa.tools.tawa_opt import main

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not on PATH")
    assert main([str(mutations.EXAMPLES / "gemm.mlir"), "-p", "tawa-hopper-pipeline", "-t", "ptx"]) == 0
    ptx = capsys.readouterr().out
    assert fuzz.ptxas_rejects(ptx, tmp_path) is None
    broken, n = re.subn(r"(mov\.u64 %rd\d+, )\d+;", rf"\g<1>{2**70};", ptx, count=1)
    assert n == 1
    assert "Constant overflow" in fuzz.ptxas_rejects(broken, tmp_path)


def test_a_failed_tawa_run_comparison_is_a_result():
    """tawa-run exits 1 when the result differs from the reference: a run
    that got that far is ok for the API fuzzer, not an unlocated error."""
    stdout = "tawa-run @gemm (gemm.mlir), seed 1\n  C         relative Frobenius error 1.00e+00: FAILED\nFAIL\n"
    assert fuzz.classify("api", 1, stdout, "").kind == "ok"
    assert fuzz.classify("api", 1, "", "").kind == "unlocated"
