"""Where a forked worker's first GPU time goes: children forked after ``import torch`` and
Triton, as the zygote forks workers, one alone, two and four at once, each timing
``torch.cuda.init``, its GPU context (its first allocation) and the first operations a check
runs (each first call loads that operation's GPU code), in seconds; then two and four at once
while another process keeps the GPU busy with copies (the sweep's early warm-up,
``checks/worker/warmer.py``). Prints JSON lines.

    python3 bench/context_probe.py > contexts.jsonl

Recorded: bench/results/h200/start_diag/contexts.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

T_IMPORT = time.monotonic()
import torch  # noqa: E402
import triton  # noqa: E402, F401

IMPORT_S = time.monotonic() - T_IMPORT
N = 1 << 20


def _steps(g: torch.Generator) -> list[tuple[str, Callable[[], object]]]:
    box: dict[str, torch.Tensor] = {}

    def randn() -> object:
        box["a"] = torch.randn((N,), generator=g, device="cuda")
        return box["a"]

    return [
        ("randn", randn),
        ("to_bf16", lambda: box["a"].to(torch.bfloat16)),
        ("float_math", lambda: 2.0 * box["a"].float() + box["a"].float()),
        ("sum", lambda: box["a"].sum()),
        ("isfinite_item", lambda: torch.isfinite(box["a"]).all().item()),
        ("gather_cpu", lambda: box["a"][torch.tensor([1, 5, 9], device="cuda")].double().cpu()),
        ("randn_again", randn),
    ]


def child(k: int, t_fork: float, wfd: int) -> None:
    m: dict[str, object] = {"fork_to_child": time.monotonic() - t_fork}
    t = time.monotonic()

    def mark(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        m[name] = round(now - t, 4)
        t = now

    torch.cuda.init()
    mark("cuda_init")
    m["ctx_after_init"] = bool(torch._C._cuda_hasPrimaryContext(0))
    torch.cuda.get_device_properties(0)
    mark("props")
    m["ctx_after_props"] = bool(torch._C._cuda_hasPrimaryContext(0))
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    mark("first_empty_ctx")
    g = torch.Generator(device="cuda").manual_seed(1)
    mark("generator")
    for name, step in _steps(g):
        step()
        torch.cuda.synchronize()
        mark(name)
    m["total"] = round(time.monotonic() - t_fork, 4)
    os.write(wfd, (json.dumps({"k": k, **m}) + "\n").encode())
    os._exit(0)


def trial(n: int, label: str) -> None:
    r, w = os.pipe()
    t_fork = time.monotonic()
    pids = []
    for k in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(k, t_fork, w)
        pids.append(pid)
    os.close(w)
    for p in pids:
        os.waitpid(p, 0)
    out = os.read(r, 1 << 16).decode()
    os.close(r)
    for line in out.splitlines():
        print(json.dumps({"trial": label, "n": n, **json.loads(line)}))


WARMER = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "checks", "worker", "warmer.py"
)


def burning(n: int, label: str) -> None:
    """``trial`` while the warm-up program copies on the GPU."""
    warmer = subprocess.Popen(
        [sys.executable, "-I", "-B", "-u", WARMER, "--max-s", "30"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert warmer.stdout is not None and warmer.stdin is not None
    line = warmer.stdout.readline().strip()
    time.sleep(0.3)
    if line == "burning":
        trial(n, label)
    warmer.stdin.close()
    warmer.wait()


def main() -> None:
    print(json.dumps({"import_torch_triton_s": round(IMPORT_S, 3)}))
    for n, label in ((1, "alone"), (4, "four"), (2, "two"), (1, "alone2"), (4, "four2")):
        trial(n, label)
    for n, label in ((2, "two_burning"), (4, "four_burning"), (2, "two2")):
        (burning if "burning" in label else trial)(n, label)


if __name__ == "__main__":
    main()
