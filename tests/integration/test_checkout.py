"""The policy's build step: run in a checkout in the scrubbed environment, time-limited, and cached
by the tree it built so a second checkout of the same commit gets the build back."""

from __future__ import annotations

import json
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


ENTRY = """\
import numpy as np

from built import SCALE  # written by the build step


def scale(shape, dtype, *, device="cpu", seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return {"fn": lambda: SCALE * x, "reference": lambda: SCALE * x, "bytes_moved": 2 * x.nbytes}
"""


def test_a_sweep_builds_each_side_and_imports_from_its_python_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from checks.sweep.protocol import ProtocolConfig
    from checks.sweep.run import SweepOptions, run_sweep
    from checks.sweep.shapes import Case
    from checks.sweep.workers import Timeouts

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = gitutil.init_repo(tmp_path / "srcrepo")
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "src" / "pkg" / "bench.py").write_text(ENTRY)
    (root / ".gitignore").write_text("src/built.py\n")
    gitutil.commit_all(root, "a src/ layout whose module is built")
    trees = [gitutil.add_worktree(root, tmp_path / side, "HEAD") for side in ("base", "head")]
    checkout = Checkout(python_path=("src",), setup_command="echo 'SCALE = 3.0' > src/built.py")
    options = SweepOptions(
        device="cpu",
        protocol=ProtocolConfig(block_ms=2.0, min_rounds=4, max_rounds=6, max_case_seconds=4.0),
        timeouts=Timeouts(start_s=20, prepare_s=20, check_s=20),
        max_gpu_seconds=60,
        measure_ceilings=False,
        checkout=checkout,
    )
    case = Case(
        kernel="scale", bench="pkg.bench:scale", dims=(1000,), dtype="float32", tolerance=0.5
    )
    result = run_sweep(
        [case],
        base_root=trees[0],
        head_root=trees[1],
        base_rev="b" * 40,
        head_rev="h" * 40,
        options=options,
        work_dir=tmp_path / "work",
    )
    assert [c.status for c in result.cases] == ["ok"], result.cases[0].message
    assert any("setup (base)" in n and "took" in n for n in result.notes)
    assert any("setup (head)" in n and "from the cache" in n for n in result.notes)
    assert (trees[1] / "src" / "built.py").read_text() == "SCALE = 3.0\n"


@pytest.mark.parametrize("entry", ["../escaped.so", "out/../../escaped.so", "ABSOLUTE"])
def test_a_cache_manifest_entry_that_leaves_its_root_is_refused(
    repo: Path, tmp_path: Path, entry: str
) -> None:
    checkout = Checkout(setup_command=BUILD)
    cache = tmp_path / "cache"
    prepare(repo, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    [stored] = [p for p in cache.iterdir() if p.is_dir()]
    entry = str(tmp_path / "escaped.so") if entry == "ABSOLUTE" else entry
    (stored / "escaped.so").write_text("planted\n")  # what files/../escaped.so reads
    (stored / "manifest.json").write_text(json.dumps(["build.log", entry]))
    other = gitutil.add_worktree(repo, tmp_path / "other", "HEAD")
    with pytest.raises(SetupError) as err:
        prepare(other, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    assert repr(entry) in err.value.message and "leaves" in err.value.message
    assert str(stored) in err.value.message and "delete" in (err.value.hint or "")
    assert not (other / "build.log").exists()  # nothing of that entry was restored
    assert not (tmp_path / "escaped.so").exists()


def _stored(cache: Path) -> list[Path]:
    return [p for p in cache.iterdir() if p.is_dir()] if cache.exists() else []


def test_a_pull_requests_run_writes_no_build_to_the_cache(repo: Path, tmp_path: Path) -> None:
    from checks.procs import sandbox

    checkout = Checkout(setup_command=BUILD)
    cache = tmp_path / "cache"
    sandbox.require(disposable=True, trusted=False)  # as a pull request's measure job does
    try:
        first = prepare(repo, checkout, log_dir=tmp_path / "logs", cache_dir=cache)
    finally:
        sandbox.configure(None)
    assert "took" in first and (repo / "out" / "ext.so").exists()
    assert _stored(cache) == []  # a later run of this tree builds it again
    other = gitutil.add_worktree(repo, tmp_path / "other", "HEAD")
    assert "took" in prepare(other, checkout, log_dir=tmp_path / "logs", cache_dir=cache)


def test_a_cached_build_changed_or_planted_is_not_restored_and_only_a_trusted_run_replaces_it(
    repo: Path, tmp_path: Path
) -> None:
    from checks.procs import sandbox

    checkout = Checkout(setup_command=BUILD)
    cache, logs = tmp_path / "cache", tmp_path / "logs"
    prepare(repo, checkout, log_dir=logs, cache_dir=cache)  # a trusted run keeps its build
    [stored] = _stored(cache)
    (stored / "files" / "out" / "ext.so").write_text("poisoned\n")  # code run since changed it
    other = gitutil.add_worktree(repo, tmp_path / "other", "HEAD")
    sandbox.require(disposable=True, trusted=False)
    try:
        said = prepare(other, checkout, log_dir=logs, cache_dir=cache)
    finally:
        sandbox.configure(None)
    assert "took" in said and "did not match its digest" in said and str(stored) in said
    assert (other / "out" / "ext.so").read_text() == "\n"  # built, not restored
    assert (stored / "files" / "out" / "ext.so").read_text() == "poisoned\n"  # left alone
    third = gitutil.add_worktree(repo, tmp_path / "third", "HEAD")
    said = prepare(third, checkout, log_dir=logs, cache_dir=cache)  # trusted: replaces it
    assert "did not match its digest" in said and "stored again" in said
    assert (stored / "files" / "out" / "ext.so").read_text() == "\n"
    # an entry without the digest a trusted run writes beside it (planted) is never restored
    for digest in cache.glob("*.sha256"):
        digest.unlink()
    fourth = gitutil.add_worktree(repo, tmp_path / "fourth", "HEAD")
    assert "took" in prepare(fourth, checkout, log_dir=logs, cache_dir=cache)
    fifth = gitutil.add_worktree(repo, tmp_path / "fifth", "HEAD")
    assert "restored" in prepare(fifth, checkout, log_dir=logs, cache_dir=cache)
