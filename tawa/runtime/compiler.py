"""`tawa.compile`: a tile kernel → PTX and its calling convention.

    kernel = tawa.compile(text_or_module, "gemm", stages=4)

1. parses the text (or clones the given module: it is never modified);
2. runs `tawa-hopper-pipeline{stages=4}` (every keyword option becomes a
   pass option, the pass's own or its tuning's; unknown options and bad
   values are one-line CompileErrors),
   verifying the IR after every pass;
3. prints PTX with `tawa.backend.ptx.printer.print_ptx(module)`;
4. computes the entry's `KernelABI` (`tawa.backend.ptx.abi.kernel_abi`) from
   the lowered `func.func` of the same name.

Results are cached in the process by (IR text, kernel name, options): asking
again returns the same `Kernel` (and so its loaded GPU code).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from tawa.diagnostics import TawaError, first_line, verify
from tawa.runtime.kernel import Kernel

PIPELINE = "tawa-hopper-pipeline"
CACHE_SIZE = 64


class CompileError(TawaError):
    """A kernel that cannot be compiled (bad options, a failing pass, ...)."""

    def __init__(self, message: str, where: str = "tawa.compile"):
        super().__init__(message, where)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The passes `compile` can run (tests substitute their own)."""
    from tawa.transforms import get_all_passes

    return get_all_passes()


def print_ptx(module: ModuleOp) -> str:
    """The PTX of a lowered module, by the backend's printer."""
    try:
        from tawa.backend.ptx.printer import print_ptx as printer
    except ImportError as err:
        raise CompileError(f"the PTX printer is not available: {err}") from None
    return printer(module)


def _option_text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        return ",".join(repr(v) for v in value)
    raise CompileError(
        f"option {name}={value!r}: values must be bools, numbers, strings or lists of numbers"
    )


def pipeline_spec(options: Mapping[str, Any], pipeline: str = PIPELINE) -> str:
    """`tawa-hopper-pipeline{stages=4 ...}` for keyword `options`."""
    if not options:
        return pipeline
    args = " ".join(f"{k}={_option_text(k, v)}" for k, v in options.items())
    return f"{pipeline}{{{args}}}"


def _pass_options(factory: Callable[[], type[ModulePass]]) -> tuple[list[str], list[str]]:
    """The pass's own options and those of its `tuning` (a dataclass value
    whose fields text spells flat among the pass's: `tawa.transforms.tuning`)."""
    cls = factory()
    if not dataclasses.is_dataclass(cls):
        return [], []
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "name"}
    tuning = fields.pop("tuning", None)
    default = tuning.default if tuning is not None else None
    tuned = [f.name for f in dataclasses.fields(default)] if dataclasses.is_dataclass(default) else []
    return list(fields), tuned


def _check_bools(options: Mapping[str, Any], factory: Callable[[], type[ModulePass]]) -> None:
    """A bool given for an option that is not one (`stages=True`, which the
    pass's text would read as 1) is a CompileError."""
    cls = factory()
    if not dataclasses.is_dataclass(cls):
        return
    types = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    tuning = next((f.default for f in dataclasses.fields(cls) if f.name == "tuning"), None)
    if dataclasses.is_dataclass(tuning):
        types |= {f.name: str(f.type) for f in dataclasses.fields(tuning)}
    for key, value in options.items():
        if isinstance(value, bool) and key in types and "bool" not in types[key]:
            raise CompileError(f"option {key}={value!r}: {key} is not a flag (its type: {types[key]})")


def build_pipeline(options: Mapping[str, Any], callback: Any = None) -> PassPipeline:
    """The compilation pipeline for `options` (CompileError if unknown)."""
    passes = available_passes()
    if PIPELINE not in passes:
        raise CompileError(
            f"the {PIPELINE} pass is not available (tawa's Hopper backend is missing); "
            f"known passes: {', '.join(sorted(passes)) or 'none'}"
        )
    own, tuned = _pass_options(passes[PIPELINE])
    for key in options:
        if key not in own and key not in tuned:
            tuning = f"; tuning: {', '.join(tuned)}" if tuned else ""
            raise CompileError(
                f"unknown option {key!r}; {PIPELINE} accepts: {', '.join(own) or 'no options'}{tuning}"
            )
    _check_bools(options, passes[PIPELINE])
    spec = pipeline_spec(options)
    try:
        return PassPipeline.parse_spec(passes, spec, callback)
    except (ValueError, ArgSpecParseError) as err:
        msg = " ".join(str(err).split())
        raise CompileError(f"bad options for {PIPELINE} ('{spec}'): {msg}") from None
    except TawaError as err:  # a value the pass rejects when it is made
        raise CompileError(err.message) from None


