"""Let the Triton 3.6 interpreter (``TRITON_INTERPRET=1``) run under NumPy 2.4 and later.

The interpreter turns a scalar used as a loop bound into a Python int with ``int(array)``, and its
scalars are 1-element arrays; NumPy 2.4 refuses that conversion, so any kernel whose loop bounds
come from ``tl.program_id`` (the persistent softmax) fails on the CPU with "only 0-dimensional
arrays can be converted to Python scalars" (triton-lang/triton#9171, fixed after 3.6). ``apply``
installs the upstream fix: convert the array's single element instead.
"""

from __future__ import annotations

_APPLIED = False


def needs_fix() -> bool:
    import numpy as np

    try:
        int(np.zeros(1, dtype=np.int32))
    except TypeError:
        return True
    return False


def apply() -> bool:
    """Patch the interpreter if this NumPy needs it; returns whether a patch is in place."""
    global _APPLIED
    if _APPLIED:
        return True
    if not needs_fix():
        return False
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor

    def patch_lang_tensor(tensor, scope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patch_lang_tensor
    _APPLIED = True
    return True
