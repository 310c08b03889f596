"""A launch record says which Triton kernels hold atomics (``launches.has_atomics``), read from
real kernels cross-compiled for both vendors on the CPU: an atomic add in the kernel's Triton IR,
whatever the target, and none in a plain one; the kernels are found by name among the objects of
the process, as a worker finds those its call launched."""

from __future__ import annotations

from pathlib import Path

import pytest
import triton
import triton.language as tl

from checks.bench_entries import launches

TARGETS = {"cuda": ("cuda", 90, 32), "hip": ("hip", "gfx942", 64)}


@triton.jit
def _sum_atomic(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def _sum_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


def _compile(fn, target: str):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    source = ASTSource(fn, signature, {"BLOCK": 128})
    return triton.compile(source, target=GPUTarget(*TARGETS[target]))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_atomics_are_read_from_the_compiled_kernel_for_either_vendor(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    atomic, plain = _compile(_sum_atomic, target), _compile(_sum_blocks, target)
    assert (launches.has_atomics(atomic), launches.has_atomics(plain)) == (True, False)
    names = ["_sum_atomic", "_sum_blocks", "_never_compiled"]
    expected = {"_sum_atomic": True, "_sum_blocks": False}
    assert launches.atomics_by_name(names, [atomic, plain, object()]) == expected
    # by default among the objects the process holds, as a worker looks after its call
    assert launches.atomics_by_name(names) == expected
    assert launches.atomics_by_name([]) == {}


def test_a_kernel_whose_ir_cannot_be_read_is_not_said_either_way() -> None:
    class Unread:
        def __init__(self) -> None:
            self.asm: dict[str, str] = {}

    assert launches.has_atomics(Unread()) is None
