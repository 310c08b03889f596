"""The policy's build step: run in a checkout in the scrubbed environment, time-limited, and cached
by the tree it built so a second checkout of the same commit gets the build back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import gitutil
from bot.policy.load import parse_policy
from checks.checkout import Checkout, SetupError, checkout_for, prepare

BUILD = 'echo built >> build.log; mkdir -p out; echo "$SECRET_TOKEN" > out/ext.so'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = gitutil.init_repo(tmp_path / "repo")
    (root / "setup.py").write_text("# builds an extension\n")
    (root / ".gitignore").write_text("out/\nbuild.log\n")
    gitutil.commit_all(root, "base")
    return root


def test_the_build_runs_once_per_tree_and_a_new_checkout_gets_it_back(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    checkout = Checkout(setup_command=BUILD)
    cache = tmp_path / "cache"
    first = prepare(repo, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    assert "took" in first and (repo / "build.log").read_text() == "built\n"
    assert (repo / "out" / "ext.so").read_text() == "\n"  # the token is scrubbed
    other = gitutil.add_worktree(repo, tmp_path / "other", "HEAD")
    second = prepare(other, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    assert "restored the build of this tree from the cache" in second
    assert (other / "build.log").read_text() == "built\n" and (other / "out" / "ext.so").exists()
    (other / "setup.py").write_text("# changed\n")  # local changes: always built
    third = prepare(other, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    assert "took" in third and (other / "build.log").read_text() == "built\nbuilt\n"


def test_a_failing_or_slow_build_says_so_with_its_output(repo: Path, tmp_path: Path) -> None:
    failing = Checkout(setup_command="echo compiling; echo 'nvcc: not found' >&2; exit 3")
    with pytest.raises(SetupError, match=r"(?s)exited with code 3 in repo.*nvcc: not found"):
        prepare(repo, failing, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache")
    slow = Checkout(setup_command="echo started; sleep 30", setup_timeout_s=0.5)
    with pytest.raises(SetupError, match=r"(?s)ran past 0.5 s in repo; killed it.*started"):
        prepare(repo, slow, log_dir=tmp_path / "logs", cache_dir=tmp_path / "cache")


def test_no_build_step_is_no_work(repo: Path, tmp_path: Path) -> None:
    assert prepare(repo, Checkout(), log_dir=tmp_path / "logs") == ""
    assert not (tmp_path / "logs").exists()


def test_the_checkout_comes_from_the_policy() -> None:
    policy = parse_policy(
        'python_path = ["src"]\n[deployment]\nkind = "long-lived"\n'
        '[setup]\ncommand = "make"\ntimeout_s = 60\n'
        '[[kernels]]\nname = "k"\nbench = "m:f"\npaths = ["m.py"]\ndtypes = ["float16"]\n'
        "shapes = [[8]]\n"
    )
    assert checkout_for(policy) == Checkout(
        python_path=("src",), setup_command="make", setup_timeout_s=60.0
    )
