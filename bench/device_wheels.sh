#!/usr/bin/env bash
# The wheels the GPU session carries (no network there): the bot's own dependencies the H200's
# image lacks into .whl/, and the real-kernel suite's pinned packages into .real_wheels/
# (bench/real_kernels/fetch_wheels.sh), all for Python 3.12 on x86_64 Linux, without their
# dependencies. Both folders are git-ignored; every device call names them in `carry`. Says
# what the call will carry in all: the tracked tree, the wheels and bench/device_src, against the
# device tool's 64 MiB.
# Usage: bench/device_wheels.sh     (from anywhere; writes beside the repository root)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# The image has torch, Triton, numpy, requests, urllib3, certifi, idna, charset-normalizer,
# packaging, tqdm, nvidia-ml-py, pytest (KINDS.md's list); these it has not, or not new enough
# (pydantic 2.14 needs typing-extensions 4.16). The versions are the ones CI installs
# (pyproject.toml's ranges, resolved 2026-12).
BOT_WHEELS=(
    "PyGithub==2.10.0" "PyJWT==2.15.1" "PyNaCl==1.6.2" "cffi==2.1.1" "pycparser==3.12"
    "pydantic==2.14.4" "pydantic_core==2.50.5" "annotated-types==0.8.0"
    "typing-inspection==0.4.5" "typing-extensions==4.16.0" "unidiff==1.0.1"
)
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
    -d .whl "${BOT_WHEELS[@]}"
bench/real_kernels/fetch_wheels.sh .real_wheels
tree=$(git ls-files -z | du -cb --files0-from=- | tail -n 1 | cut -f1)
wheels=$(du -cb .whl/*.whl .real_wheels/*.whl | tail -n 1 | cut -f1)
mib=$(((tree + wheels) / 1024 / 1024))
echo "a device call carries about $mib MiB (tree $((tree / 1024 / 1024)), wheels $((wheels / 1024 / 1024))) of the 64 MiB allowed"
[ "$mib" -lt 64 ] || { echo "error: over the device tool's 64 MiB: carry less" >&2; exit 3; }
