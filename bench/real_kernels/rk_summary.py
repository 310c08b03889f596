"""The real-kernel suite's summary: pure functions over the runs that ``run.py`` records.

A *run* is one ``kernel-review bench`` call of one group's head against its base, as stored in
``part<N>.json``::

    {"group": "flaggems", "head": "aa" | "slow5" | "slow10", "run": 1, "tolerance": 0.03,
     "wall_s": 41.2, "rc": 0, "timed_out": false, "results": {...} | null,
     "cases": [{"kernel", "shape", "dtype", "status", "verdict", "ratio", "ci_low", ...}],
     "dobench": {"base": {"wall_s", "rows": [...]}, "head": {...}} | null}

A *shape* is a group's kernel x shape x dtype. Nothing here runs anything.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

EFFECTS = {"slow5": 0.05, "slow10": 0.10}
ALLOW_AA_RUNS = 3  # A/A verdicts, all SAME, that let a shape's detection count
VERDICTS = ("SAME", "SLOWER", "FASTER", "INCONCLUSIVE")
Key = tuple[str, str, tuple[int, ...], str]


def shape_key(run: dict[str, Any], case: dict[str, Any]) -> Key:
    return (run["group"], case["kernel"], tuple(case["shape"]), case["dtype"])


def key_text(key: Key) -> str:
    return f"{key[1]} {'x'.join(map(str, key[2]))} {key[3]}"


def measured(case: dict[str, Any]) -> bool:
    return case.get("status") == "ok" and case.get("verdict") in VERDICTS


def half_width(case: dict[str, Any]) -> float | None:
    """Half the width of the case's interval of head/base (ratio units), None without one."""
    lo, hi = case.get("ci_low"), case.get("ci_high")
    if lo is None or hi is None:
        return None
    return (hi - lo) / 2.0


def runs_of(runs: list[dict[str, Any]], head: str) -> list[dict[str, Any]]:
    return [r for r in runs if r.get("head") == head]


def by_shape(runs: list[dict[str, Any]], head: str) -> dict[Key, list[dict[str, Any]]]:
    """Every case of ``head``'s runs, measured or not, per shape (in run order)."""
    out: dict[Key, list[dict[str, Any]]] = {}
    for r in runs_of(runs, head):
        for c in r.get("cases") or []:
            out.setdefault(shape_key(r, c), []).append(c)
    return out


def allows(aa_cases: list[dict[str, Any]], effect: float) -> tuple[bool, str]:
    """Whether a shape's A/A runs let an injected slowdown of ``effect`` count for detection,
    and why: at least ``ALLOW_AA_RUNS`` A/A verdicts and every one SAME, or the widest A/A
    interval's half-width under half the effect."""
    done = [c for c in aa_cases if measured(c)]
    if not done:
        return False, "no A/A verdict"
    if len(done) >= ALLOW_AA_RUNS and all(c["verdict"] == "SAME" for c in done):
        return True, f"{len(done)} A/A verdicts, all SAME"
    widths = [w for w in (half_width(c) for c in done) if w is not None]
    if widths and max(widths) < effect / 2:
        return True, f"widest A/A half-width {max(widths):.4f} < {effect / 2:.3f}"
    verdicts = ", ".join(c["verdict"] for c in done)
    width = f"{max(widths):.4f}" if widths else "unknown"
    return False, f"A/A {verdicts}; widest half-width {width} (needs < {effect / 2:.3f})"


def detection(runs: list[dict[str, Any]], head: str) -> dict[str, Any]:
    """SLOWER verdicts of ``head`` over the shapes whose A/A runs allow its effect; shapes not
    allowed and slow cases that were not measured are listed, not counted."""
    effect = EFFECTS[head]
    aa = by_shape(runs, "aa")
    slow = by_shape(runs, head)
    counted: list[dict[str, Any]] = []
    not_allowed: list[dict[str, Any]] = []
    unmeasured: list[dict[str, Any]] = []
    for key, cases in slow.items():
        ok, why = allows(aa.get(key, []), effect)
        for c in cases:
            row = {
                "shape": key_text(key),
                "group": key[0],
                "verdict": c.get("verdict"),
                "ratio": c.get("ratio"),
                "why": why,
            }
            if not measured(c):
                unmeasured.append({**row, "status": c.get("status"), "reason": reason(c)})
            elif ok:
                counted.append(row)
            else:
                not_allowed.append(row)
    slower = sum(r["verdict"] == "SLOWER" for r in counted)
    return {
        "effect": effect,
        "slower": slower,
        "of": len(counted),
        "fraction": slower / len(counted) if counted else None,
        "counted": counted,
        "not_allowed": not_allowed,
        "unmeasured": unmeasured,
    }


