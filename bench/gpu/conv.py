"""cuDNN's time for each convolution of bench/gpu/conv.sh, timed the way perfc's
harness times a kernel (bench/gpu/torch_matmul.py's time_ms): torch's conv2d on
channels_last tensors (NHWC images, weights stored [K, R, S, C]: the layouts of
bench/gpu/contractions/conv_nhwc.pdl), cuDNN's heuristics and benchmark mode on.
One JSON line per row:
  python3 bench/gpu/conv.py N:H:W:C:K:R:S:U:P[:DT] | c1:N:L:C:K:S:P[:DT] | c3:N:D:H:W:C:K[:DT] ..."""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_matmul import DT, time_ms  # noqa: E402


def row_nd(spec):
    """c1:N:L:C:K:S:P (conv1d, torch's N, C, L layout: cuDNN has no channels-last
    1-D form) or c3:N:D:H:W:C:K (3x3x3, padding 1, channels_last_3d), f16 or bf16
    operands as the last field (default bf16)."""
    p = spec.split(":")
    if p[0] == "c1":
        n, l, c, k, s, pad = (int(x) for x in p[1:7])
        t = DT[p[7]] if len(p) > 7 else torch.bfloat16
        x = torch.randn(n, c, l, device="cuda").to(t)
        f = torch.randn(k, c, s, device="cuda").to(t)
        fn = lambda: F.conv1d(x, f, padding=pad)  # noqa: E731
        call = "F.conv1d"
    else:
        n, d, h, w, c, k = (int(x) for x in p[1:7])
        t = DT[p[7]] if len(p) > 7 else torch.bfloat16
        x = torch.randn(n, c, d, h, w, device="cuda").to(t).to(memory_format=torch.channels_last_3d)
        f = torch.randn(k, c, 3, 3, 3, device="cuda").to(t).to(memory_format=torch.channels_last_3d)
        fn = lambda: F.conv3d(x, f, padding=1)  # noqa: E731
        call = "F.conv3d(channels_last_3d)"
    print(json.dumps({"spec": spec, "call": call, "ms": time_ms(fn)}), flush=True)


def row(spec):
    if spec.startswith("c1:") or spec.startswith("c3:"):
        row_nd(spec)
        return
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
