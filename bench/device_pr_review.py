"""A real pull request's measure job on this machine's GPU, and the review it renders.

    python bench/device_pr_review.py --out OUT                       # on the GPU (the H200)
    python bench/device_pr_review.py --out /tmp/pr-cpu --device cpu  # plumbing: CPU timing

It clones ``bench/device_src/tritonbench.bundle`` (README.md beside it: meta-pytorch/tritonbench
#269, which makes the sum operator's Triton kernel accumulate with ``tl.atomic_add`` over several
blocks where one block was past Triton's size limit; BSD 3-Clause), plans the review as the gate
job would (the policy from the base commit), and runs that plan through
``checks.measure.measure_plan``, the code behind ``kernel-review review --mode measure``: the shape
sweep of base against head, the first call in fresh processes and the compiler report, as a GPU
runner's job runs them. Into ``--out`` it writes ``results-nvidia.json`` (what the runner hands
the report job), the sweep's raw rounds (``sweep-*.json``), ``review.md`` (the comment, rendered
by ``kernel-review review --results``, as ``tests/integration/test_device_pr_review.py`` renders
it again) and ``run.md`` (when, where, the job's timed log). ``--device cpu`` runs the sweep with
CPU timing under the Triton interpreter, labelled so in the results, the first call
compile-only: it checks the pipeline and measures nothing a GPU would.

To keep a GPU run: copy ``results-nvidia.json`` to
``tests/data/device_pr/tritonbench-269/`` and ``review.md`` to
``tests/golden/review_tritonbench_269.md``; the test then holds the review to it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixture_review_gpu import _environment as versions  # noqa: E402

from bot.contracts.results import ResultsFile  # noqa: E402
from bot.review.local import ReviewInputs, gpu_vendor, static_review  # noqa: E402
from checks.measure import measure_plan  # noqa: E402
from checks.sweep.protocol import default_protocol  # noqa: E402
from checks.sweep.run import SweepOptions  # noqa: E402

BUNDLE = ROOT / "bench" / "device_src" / "tritonbench.bundle"
BASE, HEAD = "pr269-base", "pr269-head"


def clone(bundle: Path, into: Path) -> Path:
    """The bundle cloned into ``into`` with its base and head as local branches."""
    subprocess.run(["git", "clone", "-q", str(bundle), str(into)], check=True, capture_output=True)
    for branch in (BASE, HEAD):
        subprocess.run(
            ["git", "-C", str(into), "branch", "-q", "-f", branch, f"origin/{branch}"],
            check=True,
            capture_output=True,
        )
    return into


def render(repo: Path, results: Path, out: Path) -> int:
    """``kernel-review review --results`` of the range into ``out`` (the comment's markdown),
    with no GPU visible, as CI renders it again: a vendor without results is then "needs a
    GPU runner; this machine has no GPU" here too."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "review",
            "--repo",
            str(repo),
            "--base",
            BASE,
            "--head",
            HEAD,
            "--results",
            str(results),
            "--no-compile",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the results and review")
    ap.add_argument("--bundle", type=Path, default=BUNDLE, help="the git bundle to clone")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args(argv)
    cpu = args.device == "cpu"
    vendor = "nvidia" if cpu else gpu_vendor()
    if vendor is None:
        print(
            "device_pr_review: no usable GPU here; use --device cpu for the plumbing",
            file=sys.stderr,
        )
        return 2
    if not args.bundle.is_file():
        print(
            f"device_pr_review: no bundle at {args.bundle}; make it with bench/device_src/make_bundle.sh",
            file=sys.stderr,
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    run_md = args.out / "run.md"
    log = [f"# tritonbench #269's measure job on {versions()}", ""]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    how = "; CPU timing under the Triton interpreter: plumbing only" if cpu else ""
    log += [f"Started {started}{how}.", ""]
    t_start = time.perf_counter()

    def progress(msg: str) -> None:
        line = f"[{time.perf_counter() - t_start:7.1f} s] {msg}"
        print(line, file=sys.stderr, flush=True)
        log.append(f"    {line}")
        run_md.write_text("\n".join(log) + "\n", encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="device-pr-") as tmp:
        repo = clone(args.bundle, Path(tmp) / "tritonbench")
        sha = {
            b: subprocess.run(
                ["git", "-C", str(repo), "rev-parse", b], check=True, capture_output=True, text=True
            ).stdout.strip()
            for b in (BASE, HEAD)
        }
        plan = static_review(ReviewInputs(repo=repo, base_sha=sha[BASE], head_sha=sha[HEAD])).plan
        log += [
            f"Plan: base {sha[BASE][:12]}, head {sha[HEAD][:12]}, kernels "
            f"{', '.join(k.name for k in plan.kernels)}, checks {', '.join(plan.checks)}.",
            "",
        ]
        options = SweepOptions(device="cpu", protocol=default_protocol("cpu")) if cpu else None
        if cpu:
            os.environ["TRITON_INTERPRET"] = "1"
        t0 = time.perf_counter()
        evidence = measure_plan(
            plan,
            vendor=vendor,
            repo_root=repo,
            details_dir=args.out,
            progress=progress,
            sweep_options=options,
        )
        results = args.out / f"results-{vendor}.json"
        results.write_text(
            ResultsFile(
                head_sha=sha[HEAD], base_sha=sha[BASE], vendor=vendor, evidence=evidence
            ).model_dump_json(indent=1),
            encoding="utf-8",
        )
        missed = [f"{n.check}: {n.reason}" for n in evidence.not_run]
        log += ["", f"- measure job: {time.perf_counter() - t0:.1f} s"]
        log += [f"- not run: {m}" for m in missed]
        rc = render(repo, results, args.out / "review.md")
        log.append(f"- review.md rendered by `kernel-review review --results`: exit code {rc}")
        run_md.write_text("\n".join(log) + "\n", encoding="utf-8")
    print(f"results: {results}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
