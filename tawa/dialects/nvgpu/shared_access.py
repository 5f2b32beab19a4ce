"""nvgpu ops that read and write a register fragment in shared memory at
addresses formed in IR (`tawa-expand-shared-accesses` lowers
`nvgpu.frag_load_shared` / `nvgpu.frag_store_shared` to them).

Vector k of a thread's fragment (values k·V .. k·V + V − 1, V the layout's
vector length) sits at shared address `addresses[bases[k]] + offsets[k]`,
value j of it `j · bytes` further: the address operands are the thread's
own (computed by `arith` on its thread id), the per-vector choice of
operand and byte offset are properties.  No layout or swizzle is read
here: the pass that made the addresses decided them.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    I32,
    DenseArrayBase,
    Float8E4M3FNType,
    Float8E5M2Type,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from tawa.dialects.nvgpu.fragments import LOADABLE
from tawa.dialects.nvgpu.layouts import VECTOR_BYTES
from tawa.dialects.nvgpu.types import FragmentType, element_bytes


def access_values(t: FragmentType) -> int:
    """Values one address of a fragment of type `t` covers (`bases` and
    `offsets` name one address per access): its layout's vector, cut to
    `VECTOR_BYTES` (the widest `ld.shared`; a blocked layout's vector of 8
    f32, 32 bytes, is two accesses, which a swizzle may put apart).  Unpacked
    16-bit values are then read one by one from their vector's address."""
    eb = element_bytes(t.element_type)
    if t.packed() or eb == 4:
        return min(t.vector_length(), VECTOR_BYTES // eb)
    return t.vector_length()


def access_bytes(t: FragmentType) -> int:
    """Bytes of one shared-memory access of a fragment of type `t`:
    `access_values` of them, except 16-bit values that are not packed in
    pairs, which go one by one."""
    eb = element_bytes(t.element_type)
    if t.packed() or eb == 4:
        return access_values(t) * eb
    return eb


def _verify(name: str, t: Attribute, addresses: int, bases: DenseArrayBase, offsets: DenseArrayBase) -> None:
    assert isinstance(t, FragmentType)
    if len(t.get_shape()) != 2:
        raise VerifyException(f"{name} accesses 2-D fragments, got {t}")
    accesses = t.values_per_thread() // access_values(t)
    b, o = bases.get_values(), offsets.get_values()
    if len(b) != accesses or len(o) != accesses:
        raise VerifyException(
            f"{name} needs a base and an offset for each of the {accesses} accesses of {t}, got {len(b)} and {len(o)}"
        )
    if not addresses:
        raise VerifyException(f"{name} needs at least one address")
    if any(not 0 <= i < addresses for i in b):
        raise VerifyException(f"{name} bases must index its {addresses} addresses, got {list(b)}")
    size = access_bytes(t)
    if any(off < 0 or off % size for off in o):
        raise VerifyException(f"{name} offsets must be non-negative multiples of its {size}-byte accesses, got {list(o)}")


_FORMAT_TAIL = "` ` `[` $addresses `]` `bases` $bases `offsets` $offsets attr-dict"


@irdl_op_definition
class FragmentLoadSharedAtOp(IRDLOperation):
    """`ld.shared` of each access of the result from the thread's address
    of it: access k (values k·V .. k·V + V − 1, V the layout's vector
    length cut to 16 bytes, `access_values`) from the shared address
    `addresses[bases[k]] + offsets[k]`,
    value j of it `j · bytes` further (a packed pair is one register;
    16-bit values that are not packed are loaded one by one).  The
    addresses are the thread's own, formed in `arith` by
    `tawa-expand-shared-accesses`; the caller guarantees that every access
    is aligned and inside the buffer it means.

    Example: `%a = nvgpu.frag_load_shared_at [%u0, %u1] bases [0, 1, 0, 1] offsets [0, 0, 1024, 1024] : !nvgpu.frag<64x16xf16, wgmma>`
    """

    name = "nvgpu.frag_load_shared_at"
    addresses = var_operand_def(I32)
    bases = prop_def(DenseArrayBase.constr(i64))
    offsets = prop_def(DenseArrayBase.constr(i64))
    result = result_def(FragmentType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = _FORMAT_TAIL + " `:` type($result)"

    def __init__(self, addresses: list[SSAValue], bases: list[int], offsets: list[int], type: FragmentType):
        super().__init__(
            operands=[addresses],
            properties={"bases": DenseArrayBase.from_list(i64, bases), "offsets": DenseArrayBase.from_list(i64, offsets)},
            result_types=[type],
        )

    def verify_(self) -> None:
        rt = self.result.type
        assert isinstance(rt, FragmentType)
        if not isinstance(rt.element_type, LOADABLE):
            raise VerifyException(f"{self.name} reads f32, bf16 or f16 elements, got {rt.element_type}")
        _verify(self.name, rt, len(self.addresses), self.bases, self.offsets)


@irdl_op_definition
class FragmentStoreSharedAtOp(IRDLOperation):
    """`st.shared` of each vector of `fragment` at the thread's address of
    it, the dual of `nvgpu.frag_load_shared_at`: vector k to
    `addresses[bases[k]] + offsets[k]`, one store per vector (a packed pair
    of 16-bit values is 32 bits, of fp8 values 16; 16-bit values that are
    not packed go one by one).

    Example: `nvgpu.frag_store_shared_at %c, [%u0, %u1] bases [0, 0, 1, 1] offsets [0, 1024, 0, 1024] : !nvgpu.frag<64x16xbf16, wgmma>`
    """

    name = "nvgpu.frag_store_shared_at"
    fragment = operand_def(FragmentType)
    addresses = var_operand_def(I32)
    bases = prop_def(DenseArrayBase.constr(i64))
    offsets = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$fragment `,` " + _FORMAT_TAIL + " `:` type($fragment)"

    def __init__(self, fragment: SSAValue, addresses: list[SSAValue], bases: list[int], offsets: list[int]):
        super().__init__(
            operands=[fragment, addresses],
            properties={"bases": DenseArrayBase.from_list(i64, bases), "offsets": DenseArrayBase.from_list(i64, offsets)},
        )

    def verify_(self) -> None:
        ft = self.fragment.type
        assert isinstance(ft, FragmentType)
        if not isinstance(ft.element_type, (*LOADABLE, Float8E4M3FNType, Float8E5M2Type)):
            raise VerifyException(f"{self.name} writes f32, bf16, f16 or fp8 elements, got {ft.element_type}")
        if element_bytes(ft.element_type) == 1 and not ft.packed():
            raise VerifyException(f"{self.name} writes fp8 in packed pairs (vectors of 2), got {ft}")
        _verify(self.name, ft, len(self.addresses), self.bases, self.offsets)
