"""Hand edits of the warpgroup flash kernel's CUDA (bench/gpu/proto/diet.sh), each a
candidate change to the emitter measured before it is written:
  sum   the row sum adds the f32 exponentials, not their bf16 roundings read back
  scale the 1/sqrt(D) scale folded into the exponent (max over the raw scores, then
        2^((s - m) * scale * log2 e)), no multiplication pass over the scores
    python3 mkdiet.py IN.cu OUT.cu sum[,scale]"""
import re, sys
src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
L = open(src).read().split('\n')
out = []
i = 0
while i < len(L):
    l = L[i]
    if 'sum' in what and '= pf_f2b(pf_fexpd(' in l and 'pf_lq0 = pf_rop<0>(pf_lq0, pf_b2f(' in L[i + 1]:
        lhs, rhs = l.split(' = pf_f2b(', 1)
        ind = lhs[:len(lhs) - len(lhs.lstrip())]
        out.append(f'{ind}{{ const float e_ = {rhs.rstrip()[:-2]};')
        out.append(f'{ind}{lhs.strip()} = pf_f2b(e_); pf_lq0 += e_; }}')
        i += 2
        continue
    if 'scale' in what:
        if '*= rsqrtf((float)D);' in l:
            i += 1
            continue
    out.append(l)
    i += 1
if 'scale' in what:
    out = [l if 'static __device__' in l else l.replace('pf_fexpd(', 'pf_fexpd_c(') for l in out]
s = '\n'.join(out)
if 'scale' in what:
    s = s.replace('static __device__ __forceinline__ float pf_fexpd(',
        'static __device__ __forceinline__ float pf_fexpd_c(float a, float b) { const float c = rsqrtf(128.0f) * 1.4426950408889634f; float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(a, c, -b * c))); return y; }\n'
                  'static __device__ __forceinline__ float pf_fexpd(', 1)
open(dst, 'w').write(s)
