#!/usr/bin/env bash
# Why perfc's sgemm runs at half the FMA peak on the Xeon of a GPU machine (0.49-0.54
# of 179 GFLOP/s on 2026-12-07, docs/benchmarks.md "On the Xeon host of a GPU
# machine"), in one device call: the default schedule at 1024^3 and 2048^3, one
# thread, then the same template with the register tile and the reduction panel
# changed one at a time (MR x NR floats, KC), every run validated, beside torch.mm on
# the CPU.  Suspect: the default's B micro-panel (KC 256 x NR 64 floats, 64 KiB)
# does not fit the 48 KiB L1, and each k step reads 256 bytes of it from L2 for 16
# FMAs; 8 x 32 or 12 x 32 read 128 bytes for 16 or 24.  Output goes to $OUT (or
# /tmp) line by line: a timeout keeps what was measured.  Carry carry/gpu/perfc.xz.
#   bash bench/cpu/host_gemm_probe.sh          VARIANTS="4x64:256 8x32:256 ..." SIZES="1024 2048"
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
LOG=${OUT:-/tmp}/gemm_probe.log
SIZES=${SIZES:-"1024 2048"}
VARIANTS=${VARIANTS:-"4x64:256 4x64:128 8x32:256 8x32:384 12x32:256 12x32:128 14x32:256 6x48:256 6x64:256 16x16:256"}
say() { echo "$*" | tee -a "$LOG"; }
say "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
lscpu | grep -E 'L1d|L2' | sed 's/  */ /g' | tee -a "$LOG"
for n in $SIZES; do
    args=(bench/cpu/gemm_layouts.pdl -k mm -D M="$n" -D N="$n" -D K="$n" --threads 1)
    text=$("$P" "${args[@]}" -emit report --verbose 2>&1 | sed -n '/applies/,/^kernel/p' | grep '^  ')
    say "== ${n}^3 default: $(echo "$text" | grep param | tr -s ' ' | tr '\n' ' ')"
    t=$("$P" "${args[@]}" --run --quiet 2>&1 | grep -E '^(time|perfc  )' | tr -s ' ' | tr '\n' ' ')
    say "default: $t"
    for v in $VARIANTS; do
        mr=${v%%x*} rest=${v#*x} nr=${rest%%:*} kc=${v##*:}
        # the packing of B follows NR (its strips are written as numbers, not the
        # parameter, in the printed text)
        s=$(echo "$text" | sed -e "s/param mr_i = .*/param mr_i = $mr/" -e "s/param nr_j = .*/param nr_j = $nr/" \
                                -e "s/param kc_k = .*/param kc_k = $kc/" \
                                -e "s/split(B_ko_c1, [0-9]*)/split(B_ko_c1, $nr)/" \
                                -e "s/fold(B_ko, 1, [0-9]*)/fold(B_ko, 1, $nr)/")
        t=$("$P" "${args[@]}" --no-schedule -s "$s" --run --quiet 2>&1 | grep -E '^(valid|time|perfc  )|rror' |
            tr -s ' ' | tr '\n' ' ')
        say "MR $mr NR $nr KC $kc: $t"
    done
    say "torch.mm: $(python3 -c "
import time, statistics, torch
torch.set_num_threads(1)
a, b = torch.randn($n, $n), torch.randn($n, $n)
for _ in range(3): torch.mm(a, b)
ts = []
for _ in range(10):
    t0 = time.perf_counter(); torch.mm(a, b); ts.append((time.perf_counter() - t0) * 1e3)
print('median %.3f ms, %.1f GFLOP/s' % (statistics.median(ts), 2 * $n ** 3 / statistics.median(ts) / 1e6))
" 2>&1 | tail -1)"
done
