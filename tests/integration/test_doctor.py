"""``kernel-review doctor`` against the fake GitHub: the settings that stop a fork's own workflow
from reaching the GPU runners, read through the API, each said safe, unsafe or unknown."""

from __future__ import annotations

import pytest

from bot.cli import main
from tests.fake_github import FakeGitHub

REPO = "octo/kernels"
GOOD_WORKFLOW = f"{REPO}/.github/workflows/kernel-review.yml@refs/heads/main"


def _safe(fake: FakeGitHub) -> None:
    fake.settings.update(
        {
            "/actions/permissions": {"enabled": True, "allowed_actions": "selected"},
            "/actions/permissions/workflow": {"default_workflow_permissions": "read"},
            "/actions/permissions/fork-pr-contributor-approval": {
                "approval_policy": "all_external_contributors"
            },
            "/actions/runners": {"total_count": 0, "runners": []},
            "/orgs/octo/actions/runner-groups": {
                "runner_groups": [
                    {
                        "id": 2,
                        "name": "gpu",
                        "visibility": "selected",
                        "allows_public_repositories": True,
                        "restricted_to_workflows": True,
                        "selected_workflows": [GOOD_WORKFLOW],
                    }
                ]
            },
        }
    )


@pytest.fixture
def fake(monkeypatch):
    with FakeGitHub(REPO) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", "bot-token")
        monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
        monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
        yield fake


def _doctor(capsys) -> tuple[int, str]:
    code = main(["doctor"])
    return code, capsys.readouterr().out


def test_safe_settings_pass(fake, capsys):
    _safe(fake)
    code, out = _doctor(capsys)
    assert code == 0, out
    assert "UNSAFE" not in out and "UNKNOWN" not in out and "OK      runner group 'gpu'" in out


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (
            "/actions/permissions/fork-pr-contributor-approval",
            {"approval_policy": "first_time_contributors"},
            "Require approval for all external contributors",
        ),
        (
            "/actions/permissions/workflow",
            {"default_workflow_permissions": "write"},
            "write token by default",
        ),
        (
            "/actions/runners",
            {"runners": [{"name": "gpu-1", "labels": [{"name": "nvidia"}], "ephemeral": True}]},
            "a fork's pull request's own copy",
        ),
        (
            "/actions/runners",
            {"runners": [{"name": "gpu-1", "ephemeral": False}]},
            "not ephemeral",
        ),
        (
            "/orgs/octo/actions/runner-groups",
            {
                "runner_groups": [
                    {
                        "name": "gpu",
                        "allows_public_repositories": True,
                        "restricted_to_workflows": False,
                    }
                ]
            },
            "any workflow may use its runners",
        ),
        (
            "/orgs/octo/actions/runner-groups",
            {
                "runner_groups": [
                    {
                        "name": "gpu",
                        "allows_public_repositories": True,
                        "restricted_to_workflows": True,
                        "selected_workflows": [f"{REPO}/.github/workflows/kernel-review.yml@*"],
                    }
                ]
            },
            f"allow only {GOOD_WORKFLOW}",
        ),
    ],
    ids=["approval", "token", "repo-runner", "persistent-runner", "open-group", "any-ref"],
)
def test_each_unsafe_setting_is_named_with_the_fix(fake, capsys, path, value, says):
    _safe(fake)
    fake.settings[path] = value
    code, out = _doctor(capsys)
    assert code == 1
    unsafe = [ln for ln in out.splitlines() if ln.startswith("UNSAFE")]
    assert unsafe and any(says in ln for ln in unsafe), out


def test_what_the_token_may_not_read_is_unknown_never_safe(fake, capsys):
    # a workflow's GITHUB_TOKEN: every settings endpoint answers 403
    code, out = _doctor(capsys)
    assert code == 0
    assert out.count("UNKNOWN") == 4 and "Administration: read" in out
    assert "4 unknown" in out and "OK " not in out


def test_a_public_repository_of_a_user_has_no_runner_group_to_restrict(capsys, monkeypatch):
    with FakeGitHub("alice/kernels") as fake:
        monkeypatch.setenv("GITHUB_TOKEN", "bot-token")
        monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
        fake.settings["/actions/runners"] = {"runners": []}
        assert main(["doctor", "--repo", "alice/kernels"]) == 0
        out = capsys.readouterr().out
        assert "organisation runner groups: not readable" in out  # owner is an Organization
        fake.repo_owner_type = "User"
        assert main(["doctor", "--repo", "alice/kernels"]) == 1
        assert "belongs to a user" in capsys.readouterr().out
