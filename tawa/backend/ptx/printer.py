"""PTX printer: prepared kernels (func + arith + cf + nvgpu) to sm_90a PTX text.

The printer only prints.  It may
* choose registers: every value lives in a virtual register (ptxas
  allocates) — `index` and 64-bit integers in `%rd`, 32-bit integers and
  shared-memory addresses in `%r`, `i1` in `%p`, f32 in `%f`; a fragment is
  a list of registers (N/2 `%f` per thread for a 64xN f32 accumulator);
* spell each op as its PTX instruction(s), a fixed sequence per op;
* print integer constants as immediates where an operand may be one;
* copy block arguments at branches (a parallel copy, through temporaries
  where sources and destinations overlap), and let ops that update in place
  (wgmma) or only order (wgmma_wait_group) reuse their operand's registers.

It may not decide anything a pass could: loops, divisions, descriptor
fields and offsets, shared-memory addresses and swizzles, TMA boxes, the
watchdog's report, bounds and fast paths are IR by the time it runs
(`tawa-prepare-ptx`, ending `tawa-hopper-pipeline`).  An op without an
emitter is an error that names the pass that removes it.

Emitters live in one module per op family (`emit_arith`, `emit_control`,
`emit_memory`, `emit_wgmma`, `emit_fragments`, `emit_shared`,
`emit_system`); each exports `EMITTERS`, a
map from op class to `emit(p: KernelPrinter, op)`.  The calling convention
is `tawa.backend.ptx.abi`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IndexType, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from tawa.backend.ptx import (
    emit_arith,
    emit_control,
    emit_fragments,
    emit_memory,
    emit_shared,
    emit_system,
    emit_wgmma,
)
from tawa.backend.ptx.abi import KernelABI, kernel_abi
from tawa.diagnostics import TawaError, location_of
from tawa.dialects import nvgpu
from tawa.target.hopper import ARCH, PTX_VERSION, SMEM_ALIGN_SLACK, launch_register_cap

SMEM_SYMBOL = "tawa_smem"

EMITTERS: dict[type[Operation], Callable] = {
    **emit_arith.EMITTERS,
    **emit_control.EMITTERS,
    **emit_memory.EMITTERS,
    **emit_wgmma.EMITTERS,
    **emit_fragments.EMITTERS,
    **emit_shared.EMITTERS,
    **emit_system.EMITTERS,
}
"""The emitter of every op the printer prints."""

PREPARED_BY: dict[str, str] = {
    "nvgpu.frag_store": "tawa-expand-fragment-stores",
    "nvgpu.frag_load": "tawa-expand-fragment-stores",
    "nvgpu.frag_atomic_add": "tawa-expand-fragment-stores",
    "nvgpu.frag_load_shared": "tawa-expand-shared-accesses",
    "nvgpu.frag_store_shared": "tawa-expand-shared-accesses",
    "nvgpu.tma_load": "tawa-split-tma-chunks",
    "nvgpu.tma_store": "tawa-split-tma-chunks",
    "nvgpu.wgmma": "tawa-expand-wgmma",
    "nvgpu.wgmma_descriptor": "tawa-encode-wgmma-descriptors",
    "scf.for": "convert-scf-to-cf",
    "scf.if": "convert-scf-to-cf",
    "scf.index_switch": "convert-scf-to-cf",
}
"""Ops that a pass must remove before printing, and that pass (each runs in
`tawa-hopper-pipeline`; all but `tawa-expand-fragment-stores` in its last
stage, `tawa-prepare-ptx`)."""


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
        return "r" if t.register_bits() == 32 else "h"  # bf16/f16 pairs, fp8 pairs
    if isinstance(t.element_type, BFloat16Type | Float16Type):
        return "h"  # one 16-bit value
    return _reg_class(t.element_type)


_UNLESS_UNUSED = "\0"
_REGISTER = re.compile(r"%[a-z]+\d+")
_MOV = {"p": "pred", "h": "b16", "r": "b32", "rd": "b64", "f": "f32"}


class KernelPrinter:
    """Prints one prepared kernel."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        self.abi: KernelABI = kernel_abi(kernel)
        self.regs = _Regs()
        self.lines: list[str] = []
        self.vals: dict[SSAValue, str | list[str]] = {}
        self.memrefs: dict[SSAValue, tuple[str, list[str]]] = {}
        self.strides: dict[SSAValue, list[str]] = {}
        """The stride parameters of a memref the kernel addresses (outer
        dimensions): each `nvgpu.memref_stride` loads its own where it is
        (a constant-bank read), so no stride is held in a register across
        a persistent kernel's loop over programs."""
        self.labels = 0
        self.block_labels: dict[Block, str] = {}
        self.next_block: Block | None = None
        """The block printed after the current one (a branch to it falls through)."""
        self.tmap_index = 0
        self.consts: dict[SSAValue, int] = {}
        """Integer constants: printed as immediates where an operand may be one."""
        self._block_positions: dict[Block, dict[Operation, int]] = {}

    unsupported = staticmethod(_unsupported)
    reg_class = staticmethod(_reg_class)

    # ------------------------------------------------------------------ registers

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def emit_unless_unused(self, reg: str, line: str) -> None:
        """`line` defines `reg`; it is dropped if no other line reads `reg`
        (an integer constant that every user took as an immediate)."""
        self.lines.append(f"{_UNLESS_UNUSED}{reg}{_UNLESS_UNUSED}\t{line}")

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
        cls = _frag_class(t)
        regs = [self.regs.new(cls) for _ in range(t.registers())]
        self.vals[v] = regs
        return regs

    def define_like(self, v: SSAValue) -> str | list[str]:
        return self.define_frag(v) if isinstance(v.type, nvgpu.FragmentType) else self.define(v)

    def define_like_value(self, v: SSAValue) -> str | list[str]:
        """Fresh registers for a value of v's type (v keeps its own)."""
        if isinstance(v.type, nvgpu.FragmentType):
            cls = _frag_class(v.type)
            return [self.regs.new(cls) for _ in range(v.type.registers())]
        return self.regs.new(_reg_class(v.type))

    def copy(self, dst: str | list[str], src: str | list[str], t: Attribute) -> None:
        if isinstance(dst, list):
            assert isinstance(src, list) and isinstance(t, nvgpu.FragmentType)
            kind = _MOV[_frag_class(t)]
            for d, s in zip(dst, src):
                if d != s:
                    self.emit(f"mov.{kind} {d}, {s};")
            return
        if dst != src:
            self.emit(f"mov.{_MOV[_reg_class(t)]} {dst}, {src};")

    def parallel_copy(self, dsts: Sequence[SSAValue], srcs: Sequence[SSAValue]) -> None:
        """Copies srcs into the registers of dsts as if all at once: a move
        goes first when no pending move still reads its destination; a cycle
        (swapped values) is broken by saving one source in a temporary."""
        moves = [(self.vals[d], self.vals[s], s) for d, s in zip(dsts, srcs) if self.vals[d] != self.vals[s]]
        while moves:
            read = {self._key(src) for _, src, _ in moves}
            ready = [m for m in moves if self._key(m[0]) not in read]
            if not ready:
                dst, src, v = moves[0]
                tmp = self.define_like_value(v)
                self.copy(tmp, src, v.type)
                moves[0] = (dst, tmp, v)
                continue
            for m in ready:
                self.copy(m[0], m[1], m[2].type)
                moves.remove(m)

    @staticmethod
    def _key(r: str | list[str]) -> str:
        return r if isinstance(r, str) else r[0]

    def dead_after(self, op: Operation, v: SSAValue) -> bool:
        """Whether no use of v, or of a value sharing its registers, can run
        after `op` (so `op` may overwrite those registers).  A use counts when
        it follows `op` in its block or sits in a block reachable from there
        without passing v's defining block (which defines it anew).  Read
        from the values' uses, not by scanning the blocks' ops."""
        regs = self.vals[v]
        values = [w for w, r in self.vals.items() if r == regs]
        block = op.parent_block()
        assert block is not None
        users = [u.operation for w in values for u in w.uses]
        if not users:
            return True
        position = self._positions(block)
        here = position[op]
        if any(o.parent_block() is block and position[o] > here for o in users):
            return False
        defs = {w.block if isinstance(w, BlockArgument) else w.owner.parent_block() for w in values}
        seen: set[Block] = set()
        pending = [s for s in block.last_op.successors] if block.last_op else []
        while pending:
            b = pending.pop()
            if b in seen or b in defs:
                continue
            seen.add(b)
            pending += b.last_op.successors if b.last_op else []
        return not any(o.parent_block() in seen for o in users)

    def _positions(self, block: Block) -> dict[Operation, int]:
        """Each op's index in `block` (blocks do not change while printing)."""
        found = self._block_positions.get(block)
        if found is None:
            found = self._block_positions[block] = {o: i for i, o in enumerate(block.ops)}
        return found

    def u32(self, v: SSAValue) -> str:
        """An index value as a 32-bit register."""
        r = self.regs.new("r")
        self.emit(f"cvt.u32.u64 {r}, {self.reg(v)};")
        return r

    def block_label(self, block: Block) -> str:
        if block not in self.block_labels:
            self.block_labels[block] = self.label("bb")
        return self.block_labels[block]

    def branch_args(self, block: Block, values: Sequence[SSAValue]) -> None:
        """Copies `values` into the registers of `block`'s arguments (defined
        by the first branch that reaches it)."""
        for a in block.args:
            if a not in self.vals:
                self.define_like(a)
        self.parallel_copy(list(block.args), list(values))

    # ------------------------------------------------------------------ kernel

    def print(self) -> str:
        body_start = len(self.lines)
        self._params()
        base = self.regs.new("r")
        self.smem_base = base
        # The dynamic shared-memory base is only 16-byte aligned: round it up
        # (the ABI asks for SMEM_ALIGN_SLACK more bytes).
        self.emit(f"mov.u32 {base}, {SMEM_SYMBOL};")
        self.emit(f"add.u32 {base}, {base}, {SMEM_ALIGN_SLACK - 1};")
        self.emit(f"and.b32 {base}, {base}, -{SMEM_ALIGN_SLACK};")
        blocks = list(self.kernel.body.blocks)
        for i, block in enumerate(blocks):
            if i:
                self.lines.append(f"{self.block_label(block)}:")
            self.next_block = blocks[i + 1] if i + 1 < len(blocks) else None
            self.block(block)
        body = self._drop_unused(self.lines[body_start:])
        threads = self.abi.threads
        params = ",\n".join(f"\t{p.ptx_decl}" for p in self.abi.params)
        head = [
            f".visible .entry {self.abi.name}(",
            params,
            ")",
            f".reqntid {threads}, 1, 1",
            *([f".reqnctapercluster {self.abi.cluster}, 1, 1"] if self.abi.cluster > 1 else []),
            f".maxnreg {self.abi.maxnreg or launch_register_cap(threads)}",
            *([f".minnctapersm {self.abi.ctas_per_sm}"] if self.abi.ctas_per_sm > 1 else []),
            "{",
        ]
        decls = ["\t" + d for d in self.regs.declarations()]
        return "\n".join(head + decls + body + ["}", ""])

    @staticmethod
    def _drop_unused(lines: list[str]) -> list[str]:
        """Drops the labels of blocks reached only by falling through, and
        the constants no instruction reads from a register."""
        kept = [x for x in lines if not x.startswith(_UNLESS_UNUSED)]
        targets = {x.rsplit(" ", 1)[-1].rstrip(";") for x in kept if "bra " in x}
        read = set(_REGISTER.findall("\n".join(kept)))
        out = []
        for x in lines:
            if x.startswith(_UNLESS_UNUSED):
                _, reg, x = x.split(_UNLESS_UNUSED)
                if reg not in read:
                    continue
            elif x.startswith("$") and x.endswith(":") and x[:-1] not in targets:
                continue
            out.append(x)
        return out

    def _params(self) -> None:
        by_arg: dict[int, list] = {}
        for p in self.abi.params:
            by_arg.setdefault(p.arg, []).append(p)
        for i, a in enumerate(self.kernel.body.blocks[0].args):
            ps = [p for p in by_arg.get(i, []) if p.kind != "tensormap"]
            if isinstance(a.type, MemRefType):
                regs = []
                for p in ps:
                    if p.kind == "stride":
                        continue
                    r = self.regs.new("rd")
                    self.emit(f"ld.param.u64 {r}, [{p.name}];")
                    regs.append(r)
                ptr = regs[0]
                self.emit(f"cvta.to.global.u64 {ptr}, {ptr};")
                self.memrefs[a] = (ptr, regs[1:])
                self.strides[a] = [p.name for p in ps if p.kind == "stride"]
                continue
            (p,) = ps
            r = self.define(a)
            kind = {"index": "u64", "i64": "u64", "i32": "u32", "f32": "f32"}[p.kind]
            self.emit(f"ld.param.{kind} {r}, [{p.name}];")
        self.tmap_params = [p for p in self.abi.params if p.kind == "tensormap"]

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        emitter = EMITTERS.get(type(op))
        if emitter is None:
            pass_ = PREPARED_BY.get(op.name)
            raise _unsupported(op, f"run {pass_} first (tawa-hopper-pipeline does)" if pass_ else "")
        emitter(self, op)


def print_ptx(module: ModuleOp) -> str:
    """PTX for every lowered kernel of `module` (functions with an `nvgpu.kernel` attribute)."""
    kernels = [
        o for o in module.walk()
        if isinstance(o, func.FuncOp) and nvgpu.KERNEL_ATTR in o.attributes
    ]
    if not kernels:
        # Located at the module, or at its first op where the module is implicit.
        first = next(iter(module.body.block.ops), None) if module.body.blocks else None
        raise TawaError(
            "the module has no lowered kernel to print as PTX (run -p tawa-hopper-pipeline first)",
            location_of(module) or (first and location_of(first)) or "tawa-opt -t ptx",
        )
    out = [
        "// Generated by tawa",
        f".version {PTX_VERSION}",
        f".target {ARCH}",
        ".address_size 64",
        "",
        f".extern .shared .align 16 .b8 {SMEM_SYMBOL}[];",
        "",
    ]
    for k in kernels:
        out.append(KernelPrinter(k).print())
    return "\n".join(out)
