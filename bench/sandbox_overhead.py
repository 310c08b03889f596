"""What confining the measured code costs a job (``checks/procs``): the processes' lives, the
part of a job the sandbox and the cgroups change (what runs inside them is the same code).

    python bench/sandbox_overhead.py --out bench/results/cpu/sandbox_overhead.txt [--repeats 5]
    python bench/sandbox_overhead.py --one-process --out bench/results/cpu/sandbox_spawn.txt

One way and the other, in alternating order, in this one call: a zygote started, a base and a
head worker forked from it and a base and a head worker started afresh, each greeted and
preparing the CPU stand-in ``axpy``, then all of them ended, the zygote last; unconfined (a
local command) and confined (as a measure job on a runner with bwrap and cgroups). With
``--one-process``: one ``python -c pass`` started, waited for and ended (its cgroups removed),
the cost each started process pays. Needs what ``kernel-review doctor --runner`` checks.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from side_by_side import alternate, record  # noqa: E402

from checks.procs import launch, sandbox  # noqa: E402
from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec  # noqa: E402
from checks.sweep.zygote import start_zygote  # noqa: E402

STANDINS = ROOT / "tests" / "data" / "standins"
TIMEOUTS = Timeouts(start_s=120, prepare_s=60, check_s=30, configure_s=30, block_s=30)


def one_process(confined: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="kr-overhead-") as tmp:
        if confined:
            sandbox.configure(sandbox.detect(), scratch=Path(tmp))
        try:
            t0 = time.perf_counter()
            one = launch.Launch((sys.executable, "-I", "-c", "pass"), {}, Path(tmp), 2**30)
            proc = launch.start(one, Path(tmp) / "log")
            proc.wait()
            sandbox.kill_tree(proc.pid)
            return time.perf_counter() - t0
        finally:
            sandbox.configure(None)


def lives(confined: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="kr-overhead-") as tmp:
        t0 = time.perf_counter()
        if confined:
            isolation = sandbox.detect()
            if not isolation.ready:
                raise SystemExit("this machine cannot confine: " + "; ".join(isolation.problems()))
            sandbox.configure(isolation, scratch=Path(tmp) / "scratch")
        try:
            work = Path(tempfile.mkdtemp(dir=Path(tmp) / "scratch" if confined else tmp))
            zygote = start_zygote("cpu", work / "zygote", memory_bytes=4 * 2**30)
            clients = []
            for forked in (True, False):
                for slot, side in enumerate(("base", "head"), start=1):
                    spec = WorkerSpec(side=side, root=STANDINS / side, device="cpu",
                                      work_dir=work, timeouts=TIMEOUTS, memory_bytes=4 * 2**30,
                                      slot=slot)  # fmt: skip
                    clients.append(WorkerClient(spec, zygote if forked else None))
            for c in clients:
                c.spawn()
            for c in clients:
                c.hello()
                c.prepare(["standin_kernels:axpy"], (1000,), "float32", seed=0)
            for c in clients:
                c.close()
            zygote.close()
        finally:
            sandbox.configure(None)
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the record here (default: print it)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--one-process", action="store_true", help="one process's start and end")
    args = ap.parse_args(argv)
    run = one_process if args.one_process else lives
    ways = {"unconfined": lambda: run(False), "confined": lambda: run(True)}
    times = alternate(ways, args.repeats)
    what = (
        "seconds for one `python -c pass`, started, waited for and ended"
        if args.one_process
        else "seconds for a zygote and four workers (two forked), each preparing axpy, then ended"
    )
    record(__file__, f"Python {platform.python_version()}", what, times, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
