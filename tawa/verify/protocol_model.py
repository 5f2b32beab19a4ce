"""The barrier events of a lowered kernel's warp groups, for its protocol check.

`tawa-verify-protocol` (docs/protocol.md) proves a kernel's mbarrier
protocol in two steps; this module is the first:

* `SkeletonRunner` extracts, for a chosen problem size, the sequence of
  barrier events of each warp group (`Event`s: mbarrier init / arrive /
  expect_tx / wait, TMA loads, shared-memory reads, wgmma groups, named
  barriers, the TMA-store epilogue's staging writes, bulk stores and their
  waits) by executing the kernel's *control skeleton* concretely: the
  index and integer arithmetic, loops and ifs that decide which barrier
  ops run.  Only what the protocol depends on is evaluated (a backward slice
  from the barrier ops, compiled once per kernel into instructions over
  value ids); arithmetic has the semantics of tawa's CPU interpreter
  (`tawa.interpreters.arith`): integer ops run as Python functions that a
  test checks against the interpreter op by op (`integer_op`), anything
  else through the interpreter itself, imported only then (it pulls in
  NumPy and xDSL's interpreters, which a compile does not otherwise need).
  The events of a protocol op are made once per op, operands, lanes and
  CTA and shared by every trace that repeats them.
  Values that differ between the threads of a warp group (`thread_id`,
  `lane_id`, `warp_id` and what derives from them) are `Lanes`; an `scf.if`
  on them runs its regions for the threads that take them, and an arrive
  counts the threads that execute it.
* A kernel with thread-block clusters (`#nvgpu.kernel<..., cluster = N>`)
  is run once per CTA of one cluster (`Launch.rank`): barriers and
  shared-memory stages are per CTA (`Objects` numbers them over the whole
  cluster and records each one's CTA), a remote arrival
  (`mbarrier_arrive ... cta(%r)`) is an arrival on CTA r's barrier, a
  multicast `tma_load` is one load per CTA of its mask, and
  `cluster_sync` is a barrier over every thread of the cluster
  (`CLUSTER_BARRIER`).
* `protocol_search.Explorer` runs every interleaving of those traces on an
  abstract machine with mbarrier semantics and reports the first violation.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.dialects.nvgpu.types import MBarrierType, SmemType, TmaDescriptorType, element_bytes
from tawa.target.hopper import MBARRIER_BYTES, NAMED_BARRIERS, THREADS_PER_GROUP, THREADS_PER_WARP


class SkeletonError(Exception):
    """The protocol depends on something the skeleton cannot compute."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


class _Unknown:
    """A value the skeleton does not compute (data, memref sizes, ...)."""

    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()



MAX_LOOP_TRIPS = 1 << 16
"""The most iterations of one loop the skeleton runner unrolls: the checked
problem sizes run a ring loop at most 2D+1 times and a program loop a few
times, so more means a bound the kernel cannot have meant (a lower bound of
-2^63), which would otherwise never finish."""

@dataclass(frozen=True)
class Lanes:
    """A value that differs between the threads of a warp group (one per lane)."""

    values: tuple[Any, ...]

    def __hash__(self) -> int:
        # Hashed once: the skeleton's caches hash the same lanes at every op that reads them.
        try:
            return self._hash  # type: ignore[has-type]
        except AttributeError:
            h = hash(self.values)
            object.__setattr__(self, "_hash", h)
            return h


# --------------------------------------------------------------------------- events

INIT, ARRIVE, EXPECT_TX, WAIT, TMA, READ, COMMIT, WAIT_GROUP, NAMED_SYNC, NAMED_ARRIVE = (
    "init", "arrive", "expect_tx", "wait", "tma", "read", "commit", "wait_group",
    "named_sync", "named_arrive",
)
WRITE, BULK_STORE, BULK_WAIT = "write", "bulk_store", "bulk_wait"
BLOCKING = (WAIT, NAMED_SYNC)
CLUSTER_BARRIER = -1
"""The named-barrier id of `nvgpu.cluster_sync` (a `named_sync` over every
thread of the cluster); the named barriers of CTA c (c > 0) are numbered
id + c · NAMED_BARRIERS, so that each CTA has its own."""


@dataclass(frozen=True)
class Event:
    """One barrier-relevant step of one warp group.

    `barrier` is a barrier slot (index into `Objects.barriers`), or a named
    barrier id; `slot` a shared-memory stage (index into `Objects.slots`);
    `count` the threads that arrive (init: the expected arrivals; named
    barriers: the barrier's thread count; wait_group: groups left pending);
    `tx` transaction bytes; `threads` the threads a named barrier counts."""

    kind: str
    op: Operation
    barrier: int = -1
    slot: int = -1
    parity: int = 0
    count: int = 0
    tx: int = 0
    threads: int = 0
    is_async: bool = False

    def key(self) -> tuple[Any, ...]:
        # Made once per event: the runner makes an event once per op and values, and the
        # traces of every problem size repeat it (`verify_protocol._explore` keys each trace).
        try:
            return self.__dict__["_key"]
        except KeyError:
            k = self.__dict__["_key"] = (self.kind, id(self.op), self.barrier, self.slot, self.parity,
                                         self.count, self.tx, self.threads)
            return k

    def semantic_key(self) -> tuple[Any, ...]:
        """What the exploration depends on (not which op it reports)."""
        try:
            return self.__dict__["_semantic_key"]
        except KeyError:
            k = self.__dict__["_semantic_key"] = (self.kind, self.barrier, self.slot, self.parity, self.count,
                                                  self.tx, self.threads, self.is_async)
            return k


