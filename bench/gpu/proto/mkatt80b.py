#!/usr/bin/env python3
"""Hand-edited variants of perfc's sm_80 (mma.sync) attention kernel, measured through
PERFC_CUDA_SOURCE before any pass is changed (GEN=mkatt80b bench/gpu/proto/att80.sh).

  mkatt80b.py GENERATED.cu OUTDIR     writes OUTDIR/{base,lsum,ahead,aheadpv,both,admit,all,late}.cu

  lsum:    the row sum kept per lane (each lane adds its own columns; no quad shuffles
           a tile) and combined over the quad once, before the normalisation.  The
           rescale by the row's factor is the same on the four lanes, so the sum is
           the same up to its order of additions (FlashAttention-2 does this).
  ahead:   the score product's 16-deep slices read one slice ahead: two register
           sets of Q and K fragments, slice k+1's ldmatrix issued before slice k's
           products (what pass gpu-frag-ahead does for a GEMM stage).
  aheadpv: the same for the P.V product's slices of 16 keys (V's fragments).
  both:    lsum and ahead.
  admit:   aheadpv, and the next stage admitted before the last P.V slice's products.
  all:     lsum, ahead and admit.
  late:    the admission of admit without fragments ahead: the last P.V slice's
           fragments read, the next stage admitted, then that slice's products.
"""
import os
import re
import sys

src = open(sys.argv[1]).read()
out = sys.argv[2]
os.makedirs(out, exist_ok=True)


def lsum(s):
    s, n = re.subn(r'(f_lw\[(\w+) >> 3\]) = pf_rop<0>\(f_lw\[\2 >> 3\], pf_quad<0>\(pf_lq0\)\);',
                   r'\1 = pf_rop<0>(\1, pf_lq0);', s)
    assert n == 1, n
    m = re.search(r'float f_lw\[(\d+)\];', s)
    nl = int(m.group(1))
    red = '    #pragma unroll\n    for (int pf_i = 0; pf_i < %d; ++pf_i) f_lw[pf_i] = pf_quad<0>(f_lw[pf_i]);\n' % nl
    k = s.index('    {   /* f_nw: thread.y */')
    return s[:k] + red + s[k:]


LOOP = re.compile(r'^(\s*)for \(idx_t (\w+) = 0; \2 < ([^;]+); \+\+\2\) \{\s*$')


def mma_loop(lines, which):
    """(line, match) of the which-th loop over mma slices (0: scores, 1: P.V)."""
    found = -1
    for i, ln in enumerate(lines):
        m = LOOP.match(ln)
        if m and '/* mma ' in lines[i + 1]:
            found += 1
            if found == which:
                return i, m
    raise AssertionError('no mma slice loop %d' % which)


def ahead(s, which, last=None):
    """Fragments one slice ahead in the which-th (0: scores, 1: P.V) mma slice loop;
    last: code run in the last slice after its (absent) reads, before its products."""
    lines = s.split('\n')
    i, m = mma_loop(lines, which)
    ind, var, bound = m.groups()
    # the loop's lines up to its closing brace
    depth, j = 0, i
    while True:
        depth += lines[j].count('{') - lines[j].count('}')
        if depth == 0 and j > i:
            break
        j += 1
    body = lines[i + 2:j - 1]   # inside the `{ /* mma .. */` block
    hoist = [b for b in body if b.strip().startswith('const int pf_o')]
    loads = [b for b in body if re.match(r'\s*unsigned pf_[ab]\d+\[', b)]
    rest = [b for b in body if b not in hoist and b not in loads]
    na = len(re.findall(r'unsigned pf_a\d+\[4\]', '\n'.join(loads)))
    nb = len(re.findall(r'pf_b\d+\[2\]', '\n'.join(loads))) // 1
    na_r = len(re.findall(r'const unsigned pf_a\d+\[4\]', '\n'.join(rest)))

    def setx(text, sx):
        text = re.sub(r'unsigned pf_a\d+\[4\];\s*', '', text)
        text = re.sub(r'unsigned pf_b\d+\[2\](, pf_b\d+\[2\])*;\s*', '', text)
        if na:
            text = re.sub(r'\bpf_a(\d+)\b', r'pf_fa[%s][\1]' % sx, text)
        return re.sub(r'\bpf_b(\d+)\b', r'pf_fb[%s][\1]' % sx, text)
    ld0 = [setx(b, '(%s & 1)' % var) for b in loads]
    mm = [setx(b, '(%s & 1)' % var) if 'pf_mma' in b else b for b in rest]
    new = [ind + '{'] + hoist
    decl = ind + '    unsigned pf_fb[2][%d][2];' % nb
    if na:
        decl += '  unsigned pf_fa[2][%d][4];' % na
    new.append(decl)
    new += [ind + '    { const idx_t %s = 0;' % var] + ld0 + [ind + '    }']
    new.append(ind + '    #pragma unroll')
    new.append(ind + '    for (idx_t %s = 0; %s < %s; ++%s) {' % (var, var, bound, var))
    new.append(ind + '        if (%s + 1 < %s) { const idx_t pf_nx = %s + 1; { const idx_t %s = pf_nx;'
               % (var, bound, var, var))
    new += ld0 + [ind + '        } }']
    if last:
        new.append(ind + '        if (%s + 1 == %s) {' % (var, bound))
        new += last
        new.append(ind + '        }')
    new += mm
    new.append(ind + '    }')
    new.append(ind + '}')
    assert na + na_r > 0 and nb > 0
    i0 = i - 1 if lines[i - 1].strip() == '#pragma unroll' else i
    return '\n'.join(lines[:i0] + new + lines[j + 1:])


