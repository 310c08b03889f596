"""Host code that only adds what a new type needs (a whole ``else if constexpr
(std::is_same...)`` branch, a call of another instance of a template it already calls) changes no
existing instance's launch (``reach/host_cpp._new_type_code``); a changed existing branch does.

Shortened from tests/testing_commons/testing_commons.cuh, testing_utils.cuh and
tests/group/memory/tile/global_to_register.cu of HazyResearch/ThunderKittens (MIT) at
d716745fe700 (parent 4e6df56c321e): the test harness kernel ``global_wrapper_2d`` is launched by
``wrapper_2d::run``, which calls ``initialize``; the pull request adds dtype branches to
``initialize`` (both in testing_utils.cuh, with the sweep loops) and sweeps of new dtypes to ``tests``. Read as in repo mode (whole files, though
testing_utils.cuh's diff lines show no kernel).
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

HARNESS = """\
#pragma once
#include "testing_utils.cuh"

template<typename Ker, typename T, int H, int W, int NW, typename G, typename... args>
static __global__ void global_wrapper_2d(const __grid_constant__ G input, const __grid_constant__ G output) {
    Ker::template device_func<H, W, NW, G, args...>(input, output);
}
template<typename test, int H, int W, int NUM_WORKERS, typename... args>
struct wrapper_2d {
    using dtype = gmem_dtype<test>;
    static void run(test_data& results) {
        constexpr int SIZE = H*W*256;
        dtype *d_i, *d_o;
        std::vector<float> i_ref(SIZE);
        std::vector<float> o_ref(SIZE);
        initialize(&d_i, &d_o, i_ref, o_ref);
        using GL = typename kittens::gl<dtype, 1, 1, H*16, W*16>;
        GL input(d_i, nullptr, nullptr, nullptr, nullptr);
        GL output(d_o, nullptr, nullptr, nullptr, nullptr);
        global_wrapper_2d<test, dtype, H, W, NUM_WORKERS, GL, args...><<<1, NUM_WORKERS*32, kittens::MAX_SHARED_MEMORY-1024>>>(input, output);
    }
};
template<typename test, int MAX_H=8, int MAX_W=8, int NUM_WORKERS=1, typename... args> using sweep_size_2d = loop_h<wrapper_2d, test, MAX_H, MAX_W, NUM_WORKERS, MAX_H, args...>;
"""
UTILS = """\
#pragma once

template<template<typename,int,int,int,typename...> typename base, typename test, int MAX_H, int MAX_W, int NUM_WORKERS, int H, int W, typename... args>
struct loop_w {
    static void run(test_data& results) {
        if constexpr (W > 1) {
            loop_w<base, test, MAX_H, MAX_W, NUM_WORKERS, H, W-1, args...>::run(results);
        }
        base<test, H, W, NUM_WORKERS, args...>::run(results);
    }
};
template<template<typename,int,int,int,typename...> typename base, typename test, int MAX_H, int MAX_W, int NUM_WORKERS, int H, typename... args>
struct loop_h {
    static void run(test_data& results) {
        if constexpr (H > 1) {
            loop_h<base, test, MAX_H, MAX_W, NUM_WORKERS, H-1, args...>::run(results);
        }
        loop_w<base, test, MAX_H, MAX_W, NUM_WORKERS, H, MAX_W, args...>::run(results);
    }
};

template<typename T, initializers initializer=initializers::RANDOM, int SEED=42>
void initialize(T **d_i, T **d_o, std::vector<float> &i_ref, std::vector<float> &o_ref) {
    const int input_size  = i_ref.size();
    std::vector<T> i_t(input_size);
    for(int idx = 0; idx < input_size; idx++) {
        float f = 1.0f;
        if constexpr (std::is_same_v<T, kittens::bf16>) {
            i_t[idx] = __float2bfloat16(f);
            i_ref[idx] = __bfloat162float(i_t[idx]);
        }
        else if constexpr (std::is_same_v<T, float>) {
            i_t[idx] = f;
            i_ref[idx] = f;
        }
        else if constexpr (std::is_same_v<T, half>) {
            i_t[idx] = __float2half(f);
            i_ref[idx] = __half2float(i_t[idx]);
        }
    }
    cudaMalloc(d_i, input_size * sizeof(T));
    cudaMemcpy(*d_i, i_t.data(), input_size * sizeof(T), cudaMemcpyHostToDevice);
}
"""
TEST = """\
#include "testing_commons.cuh"

template<typename T>
struct group_load_store {
    using dtype = T;
    template<int H, int W, int NW, gl_t GL, kittens::ducks::rt_layout::all L> __device__ static void device_func(const GL &input, const GL &output) {
        output[{0, 0, 0, threadIdx.x}] = input[{0, 0, 0, threadIdx.x}];
    }
};

