"""`tawa-cache-hints`: tiles that only one program reads are loaded `evict_first` in L2.

L2 (50 MB on the H100) is what lets the programs that share a tile read it
from DRAM once: attention's K and V blocks are read by every query block of
their head, a GEMM's A and B tiles by a row and a column of programs.  A
tile that no other program reads (attention's Q block) only takes room from
them.  This pass marks the producer loads of such tiles (the ones that
become TMA loads; a consumer's own loads, like gemm_alpha_beta's C, are not
TMA loads); `tawa-lower-aref` gives their TMA loads an L2 eviction priority
(`nvgpu.tma_load ... l2 "evict_first"`), so the hardware evicts their lines
first:

    %q = tile.load %Q[%bh, %m0, %c0] {tawa.l2 = "evict_first"} : ...

**When** (`read_by_one_program`): a `tile.load` in a producer partition
that runs once per program (in no loop of the kernel) and whose offsets
depend on every program id the kernel reads: two programs then load
different boxes (the offsets are a function of the program ids, and every
id feeds them).  A load in a loop (the streamed K and V, the GEMM's A and B
tiles) or one that some program id does not reach (a bias row shared by a
column of programs) is left as it is.

Runs on warp-specialized kernels before `tawa-persistent`, which replaces
the program ids by values of its loop over programs.  On the H100, against
`tawa-hopper-pipeline{cache-hints=false}`, attention at head dims 64, 128
and 256 ran slightly faster in geomean and no row clearly slower: a small
gain, about one row's run-to-run spread (docs/perf.md, "One TMA store per
warp group").
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tawa.analysis.program_order import in_loop
from tawa.dialects import aref, tile
from tawa.dialects.aref import PartitionRole
from tawa.transforms.utils import kernel_of

NAME = "tawa-cache-hints"
L2_HINT = "tawa.l2"
"""The attribute that carries a load's L2 eviction priority to `tawa-lower-aref`."""


def program_ids_feeding(values: list[SSAValue]) -> set[int]:
    """The axes of the `tile.program_id` ops that `values` are computed from."""
    axes: set[int] = set()
    seen: set[Operation] = set()
    work = [v.owner for v in values if isinstance(v.owner, Operation)]
    while work:
        op = work.pop()
        if op in seen:
            continue
        seen.add(op)
        if isinstance(op, tile.ProgramIdOp):
            axes.add(op.axis.value.data)
        work.extend(o.owner for o in op.operands if isinstance(o.owner, Operation))
    return axes


def read_by_one_program(load: tile.LoadOp, kernel_axes: set[int]) -> bool:
    """Whether `load` runs once per program and loads a box that no other
    program loads (module docstring)."""
    return (not in_loop(load) and bool(kernel_axes)
            and program_ids_feeding(list(load.offsets)) >= kernel_axes)


@dataclass(frozen=True)
class CacheHintsPass(ModulePass):
    """Marks the producer loads of tiles that only one program reads `evict_first`."""

    name = NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for ws in [o for o in op.walk() if isinstance(o, aref.WarpSpecializeOp)]:
            kernel = kernel_of(ws, NAME)
            axes = {o.axis.value.data for o in kernel.walk() if isinstance(o, tile.ProgramIdOp)}
            for role, _, _, region in ws.partition_specs():
                if role != PartitionRole.PRODUCER:
                    continue
                for load in [o for o in region.walk() if isinstance(o, tile.LoadOp)]:
                    if read_by_one_program(load, axes):
                        load.attributes[L2_HINT] = StringAttr("evict_first")
