"""A quick check that a whole module verifies, made from each op class's
IRDL definition once (docs/testing.md, "Parsing large modules").

xdsl's `OpDef.verify` interprets the definition at every op: it finds the
variadic definitions, the segment options and each accessor again, and
builds an error context per construct.  `verifies` asks the same questions
with all of that worked out once per op class: how many operands, results,
regions and successors; which constraint each checks (a base class, an
equality, one of several; any other kind is xdsl's own `verify`); which
properties and attributes are required; which traits verify anything.

It only says yes or no.  Where it says no, or meets anything it was not
made for, `tawa.diagnostics.verify` runs xdsl's verifier, so errors and
their messages are xdsl's.  A yes must therefore never be wrong: every
check here is one that xdsl makes, and an op whose class it does not know
how to check is checked by xdsl's `Operation.verify`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Attribute, Block, ErasedSSAValue, Operation, Region
from xdsl.irdl import IRDLOperation
from xdsl.irdl.constraints import (
    AnyAttr,
    AnyOf,
    AttrConstraint,
    BaseAttr,
    EqAttrConstraint,
    RangeConstraint,
    SingleOf,
    VerificationContext,
)
from xdsl.irdl.operations import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    AttrSizedSegments,
    OpDef,
    OptAttributeDef,
    OptionalDef,
    OptPropertyDef,
    VariadicDef,
    VarIRConstruct,
    irdl_op_verify_arg_list,
    irdl_op_verify_regions,
    verify_variadic_size,
)
from xdsl.traits import IsTerminator, NoTerminator, OpTrait

_item = tuple.__getitem__
"""An item of `SSAValues`, whose own `__getitem__` is Python's (it makes
slices `SSAValues`)."""


class Rejected(Exception):
    """A check failed: xdsl's own check says why."""


Check = Callable[[Attribute, VerificationContext], object]
"""Raises where the constraint rejects the attribute."""


def attr_check(constr: AttrConstraint) -> Check | None:
    """A check equivalent to `constr.verify` (None: it accepts everything)."""
    if type(constr) is AnyAttr:
        return None
    if type(constr) is BaseAttr:
        base = constr.attr

        def check(attr: Attribute, ctx: VerificationContext, base=base) -> None:
            if not isinstance(attr, base):
                raise Rejected
        return check
    if type(constr) is EqAttrConstraint:
        expected = constr.attr

        def check(attr: Attribute, ctx: VerificationContext, expected=expected) -> None:
            if attr != expected:
                raise Rejected
        return check
    if type(constr) is AnyOf:
        # xdsl's dispatch: the constraint of the attribute's class, else the abstract one.
        parts = [(attr_check(c), c) for c in constr.attr_constrs]
        if any(part is None for part, _ in parts):
            return constr.verify
        by_constr = {id(c): part for part, c in parts}
        based = {base: by_constr[id(c)] for base, c in constr._based_constrs.items()}
        abstract = None if constr._abstr_constr is None else by_constr[id(constr._abstr_constr)]

        def check(attr: Attribute, ctx: VerificationContext, based=based, abstract=abstract) -> None:
            part = based.get(type(attr), abstract)
            if part is None:
                raise Rejected
            part(attr, ctx)
        return check
    return constr.verify


class _Group:
    """The checks of a class's operands or results.  Without a segment
    option and with at most one variadic definition, each definition's
    values follow from the count alone, and each is checked as xdsl's
    `irdl_op_verify_arg_list` checks it; else that function runs."""

    def __init__(self, defs: list, options: list, option_type: type, construct: VarIRConstruct):
        self.construct = construct
        variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
        self.exact = not any(isinstance(o, option_type) for o in options) and len(variadic) <= 1
        self.count = len(defs)
        self.variadic = variadic[0] if variadic else -1
        self.optional = bool(variadic) and isinstance(defs[variadic[0]][1], OptionalDef)
        self.checks: list[tuple[int, Check]] = []
        """Checks of the single values, by index (counted from the end after
        a variadic definition: -1 is the last value)."""
        self.range_check: Callable | None = None
        if not self.exact:
            return
        for i, (_, d) in enumerate(defs):
            constr: RangeConstraint = d.constr
            if i == self.variadic:
                self.range_check = constr.verify
                continue
            check = attr_check(constr.constr) if type(constr) is SingleOf else _range_check(constr.verify)
            if check is not None:
                self.checks.append((i if self.variadic < 0 or i < self.variadic else i - self.count, check))

    def verify(self, values, ctx: VerificationContext) -> None:
        count = self.count
        if self.variadic < 0:
            if len(values) != count:
                raise Rejected
        else:
            extra = len(values) - count  # the variadic definition has extra + 1 values
            if extra < -1 or (self.optional and extra > 0):
                raise Rejected
            start = self.variadic
            self.range_check(tuple(v.type for v in values[start : start + extra + 1]), ctx)
        for i, check in self.checks:
            check(_item(values, i).type, ctx)


def _range_check(verify: Callable) -> Check:
    def check(attr: Attribute, ctx: VerificationContext) -> None:
        verify((attr,), ctx)
    return check


