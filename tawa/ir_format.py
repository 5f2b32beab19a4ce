"""Ops in a declarative assembly format, parsed, built and printed with
less of xdsl's generic work per op (docs/testing.md, "Parsing large
modules").

xdsl's `FormatProgram.parse` reads the op's pieces with the format's
directives, checks them against the definition
(`resolve_constraint_variables`), infers the types not written, resolves
the operands, then builds the op with `IRDLOperation.build`, whose
`irdl_op_init` works out again, at every op, how the pieces match the
definition: it converts each group of operands and regions, checks each
group's size against its definition, and looks through the definition's
options.  Here all that is worked out once per op class (`ClassFormat`):
the common directives become parsing steps with a call less each, the
checks of what was read are the definition's constraints taken apart once
(`tawa.op_verifier.attr_check`), and `build` checks the group sizes in a
few comparisons for a class without segment options and then makes the op
as `irdl_op_init` and `Operation.__init__` make it, from the same flat
lists.  Wherever a check fails or a case is not one of these, xdsl's own
function runs from the start, so errors are xdsl's.  `print_with_format`
prints the same way, reading single operands and types by index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import UNKNOWN_LOC
from xdsl.ir import Attribute, Operation, OpResult, Region, SSAValue, SSAValues, Use
from xdsl.irdl import IRDLOperation
from xdsl.irdl.constraints import RangeConstraint, SingleOf, VerificationContext
from xdsl.irdl.declarative_assembly_format import (
    AttrDictDirective,
    FormatProgram,
    OperandVariable,
    ParsingState,
    PrintingState,
    PunctuationDirective,
    ResultVariable,
    TypeDirective,
)
from xdsl.irdl.operations import AttrSizedSegments, OpDef, OptionalDef, SameVariadicSize, VariadicDef
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import KIND_BY_PUNCTUATION_SPELLING, MLIRTokenKind

from tawa.op_verifier import Check, Rejected, attr_check

_new = object.__new__
_item = tuple.__getitem__  # of SSAValues, without its Python-level __getitem__

_GENERATED_PARSE = "get_accessors_from_op_def.<locals>.parse_with_format"


class ClassFormat:
    """An op class's declarative format and what parsing and `build` need
    of its definition, found once."""

    def __init__(self, op_type: type[IRDLOperation], op_def: OpDef, program: FormatProgram):
        self.op_type = op_type
        self.op_def = op_def
        self.program = program
        self.plain = not op_def.successors and not any(
            isinstance(o, AttrSizedSegments | SameVariadicSize) for o in op_def.options)
        """No segment-size or same-size option (the others do not change
        how `irdl_op_init` builds) and no successors: the groups of
        operands, results and regions are all `build` checks."""
        self.operands = _sizes(op_def.operands)
        self.results = _sizes(op_def.results)
        self.regions = _sizes(op_def.regions)
        self.counts = (len(op_def.operands), len(op_def.results), len(op_def.regions), len(op_def.successors))
        self.operand_checks = [_range_check(d.constr) for _, d in op_def.operands]
        self.result_checks = [_range_check(d.constr) for _, d in op_def.results]
        self.attribute_checks = [
            (name, d.default_value, attr_check(d.constr), is_property)
            for is_property, defs in ((True, op_def.properties), (False, op_def.attributes))
            for name, d in defs.items()
            if not (isinstance(d, OptionalDef) and d.default_value is None)
        ]
        """What `resolve_constraint_variables` checks of properties and
        attributes: (name, default, check or None, is a property)."""
        self.defaults = (
            [(name, d.default_value) for name, d in op_def.properties.items()
             if not isinstance(d, OptionalDef) and d.default_value is not None],
            [(name, d.default_value) for name, d in op_def.attributes.items()
             if not isinstance(d, OptionalDef) and d.default_value is not None],
        )
        """The values that `IRDLOperation.__post_init__` fills in."""
        self.parse_steps: list[ParseStep] | None = None
        """The format's directives as parsing steps (`_parse_steps`), made
        at the first op of the class."""
        mro = op_type.__mro__
        after = mro[mro.index(IRDLOperation) + 1:]
        self.post_init = (op_type.__post_init__ is IRDLOperation.__post_init__
                          and next(c for c in after if "__post_init__" in c.__dict__) is Operation
                          and isinstance(op_type.name, str) and op_type.name != "")
        """`__post_init__` is IRDLOperation's (the defaults), then
        Operation's (checks of the class's name, made here once)."""


def _range_check(constr: RangeConstraint) -> tuple[bool, Check | None, Callable, Callable]:
    """(single, check of the one attribute or None, the constraint's
    `verify` and `verify_length`): a single definition's check needs no
    tuple."""
    if type(constr) is SingleOf:
        return True, attr_check(constr.constr), constr.verify, constr.verify_length
    return False, None, constr.verify, constr.verify_length


def _sizes(defs: list) -> tuple[tuple[bool, bool], ...]:
    """(variadic, optional) of each definition of a group."""
    return tuple((isinstance(d, VariadicDef), isinstance(d, OptionalDef)) for _, d in defs)


_formats: dict[type, ClassFormat | None] = {}


def class_format(op_type: type[Operation]) -> ClassFormat | None:
    """The format of an op class whose `parse` is the one IRDL made from its
    `assembly_format`; None for any other class."""
    try:
        return _formats[op_type]
    except KeyError:
        pass
    found = None
    parse = getattr(getattr(op_type, "parse", None), "__func__", None)
    if issubclass(op_type, IRDLOperation) and getattr(parse, "__qualname__", "") == _GENERATED_PARSE:
        cells = dict(zip(parse.__code__.co_freevars, parse.__closure__ or ()))
        program = cells["assembly_program"].cell_contents if "assembly_program" in cells else None
        if isinstance(program, FormatProgram):
            found = ClassFormat(op_type, op_type.get_irdl_definition(), program)
    _formats[op_type] = found
    return found


def parse_with_format(parser: Parser, form: ClassFormat) -> IRDLOperation:
    """`FormatProgram.parse`, with the checks of what was read worked out
    once per class and the op made by `build`."""
    program, op_def, op_type = form.program, form.op_def, form.op_type
    # ParsingState(op_type), its fields sized from the definition once.
    state = _new(ParsingState)
    n_operands, n_results, n_regions, n_successors = form.counts
    state.op_type = op_type
    state.operands = [None] * n_operands
    state.operand_types = [None] * n_operands
    state.result_types = [None] * n_results
    state.regions = [None] * n_regions
    state.successors = [None] * n_successors
    state.attributes = {}
    state.properties = {}
    state.context = VerificationContext()
    steps = form.parse_steps
    if steps is None:
        steps = form.parse_steps = _parse_steps(form)
    for step in steps:
        step(parser, state)
    try:
        _resolve_constraint_variables(form, state)
    except Exception:  # xdsl's, from the start, for its error
        state.context = VerificationContext()
        program.resolve_constraint_variables(state, op_def)
    assert None not in state.operands
    operand_types = state.operand_types
    if None in operand_types:
        operand_types = program.resolve_operand_types(state, op_def)
    result_types = state.result_types
    if None in result_types:
        result_types = program.resolve_result_types(state, op_def)
    pos = parser.pos
    resolve = parser.resolve_operand
    operands = []
    for names, types in zip(state.operands, operand_types, strict=True):
        if len(names) == len(types) and (type(types) is tuple or type(types) is list):
            operands.append([resolve(name, t) for name, t in zip(names, types)])
        else:
            operands.append(parser.resolve_operands(names, types, pos))  # xdsl's error
    return build(form, operands, result_types, state.attributes, state.properties, state.regions,
                 state.successors)


ParseStep = Callable[[Parser, ParsingState], None]


def _parse_steps(form: ClassFormat) -> list[ParseStep]:
    """The format's directives as parsing steps, the common ones with a
    call less each: a punctuation taken by its token kind, a single operand
    or the type of a single operand or result stored as the directive
    stores it, an attribute dictionary that is not there skipped.  Every
    other directive parses itself."""
    steps: list[ParseStep] = []
    for stmt in form.program.stmts:
        kind = type(stmt)
        if kind is PunctuationDirective and stmt.punctuation in KIND_BY_PUNCTUATION_SPELLING:
            steps.append(_parse_punctuation(stmt.punctuation))
        elif kind is OperandVariable:
            steps.append(_parse_operand(stmt.index))
        elif kind is TypeDirective and type(stmt.inner) in (OperandVariable, ResultVariable):
            steps.append(_parse_type(stmt.inner.index, type(stmt.inner) is OperandVariable))
        elif kind is AttrDictDirective and not stmt.with_keyword:
            steps.append(_parse_attr_dict(stmt.parse))
        else:
            steps.append(stmt.parse)
    return steps


def _parse_punctuation(punctuation: str) -> ParseStep:
    token_kind = KIND_BY_PUNCTUATION_SPELLING[punctuation]

    def step(parser: Parser, state: ParsingState) -> None:
        parser_state = parser._parser_state
        if parser_state.current_token.kind is token_kind:
            parser_state.current_token = parser_state.lexer.lex()
        else:
            parser.parse_punctuation(punctuation)  # xdsl's error
    return step


def _parse_operand(index: int) -> ParseStep:
    def step(parser: Parser, state: ParsingState) -> None:
        state.operands[index] = (parser.parse_unresolved_operand(),)
    return step


def _parse_type(index: int, operand: bool) -> ParseStep:
    def step(parser: Parser, state: ParsingState) -> None:
        (state.operand_types if operand else state.result_types)[index] = (parser.parse_type(),)
    return step


def _parse_attr_dict(directive: ParseStep) -> ParseStep:
    def step(parser: Parser, state: ParsingState) -> None:
        # No `{`: xdsl's would read an empty dictionary, and store nothing.
        if parser._parser_state.current_token.kind is MLIRTokenKind.L_BRACE:
            directive(parser, state)
    return step


def _resolve_constraint_variables(form: ClassFormat, state: ParsingState) -> None:
    """What `FormatProgram.resolve_constraint_variables` checks, and the
    same constraint variables bound; raises where it fails."""
    ctx = state.context
    for operands, types, (single, check, verify, verify_length) in zip(
            state.operands, state.operand_types, form.operand_checks, strict=True):
        if type(operands) is not tuple and type(operands) is not list:
            raise Rejected
        if types is not None and type(types) is not tuple and type(types) is not list:
            raise Rejected
        if single:
            if len(operands) != 1:
                raise Rejected
            if types is None:
                continue
            if len(types) != 1:
                raise Rejected
            if check is not None:
                check(types[0], ctx)
        else:
            verify_length(len(operands), ctx)
            if types is not None:
                verify(types, ctx)
    for types, (single, check, verify, _) in zip(state.result_types, form.result_checks, strict=True):
        if types is None:
            continue
        if type(types) is not tuple and type(types) is not list:
            raise Rejected
        if single:
            if len(types) != 1:
                raise Rejected
            if check is not None:
                check(types[0], ctx)
        else:
            verify(types, ctx)
    properties, attributes = state.properties, state.attributes
    for name, default, check, is_property in form.attribute_checks:
        attr = (properties if is_property else attributes).get(name, default)
        if attr is not None and check is not None:
            check(attr, ctx)


def _flat(groups: Sequence, sizes: tuple[tuple[bool, bool], ...], item: type, kinds: dict[type, bool]) -> list | None:
    """The values of `groups` in one list, as `irdl_build_arg_list` makes it
    from lists of `item`s or single `item`s; None where a group is of
    another kind or of a size its definition does not allow.  `kinds`
    remembers which classes are `item`s (a check of an abstract class is
    slow)."""
    if len(groups) != len(sizes):
        return None
    flat: list = []
    for group, (variadic, optional) in zip(groups, sizes):
        kind = type(group)
        if kind is list or kind is tuple:
            n = len(group)
            if (n != 1 and not variadic) or (optional and n > 1):
                return None
            for value in group:
                ok = kinds.get(type(value))
                if ok is None:
                    ok = kinds[type(value)] = issubclass(type(value), item)
                if not ok:
                    return None
            flat.extend(group)
        elif isinstance(group, item):
            flat.append(group)
        else:
            return None
    return flat


_values: dict[type, bool] = {}
_types: dict[type, bool] = {}
_regions: dict[type, bool] = {}


def build(
    form: ClassFormat,
    operands: Sequence,
    result_types: Sequence,
    attributes: dict[str, Attribute | None],
    properties: dict[str, Attribute | None],
    regions: Sequence,
    successors: Sequence,
) -> IRDLOperation:
    """The op that `op_type.build` gives for these pieces, as parsed by a
    declarative format: lists of values, types and regions per definition
    (a region group may be None: no regions)."""
    op_type = form.op_type
    flat_operands = flat_types = flat_regions = None
    if form.plain and not successors:
        flat_operands = _flat(operands, form.operands, SSAValue, _values)
        flat_types = _flat(result_types, form.results, Attribute, _types)
        flat_regions = _flat([[] if r is None else r for r in regions], form.regions, Region, _regions)
    if flat_operands is None or flat_types is None or flat_regions is None:
        return op_type.build(operands=operands, result_types=result_types, attributes=attributes,
                             properties=properties, regions=regions, successors=successors)
    # What Operation.__init__ does, its setters' work on empty fields left out.
    op = op_type.__new__(op_type)
    values = op._operands = SSAValues(flat_operands)
    uses = op._operand_uses = tuple([Use(op, i) for i in range(len(values))])
    for value, use in zip(values, uses):
        value.add_use(use)
    op.results = SSAValues([OpResult(t, op, i) for i, t in enumerate(flat_types)])
    op.properties = {k: v for k, v in properties.items() if v is not None}
    op.attributes = {k: v for k, v in attributes.items() if v is not None}
    op.location = UNKNOWN_LOC
    op._successors = op._successor_uses = ()
    op.regions = ()
    for region in flat_regions:
        op.add_region(region)
    if form.post_init:
        for table, defaults in zip((op.properties, op.attributes), form.defaults):
            for name, default in defaults:
                if name not in table:
                    table[name] = default
    else:
        op.__post_init__()
    return op



PrintStep = Callable[[Printer, PrintingState, IRDLOperation], None]


def _print_steps(form: ClassFormat) -> list[PrintStep]:
    """The format's directives as printing steps: a single operand, or the
    type of a single operand or result, read by its index where the class
    has no variadic definitions of that kind (xdsl's accessor works the
    index out at every use), and an attribute dictionary that has nothing
    to print skipped; every other directive prints itself."""
    op_def = form.op_def
    segments = any(isinstance(o, AttrSizedSegments) for o in op_def.options)
    fixed_operands = not segments and not any(v for v, _ in form.operands)
    fixed_results = not segments and not any(v for v, _ in form.results)
    steps: list[PrintStep] = []
    for stmt in form.program.stmts:
        kind = type(stmt)
        if kind is OperandVariable and fixed_operands:
            steps.append(_print_operand(stmt.index, len(form.operands), stmt.print))
        elif kind is TypeDirective and type(stmt.inner) is OperandVariable and fixed_operands:
            steps.append(_print_type(stmt.inner.index, True, len(form.operands), stmt.print))
        elif kind is TypeDirective and type(stmt.inner) is ResultVariable and fixed_results:
            steps.append(_print_type(stmt.inner.index, False, len(form.results), stmt.print))
        elif kind is AttrDictDirective:
            steps.append(_print_attr_dict(stmt))
        else:
            steps.append(stmt.print)
    return steps


def _print_operand(index: int, count: int, directive: PrintStep) -> PrintStep:
    def step(printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        if len(op._operands) != count:  # an op that does not verify: xdsl's accessor
            return directive(printer, state, op)
        state.print_whitespace(printer)
        printer.print_ssa_value(_item(op._operands, index))
    return step


def _print_type(index: int, operand: bool, count: int, directive: PrintStep) -> PrintStep:
    def step(printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        values = op._operands if operand else op.results
        if len(values) != count:  # an op that does not verify: xdsl's accessor
            return directive(printer, state, op)
        state.print_whitespace(printer)
        printer.print_attribute(_item(values, index).type)
    return step


def _print_attr_dict(directive: AttrDictDirective) -> PrintStep:
    expected = directive.expected_properties
    full = directive.print

    def step(printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        # Nothing to print (xdsl's would find an empty dictionary): no attributes, and
        # none of the properties that this dictionary holds.
        if op.attributes or (expected and not expected.isdisjoint(op.properties)):
            full(printer, state, op)
    return step


_steps: dict[type, list[PrintStep]] = {}


def print_with_format(printer: Printer, form: ClassFormat, op: IRDLOperation) -> None:
    """`FormatProgram.print`, with the steps of `_print_steps`."""
    steps = _steps.get(form.op_type)
    if steps is None:
        steps = _steps[form.op_type] = _print_steps(form)
    state = PrintingState()
    for step in steps:
        step(printer, state, op)
