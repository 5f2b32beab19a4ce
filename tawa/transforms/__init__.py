"""tawa's passes, one per module, registered lazily (keys equal pass names)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Factories of tawa's passes, keyed by pass name."""

    def get_warp_specialize() -> type[ModulePass]:
        from tawa.transforms.warp_specialize import WarpSpecializePass

        return WarpSpecializePass

    def get_pipeline() -> type[ModulePass]:
        from tawa.transforms.pipeline import PipelinePass

        return PipelinePass

    return {"tawa-warp-specialize": get_warp_specialize, "tawa-pipeline": get_pipeline}
