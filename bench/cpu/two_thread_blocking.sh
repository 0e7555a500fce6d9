#!/usr/bin/env bash
# sgemm N^3 (default 1024) at two threads: the default schedule's blocking (the tuner's
# first template at its first values) beside variants of it, each validated and timed
# beside OpenBLAS by `perfc --run --compare openblas` in the same process, rounds
# interleaved.  For choosing the machine's blocking at more than one thread (the
# tuner's first candidate).
#   bench/cpu/two_thread_blocking.sh      PERFC=build/perfc N=1024 REPS=3 THREADS=2 CASES="1 4 64 256 128 j1o,.."
#   (FILE and KERNEL name another kernel: FILE=bench/cpu/gemm_layouts.pdl KERNEL=mm_tn)
# Each case: TEMPLATE MR NR KC MB PAR (template 1: column panels or row tiles in
# parallel by PAR; template 2: row blocks in parallel).
set -u
cd "$(dirname "$0")/../.."
P=${PERFC:-build/perfc}; N=${N:-1024}; T=${THREADS:-2}
F=${FILE:-bench/gpu/kernels/mm_f32.pdl}
sz=(-D M=$N -D N=$N -D K=$N)
[ -n "${KERNEL:-}" ] && sz+=(-k "$KERNEL")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
PERFC_TUNE_SPACE=1 "$P" $F "${sz[@]}" --threads "$T" --autotune 2>&1 |
  awk -v d="$tmp" '/^# template [0-9]+ of/{n=$3; next} /^schedule /{f=1; next} /^}/{f=0} f{print > (d "/t" n ".sched")}'
cfg() {  # TEMPLATE MR NR KC MB PAR
  sed -e "s/param mr_[a-z0-9]* in \[.*\]/param mr_i = $2/" -e "s/param nr_[a-z0-9]* in \[.*\]/param nr_j = $3/" \
      -e "s/param kc_[a-z0-9]* in \[.*\]/param kc_k = $4/" -e "s/param mb_[a-z0-9]* in \[.*\]/param mb_i = $5/" \
      -e "s/param par_[a-z0-9]* in \[.*\]/param par_j = $6/" "$tmp/t$1.sched"
}
for rep in $(seq "${REPS:-3}"); do
  IFS=, read -r -a cases <<< "${CASES:-1 4 64 256 128 j1o,1 4 64 512 128 j1o,1 4 64 256 128 i1oi,2 4 64 256 128 i1oo,2 4 16 512 128 i1oo}"
  for c in "${cases[@]}"; do
    set -- $c
    r=$("$P" $F "${sz[@]}" --threads "$T" --no-schedule -s "$(cfg "$@")" --run --compare openblas --json 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); t=r["time_ms"]["median"]; b=r["baseline"]["time_ms"]["median"]; print("%s %.3f ms, OpenBLAS %.3f ms, ratio %.3f" % ("valid" if r["valid"] else "INVALID", t, b, b / t))')
    echo "round $rep, template $1 mr $2 nr $3 kc $4 mb $5 $6: $r"
  done
done
