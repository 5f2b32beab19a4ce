"""Teams of a consumer partition take turns over the programs (ping-pong consumers).

A consumer partition of `teams(T)` (`tawa-warp-specialize{teams}`) runs its
region T times at once, one copy per team of warp groups.  In a persistent
kernel each team runs every T-th program of its CTA and passes over the
others: `tawa-persistent` makes the body of the loop over programs

    %i = (%program - %first) / %step          // the CTA's i-th program
    scf.if (%i mod T == aref.team_id) {
      <the program>                            // gets, dots, epilogue
    } else {
      <its skips>                              // aref.skip of every get it would make
    }

The producer still puts every program's tiles, in program order; team t
gets the puts of its own programs and skips the others' (`aref.skip`), so
its position in each ring stays where the producer's puts for its next
program land.  While one team runs its epilogue the next one already runs
its main loop: the epilogue hides under the other team's dots, which is what
a ping-pong GEMM is for.

**Turns.**  A team's gets become mbarrier waits on the ring's `full`
barriers with the parity of the pass over the ring (`tawa-lower-aref`), and
a parity tells apart only two consecutive passes.  A team that skipped
ahead could wait for pass p + 1 of a slot whose pass p the producer has not
filled yet, and pass at once on the stale parity.  So the teams' main loops
take turns, as in CUTLASS's ping-pong kernel (`take_turns`): team k waits
for its turn (named barrier `TURNS + k`) before the first op of its program
that waits on a ring, and after the last one hands the turn to the team of
the next program (`TURNS + (k + 1) mod T`), if there is one.  When a team
waits for a slot, every earlier put has then been waited for by the team
that took it, so each wait is at most one pass ahead of the slot.  Team
T − 1 hands team 0 its first turn before the loop.  Team k syncs its
barrier once per program it runs and receives one hand-over per such
program (the first program's from the start), so every barrier generation
has one syncing and one arriving team, and no team hands over twice before
the next sync (the turn goes round the ring in between).  This also orders
the teams' dots: one team's main loop runs on the tensor cores while the
previous team runs its epilogue.

Measured slower on the H100 (docs/perf.md, "Ping-pong consumers (teams)"):
the 64x256 GEMM with two teams runs behind the cooperative 128x256 kernel.
One warp group issuing its main loop keeps the tensor pipe less busy than
two warp groups issuing together; the turns run one team's main loop at a
time, so the epilogue the ping-pong hides is paid back in the main loop.
Teams are an option (`tawa-hopper-pipeline{teams=2}`), off by default.

**The skips of a program** (`skips_of`) are built from its body: every
`aref.get` becomes `aref.skip %r, 1`; an `scf.for` whose body gets
unconditionally (no get nested in a region op of the body) becomes one
`aref.skip %r, c · trips` per aref (c gets per iteration, trips =
⌈(ub − lb) / step⌉ or 0), so a GEMM skips a whole main loop with one
multiply; any other `scf.for` or `scf.if` around gets is kept, without
results, around the skips of its body.  Loop bounds and conditions are
recomputed from the scalar ops that define them; one computed from anything
else (a value carried by a loop, a loaded value) is a located error.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tawa.dialects import aref, nvgpu
from tawa.target.hopper import NAMED_BARRIERS
from tawa.transforms.pingpong import TURNS
from tawa.transforms.utils import const, fail, group_tests, guarded, per_group

NAME = "tawa-persistent"
TEAM_PROGRAM = "tawa.team_program"
"""Unit attribute on the `scf.if` of `divide_programs`: its first region is
a team's program, its second the skips."""


def _gets_in(node: Operation | Block) -> list[aref.GetOp]:
    return [o for o in node.walk() if isinstance(o, aref.GetOp)]


