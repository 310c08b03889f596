"""Old against new for a pull request: compiler reports at base and head, reduced to evidence.

Each side is a git worktree: the measure job's (``compiler_evidence_for_trees``), or one made for
the occasion (``compiler_evidence_for_range``). Triton kernels are cross-compiled through the
bench entry points (``checks.compiler.run``); on the old side of a rewrite the entry point calls
the C++ kernel, so its C++ files (the kernel's policy paths) are compiled by each vendor's C++
compiler where it exists (nvcc for ``.cu``, hipcc for ``.hip``: the ``checks.compiler.targets``
implementation says which). The head's flags, plus occupancy that dropped from old to new,
become the review's compiler evidence, with each side's live autotune lists (one entry per list,
naming every target that imported the same list).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from bot.contracts.evidence import (
    MAX_CONFIGS,
    MAX_LABEL,
    AutotuneEvidence,
    AutotuneList,
    CompilerEvidence,
    CompilerFlag,
    CompilerRow,
    NotRun,
)
from bot.errors import KernelReviewError
from bot.gitutil import add_worktree, remove_worktree
from checks.compiler.records import CompilerReport, Flag, KernelCompileRecord
from checks.compiler.report import compare_reports, make_report
from checks.compiler.run import KernelSpec, build_compiler_report, specs_for
from checks.compiler.targets import VENDOR_TARGETS, target_for
from checks.toolchain_env import SideEnv


def cxx_records(
    root: Path, paths: dict[str, tuple[str, ...]], targets: list[str], not_run: list[NotRun]
) -> list[KernelCompileRecord]:
    """The C++ kernels among each kernel's policy ``paths`` at ``root``, compiled where a
    compiler is present (``not_run`` says where it is not)."""
    per_vendor = [(v, [t for t in targets if target_for(t) is v]) for v in VENDOR_TARGETS]
    records: list[KernelCompileRecord] = []
    for kernel, rels in paths.items():
        for rel in rels:
            path = root / rel
            if not path.is_file():
                continue
            for vendor, mine in per_vendor:
                if path.suffix != vendor.cxx_suffix or not mine:
                    continue
                if shutil.which(vendor.cxx_compiler) is None:
                    name, why = vendor.vendor, vendor.cxx_missing
                    not_run.append(NotRun(check="compiler", vendor=name, reason=why, path=rel))
                    continue
                records += vendor.cxx_report(kernel, path, mine)
    return records


def side_report(
    repo: Path,
    rev: str,
    specs: list[KernelSpec],
    targets: list[str],
    *,
    cxx_paths: dict[str, tuple[str, ...]] | None = None,
    not_run: list[NotRun],
    progress: Callable[[str], None] | None = None,
) -> CompilerReport:
    """The compiler report of one revision, from a temporary worktree; with ``cxx_paths``,
    the C++ kernels among those paths too."""
    with tempfile.TemporaryDirectory(prefix="kr-compile-side-") as tmp:
        tree = add_worktree(repo, Path(tmp) / "tree", rev)
        try:
            return tree_report(
                tree, specs, targets, cxx_paths=cxx_paths, not_run=not_run, progress=progress
            )
        finally:
            remove_worktree(repo, tree)


def tree_report(
    tree: Path,
    specs: list[KernelSpec],
    targets: list[str],
    *,
    cxx_paths: dict[str, tuple[str, ...]] | None = None,
    not_run: list[NotRun],
    env: SideEnv | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompilerReport:
    """The compiler report of the checkout at ``tree``; with ``cxx_paths``, the C++ kernels
    among those paths too; with ``env``, cross-compiled under that side's own Triton."""
    report = build_compiler_report(
        tree,
        specs,
        targets,
        progress=progress,
        python=env.python if env else None,
        triton_version=env.versions.get("triton") if env else None,
    )
    extra = cxx_records(tree, cxx_paths, targets, not_run) if cxx_paths else []
    if not extra:
        return report
    return make_report(
        (*report.records, *extra),
        triton_version=report.triton_version,
        targets=report.targets,
        wall_s=report.wall_s,
        compiled=report.compiled,
        cached=report.cached,
        notes=report.notes,
        autotune=report.autotune,
    )