def check_options(options: Mapping[str, Any]) -> None:
    """CompileError for an unknown option or a value no kernel can take,
    raised where the options are given (before the module is parsed)."""
    for p in build_pipeline(options).passes:
        check = getattr(p, "check_options", None)
        if check is not None:
            try:
                check()
            except TawaError as err:
                raise CompileError(err.message) from None


def _find_function(module: ModuleOp, name: str) -> func.FuncOp | None:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == name and op.body.blocks:
            return op
    return None


def _known_functions(module: ModuleOp) -> str:
    names = [f"@{op.sym_name.data}" for op in module.walk() if isinstance(op, func.FuncOp)]
    return ", ".join(names) or "none"


def lower(module: ModuleOp, kernel: str, options: Mapping[str, Any]) -> tuple[ModuleOp, str]:
    """Runs the pipeline on a copy of `module`; returns it and its PTX."""
    name = kernel.removeprefix("@")
    if _find_function(module, name) is None:
        raise CompileError(f"no kernel named @{name}; the module defines: {_known_functions(module)}")
    pipeline = build_pipeline(options, lambda prev, mod, nxt: verify(mod))
    lowered = module.clone()
    from tawa.ir import context

    try:
        pipeline.apply(context(), lowered)
    except TawaError:
        raise
    except DiagnosticException as err:  # PassFailedException, VerifyException, ...
        raise CompileError(first_line(err)) from None
    return lowered, print_ptx(lowered)


def compile_uncached(module: ModuleOp, kernel: str, options: Mapping[str, Any]) -> Kernel:
    from tawa.backend.ptx.abi import kernel_abi

    name = kernel.removeprefix("@")
    lowered, ptx = lower(module, name, options)
    fn = _find_function(lowered, name)
    if fn is None:
        raise CompileError(f"the lowered module lost @{name}; it defines: {_known_functions(lowered)}")
    abi = kernel_abi(fn)
    if not re.search(rf"\.entry\s+{re.escape(abi.name)}\s*\(", ptx):
        raise CompileError(f"the PTX has no entry named {abi.name} (a printer bug)")
    return Kernel(ptx, abi, options=options, lowered=lowered)


_CACHE: OrderedDict[tuple[Any, ...], Kernel] = OrderedDict()


def clear_cache() -> None:
    """Forgets every compiled kernel of this process (the disk cache of
    assembled code stays; see `tawa.runtime.ptxas`)."""
    _CACHE.clear()


def compile(module_or_text: ModuleOp | str | bytes, kernel: str, **options: Any) -> Kernel:
    """Compiles tile kernel `kernel` of a module (or its text) into a
    launchable `Kernel`.  `options` are options of `tawa-hopper-pipeline`,
    e.g. `stages=4`, or of its tuning (`tawa.transforms.tuning.Tuning`),
    e.g. `staging="subtiled"`; `watchdog_ms=2000` bounds every mbarrier
    wait by 2 s, so that a hang raises `tawa.runtime.watchdog.KernelHangError`
    (docs/runtime.md)."""
    if not isinstance(kernel, str):
        raise CompileError(f"the kernel is named by a str (e.g. \"gemm\"), got {type(kernel).__name__}")
    if isinstance(module_or_text, bytes):
        try:
            module_or_text = module_or_text.decode()
        except UnicodeDecodeError:  # the parser's error locates the byte
            from tawa.ir import parse

            parse(module_or_text)
            raise
    if isinstance(module_or_text, str):
        text = module_or_text
        module = None
    elif isinstance(module_or_text, ModuleOp):
        module = module_or_text
        text = str(module)
    else:
        raise CompileError(
            f"expected a ModuleOp or the text of one, got {type(module_or_text).__name__}"
        )
    key = (text, kernel.removeprefix("@"), tuple((k, type(v).__name__, repr(v)) for k, v in sorted(options.items())))
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    check_options(options)
    if module is None:
        from tawa.ir import parse

        module = parse(text)
    else:
        verify(module)
    result = compile_uncached(module, kernel, options)
    if options.get("epilogue", "auto") == "auto":
        # Outputs stored through tensor maps need 16-byte rows: the twin with
        # the thread epilogue takes any (Kernel.fallback).
        result.fallback = functools.partial(compile, text, kernel, **{**options, "epilogue": "threads"})
    _CACHE[key] = result
    if len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result
