"""Op-level semantics of the interpreter, on small functions run with
`tawa.interpreters.call` (one program; the function's results come back)."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest
from xdsl.interpreter import impl, register_impls

import tawa
from tawa.dialects import tile
from tawa.interpreters import (
    InterpreterError,
    Launch,
    call,
    find_kernel,
    get_launch,
    make_interpreter,
    run_program,
)
from tawa.interpreters.dtypes import round_float
from tawa.interpreters.tile import TileFunctions

BF16 = ml_dtypes.bfloat16
F8 = ml_dtypes.float8_e4m3fn


def func(signature: str, results: str, body: str) -> str:
    return f"func.func @f({signature}) -> ({results}) {{\n{body}\n}}"


# --------------------------------------------------------------------------- number formats


def test_truncf_rounds_to_nearest_even_and_f8_saturates():
    text = func(
        "%x: tensor<6xf32>",
        "tensor<6xbf16>, tensor<6xf16>, tensor<6xf8E4M3FN>",
        """  %a = arith.truncf %x : tensor<6xf32> to tensor<6xbf16>
  %b = arith.truncf %x : tensor<6xf32> to tensor<6xf16>
  %c = arith.truncf %x : tensor<6xf32> to tensor<6xf8E4M3FN>
  func.return %a, %b, %c : tensor<6xbf16>, tensor<6xf16>, tensor<6xf8E4M3FN>""",
    )
    # ties: 1 + 2^-8 lies halfway between bf16 1 and 1 + 2^-7 (even: 1);
    # 1 + 3·2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 (even: the latter).
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11, 500.0, -np.inf, np.nan], np.float32)
    a, b, c = call(text, "f", x)
    assert a.dtype == BF16 and b.dtype == np.float16 and c.dtype == F8
    np.testing.assert_array_equal(a.astype(np.float32)[:2], [1.0, 1 + 2**-6])
    assert b.astype(np.float32)[2] == 1.0  # f16 tie 1 + 2^-11 -> 1 (even)
    assert np.isinf(a.astype(np.float32)[4]) and np.isnan(a.astype(np.float32)[5])
    # cvt.rn.satfinite: beyond 448 (the largest f8E4M3FN) and infinities saturate; NaN stays.
    np.testing.assert_array_equal(c.astype(np.float32)[3:5], [448.0, -448.0])
    assert np.isnan(c.astype(np.float32)[5])


def test_f32_math_stays_f32():
    text = func(
        "%x: f32, %y: f32, %t: tensor<4xf32>",
        "f32, tensor<4xf32>, tensor<4xf32>",
        """  %p = arith.mulf %x, %y : f32
  %q = arith.divf %p, %y : f32
  %e = math.exp2 %t : tensor<4xf32>
  %m = arith.maximumf %e, %t : tensor<4xf32>
  func.return %q, %e, %m : f32, tensor<4xf32>, tensor<4xf32>""",
    )
    t = np.array([0.5, -1.0, 3.0, 100.0], np.float32)
    q, e, m = call(text, "f", 0.1, 3.0, t)
    assert type(q) is np.float32 and e.dtype == np.float32 and m.dtype == np.float32
    assert q == np.float32(np.float32(0.1) * np.float32(3.0)) / np.float32(3.0)
    np.testing.assert_array_equal(e, np.exp2(t))


def test_bf16_math_rounds_once_from_f32():
    text = func(
        "%x: tensor<3xbf16>, %y: tensor<3xbf16>",
        "tensor<3xbf16>",
        """  %s = arith.addf %x, %y : tensor<3xbf16>
  func.return %s : tensor<3xbf16>""",
    )
    x = np.array([1.0, 256.0, 3.0], BF16)
    y = np.array([2**-9, 1.0, 2**-7], BF16)
    (s,) = call(text, "f", x, y)
    want = (x.astype(np.float32) + y.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(s, want)


def test_maximumf_minimumf_nan_and_signed_zero():
    text = func(
        "%x: tensor<3xf32>, %y: tensor<3xf32>",
        "tensor<3xf32>, tensor<3xf32>",
        """  %a = arith.maximumf %x, %y : tensor<3xf32>
  %b = arith.minimumf %x, %y : tensor<3xf32>
  func.return %a, %b : tensor<3xf32>, tensor<3xf32>""",
    )
    x = np.array([-0.0, np.nan, 1.0], np.float32)
    y = np.array([0.0, 1.0, -np.inf], np.float32)
    a, b = call(text, "f", x, y)
    assert np.signbit(a[0]) == False and np.signbit(b[0]) == True  # noqa: E712
    assert np.isnan(a[1]) and np.isnan(b[1])
    assert a[2] == 1.0 and b[2] == -np.inf


# --------------------------------------------------------------------------- loads and stores

LOAD_STORE = """
func.func @load(%A: memref<?x?xf32>, %i: index, %j: index) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %t = tile.load %A[%i, %j] : memref<?x?xf32> -> tensor<4x4xf32>
  %r = tile.load %A[%i, %j] : memref<?x?xf32> -> tensor<4xf32>
  func.return %t, %r : tensor<4x4xf32>, tensor<4xf32>
}
func.func @store(%A: memref<?x?xf32>, %t: tensor<4x4xf32>, %i: index, %j: index) {
  tile.store %t, %A[%i, %j] : tensor<4x4xf32>, memref<?x?xf32>
  func.return
}
func.func @copy_then_overwrite(%A: memref<?x?xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %t = tile.load %A[%c0, %c0] : memref<?x?xf32> -> tensor<4x4xf32>
  %z = tile.zeros : tensor<4x4xf32>
  tile.store %z, %A[%c0, %c0] : tensor<4x4xf32>, memref<?x?xf32>
  func.return %t : tensor<4x4xf32>
}
"""


def padded(a: np.ndarray, i: int, j: int, shape: tuple[int, int]) -> np.ndarray:
    """The box of `shape` at (i, j) of `a`, zero outside `a` (a reference)."""
    out = np.zeros(shape, a.dtype)
    for r in range(shape[0]):
        for c in range(shape[1]):
            if 0 <= i + r < a.shape[0] and 0 <= j + c < a.shape[1]:
                out[r, c] = a[i + r, j + c]
    return out


@pytest.mark.parametrize("i, j", [(0, 0), (1, 2), (3, 5), (-2, -1), (4, 6), (5, 0), (-4, 0), (100, 100)])
def test_load_zero_fills_outside(i: int, j: int):
    a = np.arange(35, dtype=np.float32).reshape(5, 7) + 1
    t, r = call(LOAD_STORE, "load", a, i, j)
    np.testing.assert_array_equal(t, padded(a, i, j, (4, 4)))
    # a rank-1 tile of a rank-2 memref covers the trailing dimension
    np.testing.assert_array_equal(r, padded(a, i, j, (1, 4))[0])


@pytest.mark.parametrize("i, j", [(0, 0), (3, 5), (-2, -1), (4, 6), (-4, 0), (100, 100)])
def test_store_drops_outside(i: int, j: int):
    a = np.full((5, 7), -1.0, np.float32)
    t = np.arange(16, dtype=np.float32).reshape(4, 4) + 1
    call(LOAD_STORE, "store", a, t, i, j)
    want = np.full((5, 7), -1.0, np.float32)
    for r in range(4):
        for c in range(4):
            if 0 <= i + r < 5 and 0 <= j + c < 7:
                want[i + r, c + j] = t[r, c]
    np.testing.assert_array_equal(a, want)


def test_loaded_tiles_are_copies():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    before = a.copy()
    (t,) = call(LOAD_STORE, "copy_then_overwrite", a)
    np.testing.assert_array_equal(t, before)  # value semantics: the store did not change %t
    assert (a == 0).all()  # the memref was written in place
    assert not t.flags.writeable


# --------------------------------------------------------------------------- tile ops


def test_dot_accumulates_in_f32(rng: np.random.Generator):
    text = """
