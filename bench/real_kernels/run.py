"""The real-kernel A/A suite, through ``kernel-review bench`` as a user runs it.

For each catalogue group (``catalogue/<group>.toml``: one pinned PyPI package and its kernels)
it builds a git repository (``rk_repo.py``: ``entries/``, a generated ``suite.py`` with one bench
entry per kernel, the policy at ``--tolerance``, deployment long-lived) with three heads: ``aa``
(identical code), ``slow5`` and ``slow10`` (each kernel followed by real extra GPU work of 5% and
10% of its own time, ``rk_extra.py``). Then, per group, ``python -m bot bench`` of ``aa`` three
times (``--runs``), ``slow5`` once and ``slow10`` once, each a subprocess with a time limit
inside ``--budget-s``; after each, ``triton.testing.do_bench`` all in on the same cases: one
fresh Python process per side in that side's checkout, ``do_bench(fn)`` at its defaults per
case, its wall time from start to exit. What did not fit is listed, never guessed.

On the H200 (no network; from the repository root, the bot's own dependencies carried as
``.whl/`` and the packages' wheels as ``.real_wheels/``, made here by
``bench/real_kernels/fetch_wheels.sh``)::

    python3 -m pip install --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    python3 -m pip install --no-index --no-deps .real_wheels/*.whl   # the workers run python -I
    export PYTHONPATH=.:/tmp/site
    python3 bench/real_kernels/run.py --parts 6 --part 1 --out bench/results/h200/real_kernels
    ...                                                  # --part 2 ... --part 6, one call each
    python3 bench/real_kernels/run.py --summarize-only --out bench/results/h200/real_kernels

``--install-wheels .real_wheels`` does the second line itself (only the selected groups' pins).
The work is a list of units, group by group (aa 1..3, slow5, slow10); ``--parts M --part N``
runs the N-th of M consecutive slices (``--heads`` and ``--runs`` narrow the list first).
Time per unit is not yet measured on the H200: from ``bench/results/h200/cli_decision`` (about
0.35 s per verdict and 5-10 s of start-up) a group of 5 kernels x 2 served shapes and the small
and ragged shapes the planner adds (about 20 cases) takes about 20-40 s per bench call plus its
autotuning, and about 15-25 s of do_bench processes, so a group's five units are 3-6 minutes:
with 6-8 groups, ``--parts`` of about one group per 8-minute call (``--budget-s`` 480 by default
keeps each call under 9 minutes). The sweep that measures every case in two to four executions
(fresh workers each; main from 2f86d78 on) takes longer per call: on the CPU stand-in a call
went from about 10 s to 70-130 s, so expect fewer groups per part there; whatever does not fit a
call's budget is listed as not run; run it in another call narrowed with ``--groups``,
``--heads`` and ``--runs``. Each call writes ``part<N>.json`` (``part<N>.<k>.json`` where that
exists already, so no call's record replaces another's), then ``summary.json`` and
``results.md`` from every part in ``--out``.

A group's ``setup`` (catalogue) runs in ``suite.py`` before any entry is imported, so it applies
in the sweep's workers, in the do_bench processes and in the import check that runs before a
group's first unit; a group whose package does not import at its pinned version there is skipped
with the reason (``--allow-version-mismatch`` measures what is installed instead). The workers
import torch and Triton before the checkout's code, so a setup that must precede those imports
cannot take effect there.

Plumbing without a GPU (CPU timing, labelled so in every file, numbers meaningless; do_bench
replaced by a timed loop on the CPU)::

    python bench/real_kernels/run.py --device cpu --catalogue tests/data/real_kernels_standin/catalogue \\
        --entries tests/data/real_kernels_standin/entries --out /tmp/rk-cpu

(two groups of one kernel each, ten bench calls with their do_bench processes: 4-5 minutes on
a 2-core machine, or two ``--parts``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for place in (ROOT, ROOT / "bench", HERE):
    if str(place) not in sys.path:
        sys.path.insert(0, str(place))

from cli_decision import add_bot_bytecode_option, bot_bytecode, run_cli  # noqa: E402
from rk_catalogue import CatalogueError, Group, first_shapes, load_catalogue, select  # noqa: E402
from rk_repo import add_slow_head, build_group_repo  # noqa: E402
from rk_summary import markdown, summarize  # noqa: E402

from bot import gitutil  # noqa: E402

HEAD_ORDER = ("aa", "slow5", "slow10")
AA_RUNS = 3
CPU_LABEL = "CPU timing: plumbing only, numbers meaningless"
STARTED = time.monotonic()

# One fresh process per side: import torch, the checkout's suite, then per case build the entry
# and time ``fn`` with do_bench at its defaults (on the CPU, a timed loop of about 100 ms).
DOBENCH = r"""
import json, statistics, sys, time
t0 = time.monotonic()
import torch
sys.path.insert(0, ".")
device, cases = sys.argv[1], json.loads(sys.argv[2])
if device == "cpu":
    def timer(fn):
        fn()
        n, t = 0, time.perf_counter()
        while n < 3 or time.perf_counter() - t < 0.1:
            fn()
            n += 1
        return (time.perf_counter() - t) / n * 1e3
