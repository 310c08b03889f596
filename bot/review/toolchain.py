"""What a toolchain change moved, kernel by kernel, and who re-tunes. Pure.

For a change that moves the triton or torch pin, the review says per kernel what the evidence
shows moved between the two toolchains: configs that now spill, use more registers or shared
memory, or no longer compile, per target; the slowest shape against its base; the first call
cold, old against new. It names the policy's owners as the ones who re-tune, e.g.
"matmul: 12 of 20 configs now spill on sm_90 under triton 3.6.0; 2.1x slower at 8192x1024x8192".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.contracts.evidence import CompilerRow, Evidence, KernelHistory
from bot.contracts.review import ChangeLine
from bot.words import and_list, number, speed

HISTORY_POINTS = 6  # the most recent recorded runs a kernel's line shows


def _versions(ev: Evidence, side: str) -> dict[str, str]:
    for t in ev.toolchains:
        if t.side == side:
            return dict(t.versions)
    return {}


def under(changes: Sequence[ChangeLine], ev: Evidence) -> str:
    """The new toolchain in words: what the head's environment had, else the new pins."""
    head = _versions(ev, "head")
    moved = list(dict.fromkeys(c.kernel for c in changes if c.kind == "toolchain"))
    words = [f"{name} {head[name]}" for name in moved if name in head]
    if not words:
        words = [
            f"{c.kernel} {c.new_version or 'unpinned'}" for c in changes if c.kind == "toolchain"
        ]
    return ", ".join(dict.fromkeys(words))


def _differs(c: ChangeLine, ev: Evidence) -> bool | None:
    """Whether the two sides ran different versions of ``c``'s package: from the versions the
    workers recorded, else from two different pins; None when neither tells."""
    base, head = _versions(ev, "base"), _versions(ev, "head")
    if c.kernel in base and c.kernel in head:
        return base[c.kernel] != head[c.kernel]
    old, new = _exact(c.old_version), _exact(c.new_version)
    if old and new:
        return old != new
    return None


def _exact(spec: str | None) -> str | None:
    """The one version an exact pin (``==3.6.0``) fixes; None for a range, none or several."""
    m = re.fullmatch(r"\s*===?\s*([\w.+!-]+)\s*", spec or "")
    return m.group(1) if m else None


def toolchain_differs(changes: Sequence[ChangeLine], ev: Evidence) -> bool | None:
    """Whether base and head ran a different toolchain: True when some moved pin's package
    differs, False when every one is known to be the same on both sides (pins added at the
    versions already installed), None when that is not known."""
    found = [_differs(c, ev) for c in changes if c.kind == "toolchain"]
    if any(found):
        return True
    if found and all(x is False for x in found):
        return False
    return None


def _key(r: CompilerRow) -> tuple[str, str, str, str]:
    """What one compiled variant is: its vendor, target, config and specialization."""
    return (r.vendor, r.target, r.config, r.specialization)


def _alike(o: CompilerRow, r: CompilerRow) -> bool:
    return (o.regs_per_thread, o.spill_bytes, o.shared_bytes, bool(o.error)) == (
        r.regs_per_thread,
        r.spill_bytes,
        r.shared_bytes,
        bool(r.error),
    )


