"""A kernel that writes its input in place (a fused cross entropy's backward writes the gradient
into the logits: tests/data/inplace/cross_entropy.py.txt, excerpted from unsloth, Apache 2.0)
is checked and rechecked in a real worker under the Triton interpreter: every call of the kernel
and of the reference gets the inputs the entry point made, so neither sees the other's writes."""

from __future__ import annotations

from pathlib import Path

from checks.sweep.workers import Timeouts, WorkerClient, WorkerSpec
from tests.paths import ROOT

KERNEL = ROOT / "tests" / "data" / "inplace" / "cross_entropy.py.txt"

ENTRY = """\
import torch

from ce import cross_entropy_backward


def ce_backward(shape, dtype, *, device="cpu", seed=0):
    rows, vocab = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=gen, device=device)
    labels = torch.randint(0, vocab, (rows,), generator=gen, device=device)
    logsumexp = torch.logsumexp(logits, -1)
    dlosses = torch.ones(rows, device=device)

    def reference():
        grad = torch.softmax(logits, -1)
        grad[torch.arange(rows), labels] -= 1.0
        return grad

    return {
        "fn": lambda: cross_entropy_backward(logits, dlosses, logsumexp, labels),
        "reference": reference,
        "inputs": [logits, dlosses, logsumexp, labels],
    }
"""


def test_an_in_place_kernel_is_checked_and_rechecked_on_the_inputs_its_reference_sees(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ce.py").write_text(KERNEL.read_text())
    (repo / "entries.py").write_text(ENTRY)
    client = WorkerClient(
        WorkerSpec(
            side="head",
            root=repo,
            device="cpu",  # TRITON_INTERPRET=1
            work_dir=tmp_path / "work",
            timeouts=Timeouts(start_s=60, prepare_s=120, check_s=120),
        )
    )
    client.start()
    try:
        entry = ["entries:ce_backward"]
        checked = client.check(entry, (3, 700), "float32", seed=1)
        assert checked.correct, checked
        prepared = client.prepare(entry, (3, 700), "float32", seed=1)
        assert prepared.est_us > 0  # the kernel ran again and again on its own writes
        finished = client.finish(recheck=True)
        assert finished.rechecked and finished.correct, finished
    finally:
        client.close()
