"""Hand edit of a warpgroup flash kernel's CUDA (bench/gpu/proto/decouple.sh): the
block-wide barrier at the top of every key tile goes.  Today every thread waits there
until all have finished the previous tile, so that thread 0 may refill its stage; in
the edit each warp, when it has finished a tile (its products waited for), counts
itself on that tile's stage, and the warp that completes the count issues the copies
of the tile two ahead into it.  Both stages are filled before the loop.  No warp waits
for another: only for its own copies to land.
    python3 mkdecouple.py IN.cu OUT.cu"""
import re, sys
from cuedit import block_end, indent
src, dst = sys.argv[1], sys.argv[2]
L = open(src).read().split('\n')
# the barrier initialisation: a stage counter beside it, zeroed with it
k = next(i for i, l in enumerate(L) if 'pf_mbar_init(&pf_full_' in l)
var = re.search(r'pf_mbar_init\(&(pf_full_\w+)\[s\]', L[k]).group(1)
ind = indent(L[k])
L.insert(k + 1, ind + 'for (int s = 0; s < 2; ++s) pf_cnt[s] = 0u;')
k = next(i for i, l in enumerate(L) if f'__shared__ __align__(8) unsigned long long {var}[2];' in l)
L.insert(k + 1, indent(L[k]) + '__shared__ unsigned pf_cnt[2];   /* warps done with each stage */')
# both stages in the prologue
k = next(i for i, l in enumerate(L) if 'for (idx_t pf_pre = 0; pf_pre < 1; ++pf_pre)' in l)
L[k] = L[k].replace('pf_pre < 1', 'pf_pre < 2')
# the loop's barrier and its issue block
k = next(i for i, l in enumerate(L) if '__syncthreads();   /* and everyone is done with stage' in l)
del L[k]
m = re.search(r'if \(pf_issuer && (\w+) \+ 1 < (.*)\) \{$', L[k].strip())
assert m, L[k]
jv, n = m.group(1), m.group(2)
e = block_end(L, k)
block = L[k + 1:e]          # const idx_t pf_next = j + 1; { ... issue ... }
del L[k:e + 1]
block = [b.replace(f'const idx_t pf_next = {jv} + 1;', f'const idx_t pf_next = {jv} + 2;') for b in block]
# the end of the loop body: the closing brace of the for over jv
f = next(i for i, l in enumerate(L) if l.strip().startswith(f'for (idx_t {jv} = 0; {jv} <'))
e = block_end(L, f)
ind = indent(L[f]) + '    '
tail = [ind + '__syncwarp();   /* this warp\'s products of the tile have been waited for */',
        ind + 'if ((threadIdx.x & 31) == 0) {',
        ind + f'    const unsigned pf_done = atomicAdd(&pf_cnt[(unsigned){jv} % 2u], 1u) + 1u;',
        ind + f'    if (pf_done % (blockDim.x * blockDim.y / 32u) == 0u && {jv} + 2 < {n}) {{   /* the last warp refills the stage */']
tail += ['    ' + b for b in block] + [ind + '    }', ind + '}']
L[e:e] = tail
open(dst, 'w').write('\n'.join(L))
