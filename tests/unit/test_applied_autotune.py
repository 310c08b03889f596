"""What a function applying a decorator to a kernel by a call reads tunes that kernel, as a
decorator's reads would (``bot/analysis/tuning/decorator_reads``).

Shortened from xlite-dev/ffpa-attn 25303e3 (pull request #201, Apache-2.0),
src/ffpa_attn/triton/_ffpa_bwd.py: ``_get_pre_autotune`` builds ``triton.autotune(configs=
_gen_pre_autotune_configs(...))(_ffpa_bwd_pre_impl)`` on first use and caches it; the builder
drops BLOCK_M 256 and tries one warp count in "fast" mode. (92f4d07411ce, in tests/data/real_prs,
does the same for the SM90 kernels, with the builder's result bound to a local first; the
heuristics a factory applies are in test_jit_factory.py.)
"""

from __future__ import annotations

from bot.analysis.classify import analyze_diff
from tests.diff_util import file_diff

FFPA = "src/ffpa_attn/triton/_ffpa_bwd.py"
FFPA_BEFORE = """\
import triton
import triton.language as tl


@triton.jit
def _ffpa_bwd_pre_impl(Out, DO, Delta, seqlen_q, headdim, BLOCK_M: tl.constexpr):
  offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
  o = tl.load(Out + offs_m, mask=offs_m < seqlen_q)
  do = tl.load(DO + offs_m, mask=offs_m < seqlen_q)
  tl.store(Delta + offs_m, o * do, mask=offs_m < seqlen_q)


def _gen_pre_autotune_configs(d_chunk: bool, autotune_mode: str = "max") -> list[triton.Config]:
  del autotune_mode
  configs = []
  for block_m in [64, 128, 256]:
    for num_warps in [4, 8]:
      configs.append(triton.Config({"BLOCK_M": block_m, "D_CHUNK": d_chunk}, num_warps=num_warps))
  return configs


_ffpa_bwd_pre_autotune_cache: dict[tuple[bool, str, str], callable] = {}


def _get_pre_autotune(d_chunk: bool, autotune_mode: str, dtype: str):
  cache_key = (d_chunk, autotune_mode, dtype)
  if cache_key not in _ffpa_bwd_pre_autotune_cache:
    _ffpa_bwd_pre_autotune_cache[cache_key] = triton.autotune(
      configs=_gen_pre_autotune_configs(d_chunk=d_chunk, autotune_mode=autotune_mode),
      key=["autotune_seqlen_q_bucket", "headdim"],
      reset_to_zero=["Delta"],
      cache_results=True,
    )(_ffpa_bwd_pre_impl)
  return _ffpa_bwd_pre_autotune_cache[cache_key]


def _ffpa_attn_backward_triton_impl(o, do, delta, seqlen_q, headdim, d_chunk, autotune_mode, dtype):
  pre_kernel = _get_pre_autotune(d_chunk, autotune_mode, dtype)
  grid = lambda meta: (triton.cdiv(seqlen_q, meta["BLOCK_M"]),)
  pre_kernel[grid](o, do, delta, seqlen_q, headdim)
"""
FFPA_AFTER = (
    FFPA_BEFORE.replace("  del autotune_mode\n", "")
    .replace("[64, 128, 256]", "[64, 128]")
    .replace(
        "for num_warps in [4, 8]", 'for num_warps in ([4] if autotune_mode == "fast" else [4, 8])'
    )
)


def _changes(path: str, before: str, after: str) -> list[str]:
    old, new = {path: before}, {path: after}
    diff = file_diff(path, before, after)
    analysis = analyze_diff(diff, old_source=old.get, new_source=new.get, old_files=[path])
    return sorted(f"{c.kind} {c.name}" for c in analysis.changes)


def test_a_config_builder_a_getter_applies_autotune_with_is_tuning_of_the_kernel():
    assert _changes(FFPA, FFPA_BEFORE, FFPA_AFTER) == ["tuning _ffpa_bwd_pre_impl"]


def test_a_function_that_applies_nothing_to_the_kernel_does_not_tune_it():
    # the builder changes, but the getter no longer applies autotune: nothing reads it
    untuned = FFPA_BEFORE.replace("    )(_ffpa_bwd_pre_impl)", "    ) and _ffpa_bwd_pre_impl")
    after = FFPA_AFTER.replace("    )(_ffpa_bwd_pre_impl)", "    ) and _ffpa_bwd_pre_impl")
    assert "tuning _ffpa_bwd_pre_impl" not in _changes(FFPA, untuned, after)
