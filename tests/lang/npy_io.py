#!/usr/bin/env python3
"""npy_io.py PERFC SOURCE_DIR: perfc on data from NumPy, against NumPy.

For each kernel below: NumPy draws inputs, writes them with numpy.savez, perfc runs
the kernel with --run --inputs FILE --save-outputs FILE (host JIT; the first one
also on the interpreter and from a folder of .npy files), and the outputs are
compared with NumPy's own computation of the operator.  Then malformed files (a
wrong dtype, shape, a truncated array, a huge header, a compressed archive, not
a zip at all, a missing array) must each get exit status 1 and one error line.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

PERFC, SRC = sys.argv[1], sys.argv[2]
W = tempfile.mkdtemp()
rng = np.random.default_rng(11)
failures = []


def f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def run(pdl, kernel, sizes, inputs, target="host", folder=False):
    src = os.path.join(W, kernel + ("_dir" if folder else ".npz"))
    if folder:
        os.makedirs(src, exist_ok=True)
        for k, v in inputs.items():
            np.save(os.path.join(src, k + ".npy"), v)
    else:
        np.savez(src, **inputs)
    out = os.path.join(W, kernel + "_out.npz")
    args = [PERFC, pdl, "-k", kernel, "--run", "--quiet", "--inputs", src, "--save-outputs", out, "-target", target]
    for k, v in sizes.items():
        args += ["-D", "%s=%s" % (k, v)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        failures.append("%s: perfc exit %d: %s" % (kernel, p.returncode, p.stderr.strip()[-400:]))
        return None
    return dict(np.load(out))


def check(name, got, want, tol=1e-4):
    if got is None:
        return
    for k, w in want.items():
        g = got.get(k)
        if g is None or g.shape != w.shape:
            failures.append("%s: output %s has shape %s, NumPy's %s" % (name, k, None if g is None else g.shape,
                                                                      w.shape))
            continue
        err = np.max(np.abs(g.astype(np.float64) - w)) / max(1.0, np.max(np.abs(w)))
        if not err <= tol:
            failures.append("%s: output %s differs from NumPy by %g" % (name, k, err))
        else:
            print("%-14s %-3s max relative difference %.2g" % (name, k, err))


STD = os.path.join(SRC, "stdlib")
LANG = os.path.join(SRC, "tests", "lang")

# 1-3. matrix products
A, B = f32(33, 17), f32(17, 21)
for target in ("host", "interp"):
    check("gemm/" + target, run(os.path.join(STD, "gemm.pdl"), "gemm", dict(M=33, N=21, K=17), dict(A=A, B=B),
                                target), dict(C=A.astype(np.float64) @ B))
check("gemm/folder", run(os.path.join(STD, "gemm.pdl"), "gemm", dict(M=33, N=21, K=17), dict(A=A, B=B),
                         folder=True), dict(C=A.astype(np.float64) @ B))
Ah, Bh = A.astype(np.float16), B.astype(np.float16)
check("gemm T=f16", run(os.path.join(STD, "gemm.pdl"), "gemm", dict(M=33, N=21, K=17, T="f16"), dict(A=Ah, B=Bh)),
      dict(C=Ah.astype(np.float64) @ Bh.astype(np.float64)))
A3, W3 = f32(3, 9, 7), f32(3, 7, 5)
check("batched_gemm", run(os.path.join(STD, "batched_gemm.pdl"), "batched_gemm", dict(B=3, M=9, N=5, K=7),
                          dict(A=A3, W=W3)), dict(C=np.matmul(A3.astype(np.float64), W3)))
bias = f32(21)
check("gemm_bias_relu", run(os.path.join(STD, "gemm_bias_relu.pdl"), "gemm_bias_relu", dict(M=33, N=21, K=17),
                            dict(A=A, B=B, bias=bias)),
      dict(C=np.maximum(A.astype(np.float64) @ B + bias, 0)))

# 4-5. row operators
X = f32(13, 70, lo=-4, hi=4)
e = np.exp(X - X.max(1, keepdims=True).astype(np.float64))
check("softmax", run(os.path.join(STD, "softmax.pdl"), "softmax", dict(R=13, C=70), dict(X=X)),
      dict(Y=e / e.sum(1, keepdims=True)))
g, b = f32(70), f32(70)
mu = X.astype(np.float64).mean(1, keepdims=True)
var = ((X - mu) ** 2).mean(1, keepdims=True)
check("layernorm", run(os.path.join(STD, "layernorm.pdl"), "layernorm", dict(R=13, C=70),
                       dict(X=X, gamma=g, beta=b)), dict(Y=(X - mu) / np.sqrt(var + 1e-5) * g + b))

# 6. depthwise convolution, zero padding 1
Xc, F = f32(2, 4, 11, 13), f32(4, 3, 3)
Xp = np.pad(Xc.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
Yc = np.zeros((2, 4, 11, 13))
for r in range(3):
    for s in range(3):
        Yc += Xp[:, :, r:r + 11, s:s + 13] * F[None, :, r, s, None, None]
check("depthwise", run(os.path.join(STD, "depthwise_conv2d.pdl"), "depthwise_conv2d", {}, dict(X=Xc, F=F)),
      dict(Y=Yc))

# 7. the new functions
Xf, I = f32(200), rng.integers(-16, 17, 200).astype(np.int32)
Xd = Xf.astype(np.float64)
Id = I.astype(np.float64)
want = dict(
    A=1 / (1 + np.exp(-Xd * 8)) + np.log1p(np.abs(Xd)) + np.expm1(Xd) + np.floor(Xd * 4) + np.ceil(Xd * 8),
    B=np.round(Xd * 4) + np.sign(Xd) + np.clip(Xd, -0.5, 0.5) + np.round(Id * 0.5),
    C=(np.abs(Xd) + 0.5) ** Xd + (np.abs(Xd) + 1) ** 2 - 2.0 ** -(Xd ** 2),
    D=np.clip(Id, -3, 4) + np.sign(Id) * 10 + Id + np.maximum(Id, 2) + np.minimum(Id, -2))
check("functions", run(os.path.join(LANG, "functions.pdl"), "fns", dict(N=200), dict(X=Xf, I=I)), want)

# 8. batch norm with a positive variance
Xb, M, V, G, Bb = f32(2, 5, 4, 3), f32(5), f32(5, lo=0.1, hi=2.0), f32(5), f32(5)
bc = (slice(None), None, None)
check("batchnorm", run(os.path.join(LANG, "ops.pdl"), "batchnorm", dict(N=2, C=5, H=4, W=3),
                       dict(X=Xb, M=M, V=V, G=G, B=Bb)),
      dict(Y=(Xb - M[bc]) / np.sqrt(V[bc].astype(np.float64) + 1e-5) * G[bc] + Bb[bc]))

# 9. cross-entropy with integer labels
Xe, L = f32(9, 6, lo=-3, hi=3), rng.integers(0, 6, 9).astype(np.int32)
lse = np.log(np.exp(Xe.astype(np.float64)).sum(1))
check("xent_onehot", run(os.path.join(LANG, "ops.pdl"), "xent_onehot", dict(N=9, C=6), dict(X=Xe, L=L)),
      dict(Y=lse - Xe[np.arange(9), L]))

# 10-16. gathers and scans of ops.pdl
OPS = os.path.join(LANG, "ops.pdl")
E, T = f32(20, 7), rng.integers(0, 20, 50).astype(np.int32)
check("embedding", run(OPS, "embedding", dict(N=50, V=20, D=7), dict(E=E, T=T)), dict(Y=E[T].astype(np.float64)))
P = rng.permutation(20)[:10].astype(np.int32)
check("index_select", run(OPS, "index_select", dict(N=10, V=20, D=7), dict(E=E, T=P)),
      dict(Y=np.take(E, P, axis=0).astype(np.float64)))
check("xent_gather", run(OPS, "xent_gather", dict(N=9, C=6), dict(X=Xe, L=L)), dict(Y=lse - Xe[np.arange(9), L]))
Et = f32(20)
Ep = np.concatenate([np.zeros(1), Et.astype(np.float64), np.zeros(3)])
check("shifted_lookup", run(OPS, "shifted_lookup", dict(N=50, V=20), dict(E=Et, T=T)),
      dict(Y=Ep[T + 3] - Ep[T]))
Xs = f32(37, 101)
check("cumsum", run(OPS, "cumsum", dict(R=37, C=101), dict(X=Xs)), dict(Y=np.cumsum(Xs.astype(np.float64), 1)))
Xq = f32(5, 40, lo=0.5, hi=1.5)
check("cumprod", run(OPS, "cumprod", dict(R=5, C=40), dict(X=Xq)), dict(Y=np.cumprod(Xq.astype(np.float64), 1)))
check("reverse_cumsum", run(OPS, "reverse_cumsum", dict(R=37, C=101), dict(X=Xs)),
      dict(Y=np.cumsum(Xs[:, ::-1].astype(np.float64), 1)[:, ::-1]))
Xm = f32(37, 19)
check("cummax_rows", run(OPS, "cummax_rows", dict(R=37, C=19), dict(X=Xm)),
      dict(Y=np.maximum.accumulate(Xm.astype(np.float64), 0)))
Xa = f32(50, 3)
Ya = np.zeros((7, 3))
np.add.at(Ya, T % 7, Xa.astype(np.float64))
check("scatter_add", run(OPS, "scatter_add", dict(N=50, V=7, D=3), dict(X=Xa, T=(T % 7).astype(np.int32))),
      dict(Y=Ya))
# an index outside the declared range is refused before anything runs
Tb = T.copy()
Tb[7] = 20
np.savez(os.path.join(W, "emb_bad.npz"), E=E, T=Tb)
p = subprocess.run([PERFC, OPS, "-k", "embedding", "-D", "N=50", "-D", "V=20", "-D", "D=7", "--run", "--quiet",
                    "--inputs", os.path.join(W, "emb_bad.npz")], capture_output=True, text=True)
if p.returncode != 1 or "element 7, is 20: outside its declared range(0, 20)" not in p.stderr:
    failures.append("an out-of-range gather index: exit %d, %r" % (p.returncode, p.stderr))
else:
    print("out-of-range index refused: " + p.stderr.strip())

# malformed files: one error line, exit status 1, never a crash
gemm = os.path.join(STD, "gemm.pdl")


def bad(label, path, expect):
    p = subprocess.run([PERFC, gemm, "-D", "M=4", "-D", "N=3", "-D", "K=2", "--run", "--quiet", "--inputs", path],
                       capture_output=True, text=True)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if p.returncode != 1 or len(lines) != 1 or expect not in lines[0]:
        failures.append("malformed %s: exit %d, stderr %r (wanted one line with %r)" % (label, p.returncode,
                                                                                        p.stderr, expect))
    else:
        print("malformed %-12s %s" % (label, lines[0]))


a, b = f32(4, 2), f32(2, 3)
d = os.path.join(W, "bad")
os.makedirs(d)


def folder(name, A_bytes=None, **arrays):
    path = os.path.join(d, name)
    os.makedirs(path)
    for k, v in arrays.items():
        np.save(os.path.join(path, k + ".npy"), v)
    if A_bytes is not None:
        open(os.path.join(path, "A.npy"), "wb").write(A_bytes)
    return path


np.savez(os.path.join(d, "dtype.npz"), A=a.astype(np.float64), B=b)
bad("dtype", os.path.join(d, "dtype.npz"), "is float64 but input A is f32")
np.savez(os.path.join(d, "shape.npz"), A=a.T.copy(), B=b)
bad("shape", os.path.join(d, "shape.npz"), "has shape (2, 4) but input A is (4, 2)")
np.savez(os.path.join(d, "missing.npz"), B=b)
bad("missing", os.path.join(d, "missing.npz"), "holds no array A")
np.savez_compressed(os.path.join(d, "deflated.npz"), A=a, B=b)
bad("deflated", os.path.join(d, "deflated.npz"), "is compressed")
full = open(os.path.join(d, "dtype.npz"), "rb").read()
open(os.path.join(d, "cut.npz"), "wb").write(full[:len(full) // 2])
bad("cut zip", os.path.join(d, "cut.npz"), "archive")
open(os.path.join(d, "text.npz"), "wb").write(b"hello, this is not a zip file at all\n" * 3)
bad("not a zip", os.path.join(d, "text.npz"), "not a .npz")
np.save(os.path.join(d, "a.npy"), a)
good = open(os.path.join(d, "a.npy"), "rb").read()
bad("truncated", folder("trunc", good[:len(good) - 5], B=b), "is truncated")
huge = b"\x93NUMPY\x02\x00" + (1 << 30).to_bytes(4, "little") + b"{" * 100
bad("huge header", folder("huge", huge, B=b), "header claims")
bad("bad magic", folder("magic", b"PK\x03\x04" + good[4:], B=b), "not a .npy")
bad("header text", folder("hdr", good[:10] + b"{'descr': <f4, " + good[25:], B=b), "the .npy")
bad("fortran", folder("fort", None, A=np.asfortranarray(a), B=b), "Fortran order")
bad("no file", folder("nofile", None, B=b), "has no A.npy")

# mutated files (bytes flipped, cut at random places, in the zip directory and the
# .npy header alike): perfc must exit 0 (data that is still valid) or 1, never crash
np.savez(os.path.join(d, "ok.npz"), A=a, B=b)
base = open(os.path.join(d, "ok.npz"), "rb").read()
mrng = np.random.default_rng(5)
crashes = 0
for t in range(60):
    m = bytearray(base)
    if t % 3 == 0:
        m = m[:int(mrng.integers(0, len(m)))]
    else:
        for _ in range(int(mrng.integers(1, 6))):
            m[int(mrng.integers(0, len(m)))] = int(mrng.integers(0, 256))
    path = os.path.join(d, "mut%d.npz" % t)
    open(path, "wb").write(bytes(m))
    p = subprocess.run([PERFC, gemm, "-D", "M=4", "-D", "N=3", "-D", "K=2", "--run", "--quiet", "--inputs", path],
                       capture_output=True, text=True)
    if p.returncode not in (0, 1, 2) or "Sanitizer" in p.stderr:
        crashes += 1
        failures.append("mutated archive %d: exit %d: %s" % (t, p.returncode, p.stderr[-300:]))
print("60 mutated archives: %d crashes" % crashes)

shutil.rmtree(W, ignore_errors=True)
if failures:
    print("\n".join("FAIL: " + f for f in failures), file=sys.stderr)
    sys.exit(1)
print("npy_io: every kernel agrees with NumPy; every malformed file is refused")
