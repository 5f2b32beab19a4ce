"""Passes that lower aref-level IR to Hopper operations (`nvgpu`).

- `lower_aref`: `tawa-lower-aref`, rings as shared-memory buffers and
  mbarriers; puts as TMA loads (with `slot_views`, `masks`).
- `bound_waits`: `tawa-bound-waits`, mbarrier waits with a watchdog timeout.
- `lower_tile`: `tawa-lower-tile`, consumer tile compute as wgmma and register
  fragments: the rewrite patterns of `consumer_patterns` (register layouts
  from `wgmma_layout`), the TMA-store epilogue (`tma_epilogue`), shared
  operands (`operand_staging`), turn-taking warp groups (`pingpong`) and
  pinned waits (`pin_waits`).
- `expand_stores`: `tawa-expand-fragment-stores`, fragment loads and stores as
  per-thread global addresses.
"""