class ClassCheck:
    """What `OpDef.verify` and the op's own `verify_` check, for one class."""

    def __init__(self, op_type: type[IRDLOperation], op_def: OpDef, custom: Callable | None):
        options = op_def.options
        self.op_def = op_def
        self.custom = custom
        self.operands = _Group(op_def.operands, options, AttrSizedOperandSegments, VarIRConstruct.OPERAND)
        self.results = _Group(op_def.results, options, AttrSizedResultSegments, VarIRConstruct.RESULT)
        # Any segment option: xdsl's size checks, which read it.
        segments = any(isinstance(o, AttrSizedSegments) for o in options)
        self.has_regions = bool(op_def.regions) or segments
        self.has_successors = bool(op_def.successors) or segments
        self.properties = [(name, attr_check(d.constr), isinstance(d, OptPropertyDef))
                           for name, d in op_def.properties.items()]
        self.attributes = [(name, attr_check(d.constr), isinstance(d, OptAttributeDef))
                           for name, d in op_def.attributes.items()]
        self.traits = [t.verify for t in op_def.traits if type(t).verify is not OpTrait.verify]
        self.is_terminator = op_type.has_trait(IsTerminator)
        self.no_terminator = op_type.has_trait(NoTerminator)

    def __call__(self, op: IRDLOperation) -> None:
        ctx = VerificationContext()
        op_def = self.op_def
        for group, values in ((self.operands, op._operands), (self.results, op.results)):
            if group.exact:
                group.verify(values, ctx)
            else:
                irdl_op_verify_arg_list(op, op_def, group.construct, ctx)
        if self.has_regions:
            irdl_op_verify_regions(op, op_def, ctx)
        elif op.regions:
            raise Rejected
        if self.has_successors:
            verify_variadic_size(op, op_def, VarIRConstruct.SUCCESSOR)
        elif op._successors:
            raise Rejected
        properties = op.properties
        _check_entries(self.properties, properties, ctx)
        if len(properties) > len(self.properties):
            raise Rejected  # one that the class does not define
        for name in properties:
            if name not in op_def.properties:
                raise Rejected
        _check_entries(self.attributes, op.attributes, ctx)
        for verify in self.traits:
            verify(op)
        if self.custom is not None:
            self.custom(op)


_GENERATED_VERIFY = "get_accessors_from_op_def.<locals>.verify_"
_checks: dict[type[Operation], ClassCheck | None] = {}


def class_check(op_type: type[Operation]) -> ClassCheck | None:
    """The check of an op class whose `verify_` is the one IRDL made (its
    definition, then the class's own `verify_`); None for any other."""
    try:
        return _checks[op_type]
    except KeyError:
        pass
    check = None
    verify_ = getattr(op_type, "verify_", None)
    if issubclass(op_type, IRDLOperation) and getattr(verify_, "__qualname__", "") == _GENERATED_VERIFY:
        cells = dict(zip(verify_.__code__.co_freevars, verify_.__closure__ or ()))
        op_def = cells["op_def"].cell_contents
        if op_def is op_type.get_irdl_definition():
            custom = cells["custom_verify"].cell_contents if "custom_verify" in cells else None
            check = ClassCheck(op_type, op_def, custom)
    _checks[op_type] = check
    return check


Hook = Callable[[Operation], object] | None


def verifies(op: Operation, before: Hook = None, after: Hook = None) -> bool:
    """Whether `op` and everything nested in it verify (`Operation.verify`).
    `before` is called on each op before it is checked (before the ops
    nested in it), `after` once it and they verify; either may raise to say
    no.  False where any check fails or raises: xdsl's verifier then gives
    the error."""
    try:
        _verify(op, before, after)
    except Exception:  # any failure: the exact error is xdsl's to give
        return False
    return True


def _verify(op: Operation, before: Hook, after: Hook) -> None:
    if before is not None:
        before(op)
    op_type = type(op)
    check = _checks.get(op_type) if op_type in _checks else class_check(op_type)
    for operand in op._operands:
        if isinstance(operand, ErasedSSAValue):
            raise Rejected
    block = op.parent
    region = None if block is None else block.parent
    if op._successors:
        if region is None or block.last_op is not op:
            raise Rejected
        for successor in op._successors:
            if successor.parent != region:
                raise Rejected
    if region is not None and block.last_op is op:
        is_terminator = check.is_terminator if check is not None else op.has_trait(IsTerminator)
        if not is_terminator:
            if len(region.blocks) > 1:
                raise Rejected
            parent = region.parent
            if parent is not None and not parent.has_trait(NoTerminator):
                raise Rejected
    for nested in op.regions:
        _verify_region(nested, before, after)
    if check is None:
        op.verify_()
    else:
        check(op)
    if after is not None:
        after(op)


def _verify_region(region: Region, before: Hook, after: Hook) -> None:
    for block in region.blocks:
        _verify_block(block, before, after)
        if block.parent is not region:
            raise Rejected


def _verify_block(block: Block, before: Hook, after: Hook) -> None:
    op = block.first_op
    if op is None:
        parent = block.parent
        if parent is not None and parent.parent is not None and len(parent.blocks) == 1:
            if not parent.parent.has_trait(NoTerminator):
                raise Rejected
    while op is not None:
        if op.parent is not block:
            raise Rejected
        _verify(op, before, after)
        op = op._next_op


def _check_entries(entries: list, present: dict, ctx: VerificationContext) -> None:
    """The class's (name, check, optional) entries against an op's
    properties or attributes: each required one present, each present one
    passing its constraint; else `Rejected`."""
    for name, check, optional in entries:
        attr = present.get(name)
        if attr is None:
            if optional and name not in present:
                continue
            raise Rejected
        if check is not None:
            check(attr, ctx)
