"""The calling convention of kernels tawa emits: what the PTX entry takes and
how the runtime fills it in.

A lowered kernel is a `func.func` whose body uses `nvgpu` ops; the lowering
records its launch shape in its `nvgpu.kernel` attribute
(`tawa.dialects.nvgpu.kernel_info`):

* `threads`: threads per CTA (1-D CTAs);
* `smem`: dynamic shared memory to request, alignment slack included;
* `persistent` (optional): the kernel loops over the logical grid, so the
  runtime launches min(programs, SMs) CTAs instead of one per program;
* `cluster` (optional, persistent kernels): CTAs per thread-block cluster
  along x; the entry declares it (`.reqnctapercluster`), and the runtime
  launches whole clusters (`nvgpu.persistent_ctas`);
* `maxnreg` and `ctas_per_sm` (optional, `tawa-occupancy`): the registers per
  thread the entry starts with (`.maxnreg`) and the CTAs an SM holds at once
  with them (`.minnctapersm` when more than one); a persistent kernel
  launches `ctas_per_sm` CTAs per SM.

Parameters, in this order:

1. for every function argument, in order:
   * `memref<?x...xT>` → its base pointer (`.u64`), then each dimension
     (`.u64`, outermost first); then, if the kernel addresses its elements
     itself (`KernelABI.addressed`: its threads load or store them, not
     TMA), the stride of each dimension but the innermost, in elements
     (`.u64`, outermost first, named `..._stride0`, ...; read by
     `nvgpu.memref_stride`).  Such an array's rows are contiguous (the
     innermost stride is 1) and its other strides positive: a strided view
     (a column slice, one head of a [B, S, H, D] tensor) is read in place.
     Arrays reached only through tensor maps take no strides here (the
     tensor map holds them) and may have any leading strides TMA can
     describe.  (The stride parameters changed the PTX of kernels with an
     addressed array of rank 2 or more; kernels without one are unchanged.);
   * `index` → `.u64`; integer scalars → `.u32`/`.u64` by width; `f32` → `.f32`;
2. for every axis read by an `nvgpu.launch_grid` op, the logical grid size
   along it (`.u64`, named `grid0`, `grid1`, ...);
3. for every `nvgpu.tma_descriptor` op, in program order, a 128-byte
   `CUtensorMap` passed by value (`.param .align 128 .b8 name[128]`), built
   over the memref argument it names with its box (outermost first: the
   tile, or one column chunk of it when its rows are wider than the swizzle
   span) and swizzle;
4. if the kernel has a watchdog wait table (`#nvgpu.kernel<..., waits = ...>`,
   from `tawa-bound-waits`), the address of its watchdog buffer (`.u64`,
   named `watchdog`): `WATCHDOG_BYTES` of zeroed, host-mapped memory where a
   timed-out wait writes one record (`WATCHDOG_FIELDS`, 32-bit words) before
   it traps.  The runtime allocates it (`tawa.runtime.watchdog`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute, BlockArgument

from tawa.diagnostics import TawaError, location_of
from tawa.dialects import nvgpu

WATCHDOG_PARAM = "watchdog"
WATCHDOG_FIELDS = ("claim", "valid", "wait_id", "cta_x", "cta_y", "cta_z", "thread", "index", "parity")
"""The watchdog record, one 32-bit word each: `claim` is set (0 -> 1, by an
atomic compare-and-swap) by the first thread that times out, which alone
writes the others and then `valid` = `WATCHDOG_VALID`, last, before it
traps; `thread` is %tid.x, `index` and `parity` those of the wait."""
WATCHDOG_VALID = 0x7A3A0001
WATCHDOG_BYTES = 64


def watchdog_offset(field: str) -> int:
    """Byte offset of a field of the watchdog record."""
    return 4 * WATCHDOG_FIELDS.index(field)


@dataclass(frozen=True)
class Param:
    """One PTX kernel parameter."""

    name: str
    kind: str
    """`ptr`, `dim`, `stride`, `index`, `i32`, `i64`, `f32`, `grid`, `tensormap` or `watchdog`."""
    arg: int
    """Position of the kernel argument it is derived from."""
    dim: int = -1
    """For `dim` and `stride`: which dimension (outermost = 0); for `grid`: which axis."""
    box: tuple[int, ...] = ()
    """For `tensormap`: the box, outermost dimension first."""
    swizzle: int = 0
    """For `tensormap`: 0, 32, 64 or 128 bytes."""

    @property
    def ptx_decl(self) -> str:
        if self.kind == "tensormap":
            return f".param .align 128 .b8 {self.name}[128]"
        ty = {"ptr": "u64", "dim": "u64", "stride": "u64", "index": "u64", "i64": "u64", "i32": "u32", "f32": "f32", "grid": "u64",
              "watchdog": "u64"}
        return f".param .{ty[self.kind]} {self.name}"


@dataclass(frozen=True)
class KernelABI:
    name: str
    params: tuple[Param, ...]
    arg_types: tuple[Attribute, ...]
    threads: int
    smem_bytes: int
    persistent: bool = False
    waits: tuple[tuple[str, str, str], ...] = ()
    """The watchdog's wait table (location, role, barrier) by wait id; empty: no watchdog."""
    addressed: tuple[int, ...] = ()
    """Memref arguments whose base pointer the kernel reads (`nvgpu.memref_base`:
    it forms addresses itself from their strides, so their rows must be
    contiguous and their other strides positive); the others are reached
    only through tensor maps, if at all."""
    cluster: int = 1
    """CTAs per thread-block cluster (along x)."""
    maxnreg: int = 0
    """Registers per thread at launch (`.maxnreg`); 0: the register file
    shared out over `threads` (`launch_register_cap`)."""
    ctas_per_sm: int = 1
    """CTAs one SM holds at once (a persistent kernel launches this many per SM)."""

    def tensormap_params(self) -> list[Param]:
        return [p for p in self.params if p.kind == "tensormap"]


