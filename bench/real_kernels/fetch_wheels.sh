#!/usr/bin/env bash
# Download the real-kernel suite's pinned wheels (bench/real_kernels/wheels.txt) into DEST
# (default: .real_wheels/ at the repository root, which git ignores), for Python 3.12 on x86_64
# Linux, without dependencies: exactly the wheels the H200 installs with
#   python3 -m pip install --no-index --no-deps DEST/*.whl
# Usage: bench/real_kernels/fetch_wheels.sh [DEST]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="${1:-$root/.real_wheels}"
list="$here/wheels.txt"
limit_mib=40

mapfile -t reqs < <(grep -v '^[[:space:]]*\(#\|$\)' "$list" | sed 's/[[:space:]]*#.*$//')
if [ "${#reqs[@]}" -eq 0 ]; then
    echo "error: $list names no requirement; add one 'name==version' a line" >&2
    exit 2
fi
for r in "${reqs[@]}"; do
    case "$r" in
        *==*) ;;
        *) echo "error: '$r' in $list is not an exact pin; write it as name==version" >&2; exit 2 ;;
    esac
done

mkdir -p "$dest"
# manylinux_2_24: the tag bitsandbytes publishes its Linux wheels under
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
    -d "$dest" "${reqs[@]}"

# --- groups fla, torchao, cce: no wheel is slimmed (all three are small) ---

# --- groups flaggems, bnb: the bitsandbytes wheel is slimmed ---
# It carries one native library per CUDA, ROCm and XPU toolkit (43 MB); slim_wheel.py keeps the
# one for the H200's torch (CUDA 13.0; BNB_KEEP_CUDA=132 keeps another) and the CPU library.
for whl in "$dest"/bitsandbytes-*.whl; do
    [ -e "$whl" ] || continue
    python3 "$here/slim_wheel.py" "$whl" --keep-cuda "${BNB_KEEP_CUDA:-130}"
done
# --- end of groups flaggems, bnb ---

total=$(du -cb "$dest"/*.whl | tail -n 1 | cut -f1)
echo "wheels in $dest: $(ls "$dest"/*.whl | wc -l), $((total / 1024 / 1024)) MiB"
if [ "$total" -gt $((limit_mib * 1024 * 1024)) ]; then
    echo "error: the wheels in $dest take $((total / 1024 / 1024)) MiB, over the ${limit_mib} MiB" \
        "that may travel to the GPU machine; slim or drop a wheel, or remove stale ones from $dest" >&2
    exit 3
fi
