"""`tawa.op_verifier.verifies`, the one-walk check that a module verifies,
says yes exactly where xdsl's verifier does: on every module of the examples
and of the FileCheck tests, and on those modules changed one op at a time
(a result or block argument of another type, a property or attribute
changed, removed or added, operands swapped or dropped).  Where it says no,
`tawa.diagnostics.verify` gives xdsl's error, so the errors are the same."""

from __future__ import annotations

import itertools

import pytest
from test_ir_text import CHUNKS, SAMPLE, _sampled
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i32,
)
from xdsl.ir import Operation
from xdsl.parser import Parser

from tawa.diagnostics import LocatedParser, TawaError, verify
from tawa.ir import context
from tawa.op_verifier import verifies


def _xdsl_verifies(module: Operation) -> bool:
    try:
        module.verify()
    except Exception:  # a VerifyException, or what a verifier trips over
        return False
    return True


def _parsed(text: str) -> Operation | None:
    try:
        return Parser(context(), text, "t.mlir").parse_module()
    except Exception:  # not a module that parses: nothing to verify
        return None


TYPES = [i1, i32, f32, IndexType(), TensorType(f32, [4]), TensorType(IntegerType(16), [128, 64])]
ATTRS = [IntegerAttr(7, 64), IntegerAttr(-1, 32), IntegerAttr(2, IndexType()), FloatAttr(1.0, f32),
         StringAttr("x"), UnitAttr(), DenseArrayBase.from_list(i32, [1, 0])]


def _mutations(op: Operation):
    """Changes of one op, each made then undone by the generator."""
    for value in [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)][:3]:
        old = value._type
        for new in TYPES:
            if new != old:
                value._type = new
                yield f"type of {value} = {new}"
        value._type = old
    for table in (op.properties, op.attributes):
        for key in list(table)[:3]:
            old = table[key]
            for new in ATTRS:
                if new != old:
                    table[key] = new
                    yield f"{key} = {new}"
            del table[key]
            yield f"{key} removed"
            table[key] = old
        table["extra"] = UnitAttr()
        yield "extra added"
        del table["extra"]
    operands = list(op.operands)
    if len(operands) >= 2:
        op.operands = operands[::-1]
        yield "operands reversed"
    if operands:
        op.operands = operands[:-1]
        yield "last operand dropped"
        op.operands = [*operands, operands[0]]
        yield "first operand repeated"
        op.operands = operands


@pytest.mark.parametrize("name, text", _sampled(CHUNKS))
def test_verifies_says_what_xdsl_says(name: str, text: str):
    module = _parsed(text)
    if module is None:
        return
    assert verifies(module) == _xdsl_verifies(module)


def _mutated(chunks):
    out = []
    for name, text in chunks:
        module = _parsed(text)
        if module is not None and _xdsl_verifies(module):
            out.append((name, text))
    return out


VALID = _mutated(CHUNKS[:: SAMPLE // 2])


@pytest.mark.parametrize("name, text", [
    pytest.param(n, t, id=n, marks=[] if i % 8 == 0 and len(t) < 4000 else [pytest.mark.slow])
    for i, (n, t) in enumerate(VALID)])
def test_verifies_rejects_what_xdsl_rejects(name: str, text: str):
    module = _parsed(text)
    assert module is not None
    checked = 0
    for op in itertools.islice(module.walk(), 40):
        scope = op  # the function that holds the op (a change reaches no further)
        while scope.parent_op() is not None and scope.parent_op() is not module:
            scope = scope.parent_op()
        for change in _mutations(op):
            expected = _xdsl_verifies(scope)
            assert verifies(scope) == expected, f"{op.name}: {change}"
            checked += 1
    assert checked


def test_a_module_that_does_not_verify_gets_xdsls_error():
    text = ('func.func @f(%a: index) {\n  %b = arith.addi %a, %a : index\n  func.return\n}\n')
    module = LocatedParser(context(), text, "t.mlir").parse_module()
    verify(module)
    add = next(op for op in module.walk() if op.name == "arith.addi")
    add.results[0]._type = i32
    with pytest.raises(TawaError, match=r"^t.mlir:2:3: error: 'arith.addi' result 'result' at position 0 does not verify"):
        verify(module)
