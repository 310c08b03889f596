"""The compiler report on real Triton cross-compiles (no GPU): both vendors, flags, cache."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.errors import CompilerError
from checks.compiler import triton_compat
from checks.compiler.records import CompilerReport, KernelCompileRecord
from checks.compiler.report import compare_reports, make_report, report_flags
from checks.compiler.run import KernelSpec, build_compiler_report
from tests.paths import DATA, ROOT

KERNELS = DATA / "kernels"
FIXTURE = ROOT / "kernels_fixture"
TARGETS = ["sm_90", "gfx942"]
SPECS = [
    KernelSpec(
        name="vector_add",
        bench="toykern.bench:vector_add",
        shapes=((1 << 20,), (5000,)),
        dtypes=("float32",),
    ),
    KernelSpec(
        name="softmax", bench="toykern.bench:softmax", shapes=((64, 4096),), dtypes=("float16",)
    ),
    KernelSpec(
        name="matmul", bench="toykern.bench:matmul", shapes=((512, 512, 512),), dtypes=("float16",)
    ),
    KernelSpec(
        name="dot_ieee", bench="toykern.bench:dot_ieee", shapes=((32,),), dtypes=("float32",)
    ),
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kr-cache")


@pytest.fixture(scope="module")
def report(cache_dir: Path) -> CompilerReport:
    return build_compiler_report(KERNELS, SPECS, TARGETS, cache_dir=cache_dir)


def _records(report: CompilerReport, kernel: str, target: str) -> list[KernelCompileRecord]:
    return [r for r in report.records if r.kernel == kernel and r.target == target]


# ------------------------------------------------------------------------- real cross-compiles


@pytest.mark.slow
def test_every_kernel_compiles_for_both_vendors(report: CompilerReport):
    assert report.notes == ()
    assert report.compiled + report.cached == len(report.records)
    for spec in SPECS:
        for target in TARGETS:
            recs = _records(report, spec.name, target)
            assert recs, (spec.name, target)
            assert all(r.error is None and r.regs_per_thread for r in recs)
    assert {r.vendor for r in report.records} == {"nvidia", "amd"}


@pytest.mark.slow
def test_layouts_of_the_ir_are_read_for_both_vendors(report: CompilerReport):
    for target, lanes, matrix in (("sm_90", 32, "nvidia_mma"), ("gfx942", 64, "amd_mfma")):
        [softmax] = _records(report, "softmax", target)
        reduce = [x for x in softmax.layouts if x.role == "reduce"]
        assert reduce and all(x.threads_per_warp == (lanes,) and x.axis == 0 for x in reduce)
        assert all(x.warps_per_cta == (softmax.config["num_warps"],) for x in reduce)
        for r in _records(report, "matmul", target):
            [dot] = [x for x in r.layouts if x.role == "dot"]
            assert dot.kind == matrix and dot.shape == (r.config["BM"], r.config["BN"])
            # every warp of the program takes part in the dot
            assert dot.warps_per_cta[0] * dot.warps_per_cta[1] == r.config["num_warps"]


@pytest.mark.slow
def test_maxnreg_is_honoured_on_nvidia_and_flagged_on_amd(cache_dir: Path):
    spec = KernelSpec(
        name="capped", bench="toykern.bench:capped_dot", shapes=((64,),), dtypes=("float16",)
    )
    rep = build_compiler_report(KERNELS, [spec], TARGETS, cache_dir=cache_dir)
    nv, amd = _records(rep, "capped", "sm_90"), _records(rep, "capped", "gfx942")
    assert [r.config.get("maxnreg") for r in nv + amd] == [64, 64]
    assert nv[0].regs_per_thread is not None and nv[0].regs_per_thread <= 64
    assert nv[0].max_regs_per_thread == 64  # the cap ptxas was given
    # Triton 3.6's AMD back end has no maxnreg option: the launch itself is refused
    assert amd[0].launch_refused is not None and "maxnreg" in amd[0].launch_refused
    assert amd[0].error is None and amd[0].regs_per_thread  # compiled without the option
    [flag] = [f for f in rep.flags if f.kind == "maxnreg_ignored"]
    assert (flag.target, flag.severity) == ("gfx942", "error")
    assert "Triton refuses the launch on gfx942" in flag.message
    assert f"the kernel uses {amd[0].regs_per_thread} VGPRs per thread (cap 512)" in flag.message


@pytest.mark.slow
def test_dot_shows_a_matrix_instruction_on_both_vendors(report: CompilerReport):
    nvidia = _records(report, "matmul", "sm_90")
    amd = _records(report, "matmul", "gfx942")
    assert len(nvidia) == 2 and len(amd) == 2  # each vendor's own autotune list
    assert all(r.uses_dot and r.matrix_instr.startswith("wgmma.mma_async") for r in nvidia)
    assert all(r.uses_dot and r.matrix_instr.startswith("v_mfma_") for r in amd)
    assert all(r.autotuned and r.autotune_keys for r in nvidia + amd)
    assert report.configs_differ_per_vendor["matmul"] is True


@pytest.mark.slow
def test_spilling_amd_config_is_flagged(report: CompilerReport):
    big = [r for r in _records(report, "matmul", "gfx942") if r.config.get("BM") == 256]
    assert len(big) == 1
    spill = big[0]
    assert spill.spill_count > 0 and spill.spill_bytes > 0 and spill.stack_bytes > 0
    assert spill.regs_per_thread == spill.max_regs_per_thread == 512
    kinds = {(f.kind, f.target) for f in report.flags if f.config_label == spill.config_label}
    assert ("spill", "gfx942") in kinds and ("regs_at_cap", "gfx942") in kinds
    small = [r for r in _records(report, "matmul", "gfx942") if r.config.get("BM") == 128]
    assert small[0].spill_count == 0


@pytest.mark.slow
def test_fp32_ieee_dot_has_no_tensor_core_instruction_on_nvidia(report: CompilerReport):
    [nv] = _records(report, "dot_ieee", "sm_90")
    [amd] = _records(report, "dot_ieee", "gfx942")
    assert nv.uses_dot and nv.matrix_instr is None
    assert amd.matrix_instr and amd.matrix_instr.startswith("v_mfma_f32")
    flagged = [f for f in report.flags if f.kind == "no_matrix_instr"]
    assert [(f.kernel, f.target) for f in flagged] == [("dot_ieee", "sm_90")]


@pytest.mark.slow
def test_load_width_follows_the_specialization(report: CompilerReport):
    for target in TARGETS:
        by_shape = {r.shapes[0]: r for r in _records(report, "vector_add", target)}
        aligned, ragged = by_shape["1048576:float32"], by_shape["5000:float32"]
        assert aligned.global_load_bits_max == 128  # n % 16 == 0: vectorised
        assert ragged.global_load_bits_max == 32
        assert "n_elements" not in aligned.specialization
        assert aligned.specialization.split(", ")[3] == "n:i32/16"
        assert ragged.specialization.split(", ")[3] == "n:i32"


@pytest.mark.slow
def test_heuristics_values_are_in_the_config(report: CompilerReport):
    [rec] = _records(report, "softmax", "sm_90")
    assert rec.config["BLOCK"] == 4096 and rec.config["num_warps"] == 8
    assert rec.threads_per_block == 256
    [amd] = _records(report, "softmax", "gfx942")
    assert amd.threads_per_block == 512  # the same num_warps is twice the threads on AMD
    assert report.configs_differ_per_vendor["softmax"] is False
    shared = [f for f in report.flags if f.kind == "shared_config_list" and f.kernel == "softmax"]
    assert shared and "one config list serves both vendors" in shared[0].message


@pytest.mark.slow
def test_amd_occupancy_matches_the_compiler_where_there_is_no_lds(report: CompilerReport):
    checked = 0
    for r in report.records:
        if r.vendor == "amd" and r.shared_bytes == 0 and r.error is None:
            assert r.occupancy_waves_per_simd == r.compiler_occupancy_waves_per_simd
            checked += 1
    assert checked >= 2


@pytest.mark.slow
def test_nvidia_occupancy_is_computed(report: CompilerReport):
    for r in _records(report, "matmul", "sm_90"):
        assert 0 < r.occupancy_fraction <= 1
        assert r.occupancy_warps_per_sm % (r.threads_per_block // 32) == 0


@pytest.mark.slow
def test_warm_report_is_read_from_the_cache(report: CompilerReport, cache_dir: Path):
    start = time.perf_counter()
    warm = build_compiler_report(KERNELS, SPECS, TARGETS, cache_dir=cache_dir)
    assert time.perf_counter() - start < 2.0
    assert warm.compiled == 0 and warm.cached == len(warm.records)
    strip = {"cached", "compile_s"}
    assert [r.model_dump(exclude=strip) for r in warm.records] == [
        r.model_dump(exclude=strip) for r in report.records
    ]


@pytest.mark.slow
def test_entry_point_failure_is_reported_not_raised(cache_dir: Path):
    bad = KernelSpec(name="bad", bench="toykern.bench:nope", shapes=((8,),), dtypes=("float32",))
    rep = build_compiler_report(KERNELS, [bad], ["sm_90"], cache_dir=cache_dir)
    [rec] = rep.records
    assert rec.error_stage == "entry" and "toykern.bench:nope" in rec.error
    assert [f.kind for f in rep.flags] == ["entry_failed"]
    assert rep.flags[0].severity == "warning"


@pytest.mark.slow
@pytest.mark.skipif(not (FIXTURE / "toyops" / "matmul.py").is_file(), reason="fixture not present")
def test_fixture_matmul_every_config_on_both_vendors(cache_dir: Path):
    spec = KernelSpec(
        name="matmul", bench="toyops.bench:matmul", shapes=((512, 512, 512),), dtypes=("float16",)
    )
    rep = build_compiler_report(FIXTURE, [spec], TARGETS, cache_dir=cache_dir)
    nvidia, amd = _records(rep, "matmul", "sm_90"), _records(rep, "matmul", "gfx942")
    # the fixture's own lists, read in a separate interpreter (its modules stay out of this one)
    count = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib; m = importlib.import_module('toyops.matmul'); "
            "print(len(m.matmul_kernel.configs), len(m.AMD_CONFIGS))",
        ],
        cwd=FIXTURE,
        capture_output=True,
        text=True,
        check=True,
    )
    n_nvidia, n_amd = map(int, count.stdout.split())
    assert len(nvidia) == n_nvidia and len(amd) == n_amd
    assert all(r.error is None for r in nvidia + amd)
    # Hopper's wgmma needs 64-row tiles per warpgroup; the 32-row config gets Ampere's mma.sync
    assert all(r.matrix_instr and r.matrix_instr.startswith(("wgmma", "mma")) for r in nvidia)
    small = [r for r in nvidia if r.config["BLOCK_SIZE_M"] < 64]
    assert all(r.matrix_instr.startswith("mma") for r in small)
    assert all(r.matrix_instr.startswith("wgmma") for r in nvidia if r not in small)
    assert all(r.matrix_instr and r.matrix_instr.startswith("v_mfma") for r in amd)
    assert rep.configs_differ_per_vendor["matmul"] is True


# ------------------------------------------------------------------- recording, in this process


def _record(target: str):
    sys.path.insert(0, str(KERNELS))
    try:
        from toykern import bench

        with triton_compat.compile_only(target) as rec:
            bench.vector_add((4096,), "float32", device="cpu")["fn"]()
    finally:
        sys.path.remove(str(KERNELS))
    return rec.requests


def test_recording_specialises_per_vendor():
    [nv] = _record("sm_90")
    [amd] = _record("gfx942")
    assert nv.signature == amd.signature
    assert nv.config == {"BLOCK": 1024, "num_warps": 4, "num_stages": 3}
    assert amd.config["num_stages"] == 2  # the AMD back end's default
    # AMD specialises pointers to tensors under 2 GB (buffer loads); NVIDIA does not
    assert ["tt.pointer_range", 32] in amd.attrs[(0,)]
    assert all(a[0] != "tt.pointer_range" for a in nv.attrs[(0,)])
    assert nv.cache_key("sm_90") != amd.cache_key("gfx942")


def test_recording_restores_triton_state():
    from triton import knobs
    from triton.runtime import autotuner, jit
    from triton.runtime.driver import driver

    def state():
        return (
            driver._active,
            knobs.runtime.jit_cache_hook,
            autotuner.Autotuner.run,
            autotuner.Heuristics.run,
            jit.JITFunction.run,
        )

    before = state()
    _record("gfx90a")
    assert state() == before


def test_interpreter_mode_is_refused(monkeypatch):
    # through the environment, as a user sets it: setting ``knobs.runtime.interpret`` pins it in
    # this process, and monkeypatch's undo would pin it to False for every later test here
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with (
        pytest.raises(CompilerError, match="TRITON_INTERPRET"),
        triton_compat.compile_only("sm_90"),
    ):
        pass


@pytest.mark.parametrize("version", ["3.4.0", "3.7.0", "4.0.0", "2.3.1+cu121"])
def test_unsupported_triton_versions_are_refused(version: str):
    with pytest.raises(CompilerError, match="not supported") as err:
        triton_compat.check_triton_version(version)
    assert err.value.hint and "triton" in err.value.hint


@pytest.mark.parametrize("version", ["3.5.1", "3.6.0", "3.6.1", "3.6.0+git1234abcd"])
def test_supported_triton_versions_pass(version: str):
    assert triton_compat.check_triton_version(version) == version


def test_installed_triton_is_supported():
    import triton

    assert triton_compat.check_triton_version() == triton.__version__


def test_unknown_target_is_refused_before_compiling(tmp_path: Path):
    from bot.errors import PolicyError

    with pytest.raises(PolicyError, match="unknown compile target"):
        build_compiler_report(KERNELS, SPECS[:1], ["volta"], cache_dir=tmp_path)


# ------------------------------------------------------------------------------ flags, compare


def _rec(**kw) -> KernelCompileRecord:
    base = dict(
        kernel="k",
        function="k_kernel",
        config_label="BLOCK=128, num_warps=4, num_stages=3",
        config={"BLOCK": 128, "num_warps": 4, "num_stages": 3},
        vendor="nvidia",
        target="sm_90",
        regs_per_thread=64,
        max_regs_per_thread=255,
        spill_bytes=0,
        spill_count=0,
        occupancy_fraction=0.5,
    )
    base.update(kw)
    return KernelCompileRecord(**base)


def test_flags_for_each_kind():
    records = (
        _rec(error="PTXASError: boom", error_stage="compile"),
        _rec(config_label="b", spill_bytes=40, spill_count=10, spill_detail="40 bytes"),
        _rec(config_label="c", regs_per_thread=255),
        _rec(config_label="d", uses_dot=True, matrix_instr=None),
        _rec(config_label="e", uses_dot=True, matrix_instr="wgmma.mma_async.m64n64k16"),
    )
    flags, _ = report_flags(records)
    assert [(f.kind, f.severity) for f in flags] == [
        ("compile_failed", "error"),
        ("spill", "warning"),
        ("regs_at_cap", "warning"),
        ("no_matrix_instr", "warning"),
    ]


def test_one_config_list_for_both_vendors_is_flagged_once_per_kernel():
    nv = _rec()
    amd = _rec(vendor="amd", target="gfx942", config={**nv.config, "num_stages": 2})
    other = _rec(kernel="j", vendor="amd", target="gfx942", config={"BLOCK": 64, "num_warps": 8})
    report = make_report([nv, amd, other, _rec(kernel="j")])
    assert report.configs_differ_per_vendor == {"k": False, "j": True}
    [flag] = [f for f in report.flags if f.kind == "shared_config_list"]
    assert flag.kernel == "k" and "128 threads on NVIDIA and 256 on AMD" in flag.message


def test_compare_flags_occupancy_that_dropped():
    old = make_report(
        [_rec(occupancy_fraction=0.5), _rec(config_label="x", occupancy_fraction=1.0)]
    )
    new = make_report(
        [_rec(occupancy_fraction=0.25), _rec(config_label="y", occupancy_fraction=0.75)]
    )
    cmp = compare_reports(old, new)
    whole = [r for r in cmp.rows if r.config_label is None]
    assert len(whole) == 1
    assert (whole[0].old_occupancy_fraction, whole[0].new_occupancy_fraction) == (1.0, 0.75)
    kinds = [(f.kind, f.config_label) for f in cmp.flags]
    # the matched config dropped 50% -> 25%, and the best variant 100% -> 75%
    assert ("occupancy_lower", _rec().config_label) in kinds
    assert ("occupancy_lower", None) in kinds


def test_compare_is_quiet_when_nothing_got_worse():
    old = make_report([_rec(occupancy_fraction=0.5)])
    new = make_report([_rec(occupancy_fraction=0.5, regs_per_thread=60)])
    cmp = compare_reports(old, new)
    assert cmp.flags == ()
    assert [r.new_regs_per_thread for r in cmp.rows] == [60, 60]


def test_compare_c_plus_plus_against_triton_by_kernel():
    old = make_report(
        [
            _rec(
                language="cuda",
                function="softmax_row_kernel<float, 256, 8>",
                config_label="threads=256",
                occupancy_fraction=1.0,
            )
        ]
    )
    new = make_report([_rec(occupancy_fraction=0.75)])
    cmp = compare_reports(old, new)
    assert [r.config_label for r in cmp.rows] == [None]
    assert [f.kind for f in cmp.flags] == ["occupancy_lower"]


# ------------------------------------------------------------------------------------- the CLI


@pytest.mark.slow
def test_cli_compiler_report_json(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    import json
    import shutil

    from bot.cli import main

    repo = tmp_path / "repo"
    shutil.copytree(KERNELS / "toykern", repo / "toykern")
    (repo / ".github").mkdir()
    (repo / ".github" / "kernel-review.toml").write_text(
        'vendors = ["nvidia", "amd"]\n'
        'owners = ["@gpu-team"]\n'
        "[deployment]\n"
        'kind = "long-lived"\n'
        "[compiler]\n"
        'nvidia_targets = ["sm_90"]\n'
        'amd_targets = ["gfx942"]\n'
        "[[kernels]]\n"
        'name = "vector_add"\n'
        'bench = "toykern.bench:vector_add"\n'
        'paths = ["toykern/kernels.py"]\n'
        'dtypes = ["float32"]\n'
        "shapes = [[1048576], [5000]]\n"
    )
    out = tmp_path / "report.json"
    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(cache_dir))
    code = main(["compiler-report", "--repo", str(repo), "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    rows = [line.split() for line in text.splitlines() if line.startswith("vector_add ")]
    assert {(r[1], r[2]) for r in rows} == {("add_kernel", "sm_90"), ("add_kernel", "gfx942")}
    assert "one config list serves both vendors" in text
    data = json.loads(out.read_text())
    report = CompilerReport.model_validate(data["report"])
    assert {r.target for r in report.records} == {"sm_90", "gfx942"}
    # again with the same cache: every variant is read from it (whatever ran before this test)
    again = tmp_path / "again.json"
    argv = ["compiler-report", "--repo", str(repo)]
    assert main([*argv, "--json", str(again)]) == 0
    capsys.readouterr()
    warm = CompilerReport.model_validate(json.loads(again.read_text())["report"])
    assert warm.cached == len(warm.records) == len(report.records)

    assert main(["compiler-report", "--repo", str(repo), "--kernel", "nope"]) == 2
    assert "no kernel named nope" in capsys.readouterr().err


# ------------------------------------------------------------------------------ on a real GPU


@pytest.mark.gpu
def test_real_registers_match_the_cross_compiled_ones(tmp_path: Path):
    import importlib

    import torch

    if torch.version.hip:
        pytest.skip("compares NVIDIA cubins")
    major, minor = torch.cuda.get_device_capability()
    target = f"sm_{major}{minor}"
    spec = KernelSpec(
        name="matmul", bench="toykern.bench:matmul", shapes=((512, 512, 512),), dtypes=("float16",)
    )
    report = build_compiler_report(KERNELS, [spec], [target], cache_dir=tmp_path)
    sys.path.insert(0, str(KERNELS))
    try:
        bench = importlib.import_module("toykern.bench")
        bench.matmul((512, 512, 512), "float16", device="cuda")["fn"]()
        torch.cuda.synchronize()
        kernels = triton_compat.find_kernels([importlib.import_module("toykern.kernels")])
        real = triton_compat.compiled_variants(kernels)
    finally:
        sys.path.remove(str(KERNELS))
    crossed = {(r.function, r.config_label, r.specialization): r for r in report.records}
    matched = [
        (v, crossed.get((v["function"], v["config_label"], v["specialization"]))) for v in real
    ]
    assert len(matched) == 2 and all(c is not None for _, c in matched)
    for v, c in matched:
        assert v["n_regs"] == c.regs_per_thread
        assert v["n_spills"] * 4 == c.stack_bytes
        assert v["shared_bytes"] == c.shared_bytes  # Triton allocates it all dynamically


def test_recording_inputs_are_allocated_but_not_filled():
    import torch

    from checks.compiler.cheap_inputs import unfilled_random

    randn = torch.randn
    g = torch.Generator().manual_seed(0)
    with unfilled_random():
        a = torch.randn((64, 32), generator=g, dtype=torch.float16)
        b = torch.rand(8, 4, device="cpu")
        c = torch.randint(0, 10, (5,))
        d = torch.randn_like(a)
        assert a.normal_() is a
    assert (a.shape, a.dtype, b.shape, c.dtype, d.dtype) == (
        (64, 32),
        torch.float16,
        (8, 4),
        torch.int64,
        torch.float16,
    )
    assert int(c.sum()) == 0  # indices stay valid
    assert torch.randn is randn
    assert float(torch.randn(1000).std()) > 0.5  # restored: real random numbers again


def test_what_an_entry_does_to_unfilled_random_inputs_is_unfilled_too():
    """``x.to(dtype)`` of an unfilled random tensor is an unfilled tensor of that dtype, laid out
    alike (what reaches the compiler: dtype, shape, strides, alignment), and ``x.mul_(s)``
    leaves it; any other tensor converts and scales as ever, and so do they afterwards."""
    import torch

    from checks.compiler.cheap_inputs import unfilled_random

    to, mul_ = torch.Tensor.to, torch.Tensor.mul_
    ones = torch.ones(4, 6)
    with unfilled_random():
        a = torch.randn((64, 48), dtype=torch.float32)[:, :40]  # a view: strides kept
        half = a.to(torch.float16)
        assert (half.dtype, half.shape, half.stride()) == (torch.float16, (64, 40), (40, 1))
        assert half.to(torch.float16) is half and a.to(dtype=torch.float32) is a
        assert a.mul_(0.5) is a
        b = torch.rand(1 << 20).to(torch.bfloat16)
        assert b.dtype == torch.bfloat16 and b.data_ptr() % 16 == 0
        # a tensor not made by a random factory: converted and scaled for real
        assert float(ones.to(torch.float16).mul_(3).sum()) == 72.0
        assert ones.to("cpu", torch.float64).dtype == torch.float64
    assert torch.Tensor.to is to and torch.Tensor.mul_ is mul_
    c = torch.full((3,), 2.0)
    assert c.to(torch.float16).tolist() == [2.0, 2.0, 2.0] and c.mul_(2).tolist() == [4.0] * 3


def test_a_target_without_tables_still_gets_registers():
    from checks.compiler.measure import measure

    data = DATA / "compiler"
    fields = measure(
        target="sm_75",
        texts={"ptx": (data / "resources_sm90.ptx").read_text(), "ttir": ""},
        metadata={"name": "_Z12spill_kernelPKfPfi", "num_warps": 32, "shared": 0},
        ptxas_log=(data / "resources_sm90.ptxas.txt").read_text(),
    )
    assert (fields["regs_per_thread"], fields["spill_bytes"]) == (32, 1132)
    assert fields["max_regs_per_thread"] is None and "occupancy_fraction" not in fields
    known = measure(
        target="sm_90",
        texts={"ptx": "", "ttir": ""},
        metadata={"name": "_Z12spill_kernelPKfPfi", "num_warps": 32, "shared": 0},
        ptxas_log=(data / "resources_sm90.ptxas.txt").read_text(),
    )
    assert known["max_regs_per_thread"] == 255 and known["occupancy_fraction"] == 1.0


@pytest.mark.slow
def test_a_src_layout_is_imported_through_the_policys_python_path(
    tmp_path: Path, cache_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    """The kernels under src/ and python_path = ["src"]: the compiler report and the first call
    import them as the sweep's workers do; without python_path both say the import failed."""
    import json
    import shutil

    from bot.cli import main

    monkeypatch.setenv("KERNEL_REVIEW_CACHE", str(cache_dir))

    repo = tmp_path / "repo"
    shutil.copytree(KERNELS / "toykern", repo / "src" / "toykern")
    (repo / ".github").mkdir()
    policy = (
        'vendors = ["nvidia"]\n'
        "{python_path}"
        "[deployment]\n"
        'kind = "long-lived"\n'
        "[compiler]\n"
        'nvidia_targets = ["sm_90"]\n'
        "[[kernels]]\n"
        'name = "vector_add"\n'
        'bench = "toykern.bench:vector_add"\n'
        'paths = ["src/toykern/kernels.py"]\n'
        'dtypes = ["float32"]\n'
        "shapes = [[5000]]\n"
    )
    toml = repo / ".github" / "kernel-review.toml"
    report_json, first_json = tmp_path / "report.json", tmp_path / "first.json"
    outcomes = {}
    for python_path in ("", 'python_path = ["src"]\n'):
        toml.write_text(policy.format(python_path=python_path))
        args = ["--repo", str(repo), "--json", str(report_json)]
        assert main(["compiler-report", *args]) == 0
        report = CompilerReport.model_validate(json.loads(report_json.read_text())["report"])
        first = ["first-call", "--repo", str(repo), "--device", "cpu", "--json", str(first_json)]
        main(first)
        capsys.readouterr()
        outcomes[bool(python_path)] = (report, json.loads(first_json.read_text())[0])
    report, first = outcomes[True]
    assert [r.function for r in report.records if not r.error] == ["add_kernel"]
    assert first["cold"]["error"] in (None, ""), first["cold"]["error"]
    report, first = outcomes[False]
    assert all("cannot import" in (r.error or "") for r in report.records), report.records
    assert "toykern" in (first["cold"]["error"] or "")
