"""Passes on aref-level IR: how deep the rings are, what overlaps, in which
order a CTA visits its tiles, and which slot each access names.

- `pipeline`: `tawa-pipeline`, D-slot rings and the producer running ahead.
- `overlap_dots`: `tawa-overlap-dots`, a dot left in flight across iterations.
- `async_dots`: `tawa-async-dots`, a loop's dots issued early and waited for
  late within an iteration.
- `cache_hints`: `tawa-cache-hints`, L2 eviction hints on TMA loads.
- `cluster`: `tawa-cluster`, TMA multicast across a cluster's CTAs.
- `persistent`: `tawa-persistent`, one CTA per SM looping over tiles.
- `defer_stores`: `tawa-defer-stores`, a tile's epilogue overlapped with the
  next tile's main loop.
- `assign_stage_phase`: `tawa-assign-stage-phase`, every put/get/consumed
  names its slot and phase (the `aref-staged` level).
"""
