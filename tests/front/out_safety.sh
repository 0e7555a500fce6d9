#!/usr/bin/env bash
# `-o FILE` writes through a fresh temporary made with O_EXCL in FILE's directory and
# renames it over FILE once complete; nothing else in that directory is touched.
# Checked here: a symbolic link planted at the old predictable name FILE.tmp (and
# at FILE.tmp as a plain file) is left as it was and its target is not written; an
# unwritable or missing directory, a directory as FILE, and a link to nothing are
# errors that leave nothing behind; a replaced file keeps its permissions; no
# temporary survives any of it.
# Usage: out_safety.sh PERFC PDL
set -u
perfc=$1; pdl=$2
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# a planted link at FILE.tmp
echo victim >"$tmp/victim"
ln -s victim "$tmp/out.tmp"
"$perfc" "$pdl" -emit ir -o "$tmp/out" || bad "-o with a planted link beside it"
[ "$(cat "$tmp/victim")" = victim ] || bad "the planted link's target was written"
[ -L "$tmp/out.tmp" ] || bad "the planted link was replaced"
grep -q '^kernel' "$tmp/out" || bad "the output was not written"

# an existing FILE.tmp
echo keep >"$tmp/b.tmp"
"$perfc" "$pdl" -emit ir -o "$tmp/b" || bad "-o beside an existing FILE.tmp"
[ "$(cat "$tmp/b.tmp")" = keep ] || bad "an existing FILE.tmp was destroyed"

# a replaced file keeps its mode
chmod 640 "$tmp/b"
"$perfc" "$pdl" -emit ir -o "$tmp/b" || bad "replacing a file"
[ "$(stat -c %a "$tmp/b")" = 640 ] || bad "the replaced file's mode changed to $(stat -c %a "$tmp/b")"

# errors that leave nothing behind
snapshot() { (cd "$tmp" && find . | sort); }
before=$(snapshot)
"$perfc" "$pdl" -emit ir -o "$tmp/missing/out" 2>/dev/null && bad "-o into a missing directory succeeded"
mkdir "$tmp/dir"; before=$(snapshot)
"$perfc" "$pdl" -emit ir -o "$tmp/dir" 2>/dev/null && bad "-o onto a directory succeeded"
ln -s nowhere "$tmp/dangling"; before=$(snapshot)
"$perfc" "$pdl" -emit ir -o "$tmp/dangling" 2>/dev/null && bad "-o through a link to nothing succeeded"
[ "$(snapshot)" = "$before" ] || bad "a failed -o left something behind: $(diff <(echo "$before") <(snapshot))"
[ -e "$tmp/nowhere" ] && bad "a link to nothing was made to create its target"
if [ "$(id -u)" != 0 ]; then   # root writes into read-only directories anyway
  mkdir "$tmp/ro"; chmod 555 "$tmp/ro"; before=$(snapshot)
  "$perfc" "$pdl" -emit ir -o "$tmp/ro/out" 2>"$tmp/err" && bad "-o into a read-only directory succeeded"
  grep -q "cannot write" "$tmp/err" || bad "no error for a read-only directory: $(cat "$tmp/err")"
  [ "$(snapshot)" = "$before" ] || bad "a read-only directory changed"
fi
ls -a "$tmp" | grep -q '^\.out\.\|^\.b\.' && bad "a temporary was left behind: $(ls -a "$tmp")"
[ $fail = 0 ] && echo "-o safety: ok"
exit $fail
