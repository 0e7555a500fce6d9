"""Calls the library built by examples/CMakeLists.txt on NumPy arrays.

    PYTHONPATH=<prefix>/share/perfc/python python3 numpy_gemm.py build-ex/perfc_kernels/libkernels.so
"""
import sys

import numpy as np

import perfc

lib = perfc.load(sys.argv[1])
print(lib)
rng = np.random.default_rng(1)
fails = 0
for m, n, k in [(256, 256, 256), (100, 37, 64), (1, 300, 5), (129, 257, 33)]:
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    C = lib.gemm(A, B)
    want = A.astype(np.float64) @ B
    err = float(np.max(np.abs(C - want) / (1 + np.abs(want))))
    print("gemm %4dx%4dx%4d: worst relative error %.2e" % (m, n, k, err))
    fails += not err < 1e-4
X = rng.uniform(-1, 1, (64, 1000)).astype(np.float32)
e = np.exp(X - X.max(axis=1, keepdims=True))
err = float(np.max(np.abs(lib.softmax(X) - e / e.sum(axis=1, keepdims=True))))
print("softmax 64x1000: worst error %.2e" % err)
fails += not err < 1e-5
try:
    lib.gemm(A.astype(np.float64), B)
    fails += 1
except TypeError as ex:
    print("wrong dtype:", ex)
print("ok" if not fails else "FAILED")
sys.exit(1 if fails else 0)
