"""Where a worker's check, prepare and recheck (finish) spend their time, one worker alone in
this process (one device call, about 20 s): each step of a few cases of bench/cli_decision.py's
kernels, the GPU synchronized around every timed function; then how long allocating, filling
and freeing 3 and 12 GiB take.

    python3 bench/check_steps.py

Prints one JSON line per case and step. Beside a run's own phases (several workers at once on
the GPU) it tells the work of one worker from the wait for the others.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cli_decision as cd  # noqa: E402

CASES = (
    ("scaled_add", [1048576]),
    ("scaled_add", [734003200]),
    ("scaled_add", [734003200]),
    ("row_sum", [131072, 16384]),
    ("scaled_add", [7]),
)


def main() -> int:
    repo = cd.build_repo(Path(tempfile.mkdtemp()) / "repo", cd.SHAPES_GPU)
    sys.path.insert(0, str(repo))
    import torch

    import checks.worker.main as wm

    spent: dict[str, float] = {}

    def timed(owner: Any, name: str) -> None:
        f = getattr(owner, name)

        @functools.wraps(f)
        def run(*a: Any, **k: Any) -> Any:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                torch.cuda.synchronize()
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0

        setattr(owner, name, run)

    for name in ("poison", "compare", "digest"):
        timed(wm.correctness, name)
    timed(torch.cuda, "empty_cache")
    worker = wm.Worker(str(repo), "cuda", "base")
    timed(worker, "_call_entry")
    timed(worker, "_release")
    for kernel, shape in CASES:
        entries = [f"cdk.bench:{kernel}"]
        for op, msg in (
            ("check", {"entries": entries, "shape": shape, "dtype": "float32", "seed": 5}),
            ("prepare", {"entries": entries, "shape": shape, "dtype": "float32", "seed": 0,
                         "estimate": False}),
            ("finish", {"recheck": True}),
        ):  # fmt: skip
            spent.clear()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            getattr(worker, "op_" + op)(msg)
            torch.cuda.synchronize()
            row = {
                "case": f"{kernel}{shape}",
                "op": op,
                "total": round(time.perf_counter() - t0, 4),
            }
            print(json.dumps({**row, **{k: round(v, 4) for k, v in spent.items()}}), flush=True)
    for gib in (3, 12):
        marks = [time.perf_counter()]
        blocks = [torch.empty(2**30, dtype=torch.uint8, device="cuda") for _ in range(gib)]
        torch.cuda.synchronize()
        marks.append(time.perf_counter())
        for b in blocks:
            b.fill_(1)
        torch.cuda.synchronize()
        marks.append(time.perf_counter())
        del blocks, b
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
        marks.append(time.perf_counter())
        blocks = [torch.empty(2**30, dtype=torch.uint8, device="cuda") for _ in range(gib)]
        torch.cuda.synchronize()
        marks.append(time.perf_counter())
        del blocks
        torch.cuda.empty_cache()
        steps = ("malloc_s", "fill_s", "free_s", "malloc_again_s")
        print(
            json.dumps(
                {"GB": gib, **{s: round(marks[i + 1] - marks[i], 4) for i, s in enumerate(steps)}}
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
