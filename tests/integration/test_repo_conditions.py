from __future__ import annotations

from pathlib import Path

from bot import gitutil
from bot import repo_conditions as rc
from bot.revision import GitRevision


def reader(files: dict[str, str]):
    return files.get


def test_codeowners_last_match_wins_and_policy_fallback():
    files = {
        ".github/CODEOWNERS": "# owners\n*.py @py-team\n/csrc/ @cuda-team\ncsrc/softmax.cu @alice @bob\n",
    }
    facts = rc.find_owners(
        ["csrc/softmax.cu", "csrc/add.cu", "ops/softmax.py", "docs/x.md"],
        reader(files),
        policy_owners=("@fallback",),
    )
    by_path = {f.path: f for f in facts}
    assert by_path["csrc/softmax.cu"].owners == ("@alice", "@bob")
    assert by_path["csrc/softmax.cu"].source == ".github/CODEOWNERS:4"
    assert by_path["csrc/add.cu"].owners == ("@cuda-team",)
    assert by_path["ops/softmax.py"].owners == ("@py-team",)
    assert by_path["docs/x.md"].owners == ("@fallback",)
    assert by_path["docs/x.md"].source == "policy"


def test_no_owner_anywhere():
    facts = rc.find_owners(["a.cu"], reader({}))
    assert facts[0].owners == ()
    conditions = rc.RepoConditions(
        owners=facts, pins=(), perf_gate=rc.PerfGateFact(workflow=None, detail="")
    )
    assert not conditions.all_owned


def test_codeowners_patterns():
    rx = rc._codeowners_regex
    assert rx("*.cu").match("a/b/c.cu")
    assert not rx("/*.cu").match("a/c.cu")
    assert rx("docs/**/*.md").match("docs/a/b/c.md")
    assert rx("kernels/").match("src/kernels/x.py")
    assert rx("/kernels/").match("kernels/x.py")
    assert not rx("/kernels/").match("src/kernels/x.py")


def test_pins_from_pyproject_requirements_and_locks():
    files = {
        "pyproject.toml": '[project]\ndependencies = [\n  "torch>=2.4",\n  "triton>=3.6,<3.7",\n]\n',
    }
    pins = {p.package: p for p in rc.find_pins(reader(files))}
    assert pins["triton"].kind == "range" and pins["triton"].source == "pyproject.toml:4"
    assert pins["torch"].kind == "unbounded" and not pins["torch"].pinned

    files["uv.lock"] = '[[package]]\nname = "torch"\nversion = "2.5.1"\n'
    pins = {p.package: p for p in rc.find_pins(reader(files))}
    assert pins["torch"].kind == "lock" and pins["torch"].spec == "locked 2.5.1"

    req = {"requirements.txt": "numpy\ntorch==2.5.1  # gpu\ntriton~=3.6.0\n"}
    pins = {p.package: p for p in rc.find_pins(reader(req))}
    assert pins["torch"].kind == "exact"
    assert pins["triton"].kind == "range"
    assert rc.find_pins(reader({}))[0].kind == "absent"


def test_poetry_caret_is_a_range():
    files = {
        "pyproject.toml": '[tool.poetry.dependencies]\ntriton = "^3.6"\ntorch = { version = "2.5.1" }\n'
    }
    pins = {p.package: p for p in rc.find_pins(reader(files))}
    assert pins["triton"].kind == "range"
    assert pins["torch"].kind == "exact"


def test_perf_gate_found_only_when_a_workflow_runs_the_bot():
    none = rc.find_perf_gate({".github/workflows/ci.yml": "steps:\n  - run: pytest\n"})
    assert none.workflow is None and "ci.yml" in none.detail
    gate = rc.find_perf_gate(
        {
            ".github/workflows/perf.yml": "jobs:\n  g:\n    steps:\n      - uses: acme/kernel-review@v1\n"
        }
    )
    assert gate.workflow == ".github/workflows/perf.yml"
    assert ":4:" in gate.detail


def test_collect_through_a_git_revision(tmp_path: Path):
    repo = gitutil.init_repo(tmp_path / "r")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "perf.yml").write_text(
        "steps:\n  - run: kernel-review bench --repo .\n"
    )
    (repo / "CODEOWNERS").write_text("*.cu @gpu\n")
    (repo / "requirements.txt").write_text("triton==3.6.0\ntorch==2.11.0\n")
    (repo / "k.cu").write_text("__global__ void k() {}\n")
    sha = gitutil.commit_all(repo, "init")
    facts = rc.collect(GitRevision(repo, sha), ["k.cu"])
    assert facts.all_owned and facts.all_pinned
    assert facts.perf_gate.workflow == ".github/workflows/perf.yml"


def test_commit_all_sees_a_same_size_same_mtime_replacement(tmp_path: Path):
    import os

    repo = gitutil.init_repo(tmp_path / "r")
    f = repo / "k.py"
    f.write_text("BLOCK = 1024\n")
    os.utime(f, (1_700_000_000, 1_700_000_000))
    base = gitutil.commit_all(repo, "base")
    f.write_text("BLOCK = 2048\n")  # same size
    os.utime(f, (1_700_000_000, 1_700_000_000))  # same mtime, as shutil.copy2 would leave it
    head = gitutil.commit_all(repo, "head")
    assert "BLOCK = 2048" in gitutil.diff_text(str(repo), base, head)
