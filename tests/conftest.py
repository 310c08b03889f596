from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Iterator

import pytest


@functools.cache
def _have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _share_module_fixtures(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (scripts/test), the tests of a module that use one of its
    module-scoped fixtures (a sweep, a compiler report, a toolchain environment) run in one
    process, so the fixture is built once rather than once per process; a test that names its
    own ``xdist_group`` keeps it. ``--dist loadgroup`` reads the marks; without xdist they do
    nothing."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name, ())
            if any(d.scope == "module" for d in defs):
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
                break


@pytest.hookimpl(hookwrapper=True)
def pytest_collection() -> Iterator[None]:
    """The test modules, their asserts rewritten, are kept as bytecode (``__pycache__``, as
    pytest does by default) even where PYTHONDONTWRITEBYTECODE is set (the shared 2-core machine
    sets it): rewriting all of them again is 6 of the 10 CPU-s each pytest process spends
    collecting (each xdist worker, and the GPU stages' pytest that test_device_session runs).
    Only while collecting: what the tests import and run afterwards is written as the
    environment says."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


# before pytest-xdist's own hook, which reads the groups into the tests' ids (it ran first, and
# each worker built a module's shared set-up again: the local loop's sweep three times)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _share_module_fixtures(items)
    if _have_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU (run on a GPU runner: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None


@pytest.fixture(autouse=True)
def _run_trusted_again() -> Iterator[None]:
    """A job run in-process (the measure job of a pull request) confines this process and marks
    it untrusted for the rest of its life, as the one-shot command it is; the next test in this
    process starts as a fresh command does: unconfined and trusted."""
    yield
    sandbox = sys.modules.get("checks.procs.sandbox")
    if sandbox is not None and (sandbox.active() is not None or not sandbox.trusted_run()):
        sandbox.configure(None)
