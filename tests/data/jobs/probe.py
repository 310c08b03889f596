"""A stand-in helper program for checks.job_process: echo the environment, the memory cap, the
CPU priority and whether torch was imported before it ran (a process forked from the zygote),
the cgroups it was in when its first line ran, whether it could write a file, sleep, or die."""

with open("/proc/self/cgroup") as f:  # before anything else of it runs
    CGROUPS_AT_START = f.read()

import json
import os
import resource
import subprocess
import sys
import time

with open(sys.argv[1]) as f:
    job = json.load(f)
if job["do"] == "sleep":
    # a grandchild that would outlive a plain kill of the child
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(60)
elif job["do"] == "die":
    print("boom", file=sys.stderr)
    sys.exit(3)
wrote = False
if job["do"] == "write":
    try:
        with open(job["path"], "w") as f:
            f.write("a record a later run would trust\n")
        wrote = True
    except OSError:
        pass
with open(job["out"], "w") as f:
    json.dump(
        {
            "env": dict(os.environ),
            "data_limit": resource.getrlimit(resource.RLIMIT_DATA),
            "nice": os.nice(0),
            "torch_imported": "torch" in sys.modules,
            "cwd": os.getcwd(),
            "wrote": wrote,
            "cgroups_at_start": CGROUPS_AT_START,
        },
        f,
    )