else:
    import triton.testing
    timer = triton.testing.do_bench
import rk_extra, suite
for c in cases:
    row = {"kernel": c["kernel"], "shape": c["shape"], "dtype": c["dtype"]}
    try:
        item = getattr(suite, c["kernel"])(tuple(c["shape"]), c["dtype"], device=device, seed=0)
        row["mean_ms"] = timer(item["fn"])
        del item
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
    # a slow head's extra work as this process sized it (the workers size theirs the same way)
    sized = rk_extra.SIZED.get((c["kernel"], tuple(c["shape"]), c["dtype"], device))
    if sized is not None:
        row["extra"] = vars(sized)
    print(json.dumps(row), flush=True)
print(json.dumps({"in_process_s": time.monotonic() - t0}), flush=True)
"""

# The import check: the group's setup, its package, the installed version of its distribution.
PREFLIGHT = r"""
import importlib, importlib.metadata, json, sys
setup, name, dist = sys.argv[1], sys.argv[2], sys.argv[3]
if setup.strip():
    exec(compile(setup, "<setup>", "exec"), {})
importlib.import_module(name)
print(json.dumps({"version": importlib.metadata.version(dist)}))
"""


def log(msg: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f} s] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ the work list


def plan_units(
    groups: list[Group],
    heads: list[str],
    aa_runs: int,
    *,
    by_run: bool = False,
    first_run: int = 1,
) -> list[tuple[str, str, int]]:
    """Every bench call: ``(group, head, run)``, aa ``aa_runs`` times first (numbered from
    ``first_run``, so a later call goes on where an earlier one stopped); group by group, or
    with ``by_run`` each head and run over every group before the next (a call cut short then
    leaves every group measured as often as the time allowed)."""
    wanted = [
        (head, i + (first_run if head == "aa" else 1))
        for head in HEAD_ORDER
        if head in heads
        for i in range(aa_runs if head == "aa" else 1)
    ]
    if by_run:
        return [(g.name, head, run) for head, run in wanted for g in groups]
    return [(g.name, head, run) for g in groups for head, run in wanted]


def slice_units(units: list[Any], part: int, parts: int) -> list[Any]:
    """The ``part``-th (1-based) of ``parts`` consecutive slices, sizes differing by one at most."""
    if not 1 <= part <= parts:
        raise ValueError(f"--part {part} is not within 1..{parts} (--parts)")
    size, extra = divmod(len(units), parts)
    start = (part - 1) * size + min(part - 1, extra)
    return units[start : start + size + (1 if part <= extra else 0)]


def part_path(out: Path, part: int) -> Path:
    """``part<N>.json``, or ``part<N>.<k>.json`` with the first free ``k`` when it exists."""
    path = out / f"part{part}.json"
    k = 2
    while path.exists():
        path = out / f"part{part}.{k}.json"
        k += 1
    return path


# ------------------------------------------------------------------------------ the machine


def install_pins(groups: list[Group]) -> list[str]:
    """Every pin the selected groups install: each ``requirement`` and its ``also``."""
    return sorted({pin for g in groups for pin in g.pins})


def install_command(folder: Path, groups: list[Group]) -> list[str]:
    """The pip command that installs ``install_pins`` from ``folder`` into this Python, as the
    workers import them (``python -I`` ignores PYTHONPATH): no index, no dependencies."""
    return [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
            "--find-links", str(folder), *install_pins(groups)]  # fmt: skip


def install_wheels(folder: Path, groups: list[Group]) -> dict[str, Any]:
    """``install_command`` run: what it installed, its exit code and its output's tail."""
    done = subprocess.run(
        install_command(folder, groups), capture_output=True, text=True, timeout=600
    )
    return {
        "requirements": install_pins(groups),
        "rc": done.returncode,
        "tail": (done.stdout + done.stderr)[-1500:],
    }


