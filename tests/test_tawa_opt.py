"""tawa-opt in-process: registries, printing, and one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tawa
from tawa.backend import get_all_targets
from tawa.diagnostics import TawaError
from tawa.dialects import get_all_dialects
from tawa.ir import context
from tawa.tools.tawa_opt import main
from tawa.transforms import get_all_passes
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.levels import LEVELS, PASS_LEVELS, STEPS, check_level, kernels, level_of

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_pass_registry_keys_equal_pass_names():
    for name, factory in get_all_passes().items():
        assert factory().name == name, (f"tawa/transforms/__init__.py: get_all_passes() registers {name!r} for a pass "
                                        f"whose name is {factory().name!r}; make the key the pass's `name`")


def test_every_pass_is_documented():
    passes_md = (ROOT / "docs" / "passes.md").read_text()
    undocumented = sorted(name for name in get_all_passes() if name not in passes_md)
    assert not undocumented, (f"docs/passes.md: add a section on {undocumented}: what each does, its options and "
                              'how it is tested (docs/writing-a-pass.md, "7. The differential test", last paragraph)')


def test_target_registry_keys_equal_target_names():
    for name, factory in get_all_targets().items():
        assert factory().name == name


def test_dialect_registry_keys_equal_dialect_names():
    for name, factory in get_all_dialects().items():
        dialect = factory()
        assert dialect.name == name
        for op in dialect.operations:
            assert op.name.startswith(name + "."), op.name
            assert op.__name__.endswith("Op"), op.__name__
            assert op.__doc__ and "Example" in op.__doc__, f"{op.name} lacks a documented example"


@pytest.mark.parametrize("example", ["gemm.mlir", "attention_fwd.mlir"])
def test_examples_print_stably(example, capsys):
    assert main([str(EXAMPLES / example)]) == 0
    first = capsys.readouterr().out
    assert "tile.dot" in first
    tmp = ROOT / "tests" / f".stable_{example}"
    try:
        tmp.write_text(first)
        assert main([str(tmp)]) == 0
        assert capsys.readouterr().out == first
    finally:
        tmp.unlink(missing_ok=True)


def _error_of(argv, capsys) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    return lines[0]


def test_truncated_input_is_one_line(tmp_path, capsys):
    src = tmp_path / "trunc.mlir"
    src.write_text("\n".join((EXAMPLES / "gemm.mlir").read_text().splitlines()[:20]))
    line = _error_of([str(src)], capsys)
    assert line.startswith(f"{src}:") and "error: unexpected end of input" in line


def test_unknown_op_is_located(tmp_path, capsys):
    src = tmp_path / "unknown.mlir"
    src.write_text((EXAMPLES / "gemm.mlir").read_text().replace("tile.zeros", "tile.zeroes"))
    line = _error_of([str(src)], capsys)
    assert line.startswith(f"{src}:17:") and "tile.zeroes is not registered" in line


def test_verifier_error_is_located(tmp_path, capsys):
    src = tmp_path / "dot.mlir"
    text = (EXAMPLES / "gemm.mlir").read_text().replace("256x64xbf16", "256x32xbf16")
    src.write_text(text)
    line = _error_of([str(src)], capsys)
    assert line == (
        f"{src}:21:5: error: tile.dot contraction sizes differ: lhs has K=64, rhs has K=32"
    )


def test_unknown_pass(capsys):
    line = _error_of([str(EXAMPLES / "gemm.mlir"), "-p", "no-such-pass"], capsys)
    assert line.startswith("tawa-opt: error: invalid pass pipeline") and "no-such-pass" in line


def test_unknown_flag_and_target(capsys):
    assert "unrecognized arguments" in _error_of(["--frobnicate"], capsys)
    assert "invalid choice: 'nope'" in _error_of(["-t", "nope", str(EXAMPLES / "gemm.mlir")], capsys)


def test_missing_file(capsys):
    assert "cannot open input" in _error_of(["does-not-exist.mlir"], capsys)


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert "tawa-opt" in capsys.readouterr().out


def test_help_lists_tawa_passes_and_targets(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "tawa passes:" in out and "tawa targets:" in out
    for name in get_all_passes():
        assert name in out


# --help / --help-all


def test_help_shows_tawa_first_and_xdsl_passes_only_on_request(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.index("tawa passes:") < out.index("tawa targets:") < out.index("options:")
    assert re.search(r"\n  tawa-lower-tile +aref-lowered +Lowers the tile compute", out)
    assert "convert-linalg-to-loops" not in out and "--help-all" in out
    with pytest.raises(SystemExit) as info:
        main(["--help-all"])
    assert info.value.code == 0
    full = capsys.readouterr().out
    assert full.startswith(out.rstrip("\n")) and "convert-linalg-to-loops" in full
    assert "riscv-asm" not in full  # xDSL's targets are not offered (test_only_working_targets)


@pytest.mark.parametrize("target", ["x86-asm", "arm-asm", "riscv-asm", "llvm", "mps", "csl", "wat", "wgsl"])
def test_only_working_targets(capsys, target):
    """-t offers the IR (mlir) and ptx; xDSL's other targets print dialects
    tawa's IR does not use (they failed, or printed nothing with exit 0)."""
    assert main([str(EXAMPLES / "gemm.mlir"), "-t", target]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"tawa-opt: error: argument -t/--target: invalid choice: '{target}' "
                            "(choose from mlir, ptx)\n")


