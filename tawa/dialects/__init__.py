"""tawa's dialects, registered lazily like xdsl's own (`get_all_dialects`)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Factories of tawa's dialects, keyed by dialect name."""

    def get_tile() -> Dialect:
        from tawa.dialects.tile import Tile

        return Tile

    def get_aref() -> Dialect:
        from tawa.dialects.aref import Aref

        return Aref

    def get_nvgpu() -> Dialect:
        from tawa.dialects.nvgpu import NVGPU

        return NVGPU

    return {"tile": get_tile, "aref": get_aref, "nvgpu": get_nvgpu}
