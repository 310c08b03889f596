"""GPU telemetry per block through NVML: clocks, temperature, power, throttle reasons.

Runs inside a worker. Standard library only at import; ``pynvml`` (nvidia-ml-py) is imported
when asked for and its absence is not an error: the block then carries no telemetry and is never
dropped for it. AMD GPUs report no telemetry here.
"""

from __future__ import annotations

import os
from typing import Any

# NVML clock-event (throttle) reason bits; stable across NVML versions.
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the clock was pulled down under the kernel: such a block is not trusted.
THROTTLING = 0x8 | 0x20 | 0x40 | 0x80


def reason_names(bits: int) -> tuple[str, ...]:
    return tuple(name for bit, name in REASONS.items() if bits & bit)


def _norm_uuid(value: Any) -> str:
    text = value.decode() if isinstance(value, bytes) else str(value)
    text = text.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text


class Nvml:
    """An NVML handle for one device; ``open`` returns None where NVML is not available."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml = nvml
        self._h = handle
        self.max_sm_clock_mhz = self._try(
            lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
        )
        self.max_mem_clock_mhz = self._try(
            lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)
        )

    @staticmethod
    def open(uuid: str | None = None, index: int | None = None) -> Nvml | None:
        try:
            import pynvml as nvml  # nvidia-ml-py
        except Exception:
            return None
        try:
            nvml.nvmlInit()
            handle = None
            if uuid:
                want = _norm_uuid(uuid)
                for i in range(nvml.nvmlDeviceGetCount()):
                    h = nvml.nvmlDeviceGetHandleByIndex(i)
                    if _norm_uuid(nvml.nvmlDeviceGetUUID(h)) == want:
                        handle = h
                        break
            if handle is None:
                handle = nvml.nvmlDeviceGetHandleByIndex(_visible_index(index))
            return Nvml(nvml, handle)
        except Exception:
            return None

    @staticmethod
    def _try(fn: Any) -> Any:
        try:
            return fn()
        except Exception:
            return None

    def read(self) -> dict[str, Any]:
        nv, h = self._nvml, self._h
        sm = self._try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        mem = self._try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
        temp = self._try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        power_mw = self._try(lambda: nv.nvmlDeviceGetPowerUsage(h))
        getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        bits = self._try(lambda: int(getter(h))) if getter else None
        return {
            "sm_clock_mhz": float(sm) if sm is not None else None,
            "mem_clock_mhz": float(mem) if mem is not None else None,
            "max_sm_clock_mhz": float(self.max_sm_clock_mhz) if self.max_sm_clock_mhz else None,
            "temp_c": float(temp) if temp is not None else None,
            "power_w": power_mw / 1000.0 if power_mw is not None else None,
            "throttle_reasons": bits,
            "throttle_names": list(reason_names(bits)) if bits else [],
            "throttled": bool(bits and bits & THROTTLING),
        }

    def static_info(self) -> dict[str, Any]:
        nv, h = self._nvml, self._h
        driver = self._try(nv.nvmlSystemGetDriverVersion)
        return {
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "max_mem_clock_mhz": self.max_mem_clock_mhz,
            "power_limit_w": _div(self._try(lambda: nv.nvmlDeviceGetPowerManagementLimit(h)), 1000),
            "persistence_mode": self._try(lambda: nv.nvmlDeviceGetPersistenceMode(h)),
        }


def _div(x: Any, d: float) -> float | None:
    return None if x is None else float(x) / d


def _visible_index(index: int | None) -> int:
    """The NVML index of CUDA device ``index`` (NVML ignores CUDA_VISIBLE_DEVICES)."""
    index = index or 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if visible:
        entries = [e.strip() for e in visible.split(",") if e.strip()]
        if index < len(entries) and entries[index].isdigit():
            return int(entries[index])
    return index
