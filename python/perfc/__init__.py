"""Calling libraries built by `perfc lib` from Python (ctypes; no compiled extension).

    import numpy as np, perfc
    lib = perfc.load("build/libkernels.so")        # NAME taken from libNAME.so
    C = lib.gemm(A, B)                             # outputs allocated, sizes inferred
    lib.gemm(A, B, C)                              # or written into the given arrays
    lib.conv2d(X, F, U=2, P=1)                     # sizes that no dimension shows

Tensors are NumPy arrays or PyTorch tensors, C-contiguous, of the kernel's dtype
(f16 as float16; bf16 as torch.bfloat16 or NumPy uint16 holding the bits).  CUDA
tensors run the library's GPU code (built with -target ...,sm_XY) at any size (the
general GPU variant where no specialised code matches) on PyTorch's current stream
of their device; all tensors of a call must then be on that one device.  Every
size is checked against every shape before the call; a wrong dtype raises
TypeError, a wrong shape or size ValueError, and an error the library reports
(an index that would leave a tensor, say) perfc.LibraryError.  The kernels'
names, sizes and shapes come from the library's own manifest (NAME_manifest).
"""

import ast
import ctypes
import functools
import json
import os
import re

__all__ = ["load", "Library", "Kernel", "LibraryError"]
__version__ = "0.1.0"

# dtype of the manifest -> (NumPy dtype names accepted, torch dtype names accepted)
_DTYPES = {
    "f64": (("float64",), ("float64",)),
    "f32": (("float32",), ("float32",)),
    "f16": (("float16",), ("float16",)),
    "bf16": (("uint16",), ("bfloat16",)),
    "i32": (("int32",), ("int32",)),
    "i64": (("int64",), ("int64",)),
    "bool": (("bool", "uint8"), ("bool", "uint8")),
}
_NUMPY_NEW = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "uint16",
              "i32": "int32", "i64": "int64", "bool": "bool"}


