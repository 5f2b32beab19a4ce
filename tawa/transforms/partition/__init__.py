"""Passes that split a kernel into roles and, at the end, make the roles
warp-group branches.

- `warp_specialize`: `tawa-warp-specialize`, tile level to aref level: the
  producer (TMA loads) and consumer (compute) partitions of an
  `aref.warp_specialize`, with arefs carrying what crosses between them.
- `warp_groups`: the warp groups and register budgets of the partitions
  (consumer warp groups per tile rows, blocked layouts for kernels without
  dots, `setmaxnreg` budgets), which later passes read back.
- `loaded_offsets`: guards on accesses placed by loaded table entries.
- `materialize_partitions`: `tawa-materialize-partitions`, the partitions as
  branches on the warp-group id, program ids as CTA ids.
"""
