#!/usr/bin/env bash
# The lib_gpu_compile test (tests/lib/CMakeLists.txt; label slow): every stdlib
# kernel that `perfc lib` exports for GPUs gets a general GPU variant (sizes as
# kernel arguments) that NVRTC compiles to cubin and PTX for sm_80 and sm_90a, and
# the manifest lists it.  Exit status 77 when NVRTC is missing.
#   gpu_compile.sh PERFC SOURCE_DIR
set -euo pipefail
PERFC=$1 SRC=$2
TARGETS=sm_80,sm_90a WANT='"sm_80", "sm_90a"'
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$PERFC" lib "$SRC"/stdlib/*.pdl -target $TARGETS -o "$W/all" >"$W/build.log" 2>&1; then
    grep -qi nvrtc "$W/build.log" && { echo "NVRTC is missing: skipped"; exit 77; }
    cat "$W/build.log"; fail "perfc lib of the stdlib with GPU targets"
fi
if grep -q "general GPU variant" "$W/build.log"; then
    grep -A3 "general GPU variant" "$W/build.log"; fail "a stdlib kernel lacks general GPU code"
fi
# every kernel of the manifest: general GPU code for every architecture
cat > "$W/man.c" <<'C'
#include <stdio.h>
extern const char *const all_manifest;
int main(void) { fputs(all_manifest, stdout); return 0; }
C
cc -std=c11 "$W/man.c" "$W/liball.a" -lm -lpthread -ldl -o "$W/man" || fail "linking liball.a"
"$W/man" > "$W/manifest.json"
nk=$(grep -o '"name": "[A-Za-z0-9_]*", "symbol"' "$W/manifest.json" | wc -l)
ng=$(grep -oF "\"gpu_general\": [$WANT]" "$W/manifest.json" | wc -l)
echo "$nk kernels, $ng with general GPU code for $TARGETS"
[ "$nk" -ge 11 ] || fail "the stdlib library has only $nk kernels (one per operation: 11)"
[ "$nk" = "$ng" ] || fail "$((nk - ng)) kernels lack general GPU code"
# the embedded general code: one entry point per node of the nest, in the PTX
strings -a "$W/liball.a" > "$W/strings.txt"
grep -q '\.entry pfg_p0' "$W/strings.txt" || fail "no general GPU entry point in the library's PTX"
echo "lib_gpu_compile: ok"
