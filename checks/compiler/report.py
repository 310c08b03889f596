"""The compiler report: the flags raised about compiled variants, and old against new.

The records and their units are in ``checks.compiler.records``; every vendor-specific word or
number comes from the variant's ``checks.compiler.targets`` implementation.
"""

from __future__ import annotations

from typing import Any

from bot.contracts.base import Frozen, Vendor
from checks.compiler.layouts import reduction_warps
from checks.compiler.records import CompilerReport, Flag, KernelCompileRecord
from checks.compiler.targets import VENDOR_TARGETS, target_for, vendor_of

# ----------------------------------------------------------------------------------------- flags


def _flag(r: KernelCompileRecord, severity: str, kind: str, message: str) -> Flag:
    return Flag(
        severity=severity,  # type: ignore[arg-type]
        kind=kind,  # type: ignore[arg-type]
        kernel=r.kernel,
        vendor=r.vendor,
        target=r.target,
        config_label=r.config_label,
        message=message,
    )


def record_flags(r: KernelCompileRecord) -> list[Flag]:
    """What a reviewer wants raised about one compiled variant."""
    where = f"{r.function} [{r.config_label}] on {r.target}"
    if r.shapes:
        more = f" and {len(r.shapes) - 3} more" if len(r.shapes) > 3 else ""
        where += f" (serving {', '.join(r.shapes[:3])}{more})"
    if r.error is not None and r.error_stage == "entry":
        return [_flag(r, "warning", "entry_failed", f"{r.kernel} on {r.target}: {r.error}")]
    if r.error is not None:
        return [_flag(r, "error", "compile_failed", f"{where} does not compile: {r.error}")]
    flags: list[Flag] = []
    if (r.spill_count or 0) > 0 or (r.spill_bytes or 0) > 0:
        unit = target_for(r.vendor).spill_unit
        flags.append(
            _flag(
                r,
                "warning",
                "spill",
                f"{where} spills {r.spill_count} registers ({r.spill_bytes} bytes of {unit}; "
                f"{r.spill_detail})",
            )
        )
    regs, cap = r.regs_per_thread, r.max_regs_per_thread
    if regs is not None and cap is not None and regs >= cap:
        what = target_for(r.vendor).register_word
        message = f"{where} uses {regs} {what} per thread, the cap on this target"
        flags.append(_flag(r, "warning", "regs_at_cap", message))
    maxnreg = r.config.get("maxnreg")
    if maxnreg is not None and not target_for(r.vendor).honours_maxnreg:
        flags.append(_maxnreg_flag(r, where, maxnreg))
    if r.uses_dot and r.matrix_instr is None:
        wanted = target_for(r.vendor).matrix_words
        flags.append(
            _flag(
                r,
                "warning",
                "no_matrix_instr",
                f"{where} calls tl.dot but the compiled code has no {wanted} instruction",
            )
        )
    return flags


def _maxnreg_flag(r: KernelCompileRecord, where: str, maxnreg: object) -> Flag:
    """B-8: a config's ``maxnreg`` on a vendor whose back end does not take it, with the
    registers the compile really used there."""
    vendor = target_for(r.vendor)
    regs, cap = r.regs_per_thread, r.max_regs_per_thread
    used = f"{regs} {vendor.register_word} per thread" if regs is not None else "unknown registers"
    used += f" (cap {cap})" if cap is not None else ""
    if r.launch_refused:
        what = f"Triton refuses the launch on {r.target} ({r.launch_refused})"
        so = f"compiled without it, the kernel uses {used}"
    else:
        what = f"Triton drops it for {r.target}"
        so = f"the compile used {used}"
    return _flag(
        r,
        "error" if r.launch_refused else "warning",
        "maxnreg_ignored",
        f"{where} asks for maxnreg={maxnreg}, which {vendor.display} does not honour: {what}; "
        f"{so}. Give this vendor a config list without maxnreg, and bound its registers "
        "through the tile sizes and num_warps",
    )


def _tuning(r: KernelCompileRecord) -> tuple:
    # num_stages defaults differ per back end (3 on NVIDIA, 2 on AMD): not a sign of tuning
    return tuple(sorted((k, str(v)) for k, v in r.config.items() if k != "num_stages"))


