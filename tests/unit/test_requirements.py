"""bot/toolchain/requirements.py: requirements, specifiers and versions read with packaging, and
what packaging cannot read (Poetry's caret and tilde, conda's =, a bare version) by the rule of
the tool that wrote it."""

from __future__ import annotations

import pytest

from bot.toolchain import requirements as r


def test_a_pin_keeps_its_clauses_in_the_files_order() -> None:
    text = 'triton >= 3.1 , <3.2 ; sys_platform == "linux"'
    req = r.parse(text)
    assert req is not None and req.name == "triton"
    assert r.written_spec(text, req) == ">=3.1,<3.2"  # packaging's own str() sorts them
    extras = "torch[opt]==2.4.0+cu121"
    assert r.written_spec(extras, r.parse(extras)) == "==2.4.0+cu121"  # type: ignore[arg-type]
    url = "torch @ https://h/torch-2.5.1-cp311-none-any.whl"
    assert r.written_spec(url, r.parse(url)) == "@https://h/torch-2.5.1-cp311-none-any.whl"  # type: ignore[arg-type]
    assert r.written_spec("triton", r.parse("triton")) == ""  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "-e .", "--index-url https://x", "torch>>2", "torch=2.4"])
def test_what_is_not_a_requirement_is_none(text: str) -> None:
    assert r.parse(text) is None


@pytest.mark.parametrize(
    ("spec", "allows", "refuses", "kind"),
    [
        (">=3.6,<3.7", "3.6.2", "3.7.0", "range"),
        ("~=3.6.0", "3.6.9", "3.7.0", "range"),
        ("==3.6.*", "3.6.1", "3.7.0", "range"),
        ("^2.5", "2.9.0", "3.0.0", "range"),  # Poetry: >=2.5,<3
        ("^0.3.1", "0.3.9", "0.4.0", "range"),  # Poetry: the first non-zero part is the major
        ("~2.5", "2.5.3", "2.6.0", "range"),  # Poetry's tilde: >=2.5,<2.6
        ("==2.5.1", "2.5.1", "2.5.2", "exact"),
        ("===2.5.1", "2.5.1", "2.5.2", "exact"),
        ("2.5.1", "2.5.1", "2.5.2", "exact"),  # a table's or a lock's bare version
        ("=2.4.0", "2.4.0", "2.4.1", "exact"),  # conda: that release (and its builds)
        (">=2.4", "9.0", "2.3", "unbounded"),
        ("!=2.0", "2.1", "2.0", "unbounded"),
    ],
)
def test_specifiers_by_the_rule_of_the_tool_that_wrote_them(
    spec: str, allows: str, refuses: str, kind: str
) -> None:
    found = r.specifier(spec)
    assert found is not None and found.contains(allows) and not found.contains(refuses)
    assert r.spec_kind(spec) == kind


@pytest.mark.parametrize("spec", ["(any)", "", "@https://x/torch.whl", "^x", ">=three"])
def test_a_spec_naming_no_version_bounds_nothing(spec: str) -> None:
    assert r.specifier(spec) is None and r.spec_kind(spec) == "unbounded"


def test_exact_versions_and_installable_requirements() -> None:
    assert r.exact_version("triton==3.5.1") == "3.5.1"
    assert r.exact_version("triton==3.6.*") is None and r.exact_version("triton>=3.6") is None
    assert r.exact_version("") is None
    assert r.installable("torch", "2.5.1") == "torch==2.5.1"
    assert r.installable("torch", "=2.4.0") == "torch==2.4.0"
    assert r.installable("triton", ">=3.6,<3.7") == "triton>=3.6,<3.7"
    for spec in ("(any)", "^2.4", "~2.4", "@https://x", "", ">=three"):
        assert r.installable("torch", spec) is None, spec


def test_satisfied_and_series() -> None:
    assert r.satisfied("triton>=3.6,<3.7", "3.6.0") and not r.satisfied("triton>=3.6", "3.5.1")
    assert not r.satisfied("triton", None)
    assert r.satisfied("triton>=3.6", "3.7.0rc1")  # a pre-release the runner has counts
    assert r.series("3.6.0+git1234abcd") == (3, 6) and r.series("4") == (4, 0)
    assert r.series("not a version") is None
    assert r.names(["triton==3.5.1", "not a requirement!", "torch"]) == {
        "triton": "triton==3.5.1",
        "torch": "torch",
    }
