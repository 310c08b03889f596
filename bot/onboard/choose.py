"""Which of a repository's ops ``init`` writes into the policy, and why each other one is left out.

A large repository has more ops than a policy should hold (the file is capped at 64 KiB, and a
review of a hundred kernels nobody asked for helps no one). The ops are ranked: those with a
benchmark first (a policy entry without one cannot be measured), then by how many call sites
launch them (``rank="calls"``) or how recently their files changed (``rank="recent"``). ``only``
keeps the ops with a file under one of its paths; ``max_kernels`` caps how many are written.
Where some op has a benchmark, an op without one is left out (``init`` writes it a bench entry
stub instead); where none has, they stay, with the values to fill in. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.onboard.scan import Op

Rank = Literal["calls", "recent"]
RANKS: tuple[Rank, ...] = ("calls", "recent")
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
    rank: Rank = "calls",
) -> Choice:
    """The ops to write, best first, and the rest with the reason each was left out."""
    left: list[LeftOut] = []
    inside = []
    for op in ops:
        if only and not any(under(p, folder) for p in op.paths for folder in only):
            left.append(LeftOut(op, f"no file under --only {' '.join(only)}"))
        else:
            inside.append(op)
    if any(op.benchmark for op in inside):
        wanting = sorted(
            (op for op in inside if op.benchmark is None), key=lambda op: _order(op, rank)
        )
        for op in wanting:
            left.append(LeftOut(op, f"no benchmark calls {op.entry}()", unbenched=True))
        inside = [op for op in inside if op.benchmark is not None]
    inside.sort(key=lambda op: _order(op, rank))
    for op in inside[max_kernels:]:
        why = f"{op.call_sites} call sites" if rank == "calls" else "changed less recently"
        left.append(LeftOut(op, f"past --max-kernels {max_kernels} ({why})"))
    return Choice(kept=tuple(inside[:max_kernels]), left_out=tuple(left))


def _order(op: Op, rank: Rank) -> tuple[int, int, str]:
    first, second = (op.call_sites, op.changed) if rank == "calls" else (op.changed, op.call_sites)
    return (-first, -second, op.name)


def drop_last(choice: Choice, why: str) -> Choice:
    """``choice`` without its lowest-ranked op, which is left out for ``why``."""
    *kept, last = choice.kept
    return Choice(kept=tuple(kept), left_out=(*choice.left_out, LeftOut(last, why)))
