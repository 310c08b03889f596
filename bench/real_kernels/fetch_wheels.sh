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

# --- groups flaggems, bnb: the bitsandbytes wheel is slimmed ---
# It carries one native library per CUDA, ROCm and XPU toolkit (43 MB); the package loads
# libbitsandbytes_cuda<torch.version.cuda without the dot>.so. Keep that one for the H200's torch
# (CUDA 13.0; BNB_KEEP_CUDA=132 keeps another) and the CPU library, drop the rest from the wheel
# and from its RECORD. Running it again on a slimmed wheel changes nothing.
keep_cuda="${BNB_KEEP_CUDA:-130}"
for whl in "$dest"/bitsandbytes-*.whl; do
    [ -e "$whl" ] || continue
    python3 - "$whl" "$keep_cuda" <<'PY'
import os
import re
import sys
import zipfile

path, keep = sys.argv[1], sys.argv[2]
libs = re.compile(r"^bitsandbytes/libbitsandbytes_(cuda\d+|rocm\d+|xpu\d*)\.(so|dll|dylib)$")
with zipfile.ZipFile(path) as src:
    names = src.namelist()
    drop = {n for n in names if (m := libs.match(n)) and m.group(1) != f"cuda{keep}"}
    if f"bitsandbytes/libbitsandbytes_cuda{keep}.so" not in names:
        sys.exit(f"error: {os.path.basename(path)} has no libbitsandbytes_cuda{keep}.so; "
                 "set BNB_KEEP_CUDA to a CUDA version it ships (e.g. 130)")
    if not drop:
        sys.exit(0)
    tmp = path + ".slim"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename in drop:
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(ln for ln in lines if ln.split(",", 1)[0] not in drop).encode()
            out.writestr(info, data)
os.replace(tmp, path)
print(f"slimmed {os.path.basename(path)}: dropped {len(drop)} native libraries, kept cuda{keep} and cpu")
PY
done
# --- end of groups flaggems, bnb ---

total=$(du -cb "$dest"/*.whl | tail -n 1 | cut -f1)
echo "wheels in $dest: $(ls "$dest"/*.whl | wc -l), $((total / 1024 / 1024)) MiB"
if [ "$total" -gt $((limit_mib * 1024 * 1024)) ]; then
    echo "error: the wheels in $dest take $((total / 1024 / 1024)) MiB, over the ${limit_mib} MiB" \
        "that may travel to the GPU machine; slim or drop a wheel, or remove stale ones from $dest" >&2
    exit 3
fi
