"""Code generation targets (`tawa-opt -t NAME`)."""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Factories of tawa's targets, keyed by target name."""

    def get_ptx() -> type[Target]:
        from tawa.backend.ptx import PTXTarget

        return PTXTarget

    return {"ptx": get_ptx}
