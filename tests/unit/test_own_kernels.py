"""Which launched kernels a checkout's sources spell (``checks.bench_entries.own_kernels``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from checks.bench_entries.own_kernels import Sources


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


FILES = {
    "torchmdnet/extensions/neighbors/neighbors_cuda_cell.cuh": (
        "template <typename scalar_t>\n__global__ void assignCellIndex(const scalar_t* pos) {}\n"
    ),
    "torchmdnet/extensions/neighbors.py": (
        'SRC = """extern "C" __global__ void inline_kernel(float* x) {}"""\n'
    ),
    "notes/readme.txt": "elementwise_kernel_with_index is torch's\n",  # no source: not read
}


def test_a_kernel_is_its_checkouts_own_where_a_source_spells_its_name(tmp_path: Path) -> None:
    _write(tmp_path, FILES)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    # a new file not added yet is the working tree's own; what git ignores (a build) is not
    (tmp_path / "new_op.cu").write_text("__global__ void new_kernel() {}\n")
    (tmp_path / ".gitignore").write_text("build/\n")
    _write(tmp_path, {"build/gen.cu": "__global__ void stray_kernel() {}\n"})
    sources = Sources(tmp_path)
    assert sources.spells("new_kernel") is True
    # a demangled, qualified name is looked up by its last component
    assert sources.spells("torchmd::assignCellIndex") is True
    assert sources.spells("inline_kernel") is True  # a kernel's source held in Python
    assert sources.spells("elementwise_kernel_with_index") is False  # torch.arange's
    assert sources.spells("assignCell") is False  # a word, not part of one
    assert sources.spells("stray_kernel") is False  # ignored by git


def test_a_folder_that_is_no_git_checkout_is_read_whole(tmp_path: Path) -> None:
    _write(tmp_path, {**FILES, ".hidden/k.cu": "__global__ void hidden_kernel() {}\n"})
    sources = Sources(tmp_path)
    assert sources.spells("assignCellIndex") is True
    assert sources.spells("hidden_kernel") is False


def test_with_no_source_to_read_nothing_is_told(tmp_path: Path) -> None:
    _write(tmp_path, {"data.bin": "x"})
    assert Sources(tmp_path).spells("assignCellIndex") is None
