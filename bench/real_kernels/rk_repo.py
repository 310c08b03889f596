"""One git repository per catalogue group, as ``kernel-review bench`` sees a project.

The base commit holds ``entries/`` (the suite's entry modules), ``rk_extra.py`` (the extra work
of the slow heads), a generated ``suite.py`` with one bench entry per kernel and the policy
``.github/kernel-review.toml``. Each head is one commit on top of base, on its own branch:

- ``aa``: identical code, a comment added to ``suite.py``;
- ``slow5`` and ``slow10`` (``add_slow_head``, once the kernels' times are known):
  ``EXTRA_FRACTION`` in ``suite.py`` set to 0.05 and 0.10 and ``KERNEL_US`` to the measured
  times, so each kernel's ``fn`` is followed by extra work of that fraction of its time
  (``rk_extra``).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # bench/: cli_decision's policy header
    sys.path.insert(0, str(HERE.parent))

from cli_decision import policy_header  # noqa: E402
from rk_catalogue import Group  # noqa: E402

from bot import gitutil  # noqa: E402

HEADS = {"aa": 0.0, "slow5": 0.05, "slow10": 0.10}
FRACTION_LINE = re.compile(r"^EXTRA_FRACTION = .*$", re.M)
# a shape is the product of its dims here, not one tensor (FlagGems' embedding backward)
MAX_ELEMENTS = 1 << 36
MAX_GPU_SECONDS = 900


def policy_text(group: Group, tolerance: float) -> str:
    """The policy: one ``[[kernels]]`` per catalogue kernel, its bench entry the wrapper in
    ``suite.py``, its served shapes and dtype; a long-lived deployment."""
    lines = policy_header(tolerance, max_elements=MAX_ELEMENTS, max_gpu_seconds=MAX_GPU_SECONDS)
    for k in group.kernels:
        lines += [
            "",
            "[[kernels]]",
            f'name = "{k.id}"',
            f'bench = "suite:{k.id}"',
            'paths = ["suite.py", "rk_extra.py", "entries/**"]',
            f'dtypes = ["{k.dtype}"]',
            f"shapes = {json.dumps([list(s) for s in k.shapes])}",
        ]
    return "\n".join(lines) + "\n"


def suite_text(group: Group) -> str:
    """``suite.py``: the catalogue's ``setup`` run once, then one wrapper entry per kernel."""
    setup = group.setup.strip()
    lines = [
        f'"""Bench entries of the real-kernel suite, group {group.name} ({group.requirement},',
        f"{group.repo} at {group.ref}). Each calls its entry in entries/; EXTRA_FRACTION above 0",
        'adds extra work after the kernel (rk_extra.py)."""',
        "",
        "from __future__ import annotations",
        "",
        "import rk_extra",
        "",
        "EXTRA_FRACTION = 0.0",
        "KERNEL_US: dict = {}",
        "",
    ]
    if setup:
        lines += [
            f"SETUP = {setup!r}",
            f'exec(compile(SETUP, "<setup of {group.name}>", "exec"), {{}})',
            "",
        ]
    for k in group.kernels:
        lines += [
            "",
            f'def {k.id}(shape, dtype, *, device="cuda", seed=0):',
            f'    """{k.entry} ({k.source})."""',
            "    return rk_extra.wrap(",
            f'        "entries.{k.module}", "{k.function}", "{k.id}", shape, dtype,',
            "        device=device, seed=seed, fraction=EXTRA_FRACTION,",
            f'        kernel_us=KERNEL_US.get(("{k.id}", tuple(shape), dtype)),',
            "    )",
            "",
        ]
    return "\n".join(lines)


def with_fraction(text: str, fraction: float, why: str) -> str:
    new, n = FRACTION_LINE.subn(f"EXTRA_FRACTION = {fraction!r}  # {why}", text, count=1)
    if n != 1:
        raise ValueError("suite.py has no EXTRA_FRACTION line to change")
    return new


KERNEL_US_LINE = re.compile(r"^KERNEL_US: dict = .*$", re.M)


def with_kernel_us(text: str, kernel_us: dict[tuple[str, tuple[int, ...], str], float]) -> str:
    """``suite.py`` with the kernels' measured times (kernel id, shape, dtype -> us)."""
    table = {k: round(v, 4) for k, v in sorted(kernel_us.items())}
    new, n = KERNEL_US_LINE.subn(lambda _: f"KERNEL_US: dict = {table!r}", text, count=1)
    if n != 1:
        raise ValueError("suite.py has no KERNEL_US line to change")
    return new


def add_slow_head(
    root: Path,
    group: Group,
    head: str,
    kernel_us: dict[tuple[str, tuple[int, ...], str], float],
) -> str:
    """The slow head ``head`` (of ``HEADS``) on top of base: its fraction of extra work after
    every kernel, sized from ``kernel_us`` where it names the case (the same in every
    process), else by each process itself. Its commit."""
    fraction = HEADS[head]
    gitutil.git(root, "checkout", "-q", "-B", head, "base")
    suite = root / "suite.py"
    why = f"{fraction:.0%} extra work after every kernel"
    text = with_fraction(suite.read_text(encoding="utf-8"), fraction, why)
    suite.write_text(with_kernel_us(text, kernel_us), encoding="utf-8")
    sized = f", sized from {len(kernel_us)} measured kernel times" if kernel_us else ""
    sha = gitutil.commit_all(root, f"{group.name}: {why}{sized}")
    gitutil.git(root, "checkout", "-q", "--detach", "base")
    return sha


def build_group_repo(root: Path, group: Group, entries: Path, tolerance: float) -> dict[str, str]:
    """The group's repository at ``root`` (a new folder); branch name -> commit for ``base``
    and ``aa`` (the slow heads are added once the kernels' times are known: ``add_slow_head``)."""
    if root.exists():
        raise FileExistsError(f"{root} exists; the suite repository is built in a new folder")
    gitutil.init_repo(root)
    shutil.copytree(entries, root / "entries", ignore=shutil.ignore_patterns("__pycache__"))
    init = root / "entries" / "__init__.py"
    if not init.exists():
        init.write_text("", encoding="utf-8")
    shutil.copy(HERE / "rk_extra.py", root / "rk_extra.py")
    (root / "suite.py").write_text(suite_text(group), encoding="utf-8")
    (root / ".github").mkdir()
    (root / ".github" / "kernel-review.toml").write_text(
        policy_text(group, tolerance), encoding="utf-8"
    )
    (root / "README.md").write_text(
        f"Real-kernel suite, group {group.name}: {group.requirement} from {group.repo} "
        f"({group.ref}, {group.licence}).\n",
        encoding="utf-8",
    )
    shas = {"base": gitutil.commit_all(root, f"{group.name}: entries, suite and policy")}
    gitutil.git(root, "branch", "-f", "base")
    suite = root / "suite.py"
    gitutil.git(root, "checkout", "-q", "-B", "aa", "base")
    suite.write_text(suite.read_text(encoding="utf-8") + "\n# the same code as base\n", "utf-8")
    shas["aa"] = gitutil.commit_all(root, f"{group.name}: comment only: identical code")
    gitutil.git(root, "checkout", "-q", "--detach", "base")
    return shas
