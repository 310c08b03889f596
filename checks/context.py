"""What every check of one measure job shares, made once per job: ``MeasureContext``.

The plan, the vendor and shard this runner measures, the base policy (as the gate job read it,
handed over with the plan; read from the base commit only where no gate read it: a pull
request cannot loosen its own rules), the worktrees of base and head (each
made the first time a check asks for it, and all removed when the job ends), each side's
interpreter (its own toolchain's when the change moves a pin, ``checks.toolchain_env``), a scratch folder,
the folder detailed results are written to, and the progress callback.

What the plan carries (limits, deployment, compiler targets) is taken from the plan; the base
policy answers what an older plan does not carry.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bot import gitutil
from bot.contracts.base import Vendor
from bot.contracts.evidence import Evidence
from bot.contracts.plan import Plan, PlanDeployment, PlanLimits
from bot.errors import KernelReviewError, PolicyError
from bot.policy.load import find_policy, missing_policy
from bot.policy.model import Policy
from bot.revision import GitRevision
from checks.compiler.targets import VendorTarget, compile_targets, target_for
from checks.toolchain_env import SideEnv, runner_env, side_environment

Progress = Callable[[str], None]
Side = Literal["base", "head"]


@dataclass
class MeasureContext:
    plan: Plan
    target: VendorTarget  # the vendor this runner measures
    repo_root: Path
    policy: Policy | None  # the base commit's, None when it has none
    no_policy: PolicyError | None  # why there is none, when there is none
    work: Path  # scratch space, removed with the context
    shard: tuple[int, int] = (1, 1)  # i of n: this runner measures every n-th case from the i-th
    details_dir: Path | None = None  # where detailed results are written, if anywhere
    progress: Progress = lambda _m: None
    sweep_options: Any = None  # a checks.sweep.run.SweepOptions overriding the sweep's defaults
    env_cache_dir: Path | None = None  # where side environments are kept (default: ~/.cache)
    env_override: dict[str, tuple[str, ...]] = field(default_factory=dict)  # side -> requirements
    _trees: dict[Side, Path] = field(default_factory=dict)
    _envs: dict[Side, SideEnv] = field(default_factory=dict)
    # checks that need no GPU run in threads of their own (checks.measure): a worktree or an
    # environment is made once, by whichever asks first, while the other waits for it
    _making: threading.RLock = field(default_factory=threading.RLock, repr=False)
    # held while a worktree is added or the trees removed: a check still running in its thread
    # when the job ends (stopped, past its grace) makes none after they are gone
    _trees_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _closed: bool = False
    # interpreters whose files a process of this job has already read from disk (the sweep's
    # workers import torch and Triton): a first-call check needs no priming process for them
    read_pythons: set[str] = field(default_factory=set)

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        plan: Plan,
        *,
        vendor: str,
        repo_root: Path,
        policy: Policy | None = None,
        **options: Any,
    ) -> Iterator[MeasureContext]:
        """The context of one job; its worktrees and scratch space are gone when it closes.
        ``policy``: the base policy as the gate read it (the measure job's gate.json); None
        reads it from the base commit. ``options`` are the fields of the same names (shard,
        details_dir, progress, sweep_options, env_cache_dir, env_override). An unknown
        ``vendor`` is a PolicyError."""
        target = target_for(vendor)
        repo_root = Path(repo_root)
        no_policy = None
        if policy is None:
            base = GitRevision(repo_root, plan.base_sha)
            found = find_policy(base)  # the base's rules, never the head's
            policy = found[0] if found else None
            if found is None:
                no_policy = missing_policy(
                    base,
                    place=f"at the base commit ({base.label})",
                    hint="commit .github/kernel-review.toml to the base branch (see docs/policy.md)",
                )
        with tempfile.TemporaryDirectory(prefix="kernel-review-measure-") as tmp:
            ctx = cls(plan, target, repo_root, policy, no_policy, Path(tmp), **options)
            try:
                yield ctx
            finally:
                ctx._remove_trees()

    @property
    def vendor(self) -> Vendor:
        return self.target.vendor

    @property
    def first_shard(self) -> bool:
        """Whether this is shard 1: what does not split by shape is measured there only."""
        return self.shard[0] == 1

    @property
    def python_path(self) -> tuple[str, ...]:
        """The base policy's python_path: folders of a checkout imported from before its root."""
        return tuple(getattr(self.policy, "python_path", ()) or ())

    def tree(self, side: Side) -> Path:
        """The worktree of base or head: made on the first call, the same path after."""
        with self._making, self._trees_lock:
            if self._closed:
                raise KernelReviewError(
                    f"the measure job has ended: the {side}'s worktree is removed",
                    hint="a check that outlived its job is not run; its evidence is not kept",
                )
            if side not in self._trees:
                sha = self.plan.base_sha if side == "base" else self.plan.head_sha
                self._trees[side] = gitutil.add_worktree(self.repo_root, self.work / side, sha)
            return self._trees[side]

    @property
    def per_side_toolchain(self) -> bool:
        """Whether each side runs under its own toolchain: the change moves a pin, and the
        base policy does not say ``[toolchain] environments = "runner"``."""
        wanted = self.policy is None or self.policy.toolchain.environments == "per-side"
        return bool(self.plan.toolchain) and wanted

    def environment(self, side: Side) -> SideEnv:
        """The interpreter this side's workers run under: its own toolchain's (made on the first
        call, with uv) when ``per_side_toolchain``, else the runner's. ToolchainError when the
        side's environment cannot be made."""
        with self._making:
            if side not in self._envs:
                if not self.per_side_toolchain:
                    self._envs[side] = runner_env()
                else:
                    urls = self.policy.toolchain.index_urls if self.policy is not None else []
                    self.progress(f"toolchain: the {side}'s own environment")
                    self._envs[side] = side_environment(
                        self.tree(side),
                        cache_dir=self.env_cache_dir,
                        index_urls=urls,
                        override=self.env_override.get(side, ()),
                    )
            return self._envs[side]

    def toolchains_differ(self) -> bool:
        """Whether base and head really run under different toolchains: the change moves a
        pin and the two sides' environments differ (interpreter or installed versions). A moved
        pin that the runner's environment satisfies on both sides moves nothing. True when a
        side's environment cannot be made (the check that needs it then says why)."""
        if not self.per_side_toolchain:
            return False
        try:
            base, head = self.environment("base"), self.environment("head")
        except KernelReviewError:
            return True
        return base.python != head.python or base.versions != head.versions

    def pythons(self) -> tuple[str, str]:
        """The base's and the head's interpreters."""
        return self.environment("base").python, self.environment("head").python

    def toolchain_evidence(self) -> Evidence:
        """The toolchains the sides ran under, for the review (nothing when both are the
        runner's, as for any change that moves no pin)."""
        if not self.per_side_toolchain:
            return Evidence()
        return Evidence(
            toolchains=tuple(env.evidence(side) for side, env in sorted(self._envs.items()))
        )

    def scratch(self, name: str) -> Path:
        """A folder of its own for one check (logs, partial results)."""
        path = self.work / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _remove_trees(self) -> None:
        """The worktrees removed, once any being added is made, and none added after."""
        with self._trees_lock:
            self._closed = True
            for tree in self._trees.values():
                gitutil.remove_worktree(self.repo_root, tree)
            self._trees.clear()

    # --- what the plan carries, else the base policy ------------------------------------------

    @property
    def limits(self) -> PlanLimits:
        """The limits on this run; a PolicyError when neither the plan nor the base has any."""
        if self.plan.limits is not None:
            return self.plan.limits
        if self.policy is None:
            assert self.no_policy is not None
            raise self.no_policy
        return PlanLimits.model_validate(self.policy.limits.model_dump())

    @property
    def deployment(self) -> PlanDeployment | None:
        """How the kernels are deployed (None: neither the plan nor the base says)."""
        if self.plan.deployment is not None or self.policy is None:
            return self.plan.deployment
        return PlanDeployment.model_validate(self.policy.deployment.model_dump())

    @property
    def compiler_targets(self) -> list[str] | None:
        """The targets to compile for, for the plan's vendors (None: no one says)."""
        if self.plan.compiler_targets is not None:
            return list(self.plan.compiler_targets)
        if self.policy is None:
            return None
        return compile_targets(self.policy.compiler, self.plan.vendors)
