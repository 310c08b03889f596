"""The composite action and the example workflows keep the safe shape (SECURITY.md).

zizmor and actionlint check them in CI (.ci/lint-workflows); these checks pin what is specific
to kernel-review: inputs reach the CLI only through the environment, every action is pinned,
the measure job holds no token and hands on its results when cancelled or out of time, the
inputs the action declares are the ones the CLI reads, and the release publishes what it built
and checked, with trusted publishing.
"""

from __future__ import annotations

import re

from bot.app import ActionEnv
from tests.action_yml import ACTION, job_steps, run_blocks
from tests.paths import ROOT

WORKFLOWS = {p.name: p.read_text() for p in (ROOT / "docs" / "workflows").glob("*.yml")}


def test_no_expression_is_pasted_into_a_shell_line():
    blocks = run_blocks(ACTION)
    assert len(blocks) == 2
    for text in [*blocks, *(b for w in WORKFLOWS.values() for b in run_blocks(w))]:
        assert "${{" not in text


def test_every_input_reaches_the_cli_as_an_environment_variable():
    inputs = re.findall(r"^  ([a-z-]+):\n    description:", ACTION.split("outputs:")[0], re.M)
    assert {"mode", "token", "policy-path", "vendor", "shard"} <= set(inputs)
    for name in inputs:
        if name == "install":
            continue
        var = "INPUT_" + name.upper().replace("-", "_")
        assert f"{var}: ${{{{ inputs.{name} }}}}" in ACTION, name
    env = ActionEnv.from_environ(
        {
            "INPUT_POLICY_PATH": "p.toml",
            "INPUT_VENDOR": "amd",
            "INPUT_SHARD": "2/3",
            "INPUT_BOT_LOGIN": "bot",
            "INPUT_RESULTS_PATH": "r",
            "INPUT_ARTIFACT_NAME": "a",
            "INPUT_HEAD_SHA": "a" * 40,
            "INPUT_TOKEN": "t",
            "GITHUB_API_URL": "https://ghe/api/v3",
        }
    )
    assert (env.policy_path, env.vendor, env.shard, env.bot_login, env.token) == (
        "p.toml",
        "amd",
        "2/3",
        "bot",
        "t",
    )
    assert env.api_url == "https://ghe/api/v3" and env.head_sha == "a" * 40


OWN_WORKFLOWS = {p.name: p.read_text() for p in (ROOT / ".github" / "workflows").glob("*.yml")}


def _placeholder(sha: str) -> bool:
    """A commit SHA nobody made: one digit repeated, or a run of one word (deadbeef...)."""
    return len(set(sha)) <= 2 or any(sha == (w * 5)[:40] for w in ("deadbeef", "12345678", "abcdef12"))  # fmt: skip


def test_every_action_is_pinned_to_a_full_sha_with_its_version_in_a_comment():
    assert "release.yml" in OWN_WORKFLOWS
    for name, text in {**WORKFLOWS, **OWN_WORKFLOWS}.items():
        uses = re.findall(r"^\s*(?:- )?uses: (.*)$", text, re.M)
        assert uses, name
        for line in uses:
            m = re.fullmatch(r"([\w.-]+/[\w.-]+)@(\S+) # (\S.*)", line)
            assert m, f"{name}: `uses: {line}` is not `owner/repo@<full sha> # <version>`"
            action, ref, version = m.groups()
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{name}: {action}@{ref} is not a full SHA"
            assert not _placeholder(ref), f"{name}: {action}@{ref} is a placeholder, not a commit"
            assert re.match(r"v\d+\.\d+\.\d+\b|main \d{4}-\d{2}-\d{2}\b", version), (name, line)


def test_the_placeholder_check_catches_placeholders():
    assert _placeholder("0" * 40) and _placeholder("f" * 40) and _placeholder("deadbeef" * 5)
    assert not _placeholder("11bd71901bbe5b1630ceea73d27597364c9af683")


def test_dependabot_keeps_the_pinned_actions_current():
    config = (ROOT / ".github" / "dependabot.yml").read_text()
    ecosystem = config.split("package-ecosystem: github-actions", 1)[1].split(
        "- package-ecosystem", 1
    )[0]
    dirs = re.findall(r'^\s+- "(/[^"]*)"$', ecosystem, re.M)
    assert dirs == ["/", "/docs/workflows"]  # .github/workflows and action.yml, and the copies
    assert re.search(r"interval: (daily|weekly)", ecosystem)


