#!/usr/bin/env bash
# A small git history for the ready regression campaign
# (config/campaigns/regression_heater.yaml): eight commits of our heater,
# tagged v1..v8, the fifth of which plants about 25 % more work per
# operation. Made from this checkout's perfsnake/csrc/heater/heater.c; idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=resources/demo/heater-history
[ -d "$repo/.git" ] && exit 0
rm -rf "$repo.tmp"
mkdir -p "$repo.tmp"
export GIT_AUTHOR_NAME=perfsnake GIT_AUTHOR_EMAIL=perfsnake@localhost
export GIT_COMMITTER_NAME=perfsnake GIT_COMMITTER_EMAIL=perfsnake@localhost
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
git -C "$repo.tmp" init -q -b main
for i in 1 2 3 4 5 6 7 8; do
    cp perfsnake/csrc/heater/heater.c "$repo.tmp/heater.c"
    if [ "$i" -ge 5 ]; then
        # The planted regression: every fourth step of a batch works twice.
        sed -i 's/^\t\tx = work(x);$/\t\tx = (i % 4 == 0) ? work(work(x)) : work(x);/' "$repo.tmp/heater.c"
        grep -q 'work(work(x))' "$repo.tmp/heater.c"
    fi
    echo "release $i" > "$repo.tmp/VERSION"
    git -C "$repo.tmp" add -A
    msg="release $i"
    [ "$i" -eq 5 ] && msg="release 5: an extra mixing step in the batch loop"
    git -C "$repo.tmp" commit -q -m "$msg"
    git -C "$repo.tmp" tag "v$i"
done
mv "$repo.tmp" "$repo"
