"""Code generation targets (`tawa-opt -t NAME`)."""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Factories of tawa's targets, keyed by target name."""
    return {}
