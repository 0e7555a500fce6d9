"""torch's row-wise kernels for the rows of bench/gpu/rows.sh, timed as perfc times a
kernel (bench/gpu/torch_matmul.py's time_ms).  One JSON line per row:
  python3 bench/gpu/rows.py KIND:N:C:DT ...   (KIND rmsnorm, softmax, layernorm)"""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_matmul import DT, time_ms  # noqa: E402


def row(spec):
    kind, n, c, dt = spec.split(":")
    n, c, t = int(n), int(c), DT[dt]
    x = torch.randn(n, c, device="cuda").to(t)
    w = torch.randn(c, device="cuda").to(t)
    b = torch.randn(c, device="cuda").to(t)
    fn = {"rmsnorm": lambda: F.rms_norm(x, (c,), w, 1e-6),
          "softmax": lambda: torch.softmax(x, -1),
          "layernorm": lambda: F.layer_norm(x, (c,), w, b, 1e-5)}[kind]
    return {"spec": spec, "ms": time_ms(fn)}


if __name__ == "__main__":
    for s in sys.argv[1:]:
        print(json.dumps(row(s)), flush=True)
