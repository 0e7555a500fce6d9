"""cuDNN's time for each convolution of bench/gpu/conv.sh, timed the way perfc's
harness times a kernel (bench/gpu/torch_matmul.py's time_ms): torch's conv2d on
channels_last tensors (NHWC images, weights stored [K, R, S, C]: the layouts of
bench/gpu/contractions/conv_nhwc.pdl), cuDNN's heuristics and benchmark mode on.
One JSON line per row:
  python3 bench/gpu/conv.py N:H:W:C:K:R:S:U:P[:DT] ..."""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_matmul import DT, time_ms  # noqa: E402


def row(spec):
    p = spec.split(":")
    n, h, w, c, k, r, s, u, pad = (int(x) for x in p[:9])
    t = DT[p[9]] if len(p) > 9 else torch.bfloat16
    x = torch.randn(n, c, h, w, device="cuda").to(t).to(memory_format=torch.channels_last)
    f = torch.randn(k, c, r, s, device="cuda").to(t).to(memory_format=torch.channels_last)
    fn = lambda: F.conv2d(x, f, stride=u, padding=pad)  # noqa: E731
    ms = time_ms(fn)
    print(json.dumps({"spec": spec, "call": "F.conv2d(channels_last)", "ms": ms}), flush=True)


if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    for a in sys.argv[1:]:
        row(a)
