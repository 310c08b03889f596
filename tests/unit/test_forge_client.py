"""The forge protocol: what each implementation offers, and who may know which forge it is."""

from __future__ import annotations

import ast
import inspect

import pytest

from bot.forge import client as forge_client
from bot.forge.client import ForgeClient
from bot.github.api import GitHubClient
from tests.memory_forge import MemoryForge
from tests.paths import ROOT

# What may import a forge's own package: the wiring and that package itself.
FORGE_NEUTRAL = ("bot/forge", "bot/jobs", "bot/review", "bot/revision.py", "bot/plan.py")


def protocol_methods() -> dict[str, inspect.Signature]:
    """Every method of ForgeClient and the protocols it is made of."""
    out: dict[str, inspect.Signature] = {}
    for cls in ForgeClient.__mro__:
        if cls.__module__ != forge_client.__name__:
            continue
        for name, member in vars(cls).items():
            if inspect.isfunction(member) and not name.startswith("_"):
                out.setdefault(name, inspect.signature(member))
    return out


def test_the_protocol_covers_what_the_jobs_ask():
    assert {
        "list_comments",
        "create_comment",
        "edit_comment",
        "add_reaction",
        "get_pull",
        "get_pull_diff",
        "timeline",
        "permission",
        "read_file",
        "list_dir",
        "set_status",
        "publish_check_run",
        "run_jobs",
        "cancel_run",
        "create_issue",
    } <= set(protocol_methods())


@pytest.mark.parametrize("impl", [GitHubClient, MemoryForge], ids=lambda c: c.__name__)
def test_each_forge_offers_every_method_with_its_parameters(impl):
    """Each implementation takes what a caller of the protocol passes, by the same names and
    kinds; a parameter of its own must have a default (GitHub's ``number=``, which it does
    not need, has one)."""
    for name, wanted in protocol_methods().items():
        assert hasattr(impl, name), f"{impl.__name__} has no {name}"
        have = inspect.signature(getattr(impl, name)).parameters
        for p in wanted.parameters.values():
            assert p.name in have, f"{impl.__name__}.{name} takes no {p.name}"
            assert have[p.name].kind == p.kind, f"{impl.__name__}.{name}: {p.name} is {p.kind}"
        for q in have.values():
            if q.name not in wanted.parameters:
                assert q.default is not inspect.Parameter.empty, f"{impl.__name__}.{name}"


def imported_modules(path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_only_the_wiring_knows_the_forge_is_github():
    files = []
    for place in FORGE_NEUTRAL:
        path = ROOT / place
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    assert len(files) > 20
    github = {
        str(f.relative_to(ROOT)): sorted(
            m for m in imported_modules(f) if m.startswith("bot.github")
        )
        for f in files
    }
    assert {f: m for f, m in github.items() if m} == {}
    # and the wiring does: the check above reads imports where they are
    assert "bot.github.api" in imported_modules(ROOT / "bot" / "app.py")
