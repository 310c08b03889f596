"""The cgroups a confined process tree runs in: where they can be made on this machine, the
memory cap each takes, and killing everything in one.

A process that calls ``setsid`` leaves its session, and a shared mapping or a file in /dev/shm
is not counted by ``RLIMIT_DATA``; a cgroup holds every descendant whatever session it starts,
and its memory limit counts shared and tmpfs pages too. cgroup v2 is used where this process's
cgroup (or ``KERNEL_REVIEW_CGROUP``, a folder delegated to the runner's user) takes children;
on a machine whose memory controller is still on cgroup v1 (a hybrid layout), the v1 memory
hierarchy holds the cap and, where there is no writable v2 folder, serves for killing too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "kernel-review-"  # a confined tree's cgroup: PREFIX, the bot's pid, the tree's pid
CGROUP_ENV = "KERNEL_REVIEW_CGROUP"
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class Mount:
    point: str
    root: str  # the hierarchy's folder mounted at ``point``
    fstype: str
    options: frozenset[str]


@dataclass(frozen=True)
class Place:
    """Where a confined tree's cgroups are made: ``kill_root`` (children there are killed whole)
    and ``memory_root`` (children there take the memory cap); the same folder on cgroup v2."""

    kill_root: Path
    kill_v2: bool  # the folder has ``cgroup.kill`` (v2, Linux 5.14): one write kills all
    memory_root: Path
    memory_v1: bool

    def roots(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys((self.kill_root, self.memory_root)))

    def limits(self, root: Path, memory_bytes: int) -> list[tuple[str, str]]:
        """The files written in a new cgroup under ``root`` and their values."""
        if root != self.memory_root or memory_bytes <= 0:
            return []
        if self.memory_v1:
            # the swap-inclusive limit, where the kernel has it, keeps swap from escaping the cap
            out = [("memory.limit_in_bytes", str(memory_bytes))]
            if (root / "memory.memsw.limit_in_bytes").exists():
                out.append(("memory.memsw.limit_in_bytes", str(memory_bytes)))
            return out
        out = [("memory.max", str(memory_bytes))]
        if (root / "memory.swap.max").exists():
            out.append(("memory.swap.max", "0"))
        return out


def parse_mounts(mountinfo: str) -> list[Mount]:
    """The cgroup mounts in ``/proc/self/mountinfo``'s text."""
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        opts = frozenset(tail[2].split(","))
        out.append(Mount(fields[4].replace("\\040", " "), fields[3], tail[0], opts))
    return out


def own_paths(proc_cgroup: str) -> dict[str, str]:
    """This process's cgroup per hierarchy from ``/proc/self/cgroup``'s text: ``""`` for v2,
    each controller's name for v1."""
    out: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            out[""] = parts[2]
        for controller in parts[1].split(","):
            if controller:
                out[controller] = parts[2]
    return out


def _folder(mount: Mount, path: str) -> Path:
    if mount.root != "/" and (path == mount.root or path.startswith(mount.root + "/")):
        path = path[len(mount.root) :]
    return Path(mount.point) / path.lstrip("/")


def candidates(
    mountinfo: str, proc_cgroup: str, override: str | None
) -> tuple[Path | None, Path | None]:
    """The v2 folder and the v1 memory folder children would be made in (None: no such
    hierarchy). ``override``: ``KERNEL_REVIEW_CGROUP``, used as the v2 folder."""
    mounts, own = parse_mounts(mountinfo), own_paths(proc_cgroup)
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    v1 = next((m for m in mounts if m.fstype == "cgroup" and "memory" in m.options), None)
    v2_dir = Path(override) if override else (_folder(v2, own[""]) if v2 and "" in own else None)
    v1_dir = _folder(v1, own["memory"]) if v1 and "memory" in own else None
    return v2_dir, v1_dir