@dataclass
class Objects:
    """The barrier slots and shared-memory stages of a kernel (of every CTA
    of its cluster), numbered in the order they are first used.

    A barrier slot is identified by its CTA and byte address, a stage by its
    CTA and byte range, so that two `smem_alloc` views of the same memory
    (a buffer of B tiles and the same bytes as twice as many half tiles)
    name the same objects; `barriers` / `slots` keep the (array, index) by
    which each was first named, `barrier_cta` / `slot_cta` its CTA, and
    `slot_range` its bytes [lo, hi) in its CTA's shared memory (None when
    the array is not an `smem_alloc`: it overlaps no other stage)."""

    barriers: list[tuple[SSAValue, int]] = field(default_factory=list)
    slots: list[tuple[SSAValue, int]] = field(default_factory=list)
    barrier_cta: list[int] = field(default_factory=list)
    slot_cta: list[int] = field(default_factory=list)
    slot_range: list[tuple[int, int] | None] = field(default_factory=list)
    _bar_ids: dict[Any, int] = field(default_factory=dict)
    _slot_ids: dict[Any, int] = field(default_factory=dict)
    _named: dict[tuple[int, int, int, bool], int] = field(default_factory=dict)
    """The number of each (array, index, CTA), barrier or not, once named
    (by the array's `id`: the skeleton names the same ones in every trace)."""

    def barrier(self, array: SSAValue, index: int, cta: int = 0) -> int:
        named = (id(array), index, cta, True)
        if (n := self._named.get(named)) is None:
            n = self._named[named] = self._barrier(array, index, cta)
        return n

    def slot(self, array: SSAValue, index: int, cta: int = 0) -> int:
        named = (id(array), index, cta, False)
        if (n := self._named.get(named)) is None:
            n = self._named[named] = self._slot(array, index, cta)
        return n

    def _barrier(self, array: SSAValue, index: int, cta: int) -> int:
        alloc = array.owner if isinstance(array, OpResult) else None
        key = ((cta, alloc.offset.value.data + MBARRIER_BYTES * index)
               if isinstance(alloc, nvgpu.SmemAllocOp) else (cta, array, index))
        if key not in self._bar_ids:
            self.barrier_cta.append(cta)
        return _number(self.barriers, self._bar_ids, key, (array, index))

    def _slot(self, array: SSAValue, index: int, cta: int) -> int:
        alloc = array.owner if isinstance(array, OpResult) else None
        span: tuple[int, int] | None = None
        if isinstance(alloc, nvgpu.SmemAllocOp) and isinstance(array.type, SmemType):
            stage = alloc.num_bytes() // array.type.get_shape()[0]
            lo = alloc.offset.value.data + stage * index
            span = (lo, lo + stage)
        key = (cta, span) if span is not None else (cta, array, index)
        if key not in self._slot_ids:
            self.slot_cta.append(cta)
            self.slot_range.append(span)
        return _number(self.slots, self._slot_ids, key, (array, index))


def _number(items: list[Any], ids: dict[Any, int], key: Any, name: Any) -> int:
    if key not in ids:
        ids[key] = len(items)
        items.append(name)
    return ids[key]


# --------------------------------------------------------------------------- integer arithmetic

INDEX_BITS = 64
"""The width of `index` values: the CPU interpreter's
(`tawa.interpreters.dtypes.INDEX_BITS`; a test checks that they agree)."""


def _wrap(value: int, bits: int) -> int | bool:
    """`value` as a signed `bits`-bit integer (i1: a bool), as the CPU
    interpreter keeps integers."""
    if bits == 1:
        return bool(value & 1)
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _width(t: Any) -> int | None:
    if isinstance(t, IndexType):
        return INDEX_BITS
    if isinstance(t, IntegerType):
        return t.width.data
    return None


