"""``kernel-review init``: read a repository as it is and write the policy that fits it.

``benchmarks`` finds the benchmarks it already has (``triton.testing.perf_report`` sweeps and
functions that time with ``do_bench``), ``scan`` finds its kernels and the functions that launch
them and groups both into ops, ``write`` renders the policy text, ``cli`` is the command. All of
it reads source text; nothing here imports torch or triton.
"""
