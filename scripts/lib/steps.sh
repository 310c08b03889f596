# shellcheck shell=bash
# Sourced by scripts/setup, scripts/demo and scripts/test: every step that can take more than a
# few seconds is announced before it starts and timed when it ends, on stderr (so a command's own
# output, the demo's review, stays alone on stdout); a step that fails is named, with its exit
# status and what to do next.
#
#   STEPS_WHO=setup                     # the script's name, first word of each line
#   step "what it does" "what to do if it fails" command args...
#
# Lines look like `== setup: torch 2.13.0 ...` then `== setup: torch 2.13.0: 9.4 s`; a failure
# reads `== setup: FAILED: torch 2.13.0 (exit 1 after 3.2 s): <what to do>` and the script exits
# with the command's status.

STEPS_WHO=${STEPS_WHO:-${0##*/}}
STEPS_START=$EPOCHREALTIME

# seconds since $1 (an $EPOCHREALTIME), one decimal
steps_since() {
  local now=$EPOCHREALTIME
  awk -v a="$1" -v b="$now" 'BEGIN { printf "%.1f", b - a }'
}

steps_say() {
  echo "== $STEPS_WHO: $*" >&2
}

step() {
  local what=$1 hint=$2 started=$EPOCHREALTIME rc=0
  shift 2
  steps_say "$what ..."
  "$@" || rc=$?
  if [ "$rc" -ne 0 ]; then
    steps_say "FAILED: $what (exit $rc after $(steps_since "$started") s): $hint"
    exit "$rc"
  fi
  steps_say "$what: $(steps_since "$started") s"
}
