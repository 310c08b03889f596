"""The C modules Triton's GPU drivers build (a kernel's launcher is one): seen by their source,
timed, whether built or loaded from Triton's cache, with the driver left as it was."""

from __future__ import annotations

from pathlib import Path

from checks.compiler import triton_compat as compat

SRC = """
#include <Python.h>
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kr_probe_module", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_kr_probe_module(void) { return PyModule_Create(&module); }
"""


def test_a_module_the_driver_builds_is_seen_by_its_source_and_the_driver_restored(
    tmp_path: Path,
) -> None:
    from triton import knobs
    from triton.backends.nvidia import driver

    original = driver.compile_module_from_src
    saved = knobs.cache.dir
    compat.set_cache_dir(str(tmp_path / "cache"))
    try:
        with compat.observe_module_builds() as builds:
            # called the way the launcher calls it: through the driver module's own name
            built = driver.compile_module_from_src(src=SRC, name="kr_probe_module")
            again = driver.compile_module_from_src(src=SRC, name="kr_probe_module")
    finally:
        knobs.cache.dir = saved
    assert built.__name__ == again.__name__ == "kr_probe_module"
    assert [b.name for b in builds] == ["kr_probe_module"] * 2
    assert builds[0].key == builds[1].key and len(builds[0].key) == 16
    assert builds[0].ms > builds[1].ms > 0  # built with the C compiler, then loaded from the cache
    assert driver.compile_module_from_src is original
