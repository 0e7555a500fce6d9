"""The Python package (python/perfc) on a library built by tests/lib/build.sh.

    test_python.py LIBtk.so

Results are checked against NumPy references of the same kernels (the C side is
checked against perfc's interpreter by lib_check); bad calls must raise the
documented exception with a message that names the problem.
"""
import sys

import numpy as np

import perfc

lib = perfc.load(sys.argv[1])
rng = np.random.default_rng(7)
fails = 0


def close(name, got, want, tol):
    global fails
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if got.size else 0.0
    ok = err <= tol
    print("%-28s worst relative error %.3g%s" % (name, err, "" if ok else "  MISMATCH"))
    fails += not ok


def raises(name, exc, text, fn):
    global fails
    try:
        fn()
    except exc as e:
        if text in str(e):
            print("%-28s %s: %s" % (name, exc.__name__, e))
            return
        print("%-28s wrong message: %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - any other exception is the failure reported
        print("%-28s raised %s: %s" % (name, type(e).__name__, e))
    else:
        print("%-28s did not raise" % name)
    fails += 1


# gemm at a build-time size and at sizes not given at build time; outputs allocated
# or given
for m, n, k in [(64, 48, 32), (33, 17, 5), (1, 70, 3)]:
    A = rng.standard_normal((m, k), dtype=np.float32)
    B = rng.standard_normal((k, n), dtype=np.float32)
    close("gemm %dx%dx%d" % (m, n, k), lib.gemm(A, B), A.astype(np.float64) @ B, 1e-4)
C = np.empty((33, 17), np.float32)
A = rng.standard_normal((33, 5), dtype=np.float32)
B = rng.standard_normal((5, 17), dtype=np.float32)
assert lib.gemm(A, B, C) is None
close("gemm into C", C, A.astype(np.float64) @ B, 1e-4)

# f16 inputs
A16 = rng.standard_normal((9, 13)).astype(np.float16)
B16 = rng.standard_normal((13, 7)).astype(np.float16)
close("gemm_f16 9x7x13", lib.gemm_f16(A16, B16), A16.astype(np.float64) @ B16.astype(np.float64), 1e-4)

# softmax
for r, c in [(16, 100), (5, 333)]:
    X = rng.standard_normal((r, c), dtype=np.float32)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    close("softmax %dx%d" % (r, c), lib.softmax(X), e / e.sum(axis=1, keepdims=True), 1e-5)

# conv2d: U and P appear in no dimension, so they are keywords
X = rng.standard_normal((1, 2, 9, 8), dtype=np.float32)
F = rng.standard_normal((3, 2, 3, 3), dtype=np.float32)
Y = lib.conv2d(X, F, U=2, P=1)
Xp = np.pad(X.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = np.zeros((1, 3, 5, 4))
for y in range(5):
    for x in range(4):
        ref[0, :, y, x] = np.einsum("crs,kcrs->k", Xp[0, :, 2 * y:2 * y + 3, 2 * x:2 * x + 3], F)
close("conv2d U=2 P=1", Y, ref, 1e-4)

# bad use
A = np.zeros((4, 3), np.float32)
B = np.zeros((3, 5), np.float32)
raises("wrong dtype", TypeError, "must be f32", lambda: lib.gemm(A.astype(np.float64), B))
raises("wrong shape", ValueError, "size K is 3", lambda: lib.gemm(A, np.zeros((2, 5), np.float32)))
raises("wrong output size", ValueError, "size N is 5", lambda: lib.gemm(A, B, np.zeros((4, 4), np.float32)))
raises("wrong output rank", ValueError, "C has shape", lambda: lib.gemm(A, B, np.zeros((4, 5, 1), np.float32)))
raises("not contiguous", ValueError, "C-contiguous", lambda: lib.gemm(np.zeros((3, 4), np.float32).T, B))
RO = np.zeros((4, 5), np.float32)
RO.setflags(write=False)
raises("read-only output", ValueError, "read-only", lambda: lib.gemm(A, B, RO))
raises("missing size", TypeError, "pass U=..., P=...", lambda: lib.conv2d(X, F))
raises("negative size", ValueError, "negative", lambda: lib.conv2d(X, F, U=2, P=-1))
raises("zero stride", ValueError, "divides by zero", lambda: lib.conv2d(X, F, U=0, P=1))
raises("unknown size", TypeError, "has no size Q", lambda: lib.conv2d(X, F, U=1, P=1, Q=2))
raises("wrong argument count", TypeError, "takes 2 inputs", lambda: lib.gemm(A))
raises("not an array", TypeError, "NumPy array", lambda: lib.gemm([[1.0]], B))
raises("unknown kernel", AttributeError, "has no kernel", lambda: lib.gemmm)
# the library's own run-time check: X[i + w] would leave X
raises("index out of range", perfc.LibraryError, "leave its tensor",
       lambda: lib.window(np.zeros(10, np.float32), np.zeros(9, np.float32), W=3))
print("python: %s" % ("ok" if not fails else "%d failures" % fails))
sys.exit(1 if fails else 0)