def _arg_name(kernel: func.FuncOp, i: int) -> str:
    hint = kernel.body.blocks[0].args[i].name_hint
    return f"arg{i}" if hint is None else f"arg{i}_{hint}"


def kernel_abi(kernel: func.FuncOp) -> KernelABI:
    """The parameter list of a lowered kernel."""
    info = nvgpu.kernel_info(kernel)
    if info.threads is None or info.smem is None:
        raise TawaError(
            f"@{kernel.sym_name.data} is not lowered: its #nvgpu.kernel attribute lacks threads or smem "
            "(run tawa-hopper-pipeline)"
        )
    params: list[Param] = []
    types = tuple(kernel.function_type.inputs.data)
    # The ops the ABI reads, in one walk.
    grids: set[int] = set()
    maps: list[nvgpu.TmaDescriptorOp] = []
    bases: set[int] = set()
    for op in kernel.walk():
        if isinstance(op, nvgpu.LaunchGridOp):
            grids.add(op.axis.value.data)
        elif isinstance(op, nvgpu.TmaDescriptorOp):
            maps.append(op)
        elif isinstance(op, nvgpu.MemrefBaseOp | nvgpu.MemrefStrideOp) and isinstance(op.source, BlockArgument):
            bases.add(op.source.index)
    for i, t in enumerate(types):
        name = _arg_name(kernel, i)
        if isinstance(t, MemRefType):
            params.append(Param(f"{name}_ptr", "ptr", i))
            params += [Param(f"{name}_dim{d}", "dim", i, d) for d in range(t.get_num_dims())]
            if i in bases:
                params += [Param(f"{name}_stride{d}", "stride", i, d) for d in range(t.get_num_dims() - 1)]
        elif isinstance(t, IndexType):
            params.append(Param(name, "index", i))
        elif isinstance(t, IntegerType) and t.width.data in (32, 64):
            params.append(Param(name, f"i{t.width.data}", i))
        elif isinstance(t, Float32Type):
            params.append(Param(name, "f32", i))
        else:
            raise TawaError(f"@{kernel.sym_name.data}: arguments of type {t} are not supported",
                            location_of(kernel) or "tawa")
    params += [Param(f"grid{a}", "grid", -1, a) for a in sorted(grids)]
    for j, op in enumerate(maps):
        src = op.source
        if not isinstance(src, BlockArgument) or src.block is not kernel.body.blocks[0]:
            raise TawaError(f"@{kernel.sym_name.data}: a TMA descriptor must describe a kernel argument")
        desc = op.result.type
        assert isinstance(desc, nvgpu.TmaDescriptorType)
        # One TMA box per column chunk: the box is a chunk of the tile.
        box = (*desc.get_shape()[:-1], desc.chunk_columns())
        params.append(Param(f"tmap{j}", "tensormap", src.index, box=box, swizzle=desc.swizzle.data))
    if info.waits:
        params.append(Param(WATCHDOG_PARAM, "watchdog", -1))
    addressed = sorted(bases)
    return KernelABI(
        kernel.sym_name.data,
        tuple(params),
        types,
        info.threads,
        info.smem,
        info.persistent,
        info.waits,
        tuple(addressed),
        info.cluster,
        info.launch_regs,
        info.ctas_per_sm,
    )
