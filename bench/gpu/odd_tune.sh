#!/usr/bin/env bash
# The odd-shaped bf16 product tuned on sm_90a and as sm_80 code (its realigned
# copy of B once had a thread block of 228 threads, which the tuner prunes, so the
# search measured only SIMT templates), each on a fresh database.
set -u
cd "$(dirname "$0")/../.."
OUT=/tmp/odd-a BUDGET=12 TLIMIT=35 bash bench/gpu/contractions.sh odd
OUT=/tmp/odd-b TARGET=sm_80 BUDGET=8 TLIMIT=25 bash bench/gpu/contractions.sh odd
grep -A4 'rank  median' /tmp/odd-a/odd-sm_90a.err /tmp/odd-b/odd-sm_80.err | cut -c1-120