def _compiler_moves(rows: Sequence[CompilerRow], new_words: str) -> list[str]:
    """Per target, old against new variant by variant (same config and specialization):
    variants that now spill, no longer compile, or take more or fewer registers; when every
    compared variant compiled alike, that."""
    old = {_key(r): r for r in rows if r.side == "old"}
    by_target: dict[str, list[tuple[CompilerRow, CompilerRow]]] = {}
    for r in rows:
        o = old.get(_key(r))
        if r.side == "new" and o is not None:
            by_target.setdefault(r.target, []).append((o, r))
    out = []
    for target, pairs in sorted(by_target.items()):
        n = len(pairs)
        noun = "configs" if len({r.config for _, r in pairs}) == n else "variants"
        spill = [1 for o, r in pairs if (r.spill_bytes or 0) > 0 and not o.spill_bytes]
        failed = [1 for o, r in pairs if r.error and not o.error]
        more = [
            (o.regs_per_thread, r.regs_per_thread)
            for o, r in pairs
            if o.regs_per_thread and r.regs_per_thread and r.regs_per_thread > o.regs_per_thread
        ]
        fewer = [
            1
            for o, r in pairs
            if o.regs_per_thread and r.regs_per_thread and r.regs_per_thread < o.regs_per_thread
        ]
        if spill:
            out.append(f"{len(spill)} of {n} {noun} now spill on {target} under {new_words}")
        if failed:
            out.append(f"{len(failed)} of {n} {noun} no longer compile for {target}")
        if more:
            worst = max(more, key=lambda p: p[1] - p[0])
            out.append(
                f"{len(more)} of {n} {noun} take more registers on {target} "
                f"(up to {worst[0]} → {worst[1]})"
            )
        if fewer:
            out.append(f"{len(fewer)} of {n} take fewer registers on {target}")
        if all(_alike(o, r) for o, r in pairs):
            out.append(f"compiled alike on {target} ({n} of {n} {noun} unchanged)")
    return out


def _sweep_moves(kernel: str, ev: Evidence) -> list[str]:
    out = []
    for s in ev.sweeps:
        mine = [x for x in s.shapes if x.kernel == kernel]
        if not mine:
            continue
        label = " (CPU timing, not evidence)" if s.timing_kind == "cpu" else f" on {s.gpu}"
        slower = [x for x in mine if x.verdict == "SLOWER" and x.ratio]
        failed = [x for x in mine if x in s.failures]
        unmoved = [x for x in mine if x.verdict in ("SAME", "FASTER")]
        unsure = [x for x in mine if x.verdict == "INCONCLUSIVE"]
        if slower:
            w = max(slower, key=lambda x: x.ratio or 0.0)
            shape = "x".join(str(d) for d in w.shape)
            out.append(
                f"{speed(w.ratio or 1.0)} at {shape} {w.dtype}{label}"
                + (f", {len(slower)} of {len(mine)} shapes slower" if len(slower) > 1 else "")
            )
        elif unmoved:
            faster = [x for x in mine if x.verdict == "FASTER" and x.ratio]
            best = min(faster, key=lambda x: x.ratio or 1.0, default=None)
            said = (  # what moved it, where nothing moved it slower
                f"; {len(faster)} faster, the most {speed(best.ratio or 1.0)} at "
                f"{'x'.join(str(d) for d in best.shape)} {best.dtype}"
                if best
                else ""
            )
            out.append(f"no shape of {len(unmoved)} timed slower{label}{said}")
        if unsure:
            out.append(f"{len(unsure)} of {len(mine)} shapes inconclusive{label}")
        if failed:
            first = failed[0]
            out.append(
                f"{len(failed)} of {len(mine)} shapes failed ({first.verdict}"
                + (f": {first.detail}" if first.detail else "")
                + ")"
            )
    return out


def _first_call_moves(kernel: str, ev: Evidence) -> list[str]:
    sides = {(f.side, f.vendor): f for f in ev.first_calls if f.kernel == kernel}
    out = []
    for (side, vendor), new in sorted(sides.items()):
        old = sides.get(("base", vendor))
        if side != "head" or old is None or old.cold_ms is None or new.cold_ms is None:
            continue
        out.append(f"first call cold {number(old.cold_ms)} → {number(new.cold_ms)} ms ({vendor})")
    return out


def history_lines(ev: Evidence) -> list[str]:
    """For each kernel with recorded runs on the default branch, how its median time moved
    over the most recent of them (any review, not only a toolchain change's)."""
    return [f"{h.kernel}: {history_line(h)}" for h in ev.history if h.points]


def history_line(h: KernelHistory) -> str:
    """How a kernel's median time moved over its most recent recorded runs."""
    points = h.points[-HISTORY_POINTS:]
    steps = " → ".join(number(us, 1) for _, _, us, _ in points)
    first, last = points[0], points[-1]
    change = last[2] / first[2]
    return (
        f"median µs over its served shapes on the default branch, {first[0]} to {last[0]}: "
        f"{steps} ({number(change, 2)}x; last under {last[3]})"
    )


