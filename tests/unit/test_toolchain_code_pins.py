"""Toolchain pins that are not requirement strings: a build script's version check of the
toolchain, a submodule that holds it (its gitlink), and a file that is its commit."""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.toolchain.detect import toolchain_changes
from bot.toolchain.pins import file_kind, pins
from bot.toolchain.submodules import submodule_pin
from bot.toolchain.version_checks import version_checks

# facebookresearch/detectron2 setup.py (Apache-2.0), before and at
# f63fb823758df05d543d4f18f650f294dc78d733 ("drop PyTorch1.4 support"): the floor is an assert
# on the parsed version, and a ROCm branch gated on 1.5 goes; `torch.version.hip is not None`
# is a vendor test, not a version check.
DETECTRON2_OLD = """\
import torch
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

torch_ver = [int(x) for x in torch.__version__.split(".")[:2]]
assert torch_ver >= [1, 4], "Requires PyTorch >= 1.4"


def get_extensions():
    is_rocm_pytorch = False
    if torch_ver >= [1, 5]:
        from torch.utils.cpp_extension import ROCM_HOME

        is_rocm_pytorch = (
            True if ((torch.version.hip is not None) and (ROCM_HOME is not None)) else False
        )
"""
DETECTRON2_NEW = """\
import torch
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

torch_ver = [int(x) for x in torch.__version__.split(".")[:2]]
assert torch_ver >= [1, 5], "Requires PyTorch >= 1.5"


def get_extensions():
    from torch.utils.cpp_extension import ROCM_HOME

    is_rocm_pytorch = (
        True if ((torch.version.hip is not None) and (ROCM_HOME is not None)) else False
    )
"""


def test_a_floor_written_as_an_assert_on_the_parsed_version_is_a_torch_pin():
    (line,) = toolchain_changes("setup.py", "setup.py", DETECTRON2_OLD, DETECTRON2_NEW)
    assert (line.kernel, line.old_version, line.new_version) == (
        "torch",
        "torch_ver >= [1, 4] | torch_ver >= [1, 5]",
        "torch_ver >= [1, 5]",
    )
    assert line.detail == "PyTorch (version check)"


def test_a_check_through_split_parts_and_a_metadata_lookup_keep_their_whole_condition():
    text = (
        "import re, torch\nfrom importlib.metadata import version\n"
        "m = re.match(r'(\\d+)\\.(\\d+)', torch.__version__)\n"
        "major, minor = map(int, m.groups())\n"
        "if major < 2 or (major == 2 and minor < 7):\n    raise RuntimeError('old torch')\n"
        "if version('triton') < '3.1':\n    raise RuntimeError('old triton')\n"
    )
    assert [(p.package, p.spec, p.line) for p in version_checks(text) or []] == [
        ("torch", "major < 2 or (major == 2 and minor < 7)", 5),
        ("triton", "version('triton') < '3.1'", 7),
    ]


def test_checks_of_other_packages_decisions_on_the_version_and_unmoved_checks_are_not_pins():
    text = (
        "import sys, numpy, torch\n"
        "assert sys.version_info >= (3, 8)\n"
        "if numpy.__version__ >= '2':\n    pass\n"
        "flags = ['-DNEW'] if torch.__version__ >= '2.1' else []\n"
        "if len(flags) > 0 and torch.version.hip is not None:\n    pass\n"
        "ROCM_VERSION = os.getenv('ROCM_VERSION') or torch.version.hip\n"
        "if ROCM_VERSION in ['571']:\n    pass\n"  # a kernels build picked, not a bound
    )
    assert [p.spec for p in version_checks(text) or []] == ["torch.__version__ >= '2.1'"]
    moved = DETECTRON2_NEW.replace("def get_extensions():", "def get_extensions(debug=False):")
    assert toolchain_changes("setup.py", "setup.py", DETECTRON2_NEW, moved) == []
    assert toolchain_changes("build.py", "build.py", DETECTRON2_OLD, DETECTRON2_NEW) == []
    assert version_checks("    if major < 2:\n") is None  # a diff's lines alone: not a program
    # one side's diff lines happen to be Python, the other's not: its checks are unknown
    fragment = "        )\n" + DETECTRON2_NEW
    assert toolchain_changes("setup.py", "setup.py", DETECTRON2_NEW, fragment) == []


