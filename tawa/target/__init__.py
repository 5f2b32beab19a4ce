"""Target descriptions: the hardware facts of the GPUs tawa compiles for (`hopper`)."""
