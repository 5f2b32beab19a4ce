"""Element offsets in a memref the kernel addresses itself.

A memref argument whose elements the kernel's threads load or store (not
through a tensor map) has contiguous rows; its other dimensions are
`nvgpu.memref_stride` elements apart, parameters the runtime fills in from
the array (`tawa.backend.ptx.abi`).  So a strided view whose rows are
contiguous (a column slice of a wider matrix, one head of a seq-major
[B, S, H, D] tensor) is read and written in place, with no copy.  The passes
that write out addresses (`tawa-expand-fragment-stores`, the scalar loads of
`tawa-lower-tile`) form them here, one way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from tawa.dialects import nvgpu


def element_offset(
    add: Callable[[Operation], SSAValue], memory: SSAValue, coords: Sequence[SSAValue]
) -> tuple[SSAValue, SSAValue | None]:
    """The offset, in elements, of the element at `coords` (one per
    dimension) from the memref's element 0: the innermost coordinate plus
    Σ coordᵢ·strideᵢ over the outer dimensions; and the stride of the rows
    (the next-to-innermost dimension's, None for a 1-D memref).  `add`
    appends an op and returns its result."""
    mt = memory.type
    assert isinstance(mt, MemRefType) and len(coords) == mt.get_num_dims()
    strides = [add(nvgpu.MemrefStrideOp(memory, d)) for d in range(len(coords) - 1)]
    # Innermost first: col + row·stride + ... + i0·stride0.  ptxas allocates
    # this order in fewer registers than the outermost-first one (attention
    # backward's preprocess at head dim 64 spills one register at its
    # occupancy's `.maxnreg` the other way round).
    linear = coords[-1]
    for c, s in reversed(list(zip(coords[:-1], strides))):
        linear = add(arith.AddiOp(linear, add(arith.MuliOp(c, s))))
    return linear, strides[-1] if strides else None