def test_malformed_target_is_one_line(capsys):
    assert main([str(EXAMPLES / "gemm.mlir"), "-t", "ptx{"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tawa-opt: error: invalid target: ") and err.count("\n") == 1


# --time-passes


def test_time_passes_reports_every_pass_in_order(capsys):
    argv = [str(EXAMPLES / "gemm.mlir"), "-p", "tawa-warp-specialize,tawa-pipeline{stages=2},tawa-pipeline"]
    assert main(argv) == 0
    plain = capsys.readouterr()
    assert plain.err == ""
    assert main([*argv, "--time-passes"]) == 0
    timed = capsys.readouterr()
    assert timed.out == plain.out  # the report goes to stderr only
    lines = timed.err.splitlines()
    assert "Execution time report" in lines[1] and lines[0] == lines[2]
    total = float(re.fullmatch(r"  Total Execution Time: (\d+\.\d+) seconds", lines[3])[1])
    rows = [re.fullmatch(r"\s+(\d+\.\d+) \(\s*(\d+\.\d)%\)  (.+)", line) for line in lines[6:]]
    assert all(rows), lines[6:]
    names = [r[3] for r in rows]
    assert names == [
        "Parse", " 1. tawa-warp-specialize", " 2. tawa-pipeline", " 3. tawa-pipeline",
        "Verifier and level checks", "Output", "Rest", "Total",
    ]
    assert float(rows[-1][1]) == total and rows[-1][2] == "100.0"
    assert abs(sum(float(r[1]) for r in rows[:-1]) - total) < 1e-3


# --dump-dir


def test_dump_dir_writes_the_input_and_the_ir_after_each_pass(tmp_path, capsys):
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "07_stale.mlir").write_text("earlier run")
    (dump / "notes.mlir").write_text("the user's")
    pipeline = "tawa-warp-specialize,tawa-pipeline{stages=2}"
    assert main([str(EXAMPLES / "gemm.mlir"), "-p", pipeline, "--dump-dir", str(dump)]) == 0
    final = capsys.readouterr().out
    assert sorted(p.name for p in dump.iterdir()) == [
        "00_input.mlir", "01_tawa-warp-specialize.mlir", "02_tawa-pipeline.mlir", "notes.mlir",
    ]
    assert main([str(EXAMPLES / "gemm.mlir")]) == 0
    assert (dump / "00_input.mlir").read_text() == capsys.readouterr().out
    assert (dump / "02_tawa-pipeline.mlir").read_text() == final
    assert main([str(EXAMPLES / "gemm.mlir"), "-p", "tawa-warp-specialize"]) == 0
    assert (dump / "01_tawa-warp-specialize.mlir").read_text() == capsys.readouterr().out


def test_dump_dir_appends_split_input_chunks(tmp_path, capsys):
    src = tmp_path / "two.mlir"
    src.write_text("func.func @a() {\n  func.return\n}\n// -----\nfunc.func @b() {\n  func.return\n}\n")
    argv = [str(src), "--split-input-file", "-p", "canonicalize", "--dump-dir", str(tmp_path / "d")]
    assert main(argv) == 0
    assert (tmp_path / "d" / "01_canonicalize.mlir").read_text() == capsys.readouterr().out


def test_dump_dir_that_cannot_be_written_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    line = _error_of([str(EXAMPLES / "gemm.mlir"), "--dump-dir", str(blocker / "sub")], capsys)
    assert line.startswith("tawa-opt --dump-dir: error: cannot write ")


# IR levels: a pass given IR of an earlier level names the passes to run first


def test_every_tawa_pass_declares_the_level_it_takes():
    missing = sorted(set(get_all_passes()) - set(PASS_LEVELS))
    stale = sorted(set(PASS_LEVELS) - set(get_all_passes()))
    assert not missing, (f"tawa/transforms/levels.py: add to PASS_LEVELS the earliest level each of {missing} takes, "
                         'e.g. "tawa-my-pass": Takes("tile") (docs/writing-a-pass.md, "4. Registration")')
    assert not stale, f"tawa/transforms/levels.py: PASS_LEVELS names passes that get_all_passes() lacks: {stale}"
    assert all(t.level in LEVELS and set(t.reports) <= set(LEVELS) for t in PASS_LEVELS.values())


def test_the_hopper_pipeline_climbs_the_levels_one_step_at_a_time():
    """After each step of tawa-hopper-pipeline, the level read from the ops
    is the level that step reaches (passes outside the steps keep it)."""
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text())
    reaches = {step.route[-1]: LEVELS.index(step.level) for step in STEPS}
    # The thread epilogue: with the TMA-store epilogue there is no store for
    # tawa-expand-fragment-stores, and materialize-partitions climbs two levels.
    hopper = HopperPipelinePass(stages=2, epilogue="threads")
    level = 0
    for p in (hopper.specialize_pass(), *hopper.steps(2)):
        if p.name in ("tawa-check-resources", "tawa-verify-protocol"):
            continue  # checks only; slow and level-neutral
        check_level(p.name, module)  # never fires inside the real pipeline
        p.apply(context(), module)
        level = reaches.get(p.name, level)
        (kernel,) = kernels(module)
        assert level_of(kernel)[0] == level, (p.name, LEVELS[level_of(kernel)[0]])
    assert LEVELS[level] == "ptx"