# microsoft/triton-shared (MIT) at 45295877d9adf686b650333daa630552cdfde74f ("Update triton to
# ec8cb09..."): the Triton it builds against is the `triton` submodule.
TRITON_SHARED_DIFF = """\
diff --git a/triton b/triton
index 65d9862..ec8cb09 160000
--- a/triton
+++ b/triton
@@ -1 +1 @@
-Subproject commit 65d9862f5a9029827a7ae04439f07d7e7eadf859
+Subproject commit ec8cb09329cf25ac241a7dee1eea5a5d94daef8a
"""
TRITON_SHARED_GITMODULES = """\
[submodule "triton"]
\tpath = triton
\turl = https://github.com/triton-lang/triton.git
"""


def test_a_moved_triton_submodule_is_a_triton_pin_change():
    analysis = analyze_diff(TRITON_SHARED_DIFF)
    (line,) = analysis.toolchain
    assert (line.kernel, line.old_version, line.new_version, line.detail) == (
        "triton",
        "65d9862f5a9029827a7ae04439f07d7e7eadf859",
        "ec8cb09329cf25ac241a7dee1eea5a5d94daef8a",
        "Triton (submodule triton)",
    )
    assert [s.reason for s in analysis.skipped] == ["submodule"]


def test_a_submodule_is_the_toolchain_by_its_path_or_by_the_repository_its_url_names():
    link = "Subproject commit ec8cb09329cf25ac241a7dee1eea5a5d94daef8a"
    renamed = TRITON_SHARED_GITMODULES.replace("path = triton", "path = third_party/compiler")
    assert submodule_pin("third_party/compiler", link) is None
    pin = submodule_pin("third_party/compiler", link, renamed)
    assert pin is not None and (pin.package, pin.where) == (
        "triton",
        "submodule third_party/compiler",
    )


def test_other_submodules_and_plain_files_are_not_toolchain_pins():
    sputnik = TRITON_SHARED_DIFF.replace("triton", "third_party/sputnik")
    assert analyze_diff(sputnik).toolchain == []
    assert submodule_pin("triton", "triton==3.1.0") is None


# microsoft/triton-shared (MIT) at b6739088fdd22a1f676276f0fd7f7be9ed071587 ("Update triton to
# e44bd1c..."): with the submodule gone, the Triton commit is the one line of triton-hash.txt.
TRITON_HASH_DIFF = """\
diff --git a/triton-hash.txt b/triton-hash.txt
index 1111111..2222222 100644
--- a/triton-hash.txt
+++ b/triton-hash.txt
@@ -1 +1 @@
-ec8cb09329cf25ac241a7dee1eea5a5d94daef8a
+e44bd1c83c1c3e8deac7c4f02683cfb3cc395c8b
"""


def test_a_file_that_is_one_toolchain_commit_is_a_pin_of_it():
    (line,) = analyze_diff(TRITON_HASH_DIFF).toolchain
    assert (line.kernel, line.old_version, line.new_version) == (
        "triton",
        "ec8cb09329cf25ac241a7dee1eea5a5d94daef8a",
        "e44bd1c83c1c3e8deac7c4f02683cfb3cc395c8b",
    )
    # pytorch's layout: a folder of pins, one file a package
    pinned = pins(".ci/docker/ci_commit_pins/triton-xpu.txt", "# pin\n1a2b3c4d5e6f\n")
    assert [(p.package, p.spec, p.line) for p in pinned] == [("triton-xpu", "1a2b3c4d5e6f", 2)]


def test_pin_files_of_other_packages_and_prose_are_not_toolchain_pins():
    assert file_kind(".github/ci_commit_pins/vision.txt") is None  # torchvision: not a compiler
    assert file_kind("docs/triton.txt") is None  # not among pins, not named as one
    assert pins("triton-hash.txt", "see the README for the commit\n") == []
    notes = TRITON_HASH_DIFF.replace("triton-hash.txt", "docs/triton.txt")
    assert analyze_diff(notes).toolchain == []


