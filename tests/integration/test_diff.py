"""Unified diff text -> file records: statuses, paths, line numbers, and the nasty inputs."""

from __future__ import annotations

import random

import pytest

from bot.analysis.diff import FilePatch, parse_diff
from bot.errors import DiffError, KernelReviewError
from bot.gitutil import commit_all, diff_text, init_repo
from tests.paths import DATA

DIFFS = DATA / "diffs"
TOY = DIFFS / "toyrepo"


def read(name: str) -> str:
    return (DIFFS / name).read_bytes().decode("utf-8")


def by_path(files: tuple[FilePatch, ...]) -> dict[str, FilePatch]:
    return {f.path: f for f in files}


def test_rewrite_diff_statuses_and_paths():
    parsed = parse_diff(read("toy_rewrite.diff"))
    files = by_path(parsed.files)
    assert files["toyops/csrc/vector_add.cu"].status == "deleted"
    assert files["toyops/csrc/vector_add.cu"].new_path is None
    assert files["toyops/vector_add.py"].status == "added"
    assert files["toyops/vector_add.py"].old_path is None
    assert files["toyops/softmax.py"].status == "added"
    assert files["toyops/matmul.py"].status == "modified"
    assert files["toyops/__init__.py"].status == "modified"
    assert parsed.skipped == ()


def test_line_numbers_match_the_files():
    parsed = parse_diff(read("toy_rewrite.diff"))
    patch = by_path(parsed.files)["toyops/scale.py"]
    old_lines = (TOY / "base/toyops/scale.py").read_text().split("\n")
    new_lines = (TOY / "head/toyops/scale.py").read_text().split("\n")
    for hunk in patch.hunks:
        for number, text in hunk.removed:
            assert old_lines[number - 1] == text
        for number, text in hunk.added:
            assert new_lines[number - 1] == text
        for old_no, new_no, text in hunk.context:
            assert old_lines[old_no - 1] == text == new_lines[new_no - 1]


def test_deleted_file_holds_every_old_line():
    patch = by_path(parse_diff(read("toy_rewrite.diff")).files)["toyops/csrc/vector_add.cu"]
    base = (TOY / "base/toyops/csrc/vector_add.cu").read_text()
    assert "\n".join(t for _, t in patch.removed_lines()) + "\n" == base


def test_rename_pairs_old_and_new_paths():
    (patch,) = parse_diff(read("rename.diff")).files
    assert patch.status == "renamed"
    assert patch.old_path == "toyops/csrc/softmax.cu"
    assert patch.new_path == "toyops/csrc/softmax_cuda.cu"
    assert patch.similarity_pct == 92
    assert [t for _, t in patch.added_lines()][-1] == "  const float inv = __frcp_rn(red[0]);"


def test_pure_rename_without_hunks(tmp_path):
    repo = init_repo(tmp_path / "r")
    (repo / "a.cu").write_text("__global__ void k(float* x) { x[0] = 1.f; }\n" * 3)
    base = commit_all(repo, "base")
    (repo / "a.cu").rename(repo / "b.cu")
    head = commit_all(repo, "head")
    (patch,) = parse_diff(diff_text(repo, base, head)).files
    assert (patch.status, patch.old_path, patch.new_path) == ("renamed", "a.cu", "b.cu")
    assert patch.hunks == () and patch.similarity_pct == 100


def test_delete_of_a_triton_file():
    files = by_path(parse_diff(read("delete_triton.diff")).files)
    assert files["toyops/scale.py"].status == "deleted"
    assert files["toyops/__init__.py"].status == "modified"


@pytest.mark.parametrize("name", ["binary_plain.diff", "binary_patch.diff"])
def test_binary_files_are_marked_and_text_files_beside_them_parse(name):
    files = by_path(parse_diff(read(name)).files)
    assert files["docs/logo.png"].binary
    assert files["docs/logo.png"].hunks == ()
    scale = files["toyops/scale.py"]
    assert not scale.binary
    assert [t for _, t in scale.added_lines()] == [
        '"""y = x * alpha, one program per block of elements."""',
        "    tl.store(y_ptr + offs, x * alpha, mask=mask)",
    ]


def test_mode_only_change():
    (patch,) = parse_diff(read("mode_only.diff")).files
    assert patch.mode_only
    assert (patch.old_mode, patch.new_mode) == ("100644", "100755")
    assert patch.path == "scripts/build.sh"


def test_crlf_content_lines_lose_their_carriage_return():
    files = by_path(parse_diff(read("crlf_content.diff")).files)
    cu = files["toyops/csrc/scale.cu"]
    assert cu.crlf
    assert [t for _, t in cu.added_lines()] == ["  if (i < n) x[i] = a * x[i] + 1.f;"]
    assert all("\r" not in t for h in cu.hunks for _, _, t in h.context)


