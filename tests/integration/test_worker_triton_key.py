"""A GPU worker makes Triton's key (a hash of Triton's own files) in a thread while torch imports
and the GPU warms up, unless the checkout brings a triton of its own. Run in a fresh process,
as the worker runs, so the key is not already made."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.paths import ROOT

CODE = textwrap.dedent(
    """
    import importlib.util, os, sys
    spec = importlib.util.spec_from_file_location("worker_main", sys.argv[1])
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    checkout = sys.argv[2]
    imported = main.warm_triton_key([checkout])
    print("started", imported is not None and imported.wait(60))
    main.join_warm()
    from triton.runtime.cache import triton_key
    print("made", triton_key.cache_info().currsize)
    os.mkdir(os.path.join(checkout, "triton"))
    print("own triton", main.warm_triton_key([checkout]))
    """
)


def test_the_key_is_made_in_the_background_and_not_for_a_checkout_with_its_own_triton(
    tmp_path: Path,
) -> None:
    worker = ROOT / "checks" / "worker" / "main.py"
    out = subprocess.run(
        [sys.executable, "-I", "-c", CODE, str(worker), str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.split("\n")  # fmt: skip
    assert out[:3] == ["started True", "made 1", "own triton None"], out


def test_triton_s_driver_loads_in_a_thread_that_the_first_check_waits_for(monkeypatch) -> None:
    """The driver's first load (its C utilities built on a cold cache) runs beside the worker's
    start; a command that runs the checkout's code waits for it first. The driver here stands
    in for a GPU's: it takes 0.3 s."""
    import threading
    import time
    import types

    import triton.runtime

    from checks.worker import main

    seen: list[str] = []

    def load() -> None:
        time.sleep(0.3)
        seen.append(threading.current_thread().name)

    active = types.SimpleNamespace(get_current_target=load)
    monkeypatch.setattr(triton.runtime, "driver", types.SimpleNamespace(active=active))
    t0 = time.monotonic()
    main.load_triton_driver()
    assert time.monotonic() - t0 < 0.2 and seen == []  # the start goes on meanwhile
    worker = main.Worker(str(ROOT), "cpu", "base")
    # what every command that runs the checkout's code does first
    with pytest.raises(main.EntryError):
        worker._resolve(["no_such_module:entry"])
    assert seen == ["triton-driver"]  # loaded in its thread, and waited for
    assert time.monotonic() - t0 >= 0.3
