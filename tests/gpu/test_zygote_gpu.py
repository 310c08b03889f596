"""The zygote on a real GPU (skipped without one): Triton's driver utilities, built once beside
its imports, are in a forked worker's own Triton cache before the worker starts, so its driver
loads them instead of building its own."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from checks.sweep.workers import WorkerClient, WorkerSpec, start_all
from checks.sweep.zygote import Forked, start_zygote
from tests.integration.test_workers import SHAPE, STANDINS

pytestmark = pytest.mark.gpu


def test_a_forked_worker_finds_the_utilities_the_zygote_built(tmp_path: Path) -> None:
    zygote = start_zygote("cuda", tmp_path / "zygote")
    worker = None
    try:
        built = tmp_path / "zygote" / "triton-utils"
        deadline = time.monotonic() + 120
        while not list(built.rglob("*_utils*.so")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # the build process loads what it built, then exits
        ours = {p.relative_to(built): p.stat().st_mtime_ns for p in built.rglob("*_utils*.so")}
        assert ours, "the zygote built no driver utilities"
        spec = WorkerSpec(side="head", root=STANDINS / "head", device="cuda", work_dir=tmp_path)
        worker = WorkerClient(spec, zygote)
        worker.start()
        assert isinstance(worker.proc, Forked)
        cache = spec.triton_cache
        # copied with their times: the worker's driver found them and built none of its own
        theirs = {p.relative_to(cache): p.stat().st_mtime_ns for p in cache.rglob("*_utils*.so")}
        assert theirs == ours
        # a check waits for the worker's driver (loaded in a thread from its start)
        assert worker.check(["standin_kernels:axpy"], SHAPE, "float32", seed=0).correct
        theirs = {p.relative_to(cache): p.stat().st_mtime_ns for p in cache.rglob("*_utils*.so")}
        assert theirs == ours
    finally:
        if worker is not None:
            worker.close()
        zygote.close()


def test_the_crossover_pair_makes_its_contexts_after_the_first_pair(tmp_path: Path) -> None:
    """The driver makes contexts asked for at once side by side, each slower: the second pair
    asks for its own once both of the first pair's are made (their marks), so the first case's
    check, which needs only the first pair, does not wait for four."""
    zygote = start_zygote("cuda", tmp_path / "zygote")
    workers = [
        WorkerClient(
            WorkerSpec(side=side, root=STANDINS / side, device="cuda", work_dir=tmp_path, arm=arm),
            zygote,
        )
        for arm in (0, 1)
        for side in ("base", "head")
    ]
    try:
        start_all(workers)
        marks = []
        for w in workers:
            w.finish(recheck=False)  # waits for the worker's context and loaded checks
            got = w.check(["standin_kernels:axpy"], SHAPE, "float32", seed=0)
            assert got.correct and got.marks is not None
            marks.append(got.marks)
        first_made = max(m.context_at for m in marks[:2])
        for m in marks[2:]:
            assert m.context_asked_at >= first_made
        for m in marks[:2]:
            assert m.context_asked_at <= min(x.context_at for x in marks[:2])
        assert sorted(p.name for p in (tmp_path / "contexts" / "gpu").iterdir()) == [
            "base",
            "head",
        ]
    finally:
        for w in workers:
            w.close()
        zygote.close()