# huggingface/text-generation-inference (Apache-2.0) Dockerfile_amd, before and at
# 9c26b52940f620e1228fced55b3892c43c9289fa ("Use ROCM 6.3.1"): a vendor's Dockerfile named with
# an underscore; Triton and PyTorch are built from the commits its ARGs name.
TGI_AMD_OLD = """\
FROM lukemathwalker/cargo-chef:latest-rust-1.85.1 AS chef
FROM rocm/dev-ubuntu-22.04:6.2 AS base
FROM base AS build_triton
ARG TRITON_BRANCH="e192dba"
ARG TRITON_REPO="https://github.com/triton-lang/triton.git"
"""
TGI_AMD_NEW = """\
FROM lukemathwalker/cargo-chef:latest-rust-1.85.1 AS chef
FROM rocm/dev-ubuntu-22.04:6.3.1-complete AS base
ARG TRITON_BRANCH="e5be006"
ARG TRITON_REPO="https://github.com/triton-lang/triton.git"
ARG PYTORCH_BRANCH="3a585126"
ARG PYTORCH_VISION_BRANCH="v0.19.1"
ARG PYTORCH_ROCM_ARCH=gfx90a;gfx942
FROM base AS build_triton
ARG TRITON_BRANCH
"""


def test_a_vendor_dockerfile_and_the_toolchain_commits_its_args_build_are_pins():
    moved = toolchain_changes("Dockerfile_amd", "Dockerfile_amd", TGI_AMD_OLD, TGI_AMD_NEW)
    assert [(c.kernel, c.old_version, c.new_version) for c in moved] == [
        ("image rocm/dev-ubuntu-22.04", "6.2", "6.3.1-complete"),
        ("triton", "e192dba", "e5be006"),
        ("torch", None, "3a585126"),
    ]


def test_files_named_like_a_dockerfile_that_are_not_one_and_other_args_are_not_pins():
    assert file_kind("tools/dockerfile_utils.py") is None
    assert file_kind("docs/Dockerfile.md") is None
    other = TGI_AMD_NEW.replace("v0.19.1", "v0.20.0").replace("gfx90a;gfx942", "gfx942")
    assert toolchain_changes("Dockerfile_amd", "Dockerfile_amd", TGI_AMD_NEW, other) == []


# IST-DASLab/qutlass (Apache-2.0) setup.py, before and at
# 72869c6df67d28f5013784fb917072fa397a34e8: the >= 2.11 floor re-expressed through module
# constants, the same bound.
QUTLASS_OLD = """\
import re
import torch

torch_version = torch.__version__

if __name__ == "__main__":
    m = re.match(r"^(\\d+)\\.(\\d+)", torch_version)
    major, minor = map(int, m.groups())
    if major < 2 or (major == 2 and minor < 11):
        raise RuntimeError(f"PyTorch version must be >= 2.11, but found {torch_version}")
"""
QUTLASS_NEW = """\
import re
import torch

torch_version = torch.__version__
TORCH_TARGET_MAJOR = 2
TORCH_TARGET_MINOR = 11

if __name__ == "__main__":
    m = re.match(r"^(\\d+)\\.(\\d+)", torch_version)
    major, minor = map(int, m.groups())
    if (major, minor) < (TORCH_TARGET_MAJOR, TORCH_TARGET_MINOR):
        raise RuntimeError(f"PyTorch version must be >= 2.11 but found {torch_version}")
"""


def test_a_floor_re_expressed_through_constants_with_the_same_bound_has_not_moved():
    assert [p.spec for p in version_checks(QUTLASS_NEW) or []] == ["(major, minor) < (2, 11)"]
    assert toolchain_changes("setup.py", "setup.py", QUTLASS_OLD, QUTLASS_NEW) == []
    raised = QUTLASS_NEW.replace("TORCH_TARGET_MINOR = 11", "TORCH_TARGET_MINOR = 12")
    (line,) = toolchain_changes("setup.py", "setup.py", QUTLASS_OLD, raised)
    assert (line.old_version, line.new_version) == (
        "major < 2 or (major == 2 and minor < 11)",
        "(major, minor) < (2, 12)",
    )
