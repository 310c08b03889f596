"""Extension modules found where they are built or registered, and Python names followed to them.

Snippets are modelled on real pull requests of the corpus (tests/data/real_prs/), shortened and
renamed; none is copied whole.
"""

from __future__ import annotations

from bot.analysis.reach.extensions import (
    ExtensionIndex,
    cmake_extensions,
    loaded_extensions,
    registrations,
    setup_extensions,
    torch_op,
)
from bot.analysis.reach.follow import Side, absolute, imports_in
from bot.analysis.text import parse_python

# Modelled on stanford-futuredata/stk's setup.py at 1843116 (Apache-2.0): one literal source
# beside sources a function gathers from a submodule.
NESTED_SETUP = """
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
ext_modules = [
    CUDAExtension(
        "pkg.sparse_backend",
        ["csrc/backend.cc"] + gather_submodule_sources(),
    )
]
"""

BINDING = """
#include <torch/extension.h>
void sdd(torch::Tensor a) {}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("sdd", &sdd, "sparse = dense x dense");
  m.def("row_indices", &row_indices);
}
"""


def test_nested_setup_py_names_its_module_and_sources():
    paths = ["ops/sparse/csrc/backend.cc", "ops/sparse/setup.py"]
    [ext] = setup_extensions("ops/sparse/setup.py", NESTED_SETUP, paths)
    assert ext.name == "sparse_backend"  # what Python imports: the dotted name's last part
    assert ext.sources == ("ops/sparse/csrc/backend.cc",)  # relative to the setup.py
    assert ext.unresolved  # the submodule's sources are computed


def test_setup_py_with_glob_and_keyword_arguments():
    text = 'CppExtension(name="fused", sources=glob.glob("csrc/fused/*.cu"))'
    paths = ["csrc/fused/a.cu", "csrc/fused/b.cu", "csrc/other.cu"]
    [ext] = setup_extensions("setup.py", text, paths)
    assert (ext.name, ext.sources, ext.unresolved) == ("fused", tuple(paths[:2]), False)


def test_load_and_load_inline_bind_a_name_or_a_loader():
    text = """
from torch.utils.cpp_extension import load, load_inline
_ext = load(name="rope_cuda", sources=["csrc/rope.cu", "csrc/rope.cpp"])

def get_module():
    return load_inline(name="act", cpp_sources=[SRC], cuda_sources=[CU])
"""
    paths = ["pkg/csrc/rope.cu", "pkg/csrc/rope.cpp", "pkg/ops.py"]
    found = loaded_extensions("pkg/ops.py", parse_python(text), paths)
    assert found["_ext"].name == "rope_cuda"
    assert found["_ext"].sources == ("pkg/csrc/rope.cpp", "pkg/csrc/rope.cu")
    assert found["get_module"].name == "act"  # a loader: calling it gives the module
    assert found["get_module"].sources == ("pkg/ops.py",)  # the sources are strings in it


def test_load_elsewhere_is_not_a_build():
    text = "import json\ncfg = json.load(open('x'))\nm = load(name='x', sources=['a.cu'])\n"
    assert loaded_extensions("a.py", parse_python(text), ["a.cu"]) == {}


def test_pybind11_module_ops():
    [reg] = registrations("csrc/backend.cc", BINDING)
    assert reg.how == "PYBIND11_MODULE"
    assert reg.name == ""  # TORCH_EXTENSION_NAME: the build names it
    assert reg.ops == ("sdd", "row_indices")


def test_torch_library_ops_and_torch_ops_names():
    text = """
TORCH_LIBRARY(mylib, m) {
  m.def("index_select(Tensor x, Tensor i) -> Tensor");
  m.def("scatter.out(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(mylib, CUDA, m) {
  m.impl("index_select", &index_select_cuda);
}
"""
    regs = registrations("csrc/ops.cpp", text)
    assert {r.name for r in regs} == {"mylib"}
    assert regs[0].ops == ("index_select", "scatter")
    assert regs[1].ops == ("index_select",)
    assert torch_op("torch.ops.mylib.index_select.default") == ("mylib", "index_select")
    assert torch_op("torch.nn.functional") is None


def test_cmake_pybind11_module():
    text = "pybind11_add_module(_fast_ops src/a.cu src/b.cpp)\n"
    [ext] = cmake_extensions("ext/CMakeLists.txt", text, ["ext/src/a.cu", "ext/src/b.cpp"])
    assert (ext.name, ext.sources) == ("_fast_ops", ("ext/src/a.cu", "ext/src/b.cpp"))


def _index(files: dict[str, str]) -> ExtensionIndex:
    return ExtensionIndex(list(files), files.get)


def test_index_finds_a_module_by_its_build_or_its_folder():
    files = {"setup.py": NESTED_SETUP, "csrc/backend.cc": BINDING, "pkg/__init__.py": ""}
    ext = _index(files).module("sparse_backend")
    assert ext is not None and ext.ops == ("sdd", "row_indices")
    # no build file: a PYBIND11_MODULE in a folder named like the import (AutoGPTQ's quant_cuda)
    files = {"quant_cuda/quant_cuda.cpp": BINDING, "quant_cuda/quant_cuda_kernel.cu": ""}
    ext = _index(files).module("quant_cuda")
    assert ext is not None and set(ext.sources) == set(files)
    # a Python module of the repository is not an extension
    assert _index({"quant_cuda.py": "", **files}).module("quant_cuda") is None


def test_relative_and_function_local_imports():
    text = """
def make(use_triton):
    if use_triton:
        from ..nn.linear_triton import QuantLinear
    else:
        from ..nn.linear import QuantLinear
"""
    func = parse_python(text).body[0]
    found = imports_in(func.body, "pkg/modeling/utils.py")
    assert found["QuantLinear"] == {"pkg.nn.linear_triton.QuantLinear", "pkg.nn.linear.QuantLinear"}
    assert absolute(None, 1, "pkg/sub/__init__.py") == "pkg.sub"


def test_follow_a_class_per_method_to_ops_and_kernels():
    """A class switched for another: its forward reaches the extension op on one side and the
    Triton kernel through an autograd Function on the other; backward is a role of its own."""
    old = {
        "pkg/linear.py": (
            "import quant_cuda\n"
            "class QuantLinear:\n"
            "    def forward(self, x):\n"
            "        quant_cuda.vecquant4matmul(x)\n"
        ),
        "quant_cuda/quant_cuda.cpp": BINDING,
    }
    new = {
        "pkg/linear_triton.py": (
            "import triton\n"
            "@triton.jit\n"
            "def mm_kernel(x):\n"
            "    pass\n"
            "@triton.jit\n"
            "def mm_t_kernel(x):\n"
            "    pass\n"
            "def mm(x):\n"
            "    mm_kernel[(1,)](x)\n"
            "class Fn:\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        return mm(x)\n"
            "    @staticmethod\n"
            "    def backward(ctx, g):\n"
            "        mm_t_kernel[(1,)](g)\n"
            "class QuantLinear:\n"
            "    def forward(self, x):\n"
            "        return Fn.apply(x)\n"
        ),
    }
    before = Side(list(old), old.get, _index(old)).follow("pkg.linear.QuantLinear")
    after = Side(list(new), new.get, _index(new)).follow("pkg.linear_triton.QuantLinear")
    assert {(o.extension.name, o.name) for o in before["forward"].ops} == {
        ("quant_cuda", "vecquant4matmul")
    }
    # apply runs the backward too, kept apart as its role: forward pairs with forward
    assert after["forward"].forward().kernels == {"mm_kernel"}
    assert after["forward"].back_kernels == {"mm_t_kernel"}