EARLY = sorted(n for n, t in PASS_LEVELS.items() if t.level != "tile" and "tile" not in t.reports)


@pytest.mark.parametrize("name", EARLY)
def test_a_pass_given_tile_ir_names_the_passes_to_run_first(name, capsys):
    line = _error_of([str(EXAMPLES / "gemm.mlir"), "-p", name], capsys)
    prefix = f"{EXAMPLES / 'gemm.mlir'}:7:1: error: {name} needs IR after "
    assert line.startswith(prefix), line
    assert re.search(rf"\(level {PASS_LEVELS[name].level}\) but @gemm is at level tile; run -p tawa-warp-specialize[, ]", line)


def test_the_named_passes_are_the_ones_needed(capsys):
    gemm = str(EXAMPLES / "gemm.mlir")
    line = _error_of([gemm, "-p", "tawa-lower-tile"], capsys)
    assert line.endswith("first (tawa-hopper-pipeline runs every step)")
    route = re.search(r"; run -p (\S+) first", line)[1]
    assert main([gemm, "-p", f"{route},tawa-lower-tile"]) == 0
    # a check that follows the whole pipeline says so
    line = _error_of([gemm, "-p", "tawa-check-resources"], capsys)
    assert line.endswith("first, or tawa-hopper-pipeline{prepare=false}")
    assert main([gemm, "-p", "tawa-hopper-pipeline{prepare=false},tawa-check-resources"]) == 0
    capsys.readouterr()


def test_a_module_is_at_the_level_of_its_most_advanced_kernel(capsys):
    """A kernel tawa-warp-specialize declined stays a tile kernel beside
    specialized ones; the passes, not the check, deal with it."""
    assert main([str(EXAMPLES / "gemm.mlir")]) == 0
    gemm = capsys.readouterr().out
    assert main([str(EXAMPLES / "gemm.mlir"), "-p", "tawa-warp-specialize"]) == 0
    specialized = capsys.readouterr().out
    body = lambda text: text[text.index("func.func"):text.rindex("}")]  # noqa: E731
    mixed = tawa.parse("builtin.module {\n" + body(specialized) + "\n" + body(gemm).replace("@gemm", "@plain") + "}")
    check_level("tawa-assign-stage-phase", mixed)
    with pytest.raises(TawaError, match="tawa-lower-tile needs IR after tawa-lower-aref .* but @gemm is at level aref;"):
        check_level("tawa-lower-tile", mixed)


def test_no_kernel_to_print_is_located(tmp_path, capsys):
    """A module without kernels (a Python file whose front end printed an
    empty module) through the pipeline to PTX: the error is at the module."""
    src = tmp_path / "empty.mlir"
    src.write_text("builtin.module {\n}\n")
    assert main([str(src), "-p", "tawa-hopper-pipeline", "-t", "ptx"]) == 1
    assert capsys.readouterr().err == (f"{src}:1:1: error: the module has no lowered kernel to print as PTX "
                                       "(run -p tawa-hopper-pipeline first)\n")
    assert main([str(EXAMPLES / "gemm.mlir"), "-t", "ptx"]) == 1
    assert capsys.readouterr().err.startswith(f"{EXAMPLES / 'gemm.mlir'}:7:1: error: the module has no lowered")
