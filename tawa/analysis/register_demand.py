"""Per-thread register demand of a warp group's code: a liveness analysis of fragments.

An analysis, not a pass (`tawa-check-resources` asks it).  It estimates how
many 32-bit registers per thread the code of one role (the block that starts
with its `nvgpu.setmaxnreg`) needs, before ptxas allocates them, as

    max over ops of the registers of the fragments live there
    + SCALAR_REGS_OVERHEAD (addresses, indices, loop counters; tawa.target.hopper)

on structured IR (`scf.for` / `scf.if`, before `convert-scf-to-cf`).

What a fragment costs (`charged_registers`): `FragmentType.registers()` —
one register per f32 value, one per packed pair of bf16/f16 values (a
64x256xf32 `wgmma` accumulator: 128; its bf16 conversion: 64; a `wgmma_row`
row vector: 2).  Not charged:

* i32 and i1 fragments (`frag_index` and the masks built from it): they are
  functions of the thread id and scalars, and ptxas computes each element
  where it is used instead of holding the whole tile (the edge-masked store
  of a 64x256 tile would otherwise count 3 x 128 registers that ptxas never
  allocates);
* views: `frag_broadcast` (reads the registers of its row vector) and
  `wgmma_k_slice` (names registers of its source); a use of a view is a use
  of its source;
* streamed values: an elementwise result (or a `frag_splat` of a scalar)
  that only elementwise ops and stores of its own block read (an epilogue such as bias + GELU, or
  α·acc + β·C).  ptxas computes such a chain element by element where it is
  used, so it holds the chain's inputs, not every intermediate tile: a use
  of a streamed value is a use of the charged values it is computed from
  (measured: the GELU epilogue, whose tile-level liveness says 2 live
  64x256xf32 tiles, assembles with 0 spills in 232 registers).  Only where
  its values all flow into one op, though: a value read by two ops that are
  not streamed themselves — a reduction and a later store (RMSNorm's `x`,
  squared and summed, then scaled and stored), or a store and a reduction —
  is needed whole at two places, and ptxas holds it in between, so it is
  charged itself.

Pressure at an op = the fragments live across it (used later, or live for
the whole of an enclosing loop) + its operands + its results, less the
registers a result takes over from an operand that dies there:

* a wgmma's result is its accumulator operand (in place), a
  `wgmma_wait_group` result its operand, an `scf.for` result its init value,
  an `scf.if` result a value its branches yield;
* an elementwise result (`frag_binary`, `frag_unary`, `frag_select`,
  `frag_convert`) reuses a dying operand — except an `scf.for` iteration
  argument, which ptxas keeps in its own registers when it has them:
  attention's `acc_scaled = acc_prev * alpha` holds both (measured: moving
  one conversion so that 32 fewer registers are live there took ptxas's
  count from 225 to 190).  Under pressure ptxas rescales in place instead
  (head dim 256: a 64x256 accumulator and its rescaled copy would be 256
  registers, and ptxas assembles it without spills in 232), so
  `RegisterDemand(iter_args_in_place=True)` gives the lower bound that
  `tawa-check-resources` rejects on.

In flight: the register A operand of a wgmma stays live until the
`wgmma_wait_group` of its block that retires its group (the hardware reads
it asynchronously; with two groups in flight, `wait_group 1` after the
second retires only the first); the accumulator is live until the wait that
returns it because the wait uses it.  An `scf.if` result may take over the
registers of a value its branches yield (the masked select's fast path).

Loops: what is live after an `scf.for` and every outer value its body uses
are live throughout the body (every iteration needs them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from tawa.dialects import nvgpu
from tawa.target.hopper import SCALAR_REGS_OVERHEAD

_ELEMENTWISE = (
    nvgpu.FragmentBinaryOp,
    nvgpu.FragmentUnaryOp,
    nvgpu.FragmentSelectOp,
    nvgpu.FragmentCmpFOp,  # a mask of data, made per element where a select reads it
    nvgpu.FragmentConvertOp,
    nvgpu.FragmentSplatOp,  # no fragment operand: streamed, it costs nothing
)
_VIEWS = (nvgpu.FragmentBroadcastOp, nvgpu.WgmmaKSliceOp)
_WGMMAS = (nvgpu.WgmmaOp, nvgpu.WgmmaMmaAsyncOp)


_STREAM_USERS = (*_ELEMENTWISE, nvgpu.FragmentStoreOp, nvgpu.FragmentStoreGlobalOp, nvgpu.FragmentReduceOp,
                 nvgpu.FragmentReduceWarpsOp, nvgpu.FragmentTransposeSharedOp)


def calls_subroutine(op: Operation) -> bool:
    """Whether `op`'s PTX has a slow path that ptxas makes a subroutine call
    (`rcp.rn.f32`, `sqrt.rn.f32`; f32 division, `div.full.f32`, has none):
    the registers live across it are saved and restored around the call,
    which this estimate does not count (`tawa-occupancy` does not trust it
    where a tile takes one per element)."""
    return isinstance(op, nvgpu.FragmentUnaryOp) and op.kind.data in (nvgpu.FragUnaryKind.SQRT,
                                                                     nvgpu.FragUnaryKind.RCP)


def storage(v: SSAValue) -> SSAValue:
    """The value whose registers `v` names (views resolve to their source)."""
    while isinstance(v, OpResult) and isinstance(v.op, _VIEWS):
        v = v.op.operands[0]
    return v


def _streamed(v: SSAValue) -> bool:
    """An elementwise result read only by elementwise ops and stores of its
    own block, directly or through views, whose values all flow into one
    op that is not streamed itself (see the module docstring)."""
    if not isinstance(v, OpResult) or not isinstance(v.op, _ELEMENTWISE) or not v.uses:
        return False
    return _streaming_uses(v, v.op.parent_block()) and len(_sinks(v)) <= 1


def _sinks(v: SSAValue) -> set[Operation]:
    """The ops that are not streamed elementwise math which read `v`'s
    values, directly, through views or through streamed math."""
    found: set[Operation] = set()
    for u in v.uses:
        user = u.operation
        if isinstance(user, _VIEWS):
            found |= _sinks(user.results[0])
        elif isinstance(user, _ELEMENTWISE) and _streamed(user.results[0]):
            found |= _sinks(user.results[0])
        else:
            found.add(user)
    return found


def _streaming_uses(v: SSAValue, block: Block | None) -> bool:
    for u in v.uses:
        user = u.operation
        if user.parent_block() is not block:
            return False
        if isinstance(user, _VIEWS):
            if not user.results[0].uses or not _streaming_uses(user.results[0], block):
                return False
        elif not isinstance(user, _STREAM_USERS):
            return False
    return True


def sources(v: SSAValue) -> set[SSAValue]:
    """The values whose registers a use of `v` reads: its storage, or for a
    streamed value the sources of the fragments it is computed from."""
    v = storage(v)
    if not _streamed(v):
        return {v}
    assert isinstance(v, OpResult)
    return set().union(*(sources(o) for o in v.op.operands if isinstance(o.type, nvgpu.FragmentType)))


def charged_registers(v: SSAValue) -> int:
    """Registers per thread that holding `v` costs (see the module docstring)."""
    t = v.type
    if not isinstance(t, nvgpu.FragmentType) or storage(v) is not v or _streamed(v):
        return 0
    if isinstance(t.element_type, IntegerType):
        return 0  # index and mask fragments: recomputed per element
    return t.registers()


@dataclass(frozen=True)
class Peak:
    """Where the demand of a block is highest and what is live there."""

    fragment_registers: int = 0
    op: Operation | None = None
    live: tuple[SSAValue, ...] = ()

    @property
    def registers(self) -> int:
        """The estimate: live fragments plus the scalar overhead."""
        return self.fragment_registers + SCALAR_REGS_OVERHEAD

    def describe(self) -> str:
        """`2 live 64x256xf32 fragments = 256`, grouped by type."""
        groups = Counter(v.type for v in self.live)
        parts = []
        for t, n in sorted(groups.items(), key=lambda kv: -kv[0].registers() * kv[1]):
            assert isinstance(t, nvgpu.FragmentType)
            shape = "x".join(map(str, t.get_shape()))
            parts.append(f"{n} live {shape}x{t.element_type} fragment{'s' if n > 1 else ''}")
        return f"{' + '.join(parts) or 'no live fragments'} = {self.fragment_registers}"


def _max(a: Peak, b: Peak) -> Peak:
    return b if b.fragment_registers > a.fragment_registers else a


@dataclass
class RegisterDemand:
    """The liveness walk; `of_block(block)` is the entry point.

    One walk reads each value's charge and sources, and each op's uses,
    many times (at every op of every enclosing block): they are computed
    once per value and op (the IR does not change while it runs), and the
    outer values an op's regions read are gathered bottom-up, from those of
    the ops inside them."""

    iter_args_in_place: bool = False
    """Let an elementwise result take over a dying loop iteration argument
    (the lower bound; see the module docstring)."""
    extra_uses: dict[Operation, list[SSAValue]] = field(default_factory=dict)
    """Ops that keep more values live than their operands say (the wait
    after a wgmma keeps its register A operand)."""
    _charged: dict[SSAValue, int] = field(default_factory=dict, init=False, repr=False)
    _sources: dict[SSAValue, set[SSAValue]] = field(default_factory=dict, init=False, repr=False)
    _direct: dict[Operation, set[SSAValue]] = field(default_factory=dict, init=False, repr=False)
    _inner: dict[Operation, set[SSAValue]] = field(default_factory=dict, init=False, repr=False)

    def of_block(self, block: Block) -> Peak:
        """The peak demand of `block` (a role's code), nothing live after it."""
        for op in block.walk():
            if isinstance(op, _WGMMAS) and isinstance(op.lhs.type, nvgpu.FragmentType):
                self.extra_uses.setdefault(_covering_wait(op), []).append(op.lhs)
        _, peak = self._block(block, set())
        return peak

    # ------------------------------------------------------------- per value

    def charged(self, v: SSAValue) -> int:
        """`charged_registers(v)`, once per value."""
        n = self._charged.get(v)
        if n is None:
            n = self._charged[v] = charged_registers(v)
        return n

    def sources(self, v: SSAValue) -> set[SSAValue]:
        """`sources(v)`, once per value (the caller must not change it)."""
        found = self._sources.get(v)
        if found is None:
            s = storage(v)
            if not _streamed(s):
                found = {s}
            else:
                assert isinstance(s, OpResult)
                found = set().union(*(self.sources(o) for o in s.op.operands if isinstance(o.type, nvgpu.FragmentType)))
            self._sources[v] = found
        return found

    # ------------------------------------------------------------------ walk

    def _direct_uses(self, op: Operation) -> set[SSAValue]:
        """Charged values `op` itself reads: its operands and extra uses."""
        found = self._direct.get(op)
        if found is None:
            found = self._direct[op] = {s for v in (*op.operands, *self.extra_uses.get(op, ()))
                                        for s in self.sources(v) if self.charged(s)}
        return found

    def _inner_uses(self, op: Operation) -> set[SSAValue]:
        """Charged values defined outside `op` that the ops in its regions read."""
        found = self._inner.get(op)
        if found is None:
            found = set()
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.ops:
                        found |= self._direct_uses(inner)
                        if inner.regions:
                            found |= self._inner_uses(inner)
            found = self._inner[op] = {s for s in found if not _defined_inside(s, op)}
        return found

    def _uses(self, op: Operation) -> set[SSAValue]:
        """Charged values `op` reads: operands, extra uses, and the outer
        values that its regions read."""
        if not op.regions:
            return set(self._direct_uses(op))
        return self._direct_uses(op) | self._inner_uses(op)

    def _block(self, block: Block, through: set[SSAValue]) -> tuple[set[SSAValue], Peak]:
        """Backward walk over `block`, `through` live all along it: the values
        live at its start and its peak."""
        live: set[SSAValue] = set()
        peak = Peak()
        for op in reversed(list(block.ops)):
            results = {r for r in op.results if self.charged(r)}
            uses = self._uses(op)
            if isinstance(op, scf.ForOp):
                inner_through = through | (live - results) | self._inner_uses(op)
                _, inner = self._block(op.body.block, inner_through)
                peak = _max(peak, inner)
            elif op.regions:
                for region in op.regions:
                    for b in region.blocks:
                        _, inner = self._block(b, through | (live - results))
                        peak = _max(peak, inner)
            peak = _max(peak, self._at(op, live, through, uses, results))
            live = (live - results) | uses
        return live, peak

    def _at(self, op: Operation, live: set[SSAValue], through: set[SSAValue],
            uses: set[SSAValue], results: set[SSAValue]) -> Peak:
        """Pressure at `op` itself, with results taking over dying operands."""
        held = through | live | uses | results
        taken: dict[SSAValue, SSAValue] = {}  # result -> the dying operand whose registers it takes
        charged = self.charged
        for r, candidates in _tied(op, self.iter_args_in_place):
            if r not in results:
                continue
            for o in (s for c in candidates for s in sorted(self.sources(c), key=charged, reverse=True)):
                if o in uses and o not in live and o not in through and o not in taken.values():
                    taken[r] = o
                    break
        # A result and the operand it takes over share registers: list the larger.
        listed = held - set(taken) - set(taken.values())
        listed |= {max(pair, key=charged) for pair in taken.items()}
        total = sum(charged(v) for v in listed)
        return Peak(total, op, tuple(sorted(listed, key=lambda v: -charged(v))))


def _tied(op: Operation, iter_args_in_place: bool) -> Iterable[tuple[SSAValue, list[SSAValue]]]:
    """(result, operands whose registers it may take over if they die)."""
    if isinstance(op, _WGMMAS):
        return [(op.result, [op.acc])]
    if isinstance(op, nvgpu.WgmmaWaitGroupOp):
        return [(r, [f]) for r, f in zip(op.results_, op.fragments)]
    if isinstance(op, scf.ForOp):
        return [(r, [v]) for r, v in zip(op.results, op.iter_args)]
    if isinstance(op, scf.IfOp):  # a result may live in the registers of a value a branch yields
        yields = [r.block.last_op for r in op.regions if r.blocks]
        return [(r, [t for y in yields if isinstance(y, scf.YieldOp) for t in _taken_over(y.operands[i], op)])
                for i, r in enumerate(op.results)]
    if isinstance(op, _ELEMENTWISE):
        fragments = [v for v in op.operands if isinstance(v.type, nvgpu.FragmentType)
                     and (iter_args_in_place or not _iter_arg(storage(v)))]
        return [(op.results[0], fragments)]
    return []


def _taken_over(v: SSAValue, op: Operation) -> list[SSAValue]:
    """`v`, and the values whose registers it took over inside `op`: a
    branch that yields a wgmma's accumulated result (through its wait) holds
    it in the registers of the accumulator it came in as (the last P·V of an
    overlapped loop's guard, `tawa-overlap-dots`)."""
    chain = [v]
    while isinstance(v, OpResult) and v.op is not op and op.is_ancestor(v.op):
        tied = [c for r, cs in _tied(v.op, False) if r is v for c in cs[:1]]
        if not tied or not isinstance(v.op, (*_WGMMAS, nvgpu.WgmmaWaitGroupOp)):
            break
        v = tied[0]
        chain.append(v)
    return chain


def _iter_arg(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), scf.ForOp)


def _defined_inside(v: SSAValue, op: Operation) -> bool:
    owner = v.owner if isinstance(v, BlockArgument) else v.op
    node = owner.parent_op() if isinstance(v, BlockArgument) else owner
    while node is not None:
        if node is op:
            return True
        node = node.parent_op()
    return False


def _covering_wait(wgmma: Operation) -> Operation:
    """The first `wgmma_wait_group` after `wgmma` in its block that retires
    its group: one whose pending count is below the groups committed after
    the wgmma's own (the block's last op when there is none: the operand
    stays live to the end).  With two groups in flight (`tawa-overlap-dots`)
    `wait_group 1` after the second retires only the first."""
    op, newer = wgmma.next_op, -1
    while op is not None:
        if isinstance(op, nvgpu.WgmmaCommitGroupOp):
            newer += 1
        if (isinstance(op, nvgpu.WgmmaWaitGroupOp) and 0 <= newer and op.pending.value.data <= newer) or op.next_op is None:
            return op
        op = op.next_op
    return wgmma