def _divsi(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


# op: (function, operands read as unsigned, a divisor, a shift amount)
_BINARY: dict[type[Operation], tuple[Callable[[int, int], int], bool, bool, bool]] = {
    arith.AddiOp: (operator.add, False, False, False),
    arith.SubiOp: (operator.sub, False, False, False),
    arith.MuliOp: (operator.mul, False, False, False),
    arith.AndIOp: (operator.and_, False, False, False),
    arith.OrIOp: (operator.or_, False, False, False),
    arith.XOrIOp: (operator.xor, False, False, False),
    arith.MinSIOp: (min, False, False, False),
    arith.MaxSIOp: (max, False, False, False),
    arith.MinUIOp: (min, True, False, False),
    arith.MaxUIOp: (max, True, False, False),
    arith.DivSIOp: (_divsi, False, True, False),
    arith.RemSIOp: (lambda a, b: a - _divsi(a, b) * b, False, True, False),
    arith.FloorDivSIOp: (operator.floordiv, False, True, False),
    arith.CeilDivSIOp: (lambda a, b: -((-a) // b), False, True, False),
    arith.DivUIOp: (operator.floordiv, True, True, False),
    arith.RemUIOp: (operator.mod, True, True, False),
    arith.CeilDivUIOp: (lambda a, b: a // b + (a % b != 0), True, True, False),
    arith.ShLIOp: (operator.lshift, False, False, True),
    arith.ShRUIOp: (operator.rshift, True, False, True),
    arith.ShRSIOp: (operator.rshift, False, False, True),
}
_COMPARISONS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
                operator.lt, operator.le, operator.gt, operator.ge)
"""`arith.cmpi` by predicate (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge)."""
_CASTS = {arith.IndexCastOp: False, arith.ExtSIOp: False, arith.TruncIOp: False, arith.ExtUIOp: True}
"""Integer casts, by whether they read their operand as unsigned."""


def integer_op(op: Operation) -> Callable[[tuple[Any, ...]], Any] | None:
    """`op`'s integer arithmetic as a function of its operands' values
    (Python ints; i1 as bools), with the CPU interpreter's semantics
    (`tawa.interpreters.arith`: wrap-around at the type's width, the same
    errors for a zero divisor or a shift out of range), or None when `op`
    is not one of these (the skeleton then asks the interpreter).  Checked
    against the interpreter op by op in the tests: the skeleton runs
    thousands of these per trace, which through the interpreter cost most
    of the trace extraction."""
    name = op.name
    kind = type(op)
    if isinstance(op, arith.ConstantOp):
        bits = _width(op.result.type)
        if bits is None or not isinstance(op.value, IntegerAttr):
            return None
        value = _wrap(op.value.value.data, bits)
        return lambda _: value
    if kind in _BINARY:
        fn, unsigned, divides, shift = _BINARY[kind]
        bits = _width(op.results[0].type)
        if bits is None:
            return None
        mask = (1 << bits) - 1

        def binary(inputs: tuple[Any, ...]) -> int | bool:
            a, b = inputs
            a, b = (int(a) & mask, int(b) & mask) if unsigned else (int(a), int(b))
            if divides and b == 0:
                raise ArithmeticError(f"{name}: division by zero")
            if shift and not 0 <= b < 64:
                raise ArithmeticError(f"shift by {b} bits is out of range")
            return _wrap(fn(a, b), bits)

        return binary
    if isinstance(op, arith.CmpiOp):
        bits = _width(op.lhs.type)
        predicate = op.predicate.value.data
        if bits is None or not 0 <= predicate < len(_COMPARISONS):
            return None
        modulus, half, compare = 1 << bits, 1 << (bits - 1), _COMPARISONS[predicate]
        if predicate >= 6:
            return lambda inputs: bool(compare((inputs[0] + modulus) % modulus, (inputs[1] + modulus) % modulus))
        return lambda inputs: bool(compare((inputs[0] + half) % modulus - half, (inputs[1] + half) % modulus - half))
    if isinstance(op, arith.SelectOp):
        if _width(op.result.type) is None:
            return None
        return lambda inputs: inputs[1] if inputs[0] else inputs[2]
    if kind in _CASTS:
        unsigned = _CASTS[kind]
        src, dst = _width(op.operands[0].type), _width(op.results[0].type)
        if src is None or dst is None:
            return None
        src_mask = (1 << src) - 1
        if src == 1:  # i1 true is 1 unsigned, -1 signed
            return (lambda inputs: _wrap(int(inputs[0]), dst)) if unsigned else \
                (lambda inputs: _wrap(-int(inputs[0]), dst))
        if unsigned:
            return lambda inputs: _wrap(int(inputs[0]) & src_mask, dst)
        return lambda inputs: _wrap(int(inputs[0]), dst)
    return None


# --------------------------------------------------------------------------- skeleton

_ASYNC_READS = (nvgpu.WgmmaDescriptorOp,)
_SYNC_READS = (nvgpu.SmemTileOp,)
_BULK_OPS = (nvgpu.FragmentStoreSharedOp, nvgpu.TmaStoreOp, nvgpu.TmaStoreWaitOp)
PROTOCOL_OPS = (
    nvgpu.MBarrierInitOp, nvgpu.MBarrierArriveOp, nvgpu.MBarrierArriveExpectTxOp,
    nvgpu.MBarrierWaitParityOp, nvgpu.MBarrierTryWaitParityOp, nvgpu.TmaLoadOp,
    nvgpu.NamedBarrierSyncOp, nvgpu.NamedBarrierArriveOp, nvgpu.WgmmaCommitGroupOp,
    nvgpu.WgmmaWaitGroupOp, nvgpu.ClusterSyncOp, *_ASYNC_READS, *_SYNC_READS, *_BULK_OPS,
)


def _protocol_operands(op: Operation) -> Iterable[SSAValue]:
    """The operands of a protocol op that the protocol depends on (not the
    TMA coordinates or wgmma rows: where the data goes within a stage)."""
    if isinstance(op, nvgpu.TmaLoadOp):
        return (op.desc, op.dest, op.stage, op.barriers, op.barrier_index)
    if isinstance(op, nvgpu.WgmmaDescriptorOp | nvgpu.SmemTileOp | nvgpu.TmaStoreOp):
        return (op.source, op.stage)
    if isinstance(op, nvgpu.FragmentStoreSharedOp):
        return (op.dest, op.stage)
    if isinstance(op, nvgpu.WgmmaWaitGroupOp):
        return ()
    return op.operands


@dataclass(frozen=True)
class Launch:
    """The CTA a skeleton runs as: its block id, the grid of CTAs, the tile
    program's logical grid (what `nvgpu.launch_grid` returns) and its rank
    in its cluster (`nvgpu.cluster_rank`; its barriers and stages are that
    CTA's)."""

    block_id: tuple[int, int, int] = (0, 0, 0)
    grid_dim: tuple[int, int, int] = (1, 1, 1)
    launch_grid: tuple[int, int, int] = (1, 1, 1)
    rank: int = 0


_ARITH, _EVAL, _FOR, _IF, _PROTOCOL, _REGION = range(6)
"""The instructions of a compiled block (`SkeletonRunner._compile`);
`_ARITH` (arithmetic, the most frequent) is tested first."""
_HANDLE, _ROLE, _RANK, _THREAD, _LANE, _WARP, _LAUNCH, _OPAQUE, _COMPUTE = range(9)
"""How an `_EVAL` instruction computes its result (`_COMPUTE`: an `_ARITH`
instruction instead)."""


@functools.cache
def _protocol_type(kind: type[Operation]) -> bool:
    # By type, once: xDSL's op classes are ABCs, whose isinstance against
    # PROTOCOL_OPS' many classes is slow, and the skeleton asks it of every op.
    return issubclass(kind, PROTOCOL_OPS)


class _Values(dict):
    """A trace's values by SSA value `id`; a value the skeleton did not
    compute reads as UNKNOWN, so that an instruction fetches its operands
    with one `itemgetter` call."""

    def __missing__(self, key: int) -> Any:
        return UNKNOWN


def _fetch(operands: tuple[int, ...]) -> Callable[[dict[int, Any]], tuple[Any, ...]]:
    """Reads the values of `operands` from a `_Values`, as a tuple."""
    if len(operands) == 1:
        (only,) = operands
        return lambda vals: (vals[only],)
    if not operands:
        return lambda vals: ()
    return operator.itemgetter(*operands)


class SkeletonRunner:
    """Extracts per-warp-group event traces of one kernel (see module docstring).

    The skeleton is compiled once (`_compile`): per block, the ops that must
    run, as instructions that name values by the `id` of their SSA value
    (xDSL's values and ops hash through a Python method, which every step
    of every trace would pay), with integer arithmetic as Python functions
    (`integer_op`)."""

    def __init__(self, kernel: func.FuncOp):
        self.kernel = kernel
        info = kernel_info(kernel)
        self.cluster = info.cluster
        """CTAs per cluster (1: no clusters)."""
        self.threads = info.threads or 0
        self.objects = Objects()
        self._interpreter: Any = None  # the CPU interpreter, built for the first op `integer_op` leaves to it
        self._constants: dict[int, Any] = {}
        """Values known when compiling (integer constants and what is
        computed from them alone): every trace starts with them."""
        self._lane_ids: dict[int, tuple[Lanes, Lanes, Lanes]] = {}
        self._emitted: dict[tuple[Any, ...], tuple[tuple[Event, ...], bool]] = {}
        self._split: dict[tuple[Any, ...], tuple[tuple[bool, ...], tuple[bool, ...]]] = {}
        self._protocol_regions: set[Operation] = set()
        self.relevant: set[SSAValue] = set()
        self.executed: set[Operation] = set()
        self.memo_loops = True
        """Whether a loop iteration's and a branch's events are kept by the
        values they read (`_for`, `_if`): False for a subclass whose events
        depend on state of its own beyond the values."""
        self._analyze()
        self._code = self._compile(kernel.body.block)

    # ------------------------------------------------------------------ slice

    # ------------------------------------------------------------------ hooks (protocol_aref's runner)

    def is_protocol(self, op: Operation) -> bool:
        """Whether `op` makes events."""
        return _protocol_type(type(op))

    def protocol_operands(self, op: Operation) -> Iterable[SSAValue]:
        """The operands of a protocol op that its events depend on."""
        return _protocol_operands(op)

    def key_operands(self, op: Operation) -> Iterable[SSAValue]:
        """The operands whose values key the events made once per op
        (`_events_of`): the integer ones of `protocol_operands`."""
        return (v for v in self.protocol_operands(op) if isinstance(v.type, IndexType | IntegerType))

    def special_value(self, op: Operation) -> tuple[str, Any] | None:
        """How a subclass computes an op the base does not know: ("handle",
        the value naming an object) or ("launch", (Launch field, axis))."""
        return None

    def region_choice(self, op: Operation) -> Callable[[int], int | None] | None:
        """For an op with regions other than scf.for / scf.if that holds
        protocol ops: which of its regions a role runs (None: none)."""
        return None

    # ------------------------------------------------------------------ slice

    def _analyze(self) -> None:
        """Which values the protocol depends on, and which loops and ifs must run."""
        work: list[SSAValue] = []
        for op in self.kernel.walk():
            if self.is_protocol(op):
                work.extend(self.protocol_operands(op))
                parent = op.parent_op()
                while parent is not None and parent is not self.kernel:
                    self._protocol_regions.add(parent)
                    parent = parent.parent_op()
        # A loop or if runs when it holds a protocol op or an op with a relevant result; its
        # bounds or condition are then relevant too (to a fixpoint).
        def run(o: Operation) -> None:
            while o is not None and o is not self.kernel:
                if isinstance(o, scf.ForOp | scf.IfOp) and o not in self.executed:
                    self.executed.add(o)
                    work.extend((o.lb, o.ub, o.step) if isinstance(o, scf.ForOp) else (o.cond,))
                o = o.parent_op()

        for o in self._protocol_regions:
            run(o)
        while work:
            v = work.pop()
            if v in self.relevant:
                continue
            self.relevant.add(v)
            if isinstance(v, OpResult):
                run(v.op)
            work.extend(self._depends_on(v))

    @staticmethod
    def _depends_on(v: SSAValue) -> Iterable[SSAValue]:
        if isinstance(v, OpResult):
            op = v.op
            if isinstance(op, scf.ForOp):
                i = v.index
                yield from (op.lb, op.ub, op.step, op.iter_args[i], op.body.block.args[i + 1])
                yield op.body.block.last_op.operands[i]  # type: ignore[union-attr]
            elif isinstance(op, scf.IfOp):
                yield op.cond
                for region in (op.true_region, op.false_region):
                    if region.blocks:
                        yield region.block.last_op.operands[v.index]  # type: ignore[union-attr]
            else:
                yield from op.operands
        elif isinstance(v, BlockArgument):
            owner = v.block.parent_op()
            if isinstance(owner, scf.ForOp):
                if v.index == 0:
                    yield from (owner.lb, owner.step)
                else:
                    yield owner.iter_args[v.index - 1]
                    yield owner.body.block.last_op.operands[v.index - 1]  # type: ignore[union-attr]

    # ------------------------------------------------------------------ compiling

    def _compile(self, block: Block) -> tuple[tuple[tuple[Any, ...], ...], Callable[[dict[int, Any]], Any]]:
        """The instructions of `block` that the skeleton runs (the slice of
        `_analyze`), and what reads the values its terminator yields."""
        code: list[tuple[Any, ...]] = []
        for op in block.ops:
            if isinstance(op, scf.YieldOp | func.ReturnOp):
                return tuple(code), _fetch(_ids(op.operands))
            if self.is_protocol(op):
                code.append((_PROTOCOL, op, _fetch(_ids(self.key_operands(op)))))
            elif isinstance(op, scf.ForOp):
                if op in self.executed:
                    body = op.body.block
                    compiled = self._compile(body)
                    reads = tuple(self._reads(compiled[0], _yielded(body)))
                    args = set(_ids(body.args))
                    code.append((_FOR, op, id(op.lb), id(op.ub), id(op.step), _ids(op.iter_args),
                                 _ids(body.args), compiled, _ids(op.results),
                                 tuple(v for v in reads if v not in args), _fetch(reads), {}))
            elif isinstance(op, scf.IfOp):
                if op in self.executed:
                    then, other = (self._compile(r.block) if r.blocks else None
                                   for r in (op.true_region, op.false_region))
                    ins = (_IF, op, id(op.cond), then, other, _ids(op.results), op in self._protocol_regions)
                    code.append((*ins, _fetch(tuple(self._reads((ins,), ()))), {}))
            elif op.regions and op in self._protocol_regions and (choose := self.region_choice(op)) is not None:
                code.append((_REGION, op, choose, tuple(self._compile(r.block) for r in op.regions)))
            elif any(r in self.relevant for r in op.results):
                how, what = self._evaluator(op)
                if how != _COMPUTE:
                    code.append((_EVAL, op, how, what, _ids(op.operands), _ids(op.results)))
                elif (fn := integer_op(op)) is None or not self._fold(op, fn):
                    # the op's results by its operands' values, kept across traces: the
                    # traces of every problem size run the same ops on the same values
                    memo: dict[tuple[Any, ...], Any] = {}
                    code.append((_ARITH, op, fn or self._interpreted(op), _fetch(_ids(op.operands)),
                                 id(op.results[0]), memo))
        return tuple(code), _fetch(())

    def _reads(self, code: tuple[tuple[Any, ...], ...], yielded: tuple[int, ...]) -> dict[int, None]:
        """The values (by id, in order) that compiled `code`, nested code
        included, and the values it yields read without defining them first
        (constants left out: every trace has the same)."""
        reads: dict[int, None] = {}
        defined: set[int] = set(self._constants)

        def use(ids: Iterable[int]) -> None:
            reads.update((v, None) for v in ids if v not in defined)

        for ins in code:
            kind, op = ins[0], ins[1]
            if kind == _ARITH:
                use(_ids(op.operands))
                defined.add(ins[4])
            elif kind == _EVAL:  # reads no value: the warp group, its launch or nothing
                defined.update(ins[5])
            elif kind == _PROTOCOL:  # its events depend on these alone (`_events_of`)
                use(_ids(self.key_operands(op)))
                defined.update(_ids(op.results))
            elif kind == _FOR:
                use((ins[2], ins[3], ins[4], *ins[5], *ins[9]))
                defined.update(ins[8])
            elif kind == _IF:
                use((ins[2],))
                for region, nested in ((op.true_region, ins[3]), (op.false_region, ins[4])):
                    if nested is not None:
                        use(self._reads(nested[0], _yielded(region.block)))
                defined.update(ins[5])
            else:  # _REGION: which region runs depends on the warp group alone
                for region, nested in zip(op.regions, ins[3]):
                    use(self._reads(nested[0], _yielded(region.block)))
        use(yielded)
        return reads

    def _fold(self, op: Operation, fn: Callable[[tuple[Any, ...]], Any]) -> bool:
        """Computes integer arithmetic on values known when compiling (a
        constant, or an op of such values) once, into `_constants`, rather
        than in every trace (`fn`: its `integer_op`); False where an operand
        is not known, or where it fails (it then fails where a trace reaches
        it, as it would)."""
        if not all(id(v) in self._constants for v in op.operands):
            return False
        try:
            value = fn(tuple(self._constants[id(v)] for v in op.operands))
        except Exception:  # noqa: BLE001 - reported where a trace runs it
            return False
        self._constants[id(op.results[0])] = value
        return True

    def _evaluator(self, op: Operation) -> tuple[int, Any]:
        """How the skeleton computes the results of `op`: its instruction's
        `how` and what that needs."""
        if isinstance(op, nvgpu.SmemAllocOp | nvgpu.TmaDescriptorOp):
            return _HANDLE, op.results[0]  # a handle: the SSA value names the array
        if (special := self.special_value(op)) is not None:
            return {"handle": _HANDLE, "launch": _LAUNCH}[special[0]], special[1]
        if isinstance(op, nvgpu.WarpGroupIdOp):
            return _ROLE, None
        if isinstance(op, nvgpu.ClusterRankOp):
            return _RANK, None
        if isinstance(op, nvgpu.ThreadIdOp):
            return _THREAD, None
        if isinstance(op, nvgpu.LaneIdOp):
            return _LANE, None
        if isinstance(op, nvgpu.WarpIdOp):
            return _WARP, None
        if isinstance(op, nvgpu.BlockIdOp | nvgpu.GridDimOp | nvgpu.LaunchGridOp):
            field_ = {nvgpu.BlockIdOp: "block_id", nvgpu.GridDimOp: "grid_dim",
                      nvgpu.LaunchGridOp: "launch_grid"}[type(op)]
            return _LAUNCH, (field_, op.axis.value.data)
        if op.dialect_name() != "arith" or op.regions:
            return _OPAQUE, None
        return _COMPUTE, None  # `integer_op`, else the interpreter

    def _interpreted(self, op: Operation) -> Callable[[tuple[Any, ...]], Any]:
        """`op` through tawa's CPU interpreter (what `integer_op` does not
        cover; float results are unknown)."""

        def run(inputs: tuple[Any, ...]) -> Any:
            if self._interpreter is None:
                # Imported here: the interpreters pull in NumPy and xDSL's
                # interpreters, which the integer ops of a kernel never need.
                from xdsl.interpreter import Interpreter

                from tawa.interpreters.arith import TensorArithFunctions
                from tawa.interpreters.dtypes import INDEX_BITS as interpreter_index_bits

                self._interpreter = Interpreter(ModuleOp([]), index_bitwidth=interpreter_index_bits)
                self._interpreter.register_implementations(TensorArithFunctions())
            (out,) = self._interpreter.run_op(op, inputs)
            return UNKNOWN if isinstance(out, float) else out

        return run

    # ------------------------------------------------------------------ running

    def trace(self, role: int, args: Sequence[Any], launch: Launch) -> list[Event]:
        """The events of warp group `role`, for kernel arguments `args`
        (UNKNOWN for those the skeleton need not know) and `launch`."""
        self._role = role
        self._launch = launch
        self._where = (role, launch.block_id, launch.grid_dim, launch.launch_grid, launch.rank)
        if not 0 <= launch.rank < self.cluster:
            raise ValueError(f"CTA rank {launch.rank} outside a cluster of {self.cluster}")
        self._events: list[Event] = []
        self._vals = _Values(self._constants)
        self._vals.update((id(p), a) for p, a in zip(self.kernel.body.block.args, args))
        first = role * THREADS_PER_GROUP
        self._tids = tuple(range(first, first + THREADS_PER_GROUP))
        if role not in self._lane_ids:
            tids = self._tids
            self._lane_ids[role] = (Lanes(tids), Lanes(tuple(t % THREADS_PER_WARP for t in tids)),
                                    Lanes(tuple(t // THREADS_PER_WARP for t in tids)))
        self._run(*self._code, None)
        return self._events

    def _run(self, code: tuple[tuple[Any, ...], ...], yielded: Callable[[dict[int, Any]], tuple[Any, ...]],
             mask: tuple[bool, ...] | None) -> tuple[Any, ...]:
        """Runs compiled instructions; the values `yielded` reads after them."""
        vals = self._vals
        for ins in code:
            kind = ins[0]
            if kind == _ARITH:
                _, op, fn, fetch, result, memo = ins
                inputs = fetch(vals)
                out = memo.get(inputs)
                if out is None:
                    out = memo[inputs] = self._arith(op, fn, inputs)
                vals[result] = out
            elif kind == _EVAL:
                _, op, how, what, operands, results = ins
                if how == _OPAQUE:
                    for r in results:
                        vals[r] = UNKNOWN
                else:
                    vals[results[0]] = self._special(how, what)
            elif kind == _PROTOCOL:
                self._events_of(ins, mask)
            elif kind == _FOR:
                self._for(ins, mask)
            elif kind == _IF:
                self._if(ins, mask)
            else:  # _REGION: the region of this role, if any
                i = ins[2](self._role)
                if i is not None:
                    self._run(*ins[3][i], mask)
        return yielded(vals)

    def _special(self, how: int, what: Any) -> Any:
        if how == _HANDLE:
            return what
        if how == _ROLE:
            return self._role
        if how == _RANK:
            return self._launch.rank
        if how == _LAUNCH:
            return getattr(self._launch, what[0])[what[1]]
        return self._lane_ids[self._role][how - _THREAD]

    def _arith(self, op: Operation, fn: Callable[[tuple[Any, ...]], Any], inputs: tuple[Any, ...]) -> Any:
        """`fn` (op's arithmetic) on `inputs`, lane by lane where they differ
        between lanes (`_run` remembers it per op and inputs)."""
        if UNKNOWN in inputs:
            return UNKNOWN
        try:
            if any(isinstance(x, Lanes) for x in inputs):
                outs: dict[tuple[Any, ...], Any] = {}
                for x in zip(*(_lanes(x) for x in inputs)):
                    if x not in outs:
                        outs[x] = fn(x)
                out = _collapse(tuple(outs[x] for x in zip(*(_lanes(x) for x in inputs))))
            else:
                out = fn(inputs)
        except Exception as err:  # division by zero and the like, on our chosen sizes
            raise SkeletonError(op, f"'{op.name}' failed on the checker's sizes: {err}") from None
        return out

    def _value(self, v: SSAValue) -> Any:
        return self._vals.get(id(v), UNKNOWN)

    def _uniform(self, op: Operation, v: SSAValue | int, what: str) -> Any:
        x = self._vals.get(v if isinstance(v, int) else id(v), UNKNOWN)
        if isinstance(x, Lanes):
            raise SkeletonError(op, f"{what} differs between the threads of a warp group")
        if x is UNKNOWN:
            raise SkeletonError(
                op, f"{what} depends on values the protocol checker does not compute (data)"
            )
        return x

    def _for(self, ins: tuple[Any, ...], mask: tuple[bool, ...] | None) -> None:
        _, op, lb_id, ub_id, step_id, iter_args, block_args, (code, yielded), results, _, reads, memo = ins
        lb = self._uniform(op, lb_id, "the loop's lower bound")
        ub = self._uniform(op, ub_id, "the loop's upper bound")
        step = self._uniform(op, step_id, "the loop's step")
        if step <= 0:
            raise SkeletonError(op, f"the loop's step must be positive, got {step}")
        vals = self._vals
        carried = tuple(vals.get(v, UNKNOWN) for v in iter_args)
        trips = len(range(lb, ub, step))
        if trips > MAX_LOOP_TRIPS:
            raise SkeletonError(op, f"the loop runs {trips} times (from {lb} to {ub} step {step}) at a problem "
                                f"size the protocol is checked for; more than {MAX_LOOP_TRIPS} is not a kernel's loop")
        events = self._events
        # An iteration's events and yielded values follow from the values its body reads (the
        # induction variable, carried values and values from outside the loop: `_reads`), the
        # lanes that run it, and the warp group and CTA; the traces of the problem sizes repeat
        # many iterations.
        if not self.memo_loops:
            for i in range(lb, ub, step):
                vals.update(zip(block_args, (i, *carried)))
                carried = self._run(code, yielded, mask)
            vals.update(zip(results, carried))
            return
        where = (id(mask), self._where)
        for i in range(lb, ub, step):
            vals.update(zip(block_args, (i, *carried)))
            key = (reads(vals), where)
            if (made := memo.get(key)) is not None:
                events.extend(made[0])
                carried = made[1]
                continue
            start = len(events)
            carried = self._run(code, yielded, mask)
            memo[key] = (tuple(events[start:]), carried)
        vals.update(zip(results, carried))

    def _if(self, ins: tuple[Any, ...], mask: tuple[bool, ...] | None) -> None:
        if not self.memo_loops:
            self._branch(ins, mask)
            return
        # Like a loop iteration (`_for`): kept by the values it reads, its lanes, warp group and CTA.
        key = (ins[7](self._vals), id(mask), self._where)
        if (made := ins[8].get(key)) is not None:
            self._events.extend(made[0])
            self._vals.update(zip(ins[5], made[1]))
            return
        start = len(self._events)
        self._branch(ins, mask)
        ins[8][key] = (tuple(self._events[start:]), tuple(self._vals[r] for r in ins[5]))

    def _branch(self, ins: tuple[Any, ...], mask: tuple[bool, ...] | None) -> None:
        _, op, cond_id, then, other, results, guards_protocol, _, _ = ins
        vals = self._vals
        cond = vals.get(cond_id, UNKNOWN)
        if cond is UNKNOWN:
            if guards_protocol:
                raise SkeletonError(
                    op, "whether barrier ops run depends on values the protocol checker "
                    "does not compute (data)"
                )
            for r in results:
                vals[r] = UNKNOWN
            return
        if not isinstance(cond, Lanes):
            region = then if cond else other
            out = self._run(*region, mask) if region is not None else ()
            vals.update(zip(results, out))
            return
        if (split := self._split.get((cond, mask))) is None:
            active = mask or (True,) * THREADS_PER_GROUP
            split = self._split[(cond, mask)] = (tuple(bool(c) and m for c, m in zip(cond.values, active)),
                                                 tuple(not c and m for c, m in zip(cond.values, active)))
        taken, not_taken = split
        outs: list[tuple[Any, ...] | None] = []
        for region, sub in ((then, taken), (other, not_taken)):
            outs.append(self._run(*region, sub) if region is not None and any(sub) else None)
        for i, r in enumerate(results):
            t = outs[0][i] if outs[0] is not None else UNKNOWN
            f = outs[1][i] if outs[1] is not None else UNKNOWN
            if outs[0] is None:
                vals[r] = f
            elif outs[1] is None:
                vals[r] = t
            elif UNKNOWN in (t, f):
                vals[r] = UNKNOWN
            else:
                tl, fl = (_lanes(x) for x in (t, f))
                vals[r] = _collapse(
                    tuple(a if c else b for a, b, c in zip(tl, fl, cond.values))
                )

    # ------------------------------------------------------------------ events

    def _slot_of(self, op: Operation, array: SSAValue, index: SSAValue, what: str) -> tuple[int, int]:
        i = self._uniform(op, index, f"the {what} index")
        t = array.type
        depth = t.count.data if isinstance(t, MBarrierType) else t.get_shape()[0]  # type: ignore[union-attr]
        if not 0 <= i < depth:
            raise SkeletonError(op, f"{what} index {i} is out of range for {t} (0..{depth - 1})")
        return (array, i)  # type: ignore[return-value]

    def _rank(self, op: Operation, v: SSAValue, what: str) -> int:
        r = self._uniform(op, v, what)
        if not 0 <= r < self.cluster:
            raise SkeletonError(op, f"{what} is {r}, but the cluster has {self.cluster} CTA"
                                f"{'s' if self.cluster > 1 else ''} (ranks 0..{self.cluster - 1})")
        return r

    def _events_of(self, ins: tuple[Any, ...], mask: tuple[bool, ...] | None) -> None:
        """The events of a protocol op (`_PROTOCOL` instruction `ins`), made
        once per op, integer operands, lanes and CTA: they depend on nothing
        else, and the traces of every problem size repeat them."""
        _, op, fetch = ins
        vals = self._vals
        # The mask by identity: every mask but None comes from `_split`, which keeps it.
        key = (id(op), fetch(vals), id(mask), self._launch.rank)
        if (made := self._emitted.get(key)) is None:
            start = len(self._events)
            self._protocol(op, mask)
            events = tuple(self._events[start:])
            made = self._emitted[key] = (events, isinstance(op, nvgpu.WgmmaWaitGroupOp) and bool(events))
        else:
            self._events.extend(made[0])
        if made[1]:
            vals.update((id(r), UNKNOWN) for r in op.results)

    def _protocol(self, op: Operation, mask: tuple[bool, ...] | None) -> None:
        n = THREADS_PER_GROUP if mask is None else sum(mask)
        if n == 0:
            return
        add = self._events.append
        objs = self.objects
        cta = self._launch.rank
        if isinstance(op, nvgpu.MBarrierTryWaitParityOp):
            raise SkeletonError(op, "mbarrier_try_wait_parity loops are not modelled: "
                                "run tawa-verify-protocol before tawa-prepare-ptx")
        if isinstance(op, nvgpu.MBarrierInitOp | nvgpu.MBarrierArriveOp |
                      nvgpu.MBarrierArriveExpectTxOp | nvgpu.MBarrierWaitParityOp):
            dest = cta
            if isinstance(op, nvgpu.MBarrierArriveOp) and op.cta is not None:
                dest = self._rank(op, op.cta, "the arrival's CTA rank")
            b = objs.barrier(*self._slot_of(op, op.barriers, op.index, "barrier"), dest)
            if isinstance(op, nvgpu.MBarrierInitOp):
                if n != 1:
                    raise SkeletonError(op, f"mbarrier_init runs on {n} threads; one must initialize it")
                add(Event(INIT, op, b, count=op.count.value.data))
            elif isinstance(op, nvgpu.MBarrierArriveOp):
                add(Event(ARRIVE, op, b, count=n))
            elif isinstance(op, nvgpu.MBarrierArriveExpectTxOp):
                add(Event(EXPECT_TX, op, b, count=n, tx=n * op.bytes.value.data))
            else:
                parity = self._uniform(op, op.parity, "the wait's parity")
                if parity not in (0, 1):
                    raise SkeletonError(op, f"the wait's parity must be 0 or 1, got {parity}")
                add(Event(WAIT, op, b, parity=parity))
        elif isinstance(op, nvgpu.TmaLoadOp):
            bar = self._slot_of(op, op.barriers, op.barrier_index, "barrier")
            stage = self._slot_of(op, op.dest, op.stage, "stage")
            desc = op.desc.type
            assert isinstance(desc, TmaDescriptorType)
            box = 1
            for d in desc.get_shape():
                box *= d
            tx = n * box * element_bytes(desc.element_type)
            dests = (cta,)
            if op.multicast is not None:
                mask_bits = op.multicast.value.data
                dests = tuple(r for r in range(mask_bits.bit_length()) if mask_bits >> r & 1)
                if dests[-1] >= self.cluster:
                    raise SkeletonError(op, f"the multicast mask {mask_bits} names CTA rank {dests[-1]}, but "
                                        f"the cluster has {self.cluster} CTA{'s' if self.cluster > 1 else ''}")
            for dest in dests:  # the box lands in each CTA of the mask, on that CTA's barrier
                add(Event(TMA, op, objs.barrier(*bar, dest), objs.slot(*stage, dest), tx=tx, count=n))
        elif isinstance(op, _ASYNC_READS + _SYNC_READS):
            assert isinstance(op.source.type, SmemType)
            s = objs.slot(*self._slot_of(op, op.source, op.stage, "stage"), cta)
            add(Event(READ, op, slot=s, is_async=isinstance(op, _ASYNC_READS)))
        elif isinstance(op, nvgpu.FragmentStoreSharedOp):
            add(Event(WRITE, op, slot=objs.slot(*self._slot_of(op, op.dest, op.stage, "stage"), cta)))
        elif isinstance(op, nvgpu.TmaStoreOp):
            add(Event(BULK_STORE, op, slot=objs.slot(*self._slot_of(op, op.source, op.stage, "stage"), cta),
                      threads=n))
        elif isinstance(op, nvgpu.TmaStoreWaitOp):
            add(Event(BULK_WAIT, op, count=op.pending.value.data, threads=n))
        elif isinstance(op, nvgpu.WgmmaCommitGroupOp):
            add(Event(COMMIT, op))
        elif isinstance(op, nvgpu.WgmmaWaitGroupOp):
            self._vals.update((id(r), UNKNOWN) for r in op.results)
            add(Event(WAIT_GROUP, op, count=op.pending.value.data))
        elif isinstance(op, nvgpu.NamedBarrierSyncOp | nvgpu.NamedBarrierArriveOp):
            tids = self._tids if mask is None else [t for t, m in zip(self._tids, mask) if m]
            warps = len({t // THREADS_PER_WARP for t in tids})
            kind = NAMED_SYNC if isinstance(op, nvgpu.NamedBarrierSyncOp) else NAMED_ARRIVE
            add(Event(kind, op, op.barrier_id.value.data + NAMED_BARRIERS * cta, count=op.num_threads.value.data,
                      threads=warps * THREADS_PER_WARP))
        elif isinstance(op, nvgpu.ClusterSyncOp):
            # barrier.cluster.arrive + wait: each executing thread arrives (not
            # whole warps: the instructions are not .aligned), the barrier
            # counts every thread of every CTA of the cluster.
            add(Event(NAMED_SYNC, op, CLUSTER_BARRIER, count=self.cluster * self.threads, threads=n))


def _ids(values: Iterable[SSAValue]) -> tuple[int, ...]:
    return tuple(id(v) for v in values)


def _yielded(block: Block) -> tuple[int, ...]:
    """The values a block's terminator yields to the op that holds it (`_compile`)."""
    term = block.last_op
    return _ids(term.operands) if isinstance(term, scf.YieldOp | func.ReturnOp) else ()


def _lanes(x: Any) -> tuple[Any, ...]:
    return x.values if isinstance(x, Lanes) else (x,) * THREADS_PER_GROUP


def _collapse(values: tuple[Any, ...]) -> Any:
    first = values[0]
    return first if all(v == first for v in values) else Lanes(values)
