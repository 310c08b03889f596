"""bench/real_kernels/slim_wheel.py: the bitsandbytes wheel cut down to the libraries the H200
loads, on a small wheel built here with the published one's layout (no download)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import ROOT

SCRIPT = ROOT / "bench" / "real_kernels" / "slim_wheel.py"
LIBS = ["cuda118", "cuda128", "cuda130", "cuda132", "rocm64", "xpu2025", "cpu"]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slim_wheel", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["slim_wheel"] = module
    spec.loader.exec_module(module)
    return module


def _wheel(folder: Path, libs: list[str]) -> Path:
    path = folder / "bitsandbytes-0.50.1-py3-none-manylinux_2_24_x86_64.whl"
    files = {"bitsandbytes/__init__.py": b"__version__ = '0.50.1'\n"}
    files |= {f"bitsandbytes/libbitsandbytes_{lib}.so": lib.encode() * 1000 for lib in libs}
    record = "".join(
        f"{name},sha256={hashlib.sha256(data).hexdigest()},{len(data)}\n"
        for name, data in files.items()
    )
    files["bitsandbytes-0.50.1.dist-info/RECORD"] = (
        record + "bitsandbytes-0.50.1.dist-info/RECORD,,\n"
    ).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _members(path: Path) -> tuple[list[str], list[str]]:
    with zipfile.ZipFile(path) as zf:
        record = zf.read("bitsandbytes-0.50.1.dist-info/RECORD").decode().splitlines()
        return sorted(zf.namelist()), sorted(line.split(",", 1)[0] for line in record)


def test_keeps_the_cuda_library_asked_for_and_the_cpu_one(tmp_path: Path) -> None:
    slim = _module()
    path = _wheel(tmp_path, LIBS)
    gone = slim.slim(path, "130")
    assert [Path(n).name for n in gone] == [
        f"libbitsandbytes_{lib}.so" for lib in sorted(set(LIBS) - {"cuda130", "cpu"})
    ]
    members, recorded = _members(path)
    kept = [
        "bitsandbytes/__init__.py",
        "bitsandbytes/libbitsandbytes_cpu.so",
        "bitsandbytes/libbitsandbytes_cuda130.so",
    ]
    assert members == sorted([*kept, "bitsandbytes-0.50.1.dist-info/RECORD"])
    assert recorded == members  # RECORD names exactly what the wheel holds
    with zipfile.ZipFile(path) as zf:
        assert zf.read("bitsandbytes/libbitsandbytes_cuda130.so") == b"cuda130" * 1000


def test_a_slimmed_wheel_is_left_as_it_is(tmp_path: Path) -> None:
    slim = _module()
    path = _wheel(tmp_path, LIBS)
    slim.slim(path, "130")
    before = path.read_bytes()
    assert slim.slim(path, "130") == []
    assert path.read_bytes() == before


def test_a_cuda_version_the_wheel_lacks_is_refused_with_the_ones_it_has(tmp_path: Path) -> None:
    slim = _module()
    path = _wheel(tmp_path, LIBS)
    before = path.read_bytes()
    with pytest.raises(slim.SlimError, match=r"no libbitsandbytes_cuda126\.so.*118, 128, 130, 132"):
        slim.slim(path, "126")
    assert path.read_bytes() == before
    assert slim.main([str(path), "--keep-cuda", "13.0"]) == 2
    assert slim.main([str(tmp_path / "missing.whl")]) == 2
    assert slim.main([str(path), "--keep-cuda", "132"]) == 0
    assert "bitsandbytes/libbitsandbytes_cuda132.so" in _members(path)[0]
