"""Semantics of register fragments, through the layout algebra.

A fragment value is the registers of every thread of the CTA: an array
`regs[thread, value]` (only the rows of the threads that computed it are
meaningful).  Value i of thread t of a warp group holds the element
`TiledLayout.thread_coords(shape, t % 128, i)` of that warp group's tile;
`FragmentMap` precomputes those coordinates, so every op works on whole
register arrays with NumPy: elementwise ops register by register, a row
reduction combines a thread's own values (`Reduction.sources`) and then
exchanges them with the lanes its masks name (`t ^ mask`, as the
butterfly shuffles do), a store writes each thread's values at its own
address plus the layout's `value_offsets`.  Nothing is computed on the
logical tile unless the hardware does so too (wgmma, in
tawa.interpreters.wgmma).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.fragments import FragBinaryKind
from tawa.dialects.nvgpu.layouts import TiledLayout, fold_steps
from tawa.dialects.nvgpu.shared_access import access_bytes, access_values
from tawa.dialects.nvgpu.types import FragmentType, element_bytes
from tawa.interpreters import simt
from tawa.interpreters.arith import maximum, minimum
from tawa.interpreters.cta import cta_of, lanes_of
from tawa.interpreters.dtypes import dtype_of, round_float
from tawa.interpreters.errors import simulation_error
from tawa.interpreters.nvgpu import check_bulk_reads, read_rows, read_tile, row_addresses, whole_groups, write_tile
from tawa.interpreters.simt import Lanes, PerThread
from tawa.target.hopper import THREADS_PER_GROUP, THREADS_PER_WARP, WARPS_PER_GROUP


@cache
def fragment_map(layout: TiledLayout, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """coords[axis][t, i]: the coordinate along `axis` of value i of thread t
    (0..127) of a warp group."""
    t = np.arange(THREADS_PER_GROUP)
    warp, lane = t // 32, t % 32
    out = []
    for axis in range(layout.rank):
        base = np.zeros(THREADS_PER_GROUP, dtype=np.int64)
        for term in layout.thread_terms(shape, axis):
            index = warp if term.source == "warp" else lane
            base += (index // term.divisor) % term.size * term.stride
        offsets = np.array(layout.value_offsets(shape, axis), dtype=np.int64)
        out.append(base[:, None] + offsets[None, :])
    return tuple(out)


@dataclass(eq=False)
class Fragment:
    """A fragment value: registers of every thread; `pending` holds the warp
    groups whose rows a wgmma still has to write."""

    type: FragmentType
    regs: np.ndarray
    pending: set[int] = field(default_factory=set)
    simulated = True

    def shape(self) -> tuple[int, ...]:
        return self.type.get_shape()

    def layout(self) -> TiledLayout:
        return self.type.tiled_layout

    def group_tile(self, g: int) -> np.ndarray:
        """The logical tile of warp group g (copies of a replicated element
        must agree)."""
        coords = fragment_map(self.layout(), self.shape())
        regs = self.regs[g * THREADS_PER_GROUP : (g + 1) * THREADS_PER_GROUP]
        tile = np.zeros(self.shape(), dtype=regs.dtype)
        tile[coords] = regs
        return tile

    def set_group_tile(self, g: int, tile: np.ndarray) -> None:
        coords = fragment_map(self.layout(), self.shape())
        self.regs[g * THREADS_PER_GROUP : (g + 1) * THREADS_PER_GROUP] = tile[coords].astype(self.regs.dtype)

    def select_lanes(self, mask: np.ndarray, other: Fragment) -> Fragment:
        return Fragment(self.type, np.where(mask[:, None], self.regs, other.regs), self.pending | other.pending)


def new_fragment(t: FragmentType, threads: int, fill: Any = 0) -> Fragment:
    return Fragment(t, np.full((threads, t.values_per_thread()), fill, dtype=dtype_of(t.element_type)))


def regs(op: Operation, x: Any, lanes: Lanes) -> np.ndarray:
    """The registers of fragment operand `x`, which must be complete in the
    active warp groups."""
    if not isinstance(x, Fragment):
        raise InterpretationError(f"{op.name}: expected a fragment, got {type(x).__name__}")
    busy = x.pending & {int(t) // THREADS_PER_GROUP for t in lanes.indices()}
    if busy:
        raise simulation_error(op, f"{op.name} reads a wgmma result of warp group {min(busy)} before "
                    "nvgpu.wgmma_wait_group completed it")
    return x.regs


def _lane_ints(x: Any, idx: np.ndarray) -> np.ndarray:
    if isinstance(x, PerThread):
        return x.values[idx].astype(np.int64)
    return np.full(len(idx), int(x), dtype=np.int64)


def scalar_column(x: Any, dtype: np.dtype) -> Any:
    """A scalar operand as something that broadcasts against regs[t, i]."""
    if isinstance(x, PerThread):
        return np.array([dtype.type(v) if v is not None else 0 for v in x.values], dtype=dtype)[:, None]
    return dtype.type(x)


# divf: the GPU's `div.full.f32` lies within 2 ulp of the quotient; the
# simulator gives the quotient rounded to nearest (as it gives NumPy's exp2
# for `ex2.approx`), so it matches the tile program's own division.
_FLOAT = {
    FragBinaryKind.ADDF: np.add, FragBinaryKind.SUBF: np.subtract, FragBinaryKind.MULF: np.multiply,
    FragBinaryKind.DIVF: np.divide, FragBinaryKind.MAXIMUMF: maximum, FragBinaryKind.MINIMUMF: minimum,
}
_INT = {
    FragBinaryKind.ADDI: np.add, FragBinaryKind.SUBI: np.subtract, FragBinaryKind.MULI: np.multiply,
    FragBinaryKind.ANDI: np.bitwise_and, FragBinaryKind.ORI: np.bitwise_or,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _operand(op: Operation, x: Any, lanes: Lanes, dtype: np.dtype) -> Any:
    return regs(op, x, lanes) if isinstance(x, Fragment) else scalar_column(x, dtype)


def _result(op: Operation, values: np.ndarray) -> Fragment:
    t = op.results[0].type
    return Fragment(t, np.asarray(values).astype(dtype_of(t.element_type), copy=False))


@register_impls
class FragmentFunctions(InterpreterFunctions):
    """Fragment ops and wgmma (see the module docstring)."""

    @impl(nvgpu.FragmentZerosOp)
    def run_zeros(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (new_fragment(op.results[0].type, cta_of(interpreter).threads),)

    @impl(nvgpu.FragmentUndefOp)
    def run_undef(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        # NaN: a use that reads these values shows in the result.
        return (new_fragment(op.results[0].type, cta_of(interpreter).threads, np.nan),)

    @impl(nvgpu.FragmentSplatOp)
    def run_splat(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        lanes = lanes_of(interpreter)
        t = op.results[0].type
        f = new_fragment(t, lanes.threads)
        f.regs[:] = scalar_column(args[0], f.regs.dtype)
        return (f,)

    @impl(nvgpu.FragmentBinaryOp)
    def run_binary(self, interpreter: Interpreter, op: nvgpu.FragmentBinaryOp, args: PythonValues):
        lanes = lanes_of(interpreter)
        kind = FragBinaryKind(op.kind.data)
        lhs = regs(op, args[0], lanes)
        rhs = _operand(op, args[1], lanes, lhs.dtype)
        if kind in _FLOAT:
            out = _FLOAT[kind](lhs.astype(np.float32), np.asarray(rhs).astype(np.float32))
        else:
            out = _INT[kind](lhs, np.asarray(rhs).astype(lhs.dtype))
        return (_result(op, out),)

    @impl(nvgpu.FragmentUnaryOp)
    def run_unary(self, interpreter: Interpreter, op: nvgpu.FragmentUnaryOp, args: PythonValues):
        x = regs(op, args[0], lanes_of(interpreter)).astype(np.float32)
        out = {"exp2": np.exp2, "negf": np.negative, "tanh": np.tanh, "log2": np.log2, "sqrt": np.sqrt,
               "rsqrt": lambda v: 1 / np.sqrt(v), "absf": np.abs,
               "rcp": lambda v: np.float32(1) / v}[op.kind.data.value](x)
        return (_result(op, out),)

    @impl(nvgpu.FragmentCmpIOp)
    def run_cmpi(self, interpreter: Interpreter, op: nvgpu.FragmentCmpIOp, args: PythonValues):
        lanes = lanes_of(interpreter)
        lhs = regs(op, args[0], lanes)
        rhs = np.asarray(_operand(op, args[1], lanes, lhs.dtype))
        pred = op.predicate.data.value
        if pred.startswith("u"):
            lhs, rhs = lhs.astype(np.uint32), rhs.astype(np.int64).astype(np.uint32)
        return (_result(op, _CMP[pred.lstrip("su")](lhs, rhs)),)

    @impl(nvgpu.FragmentCmpFOp)
    def run_cmpf(self, interpreter: Interpreter, op: nvgpu.FragmentCmpFOp, args: PythonValues):
        # NumPy's comparisons are IEEE's: ordered ones false on NaN, not_equal true (`une`).
        lanes = lanes_of(interpreter)
        lhs = regs(op, args[0], lanes)
        rhs = np.asarray(_operand(op, args[1], lanes, lhs.dtype))
        return (_result(op, _CMP[op.predicate.data.value[1:]](lhs, rhs)),)

    @impl(nvgpu.FragmentSelectOp)
    def run_select(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        lanes = lanes_of(interpreter)
        mask = regs(op, args[0], lanes)
        on = regs(op, args[1], lanes)
        off = _operand(op, args[2], lanes, on.dtype)
        return (_result(op, np.where(mask, on, off)),)

    @impl(nvgpu.FragmentConvertOp)
    def run_convert(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        values = regs(op, args[0], lanes_of(interpreter))
        return (_result(op, round_float(values, dtype_of(op.results[0].type.element_type))),)

    @impl(nvgpu.FragmentTransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        """`movmatrix.trans` of every packed register (values 2k, 2k+1), warp
        by warp: lane l of the result holds, of the 8x8 matrix in register k,
        the elements [2·(l%4) + v][l/4] (v = 0, 1), which lane
        4·(2·(l%4) + v) + (l/4)/2 held as its value 2k + (l/4)%2."""
        x = regs(op, args[0], lanes_of(interpreter))
        t = np.arange(x.shape[0])
        warp0, lane = t - t % THREADS_PER_WARP, t % THREADS_PER_WARP
        out = np.empty_like(x)
        half = (lane // 4) % 2
        for v in (0, 1):
            source = warp0 + 4 * (2 * (lane % 4) + v) + lane // 8
            for k in range(x.shape[1] // 2):
                out[:, 2 * k + v] = x[source, 2 * k + half]
        return (_result(op, out),)

    @impl(nvgpu.FragmentIndexOp)
    def run_index(self, interpreter: Interpreter, op: nvgpu.FragmentIndexOp, args: PythonValues):
        t = op.results[0].type
        coords = fragment_map(t.tiled_layout, t.get_shape())[op.axis_index()]
        threads = cta_of(interpreter).threads
        return (Fragment(t, np.tile(coords, (threads // THREADS_PER_GROUP, 1)).astype(np.int32)),)

    @impl(nvgpu.FragmentReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: nvgpu.FragmentReduceOp, args: PythonValues):
        lanes = lanes_of(interpreter)
        src = args[0]
        x = regs(op, src, lanes).astype(np.float32)
        combine = np.maximum if op.kind.data.value == "max" else np.add
        shape = src.shape()
        red = src.layout().reduce(shape, len(shape) - 1)
        out = np.stack([_fold(combine, x[:, list(g)]) for g in red.sources], axis=1)
        lanes_ix = np.arange(out.shape[0])
        for mask in red.lane_masks:
            out = combine(out, out[lanes_ix ^ mask])
        return (_result(op, out),)

    @impl(nvgpu.FragmentReduceWarpsOp)
    def run_reduce_warps(self, interpreter: Interpreter, op: nvgpu.FragmentReduceWarpsOp, args: PythonValues):
        """Within each warp as `nvgpu.frag_reduce`; then each warp group
        writes its threads' partial results to the scratch buffer (value j
        of thread t at f32 element 128·j + t) and every thread folds those
        of its partner warps, read back from it, in the op's order."""
        lanes = lanes_of(interpreter)
        src, buf = args
        x = regs(op, src, lanes).astype(np.float32)
        combine = np.maximum if op.kind.data.value == "max" else np.add
        red = op.reduction()
        out = np.stack([_fold(combine, x[:, list(g)]) for g in red.sources], axis=1)
        threads = np.arange(out.shape[0])
        for mask in red.lane_masks:
            out = combine(out, out[threads ^ mask])
        cta = cta_of(interpreter)
        values = out.shape[1]
        t = np.arange(THREADS_PER_GROUP)
        slots = buf.offset + 4 * (np.arange(values)[None, :] * THREADS_PER_GROUP + t[:, None])  # [thread, j]
        if slots.max() + 4 > cta.smem.size:
            raise simulation_error(op, f"{op.name}: the scratch buffer ends past the {cta.smem.size} bytes of "
                                   "shared memory")
        partners = np.array([red.partner_warps(w) for w in range(WARPS_PER_GROUP)])  # [warp, k]
        readers = partners[t // THREADS_PER_WARP] * THREADS_PER_WARP + (t % THREADS_PER_WARP)[:, None]  # [thread, k]
        final = np.array(out)
        for g in whole_groups(op, lanes.mask):
            rows = slice(g * THREADS_PER_GROUP, (g + 1) * THREADS_PER_GROUP)
            write_tile(cta.smem, slots, out[rows].astype(np.float32))
            parts = [read_tile(cta.smem, slots[readers[:, k]], np.dtype(np.float32)) for k in range(red.warps)]
            final[rows] = _fold(combine, np.stack(parts, axis=-1).reshape(-1, red.warps)).reshape(-1, values)
        return (_result(op, final),)

    @impl(nvgpu.FragmentTransposeSharedOp)
    def run_transpose_shared(self, interpreter: Interpreter, op: nvgpu.FragmentTransposeSharedOp,
                             args: PythonValues):
        """Each warp group writes its values, element (i, j) of the R x C
        input at f32 element C·i + j of the scratch buffer, and every thread
        reads element (a, b) of the result from element C·b + a."""
        lanes = lanes_of(interpreter)
        src, buf = args
        it, rt = op.input.type, op.result.type
        R, C = it.get_shape()
        x = regs(op, src, lanes).astype(np.float32)
        rows, cols = fragment_map(it.tiled_layout, tuple(it.get_shape()))
        written = buf.offset + 4 * (C * rows + cols)
        a, b = fragment_map(rt.tiled_layout, tuple(rt.get_shape()))
        read = buf.offset + 4 * (C * b + a)
        cta = cta_of(interpreter)
        if max(written.max(), read.max()) + 4 > cta.smem.size:
            raise simulation_error(op, f"{op.name}: the scratch buffer ends past the {cta.smem.size} bytes of "
                                   "shared memory")
        out = np.zeros((x.shape[0], rt.values_per_thread()), dtype=np.float32)
        for g in whole_groups(op, lanes.mask):
            group = slice(g * THREADS_PER_GROUP, (g + 1) * THREADS_PER_GROUP)
            write_tile(cta.smem, written, x[group])
            out[group] = read_tile(cta.smem, read, np.dtype(np.float32))
        return (_result(op, out),)

    @impl(nvgpu.FragmentBroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: nvgpu.FragmentBroadcastOp, args: PythonValues):
        lanes = lanes_of(interpreter)
        src = args[0]
        t = op.results[0].type
        sources = t.tiled_layout.broadcast_sources(t.get_shape(), op.axis(), src.layout())
        return (_result(op, regs(op, src, lanes)[:, list(sources)]),)

    @impl(nvgpu.FragmentStoreOp)
    def run_store(self, interpreter: Interpreter, op: nvgpu.FragmentStoreOp, args: PythonValues):
        for where, tile in _group_boxes(interpreter, op, args, None):
            dest = args[1]
            dest[where] = tile.astype(dest.dtype)
        return ()

    @impl(nvgpu.FragmentLoadOp)
    def run_load(self, interpreter: Interpreter, op: nvgpu.FragmentLoadOp, args: PythonValues):
        """Each active warp group reads its tile: the box at its offsets,
        0 outside the memref, placed in registers by the layout."""
        lanes = lanes_of(interpreter)
        src, *offsets = args
        t = op.result.type
        f = new_fragment(t, cta_of(interpreter).threads)
        shape = t.get_shape()
        lead_rank = src.ndim - len(shape)
        for g in whole_groups(op, lanes.mask):
            group = cta_of(interpreter).group_lanes(g)
            at = [group.uniform(o, lambda: f"{op.name}: offset") for o in offsets]
            tile = np.zeros(shape, dtype=src.dtype)
            lead, box = at[:lead_rank], at[lead_rank:]
            inside = [min(n, max(dim - b, 0)) for b, n, dim in zip(box, shape, src.shape[lead_rank:])]
            if all(0 <= i < d for i, d in zip(lead, src.shape)) and all(inside):
                part = src[(*lead, *(slice(b, b + n) for b, n in zip(box, inside)))]
                tile[tuple(slice(0, n) for n in inside)] = part
            f.set_group_tile(g, tile)
        return (f,)

    @impl(nvgpu.FragmentLoadSharedOp)
    def run_load_shared(self, interpreter: Interpreter, op: nvgpu.FragmentLoadSharedOp, args: PythonValues):
        """Each active warp group reads its rows of the stage's tile from the
        swizzled bytes (the mapping TMA wrote them through)."""
        lanes = lanes_of(interpreter)
        buf, stage, row = args
        t = op.result.type
        cta = cta_of(interpreter)
        f = new_fragment(t, cta.threads)
        for g in whole_groups(op, lanes.mask):
            group = cta.group_lanes(g)
            s = group.uniform(stage, lambda: f"{op.name}: stage")
            r = group.uniform(row, lambda: f"{op.name}: row")
            f.set_group_tile(g, read_rows(cta.smem, buf, s, r, t.get_shape()[0], op))
        return (f,)

    @impl(nvgpu.FragmentStoreSharedOp)
    def run_store_shared(self, interpreter: Interpreter, op: nvgpu.FragmentStoreSharedOp, args: PythonValues):
        """Each active warp group writes its tile into rows of the stage, as
        swizzled bytes (the mapping a TMA store reads them through)."""
        lanes = lanes_of(interpreter)
        frag, buf, stage, row = args
        regs(op, frag, lanes)
        t = op.fragment.type
        cta = cta_of(interpreter)
        for g in whole_groups(op, lanes.mask):
            group = cta.group_lanes(g)
            s = group.uniform(stage, lambda: f"{op.name}: stage")
            r = group.uniform(row, lambda: f"{op.name}: row")
            addresses = row_addresses(buf, s, r, t.get_shape()[0], op)
            check_bulk_reads(cta, addresses, op)
            write_tile(cta.smem, addresses, frag.group_tile(g).astype(dtype_of(t.element_type)))
        return ()

    @impl(nvgpu.FragmentLoadSharedAtOp)
    def run_load_shared_at(self, interpreter: Interpreter, op: nvgpu.FragmentLoadSharedAtOp, args: PythonValues):
        """Each active thread reads its values from the bytes at the
        addresses the op's operands and properties give them."""
        lanes = lanes_of(interpreter)
        t = op.result.type
        cta = cta_of(interpreter)
        idx = lanes.indices()
        addrs = _shared_addresses(op, t, args, idx, cta.smem.size)
        f = new_fragment(t, cta.threads)
        f.regs[idx] = read_tile(cta.smem, addrs, f.regs.dtype)
        return (f,)

    @impl(nvgpu.FragmentStoreSharedAtOp)
    def run_store_shared_at(self, interpreter: Interpreter, op: nvgpu.FragmentStoreSharedAtOp, args: PythonValues):
        """Each active thread writes its values to the bytes at the
        addresses the op's operands and properties give them."""
        lanes = lanes_of(interpreter)
        frag, *addresses = args
        values = regs(op, frag, lanes)
        t = op.fragment.type
        cta = cta_of(interpreter)
        idx = lanes.indices()
        addrs = _shared_addresses(op, t, addresses, idx, cta.smem.size)
        check_bulk_reads(cta, addrs, op)
        write_tile(cta.smem, addrs, values[idx].astype(dtype_of(t.element_type)))
        return ()

    @impl(nvgpu.FragmentLoadGlobalOp)
    def run_load_global(self, interpreter: Interpreter, op: nvgpu.FragmentLoadGlobalOp, args: PythonValues):
        lanes = lanes_of(interpreter)
        address, pitch, *mask = args
        t = op.result.type
        idx = lanes.indices()
        addrs = _addresses(t, _lane_ints(address, idx), _lane_ints(pitch, idx))
        keep = regs(op, mask[0], lanes)[idx].astype(bool) if mask else np.ones(addrs.shape, dtype=bool)
        vec, eb = t.vector_length(), element_bytes(t.element_type)
        if not mask:
            _check_aligned(op, "loads", idx, addrs, vec, eb)
        elif op.vector_mask is not None:
            _check_vector_mask(op, "loads", idx, addrs, keep, vec, eb)
        values, where = cta_of(interpreter).memory.gather(addrs[keep], eb)
        if values is None:
            lane, i = (int(v) for v in np.argwhere(keep)[where])
            raise simulation_error(op, f"{op.name}: thread {idx[lane]} loads value {i} from "
                        f"{addrs[lane, i]:#x}, outside every memref (an out-of-bounds load)")
        f = new_fragment(t, cta_of(interpreter).threads)
        mine = np.zeros(f.regs.shape, dtype=np.float64)
        part = np.zeros(addrs.shape, dtype=np.float64)
        part[keep] = values
        mine[idx] = part
        f.regs[:] = mine.astype(f.regs.dtype)
        return (f,)

    @impl(nvgpu.FragmentStoreGlobalOp)
    def run_store_global(self, interpreter: Interpreter, op: nvgpu.FragmentStoreGlobalOp, args: PythonValues):
        eb = element_bytes(args[0].type.element_type)
        values, idx, addrs, stored = _global_access(interpreter, op, args, "stores", eb)
        where = cta_of(interpreter).memory.scatter(addrs[stored], values[idx][stored], eb)
        if where is not None:
            lane, i = (int(v) for v in np.argwhere(stored)[where])
            raise simulation_error(op, f"{op.name}: thread {idx[lane]} stores value {i} at "
                        f"{addrs[lane, i]:#x}, outside every memref (an out-of-bounds store)")
        return ()

    @impl(nvgpu.FragmentAtomicAddOp)
    def run_atomic_add(self, interpreter: Interpreter, op: nvgpu.FragmentAtomicAddOp, args: PythonValues):
        """`run_store`, adding in f32."""
        for where, tile in _group_boxes(interpreter, op, args, np.float32):
            args[1][where] += tile
        return ()

    @impl(nvgpu.FragmentRedGlobalOp)
    def run_red_global(self, interpreter: Interpreter, op: nvgpu.FragmentRedGlobalOp, args: PythonValues):
        """`run_store_global`, adding in f32."""
        values, idx, addrs, added = _global_access(interpreter, op, args, "adds", 4)
        memory = cta_of(interpreter).memory
        old, where = memory.gather(addrs[added], 4)
        if old is None:
            lane, i = (int(v) for v in np.argwhere(added)[where])
            raise simulation_error(op, f"{op.name}: thread {idx[lane]} adds value {i} at "
                                       f"{addrs[lane, i]:#x}, outside every memref (an out-of-bounds add)")
        # One thread per element (the verifier refuses replicated layouts), so no address repeats;
        # one CTA's accesses at a time, so each add is atomic, and adds commute (any program order).
        sums = old.astype(np.float32) + values[idx][added].astype(np.float32)
        memory.scatter(addrs[added], sums, 4)
        return ()


def _fold(combine: Any, x: np.ndarray) -> np.ndarray:
    """Combines the columns of `x` (lanes × values) per lane in the order
    of `fold_steps`, as the PTX printer emits it."""
    slots = [x[:, i] for i in range(x.shape[1])]
    for a, b in fold_steps(len(slots)):
        slots[a] = combine(slots[a], slots[b])
    return slots[0]


def _addresses(t: FragmentType, base: np.ndarray, pitch: np.ndarray) -> np.ndarray:
    """addrs[lane, i]: base + row(i)·pitch + col(i)·bytes (a 1-D fragment's
    axis is a column), as the PTX printer forms them."""
    shape, layout = t.get_shape(), t.tiled_layout
    cols = np.array(layout.value_offsets(shape, len(shape) - 1), dtype=np.int64)
    rows = np.array(layout.value_offsets(shape, 0) if len(shape) == 2 else [0] * len(cols), dtype=np.int64)
    return base[:, None] + rows[None, :] * pitch[:, None] + cols[None, :] * element_bytes(t.element_type)


def _shared_addresses(op: nvgpu.FragmentLoadSharedAtOp | nvgpu.FragmentStoreSharedAtOp, t: FragmentType,
                      addresses: Any, idx: np.ndarray, size: int) -> np.ndarray:
    """addrs[lane, i]: the shared address of value i of each active lane:
    vector k at `addresses[bases[k]] + offsets[k]`, its values one element
    apart; every access aligned and inside shared memory."""
    vec, eb = access_values(t), element_bytes(t.element_type)
    at = np.stack([_lane_ints(a, idx) for a in addresses])
    bases, offsets = np.array(op.bases.get_values()), np.array(op.offsets.get_values())
    first = at[bases].T + offsets[None, :]
    addrs = (first[:, :, None] + np.arange(vec)[None, None, :] * eb).reshape(len(idx), -1)
    verb = "loads" if isinstance(op, nvgpu.FragmentLoadSharedAtOp) else "stores"
    size_of_access = access_bytes(t)
    _check_aligned(op, verb, idx, addrs, size_of_access // eb, eb)
    bad = np.argwhere((addrs < 0) | (addrs + eb > size))
    if len(bad):
        lane, i = bad[0]
        raise simulation_error(op, f"{op.name}: thread {idx[lane]} {verb} value {i} at shared address "
                    f"{addrs[lane, i]:#x}, outside the {size} bytes of shared memory")
    return addrs


def _check_aligned(op: Operation, verb: str, idx: np.ndarray, addrs: np.ndarray, vec: int, eb: int) -> None:
    bad = np.argwhere(addrs[:, ::vec] % (vec * eb) != 0)
    if len(bad):
        lane, i = idx[bad[0][0]], bad[0][1] * vec
        raise simulation_error(op, f"{op.name}: thread {lane} {verb} a {vec}-vector at address "
                    f"{addrs[bad[0][0], i]:#x}, not aligned to {vec * eb} bytes")


def _check_vector_mask(op: Operation, verb: str, idx: np.ndarray, addrs: np.ndarray, keep: np.ndarray,
                       vec: int, eb: int) -> None:
    """A `vector_mask` access's guarantee: the mask the same over each
    vector (the PTX takes each vector whole under its first bit) and every
    vector it takes aligned."""
    groups = keep.reshape(keep.shape[0], -1, vec)
    mixed = np.argwhere(groups.min(axis=2) != groups.max(axis=2))
    if len(mixed):
        lane, v = idx[mixed[0][0]], mixed[0][1]
        raise simulation_error(op, f"{op.name}: thread {lane} {verb} vector {v} under a vector_mask whose bits "
                               f"differ within it")
    firsts = addrs[:, ::vec]
    bad = np.argwhere(groups[:, :, 0] & (firsts % (vec * eb) != 0))
    if len(bad):
        lane, v = idx[bad[0][0]], bad[0][1]
        raise simulation_error(op, f"{op.name}: thread {lane} {verb} a {vec}-vector at address "
                               f"{firsts[bad[0][0], v]:#x}, not aligned to {vec * eb} bytes")


simt.LANE_AWARE.update({
    nvgpu.FragmentSplatOp, nvgpu.FragmentBinaryOp, nvgpu.FragmentCmpIOp, nvgpu.FragmentCmpFOp, nvgpu.FragmentSelectOp,
    nvgpu.FragmentStoreOp, nvgpu.FragmentStoreGlobalOp, nvgpu.FragmentLoadOp, nvgpu.FragmentLoadGlobalOp,
    nvgpu.FragmentLoadSharedOp, nvgpu.FragmentStoreSharedOp, nvgpu.FragmentLoadSharedAtOp,
    nvgpu.FragmentStoreSharedAtOp, nvgpu.FragmentAtomicAddOp, nvgpu.FragmentRedGlobalOp,
})


def _group_boxes(interpreter: Interpreter, op: Any, args: PythonValues, dtype: Any):
    """For a store-like op (fragment, destination, offsets...): per warp
    group of the running lanes, the index of the part of its box inside the
    destination and that part of its tile (as `dtype`, or as it is); boxes
    wholly outside (past an edge, or a leading offset out of range) give
    nothing."""
    lanes = lanes_of(interpreter)
    frag, dest, *offsets = args
    regs(op, frag, lanes)
    for g in whole_groups(op, lanes.mask):
        group = cta_of(interpreter).group_lanes(g)
        at = [group.uniform(o, lambda: f"{op.name}: offset") for o in offsets]
        tile = frag.group_tile(g)
        if dtype is not None:
            tile = tile.astype(dtype)
        lead, box = at[:dest.ndim - tile.ndim], at[dest.ndim - tile.ndim:]
        inside = [min(n, max(dim - b, 0)) for b, n, dim in zip(box, tile.shape, dest.shape[len(lead):])]
        if all(0 <= i < d for i, d in zip(lead, dest.shape)) and all(inside):
            yield (*lead, *(slice(b, b + n) for b, n in zip(box, inside))), tile[tuple(slice(0, n) for n in inside)]


def _global_access(interpreter: Interpreter, op: Any, args: PythonValues, what: str, nbytes: int):
    """For a global store-like op (fragment, address, pitch[, mask]): the
    fragment's registers, the running lanes, each lane's element addresses
    and which of them are accessed (all, or the mask's); unmasked accesses
    must be aligned vectors (`what` names them in the error)."""
    lanes = lanes_of(interpreter)
    frag, address, pitch, *mask = args
    values = regs(op, frag, lanes)
    keep = regs(op, mask[0], lanes) if mask else None
    t = frag.type
    idx = lanes.indices()
    addrs = _addresses(t, _lane_ints(address, idx), _lane_ints(pitch, idx))
    accessed = np.ones(addrs.shape, dtype=bool) if keep is None else keep[idx].astype(bool)
    if keep is None:
        _check_aligned(op, what, idx, addrs, t.vector_length(), nbytes)
    elif getattr(op, "vector_mask", None) is not None:
        _check_vector_mask(op, what, idx, addrs, accessed, t.vector_length(), nbytes)
    return values, idx, addrs, accessed
