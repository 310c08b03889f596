"""Slim the bitsandbytes wheel to the native libraries the H200 loads (fetch_wheels.sh runs it).

The published wheel carries one library per CUDA, ROCm and XPU toolkit (43 MB); the package
loads ``libbitsandbytes_cuda<torch.version.cuda without the dot>.so`` on an NVIDIA GPU and
``libbitsandbytes_cpu.so`` without one. This keeps the CUDA library named by ``--keep-cuda`` and
every library that is not a toolkit's (the CPU one), drops the others from the wheel and from
its ``RECORD``, and rewrites the wheel in place. A wheel already slimmed is left as it is.

Usage: ``python3 slim_wheel.py WHEEL [--keep-cuda 130]``. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import zipfile
from pathlib import Path

TOOLKIT_LIB = re.compile(r"^bitsandbytes/libbitsandbytes_(cuda\d+|rocm\d+|xpu\d*)\.(so|dll|dylib)$")


class SlimError(ValueError):
    """A wheel that cannot be slimmed as asked; the message says what to do."""


def dropped(names: list[str], keep_cuda: str) -> list[str]:
    """The members of a bitsandbytes wheel that are some other toolkit's native library."""
    kept = f"bitsandbytes/libbitsandbytes_cuda{keep_cuda}.so"
    if kept not in names:
        shipped = sorted(
            m.group(1)[4:]
            for n in names
            if (m := TOOLKIT_LIB.match(n)) and m.group(1)[:4] == "cuda"
        )
        raise SlimError(
            f"the wheel has no {Path(kept).name}; give --keep-cuda one of the CUDA versions it "
            f"ships ({', '.join(shipped) or 'none'})"
        )
    return [n for n in names if (m := TOOLKIT_LIB.match(n)) and m.group(1) != f"cuda{keep_cuda}"]


def slim(path: Path, keep_cuda: str) -> list[str]:
    """Rewrite the wheel at ``path`` without the other toolkits' libraries; the names dropped."""
    with zipfile.ZipFile(path) as src:
        drop = set(dropped(src.namelist(), keep_cuda))
        if not drop:
            return []
        tmp = path.with_name(path.name + ".slim")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
            for info in src.infolist():
                if info.filename in drop:
                    continue
                data = src.read(info)
                if info.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode("utf-8").splitlines(keepends=True)
                    data = "".join(ln for ln in lines if ln.split(",", 1)[0] not in drop).encode()
                out.writestr(info, data)
    os.replace(tmp, path)
    return sorted(drop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="a bitsandbytes-*.whl")
    parser.add_argument("--keep-cuda", default="130", help="CUDA version to keep, e.g. 130")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"\d+", args.keep_cuda):
        print(
            f"error: --keep-cuda {args.keep_cuda!r}: write the version's digits, e.g. 130",
            file=sys.stderr,
        )
        return 2
    try:
        gone = slim(args.wheel, args.keep_cuda)
    except (OSError, zipfile.BadZipFile, SlimError) as exc:
        print(f"error: cannot slim {args.wheel}: {exc}", file=sys.stderr)
        return 2
    kept = f"cuda{args.keep_cuda}"
    print(
        f"{args.wheel.name}: dropped {len(gone)} native libraries, kept {kept} and the CPU library"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
