"""A decorator of the repository that applies ``triton.jit`` makes a kernel, and a name the
repository binds to ``triton.Config`` makes configs: each imported name is followed to its
definition in the module it comes from (``bot/analysis/scan/bound_names``).

Shortened from ServiceNow/Fast-LLM (Apache-2.0) at 46ffbdd12696 (in tests/data/real_prs):
fast_llm/functional/triton/__init__.py binds ``triton_jit = try_decorate(lambda: triton.jit)``,
``triton_autotune`` likewise and ``TritonConfig = triton.Config``; entropy_loss.py decorates its
kernels ``@triton_jit()`` and, in that commit, puts ``@triton_autotune`` over three
``TritonConfig`` on the from-distribution kernels (trimmed to one kernel and its body's first
lines here).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.scan import scan_read, scan_source
from tests.diff_util import file_diff

INIT = "fast_llm/functional/triton/__init__.py"
INIT_TEXT = """\
import torch

from fast_llm.utils import InvalidObject, try_decorate

try:
    import triton
    import triton.language as tl

    tl_constexpr = tl.constexpr
    TritonConfig = triton.Config
except ImportError as e:
    triton = InvalidObject(e)
    tl = triton
    tl_constexpr = None
    TritonConfig = lambda *args, **kwargs: None

triton_jit = try_decorate(lambda: triton.jit)
triton_autotune = try_decorate(lambda: triton.autotune)
"""

PATH = "fast_llm/functional/triton/entropy_loss.py"
IMPORT = (
    "from fast_llm.functional.triton import TritonConfig, tl, tl_constexpr, triton, "
    "triton_autotune, triton_jit\n"
)
KERNEL = """
@triton_jit()
def triton_reverse_kl_forward_kernel_from_distribution(
    logits_ptr,
    target_ptr,
    n_cols: tl_constexpr,
    block_size: tl_constexpr,
):
    block_idx = tl.program_id(0).to(tl.int64)
    logits_ptr = logits_ptr + block_idx * n_cols
    col_offsets = tl.arange(0, block_size)
    logits = tl.load(logits_ptr + col_offsets, mask=col_offsets < n_cols).to(tl.float32)
    tl.store(target_ptr + block_idx, tl.sum(logits, 0))
"""
CONFIGS = """
_distribution_autotune_configs = (
    TritonConfig({}, num_warps=8),
    TritonConfig({}, num_warps=16),
    TritonConfig({}, num_warps=32),
)

"""
BEFORE = IMPORT + KERNEL
AFTER = (
    IMPORT
    + CONFIGS
    + KERNEL.replace(
        "@triton_jit()",
        '@triton_autotune(configs=_distribution_autotune_configs, key=["n_cols"])\n@triton_jit()',
    )
)


def _read(files: dict[str, str]):
    return files.get


def test_a_project_decorator_that_applies_triton_jit_makes_a_kernel():
    read = _read({INIT: INIT_TEXT, PATH: BEFORE})
    assert [k.name for k in scan_read(PATH, BEFORE, read).kernels] == [
        "triton_reverse_kl_forward_kernel_from_distribution"
    ]
    # the file alone does not say what triton_jit is
    assert scan_source(PATH, BEFORE).kernels == ()


def test_autotune_added_with_project_configs_is_tuning_with_its_configs():
    old = {INIT: INIT_TEXT, PATH: BEFORE}
    new = {INIT: INIT_TEXT, PATH: AFTER}
    analysis = analyze_diff(
        file_diff(PATH, BEFORE, AFTER), old_source=old.get, new_source=new.get, old_files=[PATH]
    )
    [change] = analysis.changes
    assert (change.kind, change.name) == (
        "tuning",
        "triton_reverse_kl_forward_kernel_from_distribution",
    )
    assert [c.num_warps for c in change.configs_new or []] == [8, 16, 32]


def test_a_relative_import_and_a_wrapping_function_are_followed():
    helper = "pkg/ops/jit.py"
    helper_text = "import triton\n\n\ndef my_jit(**kwargs):\n    return triton.jit(**kwargs)\n"
    text = (
        "import triton.language as tl\n"
        "from .jit import my_jit\n\n\n"
        "@my_jit(do_not_specialize=['n'])\n"
        "def add_kernel(x_ptr, n):\n    tl.store(x_ptr, n)\n"
    )
    kernels = scan_read("pkg/ops/add.py", text, _read({helper: helper_text})).kernels
    assert [k.name for k in kernels] == ["add_kernel"]


def test_a_project_decorator_that_does_not_apply_triton_jit_makes_no_kernel():
    helper = "pkg/ops/timing.py"
    helper_text = "import triton\n\n\ndef timed(fn):\n    return fn\n"
    text = (
        "import triton.language as tl\n"
        "from pkg.ops.timing import timed\n\n\n"
        "@timed\n"
        "def add(x_ptr, n):\n    tl.store(x_ptr, n)\n"
    )
    assert scan_read("pkg/ops/add.py", text, _read({helper: helper_text})).kernels == ()
