"""The README says what the files it quotes say: the tables of the action's inputs and outputs
are what action.yml declares, and the review shown under "Why" is a golden file's, verbatim."""

from __future__ import annotations

import re

import pytest

from tests.action_yml import ACTION, fields, markdown_table
from tests.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


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
