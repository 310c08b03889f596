"""A bench entry whose kernel is a C++ extension built on first use, for tests of how builds are
kept apart: ``write_ext_repo(root, value)`` makes a checkout whose ``extbench:entry`` returns
``value`` from C++ and expects it back."""

from __future__ import annotations

from pathlib import Path

EXT_CPP = """#include <pybind11/pybind11.h>
int value() { return VALUE; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("value", &value); }
"""
EXT_ENTRY = '''"""A bench entry whose kernel is a C++ extension built on first use, under one name on both
sides (as torch.utils.cpp_extension.load is used in many repositories)."""
import pathlib

import torch
from torch.utils.cpp_extension import load

HERE = pathlib.Path(__file__).resolve().parent


def entry(shape, dtype, *, device="cpu", seed=0):
    mod = load(name="same_name_ext", sources=[str(HERE / "ext.cpp")])
    want = float((HERE / "want.txt").read_text())
    return {
        "fn": lambda: torch.tensor([float(mod.value())]),
        "reference": lambda: torch.tensor([want]),
    }
'''


def write_ext_repo(root: Path, value: int) -> Path:
    root.mkdir(parents=True)
    (root / "ext.cpp").write_text(EXT_CPP.replace("VALUE", str(value)))
    (root / "want.txt").write_text(str(value))
    (root / "extbench.py").write_text(EXT_ENTRY)
    return root
