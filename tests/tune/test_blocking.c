/* The blocking model of tune/blocking.c against values worked out by hand from its
 * formulas (docs/autotune.md, "The blocking model"), for several vector widths,
 * register files, element sizes and caches, and the cache sizes it assumes for
 * cross targets.  Pure arithmetic: no machine is measured. */
#include <stdio.h>
#include <string.h>

#include "ir/target.h"
#include "tune/blocking.h"

static int failures;

static void expect(const char *what, int vb, int regs, int S, CacheSizes c, long long m, long long n, long long k,
                   int mr, int nr, int kc, int mc, int mcs, int nc)
{
    Blocking b;
    blocking_model(vb, regs, S, &c, m, n, k, &b);
    if (b.mr != mr || b.nr != nr || b.kc != kc || b.mc != mc || b.mc_strip != mcs || b.nc != nc) {
        fprintf(stderr, "%s: got MR %d NR %d KC %d MC %d (strips %d) NC %d, expected %d %d %d %d (%d) %d\n", what,
                b.mr, b.nr, b.kc, b.mc, b.mc_strip, b.nc, mr, nr, kc, mc, mcs, nc);
        failures++;
    }
}

int main(void)
{
    CacheSizes x86 = {32 << 10, 1 << 20, 32 << 20, 8, "test"};
    CacheSizes arm = {64 << 10, 1 << 20, 32 << 20, 4, "test"};
    CacheSizes small = {16 << 10, 256 << 10, 0, 4, "test"};
    /* AVX-512 f32: 16 lanes, 32 registers: 10 to 16 accumulators; 4 x 4 regs
     * (8 loads per 16 FMAs) beats 8 x 2 (10 per 16).  KC = 2*32K/(64*4) = 256;
     * MC = 1M/(4*256*4) = 256 (with B packed a strip at a time, 1M/(2*256*4) =
     * 512); NC = 32M/(2*256*4) = 16384. */
    expect("avx512 f32", 64, 32, 4, x86, 0, 0, 0, 4, 64, 256, 256, 512, 16384);
    /* AVX2 f32: 8 lanes, 16 registers: half the file (8) is below the 10
     * accumulators wanted, so the tile may take 12 (16 less B, a broadcast, a
     * spare): 6 x 2 (8 loads per 12 FMAs) beats 5 x 2 (7 per 10); 3 x 4 needs 18
     * registers.  A k step reads one 64-byte line of the panel, so it takes half
     * an L1: KC = 16K/64 = 256; MC = 1M/(4*256*4) = 256 -> 252 (a multiple of
     * 6; strips: 512 -> 510); NC = 32M/2048 = 16384. */
    expect("avx2 f32", 32, 16, 4, x86, 0, 0, 0, 6, 16, 256, 252, 510, 16384);
    /* NEON f32 with a 64 KiB L1: 4 lanes, 32 registers: 4 x 4 regs, NR 16, one
     * line a k step: KC = 32K/64 = 512; MC = 128 (strips 256); NC = 8192. */
    expect("neon f32", 16, 32, 4, arm, 0, 0, 0, 4, 16, 512, 128, 256, 8192);
    /* AVX-512 f64: 8 lanes: NR 32; KC = 2*32K/(32*8) = 256; MC = 1M/(4*256*8) =
     * 128 (strips 256); NC = 32M/4096 = 8192. */
    expect("avx512 f64", 64, 32, 8, x86, 0, 0, 0, 4, 32, 256, 128, 256, 8192);
    /* A small problem clamps: 20 columns take one register (16), 3 rows MR 3,
     * K = 100 one panel; MC the 3 rows; NC the columns rounded up to NR (32). */
    expect("avx512 small", 64, 32, 4, x86, 3, 20, 100, 3, 16, 100, 3, 3, 32);
    /* Small caches, no L3 (the model assumes 8 MiB): AVX2 KC = 8K/64 = 128, MC =
     * 256K/(4*128*4) = 128 -> 126 (strips 256 -> 252), NC = 8M/1024 = 8192. */
    expect("avx2 small caches", 32, 16, 4, small, 0, 0, 0, 6, 16, 128, 126, 252, 8192);
    /* Rows not a multiple of MR: MC stays a multiple of MR within the rows
     * (127 rows: 128).  KC = K = 64 when K is short. */
    expect("avx512 127x1024x64", 64, 32, 4, x86, 127, 1024, 64, 4, 64, 64, 128, 128, 1024);
    /* K no longer than twice the model's KC (and 512) is one panel: K = 511 gives
     * KC 511, MC = 1M/(4*511*4) = 128 (a multiple of 4; strips 256), NC = 32M/4088 = 8208 ->
     * the columns, 769 rounded up to 64: 832.  K = 1024 keeps KC 256. */
    expect("avx512 1037x769x511", 64, 32, 4, x86, 1037, 769, 511, 4, 64, 511, 128, 256, 832);
    expect("avx512 K 1024", 64, 32, 4, x86, 0, 0, 1024, 4, 64, 256, 256, 512, 16384);

    /* The registers by target, and the caches assumed for cross targets. */
    const Target *t512 = target_find("x86_64-avx512"), *t2 = target_find("x86_64-avx2"), *ta = target_find("aarch64");
    if (!t512 || blocking_vector_regs(t512) != 32 || !t2 || blocking_vector_regs(t2) != 16 || !ta ||
        blocking_vector_regs(ta) != 32) {
        fprintf(stderr, "vector registers by target wrong\n");
        failures++;
    }
    CacheSizes c;
    blocking_caches(ta, &c);
    if (c.l1 != 64 << 10 || c.l2 != 1 << 20 || strstr(c.source, "typical") == NULL) {
        fprintf(stderr, "aarch64 typical caches: L1 %lld L2 %lld (%s)\n", (long long)c.l1, (long long)c.l2, c.source);
        failures++;
    }
    blocking_caches(target_find("host"), &c);
    if (c.l1 <= 0 || c.l2 <= 0 || c.l3 <= 0 || !c.source) {
        fprintf(stderr, "host caches unreadable and no fallback\n");
        failures++;
    }
    if (failures)
        return 1;
    printf("blocking model: 9 cases and the cache fallbacks as computed by hand\n");
    return 0;
}
