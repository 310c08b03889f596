"""Random inputs without the random numbers, for compile-only recording.

A compile-only run launches nothing: what reaches the compiler from a tensor is its dtype, shape,
strides and whether its address is 16-byte aligned, never its values. Filling a served shape's
inputs with random numbers on a CPU (a 4096^3 matmul's operands, a 2^26-element vector) is most of
the time a recording takes, so while recording ``torch.randn``/``rand``/``randint`` and their
``_like`` forms allocate without filling, and the in-place random fills do nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_FACTORIES = ("randn", "rand")
_LIKE = ("randn_like", "rand_like")
_IN_PLACE = ("normal_", "uniform_", "random_", "exponential_", "bernoulli_")
_KEEP = ("dtype", "device", "requires_grad", "layout", "pin_memory", "memory_format")


def _kw(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k in _KEEP and k != "memory_format"}


@contextlib.contextmanager
def unfilled_random() -> Iterator[None]:
    import torch

    saved = {
        name: getattr(torch, name) for name in (*_FACTORIES, *_LIKE, "randint", "randint_like")
    }
    saved_methods = {name: getattr(torch.Tensor, name) for name in _IN_PLACE}

    def factory(*size: Any, **kwargs: Any) -> Any:
        shape = kwargs.pop("size", None) or size
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return torch.empty(shape, **_kw(kwargs))

    def like(t: Any, *args: Any, **kwargs: Any) -> Any:
        keep = {k: v for k, v in kwargs.items() if k in _KEEP}
        return torch.empty_like(t, **keep)

    def randint(*args: Any, **kwargs: Any) -> Any:
        shape = kwargs.pop("size", None)
        if shape is None:
            shape = next(a for a in args if isinstance(a, (tuple, list, torch.Size)))
        kwargs.setdefault("dtype", torch.int64)
        return torch.zeros(tuple(shape), **_kw(kwargs))  # zeros: a valid index anywhere

    def randint_like(t: Any, *args: Any, **kwargs: Any) -> Any:
        return torch.zeros_like(t, **{k: v for k, v in kwargs.items() if k in _KEEP})

    def in_place(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self

    for name in _FACTORIES:
        setattr(torch, name, factory)
    for name in _LIKE:
        setattr(torch, name, like)
    torch.randint = randint
    torch.randint_like = randint_like  # type: ignore[assignment]  # torch types it overloaded
    for name in _IN_PLACE:
        setattr(torch.Tensor, name, in_place)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        for name, fn in saved_methods.items():
            setattr(torch.Tensor, name, fn)
