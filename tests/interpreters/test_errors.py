"""Bad calls of `tawa.interpret` give one-line `TawaError`s naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import tawa
from tawa.diagnostics import TawaError
from tawa.interpreters import ArgumentError, InterpreterError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def gemm() -> ModuleOp:
    return tawa.parse((EXAMPLES / "gemm.mlir").read_text(), "examples/gemm.mlir")


@pytest.fixture(scope="module")
def attention() -> ModuleOp:
    return tawa.parse((EXAMPLES / "attention_fwd.mlir").read_text(), "examples/attention_fwd.mlir")


def gemm_args(**replace):
    args = {
        "A": np.zeros((4, 8), BF16),
        "B": np.zeros((4, 8), BF16),
        "C": np.zeros((4, 4), BF16),
        "M": 4,
        "N": 4,
        "K": 8,
    }
    args.update(replace)
    return tuple(args.values())


def error_of(fn) -> TawaError:
    with pytest.raises(TawaError) as info:
        fn()
    text = str(info.value)
    assert "\n" not in text
    return info.value


def test_correct_call_runs(gemm):
    tawa.interpret(gemm, "gemm", (1, 1), *gemm_args())


def test_wrong_argument_count(gemm):
    err = error_of(lambda: tawa.interpret(gemm, "gemm", (1, 1), *gemm_args()[:5]))
    assert isinstance(err, ArgumentError)
    assert str(err) == (
        "examples/gemm.mlir:7:1: error: @gemm takes 6 arguments (%A: memref<?x?xbf16>, "
        "%B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %M: index, %N: index, %K: index), got 5"
    )


@pytest.mark.parametrize(
    "replace, message",
    [
        (
            {"C": np.zeros((4, 4), np.float32)},
            "argument 2 (%C): expected a rank-2 bfloat16 array, got float32 array of shape (4, 4)",
        ),
        (
            {"A": np.zeros((4, 8, 1), BF16)},
            "argument 0 (%A): expected a rank-2 bfloat16 array, got bfloat16 array of shape (4, 8, 1)",
        ),
        ({"B": [[0.0] * 8] * 4}, "argument 1 (%B): expected a rank-2 bfloat16 array, got list"),
        ({"M": 4.0}, "argument 3 (%M): expected a Python int (index), got float"),
        ({"N": True}, "argument 4 (%N): expected a Python int (index), got bool"),
        ({"K": np.zeros(1, np.int64)}, "argument 5 (%K): expected a Python int (index), got int64 array of shape (1,)"),
        ({"K": 2**63}, "argument 5 (%K): 9223372036854775808 does not fit in index"),
    ],
)
def test_wrong_argument(gemm, replace, message):
    err = error_of(lambda: tawa.interpret(gemm, "gemm", (1, 1), *gemm_args(**replace)))
    assert isinstance(err, ArgumentError)
    assert str(err) == f"examples/gemm.mlir:7:1: error: @gemm {message}"


def test_numpy_integers_are_accepted_for_index(gemm):
    tawa.interpret(gemm, "gemm", (1, 1), *gemm_args(M=np.int64(4), N=np.int32(4)))


def test_float_scalar_argument(attention):
    q = np.zeros((1, 1, 4, 128), BF16)
    err = error_of(lambda: tawa.interpret(attention, "attention_fwd", (1, 1), q, q, q, q, 4, 4, "0.1", 1))
    assert err.message == "@attention_fwd argument 6 (%sm_scale): expected a float (f32), got str"
    tawa.interpret(attention, "attention_fwd", (1, 1), q, q, q, q, 4, 4, 0.1, 1)
    tawa.interpret(attention, "attention_fwd", (1, 1), q, q, q, q, 4, 4, np.float32(0.1), 1)


def test_static_memref_dimension():
    text = "func.func @k(%A: memref<4x?xf32>) {\n  func.return\n}"
    err = error_of(lambda: tawa.interpret(text, "k", 1, np.zeros((5, 3), np.float32)))
    assert err.message == "@k argument 0 (%A): dimension 0 must be 4 (memref<4x?xf32>), got shape (5, 3)"


def test_unknown_kernel(attention):
    err = error_of(lambda: tawa.interpret(attention, "attention", (1, 1)))
    assert str(err) == (
        "tawa.interpret: error: no kernel named @attention; the module defines: "
        "@attention_fwd, @attention_fwd_causal"
    )


@pytest.mark.parametrize("grid", [(), (1, 1, 1, 1), (-1,), (1.0,), "2", None, (True,)])
def test_bad_grid(gemm, grid):
    err = error_of(lambda: tawa.interpret(gemm, "gemm", grid, *gemm_args()))
    assert err.message.startswith("grid must be 1 to 3 non-negative integers")


def test_empty_grid_runs_nothing(gemm):
    c = np.full((4, 4), 7, BF16)
    tawa.interpret(gemm, "gemm", (0, 1), *gemm_args(C=c))
    assert (c.astype(np.float32) == 7).all()


def test_read_only_output(gemm):
    c = np.zeros((4, 4), BF16)
    c.flags.writeable = False
    err = error_of(lambda: tawa.interpret(gemm, "gemm", (1, 1), *gemm_args(C=c)))
    assert isinstance(err, InterpreterError)
    assert str(err) == (
        "examples/gemm.mlir:25:3: error: tile.store: the destination array is read-only "
        "(program id (0, 0, 0))"
    )


def test_runtime_error_names_op_and_program():
    text = """func.func @k(%x: index) {
  %p = tile.program_id 1
  %q = arith.divui %x, %p : index
  func.return
}"""
    err = error_of(lambda: tawa.interpret(text, "k", (1, 2), 3))
    assert str(err) == "<input>:3:3: error: arith.divui: division by zero (program id (0, 0, 0))"


def test_op_without_semantics():
    text = """func.func @k(%x: f32) {
  %y = math.sin %x : f32
  func.return
}"""
    err = error_of(lambda: tawa.interpret(text, "k", 1, 1.0))
    assert str(err) == "<input>:2:3: error: 'math.sin' has no CPU semantics (yet) (program id (0, 0, 0))"


def test_kernel_returning_values():
    text = "func.func @k() -> index {\n  %c = arith.constant 0 : index\n  func.return %c : index\n}"
    err = error_of(lambda: tawa.interpret(text, "k", 1))
    assert "returns values" in err.message


def test_bad_module():
    err = error_of(lambda: tawa.interpret(42, "k", 1))
    assert err.message == "expected a ModuleOp or the text of one, got int"
    err = error_of(lambda: tawa.interpret("func.func @k(", "k", 1))
    assert err.where == "<input>:1:14"
