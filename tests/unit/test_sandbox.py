"""Where confined processes' cgroups go, read from /proc's text, and the sandbox's options
(``checks/procs``); the processes themselves are tests/integration/test_sandbox.py's."""

from __future__ import annotations

import os
from pathlib import Path

from checks.procs import cgroup
from checks.procs.sandbox import bwrap_args

HYBRID = """\
30 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,pids
"""
HYBRID_SELF = "8:pids:/\n4:memory:/jobs/runner\n0::/\n"
V2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
V2_SELF = "0::/system.slice/actions.runner.service\n"
# a container sees its own cgroup as the mount's root
CONTAINER = "600 590 0:26 /kubepods/pod1/c1 /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
CONTAINER_SELF = "0::/kubepods/pod1/c1/runner\n"


def test_the_v2_folder_and_the_v1_memory_folder_are_found_from_proc() -> None:
    assert cgroup.candidates(HYBRID, HYBRID_SELF, None) == (
        Path("/sys/fs/cgroup/unified"),
        Path("/sys/fs/cgroup/memory/jobs/runner"),
    )
    assert cgroup.candidates(V2, V2_SELF, None) == (
        Path("/sys/fs/cgroup/system.slice/actions.runner.service"),
        None,
    )
    assert cgroup.candidates(CONTAINER, CONTAINER_SELF, None) == (
        Path("/sys/fs/cgroup/runner"),
        None,
    )


def test_a_delegated_folder_named_by_the_runner_is_the_v2_folder() -> None:
    got = cgroup.candidates(V2, V2_SELF, "/sys/fs/cgroup/kernel-review.slice")
    assert got == (Path("/sys/fs/cgroup/kernel-review.slice"), None)


def test_nothing_is_found_without_cgroup_mounts() -> None:
    text = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    assert cgroup.candidates(text, "0::/\n", None) == (None, None)
    assert cgroup.parse_mounts("garbage\n - \n") == []


def test_the_memory_cap_counts_swap_and_is_written_only_where_memory_is(tmp_path: Path) -> None:
    kill, memory = tmp_path / "v2", tmp_path / "v1"
    kill.mkdir()
    memory.mkdir()
    (memory / "memory.memsw.limit_in_bytes").write_text("")
    hybrid = cgroup.Place(kill, True, memory, True)
    assert hybrid.roots() == (kill, memory)
    assert hybrid.limits(kill, 2**30) == []
    assert hybrid.limits(memory, 2**30) == [
        ("memory.limit_in_bytes", str(2**30)),
        ("memory.memsw.limit_in_bytes", str(2**30)),
    ]
    (kill / "memory.swap.max").write_text("")
    v2 = cgroup.Place(kill, True, kill, False)
    assert v2.roots() == (kill,)
    assert v2.limits(kill, 2**30) == [("memory.max", str(2**30)), ("memory.swap.max", "0")]
    assert v2.limits(kill, 0) == []  # no cap asked for: the cgroup only kills
    config = cgroup.config(v2, 2**30)
    assert config["prefix"] == cgroup.owner_prefix() == f"{cgroup.PREFIX}{os.getpid()}-"
    assert config["cgroups"] == [{"root": str(kill), "limits": v2.limits(kill, 2**30)}]


def test_the_sandbox_is_read_only_but_its_scratch_with_the_gpus_and_no_network(
    tmp_path: Path,
) -> None:
    args = bwrap_args(
        "/usr/bin/bwrap", [tmp_path, tmp_path / "."], ["/dev/nvidia0", "/dev/kfd"], tmp_path
    )
    assert args[0] == "/usr/bin/bwrap" and args[-1] == "--"
    pairs = list(zip(args, args[1:], args[2:], strict=False))
    assert ("--ro-bind", "/", "/") in pairs
    assert ("--bind", str(tmp_path), str(tmp_path)) in pairs
    assert pairs.count(("--bind", str(tmp_path), str(tmp_path))) == 1  # the same folder once
    assert ("--dev-bind", "/dev/nvidia0", "/dev/nvidia0") in pairs
    assert ("--dev-bind", "/dev/kfd", "/dev/kfd") in pairs
    for flag in ("--unshare-net", "--unshare-ipc", "--die-with-parent"):
        assert flag in args
    assert ("--tmpfs", "/dev/shm", "--dev-bind") in pairs
    assert ("--setenv", "TMPDIR", str(tmp_path)) in pairs
    assert "--unshare-pid" not in args  # the zygote's forks are reparented to the bot


def test_the_sandboxs_tmp_is_its_own_folder_with_what_it_needs_of_the_machines_tmp_read_only(
    tmp_path: Path,
) -> None:
    host = tmp_path / "host-tmp"  # the machine's /tmp
    (host / "venv-of-a-side" / "bin").mkdir(parents=True)  # what a side's interpreter is in
    (host / "pytest-of-someone").mkdir()  # another folder there
    (host / "nsight-compute-lock").write_text("")  # a file of a tool's, at a fixed path
    scratch, private = tmp_path / "scratch", tmp_path / "scratch" / "tmp"
    python = host / "venv-of-a-side" / "bin" / "python"
    needed = [str(python), "-I", f"--cache={host}/pytest-of-someone/x", "relative/path"]
    args = bwrap_args("/usr/bin/bwrap", [scratch], [], private, needed=needed, host_tmp=host)
    pairs = list(zip(args, args[1:], args[2:], strict=False))
    # /tmp is writable and the run's own (in its scratch folder), so a tool that writes a fixed
    # path there (ncu's lock file) works, and nothing it writes reaches the machine's /tmp
    bind_tmp = pairs.index(("--bind", str(private), "/tmp"))
    for entry in ("venv-of-a-side", "pytest-of-someone"):  # what it was given, read-only
        path = str((host / entry).resolve())
        assert pairs.index(("--ro-bind-try", path, path)) > bind_tmp
    assert args.count("--ro-bind-try") == 2
    assert str(host / "nsight-compute-lock") not in args  # nothing else of the machine's /tmp
    assert pairs.index(("--bind", str(scratch), str(scratch))) > bind_tmp
