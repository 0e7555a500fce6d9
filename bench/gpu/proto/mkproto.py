"""Hand edit of the warpgroup flash kernel's CUDA for bench/gpu/proto/fa3.sh:
FlashAttention-3's rotation.  In the tile loop of the three-stage kernel, tile j's
scores are issued, then tile j-1's P.V behind them (P packed into registers at the end
of the previous iteration and kept live until its wait), the softmax of tile j runs
while that product is in flight, and its wait sits before O is rescaled; the copies
run one tile ahead instead of two, and the last tile's product follows the loop.
    python3 mkproto.py IN.cu OUT.cu NTILES"""
import sys
src, dst, ntiles = sys.argv[1], sys.argv[2], int(sys.argv[3])
L = open(src).read().split('\n')
def find(sub, start=0):
    for i in range(start, len(L)):
        if sub in L[i]: return i
    raise SystemExit('missing ' + sub)
i = find('for (idx_t pf_pre = 0; pf_pre < 2; ++pf_pre)'); L[i] = L[i].replace('pf_pre < 2', 'pf_pre < 1')
i = find(f'if (pf_issuer && pfVO_djo + 2 < {ntiles})'); L[i] = L[i].replace('+ 2 <', '+ 1 <')
i = find('const idx_t pf_next = pfVO_djo + 2;'); L[i] = L[i].replace('+ 2;', '+ 1;')
s_commit = find('pf_wg_commit();', find('wgmma pfVs_ddo'))
assert 'pf_wg_wait<0>' in L[s_commit + 1] and L[s_commit + 3].strip() == '}'
pv_open = find('{   /* wgmma pfVO_djio')
pv_commit = find('pf_wg_commit();', pv_open)
pv_close = pv_commit + 3
assert L[pv_close].strip() == '}', L[pv_close]
o_start = find('pf_cf_pfVO_dd = 0; pf_cf_pfVO_dd <', find('pf_rf_f_r8')) - 6
assert 'pragma unroll' in L[o_start] and 'pf_rf_f_r8' in L[o_start + 1], L[o_start]
packs = []
for l in L[pv_open + 1:pv_open + 5]:
    name = l.split('const unsigned ')[1].split('[4]')[0]
    vals = l.split('= {', 1)[1].rsplit('};', 1)[0]
    packs.append(f'                {{ const unsigned t_[4] = {{{vals}}}; {name}[0] = t_[0]; {name}[1] = t_[1]; {name}[2] = t_[2]; {name}[3] = t_[3]; }}')
issue = [l.replace('(unsigned)pfVO_djo % 3u', '(unsigned)(pfVO_djo + 2) % 3u') for l in L[pv_open + 5:pv_commit + 1]]
issue_epi = [l.replace('(unsigned)pfVO_djo % 3u', f'(unsigned)({ntiles - 1}) % 3u') for l in L[pv_open + 5:pv_commit + 1]]
keep_a = '                asm volatile("" :: ' + ', '.join(f'"r"(pf_a{g}[{k}])' for g in range(4) for k in range(4)) + ' : "memory");'
softmax = L[s_commit + 4:o_start]
orescale = L[o_start:pv_open]
L = (L[:s_commit + 1]
    + ['                    if (pfVO_djo > 0) {   /* prototype: the previous tile\'s P.V issued behind this tile\'s scores */']
    + issue
    + ['                    }',
       '                    if (pfVO_djo > 0) pf_wg_wait<1>(); else pf_wg_wait<0>();   /* the scores only */',
       '                    pf_wg_keep<32>(&f_sacc[0][0][0]);',
       '                }']
    + softmax
    + ['                pf_wg_wait<0>();   /* the previous P.V has landed in O */',
       '                pf_wg_keep<64>(&f_oacc[0][0][0]);',
       keep_a]
    + orescale + packs + L[pv_close + 1:])
i = find(f'for (idx_t pfVO_djo = 0; pfVO_djo < {ntiles}; ++pfVO_djo) {{')
L.insert(i, '        unsigned pf_a0[4] = {0, 0, 0, 0}, pf_a1[4] = {0, 0, 0, 0}, pf_a2[4] = {0, 0, 0, 0}, pf_a3[4] = {0, 0, 0, 0};   /* P of the previous tile, packed */')
close = find('{   /* f_nw: thread.y */') - 1
assert L[close].strip() == '}', L[close]
L[close:close] = ['        {   /* prototype: the last tile\'s P.V */'] + issue_epi + ['                    pf_wg_wait<0>();', '                    pf_wg_keep<64>(&f_oacc[0][0][0]);', '        }']
open(dst, 'w').write('\n'.join(L))
