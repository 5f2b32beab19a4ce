"""User mistakes in `@tawa.kernel` functions: each gives one located error.

Every kernel below marks the line of its mistake with `# error at: TEXT`: the
error must point at that line of this file, at the column where TEXT starts,
and say what the test expects.
"""

from __future__ import annotations

import inspect

import pytest

import tawa
import tawa.language as tl
from tawa.diagnostics import TawaError

Ref2 = tl.tensor_ref(tl.bf16, 2)


def expect(kernel, message: str, **constexprs) -> TawaError:
    with pytest.raises(TawaError) as info:
        kernel.ir(**constexprs)
    err = info.value
    lines, first = inspect.getsourcelines(kernel.fn)
    [(i, line)] = [(i, ln) for i, ln in enumerate(lines) if "# error at: " in ln]
    at = line.split("# error at: ")[1].strip()
    where = f"{__file__}:{first + i}:{line.index(at) + 1}"
    assert err.where == where, f"{err} (expected at {where})"
    assert message in err.message, str(err)
    assert "\n" not in str(err) and str(err).startswith(f"{where}: error: ")
    return err


@tawa.kernel
def wrong_contraction(A: Ref2, B: Ref2):
    a = tl.load(A, (0, 0), (128, 64))
    b = tl.load(B, (0, 0), (256, 64))
    tl.dot(a, b)  # error at: tl.dot


def test_wrong_contraction():
    expect(wrong_contraction, "tl.dot: contraction sizes differ: 128x64 and 256x64 "
                              "(did you mean tl.dot(a, b, trans_b=True)?)")


@tawa.kernel
def bad_broadcast(A: Ref2, BLOCK: tl.constexpr):
    x = tl.load(A, (0, 0), (BLOCK, 64)).to(tl.f32)
    y = tl.zeros((64, BLOCK), tl.f32)
    x + y  # error at: x + y


def test_bad_broadcast():
    expect(bad_broadcast, "x + y: cannot broadcast shapes 128x64 and 64x128", BLOCK=128)


@tawa.kernel
def carried_shape_change(A: Ref2, K: tl.index):
    acc = tl.zeros((64, 64), tl.f32)
    for k in tl.range(0, K, 64):
        acc = tl.sum(acc, 1)  # error at: acc = tl.sum


def test_loop_carried_shape_change():
    expect(carried_shape_change, "loop-carried 'acc' changes shape in the loop: 64x64xf32 before it, "
                                 "64xf32 after the body")


@tawa.kernel
def carried_dtype_change(A: Ref2, K: tl.index):
    acc = tl.zeros((64, 64), tl.f32)
    for k in tl.range(0, K, 64):
        acc = acc.to(tl.bf16)  # error at: acc = acc


def test_loop_carried_dtype_change():
    expect(carried_dtype_change, "loop-carried 'acc' changes dtype in the loop: 64x64xf32 before it, 64x64xbf16")


@tawa.kernel
def runtime_tile_size(A: Ref2, M: tl.index):
    tl.zeros((M, 64), tl.f32)  # error at: tl.zeros


def test_non_constexpr_tile_size():
    expect(runtime_tile_size, "tl.zeros: tile sizes must be constexpr, got index scalar")


@tawa.kernel
def f64_tile(A: Ref2):
    tl.zeros((64, 64), tl.f64)  # error at: tl.zeros


def test_unsupported_dtype():
    expect(f64_tile, "unsupported dtype tl.f64")


@tawa.kernel
def unknown_function(A: Ref2):
    tl.softmax(tl.zeros((64, 64), tl.f32), 1)  # error at: tl.softmax


def test_unknown_tl_function():
    expect(unknown_function, "unknown tl function tl.softmax")


@tawa.kernel
def wrong_arity(A: Ref2):
    tl.zeros((64, 64))  # error at: tl.zeros


def test_wrong_arity():
    expect(wrong_arity, "tl.zeros: missing a required argument: 'dtype'")


@tawa.kernel
def while_loop(A: Ref2, BLOCK: tl.constexpr = 64):
    while BLOCK > 0:  # error at: while
        BLOCK = BLOCK // 2


