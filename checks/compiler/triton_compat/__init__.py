"""Everything that touches Triton's internals lives here, checked against Triton 3.6.x.

What it relies on (``triton/runtime/jit.py``, ``runtime/autotuner.py``, ``compiler/compiler.py``,
``knobs.py``):

- ``triton.runtime.driver.driver`` holds the active driver; ``JITFunction.run`` asks it for the
  current device, stream and ``GPUTarget``, and builds one binder per device key. A compile-only
  driver that answers with a chosen target lets a real call site specialise its arguments
  (types, divisibility by 16, AMD's 2 GB pointer range) exactly as it would on that GPU.
- ``knobs.runtime.jit_cache_hook`` is called before each compile with the signature,
  constexprs, attributes and full options (in ``specialization_data``); returning True skips the
  compile and the launch. The hook records a :class:`CompileRequest` and returns True.
- ``Autotuner.run`` would benchmark; while recording it is replaced by a loop that sends each
  config (after ``early_config_prune``) to the kernel once. ``Heuristics.run`` is wrapped to note
  the values it sets.
- After the imports, each ``Autotuner`` the calls went through holds its live ``configs``,
  ``keys``, ``early_config_prune`` / ``perf_model`` and ``cache`` (the best config per key); a
  ``Heuristics`` wrapping it or wrapped by it holds ``values``.
- ``triton.compile(ASTSource(...), target=GPUTarget(...), options=...)`` compiles for any target
  on a CPU. ``knobs.nvidia.dump_ptxas_log`` prints ptxas' ``-v`` log; ``knobs.compilation.listener``
  reports per-stage times and whether Triton's cache answered.
"""

from __future__ import annotations

from checks.compiler.triton_compat._compiling import (
    CompileOutput,
    build_driver_utils,
    compile_request,
)
from checks.compiler.triton_compat._live import live_autotune, live_config_label, picked_label
from checks.compiler.triton_compat._recording import Recorder, autotune_key, compile_only
from checks.compiler.triton_compat._runtime import (
    AutotuneEvent,
    CompileEvent,
    compiled_variants,
    find_kernels,
    forget_compiled,
    observe_compiles_and_autotuning,
    observe_module_builds,
)
from checks.compiler.triton_compat._targets import (
    SUPPORTED_SERIES,
    backend_hash,
    check_triton_version,
    gpu_target,
    nvidia_tool,
    set_cache_dir,
    warm_up,
)
from checks.compiler.triton_compat._variants import CompileRequest, config_label
from checks.compiler.triton_compat._variants import _plain as plain

__all__ = [
    "SUPPORTED_SERIES",
    "AutotuneEvent",
    "CompileEvent",
    "CompileOutput",
    "CompileRequest",
    "Recorder",
    "autotune_key",
    "backend_hash",
    "build_driver_utils",
    "check_triton_version",
    "compile_only",
    "compile_request",
    "compiled_variants",
    "config_label",
    "find_kernels",
    "forget_compiled",
    "gpu_target",
    "live_autotune",
    "live_config_label",
    "nvidia_tool",
    "observe_compiles_and_autotuning",
    "observe_module_builds",
    "picked_label",
    "plain",
    "set_cache_dir",
    "warm_up",
]
