"""PTX printer: lowered kernels (func + arith + scf + nvgpu) to sm_90a PTX text.

Values live in virtual registers (ptxas allocates): `index` and 64-bit
integers in `%rd`, 32-bit integers and shared-memory addresses in `%r`, `i1`
in `%p`, f32 in `%f`; a fragment is a list of `%f` registers (N/2 per thread
for a 64xN wgmma accumulator).  A wgmma accumulates in place in its
accumulator's registers, a `wgmma_wait_group` result is its operand's
registers, and loop-carried values are copied into the loop's registers on
entry and at each `scf.yield`.  Structured control flow becomes labels and
branches.  The calling convention is `tawa.backend.ptx.abi`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tawa.backend.ptx.abi import KernelABI, kernel_abi, launch_register_cap
from tawa.diagnostics import TawaError, location_of
from tawa.dialects import nvgpu

PTX_VERSION = "8.0"
SM = "sm_90a"
SMEM_SYMBOL = "tawa_smem"
# wgmma descriptor bits above the address for 128B-swizzled tiles: swizzle
# mode 1 (bit 62) and stride byte offset 1024 >> 4 (bits 32-45: the next 8
# rows of 128 bytes).  The leading byte offset (bits 16-29) is set per tile.
DESC_HI_SW128 = (1 << 62) | (64 << 32)

_CMP = {
    "eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
    "ult": "lo", "ule": "ls", "ugt": "hi", "uge": "hs",
}
_SIGNED = {"slt", "sle", "sgt", "sge"}
_INT_BINARY = {
    arith.AddiOp: "add.s", arith.SubiOp: "sub.s", arith.MuliOp: "mul.lo.s",
    arith.DivUIOp: "div.u", arith.RemUIOp: "rem.u", arith.DivSIOp: "div.s",
    arith.RemSIOp: "rem.s", arith.MinUIOp: "min.u", arith.MaxUIOp: "max.u",
    arith.MinSIOp: "min.s", arith.MaxSIOp: "max.s",
    arith.AndIOp: "and.b", arith.OrIOp: "or.b", arith.XOrIOp: "xor.b",
}
_PRED_BINARY = {arith.AndIOp: "and.pred", arith.OrIOp: "or.pred", arith.XOrIOp: "xor.pred"}


def _unsupported(op: Operation, why: str = "") -> TawaError:
    return TawaError(
        f"the PTX printer does not support '{op.name}'{': ' + why if why else ''}",
        location_of(op) or "tawa-opt -t ptx",
    )


@dataclass
class _Regs:
    counts: dict[str, int] = field(default_factory=lambda: {"p": 0, "r": 0, "rd": 0, "f": 0, "h": 0})

    def new(self, cls: str) -> str:
        n = self.counts[cls]
        self.counts[cls] = n + 1
        return f"%{cls}{n}"

    def declarations(self) -> list[str]:
        kinds = {"p": ".pred", "r": ".b32", "rd": ".b64", "f": ".f32", "h": ".b16"}
        return [f".reg {kinds[c]} %{c}<{n}>;" for c, n in self.counts.items() if n]


def _reg_class(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "rd"
    if isinstance(t, IntegerType):
        return {1: "p", 32: "r", 64: "rd"}.get(t.width.data, "?")
    if isinstance(t, Float32Type):
        return "f"
    if isinstance(t, nvgpu.SmemType | nvgpu.MBarrierType):
        return "r"
    if isinstance(t, nvgpu.TmaDescriptorType | nvgpu.WgmmaDescriptorType):
        return "rd"
    return "?"


def _frag_class(t: nvgpu.FragmentType) -> str:
    """Register class of a fragment's registers."""
    if t.packed():
        return "r"  # bf16/f16 pairs
    return _reg_class(t.element_type)


def _int_suffix(t: Attribute) -> str:
    return "32" if isinstance(t, IntegerType) and t.width.data == 32 else "64"


