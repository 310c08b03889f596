"""Which of a repository's ops ``init`` writes into the policy, and why each other one is left out.

A large repository has more ops than a policy should hold (the file is capped at 64 KiB, and a
review of a hundred kernels nobody asked for helps no one). The ops are ranked: those with a
benchmark first (a policy entry without one cannot be measured), then by how many call sites
launch them (how recently their files changed breaks a tie). ``only`` keeps the ops with a file
under one of its paths, every one of them; without it ``max_kernels`` caps how many are written.
Where some op has a benchmark, an op without one is left out (``init`` writes it a bench entry
stub instead); where none has, they stay, with the values to fill in. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.onboard.scan import Op

DEFAULT_MAX_KERNELS = 40


@dataclass(frozen=True)
class LeftOut:
    op: Op
    why: str
    unbenched: bool = False  # left out for want of a benchmark (it gets a stub)

    def line(self) -> str:
        """One short line for the output."""
        kernels = len(self.op.kernels)
        plural = "s" if kernels != 1 else ""
        where = self.op.home or self.op.paths[0]
        return f"{self.op.name} ({kernels} kernel{plural}, {where}): {self.why}"


@dataclass(frozen=True)
class Choice:
    kept: tuple[Op, ...]
    left_out: tuple[LeftOut, ...]


def under(path: str, folder: str) -> bool:
    """Whether the repository path ``path`` is ``folder`` or inside it."""
    folder = folder.strip("/").removeprefix("./")
    return not folder or path == folder or path.startswith(folder + "/")


def choose(
    ops: Sequence[Op],
    *,
    only: Sequence[str] = (),
    max_kernels: int = DEFAULT_MAX_KERNELS,
) -> Choice:
    """The ops to write, best first, and the rest with the reason each was left out; with
    ``only``, every op under its paths (the ones the maintainer named), uncapped."""
    left: list[LeftOut] = []
    inside = []
    for op in ops:
        if only and not any(under(p, folder) for p in op.paths for folder in only):
            left.append(LeftOut(op, f"no file under --only {' '.join(only)}"))
        else:
            inside.append(op)
    if any(op.benchmark for op in inside):
        wanting = sorted((op for op in inside if op.benchmark is None), key=_order)
        for op in wanting:
            left.append(LeftOut(op, f"no benchmark calls {op.entry}()", unbenched=True))
        inside = [op for op in inside if op.benchmark is not None]
    inside.sort(key=_order)
    most = len(inside) if only else max_kernels
    for op in inside[most:]:
        why = f"past the {most} best ranked ({op.call_sites} call sites); --only names it"
        left.append(LeftOut(op, why))
    return Choice(kept=tuple(inside[:most]), left_out=tuple(left))


def _order(op: Op) -> tuple[int, int, str]:
    return (-op.call_sites, -op.changed, op.name)


def drop_last(choice: Choice, why: str) -> Choice:
    """``choice`` without its lowest-ranked op, which is left out for ``why``."""
    *kept, last = choice.kept
    return Choice(kept=tuple(kept), left_out=(*choice.left_out, LeftOut(last, why)))
