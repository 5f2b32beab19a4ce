"""The kernels a test module of tests/transforms/ defines (its CPU simulator
and ptxas tests), for the GPU tests here that launch the same kernels."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

TRANSFORMS = Path(__file__).resolve().parent.parent / "transforms"


def transforms_module(name: str) -> dict[str, Any]:
    """The globals of tests/transforms/`name`.py (whose helpers sit beside it)."""
    if str(TRANSFORMS) not in sys.path:
        sys.path.insert(0, str(TRANSFORMS))
    return runpy.run_path(str(TRANSFORMS / f"{name}.py"))
