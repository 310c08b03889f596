"""Revisions as readers: a git commit, the contents API (the fake GitHub server, real PyGithub
over HTTP) and a folder read the same files, find the same policy, and give the gate the same
analysis as ``kernel-review analyze --repo``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot import gitutil
from bot.analysis.changes import change_lines, part_a_tables
from bot.analysis.repo import analyze_range, analyze_repo
from bot.errors import PolicyError
from bot.github.api import GitHubClient
from bot.github.events import ReviewRequest
from bot.jobs.gate import MAX_SOURCE_READS, decide_gate, read_base_policy
from bot.policy.load import find_policy, load_policy
from bot.repo_conditions import collect
from bot.revision import ApiRevision, DirRevision, GitRevision, ReadRefused
from kernels_fixture.build_repo import POLICY_PATH, FixtureRepo, build_fixture_repo
from tests.fake_github import FakeGitHub
from tests.integration.test_app_e2e import load_commit

PR = 9
PYPROJECT_POLICY = """\
[tool.kernel-review]
tolerance = 0.1

[tool.kernel-review.deployment]
kind = "long-lived"

[[tool.kernel-review.kernels]]
name = "add"
bench = "ops:add"
paths = ["ops.py"]
dtypes = ["float32"]
shapes = [[4096]]
"""


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> FixtureRepo:
    return build_fixture_repo(tmp_path_factory.mktemp("fixture") / "toyops")


@pytest.fixture
def github(fixture: FixtureRepo):
    with FakeGitHub() as fake:
        load_commit(fake, fixture.path, fixture.base_sha)
        load_commit(fake, fixture.path, fixture.head_sha)
        fake.add_pull(
            PR,
            base_sha=fixture.base_sha,
            head_sha=fixture.head_sha,
            diff=gitutil.diff_text(fixture.path, fixture.base_sha, fixture.head_sha),
        )
        client = GitHubClient("read-token", fake.repo, api_url=fake.api_url, spacing_s=None)
        yield fake, client


def test_the_gate_finds_the_same_changes_as_analyze_repo(fixture: FixtureRepo, github) -> None:
    fake, client = github
    local = analyze_repo(fixture.path, fixture.base_sha, fixture.head_sha)
    found = find_policy(ApiRevision(client, fixture.base_sha))
    assert found is not None
    remote = analyze_range(
        ApiRevision(client, fixture.base_sha, max_reads=MAX_SOURCE_READS),
        ApiRevision(client, fixture.head_sha, max_reads=MAX_SOURCE_READS),
        fake.diffs[PR],
        found[0],
    )
    assert local.changes and remote.changes == local.changes
    assert remote.policy_kernels == local.policy_kernels == ["matmul", "softmax", "vector_add"]

    request = ReviewRequest(
        event="pull_request", action="opened", repo=fake.repo, pr_number=PR, actor="alice"
    )
    gate = decide_gate(request, client)
    assert gate.decision.plan is not None
    assert list(gate.decision.plan.changes) == change_lines(local)
    assert list(gate.part_a) == part_a_tables(local)


def test_every_reader_finds_the_same_policy(fixture: FixtureRepo, github, tmp_path: Path) -> None:
    _, client = github
    tree = gitutil.add_worktree(fixture.path, tmp_path / "base", fixture.base_sha)
    try:
        on_disk = load_policy(tree).policy
        folder = find_policy(DirRevision(tree))
    finally:
        gitutil.remove_worktree(fixture.path, tree)
    sha = fixture.base_sha[:12]
    assert find_policy(GitRevision(fixture.path, fixture.base_sha)) == (
        on_disk,
        f"{POLICY_PATH} (at {sha})",
    )
    assert read_base_policy(ApiRevision(client, fixture.base_sha)) == (
        on_disk,
        f"{POLICY_PATH}@{sha}",
    )
    assert folder == (on_disk, POLICY_PATH)


def test_repository_conditions_read_the_same_through_git_and_the_api(
    fixture: FixtureRepo, github
) -> None:
    _, client = github
    paths = ["toyops/softmax.py", "toyops/csrc/softmax.cu"]
    local = collect(GitRevision(fixture.path, fixture.head_sha), paths, ["@team"])
    assert collect(ApiRevision(client, fixture.head_sha), paths, ["@team"]) == local
    assert local.perf_gate.workflow is None and ".github/workflows/" in local.perf_gate.detail


def test_reads_listings_and_names(fixture: FixtureRepo, github, tmp_path: Path) -> None:
    _, client = github
    git = GitRevision(fixture.path, "main")
    api = ApiRevision(client, fixture.head_sha)
    assert git.sha == fixture.base_sha and git.label == f"commit {fixture.base_sha[:12]}"
    assert git.list_dir(".github/workflows") == api.list_dir(".github/workflows") != []
    assert git.list_dir("no/such/dir") == api.list_dir("no/such/dir") == []
    assert "pyproject.toml" in git.list_dir("")
    assert git.read("no/such/file") is None and api.read("no/such/file") is None
    with pytest.raises(ReadRefused) as caught:
        git.read("toyops/matmul.py", max_bytes=10)
    assert caught.value.why == "too-large" and "toyops/matmul.py (at " in caught.value.message
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "a.txt")
    folder = DirRevision(tmp_path)
    assert folder.sha is None and folder.list_dir(".") == ["a.txt"]
    assert folder.read("a.txt") == "a\n" and folder.read("missing.txt") is None
    with pytest.raises(ReadRefused, match=r"link\.txt is not a regular file"):
        folder.read("link.txt")


def test_api_reads_are_bounded_and_fetched_once(fixture: FixtureRepo, github) -> None:
    fake, client = github
    bounded = ApiRevision(client, fixture.head_sha, max_reads=1)
    assert bounded.read("toyops/softmax.py")
    assert bounded.read("toyops/softmax.py") and bounded.read("toyops/matmul.py") is None
    assert fake.count("GET", r"/contents/toyops/softmax\.py") == 1


def test_a_broken_pyproject_is_reported_not_taken_as_no_policy(tmp_path: Path) -> None:
    repo = gitutil.init_repo(tmp_path / "r")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x\n")
    sha = gitutil.commit_all(repo, "broken pyproject")
    for revision, name in (
        (GitRevision(repo, sha), f"pyproject.toml (at {sha[:12]})"),
        (DirRevision(repo), "pyproject.toml"),
    ):
        with pytest.raises(PolicyError, match=re.escape(f"{name}:2:")):
            find_policy(revision)


def test_the_gate_says_where_it_looked_and_what_is_close(github) -> None:
    fake, client = github
    sha = "c" * 40
    fake.put_file(sha, ".github/kernel_review.toml", "tolerance = 0.1\n")
    with pytest.raises(PolicyError) as caught:
        read_base_policy(ApiRevision(client, sha))
    assert caught.value.message == (
        "no policy on the base branch (commit cccccccccccc): looked for "
        ".github/kernel-review.toml and for a [tool.kernel-review] table in pyproject.toml "
        "(found .github/kernel_review.toml; the file must be named exactly "
        ".github/kernel-review.toml)"
    )
    assert "commit .github/kernel-review.toml to the base branch" in (caught.value.hint or "")
    with pytest.raises(PolicyError) as caught:
        read_base_policy(ApiRevision(client, sha), "ci/policy.toml")
    assert caught.value.message.endswith("(commit cccccccccccc): looked for ci/policy.toml")
    fake.put_file(sha, "pyproject.toml", "[tool.kernel_review]\ntolerance = 0.1\n")
    with pytest.raises(PolicyError) as caught:
        read_base_policy(ApiRevision(client, sha))
    assert caught.value.hint == "rename [tool.kernel_review] to [tool.kernel-review]"
    fake.put_file(sha, "ci/pyproject.toml", PYPROJECT_POLICY)
    policy, source = read_base_policy(ApiRevision(client, sha), "ci/pyproject.toml")
    assert (policy.tolerance, source) == (0.1, "ci/pyproject.toml@cccccccccccc")


def test_a_commit_reads_files_links_and_nothing_else(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "kernel.py").write_text("import triton\n")
    (repo / "big.txt").write_text("x" * 100)
    (repo / "link.py").symlink_to("pkg/kernel.py")
    gitutil.git(tmp_path, "init", "-q", str(repo))
    gitutil.git(repo, "add", "-A")
    gitutil.git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    rev = GitRevision(repo, "HEAD")
    assert rev.read("pkg/kernel.py") == "import triton\n"
    assert rev.read("./pkg/kernel.py") == "import triton\n"
    assert rev.read("link.py") == "pkg/kernel.py"  # a link is its target's name, never followed
    assert rev.read("pkg") is None  # a folder is no file
    assert rev.read("pkg/missing.py") is None and rev.read("") is None
    assert rev.read("big.txt", max_bytes=100) == "x" * 100
    with pytest.raises(ReadRefused, match="100"):
        rev.read("big.txt", max_bytes=99)


def test_files_read_ahead_in_one_git_process_read_as_each_alone(tmp_path: Path) -> None:
    """``read_ahead`` (what an analysis reads of a diff, fetched by one ``git cat-file --batch``)
    gives each file as its own ``git cat-file blob`` gives it: bytes that are not UTF-8
    replaced, ``\\r\\n`` and ``\\r`` made ``\\n``, an empty file empty, a link its target's name;
    what is not a file, or past the characters allowed, is read alone as before."""
    repo = tmp_path / "r"
    (repo / "pkg").mkdir(parents=True)
    files = {
        "pkg/kernel.py": b"import triton\r\n\r\nx = 1\rdone\n",
        "pkg/bytes.cu": b"__global__ void k() {}\n\xff\xfe caf\xc3\xa9\n",
        "pkg/empty.py": b"",
        "pkg/last.py": b"no newline at the end",
        "big.txt": b"y" * 5000,
    }
    for name, data in files.items():
        (repo / name).write_bytes(data)
    (repo / "link.py").symlink_to("pkg/kernel.py")
    gitutil.git(tmp_path, "init", "-q", str(repo))
    gitutil.git(repo, "add", "-A")
    gitutil.git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    paths = [*files, "link.py", "pkg", "pkg/missing.py"]
    alone = {p: GitRevision(repo, "HEAD").read(p) for p in paths}
    assert alone["pkg/kernel.py"] == "import triton\n\nx = 1\ndone\n"
    assert "\ufffd" in (alone["pkg/bytes.cu"] or "") and "café" in (alone["pkg/bytes.cu"] or "")
    ahead = GitRevision(repo, "HEAD")
    ahead.read_ahead(paths, max_chars=1000)  # big.txt is past it: read alone
    assert len(ahead._fetched) == 5 and "y" * 5000 not in ahead._fetched.values()
    assert {p: ahead.read(p) for p in paths} == alone
    assert ahead._fetched == {}  # each kept until read, then dropped
