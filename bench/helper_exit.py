"""What a measuring process's end costs its caller: interpreter teardown against ``end_now``.

    python bench/helper_exit.py --out bench/results/cpu/helper_exit.txt [--repeats 5]

Each run starts a fresh process that does what a helper or a worker has done by its end (imports
torch and Triton, runs a torch op, cross-compiles a Triton kernel for sm_90 as the compile-ahead
helper does), says it is done, and then either returns from its script as before (interpreter
teardown) or calls ``checks.worker.exiting.end_now``. The time from "done" to the process's exit
is what the sweep's ``close`` and ``checks.job_process.run_job`` wait for. The two ways run in
alternating order, ``--repeats`` times each, in this one call.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from side_by_side import alternate, record  # noqa: E402

CHILD = """
import sys, torch, triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n), mask=i < n)

x = torch.randn(512, 512)
(x @ x).sum().item()
src = ASTSource(add, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                constexprs={"BLOCK": 1024})
triton.compile(src, target=GPUTarget("cuda", 90, 32))
sys.stdout.write("done\\n")
sys.stdout.flush()
if sys.argv[1] == "end_now":
    from checks.worker.exiting import end_now
    end_now(0)
"""


def one(way: str, work: Path) -> float:
    """Seconds from the child's "done" to its exit (its own empty Triton cache, as a helper's)."""
    script = work / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache)}
    proc = subprocess.Popen(
        [sys.executable, str(script), way], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    t0 = time.perf_counter()
    proc.wait(timeout=120)
    if line.strip() != "done" or proc.returncode != 0:
        raise SystemExit(f"the child did not finish its work ({way}): rc {proc.returncode}")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the record here (default: print it)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="helper-exit-") as tmp:
        work = Path(tmp)
        ways = {way: lambda w=way: one(w, work) for way in ("teardown", "end_now")}
        times = alternate(ways, args.repeats)
    import torch
    import triton

    versions = f"Python {platform.python_version()}, torch {torch.__version__}, Triton {triton.__version__}"
    what = "seconds from the child's last line of work to its exit"
    record(__file__, versions, what, times, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
