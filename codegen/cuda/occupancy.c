/* Occupancy: how many blocks of a launch one SM holds, and the register cap that
 * raises it where registers are the only thing in the way.
 *
 * A block needs its threads, its shared memory (plus 1 KB the hardware reserves per
 * block from sm_80 on) and its registers, allocated per warp in units of 256.  The
 * emitter sizes shared memory and threads; ptxas picks registers with no idea how
 * many blocks should share an SM.  A flash-attention kernel of 256 threads and 97 KB
 * fits two blocks by shared memory, but at 138 registers a thread only one: half
 * the warps that hide its softmax's latency.  Capping registers at 128 costs ptxas
 * little there (8 bytes spilled) and gave 18% on an H100 (docs/cuda.md).  The
 * request is __launch_bounds__'s second operand, the blocks per SM ptxas must fit,
 * so the CUDA and PTX perfc writes carry it.  A cut far below what ptxas wanted
 * spills heavily, so only modest cuts are proposed, and the caller keeps the
 * request only when ptxas then reports next to no spilling. */
#include <inttypes.h>

#include "cg_cuda.h"

enum { RESERVED_SMEM = 1024, REG_UNIT = 256, WARP = 32 };

static int min2(int a, int b) { return a < b ? a : b; }

int cg_cuda_blocks_sm(const CgLaunch *L, const Target *t, int regs)
{
    long long thr = (long long)L->block[0] * L->block[1] * L->block[2];
    if (thr <= 0 || !t->threads_sm)
        return 0;
    int n = min2(t->blocks_sm, (int)(t->threads_sm / thr));
    long long smem = (long long)L->shared_bytes + (L->static_smem > 0 ? L->static_smem : 0) + RESERVED_SMEM;
    n = min2(n, (int)(t->smem_sm / smem));
    if (regs > 0) {   /* an SM's register file is one block's limit (64K) on every sm_80+ target */
        long long warps = (thr + WARP - 1) / WARP;
        long long per_warp = ((long long)regs * WARP + REG_UNIT - 1) / REG_UNIT * REG_UNIT;
        n = min2(n, (int)(t->regs_per_block / (per_warp * warps)));
    }
    return n;
}

/* The most registers per thread at which `blocks` blocks of L fit, a multiple of 8. */
static int regs_for(const CgLaunch *L, const Target *t, int blocks)
{
    long long thr = (long long)L->block[0] * L->block[1] * L->block[2];
    long long warps = (thr + WARP - 1) / WARP;
    long long per_warp = t->regs_per_block / (warps * blocks) / REG_UNIT * REG_UNIT;
    return (int)(per_warp / WARP) / 8 * 8;
}

int cg_cuda_min_blocks(const CgLaunch *L, const Target *t)
{
    if (L->regs <= 0)
        return 0;
    int want = cg_cuda_blocks_sm(L, t, 0), have = cg_cuda_blocks_sm(L, t, L->regs);
    for (int b = want; b > have; b--) {
        int c = regs_for(L, t, b);
        if (c >= 64 && 6 * c >= 5 * L->regs)
            return b;
    }
    return 0;
}

void cg_cuda_bounds(StrBuf *out, int64_t threads, int min_blocks, const char *name)
{
    if (min_blocks > 0)
        sb_printf(out, "__launch_bounds__(%" PRId64 ", %d) %s(", threads, min_blocks, name);
    else
        sb_printf(out, "__launch_bounds__(%" PRId64 ") %s(", threads, name);
}
