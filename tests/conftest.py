from __future__ import annotations

import functools
import shutil

import pytest


@functools.cache
def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _have_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (run on a GPU runner: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None
