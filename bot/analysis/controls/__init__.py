"""Controls a rewrite gives up or still has to get right, read from the changed source.

- ``lane_primitives``: the C++ kernels a rewrite replaces use warp or wavefront primitives
  (shuffles, votes, cooperative-groups tiles, DPP / ``ds_swizzle`` / ``__builtin_amdgcn_*``,
  inline asm) that a Triton kernel cannot write (Part B-6).
- ``async_timing``: the head's benchmark or test code times a kernel launch with the wall clock
  and no synchronisation or events (Part A: "still yours to get wrong").

Each adds :class:`bot.contracts.review.ChangeFinding` rows to the changes it concerns.
"""
