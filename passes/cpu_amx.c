/* amx-tiles: on a CPU target with AMX (Target.amx_bf16), a bf16 register-tile
 * update that dot-pairs left in pairs of k, R rows by W columns (16 or 32 each),
 * is marked for the back end to run as a grid of 16 x 16 tile products: per step
 * of 32 k, tileloadd of R/16 tiles of A and W/16 of the pairs panel and one
 * tdpbf16ps per tile of C, the C tiles loaded before the loop and stored after it
 * (codegen/llvm/emit_amx.c).  ir/cpu_amx.c states the shape.
 *
 * A hint, not a change of meaning: the loop nest stays as it is for every reader
 * but the LLVM back end.  The tile product adds each element's 2E products in
 * another order than the nest (pairs of k summed first, as vdpbf16ps does, then
 * the pairs of a step), with round-to-nearest-even and denormals flushed: the
 * reassociation a vector sum has, within the validation's tolerance for bf16
 * operands.  Without the feature nothing changes. */
#include "cpu.h"

static WalkAct mark(void *vctx, Node *n)
{
    const Kernel *k = vctx;
    CpuAmx t;
    if (n->kind == N_LOOP && n->u.loop.hint == HINT_NONE && cpu_amx_shape(k, n, &t)) {
        n->u.loop.hint = HINT_TILES;
        return WALK_SKIP;
    }
    return WALK_GO;
}

bool cpu_amx_tiles(Kernel *k, const Target *target, Diags *d)
{
    (void)d;
    if (!target || !target->amx_bf16)
        return true;
    ir_walk_list(&k->body, &(IrVisitor){.pre = mark, .ctx = k});
    return true;
}
