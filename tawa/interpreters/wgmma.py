"""Semantics of wgmma: asynchronous groups, and operands read through
shared-memory descriptors.

`nvgpu.wgmma` (a whole tile) and `nvgpu.wgmma_mma_async` (one instruction)
queue their operands in the warp group's open group; `wgmma_commit_group`
closes it; `wgmma_wait_group N` retires the oldest groups until N remain,
and only then reads shared memory — the latest moment the hardware may
read it, so a slot released before its wgmma completed shows up as wrong
results — and writes the result registers.  Reading a result before its
wait is an error (tawa.interpreters.fragments.regs).

Operands: before `tawa-encode-wgmma-descriptors` a descriptor is rows
[row, row + R) of a stage of an smem buffer, read as a logical tile.
After it, a descriptor is the 64-bit value of the PTX ISA's
matrix-descriptor format (`WGMMA_DESCRIPTOR`), decoded here independently
of the pass that encodes it: start address, leading byte offset (LBO),
stride byte offset (SBO) and swizzle span S.  Element addresses follow the
ISA's canonical layouts for swizzled operands (S bytes per row of a
swizzle atom of 8 rows; then the swizzle of the absolute address):

* K-major (A, and B when `rhs_transposed`): element (m, k) of a 64 x k
  (or N x k) operand is at start + (m / 8)·SBO + (m % 8)·S + k·bytes;
* MN-major (B otherwise, A when `lhs_transposed`): element (k, n) of a
  k x N (or k x 64) operand is at
  start + (n / (S/bytes))·LBO + (n % (S/bytes))·bytes + (k % 8)·S + (k / 8)·SBO.

Before encoding, a descriptor with `columns` is columns [col, col + C) of
every row of the stage (an MN-major A's M columns).

One instruction contracts k = 32 bytes of K (`WGMMA_K_BYTES`).  Operands
are multiplied as the tensor core reads them (`dtypes.mma_operand`: f32 as
tf32), products summed in f32.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.types import element_bytes
from tawa.interpreters import simt
from tawa.interpreters.cta import CtaState, cta_of, lanes_of
from tawa.interpreters.dtypes import dtype_of, mma_operand
from tawa.interpreters.errors import simulation_error
from tawa.interpreters.fragments import Fragment, new_fragment, regs
from tawa.interpreters.nvgpu import SmemBuffer, read_rows, read_tile, tile_addresses, whole_groups
from tawa.interpreters.simt import PerThread
from tawa.target.hopper import (
    SWIZZLE_ATOM_ROWS,
    WGMMA_DESCRIPTOR,
    WGMMA_K_BYTES,
    WGMMA_M,
    swizzled_address,
)

FMT = WGMMA_DESCRIPTOR


@dataclass(frozen=True)
class Descriptor:
    """The fields of a 64-bit matrix descriptor, in bytes."""

    start: int
    lbo: int
    sbo: int
    swizzle: int

    @staticmethod
    def decode(value: int) -> Descriptor:
        field_mask = (1 << FMT.field_bits) - 1
        swizzle = {v: s for s, v in FMT.swizzle_modes}[(value >> FMT.swizzle_shift) & 3]
        return Descriptor(
            (value & field_mask) * FMT.unit,
            ((value >> FMT.leading_offset_shift) & field_mask) * FMT.unit,
            ((value >> FMT.stride_offset_shift) & field_mask) * FMT.unit,
            swizzle,
        )

    def addresses(self, rows: int, cols: int, eb: int, k_major: bool, op: Operation) -> np.ndarray:
        """Byte addresses of a rows x cols operand (K-major: rows x k;
        MN-major: k x cols), per the module docstring."""
        s = self.swizzle
        if not s:
            raise simulation_error(op, f"{op.name}: unswizzled descriptors are not modelled by the simulator")
        r = np.arange(rows, dtype=np.int64)[:, None]
        c = np.arange(cols, dtype=np.int64)[None, :]
        if k_major:
            addr = self.start + (r // SWIZZLE_ATOM_ROWS) * self.sbo + (r % SWIZZLE_ATOM_ROWS) * s + c * eb
        else:
            per_row = s // eb
            addr = (self.start + (c // per_row) * self.lbo + (c % per_row) * eb
                    + (r % SWIZZLE_ATOM_ROWS) * s + (r // SWIZZLE_ATOM_ROWS) * self.sbo)
        return swizzled_address(addr, s)


@dataclass(frozen=True)
class TileDescriptor:
    """A descriptor before encoding: rows [row, row + rows) of stage `stage`
    of `buffer` (with `columns`, columns [row, row + rows) of every row),
    moved `offset` bytes on by `wgmma_desc_advance` (to the element whose
    unswizzled address is that much further)."""

    buffer: SmemBuffer
    stage: int
    row: int
    rows: int
    offset: int = 0
    columns: bool = False

    def read(self, cta: CtaState, op: Operation, shape: tuple[int, int]) -> np.ndarray:
        """The `shape` operand starting `offset` bytes into the tile."""
        t = self.buffer.type
        first = (0, 0)
        if self.columns:
            tile = read_rows(cta.smem, self.buffer, self.stage, 0, t.get_shape()[1], op)
            if self.row < 0 or self.row + self.rows > tile.shape[1]:
                raise simulation_error(op, f"{op.name}: columns [{self.row}, {self.row + self.rows}) leave the "
                                           f"{tile.shape} tile")
            tile, first = tile[:, self.row : self.row + self.rows], (0, self.row)
        else:
            tile = read_rows(cta.smem, self.buffer, self.stage, self.row, self.rows, op)
        if not self.offset and shape == tile.shape:
            return tile
        plain = tile_addresses(t, 0, swizzled=False)
        at = np.argwhere(plain - plain[first] == self.offset)
        if not len(at):
            raise simulation_error(op, f"{op.name}: descriptor offset {self.offset} is not an element of {t}")
        r, c = at[0] - np.array(first)
        if r < 0 or c < 0:
            raise simulation_error(op, f"{op.name}: descriptor offset {self.offset} is outside its columns of {t}")
        if r + shape[0] > tile.shape[0] or c + shape[1] > tile.shape[1]:
            raise simulation_error(op, f"{op.name}: a {shape} operand at offset {self.offset} leaves the {tile.shape} tile")
        return tile[r : r + shape[0], c : c + shape[1]]


@dataclass(eq=False)
class Mma:
    op: Operation
    lhs: Any
    rhs: Any
    acc: Fragment
    accumulate: bool
    result: Fragment
    group: int


@dataclass(eq=False)
class WgmmaQueue:
    """The wgmma ops of one warp group: the open group and the committed ones."""

    open: list[Mma] = field(default_factory=list)
    committed: deque[list[Mma]] = field(default_factory=deque)

    def in_flight(self) -> bool:
        return bool(self.open or self.committed)


def _operand(cta: CtaState, mma: Mma, x: Any, side: str) -> np.ndarray:
    op, g = mma.op, mma.group
    if isinstance(x, Fragment):
        if g in x.pending:
            raise simulation_error(op, f"{op.name}: register operand of warp group {g} is an unfinished wgmma result")
        return x.group_tile(g)
    t = op.operands[0 if side == "lhs" else 1].type
    dt = dtype_of(t.element_type)
    eb = element_bytes(t.element_type)
    # One instruction contracts k; a whole-tile nvgpu.wgmma all of its K.
    k = (WGMMA_K_BYTES // eb if isinstance(op, nvgpu.WgmmaMmaAsyncOp)
         else op.lhs_k() if side == "lhs" else t.get_shape()[0])
    n = mma.result.shape()[1]
    transposed = op.rhs_transposed is not None
    # An MN-major A (`lhs_transposed`) is read as k x M, like an MN-major B, and transposed.
    lhs_mn = side == "lhs" and op.lhs_transposed is not None
    if side == "lhs":
        shape, k_major = ((k, WGMMA_M), False) if lhs_mn else ((WGMMA_M, k), True)
    else:
        shape, k_major = ((n, k), True) if transposed else ((k, n), False)
    if isinstance(x, TileDescriptor):
        if not isinstance(op, nvgpu.WgmmaMmaAsyncOp):
            shape = (t.get_shape()[0], x.rows) if x.columns else (x.rows, t.get_shape()[1])
        tile = x.read(cta, op, shape)
        return tile.T if lhs_mn else tile
    # A 64-bit descriptor of one instruction.
    addresses = Descriptor.decode(int(x)).addresses(*shape, eb, k_major, op)
    if addresses.min() < 0 or addresses.max() + eb > len(cta.smem):
        raise simulation_error(op, f"{op.name}: the {side} descriptor reads outside shared memory")
    tile = read_tile(cta.smem, addresses, dt)
    return tile.T if lhs_mn else tile


def retire(cta: CtaState, mma: Mma) -> None:
    g = mma.group
    a = mma_operand(_operand(cta, mma, mma.lhs, "lhs"))
    b = mma_operand(_operand(cta, mma, mma.rhs, "rhs"))
    transposed = mma.op.rhs_transposed is not None
    if a.shape[1] != (b.shape[1] if transposed else b.shape[0]):
        raise simulation_error(mma.op, f"{mma.op.name}: operand shapes {a.shape} and {b.shape} do not contract")
    d = a @ (b.T if transposed else b)
    blocks = mma.op.row_blocks() if isinstance(mma.op, nvgpu.WgmmaMmaAsyncOp) else 1
    if (mma.accumulate or blocks > 1) and g in mma.acc.pending:
        raise simulation_error(mma.op, f"{mma.op.name}: accumulator of warp group {g} is not ready")
    if blocks > 1:  # one row block of the accumulator; the others carry over
        rows = slice(WGMMA_M * mma.op.block(), WGMMA_M * mma.op.block() + WGMMA_M)
        whole = mma.acc.group_tile(g).astype(np.float32)
        whole[rows] = whole[rows] + d if mma.accumulate else d
        d = whole
    elif mma.accumulate:
        d = mma.acc.group_tile(g).astype(np.float32) + d
    mma.result.set_group_tile(g, d)
    mma.result.pending.discard(g)


@register_impls
class WgmmaFunctions(InterpreterFunctions):
    """wgmma, its groups and its descriptors (see the module docstring)."""

    @impl(nvgpu.WgmmaDescriptorOp)
    def run_descriptor(self, interpreter: Interpreter, op: nvgpu.WgmmaDescriptorOp, args: PythonValues):
        buf, stage, row = args
        columns = op.columns is not None
        rows = op.result.type.get_shape()[1 if columns else 0]
        if not any(isinstance(a, PerThread) for a in (stage, row)):
            return (TileDescriptor(buf, stage, row, rows, columns=columns),)
        lanes = lanes_of(interpreter)
        idx = lanes.indices()
        values = [TileDescriptor(buf, simt.lane_value(stage, i), simt.lane_value(row, i), rows, columns=columns)
                  for i in idx]
        return (simt.pack(values, idx, lanes.threads),)

    @impl(nvgpu.SmemAddressOp)
    def run_smem_address(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        buf = args[0]
        assert isinstance(buf, SmemBuffer)
        return (buf.offset,)

    @impl(nvgpu.WgmmaDescEncodeOp)
    def run_desc_encode(self, interpreter: Interpreter, op: nvgpu.WgmmaDescEncodeOp, args: PythonValues):
        field_mask = (1 << FMT.field_bits) - 1
        address = int(args[0]) & FMT.address_mask
        value = (
            (address // FMT.unit) & field_mask
            | ((op.leading_byte_offset.value.data // FMT.unit) & field_mask) << FMT.leading_offset_shift
            | ((op.stride_byte_offset.value.data // FMT.unit) & field_mask) << FMT.stride_offset_shift
            | FMT.swizzle_field(op.swizzle.value.data) << FMT.swizzle_shift
        )
        return (value,)

    @impl(nvgpu.WgmmaDescAdvanceOp)
    def run_desc_advance(self, interpreter: Interpreter, op: nvgpu.WgmmaDescAdvanceOp, args: PythonValues):
        d, offset = args[0], op.offset.value.data
        if isinstance(d, TileDescriptor):
            return (replace(d, offset=d.offset + offset),)
        return (int(d) + offset // FMT.unit,)

    @impl(nvgpu.WgmmaKSliceOp)
    def run_k_slice(self, interpreter: Interpreter, op: nvgpu.WgmmaKSliceOp, args: PythonValues):
        src = args[0]
        values = regs(op, src, lanes_of(interpreter))
        return (Fragment(op.result.type, values[:, list(op.source_values())], set(src.pending)),)

    @impl(nvgpu.WgmmaFenceOp)
    def run_fence(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return ()

    @impl(nvgpu.WgmmaOp)
    def run_wgmma(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (_issue(interpreter, op, args),)

    @impl(nvgpu.WgmmaMmaAsyncOp)
    def run_mma_async(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (_issue(interpreter, op, args),)

    @impl(nvgpu.WgmmaCommitGroupOp)
    def run_commit(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        cta, lanes = cta_of(interpreter), lanes_of(interpreter)
        for g in whole_groups(op, lanes.mask):
            queue = cta.wgmma.setdefault(g, WgmmaQueue())
            queue.committed.append(queue.open)
            queue.open = []
        return ()

    @impl(nvgpu.WgmmaWaitGroupOp)
    def run_wait(self, interpreter: Interpreter, op: nvgpu.WgmmaWaitGroupOp, args: PythonValues):
        cta, lanes = cta_of(interpreter), lanes_of(interpreter)
        keep = op.pending.value.data
        groups = whole_groups(op, lanes.mask)
        for g in groups:
            queue = cta.wgmma.setdefault(g, WgmmaQueue())
            while len(queue.committed) > keep:
                for mma in queue.committed.popleft():
                    retire(cta, mma)
        for k, f in enumerate(args):
            if isinstance(f, Fragment) and f.pending & set(groups):
                raise simulation_error(op, f"{op.name} {keep} returns fragment #{k} while the wgmma computing it is "
                            "still in flight (uncommitted, or in one of the groups it leaves pending)")
        return tuple(args)


def _issue(interpreter: Interpreter, op: Any, args: PythonValues) -> Fragment:
    """Queues one wgmma per active warp group; returns its (pending) result."""
    cta, lanes = cta_of(interpreter), lanes_of(interpreter)
    lhs, rhs, acc, accumulate = args
    if op.result.type.get_shape()[0] % WGMMA_M:
        raise simulation_error(op, f"{op.name}: a warp group computes a multiple of {WGMMA_M} rows")
    result = new_fragment(op.result.type, lanes.threads)
    for g in whole_groups(op, lanes.mask):
        group = cta.group_lanes(g)
        lhs_g, rhs_g, acc_on = (
            x if isinstance(x, Fragment) else group.uniform(x, lambda k=k: f"{op.name}: operand #{k}")
            for k, x in enumerate((lhs, rhs, accumulate))
        )
        result.pending.add(g)
        queue = cta.wgmma.setdefault(g, WgmmaQueue())
        queue.open.append(Mma(op, lhs_g, rhs_g, acc, bool(acc_on), result, g))
    return result


simt.LANE_AWARE.update({nvgpu.WgmmaDescriptorOp, nvgpu.WgmmaOp, nvgpu.WgmmaMmaAsyncOp})
simt.PER_LANE_OPS.update({nvgpu.WgmmaDescEncodeOp, nvgpu.WgmmaDescAdvanceOp})
