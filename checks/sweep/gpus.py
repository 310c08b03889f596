"""The GPUs this machine has, found without importing torch (importing it takes seconds, and the
workers import it anyway): how many (``visible_gpus``), and which compiler target each is
(``gpu_target_name``, for compiling ahead of the workers). NVML on NVIDIA, the KFD topology on
AMD; torch only as the fallback for the count. ``require_torch``: whether torch, which every
measured process imports, is installed at all (the light install has none)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bot.errors import UsageError

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
T = TypeVar("T")


def require_torch(command: str) -> None:
    """Refuse to start ``command`` where torch cannot be imported (``pip install kernel-review``
    without the gpu extra): its measured processes would each fail on ``import torch``. Looks for
    torch without importing it."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        found = False
    if not found:
        raise UsageError(
            f"torch is not installed here, so {command} cannot measure anything",
            hint="install kernel-review[gpu] or torch (pip install 'kernel-review[gpu]'); "
            "the plan and report jobs need neither",
        )


def visible_gpus() -> list[str]:
    """Physical ids of the GPUs this process may use (from CUDA_VISIBLE_DEVICES, else all)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [e.strip() for e in env.split(",") if e.strip()]
    count = _nvml_count()
    if count is None:
        count = _kfd_count()
    if count is None:
        try:
            import torch

            count = torch.cuda.device_count()
        except Exception:
            return []
    return [str(i) for i in range(count)]


def _nvml(query: Callable[[Any], T]) -> T | None:
    """``query(pynvml)`` between NVML's init and shutdown; None where NVML cannot answer."""
    try:
        import pynvml  # nvidia-ml-py, the gpu extra

        pynvml.nvmlInit()
        try:
            return query(pynvml)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def _nvml_count() -> int | None:
    return _nvml(lambda nvml: int(nvml.nvmlDeviceGetCount()))


def _kfd_gpu_nodes(topology: Path = KFD_NODES) -> list[Path] | None:
    """KFD topology nodes of GPUs (CPU nodes have ``gpu_id`` 0), in ROCm's order (node number);
    None without a topology."""
    try:
        nodes = sorted(topology.iterdir(), key=lambda p: (len(p.name), p.name))  # 2 before 10
    except OSError:
        return None
    out = []
    for node in nodes:
        try:
            if int((node / "gpu_id").read_text().strip() or 0):
                out.append(node)
        except (OSError, ValueError):
            continue
    return out


def _kfd_count(topology: Path = KFD_NODES) -> int | None:
    """AMD GPUs as ROCm numbers them."""
    nodes = _kfd_gpu_nodes(topology)
    return len(nodes) if nodes else None


def gpu_target_name(gpu: str | None, *, topology: Path = KFD_NODES) -> str | None:
    """The compiler target of physical GPU ``gpu`` (an index, or an NVML UUID), as the compiler
    report names targets: ``sm_90`` for compute capability 9.0, ``gfx942`` for an MI300X. None
    when neither NVML nor the KFD topology can tell."""
    return _nvml_target(gpu) or _kfd_target(gpu, topology)


def _nvml_target(gpu: str | None) -> str | None:
    def capability(nvml: Any) -> str:
        if gpu is not None and not gpu.isdigit():
            handle = nvml.nvmlDeviceGetHandleByUUID(gpu)
        else:
            handle = nvml.nvmlDeviceGetHandleByIndex(int(gpu or 0))
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        return f"sm_{int(major)}{int(minor)}"

    return _nvml(capability)


def _kfd_target(gpu: str | None, topology: Path) -> str | None:
    """``gfx_target_version`` of the GPU's node: 90402 is gfx942, 90010 gfx90a (major, minor
    and stepping, the last two in hex)."""
    nodes = _kfd_gpu_nodes(topology)
    index = int(gpu) if gpu is not None and gpu.isdigit() else 0
    if not nodes or index >= len(nodes):
        return None
    try:
        props = (nodes[index] / "properties").read_text()
    except OSError:
        return None
    for line in props.splitlines():
        name, _, value = line.partition(" ")
        if name == "gfx_target_version" and value.strip().isdigit():
            v = int(value)
            major, minor, stepping = v // 10000, (v // 100) % 100, v % 100
            return f"gfx{major}{minor:x}{stepping:x}" if major else None
    return None
