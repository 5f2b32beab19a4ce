"""`tawa-opt`: parse, transform and print tawa IR (mlir-opt / xdsl-opt conventions).

    tawa-opt [file] [-p pass1,pass2{opt=v}] [-t mlir|ptx] [--print-between-passes] ...

Every error in the input, the pipeline or the options is one line
`where: error: message` on stderr and exit status 1.  Set TAWA_TRACEBACK=1 to
see the Python traceback of an internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

import tawa
from tawa.backend import get_all_targets
from tawa.diagnostics import LocatedParser, TawaError, first_line, parse_error, verify
from tawa.dialects import get_all_dialects
from tawa.transforms import get_all_passes


class TawaOptMain(xDSLOptMain):
    version_format = f"tawa-opt {tawa.__version__} (xdsl {{xdsl_version}})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="tawa: tile programs to warp-specialized Hopper kernels", args=args)

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
        super().register_all_targets()
        self.available_targets.update(get_all_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = _describe_tawa()

        def error(message: str) -> NoReturn:
            raise TawaError(message, "tawa-opt")

        arg_parser.error = error  # one line and exit 1, like every other error

    _chunk_line_offset = 0

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        self._chunk_line_offset = start_offset  # lines before this chunk (--split-input-file)
        return super().parse_chunk(chunk, file_extension, start_offset)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        try:
            return super().get_input_stream()
        except OSError as err:
            raise TawaError(f"cannot open input: {err.strerror}", self.args.input_file) from None

    def setup_pipeline(self) -> None:
        """Like xdsl-opt's, but verification failures name the failing op's
        location, and bad pipeline specs are one-line errors."""

        def between(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            if not self.args.disable_verify:
                verify(module)
            if prev is not None and nxt is not None and self.args.print_between_passes:
                print(f"// -----// IR after {prev.name} //----- //")
                Printer(stream=sys.stdout).print_op(module)
                print("\n")

        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, between)
        except (ValueError, ArgSpecParseError) as err:
            msg = " ".join(str(err).split())
            raise TawaError(f"invalid pass pipeline '{self.args.passes}': {msg}", "tawa-opt") from None

    def apply_passes(self, prog: ModuleOp) -> None:
        if not self.pipeline.passes and not self.args.disable_verify:
            verify(prog)
        super().apply_passes(prog)


def _describe_tawa() -> str:
    lines = ["tawa passes:"]
    for name, factory in sorted(get_all_passes().items()):
        doc = (factory().__doc__ or "").strip().splitlines()
        lines.append(f"  {name:28} {doc[0] if doc else ''}")
    lines.append("tawa targets:")
    for name, factory in sorted(get_all_targets().items()):
        doc = (factory().__doc__ or "").strip().splitlines()
        lines.append(f"  {name:28} {doc[0] if doc else ''}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tawa-opt` script; returns the exit status."""
    warnings.filterwarnings("default", category=DeprecationWarning)
    try:
        TawaOptMain(args=argv).run()
        return 0
    except TawaError as err:
        print(err, file=sys.stderr)  # its line and details, never xDSL's IR dump
    except ParseError as err:
        print(str(parse_error(err)), file=sys.stderr)
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
