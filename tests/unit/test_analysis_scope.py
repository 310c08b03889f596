"""``text.walk`` gives ``ast.walk``'s nodes in ``ast.walk``'s order, and within
``remembering_walks`` (one analysis) a tree walked again gives the same nodes without walking
it again; outside, nothing is remembered (``bot/analysis/text.py``)."""

from __future__ import annotations

import ast
import copy

from bot.analysis.text import remembering_walks, walk

CODE = """\
import triton

@triton.jit
def k(x, y, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i) if BLOCK > 1 else 0)

def run(x, y):
    k[(x.numel(),)](x, y, BLOCK=128)
"""


def _ids(nodes) -> list[int]:
    return [id(n) for n in nodes]


def test_the_order_is_ast_walks():
    tree = ast.parse(CODE)
    assert _ids(walk(tree)) == _ids(ast.walk(tree))
    func = tree.body[1]
    assert _ids(walk(func)) == _ids(ast.walk(func))


def test_a_tree_walked_again_in_one_analysis_gives_the_same_nodes():
    tree = ast.parse(CODE)
    seen: list[list[int]] = []

    @remembering_walks
    def analysis() -> None:
        for _ in range(3):
            seen.append(_ids(walk(tree)))
        nested()

    @remembering_walks
    def nested() -> None:  # an analysis inside another shares its memory
        seen.append(_ids(walk(tree)))

    analysis()
    assert seen == [_ids(ast.walk(tree))] * 4


def test_a_walk_stopped_early_leaves_the_next_walk_whole():
    tree = ast.parse(CODE)

    @remembering_walks
    def analysis() -> list[int]:
        first = next(n for n in walk(tree) if isinstance(n, ast.FunctionDef))
        assert first.name == "k"
        return _ids(walk(tree))

    assert analysis() == _ids(ast.walk(tree))


def test_nothing_is_remembered_after_the_analysis():
    tree = ast.parse(CODE)

    @remembering_walks
    def analysis() -> int:
        walk(tree)
        return sum(1 for _ in walk(tree))

    before = analysis()
    tree.body.append(copy.deepcopy(tree.body[-1]))  # a tree changed between two analyses
    assert sum(1 for _ in walk(tree)) == len(list(ast.walk(tree))) > before
    assert analysis() == len(list(ast.walk(tree)))
