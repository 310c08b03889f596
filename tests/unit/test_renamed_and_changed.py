"""A kernel renamed and changed in one commit is one body change under its new name: the host
function that launched the old name launches the new one in its place
(``bot/analysis/cross_file._renamed_and_changed``).

Shortened from triton_transformer/layernorm.py of lucidrains/triton-transformer (MIT): at
f9549023a764 (in tests/data/real_prs) layernorm_gamma_beta_kernel_backward becomes
layernorm_gamma_kernel_backward without its dbeta sum and store, and _layernorm.backward launches
it in the old one's place. A kernel that only replaces another beside it is not paired.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

PATH = "triton_transformer/layernorm.py"
BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def layernorm_gamma_beta_kernel_backward(
    dbeta_ptr, dgamma_ptr, norm_ptr, dy_ptr, n_cols, **meta
):
    col_range = tl.program_id(0) * meta['BLOCK_SIZE'] + tl.arange(0, meta['BLOCK_SIZE'])
    mask = col_range < n_cols
    dy = tl.load(dy_ptr + col_range, mask=mask, other=0.)
    norm = tl.load(norm_ptr + col_range, mask=mask, other=0.)
    tl.store(dbeta_ptr + col_range, dy, mask=mask)
    tl.store(dgamma_ptr + col_range, dy * norm, mask=mask)


class _layernorm(torch.autograd.Function):
    @staticmethod
    def backward(ctx, dy):
        normed, = ctx.saved_tensors
        n_cols = dy.shape[-1]
        dbeta = torch.empty_like(dy)
        dgamma = torch.empty_like(dy)
        layernorm_gamma_beta_kernel_backward[(triton.cdiv(n_cols, 64),)](
            dbeta, dgamma, normed, dy, n_cols, BLOCK_SIZE=64
        )
        return dgamma, dbeta
"""
EDITS = {  # the kernel renamed, its dbeta output gone, the launcher's with it
    "layernorm_gamma_beta_kernel_backward": "layernorm_gamma_kernel_backward",
    "dbeta_ptr, dgamma_ptr": "dgamma_ptr",
    "    tl.store(dbeta_ptr + col_range, dy, mask=mask)\n": "",
    "        dbeta = torch.empty_like(dy)\n": "",
    "dbeta, dgamma, normed": "dgamma, normed",
    "return dgamma, dbeta": "return dgamma, None",
}
AFTER = BEFORE
for old, new in EDITS.items():
    AFTER = AFTER.replace(old, new)


def _changes(before: str, after: str) -> list[str]:
    analysis = analyze_diff(
        file_diff(PATH, before, after),
        old_source={PATH: before}.get,
        new_source={PATH: after}.get,
    )
    return sorted(f"{c.kind} {c.name}" for c in analysis.changes)


def test_a_kernel_renamed_and_changed_where_it_was_launched_is_one_body_change():
    assert _changes(BEFORE, AFTER) == ["body layernorm_gamma_kernel_backward"]


def test_a_new_kernel_launched_beside_the_old_one_is_not_paired_with_it():
    # the old kernel is still launched (by another host function): the new one did not take
    # its place
    kept = BEFORE.replace("class _layernorm", "def old_path(dbeta, dgamma, normed, dy, n_cols):\n"
                          "    layernorm_gamma_beta_kernel_backward[(1,)](\n"
                          "        dbeta, dgamma, normed, dy, n_cols, BLOCK_SIZE=64\n    )\n\n\n"
                          "class _layernorm")  # fmt: skip
    old_kernel = BEFORE[BEFORE.index("@triton.jit") : BEFORE.index("class _layernorm")]
    after = AFTER.replace("@triton.jit", old_kernel + "@triton.jit", 1).replace(
        "class _layernorm",
        kept[kept.index("def old_path") : kept.index("class _layernorm")] + "class _layernorm",
    )
    changes = _changes(kept, after)
    assert "new layernorm_gamma_kernel_backward" in changes
    assert "body layernorm_gamma_kernel_backward" not in changes
