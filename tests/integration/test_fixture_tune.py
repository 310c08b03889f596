"""bench/fixture_gpu_check.py --tune (bench/fixture_tune.py) off the GPU: the config list it
sweeps, that its ahead-of-time compiles are the very kernels its sweep launches (so the sweep
finds them in the Triton cache), the plan of workers, and the summary of what it measured."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import fixture_gpu_check
import fixture_tune


def _run(code: str) -> str:
    """Run ``code`` in a fresh Python with the fixture's ``toyops`` importable (it stays out of
    this process, where other tests import other packages of that name)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TOYOPS_SOFTMAX_IMPL")
    }
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "kernels_fixture"), str(ROOT / "bench"), str(ROOT)]
    )
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


class _Config:
    def __init__(self, m: int, n: int, k: int, warps: int, stages: int) -> None:
        self.kwargs = {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8}
        self.num_warps, self.num_stages = warps, stages


def test_matmul_candidates_cover_hopper_tiles_and_the_shipped_list_once() -> None:
    shipped = [_Config(128, 256, 64, 8, 3), _Config(48, 48, 64, 4, 2)]
    configs = fixture_tune.matmul_configs(shipped)
    labels = [c["label"] for c in configs]
    assert len(labels) == len(set(labels))
    for wanted in (
        "128x256x64 w8 s3 g8",
        "256x128x64 w8 s3 g8",
        "128x128x64 w4 s4 g8",
        "128x128x128 w8 s3 g8",
        "64x256x64 w4 s4 g8",
        "128x64x64 w4 s4 g8",
        "64x64x64 w4 s4 g8",
        "64x128x64 w4 s3 g8",
    ):
        assert wanted in labels
    by_label = {c["label"]: c for c in configs}
    # A shipped config already among the candidates is marked, one that is not is added.
    assert by_label["128x256x64 w8 s3 g8"].get("shipped") is True
    assert by_label["48x48x64 w4 s2 g8"]["kwargs"]["BLOCK_SIZE_M"] == 48
    assert by_label["48x48x64 w4 s2 g8"].get("shipped") is True
    assert not by_label["256x128x64 w8 s4 g8"].get("shipped")


def test_precompiled_kernels_are_the_ones_the_sweep_launches() -> None:
    # Both paths go through the JIT under a compile-only sm_90 driver: what it records is the
    # cache key's ingredients (signature, constants, divisibility, options).
    out = _run(
        """
        import importlib
        import fixture_tune as ft
        from checks.compiler.triton_compat import compile_only

        ft.DEVICE = "cpu"
        mm = importlib.import_module("toyops.matmul")
        sm = importlib.import_module("toyops.softmax")
        configs = ft.matmul_configs(mm.autotune_configs("cuda"))
        emit = lambda record: None
        key = lambda r: (r.signature, r.constexprs, r.attrs, r.options)
        with compile_only("sm_90") as rec:
            for M, N, K in ((1000, 1000, 1000), (1023, 4097, 511), (64, 64, 64)):
                sweep = ft._MatmulShape(emit, mm, (M, N, K))
                for cfg in (configs[0], configs[-1]):
                    start = len(rec.requests)
                    task = {"kind": "matmul", "shape": [M, N, K], "dtype": ft.MATMUL_DTYPE,
                            "divisor": mm._divisor(K, N, K, N, N), **cfg}
                    assert ft._compile_one(task)["ok"]
                    sweep.launcher(cfg, sweep.divisor)()
                    ahead, launched = rec.requests[start:]
                    assert key(ahead) == key(launched), (M, N, K, cfg["label"])
                    print("matmul", M, N, K, "divisor", sweep.divisor)
            for (rows, cols), dtype in (((1823, 781), "float32"), ((512, 4096), "float16")):
                sweep = ft._SoftmaxShape(emit, sm, (rows, cols), dtype, 132)
                start = len(rec.requests)
                task = {"kind": "softmax", "shape": [rows, cols], "dtype": dtype,
                        "block": sweep.block, "num_warps": 8, "num_stages": 3}
                assert ft._compile_one(task)["ok"]
                sweep.launcher(rows, 8, 3)()
                ahead, launched = rec.requests[start:]
                assert key(ahead) == key(launched), (rows, cols, dtype)
                print("softmax", rows, cols, dtype)
        """
    )
    assert "matmul 1000 1000 1000 divisor 8" in out
    assert "matmul 1023 4097 511 divisor 1" in out
    assert "matmul 64 64 64 divisor 16" in out
    assert out.count("softmax") == 2


def test_tune_plan_runs_no_cxx_and_sweeps_before_the_triton_workers() -> None:
    plan = fixture_gpu_check._plan(tune=True)
    assert all(job["impl"] != "cxx" and job["side"] == "head" for job in plan)
    order = [job.get("tune") or f"{job['impl']}/{job['op']}" for job in plan]
    assert order.index("softmax") < order.index("triton/softmax")
    assert order.index("matmul") < order.index("triton/matmul")
    assert plan[0].get("ceilings")  # the copy ceiling comes first
    assert not any(job.get("probes") for job in plan)
    # The full check still builds the C++ kernels and probes launch settings.
    full = fixture_gpu_check._plan()
    assert any(job["impl"] == "cxx" for job in full)
    assert any("softmax" in job.get("probes", []) for job in full)


