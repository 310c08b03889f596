"""A process that imports torch and Triton once and forks workers from there.

Started by ``checks.sweep.zygote`` as ``python -I -B -u zygote.py --sock-fd N --memory-bytes M``
in a worker's scrubbed environment, at the start of a sweep (``kernel-review bench`` starts it
first thing, so its imports overlap the command's own work). It sets a worker's memory cap
first, keeps the toolchain's bytecode where torch's installation ships none (``keep_bytecode``:
written during these imports only, read on every later run), imports Triton with its key (the
hash of its own files every compile and cache lookup needs), torch and the worker program,
and then, for each request on its socket (a JSON message and the worker's two pipe ends), forks
a worker that takes the request's environment, folder and log and runs ``main.py``'s ``main``
with the request's arguments. Each worker then only makes its GPU context: four workers that
each imported torch side by side took 2.0-2.5 s on the H200.
Triton's driver utilities are built once, beside the imports (``driver_utils.py``), and copied
into the Triton cache of every process forked once they are.
A request with a ``module`` and no descriptors forks one of the bot's helper programs instead
(``checks.job_process``: compiling ahead), which then finds torch and Triton imported too,
rather than importing them beside this process at the sweep's start.

Nothing here touches a GPU: a CUDA context does not survive a fork, and the workers make their
own after it. The worker is forked twice, so that it is the bot's child (the bot is their
subreaper, ``checks.sweep.zygote``), not this process's: the bot waits for it, reads how it
ended and kills its session as it does for a worker it started itself. This process and its
workers are non-dumpable: the measured code, running as the same user, can neither attach to
this process (whose state every later worker inherits) nor to another worker.

Standard library only at import; the worker program's siblings are loaded as ``main.py`` loads
them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import hashlib
import importlib.util
import json
import os
import runpy
import shutil
import socket
import stat
import subprocess
import sys
import time
import traceback
from typing import Any, NoReturn, Protocol

_HERE = os.path.dirname(os.path.abspath(__file__))
MAX_REQUEST = 1 << 20
PR_SET_DUMPABLE = 4
# time.monotonic() when this program began (``main_at``), had Triton's key (``key_at``), had
# imported torch after it (``torch_at``), had both (``imported_at``) and had loaded the worker
# program (``program_at``): every fork's answer carries them, so the bot can say where a run's
# start went
MARKS: dict[str, float] = {}
# the driver utilities' build (``driver_utils.py``): its process and the folder it builds into
UTILS: dict[str, Any] = {}
# where the toolchain's bytecode came from (``keep_bytecode``: kept, written, installed, off,
# absent) and the folder when kept or written; every fork's answer carries the first
BYTECODE: dict[str, str] = {"came": "off", "folder": ""}


# started confined (``checks/procs/enter.py``), the lines of /proc/self/cgroup that name this
# process's own cgroups: a forked process runs nothing of its request until none of them is
# its own any more (the bot moves it into cgroups of its own once it has its pid), so that
# nothing it starts stays in this process's cgroups, out of reach of its end and its cap
CONFINED: dict[str, frozenset[str]] = {"lines": frozenset()}
ADOPTION_WAIT_S = 120.0


def _cgroup_lines() -> frozenset[str]:
    with open("/proc/self/cgroup") as handle:
        return frozenset(handle.read().splitlines())


def _own_cgroups() -> frozenset[str]:
    """The lines of /proc/self/cgroup naming the cgroups ``enter.py`` made for this process."""
    name = os.environ.get("KERNEL_REVIEW_CGROUP_NAME", "")
    if not name:
        return frozenset()
    with contextlib.suppress(OSError):
        return frozenset(line for line in _cgroup_lines() if line.endswith(f"/{name}"))
    return frozenset()


def _wait_until_adopted() -> None:
    """In a forked process: return once it is out of every cgroup of this process's (at
    once, unconfined); exit, running nothing, when the bot has not moved it in time."""
    lines = CONFINED["lines"]
    deadline, pause = time.monotonic() + ADOPTION_WAIT_S, 0.0005
    try:
        while lines and lines & _cgroup_lines():
            if time.monotonic() > deadline:
                os._exit(1)
            time.sleep(pause)
            pause = min(0.01, pause * 2)
    except OSError:
        os._exit(1)


def _undumpable() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _cap(max_bytes: int) -> None:
    """The workers' memory cap (``checks.procs.launch.capped``: ``RLIMIT_DATA``, soft and hard),
    set here first thing, before anything is imported, rather than by a Python started only to
    set it and exec this one (0.03-0.05 s of every run's start). Every fork inherits it."""
    if max_bytes > 0 and sys.platform.startswith("linux"):
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (max_bytes, max_bytes))


