"""Op building blocks shared by tawa's dialects."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import I64, IndexType, IntegerAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum


class GridAxisOp(IRDLOperation):
    """An `index` read from launch-grid axis `axis` (0, 1 or 2): program ids,
    grid sizes, CTA ids.  Subclasses set the name and document the value."""

    axis = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$axis attr-dict"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, 64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if self.axis.value.data not in (0, 1, 2):
            raise VerifyException(f"{self.name} axis must be 0, 1 or 2, got {self.axis.value.data}")


def verify_arrival_count(name: str, count: SSAValue) -> None:
    """A counter's arrival count where it is a constant: in [1, 2^31) (the
    `atom.inc` bound is count − 1, a u32); a computed count is the
    program's to get right."""
    owner = count.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        value = owner.value.value.data
        if not 1 <= value < 2**31:
            raise VerifyException(f"{name} count must be in [1, 2^31), got {value}")


def parse_count_and_values(parser: Parser, what: str) -> tuple[int, list[SSAValue], dict[str, Attribute]]:
    """Parses `N (%v, ...) {attrs} : T, ...` (the values optional): the syntax of
    wait ops that pass completed values through."""
    count = parser.parse_integer(allow_boolean=False, allow_negative=False)
    names = parser.parse_optional_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    ) or []
    attrs = parser.parse_optional_attr_dict()
    types: list[Attribute] = []
    pos = parser.pos
    if names:
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if len(types) != len(names):
        parser.raise_error(f"{what}: {len(names)} values but {len(types)} types", pos)
    return count, list(parser.resolve_operands(names, types, pos)), attrs


def print_count_and_values(
    printer: Printer, count: int, values: Sequence[SSAValue], attributes: dict[str, Attribute]
) -> None:
    """Prints what `parse_count_and_values` parses."""
    printer.print_string(f" {count}")
    if values:
        printer.print_string(" (")
        printer.print_list(values, printer.print_operand)
        printer.print_string(")")
    printer.print_op_attributes(attributes)
    if values:
        printer.print_string(" : ")
        printer.print_list((v.type for v in values), printer.print_attribute)


def parse_kind_and_operand_pair(
    parser: Parser, kinds: type[StrEnum], what: str, comma_after_kind: bool
) -> tuple[StrEnum, SSAValue, SSAValue, dict[str, Attribute]]:
    """Parses `kind[,] %lhs, %rhs {attrs} : T_lhs, T_rhs` (elementwise ops on
    fragments whose rhs may be a fragment or a scalar)."""
    pos = parser.pos
    name = parser.parse_identifier()
    if name not in kinds.__members__.values():
        parser.raise_error(f"unknown {what} '{name}'", pos)
    if comma_after_kind:
        parser.parse_punctuation(",")
    lhs = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    rhs = parser.parse_unresolved_operand()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    lt = parser.parse_type()
    parser.parse_punctuation(",")
    rt = parser.parse_type()
    lhs_v, rhs_v = parser.resolve_operands([lhs, rhs], [lt, rt], parser.pos)
    return kinds(name), lhs_v, rhs_v, attrs


def print_kind_and_operand_pair(
    printer: Printer, kind: str, lhs: SSAValue, rhs: SSAValue, attributes: dict[str, Attribute], comma_after_kind: bool
) -> None:
    """Prints what `parse_kind_and_operand_pair` parses."""
    printer.print_string(f" {kind}{',' if comma_after_kind else ''} ")
    printer.print_operand(lhs)
    printer.print_string(", ")
    printer.print_operand(rhs)
    printer.print_op_attributes(attributes)
    printer.print_string(" : ")
    printer.print_attribute(lhs.type)
    printer.print_string(", ")
    printer.print_attribute(rhs.type)
