"""The environment a measurement was taken in: GPU model and UUID, driver, CUDA or ROCm, torch and
Triton versions, clocks, vendor and warp size.

``collect`` runs inside a worker (standard library only at import; torch is handed in or looked
up). ``comparable`` is pure and says whether two fingerprints describe the same kind of setup.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any


def _version(dist: str) -> str | None:
    """An installed distribution's version, without importing it (torch takes seconds)."""
    mod = sys.modules.get(dist)
    if mod is not None and getattr(mod, "__version__", None):
        return str(mod.__version__)
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def collect(
    device: str, *, torch: Any = None, nvml_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A fingerprint dict for ``device`` ('cpu' or 'cuda'); every field optional but vendor."""
    info: dict[str, Any] = {
        "python_version": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cpu": platform.processor() or platform.machine(),
        "torch_version": getattr(torch, "__version__", None) if torch else _version("torch"),
        "triton_version": _version("triton"),
    }
    if device == "cpu" or torch is None:
        return {**info, "vendor": "cpu", "device_name": info["cpu"] or "cpu", "timing": "cpu"}
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    hip = getattr(torch.version, "hip", None)
    vendor = "amd" if hip else "nvidia"
    warp = getattr(props, "warp_size", None) or (64 if vendor == "amd" else 32)
    uuid = getattr(props, "uuid", None)
    arch: str | None
    if vendor == "nvidia":
        arch = f"sm_{props.major}{props.minor}"
    else:
        arch = str(getattr(props, "gcnArchName", "") or "").split(":")[0] or None
    nv = nvml_info or {}
    return {
        **info,
        "vendor": vendor,
        "device_name": props.name,
        "device_uuid": _uuid_text(uuid),
        "driver_version": nv.get("driver"),
        "cuda_version": getattr(torch.version, "cuda", None),
        "hip_version": hip,
        "warp_size": int(warp),
        "sm_count": int(props.multi_processor_count),
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
        "total_memory_bytes": int(props.total_memory),
        "arch": arch,
        "max_sm_clock_mhz": nv.get("max_sm_clock_mhz"),
        "max_mem_clock_mhz": nv.get("max_mem_clock_mhz"),
        "power_limit_w": nv.get("power_limit_w"),
        "timing": "cuda-events",
    }


def _uuid_text(uuid: Any) -> str | None:
    if uuid is None:
        return None
    text = str(uuid)
    if not text.startswith(("GPU-", "MIG-")) and len(text) >= 32:
        text = "GPU-" + text
    return text


COMPARABLE_KEYS = ("vendor", "device_name", "driver_version", "torch_version", "triton_version")


def comparable(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two fingerprints in a way that makes their numbers not comparable
    (an empty list when they are comparable)."""
    return [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in COMPARABLE_KEYS if a.get(k) != b.get(k)]
