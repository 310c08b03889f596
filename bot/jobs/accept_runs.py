"""The bound of a ``/bench accept``, derived again from the run whose results were accepted.

Every workflow of a GitHub repository posts as ``github-actions[bot]``, and may edit the bot's
comments: the accept record, and the review comment's hidden state that the record was made
from. So a record's numbers prove nothing. The report keeps from a record only what a person
said and what the bot's own workflow measured, both asked of the API when it runs:

- the ``/bench accept`` comment the record names, by a person with the policy's
  ``accept_permission`` now (``bot.jobs.accepting.confirmed_records``);
- the run the record names (the run whose review was accepted): a run of this repository, of
  the workflow file this job runs in (``GITHUB_WORKFLOW_REF``), started by a comment
  (``/bench``) or by a pull request from this repository's own branches, so that the workflow
  file it ran is one kept here, not a fork's, nor a branch's that ``workflow_dispatch`` ran;
- that run's results artifact (the report job's upload of its results folder): its gate
  decision must be for this pull request at the record's head, its results files are checked
  as the report checks them (``bot.jobs.report.read_results``), and each case's bound is
  derived from them again (``bot.review.accept.bound``, under the kernel's tolerance now).

Another workflow's token can start none of those runs with a workflow file of its own (a
``GITHUB_TOKEN`` event starts no ``pull_request`` or ``issue_comment`` run) and can upload no
artifact to them. The bound used is the smaller of the record's and the one derived; a record
that cannot be verified (no run named, a run of anything else, its artifact expired or
refused, a case it did not measure) is not used, and the review says so with what to do. Only
records that name a slower shape of this review are checked, so a review with nothing slower
makes no calls.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.contracts.accept import Acceptance, AcceptRecord, MeasuredRatio
from bot.contracts.evidence import SweepEvidence
from bot.errors import ResultsError
from bot.escape import md_inline
from bot.forge.client import ForgeClient, ForgeRequestError
from bot.forge.types import CommentInfo
from bot.jobs.accepting import confirmed_records
from bot.jobs.gate import GATE_FILE, GateDecision
from bot.jobs.report import MAX_RESULTS_BYTES, MAX_RESULTS_FILES, merge_evidence, read_results
from bot.policy.model import Policy
from bot.review.accept import bound, measured_ratios, names

MAX_ARTIFACT_BYTES = 64 * 2**20  # a results artifact: the gate's decision, results, the review
MEASURING_EVENTS = ("issue_comment", "pull_request")
NOTED = 3  # records not used that the review names; the job log has every one
_Case = tuple[str, str, str, tuple[int, ...]]  # kernel, vendor, dtype, shape


@dataclass(frozen=True)
class OwnRuns:
    """What a run must be for its results to bound an acceptance on this pull request."""

    repository: str  # owner/name
    workflow_path: str | None  # the workflow file this job runs in; None: not known here
    pr_number: int
    artifact_name: str  # the artifact the workflow uploads its results folder as


def workflow_path(workflow_ref: str | None, repository: str) -> str | None:
    """The workflow file of ``GITHUB_WORKFLOW_REF`` (``owner/name/PATH@REF``) when it is
    ``repository``'s, else None."""
    path = (workflow_ref or "").partition("@")[0]
    prefix = repository + "/"
    if not repository or not path.startswith(prefix) or len(path) == len(prefix):
        return None
    return path[len(prefix) :]


def _case(kernel: str, vendor: str, dtype: str, shape: Iterable[int]) -> _Case:
    return kernel, vendor, dtype, tuple(shape)


def _words(case: _Case) -> str:
    kernel, vendor, dtype, shape = case
    return f"{kernel} {'x'.join(map(str, shape))} {dtype} on {vendor}"


