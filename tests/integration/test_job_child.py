"""The helper programs' side of a job: the answer, or what went wrong, lands in the job's out."""

from __future__ import annotations

import json
from pathlib import Path

from checks.job_child import main, short_error


def _job(tmp_path: Path) -> Path:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"x": 2, "out": str(tmp_path / "out.json")}))
    return path


def test_the_answer_is_written_to_out(tmp_path: Path) -> None:
    assert main([str(_job(tmp_path))], lambda job: {"twice": job["x"] * 2}) == 0
    assert json.loads((tmp_path / "out.json").read_text()) == {"twice": 4}


def test_an_error_becomes_a_fatal_answer_with_its_traceback(tmp_path: Path) -> None:
    def run(job: dict) -> dict:
        raise ValueError("first\n\nsecond\nthird\nfourth")

    assert main([str(_job(tmp_path))], run) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["fatal"] == "ValueError: first | second | third"
    assert "Traceback" in out["traceback"] and "raise ValueError" in out["traceback"]
    assert (
        short_error(ValueError("x" * 900), lines=1, limit=300) == ("ValueError: " + "x" * 900)[:300]
    )


def test_a_helper_program_ends_once_its_answer_is_written(tmp_path: Path) -> None:
    """``run_and_exit`` writes the answer, flushes what the job printed and ends the process
    there: no interpreter teardown, so no ``atexit`` handler runs (the measured code's either)."""
    import subprocess
    import sys
    import textwrap

    from tests.paths import ROOT

    marker = tmp_path / "atexit-ran"
    program = tmp_path / "helper.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import atexit, pathlib, sys
            from checks.job_child import run_and_exit

            def run(job):
                atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("ran"))
                sys.stdout.write("said before the answer")
                return {{"twice": job["x"] * 2}}

            run_and_exit(sys.argv[1:], run)
            print("never reached")
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(program), str(_job(tmp_path))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == {"twice": 4}
    assert done.stdout == "said before the answer"
    assert not marker.exists()
