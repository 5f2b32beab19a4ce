"""`tawa-hopper-pipeline`'s options: a few that say what to build, the
compiler's own choices in one `Tuning` (tawa/transforms/tuning.py), each
checked once, when it is made, and spelled flat in text and in
`HopperPipelinePass.of`."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.passes import PassPipeline
from xdsl.utils.arg_spec import parse_spec

import tawa
from tawa.diagnostics import TawaError
from tawa.runtime import compiler
from tawa.runtime.compiler import CompileError
from tawa.transforms import get_all_passes
from tawa.transforms.hopper_pipeline import OPTIONS, TUNING_OPTIONS, HopperPipelinePass
from tawa.transforms.lower.stage_stores import StageStoresPass
from tawa.transforms.tuning import Tuning

# A value other than the default for every Tuning field.
NOT_DEFAULT = {
    "max_stages": 6, "once_depth": 2, "producer_regs": 40, "consumer_regs": 232, "group_m": 4, "overlap": "all",
    "early_release": "none", "pingpong": False, "pin_waits": True, "staging": "subtiled", "store_group": "cta",
    "defer_stores": True, "cache_hints": False,
}
STRATEGIES = {
    "epilogue": "auto, tma, threads", "staging": "auto, full, subtiled, single, full-in-loops", "store_group": "auto, cta, warpgroup",
    "overlap": "auto, all, none", "early_release": "auto, all, none",
}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else str(value)


def test_at_most_ten_options():
    names = [f.name for f in dataclasses.fields(HopperPipelinePass)]
    assert len(names) <= 10, names
    assert names == [*OPTIONS, "tuning"]
    assert set(NOT_DEFAULT) == set(TUNING_OPTIONS) == {f.name for f in dataclasses.fields(Tuning)}
    assert not set(OPTIONS) & set(TUNING_OPTIONS)


@pytest.mark.parametrize("name", sorted(NOT_DEFAULT))
def test_each_tuning_field_round_trips_through_text(name):
    value = NOT_DEFAULT[name]
    text = f"tawa-hopper-pipeline{{{name}={_text(value)}}}"
    hp = HopperPipelinePass.from_spec(parse_spec(text))
    assert getattr(hp.tuning, name) == value
    assert hp.tuning == Tuning(**{name: value}) and hp == HopperPipelinePass(tuning=hp.tuning)
    assert str(hp) == text  # pass → spec → text
    dashed = text.replace(name, name.replace("_", "-"))
    [parsed] = PassPipeline.parse_spec(get_all_passes(), dashed).passes  # as tawa-opt reads -p
    assert parsed == hp == HopperPipelinePass.of(**{name.replace("_", "-"): value})


def test_own_options_and_tuning_together():
    text = 'tawa-hopper-pipeline{stages=3 watchdog_ms=500 pin_waits=true staging="subtiled"}'
    hp = HopperPipelinePass.from_spec(parse_spec(text))
    assert hp == HopperPipelinePass(stages=3, watchdog_ms=500, tuning=Tuning(pin_waits=True, staging="subtiled"))
    assert str(hp) == text
    every = hp.spec(include_default=True)
    assert list(every.parameters) == [*OPTIONS, *TUNING_OPTIONS]
    assert HopperPipelinePass.from_spec(every) == hp
    assert str(HopperPipelinePass()) == "tawa-hopper-pipeline"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_bad_strategy_fails_when_made(name):
    message = (f"tawa-hopper-pipeline: error: {name.replace('_', '-')} must be one of {STRATEGIES[name]}, "
               "got 'bogus'")
    for make in (lambda: HopperPipelinePass.of(**{name: "bogus"}),
                 lambda: HopperPipelinePass.from_spec(parse_spec(f"tawa-hopper-pipeline{{{name}=bogus}}"))):
        with pytest.raises(TawaError) as err:
            make()
        assert str(err.value) == message
    if name in ("epilogue", "staging", "store_group"):
        with pytest.raises(TawaError) as err:
            StageStoresPass(**{name: "bogus"})
        assert str(err.value) == message.replace("tawa-hopper-pipeline", "tawa-stage-stores")


@pytest.mark.parametrize("options, message", [
    ({"max_stages": 0}, "max-stages must be at least 1, got 0"),
    ({"once_depth": -1}, "once-depth must be 0 (decided per kernel) or at least 1, got -1"),
    ({"consumer_regs": 100}, "consumer-regs must be a multiple of 8 in [24, 256], got 100"),
    ({"stages": -1}, "stages must be 0 (decided per kernel) or at least 1, got -1"),
    ({"watchdog_ms": -5}, "watchdog-ms must be 0 (no watchdog) or a positive bound, got -5"),
    ({"defer_stores": True, "persistent": False}, "defer-stores needs a persistent kernel (persistent=true)"),
    ({"stages": 2, "ring_depths": (3, 2)}, "give stages=2 or ring-depths=3,2, not both"),
])
def test_other_bad_values_fail_when_made(options, message):
    with pytest.raises(TawaError) as err:
        HopperPipelinePass.of(**options)
    assert str(err.value) == f"tawa-hopper-pipeline: error: {message}"


def test_unknown_options():
    with pytest.raises(TypeError, match="unknown option 'watchdog'"):
        HopperPipelinePass.of(watchdog=True)
    with pytest.raises(ValueError, match=r'\["tuning"\] not found'):
        HopperPipelinePass.from_spec(parse_spec("tawa-hopper-pipeline{tuning=1}"))
    with pytest.raises(CompileError) as err:
        tawa.compile("not a module {", "gemm", watchdog=True)
    assert str(err.value) == (f"tawa.compile: error: unknown option 'watchdog'; tawa-hopper-pipeline accepts: "
                              f"{', '.join(OPTIONS)}; tuning: {', '.join(TUNING_OPTIONS)}")


def test_compile_takes_tuning_flat():
    """`tawa.compile`'s keywords become the text spec, which `from_spec` reads."""
    options = {"stages": 2, "staging": "single", "pin_waits": True}
    [hp] = compiler.build_pipeline(options).passes
    assert hp == HopperPipelinePass(stages=2, tuning=Tuning(staging="single", pin_waits=True))
    compiler.check_options(options)