func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %bt: tensor<16x32xbf16>, %c: tensor<64x16xf32>)
    -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %d = tile.dot %a, %b, %c : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xf32>
  %e = tile.dot %a, %bt, %c {rhs_transposed} : tensor<64x32xbf16>, tensor<16x32xbf16> -> tensor<64x16xf32>
  func.return %d, %e : tensor<64x16xf32>, tensor<64x16xf32>
}"""
    a = rng.standard_normal((64, 32)).astype(BF16)
    b = rng.standard_normal((32, 16)).astype(BF16)
    c = rng.standard_normal((64, 16)).astype(np.float32)
    d, e = call(text, "f", a, b, np.ascontiguousarray(b.T), c)
    assert d.dtype == np.float32 and e.dtype == np.float32
    want = a.astype(np.float64) @ b.astype(np.float64) + c  # products of bf16 are exact in f32
    # f32 sums of 32 terms: a few f32 ulps of the largest partial sum
    np.testing.assert_allclose(d, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(e, want, rtol=0, atol=1e-5)


def test_reduce_broadcast_trans_iota_cmpi_select():
    text = """
func.func @f(%x: tensor<2x3xf32>, %i: tensor<4xi32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<2x3xf32>,
    tensor<3x2xf32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi32>) {
  %mx = tile.reduce max %x, 1 : tensor<2x3xf32> -> tensor<2xf32>
  %sm = tile.reduce sum %x, 0 : tensor<2x3xf32> -> tensor<3xf32>
  %col = tile.expand_dims %mx, 1 : tensor<2xf32> -> tensor<2x1xf32>
  %b = tile.broadcast %col : tensor<2x1xf32> -> tensor<2x3xf32>
  %t = tile.trans %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %io = tile.iota : tensor<4xi32>
  %slt = tile.cmpi slt, %i, %io : tensor<4xi32>
  %ult = tile.cmpi ult, %i, %io : tensor<4xi32>
  %s = tile.select %slt, %i, %io : tensor<4xi1>, tensor<4xi32>
  func.return %mx, %sm, %b, %t, %io, %slt, %ult, %s : tensor<2xf32>, tensor<3xf32>, tensor<2x3xf32>,
    tensor<3x2xf32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi32>
}"""
    x = np.array([[1, 5, 2], [-3, -1, -2]], np.float32)
    i = np.array([-1, 1, 5, 2], np.int32)
    mx, sm, b, t, io, slt, ult, s = call(text, "f", x, i)
    np.testing.assert_array_equal(mx, [5, -1])
    np.testing.assert_array_equal(sm, [-2, 4, 0])
    np.testing.assert_array_equal(b, [[5, 5, 5], [-1, -1, -1]])
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(io, [0, 1, 2, 3])
    np.testing.assert_array_equal(slt, [True, False, False, True])
    np.testing.assert_array_equal(ult, [False, False, False, True])  # -1 is the largest unsigned
    np.testing.assert_array_equal(s, [-1, 1, 2, 2])


def test_dense_constants_and_splat():
    text = func(
        "%v: f32",
        "tensor<2x2xi32>, tensor<3xbf16>, tensor<2xi1>, tensor<2xf32>",
        """  %a = arith.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi32>
  %b = arith.constant dense<1.5> : tensor<3xbf16>
  %c = arith.constant dense<[true, false]> : tensor<2xi1>
  %d = tile.splat %v : f32 -> tensor<2xf32>
  func.return %a, %b, %c, %d : tensor<2x2xi32>, tensor<3xbf16>, tensor<2xi1>, tensor<2xf32>""",
    )
    a, b, c, d = call(text, "f", 0.25)
    np.testing.assert_array_equal(a, [[1, -2], [3, 4]])
    assert b.dtype == BF16 and (b.astype(np.float32) == 1.5).all()
    np.testing.assert_array_equal(c, [True, False])
    np.testing.assert_array_equal(d, [0.25, 0.25])


# --------------------------------------------------------------------------- integers and index


def test_index_and_integer_arith():
    text = func(
        "%a: index, %b: index, %x: i32",
        "index, index, index, index, index, index, i32, i32, index",
        """  %minu = arith.minui %a, %b : index
  %maxu = arith.maxui %a, %b : index
  %divu = arith.divui %b, %a : index
  %ceil = arith.ceildivui %b, %a : index
  %rem = arith.remui %b, %a : index
  %mins = arith.minsi %a, %b : index
  %big = arith.muli %x, %x : i32
  %narrow = arith.index_cast %b : index to i32
  %wide = arith.index_cast %x : i32 to index
  func.return %minu, %maxu, %divu, %ceil, %rem, %mins, %big, %narrow, %wide
    : index, index, index, index, index, index, i32, i32, index""",
    )
    minu, maxu, divu, ceil, rem, mins, big, narrow, wide = call(text, "f", 7, 200, 65536)
    assert (minu, maxu, divu, ceil, rem, mins) == (7, 200, 28, 29, 4, 7)
    assert big == 0  # 2^32 wraps in i32
    assert narrow == 200 and wide == 65536
    # unsigned ops read a negative index as a huge number
    minu, maxu, *_ = call(text, "f", -1, 200, -5)
    assert (minu, maxu) == (200, -1)
    *_, narrow, wide = call(text, "f", 7, 2**31 + 5, -5)
    assert narrow == -(2**31) + 5 and wide == -5


def test_integer_tensor_math_wraps():
    text = func(
        "%x: tensor<3xi32>, %y: tensor<3xi32>",
        "tensor<3xi32>, tensor<3xi32>, tensor<3xi32>",
        """  %p = arith.muli %x, %x : tensor<3xi32>
  %m = arith.minui %x, %y : tensor<3xi32>
  %d = arith.ceildivui %y, %x : tensor<3xi32>
  func.return %p, %m, %d : tensor<3xi32>, tensor<3xi32>, tensor<3xi32>""",
    )
    p, m, d = call(text, "f", np.array([65536, -3, 7], np.int32), np.array([5, 9, 22], np.int32))
    assert p.dtype == np.int32 and list(p) == [0, 9, 49]
    assert list(m) == [5, 9, 7]  # -3 is a huge unsigned number
    assert list(d) == [1, 1, 4]


# --------------------------------------------------------------------------- control flow


SCF = """
func.func @sum(%n: index, %step: index) -> (index, tensor<2xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %z = tile.zeros : tensor<2xf32>
  %ones = tile.splat %one : f32 -> tensor<2xf32>
  %s, %t = scf.for %i = %c0 to %n step %step iter_args(%acc = %c0, %v = %z) -> (index, tensor<2xf32>) {
    %a = arith.addi %acc, %i : index
    %w = arith.addf %v, %ones : tensor<2xf32>
    scf.yield %a, %w : index, tensor<2xf32>
  }
  func.return %s, %t : index, tensor<2xf32>
}
func.func @pick(%c: i1, %x: f32, %y: f32) -> f32 {
  %r = scf.if %c -> (f32) {
    scf.yield %x : f32
  } else {
    scf.yield %y : f32
  }
  func.return %r : f32
}
"""


@pytest.mark.parametrize("n, step", [(0, 1), (1, 1), (5, 1), (10, 3)])
def test_scf_for_iter_args(n: int, step: int):
    s, t = call(SCF, "sum", n, step)
    assert s == sum(range(0, n, step))
    np.testing.assert_array_equal(t, [len(range(0, n, step))] * 2)


def test_scf_for_needs_positive_step():
    with pytest.raises(InterpreterError, match=r"scf.for: step must be positive, got 0"):
        call(SCF, "sum", 4, 0)


def test_scf_if():
    assert call(SCF, "pick", True, 1.0, 2.0) == (np.float32(1.0),)
    assert call(SCF, "pick", False, 1.0, 2.0) == (np.float32(2.0),)


def test_scf_while_and_func_call():
    text = """
