#!/usr/bin/env bash
# What bounds perfc's mma.sync (sm_80) GEMM on a Hopper GPU, in one device call:
# the mma.sync ceiling (mma_peak.cu), the sm_80 suite rows with every template timed
# (--autotune over the whole space), and the stall reasons of the default kernel.
#   bash bench/gpu/proto/mma80.sh   (carry carry/gpu/perfc.xz)
set -u
cd "$(dirname "$0")/../../.."
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/mma80}; mkdir -p "$O"
nvcc -O3 -arch=sm_90 bench/gpu/proto/mma_peak.cu -o /tmp/mma_peak && /tmp/mma_peak | tee "$O/peak.txt"
OUT=$O/c TARGET=sm_80 BUDGET=${BUDGET:-10} TLIMIT=${TLIMIT:-60} bash bench/gpu/contractions.sh ${ROWS:-mm-4096}
grep -A14 "rank  median" "$O"/c/*-sm_80.err | cut -c1-160
STALLS=1 NAME=mm_0 bash bench/gpu/ncu_kernel.sh bench/gpu/contractions/mm.pdl -target sm_80 2>&1 | tail -40
