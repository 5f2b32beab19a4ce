"""Rewriting the few ops of some kinds without visiting every op of the module.

Most passes of `tawa-prepare-ptx` rewrite ops of one or two kinds (a wgmma,
a descriptor, a TMA copy, a wait): a few dozen of the thousands of ops of a
kernel.  xDSL's `PatternRewriteWalker` pushes every op of the module onto
its worklist, pops it, resets its rewriter and offers it to the patterns;
for these passes that bookkeeping took about half their time, more than the
rewrites.  `rewrite_each` finds the ops of those kinds in one walk and
rewrites each once.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern


def rewrite_each(module: ModuleOp, patterns: Mapping[type[Operation], RewritePattern]) -> None:
    """Offers each op of `module` of a kind that `patterns` names to that
    kind's pattern, once, in walk order (an op before the ops of its
    regions): what `PatternRewriteWalker(pattern, apply_recursively=False)`
    does, with no dead-code elimination, for patterns that match only their
    kind.  Ops a rewrite creates are not offered, nor ops it erased (or
    whose ancestor it erased)."""
    kinds = tuple(patterns)
    for op in [o for o in module.walk() if isinstance(o, kinds)]:
        if _inside(op, module):
            pattern = next(p for kind, p in patterns.items() if isinstance(op, kind))
            pattern.match_and_rewrite(op, PatternRewriter(op))


def _inside(op: Operation, module: ModuleOp) -> bool:
    """Whether `op` is still in `module` (not erased, nor inside an erased op)."""
    node: Operation | None = op
    while node is not None:
        if node is module:
            return True
        node = node.parent_op()
    return False
