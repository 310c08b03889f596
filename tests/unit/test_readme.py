"""The README says what the files it quotes say: the tables of the action's inputs and outputs
are what action.yml declares, the review shown under "Why" is a golden file's, verbatim, of a
pull request measured on a GPU, and the badges are this project's CI, release and package."""

from __future__ import annotations

import re
import sys

import pytest

from bot.contracts.results import ResultsFile
from tests.action_yml import ACTION, fields, markdown_table
from tests.paths import DATA, ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.mark.parametrize("section", ["inputs", "outputs"])
def test_the_readme_table_is_the_one_action_yml_gives(section: str) -> None:
    marker = f"action-{section}"
    found = re.search(rf"<!-- {marker}:start -->\n(.*?)\n<!-- {marker}:end -->", README, re.S)
    assert found, f"README.md has no <!-- {marker}:start --> ... <!-- {marker}:end --> table"
    wanted = markdown_table(section)
    assert found.group(1) == wanted, (
        f"README.md's table of the action's {section} differs from action.yml; "
        f"put this between its markers:\n{wanted}"
    )


@pytest.mark.parametrize("section", ["inputs", "outputs"])
def test_every_declared_name_has_its_row(section: str) -> None:
    # read apart from fields(): every two-space key of the section, whatever follows it
    body = ACTION.split(f"\n{section}:\n", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r"^  ([\w-]+):\s*$", body, re.M)
    assert names and [f.name for f in fields(section)] == names
    assert all(f.description for f in fields(section))
    for name in names:
        assert f"| `{name}` |" in README


def test_the_review_under_why_is_the_golden_files_own_lines() -> None:
    found = re.search(
        r"<!-- why-example:start (\S+) -->\n(.*?)\n<!-- why-example:end -->", README, re.S
    )
    assert found, "README.md has no <!-- why-example:start FILE --> ... <!-- why-example:end -->"
    golden = (ROOT / found.group(1)).read_text(encoding="utf-8").splitlines()
    quoted = [line.removeprefix(">").removeprefix(" ") for line in found.group(2).splitlines()]
    assert quoted[0].startswith("## ") and "Kernel review:" in quoted[0]
    at = 0
    for line in filter(None, quoted):  # each line the golden file's, in its order
        assert line in golden[at:], f"not in {found.group(1)} (after its line {at}): {line}"
        at = golden.index(line, at) + 1


def test_the_review_under_why_is_a_real_pull_requests_measured_on_a_gpu() -> None:
    """Not a test's invented evidence: the commits the quoted review names are those of a real
    pull request's results recorded on a GPU (tests/data/device_pr/), and the section links it."""
    why = README.split("\n## Why\n", 1)[1].split("\n## ", 1)[0]
    reviewed = re.search(r"Reviewed head `([0-9a-f]{7})` against base `([0-9a-f]{7})`", why)
    assert reviewed, "the review under Why has no 'Reviewed head ... against base ...' line"
    recorded = {
        (r.head_sha[:7], r.base_sha[:7]): (folder, r)
        for folder in (DATA / "device_pr").iterdir()
        for path in folder.glob("results-*.json")
        for r in [ResultsFile.model_validate_json(path.read_text(encoding="utf-8"))]
    }
    assert reviewed.groups() in recorded, (
        f"the review under Why reviews {reviewed.groups()}, no pull request measured in "
        f"tests/data/device_pr/ ({sorted(recorded)})"
    )
    folder, results = recorded[reviewed.groups()]
    assert results.evidence.sweeps
    assert all(s.timing_kind == "gpu" for s in results.evidence.sweeps)
    [link] = re.findall(
        r"\(https://github\.com/[^)]+/pull/\d+\)", (folder / "README.md").read_text()
    )
    assert link in why, f"the Why section does not link the pull request it shows: {link}"


def test_the_badges_are_this_projects_ci_run_release_and_package() -> None:
    """Above the first section: the CI badge of the workflow that runs .ci/run on main, the
    release of the repository pyproject.toml names, the package as PyPI names it."""
    top = README.split("\n## ", 1)[0]
    badges = {alt: (image, link) for alt, image, link in re.findall(r"\[!\[([^]]+)\]\(([^)]+)\)\]\(([^)]+)\)", top)}  # fmt: skip
    source = PYPROJECT["urls"]["Source"]
    repo = source.removeprefix("https://github.com/")
    image, link = badges["CI"]
    workflow = re.fullmatch(rf"{source}/actions/workflows/([\w.-]+\.yml)/badge\.svg\?branch=main", image)  # fmt: skip
    assert workflow and link == f"{source}/actions/workflows/{workflow.group(1)}", (image, link)
    ci = (ROOT / ".github" / "workflows" / workflow.group(1)).read_text(encoding="utf-8")
    assert "run: .ci/run" in ci and "branches: [main]" in ci
    image, link = badges["Release"]
    assert (
        image == f"https://img.shields.io/github/v/release/{repo}" and link == f"{source}/releases"
    )
    assert (ROOT / ".github" / "workflows" / "release.yml").is_file()
    image, link = badges["PyPI"]
    name = PYPROJECT["name"]
    assert (
        image == f"https://img.shields.io/pypi/v/{name}"
        and link == f"https://pypi.org/project/{name}/"
    )
