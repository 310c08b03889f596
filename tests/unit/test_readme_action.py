"""The README's tables of the action's inputs and outputs say what action.yml declares."""

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
