"""Triton's driver utilities built once for a sweep (``checks/worker/driver_utils.py``): which
vendor a machine's device nodes tell, and a forked process's Triton cache given what was built
without losing what it held. The build itself runs on a GPU (``tests/gpu/test_zygote_gpu.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from checks.worker import driver_utils


def test_the_vendor_is_the_one_device_node_present(tmp_path: Path) -> None:
    nv, amd = tmp_path / "nvidiactl", tmp_path / "kfd"
    nodes = (("nvidia", str(nv)), ("amd", str(amd)))
    assert driver_utils.vendor_of_machine(nodes) is None
    nv.touch()
    assert driver_utils.vendor_of_machine(nodes) == "nvidia"
    amd.touch()
    assert driver_utils.vendor_of_machine(nodes) is None  # both: not guessed
    nv.unlink()
    assert driver_utils.vendor_of_machine(nodes) == "amd"


def test_what_was_built_joins_a_cache_and_keeps_its_times(tmp_path: Path) -> None:
    built, cache = tmp_path / "built", tmp_path / "cache"
    (built / "KEY1").mkdir(parents=True)
    (built / "KEY1" / "cuda_utils.so").write_bytes(b"\x7fELF")
    os.utime(built / "KEY1" / "cuda_utils.so", ns=(1, 10**18))
    (cache / "OTHER").mkdir(parents=True)
    (cache / "OTHER" / "kernel.cubin").write_bytes(b"mine")
    assert driver_utils.copy_into(str(built), str(cache))
    assert (cache / "KEY1" / "cuda_utils.so").read_bytes() == b"\x7fELF"
    assert (cache / "KEY1" / "cuda_utils.so").stat().st_mtime_ns == 10**18
    assert (cache / "OTHER" / "kernel.cubin").read_bytes() == b"mine"
    assert not driver_utils.copy_into(str(tmp_path / "missing"), str(cache))


def test_the_program_says_where_it_lacks_a_cache_to_build_into() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    path = Path(driver_utils.__file__)
    done = subprocess.run(
        [sys.executable, "-I", str(path), "--vendor", "nvidia"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "TRITON_CACHE_DIR is not set" in done.stderr


def test_a_file_the_cache_has_is_not_rewritten_under_a_process_that_loaded_it(
    tmp_path: Path,
) -> None:
    """The second worker of a side copies into the cache the first one loads from: the first
    one's file keeps its inode and contents, and nothing half-written is left."""
    built, cache = tmp_path / "built", tmp_path / "cache"
    (built / "KEY1").mkdir(parents=True)
    (built / "KEY1" / "cuda_utils.so").write_bytes(b"\x7fELF new")
    (cache / "KEY1").mkdir(parents=True)
    (cache / "KEY1" / "cuda_utils.so").write_bytes(b"\x7fELF loaded")
    inode = (cache / "KEY1" / "cuda_utils.so").stat().st_ino
    assert driver_utils.copy_into(str(built), str(cache))
    assert (cache / "KEY1" / "cuda_utils.so").stat().st_ino == inode
    assert (cache / "KEY1" / "cuda_utils.so").read_bytes() == b"\x7fELF loaded"
    assert sorted(p.name for p in (cache / "KEY1").iterdir()) == ["cuda_utils.so"]