def _row(side: str, group: list[KernelCompileRecord]) -> CompilerRow:
    """One row per kernel, side, target, config and specialization: the worst of its records
    (one, unless the same variant was recorded twice)."""
    ok = [r for r in group if r.error is None]
    first = group[0]

    def worst(name: str) -> Any:
        values = [getattr(r, name) for r in ok if getattr(r, name) is not None]
        return max(values) if values else None

    occupancy, resident, unit, fraction = None, None, "", None
    occ = [r for r in ok if r.occupancy_fraction is not None]
    if occ:
        low = min(occ, key=lambda r: r.occupancy_fraction or 0.0)
        resident, unit = target_for(low.vendor).occupancy_resident(low)
        fraction = low.occupancy_fraction
        occupancy = f"{resident} {unit} ({fraction:.0%})"
    return CompilerRow(
        kernel=first.kernel,
        side=side,  # type: ignore[arg-type]
        language=first.language,
        vendor=first.vendor,
        target=first.target,
        config=(
            first.config_label
            if first.language == "triton"
            else f"{first.function.split('<')[0]} {first.config_label}"
        ),
        regs_per_thread=worst("regs_per_thread"),
        spill_bytes=worst("spill_bytes"),
        shared_bytes=worst("shared_bytes"),
        occupancy=occupancy,
        occupancy_resident=resident,
        occupancy_unit=unit,
        occupancy_fraction=fraction,
        matrix_instr=next((r.matrix_instr for r in ok if r.matrix_instr), None),
        load_bits_max=worst("global_load_bits_max"),
        layouts=tuple(dict.fromkeys(x for r in ok for x in r.layouts))[:32],
        error=None if ok else first.error,
        specialization=first.specialization[:MAX_LABEL],
        shapes=tuple(dict.fromkeys(s[:MAX_LABEL] for r in group for s in r.shapes))[:MAX_CONFIGS],
    )


def rows(side: str, report: CompilerReport) -> list[CompilerRow]:
    groups: dict[tuple, list[KernelCompileRecord]] = {}
    for r in report.records:
        if side == "old" and r.error_stage == "entry":
            continue  # the old entry point may call a C++ kernel: nothing to compile from it
        name = r.function if r.language == "triton" else r.function.split("<")[0]
        key = (r.kernel, r.target, r.language, name, r.config_label, r.specialization)
        groups.setdefault(key, []).append(r)
    return [_row(side, g) for _, g in sorted(groups.items())]


def autotune_evidence(
    side: Literal["old", "new"], lists: tuple[AutotuneList, ...]
) -> list[AutotuneEvidence]:
    """One side's live autotune lists, the targets that imported the same list joined."""
    joined: dict[str, AutotuneEvidence] = {}
    for a in lists:
        same = a.model_dump_json(exclude={"targets"})
        seen = joined.get(same)
        targets = (*seen.targets, *a.targets) if seen else a.targets
        joined[same] = AutotuneEvidence(
            **a.model_dump(exclude={"targets"}), targets=tuple(dict.fromkeys(targets)), side=side
        )
    return list(joined.values())


def _evidence_flag(f: Flag) -> CompilerFlag:
    return CompilerFlag(
        severity=f.severity,
        kind=f.kind,
        kernel=f.kernel,
        vendor=f.vendor,
        target=f.target,
        message=f.message,
    )


def compiler_evidence(old: CompilerReport, new: CompilerReport) -> CompilerEvidence:
    """Rows for both sides, the new side's flags and the flags of old against new."""
    old_ok = old.model_copy(
        update={"records": tuple(r for r in old.records if r.error_stage != "entry")}
    )
    compared = compare_reports(old_ok, new)
    flags = [_evidence_flag(f) for f in (*new.flags, *compared.flags)]
    unique = list(dict.fromkeys(flags))
    return CompilerEvidence(
        rows=(*rows("old", old), *rows("new", new)),
        flags=tuple(unique),
        autotune=(*autotune_evidence("old", old.autotune), *autotune_evidence("new", new.autotune)),
        configs_differ_per_vendor=dict(new.configs_differ_per_vendor),
    )


