"""Passes inside `tawa-prepare-ptx`: nvgpu IR made into what the PTX printer
prints one op at a time (every address, descriptor and branch as an op).

- `prepare_ptx`: `tawa-prepare-ptx`, runs the passes below and
  `convert-scf-to-cf`.
- `expand_wgmma`: `tawa-expand-wgmma`, one wgmma per instruction shape.
- `encode_descriptors`: `tawa-encode-wgmma-descriptors`, shared-memory matrix
  descriptors as integer arithmetic.
- `expand_shared`: `tawa-expand-shared-accesses`, swizzled shared-memory
  fragment addresses as arithmetic.
- `split_tma`: `tawa-split-tma-chunks`, one TMA op per box-wide chunk.
- `expand_bounded_waits`: `tawa-expand-bounded-waits`, the watchdog's timed
  wait and report as ops.
- `strength_reduce`: `tawa-strength-reduce`, unsigned division and remainder
  by powers of two as shifts and masks.
- `rewrite_each`: how the passes above that rewrite ops of a few kinds visit
  those ops, not every op of the module.
"""
