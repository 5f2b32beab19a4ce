"""Passes that lower aref-level IR to Hopper operations (`nvgpu`), in pipeline order.

- `lower_aref`: `tawa-lower-aref`, rings as shared-memory buffers and
  mbarriers; puts as TMA loads (with `slot_views`, `masks`).
- `bound_waits`: `tawa-bound-waits`, mbarrier waits with a watchdog timeout.
- `stage_stores`: `tawa-stage-stores`, the consumer stores and atomic adds
  that take the TMA-store epilogue (`tma_epilogue`), with their staging
  buffers and tensor maps: `nvgpu.staged_store`.
- `stage_operands`: `tawa-stage-operands`, a shared-memory buffer for each
  8-bit or transposed A operand and each B operand computed in registers
  (`operand_staging`): `nvgpu.staged_operand`.
- `lower_tile`: `tawa-lower-tile`, consumer tile compute as wgmma and register
  fragments: the rewrite patterns of `consumer_patterns` (register layouts
  from `wgmma_layout`), staged stores and operands written out through their
  buffers.
- `pingpong`: `tawa-pingpong`, the warp groups of an overlapped loop take
  turns issuing their dots.
- `pin_waits`: `tawa-pin-waits`, a fence keeps a wgmma wait after register
  math.
- `drain_stores`: `tawa-drain-stores`, a consumer's TMA stores have read
  shared memory before it ends.
- `expand_stores`: `tawa-expand-fragment-stores`, fragment loads and stores as
  per-thread global addresses.
- `occupancy`: `tawa-occupancy`, CTAs per SM and the registers each starts
  with (`.maxnreg`), from the machine model and the register demand.

`partitions` holds what these passes share: the consumer partitions of a
module and the warp group's index in one.
"""
