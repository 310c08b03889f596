#!/bin/sh
# The GPU half of docs/onboarding/torchmd-torchmd-net.md: torchmd-net's CUDA neighbor list
# (a torch.utils.cpp_extension build) against its Triton rewrite (#373), swept by
# `kernel-review bench` on this machine's GPU, in at most 4 minutes.
#
#     PYTHONPATH=/tmp/site sh bench/onboard_gpu.sh [OUT [BENCH-ARGS...]]
#
# OUT defaults to bench/results/h200/onboarding/torchmd-net; BENCH-ARGS go to `kernel-review
# bench` after the script's own (`--device cpu --kernels neighbors_brute` tries it without a GPU). The repository comes from
# bench/onboard_src/torchmd-net.bundle (its README says what is in it): `kr-base` is the commit
# before the rewrite plus the policy and bench entry points of the onboarding, `kr-head` is the
# rewrite on top. The policy's [setup] builds the base side's extension in its worktree (nvcc,
# sm_90 only); the head side has no setup.py and builds nothing. Everything is written under OUT:
# run.md (when, where, versions, each command and its exit code and time), bench.txt (the
# table), bench-progress.txt (one line per case), results.json, the two setup logs, and
# review.md, the review of the two revisions from those results (with the launch record).
# No network is needed; kernel-review's own dependencies are taken from PYTHONPATH.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/bench/results/h200/onboarding/torchmd-net}
[ "$#" -gt 0 ] && shift
EXTRA="$*"
LIMIT_S=${ONBOARD_LIMIT_S:-240}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/onboard-gpu.XXXXXX)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # setup.py builds every arch torch has otherwise
export MAX_JOBS=${MAX_JOBS:-16}
export XDG_CACHE_HOME="$WORK/cache"  # a cold build: the setup cache would hide the build time
PY=${PYTHON:-python3}
START=$(date +%s)

log() { printf '%s\n' "$*" >>"$OUT/run.md"; }

{
  echo "# torchmd-net neighbor list: CUDA extension (base) against Triton (head), kernel-review bench"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $(nproc) cores"
  echo "- versions: $($PY -c 'import sys, torch, triton; print(f"Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), Triton {triton.__version__}")' 2>&1)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- kernel-review: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
  echo "- TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST MAX_JOBS=$MAX_JOBS, limit ${LIMIT_S} s"
  echo
} >"$OUT/run.md"

git clone -q "$ROOT/bench/onboard_src/torchmd-net.bundle" "$WORK/repo" 2>/dev/null \
  && git -C "$WORK/repo" checkout -q -b kr-head origin/kr-head \
  && git -C "$WORK/repo" branch -q kr-base origin/kr-base || {
  log "cannot clone the bundle"
  exit 2
}
log "- base kr-base $(git -C "$WORK/repo" rev-parse kr-base): $(git -C "$WORK/repo" log -1 --format=%s kr-base)"
log "- head kr-head $(git -C "$WORK/repo" rev-parse kr-head): $(git -C "$WORK/repo" log -1 --format=%s kr-head)"
log

# Every served shape (4 brute, 2 cell, 2 shared) and the small and ragged ones the sweep adds.
# Rounds are capped so the whole run, the base build included, fits the limit.
set -- "$PY" -m bot bench --repo "$WORK/repo" --base kr-base --head kr-head \
  --out "$OUT/results.json" --engine-option work_dir="$WORK/bench" --engine-option max_rounds=60 $EXTRA
log "\`\`\`console"
log "\$ kernel-review bench --repo repo --base kr-base --head kr-head --engine-option max_rounds=60 $EXTRA"
cd "$WORK/repo" || exit 2
timeout -k 10 "$((LIMIT_S - ($(date +%s) - START)))" "$@" >"$OUT/bench.txt" 2>"$OUT/bench-progress.txt"
rc=$?
log "exit code $rc after $(($(date +%s) - START)) s (124: stopped at the limit)"
log "\`\`\`"
for side in base head; do
  [ -f "$WORK/bench/logs/setup-$side.log" ] && cp "$WORK/bench/logs/setup-$side.log" "$OUT/setup-$side.log"
done
# The review of the same revisions from those results: its "What ran" says, per neighbor list,
# the base's CUDA kernels and the head's Triton ones that each call launched (the launch record).
if [ -f "$OUT/results.json" ]; then
  "$PY" -m bot review --repo . --base kr-base --head kr-head --results "$OUT/results.json" \
    --full --no-compile --out "$OUT/review.md" >"$OUT/review.log" 2>&1
  log "\`kernel-review review --repo . --base kr-base --head kr-head --results results.json --full --no-compile\`: exit code $? (review.md)"
fi
log
log "bench.txt holds the table, bench-progress.txt the case lines, results.json the sweep"
log "(results.partial.jsonl: the cases finished when a limit stopped it), review.md its review."
rm -rf "$WORK"
exit "$rc"