def admit(s):
    """aheadpv, and the pipeline's next stage admitted before the last P.V slice's
    products (its V fragments are read by then): the wait, the barrier and the copies
    of tile j + 2 move from the top of tile j + 1 to there, as gpu-frag-ahead does for
    a GEMM stage; the first tile's admission goes before the loop."""
    lines = s.split('\n')
    top = next(i for i, ln in enumerate(lines) if re.match(r'\s*for \(idx_t (\w+) = 0; \1 < \d+; \+\+\1\) \{$', ln)
               and 'pf_cp_wait<' in lines[i + 1])
    var = re.match(r'\s*for \(idx_t (\w+) =', lines[top]).group(1)
    end = next(i for i in range(top, len(lines)) if 'pf_cp_commit();' in lines[i]) + 1   # the copies' closing brace
    adm = lines[top + 1:end + 1]
    rest = lines[:top] + ['{ const idx_t %s = 0;' % var] + adm + ['}'] + [lines[top]] + lines[end + 1:]
    in_loop = [ln.replace('pf_next = %s + 1;' % var, 'pf_next = %s + 2;' % var) for ln in adm]
    assert any('pf_next = %s + 2;' % var in ln for ln in in_loop)
    return ahead('\n'.join(rest), 1, in_loop)


def late(s):
    """admit without fragments ahead: the P.V loop as generated, its last slice's
    fragments read, then the next stage admitted, then that slice's products."""
    s2 = admit_split(s)
    rest, in_loop, var = s2
    lines = rest.split('\n')
    i, m = mma_loop(lines, 1)
    v, bound = m.group(2), m.group(3)
    j = i + 2
    while 'pf_mma_' not in lines[j]:
        j += 1
    ins = ['        if (%s + 1 == %s) {' % (v, bound)] + in_loop + ['        }']
    return '\n'.join(lines[:j] + ins + lines[j:])


def admit_split(s):
    lines = s.split('\n')
    top = next(i for i, ln in enumerate(lines) if re.match(r'\s*for \(idx_t (\w+) = 0; \1 < \d+; \+\+\1\) \{$', ln)
               and 'pf_cp_wait<' in lines[i + 1])
    var = re.match(r'\s*for \(idx_t (\w+) =', lines[top]).group(1)
    end = next(i for i in range(top, len(lines)) if 'pf_cp_commit();' in lines[i]) + 1
    adm = lines[top + 1:end + 1]
    rest = lines[:top] + ['{ const idx_t %s = 0;' % var] + adm + ['}'] + [lines[top]] + lines[end + 1:]
    in_loop = [ln.replace('pf_next = %s + 1;' % var, 'pf_next = %s + 2;' % var) for ln in adm]
    assert any('pf_next = %s + 2;' % var in ln for ln in in_loop)
    return '\n'.join(rest), in_loop, var


open(os.path.join(out, 'late.cu'), 'w').write(late(src))
open(os.path.join(out, 'base.cu'), 'w').write(src)
open(os.path.join(out, 'lsum.cu'), 'w').write(lsum(src))
open(os.path.join(out, 'ahead.cu'), 'w').write(ahead(src, 0))
open(os.path.join(out, 'aheadpv.cu'), 'w').write(ahead(src, 1))
open(os.path.join(out, 'both.cu'), 'w').write(lsum(ahead(src, 0)))
open(os.path.join(out, 'admit.cu'), 'w').write(admit(src))
open(os.path.join(out, 'all.cu'), 'w').write(lsum(ahead(admit(src), 0)))
