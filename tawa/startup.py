"""Less work for Python's cyclic garbage collector while tawa starts.

Importing tawa and the passes of a compile defines thousands of classes
and functions (xDSL's op and attribute definitions among them) and makes
hundreds of thousands of objects that live as long as the process, and
almost no garbage.  The collector's generations fill up as they are made,
so it runs again and again over them while they are being made, and every
full collection later rescans them all (docs/perf.md, "Compile time").

`paused_collector()` pauses the collector for a block (the imports of
`import tawa`, the setting-up of `tawa-opt`'s pipeline) and restores it
after.  `tawa-opt`, run as a command, then freezes what its start-up made
(`gc.freeze`: later collections skip it) before it compiles.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """The collector off within the block, then as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
