"""tawa's passes, one per module, registered lazily (keys equal pass names)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Factories of tawa's passes, keyed by pass name."""
    return {}
