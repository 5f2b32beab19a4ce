"""Ops in a declarative assembly format, parsed and built with less of
xdsl's generic work per op (docs/testing.md, "Parsing large modules").

xdsl's `FormatProgram.parse` reads the op's pieces with the format's
directives, then builds the op with `IRDLOperation.build`, whose
`irdl_op_init` works out again, at every op, how the pieces match the
definition: it converts each group of operands and regions, checks each
group's size against its definition, and looks through the definition's
options.  `build` does that check in a few comparisons for a class without
options and then makes the op as `irdl_op_init` ends: with
`Operation.__init__`, on the same flat lists.  Anything it was not made for
goes to `IRDLOperation.build`, so its errors are xdsl's.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import FormatProgram, ParsingState
from xdsl.irdl.operations import OpDef, OptionalDef, VariadicDef
from xdsl.parser import Parser

_GENERATED_PARSE = "get_accessors_from_op_def.<locals>.parse_with_format"


class ClassFormat:
    """An op class's declarative format and what `build` needs of its
    definition, found once."""

    def __init__(self, op_type: type[IRDLOperation], op_def: OpDef, program: FormatProgram):
        self.op_type = op_type
        self.op_def = op_def
        self.program = program
        self.plain = not op_def.options and not op_def.successors
        """No segment-size or same-size option and no successors: the
        groups of operands, results and regions are all `build` checks."""
        self.operands = _sizes(op_def.operands)
        self.results = _sizes(op_def.results)
        self.regions = _sizes(op_def.regions)


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
    """`FormatProgram.parse`, building the op with `build`."""
    program, op_def, op_type = form.program, form.op_def, form.op_type
    state = ParsingState(op_type)
    for stmt in program.stmts:
        stmt.parse(parser, state)
    program.resolve_constraint_variables(state, op_def)
    assert None not in state.operands
    operand_types = program.resolve_operand_types(state, op_def)
    result_types = program.resolve_result_types(state, op_def)
    pos = parser.pos
    operands = tuple(parser.resolve_operands(uo, ot, pos)
                     for uo, ot in zip(state.operands, operand_types, strict=True))
    return build(form, operands, result_types, state.attributes, state.properties, state.regions,
                 state.successors)


def _flat(groups: Sequence, sizes: tuple[tuple[bool, bool], ...], item: type) -> list | None:
    """The values of `groups` in one list, as `irdl_build_arg_list` makes it
    from lists of `item`s or single `item`s; None where a group is of
    another kind or of a size its definition does not allow."""
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
                if not isinstance(value, item):
                    return None
            flat.extend(group)
        elif isinstance(group, item):
            flat.append(group)
        else:
            return None
    return flat


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
        flat_operands = _flat(operands, form.operands, SSAValue)
        flat_types = _flat(result_types, form.results, Attribute)
        flat_regions = _flat([[] if r is None else r for r in regions], form.regions, Region)
    if flat_operands is None or flat_types is None or flat_regions is None:
        return op_type.build(operands=operands, result_types=result_types, attributes=attributes,
                             properties=properties, regions=regions, successors=successors)
    op = op_type.__new__(op_type)
    Operation.__init__(
        op,
        operands=flat_operands,
        result_types=flat_types,
        properties={k: v for k, v in properties.items() if v is not None},
        attributes={k: v for k, v in attributes.items() if v is not None},
        successors=[],
        regions=flat_regions,
    )
    return op

