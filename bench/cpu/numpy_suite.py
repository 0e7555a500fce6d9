#!/usr/bin/env python3
"""The NumPy suite: perfc against NumPy at one thread on the kernels of bench/cpu/numpy/.

Each kernel file there holds one PDL kernel and, in its header comments, the sizes it
is measured at (`# sizes: M=1000 N=1000`), small sizes for the cheap test (`# tiny:`)
and the NumPy code a user would write for it (`# numpy:` lines, run in order with the
inputs and the sizes as variables; they must set every `out` tensor by name).

For each kernel this script
  1. draws the inputs (uniform in [-1, 1), or the declared `range(lo, hi)`), with a
     fixed seed, and writes them to an .npz;
  2. times the NumPy code: median of repeated calls, each after writing a buffer of
     1.5 times the last-level cache (at least 64 MiB) so the operands start out of
     cache as perfc's do (perfc flushes every buffer with clflush before each
     repetition, docs/harness.md section 7);
  3. runs `perfc FILE -D ... --run --threads 1 --json --inputs IN --save-outputs OUT`
     (the default schedule) and compares perfc's outputs with NumPy's, so a NumPy
     line that computes something else than the kernel is caught;
  4. runs `perfc FILE -D ... --autotune --budget B --time T --threads 1 --json` with a
     throwaway database (fresh random inputs; the tuner validates every candidate);
(with --before OLD_PERFC, steps 3 and 4 again with an older build right after,
so a before/after comparison sees the same machine load kernel by kernel)
and prints one row: NumPy's time, perfc's median untuned and tuned, the ratios
NumPy / perfc (above 1: perfc faster), whether perfc validated, and the relative
difference between perfc's and NumPy's outputs.

Run it through bench/cpu/numpy_suite.sh, which pins NumPy's BLAS to one thread.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "numpy")
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32}


def parse_kernel(path):
    """Header fields, kernel name, parameter defaults and declarations of one file."""
    text = open(path).read()
    head = {"sizes": "", "tiny": "", "numpy": []}
    for line in text.splitlines():
        m = re.match(r"#\s*(sizes|tiny|numpy):\s?(.*)$", line)
        if m:
            if m.group(1) == "numpy":
                head["numpy"].append(m.group(2))
            else:
                head[m.group(1)] = m.group(2).strip()
    km = re.search(r"kernel\s+(\w+)\s*\(([^)]*)\)", text)
    if not km:
        raise SystemExit(f"{path}: no kernel")
    params = {}
    for p in km.group(2).split(","):
        p = p.strip()
        if "=" in p:
            n, v = p.split("=")
            params[n.strip()] = int(v)
        elif p:
            params[p] = None
    decls = []
    for m in re.finditer(r"^\s*(in|out|local)\s+(\w+)\s*:\s*(\w+)(\[([^\]]*)\])?(.*)$", text, re.M):
        rng = re.search(r"range\(([^,]+),([^)]+)\)", m.group(6) or "")
        decls.append({"kind": m.group(1), "name": m.group(2), "dtype": m.group(3),
                      "shape": [s.strip() for s in m.group(5).split(",")] if m.group(5) else [],
                      "range": (rng.group(1).strip(), rng.group(2).strip()) if rng else None})
    return km.group(1), params, decls, head


def size_eval(expr, env):
    """A PDL size expression (integers, parameters, + - * / %, floor division)."""
    return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(env)))


def bind(spec, params):
    env = {k: v for k, v in params.items() if v is not None}
    for a in spec.split():
        n, v = a.split("=")
        env[n] = int(v)
    return env


def make_inputs(decls, env, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for d in decls:
        if d["kind"] != "in":
            continue
        shape = tuple(size_eval(s, env) for s in d["shape"])
        dt = DTYPES[d["dtype"]]
        if dt is np.int32:
            lo, hi = (size_eval(d["range"][0], env), size_eval(d["range"][1], env)) if d["range"] else (-3, 4)
            out[d["name"]] = rng.integers(lo, hi, size=shape, dtype=np.int32)
        else:
            lo, hi = (float(d["range"][0]), float(d["range"][1])) if d["range"] else (-1.0, 1.0)
            out[d["name"]] = (rng.random(size=shape) * (hi - lo) + lo).astype(dt)
    return out


def llc_bytes():
    """The largest cache of cpu0 from /sys (0 when unknown)."""
    best = 0
    for i in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size") as f:
                v = f.read().strip()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:], 1)
        best = max(best, int(v.rstrip("KMG")) * mult)
    return best


# Written before each NumPy repetition to push its operands out of every cache level:
# one and a half times the last-level cache (at least 64 MiB).  A fixed 64 MiB left
# them in a Xeon's 260 MiB L3, warm, while perfc's were flushed: NumPy's elementwise
# rows then read from L3 and perfc's from memory.
FLUSH = np.zeros(min(max(64 << 20, llc_bytes() * 3 // 2), 1 << 30), dtype=np.uint8)


def time_numpy(code, ns, min_reps=7, max_reps=60, budget_s=1.5):
    """Median milliseconds of exec(code), each repetition after evicting the caches."""
    exec(code, ns)  # warm-up: first-touch allocations, page faults
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        np.add(FLUSH, 1, out=FLUSH)
        t0 = time.perf_counter()
        exec(code, ns)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def run_perfc(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}, time.time() - t0
    except OSError as e:
        return {"error": f"cannot run perfc: {e}"}, time.time() - t0
    wall = time.time() - t0
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        err = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"error": f"exit {p.returncode}: {err[:160]}"}, wall
    d["rc"] = p.returncode
    return d, wall


def rel_diff(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
    return float(np.max(np.abs(a - b))) / scale


def fmt(v, nd=3):
    return "-" if v is None else f"{v:.{nd}g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--perfc", default="build/perfc")
    ap.add_argument("--budget", type=int, default=12)
    ap.add_argument("--time", type=float, default=15.0, help="seconds of tuning per kernel")
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--before", metavar="PERFC",
                    help="a second perfc (an older build) run the same way right after, kernel by kernel, "
                         "so that both see the same load: two more columns")
    ap.add_argument("--tiny", action="store_true", help="the files' tiny sizes (a smoke run)")
    ap.add_argument("--json-out", help="write the rows as JSON to this file")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every kernel ran, validated and matched NumPy to 1e-4 (the test)")
    ap.add_argument("kernels", nargs="*", help="names to run (default: every file)")
    a = ap.parse_args()

    files = sorted(f for f in os.listdir(SUITE) if f.endswith(".pdl"))
    if a.kernels:
        files = [f for f in files if f[:-4] in a.kernels]
    tmp = tempfile.mkdtemp(prefix="npsuite.")
    db = os.path.join(tmp, "tune.db")
    rows = []
    bcols = " before ms untuned | before ms tuned |" if a.before else ""
    print(f"| kernel | sizes | numpy ms |{bcols} perfc ms untuned | perfc ms tuned | np/perfc untuned | "
          "np/perfc tuned | valid | perfc vs numpy |")
    print("|---|---|--:|" + ("--:|--:|" if a.before else "") + "--:|--:|--:|--:|---|--:|")
    sys.stdout.flush()
    for f in files:
        path = os.path.join(SUITE, f)
        name, params, decls, head = parse_kernel(path)
        spec = head["tiny"] if a.tiny else head["sizes"]
        env = bind(spec, params)
        dargs = [x for kv in spec.split() for x in ("-D", kv)]
        inputs = make_inputs(decls, env, seed=12345)
        inpath = os.path.join(tmp, name + ".in.npz")
        outpath = os.path.join(tmp, name + ".out.npz")
        np.savez(inpath, **inputs)
        ns = {"np": np, **env, **{k: v for k, v in inputs.items()}}
        code = compile("\n".join(head["numpy"]), f, "exec")
        row = {"kernel": name, "sizes": spec}
        try:
            row["numpy_ms"] = time_numpy(code, ns, *((1, 1, 0.0) if a.tiny else ()))
        except Exception as e:  # a broken reference is a finding too
            row["numpy_ms"] = None
            row["numpy_error"] = str(e)
        outs = [d["name"] for d in decls if d["kind"] == "out"]
        base = [a.perfc, path, *dargs, "--threads", "1", "--json", "--quiet"]
        u, _ = run_perfc(base + ["--run", "--inputs", inpath, "--save-outputs", outpath], 600)
        row["untuned_valid"] = u.get("valid")
        row["untuned_ms"] = u["time_ms"]["median"] if u.get("valid") else None
        row["untuned_error"] = u.get("error") or u.get("reason")
        if os.path.exists(outpath) and "numpy_ms" in row and row["numpy_ms"] is not None:
            got = np.load(outpath)
            row["np_diff"] = max(rel_diff(got[o], ns[o]) for o in outs)
            os.remove(outpath)
        if not a.no_tune:
            t, wall = run_perfc(base + ["--autotune", "--budget", str(a.budget), "--time", str(a.time),
                                        "--db", db], int(a.time * 4 + 300))
            row["tuned_valid"] = t.get("valid")
            row["tuned_ms"] = t["time_ms"]["median"] if t.get("valid") else None
            row["tuned_error"] = t.get("error") or t.get("reason")
            row["tune_wall_s"] = wall
        if a.before:
            bb = [a.before] + base[1:]
            bu, _ = run_perfc(bb + ["--run", "--inputs", inpath], 600)
            row["before_untuned_ms"] = bu["time_ms"]["median"] if bu.get("valid") else None
            if not a.no_tune:
                bt, _ = run_perfc(bb + ["--autotune", "--budget", str(a.budget), "--time", str(a.time),
                                        "--db", db + ".before"], int(a.time * 4 + 300))
                row["before_tuned_ms"] = bt["time_ms"]["median"] if bt.get("valid") else None
        os.remove(inpath)
        nm = row.get("numpy_ms")
        ru = nm / row["untuned_ms"] if nm and row.get("untuned_ms") else None
        rt = nm / row["tuned_ms"] if nm and row.get("tuned_ms") else None
        row["ratio_untuned"], row["ratio_tuned"] = ru, rt
        valid = "yes" if row["untuned_valid"] and (a.no_tune or row.get("tuned_valid")) else "NO"
        notes = "; ".join(x for x in (row.get("untuned_error"), row.get("tuned_error"), row.get("numpy_error")) if x)
        bvals = f" {fmt(row.get('before_untuned_ms'))} | {fmt(row.get('before_tuned_ms'))} |" if a.before else ""
        print(f"| {name} | {spec} | {fmt(nm)} |{bvals} {fmt(row.get('untuned_ms'))} | {fmt(row.get('tuned_ms'))} | "
              f"{fmt(ru, 2)} | {fmt(rt, 2)} | {valid}{' (' + notes + ')' if notes else ''} | {fmt(row.get('np_diff'), 2)} |")
        sys.stdout.flush()
        rows.append(row)

    # The summary counts the tuned ratio; a kernel whose tuning failed counts with its
    # untuned time (and is listed), one with neither counts as a loss.
    best = []
    for r in rows:
        v = r.get("ratio_tuned") if not a.no_tune else r.get("ratio_untuned")
        if v is None:
            v = r.get("ratio_untuned")
        best.append((v, r["kernel"]))
    have = [v for v, _ in best if v]
    n = len(rows)
    faster = sum(1 for v, _ in best if v and v > 1)
    print()
    print(f"perfc faster on {faster} of {n} ({100.0 * faster / max(n, 1):.0f}%)"
          + ("" if a.no_tune else " after tuning") + f"; below 0.5x: {sum(1 for v, _ in best if not v or v < 0.5)}")
    if have:
        low = min((b for b in best if b[0]), key=lambda x: x[0])
        print(f"geomean numpy/perfc {math.exp(sum(math.log(v) for v in have) / len(have)):.2f}x; "
              f"lowest {low[0]:.2f}x ({low[1]}); {n - len(have)} without a result")
    if a.json_out:
        json.dump(rows, open(a.json_out, "w"), indent=1)
    if a.check:
        bad = [r["kernel"] for r in rows
               if not r.get("untuned_valid") or (not a.no_tune and not r.get("tuned_valid"))
               or r.get("np_diff") is None or r["np_diff"] > 1e-4]
        if bad:
            print("FAIL: " + ", ".join(bad))
            sys.exit(1)
        print("PASS")


if __name__ == "__main__":
    main()
