"""What ran, against what the analysis said changed: the launch record (the kernels each bench
entry launched at base and at head, ``checks.bench_entries.launches``) confirms or corrects the static
"what changed" and its pairing, and the review says which of the two it rests on. Pure.

Held against each policy kernel's change lines (their ``old_functions`` and ``new_functions``):

- a kernel the analysis names that the side never ran (the bench entry does not reach it);
- a rewrite's replaced kernel that head still runs (the bench entry measures the old code);
- a kernel that ran on one side only and that the analysis did not name (torch's and the vendor
  libraries' kernels are listed, never counted against it);
- base kernels in the vendor's language replaced by head Triton kernels: a rewrite by what ran,
  which confirms the analysis's pairing or corrects a change it read as something else.

A record of Triton's launches only (the CPU's interpreter) checks Triton's names, and says so.
A review whose evidence holds no record at all (results of an earlier version) says nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from bot.contracts.evidence import LaunchedKernel, LaunchRecord, SweepEvidence
from bot.contracts.review import ChangeLine
from bot.escape import md_code, md_text
from bot.outputs import plural
from bot.words import and_list

NATIVE = {"nvidia": "CUDA", "amd": "HIP"}
SHOWN = 4  # names listed per side and origin; the rest counted
RestsOn = Literal["both", "ran", "analysis"]


@dataclass
class Ran:
    """One side's record of one kernel on one vendor, its shards joined."""

    cases: int = 0
    profiler: bool = True
    note: str = ""
    kernels: dict[str, LaunchedKernel] = field(default_factory=dict)

    def add(self, record: LaunchRecord) -> None:
        self.cases += record.cases
        self.profiler = self.profiler and record.profiler
        self.note = self.note or record.note
        for k in record.kernels:
            had = self.kernels.get(k.name)
            cases = k.cases + (had.cases if had else 0)
            self.kernels[k.name] = k.model_copy(update={"cases": cases})

    def has(self, name: str, origin: str | None = None) -> bool:
        """Whether a kernel the analysis names ran: a Triton function by its name, a C++ one by
        its last component (the profiler's name is qualified); of ``origin`` where given (a
        rewrite's Triton kernel may keep the C++ kernel's name)."""
        return any(
            _same(name, k.name) and origin in (None, k.origin) for k in self.kernels.values()
        )

    def sees(self, language: str | None) -> bool:
        """Whether a kernel of ``language`` would be in this record if it ran."""
        return self.profiler or (language or "").lower() == "triton"

    def own(self) -> list[LaunchedKernel]:
        return [k for k in self.kernels.values() if k.origin != "library"]


def _same(static: str, ran: str) -> bool:
    return static == ran or ran.rsplit("::", 1)[-1] == static


def _origin(language: str | None) -> str | None:
    """The origin a kernel of ``language`` has in the record (None: either)."""
    words = {w.strip().lower() for w in (language or "").split("+")}
    if words == {"triton"}:
        return "triton"
    return "native" if words and words <= {"cuda", "hip"} else None


@dataclass
class Reading:
    """What the record says of one policy kernel's changes on one vendor."""

    kernel: str
    vendor: str
    base: Ran | None
    head: Ran | None
    confirmed: list[str] = field(default_factory=list)  # what the analysis said that ran
    corrected: list[str] = field(default_factory=list)
    unreached: list[str] = field(default_factory=list)  # named kernels its shapes did not reach
    pairing: str = ""  # base kernels replaced by head Triton kernels, by what ran
    named: bool = False  # the analysis names a change of this kernel

    @property
    def rests_on(self) -> RestsOn:
        if self.corrected:
            return "ran"
        return "both" if self.confirmed or self.pairing else "analysis"


def records(sweeps: Iterable[SweepEvidence]) -> dict[tuple[str, str], dict[str, Ran]]:
    """By (policy kernel, vendor), each side's record, shards joined."""
    out: dict[tuple[str, str], dict[str, Ran]] = {}
    for s in sweeps:
        for r in s.launches:
            out.setdefault((r.kernel, s.vendor), {}).setdefault(r.side, Ran()).add(r)
    return out


def read(kernel: str, vendor: str, lines: Sequence[ChangeLine], sides: dict[str, Ran]) -> Reading:
    """``lines`` (the kernel's changes) held against what each side ran. A change's kernels on
    one side are confirmed when one of them ran (a rewrite's replaced kernels are often several,
    one per shape class, and a bench entry's shapes may reach only some: those it did not reach
    are listed as unreached); when none did, it is a correction."""
    base, head = sides.get("base"), sides.get("head")
    out = Reading(kernel, vendor, base, head, named=bool(lines))
    native = NATIVE.get(vendor, "native")
    named_old = {n for c in lines for n in c.old_functions}
    named_new = {n for c in lines for n in c.new_functions}
    for c in lines:
        for side, ran, names, lang in (
            ("base", base, c.old_functions, c.old_language),
            ("head", head, c.new_functions, c.new_language or c.old_language),
        ):
            if ran is None or not names or not ran.sees(lang):
                continue
            reached = [n for n in names if ran.has(n, _origin(lang))]
            if reached:
                out.confirmed.append(f"{side} ran {_names(reached)}")
                out.unreached += [
                    f"{side} did not reach {md_code(n)}" for n in names if n not in reached
                ]
            else:
                out.corrected.append(f"{side} never ran {_names(names)}, which it names")
        if c.kind == "rewrite" and head is not None and head.sees(c.old_language):
            still = [n for n in c.old_functions if head.has(n, _origin(c.old_language))]
            if still:
                out.corrected.append(
                    f"head still ran the replaced {_names(still)}: the bench entry measures the "
                    "old kernel"
                )
    if base is None or head is None:
        return out
    gone = [k for k in base.own() if not head.has(k.name, k.origin)]
    added = [k for k in head.own() if not base.has(k.name, k.origin)]
    for side, ks, named in (("base", gone, named_old | named_new), ("head", added, named_new)):
        unnamed = [k.name for k in ks if not any(_same(n, k.name) for n in named)]
        if unnamed:
            out.corrected.append(f"{side} alone ran {_names(unnamed)}, which it does not name")
    replaced = [k.name for k in gone if k.origin == "native"]
    by = [k.name for k in added if k.origin == "triton"]
    if replaced and by:
        swap = f"base's {native} {_names(replaced)} replaced by head's Triton {_names(by)}"
        if any(c.kind == "rewrite" for c in lines):
            out.pairing = swap
        else:
            kinds = and_list(sorted({c.kind for c in lines})) if lines else "no change"
            out.corrected.append(f"{swap}: a rewrite, where it reads {kinds}")
    return out


