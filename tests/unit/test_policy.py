"""The policy: what valid TOML becomes, and what a maintainer reads when it is wrong."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pydantic
import pytest

from bot.errors import PolicyError
from bot.policy.load import (
    MAX_POLICY_BYTES,
    MINIMAL_EXAMPLE,
    PolicyProblem,
    ServedShape,
    glob_match,
    load_policy,
    parse_policy,
    validate_policy,
)

FULL = """\
tolerance = 0.03
vendors = ["nvidia", "amd"]
owners = ["@gpu-team", "@org/kernels", "lead@example.com"]

[deployment]
kind = "cli"
first_call_budget_ms = 3000

[limits]
max_shapes = 32
max_elements_per_tensor = 1073741824
max_gpu_seconds = 600

[compiler]
nvidia_targets = ["sm_90", "sm_90a"]
amd_targets = ["gfx942"]

[github]
bench_permission = "maintain"
merge_gate = "none"

[[kernels]]
name = "softmax"
bench = "toyops.bench:softmax"
baseline = "toyops.bench:softmax_ref"
paths = ["toyops/softmax.py", "toyops/csrc/softmax.cu", "toyops/csrc/softmax.hip"]
dtypes = ["float32", "float16"]
tolerance = 0.05
shapes = [[1823, 781], { shape = [4096, 4096], weight = 10 }]

[[kernels]]
name = "matmul"
bench = "toyops.bench:matmul"
paths = ["toyops/**/matmul*"]
dtypes = ["bfloat16"]
shapes = [
  [512, 512, 512],
  { shape = [1024, 1024, 1024], weight = 2.5 },
]
"""

MINIMAL = """\
[deployment]
kind = "long-lived"