def shared_config_lists(records: tuple[KernelCompileRecord, ...]) -> dict[str, bool]:
    """Per Triton kernel compiled for more than one vendor: do the vendors pick from different
    config lists? (``False`` means one list serves them all.)"""
    seen: dict[str, dict[str, set]] = {}
    for r in records:
        if r.language == "triton" and r.error is None:
            seen.setdefault(r.kernel, {}).setdefault(r.vendor, set()).add(_tuning(r))
    return {
        k: any(tuning != next(iter(v.values())) for tuning in v.values())
        for k, v in seen.items()
        if len(v) > 1
    }


def _variant_flags(records: tuple[KernelCompileRecord, ...]) -> list[Flag]:
    """One flag per kind for each config on each target: the worst of its specializations
    (dtypes, alignments) speaks, naming every served shape that hits it."""
    groups: dict[tuple, list[KernelCompileRecord]] = {}
    for r in records:
        groups.setdefault((r.kernel, r.target, r.function, r.config_label), []).append(r)
    flags: list[Flag] = []
    for group in groups.values():
        by_kind: dict[str, list[KernelCompileRecord]] = {}
        for r in group:
            for f in record_flags(r):
                by_kind.setdefault(f.kind, []).append(r)
        for kind, hit in by_kind.items():
            worst = max(hit, key=lambda r: (r.spill_bytes or 0, r.regs_per_thread or 0))
            shapes = tuple(dict.fromkeys(s for r in hit for s in r.shapes))
            merged = record_flags(worst.model_copy(update={"shapes": shapes}))
            flags += [f for f in merged if f.kind == kind and f not in flags]
    return flags


def _shared_list_flag(kernel: str, records: tuple[KernelCompileRecord, ...]) -> Flag:
    """One config list for several vendors: its warps are different thread counts on each.
    Raised on the vendor with the widest lanes, the one a shared list is least often tuned for."""
    mine = [r for r in records if r.kernel == kernel]
    vendors = [t for t in VENDOR_TARGETS if any(r.vendor == t.vendor for r in mine)]
    widest = max(vendors, key=lambda t: t.lane_width)
    flagged = next(r for r in mine if r.vendor == widest.vendor)
    warps = sorted({r.config["num_warps"] for r in mine if r.config.get("num_warps") is not None})
    example = warps[0] if warps else 4
    threads = [
        f"{example * t.lane_width}{' threads' if i == 0 else ''} on {t.display}"
        for i, t in enumerate(vendors)
    ]
    which = "both" if len(vendors) == 2 else f"all {len(vendors)}"
    return Flag(
        severity="warning",
        kind="shared_config_list",
        kernel=kernel,
        vendor=widest.vendor,
        target=flagged.target,
        message=(
            f"{kernel}: one config list serves {which} vendors; num_warps={example} is "
            f"{' and '.join(threads)}"
        ),
    )


def report_flags(records: tuple[KernelCompileRecord, ...]) -> tuple[tuple[Flag, ...], dict]:
    """All flags of one report, and ``configs_differ_per_vendor`` per kernel."""
    flags = _variant_flags(records)
    differ = shared_config_lists(records)
    flags += [_shared_list_flag(kernel, records) for kernel, d in differ.items() if not d]
    return tuple(flags), differ


def make_report(
    records: list[KernelCompileRecord] | tuple[KernelCompileRecord, ...], **extra: Any
) -> CompilerReport:
    records = tuple(records)
    flags, differ = report_flags(records)
    return CompilerReport(records=records, flags=flags, configs_differ_per_vendor=differ, **extra)


# -------------------------------------------------------------------------------- old vs new


class CompareRow(Frozen):
    """Old against new for one kernel on one target: a config present on both sides, or
    (``config_label`` None) the kernel as a whole: the best and worst of its variants."""

    kernel: str
    vendor: Vendor
    target: str
    config_label: str | None = None
    old_regs_per_thread: int | None = None
    new_regs_per_thread: int | None = None
    old_spill_bytes: int | None = None
    new_spill_bytes: int | None = None
    old_shared_bytes: int | None = None
    new_shared_bytes: int | None = None
    old_occupancy_fraction: float | None = None  # the best variant's
    new_occupancy_fraction: float | None = None
    old_occupancy_fraction_min: float | None = None  # the worst variant's
    new_occupancy_fraction_min: float | None = None
    old_matrix_instr: str | None = None
    new_matrix_instr: str | None = None
    old_layouts: tuple[str, ...] = ()  # the distinct layouts of the Triton IR (C-1)
    new_layouts: tuple[str, ...] = ()


class ReportComparison(Frozen):
    rows: tuple[CompareRow, ...] = ()
    flags: tuple[Flag, ...] = ()


