"""The compiler report: cross-compiled registers, spills, shared memory, occupancy, instructions."""
