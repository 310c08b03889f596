"""A stand-in helper program for checks.job_process, with a typed job (``Probe``) and answer
(``Seen``) of its own: echo the environment, the memory cap, the CPU priority and whether torch
was imported before it ran (a process forked from the zygote), the cgroups it was in when its
first line ran, whether it could write a file; or sleep, or die, or answer what its answer's
class does not allow."""

with open("/proc/self/cgroup") as f:  # before anything else of it runs
    CGROUPS_AT_START = f.read()

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from checks import job_files
from checks.job_files import Job


@dataclass(frozen=True)
class Seen:
    env: dict[str, str]
    data_limit: tuple[int, int]
    nice: int
    torch_imported: bool
    cwd: str
    wrote: bool
    cgroups_at_start: str


@dataclass(frozen=True)
class Probe(Job[Seen]):
    MODULE, ANSWER = "tests.data.jobs.probe", Seen
    do: Literal["env", "sleep", "die", "write", "misanswer"]
    path: str | None = None  # what "write" writes


def main(argv: list[str]) -> None:
    text = Path(argv[0]).read_text()
    job = job_files.read_job(Probe, text)
    if job.do == "sleep":
        # a grandchild that would outlive a plain kill of the child
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(60)
    elif job.do == "die":
        print("boom", file=sys.stderr)
        sys.exit(3)
    elif job.do == "misanswer":  # an answer file whose answer lacks its fields
        Path(job_files.answer_path(text)).write_text('{"version": 1, "answer": {"nice": 0}}')
        return
    wrote = False
    if job.do == "write" and job.path:
        try:
            Path(job.path).write_text("a record a later run would trust\n")
            wrote = True
        except OSError:
            pass
    limit = resource.getrlimit(resource.RLIMIT_DATA)
    seen = Seen(
        env=dict(os.environ),
        data_limit=(limit[0], limit[1]),
        nice=os.nice(0),
        torch_imported="torch" in sys.modules,
        cwd=os.getcwd(),
        wrote=wrote,
        cgroups_at_start=CGROUPS_AT_START,
    )
    Path(job_files.answer_path(text)).write_text(job_files.answer_text(Probe, seen))


if __name__ == "__main__":
    main(sys.argv[1:])