def compiler_evidence_for_range(
    repo: Path,
    base_sha: str,
    head_sha: str,
    plan: Any,
    policy: Any,
    *,
    details_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[CompilerEvidence | None, list[NotRun]]:
    """Compile the planned kernels at base and at head, each in a worktree made for it, and
    compare them; ``details_dir`` and ``progress`` as for ``compiler_evidence_for_trees``."""
    targets = list(plan.compiler_targets or ())  # make_plan's, from the base policy
    if not plan.kernels or not targets:
        return None, []
    with tempfile.TemporaryDirectory(prefix="kr-compile-side-") as tmp:
        trees: list[Path] = []
        try:
            trees.append(add_worktree(Path(repo), Path(tmp) / "base", base_sha))
            trees.append(add_worktree(Path(repo), Path(tmp) / "head", head_sha))
            return compiler_evidence_for_trees(
                trees[0],
                trees[1],
                plan,
                targets,
                details_dir=details_dir,
                python_path=getattr(policy, "python_path", ()),
                progress=progress,
            )
        except KernelReviewError as exc:
            return None, [NotRun(check="compiler", reason=exc.message)]
        finally:
            for tree in trees:
                remove_worktree(Path(repo), tree)


def compiler_evidence_without_import(
    repo: Path, base_sha: str, head_sha: str, plan: Any, policy: Any
) -> tuple[CompilerEvidence | None, list[NotRun]]:
    """What the compiler report can say of a range without importing anything of the
    repository: the base's C++ kernels among the planned kernels' paths, each read by its
    vendor's C++ compiler where one is here (compiled, never run). Its Triton kernels are
    found and compiled only through their modules, imported by ``compiler_evidence_for_range``:
    the caller says how to ask for that. ``head_sha`` is unused: the head's side of a rewrite is
    its Triton code."""
    del head_sha
    targets = list(plan.compiler_targets or ())  # make_plan's, from the base policy
    paths = {k.name: tuple(k.paths) for k in plan.kernels if k.change_kinds != ("toolchain",)}
    suffixes = {vendor.cxx_suffix for vendor in VENDOR_TARGETS}
    if not targets or not any(Path(p).suffix in suffixes for rels in paths.values() for p in rels):
        return None, []
    not_run: list[NotRun] = []
    with tempfile.TemporaryDirectory(prefix="kr-compile-side-") as tmp:
        tree = add_worktree(Path(repo), Path(tmp) / "base", base_sha)
        try:
            records = cxx_records(tree, paths, targets, not_run)
        except KernelReviewError as exc:
            return None, [NotRun(check="compiler", reason=exc.message)]
        finally:
            remove_worktree(Path(repo), tree)
    if not records:
        return None, not_run
    old = make_report(records, targets=tuple(targets))
    return compiler_evidence(old, make_report((), targets=tuple(targets))), not_run


def compiler_evidence_for_trees(
    base_tree: Path,
    head_tree: Path,
    plan: Any,
    targets: list[str],
    *,
    details_dir: Path | None = None,
    envs: tuple[SideEnv | None, SideEnv | None] = (None, None),
    python_path: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> tuple[CompilerEvidence | None, list[NotRun]]:
    """Compile the planned kernels in the base and head checkouts for ``targets`` and compare
    them; with ``details_dir`` the full reports (every variant) are written there as
    ``compiler-old.json`` and ``compiler-new.json``. ``envs``: each side's own toolchain
    (base, head), the bot's own where None; ``python_path``: the policy's; ``progress`` hears
    of each side's target as it finishes ("base sm_90: compiled, 65 variants")."""
    not_run: list[NotRun] = []
    specs = specs_for(plan.kernels, python_path)
    # the old side's C++ kernels, for a rewrite; a kernel planned for a toolchain change only
    # has the same source on both sides, so only its Triton configs are compared
    paths = {k.name: tuple(k.paths) for k in plan.kernels if k.change_kinds != ("toolchain",)}

    def side(name: str) -> Callable[[str], None] | None:
        return None if progress is None else lambda text: progress(f"{name} {text}")

    try:
        old = tree_report(
            base_tree,
            specs,
            targets,
            cxx_paths=paths,
            not_run=not_run,
            env=envs[0],
            progress=side("base"),
        )
        new = tree_report(
            head_tree, specs, targets, not_run=not_run, env=envs[1], progress=side("head")
        )
    except KernelReviewError as exc:
        return None, [NotRun(check="compiler", reason=exc.message)]
    for note in (*old.notes, *new.notes):
        not_run.append(NotRun(check="compiler", reason=note))
    if details_dir is not None:
        Path(details_dir).mkdir(parents=True, exist_ok=True)
        for name, report in (("old", old), ("new", new)):
            (Path(details_dir) / f"compiler-{name}.json").write_text(report.model_dump_json())
    return compiler_evidence(old, new), not_run
