/* The blocking model of the CPU contraction templates (tune/rules.c): where the
 * tuner starts, and the schedule a contraction gets when the file has none.
 *
 * The micro-kernel keeps an MR x NR tile of C in registers: NR columns are NV whole
 * SIMD registers (the vector loop, contiguous in C and in the packed B panel), MR
 * rows are unrolled, and each k step loads NV vectors of B and broadcasts MR values
 * of A for MR x NV fused multiply-adds.  The blocks around it follow the
 * GotoBLAS/BLIS layering: the packed B micro-panel (KC x NR) is reused by every
 * MR-row tile of a row block, the A block (MC x KC) by every column panel, the B
 * block (KC x NC) by every row block.  The formulas and the measurements behind
 * their constants are in docs/autotune.md ("The blocking model"). */
#include "blocking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int blocking_vector_regs(const Target *t)
{
    if (t && t->arch == ARCH_X86_64)
        return t->vector_bytes >= 64 ? 32 : 16; /* zmm0-31 with AVX-512, else ymm/xmm0-15 */
    return 32;                                  /* AArch64 v0-v31 (and SVE z0-z31), RISC-V v0-v31 */
}

static int64_t floor_pow2(int64_t x)
{
    int64_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

void blocking_model(int vector_bytes, int vregs, int elem_bytes, const CacheSizes *c, int64_t m, int64_t n, int64_t k,
                    Blocking *b)
{
    blocking_model_mixed(vector_bytes, vregs, elem_bytes, elem_bytes, c, m, n, k, b);
}

/* The rows of an A block of `bytes` (KC elements of S bytes a row): a multiple of
 * MR, at least MR, no more than the m rows there are (rounded up to MR). */
static int row_block(int64_t bytes, int64_t kc, int64_t S, int mr, int64_t m)
{
    int64_t mc = bytes / (kc * S) / mr * mr;
    if (mc < mr)
        mc = mr;
    if (m > 0 && mc > m)
        mc = (m + mr - 1) / mr * mr;
    return (int)clamp64(mc, 1, 1 << 20);
}

void blocking_model_mixed(int vector_bytes, int vregs, int elem_bytes, int op_bytes, const CacheSizes *c, int64_t m,
                          int64_t n, int64_t k, Blocking *b)
{
    memset(b, 0, sizeof *b);
    if (elem_bytes <= 0)
        elem_bytes = 4;
    if (op_bytes <= 0 || op_bytes > elem_bytes)
        op_bytes = elem_bytes;
    if (vector_bytes < elem_bytes)
        vector_bytes = elem_bytes;
    if (vregs < 8)
        vregs = 8;
    int L = vector_bytes / elem_bytes;
    b->lanes = L;
    b->vregs = vregs;
    /* Register tile.  The accumulators (MR x NV registers) must hide the FMA latency
     * (2 pipes x 4 cycles: at least 8 in flight, Low et al.'s N_vfma x L_vfma), and
     * take at most half the register file: the other half holds the B vectors of
     * the k step, the broadcasts and what the code generator needs (6 x 4 zmm, 24
     * accumulators, measured slower than 4 x 4 on an AVX-512 EPYC: spills and the
     * unpacked A's six strided rows).  Among the tiles that fit, the one with the
     * fewest loads per FMA, (MR + NV) / (MR x NV); a tie goes to more rows (each B
     * vector reused more).  NV is a power of two, so NR divides the usual sizes. */
    int half = vregs / 2, need = 10, cap = half;
    /* With 16 registers (AVX2) half the file is 8 accumulators: just the FMA
     * latency times the pipes, with no slack (0.73x OpenBLAS at 1024^3 on a Zen 3
     * EPYC).  There the tile may take the file but for its B vectors, one broadcast
     * and a spare, the way OpenBLAS's AVX2 kernels use 12 of 16. */
    if (cap < need)
        cap = vregs - 4;
    if (need > cap)
        need = cap;
    double best = 1e9;
    int bmr = 1, bnv = 1;
    for (int nv = 1; nv <= 4; nv *= 2)
        for (int mr = 1; mr <= 16; mr++) {
            int acc = mr * nv;
            if (acc > cap || acc < need || acc + nv + 2 > vregs)
                continue;
            double cost = (double)(mr + nv) / acc;
            if (cost < best - 1e-12 || (cost < best + 1e-12 && mr > bmr)) {
                best = cost;
                bmr = mr;
                bnv = nv;
            }
        }
    /* small problems: no wider than the columns there are, no taller than the rows */
    while (bnv > 1 && n > 0 && (int64_t)bnv * L > n)
        bnv /= 2;
    if (m > 0 && bmr > m)
        bmr = (int)m;
    b->mr = bmr;
    b->nr = bnv * L;
    /* the packed panels and blocks hold the operands: their bytes size the caches' share */
    const int64_t S = op_bytes;
    /* KC: the packed B micro-panel, KC x NR, sized to two L1s.  In Low et al. it
     * stays in L1 (96 at NR = 64 f32 with a 32 KiB 8-way L1); read in order it
     * streams from L2 as fast as the FMAs use it, and the longer panel halves the
     * passes over C: 256 measured 0.93-0.98x OpenBLAS where 128 gave 0.84x.
     * A power of two in [64, 512]; a reduction no longer than twice that is one
     * panel (C is then read and written once: 1037x769x511 measured 0.61-0.98x
     * with KC = K against 0.51-0.62x with 256). */
    int64_t l1 = c && c->l1 > 0 ? c->l1 : 32768;
    /* Where a k step reads one cache line of the panel (NR x S = 64 bytes: AVX2,
     * NEON f32) the panel takes half an L1 instead: the MR values of A each step
     * and the C tile need the rest (Zen 3 AVX2, 1024^3, one thread, four rounds:
     * Aᵀ·B 0.69-0.78x OpenBLAS at KC 256 against 0.43-0.70x at 512, A·B 0.76-0.90x
     * against 0.66-0.94x). */
    int64_t row = (int64_t)b->nr * S, share = row >= 128 ? 2 * l1 : l1 / 2;
    int64_t kc = clamp64(floor_pow2(share / row), 64, 512);
    if (k > 0 && k <= 2 * kc && k <= 512)
        kc = k;
    else if (k > 0 && kc > k)
        kc = k;
    b->kc = (int)kc;
    /* MC: the A block (MC x KC) in a quarter of L2, a multiple of MR.  The B block
     * (KC x NC, packed once per panel) is read through L2 once per row block, so
     * A's block shares L2 with it and with C: on a Zen 3 EPYC (512 KiB L2, KC 256,
     * one thread, 1024^3, hand schedules, minimum-time ratios in
     * docs/benchmarks-log.md) MC 72-96 measured 0.90-0.94 of OpenBLAS, 144 0.89,
     * 192 0.86. */
    int64_t l2 = c && c->l2 > 0 ? c->l2 : 1 << 20;
    b->mc = row_block(l2 / 4, kc, S, b->mr, m);
    /* B packed a strip at a time instead (the bf16 pairs' panel, passes/cpu_dot.c):
     * A's block took half of L2 when that structure was measured */
    b->mc_strip = row_block(l2 / 2, kc, S, b->mr, m);
    /* NC: the B block (KC x NC) in half of L3, a multiple of NR. */
    int64_t l3 = c && c->l3 > 0 ? c->l3 : 8 << 20;
    int64_t nc = l3 / (2 * kc * S) / b->nr * b->nr;
    if (nc < b->nr)
        nc = b->nr;
    if (n > 0 && nc > n)
        nc = (n + b->nr - 1) / b->nr * b->nr;
    b->nc = (int)clamp64(nc, 1, 1 << 24);
}

/* "32K", "1024K", "32M" as sysfs writes a size; 0 when unreadable. */
static int64_t read_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = {0};
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok)
        return 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (v <= 0)
        return 0;
    if (*end == 'K')
        v <<= 10;
    else if (*end == 'M')
        v <<= 20;
    else if (*end == 'G')
        v <<= 30;
    return v;
}