[[kernels]]
name = "add"
bench = "ops.bench:add"
paths = ["ops/add.py"]
dtypes = ["float32"]
shapes = [[98432]]
"""


def problems(text: str, source: str = "p.toml") -> list[str]:
    policy, found = validate_policy(text, source)
    assert policy is None, "expected the policy to be refused"
    return [str(p) for p in found]


def one_problem(text: str) -> str:
    found = problems(text)
    assert len(found) == 1, found
    return found[0]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ------------------------------------------------------------------------------ valid policies


def test_full_policy_has_every_value_written() -> None:
    policy = parse_policy(FULL)
    assert policy.tolerance == 0.03
    assert policy.vendors == ["nvidia", "amd"]
    assert policy.owners == ["@gpu-team", "@org/kernels", "lead@example.com"]
    assert (policy.deployment.kind, policy.deployment.first_call_budget_ms) == ("cli", 3000.0)
    assert policy.limits.max_shapes == 32 and policy.limits.max_gpu_seconds == 600
    assert policy.compiler.nvidia_targets == ["sm_90", "sm_90a"]
    assert policy.compiler.amd_targets == ["gfx942"]
    assert (policy.github.bench_permission, policy.github.merge_gate) == ("maintain", "none")
    softmax, matmul = policy.kernels
    assert softmax.baseline == "toyops.bench:softmax_ref"
    assert softmax.shapes == [
        ServedShape(dims=(1823, 781), weight=1.0),
        ServedShape(dims=(4096, 4096), weight=10.0),
    ]
    assert softmax.effective_tolerance(policy) == 0.05
    assert matmul.baseline is None
    assert matmul.effective_tolerance(policy) == 0.03
    assert [s.dims for s in matmul.shapes] == [(512, 512, 512), (1024, 1024, 1024)]
    assert matmul.shapes[1].weight == 2.5 and matmul.shapes[1].elements == 2**30


def test_minimal_policy_gets_the_defaults() -> None:
    policy = parse_policy(MINIMAL)
    assert policy.tolerance == 0.03
    assert policy.vendors == ["nvidia", "amd"]
    assert policy.owners == []
    assert policy.deployment.first_call_budget_ms is None
    assert policy.limits.model_dump() == {
        "max_shapes": 64,
        "max_elements_per_tensor": 2**30,
        "max_gpu_seconds": 900,
        "worker_memory_gib": None,
    }
    assert policy.compiler.nvidia_targets == ["sm_90"]
    assert policy.compiler.amd_targets == ["gfx942", "gfx90a"]
    assert policy.github.model_dump() == {
        "bench_permission": "write",
        "accept_permission": "maintain",
        "merge_gate": "check",
    }
    assert policy.kernels[0].shapes[0].dims == (98432,)


def test_the_example_offered_in_the_missing_policy_error_is_valid() -> None:
    assert parse_policy(MINIMAL_EXAMPLE).kernels[0].name == "softmax"


def test_policy_is_frozen() -> None:
    policy = parse_policy(MINIMAL)
    with pytest.raises(pydantic.ValidationError):
        policy.tolerance = 0.5  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        policy.kernels[0].name = "other"  # type: ignore[misc]


def test_integers_are_accepted_where_numbers_are_expected() -> None:
    text = "tolerance = 1\n" + MINIMAL.replace("[[98432]]", "[{ shape = [98432], weight = 3 }]")
    policy = parse_policy(text)
    assert policy.tolerance == 1.0 and policy.kernels[0].shapes[0].weight == 3.0


def test_kernels_for_path_and_kernel_by_name() -> None:
    policy = parse_policy(FULL)
    assert [k.name for k in policy.kernels_for_path("toyops/csrc/softmax.hip")] == ["softmax"]
    assert [k.name for k in policy.kernels_for_path("./toyops/triton/matmul_kernel.py")] == [
        "matmul"
    ]
    assert policy.kernels_for_path("README.md") == []
    assert policy.kernel("matmul").bench == "toyops.bench:matmul"
    with pytest.raises(PolicyError) as caught:
        policy.kernel("softmx")
    assert "no kernel named 'softmx'" in caught.value.message
    assert "did you mean 'softmax'?" in (caught.value.hint or "")
    assert "known kernels: softmax, matmul" in (caught.value.hint or "")


# --------------------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("toyops/**/*.cu", "toyops/csrc/a.cu", True),
        ("toyops/**/*.cu", "toyops/a.cu", True),
        ("toyops/**/*.cu", "toyops/csrc/deep/er/a.cu", True),
        ("toyops/**/*.cu", "toyops/csrc/a.cuh", False),
        ("toyops/**/*.cu", "other/toyops/a.cu", False),
        ("**/*.hip", "a/b/c.hip", True),
        ("**/*.hip", "c.hip", True),
        ("*.cu", "a.cu", True),
        ("*.cu", "csrc/a.cu", False),  # anchored at the repository root
        ("toyops/csrc", "toyops/csrc/a.cu", True),  # a directory covers what is inside
        ("toyops/csrc/", "toyops/csrc/sub/a.cu", True),
        ("toyops/csrc", "toyops/csrcx/a.cu", False),
        ("toyops/**", "toyops/x/y.py", True),
        ("toyops/soft?ax.py", "toyops/softmax.py", True),
        ("toyops/soft?ax.py", "toyops/soft/ax.py", False),
        ("toyops/*.py", "toyops/sub/a.py", False),
        ("toyops/[ab].py", "toyops/b.py", True),
        ("toyops/[!ab].py", "toyops/b.py", False),
        ("toyops/[!ab].py", "toyops/c.py", True),
        ("toyops/a+b(1).py", "toyops/a+b(1).py", True),  # regex characters are literal
        ("toyops/[unclosed.py", "toyops/[unclosed.py", True),
        ("./toyops/a.py", "toyops\\a.py", True),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


# ------------------------------------------------------------------------------- error reports


def test_unknown_top_level_key_names_line_column_and_closest_key() -> None:
    text = "tolerence = 0.03\n" + MINIMAL
    message = one_problem(text)
    assert message.startswith("p.toml:1:1: tolerence: unknown key 'tolerence'; ")
    assert "did you mean 'tolerance'?" in message
    assert (
        "allowed keys here: tolerance, rewrite_price, vendors, owners, deployment, limits, compiler, "
        in message
    )


def test_unknown_key_in_the_second_kernel_points_at_its_line() -> None:
    text = FULL.replace('dtypes = ["bfloat16"]', 'dtypes = ["bfloat16"]\n  shapez = [[1, 2]]')
    message = one_problem(text)
    line = line_of(text, "shapez")
    assert message.startswith(f"p.toml:{line}:3: kernels[1].shapez: unknown key 'shapez'; ")
    assert "did you mean 'shapes'?" in message
    assert (
        "allowed keys here: name, bench, baseline, paths, dtypes, tolerance, rewrite_price, shapes"
        in message
    )


def test_unknown_key_inside_a_multiline_inline_table() -> None:
    text = FULL.replace("weight = 2.5 }", "wieght = 2.5 }")
    message = one_problem(text)
    line = line_of(text, "wieght")
    col = text.splitlines()[line - 1].index("wieght") + 1
    assert message.startswith(f"p.toml:{line}:{col}: kernels[1].shapes[1].wieght: unknown key")
    assert "did you mean 'weight'?" in message and "allowed keys here: shape, weight" in message


def test_key_under_the_wrong_table_says_where_it_belongs() -> None:
    text = MINIMAL + 'kind = "cli"\n'
    message = one_problem(text)
    assert f"p.toml:{len(text.splitlines())}:1: kernels[0].kind: unknown key 'kind'" in message
    assert "'kind' belongs in [deployment]" in message


def test_missing_required_key_points_at_its_table() -> None:
    text = MINIMAL.replace('bench = "ops.bench:add"\n', "")
    message = one_problem(text)
    assert message.startswith(f"p.toml:{line_of(text, '[[kernels]]')}:1: kernels[0].bench: ")
    assert "missing required key 'bench'" in message and "'module.path:function'" in message


def test_missing_deployment_is_reported_at_the_top() -> None:
    text = MINIMAL.replace('[deployment]\nkind = "long-lived"\n', "")
    message = one_problem(text)
    assert message.startswith("p.toml:1:1: deployment: missing required key 'deployment'")
    assert "long-lived | cli | serverless | latency-slo" in message


@pytest.mark.parametrize(
    ("value", "wrong"),
    [("0", "must be > 0"), ("1.5", "must be <= 1"), ("-0.1", "must be > 0")],
)
def test_tolerance_out_of_range(value: str, wrong: str) -> None:
    message = one_problem(f"tolerance = {value}\n" + MINIMAL)
    assert message.startswith("p.toml:1:13: tolerance: ")
    assert wrong in message and "0 < tolerance <= 1" in message


def test_tolerance_of_the_wrong_type() -> None:
    message = one_problem('tolerance = "3%"\n' + MINIMAL)
    assert 'tolerance: expected a number, got a string "3%"' in message
    message = one_problem("tolerance = true\n" + MINIMAL)
    assert "tolerance: expected a number, got a boolean true" in message


def test_kernel_tolerance_out_of_range() -> None:
    text = MINIMAL + "tolerance = 2\n"
    message = one_problem(text)
    assert message.startswith(f"p.toml:{line_of(text, 'tolerance = 2')}:13: kernels[0].tolerance")
    assert "must be <= 1" in message


def test_rewrite_price_defaults_to_six_percent_and_never_below_a_kernel_tolerance() -> None:
    policy = parse_policy(MINIMAL)
    assert policy.rewrite_price == 0.06
    assert policy.kernels[0].effective_rewrite_price(policy) == 0.06
    # a kernel that tolerates more than the price is not held to less when it is rewritten
    lenient = parse_policy(MINIMAL + "tolerance = 0.1\n")
    assert lenient.kernels[0].effective_rewrite_price(lenient) == 0.1
    # its own price wins over the global one
    own = parse_policy("rewrite_price = 0.04\n" + MINIMAL + "rewrite_price = 0.08\n")
    assert own.kernels[0].effective_rewrite_price(own) == 0.08


@pytest.mark.parametrize(
    ("value", "wrong"),
    [
        ("0", "must be > 0"),
        ("1.5", "must be <= 1"),
        ('"6%"', 'expected a number, got a string "6%"'),
    ],
)
def test_rewrite_price_out_of_range_or_of_the_wrong_type(value: str, wrong: str) -> None:
    message = one_problem(f"rewrite_price = {value}\n" + MINIMAL)
    assert message.startswith("p.toml:1:")
    assert "rewrite_price: " in message and wrong in message


def test_rewrite_price_below_the_tolerance_says_what_to_write() -> None:
    message = one_problem("tolerance = 0.05\nrewrite_price = 0.02\n" + MINIMAL)
    assert message.startswith("p.toml:2:17: rewrite_price: 0.02 is below the tolerance 0.05: ")
    assert "write a rewrite_price of at least 0.05" in message and "or leave it out" in message
    text = MINIMAL + "tolerance = 0.05\nrewrite_price = 0.04\n"
    message = one_problem(text)
    line = line_of(text, "rewrite_price = 0.04")
    assert message.startswith(f"p.toml:{line}:17: kernels[0].rewrite_price: 0.04 is below its ")
    assert "tolerance 0.05" in message
    # the kernel's price is judged against its own tolerance, not the global one
    text = "tolerance = 0.05\n" + MINIMAL + "tolerance = 0.01\nrewrite_price = 0.02\n"
    assert parse_policy(text).kernels[0].effective_rewrite_price(parse_policy(text)) == 0.02


@pytest.mark.parametrize(
    ("vendors", "key", "wrong"),
    [
        ("[]", "vendors", "must not be empty"),
        ('["nvidia", "nvidia"]', "vendors[1]", "vendor 'nvidia' is listed twice"),
        ('["nvidia", "intel"]', "vendors[1]", '"intel" is not allowed; allowed: nvidia | amd'),
        ('["NVIDIA"]', "vendors[0]", "did you mean 'nvidia'?"),
    ],
)
def test_vendors(vendors: str, key: str, wrong: str) -> None:
    message = one_problem(f"vendors = {vendors}\n" + MINIMAL)
    assert "p.toml:1:" in message and f" {key}: " in message and wrong in message


def test_deployment_kind_typo_gets_a_suggestion() -> None:
    text = MINIMAL.replace('"long-lived"', '"serverles"')
    message = one_problem(text)
    assert message.startswith("p.toml:2:8: deployment.kind: ")
    assert "did you mean 'serverless'?" in message
    assert "allowed: long-lived | cli | serverless | latency-slo" in message


@pytest.mark.parametrize("kind", ["cli", "serverless", "latency-slo"])
def test_first_call_budget_required_unless_long_lived(kind: str) -> None:
    text = MINIMAL.replace('"long-lived"', f'"{kind}"')
    message = one_problem(text)
    assert message.startswith("p.toml:1:1: deployment.first_call_budget_ms: ")
    assert f"kind = '{kind}' needs first_call_budget_ms" in message
    budgeted = text.replace(f'kind = "{kind}"', f'kind = "{kind}"\nfirst_call_budget_ms = 250')
    assert parse_policy(budgeted).deployment.first_call_budget_ms == 250.0


def test_first_call_budget_must_be_positive() -> None:
    text = MINIMAL.replace('kind = "long-lived"', 'kind = "long-lived"\nfirst_call_budget_ms = 0')
    message = one_problem(text)
    assert message.startswith("p.toml:3:24: deployment.first_call_budget_ms: 0 is out of range")


@pytest.mark.parametrize("key", ["max_shapes", "max_elements_per_tensor", "max_gpu_seconds"])
def test_limits_must_be_positive_integers(key: str) -> None:
    message = one_problem(f"[limits]\n{key} = 0\n" + MINIMAL)
    assert message.startswith(
        f"p.toml:2:{len(key) + 4}: limits.{key}: 0 is out of range: must be > 0"
    )
    message = one_problem(f"[limits]\n{key} = 1.5\n" + MINIMAL)
    assert f"limits.{key}: expected an integer, got a float 1.5" in message


def test_kernel_names_unique_and_identifier_like() -> None:
    second = MINIMAL[MINIMAL.index("[[kernels]]") :]
    text = MINIMAL + "\n" + second
    message = one_problem(text)
    line = [i for i, s in enumerate(text.splitlines(), 1) if s.startswith("name =")][1]
    assert message.startswith(f"p.toml:{line}:8: kernels[1].name: kernel name 'add' is already")
    message = one_problem(MINIMAL.replace('name = "add"', 'name = "vector add"'))
    assert (
        'kernels[0].name: "vector add" is not valid; expected a unique name of letters' in message
    )


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('bench = "ops.bench.add"', "bench"),
        ('bench = "ops/bench.py:add"', "bench"),
        ('bench = "ops.bench:add"\nbaseline = "ops.bench:"', "baseline"),
    ],
)
def test_entry_points_must_be_module_colon_function(line: str, key: str) -> None:
    text = MINIMAL.replace('bench = "ops.bench:add"', line)
    message = one_problem(text)
    assert f"kernels[0].{key}: " in message and "'module.path:function'" in message


def test_dtype_outside_the_allowlist_gets_the_usual_spelling() -> None:
    text = MINIMAL.replace('dtypes = ["float32"]', 'dtypes = ["float32", "fp16"]')
    message = one_problem(text)
    assert message.startswith(f"p.toml:{line_of(text, 'fp16')}:22: kernels[0].dtypes[1]: ")
    assert "\"fp16\" is not allowed; did you mean 'float16'?" in message
    assert "allowed: float16 | bfloat16 | float32 | float64 | float8_e4m3fn" in message
    message = one_problem(MINIMAL.replace('"float32"]', '"torch.bfloat16"]'))
    assert "did you mean 'bfloat16'?" in message
    message = one_problem(MINIMAL.replace('"float32"]', '"float32", "float32"]'))
    assert "kernels[0].dtypes[1]: dtype 'float32' is listed twice" in message


@pytest.mark.parametrize(
    ("shapes", "key", "wrong"),
    [
        ("[]", "kernels[0].shapes", "must not be empty"),
        ("[[1823, 0]]", "kernels[0].shapes[0][1]", "0 is out of range: must be > 0"),
        ("[[1823, 7.5]]", "kernels[0].shapes[0][1]", "expected an integer, got a float 7.5"),
        ('[["1823"]]', "kernels[0].shapes[0][0]", 'expected an integer, got a string "1823"'),
        ("[[]]", "kernels[0].shapes[0]", "a shape has 1 to 8 dimensions, this one has 0"),
        ("[[1, 1, 1, 1, 1, 1, 1, 1, 1]]", "kernels[0].shapes[0]", "this one has 9"),
        ("[1823]", "kernels[0].shapes[0]", "a shape is a list of integers like [1823, 781]"),
        ("[{ shape = [4], weight = 0 }]", "kernels[0].shapes[0].weight", "must be > 0; how much"),
        ("[{ weight = 2 }]", "kernels[0].shapes[0].shape", "missing required key 'shape'"),
        ("[[4, 4], { shape = [4, 4] }]", "kernels[0].shapes[1]", "listed twice (also shapes[0])"),
    ],
)
def test_shape_errors(shapes: str, key: str, wrong: str) -> None:
    text = MINIMAL.replace("shapes = [[98432]]", f"shapes = {shapes}")
    message = one_problem(text)
    assert message.startswith(f"p.toml:{line_of(text, 'shapes =')}:"), message
    assert f" {key}: " in message and wrong in message


def test_shape_element_inside_a_table_points_at_the_number() -> None:
    text = MINIMAL.replace("shapes = [[98432]]", "shapes = [{ shape = [64, 0] }]")
    message = one_problem(text)
    col = text.splitlines()[line_of(text, "shapes =") - 1].index("0]") + 1
    assert f":{col}: kernels[0].shapes[0].shape[1]: 0 is out of range" in message


def test_shapes_times_dtypes_over_the_limit_says_the_count() -> None:
    text = "[limits]\nmax_shapes = 3\n" + MINIMAL.replace(
        'dtypes = ["float32"]', 'dtypes = ["float32", "float16"]'
    ).replace("[[98432]]", "[[1], [2]]")
    message = one_problem(text)
    assert message.startswith(f"p.toml:{line_of(text, 'shapes = [')}:10: kernels[0].shapes: ")
    assert "2 shapes x 2 dtypes = 4 measurements, over limits.max_shapes = 3" in message


def test_shape_over_the_element_limit_says_the_count() -> None:
    text = MINIMAL.replace("[[98432]]", "[[98432], [65536, 32768]]")
    message = one_problem(text)
    assert f"p.toml:{line_of(text, 'shapes =')}:20: kernels[0].shapes[1]: " in message
    assert "65536 x 32768: 2,147,483,648 elements" in message
    assert "over limits.max_elements_per_tensor = 1,073,741,824" in message


@pytest.mark.parametrize(
    ("paths", "key", "wrong"),
    [
        ("[]", "kernels[0].paths", "must not be empty"),
        ('[""]', "kernels[0].paths[0]", "must not be empty"),
        ('["/etc/ops.py"]', "kernels[0].paths[0]", "is absolute"),
        ('["ops/../../x.py"]', "kernels[0].paths[0]", "leaves the repository"),
        ("[3]", "kernels[0].paths[0]", "expected a string in quotes, got an integer 3"),
    ],
)
def test_path_errors(paths: str, key: str, wrong: str) -> None:
    message = one_problem(MINIMAL.replace('paths = ["ops/add.py"]', f"paths = {paths}"))
    assert f" {key}: " in message and wrong in message


def test_compiler_and_github_values() -> None:
    message = one_problem('[compiler]\nnvidia_targets = ["hopper"]\n' + MINIMAL)
    assert message.startswith('p.toml:2:19: compiler.nvidia_targets[0]: "hopper" is not valid')
    message = one_problem('[github]\nbench_permission = "writ"\n' + MINIMAL)
    assert "github.bench_permission: \"writ\" is not allowed; did you mean 'write'?" in message
    message = one_problem('owners = ["gpu-team"]\n' + MINIMAL)
    assert 'owners[0]: "gpu-team" is not valid; expected who owns' in message


def test_several_errors_all_reported_in_line_order() -> None:
    text = "tolerance = 5\nvendors = []\n" + MINIMAL.replace('"float32"', '"fp32"')
    found = problems(text)
    assert [p.split(": ")[0] for p in found] == ["p.toml:1:13", "p.toml:2:11", "p.toml:10:11"]
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.toml")
    lines = caught.value.message.splitlines()
    assert lines[0] == "policy p.toml has 3 problems:"
    assert lines[1:] == found


def test_at_most_ten_errors_are_listed() -> None:
    text = "".join(f"unknown_{i} = 1\n" for i in range(14)) + MINIMAL
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.toml")
    lines = caught.value.message.splitlines()
    assert lines[0] == "policy p.toml has 14 problems:"
    assert len(lines) == 12 and lines[-1] == "... and 4 more"


def test_toml_syntax_error_reports_line_and_column() -> None:
    text = MINIMAL.replace('kind = "long-lived"', "kind = long-lived")
    message = one_problem(text)
    assert (
        message == 'p.toml:2:8: TOML syntax error: Invalid value; strings need quotes: "long-lived"'
    )
    message = one_problem(MINIMAL + "shapes = [[1]]\n")
    assert message.startswith(f"p.toml:{len(MINIMAL.splitlines()) + 1}:")
    assert "TOML syntax error: Cannot overwrite a value" in message


def test_deep_nesting_is_refused_not_crashed() -> None:
    message = one_problem("a = " + "[" * 5000)
    assert message.startswith("p.toml:1:1:")


def test_size_cap_on_text() -> None:
    text = MINIMAL + "#" * MAX_POLICY_BYTES
    message = one_problem(text)
    assert f"is {len(text):,} bytes, over the cap of 65,536 bytes (64 KiB)" in message


def test_problem_is_structured_for_annotations() -> None:
    _, found = validate_policy("tolerence = 0.03\n" + MINIMAL, "x.toml")
    assert found[0] == PolicyProblem(
        file="x.toml", line=1, column=1, key="tolerence", message=found[0].message
    )


# ---------------------------------------------------------------------------------- the files


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


PYPROJECT_HEAD = """\
[project]
name = "toyops"
version = "0.1"

