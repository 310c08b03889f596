#!/bin/sh
# make_bundle.sh SRC [OUT]: bench/device_src/tritonbench.bundle from a clone SRC of
# meta-pytorch/tritonbench (BSD 3-Clause), holding only the files the GPU session's two runs
# import or read (README.md beside this file lists them and the commits):
#   onboard     db2155c, the commit docs/onboarding/meta-pytorch-tritonbench.md onboarded
#   pr269-base  7026472^ plus one commit: the policy and the bench entry of the sum operator
#   pr269-head  pr269-base plus 7026472 ("Add multi-blocks support to sum triton kernel", #269)
# Each commit of the repository keeps its author, date and message; nothing is fetched.
set -eu
src=$1
out=${2:-$(cd "$(dirname "$0")" && pwd)/tritonbench.bundle}
here=$(cd "$(dirname "$0")" && pwd)
ONBOARD=db2155c807755c19f5d98c64917ec897f24061f3
PR=70264720fbfbb13020f63d4f8ddf9389abd54841
COMMON="LICENSE README.md pyproject.toml requirements.txt tritonbench/__init__.py
tritonbench/components/__init__.py tritonbench/components/do_bench tritonbench/components/export
tritonbench/components/ncu tritonbench/operators/__init__.py tritonbench/operators/op.py
tritonbench/operators_collection tritonbench/utils/__init__.py tritonbench/utils/env_utils.py
tritonbench/utils/input.py tritonbench/utils/path_utils.py tritonbench/utils/triton_op.py"
OPS="tritonbench/operators/vector_add tritonbench/operators/vector_exp tritonbench/operators/softmax
tritonbench/operators/low_mem_dropout tritonbench/operators/layer_norm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git init -q -b onboard "$work/repo"

# run a command as REV's author and committer wrote REV, at its dates
as_of() {  # REV COMMAND...
  rev=$1; shift
  GIT_AUTHOR_NAME="$(git -C "$src" log -1 --format=%an "$rev")" \
  GIT_AUTHOR_EMAIL="$(git -C "$src" log -1 --format=%ae "$rev")" \
  GIT_AUTHOR_DATE="$(git -C "$src" log -1 --format=%aD "$rev")" \
  GIT_COMMITTER_NAME="$(git -C "$src" log -1 --format=%cn "$rev")" \
  GIT_COMMITTER_EMAIL="$(git -C "$src" log -1 --format=%ce "$rev")" \
  GIT_COMMITTER_DATE="$(git -C "$src" log -1 --format=%cD "$rev")" "$@"
}
message() {  # REV: its message, and where it came from
  printf '%s\n\n(meta-pytorch/tritonbench %s, trimmed)' "$(git -C "$src" log -1 --format=%B "$1")" "$1"
}

# commit REV's files under PATHS (a tree of only those) on PARENT, as REV's author wrote it
trimmed() {  # REV PARENT PATHS...
  rev=$1 parent=$2; shift 2
  idx=$work/index; rm -f "$idx"
  keep=$(git -C "$src" ls-tree -r --name-only "$rev" -- "$@")
  for f in $keep; do
    GIT_INDEX_FILE=$idx git -C "$src" update-index --add \
      --cacheinfo "$(git -C "$src" ls-tree "$rev" -- "$f" | awk '{print $1","$3}'),$f"
  done
  tree=$(GIT_INDEX_FILE=$idx git -C "$src" write-tree)
  as_of "$rev" git -C "$src" commit-tree "$tree" ${parent:+-p "$parent"} -m "$(message "$rev")"
}

# shellcheck disable=SC2086  # the path lists split on white space on purpose
onboard=$(trimmed $ONBOARD "" $COMMON $OPS)
base=$(trimmed "$PR^" "" $COMMON tritonbench/operators/sum)
# the policy commit: the files under pr269/ beside this script, added to the base's tree
git -C "$work/repo" fetch -q "$src" "$base"
git -C "$work/repo" checkout -q -b pr269-base "$base"
cp -R "$here/pr269/." "$work/repo/"
git -C "$work/repo" add -A
GIT_AUTHOR_NAME=kernel-review GIT_AUTHOR_EMAIL=kernel-review@localhost GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" \
GIT_COMMITTER_NAME=kernel-review GIT_COMMITTER_EMAIL=kernel-review@localhost GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" \
  git -C "$work/repo" commit -q -m "kernel-review policy and bench entry for the sum operator"
# the pull request's own change on top: its diff, limited to the kept files
git -C "$work/repo" checkout -q -b pr269-head
git -C "$src" diff "$PR^" "$PR" -- tritonbench/operators/sum | git -C "$work/repo" apply --index
as_of "$PR" git -C "$work/repo" commit -q -m "$(message "$PR")"
git -C "$work/repo" fetch -q "$src" "$onboard"
git -C "$work/repo" branch -q -f onboard "$onboard"
git -C "$work/repo" bundle create -q "$out" onboard pr269-base pr269-head
ls -l "$out"
