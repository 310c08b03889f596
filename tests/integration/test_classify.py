"""Classifying kernel changes: rewrites paired, tuning/body/launch told apart, on real diffs."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest

from bot.analysis.classify import analyze_diff
from bot.analysis.model import MAX_PER_FILE, Analysis, KernelChange, TritonConfig
from bot.analysis.repo import analyze_repo
from bot.errors import KernelReviewError
from bot.gitutil import commit_all, diff_text, init_repo
from bot.policy.load import find_policy, parse_policy
from bot.revision import GitRevision
from tests.paths import DATA

DIFFS = DATA / "diffs"
TOY = DIFFS / "toyrepo"
POLICY = parse_policy((TOY / "base/.github/kernel-review.toml").read_text())


# the toy repository's rewrite: what each kernel's change is
TOY_KINDS = {
    "vector_add_kernel": "rewrite",
    "softmax_kernel": "rewrite",
    "matmul_kernel": "tuning",
    "scale_kernel": "launch",
}


def read(name: str) -> str:
    return (DIFFS / name).read_bytes().decode("utf-8")


def tree(side: str):
    def source(path: str) -> str | None:
        file = TOY / side / path
        return file.read_text() if file.is_file() else None

    return source


def changes(analysis: Analysis) -> dict[str, KernelChange]:
    return {c.name: c for c in analysis.changes}


def build_repo(root: Path, base_tree: Path, head_tree: Path) -> tuple[Path, str, str]:
    repo = init_repo(root)
    shutil.copytree(base_tree, repo, dirs_exist_ok=True)
    base = commit_all(repo, "base")
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(head_tree, repo, dirs_exist_ok=True)
    return repo, base, commit_all(repo, "head")


# ------------------------------------------------------------------------ the toy rewrite


def test_rewrite_with_whole_sources():
    a = analyze_diff(
        read("toy_rewrite.diff"),
        policy=POLICY,
        old_source=tree("base"),
        new_source=tree("head"),
        old_files=[str(p.relative_to(TOY / "base")) for p in (TOY / "base").rglob("*.*")],
    )
    c = changes(a)
    assert {k: v.kind for k, v in c.items()} == TOY_KINDS
    assert not a.from_context_only

    va = c["vector_add_kernel"]
    assert (va.old.language, va.old.path, va.new.path) == (
        "cuda",
        "toyops/csrc/vector_add.cu",
        "toyops/vector_add.py",
    )
    assert va.old_kernel_kept is False and va.old_language == "cuda"
    assert va.policy_kernels == ["vector_add"]
    assert any("switched from toyops._ext.vector_add()" in e for e in va.evidence)
    assert va.part_a is not None and va.part_a.old.kernel_body_lines == 3

    sm = c["softmax_kernel"]
    assert sm.old_kernel_kept is True
    assert sm.old_language == "cuda+hip"
    assert sm.old.path == "toyops/csrc/softmax.cu"
    assert [r.path for r in sm.old_variants] == ["toyops/csrc/softmax.hip"]
    assert sm.part_a.old.source_files == 2 and sm.part_a.new.source_files == 1

    mm = c["matmul_kernel"]
    assert len(mm.configs_old) == 3 and len(mm.configs_new) == 4
    assert (
        TritonConfig(
            kwargs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
            num_warps=2,
            num_stages=5,
        )
        in mm.configs_new
    )
    assert mm.policy_kernels == ["matmul"]

    sc = c["scale_kernel"]
    assert sc.tuning_old == {"BLOCK_SIZE": "1024"} and sc.tuning_new == {"BLOCK_SIZE": "2048"}
    assert sc.launches_old == ["toyops/scale.py:20 [(triton.cdiv(n, 1024),)] (x, y, alpha, n)"]
    assert sc.policy_kernels == []
    assert a.policy_kernels == ["matmul", "softmax", "vector_add"]


def test_rewrite_from_the_diff_alone():
    a = analyze_diff(read("toy_rewrite.diff"), policy=POLICY)
    c = changes(a)
    assert a.from_context_only
    va = c["vector_add_kernel"]  # the deleted .cu and the new .py are whole in the diff
    assert va.kind == "rewrite" and va.part_a is not None and va.old_kernel_kept is False
    sm = c["softmax_kernel"]  # its C++ files are not in the diff: a new kernel, and a hint
    assert sm.kind == "new"
    assert any("toyops/csrc/softmax.*" in n and "--repo" in n for n in sm.notes)
    tuning = c["autotune configs in toyops/matmul.py"]
    assert tuning.kind == "tuning" and tuning.policy_kernels == ["matmul"]
    assert [cfg.num_warps for cfg in tuning.configs_old] == [4]
    assert [cfg.num_warps for cfg in tuning.configs_new] == [8, 2]
    assert c["scale_kernel"].kind == "launch"


def test_repo_reads_whole_files_and_the_policy_at_base(tmp_path):
    repo, base, head = build_repo(tmp_path / "toy", TOY / "base", TOY / "head")
    a = analyze_repo(repo, base, head)
    c = changes(a)
    assert {k: v.kind for k, v in c.items()} == TOY_KINDS
    assert c["softmax_kernel"].old_kernel_kept is True
    assert c["softmax_kernel"].policy_kernels == ["softmax"]
    assert c["softmax_kernel"].part_a.old.kernel_body_lines == 21
    assert not a.from_context_only
    assert a.files_seen == 6


def test_repo_policy_from_pyproject_at_base(tmp_path):
    base_tree = tmp_path / "base"
    shutil.copytree(TOY / "base", base_tree)
    policy_text = (base_tree / ".github/kernel-review.toml").read_text()
    (base_tree / ".github/kernel-review.toml").unlink()
    table = policy_text.replace("[deployment]", "[tool.kernel-review.deployment]")
    table = table.replace("[[kernels]]", "[[tool.kernel-review.kernels]]")
    head_part, tail = table.split("[tool.kernel-review.deployment]", 1)
    (base_tree / "pyproject.toml").write_text(
        "[project]\nname = 'toyops'\n\n[tool.kernel-review]\n"
        + head_part
        + "[tool.kernel-review.deployment]"
        + tail
    )
    repo, base, head = build_repo(tmp_path / "r", base_tree, TOY / "head")
    found = find_policy(GitRevision(repo, base))
    assert found is not None and found[1] == f"pyproject.toml (at {base[:12]})"
    policy = found[0]
    assert [k.name for k in policy.kernels] == [
        "vector_add",
        "softmax",
        "matmul",
    ]
    assert changes(analyze_repo(repo, base, head))["softmax_kernel"].policy_kernels == ["softmax"]


def test_repo_without_policy_still_pairs_by_names(tmp_path):
    base_tree = tmp_path / "base"
    shutil.copytree(TOY / "base", base_tree)
    (base_tree / ".github/kernel-review.toml").unlink()
    repo, base, head = build_repo(tmp_path / "r", base_tree, TOY / "head")
    assert find_policy(GitRevision(repo, base)) is None
    c = changes(analyze_repo(repo, base, head))
    assert c["softmax_kernel"].kind == "rewrite"
    assert c["softmax_kernel"].policy_kernels == []
    assert all("policy" not in e for e in c["softmax_kernel"].evidence)


def test_repo_bad_revision_is_a_clear_error(tmp_path):
    repo, base, _ = build_repo(tmp_path / "toy", TOY / "base", TOY / "head")
    with pytest.raises(KernelReviewError) as info:
        analyze_repo(repo, base, "no-such-branch")
    assert "no-such-branch" in info.value.message


# ------------------------------------------------------------------ one kind at a time


def test_tuning_inline_autotune_reports_old_and_new_lists():
    (c,) = analyze_diff(read("tuning_inline_autotune.diff")).changes
    assert (c.kind, c.name, c.language) == ("tuning", "layernorm_kernel", "triton")
    assert c.configs_old == [
        TritonConfig(kwargs={"BLOCK_N": 1024}, num_warps=4, num_stages=2),
        TritonConfig(kwargs={"BLOCK_N": 2048}, num_warps=8, num_stages=2),
    ]
    assert c.configs_new == [
        TritonConfig(kwargs={"BLOCK_N": 1024}, num_warps=4, num_stages=3),
        TritonConfig(kwargs={"BLOCK_N": 2048}, num_warps=8, num_stages=3),
        TritonConfig(kwargs={"BLOCK_N": 4096}, num_warps=16, num_stages=2),
    ]


def test_launch_only_change():
    (c,) = analyze_diff(read("launch_cuda_stream.diff")).changes
    assert (c.kind, c.name, c.language) == ("launch", "softmax_kernel", "cuda")
    assert c.launches_new == [
        "toyops/csrc/softmax.cu:38 [x.size(0), BLOCK_SIZE, 0, at::cuda::getCurrentCUDAStream()] "
        "(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1))"
    ]


def test_launch_only_change_with_whole_files_is_not_a_body_change():
    text = read("launch_cuda_stream.diff")
    head = tree("base")("toyops/csrc/softmax.cu").replace(
        "softmax_kernel<<<x.size(0), BLOCK_SIZE>>>(",
        "softmax_kernel<<<x.size(0), BLOCK_SIZE, 0, at::cuda::getCurrentCUDAStream()>>>(",
    )
    (c,) = analyze_diff(text, old_source=tree("base"), new_source=lambda p: head).changes
    assert c.kind == "launch" and c.old.line_start == 7 and c.new.line_start == 7


def test_hip_body_change():
    (c,) = analyze_diff(read("hip_body.diff")).changes
    assert (c.kind, c.name, c.language, c.path) == (
        "body",
        "softmax_kernel",
        "hip",
        "toyops/csrc/softmax.hip",
    )


def test_hip_launch_block_size_is_tuning():
    (c,) = analyze_diff(read("hip_launch.diff")).changes
    assert (c.kind, c.name, c.language) == ("tuning", "relu_kernel", "hip")
    assert (c.tuning_old, c.tuning_new) == ({"threads": "256"}, {"threads": "512"})


def test_rename_pairs_the_kernel_across_paths():
    (c,) = analyze_diff(read("rename.diff")).changes
    assert c.kind == "body"
    assert (c.old.path, c.new.path) == ("toyops/csrc/softmax.cu", "toyops/csrc/softmax_cuda.cu")
    assert "file renamed from toyops/csrc/softmax.cu" in c.notes


def test_deleted_triton_kernel():
    (c,) = analyze_diff(read("delete_triton.diff")).changes
    assert (c.kind, c.name, c.old.path, c.new) == (
        "deleted",
        "scale_kernel",
        "toyops/scale.py",
        None,
    )


@pytest.mark.parametrize("name", ["binary_plain.diff", "binary_patch.diff"])
def test_binary_is_skipped_and_the_rest_analyzed(name):
    a = analyze_diff(read(name))
    assert [(s.path, s.reason) for s in a.skipped] == [("docs/logo.png", "binary file")]
    (c,) = a.changes
    assert (c.kind, c.name) == ("body", "scale_kernel")
    assert a.files_seen == 2


def test_mode_only_is_skipped_with_its_modes():
    a = analyze_diff(read("mode_only.diff"))
    assert a.changes == []
    assert [(s.path, s.reason) for s in a.skipped] == [
        ("scripts/build.sh", "mode change only (100644 -> 100755)")
    ]


def test_crlf_source_and_crlf_diff():
    lf = analyze_diff(read("crlf_content.diff"))
    (c,) = lf.changes
    assert (c.kind, c.name, c.language) == ("body", "scale_kernel", "cuda")
    assert analyze_diff(read("crlf_content.diff").replace("\n", "\r\n")) == lf
    whole = read("toy_rewrite.diff")
    assert analyze_diff(whole.replace("\n", "\r\n"), policy=POLICY) == analyze_diff(
        whole, policy=POLICY
    )


def test_plain_unified_diff_launch_change():
    (c,) = analyze_diff(read("plain_unified.diff")).changes
    assert (c.kind, c.name) == ("launch", "add_kernel")


# ------------------------------------------------------------------ pairing, by evidence

ROWOPS_CU = """\
#include <torch/extension.h>