class LibraryError(RuntimeError):
    """An error the generated library reported; .code is its PERFC_LIB_* value."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


@functools.lru_cache(maxsize=None)
def _size_fn(expr):
    """A shape expression of the manifest (+ - * // %, max, min) as a function of the
    sizes, parsed once: calls pay for evaluation only."""
    def build(n):
        if isinstance(n, ast.Expression):
            return build(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            v = n.value
            return lambda s: v
        if isinstance(n, ast.Name):
            name = n.id
            return lambda s: s[name]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            f = build(n.operand)
            return lambda s: -f(s)
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            a, b, op = build(n.left), build(n.right), type(n.op)
            if op is ast.Add:
                return lambda s: a(s) + b(s)
            if op is ast.Sub:
                return lambda s: a(s) - b(s)
            if op is ast.Mult:
                return lambda s: a(s) * b(s)

            def div(s):
                x, y = a(s), b(s)
                if y == 0:
                    raise ZeroDivisionError(expr)
                return x // y if op is ast.FloorDiv else x % y
            return div
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("max", "min") \
                and len(n.args) == 2:
            f, a, b = (max if n.func.id == "max" else min), build(n.args[0]), build(n.args[1])
            return lambda s: f(a(s), b(s))
        raise ValueError("perfc: unsupported shape expression %r in the manifest" % expr)
    return build(ast.parse(expr, mode="eval"))


def _eval_size(expr, sizes):
    """Evaluates a shape expression of the manifest for these sizes."""
    return _size_fn(expr)(sizes)


class _Tensor:
    """What a call needs of one array: address, shape, dtype name, kind."""

    def __init__(self, obj, arg):
        mod = type(obj).__module__.split(".")[0]
        self.obj = obj
        if mod == "torch":
            self.kind = "torch"
            self.dtype = str(obj.dtype).replace("torch.", "")
            self.shape = tuple(int(s) for s in obj.shape)
            self.device = str(obj.device)
            self.index = obj.device.index
            if obj.device.type not in ("cpu", "cuda"):
                raise ValueError("perfc: %s is a %s tensor; perfc libraries run on the CPU and CUDA GPUs"
                                 % (arg, obj.device.type))
            if not obj.is_contiguous():
                raise ValueError("perfc: %s must be contiguous (call .contiguous())" % arg)
            self.ptr = obj.data_ptr()
            self.writeable = True
        elif hasattr(obj, "__array_interface__"):
            self.kind = "numpy"
            ai = obj.__array_interface__
            self.dtype = getattr(obj, "dtype", None).name if hasattr(obj, "dtype") else "?"
            self.shape = tuple(int(s) for s in ai["shape"])
            if ai.get("strides") is not None and not (hasattr(obj, "flags") and obj.flags["C_CONTIGUOUS"]):
                raise ValueError("perfc: %s must be C-contiguous (numpy.ascontiguousarray)" % arg)
            self.ptr = ai["data"][0] or 0
            self.writeable = not ai["data"][1]
            self.device = "cpu"
            self.index = None
        else:
            raise TypeError("perfc: %s must be a NumPy array or a PyTorch tensor, not %s"
                            % (arg, type(obj).__name__))


class Kernel:
    """One exported kernel: call it with its tensors in order, sizes by keyword."""

    def __init__(self, lib, desc):
        self._lib = lib
        self.name = desc["name"]
        self.sizes = list(desc["sizes"])
        self.tensors = desc["tensors"]
        self.inputs = [t for t in self.tensors if not t["output"]]
        self.outputs = [t for t in self.tensors if t["output"]]
        self.specialised = desc.get("specialised", [])
        self.gpu_general = desc.get("gpu_general", [])
        self.gpu_specialised = desc.get("gpu_specialised", [])
        self.source = desc.get("source")
        # dimensions that are a bare size name: where sizes are read from
        self._bare = [[(d, e) for d, e in enumerate(t["shape"]) if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", e)]
                      for t in self.tensors]
        self._name = self.name.encode()

    def __repr__(self):
        args = ", ".join("%s %s %s[%s]" % ("out" if t["output"] else "in", t["name"], t["dtype"],
                                            ", ".join(t["shape"])) for t in self.tensors)
        return "<perfc kernel %s(%s; sizes %s)>" % (self.name, args, ", ".join(self.sizes))

    def _infer(self, given, sizes):
        """Sizes from the dimensions that are a bare size name."""
        where = {}
        for (t, a), bare in zip(given, self._bare):
            for d, expr in bare:
                if d >= len(a.shape):
                    continue
                v = a.shape[d]
                if expr in sizes and sizes[expr] != v:
                    src = where.get(expr, "the keyword argument")
                    raise ValueError("perfc: %s: size %s is %d from %s but %d from dimension %d of %s"
                                     % (self.name, expr, sizes[expr], src, v, d, t["name"]))
                sizes.setdefault(expr, v)
                where.setdefault(expr, "dimension %d of %s" % (d, t["name"]))

    def _shape(self, t, sizes):
        out = []
        for expr in t["shape"]:
            try:
                v = _eval_size(expr, sizes)
            except ZeroDivisionError:
                raise ValueError("perfc: %s: the shape of %s (%s) divides by zero with these sizes"
                                 % (self.name, t["name"], expr))
            if v < 0:
                raise ValueError("perfc: %s: dimension %s of %s is %d with these sizes"
                                 % (self.name, expr, t["name"], v))
            out.append(v)
        return tuple(out)

    def __call__(self, *arrays, **sizes):
        n_in, n_all = len(self.inputs), len(self.tensors)
        if len(arrays) not in (n_in, n_all):
            raise TypeError("perfc: %s takes %d input%s (%s)%s, got %d array%s"
                            % (self.name, n_in, "" if n_in == 1 else "s",
                               ", ".join(t["name"] for t in self.inputs),
                               " and optionally its %d output%s (%s)" % (
                                   len(self.outputs), "" if len(self.outputs) == 1 else "s",
                                   ", ".join(t["name"] for t in self.outputs)),
                               len(arrays), "" if len(arrays) == 1 else "s"))
        for k in sizes:
            if k not in self.sizes:
                raise TypeError("perfc: %s has no size %s (its sizes: %s)"
                                % (self.name, k, ", ".join(self.sizes) or "none"))
            if not isinstance(sizes[k], int) or isinstance(sizes[k], bool):
                raise TypeError("perfc: size %s must be an int, not %s" % (k, type(sizes[k]).__name__))
            if sizes[k] < 0:
                raise ValueError("perfc: %s: size %s = %d is negative" % (self.name, k, sizes[k]))
        wrapped = [_Tensor(a, t["name"]) for a, t in zip(arrays, self.tensors)]
        for w, t in zip(wrapped, self.tensors):
            ok_np, ok_torch = _DTYPES[t["dtype"]]
            if w.dtype not in (ok_torch if w.kind == "torch" else ok_np):
                raise TypeError("perfc: %s: %s must be %s (%s), not %s"
                                % (self.name, t["name"], t["dtype"],
                                   " or ".join(ok_torch if w.kind == "torch" else ok_np), w.dtype))
            if t["output"] and not w.writeable:
                raise ValueError("perfc: %s: output %s is read-only" % (self.name, t["name"]))
        devices = sorted(set(w.device for w in wrapped))
        if len(devices) > 1:
            raise ValueError("perfc: %s: the tensors are on different devices (%s)"
                             % (self.name, ", ".join(devices)))
        device = devices[0] if devices else "cpu"
        if device != "cpu" and self._lib._call_cuda is None:
            raise ValueError("perfc: %s: %s tensors given, but library %s has no GPU code (build it with "
                             "-target host,sm_XY)" % (self.name, device, self._lib.name))
        index = wrapped[0].index if wrapped else None
        sizes = dict(sizes)
        self._infer(list(zip(self.tensors, wrapped)), sizes)
        missing = [s for s in self.sizes if s not in sizes]
        if missing:
            raise TypeError("perfc: %s: size%s %s cannot be read from the shapes; pass %s"
                            % (self.name, "s" if len(missing) > 1 else "", ", ".join(missing),
                               ", ".join("%s=..." % m for m in missing)))
        if device != "cpu" and not self.gpu_general and \
                not any(all(g[n] == sizes[n] for n in self.sizes) for g in self.gpu_specialised):
            have = "; ".join(",".join("%s=%d" % (n, g[n]) for n in self.sizes) for g in self.gpu_specialised)
            raise ValueError("perfc: %s: library %s has GPU code for this kernel only at %s, and no general GPU "
                             "variant (see the notes of perfc lib)" % (self.name, self._lib.name, have or "no sizes"))
        for w, t in zip(wrapped, self.tensors):
            want = self._shape(t, sizes)
            if w.shape != want:
                raise ValueError("perfc: %s: %s has shape %s, but [%s] is %s for %s"
                                 % (self.name, t["name"], list(w.shape), ", ".join(t["shape"]), list(want),
                                    ", ".join("%s=%d" % (s, sizes[s]) for s in self.sizes)))
        made = []
        if len(arrays) == n_in:
            kind = wrapped[0].kind if wrapped else "numpy"
            for t in self.outputs:
                shape = self._shape(t, sizes)
                if kind == "torch":
                    import torch
                    dt = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
                          "i32": "int32", "i64": "int64", "bool": "bool"}[t["dtype"]]
                    a = torch.empty(shape, dtype=getattr(torch, dt), device=device)
                else:
                    import numpy
                    a = numpy.empty(shape, dtype=_NUMPY_NEW[t["dtype"]])
                made.append(a)
                wrapped.append(_Tensor(a, t["name"]))
            # keep the argument order of the kernel: inputs, then outputs
        for w, t in zip(wrapped, self.tensors):
            if w.ptr == 0 and 0 not in w.shape:
                raise ValueError("perfc: %s: %s has no data" % (self.name, t["name"]))
        ptrs = (ctypes.c_void_p * max(1, len(wrapped)))(*[w.ptr or None for w in wrapped])
        vals = (ctypes.c_int64 * max(1, len(self.sizes)))(*[sizes[s] for s in self.sizes])
        if device == "cpu":
            rc = self._lib._call(self._name, ptrs, vals)
        else:
            import torch
            # the library launches on the current context's stream given here: the
            # tensors' device must be current (its primary context is PyTorch's)
            stream = torch.cuda.current_stream(index).cuda_stream
            if index == torch.cuda.current_device():
                rc = self._lib._call_cuda(self._name, ptrs, vals, ctypes.c_void_p(stream))
            else:
                with torch.cuda.device(index):
                    rc = self._lib._call_cuda(self._name, ptrs, vals, ctypes.c_void_p(stream))
        if rc != 0:
            raise LibraryError(rc, "perfc: %s" % self._lib._error().decode(errors="replace"))
        if made:
            return made[0] if len(made) == 1 else tuple(made)
        return None


class Library:
    """A library built by `perfc lib`; each kernel is an attribute (lib.gemm)."""

    def __init__(self, path, name=None):
        self.path = path
        if name is None:
            base = os.path.basename(path)
            m = re.fullmatch(r"lib(.+?)\.(so|dylib)(\..*)?", base)
            if not m:
                raise ValueError("perfc: cannot tell the library's name from %r: pass name=" % base)
            name = m.group(1)
        self.name = name
        self._dll = ctypes.CDLL(os.path.abspath(path))
        try:
            self._call = getattr(self._dll, name + "_call")
            self._error = getattr(self._dll, name + "_last_error")
            manifest = ctypes.c_char_p.in_dll(self._dll, name + "_manifest").value
        except (AttributeError, ValueError):
            raise ValueError("perfc: %s is not a library built by perfc lib under the name %r" % (path, name))
        self._call.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)]
        self._call.restype = ctypes.c_int
        self._call_cuda = getattr(self._dll, name + "_call_cuda", None)
        if self._call_cuda is not None:
            self._call_cuda.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
            self._call_cuda.restype = ctypes.c_int
        self._error.argtypes = []
        self._error.restype = ctypes.c_char_p
        self.manifest = json.loads(manifest.decode())
        self.kernels = {k["name"]: Kernel(self, k) for k in self.manifest["kernels"]}

    def __getattr__(self, attr):
        kernels = self.__dict__.get("kernels", {})
        if attr in kernels:
            return kernels[attr]
        raise AttributeError("perfc: library %s has no kernel %r (it has: %s)"
                             % (self.__dict__.get("name", "?"), attr, ", ".join(sorted(kernels))))

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __repr__(self):
        return "<perfc library %s: %s>" % (self.name, ", ".join(self.kernels))


def load(path, name=None):
    """Loads libNAME.so built by `perfc lib`."""
    return Library(path, name)