def test_measure_job_has_no_token_and_checks_out_the_pinned_sha():
    wf = WORKFLOWS["kernel-review.yml"]
    measure = wf.split("\n  measure:\n", 1)[1].split("\n  report:\n", 1)[0]
    assert "permissions: {}" in measure and "secrets." not in measure
    assert "ref: ${{ needs.gate.outputs.head-sha }}" in measure
    assert "persist-credentials: false" in measure
    assert "token:" not in measure
    assert "unset INPUT_TOKEN GITHUB_TOKEN" in ACTION


def test_workflows_are_read_only_by_default_and_cancel_stale_runs():
    wf = WORKFLOWS["kernel-review.yml"]
    assert re.search(r"^permissions: \{\}$", wf, re.M)
    assert "cancel-in-progress: true" in wf
    gate = wf.split("\n  gate:\n", 1)[1].split("\n  ack:\n", 1)[0]
    assert "write" not in gate.split("outputs:")[0]
    assert "pull_request_target" not in wf
    fork = WORKFLOWS["kernel-review-fork-report.yml"]
    assert "checkout" not in fork and "download-artifact" not in fork


class _Context(dict):
    """``github.event.x.y`` for the expression evaluator; a missing key is null, as in Actions."""

    def __getattr__(self, name: str):
        value = self.get(name)
        return _Context(value or {}) if value is None or isinstance(value, dict) else value


def _contains(haystack, needle) -> bool:
    if isinstance(haystack, list):
        return any(str(x).lower() == str(needle).lower() for x in haystack)
    return str(needle).lower() in str(haystack or "").lower()


def _evaluate(template: str, github: dict) -> str:
    """The ``${{ }}`` parts of a workflow string, evaluated as Actions does: ``&&`` and ``||``
    return an operand (as Python's ``and``/``or``), ``!`` negates, ``contains`` ignores case."""
    import json

    def one(m: re.Match) -> str:
        expr = m.group(1).replace("&&", " and ").replace("||", " or ")
        expr = re.sub(r"!(?!=)", " not ", expr)
        names = {"github": _Context(github), "contains": _contains, "fromJSON": json.loads}
        value = eval(expr, {"__builtins__": {}}, names)  # our own workflow file
        return "" if value is None or value == {} else str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", one, template, flags=re.S)


def _concurrency_group(event_name: str, event: dict) -> str:
    wf = WORKFLOWS["kernel-review.yml"]
    block = wf.split("\nconcurrency:\n", 1)[1].split("\n  cancel-in-progress", 1)[0]
    template = " ".join(block.split("group: >-", 1)[1].split())
    return _evaluate(template, {"event_name": event_name, "event": event})


def _comment(association: str, body: str = "/bench softmax") -> dict:
    return {
        "issue": {"number": 42, "pull_request": {}},
        "comment": {
            "id": 777,
            "body": body,
            "user": {"type": "User"},
            "author_association": association,
        },
    }


def test_no_comment_shares_the_review_runs_group():
    # author_association cannot tell a triage collaborator from a writer: a comment, /bench
    # included, gets a group of its own and cancels nothing; a writer's /bench cancels the
    # stale run through the API once the gate has checked the permission
    running = _concurrency_group("pull_request", {"pull_request": {"number": 42}})
    assert running == "kernel-review-42-review"
    for association in ("OWNER", "MEMBER", "COLLABORATOR", "NONE", "CONTRIBUTOR", "FIRST_TIMER"):
        for body in ("/bench softmax", "looks good"):
            group = _concurrency_group("issue_comment", _comment(association, body))
            assert group == "kernel-review-42-777", (association, body)
    ack = WORKFLOWS["kernel-review.yml"].split("\n  ack:\n", 1)[1].split("\n  measure", 1)[0]
    assert re.search(r"^      actions: write\b", ack, re.M)


