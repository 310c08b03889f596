"""The helper programs' side of a job: the answer, or what went wrong, lands where the job
file says, as the typed answer file (``checks.job_files``)."""

from __future__ import annotations

from pathlib import Path

from checks import job_files
from checks.job_child import main, short_error
from checks.job_files import JobFailure, Profiled, ProfileRun

JOB = ProfileRun(repo_root="/r", bench="m:f", shape=(4,), dtype="float32", region="cuda")


def _job(tmp_path: Path, job: ProfileRun = JOB) -> Path:
    path = tmp_path / "job.json"
    path.write_text(job_files.job_text(job, str(tmp_path / "out.json")))
    return path


def _answer(tmp_path: Path) -> Profiled | JobFailure:
    return job_files.read_answer(ProfileRun, (tmp_path / "out.json").read_text())


def test_the_answer_is_written_where_the_job_says(tmp_path: Path) -> None:
    seen: list[ProfileRun] = []
    assert main([str(_job(tmp_path))], ProfileRun, lambda job: seen.append(job) or Profiled()) == 0
    assert seen == [JOB]
    assert _answer(tmp_path) == Profiled()


def test_an_error_becomes_a_failure_with_its_traceback(tmp_path: Path) -> None:
    def run(job: ProfileRun) -> Profiled:
        raise ValueError("first\n\nsecond\nthird\nfourth")

    assert main([str(_job(tmp_path))], ProfileRun, run) == 0
    out = _answer(tmp_path)
    assert isinstance(out, JobFailure)
    assert out.fatal == "ValueError: first | second | third"
    assert out.traceback and "Traceback" in out.traceback and "raise ValueError" in out.traceback
    assert (
        short_error(ValueError("x" * 900), lines=1, limit=300) == ("ValueError: " + "x" * 900)[:300]
    )


def test_a_job_file_or_an_answer_that_does_not_fit_becomes_a_failure_that_says_why(
    tmp_path: Path,
) -> None:
    """A job file for another helper is refused before the job runs; an answer of the wrong
    class is refused before it is written."""
    ran: list[ProfileRun] = []
    assert main([str(_job(tmp_path))], job_files.FirstCallProbe, ran.append) == 0
    out = _answer(tmp_path)
    assert not ran and isinstance(out, JobFailure)
    assert out.fatal == (
        "ContractError: the job file is for 'checks.compiler.profile.driver', "
        "not for checks.first_call.probe"
    )
    assert main([str(_job(tmp_path))], ProfileRun, lambda job: {"ok": True}) == 0
    out = _answer(tmp_path)
    assert isinstance(out, JobFailure)
    assert out.fatal == (
        "ContractError: the answer of checks.compiler.profile.driver: expected a Profiled, got dict"
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
            from checks.job_files import Profiled, ProfileRun

            def run(job):
                atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("ran"))
                sys.stdout.write("said before the answer")
                return Profiled()

            run_and_exit(sys.argv[1:], ProfileRun, run)
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
    assert _answer(tmp_path) == Profiled()
    assert done.stdout == "said before the answer"
    assert not marker.exists()