def test_unsupported_construct_while():
    expect(while_loop, "unsupported Python construct in a kernel: while loop")


@tawa.kernel
def try_block(A: Ref2):
    try:  # error at: try
        pass
    finally:
        pass


def test_unsupported_construct_try():
    expect(try_block, "unsupported Python construct in a kernel: try statement")


@tawa.kernel
def axis_out_of_range(A: Ref2):
    x = tl.load(A, (0, 0), (64, 64)).to(tl.f32)
    tl.max(x, 2)  # error at: tl.max


def test_reduction_axis_out_of_range():
    expect(axis_out_of_range, "tl.max: axis 2 is out of range for the 2-D tile 64x64xf32")


@tawa.kernel
def store_mismatch(A: Ref2, C: Ref2):
    acc = tl.zeros((64, 64), tl.f32)
    tl.store(C, (0, 0), acc)  # error at: tl.store


def test_store_dtype_mismatch():
    expect(store_mismatch, "tl.store: the value is 64x64xf32 but C holds bf16 (convert with .to(tl.bf16))")


@tawa.kernel
def store_rank_mismatch(C: tl.tensor_ref(tl.f32, 1)):
    acc = tl.zeros((64, 64), tl.f32)
    tl.store(C, (0,), acc)  # error at: tl.store


def test_store_shape_mismatch():
    expect(store_rank_mismatch, "tl.store: the 2-D tile 64x64xf32 does not fit the 1-D C")


@tawa.kernel
def missing_annotation(A: Ref2, M):  # error at: M)
    pass


def test_missing_annotation():
    expect(missing_annotation, "parameter 'M' has no annotation")


@tawa.kernel
def runtime_if(A: Ref2, M: tl.index):
    if M:  # error at: M:
        pass


def test_if_on_runtime_value():
    expect(runtime_if, "if on a runtime value (index scalar): only constexpr conditions")


@tawa.kernel
def mixed_dtypes(A: Ref2):
    a = tl.load(A, (0, 0), (64, 64))
    a.to(tl.f32) * a  # error at: a.to(tl.f32) * a


def test_dtypes_differ_without_cast():
    expect(mixed_dtypes, "dtypes differ: 64x64xf32 and 64x64xbf16 (convert one with .to(...))")


@tawa.kernel
def loop_local_used_after(A: Ref2, K: tl.index):
    for k in tl.range(0, K, 64):
        t = tl.load(A, (0, k), (64, 64))
    tl.store(A, (0, 0), t)  # error at: t)


def test_loop_local_used_after_loop():
    expect(loop_local_used_after, "'t' is assigned only inside the loop")


@tawa.kernel
def loop_variable_shadows(A: Ref2, K: tl.index):
    m0 = tl.program_id(0) * 64
    acc = tl.zeros((64, 64), tl.f32)
    for h in tl.range(0, K, 1):
        for m0 in tl.range(0, K, 64):  # error at: m0 in
            acc = acc + tl.load(A, (m0, 0), (64, 64))
    tl.store(A, (0, 0), acc)


def test_loop_variable_reusing_an_earlier_name():
    """A loop inside another whose variable was a value before both (a
    fuzzed duplicate line once made this an internal error)."""
    expect(loop_variable_shadows, "the loop variable 'm0' reuses the name of a value defined before the loop (line ")


@tawa.kernel
def offsets_count(A: Ref2):
    tl.load(A, (0,), (64, 64))  # error at: tl.load


def test_load_offsets_count():
    expect(offsets_count, "tl.load: A has rank 2 but 1 offsets are given")


@tawa.kernel
def dot_accumulator(A: Ref2):
    a = tl.load(A, (0, 0), (64, 64))
    tl.dot(a, a, tl.zeros((64, 64), tl.bf16))  # error at: tl.dot


def test_dot_accumulator_type():
    expect(dot_accumulator, "tl.dot: the accumulator is 64x64xbf16 but the product of 64x64xbf16 and "
                            "64x64xbf16 is 64x64xf32")


