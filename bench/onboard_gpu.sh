#!/bin/sh
# The GPU half of docs/onboarding/torchmd-torchmd-net.md: torchmd-net's CUDA neighbor list
# (a torch.utils.cpp_extension build) against its Triton rewrite (#373), swept by
# `kernel-review bench` on this machine's GPU and reviewed from that sweep, in at most
# ONBOARD_LIMIT_S seconds (default 275: one 330 s device call with the carried wheels' install,
# `bench/device_session.sh onboard-tmd` with CALL_S=330).
#
#     PYTHONPATH=/tmp/site sh bench/onboard_gpu.sh [OUT [BENCH-ARGS...]]
#
# OUT defaults to bench/results/h200/onboarding/torchmd-net; BENCH-ARGS go to `kernel-review
# bench` after the script's own (`--device cpu --kernels neighbors_brute` tries it without a GPU). The repository comes from
# bench/onboard_src/torchmd-net.bundle (its README says what is in it): `kr-base` is the commit
# before the rewrite plus the policy and bench entry points of the onboarding, `kr-head` is the
# rewrite on top. The policy's [setup] builds the base side's extension in its worktree (nvcc,
# sm_90 only: 116 s on the H200's 16 cores); the head side has no setup.py and builds nothing.
#
# What is swept, to fit the limit with that build: the brute and cell lists at the policy's
# served shapes only (`--kernels neighbors_brute,neighbors_cell`, `added_shapes=off`: 6 cases,
# the small and ragged ones were swept on 2026-12-01) and at most 30 rounds a case. The shared
# strategy is left out: the head has none (`Unsupported strategy shared`, five ERROR cases on
# 2026-12-01, nothing more to learn from them). The sweep gets the limit less REVIEW_S (50 s),
# which the review after it keeps.
#
# Everything is written under OUT:
# run.md (when, where, versions, each command and its exit code and time), bench.txt (the
# table), bench-progress.txt (one line per case), results.json, the two setup logs, and
# review.md, the review of the two revisions from those results (with the launch record).
# No network is needed; kernel-review's own dependencies are taken from PYTHONPATH.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/bench/results/h200/onboarding/torchmd-net}
[ "$#" -gt 0 ] && shift
EXTRA="$*"
LIMIT_S=${ONBOARD_LIMIT_S:-275}
REVIEW_S=${REVIEW_S:-50}
KERNELS=${ONBOARD_KERNELS:-neighbors_brute,neighbors_cell}
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
  echo "- TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST MAX_JOBS=$MAX_JOBS, limit ${LIMIT_S} s (${REVIEW_S} s of it kept for the review)"
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

# The served shapes of the brute and cell lists (4 and 2), no added ones, rounds capped: the
# sweep, the base build included, must end REVIEW_S before the limit.
OPTS="--kernels $KERNELS --engine-option added_shapes=off --engine-option max_rounds=30"
# shellcheck disable=SC2086  # OPTS and EXTRA are word lists
set -- "$PY" -m bot bench --repo "$WORK/repo" --base kr-base --head kr-head \
  --out "$OUT/results.json" --engine-option work_dir="$WORK/bench" $OPTS $EXTRA
log "\`\`\`console"
log "\$ kernel-review bench --repo repo --base kr-base --head kr-head $OPTS $EXTRA"
cd "$WORK/repo" || exit 2
timeout -k 10 "$((LIMIT_S - REVIEW_S - ($(date +%s) - START)))" "$@" >"$OUT/bench.txt" 2>"$OUT/bench-progress.txt"
rc=$?
log "exit code $rc after $(($(date +%s) - START)) s (124: stopped at the limit, the finished cases' results written)"
log "\`\`\`"
for side in base head; do
  [ -f "$WORK/bench/logs/setup-$side.log" ] && cp "$WORK/bench/logs/setup-$side.log" "$OUT/setup-$side.log"
done
# The review of the same revisions from those results: its "What ran" says, per neighbor list,
# the base's CUDA kernels and the head's Triton ones that each call launched (the launch record).
# It gets what is left of the limit (REVIEW_S at least).
if [ -f "$OUT/results.json" ]; then
  t0=$(date +%s)
  timeout -k 5 "$((LIMIT_S - (t0 - START)))" "$PY" -m bot review --repo . --base kr-base --head kr-head \
    --results "$OUT/results.json" --full --no-compile --out "$OUT/review.md" >"$OUT/review.log" 2>&1
  log "\`kernel-review review --repo . --base kr-base --head kr-head --results results.json --full --no-compile\`: exit code $? after $(($(date +%s) - t0)) s (review.md; 124: stopped at the limit)"
fi
log
log "bench.txt holds the table, bench-progress.txt the case lines, results.json the sweep"
log "(a sweep stopped at the limit writes the cases it finished, the rest STOPPED), review.md its review."
rm -rf "$WORK"
exit "$rc"
