"""`tawa-prepare-ptx`: nvgpu → nvgpu, into the form the PTX printer prints op by op.

    tawa-expand-wgmma , tawa-encode-wgmma-descriptors , tawa-expand-shared-accesses ,
    tawa-expand-bounded-waits , tawa-split-tma-chunks , tawa-strength-reduce ,
    convert-scf-to-cf

Afterwards every op is one PTX instruction or a fixed sequence, every
offset, shared-memory address and descriptor field is an attribute or
`arith`, a watchdog's report and each TMA box are ops, and control flow
is `cf` blocks (xDSL's `convert-scf-to-cf` handles `scf.for` with
iter_args and `scf.if` with results).  `tawa-hopper-pipeline` ends with
this stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf

from tawa.transforms.prepare.encode_descriptors import EncodeWgmmaDescriptorsPass
from tawa.transforms.prepare.expand_bounded_waits import ExpandBoundedWaitsPass
from tawa.transforms.prepare.expand_shared import ExpandSharedAccessesPass
from tawa.transforms.prepare.expand_wgmma import ExpandWgmmaPass
from tawa.transforms.prepare.split_tma import SplitTmaChunksPass
from tawa.transforms.prepare.strength_reduce import StrengthReducePass


@dataclass(frozen=True)
class PreparePtxPass(ModulePass):
    """Expands wgmma, encodes descriptors, forms shared-memory addresses, writes out bounded waits and
    TMA boxes, strength-reduces and flattens control flow for the PTX printer."""

    name = "tawa-prepare-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in self.steps():
            p.apply(ctx, op)

    @staticmethod
    def steps() -> tuple[ModulePass, ...]:
        """Its passes in order (the CPU simulator runs structured control
        flow, i.e. the output of every one but the last)."""
        return (ExpandWgmmaPass(), EncodeWgmmaDescriptorsPass(), ExpandSharedAccessesPass(), ExpandBoundedWaitsPass(),
                SplitTmaChunksPass(), StrengthReducePass(), ConvertScfToCf())