def test_constexpr_without_value():
    with pytest.raises(TawaError, match="constexpr 'BLOCK' has no value: give it as BLOCK=..."):
        bad_broadcast.ir()
    with pytest.raises(TawaError, match="'A' is a runtime parameter, not a constexpr"):
        bad_broadcast.ir(A=1, BLOCK=128)


def test_hardware_limits_are_located():
    """What only the tile dialect's verifier checks is still reported at the
    Python line (here: wgmma's M granule)."""

    @tawa.kernel
    def small_dot(A: Ref2):
        a = tl.load(A, (0, 0), (32, 64))
        tl.dot(a, a, trans_b=True)  # error at: tl.dot

    expect(small_dot, "tile.dot shape 32x32x64 (MxNxK) is not supported by the hardware")


@tawa.kernel
def float_axis(A: Ref2):
    pid = tl.program_id(1.0)  # error at: tl.program_id
    tl.store(A, (pid, 0), tl.zeros((64, 64), tl.bf16))


def test_program_id_of_a_float():
    """1.0 == 1, but an axis is an int (xDSL's IntegerAttr raised a TypeError)."""
    expect(float_axis, "tl.program_id: axis must be 0, 1 or 2, got 1.0")


@tawa.kernel
def too_large_for_i32(A: tl.tensor_ref(tl.i32, 1)):
    x = tl.zeros((64,), tl.i32) + 2**40  # error at: tl.zeros
    tl.store(A, (0,), x)


def test_constant_out_of_range_is_located():
    """A value an attribute cannot hold (xDSL's verifier, while the op is
    built) is the error at the expression."""
    err = expect(too_large_for_i32, "")
    assert "internal error" not in err.message


@tawa.kernel
def deep_chain(A: tl.tensor_ref(tl.f32, 1)):
    x = tl.zeros((64,), tl.f32)
    y = x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x  # error at: x + x
    tl.store(A, (0,), y)


def test_deeply_nested_expression_is_one_line():
    """A left-nested sum of 67 terms is 66 deep: past MAX_EXPR_DEPTH (64), an
    error at the innermost expression it reaches, not a RecursionError."""
    expect(deep_chain, "expression nested more than 64 deep (split it with assignments)")


def test_a_front_end_bug_is_a_located_internal_error(monkeypatch):
    """An exception other than a TawaError, from a rule of the front end,
    is still one line at the expression being built."""
    from tawa.frontend import builtins as rules

    def broken(e, **args):
        raise KeyError("oops")

    monkeypatch.setitem(rules.RULES, "zeros", broken)
    expect(uses_zeros, "internal error: KeyError: 'oops'")


@tawa.kernel
def uses_zeros(A: tl.tensor_ref(tl.f32, 1)):
    tl.store(A, (0,), tl.zeros((64,), tl.f32))  # error at: tl.zeros


@tawa.kernel
def float_out_of_range(A: tl.tensor_ref(tl.f32, 1)):
    x = tl.zeros((64,), tl.f32) * 1e39  # error at: tl.zeros
    tl.store(A, (0,), x)


@tawa.kernel
def fp8_out_of_range(A: tl.tensor_ref(tl.f32, 1)):
    x = tl.zeros((64,), tl.f8e4m3fn) + 1000.0  # error at: tl.zeros
    tl.store(A, (0,), x.to(tl.f32))


def test_float_constants_out_of_range():
    """f32 raised an OverflowError in xDSL; bf16 and fp8 rounded to inf or NaN."""
    expect(float_out_of_range, "the float 1e+39 is out of range of f32")
    expect(fp8_out_of_range, "the float 1000.0 is out of range of f8e4m3fn")


@tawa.kernel
def minimum_of_numbers(A: tl.tensor_ref(tl.f32, 1), BLOCK: tl.constexpr = 64):
    n = tl.minimum(BLOCK, 32)
    tl.store(A, (0,), tl.zeros((n,), tl.f32) + tl.exp(1.0))  # error at: tl.exp


def test_elementwise_functions_of_numbers():
    """tl.minimum of two compile-time numbers is Python's min; other
    elementwise functions need a runtime operand (an IndexError before)."""
    expect(minimum_of_numbers, "tl.exp: expected a tile or scalar, got 1.0 (use Python's math module on constexprs)")