__global__ void row_normalize_kernel(const float* x, float* y, int n_cols) {
  const float* row = x + blockIdx.x * n_cols;
  float s = 0.f;
  for (int i = 0; i < n_cols; ++i) s += row[i];
  for (int i = threadIdx.x; i < n_cols; i += blockDim.x) y[blockIdx.x * n_cols + i] = row[i] / s;
}

torch::Tensor row_normalize_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  row_normalize_kernel<<<x.size(0), 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("row_normalize", &row_normalize_cuda); }
"""

NORM_PY = """\
import torch
import triton
import triton.language as tl


@triton.jit
def _norm_fwd(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(y_ptr + row * n_cols + offs, x / tl.sum(x, axis=0), mask=offs < n_cols)


def normalize(x):
    y = torch.empty_like(x)
    _norm_fwd[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
"""


def _call_switch_repo(tmp_path: Path, switch: bool) -> tuple[Path, str, str]:
    base_tree = tmp_path / "b"
    (base_tree / "csrc").mkdir(parents=True)
    (base_tree / "pkg").mkdir()
    (base_tree / "csrc/rowops.cu").write_text(ROWOPS_CU)
    (base_tree / "pkg/api.py").write_text(
        "from pkg import ext\n\n\ndef rows(x):\n    return ext.row_normalize(x)\n"
    )
    head_tree = tmp_path / "h"
    (head_tree / "kernels").mkdir(parents=True)
    (head_tree / "pkg").mkdir()
    (head_tree / "kernels/norm_triton.py").write_text(NORM_PY)
    api = "from kernels.norm_triton import normalize\n\n\ndef rows(x):\n    return normalize(x)\n"
    if not switch:
        api = "from pkg import ext\n\n\ndef rows(x):\n    return ext.row_normalize(x) * 1\n"
    (head_tree / "pkg/api.py").write_text(api)
    return build_repo(tmp_path / "repo", base_tree, head_tree)


def test_call_site_switch_alone_pairs_a_rewrite(tmp_path):
    repo, base, head = _call_switch_repo(tmp_path, switch=True)
    for analysis in (analyze_repo(repo, base, head), analyze_diff(diff_text(repo, base, head))):
        (c,) = analysis.changes
        assert (c.kind, c.name, c.old.name) == ("rewrite", "_norm_fwd", "row_normalize_kernel")
        assert c.old_kernel_kept is False
        assert c.evidence == [
            "csrc/rowops.cu (row_normalize_kernel): pkg/api.py switched from "
            "pkg.ext.row_normalize() to "
            "kernels.norm_triton.normalize"
        ]
        assert c.part_a.old.kernel_body_lines == 4 and c.part_a.new.kernel_body_lines == 4


def test_no_evidence_no_pairing(tmp_path):
    repo, base, head = _call_switch_repo(tmp_path, switch=False)
    kinds = sorted((c.kind, c.name) for c in analyze_repo(repo, base, head).changes)
    assert kinds == [("deleted", "row_normalize_kernel"), ("new", "_norm_fwd")]


def test_kernel_moved_between_files(tmp_path):
    kernel = NORM_PY.split("def normalize")[0]
    base_tree, head_tree = tmp_path / "b", tmp_path / "h"
    base_tree.mkdir()
    head_tree.mkdir()
    (base_tree / "a.py").write_text(kernel)
    other = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(40))
    (head_tree / "b.py").write_text(kernel.replace("x / tl.sum(x, axis=0)", "x * 2") + other)
    repo, base, head = build_repo(tmp_path / "r", base_tree, head_tree)
    (c,) = analyze_repo(repo, base, head).changes
    assert (c.kind, c.old.path, c.new.path) == ("body", "a.py", "b.py")
    assert "moved from a.py" in c.notes


def test_mutilated_sources_never_crash_the_analysis():
    rng = random.Random(7)
    junk = ["{", "}", "(", ")", "[", '"', "/*", "#", "<<<", ">>>", "__global__", "@triton.jit",
            "def ", "\t", "\\", "\x00", "é", "triton.Config(", "):", ",", "=", "\r"]  # fmt: skip

    def mutate(text: str) -> str:
        lines = text.split("\n")
        for _ in range(rng.randrange(1, 8)):
            i = rng.randrange(len(lines))
            op = rng.randrange(3)
            if op == 0:
                del lines[i]
            elif op == 1:
                lines.insert(i, "".join(rng.choice(junk) for _ in range(rng.randrange(1, 6))))
            else:
                cut = rng.randrange(len(lines[i]) + 1)
                lines[i] = lines[i][:cut] + rng.choice(junk) + lines[i][cut:]
        return "\n".join(lines)

    def source(side: str, cache: dict[tuple[str, str], str | None]):
        def read_side(path: str) -> str | None:
            if (side, path) not in cache:
                text = tree(side)(path)
                cache[(side, path)] = mutate(text) if text is not None else None
            return cache[(side, path)]

        return read_side

    diff = read("toy_rewrite.diff")
    for _ in range(60):
        cache: dict[tuple[str, str], str | None] = {}
        analysis = analyze_diff(
            diff, policy=POLICY, old_source=source("base", cache), new_source=source("head", cache)
        )
        assert {c.kind for c in analysis.changes} <= {
            "rewrite", "tuning", "body", "launch", "new", "deleted"
        }  # fmt: skip


def test_a_source_over_the_cap_is_read_from_its_diff_lines():
    from bot.analysis.model import MAX_SOURCE_CHARS

    huge = tree("head")("toyops/scale.py") + "#" * MAX_SOURCE_CHARS
    a = analyze_diff(read("toy_rewrite.diff"), old_source=tree("base"), new_source=lambda p: huge)
    assert any("toyops/scale.py (new) is over 512 KiB" in n for n in a.notes)
    assert a.from_context_only


def test_repo_read_budget(tmp_path, monkeypatch):
    import bot.analysis.repo

    repo, base, head = build_repo(tmp_path / "toy", TOY / "base", TOY / "head")
    monkeypatch.setattr(bot.analysis.repo, "MAX_READ_CHARS", 3000)
    a = analyze_repo(repo, base, head)
    assert a.from_context_only
    assert any("more were read from their diff lines only" in n for n in a.notes)
    assert {c.name for c in a.changes} >= {"vector_add_kernel", "scale_kernel"}


# ------------------------------------------------------------------------ generated diffs


def generated_diff(n_files: int) -> str:
    """A Triton body change, a CUDA body change, and two non-kernel files, repeated."""
    parts = []
    for i in range(n_files):
        kind = i % 4
        if kind == 0:
            path = f"pkg/k{i}.py"
            body = (
                f"@@ -10,7 +10,7 @@ def k{i}_kernel(x_ptr, n, BLOCK: tl.constexpr):\n"
                "     pid = tl.program_id(0)\n"
                "     offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                "     mask = offs < n\n"
                "-    x = tl.load(x_ptr + offs, mask=mask)\n"
                "+    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
                "     tl.store(x_ptr + offs, x * 2, mask=mask)\n"
                "\n"
                f" def k{i}(x):\n"
            )
        elif kind == 1:
            path = f"csrc/k{i}.cu"
            body = (
                "@@ -3,6 +3,6 @@\n"
                f" __global__ void k{i}_kernel(float* x, int n) {{\n"
                "   int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "-  if (i < n) x[i] *= 2.f;\n"
                "+  if (i < n) x[i] *= 3.f;\n"
                " }\n"
                f" void launch{i}(float* x, int n) {{\n"
                f"   k{i}_kernel<<<(n + 255) / 256, 256>>>(x, n);\n"
            )
        else:
            path = f"docs/f{i}.md"
            body = "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
        parts.append(
            f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n"
            f"--- a/{path}\n+++ b/{path}\n{body}"
        )
    return "".join(parts)


def test_generated_small_diff_is_exact():
    a = analyze_diff(generated_diff(8))
    assert sorted((c.kind, c.name, c.language) for c in a.changes) == [
        ("body", "k0_kernel", "triton"),
        ("body", "k1_kernel", "cuda"),
        ("body", "k4_kernel", "triton"),
        ("body", "k5_kernel", "cuda"),
    ]
    assert a.files_seen == 8


def test_five_thousand_files_are_all_analyzed():
    """Every file of a 5,000-file diff is seen and every changed kernel found (how long it takes
    is recorded by bench/analysis_scale.py, not asserted here)."""
    analysis = analyze_diff(generated_diff(5000))
    assert len(analysis.changes) == 2500
    assert {c.kind for c in analysis.changes} == {"body"}
    assert analysis.files_seen == 5000


def _many_jit_functions(n: int, body: str) -> str:
    return "import triton\n" + "".join(f"@triton.jit\ndef k{i}(x):\n    {body}\n" for i in range(n))


def test_twelve_thousand_jit_functions_in_one_file_are_analyzed_in_seconds():
    """Every function's body changed, in a file under the size cap: the functions whose lines
    the diff touches were found by testing each against every changed line (12,000 took
    116-174 s). The analysis keeps to MAX_PER_FILE kernels of the file and says so."""
    n = 12_000
    old, new = _many_jit_functions(n, "pass"), _many_jit_functions(n, "return x + 1")
    hunks = "".join(
        f"@@ -{2 + 3 * i},3 +{2 + 3 * i},3 @@\n @triton.jit\n def k{i}(x):\n"
        "-    pass\n+    return x + 1\n"
        for i in range(n)
    )
    diff = f"diff --git a/pkg/k.py b/pkg/k.py\n--- a/pkg/k.py\n+++ b/pkg/k.py\n{hunks}"
    start = time.process_time()  # this process's CPU time: the machine's other load aside
    analysis = analyze_diff(diff, old_source=lambda _: old, new_source=lambda _: new)
    elapsed = time.process_time() - start
    assert len(analysis.changes) == MAX_PER_FILE
    assert {c.kind for c in analysis.changes} == {"body"}
    assert any(
        f"more than {MAX_PER_FILE} kernels: {MAX_PER_FILE} of them" in n for n in analysis.notes
    )
    assert elapsed < 10, f"{n} jit functions took {elapsed:.1f} s of CPU time to analyse"


def test_a_file_of_many_changed_host_functions_is_analyzed_in_seconds():
    """23,000 one-line host functions in one file (under the size cap), each changed: the
    tuning rule's changed functions tested each function against every changed line (16 s of
    CPU time here; 12,000 jit functions past the kernel cap, read as host functions, took 8 s)."""
    n = 23_000
    old, new = ("".join(f"def f{i}(): return {v}\n" for i in range(n)) for v in (0, 1))
    hunks = "".join(
        f"@@ -{i + 1} +{i + 1} @@\n-def f{i}(): return 0\n+def f{i}(): return 1\n" for i in range(n)
    )
    diff = f"diff --git a/pkg/h.py b/pkg/h.py\n--- a/pkg/h.py\n+++ b/pkg/h.py\n{hunks}"
    start = time.process_time()  # this process's CPU time: the machine's other load aside
    analysis = analyze_diff(diff, old_source=lambda _: old, new_source=lambda _: new)
    elapsed = time.process_time() - start
    assert analysis.files_seen == 1 and not analysis.skipped and not analysis.changes
    assert elapsed < 8, f"{n} changed host functions took {elapsed:.1f} s of CPU time to analyse"


def test_jit_helpers_calling_each_other_and_one_launcher_of_every_kernel_stay_linear():
    """300 kernels, each calling 20 of 300 changed jit helpers, all launched from one function
    (12 s before: the launcher was walked once per launch and per kernel, and each helper's
    callers were found by list searches); then 1,000 jit functions each calling the next (a
    chain of helpers: a fixed point per helper, minutes before)."""
    n = 300
    helpers = "".join(f"@triton.jit\ndef h{j}(x):\n    return x + {{v}}\n" for j in range(n))
    kernels = "".join(
        f"@triton.jit\ndef k{i}(x):\n    return "
        + " + ".join(f"h{(i + d) % n}(x)" for d in range(20))
        + "\n"
        for i in range(n)
    )
    launcher = "def launch(x):\n" + "".join(f"    k{i}[(1,)](x)\n" for i in range(n))
    fan = "import triton\n" + helpers + kernels + launcher
    hunks = "".join(
        f"@@ -{2 + 3 * j},3 +{2 + 3 * j},3 @@\n @triton.jit\n def h{j}(x):\n"
        "-    return x + 1\n+    return x + 2\n"
        for j in range(n)
    )
    fan_diff = f"diff --git a/pkg/f.py b/pkg/f.py\n--- a/pkg/f.py\n+++ b/pkg/f.py\n{hunks}"
    m = MAX_PER_FILE
    chain = [
        _many_jit_functions(0, "")
        + "".join(f"@triton.jit\ndef k{i}(x):\n    return k{i + 1}(x){tail}\n" for i in range(m))
        for tail in ("", " + 1")
    ]
    hunks = "".join(
        f"@@ -{2 + 3 * i},3 +{2 + 3 * i},3 @@\n @triton.jit\n def k{i}(x):\n"
        f"-    return k{i + 1}(x)\n+    return k{i + 1}(x) + 1\n"
        for i in range(m)
    )
    chain_diff = f"diff --git a/pkg/c.py b/pkg/c.py\n--- a/pkg/c.py\n+++ b/pkg/c.py\n{hunks}"
    start = time.process_time()  # this process's CPU time: the machine's other load aside
    folded = analyze_diff(
        fan_diff,
        old_source=lambda _: fan.replace("{v}", "1"),
        new_source=lambda _: fan.replace("{v}", "2"),
    )
    chained = analyze_diff(chain_diff, old_source=lambda _: chain[0], new_source=lambda _: chain[1])
    elapsed = time.process_time() - start
    assert len(folded.changes) == n and all(len(c.via_helpers) == 20 for c in folded.changes)
    [head] = chained.changes  # k0 alone is launched by nobody's call: the rest are its helpers
    assert head.name == "k0" and head.kind == "body"
    assert elapsed < 10, f"took {elapsed:.1f} s of CPU time to analyse"


def test_thrifty_reads_only_files_whose_lines_could_hold_kernels():
    util = (
        "diff --git a/pkg/util.py b/pkg/util.py\nindex 1111111..2222222 100644\n"
        "--- a/pkg/util.py\n+++ b/pkg/util.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n b = 3\n"
    )
    asked: list[str] = []

    def source(path: str) -> str | None:
        asked.append(path)
        return None

    analyze_diff(generated_diff(2) + util, old_source=source, new_source=source)
    # the kernel files, and the diff's Python modules for the call graph (a package's
    # re-exports, a call switched to a dispatcher: ``reach.follow``); no file outside the diff
    assert sorted(set(asked)) == ["csrc/k1.cu", "pkg/k0.py", "pkg/util.py"]
    asked.clear()
    policy = parse_policy(
        '[deployment]\nkind = "long-lived"\n[[kernels]]\nname = "u"\nbench = "pkg.b:u"\n'
        'paths = ["pkg/util.py"]\ndtypes = ["float32"]\nshapes = [[8]]\n'
    )
    analyze_diff(util, policy=policy, old_source=source, new_source=source)
    assert set(asked) == {"pkg/util.py"}  # the policy names it: both sides read, nothing else


def test_a_changed_device_helper_is_a_body_change_of_its_kernel():
    from tests.unit.test_part_a import HELPERS_CU

    diff = (
        "diff --git a/t.cu b/t.cu\nindex 1111111..2222222 100644\n--- a/t.cu\n+++ b/t.cu\n"
        "@@ -1,4 +1,4 @@\n __device__ float warp_sum(float v) {\n"
        "-  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
        "+  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
        "   return v;\n }\n"
    )
    new = HELPERS_CU.replace("o /= 2", "o >>= 1")
    (c,) = analyze_diff(diff, old_source=lambda p: HELPERS_CU, new_source=lambda p: new).changes
    assert (c.kind, c.name) == ("body", "total_kernel")
    assert "the __device__ functions it calls changed: warp_sum" in c.notes


def test_the_bundled_fixture_rewrite(tmp_path):
    from kernels_fixture.build_repo import build_fixture_repo

    fixture = build_fixture_repo(tmp_path / "fixture")
    a = analyze_repo(fixture.path, fixture.base_sha, fixture.head_sha)
    c = changes(a)
    assert {name: ch.kind for name, ch in c.items()} == {
        "softmax_kernel": "rewrite",
        "vector_add_kernel": "rewrite",
        "matmul_kernel": "tuning",
    }
    assert not a.from_context_only
    assert (c["softmax_kernel"].old_kernel_kept, c["vector_add_kernel"].old_kernel_kept) == (
        True,
        False,
    )
    assert c["softmax_kernel"].old_language == c["vector_add_kernel"].old_language == "cuda+hip"
    assert c["matmul_kernel"].configs_old != c["matmul_kernel"].configs_new
    for name in ("softmax_kernel", "vector_add_kernel"):
        table = c[name].part_a
        assert table.old.source_files == 2 and table.new.source_files == 1
        assert table.old.vendors_covered == table.new.vendors_covered == ["nvidia", "amd"]
    assert a.policy_kernels == ["matmul", "softmax", "vector_add"]


def test_links_submodules_and_added_or_deleted_binaries_are_skipped(tmp_path):
    repo = init_repo(tmp_path / "r")
    (repo / "old.bin").write_bytes(b"\x00\x01")
    (repo / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.f; }\n")
    base = commit_all(repo, "base")
    (repo / "old.bin").unlink()
    (repo / "new.bin").write_bytes(b"\x00\x02\x03")
    (repo / "link.cu").symlink_to("k.cu")
    head = commit_all(repo, "head")
    a = analyze_repo(repo, base, head)
    assert a.changes == []
    assert sorted((s.path, s.reason) for s in a.skipped) == [
        ("link.cu", "symbolic link"),
        ("new.bin", "binary file"),
        ("old.bin", "binary file"),
    ]
