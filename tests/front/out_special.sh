#!/usr/bin/env bash
# `-o` onto something that is not a regular file writes through it and leaves it
# what it was: a FIFO stays a FIFO (read by a background cat), a symbolic link stays
# a link to the file it names, and a regular file is replaced whole (write beside,
# rename).  `-o /dev/null` once renamed a plain file over the device node when run as
# root; a FIFO tests the same path without touching /dev.
# Usage: out_special.sh PERFC PDL
set -u
perfc=$1; pdl=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
mkfifo "$tmp/fifo"
timeout 10 cat "$tmp/fifo" >"$tmp/got" &
reader=$!
"$perfc" "$pdl" -emit ir -o "$tmp/fifo" || { echo "FAIL: writing to a FIFO"; fail=1; }
wait $reader
[ -p "$tmp/fifo" ] || { echo "FAIL: the FIFO was replaced by a regular file"; fail=1; }
grep -q '^kernel' "$tmp/got" || { echo "FAIL: nothing came through the FIFO"; fail=1; }
echo old >"$tmp/real"
ln -s real "$tmp/link"
"$perfc" "$pdl" -emit ir -o "$tmp/link" || { echo "FAIL: writing through a link"; fail=1; }
[ -L "$tmp/link" ] || { echo "FAIL: the link was replaced"; fail=1; }
grep -q '^kernel' "$tmp/real" || { echo "FAIL: the link's target was not written"; fail=1; }
"$perfc" "$pdl" -emit ir -o "$tmp/plain" && grep -q '^kernel' "$tmp/plain" || { echo "FAIL: plain file"; fail=1; }
ls "$tmp"/*.tmp >/dev/null 2>&1 && { echo "FAIL: a .tmp file was left behind"; fail=1; }
[ $fail = 0 ] && echo "-o onto special files: ok"
exit $fail
