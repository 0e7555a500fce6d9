"""The Python package (python/perfc) on PyTorch CUDA tensors, run by tests/lib/gpu.sh on
a GPU machine with PyTorch.

    test_torch_cuda.py LIBtg.so

Calls GEMM (f32, f16), softmax and layernorm of a library built with GPU code at
sizes it was not built for (its general GPU variant), on PyTorch's current stream and
on a stream of its own, and compares with PyTorch in float64; bad calls must raise
the documented exception with a message that names the problem.
"""
import sys

import torch

import perfc

lib = perfc.load(sys.argv[1])
g = torch.Generator(device="cuda").manual_seed(3)
fails = 0


def rand(*shape, dtype=torch.float32):
    return (torch.rand(shape, device="cuda", generator=g) * 2 - 1).to(dtype)


def close(name, got, want, tol):
    global fails
    err = ((got.double() - want).abs() / (1 + want.abs())).max().item() if got.numel() else 0.0
    ok = err <= tol
    print("%-34s worst relative error %.3g%s" % (name, err, "" if ok else "  MISMATCH"))
    fails += not ok


def raises(name, exc, text, fn):
    global fails
    try:
        fn()
    except exc as e:
        if text in str(e):
            print("%-34s %s: %s" % (name, exc.__name__, e))
            return
        print("%-34s wrong message: %s" % (name, e))
    except Exception as e:  # noqa: BLE001 - any other exception is the failure reported
        print("%-34s raised %s: %s" % (name, type(e).__name__, e))
    else:
        print("%-34s did not raise" % name)
    fails += 1


for m, n, k in [(1, 1, 1), (33, 17, 5), (65, 49, 31)]:
    A, B = rand(m, k), rand(k, n)
    close("gemm %dx%dx%d" % (m, n, k), lib.gemm(A, B), A.double() @ B.double(), 1e-4)
    A16, B16 = rand(m, k, dtype=torch.float16), rand(k, n, dtype=torch.float16)
    close("gemm_f16 %dx%dx%d" % (m, n, k), lib.gemm_f16(A16, B16), A16.double() @ B16.double(), 1e-3)
for r, c in [(1, 1), (7, 1001), (17, 99)]:
    X = rand(r, c) * 4
    close("softmax %dx%d" % (r, c), lib.softmax(X), torch.softmax(X.double(), dim=1), 1e-5)
    gamma, beta = rand(c), rand(c)
    want = torch.nn.functional.layer_norm(X.double(), (c,), gamma.double(), beta.double(), eps=1e-5)
    close("layernorm %dx%d" % (r, c), lib.layernorm(X, gamma, beta), want, 1e-4)
# on a stream of its own: the library launches on PyTorch's current stream
s = torch.cuda.Stream()
A, B = rand(70, 3), rand(3, 129)
C = torch.empty((70, 129), device="cuda")
torch.cuda.synchronize()
with torch.cuda.stream(s):
    lib.gemm(A, B, C)
s.synchronize()
close("gemm 70x129x3 on a side stream", C, A.double() @ B.double(), 1e-4)

A, B = rand(33, 5), rand(5, 17)
raises("wrong dtype", TypeError, "A must be f32", lambda: lib.gemm(A.double(), B))
raises("wrong shape", ValueError, "size N is 17", lambda: lib.gemm(A, B, torch.empty(33, 16, device="cuda")))
raises("CPU and CUDA mixed", ValueError, "different devices", lambda: lib.gemm(A.cpu(), B))
raises("not contiguous", ValueError, "contiguous", lambda: lib.gemm(A, B.t().contiguous().t()))
raises("output of the wrong device", ValueError, "different devices", lambda: lib.gemm(A, B, torch.empty(33, 17)))
print("test_torch_cuda: %s" % ("ok" if not fails else "%d FAILED" % fails))
sys.exit(1 if fails else 0)
