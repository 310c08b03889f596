"""The comment's charts parsed by mermaid's own parser (``mermaid.parse`` under node, with jsdom
for the DOM its sanitiser needs), as GitHub's renderer reads them: every chart in the golden
comments, charts of awkward names, wild ratios and many shapes, and the scheduled job summary's
trend charts (a recorded history, and times past a million microseconds).

mermaid and jsdom install from npm at the versions tests/mermaid/package.json pins, once per
machine, beside the workflow lint's tools (``KERNEL_REVIEW_LINT_TOOLS``, else a folder under the
temporary directory); about 15 s the first time, 2 to 3 s a run after that. Without node and npm,
or without the npm registry, the test is skipped with a line saying which.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from bot.contracts.evidence import ShapeLine
from bot.jobs.scheduled import read_history
from bot.review import chart
from bot.review.trend import trend_summary
from tests.golden_util import GOLDEN
from tests.paths import DATA, ROOT
from tests.unit.test_trend import slow_history

PACKAGE = ROOT / "tests" / "mermaid"
_BLOCK = re.compile(r"```mermaid\n(.*?)```", re.DOTALL)


def _tools() -> Path:
    base = os.environ.get("KERNEL_REVIEW_LINT_TOOLS")
    return Path(base) if base else Path(tempfile.gettempdir()) / "kernel-review-lint-tools"


def _parser() -> Path:
    """A folder holding parse.mjs beside node_modules with mermaid and jsdom as pinned."""
    pins = (PACKAGE / "package.json").read_bytes()
    home = _tools() / f"mermaid-{hashlib.sha256(pins).hexdigest()[:12]}"
    if not (home / "node_modules" / "mermaid").is_dir():
        if shutil.which("node") is None or shutil.which("npm") is None:
            pytest.skip("node and npm are needed to run mermaid's parser; neither is on PATH")
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=home.parent, prefix="mermaid-install-"))
        shutil.copy(PACKAGE / "package.json", staging / "package.json")
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(staging)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.skip(f"mermaid could not be installed from npm: {done.stderr.strip()[-300:]}")
        try:
            staging.rename(home)
        except OSError:  # another run installed it first
            shutil.rmtree(staging, ignore_errors=True)
    shutil.copy(PACKAGE / "parse.mjs", home / "parse.mjs")
    return home


def _parse(sources: list[str]) -> list[dict]:
    home = _parser()
    done = subprocess.run(
        ["node", str(home / "parse.mjs")],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _shape(shape: tuple[int, ...], ratio: float, **kw) -> ShapeLine:
    kw.setdefault("tolerance", 0.05)
    kw.setdefault("dtype", "bfloat16")
    return ShapeLine(kernel="k", shape=shape, verdict="SAME", ratio=ratio, **kw)


def _awkward() -> list[str]:
    """Charts whose inputs could break the syntax: quotes, brackets and arrows in names, ratios
    far past the cut, one shape, more shapes than a chart draws, no band, no price."""
    cases = [
        ('soft"max [1] --> x', 'GPU "A" [x]\n%% y', [_shape((1,), 40.0), _shape((2,), 1e-4)], 0.06),
        ("vector_add", "NVIDIA H200", [_shape((7,), 1.0, dtype='f"16 ]')], None),
        (
            "matmul",
            "AMD Instinct MI300X",
            [_shape((i + 1, 3), 1.0 + 0.01 * i) for i in range(chart.LIMIT + 10)],
            0.08,
        ),
        ("k", "H200", [_shape((1,), 1.1, tolerance=0.03), _shape((2,), 0.9)], None),
    ]
    return [
        "\n".join(chart.mermaid(kernel, where, shapes, price)[1:-1])
        for kernel, where, shapes, price in cases
    ]


def test_every_chart_the_review_draws_parses_as_an_xychart_and_a_broken_one_does_not() -> None:
    golden = [
        block
        for path in sorted(GOLDEN.glob("*.md"))
        for block in _BLOCK.findall(path.read_text(encoding="utf-8"))
    ]
    assert len(golden) >= 10  # the goldens with results draw a chart per kernel and vendor
    # the scheduled job summary's trend charts: the recorded history's, and times past 10^6 µs
    history = read_history((DATA / "history" / "history.jsonl").read_text(encoding="utf-8"))
    trends = [
        block
        for records in (history, slow_history())
        for block in _BLOCK.findall(trend_summary(records, commit_url=str, tolerance=0.03))
    ]
    assert len(trends) >= 3
    sources = golden + _awkward() + trends
    # the check can fail: a range arrow mermaid does not know, and an unclosed label (one node
    # process for all: its start is most of the time)
    good = "\n".join(chart.mermaid("k", "H200", [_shape((1,), 1.0)], None)[1:-1])
    broken = [good.replace("-->", "->"), good.replace('x-axis ["1 bf16"]', 'x-axis ["1 bf16]')]
    *results, first_broken, second_broken = _parse([*sources, *broken])
    bad = [(s, r) for s, r in zip(sources, results, strict=True) if not r["ok"]]
    assert not bad, bad
    assert {r["type"] for r in results} == {"xychart"}
    assert not first_broken["ok"] and not second_broken["ok"]
