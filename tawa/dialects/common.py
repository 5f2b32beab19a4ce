"""Op building blocks shared by tawa's dialects."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr
from xdsl.irdl import IRDLOperation, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


class GridAxisOp(IRDLOperation):
    """An `index` read from launch-grid axis `axis` (0, 1 or 2): program ids,
    grid sizes, CTA ids.  Subclasses set the name and document the value."""

    axis = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$axis attr-dict"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, 64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        if self.axis.value.data not in (0, 1, 2):
            raise VerifyException(f"{self.name} axis must be 0, 1 or 2, got {self.axis.value.data}")
