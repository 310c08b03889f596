"""Code run under the Triton interpreter (``TRITON_INTERPRET=1``) in a fresh process, as
``python -c`` would run it, without importing torch and Triton again for each piece of code.

``Interpreter`` starts one process that imports torch and Triton under the interpreter, patches
it (``kernels_fixture.interpreter_compat``) and does nothing else (no tensor is made there, so
no thread is started); each ``run`` forks a child of it for the code, with its own folder, import
path and environment variables. The child is as fresh as a ``python -c`` with that prelude, less
the 2 CPU-s of the imports. A test module holds one in a module-scoped fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.paths import ROOT

_FORK_SERVER = r"""
import json, os, signal, sys, traceback
import kernels_fixture.interpreter_compat as _compat
_compat.apply()
import torch, triton  # what every piece of code imports
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.chdir(request["cwd"])
        sys.path[1:1] = request["path"]  # after '' (the folder), as PYTHONPATH puts them
        os.environ.update(request["env"])
        signal.alarm(request["timeout"])  # its default action ends the child past the limit
        try:
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


@dataclass(frozen=True)
class Ran:
    returncode: int  # negative: the signal that ended it (-14: past its time limit)
    stdout: str
    stderr: str


class Interpreter:
    def __init__(self, tmp: Path) -> None:
        env = {
            k: v for k, v in os.environ.items() if k not in ("TOYOPS_SOFTMAX_IMPL", "PYTHONPATH")
        }
        env.update(TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
        self.tmp, self.runs = tmp, 0
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _FORK_SERVER],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self, code: str, *, cwd: Path = ROOT, path: tuple[Path, ...] = (), timeout: int = 180,
        **env: str,
    ) -> Ran:  # fmt: skip
        """``code`` (dedented) in a child started in ``cwd`` with ``path`` before ``ROOT`` on
        its import path (and in its ``PYTHONPATH``) and ``env`` set."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.runs += 1
        out, err = self.tmp / f"{self.runs}.out", self.tmp / f"{self.runs}.err"
        env = {**env, "PYTHONPATH": os.pathsep.join([*map(str, path), str(ROOT)])}
        request = {
            "code": textwrap.dedent(code), "stdout": str(out), "stderr": str(err),
            "cwd": str(cwd), "path": [str(p) for p in path], "env": env, "timeout": timeout,
        }  # fmt: skip
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        status = self.proc.stdout.readline().strip()
        assert status, f"the interpreter's process ended (exit {self.proc.wait()})"
        return Ran(int(status), out.read_text(), err.read_text())

    def output(self, code: str, **how: object) -> str:
        """``run``'s stdout; a failure with both outputs where the code did not exit 0."""
        ran = self.run(code, **how)  # type: ignore[arg-type]
        assert ran.returncode == 0, f"exit {ran.returncode}\nstdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"  # fmt: skip
        return ran.stdout

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
