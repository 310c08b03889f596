"""The flags the GPU session's scripts pass (bench/device_flags.py) are flags the commands take:
a device call is rare, and one lost to a flag cut from the command line is lost."""

from __future__ import annotations

import sys

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import device_flags


def test_every_flag_the_session_passes_is_on_the_command_line() -> None:
    assert device_flags.missing() == []


def test_a_flag_or_an_engine_option_that_is_gone_is_named_with_who_passes_it() -> None:
    used = {
        "bench": {
            "--out": "a.py",
            "--max-round": "b.py",  # a misspelt flag is not taken for a prefix of one
            "--engine-option work_dir": "c.py",
            "--engine-option rounds": "d.py",
        },
        "policy": {},
    }
    assert device_flags.missing(used) == [
        "kernel-review bench --max-round: gone; passed by b.py",
        "kernel-review bench --engine-option rounds: gone; passed by d.py",
    ]
