"""Random inputs without the random numbers, for compile-only recording.

A compile-only run launches nothing: what reaches the compiler from a tensor is its dtype, shape,
strides and whether its address is 16-byte aligned, never its values. Filling a served shape's
inputs with random numbers on a CPU (a 4096^3 matmul's operands, a 2^26-element vector) is most of
the time a recording takes, so while recording ``torch.randn``/``rand``/``randint`` and their
``_like`` forms allocate without filling, and the in-place random fills do nothing. What an entry
point then does to such random values before its call is as unfilled: ``x.to(dtype)`` of one is a
new tensor of that dtype laid out alike, left unfilled, and ``x.mul_(scale)`` leaves it as it is
(converting and scaling a served shape's operands touched every page of them: most of a
recording's time, in the kernel's page faults, once random numbers were no longer made).
"""

from __future__ import annotations

import contextlib
import weakref
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
    saved_methods = {name: getattr(torch.Tensor, name) for name in (*_IN_PLACE, "to", "mul_")}
    to, mul_ = torch.Tensor.to, torch.Tensor.mul_
    made: dict[int, weakref.ref] = {}  # by id: the random tensors left unfilled, and their kin

    def unfilled(t: Any) -> Any:
        made[id(t)] = weakref.ref(t)
        return t

    def is_unfilled(t: Any) -> bool:
        ref = made.get(id(t))
        return ref is not None and ref() is t

    def factory(*size: Any, **kwargs: Any) -> Any:
        shape = kwargs.pop("size", None) or size
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return unfilled(torch.empty(shape, **_kw(kwargs)))

    def like(t: Any, *args: Any, **kwargs: Any) -> Any:
        keep = {k: v for k, v in kwargs.items() if k in _KEEP}
        return unfilled(torch.empty_like(t, **keep))

    def to_dtype(self: Any, *args: Any, **kwargs: Any) -> Any:
        dtype = args[0] if len(args) == 1 and not kwargs else kwargs.get("dtype")
        if (
            not isinstance(dtype, torch.dtype)
            or len(args) + len(kwargs) != 1
            or not is_unfilled(self)
        ):
            return to(self, *args, **kwargs)
        if dtype == self.dtype:
            return self
        return unfilled(torch.empty_like(self, dtype=dtype))  # laid out as ``to`` lays it out

    def scaled(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self if is_unfilled(self) else mul_(self, *args, **kwargs)

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
    torch.Tensor.to = to_dtype  # type: ignore[method-assign]
    torch.Tensor.mul_ = scaled  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
        for name, fn in saved_methods.items():
            setattr(torch.Tensor, name, fn)