def test_every_example_step_that_runs_measured_code_runs_it_in_the_sandbox():
    # a step of the action in measure or scheduled mode, and what its `with:` block says
    step = re.compile(r"\n( +)with:\n((?:\1  .*\n)+)")
    measuring = []
    for name, text in WORKFLOWS.items():
        for _, block in step.findall(text):
            if re.search(r"^ +mode: (measure|scheduled) *(#.*)?$", block, re.M):
                measuring.append(name)
                isolation = re.search(r"^ +runner-isolation: (\S+)", block, re.M)
                assert isolation is not None and isolation.group(1) == "sandbox", name
    assert sorted(set(measuring)) == ["kernel-review-scheduled.yml", "kernel-review.yml"]
    assert re.search(r"runner-isolation:\n(?:    .*\n)*?    default: sandbox\n", ACTION)


def test_a_measure_job_cancelled_or_out_of_time_still_hands_on_its_results():
    """A job cancelled, or at its timeout-minutes, sends the measure step SIGINT; the step
    writes what it measured and exits 7 (checks.measure). GitHub then runs only the steps whose
    condition holds on a cancelled job: ``always()`` does, ``!cancelled()`` and ``success() ||
    failure()`` do not. So every step after a measuring one runs ``if: always()``, and the
    upload of its results file is among them and tolerates a job that wrote none."""
    measuring = {}
    for name, text in {**WORKFLOWS, **OWN_WORKFLOWS}.items():
        for job, steps in job_steps(text).items():
            modes = [s.get("with", {}).get("mode") for s in steps]
            i = next((i for i, m in enumerate(modes) if m in ("measure", "scheduled")), None)
            if i is None:
                continue
            after = steps[i + 1 :]
            assert after and all(s.get("if") == "always()" for s in after), (name, job, after)
            [upload] = [s for s in after if s["uses"].startswith("actions/upload-artifact@")]
            measuring[name, job] = upload["with"]["path"]
            assert upload["with"].get("if-no-files-found", "warn") in ("warn", "ignore"), name
    assert measuring == {
        ("kernel-review.yml", "measure"): "kernel-review-results/results-*.json",
        ("kernel-review-scheduled.yml", "measure"): "kernel-review-results/scheduled-*.json",
    }


def test_the_workflow_reader_reads_steps_as_a_yaml_parser_would():
    text = """on: push
jobs:
  one:
    runs-on: x
    steps:
      - name: A  # said
        if: >-
          always()
          && true
        uses: o/a@1 # v1
        with:
          path: "a # b"
          mode: measure
      - run: |
          echo hi
    timeout-minutes: 3
  two:
    runs-on: y
"""
    assert job_steps(text) == {
        "one": [
            {"name": "A", "if": "always() && true", "uses": "o/a@1",
             "with": {"path": "a # b", "mode": "measure"}},
            {"run": "echo hi"},
        ]
    }  # fmt: skip


def test_the_release_builds_from_the_tag_checks_and_publishes_with_trusted_publishing():
    """release.yml as its header says: a v* tag, the version checked against the tag, the sdist
    and the wheel built and checked with twine, then uploaded with PyPI's trusted publishing (an
    OIDC token in the publish job alone, no stored secret)."""
    wf = OWN_WORKFLOWS["release.yml"]
    assert re.search(r'^on:\n  push:\n    tags: \["v\*"\]$', wf, re.M)
    assert "permissions: {}" in wf and "secrets." not in wf and "password:" not in wf
    build = wf.split("\n  build:\n", 1)[1].split("\n  publish:\n", 1)[0]
    publish = wf.split("\n  publish:\n", 1)[1]
    assert "TAG: ${{ github.ref_name }}" in build
    assert 'run: python3 scripts/release-version "$TAG"' in build
    steps = run_blocks(build)
    assert any("uv build --out-dir dist" in s and "twine check --strict dist/*" in s for s in steps)
    assert "id-token" not in build and "contents: read" in build
    assert "needs: build" in publish and "name: pypi" in publish
    assert re.search(r"^    permissions:\n      id-token: write\b", publish, re.M)
    assert re.search(r"uses: pypa/gh-action-pypi-publish@[0-9a-f]{40} ", publish)
    assert "with:\n          name: dist" in publish  # the build job's files, not a new build