def _load(stem: str) -> Any:
    """A program of this folder (``main.py``, a sibling) as a module named as ``main.py`` names
    its siblings, not ``__main__``; loaded once."""
    name = f"_kernel_review_worker_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, f"{stem}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CONTRACT = _load("contract")  # the fork requests and answers, as the bot sends and reads them


# ------------------------------------------------------------------------------ kept bytecode
#
# An image built with ``PYTHONDONTWRITEBYTECODE`` or ``pip install --no-compile`` has no ``.pyc``
# beside torch's sources, and every process that imports torch compiles about a thousand modules
# first: on the H200 machine (torch 2.11, 0 of its 2141 modules compiled) ``import torch`` took
# 3.2-4.0 s a process, most of a run's start. Where torch has no bytecode of its own, Python
# reads and writes bytecode in kernel-review's folder (``sys.pycache_prefix``, a tree mirroring
# the sources' paths) while this process imports, and the writing ends before any checkout's code
# is imported or run; a forked worker reads it. Where torch ships its bytecode nothing changes: a
# prefix would hide it. Python checks each kept file against its source's size and time only, so
# a ``.pyc`` a pull request's code left there would be imported by every later run: the folder
# has a manifest (``manifest.json``: every file's SHA-256 and its source's, and the interpreter),
# written by this process when it stops writing, before any checkout's code runs, and every file
# is checked against it before the folder is used. A file that is not in it, differs from it or
# is not a regular file, and a folder without one, has the folder removed and compiled afresh
# (``rebuilt: why``), never imported; a file whose source changed since (an upgrade) is removed
# alone, and compiled again. The measured code runs as the same user and could
# rewrite the manifest as well (``SECURITY.md``); ``KERNEL_REVIEW_BYTECODE_CACHE=0`` turns the
# folder off (``bot.outputs.bytecode_dir``: no folder given).

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
_CHUNK = 1 << 20
# the folder in use and the files checked against its manifest, by relative path: (SHA-256 of
# the file, of its source, and the file's (size, mtime_ns, inode) when checked)
KEPT: dict[str, Any] = {"folder": "", "files": {}}


def _interpreter() -> str:
    """What, beside the sources, decides the bytecode: the interpreter and its build."""
    return f"{sys.implementation.cache_tag} {sys.version} {sys.executable}"


