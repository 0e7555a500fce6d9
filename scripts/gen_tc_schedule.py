#!/usr/bin/env python3
"""Writes a tensor-core GEMM schedule (mma.sync m16n8k16, cp.async pipeline,
coalesced staging copies through collapse) for a block tile BM x BN x BK, warp
tile WM x WN and S pipeline stages: the text stdlib/gemm.pdl's gemm variant tc
were generated from.  Usage: gen_tc_schedule.py KERNEL BM BN BK WM WN S [unroll_ks]"""
import sys


def sched(kern, BM, BN, BK, WM, WN, S, uks=False):
    WZ, WY = BM // WM, BN // WN                  # warps: thread.z x thread.y
    nw = WZ * WY
    assert BM % WM == 0 and BN % WN == 0 and WM % 16 == 0 and WN % 8 == 0 and BK % 16 == 0
    L = []
    a = L.append
    a(f"tile(i, j, {BM}, {BN}, io, jo, ii, ji)")
    a("cache(C, jo, name=acc)")
    a("distribute(ji)")
    a("distribute(ii)")
    a(f"split(acc_c0, {WM}, cz, cr)")
    a(f"split(acc_c1, {WN}, cy, cc)")
    a("reorder(cz, cy, cr, cc)")
    a(f"split(ii, {WM}, iz, ir)")
    a(f"split(ji, {WN}, iy, ic)")
    a("reorder(iz, iy, ir, ic)")
    a(f"split(ii1, {WM}, wz, wm)")
    a("split(wm, 16, mi, mm)")
    a(f"split(ji1, {WN}, wy, wn)")
    a("split(wn, 8, nj, nn)")
    a(f"split(k, {BK}, ko, kt)")
    a("split(kt, 16, ks, kk)")
    a("reorder(ko, wz, wy, ks, mi, nj, mm, nn)")
    a("cache(A, ko, mem=shared, name=As)")
    a("cache(B, ko, mem=shared, name=Bs)")
    a("padding(As, 8)")
    a("padding(Bs, 8)")
    # A tile BM x BK: a warp's 32 lanes take RA rows x (BK/8) 16-byte chunks.
    ca = BK // 8
    RA = 32 // ca
    a(f"split(As_c1, 8, ac, av)")
    a(f"split(As_c0, {RA}, ar, ax)")
    a("collapse(ax, ac, af)")
    # Row groups: warp (az, ay) takes AU consecutive groups of RA rows.  The thread
    # loops are the most significant terms of the row index, which is what lets
    # the dependence test prove the warps' rows disjoint.
    gra = BM // RA
    assert gra % nw == 0
    a(f"split(ar, {gra // WZ}, az, ara)")
    a(f"split(ara, {gra // nw}, ay, au)")
    a("reorder(az, ay, af, au, av)")
    # B tile BK x BN: RB rows x (BN/8) chunks per warp instruction.
    cb = BN // 8
    a("split(Bs_c1, 8, bc, bv)")
    if cb >= 32:
        assert cb % 32 == 0
        a("split(bc, 32, bcu, bf)")  # bcu: unrolled column groups
        assert BK % nw == 0
        a(f"split(Bs_c0, {BK // WZ}, bz, bra)")
        a(f"split(bra, {BK // nw}, by, bu)")
        a("reorder(bz, by, bf, bu, bcu, bv)")
        bun = ["bu", "bcu"]
    else:
        RB = 32 // cb
        a(f"split(Bs_c0, {RB}, br, bx)")
        a("collapse(bx, bc, bf)")
        grb = BK // RB
        assert grb % nw == 0
        a(f"split(br, {grb // WZ}, bz, bra)")
        a(f"split(bra, {grb // nw}, by, bu)")
        a("reorder(bz, by, bf, bu, bv)")
        bun = ["bu"]
    a(f"split(acc_c01, {WM}, oz, or)")
    a(f"split(acc_c11, {WN}, oy, oc)")
    a("reorder(oz, oy, or, oc)")
    a("mma(mm, nn, kk)")
    for l, d in [("io", "block.y"), ("jo", "block.x"), ("cz", "thread.z"), ("cy", "thread.y"),
                 ("iz", "thread.z"), ("iy", "thread.y"), ("wz", "thread.z"), ("wy", "thread.y"),
                 ("az", "thread.z"), ("ay", "thread.y"), ("af", "thread.x"),
                 ("bz", "thread.z"), ("by", "thread.y"), ("bf", "thread.x"),
                 ("oz", "thread.z"), ("oy", "thread.y")]:
        a(f"bind({l}, {d})")
    for u in ["mi", "nj", "au"] + bun:
        a(f"unroll({u})")
    if uks:
        a("unroll(ks)")
    a("vectorize(av)")
    a("vectorize(bv)")
    a(f"pipeline(ko, {S})")
    return L


if __name__ == "__main__":
    kern = sys.argv[1]
    BM, BN, BK, WM, WN, S = map(int, sys.argv[2:8])
    uks = len(sys.argv) > 8 and sys.argv[8] == "1"
    print(f"schedule {kern} for gpu {{")
    for l in sched(kern, BM, BN, BK, WM, WN, S, uks):
        print("  " + l)
    print("}")
