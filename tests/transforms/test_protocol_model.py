"""The protocol checker's integer arithmetic (`protocol_model.integer_op`,
which the skeleton runs instead of the CPU interpreter) computes what the
interpreter computes, op by op, on edge and random values of each width,
errors included; a compile of the GEMM does not import the interpreters
(NumPy, xDSL's interpreters), which the checker no longer needs; and the
loop iterations the skeleton keeps by the values they read give the traces
of running every iteration."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerType, ModuleOp, f32
from xdsl.interpreter import Interpreter
from xdsl.utils.test_value import create_ssa_value

from tawa.interpreters.arith import TensorArithFunctions
from tawa.interpreters.dtypes import INDEX_BITS
from tawa.verify import protocol_model
from tawa.verify.protocol_model import SkeletonRunner, integer_op

TYPES = [IndexType(), IntegerType(64), IntegerType(32), IntegerType(8), IntegerType(1)]
BINARY = [arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp, arith.MinSIOp,
          arith.MaxSIOp, arith.MinUIOp, arith.MaxUIOp, arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp,
          arith.CeilDivSIOp, arith.DivUIOp, arith.RemUIOp, arith.CeilDivUIOp, arith.ShLIOp, arith.ShRUIOp,
          arith.ShRSIOp]


def _bits(t) -> int:
    return INDEX_BITS if isinstance(t, IndexType) else t.width.data


def _values(t, rng: random.Random, n: int = 12) -> list:
    """Values of type `t` as the interpreter keeps them (signed; i1: bools):
    the edges and random ones."""
    bits = _bits(t)
    if bits == 1:
        return [False, True]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [0, 1, -1, 2, 3, 63, 64, 65, lo, hi, lo + 1, hi - 1] + [rng.randint(lo, hi) for _ in range(n)]


@pytest.fixture(scope="module")
def interpreter() -> Interpreter:
    interp = Interpreter(ModuleOp([]), index_bitwidth=INDEX_BITS)
    interp.register_implementations(TensorArithFunctions())
    return interp


def _agree(interpreter: Interpreter, op, inputs: tuple) -> None:
    try:
        (want,) = interpreter.run_op(op, inputs)
        expected = ("value", want, type(want))
    except Exception as err:  # noqa: BLE001 - the interpreter's error, which the skeleton reports
        expected = ("error", str(err))
    try:
        got = integer_op(op)(inputs)
        actual = ("value", got, type(got))
    except Exception as err:  # noqa: BLE001
        actual = ("error", str(err))
    assert actual == expected, (op.name, inputs)


def test_the_index_width_is_the_interpreters():
    assert protocol_model.INDEX_BITS == INDEX_BITS


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_binary_ops_agree_with_the_interpreter(t, interpreter, seed):
    rng = random.Random(seed)
    values = _values(t, rng)
    a, b = create_ssa_value(t), create_ssa_value(t)
    for kind in BINARY:
        op = kind(a, b)
        assert integer_op(op) is not None, op.name
        for x in values:
            for y in rng.sample(values, min(8, len(values))) + [0, 1]:
                _agree(interpreter, op, (x, y if _bits(t) > 1 else bool(y)))


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_comparisons_selects_and_constants_agree_with_the_interpreter(t, interpreter, seed):
    rng = random.Random(seed)
    values = _values(t, rng)
    a, b, c = create_ssa_value(t), create_ssa_value(t), create_ssa_value(IntegerType(1))
    for predicate in ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"):
        op = arith.CmpiOp(a, b, predicate)
        for x in values:
            for y in rng.sample(values, min(8, len(values))):
                _agree(interpreter, op, (x, y))
    select = arith.SelectOp(c, a, b)
    for x in values[:6]:
        _agree(interpreter, select, (True, x, values[-1]))
        _agree(interpreter, select, (False, x, values[-1]))
    bits = _bits(t)
    for v in (0, 1, -1, 5, (1 << (bits - 1)) - 1, 1 << (bits - 1)):
        if -(1 << (bits - 1)) <= v < (1 << bits):  # what an attribute of the type can hold
            _agree(interpreter, arith.ConstantOp.from_int_and_width(v, t), ())


@pytest.mark.parametrize("src", TYPES, ids=str)
def test_casts_agree_with_the_interpreter(src, interpreter, seed):
    rng = random.Random(seed)
    value = create_ssa_value(src)
    for dst in TYPES:
        ops = [arith.ExtSIOp(value, dst), arith.ExtUIOp(value, dst)] if _bits(dst) > _bits(src) else []
        if _bits(dst) < _bits(src):
            ops.append(arith.TruncIOp(value, dst))
        if isinstance(src, IndexType) != isinstance(dst, IndexType):
            ops.append(arith.IndexCastOp(value, dst))
        for op in ops:
            for x in _values(src, rng):
                _agree(interpreter, op, (x,))


def test_ops_without_integer_semantics_are_left_to_the_interpreter(interpreter):
    x = create_ssa_value(f32)
    assert integer_op(arith.AddfOp(x, x)) is None
    constant = arith.ConstantOp(FloatAttr(1.5, f32))
    assert integer_op(constant) is None
    runner = SkeletonRunner.__new__(SkeletonRunner)  # only its interpreter
    runner._interpreter = None  # noqa: SLF001
    assert runner._interpreted(constant)(()) == interpreter.run_op(constant, ())[0]  # noqa: SLF001


@pytest.mark.slow
def test_a_compile_imports_no_interpreter():
    """The proof's skeleton runs integer arithmetic itself: a whole compile
    of the GEMM imports neither NumPy nor xDSL's interpreters (a fraction
    of a second of every process)."""
    code = ("import sys\n"
            "from tawa.tools.tawa_opt import main\n"
            "sys.argv = ['tawa-opt', 'examples/gemm.mlir', '-p', 'tawa-hopper-pipeline', '-t', 'ptx', '-o', "
            "'/dev/null']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith(('xdsl.interpreters', "
            "'tawa.interpreters'))))\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "TAWA_PROOF_CACHE": "0"}, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _proof_runners(example: str):
    """Per kernel of `example`, the aref level (after tawa-assign-stage-phase,
    its proof off) and the lowered level: (runner class, kernel, ring depth,
    persistent)."""
    from xdsl.dialects import func

    import tawa
    from tawa.dialects import aref, nvgpu
    from tawa.dialects.nvgpu.kernel_info import kernel_info
    from tawa.dialects.nvgpu.types import MBarrierType
    from tawa.transforms.hopper_pipeline import HopperPipelinePass
    from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass
    from tawa.verify.protocol_aref import ArefSkeletonRunner

    root = Path(__file__).resolve().parents[2]
    text = (root / "examples" / example).read_text()
    out = []
    module = tawa.parse(text, example)
    pipeline = HopperPipelinePass(prepare=False)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for step in pipeline.planned_steps(module):
        if isinstance(step, AssignStagePhasePass):
            AssignStagePhasePass(verify=False).apply(ctx, module)
            for k in module.walk():
                if isinstance(k, func.FuncOp) and any(isinstance(o, aref.WarpSpecializeOp) for o in k.walk()):
                    probe = ArefSkeletonRunner(k.clone())
                    out.append((ArefSkeletonRunner, probe.kernel, probe.depth, kernel_info(k).persistent))
            break
        step.apply(ctx, module)
    lowered = tawa.parse(text, example)
    HopperPipelinePass(prepare=False).apply(tawa.context(), lowered)
    for k in lowered.walk():
        if isinstance(k, func.FuncOp) and k.body.blocks:
            depth = max((o.result.type.count.data for o in k.walk() if isinstance(o, nvgpu.SmemAllocOp)
                         and isinstance(o.result.type, MBarrierType)), default=1)
            out.append((SkeletonRunner, k, depth, kernel_info(k).persistent))
    return out


@pytest.mark.parametrize("example", ["gemm.mlir", pytest.param("attention_fwd_d64.mlir", marks=pytest.mark.slow)])
def test_loop_iterations_kept_by_what_they_read_give_the_same_traces(example):
    """`SkeletonRunner._for` and `_if` keep each loop iteration's and each
    branch's events and values by the values its body reads: every trace of the proof's problem
    sizes, taken in the proof's order (so that later sizes reuse the
    iterations of earlier ones), is the trace of a runner that runs every
    iteration; at the aref level and lowered."""
    from tawa.verify.verify_protocol import _launches, _programs_per_cta, _size_arguments

    checked = 0
    for cls, kernel, depth, persistent in _proof_runners(example):
        kept, every = cls(kernel), cls(kernel)
        every.memo_loops = False
        sizes = _size_arguments(kept)
        roles = kept.roles if hasattr(kept, "partitions") else -(-kept.threads // 128)
        for t in range(2 * depth + 2):
            for programs in _programs_per_cta(t, depth) if persistent else (1,):
                args = [t * sizes[p] if p in sizes else t if isinstance(p.type, IndexType | IntegerType)
                        else protocol_model.UNKNOWN for p in kernel.body.block.args]
                for launch in _launches(persistent, programs, kept.cluster):
                    for r in range(roles):
                        got = [e.key() for e in kept.trace(r, args, launch)]
                        assert got == [e.key() for e in every.trace(r, args, launch)], (cls.__name__, t, r)
                        checked += len(got)
    assert checked
