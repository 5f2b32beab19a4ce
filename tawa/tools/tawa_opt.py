"""`tawa-opt`: parse, transform and print tawa IR (mlir-opt / xdsl-opt conventions).

    tawa-opt [file] [-p pass1,pass2{opt=v}] [-t mlir|ptx] [--print-between-passes] ...

Every error in the input, the pipeline or the options is one line
`where: error: message` on stderr and exit status 1.  Set TAWA_TRACEBACK=1 to
see the Python traceback of an internal error.

Beyond xdsl-opt: before each of tawa's passes the IR's level is checked
(`tawa.transforms.levels`), so a pass given IR that an earlier pass must
prepare names that pass; `--time-passes` prints a wall-time report to stderr;
`--dump-dir DIR` writes the IR before the first and after every pass; `--help`
lists tawa's passes and targets and `--help-all` xDSL's passes as well;
`-t` offers mlir (the IR) and ptx only.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import textwrap
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.targets.mlir import MLIRTarget
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

import tawa
from tawa.backend import get_all_targets
from tawa.diagnostics import LocatedParser, TawaError, first_line, parse_error, verify
from tawa.dialects import get_all_dialects
from tawa.ir_text import FastPrinter
from tawa.startup import paused_collector
from tawa.transforms import get_all_passes
from tawa.transforms.levels import LEVELS, PASS_LEVELS, check_level

DESCRIPTION = "tawa: tile programs to warp-specialized Hopper kernels"
XDSL_TARGETS = ("mlir",)
"""xDSL's targets that `-t` offers besides tawa's: the IR itself."""


class TawaOptMain(xDSLOptMain):
    version_format = f"tawa-opt {tawa.__version__} (xdsl {{xdsl_version}})"

    def __init__(self, args: Sequence[str] | None = None):
        self.timings = Timings()
        self._chunk = 0  # index of the --split-input-file chunk being processed
        super().__init__(description=DESCRIPTION, args=args)

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatedParser(self.ctx, io.read(), self.get_input_name())
            parser.line_offset = self._chunk_line_offset
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        # xDSL's other targets print dialects that tawa's IR does not use
        # (x86, riscv, llvm, wasm, ...): given tawa's IR they fail or print nothing.
        super().register_all_targets()
        self.available_targets = {name: self.available_targets[name] for name in XDSL_TARGETS}
        self.available_targets["mlir"] = lambda: _MLIRTarget
        self.available_targets.update(get_all_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        # tawa's passes and targets first; xDSL's ~150 only with --help-all.
        # Described only when help is printed: describing imports every
        # pass, which costs most of a second at every start.
        format_help = arg_parser.format_help

        def format_help_with_passes() -> str:
            arg_parser.description = f"{DESCRIPTION}\n\n{_describe_tawa()}"
            return format_help()

        arg_parser.format_help = format_help_with_passes
        arg_parser.epilog = "xDSL's own passes (also accepted): tawa-opt --help-all"
        helps = {
            "passes": "pass pipeline, e.g. 'tawa-warp-specialize,tawa-pipeline{stages=4}' (passes above)",
            "target": "output: mlir (the IR, default) or ptx",
            "time_passes": "print each pass's wall time, parsing and output included, to stderr",
        }
        for action in arg_parser._actions:
            action.help = helps.get(action.dest, action.help)
        arg_parser.add_argument(
            "--dump-dir",
            metavar="DIR",
            help="write the input as DIR/00_input.mlir and the IR after pass N as DIR/NN_<pass>.mlir",
        )
        arg_parser.add_argument(
            "--help-all",
            action=_HelpAllAction,
            tawa_opt=self,
            help="show this help and xDSL's passes, and exit",
        )

        def error(message: str) -> NoReturn:
            raise TawaError(message, "tawa-opt")

        arg_parser.error = error  # one line and exit 1, like every other error

    _chunk_line_offset = 0

    def run(self) -> None:
        start = time.perf_counter()
        super().run()
        if self.args.time_passes:
            print(self.timings.report(time.perf_counter() - start), file=sys.stderr)

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        self._chunk_line_offset = start_offset  # lines before this chunk (--split-input-file)
        with self.timings.measure("Parse"):
            return super().parse_chunk(chunk, file_extension, start_offset)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        with self.timings.measure("Output"):
            return super().output_resulting_program(prog)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        try:
            return super().get_input_stream()
        except OSError as err:
            raise TawaError(f"cannot open input: {err.strerror}", self.args.input_file) from None

    def setup_pipeline(self) -> None:
        """Like xdsl-opt's, but verification failures name the failing op's
        location, bad pipeline specs are one-line errors, each of tawa's
        passes first checks the level of its input, passes are timed and
        the IR is dumped after each one (--time-passes, --dump-dir)."""
        position = 0  # of the pass that just ran (0: none yet)
        started = 0.0  # when it started

        def between(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            nonlocal position, started
            ended = time.perf_counter()
            position = 0 if prev is None else position + 1
            if prev is not None:
                self.timings.add_pass(position, prev.name, ended - started)
            if self.args.dump_dir:
                with self.timings.measure("IR dumps"):
                    self.dump(module, f"{position:02d}_{prev.name if prev else 'input'}.mlir")
            with self.timings.measure("Verifier and level checks"):
                if not self.args.disable_verify:
                    verify(module)
                if nxt is not None:
                    check_level(nxt.name, module)
            if prev is not None and nxt is not None and self.args.print_between_passes:
                print(f"// -----// IR after {prev.name} //----- //")
                FastPrinter(stream=sys.stdout).print_op(module)
                print("\n")
            started = time.perf_counter()

        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, between)
        except (ValueError, ArgSpecParseError) as err:
            msg = " ".join(str(err).split())
            raise TawaError(f"invalid pass pipeline '{self.args.passes}': {msg}", "tawa-opt") from None

    def apply_passes(self, prog: ModuleOp) -> None:
        # An empty pipeline verifies too: it calls `between(None, prog, None)`.
        try:
            super().apply_passes(prog)
        finally:
            self._chunk += 1

    def dump(self, module: ModuleOp, name: str) -> None:
        """Writes `module` to DIR/name (--dump-dir); later --split-input-file
        chunks are appended after a `// -----` line, as in the output."""
        folder = Path(self.args.dump_dir)
        try:
            if self._chunk == 0 and name.startswith("00_"):
                folder.mkdir(parents=True, exist_ok=True)
                for stale in folder.glob("*.mlir"):  # an earlier run's dump, not the user's files
                    if _DUMP_NAME.fullmatch(stale.name):
                        stale.unlink()
            with open(folder / name, "w" if self._chunk == 0 else "a") as out:
                if self._chunk:
                    out.write("// -----\n")
                # as the mlir target prints it: the dump after the last pass is the output
                printer = FastPrinter(
                    stream=out,
                    print_generic_format=self.args.print_op_generic,
                    print_properties_as_attributes=self.args.print_no_properties,
                    print_debuginfo=self.args.print_debuginfo,
                )
                printer.print_op(module)
                printer.print_metadata(self.ctx.loaded_dialects)
                out.write("\n\n")
        except OSError as err:
            raise TawaError(f"cannot write {folder / name}: {err.strerror}", "tawa-opt --dump-dir") from None


class _MLIRTarget(MLIRTarget):
    """xDSL's `mlir` target (the IR), printed by `FastPrinter`: the same text."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            super().emit(ctx, module, output)
            return
        printer = FastPrinter(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


_DUMP_NAME = re.compile(r"\d{2,}_[\w.-]+\.mlir")
"""Names --dump-dir writes (and removes from an earlier run)."""


class Timings:
    """Wall times of the steps of one tawa-opt run (--time-passes), summed
    over --split-input-file chunks; passes are keyed by their position in
    the pipeline, so a pass that runs twice has two rows."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.passes: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def add_pass(self, position: int, name: str, seconds: float) -> None:
        key = f"{position:>2}. {name}"
        self.passes[key] = self.passes.get(key, 0.0) + seconds

    def measure(self, name: str) -> _Measure:
        return _Measure(self, name)

    def report(self, total: float) -> str:
        """mlir-opt's `-mlir-timing` table: parsing, the passes in pipeline
        order, the other steps, the rest, the total."""
        rest = total - sum(self.seconds.values()) - sum(self.passes.values())
        parse = {"Parse": self.seconds.get("Parse", 0.0)}
        rows = {**parse, **self.passes, **self.seconds, "Rest": max(rest, 0.0)}
        rule = "===" + "-" * 73 + "==="
        lines = [rule, "... Execution time report ...".center(len(rule)).rstrip(), rule]
        lines += [f"  Total Execution Time: {total:.4f} seconds", "", "  ----Wall Time----  ----Name----"]
        for name, seconds in [*rows.items(), ("Total", total)]:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
        return "\n".join(lines)


class _Measure:
    """`with timings.measure(name):` adds the block's wall time to `name`."""

    def __init__(self, timings: Timings, name: str):
        self.timings, self.name = timings, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.timings.add(self.name, time.perf_counter() - self.start)


class _HelpAllAction(argparse.Action):
    """--help-all: the help, then the names of xDSL's passes."""

    def __init__(self, *args: Any, tawa_opt: TawaOptMain, **kwargs: Any):
        super().__init__(*args, nargs=0, **kwargs)
        self.tawa_opt = tawa_opt

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> NoReturn:
        tool = self.tawa_opt
        passes = sorted(set(tool.available_passes) - set(get_all_passes()))
        print(parser.format_help())
        print(f"xDSL passes ({len(passes)}):")
        print(textwrap.fill(", ".join(passes), 100, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False))
        parser.exit()


def _describe_tawa() -> str:
    """tawa's passes (with the IR level each takes) and targets, one line each."""
    passes = {name: factory() for name, factory in get_all_passes().items()}
    targets = {name: factory() for name, factory in get_all_targets().items()}
    width = max(map(len, [*passes, *targets])) + 2
    levels = max(map(len, LEVELS)) + 2
    lines = ["tawa passes:"]
    for name, cls in sorted(passes.items()):
        takes = PASS_LEVELS.get(name)
        lines.append(f"  {name:{width}}{takes.level if takes else '':{levels}}{_summary(cls)}")
    lines.append("tawa targets:")
    for name, cls in sorted(targets.items()):
        lines.append(f"  {name:{width + levels}}{_summary(cls)}")
    lines.append("IR levels (a pass's middle column: the earliest it takes; given an earlier one,")
    lines.append("it names the passes to run first):  " + " -> ".join(LEVELS))
    return "\n".join(lines)


def _summary(cls: type) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tawa-opt` script; returns the exit status.
    Without `argv` (the command line of this process, the script's case)
    the objects made while starting are frozen for the collector
    (`tawa.startup`): a process that calls it with arguments, again and
    again, keeps its collector as it was."""
    warnings.filterwarnings("default", category=DeprecationWarning)
    try:
        # Setting up the pipeline imports the passes' modules (tawa.startup).
        with paused_collector():
            opt = TawaOptMain(args=argv)
        if argv is None:  # the command: its start-up is done, later collections skip what it made
            gc.freeze()
        opt.run()
        return 0
    except TawaError as err:
        print(err, file=sys.stderr)  # its line and details, never xDSL's IR dump
    except ParseError as err:
        print(str(parse_error(err)), file=sys.stderr)
    except ArgSpecParseError as err:  # a BaseException: a malformed -t spec
        print(f"tawa-opt: error: invalid target: {' '.join(str(err).split())}", file=sys.stderr)
    except DiagnosticException as err:
        print(f"tawa-opt: error: {first_line(err)}", file=sys.stderr)
    except KeyboardInterrupt:
        print("tawa-opt: error: interrupted", file=sys.stderr)
    except BrokenPipeError:
        pass
    except Exception as err:  # an internal bug: still one line unless asked
        if os.environ.get("TAWA_TRACEBACK"):
            raise
        print(
            f"tawa-opt: error: internal error: {type(err).__name__}: {first_line(err)} "
            "(set TAWA_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
