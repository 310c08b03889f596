"""kernel-review: reviews pull requests that rewrite GPU kernels.

The ``bot`` package is the GitHub side and the pure core (policy, diff detection, plan,
verdict, rendering). It never imports torch or triton; the ``checks`` package measures.
"""

__version__ = "0.1.0"
