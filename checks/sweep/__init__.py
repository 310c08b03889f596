"""The shape sweep: cases, timing protocol, statistics, the worker pair, and its evidence."""
