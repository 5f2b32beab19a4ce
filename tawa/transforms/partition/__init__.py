"""Passes that split a kernel into roles and, at the end, make the roles
warp-group branches.

- `warp_specialize`: `tawa-warp-specialize`, tile level to aref level: the
  producer (TMA loads) and consumer (compute) partitions of an
  `aref.warp_specialize`, with arefs carrying what crosses between them.
- `materialize_partitions`: `tawa-materialize-partitions`, the partitions as
  branches on the warp-group id, program ids as CTA ids.
"""
