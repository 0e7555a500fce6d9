#!/usr/bin/env python3
"""Issue 15's CPU bars at one and two threads, on a quiet machine.

The development machine shares its two cores with other tenants: the same kernel
there measures 1.5 ms one run and 2.5 ms the next at two threads, so a bar of 0.9 or
1.0 cannot be decided on it.  This driver runs where the cores are idle (the Xeon
host of a lent GPU machine, through bench/cpu/host_bars.sh) and needs only python3,
the static perfc and torch:

  - sgemm written plainly with no schedule (bench/cpu/gemm_layouts.pdl), every layout
    (A·B, A·Bᵀ, Aᵀ·B, Aᵀ·Bᵀ) at 256..2048 cubed and three odd shapes, against
    OpenBLAS in the same process (`perfc --run --compare openblas`) and torch.mm
    on the CPU beside it (a static OpenBLAS 0.3.21 did not know the Xeon of
    2026-12-07 and ran a generic kernel there, 16 GFLOP/s: torch is the baseline
    where that happens);
  - the same A·B tuned (`--autotune --budget B --compare openblas`, a fresh database);
  - ResNet-50's 3x3 layers at batch 1 (stdlib/conv2d.pdl) tuned, beside torch's
    F.conv2d on the CPU (oneDNN inside torch, NCHW, f32) in the same run; the same
    layers written plainly (bench/cpu/conv_user.pdl) with the default schedule
    (`--only convdef`); and (`--only copyab`) the default with and without its
    padded image copied by every thread (parallel over the channels), alternating.

Each kernel is validated on fresh inputs by perfc itself.  A cell is the median of
ROUNDS per-run ratios (perfc time / library time, as speed: above 1 perfc is
faster); the tuned rows re-time the database's winner in the later rounds.
Ratios are library ms / perfc ms.

  python3 bench/cpu/host_bars.py PERFC [--threads "1 2"] [--rounds 3] [--budget 24]
                                       [--only "gemm tuned conv convdef copyab"] [--no-openblas]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
          (127, 1024, 1024), (1037, 769, 511), (1024, 1024, 64)]
LAYOUTS = ["mm", "mm_nt", "mm_tn", "mm_tt"]
CONV = [(64, 56), (128, 28), (256, 14), (512, 7)]


def perfc_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except ValueError:
        sys.stderr.write("perfc gave no JSON: %s\n%s\n" % (" ".join(cmd), p.stderr[-600:]))
        return None


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def torch_mm_ms(layout, m, n, k, t):
    """torch.mm on the CPU (MKL or oneDNN inside torch) on the same layout, a warm
    loop's median; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(t)
    a = torch.randn(k, m).t() if layout in ("mm_tn", "mm_tt") else torch.randn(m, k)
    b = torch.randn(n, k).t() if layout in ("mm_nt", "mm_tt") else torch.randn(k, n)
    for _ in range(3):
        torch.mm(a, b)
    ts, spent = [], 0.0
    while spent < 0.3 or len(ts) < 5:
        t0 = time.perf_counter()
        torch.mm(a, b)
        dt = time.perf_counter() - t0
        ts.append(dt * 1e3)
        spent += dt
    return statistics.median(ts)


def gemm_rows(a, tuned):
    layouts = ["mm"] if tuned else a.layouts
    for t in a.threads:
        for k in layouts:
            db = tempfile.mktemp(prefix="host_bars_db")
            cells, tcells = [], []
            for (m, n, kk) in SHAPES:
                ratios, pm, bm, tr, valid = [], [], [], [], True
                for r in range(a.rounds):
                    cmd = [a.perfc, "bench/cpu/gemm_layouts.pdl", "-k", k, "-D", "M=%d" % m, "-D", "N=%d" % n,
                           "-D", "K=%d" % kk, "--threads", str(t), "--json", "--quiet"]
                    cmd += [] if a.no_openblas else ["--compare", "openblas"]
                    cmd += ["--autotune", "--budget", str(a.budget), "--db", db] if tuned else ["--run"]
                    j = perfc_json(cmd)
                    if not j or (not a.no_openblas and not j.get("baseline")):
                        valid = False
                        continue
                    valid &= bool(j["valid"])
                    p = j["time_ms"]["median"]
                    if not a.no_openblas:
                        b = j["baseline"]["time_ms"]["median"]
                        ratios.append(b / p)
                        bm.append(b)
                    pm.append(p)
                    tms = torch_mm_ms(k, m, n, kk, t)
                    if tms:
                        tr.append(tms / p)
                med = statistics.median(ratios) if ratios else float("nan")
                tmed = statistics.median(tr) if tr else float("nan")
                cells.append(med)
                tcells.append(tmed)
                print("%-6s %-5s %d thr  %4dx%4dx%4d  perfc %8.3f ms  openblas %8.3f ms  ratio %.3f  "
                      "torch ratio %.3f  %s" %
                      ("tuned" if tuned else "default", k, t, m, n, kk, statistics.median(pm) if pm else -1,
                       statistics.median(bm) if bm else -1, med, tmed, "valid" if valid else "INVALID"), flush=True)
            print("geomean %-6s %-5s %d threads: %.3f of OpenBLAS, %.3f of torch" %
                  ("tuned" if tuned else "default", k, t, geomean(cells), geomean(tcells)), flush=True)
            for f in (db, db + "-wal", db + "-shm"):
                if os.path.exists(f):
                    os.remove(f)