def test_softmax_probe_reaches_the_module_not_the_function() -> None:
    # `import toyops.softmax as sm` gave the function toyops/__init__.py re-exports under the
    # module's name; the probe imports the module and uses these.
    out = _run(
        """
        import importlib
        import toyops
        module = importlib.import_module("toyops.softmax")
        print(callable(toyops.softmax), type(module).__name__)
        print(all(hasattr(module, n) for n in ("launch", "persistent_grid", "_num_stages")))
        """
    )
    assert out.split() == ["True", "module", "True"]


def _softmax(shape, dtype, variant, us, **extra):
    rec = {"tune": "softmax", "shape": list(shape), "dtype": dtype, "variant": variant}
    rec.update(extra, median_us=us, ok=True)
    rec["gbps"] = 2 * shape[0] * shape[1] * 4 / (us * 1e-6) / 1e9
    return rec


def test_summary_ratios_fastest_settings_and_goals() -> None:
    shape = (4096, 4096)
    moved = 2 * 4096 * 4096 * 4
    records = [
        {"tune": "softmax_ref", "shape": [4096, 4096], "dtype": "float32", "bytes_moved": moved,
         "torch_us": 58.0, "copy_us": 36.0, "copy_read_flush_us": 30.0},
        _softmax(shape, "float32", "shipped", 40.0, grid="per_row", num_warps=16, num_stages=1),
        _softmax(shape, "float32", "sweep", 38.0, grid="persistent", num_warps=16,
                 num_stages=4, programs=528, programs_per_sm=4),
        {"tune": "softmax", "shape": [4096, 4096], "dtype": "float32", "variant": "sweep",
         "grid": "per_row", "num_warps": 32, "num_stages": 1, "ok": False, "error": "wrong result"},
        {"tune": "softmax_read_flush", "shape": [4096, 4096], "dtype": "float32", "median_us": 32.0},
        {"tune": "matmul_ref", "shape": [1000, 1000, 1000], "dtype": "bfloat16", "torch_us": 11.6},
        {"tune": "matmul", "shape": [1000, 1000, 1000], "dtype": "bfloat16", "variant": "sweep",
         "config": "128x64x64 w4 s4 g8", "median_us": 14.5, "ok": True, "divisor": 8},
        {"tune": "matmul", "shape": [1000, 1000, 1000], "dtype": "bfloat16", "variant": "shipped",
         "config": "autotuned", "median_us": 15.0, "ok": True, "divisor": 8},
        {"tune": "matmul", "shape": [1000, 1000, 1000], "dtype": "bfloat16",
         "variant": "no_divisor_hint", "config": "128x64x64 w4 s4 g8", "median_us": 12.0,
         "ok": True, "divisor": 1},
        {"tune": "matmul_autotune_pick", "shape": [1000, 1000, 1000], "dtype": "bfloat16",
         "config": "64x128x64 w4 s3 g8"},
        {"tune": "precompile", "kind": "matmul", "tasks": 3, "compiled": 2, "processes": 2,
         "failed": [{"label": "x", "error": "OutOfResources"}], "compile_s_total": 4.0, "wall_s": 2.5},
        {"tune": "worker_failed", "kind": "softmax", "error": "worker exited 1: boom"},
    ]  # fmt: skip
    goals = [
        ("softmax", (4096, 4096), "float32", "frac_copy", 0.85),
        ("matmul", (1000, 1000, 1000), "bfloat16", "frac_torch", 0.9),
        ("vector_add", (2**26,), "float32", "frac_copy", 0.95),
    ]
    tune = fixture_tune.summarize(records, 4000.0, goals)

    [sm] = tune["softmax_best"]
    assert sm["best"]["median_us"] == 38.0 and sm["shipped"]["median_us"] == 40.0
    assert abs(sm["best"]["frac_copy"] - moved / 38e-6 / 1e9 / 4000.0) < 1e-12
    assert abs(sm["best"]["frac_same_size_copy"] - 36.0 / 38.0) < 1e-12
    assert abs(sm["copy_frac_copy"] - moved / 36e-6 / 1e9 / 4000.0) < 1e-12
    assert abs(sm["read_flush_frac_same_size_copy"] - 30.0 / 32.0) < 1e-12

    [mm] = tune["matmul_best"]
    assert mm["best"]["config"] == "128x64x64 w4 s4 g8"  # the sweep's, not the unhinted run's
    assert abs(mm["best"]["frac_torch"] - 11.6 / 14.5) < 1e-12
    assert mm["autotune_pick"] == "64x128x64 w4 s3 g8"
    assert [r["median_us"] for r in mm["no_divisor_hint"]] == [12.0]

    softmax_goal, matmul_goal = tune["goals_best"]  # vector_add is not swept
    assert softmax_goal["met"] and softmax_goal["setting"] == "persistent w16 s4 4/SM"
    assert not matmul_goal["met"] and abs(matmul_goal["value"] - 11.6 / 14.5) < 1e-12

    text = "\n".join(fixture_tune.markdown(tune))
    assert "| 4096x4096 | float32 | persistent w16 s4 4/SM | 38.0 |" in text
    assert "| 1000x1000x1000 | bfloat16 | 8 | 128x64x64 w4 s4 g8 | 14.5 |" in text
    assert "NO: wrong result" in text
    assert "## Tune: the softmax sweep stopped" in text and "boom" in text
    assert "matmul: 2/3 compiled by 2 processes" in text and "1 failed" in text
    lines = fixture_tune.best_lines(tune)
    assert lines[0].startswith("the softmax sweep stopped")
    assert any(line.startswith("matmul 1000x1000x1000 bfloat16: 128x64x64") for line in lines)
