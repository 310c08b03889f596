"""``kernel-review bench`` three times on one work folder: the first run compiles every Triton
kernel into empty caches, the next two find them there (one device call, about 35 s).

    python3 bench/cache_cold_warm.py

Uses the identical-head repository of ``bench/cli_decision.py`` at tolerance 3% and prints each
run's wall time, time to the first verdict, start-up steps and every case's phases: what a
Triton cache kept between runs would save (a sweep's caches live in its work folder, which a
run without ``--work-dir`` removes).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import cli_decision as cd  # noqa: E402


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="cache-cold-warm-"))
    repo = cd.build_repo(work / "repo", cd.SHAPES_GPU)
    head = cd.make_head(repo, "base-t3", "aa-t3", {}, "comment-only change")
    for name in ("cold", "warm", "warm2"):
        out = work / f"{name}.json"
        r = cd.run_cli(
            ["-m", "bot", "bench", "--repo", str(repo), "--base", "base-t3", "--head", head,
             "--out", str(out), "--work-dir", str(work / "wd")],
            timeout_s=150,
        )  # fmt: skip
        print(name, r["wall_s"], r["first_verdict_s"], r["stderr_tail"][-4:], flush=True)
        d = json.loads(out.read_text(encoding="utf-8"))
        print(" startup", d["startup_s"], d["wrapup_s"])
        for c in d["cases"]:
            print("  ", c["kernel"], c["shape"], c["verdict"], round(c["gpu_seconds"], 3),
                  c.get("phase_s"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
