"""Build the fixture repository: toyops before and after its Triton rewrite, as two git commits.

The repository has a branch ``main`` at the base commit and ``triton-rewrite`` at the head commit,
as a pull request would. What each commit holds (``KERNELS`` and ``CHANGED_FILES`` say it as data):

base, "toyops 0.3"
    ``vector_add`` and ``softmax`` call hand-written kernels (``toyops/csrc/<op>.cu`` for NVIDIA,
    ``<op>.hip`` for AMD, ``<op>_binding.cpp`` for torch) built with torch.utils.cpp_extension;
    ``matmul`` is Triton with an older autotune list (BLOCK_SIZE_K = 32, tuned on Ampere);
    ``pyproject.toml`` pins neither torch nor triton.
head, "toyops 0.4"
    ``vector_add`` is Triton and its C++ kernel is deleted (the .cu, the .hip and the binding);
    ``softmax`` is Triton and keeps its C++ kernel behind ``TOYOPS_SOFTMAX_IMPL=cuda``, with a
    comment saying it is the rollback for one release; ``matmul`` gets Hopper autotune configs;
    ``pyproject.toml`` pins ``triton>=3.6,<3.7`` and ``torch>=2.4``.
both
    ``toyops/bench.py`` with the same entry points (``toyops.bench:softmax`` runs the C++ kernel in
    base and the Triton one in head), ``.github/kernel-review.toml`` (three kernels, served shapes,
    deployment ``cli`` with a first-call budget, vendors nvidia and amd, owners), a CI workflow
    that runs correctness checks but no perf gate, and the hand-written matmul
    (``toyops.bench:matmul_cxx``).

``python -m kernels_fixture.build_repo DEST`` builds it and prints the path and the SHAs.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bot.errors import FixtureError, KernelReviewError
from bot.gitutil import commit_all, git, init_repo

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE / "toyops"  # the package as of the head commit (plus vector_add's C++ kernel)
BASE_MODULES_DIR = HERE / "toyops_base"  # the modules the rewrite replaced, as of base
REPO_FILES_DIR = HERE / "repo_files"

BASE_BRANCH = "main"
HEAD_BRANCH = "triton-rewrite"
BASE_DATE = "2026-01-05T10:00:00+00:00"
HEAD_DATE = "2026-01-12T15:30:00+00:00"
BASE_MESSAGE = "toyops 0.3: hand-written vector_add and softmax kernels, Triton matmul\n"
HEAD_MESSAGE = """\
Rewrite vector_add and softmax in Triton; retune matmul for Hopper