def _names(names: Sequence[str]) -> str:
    shown = [md_code(n) for n in names[:SHOWN]]
    if len(names) > SHOWN:
        shown.append(f"{len(names) - SHOWN} more")
    return and_list(shown)


def _ran(side: str, ran: Ran | None, vendor: str) -> str:
    if ran is None:
        return f"{side}: not recorded"
    groups = []
    for origin, word in (("native", NATIVE.get(vendor, "native")), ("triton", "Triton")):
        names = [k.name for k in ran.kernels.values() if k.origin == origin]
        if names:
            groups.append(f"{word} {_names(names)}")
    library = [k for k in ran.kernels.values() if k.origin == "library"]
    if library:
        groups.append(plural(len(library), "library kernel"))
    what = and_list(groups) if groups else "no kernel" + ("" if ran.profiler else " of Triton's")
    return f"{side} ran {what}"


_RESTS = {
    "both": "rests on the analysis, confirmed by what ran",
    "ran": "rests on what ran, which corrects the analysis",
    "analysis": "rests on the analysis alone",
}


def readings(changes: Sequence[ChangeLine], sweeps: Sequence[SweepEvidence]) -> list[Reading]:
    """Each recorded policy kernel's changes held against its record, one per vendor."""
    mapped = [c for c in changes if c.mapped and c.kind != "toolchain"]
    return [
        read(kernel, vendor, [c for c in mapped if c.kernel == kernel], sides)
        for (kernel, vendor), sides in records(sweeps).items()
    ]


def _unrecorded(changes: Sequence[ChangeLine], found: Sequence[Reading]) -> list[str]:
    """The changed policy kernels nothing was recorded of."""
    mapped = {c.kernel for c in changes if c.mapped and c.kind != "toolchain"}
    return sorted(mapped - {r.kernel for r in found})


def launch_summary(changes: Sequence[ChangeLine], sweeps: Sequence[SweepEvidence]) -> str:
    """What ran, in one line for the comment (the job summary has ``launch_lines``): the
    kernels it confirms, each correction's first words, and what the review rests on; '' where
    no sweep recorded launches."""
    found = readings(changes, sweeps)
    if not found:
        return ""
    confirmed = [r.kernel for r in found if r.rests_on == "both"]
    corrected = [r for r in found if r.rests_on == "ran"]
    # a kernel the analysis names no change of, whose record agrees with that, goes unsaid
    alone = [r.kernel for r in found if r.rests_on == "analysis" and r.named]
    alone += _unrecorded(changes, found)
    parts = [f"corrects {md_text(r.kernel)}: {r.corrected[0]}" for r in corrected]
    if not (parts or confirmed or alone):
        return ""
    if confirmed:
        parts.append(f"confirms {md_text(', '.join(dict.fromkeys(confirmed)))}")
    if alone:
        parts.append(f"cannot check {md_text(', '.join(dict.fromkeys(alone)))}")
    rests = "what ran" if corrected else "both" if confirmed else "the analysis alone"
    return f"**What ran** (launch record) {'; '.join(parts)}: what changed rests on {rests}."


def launch_lines(changes: Sequence[ChangeLine], sweeps: Sequence[SweepEvidence]) -> list[str]:
    """What ran, for the job summary: one line per policy kernel and vendor recorded (each
    side's kernels, what it confirms or corrects, what the review rests on), and one for the
    changed kernels nothing was recorded of; none where no sweep recorded launches."""
    found = readings(changes, sweeps)
    if not found:
        return []
    lines = []
    for r in found:
        sides = [s for s in (r.base, r.head) if s is not None]
        cases = max(s.cases for s in sides)
        ran = f"{_ran('base', r.base, r.vendor)}; {_ran('head', r.head, r.vendor)}"
        said = ""
        if r.corrected:
            said = f" Corrects the analysis: {'; '.join(r.corrected)}."
        elif r.pairing:
            said = f" Confirms the analysis's rewrite: {r.pairing}."
        elif r.confirmed:
            said = f" Confirms the analysis: {'; '.join(r.confirmed)}."
        if r.unreached:
            said += f" The bench entry {'; '.join(r.unreached)}."
        partial = [s.note for s in sides if not s.profiler and s.note]
        why = f" ({partial[0]})" if partial else ""
        lines.append(
            f"- **{md_text(r.kernel)}** ({r.vendor}, {plural(cases, 'case')} recorded): "
            f"{ran}.{said} What changed {_RESTS[r.rests_on]}{why}."
        )
    unrecorded = _unrecorded(changes, found)
    if unrecorded:
        lines.append(
            f"- {md_text(and_list(unrecorded))}: no launch recorded (no case of "
            f"{'it' if len(unrecorded) == 1 else 'them'} was measured); what changed "
            f"{_RESTS['analysis']}."
        )
    return lines
