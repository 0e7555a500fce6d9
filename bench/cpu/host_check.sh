#!/usr/bin/env bash
# The CPU of a lent GPU machine (often an AVX-512 or AMX Xeon), in one device call:
# its ISA and CPU attention's default against the FMA peak (bench/cpu/attention.sh),
# validated.  bf16 products there: bench/cpu/amx_check.sh.  Carry carry/gpu/perfc.xz
# (the static perfc); with carry/gpu/perfc-base.xz beside it, attention runs both,
# interleaved.
#   bash bench/cpu/host_check.sh
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
P=/tmp/pf/perfc
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "isa: $(grep -o -E 'avx512f|avx512_bf16|amx_bf16|amx_tile|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "== attention 1x1x2048x64 bf16, one thread"
if [ -f carry/gpu/perfc-base.xz ]; then
    # a base perfc beside it: two rounds, interleaved, the default form's lines only
    xz -dc carry/gpu/perfc-base.xz > /tmp/pf/perfc-base && chmod +x /tmp/pf/perfc-base
    for round in 1 2; do
        for p in /tmp/pf/perfc-base "$P"; do
            echo "-- $p, round $round"
            REPS=5 bash bench/cpu/attention.sh "$p" 2048 64 2>&1 | grep -E '^(form|default)|peak'
        done
    done
else
    REPS=5 bash bench/cpu/attention.sh "$P" 2048 64 2>&1 | tail -6
fi
