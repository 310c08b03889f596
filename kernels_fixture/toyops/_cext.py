"""Build and load the hand-written C++ kernels as PyTorch extensions, one extension per operator.

Operator ``op`` is ``csrc/<op>.cu`` on NVIDIA or ``csrc/<op>.hip`` on AMD (chosen when torch was
built for ROCm) plus ``csrc/<op>_binding.cpp``, which checks the tensors, allocates the output and
calls the kernel's launcher on the stream passed from Python. Builds are cached under
``$TOYOPS_BUILD_DIR`` (default ``~/.cache/toyops``) in a folder named by a hash of the sources,
the torch version and the vendor, so an unchanged kernel is compiled once per machine.
The build reads copies of the sources kept in that folder, not the files in the checkout: torch
writes each source's path into the ninja file, and ninja recompiles when a command changes, so a
build from a new checkout of the same sources (every review's worktree is one) would compile
again. The copies are rewritten only when their bytes differ, which keeps their times, so ninja
finds nothing to do.
Building needs a CUDA toolkit (nvcc) or ROCm (hipcc), and ninja.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

CSRC = Path(__file__).resolve().parent / "csrc"

_LOADED: dict[str, ModuleType] = {}


def vendor() -> str:
    """``"amd"`` when torch was built for ROCm, else ``"nvidia"``."""
    return "amd" if torch.version.hip else "nvidia"


def sources(op: str) -> list[Path]:
    """The files that make up operator ``op`` on this machine's vendor."""
    kernel = CSRC / (f"{op}.hip" if vendor() == "amd" else f"{op}.cu")
    return [CSRC / f"{op}_binding.cpp", kernel]


def build_dir(op: str) -> Path:
    digest = hashlib.sha256(f"{torch.__version__}|{vendor()}".encode())
    for path in sources(op):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    root = Path(os.environ.get("TOYOPS_BUILD_DIR") or Path.home() / ".cache" / "toyops")
    return root / f"{op}-{digest.hexdigest()[:16]}"


def staged(paths: list[Path], directory: Path) -> list[Path]:
    """Copies of ``paths`` under ``directory/src``, written only where their bytes differ."""
    out = []
    for path in paths:
        target = directory / "src" / path.name
        data = path.read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.{os.getpid()}")
            partial.write_bytes(data)
            os.replace(partial, target)
        out.append(target)
    return out


def build(name: str, paths: list[Path], directory: Path, **options: Any) -> Any:
    """``torch.utils.cpp_extension.load`` of ``paths`` staged in ``directory`` (see the module
    doc): a build from another checkout of the same files finds nothing to compile."""
    from torch.utils.cpp_extension import load as load_extension

    directory.mkdir(parents=True, exist_ok=True)
    return load_extension(
        name=name,
        sources=[str(p) for p in staged(paths, directory)],
        build_directory=str(directory),
        verbose=os.environ.get("TOYOPS_BUILD_VERBOSE") == "1",
        **options,
    )


def load(op: str) -> ModuleType:
    """The compiled extension for ``op``, building it on first use."""
    module = _LOADED.get(op)
    if module is not None:
        return module
    missing = [str(p) for p in sources(op) if not p.is_file()]
    if missing:
        raise RuntimeError(f"toyops has no hand-written {op} kernel here: missing {missing}")
    directory = build_dir(op)
    module = build(
        f"toyops_{op}_{directory.name.rsplit('-', 1)[1]}",
        sources(op),
        directory,
        extra_cflags=["-O3"],
        extra_cuda_cflags=["-O3"],
    )
    _LOADED[op] = module
    return module


def call(op: str, *tensors: torch.Tensor) -> torch.Tensor:
    """Run the hand-written kernel ``op`` on GPU tensors, on the current stream."""
    for t in tensors:
        if not t.is_cuda:
            raise RuntimeError(
                f"toyops' hand-written {op} kernel runs on a CUDA or ROCm GPU; got a tensor on {t.device}"
            )
    module = load(op)
    stream = torch.cuda.current_stream(tensors[0].device).cuda_stream
    return getattr(module, op)(*tensors, stream)
