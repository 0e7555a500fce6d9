#!/usr/bin/env bash
# One device call for the tensor-core GEMM schedule search (coalesced staging
# through collapse): names the GPU, then for every schedule file under
# carry/tc/*.pdl (made by scripts/gen_tc_schedule.py) validates it at a small shape
# against the f64 interpreter and times it at 4096^3 against cuBLAS in the same
# process (`--run --compare cublas --json`, validated first against OpenBLAS
# dgemm), printing one table row each; dumps the SASS of the files named in
# $TC_SASS.  Logs and JSON go to $OUT.  Usage: scripts/gpu_gemm_tc_search.sh PERFC
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=$1
O=${OUT:-/tmp/gpu_tc2}
mkdir -p "$O"
echo "== GPU"; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1
row() { python3 - "$1" "$2" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[2]))
except Exception as ex:
    print(f"{sys.argv[1]:14s} no json ({ex})"); sys.exit()
b = j.get("baseline") or {}
t = j.get("time_ms", {})
med = t.get("median") if isinstance(t, dict) else t
bt = b.get("time_ms", {})
bmed = bt.get("median") if isinstance(bt, dict) else bt
print(f"{sys.argv[1]:14s} valid={j.get('valid')} err={j.get('rel_error'):.2e} golden={j.get('golden')} "
      f"perfc={med:.4f} ms {j.get('gflops',0)/1e3:.1f} TF  cublas={bmed:.4f} ms  ratio={j.get('vs_baseline'):.3f}")
PY
}
for f in ${TC_FILES:-carry/tc/*.pdl}; do
  v=$(basename $f .pdl)
  k=$(sed -n 's/^kernel \([a-z_0-9]*\).*/\1/p' $f | head -1)
  timeout 60 "$P" $f -k $k -D M=256 -D N=512 -D K=192 -target sm_90 --run >"$O/$v.small" 2>&1 || echo "$v small: FAILED $(tail -3 $O/$v.small)"
  timeout 120 "$P" $f -k $k -target sm_90 --run --compare cublas --json >"$O/$v.json" 2>"$O/$v.err" || echo "$v 4096: status $? $(tail -3 $O/$v.err)"
  row $v "$O/$v.json" | tee -a "$O/table.txt"
done
for v in ${TC_SAN:-}; do
  f=carry/tc/$v.pdl; k=$(sed -n 's/^kernel \([a-z_0-9]*\).*/\1/p' $f | head -1)
  for t in racecheck memcheck; do
    timeout 120 compute-sanitizer --tool $t --error-exitcode 9 "$P" $f -k $k -D M=256 -D N=384 -D K=160 \
        -target sm_90 --run >"$O/san_${v}_$t.err" 2>&1
    echo "$v compute-sanitizer $t: status $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$O/san_${v}_$t.err" | head -1)" | tee -a "$O/table.txt"
  done
done
for v in ${TC_SASS:-}; do
  f=carry/tc/$v.pdl; k=$(sed -n 's/^kernel \([a-z_0-9]*\).*/\1/p' $f | head -1)
  "$P" $f -k $k -target sm_90 -emit cubin -o /tmp/$v.cubin && cuobjdump -sass /tmp/$v.cubin > "$O/$v.sass" 2>&1
  echo "$v SASS: $(grep -c HMMA $O/$v.sass) HMMA, $(grep -c LDSM $O/$v.sass) LDSM, $(grep -c LDGSTS $O/$v.sass) LDGSTS, $(grep -cE 'STG.E.64' $O/$v.sass) STG.64, $(grep -cE 'STG.E ' $O/$v.sass) STG.32, $(grep -cE 'LDG' $O/$v.sass) LDG, $(grep -cE 'LDL|STL' $O/$v.sass) local"
done
(cd "$O" && tar czf /tmp/all.tgz *.sass *.err *.small *.json 2>/dev/null; rm -f *.sass *.small *.err *.json; mv /tmp/all.tgz .)
echo "== table"; cat "$O/table.txt"
