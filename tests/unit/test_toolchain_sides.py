"""Which sides the first call measures when a change moves a toolchain pin: both only when the
two sides' environments really differ."""

from __future__ import annotations

from pathlib import Path

from bot.contracts.plan import Plan
from bot.contracts.review import ChangeLine
from bot.errors import ToolchainError
from checks.compiler.targets import target_for
from checks.context import MeasureContext
from checks.toolchain_env import SideEnv

RUNNER = SideEnv(python="/usr/bin/python3", versions={"triton": "3.6.0"}, environment="runner")
OLD = SideEnv(python="/envs/a/bin/python", versions={"triton": "3.5.1"}, environment="uv a")


def _ctx(tmp_path: Path, *, moved: bool, envs: dict[str, SideEnv]) -> MeasureContext:
    changes = (ChangeLine(kernel="triton", kind="toolchain"),) if moved else ()
    plan = Plan(base_sha="b" * 40, head_sha="h" * 40, vendors=("nvidia",), kernels=(),
                checks=("first_call",), changes=changes)  # fmt: skip
    ctx = MeasureContext(plan, target_for("nvidia"), tmp_path, None, None, tmp_path)
    ctx._envs.update(envs)  # type: ignore[arg-type]
    return ctx


def test_both_sides_only_when_their_toolchains_differ(tmp_path: Path) -> None:
    # a pin moved and the base resolved to another Triton: each side under its own
    assert _ctx(tmp_path, moved=True, envs={"base": OLD, "head": RUNNER}).toolchains_differ()
    # a pin moved (tightened, say) but the runner's environment satisfies both sides: nothing moved
    same = _ctx(tmp_path, moved=True, envs={"base": RUNNER, "head": RUNNER})
    assert same.per_side_toolchain and not same.toolchains_differ()
    # no pin moved
    assert not _ctx(tmp_path, moved=False, envs={}).toolchains_differ()


def test_a_side_whose_environment_cannot_be_made_counts_as_different(
    tmp_path: Path, monkeypatch
) -> None:
    ctx = _ctx(tmp_path, moved=True, envs={"head": RUNNER})

    def fail(side: str):
        raise ToolchainError("uv could not resolve triton==9.9", hint="check the pin")

    monkeypatch.setattr(ctx, "environment", fail)
    assert ctx.toolchains_differ()  # the first call then reports why for that side
