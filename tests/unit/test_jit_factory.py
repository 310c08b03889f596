"""A plain function a factory makes a kernel of (``triton.jit(kernel)`` inside a function) is a
kernel, and a statement moved into or out of a loop changes a kernel's code
(``bot/analysis/scan/triton``).

Shortened from src/sfast/triton/ops/group_norm.py of chengzeyi/stable-fast (MIT):
``create_group_norm_4d_forward_kernel`` copies ``group_norm_4d_forward_kernel`` with an
activation bound and applies ``triton.heuristics(...)(triton.jit(kernel))``. At 89f1105e94fe
(pull request #76) the kernel takes ``C_G`` and ``GROUP_SIZE`` as parameters the heuristics
compute instead of computing them itself; at 2536cc5d83f0 (in tests/data/real_prs) the store of
each channel's output moves into the loop over the channel's pixels; at 8a3f797ecdd5 (in
tests/data/real_prs too) the factory's ``num_warps`` heuristic changes, a tuning change of the
kernel it makes (``bot/analysis/tuning/decorator_reads``).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from bot.analysis.scan.triton import scan_python
from tests.diff_util import file_diff

PATH = "src/sfast/triton/ops/group_norm.py"
BEFORE = """\
import triton
import triton.language as tl
from sfast.utils.copy_func import copy_func
from . import activation

act = activation.identity


def group_norm_4d_forward_kernel(
    input_ptr,
    output_ptr,
    C,
    HxW,
    groups,
    BLOCK_SIZE: tl.constexpr,
):
    group = tl.program_id(0)
    pid_batch = tl.program_id(1)
@PARAMS@
    offset = pid_batch * C * HxW + group * GROUP_SIZE
    X = input_ptr + offset
    Y = output_ptr + offset
    for c in range(0, C_G):
        for off in range(0, HxW, BLOCK_SIZE):
            r = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + c * HxW + r, mask=r < HxW).to(tl.float32)
            x = act(x)
@STORE@


def create_group_norm_4d_forward_kernel(act=activation.identity):
    kernel = group_norm_4d_forward_kernel
    kernel = copy_func(kernel, globals={**globals(), **{'act': act}},
                       name=f'{kernel.__name__}_{act.__name__}')
    kernel = triton.heuristics({
        'BLOCK_SIZE': lambda kwargs: min(4096, triton.next_power_of_2(kwargs['HxW'])),
    })(triton.heuristics({
        'num_warps': lambda kwargs: max(1, min(16, triton.next_power_of_2(kwargs['HxW'] // 128))),
    })(triton.jit(kernel)))
    return kernel


def group_norm_forward(input, num_groups, act=activation.identity):
    kernel = create_group_norm_4d_forward_kernel(act=act)
    N, C, H, W = input.shape
    output = torch.empty_like(input)
    kernel[(num_groups, N)](input, output, C, H * W, num_groups)
    return output
"""
LOCALS = "\n    C_G = C // groups\n    GROUP_SIZE = C_G * HxW\n"
STORE_AFTER_LOOP = "        tl.store(Y + c * HxW + r, x, mask=r < HxW)"
STORE_IN_LOOP = "            tl.store(Y + c * HxW + r, x, mask=r < HxW)"


def _code(params: str = LOCALS, store: str = STORE_IN_LOOP) -> str:
    return BEFORE.replace("@PARAMS@", params).replace("@STORE@", store)


def _changes(before: str, after: str) -> list[str]:
    old, new = {PATH: before}, {PATH: after}
    diff = file_diff(PATH, before, after)
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[PATH])
    return sorted(f"{c.kind} {c.name}" for c in analysis.changes)


def test_a_function_a_factory_jits_is_a_kernel_and_the_factory_is_not():
    kernels = [k.name for k in scan_python(PATH, _code()).kernels]
    assert kernels == ["group_norm_4d_forward_kernel"]


def test_a_function_no_factory_jits_is_no_kernel():
    plain = _code().replace("(triton.jit(kernel))", "(kernel)")
    assert not scan_python(PATH, plain).kernels


def test_parameters_the_heuristics_compute_instead_of_locals_change_the_factory_made_kernel():
    params = _code().replace("    HxW,\n", "    HxW,\n    C_G,\n    GROUP_SIZE,\n")
    after = params.replace(LOCALS, "\n")
    assert _changes(_code(), after) == ["body group_norm_4d_forward_kernel"]


def test_a_store_moved_into_a_loop_is_a_body_change():
    before = _code(store=STORE_AFTER_LOOP)
    assert _changes(before, _code(store=STORE_IN_LOOP)) == ["body group_norm_4d_forward_kernel"]
    assert _changes(before, before.replace("pid_batch * C", "pid_batch  *  C")) == []


def test_heuristics_the_factory_applies_are_tuning_of_the_kernel_it_makes():
    before = _code().replace(
        "max(1, min(16, triton.next_power_of_2(kwargs['HxW'] // 128)))",
        "max(1, min(16, kwargs['HxW'] // 128))",
    )
    assert before != _code()
    assert _changes(before, _code()) == ["tuning group_norm_4d_forward_kernel"]
