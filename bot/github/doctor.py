"""``kernel-review doctor``: read the repository settings the GPU runners' safety rests on.

For ``pull_request`` events GitHub runs the pull request's own copy of a workflow, so a fork can
edit it to run any job on ``[self-hosted, nvidia]`` and never meet the gate. Only settings stop
that (docs/repository-settings.md): outside contributors' runs wait for a maintainer's approval,
the GPU runners sit in a runner group that only the default branch's workflow may use, and the
runners are ephemeral. This reads what the API exposes of them and says what is unsafe.

Most of these endpoints need an administrator's token (a workflow's GITHUB_TOKEN cannot read
them); what the token may not read is reported as unknown with the permission it needs, never
as safe. ``assess`` is pure; ``read_settings`` is the only part that talks to GitHub.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, Literal

from bot.contracts.base import Frozen
from bot.escape import log_safe
from bot.github.api import DEFAULT_API_URL, GitHubClient

Status = Literal["ok", "unsafe", "unknown"]
WORKFLOW = ".github/workflows/kernel-review.yml"
ADMIN = "a token with the repository's Administration: read permission"
ORG_ADMIN = "a token that may read the organisation's self-hosted runner settings"


class Finding(Frozen):
    status: Status
    setting: str
    detail: str


class Settings(Frozen):
    """What the API showed; None where the token may not read it."""

    repository: str
    repo: dict[str, Any] | None = None
    actions: dict[str, Any] | None = None
    workflow: dict[str, Any] | None = None
    fork_approval: dict[str, Any] | None = None
    runners: dict[str, Any] | None = None
    groups: dict[str, Any] | None = None


def read_settings(client: GitHubClient) -> Settings:
    repo = client.repository()
    owner = (repo or {}).get("owner") or {}
    is_org = owner.get("type") == "Organization"
    return Settings(
        repository=client.repo_name,
        repo=repo,
        actions=client.actions_permissions(),
        workflow=client.workflow_permissions(),
        fork_approval=client.fork_pr_approval(),
        runners=client.repo_runners(),
        groups=client.runner_groups(str(owner.get("login"))) if is_org else None,
    )


def _one(name: str, doc: dict[str, Any] | None, key: str, safe: str, ok: str, fix: str) -> Finding:
    """A setting that is one value: ``safe`` is ok, anything else unsafe with ``fix``."""
    if doc is None:
        return Finding(status="unknown", setting=name, detail=f"not readable; needs {ADMIN}")
    value = doc.get(key)
    if value == safe:
        return Finding(status="ok", setting=name, detail=ok)
    return Finding(status="unsafe", setting=name, detail=f"{value!r}: {fix}")


# (setting, Settings field, key, the safe value, what ok means, what to change)
SINGLE_VALUES = (
    (
        "approval for outside contributors' workflow runs",
        "fork_approval",
        "approval_policy",
        "all_external_contributors",
        "required for all outside contributors",
        "a returning contributor's pull request runs its own workflow without approval; set "
        "Settings > Actions > General > 'Require approval for all external contributors'",
    ),
    (
        "default GITHUB_TOKEN permissions",
        "workflow",
        "default_workflow_permissions",
        "read",
        "read-only unless a job asks for more",
        "every job gets a write token by default; choose 'Read repository contents and "
        "packages permissions'",
    ),
)


def _runners(s: Settings, public: bool) -> list[Finding]:
    name = "repository self-hosted runners"
    if s.runners is None:
        return [Finding(status="unknown", setting=name, detail=f"not readable; needs {ADMIN}")]
    out = []
    for r in s.runners.get("runners") or []:
        label = f"runner {r.get('name')!r}"
        if public:
            out.append(
                Finding(
                    status="unsafe",
                    setting=label,
                    detail="registered on the repository itself, so any workflow of the "
                    "repository (a fork's pull request's own copy included) may use it; move it "
                    "to an organisation runner group restricted to the default branch's workflow",
                )
            )
        if r.get("ephemeral") is False:
            out.append(
                Finding(
                    status="unsafe",
                    setting=label,
                    detail="not ephemeral: what one job leaves behind is there for the next; "
                    "register it with --ephemeral (or just-in-time)",
                )
            )
    return out or [Finding(status="ok", setting=name, detail="none on the repository itself")]


def _allowed(workflow: str, repository: str, branch: str) -> bool:
    return workflow.lower() == f"{repository}/{WORKFLOW}@refs/heads/{branch}".lower()


def _groups(s: Settings, public: bool, branch: str) -> list[Finding]:
    name = "organisation runner groups"
    if s.groups is None:
        owner = (s.repo or {}).get("owner") or {}
        if s.repo is not None and owner.get("type") != "Organization":
            return [
                Finding(
                    status="unsafe" if public else "ok",
                    setting=name,
                    detail="none: the repository belongs to a user, so its GPU runners can only "
                    "be repository runners, which no setting restricts to one workflow",
                )
            ]
        return [Finding(status="unknown", setting=name, detail=f"not readable; needs {ORG_ADMIN}")]
    out = []
    for g in s.groups.get("runner_groups") or []:
        label = f"runner group {g.get('name')!r}"
        if public and not g.get("allows_public_repositories"):
            continue  # cannot run this repository's jobs
        picked = list(g.get("selected_workflows") or [])
        if not g.get("restricted_to_workflows"):
            out.append(
                Finding(
                    status="unsafe",
                    setting=label,
                    detail="any workflow may use its runners, a pull request's own copy "
                    f"included; restrict it to {s.repository}/{WORKFLOW}@refs/heads/{branch}",
                )
            )
        elif not picked or not all(_allowed(w, s.repository, branch) for w in picked):
            out.append(
                Finding(
                    status="unsafe",
                    setting=label,
                    detail="restricted to "
                    + (", ".join(map(str, picked)) or "nothing")
                    + f"; allow only {s.repository}/{WORKFLOW}@refs/heads/{branch}",
                )
            )
        else:
            out.append(
                Finding(status="ok", setting=label, detail="only the default branch's workflow")
            )
    return out or [Finding(status="ok", setting=name, detail="no group reaches this repository")]


def assess(s: Settings) -> list[Finding]:
    """What is safe, unsafe or unknown in these settings; pure."""
    out = []
    if s.actions is not None and s.actions.get("enabled") is False:
        return [Finding(status="ok", setting="GitHub Actions", detail="disabled on the repository")]
    public = s.repo is None or not s.repo.get("private")
    branch = str((s.repo or {}).get("default_branch") or "main")
    out += [
        _one(name, getattr(s, field), key, safe, ok, fix)
        for name, field, key, safe, ok, fix in SINGLE_VALUES
    ]
    out += _runners(s, public)
    out += _groups(s, public, branch)
    return out


def report(findings: list[Finding], see: str = "docs/repository-settings.md") -> str:
    lines = [f"{f.status.upper():7} {f.setting}: {f.detail}" for f in findings]
    unsafe = sum(f.status == "unsafe" for f in findings)
    unknown = sum(f.status == "unknown" for f in findings)
    lines.append(
        f"{unsafe} unsafe, {unknown} unknown; see {see}"
        if unsafe or unknown
        else "every setting that can be read is safe"
    )
    return "\n".join(lines)


def register(
    subparsers: argparse._SubParsersAction,
    *,
    runner_check: Callable[[], list[tuple[str, str, str]]] | None = None,
) -> None:
    """Add ``doctor``; ``runner_check`` (the command line's, which may import ``checks/``)
    gives ``--runner``'s findings as (status, setting, detail)."""
    p = subparsers.add_parser(
        "doctor",
        help="check the repository settings that keep the GPU runners safe",
        description="Read the repository's Actions settings through the API (GITHUB_TOKEN, "
        "GITHUB_API_URL) and say which are unsafe for running pull requests' kernels on "
        "self-hosted GPU runners. Exits 1 when a setting is unsafe.",
    )
    p.add_argument(
        "--repo", default=os.environ.get("GITHUB_REPOSITORY"), help="owner/name to check"
    )
    p.add_argument(
        "--runner",
        action="store_true",
        help="check this machine as a GPU runner instead: can it confine the measured code "
        "(bwrap, cgroups)? No token needed; run it as the runner's user",
    )
    p.set_defaults(handler=handle, runner_check=runner_check)


def handle(args: argparse.Namespace) -> int:
    if args.runner:
        findings = [
            Finding(status=status, setting=setting, detail=detail)
            for status, setting, detail in args.runner_check()
        ]
        print(log_safe(report(findings, "SECURITY.md (Runner isolation)")))
        return 1 if any(f.status == "unsafe" for f in findings) else 0
    client = GitHubClient(
        os.environ.get("GITHUB_TOKEN", ""),
        args.repo or "",
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
        spacing_s=None,
    )
    findings = assess(read_settings(client))
    print(log_safe(report(findings)))
    return 1 if any(f.status == "unsafe" for f in findings) else 0