[tool.ruff]
line-length = 100

"""


def as_pyproject(policy_text: str) -> str:
    """The policy moved under [tool.kernel-review], its tables renamed to match."""
    body = policy_text.replace("[[kernels]]", "[[tool.kernel-review.kernels]]")
    for table in ("deployment", "limits", "compiler", "github"):
        body = body.replace(f"[{table}]", f"[tool.kernel-review.{table}]")
    return PYPROJECT_HEAD + "[tool.kernel-review]\n" + body


def test_load_from_dot_github(tmp_path: Path) -> None:
    path = write(tmp_path, ".github/kernel-review.toml", FULL)
    loaded = load_policy(tmp_path)
    assert loaded.path == path and loaded.table is None
    assert [k.name for k in loaded.policy.kernels] == ["softmax", "matmul"]


def test_pyproject_fallback(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", as_pyproject(FULL))
    loaded = load_policy(tmp_path)
    assert loaded.path == tmp_path / "pyproject.toml"
    assert loaded.table == "tool.kernel-review"
    assert loaded.policy == parse_policy(FULL)


def test_dot_github_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", as_pyproject(FULL))
    write(tmp_path, ".github/kernel-review.toml", MINIMAL)
    assert [k.name for k in load_policy(tmp_path).policy.kernels] == ["add"]


def test_pyproject_errors_carry_pyproject_line_numbers(tmp_path: Path) -> None:
    text = as_pyproject(FULL).replace("weight = 2.5 }", "weight = -1 }")
    write(tmp_path, "pyproject.toml", text)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    line = line_of(text, "weight = -1")
    col = text.splitlines()[line - 1].index("-1") + 1
    assert f"pyproject.toml:{line}:{col}: kernels[1].shapes[1].weight: -1 is out of range" in str(
        caught.value
    )


def test_pyproject_unknown_key_in_policy_table(tmp_path: Path) -> None:
    text = as_pyproject(MINIMAL).replace(
        "[tool.kernel-review]\n", "[tool.kernel-review]\nvendor = []\n"
    )
    write(tmp_path, "pyproject.toml", text)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    expected = f"pyproject.toml:{line_of(text, 'vendor =')}:1: vendor: unknown key 'vendor'; "
    assert expected + "did you mean 'vendors'?" in str(caught.value)


def test_neither_file_says_where_it_looked_and_what_to_paste(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", PYPROJECT_HEAD)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert "looked for .github/kernel-review.toml and for a [tool.kernel-review] table" in (
        caught.value.message
    )
    assert MINIMAL_EXAMPLE in (caught.value.hint or "")


def test_near_miss_file_names_are_pointed_out(tmp_path: Path) -> None:
    write(tmp_path, ".github/kernel_review.toml", MINIMAL)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert "found .github/kernel_review.toml" in caught.value.message
    write(tmp_path, "pyproject.toml", "[tool.kernel_review]\ntolerance = 0.1\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert "rename [tool.kernel_review] to [tool.kernel-review]" in (caught.value.hint or "")


def test_oversized_file_refused_with_size_and_cap(tmp_path: Path) -> None:
    write(tmp_path, ".github/kernel-review.toml", MINIMAL + "#" * (100 * 1024))
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    size = len(MINIMAL) + 100 * 1024
    assert f".github/kernel-review.toml: the policy file is {size:,} bytes" in caught.value.message
    assert "over the cap of 65,536 bytes (64 KiB)" in caught.value.message


def test_symlinked_policy_refused(tmp_path: Path) -> None:
    target = write(tmp_path, "elsewhere.toml", MINIMAL)
    (tmp_path / ".github").mkdir()
    os.symlink(target, tmp_path / ".github" / "kernel-review.toml")
    with pytest.raises(PolicyError, match="is not a regular file"):
        load_policy(tmp_path)


def test_non_utf8_policy_refused_with_line(tmp_path: Path) -> None:
    path = tmp_path / ".github" / "kernel-review.toml"
    path.parent.mkdir()
    path.write_bytes(MINIMAL.encode() + b"# caf\xe9\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert f".github/kernel-review.toml:{len(MINIMAL.splitlines()) + 1}: not UTF-8" in (
        caught.value.message
    )


def test_locator_handles_quoted_dotted_keys_and_comments() -> None:
    text = textwrap.dedent(
        """\
        # a comment with [brackets] and key = "value"
        "tolerance" = 0.03   # trailing comment
        deployment.kind = "long-lived"
        [[kernels]]
        name = "add"   # [[kernels]] in a comment
        bench = 'ops.bench:add'
        paths = [
          "ops/add.py",  # the python side
          '''ops/csrc/add.cu''',
        ]
        dtypes = ["float32"]
        shapes = [[98432]]
        [[kernels]]
        name = "mul"
        bench = "ops.bench:mul"
        paths = ["ops/mul.py"]
        dtypes = ["float32"]
        shapes = [[1], [2], [0]]
        """
    )
    message = one_problem(text)
    assert message.startswith("p.toml:18:22: kernels[1].shapes[2][0]: 0 is out of range")
    text = text.replace('deployment.kind = "long-lived"', 'deployment.knd = "long-lived"')
    found = problems(text)
    assert found[0].startswith("p.toml:3:1: deployment.kind: missing required key 'kind'")
    assert found[1].startswith(
        "p.toml:3:1: deployment.knd: unknown key 'knd'; did you mean 'kind'?"
    )


def test_tensors_bound_the_largest_operand_not_the_problem_size():
    text = """
