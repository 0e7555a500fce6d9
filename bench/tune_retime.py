#!/usr/bin/env python3
"""Time to a good schedule, judged by re-timed schedules rather than by the single
measurements the searches took.

bench/tune_model_report.py reads each search's own per-candidate times.  On a small
shared machine one measurement of a schedule swings by 5-10%, so "within 5% of the
run's final best" mostly says when a run happened to catch a quiet moment.  This
script takes, for every run (OUT/MODE.R.err and OUT/MODE.R.db of the tune_time.sh
scripts), each schedule that was ever the run's best so far, looks up its text in that
run's database, and re-times all of them with the perfc that found them, ROUNDS times
each, the schedules interleaved round by round so slow and quiet moments fall on all
of them alike.  A schedule's time is then the median of its re-timed medians.  Per
run it prints the time (and candidate count) until the run's best so far was, by
those times, within 5% of (a) the run's own winner and (b) the fastest schedule any
run found; then the medians per mode and their ratio.

    bench/tune_retime.py OUT REPS MODE1=PERFC1 MODE2=PERFC2 -- PERFC-ARGS...
      (PERFC-ARGS: the kernel file and its -D sizes, e.g. --threads too; ROUNDS=3)
"""
import json, os, re, sqlite3, subprocess, sys

argv = sys.argv[1:]
sep = argv.index("--")
out, reps = argv[0], int(argv[1])
perfcs = dict(a.split("=", 1) for a in argv[2:sep])
modes = list(perfcs)
kargs = argv[sep + 1:]
rounds = int(os.environ.get("ROUNDS", "3"))
line = re.compile(r'^perfc: tune (\d+)/\d+ (.*?): ([0-9.e+-]+) ms  best ([0-9.e+-]+) ms.*?  (?:([0-9.]+) s|(\d+):(\d+)) elapsed')

runs = {}          # (mode, r) -> [(t, n, params of the best so far)]
scheds = {}        # (mode, params) -> schedule text
for mode in modes:
    for r in range(1, reps + 1):
        db = sqlite3.connect(f"{out}/{mode}.{r}.db")
        text = {p: s for p, s in db.execute("select params, schedule from measurement where valid = 1 order by id")}
        pts, best, bestp = [], None, None
        for l in open(f"{out}/{mode}.{r}.err"):
            m = line.match(l)
            if not m:
                continue
            t = float(m.group(5)) if m.group(5) else 60 * int(m.group(6)) + int(m.group(7))
            ms = float(m.group(3))
            if best is None or ms < best:
                best, bestp = ms, m.group(2)
                if bestp not in text:
                    sys.exit(f"{mode}.{r}: no schedule for '{bestp}' in its database")
                scheds[(mode, bestp)] = text[bestp]
            pts.append((t, int(m.group(1)), bestp))
        runs[(mode, r)] = pts

def retime(mode, sched):
    """One `perfc --run` of a schedule: its median ms, or None if it did not validate."""
    cmd = [perfcs[mode], *kargs, "--no-schedule", "-s", sched, "--run", "--json", "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    try:
        j = json.loads(res.stdout)
    except ValueError:
        return None
    return j["time_ms"]["median"] if j.get("valid") else None

times = {k: [] for k in scheds}
for rnd in range(rounds):
    keys = list(scheds) if rnd % 2 == 0 else list(reversed(list(scheds)))
    for k in keys:
        v = retime(k[0], scheds[k])
        if v is None:
            sys.exit(f"re-timing {k[0]} '{k[1]}' failed")
        times[k].append(v)
def med(v):
    v = sorted(v)
    return None if not v else v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
robust = {k: med(v) for k, v in times.items()}
print(f"re-timed {len(scheds)} schedules, {rounds} rounds each, interleaved")
for k in sorted(robust, key=robust.get):
    print(f"  {robust[k]:8.3f} ms  {k[0]:<6} {k[1]}  ({' '.join(f'{v:.3f}' for v in times[k])})")
overall = min(robust.values())

def within(mode, pts, ref):
    for t, n, p in pts:
        if robust[(mode, p)] <= 1.05 * ref:
            return t, n
    return None, None
print(f"{'run':<10} {'winner ms (re-timed)':>20} {'t5 own (s)':>10} {'n':>3} {'t5 all (s)':>10} {'n':>3} {'search s':>8}")
agg = {m: [] for m in modes}
fmt = lambda v: f"{v:10.1f}" if v is not None else f"{'never':>10}"
for (mode, r), pts in runs.items():
    win = robust[(mode, pts[-1][2])]
    t_own, n_own = within(mode, pts, win)
    t_all, n_all = within(mode, pts, overall)
    agg[mode].append((t_own if t_own is not None else pts[-1][0], t_all if t_all is not None else pts[-1][0]))
    print(f"{mode + '.' + str(r):<10} {win:20.4g} {fmt(t_own)} {n_own or 0:3d} {fmt(t_all)} {n_all or 0:3d} {pts[-1][0]:8.1f}")
print(f"fastest schedule of all runs (re-timed): {overall:.4g} ms")
for which, k in (("own winner", 0), ("fastest of all runs", 1)):
    a, b = med([x[k] for x in agg[modes[0]]]), med([x[k] for x in agg[modes[1]]])
    print(f"median time to within 5% of the {which}, re-timed: {modes[0]} {a:.1f} s, {modes[1]} {b:.1f} s"
          + (f" ({modes[1]}/{modes[0]} = {b / a:.2f})" if a else ""))