def reason(case: dict[str, Any]) -> str:
    """Why a case is what it is, in the case's own words: its message, its explanation (what
    its executions showed, where the results say), its notes and how it stopped."""
    parts = [case.get("message") or "", case.get("explanation") or "", *(case.get("notes") or ())]
    if case.get("stop_reason"):
        parts.append(f"stopped: {case['stop_reason']}")
    return "; ".join(p for p in parts if p) or "no reason recorded"


def aa_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A/A verdicts by kind; every SLOWER or FASTER (false) and INCONCLUSIVE with its reason;
    cases not measured."""
    counts = dict.fromkeys(VERDICTS, 0)
    false: list[dict[str, Any]] = []
    inconclusive: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for r in runs_of(runs, "aa"):
        for c in r.get("cases") or []:
            row = {
                "group": r["group"],
                "run": r.get("run"),
                "shape": key_text(shape_key(r, c)),
                "category": c.get("category"),
                "verdict": c.get("verdict"),
                "case_verdict": c.get("case_verdict"),
                "ratio": c.get("ratio"),
                "ci_low": c.get("ci_low"),
                "ci_high": c.get("ci_high"),
                "rounds": c.get("rounds"),
                # how many executions (fresh worker pairs) the verdict rests on, and their
                # spread beyond the rounds' noise, where the results carry them
                "executions": c.get("executions"),
                "execution_spread": c.get("execution_spread"),
                "reason": reason(c),
            }
            if not measured(c):
                failed.append({**row, "status": c.get("status")})
                continue
            counts[c["verdict"]] += 1
            if c["verdict"] in ("SLOWER", "FASTER"):
                false.append(row)
            elif c["verdict"] == "INCONCLUSIVE":
                inconclusive.append(row)
    return {
        "verdicts": sum(counts.values()),
        "by_verdict": counts,
        "false": false,
        "inconclusive": inconclusive,
        "not_measured": failed,
    }


def dobench_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """do_bench's reading of one run: per case, head/base of the two processes' means and
    whether it claims a difference beyond the run's tolerance (``SLOWER``/``FASTER``)."""
    db = run.get("dobench") or {}
    tol = float(run.get("tolerance") or 0.03)

    def means(side: str) -> dict[Key, float]:
        out = {}
        for row in (db.get(side) or {}).get("rows") or []:
            if row.get("mean_ms"):
                out[shape_key(run, row)] = float(row["mean_ms"])
        return out

    base, head = means("base"), means("head")
    rows = []
    for key in base.keys() & head.keys():
        ratio = head[key] / base[key]
        claim = "SLOWER" if ratio > 1 + tol else "FASTER" if ratio < 1 / (1 + tol) else "SAME"
        rows.append({"key": key, "shape": key_text(key), "ratio": ratio, "claim": claim})
    return sorted(rows, key=lambda x: x["shape"])