def torch_conv_ms(c, hw, t):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(t)
    x = torch.randn(1, c, hw, hw)
    w = torch.randn(c, c, 3, 3)
    with torch.no_grad():
        for _ in range(5):
            F.conv2d(x, w, padding=1)
        ts = []
        spent = 0.0
        while spent < 0.4 or len(ts) < 10:
            t0 = time.perf_counter()
            F.conv2d(x, w, padding=1)
            dt = time.perf_counter() - t0
            ts.append(dt * 1e3)
            spent += dt
    return statistics.median(ts)


def conv_args(c, hw, t):
    return ["bench/cpu/conv_user.pdl", "-D", "N=1", "-D", "C=%d" % c, "-D", "H=%d" % hw, "-D", "W=%d" % hw,
            "-D", "K=%d" % c, "--threads", str(t)]


def copyab_rows(a):
    """The default schedule as printed, then the same with parallel(X_n1_c1), alternating."""
    for t in [x for x in a.threads if x > 1]:
        for (c, hw) in CONV:
            rep = subprocess.run([a.perfc] + conv_args(c, hw, t) + ["-emit", "report", "--verbose"],
                                 capture_output=True, text=True).stderr.splitlines()
            i = next((n for n, l in enumerate(rep) if "applies" in l), None)
            if i is None:
                print("copyab %d@%d: no default schedule" % (c, hw))
                continue
            text = "\n".join(l for l in rep[i + 1:] if l.startswith("  "))
            times = {"serial copy": [], "parallel copy": []}
            for r in range(a.rounds):
                for name, extra in (("serial copy", ""), ("parallel copy", "\nparallel(X_n1_c1)")):
                    j = perfc_json([a.perfc] + conv_args(c, hw, t) +
                                   ["--no-schedule", "-s", text + extra, "--run", "--json", "--quiet"])
                    if j and j["valid"]:
                        times[name].append(j["time_ms"]["median"])
            print("copyab %3d@%-3d %d thr  " % (c, hw, t) +
                  "  ".join("%s %s ms" % (k, " ".join("%.3f" % x for x in v)) for k, v in times.items()),
                  flush=True)


def conv_rows(a, tuned):
    """ResNet-50's layers beside torch: stdlib conv2d tuned (a fresh database, the
    later rounds re-time its winner), or the user's convolution at the default."""
    what = "tuned" if tuned else "default"
    for t in a.threads:
        db = tempfile.mktemp(prefix="host_bars_conv_db")
        cells = []
        for (c, hw) in CONV:
            ratios, pm, tm, valid = [], [], [], True
            for r in range(a.rounds):
                if tuned:
                    cmd = [a.perfc, "stdlib/conv2d.pdl", "-D", "N=1", "-D", "C=%d" % c, "-D", "H=%d" % hw,
                           "-D", "W=%d" % hw, "-D", "K=%d" % c, "-D", "R=3", "-D", "S=3", "-D", "U=1", "-D", "P=1",
                           "--threads", str(t), "--autotune", "--budget", str(a.budget), "--db", db]
                else:
                    cmd = [a.perfc] + conv_args(c, hw, t) + ["--run"]
                j = perfc_json(cmd + ["--json", "--quiet"])
                tms = torch_conv_ms(c, hw, t)
                if not j:
                    valid = False
                    continue
                valid &= bool(j["valid"])
                p = j["time_ms"]["median"]
                ratios.append(tms / p)
                pm.append(p)
                tm.append(tms)
            med = statistics.median(ratios) if ratios else float("nan")
            cells.append(med)
            print("conv %s %3d@%-3d %d thr  perfc %7.3f ms  torch(oneDNN) %7.3f ms  ratio %.3f  %s" %
                  (what, c, hw, t, statistics.median(pm) if pm else -1, statistics.median(tm) if tm else -1, med,
                   "valid" if valid else "INVALID"), flush=True)
        print("geomean conv %s %d threads: %.3f" % (what, t, geomean(cells)), flush=True)
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.remove(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfc")
    ap.add_argument("--threads", default="1 2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--only", default="gemm tuned conv")
    ap.add_argument("--layouts", default=" ".join(LAYOUTS), help="the layouts of the default rows")
    ap.add_argument("--no-openblas", action="store_true",
                    help="no OpenBLAS in perfc's process (a generic kernel on the host): torch is the baseline")
    a = ap.parse_args()
    a.threads = [int(x) for x in a.threads.split()]
    a.layouts = a.layouts.split()
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print("# %s  %s, %d cores, load %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), model,
                                            os.cpu_count(), open("/proc/loadavg").read().split()[:3]), flush=True)
    if "conv" in a.only.split():
        conv_rows(a, True)
    if "convdef" in a.only:
        conv_rows(a, False)
    if "copyab" in a.only:
        copyab_rows(a)
    if "gemm" in a.only:
        gemm_rows(a, False)
    if "tuned" in a.only:
        gemm_rows(a, True)


if __name__ == "__main__":
    main()
