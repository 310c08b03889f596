"""What one analysis sets up for its speed (``bot/analysis/scope.py``): ``text.walk`` gives
``ast.walk``'s nodes in ``ast.walk``'s order, and within ``remembering_walks`` a tree walked again
gives the same nodes without walking it again, outside nothing is remembered; the cycle
collector waits while an analysis runs and is on again when it returns, however it returns."""

from __future__ import annotations

import ast
import copy
import gc

import pytest

from bot.analysis.classify import analyze_diff
from bot.analysis.scope import one_analysis
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


def test_the_collector_waits_while_an_analysis_runs():
    seen: list[bool] = []

    @one_analysis
    def analysis() -> None:
        seen.append(gc.isenabled())
        nested()

    @one_analysis
    def nested() -> None:
        seen.append(gc.isenabled())

    assert gc.isenabled()
    analysis()
    assert seen == [False, False]
    assert gc.isenabled()


def test_the_collector_is_on_again_after_an_analysis_that_raised():
    @one_analysis
    def analysis() -> None:
        raise ValueError("a reader failed")

    with pytest.raises(ValueError, match="a reader failed"):
        analysis()
    assert gc.isenabled()


def test_a_caller_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        assert analyze_diff("").changes == []
        assert not gc.isenabled()
    finally:
        gc.enable()
