"""tawa's passes, one per module, registered lazily (keys equal pass names)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Factories of tawa's passes, keyed by pass name."""

    def get_warp_specialize() -> type[ModulePass]:
        from tawa.transforms.partition.warp_specialize import WarpSpecializePass

        return WarpSpecializePass

    def get_pipeline() -> type[ModulePass]:
        from tawa.transforms.pipeline.pipeline import PipelinePass

        return PipelinePass

    def get_overlap_dots() -> type[ModulePass]:
        from tawa.transforms.pipeline.overlap_dots import OverlapDotsPass

        return OverlapDotsPass

    def get_async_dots() -> type[ModulePass]:
        from tawa.transforms.pipeline.async_dots import AsyncDotsPass

        return AsyncDotsPass

    def get_fold_dot_addend() -> type[ModulePass]:
        from tawa.transforms.tile.dot_addend import FoldDotAddendPass

        return FoldDotAddendPass

    def get_cache_hints() -> type[ModulePass]:
        from tawa.transforms.pipeline.cache_hints import CacheHintsPass

        return CacheHintsPass

    def get_cluster() -> type[ModulePass]:
        from tawa.transforms.pipeline.cluster import ClusterPass

        return ClusterPass

    def get_defer_stores() -> type[ModulePass]:
        from tawa.transforms.pipeline.defer_stores import DeferStoresPass

        return DeferStoresPass

    def get_lower_aref() -> type[ModulePass]:
        from tawa.transforms.lower.lower_aref import LowerArefPass

        return LowerArefPass

    def get_stage_stores() -> type[ModulePass]:
        from tawa.transforms.lower.stage_stores import StageStoresPass

        return StageStoresPass

    def get_stage_operands() -> type[ModulePass]:
        from tawa.transforms.lower.stage_operands import StageOperandsPass

        return StageOperandsPass

    def get_lower_tile() -> type[ModulePass]:
        from tawa.transforms.lower.lower_tile import LowerTilePass

        return LowerTilePass

    def get_pingpong() -> type[ModulePass]:
        from tawa.transforms.lower.pingpong import PingPongPass

        return PingPongPass

    def get_pin_waits() -> type[ModulePass]:
        from tawa.transforms.lower.pin_waits import PinWaitsPass

        return PinWaitsPass

    def get_drain_stores() -> type[ModulePass]:
        from tawa.transforms.lower.drain_stores import DrainStoresPass

        return DrainStoresPass

    def get_hopper_pipeline() -> type[ModulePass]:
        from tawa.transforms.hopper_pipeline import HopperPipelinePass

        return HopperPipelinePass

    def get_persistent() -> type[ModulePass]:
        from tawa.transforms.pipeline.persistent import PersistentPass

        return PersistentPass

    def get_assign_stage_phase() -> type[ModulePass]:
        from tawa.transforms.pipeline.assign_stage_phase import AssignStagePhasePass

        return AssignStagePhasePass

    def get_materialize_partitions() -> type[ModulePass]:
        from tawa.transforms.partition.materialize_partitions import MaterializePartitionsPass

        return MaterializePartitionsPass

    def get_exp_to_exp2() -> type[ModulePass]:
        from tawa.transforms.tile.exp_to_exp2 import ExpToExp2Pass

        return ExpToExp2Pass

    def get_divide_by_reciprocal() -> type[ModulePass]:
        from tawa.transforms.tile.reciprocal import DivideByReciprocalPass

        return DivideByReciprocalPass

    def get_occupancy() -> type[ModulePass]:
        from tawa.transforms.lower.occupancy import OccupancyPass

        return OccupancyPass

    def get_expand_fragment_stores() -> type[ModulePass]:
        from tawa.transforms.lower.expand_stores import ExpandFragmentStoresPass

        return ExpandFragmentStoresPass

    def get_expand_shared_accesses() -> type[ModulePass]:
        from tawa.transforms.prepare.expand_shared import ExpandSharedAccessesPass

        return ExpandSharedAccessesPass

    def get_expand_bounded_waits() -> type[ModulePass]:
        from tawa.transforms.prepare.expand_bounded_waits import ExpandBoundedWaitsPass

        return ExpandBoundedWaitsPass

    def get_split_tma_chunks() -> type[ModulePass]:
        from tawa.transforms.prepare.split_tma import SplitTmaChunksPass

        return SplitTmaChunksPass

    def get_prepare_ptx() -> type[ModulePass]:
        from tawa.transforms.prepare.prepare_ptx import PreparePtxPass

        return PreparePtxPass

    def get_expand_wgmma() -> type[ModulePass]:
        from tawa.transforms.prepare.expand_wgmma import ExpandWgmmaPass

        return ExpandWgmmaPass

    def get_encode_wgmma_descriptors() -> type[ModulePass]:
        from tawa.transforms.prepare.encode_descriptors import EncodeWgmmaDescriptorsPass

        return EncodeWgmmaDescriptorsPass

    def get_check_resources() -> type[ModulePass]:
        from tawa.verify.check_resources import CheckResourcesPass

        return CheckResourcesPass

    def get_strength_reduce() -> type[ModulePass]:
        from tawa.transforms.prepare.strength_reduce import StrengthReducePass

        return StrengthReducePass

    def get_bound_waits() -> type[ModulePass]:
        from tawa.transforms.lower.bound_waits import BoundWaitsPass

        return BoundWaitsPass

    def get_break_protocol() -> type[ModulePass]:
        from tawa.transforms.testing import BreakProtocolPass

        return BreakProtocolPass

    def get_verify_protocol() -> type[ModulePass]:
        from tawa.verify.verify_protocol import VerifyProtocolPass

        return VerifyProtocolPass

    return {
        "tawa-verify-protocol": get_verify_protocol,
        "tawa-bound-waits": get_bound_waits,
        "tawa-break-protocol": get_break_protocol,
        "tawa-check-resources": get_check_resources,
        "tawa-prepare-ptx": get_prepare_ptx,
        "tawa-expand-wgmma": get_expand_wgmma,
        "tawa-encode-wgmma-descriptors": get_encode_wgmma_descriptors,
        "tawa-strength-reduce": get_strength_reduce,
        "tawa-expand-fragment-stores": get_expand_fragment_stores,
        "tawa-divide-by-reciprocal": get_divide_by_reciprocal,
        "tawa-occupancy": get_occupancy,
        "tawa-expand-shared-accesses": get_expand_shared_accesses,
        "tawa-expand-bounded-waits": get_expand_bounded_waits,
        "tawa-split-tma-chunks": get_split_tma_chunks,
        "tawa-assign-stage-phase": get_assign_stage_phase,
        "tawa-materialize-partitions": get_materialize_partitions,
        "tawa-hopper-pipeline": get_hopper_pipeline,
        "tawa-persistent": get_persistent,
        "tawa-warp-specialize": get_warp_specialize,
        "tawa-stage-stores": get_stage_stores,
        "tawa-stage-operands": get_stage_operands,
        "tawa-lower-tile": get_lower_tile,
        "tawa-pingpong": get_pingpong,
        "tawa-pin-waits": get_pin_waits,
        "tawa-drain-stores": get_drain_stores,
        "tawa-pipeline": get_pipeline,
        "tawa-overlap-dots": get_overlap_dots,
        "tawa-async-dots": get_async_dots,
        "tawa-fold-dot-addend": get_fold_dot_addend,
        "tawa-cache-hints": get_cache_hints,
        "tawa-cluster": get_cluster,
        "tawa-defer-stores": get_defer_stores,
        "tawa-lower-aref": get_lower_aref,
        "tawa-exp-to-exp2": get_exp_to_exp2,
    }
