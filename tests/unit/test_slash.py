from __future__ import annotations

import pytest

from bot.errors import CommandError, LimitError
from bot.forge.slash import (
    BenchCommand,
    check_permission,
    check_request,
    estimate,
    parse_bench,
    tokenize,
)
from bot.policy.load import parse_policy

POLICY = parse_policy(
    """
tolerance = 0.03
vendors = ["nvidia", "amd"]

[deployment]
kind = "cli"
first_call_budget_ms = 3000

[limits]
max_shapes = 8
max_elements_per_tensor = 16777216
max_gpu_seconds = 300

[github]
bench_permission = "maintain"

[[kernels]]
name = "softmax"
bench = "toyops.bench:softmax"
paths = ["toyops/softmax.py"]
dtypes = ["float32", "float16"]
shapes = [[1823, 781], { shape = [4096, 4096], weight = 10 }, [1, 7]]

[[kernels]]
name = "vector_add"
bench = "toyops.bench:vector_add"
paths = ["toyops/vector_add.py"]
dtypes = ["float32"]
shapes = [[98432], [4096]]
""",
    "policy.toml",
)


def test_full_command_is_parsed_as_data():
    cmd = parse_bench(
        "/bench softmax --vendor nvidia --shape 4096x4096,1823x781 --dtype=float16 quick", POLICY
    )
    assert cmd == BenchCommand(
        kernels=("softmax",),
        vendors=("nvidia",),
        shapes=((4096, 4096), (1823, 781)),
        dtypes=("float16",),
        mode="quick",
    )
    assert cmd.canonical() == (
        "/bench softmax --vendor nvidia --shape 4096x4096,1823x781 --dtype float16 quick"
    )


def test_bare_bench_means_touched_kernels_full_sweep():
    cmd = parse_bench("/bench", POLICY)
    assert cmd.kernels == () and cmd.mode == "full" and cmd.vendors == ()
    assert parse_bench("/bench --quick", POLICY).mode == "quick"
    assert parse_bench("/bench --kernel softmax,vector_add", POLICY).kernels == (
        "softmax",
        "vector_add",
    )


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("/bench softmax $(curl evil|sh)", "command substitution"),
        ("/bench softmax `id`", "backticks"),
        ("/bench softmax; rm -rf /", "`;`"),
        ("/bench softmax | tee", "pipes"),
        ("/bench softmax && ls", "`&`"),
        ("/bench softmax > out", "redirections"),
        ("/bench softmax $HOME", "variables"),
        ("/bench softmax 'quoted'", "quotes"),
        ("/bench @/etc/passwd", "does not read files"),
        ("/bench --vendor @vendors.txt", "does not read files"),
    ],
)
def test_shell_syntax_is_refused_with_what_is_allowed(line, what):
    with pytest.raises(CommandError) as info:
        parse_bench(line, POLICY)
    assert what in info.value.message
    assert "softmax, vector_add" in (info.value.hint or "")
    assert "nvidia, amd" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("/bench --runs 5", "unknown option '--runs'"),
        ("/bench matmul", "'matmul' is not a kernel"),
        ("/bench --kernel matmul", "unknown kernel 'matmul'"),
        ("/bench --vendor intel", "vendor 'intel'"),
        ("/bench --dtype int4", "dtype 'int4'"),
        ("/bench --shape -5x4", "positive integers"),
        ("/bench --shape 0x4", "at least 1"),
        ("/bench --shape 4x4x4x4x4x4x4x4x4", "positive integers"),
        ("/bench --shape", "needs a value"),
        ("/bench --mode=slow", "quick or full"),
    ],
)
def test_unknown_values_are_refused(line, what):
    with pytest.raises(CommandError) as info:
        parse_bench(line, POLICY)
    assert what in info.value.message


def test_huge_shape_is_refused_with_elements_and_limit():
    with pytest.raises(LimitError) as info:
        parse_bench("/bench --shape 65536x65536", POLICY)
    assert "4,294,967,296 elements" in info.value.message
    assert "16,777,216" in info.value.message


