#!/bin/sh
# trim.sh SRC DST [PATHSPEC...]: a new repository DST with the two commits of torchmd-net #373 (base 75b16e6,
# head 3344791) holding only PATHSPEC (everything when none is given, less tests/*.ckpt, which the
# snapshot it was made from lacks), with their original authors, dates and messages.
set -eu
src=$1; dst=$2; shift 2
rm -rf "$dst"; git init -q -b main "$dst"
parent=""
for rev in 75b16e625039a5e5e79c5e9d679c6c92ee274445 33447912a7b05787972212441e1a970c87731bad; do
  idx=$(mktemp); rm -f "$idx"
  GIT_INDEX_FILE=$idx git -C "$src" read-tree "$rev"
  GIT_INDEX_FILE=$idx git -C "$src" ls-files -- 'tests/*.ckpt' | (cd "$src" && GIT_INDEX_FILE=$idx xargs -r git update-index --force-remove --)
  if [ "$#" -gt 0 ]; then
    keep=$(GIT_INDEX_FILE=$idx git -C "$src" ls-files -- "$@")
    GIT_INDEX_FILE=$idx git -C "$src" read-tree --empty
    for f in $keep; do GIT_INDEX_FILE=$idx git -C "$src" update-index --add --cacheinfo "$(git -C "$src" ls-tree "$rev" -- "$f" | awk '{print $1","$3}'),$f"; done
  fi
  tree=$(GIT_INDEX_FILE=$idx git -C "$src" write-tree); rm -f "$idx"
  git -C "$src" cat-file -p "$rev" >/dev/null
  export GIT_AUTHOR_NAME="$(git -C "$src" log -1 --format=%an $rev)" GIT_AUTHOR_EMAIL="$(git -C "$src" log -1 --format=%ae $rev)" GIT_AUTHOR_DATE="$(git -C "$src" log -1 --format=%aD $rev)"
  export GIT_COMMITTER_NAME="$(git -C "$src" log -1 --format=%cn $rev)" GIT_COMMITTER_EMAIL="$(git -C "$src" log -1 --format=%ce $rev)" GIT_COMMITTER_DATE="$(git -C "$src" log -1 --format=%cD $rev)"
  msg="$(git -C "$src" log -1 --format=%B $rev)

(torchmd/torchmd-net $rev, trimmed)"
  c=$(git -C "$src" commit-tree "$tree" ${parent:+-p $parent} -m "$msg")
  parent=$c
  git -C "$src" tag -f "trim-$(echo $rev | cut -c1-7)" "$c" >/dev/null
done
git -C "$dst" fetch -q "$src" trim-75b16e6:refs/heads/base trim-3344791:refs/heads/rewrite
git -C "$dst" checkout -q base