def costs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the runs held the GPU for: the bot's all in (each command's wall time, and the
    results files' own held figure) and do_bench's all in (its processes' wall times), each
    over all runs and over the runs that have both, per verdict or case."""
    bot_wall = [r["wall_s"] for r in runs if r.get("wall_s") is not None]
    held = [
        (r.get("results") or {}).get("held_gpu_seconds")
        for r in runs
        if (r.get("results") or {}).get("held_gpu_seconds") is not None
    ]
    verdicts = sum(sum(measured(c) for c in r.get("cases") or []) for r in runs)
    paired = [r for r in runs if r.get("cases") and _dobench_done(r)]
    p_bot = sum(r["wall_s"] for r in paired)
    p_verdicts = sum(sum(measured(c) for c in r["cases"]) for r in paired)
    p_db = sum(_dobench_wall(r) for r in paired)
    p_db_cases = sum(len(dobench_rows(r)) for r in paired)
    every_db = [r for r in runs if _dobench_done(r)]
    return {
        "gpu_s_all_in": sum(bot_wall),
        "gpu_s_held_per_results": sum(held),
        "verdicts": verdicts,
        "gpu_s_per_verdict_all_in": sum(bot_wall) / verdicts if verdicts else None,
        "dobench_all_in_s": sum(_dobench_wall(r) for r in every_db),
        "paired_runs": len(paired),
        "paired_bot_s": p_bot,
        "paired_bot_verdicts": p_verdicts,
        "paired_dobench_s": p_db,
        "paired_dobench_cases": p_db_cases,
        "paired_bot_s_per_verdict": p_bot / p_verdicts if p_verdicts else None,
        "paired_dobench_s_per_case": p_db / p_db_cases if p_db_cases else None,
    }


def _dobench_done(run: dict[str, Any]) -> bool:
    db = run.get("dobench") or {}
    return all(db.get(s, {}).get("wall_s") is not None for s in ("base", "head")) and bool(db)


def _dobench_wall(run: dict[str, Any]) -> float:
    db = run["dobench"]
    return float(db["base"]["wall_s"]) + float(db["head"]["wall_s"])


def dobench_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """do_bench's claims: on identical code (every one false) and on the slow heads, over the
    same shapes whose A/A runs allow the effect (by the bot's A/A runs, as for the bot)."""
    aa_rows = [x for r in runs_of(runs, "aa") for x in dobench_rows(r)]
    aa_bot = by_shape(runs, "aa")
    out: dict[str, Any] = {
        "aa_cases": len(aa_rows),
        "aa_false": [
            {"shape": x["shape"], "ratio": x["ratio"], "claim": x["claim"]}
            for x in aa_rows
            if x["claim"] != "SAME"
        ],
    }
    for head, effect in EFFECTS.items():
        rows = [x for r in runs_of(runs, head) for x in dobench_rows(r)]
        counted = [x for x in rows if allows(aa_bot.get(x["key"], []), effect)[0]]
        slower = sum(x["claim"] == "SLOWER" for x in counted)
        out[f"detect_{head}"] = {
            "slower": slower,
            "of": len(counted),
            "fraction": slower / len(counted) if counted else None,
        }
    return out


def kernel_table(runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per kernel, one row per shape: the A/A verdicts and widest half-width, the slow heads'
    verdicts and head/base, do_bench's head/base for each head."""
    shapes: dict[Key, dict[str, Any]] = {}
    for r in runs:
        db = {x["key"]: x["ratio"] for x in dobench_rows(r)}
        sized = {
            shape_key(r, x): x["extra"]
            for x in ((r.get("dobench") or {}).get("head") or {}).get("rows") or []
            if x.get("extra")
        }
        for c in r.get("cases") or []:
            key = shape_key(r, c)
            row = shapes.setdefault(
                key,
                {
                    "shape": "x".join(map(str, key[2])),
                    "dtype": key[3],
                    "category": c.get("category"),
                },
            )
            label = c.get("verdict") if measured(c) else (c.get("status") or "?").upper()
            row.setdefault(f"{r['head']}_verdicts", []).append(label)
            row.setdefault(f"{r['head']}_ratios", []).append(c.get("ratio"))
            if r["head"] == "aa" and half_width(c) is not None:
                row["aa_half_width"] = max(row.get("aa_half_width", 0.0), half_width(c) or 0.0)
            if key in db:
                row.setdefault(f"{r['head']}_dobench", []).append(db[key])
            if key in sized:  # the kernel's time and the extra launch's, as do_bench's head sized
                row["kernel_us"] = sized[key]["kernel_us"]
                row["launch_us"] = sized[key]["launch_us"]
    table: dict[str, list[dict[str, Any]]] = {}
    for key, row in sorted(shapes.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3])):
        table.setdefault(key[1], []).append(row)
    return table


def summarize(
    runs: list[dict[str, Any]],
    groups: dict[str, dict[str, Any]],
    meta: dict[str, Any],
    skipped: list[str],
) -> dict[str, Any]:
    """``summary.json``: every figure the suite reports, from the runs of all parts."""
    kernels = sorted({c["kernel"] for r in runs for c in r.get("cases") or []})
    kinds = {
        kid: spec["kinds"] for g in groups.values() for kid, spec in g.get("kernels", {}).items()
    }
    repos = sorted(
        {g["repo"] for name, g in groups.items() if any(r["group"] == name for r in runs)}
    )
    aa = aa_summary(runs)
    det = {head: detection(runs, head) for head in EFFECTS}
    return {
        "meta": meta,
        "repos": repos,
        "kernels": kernels,
        "kernel_kinds": {k: kinds.get(k, []) for k in kernels},
        # how many of the kernels measured are of each kind (a kernel may be of several)
        "kinds": {
            kind: sum(kind in kinds.get(k, []) for k in kernels)
            for kind in sorted({x for k in kernels for x in kinds.get(k, [])})
        },
        "runs": {
            head: len(runs_of(runs, head)) for head in ("aa", *EFFECTS) if runs_of(runs, head)
        },
        "aa_verdicts": aa["verdicts"],
        "aa_by_verdict": aa["by_verdict"],
        "aa_false": aa["false"],
        "aa_inconclusive": aa["inconclusive"],
        "aa_not_measured": aa["not_measured"],
        "detect_5pct": det["slow5"]["fraction"],
        "detect_10pct": det["slow10"]["fraction"],
        "detection": det,
        "realised": realised(runs),
        **costs(runs),
        "dobench": dobench_summary(runs),
        "per_kernel": kernel_table(runs),
        "skipped": skipped,
    }


def realised(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per slow head, the median and range of the measured head/base over its verdicts: the
    slowdown the extra work really made."""
    out: dict[str, dict[str, float | None]] = {}
    for head in EFFECTS:
        ratios = [
            c["ratio"]
            for r in runs_of(runs, head)
            for c in r.get("cases") or []
            if measured(c) and c.get("ratio")
        ]
        out[head] = {
            "median": statistics.median(ratios) if ratios else None,
            "min": min(ratios) if ratios else None,
            "max": max(ratios) if ratios else None,
            "verdicts": len(ratios),
        }
    return out


# ------------------------------------------------------------------------------- results.md


def _num(x: float | None, digits: int = 4) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _frac(d: dict[str, Any]) -> str:
    if not d["of"]:
        return "- (no shape allowed)"
    return f"{d['slower']}/{d['of']} ({d['slower'] / d['of']:.0%})"


def _ratios(xs: list[float | None] | None) -> str:
    return ", ".join(_num(x) for x in xs) if xs else "-"


def _machines(m: dict[str, Any]) -> str:
    """The card, or each card with the part files made on it."""
    by = m.get("machines")
    if not by:
        return str(m.get("machine"))
    return "; ".join(f"{card} ({', '.join(files)})" for card, files in by.items())


def markdown(s: dict[str, Any]) -> str:
    m = s["meta"]
    cpu = m.get("device") == "cpu"
    label = "CPU timing: plumbing only, numbers meaningless" if cpu else "GPU timing"
    det = s["detection"]
    db = s["dobench"]
    rows = [
        f"# Real-kernel suite: A/A and injected slowdowns through `kernel-review bench` ({label})",
        "",
        f"Recorded {m.get('date')} on {_machines(m)}; torch {m.get('torch')}, Triton "
        f"{m.get('triton')}, Python {m.get('python')}; tolerance {m.get('tolerance')}; files "
        f"{', '.join(m.get('files', []))}. Made by `bench/real_kernels/run.py`.",
        "",
        "| what | value |",
        "|---|---|",
        f"| repositories | {len(s['repos'])}: {', '.join(s['repos'])} |",
        f"| kernels | {len(s['kernels'])} ("
        + ", ".join(f"{k} {v}" for k, v in s["kinds"].items())
        + ") |",
        f"| runs (A/A, 5%, 10%) | {s['runs'].get('aa', 0)}, {s['runs'].get('slow5', 0)}, {s['runs'].get('slow10', 0)} |",
        f"| A/A verdicts | {s['aa_verdicts']} ("
        + ", ".join(f"{k} {v}" for k, v in s["aa_by_verdict"].items())
        + ") |",
        f"| A/A SLOWER or FASTER (false) | {len(s['aa_false'])} |",
        f"| A/A INCONCLUSIVE | {len(s['aa_inconclusive'])} |",
        f"| A/A cases not measured | {len(s['aa_not_measured'])} |",
        f"| 5% slower head: SLOWER over allowed shapes | {_frac(det['slow5'])} |",
        f"| 10% slower head: SLOWER over allowed shapes | {_frac(det['slow10'])} |",
        f"| realised head/base, 5% head (median, range) | {_num(s['realised']['slow5']['median'])} ({_num(s['realised']['slow5']['min'])}-{_num(s['realised']['slow5']['max'])}) |",
        f"| realised head/base, 10% head (median, range) | {_num(s['realised']['slow10']['median'])} ({_num(s['realised']['slow10']['min'])}-{_num(s['realised']['slow10']['max'])}) |",
        f"| bot all in: command wall s (results' held s), verdicts | {_num(s['gpu_s_all_in'])} ({_num(s['gpu_s_held_per_results'])}), {s['verdicts']} |",
        f"| do_bench all in: process wall s (every run it ran in) | {_num(s['dobench_all_in_s'])} |",
        f"| same runs ({s['paired_runs']}): bot s per verdict, do_bench s per case | {_num(s['paired_bot_s_per_verdict'])}, {_num(s['paired_dobench_s_per_case'])} |",
        f"| do_bench on identical code: claims beyond tolerance | {len(db['aa_false'])}/{db['aa_cases']} |",
        f"| do_bench 5% / 10% heads: SLOWER over allowed shapes | {_frac(db['detect_slow5'])} / {_frac(db['detect_slow10'])} |",
        "",
        "A shape *allows* an injected slowdown of e (0.05 or 0.10) when its A/A runs show it can: "
        f"at least {ALLOW_AA_RUNS} A/A verdicts and all SAME, or the widest A/A 95% interval's "
        "half-width (in head/base) under e/2. Detection counts SLOWER verdicts of the slow head "
        "over the allowed shapes; shapes not allowed and slow cases not measured are listed "
        "below, not counted. do_bench: one fresh process per side and run, `do_bench(fn)` at its "
        "defaults per case (an empty Triton cache, as kernel-review starts each side), "
        "head/base of the means; a claim is a ratio beyond the tolerance. All "
        "in: each command's (or process's) wall time from its start to its exit. The last column: "
        "the kernel's time and the extra launch's cost as the slow head's do_bench process sized "
        "them (the sweep's workers size theirs the same way, in their own processes).",
        "",
    ]
    if s["aa_false"] or s["aa_inconclusive"]:
        rows += ["## A/A verdicts that were not SAME", ""]
        for x in [*s["aa_false"], *s["aa_inconclusive"]]:
            rows.append(
                f"- {x['group']} run {x['run']} {x['shape']}: {x['verdict']} {_num(x['ratio'])} "
                f"[{_num(x['ci_low'])}, {_num(x['ci_high'])}] after {x['rounds']} rounds; {x['reason']}"
            )
        rows.append("")
    if s["aa_not_measured"]:
        rows += ["## A/A cases not measured", ""]
        rows += [
            f"- {x['group']} run {x['run']} {x['shape']}: {x['status']}: {x['reason']}"
            for x in s["aa_not_measured"]
        ]
        rows.append("")
    for head in EFFECTS:
        d = det[head]
        if d["not_allowed"] or d["unmeasured"]:
            rows += [f"## {head}: shapes not counted", ""]
            rows += [
                f"- {x['shape']}: not allowed ({x['why']}); {x['verdict']} {_num(x['ratio'])}"
                for x in d["not_allowed"]
            ]
            rows += [
                f"- {x['shape']}: not measured, {x['status']}: {x['reason']}"
                for x in d["unmeasured"]
            ]
            rows.append("")
    rows += ["## Per kernel", ""]
    for kernel, table in s["per_kernel"].items():
        kinds = ", ".join(s["kernel_kinds"].get(kernel, []))
        rows += [
            f"### {kernel} ({kinds})",
            "",
            "| shape | dtype | cat | A/A verdicts | A/A half-width | 5%: verdict, head/base | 10%: verdict, head/base | do_bench head/base: A/A; 5%; 10% | kernel us; extra launch us |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in table:
            rows.append(
                f"| {r['shape']} | {r['dtype']} | {r.get('category') or '-'} "
                f"| {' '.join(r.get('aa_verdicts', [])) or '-'} | {_num(r.get('aa_half_width'))} "
                f"| {' '.join(r.get('slow5_verdicts', [])) or '-'} {_ratios(r.get('slow5_ratios'))} "
                f"| {' '.join(r.get('slow10_verdicts', [])) or '-'} {_ratios(r.get('slow10_ratios'))} "
                f"| {_ratios(r.get('aa_dobench'))}; {_ratios(r.get('slow5_dobench'))}; {_ratios(r.get('slow10_dobench'))} "
                f"| {_us(r.get('kernel_us'))}; {_us(r.get('launch_us'))} |"
            )
        rows.append("")
    if s["skipped"]:
        rows += ["## Not run", "", *(f"- {x}" for x in s["skipped"]), ""]
    return "\n".join(rows)