def _unzip(data: bytes) -> tuple[GateDecision, dict[str, bytes]] | str:
    """The gate's decision and the results files in a results artifact, or why not."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_RESULTS_FILES + 8:
            return f"its artifact holds {len(infos)} files; a results artifact holds a few"
        gate: GateDecision | None = None
        files: dict[str, bytes] = {}
        total = 0
        for n, info in enumerate(infos):
            name = PurePosixPath(info.filename)
            if name.suffix != ".json":
                continue
            with archive.open(info) as member:
                raw = member.read(MAX_RESULTS_BYTES + 1)
            total += len(raw)
            if len(raw) > MAX_RESULTS_BYTES or total > MAX_ARTIFACT_BYTES:
                return f"{info.filename[:100]} in its artifact is over the results' size cap"
            if str(name) == GATE_FILE:
                gate = GateDecision.model_validate_json(raw)
            else:
                files[f"{n}-{name.name}"] = raw
    except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, RuntimeError) as exc:
        # zipfile raises RuntimeError for an encrypted member, NotImplementedError (one too)
        # for a compression it cannot read, zlib.error for a corrupted deflated member; an
        # exception may say nothing (EOFError())
        said = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"its artifact is not a results artifact ({said[:160]})"
    if gate is None:
        return f"its artifact has no {GATE_FILE} (the gate's decision)"
    return gate, files


def _measured(
    client: ForgeClient, run_id: int, head_sha: str, own: OwnRuns
) -> dict[_Case, MeasuredRatio] | str:
    """The slower cases run ``run_id`` measured at ``head_sha`` on this pull request, from
    its results artifact; or why that cannot be told."""
    if own.workflow_path is None:
        return "this job cannot tell which workflow file it runs in (GITHUB_WORKFLOW_REF)"
    try:
        run = client.get_run(run_id)
        if run.repository != own.repository:
            return f"run {run_id} belongs to {run.repository}, not {own.repository}"
        if run.path != own.workflow_path:
            return f"run {run_id} ran {run.path}, not this workflow ({own.workflow_path})"
        if run.event not in MEASURING_EVENTS or (
            run.event == "pull_request" and run.head_repository != own.repository
        ):
            source = f" from {run.head_repository}" if run.event == "pull_request" else ""
            return (
                f"run {run_id} was started by {run.event}{source}: only a /bench comment or "
                "a pull request from this repository runs the workflow file kept here"
            )
        artifacts = client.run_artifacts(run_id, own.artifact_name)
        live = [a for a in artifacts if not a.expired]
        if not live:
            gone = (
                "has expired"
                if artifacts
                else "is not there (the workflow's last step uploads the results folder under "
                "that name, the action's artifact-name: docs/workflows/kernel-review.yml)"
            )
            return f"the results artifact {own.artifact_name} of run {run_id} {gone}"
        artifact = max(live, key=lambda a: a.id)  # a rerun's latest attempt
        if artifact.size > MAX_ARTIFACT_BYTES:
            return f"the artifact of run {run_id} is {artifact.size:,} bytes, over the cap"
        data = client.download_artifact(artifact.id, max_bytes=MAX_ARTIFACT_BYTES)
    except ForgeRequestError as exc:
        hint = "; give the report job `actions: read`" if exc.status in (401, 403) else ""
        return f"run {run_id} could not be read ({exc.message[:200]}){hint}"
    found = _unzip(data)
    if isinstance(found, str):
        return f"run {run_id}: {found}"
    gate, files = found
    if (gate.repository, gate.pr_number, gate.head_sha) != (
        own.repository,
        own.pr_number,
        head_sha,
    ) or gate.plan is None:
        return (
            f"run {run_id} reviewed {gate.repository[:100]} #{gate.pr_number} at "
            f"{(gate.head_sha or '')[:12]}, not #{own.pr_number} at {head_sha[:12]}"
        )
    with tempfile.TemporaryDirectory(prefix="kernel-review-accepted-") as tmp:
        paths = []
        for name, raw in files.items():
            path = Path(tmp) / name
            path.write_bytes(raw)
            paths.append(path)
        try:
            kept, _ = read_results(paths, head_sha=head_sha, vendors=gate.plan.vendors)
        except ResultsError as exc:
            return f"the results of run {run_id} were refused ({exc.message[:200]})"
    evidence = merge_evidence(kept, gate.plan.vendors)
    return {
        _case(m.kernel, m.vendor, m.dtype, m.shape): m
        for m in measured_ratios(evidence.sweeps, limit=None)
    }


def _bounded(
    record: AcceptRecord,
    measured: dict[_Case, MeasuredRatio],
    run_id: int,
    policy: Policy,
) -> tuple[tuple[Acceptance, ...], list[str]] | str:
    """``record``'s acceptances with each bound derived again from what the run measured
    (never above the record's), and a line for each bound the record overstated; or why the
    record is not what the run measured."""
    out: list[Acceptance] = []
    overstated: list[str] = []
    for a in record.acceptances:
        if len(a.shapes) != 1 or a.dtype is None or a.vendor is None:
            return "it accepts more than one measured case in one entry"
        case = _case(a.kernel, a.vendor, a.dtype, a.shapes[0])
        m = measured.get(case)
        if m is None:
            return f"run {run_id} measured no slowdown of {_words(case)}"
        derived = bound(m, policy.kernel(a.kernel).effective_tolerance(policy))
        if a.max_ratio > derived * (1 + 1e-9):
            overstated.append(
                f"the accept record of comment {record.comment_id} claims up to "
                f"{a.max_ratio:.4g}x for {_words(case)}; run {run_id} measured {m.ratio:.4g}x, "
                f"so its bound is {derived:.4g}x"
            )
        used = {"max_ratio": min(a.max_ratio, derived), "measured": m.ratio, "run_id": run_id}
        out.append(a.model_copy(update=used))
    return tuple(out), overstated


def _relevant(record: AcceptRecord, sweeps: Sequence[SweepEvidence]) -> bool:
    """Whether ``record`` names a GPU-timed slower shape of this review (else it accepts
    nothing here, and is not checked)."""
    return any(
        names(a, s.kernel, s.shape, s.dtype, sweep.vendor)
        for sweep in sweeps
        if sweep.timing_kind == "gpu"
        for s in sweep.slower
        for a in record.acceptances
    )


def usable_acceptances(
    client: ForgeClient,
    comments: Sequence[CommentInfo],
    login: str,
    policy: Policy,
    sweeps: Sequence[SweepEvidence],
    own: OwnRuns,
) -> tuple[tuple[Acceptance, ...], list[str]]:
    """The recorded acceptances this review may use, each bounded by what its run measured,
    and why each record naming a slower shape here was not used (or not as recorded)."""
    records, said = confirmed_records(
        client, comments, login, policy, wanted=lambda r: _relevant(r, sweeps)
    )
    runs: dict[tuple[int, str], dict[_Case, MeasuredRatio] | str] = {}
    kept: list[Acceptance] = []
    for comment, record in records:
        heads = {a.head_sha for a in record.acceptances}
        head = next(iter(heads)) if len(heads) == 1 else None
        if record.run_id is None or not head:
            why = "it names no run whose results it accepted (recorded by an older kernel-review)"
        else:
            key = (record.run_id, head)
            if key not in runs:
                runs[key] = _measured(client, record.run_id, head, own)
            measured = runs[key]
            got = (
                measured
                if isinstance(measured, str)
                else _bounded(record, measured, record.run_id, policy)
            )
            if not isinstance(got, str):
                kept.extend(got[0])
                said.extend(got[1])
                continue
            why = got
        said.append(f"the accept record in comment {comment.id} is not used: {why}")
    return tuple(kept), said


def unused_note(reasons: Sequence[str]) -> str:
    """The lines the review comment starts with when a record was not used (or not as it
    said): each reason, and what to do."""
    shown = [f"> - {md_inline(r, max_chars=400)}" for r in reasons[:NOTED]]
    if len(reasons) > NOTED:
        shown.append(f"> - and {len(reasons) - NOTED} more (the job log has each)")
    return "\n".join(
        [
            "> **Accepted slowdowns not used as recorded.** The review judges them by what a "
            "maintainer's `/bench accept` said and what this workflow's own run measured:",
            *shown,
            "> To accept a slowdown again, comment `/bench`, then `/bench accept KERNEL -- "
            "REASON` (with the policy's accept permission) on the review it posts.",
            "",
            "",
        ]
    )
