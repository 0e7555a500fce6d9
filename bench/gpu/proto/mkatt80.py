#!/usr/bin/env python3
"""Hand-edited variants of perfc's sm_80 attention kernel, to measure what an emitter
change would buy before making it (run through PERFC_CUDA_SOURCE).

  mkatt80.py GENERATED.cu OUTDIR      writes OUTDIR/{base,cvt2,ldx4,both}.cu

  cvt2: P kept in f32 registers and rounded two at a time (cvt.rn.bf16x2.f32) where
        the PV product's A fragments are packed, instead of one cvt per element plus
        a 16-bit pack;
  ldx4: K and V fragments read by ldmatrix .x4 (two n8 blocks a load) instead of .x2;
  rcp:  the normalisation multiplies by each row's reciprocal (one rcp.rn a row) instead
        of dividing every element (a div.rn each: MUFU.RCP, Newton steps, FCHK, a call);
  st2:  the bf16 result written two columns at a time (one 32-bit store a pair).
"""
import re, sys, os

src = open(sys.argv[1]).read()
out = sys.argv[2]
os.makedirs(out, exist_ok=True)

PK2 = ('static __device__ __forceinline__ unsigned pf_pk2f(float lo, float hi) '
       '{ unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }\n')


def cvt2(s):
    n0 = s.count('pf_bf16 f_pr[')
    s = s.replace('pf_bf16 f_pr[', 'float f_pr[')
    s = s.replace('= pf_f2b(pf_fw1);', '= pf_fw1;')
    s, n = re.subn(r'pf_pk16\((f_pr\[[^\]]*\]\[[^\]]*\]\[\d\]), (f_pr\[[^\]]*\]\[[^\]]*\]\[\d\])\)',
                   r'pf_pk2f(\1, \2)', s)
    assert n0 == 1 and n > 0, (n0, n)
    return s.replace('extern "C" __global__', PK2 + 'extern "C" __global__', 1)


LD = re.compile(r'^(\s*)unsigned (pf_b(\d+))\[2\];  pf_ldsm_x2(_t)?\(pf_b\d+, (.*)\);\s*$')


def ldx4(s):
    lines = s.split('\n')
    res = []
    n = 0
    for ln in lines:
        m = LD.match(ln)
        if not m:
            res.append(ln)
            continue
        ind, name, k, trans, addr = m.groups()
        k = int(k)
        if k % 2:
            continue    # read by the .x4 of k - 1
        # the second n8 block: 8 rows of K further on, 8 columns of V further on
        step = '8u' if trans else '8u * 136u'
        res.append('%sunsigned pf_b%d[2], pf_b%d[2];  { unsigned t_[4];  pf_ldsm_x4%s(t_, %s + 2u * (((unsigned)pf_lane >> 4) & 1u) * %s);'
                   '  pf_b%d[0] = t_[0]; pf_b%d[1] = t_[1]; pf_b%d[0] = t_[2]; pf_b%d[1] = t_[3]; }'
                   % (ind, k, k + 1, trans or '', addr, step, k, k, k + 1, k + 1))
        n += 1
    assert n > 0
    return '\n'.join(res)


def rcp(s):
    s, n = re.subn(r' / (f_lw\[[^\]]*\])\)', r' * __frcp_rn(\1))', s)
    assert n == 1, n
    return s


def st2(s):
    lines = s.split('\n')
    res = []
    pending = None   # (indent of the ch loop, the pair store)
    n = 0
    for i, ln in enumerate(lines):
        m = re.match(r'^(\s*)(\w+)\[(.*)\] = pf_f2b\((.*)\);$', ln)
        if m and '_unorm' in ln:
            ind, arr, idx, val = m.groups()
            ch = re.search(r'for \(idx_t (pf_ch_\w+) = 0', lines[i - 3]).group(1)
            col = re.match(r'\s*const idx_t (\w+) = (.*);$', lines[i - 2])
            pair = ('%s{ const idx_t %s = 0; const idx_t %s = %s; *reinterpret_cast<unsigned *>(&%s[%s]) = pf_pk2f(%s, %s); }'
                    % (ind[:-4], ch, col.group(1), col.group(2), arr, idx, val, val.replace(ch, '1')))
            pending = (ind[:-4], pair)
            n += 1
            continue
        res.append(ln)
        if pending and ln == pending[0] + '}':
            res.append(pending[1])
            pending = None
    assert n == 1, n
    return '\n'.join(res)


def with_pk2(s):
    return s if 'pf_pk2f(float' in s else s.replace('extern "C" __global__', PK2 + 'extern "C" __global__', 1)


open(os.path.join(out, 'rcp.cu'), 'w').write(rcp(src))
open(os.path.join(out, 'st2.cu'), 'w').write(with_pk2(st2(src)))
open(os.path.join(out, 'rcpst2.cu'), 'w').write(with_pk2(st2(rcp(src))))
open(os.path.join(out, 'all.cu'), 'w').write(with_pk2(st2(rcp(ldx4(src)))))
open(os.path.join(out, 'base.cu'), 'w').write(src)
open(os.path.join(out, 'cvt2.cu'), 'w').write(cvt2(src))
open(os.path.join(out, 'ldx4.cu'), 'w').write(ldx4(src))
open(os.path.join(out, 'both.cu'), 'w').write(ldx4(cvt2(src)))
