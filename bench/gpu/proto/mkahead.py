#!/usr/bin/env python3
"""Hand edits of perfc's sm_80 GEMM code with fragments ahead (pass gpu-frag-ahead),
to find what separates it from the hand-written loop of mkmm80.py (dbuf):
  serp  the products of odd fragment rows in reverse column order (each B fragment
        used by two products in a row)
  vol   the products as volatile asm: the compiler keeps them where they stand
        (the last slice's after the barrier), as it keeps the reads
  x4    B's fragments read two at a time (ldmatrix .x4 .trans: lanes 16-31 name
        the rows 8 columns on)
    mkahead.py IN.cu OUT.cu serp|x4|serp,x4
"""
import re
import sys

src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
text = open(src).read()
if "serp" in what:
    lines, out, run = text.split("\n"), [], []

    def flush():
        rows = {}
        for l in run:
            rows.setdefault(int(re.search(r"acc\[(\d+)\]", l).group(1)), []).append(l)
        for r in sorted(rows):
            out.extend(rows[r][::-1] if r % 2 else rows[r])
        run.clear()
    for l in lines:
        if "pf_mma_bf16(acc" in l:
            run.append(l)
            continue
        flush()
        out.append(l)
    flush()
    text = "\n".join(out)
if "vol" in what:
    text = text.replace("static __device__ __forceinline__ void pf_mma_bf16(float *c, const unsigned *a, const unsigned *b) { asm(",
                        "static __device__ __forceinline__ void pf_mma_bf16(float *c, const unsigned *a, const unsigned *b) { asm volatile(")
    assert "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16" in text
if "x4" in what:
    text = text.replace("const int pf_ob = ", "const int pf_ob4 = (8 * (pf_lane >> 4)) + (0) * 1 + ((pf_lane & 7) + 8 * ((pf_lane >> 3) & 1)) * SBN_;\n        const int pf_ob = ", 1)
    stride = re.search(r"const int pf_ob = .*\* (\d+);", text).group(1)
    text = text.replace("SBN_", stride)
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        l = lines[i]
        m = re.match(r"(\s*)pf_ldsm_x2_t\(pf_b(\d+)_(\d), (.*)\);$", l)
        if m and int(m.group(2)) % 2 == 0:
            ind, f, s, addr = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            addr = addr.replace("(unsigned)pf_ob)", "(unsigned)pf_ob4)")
            out.append("%s{ unsigned q[4]; pf_ldsm_x4_t(q, %s); pf_b%d_%s[0] = q[0]; pf_b%d_%s[1] = q[1]; pf_b%d_%s[0] = q[2]; pf_b%d_%s[1] = q[3]; }"
                       % (ind, addr, f, s, f, s, f + 1, s, f + 1, s))
            i += 1
            continue
        if m:   # the odd one: read with its even neighbour
            i += 1
            continue
        out.append(l)
        i += 1
    text = "\n".join(out)
open(dst, "w").write(text)