def _sha256(path: str) -> str:
    """The SHA-256 of a regular file, never through a link."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _source_of(folder: str, path: str) -> str | None:
    """The source file a kept ``.pyc`` was compiled from (the tree under ``folder`` mirrors the
    sources' paths); None for a file Python would not have written there."""
    before, sys.pycache_prefix = sys.pycache_prefix, folder
    try:
        return importlib.util.source_from_cache(path)
    except ValueError:
        return None
    finally:
        sys.pycache_prefix = before


def _kept_files(folder: str) -> tuple[list[tuple[str, str]], str | None]:
    """Every file under ``folder`` but the manifest, as (relative path, path); the first entry
    that is neither a folder nor a regular file stops the walk and is named."""
    found: list[tuple[str, str]] = []
    for top, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            rel = os.path.relpath(path, folder)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                return found, f"{rel} is not a regular file"
            if rel != MANIFEST:
                found.append((rel, path))
    return found, None


def _entry(folder: str, rel: str, path: str) -> tuple[str, str, list[int]] | str:
    """A kept file's manifest entry, or why it cannot have one (its source is gone or is not
    a regular file)."""
    source = _source_of(folder, path)
    if source is None or not os.path.isfile(source) or os.path.islink(source):
        return f"{rel} has no source file"
    st = os.lstat(path)
    return _sha256(path), _sha256(source), [st.st_size, st.st_mtime_ns, st.st_ino]


def check_kept(folder: str) -> str | None:
    """Check every file of ``folder`` against its manifest: None when all match (the entries
    are kept in ``KEPT`` for the manifest this run writes), else the first reason they do not."""
    try:
        with open(os.path.join(folder, MANIFEST), "rb") as handle:
            manifest = json.loads(handle.read(64 << 20))
        listed = manifest["files"]
        if manifest.get("version") != MANIFEST_VERSION or not isinstance(listed, dict):
            return "its manifest is of another version"
    except FileNotFoundError:
        return "it has no manifest"
    except (OSError, ValueError, KeyError, TypeError):
        return "its manifest cannot be read"
    if manifest.get("interpreter") != _interpreter():
        return "it was written by another interpreter"
    try:
        files, odd = _kept_files(folder)
        if odd:
            return odd
        checked: dict[str, Any] = {}
        for rel, path in files:
            want = listed.get(rel)
            if not isinstance(want, list) or len(want) != 2:
                return f"{rel} is not in its manifest"
            got = _entry(folder, rel, path)
            if not isinstance(got, str) and got[0] != want[0]:
                return f"{rel} differs from its manifest"
            if isinstance(got, str) or got[1] != want[1]:
                # written by trusted code for a source since changed or removed (the
                # installation was upgraded): that file goes, Python compiles the source again
                os.unlink(path)
                continue
            checked[rel] = got
    except OSError as exc:
        return f"a file cannot be read ({exc.strerror or exc})"
    KEPT["files"] = checked
    return None


def _remove(folder: str) -> str | None:
    """Remove ``folder`` (moved aside first, so that no process reads a half-removed tree);
    None when done, else why not."""
    aside = f"{folder}.removed-{os.getpid()}"
    try:
        os.rename(folder, aside)
        if os.path.islink(aside) or not os.path.isdir(aside):
            os.unlink(aside)
        else:
            shutil.rmtree(aside)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    return None


def write_manifest() -> None:
    """Record every file of the folder in use with its SHA-256 and its source's; only this
    process writes it, before any checkout's code is imported (``stop_writing_bytecode``). A
    file checked at the start and not rewritten since is not hashed again."""
    folder = KEPT["folder"]
    if not folder:
        return
    with contextlib.suppress(OSError):
        files, odd = _kept_files(folder)
        if odd:  # nothing else writes here before this: leave no manifest, so it is rebuilt
            return
        entries: dict[str, list[str]] = {}
        for rel, path in files:
            known = KEPT["files"].get(rel)
            st = os.lstat(path)
            if known is not None and known[2] == [st.st_size, st.st_mtime_ns, st.st_ino]:
                entries[rel] = [known[0], known[1]]
            elif not isinstance(got := _entry(folder, rel, path), str):
                entries[rel] = [got[0], got[1]]
            else:  # a file without a source cannot be checked: it goes
                os.unlink(path)
        text = {"version": MANIFEST_VERSION, "interpreter": _interpreter(), "files": entries}
        tmp = os.path.join(folder, f"{MANIFEST}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(text, handle)
        os.replace(tmp, os.path.join(folder, MANIFEST))


def _source(module: str) -> str | None:
    """The Python source file ``module`` would be imported from; None where it is not found or
    is not Python source."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return origin if origin and origin.endswith(".py") else None


def _compiled(source: str, prefix: str | None) -> bool:
    """Whether ``source`` has compiled bytecode in its ``__pycache__`` (``prefix`` None) or in
    the tree under ``prefix``."""
    before, sys.pycache_prefix = sys.pycache_prefix, prefix
    try:
        return os.path.exists(importlib.util.cache_from_source(source))
    finally:
        sys.pycache_prefix = before


def ships_bytecode(module: str) -> bool | None:
    """Whether ``module``'s own source has compiled bytecode beside it (in its ``__pycache__``);
    None where the module is not found or is not Python source."""
    source = _source(module)
    return None if source is None else _compiled(source, None)


def keep_bytecode(folder: str | None, module: str = "torch") -> str:
    """Read and write bytecode in ``folder`` from now on when ``module`` ships none, once every
    file in it matched its manifest (``check_kept``). What was done: ``kept`` (``folder`` in
    use, and it had ``module``'s bytecode from an earlier run), ``written`` (``folder`` in use,
    written while this process imports: it had none), ``rebuilt: WHY`` (it did not match its
    manifest, for WHY: removed, and written afresh), ``refused: WHY`` (it did not match and
    could not be removed: not used), ``installed`` (``module`` has its own bytecode), ``off``
    (no folder), ``absent`` (``module`` is not installed as source)."""
    if not folder:
        return "off"
    source = _source(module)
    if source is None:
        return "absent"
    if _compiled(source, None):
        return "installed"
    why = None
    if os.path.lexists(folder):
        why = check_kept(folder)
        if why is not None and (failed := _remove(folder)) is not None:
            return f"refused: {why}, and {folder} could not be removed ({failed})"
    had = why is None and _compiled(source, folder)
    with contextlib.suppress(OSError):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    sys.pycache_prefix = folder
    sys.dont_write_bytecode = False
    KEPT["folder"] = folder
    if why is not None:
        return f"rebuilt: {why}"
    return "kept" if had else "written"


def stop_writing_bytecode() -> None:
    """From now on kept bytecode is only read: what this process imports next (a checkout's
    modules, a test's) is not written into the folder. What was written is recorded in its
    manifest first (``write_manifest``)."""
    sys.dont_write_bytecode = True
    write_manifest()


def _bytecode(folder: str | None) -> None:
    BYTECODE["came"] = keep_bytecode(folder)
    BYTECODE["folder"] = KEPT["folder"]


def _build_utils(folder: str | None) -> None:
    """Start building Triton's driver utilities into ``folder`` (``driver_utils.py``), beside
    this process's imports, reading the kept bytecode (never writing it); not for the CPU
    (Triton's interpreter has no driver) nor on a machine whose GPU vendor its device nodes do
    not tell."""
    vendor = _load("driver_utils").vendor_of_machine()
    if folder is None or vendor is None or os.environ.get("TRITON_INTERPRET") == "1":
        return
    kept = BYTECODE["folder"]
    with contextlib.suppress(OSError):
        UTILS["proc"] = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-B",
                *(("-X", f"pycache_prefix={kept}") if kept else ()),
                os.path.join(_HERE, "driver_utils.py"),
                "--vendor",
                vendor,
            ],
            env={**os.environ, "TRITON_CACHE_DIR": folder},
            stdin=subprocess.DEVNULL,
        )
        UTILS["folder"] = folder


def _utils_built() -> str | None:
    """The folder of the driver utilities once their build ended well, else None."""
    proc = UTILS.get("proc")
    return UTILS["folder"] if proc is not None and proc.poll() == 0 else None


def _imports(key_dir: str | None) -> str:
    """What every worker imports first: Triton with its key (``triton_key.py``: taken from
    ``key_dir`` where it was made before), then torch, one after the other. Both are Python
    imports that hold the interpreter's lock most of the time: the key in a thread beside torch's
    import had both done 0.23 s later than Triton then torch on the H200, the quickest order
    (``bench/results/h200/cost_side_by_side/imports_in_turn``). A failure is the
    workers' to meet (each imports again). Says how the key came."""
    came = "not made"
    with contextlib.suppress(Exception):
        came = _load("triton_key").warm(key_dir)
    MARKS["key_at"] = time.monotonic()
    with contextlib.suppress(Exception):
        import torch  # noqa: F401
    MARKS["torch_at"] = time.monotonic()
    with contextlib.suppress(Exception):  # what a first launch imports, once for every fork
        _load("driver_utils").import_launch_modules()
    return came


def _enter(request: Any, utils: str | None) -> None:
    """In a forked child: its own session, log, environment and folder, and the driver
    utilities (``utils``, when built by now) in its Triton cache."""
    os.setsid()
    log = os.open(request.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    os.environ.clear()
    os.environ.update(request.env)
    os.chdir(request.cwd)
    cache = request.env.get("TRITON_CACHE_DIR")
    if utils and cache:
        _load("driver_utils").copy_into(utils, cache)


class _Exiting(Protocol):
    def end_now(self, code: int) -> NoReturn: ...


class _Program(Protocol):
    """What the zygote uses of ``main.py`` (loaded by path)."""

    exiting: _Exiting

    def main(self, argv: list[str] | None = None) -> int: ...


def _become(request: Any, fds: list[int], program: _Program, utils: str | None) -> NoReturn:
    """In the forked child: a worker running ``main.py`` on its two pipes (``ForkWorker``), or
    one of the bot's helper programs on its job file (``ForkJob``), as ``python -m MODULE JOB``
    would run it, with the request's ``sys_path`` first and its CPU priority lowered by
    ``nice``."""
    code = 1
    try:
        _enter(request, utils)
        if isinstance(request, CONTRACT.ForkJob):
            os.nice(request.nice)
            sys.path[:0] = list(request.sys_path)
            sys.argv = [request.module, request.job]
            code = 0
            runpy.run_module(request.module, run_name="__main__", alter_sys=True)
        else:
            cmd_fd, resp_fd = fds
            argv = ["--cmd-fd", str(cmd_fd), "--resp-fd", str(resp_fd), *request.argv]
            # the command line a worker started afresh has, which the measured code may read
            sys.argv = [os.path.join(_HERE, "main.py"), *argv]
            code = program.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    program.exiting.end_now(code)


def _fork(sock: socket.socket, request: Any, fds: list[int], program: Any) -> int:
    """The worker's pid: forked by a child of this process that exits at once."""
    utils = _utils_built()
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    middle = os.fork()
    if middle == 0:
        os.close(r)
        try:
            pid = os.fork()
        except OSError:
            os._exit(1)
        if pid == 0:
            os.close(w)
            sock.close()
            _wait_until_adopted()
            _become(request, fds, program, utils)
        os.write(w, str(pid).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 64):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(middle, 0)
    return int(b"".join(chunks) or b"0")


def serve(sock: socket.socket, program: Any) -> None:
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 2)
        except OSError:
            return
        if not data:  # the bot closed its end
            return
        try:
            request = CONTRACT.decode_fork(data)
            # a helper's job, or a worker's pipes
            wanted = 0 if isinstance(request, CONTRACT.ForkJob) else 2
            if len(fds) != wanted:
                raise ValueError(f"this request needs {wanted} descriptors, got {len(fds)}")
            pid = _fork(sock, request, fds, program)
            if pid <= 0:
                raise OSError("the process could not be forked")
            marks = CONTRACT.Marks(**MARKS)
            answer = CONTRACT.Forked(pid, marks, BYTECODE["came"])
        except Exception as exc:
            answer = CONTRACT.ForkRefused(f"{type(exc).__name__}: {exc}")
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        sock.send(CONTRACT.encode_fork(answer))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernel-review-zygote")
    parser.add_argument("--sock-fd", type=int, required=True)
    parser.add_argument("--memory-bytes", type=int, default=0, help="the workers' cap; 0: none")
    parser.add_argument("--triton-key-dir", help="where Triton's key is kept between runs")
    parser.add_argument("--utils-dir", help="where to build Triton's driver utilities once")
    parser.add_argument("--bytecode-dir", help="where to keep torch's bytecode if it ships none")
    args = parser.parse_args(argv)
    _cap(args.memory_bytes)
    _undumpable()
    CONFINED["lines"] = _own_cgroups()
    t0 = MARKS["main_at"] = time.monotonic()
    _bytecode(args.bytecode_dir)
    _build_utils(args.utils_dir)
    key = _imports(args.triton_key_dir)
    MARKS["imported_at"] = time.monotonic()
    program = _load("main")
    MARKS["program_at"] = time.monotonic()
    stop_writing_bytecode()  # before any checkout's code: nothing of it is kept
    print(
        f"imports done in {time.monotonic() - t0:.2f} s, at {time.monotonic():.3f} (monotonic); "
        f"Triton's key {key}; bytecode {BYTECODE['came']}"
    )
    sock = socket.socket(fileno=args.sock_fd)
    gc.freeze()  # what every fork inherits: never scanned (nor its pages copied) by a collection
    serve(sock, program)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
