#!/usr/bin/env python3
"""Reads the runs of bench/cpu/tune_model.sh, bench/gpu/tune_model.sh or the
tune_time.sh scripts (OUT/MODE.R.err: perfc's per-candidate progress lines, written
because stderr was not a terminal) and prints, per run, the final best and the time
and candidate count until the best so far was within 5% of (a) the run's own final
best, (b) the best of all runs; then the medians per mode and their ratio (the second
mode over the first).

    bench/tune_model_report.py OUT REPS [MODE1 MODE2]     (modes: without with)
"""
import re, sys
out, reps = sys.argv[1], int(sys.argv[2])
modes = sys.argv[3:5] if len(sys.argv) >= 5 else ["without", "with"]
line = re.compile(r'^perfc: tune (\d+)/(\d+) .*?best ([0-9.e+-]+) ms.*?  (?:([0-9.]+) s|(\d+):(\d+)) elapsed')
runs = {}
for mode in modes:
    for r in range(1, reps + 1):
        pts = []
        for l in open(f"{out}/{mode}.{r}.err"):
            m = line.match(l)
            if m:
                t = float(m.group(4)) if m.group(4) else 60 * int(m.group(5)) + int(m.group(6))
                pts.append((t, float(m.group(3)), int(m.group(1))))
        runs[(mode, r)] = pts
overall = min(p[-1][1] for p in runs.values() if p)
def within(pts, ref):
    for t, b, n in pts:
        if b <= 1.05 * ref:
            return t, n
    return None, None
print(f"{'run':<16} {'measured':>8} {'final best ms':>13} {'t5 own (s)':>10} {'n':>3} {'t5 all (s)':>10} {'n':>3} {'search s':>8}")
agg = {m: [] for m in modes}
for (mode, r), pts in runs.items():
    if not pts:
        print(f"{mode}.{r}: no progress lines"); continue
    t_own, n_own = within(pts, pts[-1][1])
    t_all, n_all = within(pts, overall)
    agg[mode].append((t_own, t_all))
    fmt = lambda v: f"{v:10.1f}" if v is not None else f"{'never':>10}"
    print(f"{mode + '.' + str(r):<16} {pts[-1][2]:8d} {pts[-1][1]:13.4g} {fmt(t_own)} {n_own or 0:3d} {fmt(t_all)} {n_all or 0:3d} {pts[-1][0]:8.1f}")
print(f"best of all runs: {overall:.4g} ms")
def med(v):
    v = sorted(v)
    return None if not v else v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
for which, k in (("own final best", 0), ("best of all runs", 1)):
    # a run that never came within 5% counts as its whole search time
    vals = {m: [a[k] if a[k] is not None else runs[(m, i + 1)][-1][0] for i, a in enumerate(agg[m])] for m in agg}
    wo, w = med(vals[modes[0]]), med(vals[modes[1]])
    if w is not None and wo:
        print(f"median time to within 5% of the {which}: {modes[0]} {wo:.1f} s, {modes[1]} {w:.1f} s "
              f"({modes[1]}/{modes[0]} = {w / wo:.2f})")
