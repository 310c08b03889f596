"""Compiled bytecode of the toolchain's own modules (torch, Triton, numpy and what they import),
kept between runs where the installation ships none.

An image built with ``PYTHONDONTWRITEBYTECODE`` or ``pip install --no-compile`` has no ``.pyc``
beside torch's sources, and every process that imports torch compiles about a thousand modules
first: on the H200 machine (torch 2.11, 0 of its 2141 modules compiled) ``import torch`` took
3.2-4.0 s a process, most of a run's start. The zygote (``zygote.py``) calls ``keep`` before its
imports: where torch has no bytecode of its own, Python reads and writes bytecode in ``folder``
(``sys.pycache_prefix``, a tree mirroring the sources' paths) while the zygote imports, and
``stop_writing`` ends the writing before any checkout's code is imported or run. Where torch
ships its bytecode nothing changes: a prefix would hide it.

Python checks each kept file against its source's size and time, so a changed installation
recompiles what changed. The measured code runs as the same user and can write this folder as it
can write the installation itself (``SECURITY.md``); ``KERNEL_REVIEW_BYTECODE_CACHE=0`` turns it
off (``bot.outputs.bytecode_dir``: the zygote is then given no folder). Standard library only:
the zygote loads it before anything else.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys


def ships_bytecode(module: str) -> bool | None:
    """Whether ``module``'s own source has compiled bytecode beside it (in its ``__pycache__``);
    None where the module is not found or is not Python source."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    if not origin or not origin.endswith(".py"):
        return None
    prefix, sys.pycache_prefix = sys.pycache_prefix, None
    try:
        return os.path.exists(importlib.util.cache_from_source(origin))
    finally:
        sys.pycache_prefix = prefix


def keep(folder: str | None, module: str = "torch") -> str:
    """Read and write bytecode in ``folder`` from now on when ``module`` ships none. What was
    done: ``kept`` (``folder`` in use, written while this process imports), ``installed``
    (``module`` has its own bytecode), ``off`` (no folder), ``absent`` (``module`` is not
    installed as source)."""
    if not folder:
        return "off"
    ships = ships_bytecode(module)
    if ships is None:
        return "absent"
    if ships:
        return "installed"
    with contextlib.suppress(OSError):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    sys.pycache_prefix = folder
    sys.dont_write_bytecode = False
    return "kept"


def stop_writing() -> None:
    """From now on kept bytecode is only read: what this process imports next (a checkout's
    modules, a test's) is not written into the folder."""
    sys.dont_write_bytecode = True
