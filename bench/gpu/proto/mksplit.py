"""Hand edit of the warpgroup flash kernel's CUDA (bench/gpu/proto/diet.sh): each quad
reduction's per-lane partial (pf_lq0: the row's maximum, the row's sum) kept in
NACC registers that take the columns in turn and are combined after the loop, so
the 16 values of a lane are not one chain of dependent instructions.
    python3 mksplit.py IN.cu OUT.cu NACC"""
import re, sys
src, dst, nacc = sys.argv[1], sys.argv[2], int(sys.argv[3])
L = open(src).read().split('\n')
out = []
i = 0
while i < len(L):
    l = L[i]
    m = re.match(r'(\s*)float pf_lq0 = (.*?);(.*)', l)
    if m:
        ind, ident = m.group(1), m.group(2)
        out.append(f'{ind}float pf_lq0 = {ident}, ' + ', '.join(f'pf_lq0_{k} = {ident}' for k in range(1, nacc)) + ';')
        # the accumulation inside the loop: alternate by column step
        j = i + 1
        while 'pf_lq0 = pf_rop<' not in L[j]:
            out.append(L[j]); j += 1
        acc = L[j]
        op = re.search(r'pf_rop<(\d)>', acc).group(1)
        cf = re.search(r'for \(idx_t (pf_cf_\w+) = 0', '\n'.join(L[i:j])).group(1)
        val = acc.split(f'pf_rop<{op}>(pf_lq0, ', 1)[1].rsplit(');', 1)[0]
        ind2 = acc[:len(acc) - len(acc.lstrip())]
        out.append(f'{ind2}switch (({cf} >> 3) % {nacc}) {{ case 0: pf_lq0 = pf_rop<{op}>(pf_lq0, {val}); break; '
                   + ' '.join(f'case {k}: pf_lq0_{k} = pf_rop<{op}>(pf_lq0_{k}, {val}); break;' for k in range(1, nacc)) + ' }')
        j += 1
        while 'pf_quad<' not in L[j]:
            out.append(L[j]); j += 1
        ind3 = L[j][:len(L[j]) - len(L[j].lstrip())]
        for k in range(1, nacc):
            out.append(f'{ind3}pf_lq0 = pf_rop<{op}>(pf_lq0, pf_lq0_{k});')
        out.append(L[j])
        i = j + 1
        continue
    out.append(l)
    i += 1
open(dst, 'w').write('\n'.join(out))