func.func @inc(%x: index) -> index {
  %c1 = arith.constant 1 : index
  %y = arith.addi %x, %c1 : index
  func.return %y : index
}
func.func @count(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %r = scf.while (%i = %c0) : (index) -> index {
    %c = arith.cmpi ult, %i, %n : index
    scf.condition(%c) %i : index
  } do {
  ^bb0(%j: index):
    %k = func.call @inc(%j) : (index) -> index
    scf.yield %k : index
  }
  func.return %r : index
}"""
    assert call(text, "count", 5) == (5,)


def test_f64_to_narrow_formats_rounds_once():
    # Through f32, 1 + 2^-8 + 2^-30 would first become the tie 1 + 2^-8 and then 1.
    x = np.float64(1 + 2**-8 + 2**-30)
    assert float(round_float(x, np.dtype(BF16))) == 1 + 2**-7
    xs = np.array([x, -x, 1 + 2**-8], np.float64)
    np.testing.assert_array_equal(round_float(xs, np.dtype(BF16)).astype(np.float64), [1 + 2**-7, -(1 + 2**-7), 1])


# --------------------------------------------------------------------------- grid and interpreters

PROGRAM_IDS = """
func.func @ids(%out: memref<?x?x?xi32>) {
  %p0 = tile.program_id 0
  %p1 = tile.program_id 1
  %p2 = tile.program_id 2
  %n0 = tile.num_programs 0
  %n1 = tile.num_programs 1
  %lin0 = arith.muli %p2, %n1 : index
  %lin1 = arith.addi %lin0, %p1 : index
  %lin2 = arith.muli %lin1, %n0 : index
  %lin = arith.addi %lin2, %p0 : index
  %v = arith.index_cast %lin : index to i32
  %t = tile.splat %v : i32 -> tensor<1x1x1xi32>
  tile.store %t, %out[%p2, %p1, %p0] : tensor<1x1x1xi32>, memref<?x?x?xi32>
  func.return
}
"""


@pytest.mark.parametrize("grid", [(3,), (3, 2), (3, 2, 4)])
def test_every_program_runs_with_its_ids(grid):
    full = tuple(grid) + (1,) * (3 - len(grid))
    out = np.full(full[::-1], -1, np.int32)
    tawa.interpret(PROGRAM_IDS, "ids", grid, out)
    np.testing.assert_array_equal(out.ravel(), np.arange(out.size))


def test_interpreters_are_independent():
    """One interpreter per concurrent task, each with its own launch: what
    warp-specialized programs will need.  Two threads, two program ids."""
    module = tawa.parse(PROGRAM_IDS)
    kernel = find_kernel(module, "ids")
    out = np.full((1, 1, 4), -1, np.int32)
    interps = [make_interpreter(module) for _ in range(4)]
    threads = [
        threading.Thread(target=run_program, args=(it, kernel, Launch((i, 0, 0), (4, 1, 1)), (out,)))
        for i, it in enumerate(interps)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(out.ravel(), [0, 1, 2, 3])
    assert get_launch(interps[2]).program_id == (2, 0, 0)


def test_extra_implementations_override_and_results_are_type_checked():
    @register_impls
    class Broken(TileFunctions):
        @impl(tile.ZerosOp)
        def run_zeros(self, interpreter, op, args):
            return (np.zeros(3, np.float64),)  # wrong dtype and shape

    module = tawa.parse(func("", "tensor<2xf32>", "  %z = tile.zeros : tensor<2xf32>\n  func.return %z : tensor<2xf32>"))
    interp = make_interpreter(module, [Broken()])
    with pytest.raises(InterpreterError, match=r"^<input>:2:3: error: tile.zeros: internal error: result 0: expected a float32 array of shape \(2,\)"):
        run_program(interp, find_kernel(module, "f"), Launch((0, 0, 0), (1, 1, 1)), ())
