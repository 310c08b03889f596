"""The measurement side: shape sweeps, first-call cost, compiler reports, repo conditions.

torch and triton are imported inside the functions that need them, so that planning and
rendering work on a runner that has neither.
"""
