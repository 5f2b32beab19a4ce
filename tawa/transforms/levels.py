"""The levels of tawa IR, and which level each of tawa's passes takes.

The Hopper pipeline moves a kernel through these levels, each reached by one
pass (`tawa-hopper-pipeline` runs them in this order):

    tile            the input: tile ops in a plain kernel
    aref            after tawa-warp-specialize (tawa-pipeline, tawa-persistent keep it)
    aref-staged     after tawa-assign-stage-phase: every put/get/consumed names its slot
    aref-lowered    after tawa-lower-aref: rings in shared memory, compute still tile ops
                    (tawa-stage-stores, tawa-stage-operands keep it)
    partitions      after tawa-lower-tile: all nvgpu, roles still aref.warp_specialize
                    (tawa-pingpong, tawa-pin-waits, tawa-drain-stores keep it)
    nvgpu           after tawa-materialize-partitions: warp-group branches, CTA ids
    nvgpu-stores    after tawa-expand-fragment-stores: epilogue stores as addresses
    ptx             after tawa-prepare-ptx: what `-t ptx` prints

A kernel's level is read from the ops it still holds: each step lists the
ops that show it has not run yet (a kernel with tile ops and no
`aref.warp_specialize` has not been specialized; an `aref.put` without a slot
has not been staged; ...), and the level is the one before the first such
step.  A module is at the level of its most advanced kernel: a kernel that
`tawa-warp-specialize` declined stays a tile kernel beside specialized ones,
and the passes leave it alone or report it themselves.

`PASS_LEVELS` says, for each pass, the earliest level it takes.  `tawa-opt`
calls `check_level` before every pass of a pipeline, so a pass given IR of
an earlier level fails with one located line naming the passes to run first,
instead of failing on (or silently skipping) the first op it does not know.
The pass modules do not know about this table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tawa.diagnostics import TawaError, location_of
from tawa.dialects import aref

PIPELINE = "tawa-hopper-pipeline"
"""The pass that runs every step (named in the errors as the short way)."""



def _unspecialized(kernel: func.FuncOp) -> Operation | None:
    """A kernel with tile ops and no `aref.warp_specialize`: the kernel itself."""
    ops = list(kernel.walk())
    if any(o.name == "aref.warp_specialize" for o in ops):
        return None
    return kernel if any(o.name.startswith("tile.") for o in ops) else None


def _unstaged(kernel: func.FuncOp) -> Operation | None:
    """An `aref.put`/`get`/`consumed` without its `[%stage, %phase]`."""
    return next((o for o in kernel.walk() if isinstance(o, _SLOT_OPS) and not o.has_slot()), None)


def _unlowered_arefs(kernel: func.FuncOp) -> Operation | None:
    """Any aref op but the `aref.warp_specialize` (rings not in shared memory yet)."""
    return next((o for o in kernel.walk() if o.name in _REF_OPS), None)


def _unlowered_tiles(kernel: func.FuncOp) -> Operation | None:
    """Any tile op but the program ids (which tawa-lower-tile leaves to
    tawa-materialize-partitions), or a store or operand staged for the
    lowering: compute not lowered to fragments and wgmma yet."""
    return next((o for o in kernel.walk() if o.name.startswith("tile.") and o.name not in _PROGRAM_IDS
                 or o.name in _STAGED), None)


def _unmaterialized(kernel: func.FuncOp) -> Operation | None:
    """An `aref.warp_specialize` (roles not branches on the warp-group id yet)."""
    return next((o for o in kernel.walk() if o.name == "aref.warp_specialize"), None)


def _unexpanded_stores(kernel: func.FuncOp) -> Operation | None:
    """An `nvgpu.frag_store` (epilogue store without its addresses yet)."""
    return next((o for o in kernel.walk() if o.name == "nvgpu.frag_store"), None)


def _unprepared(kernel: func.FuncOp) -> Operation | None:
    """What the PTX printer cannot print: `scf`, whole-tile wgmma, unencoded
    descriptors, shared-memory accesses without their addresses, bounded
    waits not written out, TMA copies of whole tiles."""
    return next((o for o in kernel.walk() if o.name in _UNPREPARED or o.name.startswith("scf.")
                 or o.name == "nvgpu.mbarrier_wait_parity" and "wait_id" in o.properties), None)


_SLOT_OPS = (aref.PutOp, aref.GetOp, aref.ConsumedOp)
_REF_OPS = frozenset({"aref.create", "aref.put", "aref.get", "aref.consumed"})
_STAGED = frozenset({"nvgpu.staged_store", "nvgpu.staged_operand"})
_PROGRAM_IDS = frozenset({"tile.program_id", "tile.num_programs"})
_UNPREPARED = frozenset({"nvgpu.wgmma", "nvgpu.wgmma_descriptor", "nvgpu.frag_load_shared", "nvgpu.frag_store_shared",
                         "nvgpu.tma_load", "nvgpu.tma_store"})


@dataclass(frozen=True)
class Step:
    """One pass of the Hopper pipeline: `route` (ending with the pass that
    reaches `level`) takes a kernel from the level before to `level`; a
    kernel still holding what `pending` finds has not taken this step."""

    level: str
    route: tuple[str, ...]
    pending: Callable[[func.FuncOp], Operation | None]


LEVEL_BEFORE_ALL = "tile"

STEPS: tuple[Step, ...] = (
    Step("aref", ("tawa-warp-specialize",), _unspecialized),
    Step("aref-staged", ("tawa-pipeline", "tawa-assign-stage-phase"), _unstaged),
    Step("aref-lowered", ("tawa-lower-aref",), _unlowered_arefs),
    Step("partitions", ("tawa-stage-stores", "tawa-stage-operands", "tawa-lower-tile"), _unlowered_tiles),
    Step("nvgpu", ("tawa-pingpong", "tawa-drain-stores", "tawa-materialize-partitions"), _unmaterialized),
    Step("nvgpu-stores", ("tawa-expand-fragment-stores",), _unexpanded_stores),
    Step("ptx", ("tawa-prepare-ptx",), _unprepared),
)
"""The levels in order, each with the passes that reach it from the one before."""

LEVELS: tuple[str, ...] = (LEVEL_BEFORE_ALL, *(s.level for s in STEPS))


@dataclass(frozen=True)
class Takes:
    """The earliest level a pass takes.  `reports` lists levels below it
    that the pass diagnoses itself, with a message of its own that tests
    pin (e.g. `tawa-lower-aref`: "aref.put has no stage and phase; run
    tawa-assign-stage-phase first"); the check leaves those to it."""

    level: str
    reports: tuple[str, ...] = ()


PASS_LEVELS: dict[str, Takes] = {
    "tawa-hopper-pipeline": Takes("tile"),
    "tawa-warp-specialize": Takes("tile"),
    "tawa-exp-to-exp2": Takes("tile"),
    "tawa-divide-by-reciprocal": Takes("tile"),
    "tawa-fold-dot-addend": Takes("tile"),
    "tawa-strength-reduce": Takes("tile"),
    # A kernel without aref.warp_specialize is left unchanged with a remark.
    "tawa-pipeline": Takes("aref", reports=("tile",)),
    "tawa-overlap-dots": Takes("aref"),
    "tawa-async-dots": Takes("aref"),
    "tawa-cache-hints": Takes("aref"),
    "tawa-cluster": Takes("aref"),
    "tawa-persistent": Takes("aref"),
    "tawa-defer-stores": Takes("aref"),
    "tawa-assign-stage-phase": Takes("aref"),
    "tawa-lower-aref": Takes("aref-staged", reports=("aref",)),
    "tawa-bound-waits": Takes("aref-lowered"),
    "tawa-break-protocol": Takes("aref-lowered"),
    "tawa-stage-stores": Takes("aref-lowered"),
    "tawa-stage-operands": Takes("aref-lowered"),
    "tawa-lower-tile": Takes("aref-lowered"),
    "tawa-pingpong": Takes("partitions"),
    "tawa-pin-waits": Takes("partitions"),
    "tawa-drain-stores": Takes("partitions"),
    # Tile ops left in a partition: "'tile.zeros' is not supported by the Hopper lowering yet".
    "tawa-materialize-partitions": Takes("partitions", reports=("aref-lowered",)),
    "tawa-expand-wgmma": Takes("partitions"),
    "tawa-encode-wgmma-descriptors": Takes("partitions"),
    "tawa-expand-shared-accesses": Takes("partitions"),
    "tawa-expand-bounded-waits": Takes("aref-lowered"),
    "tawa-split-tma-chunks": Takes("aref-lowered"),
    "tawa-expand-fragment-stores": Takes("nvgpu"),
    "tawa-occupancy": Takes("nvgpu"),
    "tawa-check-resources": Takes("nvgpu"),
    # The aref level too (its own proof); between tawa-lower-aref and
    # tawa-materialize-partitions it reports itself.
    "tawa-verify-protocol": Takes("aref"),
    "tawa-prepare-ptx": Takes("nvgpu-stores"),
}
"""The earliest level each of tawa's passes takes (keys: pass names).
Passes not listed (xDSL's) are not checked."""


def kernels(module: ModuleOp) -> Iterator[func.FuncOp]:
    """The functions with a body."""
    return (o for o in module.walk() if isinstance(o, func.FuncOp) and o.body.blocks)


def level_of(kernel: func.FuncOp, skip: tuple[str, ...] = ()) -> tuple[int, Operation | None]:
    """The index in `LEVELS` of `kernel`'s level and the op that shows it is
    not further on (None at the last level).  The steps that leave a level
    in `skip` are not looked at (the pass reports those itself)."""
    for i, step in enumerate(STEPS):
        if LEVELS[i] in skip:
            continue
        evidence = step.pending(kernel)
        if evidence is not None:
            return i, evidence
    return len(STEPS), None


def _follows_hopper_pipeline(pass_name: str, takes: Takes) -> bool:
    """Whether the pass can run on the output of `tawa-hopper-pipeline{prepare=false}`:
    it is no step of it (which would have run already) and takes lowered IR."""
    steps = {p for step in STEPS for p in step.route}
    return pass_name not in steps and LEVELS.index(takes.level) >= LEVELS.index("aref-lowered")


def check_level(pass_name: str, module: ModuleOp) -> None:
    """Raises a located TawaError when `module` has not reached the level
    `pass_name` takes, naming the passes to run first.  Passes without an
    entry in `PASS_LEVELS` are not checked, nor is IR past a pass's level
    (the passes leave what they do not find, or say so themselves)."""
    takes = PASS_LEVELS.get(pass_name)
    if takes is None:
        return
    needed = LEVELS.index(takes.level)
    found = [(*level_of(k, takes.reports), k) for k in kernels(module)]
    if not found:
        return
    reached, evidence, kernel = max(found, key=lambda f: f[0])
    if reached >= needed:
        return
    route = ",".join(p for step in STEPS[reached:needed] for p in step.route)
    if _follows_hopper_pipeline(pass_name, takes):
        shortcut = f", or {PIPELINE}{{prepare=false}}"
    else:
        shortcut = f" ({PIPELINE} runs every step)"
    where = location_of(evidence or kernel) or "tawa-opt"
    raise TawaError(
        f"{pass_name} needs IR after {STEPS[needed - 1].route[-1]} (level {takes.level}) but "
        f"@{kernel.sym_name.data} is at level {LEVELS[reached]}; run -p {route} first{shortcut}",
        where,
    )
