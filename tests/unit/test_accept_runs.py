"""The bound of a ``/bench accept``, derived again from the run it names: which workflow file a
job runs in, what a results artifact must hold, and the bound taken from what was measured,
never above what the record says."""

from __future__ import annotations

import io
import zipfile

import pytest

from bot.contracts.accept import Acceptance, AcceptRecord, MeasuredRatio
from bot.jobs.accept_runs import _bounded, _unzip, workflow_path
from bot.jobs.report import MAX_RESULTS_FILES
from bot.policy.load import parse_policy

POLICY = parse_policy(
    '[deployment]\nkind = "long-lived"\n\n[[kernels]]\nname = "softmax"\n'
    'bench = "toyops.bench:softmax"\npaths = ["toyops/softmax.py"]\n'
    'dtypes = ["float16"]\nshapes = [[4096, 4096]]\ntolerance = 0.05\n'
)
CASE = ("softmax", "nvidia", "float16", (4096, 4096))


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_the_workflow_file_comes_from_the_workflow_ref_of_this_repository_only() -> None:
    ref = "octo/kernels/.github/workflows/kernel-review.yml@refs/heads/main"
    assert workflow_path(ref, "octo/kernels") == ".github/workflows/kernel-review.yml"
    assert workflow_path(ref, "octo/kern") is None  # another repository's, or a prefix of it
    assert workflow_path("mallory/kernels/.github/workflows/x.yml@refs/heads/main", "octo/kernels") is None  # fmt: skip
    assert workflow_path(None, "octo/kernels") is None
    assert workflow_path("octo/kernels/@refs/heads/main", "octo/kernels") is None


def _corrupted(archive: bytes) -> bytes:
    """``archive`` with bytes of its first member's compressed data flipped."""
    info = zipfile.ZipFile(io.BytesIO(archive)).infolist()[0]
    data = bytearray(archive)
    start = info.header_offset + 30 + len(info.filename) + 5
    data[start : start + 8] = bytes(b ^ 0xA5 for b in data[start : start + 8])
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"PK\x03\x04 not a zip", "is not a results artifact"),
        (_zip({"measured/results-nvidia-1of1.json": b"{}"}), "has no gate.json"),
        (_zip({"gate.json": b'{"not": "a decision"}'}), "is not a results artifact"),
        (_zip({f"f{i}.json": b"{}" for i in range(MAX_RESULTS_FILES + 9)}), "holds 73 files"),
        (_corrupted(_zip({"gate.json": bytes(range(256)) * 16})), "is not a results artifact"),
    ],
    ids=["not-a-zip", "no-gate", "gate-not-a-decision", "too-many-files", "corrupted-member"],
)
def test_an_artifact_that_is_not_a_results_artifact_is_refused_with_why(data, why) -> None:
    got = _unzip(data)
    assert isinstance(got, str) and why in got


def _record(claims: float) -> AcceptRecord:
    kernel, vendor, dtype, shape = CASE
    accepted = Acceptance(
        kernel=kernel, shapes=(shape,), dtype=dtype, vendor=vendor, max_ratio=claims, by="@boss",
        reason="worth it", source="comment", head_sha="a" * 40, measured=1.08,
    )  # fmt: skip
    return AcceptRecord(actor="boss", comment_id=7, run_id=601, acceptances=(accepted,))


def test_the_bound_is_what_the_run_measured_and_never_more_than_the_record_says() -> None:
    kernel, vendor, dtype, shape = CASE
    run = {CASE: MeasuredRatio(kernel=kernel, vendor=vendor, dtype=dtype, shape=shape, ratio=1.08, ci_high=1.09)}  # fmt: skip
    got = _bounded(_record(3.0), run, 601, POLICY)
    assert not isinstance(got, str)
    [acc], [overstated] = got
    assert acc.max_ratio == pytest.approx(1.09) and acc.measured == 1.08 and acc.run_id == 601
    assert "claims up to 3x" in overstated and "run 601 measured 1.08x" in overstated
    modest = _bounded(_record(1.05), run, 601, POLICY)
    assert not isinstance(modest, str)
    assert modest[0][0].max_ratio == 1.05 and modest[1] == []
    missing = _bounded(_record(1.09), {}, 601, POLICY)
    assert missing == "run 601 measured no slowdown of softmax 4096x4096 float16 on nvidia"
