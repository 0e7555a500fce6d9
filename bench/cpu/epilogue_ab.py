#!/usr/bin/env python3
"""A product's epilogue apart or in the micro-kernel's write-back, on the CPU.

The default schedule of a contraction with an epilogue (a bias, an activation)
runs the epilogue as a vectorized pass of its own over the product's result; the
tuner's next template moves it into the write-back of each register tile with
reverse_compute_at (docs/schedules.md).  This driver times the two forms of the same
kernel alternately, in rounds, each validated by perfc on fresh inputs: the default
as printed by `-emit report --verbose`, and that text with the epilogue's own steps
replaced by the move and a vectorized row.

  python3 bench/cpu/epilogue_ab.py PERFC [--rounds 3] [--threads 1] [--acc h] [--out Y]
         FILE:KERNEL:SIZES ...     (SIZES as -D arguments joined by commas: N=512,K=768,F=3072)
"""
import argparse
import json
import re
import subprocess
import sys
import time


def default_text(perfc, args):
    p = subprocess.run([perfc] + args + ["-emit", "report", "--verbose"], capture_output=True, text=True)
    out = p.stdout + p.stderr
    body = out.split("applies", 1)[1] if "applies" in out else ""
    return [l.strip() for l in body.splitlines() if l.startswith("  ")]


def fused_text(lines, acc, out):
    """The default's statements with out's nest moved into the tile loop where the
    product acc is staged (before the staging, so that it reads the staged tile),
    out's own steps dropped; None when the text stages no tile of acc."""
    res, done = [], False
    for l in lines:
        if re.search(r"\b%s\.[A-Za-z0-9_]+" % re.escape(out), l) or l.startswith("param vec_%s_" % out):
            continue
        m = re.match(r"cache\(%s, ([A-Za-z0-9_.]+)(, [^)]*)?\)$" % re.escape(acc), l)
        if m and not done:
            res.append("reverse_compute_at(%s, %s)" % (out, m.group(1)))
            done = True
        res.append(l)
    return res if done else None


def run(perfc, args, sched):
    cmd = [perfc] + args + ["--run", "--json", "--quiet"]
    if sched is not None:
        cmd += ["--no-schedule", "-s", sched]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return None, False, p.stderr.strip().splitlines()[-1:] if p.stderr else ""
    return j["time_ms"], bool(j["valid"]), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfc")
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--acc", default="h", help="the product the epilogue reads")
    ap.add_argument("--out", default="Y", help="the epilogue's result")
    ap.add_argument("--row", default="j", help="its innermost loop's index")
    ap.add_argument("--lanes", type=int, default=0, help="vector lanes (0: 16 with AVX-512, else 8)")
    a = ap.parse_args()
    lanes = a.lanes or (16 if "avx512f" in open("/proc/cpuinfo").read() else 8)
    print("# %s  threads %s  lanes %d" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), a.threads, lanes),
          flush=True)
    for case in a.cases:
        path, kern, sizes = case.split(":")
        args = [path, "-k", kern, "--threads", a.threads]
        for s in sizes.split(","):
            args += ["-D", s]
        lines = default_text(a.perfc, args)
        fl = fused_text(lines, a.acc, a.out)
        if not lines or not fl:
            print("%s %s: no staged tile of %s in the default schedule" % (kern, sizes, a.acc), flush=True)
            continue
        fused = " ".join(fl) + " split(%s.%s, %d) vectorize(%s.%si)" % (a.out, a.row, lanes, a.out, a.row)
        apart, inwb = [], []
        ok = True
        for r in range(a.rounds):
            for name, sched, acc in (("apart", None, apart), ("fused", fused, inwb)):
                t, v, err = run(a.perfc, args, sched)
                if t is None:
                    print("  %s failed: %s" % (name, err), flush=True)
                    ok = False
                    continue
                ok &= v
                acc.append((t["min"], t["median"]))
        if apart and inwb:
            am, fm = min(x[0] for x in apart), min(x[0] for x in inwb)
            amed = sorted(x[1] for x in apart)[len(apart) // 2]
            fmed = sorted(x[1] for x in inwb)[len(inwb) // 2]
            print("%-12s %-22s apart min %8.3f med %8.3f ms   in the write-back min %8.3f med %8.3f ms   "
                  "apart/fused %.3f (min) %.3f (median)  %s" %
                  (kern, sizes, am, amed, fm, fmed, am / fm, amed / fmed, "valid" if ok else "INVALID"), flush=True)


if __name__ == "__main__":
    main()