def test_no_newline_at_end_of_file():
    note = by_path(parse_diff(read("crlf_content.diff")).files)["toyops/note.txt"]
    assert note.removed_lines() == [(1, "no newline")]
    assert note.added_lines() == [(1, "still no newline")]


def test_a_diff_saved_with_crlf_parses_like_the_original():
    text = read("toy_rewrite.diff")
    assert parse_diff(text.replace("\n", "\r\n")) == parse_diff(text)


def test_plain_unified_diff_with_timestamps():
    files = by_path(parse_diff(read("plain_unified.diff")).files)
    assert set(files) == {"kernels/add.cu", "kernels/README"}
    assert files["kernels/add.cu"].status == "modified"
    assert files["kernels/add.cu"].added_lines() == [
        (6, "  add_kernel<<<(n + 511) / 512, 512>>>(x, y, out, n);")
    ]


def test_empty_diff_is_no_files():
    assert parse_diff("").files == ()
    assert parse_diff("\n\n").files == ()


def test_quoted_paths_with_spaces_and_unicode(tmp_path):
    repo = init_repo(tmp_path / "r")
    (repo / "my dir").mkdir()
    (repo / "my dir" / "k ernel.cu").write_text("int a;\n")
    (repo / "tést.py").write_text("a = 1\n")
    base = commit_all(repo, "base")
    (repo / "my dir" / "k ernel.cu").write_text("int b;\n")
    (repo / "tést.py").write_text("a = 2\n")
    (repo / "tést.py").chmod(0o755)
    head = commit_all(repo, "head")
    files = by_path(parse_diff(diff_text(repo, base, head)).files)
    assert set(files) == {"my dir/k ernel.cu", "tést.py"}
    assert files["tést.py"].new_mode == "100755"


@pytest.mark.parametrize(
    ("name", "line", "expected"),
    [
        ("malformed_short_hunk.diff", 10, "expected a hunk line starting with"),
        ("malformed_bad_line.diff", 8, "found '*  if (i < n) x[i] *= a;'"),
        ("malformed_hunk_first.diff", 1, "before any file header"),
        ("not_a_diff.diff", 1, "expected a file header"),
    ],
)
def test_malformed_diffs_name_the_line_and_what_was_expected(name, line, expected):
    with pytest.raises(DiffError) as info:
        parse_diff(read(name))
    assert f"diff line {line}:" in info.value.message
    assert expected in info.value.message
    assert info.value.hint


def test_a_hunk_that_ends_early_says_what_it_promised():
    text = read("tuning_inline_autotune.diff")
    truncated = "\n".join(text.split("\n")[:12]) + "\n"
    with pytest.raises(DiffError) as info:
        parse_diff(truncated)
    assert "promises 10 old and 11 new lines" in info.value.message
    assert "ends early" in info.value.message


def test_every_truncation_and_mutation_is_parsed_or_refused_cleanly():
    text = read("toy_rewrite.diff") + read("binary_patch.diff") + read("rename.diff")
    lines = text.split("\n")
    rng = random.Random(1234)
    candidates = ["\n".join(lines[:cut]) for cut in range(0, len(lines), 3)]
    for _ in range(200):
        mutated = list(lines)
        i = rng.randrange(len(mutated))
        mutated[i] = rng.choice(["", "@@ -1 +1 @@", "+++ b/x", "--- a/x", "garbage", "\\", "-"])
        candidates.append("\n".join(mutated))
    for candidate in candidates:
        try:
            parse_diff(candidate)
        except KernelReviewError as exc:
            assert "diff line" in exc.message


def test_total_size_cap():
    with pytest.raises(DiffError) as info:
        parse_diff(read("toy_rewrite.diff"), max_bytes=1000)
    assert "over the" in info.value.message and "cap" in info.value.message


def test_per_file_cap_skips_that_file_and_says_so():
    text = read("toy_rewrite.diff")
    sizes = {}
    for chunk in text.split("diff --git ")[1:]:
        path = chunk.split(" b/", 1)[0][2:]
        sizes[path] = len("diff --git " + chunk)
    cap = 1100
    parsed = parse_diff(text, max_file_bytes=cap)
    skipped = {s.path: s.reason for s in parsed.skipped}
    assert set(skipped) == {p for p, n in sizes.items() if n > cap}
    assert "toyops/csrc/vector_add.cu" in skipped and "toyops/scale.py" not in skipped
    assert all("per-file cap" in reason for reason in skipped.values())
    assert {f.path for f in parsed.files} == {p for p, n in sizes.items() if n <= cap}


def test_per_file_cap_on_a_plain_diff():
    big = "--- a/k.cu\n+++ b/k.cu\n@@ -1,2 +1,2 @@\n-" + "x" * 500 + "\n+y\n z\n"
    parsed = parse_diff(big + read("plain_unified.diff"), max_file_bytes=400)
    assert [s.path for s in parsed.skipped] == ["k.cu"]
    assert {f.path for f in parsed.files} == {"kernels/add.cu", "kernels/README"}
