# Sourced by the GPU scripts: the GEMM schedules of stdlib/gemm.pdl by label, as
# perfc arguments.  stdlib has one gemm kernel whose input dtype T is a parameter
# and whose GPU schedules are named variants (docs/language.md), all written for
# 4096^3; later -D values on the same command line override these sizes.
#   tiled, tiled32          f32 SIMT (K steps of 16 and 32)
#   tc-f16, tc-bf16         mma.sync tensor cores
#   wg-f16, wg-bf16         Hopper wgmma (-target sm_90a)
gemm_args() {
  case $1 in
    tiled|tiled32) echo "-k gemm --schedule $1 -D M=4096 -D N=4096 -D K=4096" ;;
    tc-f16|tc-bf16|wg-f16|wg-bf16) echo "-k gemm -D T=${1#*-} --schedule ${1%-*} -D M=4096 -D N=4096 -D K=4096" ;;
    *) echo "gemm_args: no GEMM variant labelled '$1'" >&2; return 1 ;;
  esac
}
