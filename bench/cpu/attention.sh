#!/usr/bin/env bash
# Attention on the CPU, unfused (the five lowered nests, two S x S temporaries:
# --no-schedule), fused by hand (bench/cpu/attention.sched: online_softmax and a
# register-tiled schedule) and as the default gives it (no schedule: the tuner's
# attention template, tune/rules_attn_cpu.c),
# at B=1, H=1, S=2048, D=64, one thread (issue 14's CPU bar):
#   - `perfc --run --threads 1`: validated against the f64 golden, timed by the harness;
#     --plot gives the machine's measured f32 FMA peak (runtime/peak.c);
#   - the same kernel emitted as an object and run by bench/cpu/attn_driver.c: the
#     time of a call and the process's peak resident set, which is then the kernel's
#     own memory (perfc --run also holds the golden reference's S x S buffers).
# FLOP counted for the two products only: 4 S^2 D; GFLOP/s uses the kernel thread's
# CPU time per call (the least of REPS calls), which a loaded machine inflates far less
# than wall time (it still shares caches and the core's other hyperthread).  The load
# average is printed: on a shared machine wall times are only as good as it is quiet.
#
#   bench/cpu/attention.sh [perfc] [S] [D]       (defaults build/perfc 2048 64)
set -euo pipefail
cd "$(dirname "$0")/../.."
PERFC=${1:-build/perfc}
S=${2:-2048}
D=${3:-64}
REPS=${REPS:-5}
CC=${CC:-gcc}
defs=(-D B=1 -D H=1 -D S="$S" -D D="$D")
sched=$(grep -v '^#' bench/cpu/attention.sched)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flop=$(python3 -c "print(4 * $S * $S * $D)")

# driver_args: the buffer words for attn_driver from the printed kernel header
driver_args() {
    python3 - "$1" "$S" "$D" <<'PY'
import re, sys
hdr = open(sys.argv[1]).readline()
env = {"B": 1, "H": 1, "S": int(sys.argv[2]), "D": int(sys.argv[3])}
size = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i32": 4}
words = []
for name, dt, shape, rest in re.findall(r"(\S+): (\w+)\[([^\]]*)\] (\w+(?: temp)?)", hdr):
    n = 1
    for e in shape.split(","):
        n *= eval(e.strip().replace("/", "//"), {}, dict(env))
    if rest.startswith("local"):
        words.append("local")
    elif name in ("Q", "K", "V"):
        words.append("in:%d" % (n * size[dt]))
    else:
        words.append("buf:%d" % (n * size[dt]))
print(" ".join(words))
PY
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %10s %10s %10s %10s %8s %12s %s\n" form harness_ms driver_ms driver_min cpu_min GFLOP/s peak_rss_MB valid
peak=""
for form in unfused fused default; do
    case $form in
    fused) sargs=(--no-schedule -s "$sched") ;;
    unfused) sargs=(--no-schedule) ;;
    default) sargs=() ;;
    esac
    out=$("$PERFC" stdlib/attention.pdl "${defs[@]}" "${sargs[@]}" --threads 1 --run --plot "$tmp/$form.svg" 2>&1) || true
    valid=$(echo "$out" | awk '/^valid/ {print $2; exit}')
    hms=$(echo "$out" | awk '/^time/ {print $3; exit}')
    [ -z "$peak" ] && peak=$(grep -o 'f32 FMA peak [0-9.]* GFLOP/s' "$tmp/$form.svg" | head -1 | awk '{print $4}')
    "$PERFC" stdlib/attention.pdl "${defs[@]}" "${sargs[@]}" -emit ir > "$tmp/$form.ir" 2>/dev/null
    "$PERFC" stdlib/attention.pdl "${defs[@]}" "${sargs[@]}" -emit obj -o "$tmp/$form.o"
    $CC -O2 -DKERNEL_FN=attention -I. bench/cpu/attn_driver.c "$tmp/$form.o" runtime/pool.c -lm -lpthread -o "$tmp/$form"
    reps=$REPS
    [ $form = unfused ] && reps=3
    read -r _ dms _ dmin _ cmin _ _ _ rss <<< "$("$tmp/$form" $reps $(driver_args "$tmp/$form.ir"))"
    # GFLOP/s from the thread's CPU time: what the kernel does while it runs
    gf=$(python3 -c "print('%.1f' % ($flop / ($cmin * 1e6)))")
    rmb=$(python3 -c "print('%.1f' % ($rss / 1024))")
    printf "%-8s %10s %10s %10s %10s %8s %12s %s\n" $form "$hms" "$dms" "$dmin" "$cmin" "$gf" "$rmb" "$valid"
    eval "gf_$form=$gf"
done
echo "measured f32 FMA peak (1 thread): ${peak:-unknown} GFLOP/s"
[ -n "$peak" ] && python3 -c "print('by the best CPU time per call, of the FMA peak: fused %.2f, default %.2f' % ($gf_fused / $peak, $gf_default / $peak))"