class KernelPrinter:
    """Prints one lowered kernel."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.abi: KernelABI = kernel_abi(kernel)
        self.regs = _Regs()
        self.lines: list[str] = []
        self.vals: dict[SSAValue, str | list[str]] = {}
        self.memrefs: dict[SSAValue, tuple[str, list[str]]] = {}
        self.labels = 0
        self.tmap_index = 0
        self.true_pred: str | None = None
        self.chunk_bytes: dict[SSAValue, int] = {}
        """Per wgmma descriptor: the bytes of one column chunk of its tile."""
        self.consts: dict[SSAValue, int] = {}
        """Integer constants: printed as immediates where an operand may be one."""

    # ------------------------------------------------------------------ helpers

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"${stem}_{self.labels}"

    def reg(self, v: SSAValue) -> str:
        r = self.vals[v]
        assert isinstance(r, str), v
        return r

    def frag(self, v: SSAValue) -> list[str]:
        r = self.vals[v]
        assert isinstance(r, list), v
        return r

    def define(self, v: SSAValue) -> str:
        cls = _reg_class(v.type)
        if cls == "?":
            raise _unsupported(v.owner if isinstance(v.owner, Operation) else self.kernel,
                               f"values of type {v.type}")
        r = self.regs.new(cls)
        self.vals[v] = r
        return r

    def define_frag(self, v: SSAValue) -> list[str]:
        t = v.type
        assert isinstance(t, nvgpu.FragmentType)
        regs = [self.regs.new(_frag_class(t)) for _ in range(t.registers())]
        self.vals[v] = regs
        return regs

    def define_like(self, v: SSAValue) -> str | list[str]:
        return self.define_frag(v) if isinstance(v.type, nvgpu.FragmentType) else self.define(v)

    def copy(self, dst: str | list[str], src: str | list[str], t: Attribute) -> None:
        if isinstance(dst, list):
            assert isinstance(src, list) and isinstance(t, nvgpu.FragmentType)
            kind = {"p": "pred", "r": "b32", "f": "f32"}[_frag_class(t)]
            for d, s in zip(dst, src):
                if d != s:
                    self.emit(f"mov.{kind} {d}, {s};")
            return
        if dst == src:
            return
        cls = _reg_class(t)
        kind = {"p": "pred", "r": "b32", "rd": "b64", "f": "f32"}[cls]
        self.emit(f"mov.{kind} {dst}, {src};")

    def u32(self, v: SSAValue) -> str:
        """An index value as a 32-bit register."""
        r = self.regs.new("r")
        self.emit(f"cvt.u32.u64 {r}, {self.reg(v)};")
        return r

    def true(self) -> str:
        if self.true_pred is None:
            self.true_pred = self.regs.new("p")
            one = self.regs.new("r")
            self.emit(f"mov.u32 {one}, 1;")
            self.emit(f"setp.ne.u32 {self.true_pred}, {one}, 0;")
        return self.true_pred

    def mbarrier_addr(self, bars: SSAValue, index: SSAValue) -> str:
        i = self.u32(index)
        a = self.regs.new("r")
        self.emit(f"shl.b32 {i}, {i}, 3;")
        self.emit(f"add.u32 {a}, {self.reg(bars)}, {i};")
        return a

    def stage_addr(self, buf: SSAValue, stage: SSAValue, extra: SSAValue | None = None, row_bytes: int = 0) -> str:
        t = buf.type
        assert isinstance(t, nvgpu.SmemType)
        stage_bytes = t.num_bytes() // t.get_shape()[0]
        s = self.u32(stage)
        a = self.regs.new("r")
        self.emit(f"mad.lo.u32 {a}, {s}, {stage_bytes}, {self.reg(buf)};")
        if extra is not None:
            e = self.u32(extra)
            self.emit(f"mad.lo.u32 {a}, {e}, {row_bytes}, {a};")
        return a

    # ------------------------------------------------------------------ kernel

    def print(self) -> str:
        name = self.abi.name
        body_start = len(self.lines)
        self._params()
        base = self.regs.new("r")
        self.smem_base = base
        self.emit(f"mov.u32 {base}, {SMEM_SYMBOL};")
        self.emit(f"add.u32 {base}, {base}, 1023;")
        self.emit(f"and.b32 {base}, {base}, -1024;")
        self.true()  # defined up front: branches must not hide its definition
        self.block(self.kernel.body.block)
        body = self.lines[body_start:]
        threads = self.abi.threads
        maxnreg = launch_register_cap(threads)
        params = ",\n".join(f"\t{p.ptx_decl}" for p in self.abi.params)
        head = [
            f".visible .entry {name}(",
            params,
            ")",
            f".reqntid {threads}, 1, 1",
            f".maxnreg {maxnreg}",
            "{",
        ]
        decls = ["\t" + d for d in self.regs.declarations()]
        return "\n".join(head + decls + body + ["}", ""])

    def _params(self) -> None:
        args = self.kernel.body.block.args
        by_arg: dict[int, list] = {}
        for p in self.abi.params:
            by_arg.setdefault(p.arg, []).append(p)
        for i, a in enumerate(args):
            ps = [p for p in by_arg.get(i, []) if p.kind != "tensormap"]
            if isinstance(a.type, MemRefType):
                regs = []
                for p in ps:
                    r = self.regs.new("rd")
                    self.emit(f"ld.param.u64 {r}, [{p.name}];")
                    regs.append(r)
                ptr = regs[0]
                self.emit(f"cvta.to.global.u64 {ptr}, {ptr};")
                self.memrefs[a] = (ptr, regs[1:])
                continue
            (p,) = ps
            r = self.define(a)
            kind = {"index": "u64", "i64": "u64", "i32": "u32", "f32": "f32"}[p.kind]
            self.emit(f"ld.param.{kind} {r}, [{p.name}];")
        self.tmap_params = [p for p in self.abi.params if p.kind == "tensormap"]

    # ------------------------------------------------------------------ ops

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is not None:
            handler(op)
            return
        if type(op) in _INT_BINARY:
            self.int_binary(op)
            return
        raise _unsupported(op)

    def op_func_return(self, op: func.ReturnOp) -> None:
        self.emit("ret;")

    def op_arith_constant(self, op: arith.ConstantOp) -> None:
        v = op.value
        r = self.define(op.result)
        t = op.result.type
        if isinstance(v, IntegerAttr) and isinstance(t, IntegerType) and t.width.data == 1:
            tmp = self.regs.new("r")
            self.emit(f"mov.u32 {tmp}, {1 if v.value.data else 0};")
            self.emit(f"setp.ne.u32 {r}, {tmp}, 0;")
        elif isinstance(v, IntegerAttr):
            self.consts[op.result] = v.value.data
            self.emit(f"mov.u{_int_suffix(t)} {r}, {v.value.data};")
        elif isinstance(v, FloatAttr) and isinstance(t, Float32Type):
            bits = struct.unpack("<I", struct.pack("<f", v.value.data))[0]
            self.emit(f"mov.f32 {r}, 0f{bits:08X};")
        else:
            raise _unsupported(op, f"constants of type {t}")

    def int_binary(self, op: Operation) -> None:
        lhs, rhs = op.operands
        r = self.define(op.results[0])
        t = op.results[0].type
        if isinstance(t, IntegerType) and t.width.data == 1:
            if type(op) not in _PRED_BINARY:
                raise _unsupported(op, "on i1")
            self.emit(f"{_PRED_BINARY[type(op)]} {r}, {self.reg(lhs)}, {self.reg(rhs)};")
            return
        bits = _int_suffix(t)
        c = self.consts.get(rhs)
        # Division by a register is a subroutine call on the GPU: fold
        # constants, and turn powers of two into shifts and masks.
        if c is not None and c > 0 and c & (c - 1) == 0 and type(op) in (arith.DivUIOp, arith.RemUIOp):
            if isinstance(op, arith.DivUIOp):
                self.emit(f"shr.u{bits} {r}, {self.reg(lhs)}, {c.bit_length() - 1};")
            else:
                self.emit(f"and.b{bits} {r}, {self.reg(lhs)}, {c - 1};")
            return
        b = str(c) if c is not None and 0 <= c < 2**31 else self.reg(rhs)
        self.emit(f"{_INT_BINARY[type(op)]}{bits} {r}, {self.reg(lhs)}, {b};")

    def float_binary(self, op: Operation) -> None:
        inst = self._FRAG_BINARY[op.name.removeprefix("arith.")]
        lhs, rhs = op.operands
        self.emit(f"{inst} {self.define(op.results[0])}, {self.reg(lhs)}, {self.reg(rhs)};")

    op_arith_addf = op_arith_subf = op_arith_mulf = op_arith_divf = float_binary
    op_arith_maximumf = op_arith_minimumf = float_binary

    def op_arith_cmpi(self, op: arith.CmpiOp) -> None:
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        t = op.lhs.type
        sign = "s" if pred in _SIGNED else "u"
        r = self.define(op.result)
        self.emit(f"setp.{_CMP[pred]}.{sign}{_int_suffix(t)} {r}, {self.reg(op.lhs)}, {self.reg(op.rhs)};")

    def op_arith_index_cast(self, op: arith.IndexCastOp) -> None:
        r = self.define(op.result)
        src, dst = op.input.type, op.result.type
        if isinstance(dst, IndexType):
            self.emit(f"cvt.s64.s{_int_suffix(src)} {r}, {self.reg(op.input)};")
        else:
            self.emit(f"cvt.u{_int_suffix(dst)}.u64 {r}, {self.reg(op.input)};")

    def op_arith_select(self, op: arith.SelectOp) -> None:
        r = self.define(op.result)
        cls = _reg_class(op.result.type)
        kind = {"r": "b32", "rd": "b64", "f": "f32"}[cls]
        self.emit(f"selp.{kind} {r}, {self.reg(op.lhs)}, {self.reg(op.rhs)}, {self.reg(op.cond)};")

    # ------------------------------------------------------------------ scf

    def op_scf_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv = self.define(body.args[0])
        self.emit(f"mov.u64 {iv}, {self.reg(op.lb)};")
        for arg, init in zip(body.args[1:], op.iter_args):
            self.copy(self.define_like(arg), self.vals[init], arg.type)
        head, end = self.label("for_head"), self.label("for_end")
        done = self.regs.new("p")
        self.lines.append(f"{head}:")
        self.emit(f"setp.ge.s64 {done}, {iv}, {self.reg(op.ub)};")
        self.emit(f"@{done} bra {end};")
        for inner in body.ops:
            if isinstance(inner, scf.YieldOp):
                self._parallel_copy(list(body.args[1:]), list(inner.operands))
            else:
                self.op(inner)
        self.emit(f"add.s64 {iv}, {iv}, {self.reg(op.step)};")
        self.emit(f"bra {head};")
        self.lines.append(f"{end}:")
        for res, arg in zip(op.results, body.args[1:]):
            self.vals[res] = self.vals[arg]

    def _parallel_copy(self, dsts: Sequence[SSAValue], srcs: Sequence[SSAValue]) -> None:
        """Copies srcs into the registers of dsts, through temporaries when a
        source register is also overwritten by another copy (swapped iter_args)."""
        moves = [(d, s) for d, s in zip(dsts, srcs) if self.vals[d] != self.vals[s]]
        written = {self._key(self.vals[d]) for d, _ in moves}
        staged = []
        for d, s in moves:
            src = self.vals[s]
            if self._key(src) in written:
                tmp = self.define_like_value(s)
                self.copy(tmp, src, s.type)
                src = tmp
            staged.append((d, src, s.type))
        for d, src, t in staged:
            self.copy(self.vals[d], src, t)

    @staticmethod
    def _key(r: str | list[str]) -> str:
        return r if isinstance(r, str) else r[0]

    def define_like_value(self, v: SSAValue) -> str | list[str]:
        """Fresh registers for a value of v's type (v keeps its own)."""
        if isinstance(v.type, nvgpu.FragmentType):
            return [self.regs.new(_frag_class(v.type)) for _ in range(v.type.registers())]
        return self.regs.new(_reg_class(v.type))

    def op_scf_if(self, op: scf.IfOp) -> None:
        results = [self.define_like(r) for r in op.results]
        del results
        els, end = self.label("else"), self.label("endif")
        self.emit(f"@!{self.reg(op.cond)} bra {els};")
        self._branch(op.true_region.block, op)
        self.emit(f"bra {end};")
        self.lines.append(f"{els}:")
        if op.false_region.blocks:
            self._branch(op.false_region.block, op)
        self.lines.append(f"{end}:")

    def _branch(self, block: Block, op: scf.IfOp) -> None:
        for inner in block.ops:
            if isinstance(inner, scf.YieldOp):
                for res, v in zip(op.results, inner.operands):
                    self.copy(self.vals[res], self.vals[v], res.type)
            else:
                self.op(inner)

    # ------------------------------------------------------------------ nvgpu: ids, memory

    def _special(self, op: Operation, src: str, shift: int = 0, mask: int | None = None) -> None:
        t = self.regs.new("r")
        self.emit(f"mov.u32 {t}, {src};")
        if shift:
            self.emit(f"shr.u32 {t}, {t}, {shift};")
        if mask is not None:
            self.emit(f"and.b32 {t}, {t}, {mask};")
        self.emit(f"cvt.u64.u32 {self.define(op.results[0])}, {t};")

    def op_nvgpu_thread_id(self, op: Operation) -> None:
        self._special(op, "%tid.x")

    def op_nvgpu_lane_id(self, op: Operation) -> None:
        self._special(op, "%laneid")

    def op_nvgpu_warp_id(self, op: Operation) -> None:
        self._special(op, "%tid.x", 5)

    def op_nvgpu_warp_group_id(self, op: Operation) -> None:
        self._special(op, "%tid.x", 7)

    def op_nvgpu_block_id(self, op: nvgpu.BlockIdOp) -> None:
        self._special(op, "%ctaid." + "xyz"[op.axis.value.data])

    def op_nvgpu_grid_dim(self, op: nvgpu.GridDimOp) -> None:
        self._special(op, "%nctaid." + "xyz"[op.axis.value.data])

    def op_nvgpu_launch_grid(self, op: nvgpu.LaunchGridOp) -> None:
        self.emit(f"ld.param.u64 {self.define(op.result)}, [grid{op.axis.value.data}];")

    def op_nvgpu_elect_one(self, op: nvgpu.ElectOneOp) -> None:
        self.emit(f"elect.sync _|{self.define(op.result)}, 0xffffffff;")

    def op_nvgpu_smem_alloc(self, op: nvgpu.SmemAllocOp) -> None:
        self.emit(f"add.u32 {self.define(op.result)}, {self.smem_base}, {op.offset.value.data};")

    def op_nvgpu_tma_descriptor(self, op: nvgpu.TmaDescriptorOp) -> None:
        p = self.tmap_params[self.tmap_index]
        self.tmap_index += 1
        r = self.define(op.result)
        self.emit(f"mov.b64 {r}, {p.name};")
        self.emit(f"cvta.param.u64 {r}, {r};")

    def op_nvgpu_mbarrier_init(self, op: nvgpu.MBarrierInitOp) -> None:
        a = self.mbarrier_addr(op.barriers, op.index)
        self.emit(f"mbarrier.init.shared::cta.b64 [{a}], {op.count.value.data};")

    def op_nvgpu_mbarrier_arrive(self, op: nvgpu.MBarrierArriveOp) -> None:
        a = self.mbarrier_addr(op.barriers, op.index)
        self.emit(f"mbarrier.arrive.shared::cta.b64 _, [{a}];")

    def op_nvgpu_mbarrier_arrive_expect_tx(self, op: nvgpu.MBarrierArriveExpectTxOp) -> None:
        a = self.mbarrier_addr(op.barriers, op.index)
        self.emit(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{a}], {op.bytes.value.data};")

    def op_nvgpu_mbarrier_try_wait_parity(self, op: nvgpu.MBarrierTryWaitParityOp) -> None:
        a = self.mbarrier_addr(op.barriers, op.index)
        par = self.u32(op.parity)
        self.emit(f"mbarrier.try_wait.parity.shared::cta.b64 {self.define(op.result)}, [{a}], {par};")

    def op_nvgpu_mbarrier_wait_parity(self, op: nvgpu.MBarrierWaitParityOp) -> None:
        a = self.mbarrier_addr(op.barriers, op.index)
        par = self.u32(op.parity)
        ok = self.regs.new("p")
        again = self.label("wait")
        self.lines.append(f"{again}:")
        self.emit(f"mbarrier.try_wait.parity.shared::cta.b64 {ok}, [{a}], {par};")
        self.emit(f"@!{ok} bra {again};")

    def op_nvgpu_fence_mbarrier_init(self, op: Operation) -> None:
        self.emit("fence.mbarrier_init.release.cluster;")

    def op_nvgpu_fence_proxy_async(self, op: Operation) -> None:
        self.emit("fence.proxy.async.shared::cta;")

    def op_nvgpu_named_barrier_sync(self, op: nvgpu.NamedBarrierSyncOp) -> None:
        self.emit(f"bar.sync {op.barrier_id.value.data}, {op.num_threads.value.data};")

    def op_nvgpu_named_barrier_arrive(self, op: nvgpu.NamedBarrierArriveOp) -> None:
        self.emit(f"bar.arrive {op.barrier_id.value.data}, {op.num_threads.value.data};")

    def op_nvgpu_setmaxnreg(self, op: nvgpu.SetMaxNRegOp) -> None:
        self.emit(f"setmaxnreg.{op.action.data.value}.sync.aligned.u32 {op.count.value.data};")

    def _coords(self, coords: Sequence[SSAValue]) -> str:
        regs = [self.u32(c) for c in reversed(coords)]  # PTX wants innermost first
        return "{" + ", ".join(regs) + "}"

    def _chunks(self, smem: SSAValue, coords: Sequence[SSAValue], base: str):
        """(shared address, coordinate list) of each column chunk of a tile
        (one TMA box per chunk; see nvgpu.SmemType.chunk_columns)."""
        t = smem.type
        assert isinstance(t, nvgpu.SmemType)
        w = t.chunk_columns()
        chunks = t.get_shape()[-1] // w
        chunk_bytes = t.num_bytes() // t.get_shape()[0] // chunks
        inner = self.u32(coords[-1])
        outer = [self.u32(c) for c in reversed(coords[:-1])]
        for c in range(chunks):
            addr, col = base, inner
            if c:
                addr, col = self.regs.new("r"), self.regs.new("r")
                self.emit(f"add.u32 {addr}, {base}, {c * chunk_bytes};")
                self.emit(f"add.u32 {col}, {inner}, {c * w};")
            yield addr, "{" + ", ".join([col, *outer]) + "}"  # innermost first

    def op_nvgpu_tma_load(self, op: nvgpu.TmaLoadOp) -> None:
        dst = self.stage_addr(op.dest, op.stage)
        bar = self.mbarrier_addr(op.barriers, op.barrier_index)
        rank = len(op.coords)
        for addr, coords in self._chunks(op.dest, op.coords, dst):
            self.emit(
                f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                f"[{addr}], [{self.reg(op.desc)}, {coords}], [{bar}];"
            )

    def op_nvgpu_tma_store(self, op: nvgpu.TmaStoreOp) -> None:
        src = self.stage_addr(op.source, op.stage)
        rank = len(op.coords)
        for addr, coords in self._chunks(op.source, op.coords, src):
            self.emit(
                f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group "
                f"[{self.reg(op.desc)}, {coords}], [{addr}];"
            )
        self.emit("cp.async.bulk.commit_group;")

    def op_nvgpu_tma_store_wait(self, op: nvgpu.TmaStoreWaitOp) -> None:
        self.emit(f"cp.async.bulk.wait_group.read {op.pending.value.data};")

    # ------------------------------------------------------------------ nvgpu: wgmma

    def op_nvgpu_wgmma_descriptor(self, op: nvgpu.WgmmaDescriptorOp) -> None:
        t = op.source.type
        assert isinstance(t, nvgpu.SmemType)
        if t.swizzle.data != 128:
            raise _unsupported(op, "only 128B-swizzled tiles")
        # Rows are 128 bytes within a column chunk; chunks are rows x 128 bytes.
        chunk_bytes = t.get_shape()[1] * 128
        addr = self.stage_addr(op.source, op.stage, op.row, 128)
        d = self.define(op.result)
        self.chunk_bytes[op.result] = chunk_bytes
        # Leading byte offset = the distance between column chunks: the next
        # 64 MN elements of an MN-major operand (ignored for K-major ones).
        hi = DESC_HI_SW128 | ((chunk_bytes >> 4) << 16)
        self.emit(f"cvt.u64.u32 {d}, {addr};")
        self.emit(f"and.b64 {d}, {d}, 262143;")
        self.emit(f"shr.u64 {d}, {d}, 4;")
        self.emit(f"or.b64 {d}, {d}, {hi};")

    def _k_offsets(self, desc: SSAValue, steps: int, k_major: bool) -> list[int]:
        """Byte offsets of the k-steps (32 bytes of K each) of a descriptor:
        along a 128-byte row, then to the next column chunk (K-major); or 16
        rows of 128 bytes further (MN-major)."""
        if not k_major:
            return [j * 16 * 128 for j in range(steps)]
        chunk = self.chunk_bytes[desc]
        return [(j * 32) // 128 * chunk + (j * 32) % 128 for j in range(steps)]

    def op_nvgpu_wgmma(self, op: nvgpu.WgmmaOp) -> None:
        lt, rt = op.lhs.type, op.rhs.type
        assert isinstance(rt, nvgpu.WgmmaDescriptorType)
        a_in_registers = isinstance(lt, nvgpu.FragmentType)
        et = lt.element_type
        rhs_k_major = op.rhs_transposed is not None
        n = rt.get_shape()[0] if rhs_k_major else rt.get_shape()[1]
        k = lt.get_shape()[1]
        if isinstance(et, Float8E4M3FNType):
            kstep, kind, tail = 32, "e4m3.e4m3", ", 1, 1"
        elif isinstance(et, BFloat16Type | Float16Type) and a_in_registers:
            # A in registers: no imm-trans-a; imm-trans-b = 1 for an MN-major B.
            kstep, kind, tail = 16, f"{et}.{et}", f", 1, 1, {0 if rhs_k_major else 1}"
        elif isinstance(et, BFloat16Type | Float16Type):
            # imm-trans-a = 0 (A is K-major); imm-trans-b = 1 for an MN-major B.
            kstep, kind, tail = 16, f"{et}.{et}", f", 1, 1, 0, {0 if rhs_k_major else 1}"
        else:
            raise _unsupported(op, f"{et} operands")
        acc = self.frag(op.acc)
        if op.acc.has_one_use():
            dst = acc
        else:
            dst = self.define_like_value(op.acc)
            self.copy(dst, acc, op.acc.type)
        self.vals[op.result] = dst
        regs = "{" + ", ".join(dst) + "}"
        db = self.reg(op.rhs)
        steps = k // kstep
        offsets_b = self._k_offsets(op.rhs, steps, rhs_k_major)
        if a_in_registers:
            a_regs = self.frag(op.lhs)
        else:
            da = self.reg(op.lhs)
            offsets_a = self._k_offsets(op.lhs, steps, True)
        for j in range(steps):
            db_j = db
            if a_in_registers:
                # k16 block j of the A operand: 4 registers of bf16 pairs.
                da_j = "{" + ", ".join(a_regs[4 * j : 4 * j + 4]) + "}"
            # Offsets enter the descriptor's (address >> 4) field.
            elif offsets_a[j]:
                da_j = self.regs.new("rd")
                self.emit(f"add.s64 {da_j}, {da}, {offsets_a[j] >> 4};")
            else:
                da_j = da
            if offsets_b[j]:
                db_j = self.regs.new("rd")
                self.emit(f"add.s64 {db_j}, {db}, {offsets_b[j] >> 4};")
            scale_d = self.reg(op.accumulate) if j == 0 else self.true()
            self.emit(
                f"wgmma.mma_async.sync.aligned.m64n{n}k{kstep}.f32.{kind} "
                f"{regs}, {da_j}, {db_j}, {scale_d}{tail};"
            )

    def op_nvgpu_wgmma_fence(self, op: Operation) -> None:
        self.emit("wgmma.fence.sync.aligned;")

    def op_nvgpu_wgmma_commit_group(self, op: Operation) -> None:
        self.emit("wgmma.commit_group.sync.aligned;")

    def op_nvgpu_wgmma_wait_group(self, op: nvgpu.WgmmaWaitGroupOp) -> None:
        self.emit(f"wgmma.wait_group.sync.aligned {op.pending.value.data};")
        for res, v in zip(op.results_, op.fragments):
            self.vals[res] = self.vals[v]

    def op_nvgpu_frag_zeros(self, op: nvgpu.FragmentZerosOp) -> None:
        for r in self.define_frag(op.result):
            self.emit(f"mov.f32 {r}, 0f00000000;")

    _FRAG_BINARY = {
        "addf": "add.f32", "subf": "sub.f32", "mulf": "mul.f32",
        "divf": "div.rn.f32", "maximumf": "max.NaN.f32", "minimumf": "min.NaN.f32",
        "addi": "add.s32", "subi": "sub.s32", "muli": "mul.lo.s32",
        "andi": "and.b32", "ori": "or.b32",
    }

    def op_nvgpu_frag_binary(self, op: nvgpu.FragmentBinaryOp) -> None:
        inst = self._FRAG_BINARY[op.kind.data.value]
        t = op.lhs.type
        assert isinstance(t, nvgpu.FragmentType)
        if t.element_type == i1:
            inst = inst.replace(".b32", ".pred")
        lhs = self.frag(op.lhs)
        rhs = self.vals[op.rhs]
        for i, d in enumerate(self.define_frag(op.result)):
            b = rhs[i] if isinstance(rhs, list) else rhs
            self.emit(f"{inst} {d}, {lhs[i]}, {b};")

    def op_nvgpu_frag_unary(self, op: nvgpu.FragmentUnaryOp) -> None:
        inst = {"exp2": "ex2.approx.ftz.f32", "negf": "neg.f32"}[op.kind.data.value]
        src = self.frag(op.input)
        for s_reg, d in zip(src, self.define_frag(op.result)):
            self.emit(f"{inst} {d}, {s_reg};")

    def op_nvgpu_frag_convert(self, op: nvgpu.FragmentConvertOp) -> None:
        t = op.result.type
        assert isinstance(t, nvgpu.FragmentType)
        cvt = "cvt.rn.bf16x2.f32" if isinstance(t.element_type, BFloat16Type) else "cvt.rn.f16x2.f32"
        src = self.frag(op.input)
        for i, d in enumerate(self.define_frag(op.result)):
            # The first source goes to the upper half: column 2i+1 above 2i.
            self.emit(f"{cvt} {d}, {src[2 * i + 1]}, {src[2 * i]};")

    def op_nvgpu_frag_index(self, op: nvgpu.FragmentIndexOp) -> None:
        # row(i) = 16*warp + lane/4 + 8*((i/2)%2); col(i) = 8*(i/4) + 2*(lane%4) + i%2
        t = self.regs.new("r")
        self.emit(f"mov.u32 {t}, %tid.x;")
        self.emit(f"and.b32 {t}, {t}, 127;")
        base = self.regs.new("r")
        if op.axis.data.value == "row":
            w = self.regs.new("r")
            self.emit(f"shr.u32 {w}, {t}, 5;")
            self.emit(f"bfe.u32 {base}, {t}, 2, 3;")
            self.emit(f"mad.lo.u32 {base}, {w}, 16, {base};")
            offset = lambda i: 8 * ((i // 2) % 2)  # noqa: E731
        else:
            self.emit(f"and.b32 {base}, {t}, 3;")
            self.emit(f"shl.b32 {base}, {base}, 1;")
            offset = lambda i: 8 * (i // 4) + i % 2  # noqa: E731
        for i, d in enumerate(self.define_frag(op.result)):
            self.emit(f"add.s32 {d}, {base}, {offset(i)};")

    def op_nvgpu_frag_cmpi(self, op: nvgpu.FragmentCmpIOp) -> None:
        pred = op.predicate.data.value
        sign = "s" if pred in _SIGNED else "u"
        lhs, rhs = self.frag(op.lhs), self.vals[op.rhs]
        for i, d in enumerate(self.define_frag(op.result)):
            b = rhs[i] if isinstance(rhs, list) else rhs
            self.emit(f"setp.{_CMP[pred]}.{sign}32 {d}, {lhs[i]}, {b};")

    def op_nvgpu_frag_select(self, op: nvgpu.FragmentSelectOp) -> None:
        mask, on_true, on_false = self.frag(op.mask), self.frag(op.true_value), self.vals[op.false_value]
        for i, d in enumerate(self.define_frag(op.result)):
            f = on_false[i] if isinstance(on_false, list) else on_false
            self.emit(f"selp.f32 {d}, {on_true[i]}, {f}, {mask[i]};")

    def op_nvgpu_frag_splat(self, op: nvgpu.FragmentSplatOp) -> None:
        for d in self.define_frag(op.result):
            self.emit(f"mov.f32 {d}, {self.reg(op.value)};")

    def op_nvgpu_frag_reduce(self, op: nvgpu.FragmentReduceOp) -> None:
        # Register i of a wgmma fragment is in the thread's row (i/2)%2.
        inst = "max.NaN.f32" if op.kind.data.value == "max" else "add.f32"
        src = self.frag(op.input)
        out = self.define_frag(op.result)
        tmp = self.regs.new("f")
        for row, acc in enumerate(out):
            mine = [r for i, r in enumerate(src) if (i // 2) % 2 == row]
            self.emit(f"mov.f32 {acc}, {mine[0]};")
            for r in mine[1:]:
                self.emit(f"{inst} {acc}, {acc}, {r};")
            # The 4 threads of a quad (lanes differing in their 2 low bits) share the row.
            for lane_mask in (1, 2):
                self.emit(f"shfl.sync.bfly.b32 {tmp}, {acc}, {lane_mask}, 31, -1;")
                self.emit(f"{inst} {acc}, {acc}, {tmp};")

    def op_nvgpu_frag_broadcast(self, op: nvgpu.FragmentBroadcastOp) -> None:
        rows = self.frag(op.input)
        for i, d in enumerate(self.define_frag(op.result)):
            self.emit(f"mov.f32 {d}, {rows[(i // 2) % 2]};")

    def op_nvgpu_frag_store(self, op: nvgpu.FragmentStoreOp) -> None:
        FragmentStore(self, op).emit_all()


class FragmentStore:
    """The epilogue store of a 64xN wgmma accumulator fragment: each thread
    converts pairs of adjacent columns to a 16-bit pair and stores them, with
    row and column bounds checks (and 2-byte stores where a pair straddles the
    last column or the row length is odd)."""

    def __init__(self, p: KernelPrinter, op: nvgpu.FragmentStoreOp):
        self.p, self.op = p, op

    def emit_all(self) -> None:
        p, op = self.p, self.op
        mt = op.dest.type
        assert isinstance(mt, MemRefType)
        et = mt.get_element_type()
        if isinstance(et, BFloat16Type):
            cvt = "cvt.rn.bf16x2.f32"
        elif isinstance(et, Float16Type):
            cvt = "cvt.rn.f16x2.f32"
        else:
            raise _unsupported(op, f"stores of {et} (bf16 and f16 only for now)")
        ptr, dims = p.memrefs[op.dest]
        rows_dim, cols_dim = dims[-2], dims[-1]
        regs = p.frag(op.fragment)
        t = p.regs.new("r")
        p.emit(f"mov.u32 {t}, %tid.x;")
        p.emit(f"and.b32 {t}, {t}, 127;")
        warp, lane = p.regs.new("r"), p.regs.new("r")
        p.emit(f"shr.u32 {warp}, {t}, 5;")
        p.emit(f"and.b32 {lane}, {t}, 31;")
        # row = row0 + 16*warp + lane/4 ; col = col0 + 2*(lane%4)
        tr, tc = p.regs.new("r"), p.regs.new("r")
        p.emit(f"shr.u32 {tr}, {lane}, 2;")
        p.emit(f"mad.lo.u32 {tr}, {warp}, 16, {tr};")
        p.emit(f"and.b32 {tc}, {lane}, 3;")
        p.emit(f"shl.b32 {tc}, {tc}, 1;")
        row, col = p.regs.new("rd"), p.regs.new("rd")
        tmp = p.regs.new("rd")
        p.emit(f"cvt.u64.u32 {tmp}, {tr};")
        p.emit(f"add.s64 {row}, {p.reg(op.offsets[-2])}, {tmp};")
        p.emit(f"cvt.u64.u32 {tmp}, {tc};")
        p.emit(f"add.s64 {col}, {p.reg(op.offsets[-1])}, {tmp};")
        # Leading dims (rank > 2) only offset the base pointer.
        lin = p.regs.new("rd")
        p.emit(f"mov.u64 {lin}, 0;")
        for off, dim in zip(op.offsets[:-2], dims[:-2]):
            p.emit(f"mul.lo.s64 {lin}, {lin}, {dim};")
            p.emit(f"add.s64 {lin}, {lin}, {p.reg(off)};")
        p.emit(f"mul.lo.s64 {lin}, {lin}, {rows_dim};")
        p.emit(f"add.s64 {lin}, {lin}, {row};")
        p.emit(f"mad.lo.s64 {lin}, {lin}, {cols_dim}, {col};")
        addr0 = p.regs.new("rd")
        p.emit(f"mad.lo.s64 {addr0}, {lin}, 2, {ptr};")
        addr8 = p.regs.new("rd")
        p.emit(f"mul.lo.s64 {tmp}, {cols_dim}, 16;")
        p.emit(f"add.s64 {addr8}, {addr0}, {tmp};")
        row_ok = []
        for dr in (0, 8):
            r8, ok = p.regs.new("rd"), p.regs.new("p")
            p.emit(f"add.s64 {r8}, {row}, {dr};")
            p.emit(f"setp.lt.u64 {ok}, {r8}, {rows_dim};")
            row_ok.append(ok)
        even = p.regs.new("p")
        p.emit(f"and.b64 {tmp}, {cols_dim}, 1;")
        p.emit(f"setp.eq.u64 {even}, {tmp}, 0;")
        n_pairs = len(regs) // 2
        # Fast path: every element of this thread is in bounds (interior
        # tiles, all but the ragged edges): no predicates.
        last, inside = p.regs.new("rd"), p.regs.new("p")
        p.emit(f"add.s64 {last}, {col}, {8 * (n_pairs // 2 - 1) + 1};")
        p.emit(f"setp.lt.u64 {inside}, {last}, {cols_dim};")
        p.emit(f"and.pred {inside}, {inside}, {row_ok[1]};")
        p.emit(f"and.pred {inside}, {inside}, {even};")
        slow, done = p.label("store_edge"), p.label("store_done")
        v = p.regs.new("r")
        p.emit(f"@!{inside} bra {slow};")
        for pair in range(n_pairs):
            i, dc = 2 * pair, 8 * (pair // 2)
            p.emit(f"{cvt} {v}, {regs[i + 1]}, {regs[i]};")
            p.emit(f"st.global.b32 [{addr8 if pair % 2 else addr0}+{2 * dc}], {v};")
        p.emit(f"bra {done};")
        p.lines.append(f"{slow}:")
        self.emit_edge(regs, cvt, col, cols_dim, row_ok, even, addr0, addr8, v)
        p.lines.append(f"{done}:")

    def emit_edge(self, regs, cvt, col, cols_dim, row_ok, even, addr0, addr8, v) -> None:
        """Every pair with its own row and column checks; a pair that
        straddles the last column (or an odd row length) is stored as two
        2-byte halves."""
        p = self.p
        c1, c2 = p.regs.new("rd"), p.regs.new("rd")
        ok1, ok2, both, lo_ok, hi_ok, nboth = (p.regs.new("p") for _ in range(6))
        lo, hi = p.regs.new("h"), p.regs.new("h")
        for pair in range(len(regs) // 2):
            i = 2 * pair
            dr = pair % 2
            dc = 8 * (pair // 2)
            base = addr8 if dr else addr0
            p.emit(f"add.s64 {c1}, {col}, {dc};")
            p.emit(f"add.s64 {c2}, {col}, {dc + 1};")
            p.emit(f"setp.lt.u64 {ok1}, {c1}, {cols_dim};")
            p.emit(f"setp.lt.u64 {ok2}, {c2}, {cols_dim};")
            p.emit(f"and.pred {both}, {ok2}, {row_ok[dr]};")
            p.emit(f"and.pred {both}, {both}, {even};")
            p.emit(f"not.pred {nboth}, {both};")
            p.emit(f"and.pred {lo_ok}, {ok1}, {row_ok[dr]};")
            p.emit(f"and.pred {lo_ok}, {lo_ok}, {nboth};")
            p.emit(f"and.pred {hi_ok}, {ok2}, {row_ok[dr]};")
            p.emit(f"and.pred {hi_ok}, {hi_ok}, {nboth};")
            p.emit(f"{cvt} {v}, {regs[i + 1]}, {regs[i]};")
            p.emit(f"@{both} st.global.b32 [{base}+{2 * dc}], {v};")
            p.emit(f"mov.b32 {{{lo}, {hi}}}, {v};")
            p.emit(f"@{lo_ok} st.global.b16 [{base}+{2 * dc}], {lo};")
            p.emit(f"@{hi_ok} st.global.b16 [{base}+{2 * dc + 2}], {hi};")


def print_ptx(module: ModuleOp) -> str:
    """PTX for every lowered kernel of `module` (functions with `nvgpu.threads`)."""
    kernels = [
        o for o in module.walk()
        if isinstance(o, func.FuncOp) and "nvgpu.threads" in o.attributes
    ]
    if not kernels:
        raise TawaError(
            "the module has no lowered kernel to print as PTX (run -p tawa-hopper-pipeline first)",
            "tawa-opt -t ptx",
        )
    out = [
        "// Generated by tawa",
        f".version {PTX_VERSION}",
        f".target {SM}",
        ".address_size 64",
        "",
        f".extern .shared .align 16 .b8 {SMEM_SYMBOL}[];",
        "",
    ]
    for k in kernels:
        out.append(KernelPrinter(k).print())
    return "\n".join(out)