def test_too_many_cases_shows_the_computed_cost():
    shapes = ",".join(f"{n}x{n}" for n in range(100, 110))
    with pytest.raises(LimitError) as info:
        parse_bench(f"/bench softmax --shape {shapes}", POLICY)
    msg = info.value.message
    assert "20 cases" in msg and "max_shapes = 8" in msg and "GPU-seconds" in msg


def test_gpu_seconds_limit_is_checked_with_numbers():
    # 2 kernels, 3+2 shapes... full: 6 + 2 cases, 8*12 + 2*30 = 156 s per vendor: allowed
    cost = check_request(parse_bench("/bench", POLICY), POLICY, ["softmax", "vector_add"])
    assert cost.cases_per_kernel == {"softmax": 6, "vector_add": 2}
    assert cost.gpu_seconds_per_vendor == pytest.approx(8 * 12 + 2 * 30)
    assert cost.vendors == 2 and cost.gpu_seconds_total == pytest.approx(2 * 156)
    tight = POLICY.model_copy(
        update={"limits": POLICY.limits.model_copy(update={"max_gpu_seconds": 100})}
    )
    with pytest.raises(LimitError) as info:
        parse_bench("/bench softmax --shape 100x100,101x101,102x102", tight)
    # 3 shapes x 2 dtypes = 6 cases: 6 * 12 + 30 = 102 GPU-seconds per vendor
    assert "6 cases" in info.value.message and "102 GPU-seconds" in info.value.message
    assert "max_gpu_seconds = 100" in info.value.message


def test_quick_mode_costs_less():
    full = estimate(BenchCommand(), POLICY, ["softmax"])
    quick = estimate(BenchCommand(mode="quick"), POLICY, ["softmax"])
    assert quick.cases_per_kernel == {"softmax": 3}
    assert quick.gpu_seconds_per_vendor < full.gpu_seconds_per_vendor


def test_dtype_and_rank_are_checked_per_named_kernel():
    with pytest.raises(CommandError, match="vector_add is not measured in float16"):
        parse_bench("/bench vector_add --dtype float16", POLICY)
    with pytest.raises(CommandError, match="1 dimensions, not 64x64"):
        parse_bench("/bench vector_add --shape 64x64", POLICY)


def test_bounds_on_length_and_word_count():
    with pytest.raises(CommandError, match="at most 40 words"):
        tokenize("/bench " + "softmax " * 41)
    with pytest.raises(CommandError, match="over 1000 characters"):
        tokenize("/bench " + "a" * 1001)


@pytest.mark.parametrize(
    ("role", "ok"),
    [
        ("admin", True),
        ("maintain", True),
        ("write", False),
        ("triage", False),
        ("read", False),
        ("none", False),
    ],
)
def test_permission_bar_comes_from_the_policy(role, ok):
    if ok:
        check_permission("bob", role, POLICY)
        return
    with pytest.raises(CommandError) as info:
        check_permission("bob", role, POLICY)
    assert f"has {role} permission" in info.value.message
    assert "needs maintain (maintain or admin)" in info.value.message


def test_default_bar_is_write():
    policy = POLICY.model_copy(
        update={"github": POLICY.github.model_copy(update={"bench_permission": "write"})}
    )
    check_permission("bob", "write", policy)
    with pytest.raises(CommandError, match="needs write"):
        check_permission("bob", "triage", policy)


def test_sha_names_the_approved_commit():
    full = "1A2B3C4D5E" * 4
    cmd = parse_bench(f"/bench softmax sha={full}", POLICY)
    assert cmd.sha == full.lower() and cmd.canonical().endswith(f"full sha={full.lower()}")
    assert parse_bench("/bench softmax", POLICY).sha is None


@pytest.mark.parametrize(
    "bad", ["1a2b3c4", "1a2b3c4d5e", "a" * 39, "a" * 41, "xyz1234", "g" * 40, ""]
)
def test_sha_must_be_the_full_commit(bad):
    with pytest.raises(CommandError, match="paste the full commit sha") as err:
        parse_bench(f"/bench softmax sha={bad}", POLICY)
    assert "40 hex digits" in str(err.value)