static bool read_word(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return ok;
}

static bool caches_sysfs(CacheSizes *c)
{
    for (int i = 0; i < 8; i++) {
        char p[128], w[32];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (!read_word(p, w, sizeof w))
            break;
        if (strcmp(w, "Data") && strcmp(w, "Unified"))
            continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!read_word(p, w, sizeof w))
            continue;
        int level = atoi(w);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        int64_t s = read_size(p);
        if (level == 1) {
            c->l1 = s;
            snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/ways_of_associativity", i);
            if (read_word(p, w, sizeof w))
                c->l1_ways = atoi(w);
        } else if (level == 2) {
            c->l2 = s;
        } else if (level == 3) {
            c->l3 = s;
        }
    }
    return c->l1 > 0 && c->l2 > 0;
}

void blocking_caches(const Target *t, CacheSizes *c)
{
    memset(c, 0, sizeof *c);
    if (t && t->host) {
        if (caches_sysfs(c)) {
            c->source = "/sys";
        } else {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
            c->l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
            c->l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
            c->l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
            if (c->l1 > 0 && c->l2 > 0)
                c->source = "sysconf";
        }
        if (c->source) {
            if (c->l3 <= 0)
                c->l3 = c->l2;
            if (c->l1_ways <= 0)
                c->l1_ways = 8;
            return;
        }
    }
    /* Cross targets (and a host that says nothing): typical values.  x86-64: 32 KiB
     * 8-way L1, 1 MiB L2 (Skylake-SP, Zen 4), 32 MiB L3; AArch64: 64 KiB 4-way L1,
     * 1 MiB L2, 32 MiB L3 (Neoverse N1/V1/V2 servers); RISC-V: 32 KiB, 512 KiB,
     * 4 MiB. */
    c->source = "typical values for the architecture";
    TargetArch a = t ? t->arch : ARCH_X86_64;
    if (a == ARCH_AARCH64)
        *c = (CacheSizes){64 << 10, 1 << 20, 32 << 20, 4, c->source};
    else if (a == ARCH_RISCV64)
        *c = (CacheSizes){32 << 10, 512 << 10, 4 << 20, 8, c->source};
    else
        *c = (CacheSizes){32 << 10, 1 << 20, 32 << 20, 8, c->source};
}

void blocking_for_target(const Target *t, int elem_bytes, int64_t m, int64_t n, int64_t k, Blocking *b)
{
    blocking_for_target_mixed(t, elem_bytes, elem_bytes, m, n, k, b);
}

void blocking_for_target_mixed(const Target *t, int acc_bytes, int op_bytes, int64_t m, int64_t n, int64_t k,
                               Blocking *b)
{
    CacheSizes c;
    blocking_caches(t, &c);
    int vb = t && t->cls == TARGET_CPU && t->vector_bytes > 0 ? t->vector_bytes : 32;
    blocking_model_mixed(vb, blocking_vector_regs(t), acc_bytes, op_bytes, &c, m, n, k, b);
}