def preflight(group: Group, allow_mismatch: bool) -> str | None:
    """None when the group's package imports under ``python -I`` with its setup, at its pinned
    version (or any, with ``allow_mismatch``); else why not and what to do."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", PREFLIGHT, group.setup, group.import_name,
             group.distribution],
            capture_output=True, text=True, timeout=300, cwd=tempfile.gettempdir(),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"importing {group.import_name} took over 300 s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return (
            f"{group.import_name} does not import under `{Path(sys.executable).name} -I` ({last}); "
            f"install {' '.join(group.pins)} into this Python (--install-wheels DIR, or pip install "
            "--no-index --no-deps DIR/*.whl)"
        )
    version = json.loads(done.stdout.strip().splitlines()[-1])["version"]
    if version != group.version and not allow_mismatch:
        return (
            f"{group.distribution} {version} is installed, the catalogue pins {group.version}; "
            f"install {group.requirement} (or pass --allow-version-mismatch to measure {version})"
        )
    return None


# ------------------------------------------------------------------------------- one unit


def bench_command(
    repo: Path, base: str, head: str, out: Path, device: str, extra: list[str]
) -> list[str]:
    cpu = (
        ["--engine-option=max_rounds=10", "--engine-option=added_shapes=off"]
        if device == "cpu"
        else []
    )
    return ["-m", "bot", "bench", "--repo", str(repo), "--base", base, "--head", head,
            "--device", device, "--out", str(out), *cpu, *extra]  # fmt: skip


def read_results(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A bench results file: its top-level fields (cases left out) and its cases, each whole
    but for the raw rounds."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = [{k: v for k, v in c.items() if k != "raw"} for c in data.get("cases", [])]
    return {k: v for k, v in data.items() if k != "cases"}, cases


def read_partial(path: Path) -> list[dict[str, Any]]:
    """The cases a stopped sweep had journaled (one JSON object a line), raw rounds left out;
    a line cut short by the stop is left out too."""
    if not path.is_file():
        return []
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            case = json.loads(line)
        except json.JSONDecodeError:
            continue
        cases.append({k: v for k, v in case.items() if k != "raw"})
    return cases


def dobench_side(
    checkout: Path, cases: list[dict[str, Any]], device: str, timeout_s: float
) -> dict[str, Any]:
    """do_bench all in for one side: a fresh process in ``checkout``, every case once."""
    env = dict(os.environ)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    # an empty Triton cache, as kernel-review starts each side: its compiles are counted too
    cache = tempfile.mkdtemp(prefix="dobench-triton-")
    env["TRITON_CACHE_DIR"] = cache
    todo = [{"kernel": c["kernel"], "shape": c["shape"], "dtype": c["dtype"]} for c in cases]
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", DOBENCH, device, json.dumps(todo)],
            cwd=str(checkout), capture_output=True, text=True, timeout=timeout_s, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        shutil.rmtree(cache, ignore_errors=True)
        return {"wall_s": None, "error": f"did not finish within {timeout_s:.0f} s", "rows": []}
    wall = time.monotonic() - t0
    shutil.rmtree(cache, ignore_errors=True)
    rows = []
    for line in done.stdout.splitlines():  # the script's lines; anything the code printed is not
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "kernel" in row:
            rows.append(row)
    timer = (
        "CPU timed loop (plumbing only)"
        if device == "cpu"
        else "triton.testing.do_bench, empty Triton cache"
    )
    got: dict[str, Any] = {"wall_s": wall, "timer": timer, "rows": rows}
    if done.returncode != 0:
        got.update(wall_s=None, error=f"rc {done.returncode}: {done.stderr[-1500:]}")
    return got


def run_unit(
    ctx: dict[str, Any], group: Group, head: str, run: int, skipped: list[str]
) -> dict[str, Any] | None:
    g = ctx["built"][group.name]
    what = f"{group.name} {head} run {run}"
    est = ctx["unit_s"].get(group.name, ctx["first_unit_s"])
    left = ctx["deadline"] - time.monotonic()
    if left < est:
        skipped.append(
            f"{what}: did not fit in the time left ({left:.0f} s, needs about {est:.0f} s)"
        )
        log(f"skipped: {what}")
        return None
    if head not in g["shas"]:  # a slow head, sized from the A/A runs' base medians
        sizes = kernel_times(group.name, [*ctx["earlier_runs"], *ctx["record"]["runs"]])
        g["shas"][head] = add_slow_head(g["repo"], group, head, sizes)
        ctx["record"]["groups"][group.name]["commits"][head] = g["shas"][head]
        ctx["record"]["groups"][group.name].setdefault("kernel_us", {})[head] = [
            [k, list(shape), dtype, us] for (k, shape, dtype), us in sorted(sizes.items())
        ]
        if not sizes:
            skipped.append(
                f"{what}: no A/A run of {group.name} recorded in this call or --out, so each "
                "process sizes the extra work itself (it then differs from process to process)"
            )
    results = ctx["runs_dir"] / f"{group.name}-{head}-{run}.json"
    timed_too = not ctx["no_dobench"] and (not ctx["dobench_once"] or (head, run) == ("aa", 1))
    reserve = min(ctx["dobench_s"], left / 3) if timed_too else 0.0
    limit = min(ctx["run_s"], left - reserve)
    got = run_cli(
        bench_command(g["repo"], "base", head, results, ctx["device"], ctx["bench_args"]),
        timeout_s=limit,
        cwd=ROOT,
    )
    record: dict[str, Any] = {
        "group": group.name,
        "head": head,
        "run": run,
        "tolerance": ctx["tolerance"],
        "base_sha": g["shas"]["base"],
        "head_sha": g["shas"][head],
        "limit_s": limit,
        "wall_s": got["wall_s"],
        "rc": got["rc"],
        "timed_out": got["timed_out"],
        "stderr_tail": got["stderr_tail"][-15:],
        "results": None,
        "cases": [],
        "dobench": None,
    }
    if not results.exists():
        why = f"timed out after {limit:.0f} s" if got["timed_out"] else f"rc {got['rc']}"
        record["error"] = f"no results file ({why}): " + " | ".join(got["stderr_tail"][-3:])
        # the cases the sweep finished before it stopped, kept apart: without the sweep's end
        # they have no verdict after Holm, so no figure counts them
        record["partial_cases"] = read_partial(results.with_name(results.stem + ".partial.jsonl"))
        log(f"{what}: {record['error']}")
        skipped.append(
            f"{what}: the bench call gave no results ({why}); "
            f"{len(record['partial_cases'])} cases finished before it stopped, not counted"
        )
        return record
    record["results"], record["cases"] = read_results(results)
    verdicts: dict[str, int] = {}
    for c in record["cases"]:
        v = c.get("verdict") if c.get("status") == "ok" else c.get("status")
        verdicts[str(v)] = verdicts.get(str(v), 0) + 1
    log(f"{what}: {len(record['cases'])} cases {verdicts}, {got['wall_s']:.1f} s")
    if ctx["no_dobench"] or (ctx["dobench_once"] and (head, run) != ("aa", 1)):
        skipped.append(f"{what}: do_bench not run (--no-dobench or --dobench-once)")
    else:
        record["dobench"] = dobench_both(ctx, g, head, record["cases"], what, skipped)
    # the next unit of this group is expected to take as long as its longest bench call so far,
    # and a bit (do_bench's processes have their own reserve, taken only where they run)
    ctx["unit_s"][group.name] = max(ctx["unit_s"].get(group.name, 0.0), 1.2 * got["wall_s"])
    # the results file with every round, for replaying the verdicts offline (``recompute``)
    raw = ctx["raw_dir"] / results.name
    raw.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(results, raw)
    record["raw_results"] = str(raw.relative_to(ctx["raw_dir"].parent))
    return record


def dobench_both(
    ctx: dict[str, Any],
    g: dict[str, Any],
    head: str,
    cases: list[dict[str, Any]],
    what: str,
    skipped: list[str],
) -> dict[str, Any] | None:
    """do_bench all in for base, then head, each within the time left."""
    out: dict[str, Any] = {}
    for side in ("base", head):
        left = ctx["deadline"] - time.monotonic()
        if left < 10:
            skipped.append(f"{what}: do_bench {side} did not fit ({left:.0f} s left)")
            return out or None
        checkout = g["checkouts"].get(side)
        if checkout is None:
            checkout = g["checkouts"][side] = gitutil.add_worktree(
                g["repo"], g["work"] / f"wt-{side}", g["shas"][side]
            )
        got = dobench_side(checkout, cases, ctx["device"], min(ctx["dobench_s"], left))
        out["base" if side == "base" else "head"] = got
        errors = [r for r in got["rows"] if "error" in r]
        log(
            f"{what}: do_bench {side} {len(got['rows'])} cases, {got['wall_s'] or 0:.1f} s"
            + (f", {len(errors)} errors (first: {errors[0]['error'][:200]})" if errors else "")
            + (f"; {got['error'][-300:]}" if got.get("error") else "")
        )
    return out


# ------------------------------------------------------------------------------- the parts


def kernel_times(
    group: str, runs: list[dict[str, Any]]
) -> dict[tuple[str, tuple[int, ...], str], float]:
    """Each case's kernel time from the group's A/A runs: the median of their base medians
    (the sweep's own measure of the kernel alone, in the mode it times it)."""
    seen: dict[tuple[str, tuple[int, ...], str], list[float]] = {}
    for r in runs:
        if r.get("group") != group or r.get("head") != "aa":
            continue
        for c in r.get("cases") or []:
            us = c.get("base_median_us")
            if c.get("status") == "ok" and isinstance(us, (int, float)) and us > 0:
                key = (str(c["kernel"]), tuple(int(d) for d in c["shape"]), str(c["dtype"]))
                seen.setdefault(key, []).append(float(us))
    return {k: statistics.median(v) for k, v in seen.items()}


def read_parts(out: Path, also: tuple[Path, ...] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """The part files of ``also`` (folders of an earlier record, named by their path), then
    ``out``'s own (named by their file name)."""
    order = lambda p: (len(p.name), p.name)  # noqa: E731
    paths = [p for d in also for p in sorted(d.glob("part*.json"), key=order)]
    names = [str(p) for p in paths]
    own = sorted(out.glob("part*.json"), key=order)
    paths += own
    names += [p.name for p in own]
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths], names


def write_summary(out: Path, also: tuple[Path, ...] = ()) -> dict[str, Any]:
    parts, files = read_parts(out, also)
    if not parts:
        raise SystemExit(f"no part*.json in {out}: run a part first (see --help)")
    runs = [r for p in parts for r in p.get("runs", [])]
    groups: dict[str, Any] = {}
    for p in parts:
        groups.update(p.get("groups", {}))
    skipped = [s for p in parts for s in p.get("skipped", [])]
    meta = {**parts[-1].get("meta", {}), "files": files}
    # parts made on different cards (a record completed on another machine): each is named
    machines: dict[str, list[str]] = {}
    for name, p in zip(files, parts, strict=True):
        machines.setdefault(str(p.get("meta", {}).get("machine")), []).append(name)
    if len(machines) > 1:
        meta["machines"] = machines
    if any(p.get("meta", {}).get("device") == "cpu" for p in parts):
        meta["device"] = "cpu"
        meta["label"] = CPU_LABEL
    summary = summarize(runs, groups, meta, skipped)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    (out / "results.md").write_text(markdown(summary), encoding="utf-8")
    log(f"wrote {out / 'summary.json'} and {out / 'results.md'}")
    return summary


def engine_digest(root: Path) -> str:
    """A digest of the bot's Python sources (``bot/``, ``checks/``): paths and contents, so two
    records made with the same engine carry the same digest whatever git says."""
    h = hashlib.sha256()
    for path in sorted(p for d in ("bot", "checks") for p in (root / d).rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def meta(device: str, tolerance: float, *, versions: bool = True) -> dict[str, Any]:
    """When, where and with what; ``versions`` imports torch and Triton for theirs (done after
    the runs, so this process holds no GPU context while they measure)."""
    got: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "tolerance": tolerance,
        "python": platform.python_version(),
        "machine": platform.node() or platform.machine(),
        "tree": gitutil.git(ROOT, "rev-parse", "HEAD", check=False).strip() or None,
        # what ran: the checkout's HEAD can be older than the working tree measured (a copy with
        # changes not yet committed), so the engine's own sources are named by their content
        "engine_digest": engine_digest(ROOT),
    }
    if device == "cpu":
        got["label"] = CPU_LABEL
    if not versions:
        return got
    try:
        import torch
        import triton

        got["torch"], got["triton"] = torch.__version__, triton.__version__
        if device != "cpu":
            got["machine"] = torch.cuda.get_device_name(0)
    except Exception as exc:  # the record still says what ran
        got["versions_error"] = str(exc)
    return got


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--out", required=True, type=Path, help="folder for part*.json, summary.json, results.md"
    )
    ap.add_argument(
        "--catalogue", type=Path, default=HERE / "catalogue", help="folder of <group>.toml files"
    )
    ap.add_argument(
        "--entries", type=Path, default=HERE / "entries", help="folder of the entry modules"
    )
    ap.add_argument("--only", help="comma-separated kernel ids (default: every kernel)")
    ap.add_argument("--skip", help="comma-separated kernel ids to leave out")
    ap.add_argument(
        "--groups", help="comma-separated group names, the catalogue files' stems (default: all)"
    )
    ap.add_argument(
        "--heads",
        default=",".join(HEAD_ORDER),
        help="comma-separated, of aa, slow5, slow10 (default: all)",
    )
    ap.add_argument(
        "--runs", type=int, default=AA_RUNS, help=f"A/A runs per group (default {AA_RUNS})"
    )
    ap.add_argument(
        "--first-run", type=int, default=1, metavar="N",
        help="number the A/A runs from N (a call that goes on after runs 1..N-1; default 1)",
    )  # fmt: skip
    ap.add_argument(
        "--part", type=int, default=1, help="which slice of the work list to run (1-based)"
    )
    ap.add_argument(
        "--parts", type=int, default=1, help="how many slices the work list is cut into"
    )
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument(
        "--tolerance", type=float, default=0.03, help="the policy's tolerance (default 0.03)"
    )
    ap.add_argument(
        "--budget-s", type=float, default=480.0, help="wall-clock limit of this call (default 480)"
    )
    ap.add_argument(
        "--run-s", type=float, default=240.0, help="limit of one bench call (default 240)"
    )
    ap.add_argument(
        "--dobench-s", type=float, default=90.0, help="limit of one do_bench process (default 90)"
    )
    ap.add_argument("--no-dobench", action="store_true", help="leave the do_bench side by side out")
    ap.add_argument("--dobench-once", action="store_true",
                    help="do_bench side by side after each group's first A/A run only (the cost "
                    "comparison on the same cases in the same call), not after every run")  # fmt: skip
    ap.add_argument("--by-run", action="store_true",
                    help="each head and run over every group before the next, not group by group")  # fmt: skip
    ap.add_argument("--shapes", type=int, default=None, metavar="N",
                    help="measure each kernel's first N served shapes only (default: all)")  # fmt: skip
    ap.add_argument("--bench-arg", action="append", default=[], metavar="ARG",
                    help="an extra argument for every `python -m bot bench` call (repeat it; "
                    "--bench-arg=--engine-option=added_shapes=off for one that starts with --)")  # fmt: skip
    ap.add_argument("--install-wheels", type=Path, metavar="DIR",
                    help="first install the selected groups' pins from DIR into this Python "
                    "(pip --no-index --no-deps)")  # fmt: skip
    ap.add_argument("--allow-version-mismatch", action="store_true",
                    help="measure the installed version of a package even where it is not the pin")  # fmt: skip
    ap.add_argument("--keep-work", type=Path, metavar="DIR",
                    help="build the repositories in DIR (a new folder) and keep them")  # fmt: skip
    ap.add_argument("--summarize-only", action="store_true",
                    help="write summary.json and results.md from --out's part*.json, run nothing")  # fmt: skip
    ap.add_argument("--parts-from", type=Path, action="append", default=[], metavar="DIR",
                    help="with --summarize-only: read DIR's part*.json too, before --out's "
                    "(a record completed elsewhere; repeat it)")  # fmt: skip
    add_bot_bytecode_option(ap)
    args = ap.parse_args(argv)
    if not 0 < args.tolerance <= 1:
        ap.error(f"--tolerance must be above 0 and at most 1, got {args.tolerance}")
    if args.first_run < 1:
        ap.error(f"--first-run must be 1 or more, got {args.first_run}")
    if args.runs < 0:
        ap.error(f"--runs must be 0 or more, got {args.runs}")
    if args.parts < 1 or not 1 <= args.part <= args.parts:
        ap.error(f"--part {args.part} must be within 1..--parts ({args.parts})")
    heads = [h.strip() for h in args.heads.split(",") if h.strip()]
    if not heads or set(heads) - set(HEAD_ORDER):
        ap.error(f"--heads takes aa, slow5, slow10 (comma-separated), got {args.heads!r}")
    args.heads = heads
    if args.parts_from and not args.summarize_only:
        ap.error("--parts-from reads an earlier record's parts: use it with --summarize-only")
    for d in args.parts_from:
        if not d.is_dir():
            ap.error(f"--parts-from {d}: no such folder")
    if args.keep_work is not None and args.keep_work.exists():
        ap.error(f"--keep-work {args.keep_work} exists; name a new folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out: Path = args.out
    if args.summarize_only:
        write_summary(out, tuple(args.parts_from))
        return 0
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None  # noqa: E731
    try:
        groups = first_shapes(
            select(
                load_catalogue(args.catalogue, args.entries), split(args.only), split(args.groups)
            ),
            args.shapes,
        )
        if args.skip:
            left_out = set(split(args.skip) or [])
            groups = [g for g in (g.without(left_out) for g in groups) if g.kernels]
    except CatalogueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    units = slice_units(
        plan_units(groups, args.heads, args.runs, by_run=args.by_run, first_run=args.first_run),
        args.part,
        args.parts,
    )
    out.mkdir(parents=True, exist_ok=True)
    path = part_path(out, args.part)
    log(f"part {args.part} of {args.parts}: {len(units)} bench calls -> {path.name}")
    installed = bot_bytecode(args.bot_bytecode)
    skipped: list[str] = []
    record: dict[str, Any] = {
        "part": args.part,
        "parts": args.parts,
        "units": [list(u) for u in units],
        "meta": {**meta(args.device, args.tolerance, versions=False), **installed},
        "groups": {},
        "runs": [],
        "skipped": skipped,
    }
    if args.install_wheels:
        used = [g for g in groups if any(u[0] == g.name for u in units)]
        record["install"] = install_wheels(args.install_wheels, used)
        log(f"installed wheels: rc {record['install']['rc']}")
    work = args.keep_work or Path(tempfile.mkdtemp(prefix="real-kernels-"))
    work.mkdir(parents=True, exist_ok=True)
    ctx: dict[str, Any] = {
        "device": args.device,
        "tolerance": args.tolerance,
        "deadline": STARTED + args.budget_s,
        "run_s": args.run_s,
        "dobench_s": args.dobench_s,
        "no_dobench": args.no_dobench,
        "dobench_once": args.dobench_once,
        "bench_args": args.bench_arg,
        "first_unit_s": 20.0 if args.device == "cpu" else 60.0,
        "unit_s": {},
        "built": {},
        "runs_dir": work / "runs",
        "raw_dir": out / f"raw-{path.stem}",
        "record": record,
        "earlier_runs": [r for part in read_parts(out)[0] for r in part.get("runs", [])],
    }
    ctx["runs_dir"].mkdir(exist_ok=True)
    by_name = {g.name: g for g in groups}
    refused: dict[str, str] = {}

    def save() -> None:
        path.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")

    try:
        for name, head, run in units:
            group = by_name[name]
            if name in refused:
                skipped.append(f"{name} {head} run {run}: {refused[name]}")
                continue
            if name not in ctx["built"]:
                why = preflight(group, args.allow_version_mismatch)
                if why:
                    refused[name] = why
                    skipped.append(f"{name} {head} run {run}: {why}")
                    log(f"{name}: {why}")
                    continue
                gwork = work / name
                gwork.mkdir()
                shas = build_group_repo(gwork / "repo", group, args.entries, args.tolerance)
                ctx["built"][name] = {
                    "repo": gwork / "repo", "work": gwork, "shas": shas, "checkouts": {},
                }  # fmt: skip
                record["groups"][name] = {**group.describe(), "commits": shas}
            got = run_unit(ctx, group, head, run, skipped)
            if got is not None:
                record["runs"].append(got)
            save()
        record["meta"].update(meta(args.device, args.tolerance))
        record["meta"].update(installed)
        save()
    finally:
        for g in ctx["built"].values():
            for checkout in g["checkouts"].values():
                gitutil.remove_worktree(g["repo"], checkout)
        if args.keep_work is None:
            shutil.rmtree(work, ignore_errors=True)
    write_summary(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