void group::memory::tile::global_to_register::tests(test_data &results) {
    sweep_size_2d<group_load_store<float>, 1, 1, 4, kittens::ducks::rt_layout::row>::run(results);
    sweep_size_2d<group_load_store<kittens::half>, 1, 1, 4, kittens::ducks::rt_layout::row>::run(results);
    std::cout << std::endl;
}
"""
BASE = {
    "tests/testing_commons/testing_commons.cuh": HARNESS,
    "tests/testing_commons/testing_utils.cuh": UTILS,
    "tests/group/memory/tile/global_to_register.cu": TEST,
}


# the test sweeps a new dtype: a new instance of the harness's launch
SWEEP = TEST.replace(
    "    std::cout",
    "    sweep_size_2d<group_load_store<double>, 1, 1, 1, kittens::ducks::rt_layout::row>"
    "::run(results);\n    std::cout",
)


def changes_between(old: dict[str, str], new: dict[str, str]) -> list[str]:
    diff = "".join(file_diff(p, old.get(p), new[p]) for p in sorted(new) if old.get(p) != new[p])
    analysis = analyze_diff(
        diff, old_source=old.get, new_source=new.get, old_files=sorted(old), thrifty=False
    )
    return [f"{c.kind} {c.name}" for c in analysis.changes]


def _with(utils: str) -> dict[str, str]:
    return {
        **BASE,
        "tests/testing_commons/testing_utils.cuh": utils,
        "tests/group/memory/tile/global_to_register.cu": SWEEP,
    }


def test_new_type_branches_and_a_new_instance_change_no_launch() -> None:
    utils = UTILS.replace(
        "        else if constexpr (std::is_same_v<T, half>) {\n",
        "        else if constexpr (std::is_same_v<T, double>) {\n"
        "            i_t[idx] = f;\n"
        "            i_ref[idx] = float(i_t[idx]);\n"
        "        }\n"
        "        else if constexpr (std::is_same_v<T, half>) {\n",
    )
    assert changes_between(BASE, _with(utils)) == []


def test_a_new_branch_closed_by_the_next_one_s_line_changes_no_launch() -> None:
    utils = UTILS.replace(
        "            i_ref[idx] = __bfloat162float(i_t[idx]);\n",
        "            i_ref[idx] = __bfloat162float(i_t[idx]);\n"
        "        } else if constexpr (std::is_same_v<T, bool>) {\n"
        "            i_t[idx] = f > 0.f;\n"
        "            i_ref[idx] = float(i_t[idx]);\n",
    )
    assert changes_between(BASE, _with(utils)) == []


def test_a_changed_existing_branch_changes_the_launch() -> None:
    utils = UTILS.replace("            i_ref[idx] = f;\n", "            i_ref[idx] = 2.0f * f;\n")
    assert changes_between(BASE, _with(utils)) == ["launch global_wrapper_2d"]


# HazyResearch/ThunderKittens (MIT) at 0b55588d2769 ("Add bool dtype support", parent
# d716745fe700, in tests/data/real_prs): initialize gains a bool branch after the double one, and
# holds its host copy in ``host_t``, ``uint8_t`` for bool and ``T`` for every other type.
DOUBLE = (
    "        else if constexpr (std::is_same_v<T, double>) {\n"
    "            i_t[idx] = f;\n"
    "            i_ref[idx] = float(i_t[idx]);\n"
    "        }\n"
)
BOOL = DOUBLE.replace("double", "bool").replace("i_t[idx] = f;", "i_t[idx] = f > 0.f;")
HALF = "        else if constexpr (std::is_same_v<T, half>) {\n"
UTILS_DOUBLE = UTILS.replace(HALF, DOUBLE + HALF)
UTILS_PATH = "tests/testing_commons/testing_utils.cuh"
HOST_T = (
    "    using host_t = std::conditional_t<std::is_same_v<T, {0}>, uint8_t, T>;\n"
    "    static_assert(sizeof(host_t) == sizeof(T));\n"
    "    std::vector<host_t> i_t(input_size);\n"
)


def test_a_new_branch_shown_from_the_middle_of_the_one_above_changes_no_launch() -> None:
    # git shows the bool branch from the middle of the double one, as in the pull request: the
    # same text as the whole branch, slid down two lines
    old, new = {**BASE, UTILS_PATH: UTILS_DOUBLE}, _with(UTILS_DOUBLE.replace(HALF, BOOL + HALF))
    diff = "".join(file_diff(p, old[p], new[p]) for p in sorted(new) if old[p] != new[p])
    tail = "             i_ref[idx] = float(i_t[idx]);\n         }\n"
    shown = tail + "".join(f"+{x}\n" for x in BOOL.split("\n")[:-1])
    slid = (
        "+            i_ref[idx] = float(i_t[idx]);\n+        }\n"
        + "".join(f"+{x}\n" for x in BOOL.split("\n")[:2])
        + tail
    )
    assert shown in diff
    analysis = analyze_diff(
        diff.replace(shown, slid),
        old_source=old.get,
        new_source=new.get,
        old_files=sorted(old),
        thrifty=False,
    )
    assert [f"{c.kind} {c.name}" for c in analysis.changes] == []


def test_a_type_alias_that_differs_for_the_new_type_only_changes_no_launch() -> None:
    utils = UTILS.replace(HALF, BOOL + HALF).replace(
        "    std::vector<T> i_t(input_size);\n", HOST_T.format("bool")
    )
    assert changes_between(BASE, _with(utils)) == []


def test_a_type_alias_that_differs_for_an_existing_type_changes_the_launch() -> None:
    utils = UTILS.replace(HALF, BOOL + HALF).replace(
        "    std::vector<T> i_t(input_size);\n", HOST_T.format("half")
    )
    assert changes_between(BASE, _with(utils)) == ["launch global_wrapper_2d"]


def test_a_static_assertion_changes_no_launch() -> None:
    utils = UTILS.replace(
        "    std::vector<T> i_t(input_size);\n",
        "    static_assert(sizeof(T) <= 8);\n    std::vector<T> i_t(input_size);\n",
    )
    assert changes_between(BASE, _with(utils)) == []
