"""A CUDA op replaced by a ``triton_op`` that launches its kernel through ``wrap_triton`` is a
rewrite of the kernel so launched; the ``@triton.jit`` helper beside it is not paired.

Shortened from torchmd/torchmd-net at 33447912a7b0 and its parent (MIT; that pull request is
in tests/data/real_prs): the cell-list CUDA kernel ``traverseCellList`` (deleted with the
extension) is replaced by ``cell_neighbor_kernel`` in triton_cell.py, launched through
``wrap_triton``; ``_tl_round``, defined in triton_cell.py (called by the kernel) and again in
triton_neighbors.py (called by nothing there), is a helper.
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

CUH = "torchmdnet/extensions/neighbors/neighbors_cuda_cell.cuh"
CUH_TEXT = """\
template <typename scalar_t>
__global__ void traverseCellList(const Accessor<scalar_t, 2> sorted_positions,
                                 Accessor<int32_t, 2> neighbors, const int n_atoms) {
  const int i_atom = blockIdx.x * blockDim.x + threadIdx.x;
  if (i_atom >= n_atoms) return;
  neighbors[0][i_atom] = i_atom;
}

static void forward_cell(const Tensor& positions, Tensor& neighbors) {
  traverseCellList<<<(positions.size(0) + 127) / 128, 128>>>(
      get_accessor<scalar_t, 2>(positions), get_accessor<int32_t, 2>(neighbors), positions.size(0));
}
"""
OPS = "torchmdnet/extensions/ops.py"
OPS_BEFORE = """\
import torch


def get_neighbor_pairs_kernel(strategy, positions):
    return torch.ops.torchmdnet_extensions.get_neighbor_pairs(strategy, positions)
"""
OPS_AFTER = """\
import torch

from torchmdnet.extensions.triton_cell import triton_neighbor_cell


def get_neighbor_pairs_kernel(strategy, positions):
    return triton_neighbor_cell(positions)
"""
ROUND = """\
@triton.jit
def _tl_round(x):
    return tl.where(x >= 0, tl.math.floor(x + 0.5), tl.math.ceil(x - 0.5))
"""
NEIGHBORS = "torchmdnet/extensions/triton_neighbors.py"
NEIGHBORS_TEXT = "import triton\nimport triton.language as tl\n\n\n" + ROUND
CELL = "torchmdnet/extensions/triton_cell.py"
CELL_TEXT = (
    """\
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


"""
    + ROUND
    + """

@triton.jit
def cell_neighbor_kernel(SortedPositions, Neighbors, n_atoms, box_x, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dx = tl.load(SortedPositions + offs, mask=offs < n_atoms)
    dx = dx - box_x * _tl_round(dx / box_x)
    tl.store(Neighbors + offs, dx, mask=offs < n_atoms)


@triton_op("torchmdnet::triton_neighbor_cell", mutates_args={})
def triton_neighbor_cell(positions):
    neighbors = torch.empty_like(positions)
    grid = (triton.cdiv(positions.size(0), 128),)
    wrap_triton(cell_neighbor_kernel)[grid](positions, neighbors, positions.size(0), 1.0, BLOCK=128)
    return neighbors
"""
)


def _deleted(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"-{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n"
        f"@@ -1,{len(lines)} +0,0 @@\n{body}"
    )


def test_the_kernel_is_paired_and_its_helper_is_not():
    old = {CUH: CUH_TEXT, OPS: OPS_BEFORE}
    new = {OPS: OPS_AFTER, NEIGHBORS: NEIGHBORS_TEXT, CELL: CELL_TEXT}
    diff = (
        _deleted(CUH, CUH_TEXT)
        + file_diff(OPS, OPS_BEFORE, OPS_AFTER)
        + file_diff(NEIGHBORS, None, NEIGHBORS_TEXT)
        + file_diff(CELL, None, CELL_TEXT)
    )
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=sorted(old))
    kinds = {c.name: c.kind for c in analysis.changes}
    assert kinds.get("cell_neighbor_kernel") == "rewrite"
    assert kinds.get("_tl_round") in (None, "new")
