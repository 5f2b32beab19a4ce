"""The `aref` dialect: asynchronous references between warp groups.

After partitioning (`tawa-warp-specialize`), a kernel body is an
`aref.warp_specialize` op with one region per warp group: a producer that
loads tiles and consumers that compute on them.  Tile values that cross from
one partition to another travel through arefs.

An aref (Tawa, arXiv 2510.14719) is a ring of `depth` slots, each holding one
value of every type in its payload.  It behaves as a bounded FIFO channel:

* `aref.put` waits until the next slot in put order is empty, fills it and
  marks it full (the producer publishes);
* `aref.get` waits until the next slot in get order is full and borrows its
  values (the consumer reads them in place);
* `aref.consumed` releases the oldest borrowed slot, making it empty again.

The n-th put and the n-th get use slot n mod depth, so a ring of depth D lets
the producer run up to D puts ahead of the consumer.  Values returned by a get
may be used only until the matching `consumed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import auto

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IndexType, IntAttr, TensorType, i32
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import MemoryAllocEffect, MemoryWriteEffect, NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tawa.target.hopper import (
    MAX_REGS,
    MIN_REGS,
    REGS_GRANULE,
    THREADS_PER_WARP,
    WARPS_PER_GROUP,
    register_pool,
)


class PartitionRole(StrEnum):
    """What a partition of `aref.warp_specialize` does.  The lowering treats
    the roles differently: the producer runs on one elected thread and issues
    TMA loads and `full` arrivals; consumers compute on whole warp groups and
    arrive on `empty`."""

    PRODUCER = auto()
    CONSUMER = auto()


@irdl_attr_definition
class PartitionRoleAttr(EnumAttribute[PartitionRole], SpacedOpaqueSyntaxAttribute):
    """A partition role; generic syntax `#aref<role producer>`."""

    name = "aref.role"


@irdl_attr_definition
class ArefType(ParametrizedAttribute, TypeAttribute):
    """A ring of `depth` slots, each holding one value of each payload type.

    Syntax: `!aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>`
    """

    name = "aref.ref"

    payload: ArrayAttr[Attribute]
    depth: IntAttr

    def __init__(self, payload: Sequence[Attribute], depth: int):
        super().__init__(ArrayAttr(payload), IntAttr(depth))

    @property
    def types(self) -> tuple[Attribute, ...]:
        return tuple(self.payload.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            types = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_type
            )
            parser.parse_punctuation(",")
            parser.parse_keyword("depth")
            parser.parse_punctuation("=")
            depth = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (ArrayAttr(types), IntAttr(depth))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("[")
            printer.print_list(self.payload.data, printer.print_attribute)
            printer.print_string(f"], depth = {self.depth.data}")

    def verify(self) -> None:
        if self.depth.data < 1:
            raise VerifyException(f"aref depth must be at least 1, got {self.depth.data}")
        if not self.payload.data:
            raise VerifyException("aref payload must hold at least one type")
        for t in self.payload.data:
            if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
                raise VerifyException(
                    f"aref payload types must be statically shaped tensors, got {t}"
                )


def _aref_type(value: SSAValue) -> ArefType:
    t = value.type
    assert isinstance(t, ArefType)
    return t


@irdl_op_definition
class CreateOp(IRDLOperation):
    """Creates an aref with all slots empty.

    Example: `%r = aref.create : !aref.ref<[tensor<128x64xbf16>], depth = 4>`
    """

    name = "aref.create"
    result = result_def(ArefType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: ArefType):
        super().__init__(result_types=[type])


def _parse_slot(parser: Parser) -> list[UnresolvedOperand]:
    """The optional `[%stage, %phase]` after the aref operand."""
    if parser.parse_optional_punctuation("[") is None:
        return []
    stage = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    phase = parser.parse_unresolved_operand()
    parser.parse_punctuation("]")
    return [stage, phase]


def _print_slot(printer: Printer, op: _SlotOp) -> None:
    if op.stage is not None and op.phase is not None:
        printer.print_string("[")
        printer.print_operand(op.stage)
        printer.print_string(", ")
        printer.print_operand(op.phase)
        printer.print_string("]")


class _SlotOp(IRDLOperation):
    """An aref op that names the ring slot it uses.

    Before `tawa-assign-stage-phase` the slot is implicit (the n-th use of
    the aref's put, get or release sequence takes slot n mod depth).  After
    it, the op carries the slot explicitly as two index operands, written
    `%r[%stage, %phase]`: `stage` = n mod depth, the slot, and `phase` =
    (n / depth) & 1, the parity of the pass over the ring that the mbarrier
    waits of the lowering compare against.  Both or neither are present.
    """

    # Each op declares `aref`, its own operands, then `stage = opt_operand_def`
    # and `phase = opt_operand_def` (IRDL orders inherited fields after the
    # subclass's own, so they cannot be declared once here).

    def has_slot(self) -> bool:
        return self.stage is not None and self.phase is not None

    def _verify_slot(self) -> None:
        if (self.stage is None) != (self.phase is None):
            raise VerifyException(f"{self.name} needs both a stage and a phase, or neither")


def _resolve_slot(parser: Parser, slot: list[UnresolvedOperand], pos: int) -> list[SSAValue]:
    return parser.resolve_operands(slot, [IndexType()] * len(slot), pos)


@irdl_op_definition
class PutOp(_SlotOp):
    """Producer side: waits until the next slot (in put order) is empty, writes
    `values` into it and marks it full.  With `[%stage, %phase]` (see
    `tawa-assign-stage-phase`) the slot is `stage`, filled in pass `phase`.

    Example: `aref.put %r[%s, %p], %a, %b : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>`
    """

    name = "aref.put"
    aref = operand_def(ArefType)
    values = var_operand_def()
    stage = opt_operand_def(IndexType)
    phase = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self,
        aref: SSAValue,
        values: Sequence[SSAValue],
        stage: SSAValue | None = None,
        phase: SSAValue | None = None,
    ):
        super().__init__(operands=[aref, values, stage, phase])

    @classmethod
    def parse(cls, parser: Parser) -> PutOp:
        ref = parser.parse_unresolved_operand()
        slot = _parse_slot(parser)
        parser.parse_punctuation(",")
        vals = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, ArefType):
            parser.raise_error(f"aref.put expects an aref type, got {t}", pos)
        if len(vals) != len(t.types):
            parser.raise_error(
                f"aref.put expects {len(t.types)} values for {t}, got {len(vals)}", pos
            )
        (ref_v,) = parser.resolve_operands([ref], [t], pos)
        vals_v = parser.resolve_operands(vals, t.types, pos)
        op = cls(ref_v, vals_v, *_resolve_slot(parser, slot, pos))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.aref)
        _print_slot(printer, self)
        printer.print_string(", ")
        printer.print_list(self.values, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.aref.type)

    def verify_(self) -> None:
        self._verify_slot()
        expected = _aref_type(self.aref).types
        got = tuple(v.type for v in self.values)
        if got != expected:
            raise VerifyException(
                f"aref.put values ({', '.join(map(str, got))}) do not match the aref "
                f"payload ({', '.join(map(str, expected))})"
            )


@irdl_op_definition
class GetOp(_SlotOp):
    """Consumer side: waits until the next slot (in get order) is full and
    returns its values, borrowed until the matching `aref.consumed`.  With
    `[%stage, %phase]` the slot is `stage`, filled in pass `phase`.

    Example: `%a, %b = aref.get %r[%s, %p] : !aref.ref<[tensor<128x64xbf16>, tensor<256x64xbf16>], depth = 4>`
    """

    name = "aref.get"
    aref = operand_def(ArefType)
    stage = opt_operand_def(IndexType)
    phase = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    values = var_result_def()
    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self, aref: SSAValue, stage: SSAValue | None = None, phase: SSAValue | None = None
    ):
        super().__init__(
            operands=[aref, stage, phase], result_types=[_aref_type(aref).types]
        )

    @classmethod
    def parse(cls, parser: Parser) -> GetOp:
        ref = parser.parse_unresolved_operand()
        slot = _parse_slot(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, ArefType):
            parser.raise_error(f"aref.get expects an aref type, got {t}", pos)
        (ref_v,) = parser.resolve_operands([ref], [t], pos)
        op = cls(ref_v, *_resolve_slot(parser, slot, pos))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.aref)
        _print_slot(printer, self)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.aref.type)

    def verify_(self) -> None:
        self._verify_slot()
        expected = _aref_type(self.aref).types
        got = tuple(v.type for v in self.values)
        if got != expected:
            raise VerifyException(
                f"aref.get results ({', '.join(map(str, got))}) do not match the aref "
                f"payload ({', '.join(map(str, expected))})"
            )


@irdl_op_definition
class ConsumedOp(_SlotOp):
    """Consumer side: releases the oldest borrowed slot; it becomes empty and
    the producer may fill it again.  With `[%stage, %phase]` the released
    slot is `stage` (phase: the pass over the ring it was borrowed in).

    Example: `aref.consumed %r[%s, %p] : !aref.ref<[tensor<128x64xbf16>], depth = 4>`
    """

    name = "aref.consumed"
    aref = operand_def(ArefType)
    stage = opt_operand_def(IndexType)
    phase = opt_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self, aref: SSAValue, stage: SSAValue | None = None, phase: SSAValue | None = None
    ):
        super().__init__(operands=[aref, stage, phase])

    @classmethod
    def parse(cls, parser: Parser) -> ConsumedOp:
        ref = parser.parse_unresolved_operand()
        slot = _parse_slot(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, ArefType):
            parser.raise_error(f"aref.consumed expects an aref type, got {t}", pos)
        (ref_v,) = parser.resolve_operands([ref], [t], pos)
        op = cls(ref_v, *_resolve_slot(parser, slot, pos))
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.aref)
        _print_slot(printer, self)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.aref.type)

    def verify_(self) -> None:
        self._verify_slot()


@irdl_op_definition
class WarpSpecializeOp(IRDLOperation):
    """Runs its regions concurrently, each on its own warp groups.

    Region i is executed by `num_warps[i]` warps (whole warp groups of 4) in the
    role `roles[i]` (`producer` or `consumer`, a `PartitionRole`; each at most
    once), each thread with a budget of `regs[i]` registers (what
    `setmaxnreg` grants on Hopper: a multiple of 8 in [24, 256]).  All budgets
    together must fit the 64K-register file.  The regions share the values
    defined above the op (arefs, kernel arguments); they communicate only
    through arefs.  The op completes when every region has.

    Example:
    ```
    aref.warp_specialize
      partition producer warps(4) regs(40) { ... }
      partition consumer warps(8) regs(232) { ... }
    ```
    """

    name = "aref.warp_specialize"
    roles = prop_def(ArrayAttr[PartitionRoleAttr])
    num_warps = prop_def(DenseArrayBase.constr(i32))
    regs = prop_def(DenseArrayBase.constr(i32))
    partitions = var_region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(
        self,
        roles: Sequence[PartitionRole | str],
        num_warps: Sequence[int],
        regs: Sequence[int],
        regions: Sequence[Region],
    ):
        properties = {
            "roles": ArrayAttr(PartitionRoleAttr(PartitionRole(r)) for r in roles),
            "num_warps": DenseArrayBase.from_list(i32, num_warps),
            "regs": DenseArrayBase.from_list(i32, regs),
        }
        super().__init__(properties=properties, regions=[list(regions)])

    def partition_specs(self) -> list[tuple[PartitionRole, int, int, Region]]:
        """(role, warps, registers, region) of every partition, in order."""
        return list(
            zip(
                (r.data for r in self.roles.data),
                self.num_warps.get_values(),
                self.regs.get_values(),
                self.partitions,
                strict=True,
            )
        )

    @classmethod
    def parse(cls, parser: Parser) -> WarpSpecializeOp:
        roles: list[PartitionRole] = []
        warps: list[int] = []
        regs: list[int] = []
        regions: list[Region] = []
        while parser.parse_optional_keyword("partition") is not None:
            pos = parser.pos
            role = parser.parse_identifier_or_str_literal()
            if role not in set(PartitionRole):
                parser.raise_error(
                    f"unknown partition role '{role}' (expected "
                    f"{' or '.join(PartitionRole)})",
                    pos,
                    parser.pos,
                )
            roles.append(PartitionRole(role))
            parser.parse_keyword("warps")
            with parser.in_parens():
                warps.append(parser.parse_integer(allow_boolean=False))
            parser.parse_keyword("regs")
            with parser.in_parens():
                regs.append(parser.parse_integer(allow_boolean=False))
            regions.append(parser.parse_region())
        if not regions:
            parser.raise_error("aref.warp_specialize expects at least one 'partition'")
        op = cls(roles, warps, regs, regions)
        if (extra := parser.parse_optional_attr_dict_with_keyword()) is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        for role, warps, regs, region in self.partition_specs():
            printer.print_string(" partition ")
            printer.print_string(role.value)
            printer.print_string(f" warps({warps}) regs({regs}) ")
            printer.print_region(region)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)

    def verify_(self) -> None:
        n = len(self.partitions)
        if n == 0:
            raise VerifyException("aref.warp_specialize needs at least one partition")
        if not len(self.roles.data) == len(self.num_warps.get_values()) == len(
            self.regs.get_values()
        ) == n:
            raise VerifyException(
                "aref.warp_specialize needs one role, warp count and register budget "
                f"per partition ({n} partitions)"
            )
        roles = [r.data.value for r in self.roles.data]
        if len(set(roles)) != n:
            raise VerifyException(f"aref.warp_specialize roles must be unique, got {roles}")
        total = 0
        for role, warps, regs, _ in self.partition_specs():
            if warps <= 0 or warps % WARPS_PER_GROUP:
                raise VerifyException(
                    f"partition {role}: warps({warps}) must be a positive multiple of "
                    f"{WARPS_PER_GROUP} (whole warp groups)"
                )
            if not MIN_REGS <= regs <= MAX_REGS or regs % REGS_GRANULE:
                raise VerifyException(
                    f"partition {role}: regs({regs}) must be a multiple of {REGS_GRANULE} "
                    f"in [{MIN_REGS}, {MAX_REGS}]"
                )
            total += warps * THREADS_PER_WARP * regs
        threads = sum(self.num_warps.get_values()) * THREADS_PER_WARP
        if total > register_pool(threads):
            raise VerifyException(
                f"register budgets oversubscribe the registers a CTA of {threads} threads holds at launch: "
                f"{total} > {register_pool(threads)} (sum of warps x 32 x regs; setmaxnreg.inc would wait for ever)"
            )


Aref = Dialect(
    "aref",
    [CreateOp, PutOp, GetOp, ConsumedOp, WarpSpecializeOp],
    [ArefType, PartitionRoleAttr],
)
