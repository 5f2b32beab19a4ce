"""Analyses that the passes and the runtime consult: models of what a
kernel will cost or need, computed from the program and the hardware facts
(`tawa.target.hopper`) without running it.

- `gemm_cost`: the time of a GEMM configuration (`tawa.runtime.gemm_choice.Choice`)
  on a problem, from the H100's rates and a few fitted efficiencies; the
  GEMM heuristic takes the candidate it estimates fastest, and autotuning
  times only the few it ranks best (docs/runtime.md, "Configurations and
  autotuning").
- `smem_plan`: where each ring, staging and operand buffer lies in shared
  memory, and whether the plan fits.
- `register_demand`: the registers per thread a lowered kernel needs, from
  its live fragments.
- `program_order`: the order in which a grid's programs visit output tiles
  (L2 reuse), shared by the passes that schedule programs.
"""