One Triton source per operator replaces each CUDA/HIP pair. The hand-written
softmax stays for one release behind TOYOPS_SOFTMAX_IMPL=cuda as the rollback;
vector_add's is deleted. matmul gets Hopper autotune configs (BLOCK_SIZE_K 64 and
128, 3-4 stages, small tiles for small shapes), and triton is pinned to 3.6, the
version the kernels were tuned on.
"""

POLICY_PATH = ".github/kernel-review.toml"
VECTOR_ADD_CXX = (
    "toyops/csrc/vector_add.cu",
    "toyops/csrc/vector_add.hip",
    "toyops/csrc/vector_add_binding.cpp",
)


@dataclass(frozen=True)
class FixtureRepo:
    path: Path
    base_sha: str
    head_sha: str
    base_branch: str = BASE_BRANCH
    head_branch: str = HEAD_BRANCH


@dataclass(frozen=True)
class FixtureKernel:
    """One kernel of the fixture and what the head commit does to it."""

    name: str
    bench: str  # the entry point, the same name in both commits
    change: str  # what a reviewer should call it: "rewrite" (C++ -> Triton) or "tuning"
    base_impl: str
    head_impl: str
    cxx_in_head: str  # the C++ kernel after the change: "deleted", "kept" or "unchanged"
    changed_paths: tuple[str, ...]  # this kernel's files that differ between base and head


KERNELS: tuple[FixtureKernel, ...] = (
    FixtureKernel(
        name="vector_add",
        bench="toyops.bench:vector_add",
        change="rewrite",
        base_impl="CUDA + HIP (toyops/csrc/vector_add.cu, vector_add.hip)",
        head_impl="Triton (toyops/vector_add.py)",
        cxx_in_head="deleted",
        changed_paths=("toyops/vector_add.py", *VECTOR_ADD_CXX),
    ),
    FixtureKernel(
        name="softmax",
        bench="toyops.bench:softmax",
        change="rewrite",
        base_impl="CUDA + HIP (toyops/csrc/softmax.cu, softmax.hip)",
        head_impl="Triton (toyops/softmax.py); C++ kept behind TOYOPS_SOFTMAX_IMPL=cuda",
        cxx_in_head="kept",
        changed_paths=("toyops/softmax.py",),
    ),
    FixtureKernel(
        name="matmul",
        bench="toyops.bench:matmul",
        change="tuning",
        base_impl="Triton, autotune list for Ampere (BLOCK_SIZE_K 32)",
        head_impl="Triton, autotune list for Hopper (BLOCK_SIZE_K 64); AMD list unchanged",
        cxx_in_head="unchanged",
        changed_paths=("toyops/matmul.py",),
    ),
)

# `git diff --name-status base head`, exactly.
CHANGED_FILES: dict[str, str] = {
    "README.md": "M",
    "pyproject.toml": "M",
    "toyops/matmul.py": "M",
    "toyops/softmax.py": "M",
    "toyops/vector_add.py": "M",
    **dict.fromkeys(VECTOR_ADD_CXX, "D"),
}

# The NVIDIA autotune list of the base commit; the head's is at the decorator in toyops/matmul.py.
BASE_MATMUL_CONFIGS = """\
        # Tuned on A100 for toyops 0.2.
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=3,
            num_warps=8,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=4,
            num_warps=4,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=5,
            num_warps=2,
        ),
        triton.Config(
            {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
            num_stages=5,
            num_warps=2,
        ),
"""

_CONFIGS_START = "@triton.autotune(\n    configs=[\n"
_CONFIGS_END = '    ],\n    key=["M", "N", "K"],\n)\n@triton.jit\n'
_SOURCE_SUFFIXES = (".py", ".cu", ".hip", ".cpp")
_GITIGNORE = b"__pycache__/\n*.egg-info/\nbuild/\n"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FixtureError(
            f"fixture source {path} cannot be read: {exc.strerror or exc}",
            hint="reinstall kernel-review; the kernels_fixture package is incomplete",
        ) from exc


def _package_files() -> dict[str, bytes]:
    files = {}
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in _SOURCE_SUFFIXES:
            files["toyops/" + path.relative_to(PACKAGE_DIR).as_posix()] = _read(path)
    if "toyops/bench.py" not in files:
        raise FixtureError(
            f"no toyops package at {PACKAGE_DIR}",
            hint="reinstall kernel-review; the kernels_fixture package is incomplete",
        )
    return files


def _common_files() -> dict[str, bytes]:
    return {
        ".gitignore": _GITIGNORE,
        POLICY_PATH: _read(REPO_FILES_DIR / "kernel-review.toml"),
        ".github/workflows/tests.yml": _read(REPO_FILES_DIR / "tests.yml"),
    }


def base_matmul_source(head_source: str) -> str:
    """toyops/matmul.py as of base: the head's file with the older NVIDIA autotune list."""
    start = head_source.find(_CONFIGS_START)
    end = head_source.find(_CONFIGS_END, start)
    if start < 0 or end < 0:
        raise FixtureError(
            "toyops/matmul.py has no `@triton.autotune(configs=[...], key=[...])` block to swap",
            hint="keep the NVIDIA config list inline at matmul_kernel's decorator",
        )
    body_start = start + len(_CONFIGS_START)
    return head_source[:body_start] + BASE_MATMUL_CONFIGS + head_source[end:]


def head_tree() -> dict[str, bytes]:
    """Every file of the head commit, by repository path."""
    files = _package_files()
    for path in VECTOR_ADD_CXX:
        del files[path]
    files.update(_common_files())
    files["README.md"] = _read(REPO_FILES_DIR / "README.head.md")
    files["pyproject.toml"] = _read(REPO_FILES_DIR / "pyproject.head.toml")
    return files


def base_tree() -> dict[str, bytes]:
    """Every file of the base commit, by repository path."""
    files = _package_files()
    for name in ("vector_add.py", "softmax.py"):
        files[f"toyops/{name}"] = _read(BASE_MODULES_DIR / name)
    head_matmul = files["toyops/matmul.py"].decode("utf-8")
    files["toyops/matmul.py"] = base_matmul_source(head_matmul).encode("utf-8")
    files.update(_common_files())
    files["README.md"] = _read(REPO_FILES_DIR / "README.base.md")
    files["pyproject.toml"] = _read(REPO_FILES_DIR / "pyproject.base.toml")
    return files


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def build_fixture_repo(dest: Path) -> FixtureRepo:
    """Create the two-commit toyops repository at ``dest`` (absent or an empty folder)."""
    dest = Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FixtureError(
            f"{dest} already exists and is not an empty folder",
            hint="pass a new path, or remove the folder first",
        )
    base_files = base_tree()
    head_files = head_tree()
    try:
        init_repo(dest, branch=BASE_BRANCH)
    except OSError as exc:
        raise FixtureError(
            f"cannot create the fixture repository at {dest}: {exc.strerror or exc}",
            hint="pass a folder you can write to",
        ) from exc
    _write_tree(dest, base_files)
    base_sha = commit_all(dest, BASE_MESSAGE, date=BASE_DATE)

    git(dest, "checkout", "-q", "-b", HEAD_BRANCH)
    for rel in sorted(set(base_files) - set(head_files)):
        (dest / rel).unlink()
    _write_tree(dest, head_files)
    head_sha = commit_all(dest, HEAD_MESSAGE, date=HEAD_DATE)

    changed = _name_status(dest, base_sha, head_sha)
    if changed != CHANGED_FILES:
        raise FixtureError(
            f"the fixture's head commit changed {changed}, expected {CHANGED_FILES}",
            hint="update CHANGED_FILES in kernels_fixture/build_repo.py with the fixture sources",
        )
    return FixtureRepo(path=dest, base_sha=base_sha, head_sha=head_sha)


def _name_status(repo: Path, base: str, head: str) -> dict[str, str]:
    out = git(repo, "diff", "--name-status", "--no-renames", base, head)
    pairs = (line.split("\t", 1) for line in out.splitlines() if line.strip())
    return {path: status for status, path in pairs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernels_fixture.build_repo",
        description="Build the toyops fixture repository (base: C++ kernels, head: Triton rewrite).",
    )
    parser.add_argument("dest", type=Path, help="folder to create (absent or empty)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        repo = build_fixture_repo(args.dest)
    except KernelReviewError as exc:
        print(f"build_repo: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps({**asdict(repo), "path": str(repo.path)}, indent=2))
    else:
        print(f"fixture repository: {repo.path}")
        print(f"base  {repo.base_branch:<15} {repo.base_sha}  {BASE_MESSAGE.splitlines()[0]}")
        print(f"head  {repo.head_branch:<15} {repo.head_sha}  {HEAD_MESSAGE.splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
