"""Hand edits of the warpgroup flash kernel's CUDA (bench/gpu/proto/lazy.sh), measured
before any of them is written as a transformation:
  exact  a warp skips the rescale of its running sum and output rows when no row it
         holds changed its maximum this tile (the factor is then exactly 1)
  thr    as exact, and a row keeps its old maximum while the new one exceeds it by at
         most 8 / scale (the exponentials then stay below e^8; the shift cancels in
         O / l), so after the first tiles almost no warp rescales
  lpt    blocks are numbered so the longest rows of a causal kernel start first
    python3 mklazy.py IN.cu OUT.cu exact|thr[,lpt]"""
import re, sys
from cuedit import block_end, indent
src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
L = open(src).read().split('\n')

def loop_of(pat):
    """(first, last) line of the row loop (its #pragma unroll .. closing brace) holding pat."""
    k = next(i for i, l in enumerate(L) if pat in l)
    while 'for (idx_t pf_rf_' not in L[k]:
        k -= 1
    return k - 1, block_end(L, k)

if 'exact' in what or 'thr' in what:
    if 'thr' in what:
        k = next(i for i, l in enumerate(L) if '= pf_rop<2>(f_mw[' in l and 'pf_quad<2>(pf_lq0)' in l)
        lhs = L[k].split(' = ')[0]
        ind = indent(lhs)
        L[k] = (f'{ind}{{ const float pf_nm = pf_quad<2>(pf_lq0); '
                f'if (!(pf_nm - {lhs.strip()} <= 8.0f * sqrtf((float)D))) {lhs.strip()} = fmaxf({lhs.strip()}, pf_nm); }}')
    # the old maximum is in f_mc until the exponential of the difference replaces it
    a0, a1 = loop_of('= pf_fexpds(f_mc[')
    k = next(i for i, l in enumerate(L) if '*= f_mc[' in l and 'f_lw[' in l)
    b0, b1 = loop_of(L[k].strip())
    k = next(i for i, l in enumerate(L) if '*= f_mc[' in l and 'f_oacc[' in l)
    c0, c1 = loop_of(L[k].strip())
    ind = indent(L[a0])
    for (s, e) in sorted([(a0, b1), (c0, c1)], reverse=True):
        L.insert(e + 1, ind + '}')
        L.insert(s, ind + 'if (pf_resc) {')
    L.insert(a0, ind + 'const bool pf_resc = __any_sync(0xffffffffu, (f_mc[0] != f_mw[0]) || (f_mc[1] != f_mw[1]));')
if 'lpt' in what:
    s = '\n'.join(L)
    s = re.sub(r'const idx_t (\w+) = \(idx_t\)blockIdx\.x;(.*)\n(\s*)const idx_t (\w+) = \(idx_t\)blockIdx\.y;(.*)\n\s*const idx_t (\w+) = \(idx_t\)blockIdx\.z;(.*)',
               lambda m: (f'const unsigned pf_lin = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);\n'
                          f'{m.group(3)}const idx_t {m.group(1)} = gridDim.x - 1 - pf_lin / (gridDim.y * gridDim.z);   /* longest rows first */\n'
                          f'{m.group(3)}const idx_t {m.group(4)} = pf_lin % gridDim.y;\n'
                          f'{m.group(3)}const idx_t {m.group(6)} = (pf_lin / gridDim.y) % gridDim.z;'), s, count=1)
    L = s.split('\n')
open(dst, 'w').write('\n'.join(L))
