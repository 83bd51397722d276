#!/bin/sh
# counsel's notes command: the transcript arrives on stdin; the summary goes to stdout.
# `COUNSEL_NOTES_FAIL=1` in the package env makes it fail (to show that closing still works).
set -eu
[ "${COUNSEL_NOTES_FAIL:-}" != 1 ] || { echo "notes: told to fail" >&2; exit 3; }
turns=$(grep -c '^## You' || true)
[ "$turns" = 1 ] && n="1 turn" || n="$turns turns"
echo "We met for $n; counsel's notes command summarized the transcript."