def _takes_children(folder: Path) -> bool:
    probe = folder / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except FileExistsError:
        pass
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _v2_memory(folder: Path) -> bool:
    try:
        return "memory" in (folder / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def find_place() -> tuple[Place | None, str]:
    """Where this machine lets confined trees be made, or None and why not (what to do)."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        proc_cgroup = Path("/proc/self/cgroup").read_text()
    except OSError as exc:
        return None, f"cannot read this process's cgroups ({exc}): not Linux, or no /proc"
    override = os.environ.get(CGROUP_ENV, "").strip() or None
    v2_dir, v1_dir = candidates(mountinfo, proc_cgroup, override)
    v2_ok = v2_dir is not None and (v2_dir / "cgroup.procs").exists() and _takes_children(v2_dir)
    v1_ok = v1_dir is not None and _takes_children(v1_dir)
    if override and not v2_ok:
        return None, (
            f"{CGROUP_ENV}={override} is not a cgroup v2 folder this user can make cgroups in"
        )
    if v2_ok and v2_dir is not None and _v2_memory(v2_dir):
        return Place(v2_dir, (v2_dir / "cgroup.kill").exists(), v2_dir, False), ""
    if v1_ok and v1_dir is not None:
        kill_root = v2_dir if v2_ok and v2_dir is not None else v1_dir
        return Place(kill_root, kill_root == v2_dir and v2_ok, v1_dir, True), ""
    where = str(v2_dir) if v2_dir is not None else "this machine has no cgroup v2 mount"
    if not v2_ok:
        why = f"this user cannot make cgroups in {where}"
    else:
        why = (
            f"the memory controller is not enabled for the children of {where} (a cgroup with "
            "processes of its own cannot enable it: give the runner a delegated one whose "
            "processes live in a child, systemd's Delegate=yes with DelegateSubgroup=, write "
            f"+memory to its cgroup.subtree_control, and name it in {CGROUP_ENV} if it is not "
            "this process's)"
        )
    return None, why


def owner_prefix() -> str:
    """The start of the names of the cgroups this process makes (``PREFIX``, its pid, ``-``):
    what it kills at its end, whatever other bots on the machine made."""
    return f"{PREFIX}{os.getpid()}-"


def name(pid: int) -> str:
    """The cgroup of the tree started as ``pid`` by this process."""
    return f"{owner_prefix()}{pid}"


def join(place: Place, pid: int, memory_bytes: int) -> None:
    """Move the running process ``pid`` (and the children it starts from now on) into cgroups
    of its own, with the memory cap. OSError when a cgroup refuses."""
    for root in place.roots():
        folder = root / name(pid)
        folder.mkdir(exist_ok=True)
        for file, value in place.limits(root, memory_bytes):
            (folder / file).write_text(value)
        (folder / "cgroup.procs").write_text(str(pid))


def config(place: Place, memory_bytes: int) -> dict[str, object]:
    """``checks/procs/enter.py``'s CONFIG: ``join`` done by the process itself before it
    becomes the command."""
    return {
        "prefix": owner_prefix(),
        "cgroups": [
            {"root": str(root), "limits": place.limits(root, memory_bytes)}
            for root in place.roots()
        ],
    }


def oom_kills(place: Place, pid: int) -> int:
    """How many processes the kernel killed at the memory cap of the tree started as ``pid``
    (``oom_kill`` in ``memory.events`` on v2, ``memory.oom_control`` on v1); 0 when it has no
    such cgroup (any more)."""
    folder = place.memory_root / name(pid)
    events = "memory.oom_control" if place.memory_v1 else "memory.events"
    try:
        text = (folder / events).read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def _members(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill(place: Place, pid: int) -> bool:
    """SIGKILL everything in the cgroups of the tree started as ``pid``, wait for them to be
    empty (up to ``KILL_WAIT_S``) and remove them. Whether the tree had cgroups."""
    found = False
    for root in place.roots():
        folder = root / name(pid)
        if folder.is_dir():
            found = True
            _kill_folder(place, root, folder)
    return found


def kill_all(place: Place) -> None:
    """``kill`` every tree this process confined and did not end (a worker that died by
    itself, and what it left running): at its end nothing it started outlives it."""
    for root in place.roots():
        for folder in root.glob(f"{owner_prefix()}*"):
            _kill_folder(place, root, folder)


def _kill_folder(place: Place, root: Path, folder: Path) -> None:
    """Kill everything in ``folder`` (a cgroup under ``root``), then remove it."""
    if place.kill_v2 and root == place.kill_root:
        with contextlib.suppress(OSError):
            (folder / "cgroup.kill").write_text("1")
    deadline = time.monotonic() + KILL_WAIT_S
    while (members := _members(folder)) and time.monotonic() < deadline:
        for member in members:  # v1, and anything cgroup.kill has not reached yet
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)
        time.sleep(0.01)
    for _ in range(50):  # the last members may take a moment to leave once dead
        try:
            folder.rmdir()
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.02)
