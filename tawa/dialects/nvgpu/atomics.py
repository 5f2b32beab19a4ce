"""nvgpu ops that add register fragments into global memory atomically
(`tile.atomic_add` lowered): the epilogue form at element offsets, and the
per-thread form at byte addresses that prints as `red.global.add.f32`.

They mirror `nvgpu.frag_store` and `nvgpu.frag_store_global`
(`tawa.dialects.nvgpu.fragments`), with one difference that matters: a
store by two threads of the same value to the same address writes it once,
an add adds it twice.  So the fragment's layout must hold every element in
exactly one thread (`replicated` tells); the verifiers check it.
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects.builtin import Float32Type, IndexType, MemRefType, i1
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from tawa.dialects.nvgpu.layouts import TiledLayout
from tawa.dialects.nvgpu.types import FragmentType


@lru_cache(maxsize=None)
def replicated(layout: TiledLayout, shape: tuple[int, ...]) -> bool:
    """Whether some element of a `shape` fragment of `layout` is held by more
    than one (thread, value) of a warp group (a row vector of the wgmma
    accumulators is held by the 4 threads of a quad)."""
    return any(len(holders) > 1 for holders in layout.element_map(shape).values())


def _check(name: str, t: FragmentType) -> None:
    if not isinstance(t.element_type, Float32Type):
        raise VerifyException(f"{name} adds f32 fragments, got {t}")
    if len(t.get_shape()) != 2:
        raise VerifyException(f"{name} adds 2-D fragments, got {t}")
    if replicated(t.tiled_layout, tuple(t.get_shape())):
        raise VerifyException(f"{name}: threads of {t} hold copies of an element, which would be added once "
                              "per copy")


@irdl_op_definition
class FragmentAtomicAddOp(IRDLOperation):
    """Epilogue add: adds each element of f32 `fragment` (a 2-D tile held
    once per warp group: an accumulator, a blocked tile) into the f32
    memref at element offsets `offsets`, atomically per element (relaxed,
    GPU scope); elements outside the memref are dropped.  What
    `tile.atomic_add` becomes in `tawa-lower-tile`; `tawa-expand-fragment-stores`
    writes it out as `nvgpu.frag_red_global`.

    Example: `nvgpu.frag_atomic_add %dq, %dQ[%b, %h, %m0, %c0] : !nvgpu.frag<64x128xf32, wgmma>, memref<?x?x?x?xf32>`
    """

    name = "nvgpu.frag_atomic_add"
    fragment = operand_def(FragmentType)
    dest = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$fragment `,` $dest `[` $offsets `]` attr-dict `:` type($fragment) `,` type($dest)"
    )

    def verify_(self) -> None:
        ft, dest = self.fragment.type, self.dest.type
        assert isinstance(ft, FragmentType) and isinstance(dest, MemRefType)
        if len(self.offsets) != dest.get_num_dims():
            raise VerifyException(
                f"nvgpu.frag_atomic_add expects {dest.get_num_dims()} offsets, got {len(self.offsets)}"
            )
        if not isinstance(dest.get_element_type(), Float32Type):
            raise VerifyException(f"nvgpu.frag_atomic_add adds into f32 memrefs, got {dest}")
        _check(self.name, ft)


@irdl_op_definition
class FragmentRedGlobalOp(IRDLOperation):
    """Adds every element a thread holds into global memory, the atomic dual
    of `nvgpu.frag_store_global`: value i is added to the f32 at byte
    address `address + row(i)·row_pitch + col(i)·4` (the layout's
    `value_offsets` from the thread's first element, at `address`), with
    `red.relaxed.gpu.global.add.f32`.  Without a mask every element is
    added (the caller guarantees that every element is in bounds and every
    vector aligned); with an i1 `mask` fragment only those whose bit is
    set.

    Example: `nvgpu.frag_red_global %v, %addr, %pitch mask %m : !nvgpu.frag<64x128xf32, wgmma>, !nvgpu.frag<64x128xi1, wgmma>`
    """

    name = "nvgpu.frag_red_global"
    values = operand_def(FragmentType)
    address = operand_def(IndexType)
    row_pitch = operand_def(IndexType)
    mask = opt_operand_def(FragmentType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$values `,` $address `,` $row_pitch (`mask` $mask^)? attr-dict `:` type($values) (`,` type($mask)^)?"
    )

    def verify_(self) -> None:
        vt = self.values.type
        assert isinstance(vt, FragmentType)
        _check(self.name, vt)
        if self.mask is not None and self.mask.type != vt.with_element_type(i1):
            raise VerifyException(
                f"nvgpu.frag_red_global mask must be {vt.with_element_type(i1)}, got {self.mask.type}"
            )