def _summary(rs: list[KernelCompileRecord], prefix: str) -> dict[str, Any]:
    ok = [r for r in rs if r.error is None]
    occ = [r.occupancy_fraction for r in ok if r.occupancy_fraction is not None]

    def top(name: str) -> Any:
        values = [getattr(r, name) for r in ok if getattr(r, name) is not None]
        return max(values) if values else None

    return {
        f"{prefix}_regs_per_thread": top("regs_per_thread"),
        f"{prefix}_spill_bytes": top("spill_bytes"),
        f"{prefix}_shared_bytes": top("shared_bytes"),
        f"{prefix}_occupancy_fraction": max(occ) if occ else None,
        f"{prefix}_occupancy_fraction_min": min(occ) if occ else None,
        f"{prefix}_matrix_instr": next((r.matrix_instr for r in ok if r.matrix_instr), None),
        f"{prefix}_layouts": tuple(sorted({x.text() for r in ok for x in r.layouts})),
    }


def compare_reports(old: CompilerReport, new: CompilerReport) -> ReportComparison:
    """Old against new per kernel and target; flags occupancy that dropped."""
    groups: dict[tuple[str, str], tuple[list, list]] = {}
    for side, report in ((0, old), (1, new)):
        for r in report.records:
            groups.setdefault((r.kernel, r.target), ([], []))[side].append(r)
    rows: list[CompareRow] = []
    flags: list[Flag] = []
    for (kernel, target), (before, after) in sorted(groups.items()):
        if not before or not after:
            continue
        vendor = vendor_of(target)
        whole = CompareRow(
            kernel=kernel,
            vendor=vendor,
            target=target,
            **_summary(before, "old"),
            **_summary(after, "new"),
        )
        rows.append(whole)
        old_labels = {(r.config_label, r.specialization): r for r in before}
        for r in after:
            o = old_labels.get((r.config_label, r.specialization))
            if o is not None:
                rows.append(
                    CompareRow(
                        kernel=kernel,
                        vendor=vendor,
                        target=target,
                        config_label=r.config_label,
                        **_summary([o], "old"),
                        **_summary([r], "new"),
                    )
                )
                if _lower(o.occupancy_fraction, r.occupancy_fraction):
                    flags.append(_occupancy_flag(r, o.occupancy_fraction, r.occupancy_fraction))
        wider = _reduction_flag(before, after)
        if wider is not None:
            flags.append(wider)
        if _lower(whole.old_occupancy_fraction, whole.new_occupancy_fraction):
            flags.append(
                Flag(
                    severity="warning",
                    kind="occupancy_lower",
                    kernel=kernel,
                    vendor=vendor,
                    target=target,
                    message=(
                        f"{kernel} on {target}: occupancy lower than before even in its best "
                        f"variant ({whole.old_occupancy_fraction:.0%} -> "
                        f"{whole.new_occupancy_fraction:.0%})"
                    ),
                )
            )
    return ReportComparison(rows=tuple(rows), flags=tuple(flags))


def _widest_reduction(records: list[KernelCompileRecord]) -> tuple[int, KernelCompileRecord] | None:
    spans = [
        (w, r)
        for r in records
        if r.error is None
        for x in r.layouts
        if (w := reduction_warps(x)) is not None
    ]
    return max(spans, key=lambda s: s[0]) if spans else None


def _reduction_flag(
    before: list[KernelCompileRecord], after: list[KernelCompileRecord]
) -> Flag | None:
    """A reduction split across more warps than before (both sides Triton): its partial results
    now meet in shared memory / LDS after a barrier, traffic the author did not write (C-1)."""
    old, new = _widest_reduction(before), _widest_reduction(after)
    if old is None or new is None or new[0] <= old[0]:
        return None
    r = new[1]
    return _flag(
        r,
        "warning",
        "reduction_more_warps",
        f"{r.function} [{r.config_label}] on {r.target}: a reduction now spans {new[0]} "
        f"{target_for(r.vendor).warp_word} (before: at most {old[0]}, in "
        f"[{old[1].config_label}]), so its partial results meet in shared memory after a "
        "barrier",
    )


def _lower(old: float | None, new: float | None) -> bool:
    return old is not None and new is not None and new < old - 1e-9


def _occupancy_flag(r: KernelCompileRecord, old: float | None, new: float | None) -> Flag:
    return _flag(
        r,
        "warning",
        "occupancy_lower",
        f"{r.function} [{r.config_label}] on {r.target}: occupancy lower than before "
        f"({old:.0%} -> {new:.0%})",
    )
