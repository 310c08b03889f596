"""How long the analysis takes on large and hostile input: a generated 5,000-file diff, and the
hostile single files of tests/unit/test_detect.py (which only checks that each scan ends).

    python bench/analysis_scale.py > bench/results/cpu/analysis_scale.txt
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.analysis.classify import analyze_diff  # noqa: E402
from bot.analysis.scan import scan_source  # noqa: E402
from tests.integration.test_classify import generated_diff  # noqa: E402
from tests.unit.test_detect import HOSTILE_SOURCES  # noqa: E402


def main() -> None:
    print(
        f"# {platform.node()} ({platform.processor() or platform.machine()}), Python {platform.python_version()}"
    )
    text = generated_diff(5000)
    start = time.perf_counter()
    analysis = analyze_diff(text)
    elapsed = time.perf_counter() - start
    print(
        f"5,000-file diff ({len(text) / 2**20:.1f} MiB): {len(analysis.changes)} changes, "
        f"{elapsed:.2f} s"
    )
    for path, source in HOSTILE_SOURCES.items():
        start = time.perf_counter()
        scan_source(path, source)
        print(f"hostile {path} ({len(source) / 1024:.0f} KiB): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
