#!/usr/bin/env bash
# Issue 15's CPU bars (sgemm default and tuned against OpenBLAS, conv2d tuned against
# oneDNN through torch) at one and two threads on the idle cores of a lent GPU
# machine's host, in one device call (bench/cpu/host_bars.py says what and why).
# Carry carry/gpu/perfc.xz (the static perfc, OpenBLAS linked in).
#   bash bench/cpu/host_bars.sh [host_bars.py options: --rounds 3 --budget 24 --only "gemm tuned conv"]
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/pf && xz -dc carry/gpu/perfc.xz > /tmp/pf/perfc && chmod +x /tmp/pf/perfc
echo "isa: $(grep -o -E 'avx512f|avx512_bf16|amx_bf16|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
lscpu | grep -E 'Model name|L1d|L2|L3|NUMA node0' | sed 's/  */ /g'
python3 bench/cpu/host_bars.py /tmp/pf/perfc "$@"
