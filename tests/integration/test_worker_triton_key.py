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


UTILS = textwrap.dedent(
    """
    import importlib.util, json, os, sys
    import torch
    torch.version.cuda = sys.argv[2] or None  # the vendor the worker reads; no GPU is touched
    spec = importlib.util.spec_from_file_location("worker_main", sys.argv[1])
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    main.build_driver_utils_ahead().join(120)
    built = sorted(
        f for _, _, files in os.walk(os.environ["TRITON_CACHE_DIR"]) for f in files
        if f.startswith("cuda_utils")
    )
    print(json.dumps(built))
    """
)


@pytest.mark.slow
def test_triton_s_driver_utilities_are_built_from_the_worker_s_start(tmp_path: Path) -> None:
    """On a CUDA build of torch, the worker builds Triton's driver utilities (C, with the system's
    compiler) into its own Triton cache in a thread from its start, before any GPU is asked
    for. The CUDA driver library here is a stand-in with no functions: the build links against
    it, and loading the result fails, which the thread keeps to itself; on a CPU build nothing
    is built."""
    import json
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("needs a C compiler")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "stub.c").write_text("int kernel_review_stub(void) { return 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(lib / "libcuda.so.1"), str(lib / "stub.c")],
        check=True,
    )
    worker = ROOT / "checks" / "worker" / "main.py"
    for cuda, want in (("13.0", True), ("", False)):
        cache = tmp_path / f"cache-{cuda or 'cpu'}"
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TRITON_CACHE_DIR": str(cache),
            "TRITON_LIBCUDA_PATH": str(lib),
        }
        out = subprocess.run(
            [sys.executable, "-c", UTILS, str(worker), cuda],
            capture_output=True, text=True, timeout=180, check=True, env=env,
        ).stdout  # fmt: skip
        built = json.loads(out.strip().splitlines()[-1])
        assert bool(built) is want, (cuda, out)
        if want:
            assert all(name.startswith("cuda_utils") and name.endswith(".so") for name in built)


def test_the_driver_waits_for_the_utilities_thread(monkeypatch) -> None:
    """``load_triton_driver``'s thread loads the driver only after the utilities' build, so the
    two never build the same C side by side."""
    import threading
    import time
    import types

    import triton.runtime

    from checks.worker import main

    seen: list[str] = []

    def build() -> None:
        time.sleep(0.3)
        seen.append("utilities")

    utils = threading.Thread(target=build)
    utils.start()
    monkeypatch.setattr(main, "_UTILS", [utils])
    active = types.SimpleNamespace(get_current_target=lambda: seen.append("driver"))
    monkeypatch.setattr(triton.runtime, "driver", types.SimpleNamespace(active=active))
    main.load_triton_driver()
    main.join_driver()
    assert seen == ["utilities", "driver"]