class _Skips:
    """Builds the skips of one program's body (module docstring)."""

    def __init__(self, src: Block):
        self.src = src
        self.vmap: dict[SSAValue, SSAValue] = {}

    def value(self, v: SSAValue, dst: Block, why: Operation) -> SSAValue:
        """`v` in the skip code: itself when defined outside the body, else
        its scalar definition recomputed in `dst` (or the induction variable
        of a loop the skips keep)."""
        if v in self.vmap:
            return self.vmap[v]
        owner = v.block.parent_op() if isinstance(v, BlockArgument) else v.owner
        if not (isinstance(v, BlockArgument) and v.block is self.src or self._inside(owner)):
            return v
        op = v.owner
        scalar = isinstance(op, Operation) and not op.regions and not any(
            isinstance(r.type, TensorType) for r in op.results)
        # arith's divisions are not marked side-effect free (division by zero), but
        # the program computes the same value from the same operands.
        if not scalar or not (is_side_effect_free(op) or op.dialect_name() == "arith"):
            what = f"'{owner.name}'" if isinstance(owner, Operation) else "the program"
            raise fail(why, f"{NAME}: teams: the bounds of this '{why.name}' come from {what}, which another "
                            "team cannot recompute to count the arefs it would get")
        operands = [self.value(o, dst, why) for o in op.operands]
        clone = op.clone(value_mapper=dict(zip(op.operands, operands, strict=True)))
        dst.add_op(clone)
        for old, new in zip(op.results, clone.results, strict=True):
            self.vmap[old] = new
        return self.vmap[v]

    def _inside(self, op: Operation | None) -> bool:
        while op is not None:
            if op.parent_block() is self.src:
                return True
            op = op.parent_op()
        return False

    def block(self, src: Block, dst: Block) -> None:
        for op in src.ops:
            if isinstance(op, aref.GetOp):
                dst.add_op(aref.SkipOp(op.aref, self._const(1, dst)))
            elif isinstance(op, scf.ForOp) and _gets_in(op):
                self._for(op, dst)
            elif isinstance(op, scf.IfOp) and _gets_in(op):
                cond = self.value(op.cond, dst, op)
                regions = []
                for r in op.regions:
                    inner = Block()
                    if r.blocks:
                        self.block(r.block, inner)
                    inner.add_op(scf.YieldOp())
                    regions.append(Region(inner))
                dst.add_op(scf.IfOp(cond, [], *regions))
            elif op.regions and _gets_in(op):
                raise fail(op, f"{NAME}: teams: aref.get inside '{op.name}' (only scf.for and scf.if) cannot "
                               "be skipped")

    def _for(self, loop: scf.ForOp, dst: Block) -> None:
        lb, ub, step = (self.value(v, dst, loop) for v in (loop.lb, loop.ub, loop.step))
        body = loop.body.block
        flat = [o for o in body.ops if isinstance(o, aref.GetOp)]
        if len(flat) == len(_gets_in(body)):  # unconditional: one skip per aref
            trips = self._trips(lb, ub, step, dst)
            per_iter: dict[SSAValue, int] = {}
            for g in flat:
                per_iter[g.aref] = per_iter.get(g.aref, 0) + 1
            for ref, c in per_iter.items():
                n = trips
                if c > 1:
                    dst.add_op(times := arith.MuliOp(trips, self._const(c, dst)))
                    n = times.result
                dst.add_op(aref.SkipOp(ref, n))
            return
        inner = Block(arg_types=[lb.type])
        self.vmap[body.args[0]] = inner.args[0]
        self.block(body, inner)
        inner.add_op(scf.YieldOp())
        dst.add_op(scf.ForOp(lb, ub, step, [], inner))

    @staticmethod
    def _const(value: int, dst: Block) -> SSAValue:
        return const(value, InsertPoint.at_end(dst))

    def _trips(self, lb: SSAValue, ub: SSAValue, step: SSAValue, dst: Block) -> SSAValue:
        """⌈(ub − lb) / step⌉, or 0 when ub ≤ lb."""
        zero, one = self._const(0, dst), self._const(1, dst)
        ops = [
            runs := arith.CmpiOp(ub, lb, "ugt"),
            span := arith.SubiOp(ub, lb),
            up := arith.AddiOp(span.result, step),
            less := arith.SubiOp(up.result, one),
            n := arith.DivUIOp(less.result, step),
            trips := arith.SelectOp(runs.result, n.result, zero),
        ]
        dst.add_ops(ops)
        trips.result.name_hint = "trips"
        return trips.result


