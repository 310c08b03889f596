#!/usr/bin/env bash
# The next GPU session, everything still waiting for the H200, in three device calls that end
# within 570, 315 and 235 s (21 minutes with the machine's start, if every stage ran to its
# budget; keep the machine warm between calls, or a second start costs the last stage):
#
#     bench/device_session.sh call1    # gpu-launch cli-decision             (535 s of budgets)
#     bench/device_session.sh call2    # rk-fla                              (280 s)
#     bench/device_session.sh call3    # rk-rest                             (200 s)
#     bench/device_session.sh [--device cpu] [--tiny] STAGE...   # stages by name, in order
#     bench/device_session.sh --plan   # the calls, the stages and their budgets
#
# Each call, as the device tool runs it from the repository root (carry .whl and .real_wheels;
# bench/device_wheels.sh fetches both here: 48 MiB with the tree, of the 64 allowed):
#     bench/device_session.sh call1
# Stages:
#   gpu-tests         pytest -m gpu, its first files (GPU_TESTS_1: faults, compiling ahead)  240 s
#   gpu-tests-2       pytest -m gpu, every other GPU test (tests/gpu, tests/integration)     240 s
#   gpu-launch        pytest -m gpu on the launch record's GPU tests alone (one build)      100 s
#   cli-decision      bench/cli_decision.py parts 1 and 2 on the current engine (#46)         435 s
#   cli-decision-job  its part 3, the fixture's measure job (not in the calls: 220 s more)    220 s
#   onboard           #43: tritonbench onboarded and reviewed on the GPU (not in the calls)   110 s
#   rk-fla            #41: a fourth A/A run of fla's kernels (one pass for plain cases)      280 s
#   rk-rest           #41: the same of FlagGems', cut-cross-entropy's, bitsandbytes', torchao's 200 s
#   onboard-tmd       #42: torchmd-net's CUDA -> Triton rewrite swept (bench/onboard_gpu.sh),
#                     then reviewed from its results: the launch record of a real rewrite
#                     (the base's CUDA build 116-140 s, 6 cases, the review)               310 s
#   pr-golden         #45: tritonbench #269's measure job and review (not in the calls)       140 s
# A pytest stage prints each test's name and outcome as it ends (-v) and is interrupted (SIGINT)
# a little before its budget, so a run cut short still prints its summary and --durations.
# Everything is written under $OUT (OUT=out/device-session here when unset): run.md (when,
# where, versions, each stage's command, exit code, wall time and budget, appended call by call),
# and per stage STAGE.tar.gz of its folder, packed as soon as the stage ends: the tool brings
# back at most 8 files two folders deep, and a call stopped at its limit keeps what was packed.
# A stage runs under `timeout` at its budget; one that does not fit in what is left of the call
# (CALL_S: the call's own above, 570 s for stages named) is not started and run.md says so,
# so a call ends within CALL_S (and the seconds its packing takes). Before any stage the flags the
# scripts pass are checked against the command line (bench/device_flags.py): a call with a flag
# that is gone stops there, at no GPU time.
# --device cpu --tiny dry-runs the plumbing on a CPU with small budgets: numbers meaningless;
# STAGE_S=N gives every stage N seconds instead.
# bench/README.md ("The next GPU session") says where each stage's files go in the repository.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/out/device-session}
CALL_S=${CALL_S:-}
PY=${PYTHON:-python3}
case "$PY" in */*) PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY") ;; esac  # stages cd elsewhere
export PYTHON=$PY  # onboard_gpu.sh's
DEVICE=cuda
TINY=0
START=$(date +%s)
declare -A BUDGET=([gpu-tests]=240 [gpu-tests-2]=240 [gpu-launch]=100 [cli-decision]=435
  [cli-decision-job]=220 [onboard]=110 [rk-fla]=280 [rk-rest]=200 [onboard-tmd]=310 [pr-golden]=140)
declare -A TINY_BUDGET=([gpu-tests]=90 [gpu-tests-2]=90 [gpu-launch]=60 [cli-decision]=300
  [cli-decision-job]=60 [onboard]=420 [rk-fla]=300 [rk-rest]=300 [onboard-tmd]=600 [pr-golden]=900)
ORDER="gpu-tests gpu-tests-2 gpu-launch cli-decision cli-decision-job onboard rk-fla rk-rest onboard-tmd pr-golden"
CALL1="gpu-launch cli-decision"
CALL2="rk-fla"
CALL3="rk-rest"
# pytest -m gpu in two stages: 20 of its 28 tests took the whole 200 s on the H200 (2026-12-05,
# 61f2117; all 23 of them 137 s at 2d361f1, before every case took two passes or more). The first
# stage runs these files, the second every other file that holds a GPU test (a new one too)
GPU_TESTS_1="tests/gpu/test_correctness_gpu.py tests/gpu/test_gpu_faults.py
  tests/gpu/test_launch_record_gpu.py tests/gpu/test_precompile_gpu.py tests/gpu/test_smem_gpu.py"
# each call first installs the carried wheels (14 s on 2026-12-05, which left call2 446 s of its
# 460 and the 450 s stage unstarted): 20 s of it beyond the budgets
# a stage starts only with its budget and 15 s (its packing) left: a call's limit is its stages'
# budgets and 35 s at least, the wheels' install counted
declare -A CALL_LIMIT=([call1]=570 [call2]=315 [call3]=235)
# the record's narrowing of the real-kernel suite (bench/README.md, real_kernels/run.py)
RK_SKIP=flaggems_mm,fla_chunk_simple_gla,fla_chunk_fwd_h_split,fla_logsigmoid,fla_swiglu,fla_l2norm,torchao_blockwise_fp8_gemm
RK_RECORD=bench/results/h200/real_kernels

plan() {
  local limits=0 n=1
  for call in "$CALL1" "$CALL2" "$CALL3"; do
    local sum=0
    for s in $call; do sum=$((sum + BUDGET[$s])); done
    echo "call$n: $call ($sum s of budgets; the call ends within ${CALL_LIMIT[call$n]} s)"
    limits=$((limits + CALL_LIMIT[call$n])); n=$((n + 1))
  done
  echo "the three calls: at most $limits s of commands, plus the machine's start"
}

stages=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --device=*) DEVICE=${1#*=}; shift ;;
    --tiny) TINY=1; shift ;;
    --plan) plan; exit 0 ;;
    call1|call2|call3)
      v=${1^^}; stages+=(${!v}); CALL_S=${CALL_S:-${CALL_LIMIT[$1]}}; shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *)
      if [ -z "${BUDGET[$1]+x}" ]; then
        echo "device_session: unknown stage '$1'; the stages: $ORDER (or call1, call2, call3)" >&2
        exit 2
      fi
      stages+=("$1"); shift ;;
  esac
done
case "$DEVICE" in cuda|cpu) ;; *) echo "device_session: --device is cuda or cpu, not '$DEVICE'" >&2; exit 2 ;; esac
if [ "${#stages[@]}" -eq 0 ]; then
  echo "device_session: name the stages to run (or call1, call2, call3); --plan shows them" >&2
  exit 2
fi
[ "$TINY" = 1 ] && [ "$DEVICE" != cpu ] && { echo "device_session: --tiny is for --device cpu" >&2; exit 2; }
CALL_S=${CALL_S:-570}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
RUN_MD=$OUT/run.md
md() { printf '%s\n' "$@" >>"$RUN_MD"; }
left() { echo $((CALL_S - ($(date +%s) - START))); }

# The bot's own dependencies, carried as wheels (no network on the GPU machine).
if [ -d .whl ] && ! "$PY" -c 'import pydantic, github, unidiff' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "${SITE:-/tmp/site}" .whl/*.whl >"$OUT/wheels.log" 2>&1 || { echo "device_session: installing .whl failed: $OUT/wheels.log" >&2; exit 2; }
  export PYTHONPATH="${SITE:-/tmp/site}${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if ! missing=$("$PY" -c 'import pydantic, github, unidiff' 2>&1); then
  echo "device_session: the bot's dependencies do not import with $PY (${missing##*$'\n'}):" \
    "run bench/device_wheels.sh here and carry .whl" >&2
  exit 2
fi

{
  echo
  echo "# Device session call: ${stages[*]}"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), device $DEVICE$([ "$TINY" = 1 ] && echo ', tiny budgets (plumbing)')"
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  echo "- machine: ${gpu:-no GPU (nvidia-smi)}; $(nproc) cores"
  echo "- versions: $("$PY" -c 'import sys, torch, triton; print(f"Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), Triton {triton.__version__}")' 2>&1 | tail -1)"
  echo "- kernel-review: $(git rev-parse --short HEAD 2>/dev/null || echo 'no git'), sources $(find bot checks -name '*.py' -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -c1-12)"
  echo "- call limit ${CALL_S} s"
  echo
} >>"$RUN_MD"
if ! "$PY" bench/device_flags.py >>"$RUN_MD" 2>&1; then
  md "" "stopped: a flag the scripts pass is gone (above); nothing ran"
  cat "$RUN_MD" >&2
  exit 2
fi
md "" "| stage | exit code | wall s | budget s | command |" "|---|---|---|---|---|"

rk() {  # the real-kernel suite, the record's parts first so slow heads size from them
  local dir=$1; shift
  mkdir -p "$dir/rk"
  if [ "$DEVICE" = cpu ]; then
    "$PY" bench/real_kernels/run.py --device cpu --catalogue tests/data/real_kernels_standin/catalogue \
      --entries tests/data/real_kernels_standin/entries --no-dobench --out "$dir/rk" "$@"
  else
    cp "$RK_RECORD"/part*.json "$dir/rk/"
    "$PY" bench/real_kernels/run.py --shapes 1 --by-run --bench-arg=--engine-option=added_shapes=off --skip "$RK_SKIP" \
      --no-dobench --install-wheels .real_wheels --out "$dir/rk" "$@"
  fi
}

gpu_pytest() {  # BUDGET OUT PATH...: pytest -m gpu, each test named as it ends, SIGINT before BUDGET
  local b=$1 out=$2 margin; shift 2
  margin=$((b / 10 < 15 ? b / 10 : 15))  # for pytest's summary and durations after the SIGINT
  timeout --foreground -s INT -k 5 $((b - margin)) "$PY" -m pytest -m gpu -v -rA --durations=0 \
    -p no:cacheprovider "$@" >"$out" 2>&1
}

stage_cmd() {  # STAGE DIR BUDGET: the stage's command, run in the repository root
  local s=$1 dir=$2 b=$3 cpu=() first=()
  [ "$DEVICE" = cpu ] && cpu=(--device cpu)
  case "$s" in
    gpu-tests)
      # shellcheck disable=SC2086  # the list's own word splitting
      gpu_pytest "$b" "$dir/pytest.txt" $GPU_TESTS_1 ;;
    gpu-tests-2)
      for f in $GPU_TESTS_1; do first+=(--ignore "$f"); done
      gpu_pytest "$b" "$dir/pytest.txt" "${first[@]}" tests/gpu tests/integration ;;
    gpu-launch)
      gpu_pytest "$b" "$dir/pytest.txt" tests/gpu/test_launch_record_gpu.py ;;
    cli-decision)
      local aa=() rc=0 p1=$((b * 7 / 10))  # part 1's A/A runs and heads; part 2's do_bench
      [ "$DEVICE" = cpu ] && aa=(--aa-runs 1)
      # each A/A run's results file kept (--keep-runs): why a case took the passes it did
      "$PY" bench/cli_decision.py --part 1 "${cpu[@]}" "${aa[@]}" --budget-s "$p1" --out "$dir/cli" \
        --keep-runs "$dir/runs" || rc=$?
      "$PY" bench/cli_decision.py --part 2 "${cpu[@]}" --budget-s $((b - p1 - 10)) --out "$dir/cli" || rc=$?
      return "$rc" ;;
    cli-decision-job)
      "$PY" bench/cli_decision.py --part 3 "${cpu[@]}" --fixture-jobs alongside --budget-s $((b - 20)) --out "$dir/cli" ;;
    onboard)
      "$PY" bench/device_onboard.py "${cpu[@]}" --review-s $((b - 25)) --out "$dir" ;;
    rk-fla)
      if [ "$DEVICE" = cpu ]; then rk "$dir" --heads aa --runs 1 --budget-s $((b - 20)) --run-s 120 --groups "$(rk_standin 1)"
      else
        # a fourth A/A run of fla's kernels on the engine that decides a plain case in one pass
        # (its runs 1-3, slow5 and slow10 are recorded: 2026-12-05, slow10 on an H100)
        rk "$dir" --heads aa --runs 1 --first-run 4 --groups fla --budget-s $((b - 20))
      fi ;;
    rk-rest)
      if [ "$DEVICE" = cpu ]; then rk "$dir" --heads slow10 --budget-s $((b - 20)) --run-s 120 --groups "$(rk_standin 2)"
      else
        # a fourth A/A run of the other groups, likewise (about 160 s on an H100, 2026-12-05)
        rk "$dir" --heads aa --runs 1 --first-run 4 --groups flaggems,cce,bnb,torchao \
          --budget-s $((b - 20))
      fi ;;
    onboard-tmd)
      local extra=()
      [ "$DEVICE" = cpu ] && extra=(--device cpu --kernels neighbors_brute)
      # the script ends within its limit (the review included) and a few seconds of clean-up
      ONBOARD_LIMIT_S=$((b - 10)) sh bench/onboard_gpu.sh "$dir" "${extra[@]}" ;;
    pr-golden)
      "$PY" bench/device_pr_review.py "${cpu[@]}" --out "$dir" ;;
  esac
}

rk_standin() {  # the N-th group of the CPU stand-in catalogue
  find tests/data/real_kernels_standin/catalogue -name '*.toml' | sort | sed -n "${1}p" | xargs -r basename | sed 's/\.toml$//'
}

rc_all=0
for s in "${stages[@]}"; do
  b=${BUDGET[$s]}
  [ "$TINY" = 1 ] && b=${TINY_BUDGET[$s]}
  b=${STAGE_S:-$b}  # one budget for every stage, to try a stage's stop
  if [ "$(left)" -lt $((b + 15)) ]; then
    md "| $s | not run | - | $b | $(left) s left in the call, the stage needs $b |"
    rc_all=3
    continue
  fi
  dir=$OUT/$s
  mkdir -p "$dir"
  t0=$(date +%s)
  export -f stage_cmd rk rk_standin gpu_pytest
  export PY DEVICE RK_SKIP RK_RECORD GPU_TESTS_1
  # traced: the commands as run, each with its arguments, go to stage.log and into run.md
  timeout -k 10 "$b" bash -c 'set -x; stage_cmd "$@"' _ "$s" "$dir" "$b" >"$dir/stage.log" 2>&1
  rc=$?
  wall=$(($(date +%s) - t0))
  ran=$(grep -E "^\++ ($PY|cp|timeout) " "$dir/stage.log" | sed -E 's/^\++ //; s/\|/\\|/g' | paste -sd ';' | sed 's/;/`; `/g')
  case "$rc" in 124|137) rc="$rc (stopped at its budget)" ;; esac
  md "| $s | $rc | $wall | $b | \`$ran\` |"
  [ "$rc" = 0 ] || rc_all=1
  tar -czf "$OUT/$s.tar.gz" -C "$OUT" "$s" && rm -rf "$dir"
done
md "" "call done after $(($(date +%s) - START)) s; each stage's files are in STAGE.tar.gz beside this file"
exit "$rc_all"
