"""nvcc's report of a ``.cu`` file is kept by what was compiled (the preprocessed source, the
target, the flags, the toolkit): the same file read again, from another folder too, is not
compiled again; an edit that changes the code is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checks.compiler.cxx_report import nvcc_report

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

KERNEL = """
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""


def _fields(records) -> list[dict]:
    return [r.model_dump(exclude={"cached"}) for r in records]


def test_a_second_report_of_the_same_code_is_read_not_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path / "cache"))
    one = tmp_path / "one" / "k.cu"
    one.parent.mkdir()
    one.write_text(KERNEL)
    first = nvcc_report("k", one, ["sm_90"])
    assert first and not any(r.cached or r.error for r in first)
    assert len(list((tmp_path / "cache" / "nvcc").glob("*.json"))) == 1

    two = tmp_path / "two" / "k.cu"  # another checkout of the same code
    two.parent.mkdir()
    shutil.copy(one, two)
    again = nvcc_report("k", two, ["sm_90"])
    assert all(r.cached for r in again)
    assert _fields(again) == _fields(first)

    two.write_text(KERNEL.replace("*= a", "*= a * a"))
    changed = nvcc_report("k", two, ["sm_90"])
    assert not any(r.cached for r in changed)
    assert len(list((tmp_path / "cache" / "nvcc").glob("*.json"))) == 2


def test_a_file_that_does_not_compile_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x) { x[0] = undefined_name; }\n")
    for _ in range(2):
        [rec] = nvcc_report("bad", bad, ["sm_90"])
        assert rec.error is not None and not rec.cached
    assert not list((tmp_path / "cache").rglob("*.json"))
