"""Checks of lowered kernels, run by `tawa-hopper-pipeline` before PTX: they
change nothing, and a kernel that fails one is rejected with a located error.

- `check_resources`: `tawa-check-resources`, shared memory, registers per
  thread (`tawa.analysis.register_demand`), named barriers, TMA boxes.
- `verify_protocol`: `tawa-verify-protocol`, the proof that every kernel's
  mbarrier protocol is free of deadlock and of overwrites, by an exhaustive
  search (docs/protocol.md) over the protocol model:
  - `protocol_model`: the barrier events of each warp group's trace;
  - `protocol_slots`: who holds which stage, checked on each trace alone;
  - `protocol_reduction`: the persistent-set reduction of the search;
  - `protocol_search`: the exhaustive search and its counterexamples.
"""
