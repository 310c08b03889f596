"""A role picked by a string literal on both sides: the old op's C++ host code picks its
kernels by ``strategy == "cell"`` (``reach/op_calls.keyed_refs``), and the Python function the
switched call site now calls picks Triton kernels by the same literals
(``reach/moved_calls.keyed_kernels``); each new kernel is paired with the old kernels of its
literal, not with every kernel of the op.

Shortened from torchmd/torchmd-net (MIT) at 33447912a7b0 and its parent 75b16e625039 (in
tests/data/real_prs): torchmdnet/extensions/ops.py switches from
torch.ops.torchmdnet_extensions.get_neighbor_pairs (TORCH_LIBRARY; the C++ files are the
excerpts of tests/unit/test_op_calls.py) to triton_neighbors.triton_neighbor_pairs, which applies
the brute or the cell autograd Function by strategy.
"""

from __future__ import annotations

from tests.diff_util import analysis_between
from tests.unit.test_op_calls import TORCHMD

EXT = "torchmdnet/extensions"

REGISTRATION = """\
TORCH_LIBRARY(torchmdnet_extensions, m) {
    m.def("get_neighbor_pairs(str strategy, Tensor positions) -> (Tensor neighbors, Tensor num_pairs)");
    m.def("get_neighbor_pairs_fwd(str strategy, Tensor positions) -> (Tensor neighbors, Tensor num_pairs)");
}
"""

OPS_BEFORE = """\
import torch


def get_neighbor_pairs_kernel(strategy, positions):
    return torch.ops.torchmdnet_extensions.get_neighbor_pairs(strategy, positions)
"""

OPS_AFTER = """\
import torch
from torchmdnet.extensions.triton_neighbors import triton_neighbor_pairs


def get_neighbor_pairs_kernel(strategy, positions):
    return triton_neighbor_pairs(strategy, positions)
"""

NEIGHBORS = """\
def triton_neighbor_pairs(strategy, positions):
    from torchmdnet.extensions.triton_cell import TritonCellNeighborAutograd
    from torchmdnet.extensions.triton_brute import TritonBruteNeighborAutograd

    if strategy == "brute":
        return TritonBruteNeighborAutograd.apply(positions)
    elif strategy == "cell":
        return TritonCellNeighborAutograd.apply(positions)
    else:
        raise ValueError(f"Unsupported strategy {strategy}")
"""


def _triton(name: str, cls: str) -> str:
    return f"""\
import torch
import triton
import triton.language as tl


@triton.jit
def {name}(positions_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(positions_ptr + offs), mask=offs < n)


class {cls}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, positions):
        out = torch.empty_like(positions)
        {name}[(triton.cdiv(positions.numel(), 128),)](positions, out, positions.numel(), BLOCK=128)
        return out
"""


def _olds() -> dict[str, list[str]]:
    cpp = {f"torchmdnet/{p[len('ext/') :]}": text for p, text in TORCHMD.items()}
    old = {**cpp, f"{EXT}/torchmdnet_extensions.cpp": REGISTRATION, f"{EXT}/ops.py": OPS_BEFORE}
    new = {
        **old,
        f"{EXT}/ops.py": OPS_AFTER,
        f"{EXT}/triton_neighbors.py": NEIGHBORS,
        f"{EXT}/triton_brute.py": _triton("_neighbor_brute_kernel", "TritonBruteNeighborAutograd"),
        f"{EXT}/triton_cell.py": _triton("cell_neighbor_kernel", "TritonCellNeighborAutograd"),
    }
    return {
        c.name: sorted(r.name for r in [c.old, *c.old_variants] if r is not None)
        for c in analysis_between(old, new).changes
        if c.kind == "rewrite"
    }


def test_each_triton_kernel_replaces_the_kernels_its_strategy_picked() -> None:
    assert _olds() == {
        # brute took the shared kernel's role too: the old code picked it for brute at size
        "_neighbor_brute_kernel": [
            "add_self_kernel",
            "forward_kernel_brute",
            "forward_kernel_shared",
        ],
        "cell_neighbor_kernel": ["assignCellIndex", "traverseCellList"],
    }