[deployment]
kind = "long-lived"
[[kernels]]
name = "matmul"
bench = "ops.bench:matmul"
paths = ["ops/matmul.py"]
dtypes = ["bfloat16"]
tensors = [[0, 2], [2, 1], [0, 1]]
shapes = [[4096, 4096, 4096], [8192, 1, 8192]]
"""
    policy = parse_policy(text, "p.toml")
    assert policy.kernels[0].largest_tensor((8192, 1, 8192)) == 8192 * 8192
    with pytest.raises(
        PolicyError,
        match=r"kernels\[0\]\.shapes\[0\]: 65536 x 65536 x 16: 4,294,967,296 elements in its largest tensor",
    ):
        parse_policy(text.replace("[4096, 4096, 4096]", "[65536, 65536, 16]"), "p.toml")
    with pytest.raises(
        PolicyError,
        match=r"kernels\[0\]\.tensors\[0\]: names dimension 2, but shapes\[1\] \[3, 3\]",
    ):
        parse_policy(text.replace("[8192, 1, 8192]", "[3, 3]"), "p.toml")


def test_a_large_pyproject_is_read_for_its_table(tmp_path: Path) -> None:
    """A pyproject.toml carries the whole project's configuration: 200 KiB of it is no reason
    to refuse the policy's table in it, nor to call a missing policy oversized."""
    bulk = "".join(f"[tool.other.t{i}]\nkey = {'x' * 80!r}\n" for i in range(2000))
    assert len(bulk) > 150 * 1024
    write(tmp_path, "pyproject.toml", bulk)
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert caught.value.message.startswith("no policy in ")
    table = (
        '[tool.kernel-review.deployment]\nkind = "long-lived"\n'
        '[[tool.kernel-review.kernels]]\nname = "add"\nbench = "ops.bench:add"\n'
        'paths = ["ops/add.py"]\ndtypes = ["float32"]\nshapes = [[98432]]\n'
    )
    write(tmp_path, "pyproject.toml", table + bulk)
    loaded = load_policy(tmp_path)
    assert loaded.table == "tool.kernel-review" and loaded.policy.kernels
    write(tmp_path, "pyproject.toml", table + "#" * (1024 * 1024))
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path)
    assert "over the cap of 1,048,576 bytes (1024 KiB)" in caught.value.message
