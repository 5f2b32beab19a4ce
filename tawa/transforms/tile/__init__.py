"""Passes on tile programs (the `tile` level), before any role is assigned.

- `exp_to_exp2`: `tawa-exp-to-exp2`, `math.exp` as `math.exp2` of a scaled
  argument (the form the GPU's `ex2` instruction computes).
- `reciprocal`: `tawa-divide-by-reciprocal`, division of an f32 tile by a
  broadcast as a product with the broadcast reciprocal.
- `dot_addend`: `tawa-fold-dot-addend`, a broadcast added to a product as
  the product's starting accumulator.
"""
