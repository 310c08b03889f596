"""The first-call cost: JIT compile and autotune in fresh processes, cold and warm cache."""