def skips_of(body: Block) -> Block:
    """A block (without terminator) that skips every get `body` makes."""
    out = Block()
    _Skips(body).block(body, out)
    return out


def divide_programs(body: Block, first: SSAValue, step: SSAValue, teams: int) -> None:
    """Makes the body of a loop over programs (induction variable `body.args[0]`
    from `first` by `step`; its terminator last) run the program on one team
    of `teams` in turn and skip it on the others (module docstring)."""
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp) and not yield_op.operands
    program = Block()
    for o in list(body.ops):
        if o is not yield_op:
            o.detach()
            program.add_op(o)
    skips = skips_of(program)
    program.add_op(scf.YieldOp())
    skips.add_op(scf.YieldOp())
    at = InsertPoint.before(yield_op)
    team = aref.TeamIdOp()
    ops = [
        team,
        offset := arith.SubiOp(body.args[0], first),
        i := arith.DivUIOp(offset.result, step),
        turn := arith.RemUIOp(i.result, const(teams, InsertPoint.at_start(body))),
        mine := arith.CmpiOp(turn.result, team.result, "eq"),
    ]
    Rewriter.insert_op(ops, at)
    team.result.name_hint, turn.result.name_hint, mine.result.name_hint = "team", "turn", "mine"
    branch = scf.IfOp(mine.result, [], Region(program), Region(skips))
    branch.attributes[TEAM_PROGRAM] = UnitAttr()
    Rewriter.insert_op(branch, at)


def _waits_on_rings(op: Operation) -> bool:
    return any(isinstance(o, nvgpu.MBarrierWaitParityOp) for o in op.walk())


def take_turns(region: Region, teams: int, threads: int, who: str) -> int:
    """Orders the main loops of the `teams` teams (of `threads` threads each)
    of a consumer partition (`region`, after its gets became mbarrier
    waits): the module docstring's turns.  Returns how many program loops it
    ordered."""
    if TURNS + teams > NAMED_BARRIERS:
        raise fail(region.parent_op(), f"{who}: {teams} teams need more named barriers than a CTA has")
    done = 0
    for branch in [o for o in region.walk() if isinstance(o, scf.IfOp) and TEAM_PROGRAM in o.attributes]:
        loop = branch.parent_op()
        spans = [o for o in branch.true_region.block.ops if _waits_on_rings(o)]
        if not isinstance(loop, scf.ForOp) or not spans:
            continue
        pair = 2 * threads  # the team that takes the turn and the one that hands it over
        team_id = aref.TeamIdOp()
        Rewriter.insert_op(team_id, InsertPoint.before(loop))
        team = team_id.result

        def each(make, at: InsertPoint, team=team) -> scf.IfOp:
            return per_group(group_tests(team, teams, at), [make(k) for k in range(teams)])

        before_loop = InsertPoint.before(loop)
        last = arith.CmpiOp(team, const(teams - 1, before_loop), "eq")
        Rewriter.insert_op([last, guarded(last.result, [nvgpu.NamedBarrierArriveOp(TURNS, pair)])], before_loop)
        at = InsertPoint.before(spans[0])
        Rewriter.insert_op(each(lambda k: [nvgpu.NamedBarrierSyncOp(TURNS + k, pair)], at), at)
        assert spans[-1].next_op is not None  # the region's yield at least
        at = InsertPoint.before(spans[-1].next_op)
        ops = [after := arith.AddiOp(loop.body.block.args[0], loop.step),
               more := arith.CmpiOp(after.result, loop.ub, "ult")]
        Rewriter.insert_op(ops, at)
        more.result.name_hint = "next_program"
        hand_over = each(lambda k: [nvgpu.NamedBarrierArriveOp(TURNS + (k + 1) % teams, pair)], at)
        Rewriter.insert_op(guarded(more.result, [hand_over]), at)
        done += 1
    return done
