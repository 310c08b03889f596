"""What one analysis sets up for its own speed while it runs, and puts back when it returns.

- :func:`bot.analysis.text.walk` remembers the syntax trees walked more than once
  (``remembering_walks``): two thirds of the nodes walked over the corpus were walks of a tree
  already walked in the same analysis.
- Python's cycle collector waits: its passes over every object alive (the parsed trees that
  ``text.parse_python`` and the scans' caches hold among them) were a fifth of the corpus's
  analysis time. An analysis makes few objects that only a collection frees (at most 32 thousand
  on the corpus, against millions of syntax nodes freed as soon as they are dropped), and the
  collector, on again, frees them at its next pass. A caller that turned it off keeps it off.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from bot.analysis.text import remembering_walks

_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_analysis(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` run as one analysis (see the module's doc); an analysis inside another runs in
    the outer one's set-up."""
    walks = remembering_walks(func)

    @functools.wraps(func)
    def analysis(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return walks(*args, **kwargs)
        gc.disable()
        try:
            return walks(*args, **kwargs)
        finally:
            gc.enable()

    return analysis
