"""`tawa-hopper-pipeline`'s steps as they are written down: the list in its
module docstring and the one in docs/passes.md name `steps`' passes in order
(in brackets exactly those that only some options run, in braces options the
pass has), and the command docs/passes.md spells out for the GEMM is the
pipeline's own at its defaults.  A step added, removed or moved without them
fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import tawa
from tawa.transforms import get_all_passes, hopper_pipeline
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.transforms.tuning import Tuning

ROOT = Path(__file__).resolve().parents[2]
PASSES_MD = ROOT / "docs" / "passes.md"

EVERY = HopperPipelinePass(cluster=2, watchdog_ms=1, tuning=Tuning(defer_stores=True, pin_waits=True))
"""Every optional step on."""
FEWEST = HopperPipelinePass(persistent=False, prepare=False,
                            tuning=Tuning(overlap="none", cache_hints=False, pingpong=False))
"""Every optional step off."""


def _names(pipeline: HopperPipelinePass) -> list[str]:
    return [*(p.name for p in pipeline.tile_steps()), pipeline.specialize_pass().name, *(p.name for p in pipeline.steps(2))]


STEP = re.compile(r"(\[)?(tawa-[a-z0-9-]+)(?:\{([^}]*)\})?\]?")


def _listing(text: str) -> list[tuple[str, bool, list[str]]]:
    """(pass, bracketed, options in braces) of each step of a written list."""
    return [(name, bool(opt), options.split() if options else []) for opt, name, options in STEP.findall(text)]


def _docstring_list() -> str:
    doc = hopper_pipeline.__doc__
    assert doc is not None
    block = re.search(r"\n\n((?:    .*\n)+)", doc)
    assert block, "tawa/transforms/hopper_pipeline.py: the docstring lists the steps in an indented block"
    return block[1]


def _passes_md_list() -> str:
    text = PASSES_MD.read_text()
    block = re.search(r"```text\n(tawa-exp-to-exp2 ,[^`]*)```", text)
    assert block, "docs/passes.md: the steps of tawa-hopper-pipeline in a ```text block"
    return block[1]


@pytest.mark.parametrize("where", ["docstring", "passes.md"])
def test_the_written_steps_are_the_pipelines(where):
    listed = _listing(_docstring_list() if where == "docstring" else _passes_md_list())
    every, fewest = _names(EVERY), _names(FEWEST)
    assert [name for name, _, _ in listed] == every, f"{where}: the steps differ from HopperPipelinePass.steps"
    assert {name for name, optional, _ in listed if optional} == set(every) - set(fewest), (
        f"{where}: in brackets exactly the steps some options leave out")
    passes = get_all_passes()
    for name, _, options in listed:
        fields = {f.name.replace("_", "-") for f in dataclasses.fields(passes[name]())}
        assert set(options) <= fields, f"{where}: {name} has no option {sorted(set(options) - fields)}"


def _spec(text: str) -> str:
    """A pass pipeline as text, with options dashed and strings unquoted."""
    return re.sub(r"\{[^}]*\}", lambda m: m[0].replace("_", "-").replace('"', ""), text)


def test_the_spelled_out_command_is_the_pipeline_at_its_defaults():
    """docs/passes.md's `--print-between-passes` command for examples/gemm.mlir
    runs the passes the pipeline runs there, with their options."""
    command = re.search(r"tawa-opt examples/gemm.mlir --print-between-passes -t ptx \\\n  -p '([^']*)'",
                        PASSES_MD.read_text())
    assert command, "docs/passes.md: the spelled-out pipeline for examples/gemm.mlir"
    module = tawa.parse((ROOT / "examples" / "gemm.mlir").read_text())
    pipeline = HopperPipelinePass()
    pipeline.specialize_pass().apply(tawa.context(), module)
    steps = [*pipeline.tile_steps(), pipeline.specialize_pass(), *pipeline.planned_steps(module)]
    assert command[1] == _spec(",".join(str(p) for p in steps))