def _moved(kernel: str, ev: Evidence) -> bool:
    """Whether the evidence shows ``kernel`` moved: a shape timed slower or faster, or a
    compiled variant that differs."""
    rows = [r for r in (ev.compiler.rows if ev.compiler else ()) if r.kernel == kernel]
    old = {_key(r): r for r in rows if r.side == "old"}
    return any(
        x.kernel == kernel and x.verdict in ("SLOWER", "FASTER")
        for s in ev.sweeps
        for x in s.shapes
    ) or any(r.side == "new" and _key(r) in old and not _alike(old[_key(r)], r) for r in rows)


def toolchain_lines(
    changes: Sequence[ChangeLine],
    ev: Evidence,
    owners: Sequence[str],
    policy_kernels: Sequence[str] = (),
) -> list[str]:
    """One line per kernel (the policy's, then any other the evidence names) saying what
    moved, what ran without a difference or inconclusively, or that nothing was measured; which
    kernels moved; then who re-tunes. Nothing when the change moves no toolchain pin."""
    if not any(c.kind == "toolchain" for c in changes):
        return []
    new_words = under(changes, ev)
    differs = toolchain_differs(changes, ev)
    if differs is False:
        return [
            f"both sides ran {new_words}: the pin changed nothing that ran, so no difference "
            "measured here is the toolchain's"
        ]
    if differs is None:
        # a package pinned in several places (pyproject.toml's dependencies and an extra, a
        # requirements file) is one pin to the reader
        unknown = list(
            dict.fromkeys(
                c.kernel for c in changes if c.kind == "toolchain" and _differs(c, ev) is None
            )
        )
        said = and_list(unknown)
        # the kernels it may affect are named where the review says what the change does, the
        # versions in the table of what changed, above this
        return [
            f"the versions each side ran were not recorded, and the {said} "
            f"{'pin does' if len(unknown) == 1 else 'pins do'} not fix one version on each side, "
            "so no difference measured here can be put down to the toolchain"
        ]
    lines = []
    kernels: list[str] = list(dict.fromkeys(policy_kernels))
    for name in (
        *(r.kernel for r in (ev.compiler.rows if ev.compiler else ())),
        *(x.kernel for s in ev.sweeps for x in s.shapes),
        *(f.kernel for f in ev.first_calls),
    ):
        if name not in kernels:
            kernels.append(name)
    if ev.toolchains:
        sides = [
            f"{t.side}: {', '.join(f'{k} {v}' for k, v in sorted(t.versions.items())) or '—'}"
            f" ({t.environment})"
            for t in sorted(ev.toolchains, key=lambda t: t.side)
        ]
        lines.append("each side ran under its own toolchain: " + "; ".join(dict.fromkeys(sides)))
    seen = {
        *(r.kernel for r in (ev.compiler.rows if ev.compiler else ())),
        *(x.kernel for s in ev.sweeps for x in s.shapes),
        *(f.kernel for f in ev.first_calls),
    }
    reasons = [n.said for n in ev.not_run if n.check == "sweep"] if not ev.sweeps else []
    why = reasons[0] if reasons else "no sweep, first call or compiler report covered it"
    for kernel in kernels:
        rows = [r for r in (ev.compiler.rows if ev.compiler else ()) if r.kernel == kernel]
        parts = [
            *_compiler_moves(rows, new_words),
            *_sweep_moves(kernel, ev),
            *_first_call_moves(kernel, ev),
        ]
        lines.append(f"{kernel}: " + ("; ".join(parts) or f"not measured under {new_words}: {why}"))
    measured = [k for k in kernels if k in seen]
    if not measured:
        lines.append(f"no kernel was measured under {new_words} yet")
    else:
        moved = [k for k in measured if _moved(k, ev)]
        policy = f"; {len(policy_kernels)} in the policy" if policy_kernels else ""
        lines.append(
            f"moved under {new_words}: {', '.join(moved) or 'none'} "
            f"(of {len(measured)} {'kernel' if len(measured) == 1 else 'kernels'} measured{policy})"
        )
    who = ", ".join(owners)
    lines.append(
        f"re-tuning for {new_words} is for {who} (policy `owners`)"
        if who
        else "no one is named to re-tune: add `owners` to the policy"
    )
    return lines
