"""The bot's side of the early warm-up (``checks/worker/warmer.py``): one process per GPU that
brings the clock up while the workers start, so their own warm-up finds it up and burns nothing.

``Warmer.start`` launches them (``kernel-review bench`` first thing, beside the zygote). Each
copies for ``BURN_S`` and ends, long before the workers make their GPU contexts: on the H200 the
clock held at 85% of its maximum 0.30 s into the load from idle and stayed up through 8 s of
idle (bench/results/h200/clock_ramp), and contexts made while another process kept the GPU
busy took longer (bench/results/h200/start_diag/contexts.md). ``stop(gpu)`` ends a GPU's warmer
if it still runs and says whether it burnt: only then may the workers skip their own burn, and
only where they read the clock up. A warmer that cannot burn (no CUDA driver library: another
vendor's GPU, or none) ends at once, and the workers warm the GPU themselves as without it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from checks.procs import launch
from checks.worker_env import device_env

WARMER_MAIN = Path(__file__).resolve().parent.parent / "worker" / "warmer.py"
BURN_S = 0.6  # how long it copies, then ends by itself, whatever happens to the bot


class Warmer:
    def __init__(self, procs: dict[str | None, tuple[subprocess.Popen[bytes], Path]]) -> None:
        self._procs = procs

    @classmethod
    def start(
        cls,
        gpus: Sequence[str | None],
        work_dir: Path,
        *,
        python: str = sys.executable,
        max_s: float = BURN_S,
    ) -> Warmer:
        """One warmer per GPU (``None``: the first visible one); a GPU whose warmer cannot be
        launched has none."""
        logs = work_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        procs: dict[str | None, tuple[subprocess.Popen[bytes], Path]] = {}
        for gpu in dict.fromkeys(gpus):
            log_path = logs / f"warmer-gpu{gpu if gpu is not None else ''}.log"
            try:
                with open(log_path, "wb") as log:
                    proc = subprocess.Popen(
                        [python, "-I", "-B", "-u", str(WARMER_MAIN), "--max-s", str(max_s)],
                        stdin=subprocess.PIPE,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=device_env("cuda", gpu),
                        cwd=str(work_dir),
                        start_new_session=True,
                    )
            except OSError:
                continue
            procs[gpu] = (proc, log_path)
        return cls(procs)

    def stop(self, gpu: str | None) -> bool:
        """End ``gpu``'s warmer if it still runs; whether it burnt (then the clock should be up,
        which the workers read before they skip their own burn)."""
        got = self._procs.pop(gpu, None)  # one runner thread per GPU: each pops its own
        if got is None:
            return False
        proc, log_path = got
        launch.stop(proc, wait=False)
        if proc.stdin is not None:  # its end of the pipe that would stop it, had the bot died
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            said = log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            said = ""
        return "burning" in said.splitlines()

    def close(self) -> None:
        """End every warmer still running."""
        for gpu in list(self._procs):
            self.stop(gpu)


def start_warmer(device: str, gpus: Sequence[str | None], work_dir: Path) -> Warmer | None:
    """The warmers of a sweep on ``gpus``, started now; None on the CPU."""
    return None if device == "cpu" else Warmer.start(gpus, work_dir)
