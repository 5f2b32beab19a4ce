"""The all-true condition that lets attention skip its masks: it must be
true only when the mask holds for every element of the fragment (checked by
brute force over random scalars), and true for interior blocks."""

from __future__ import annotations

import itertools
import random

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Operation, SSAValue

from tawa.dialects import nvgpu, tile
from tawa.transforms.lower.masks import Binary, Compare, Coord, Scalar, all_true_condition

i32 = IntegerType(32)
P = tile.CmpIPredicate
ADD = nvgpu.FragBinaryKind.ADDI
ROWS, COLS = 64, 128


def evaluate(ops: list[Operation], env: dict[SSAValue, int]) -> int:
    for op in ops:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data
        elif isinstance(op, arith.AddiOp):
            env[op.result] = env[op.lhs] + env[op.rhs]
        elif isinstance(op, arith.MuliOp):
            env[op.result] = env[op.lhs] * env[op.rhs]
        elif isinstance(op, arith.AndIOp):
            env[op.result] = env[op.lhs] & env[op.rhs]
        elif isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            a, b = env[op.lhs], env[op.rhs]
            env[op.result] = int({"slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b}[pred])
        else:
            raise AssertionError(op.name)
    return env[ops[-1].results[0]]


def holds(e, row: int, col: int, env: dict[SSAValue, int]) -> bool:
    def val(x):
        match x:
            case Coord(0):
                return row
            case Coord(1):
                return col
            case Scalar(v):
                return env[v]
            case Binary(_, lhs, rhs):
                return val(lhs) + val(rhs)

    match e:
        case Compare(pred, lhs, rhs):
            a, b = val(lhs), val(rhs)
            return {P.SLT: a < b, P.SLE: a <= b, P.SGT: a > b, P.SGE: a >= b}[pred]
        case Binary(nvgpu.FragBinaryKind.ANDI, lhs, rhs):
            return holds(lhs, row, col, env) and holds(rhs, row, col, env)


@pytest.mark.slow
def test_attention_masks_fast_path_is_exact():
    block = Block(arg_types=[i32] * 4)
    n0, seq_len, m0, row0 = block.args
    key = Binary(ADD, Coord(1), Scalar(n0))
    query = Binary(ADD, Coord(0), Scalar(m0))  # Coord(0) is already tile-relative
    in_range = Compare(P.SLT, key, Scalar(seq_len))
    causal = Binary(nvgpu.FragBinaryKind.ANDI, in_range, Compare(P.SLE, key, query))
    rng = random.Random(0)
    for mask in (in_range, causal):
        seen = set()
        for _ in range(60):
            ops: list[Operation] = []

            def emit(op: Operation) -> SSAValue:
                ops.append(op)
                return op.results[0]

            last = Block(arg_types=[i32]).args[0]
            cond = all_true_condition(mask, (row0, last), (0, COLS - 1), emit)
            assert cond is not None
            env = {n0: 128 * rng.randrange(8), seq_len: rng.randrange(1, 1100),
                   m0: 128 * rng.randrange(8), row0: 64 * rng.randrange(2)}
            env[last] = env[row0] + ROWS - 1
            fast = evaluate(ops, dict(env))
            everywhere = all(
                holds(mask, env[row0] + r, c, env) for r, c in itertools.product(range(ROWS), range(COLS))
            )
            assert bool(fast) == everywhere, env
            seen.add(everywhere)
        assert seen == {True, False}  # both the fast and the masked path were exercised
    # Interior blocks take the fast path: inside the sequence, below the diagonal.
    env = {n0: 0, seq_len: 1024, m0: 512, row0: 64}
    ops = []
    last = Block(arg_types=[i32]).args[0]
    all_true_condition(causal, (row0, last), (0, COLS - 1), lambda op: ops.append(op) or op.results[0])
    assert evaluate(ops, {**env, last: env[row0] + ROWS - 1}) == 1


def test_non_affine_masks_have_no_fast_path():
    block = Block(arg_types=[i32])
    e = Compare(P.EQ, Coord(1), Scalar(block.args[0]))  # not an inequality
    assert all_true_condition(e, (block.args[0], block.args[0]), (0, 7), lambda op: op.results[0]) is None
