"""A change first found at a kernel's launch still names the autotune the kernel runs under
(``cross_file.compare_launches``): its config lists, or that they are computed at import.

Shortened from stickbreaking_attention/sb_varlen/sb_varlen_fwd.py in
shawntan/stickbreaking-attention at ff45fee78c5b and its parent 8dd32ad5e58f (Apache-2.0; that
pull request is in tests/data/real_prs): ``get_configs()``'s comprehension over block sizes,
stages and warps shrinks to one config, and the launch in ``_compileable_forward`` now passes
``BLOCK_M`` / ``BLOCK_N`` itself.
"""

from __future__ import annotations

from tests.diff_util import analysis_between

PATH = "stickbreaking_attention/sb_varlen/sb_varlen_fwd.py"

BEFORE = """\
import triton
import triton.language as tl


def get_configs():
    return [triton.Config({"BLOCK_M": mb, "BLOCK_N": nb}, num_stages=s, num_warps=w)
            for mb in [64, 128]
            for nb in [16, 32, 64]
            for s in [4, 2, 3, 5, 6, 7, 8]
            for w in [4, 2]]


@triton.autotune(configs=get_configs(), key=["head_size"])
@triton.jit
def _forward(Q_ptr, O_ptr, head_size, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(O_ptr + offs, tl.load(Q_ptr + offs))


def _compileable_forward(q, o, dim_size, num_seq_blocks, BLOCK_M, BLOCK_N):
    grid = (num_seq_blocks,)
    _forward[grid](
        q,
        o,
        head_size=dim_size,
        # BLOCK_M=BLOCK_M,
        # BLOCK_N=BLOCK_N,
    )
"""

AFTER = BEFORE.replace(
    """    return [triton.Config({"BLOCK_M": mb, "BLOCK_N": nb}, num_stages=s, num_warps=w)
            for mb in [64, 128]
            for nb in [16, 32, 64]
            for s in [4, 2, 3, 5, 6, 7, 8]
            for w in [4, 2]]""",
    """    return [triton.Config({}, num_stages=s, num_warps=w)
            for s in [4] # , 2, 3, 5, 6, 7, 8]
            for w in [4]] # , 2]]""",
).replace(
    """        # BLOCK_M=BLOCK_M,
        # BLOCK_N=BLOCK_N,
    )""",
    """        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N
    )""",
)


def test_a_launch_made_change_names_its_computed_configs():
    assert AFTER != BEFORE
    changes = analysis_between({PATH: BEFORE}, {PATH: AFTER}).changes
    forward = next(c for c in changes if c.name == "_forward")
    assert forward.kind == "tuning" and forward.tuning_new["BLOCK_M"] == "BLOCK_M"
    assert forward.configs_old_computed and forward.configs_new_computed


def test_a_launch_made_change_names_configs_written_out():
    written = """[triton.Config({}, num_stages=4, num_warps=4),
                       triton.Config({}, num_stages=2, num_warps=8)]"""
    before = BEFORE.replace("configs=get_configs()", f"configs={written}")
    after = AFTER.replace("configs=get_configs()", f"configs={written}")
    changes = analysis_between({PATH: before}, {PATH: after}).changes
    forward = next(c for c in changes if c.name == "_forward")
    assert not forward.configs_old_computed
    assert [c.num_stages for c in forward.configs_old or []] == [4, 2]
    assert [c.num_warps for c in forward.configs_new or []] == [4, 8]
