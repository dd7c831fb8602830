#!/bin/sh
# The hand-written baseline: run a command N times, as a user's shell script
# would, printing its output. usage: shell_loop.sh N PROG [ARG...]
n=$1
shift
i=0
while [ "$i" -lt "$n" ]; do
  "$@"
  i=$((i + 1))
done
