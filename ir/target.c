/* The table of targets perfc accepts and the one parse of a -target name
 * (ir/target.h).
 *
 * The CPU choices are deliberate: x86_64 is the baseline x86-64 (SSE2, no FMA, no
 * F16C), x86_64-avx2 is Haswell, x86_64-avx512 is Skylake-AVX512; aarch64 is ARMv8-A
 * with NEON; aarch64-sve adds SVE with vscale_range(2,16), i.e. the code needs SVE
 * vectors of at least 256 bits (Graviton3, A64FX) and then uses the z registers for
 * fixed-width vector loops; x86_64-avx512bf16 is Cooper Lake, AVX-512 with the BF16
 * dot product (vdpbf16ps), which AMD's Zen 4 has too; x86_64-amx is Sapphire Rapids, which
 * adds AMX tiles and their bf16 product (tdpbf16ps); riscv64 is RV64GC with the lp64d
 * ABI and riscv64-v adds the vector extension (VLEN >= 128).
 *
 * GPU limits are the CUDA programming guide's per-compute-capability values: shared
 * memory is the opt-in maximum a block can get after raising
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (the runtime does that), so that a
 * kernel that could never launch is refused at compile time, on a machine with no
 * GPU.  mma.sync and cp.async exist from sm_80 on; TMA from sm_90; wgmma only with
 * the architecture-specific sm_90a.  The SM count is the architecture's usual
 * data-centre part's, a hint for sizing grids, never a limit. */
#include "target.h"

#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define CPU(n, ar, tr, c, f, ab, need, fm, half, vmin, vmax, vw, vb) \
    {.name = n, .cls = TARGET_CPU, .arch = ar, .triple = tr, .cpu = c, .features = f, .abi = ab, \
     .needs = need, .fma = fm, .native_half = half, .vscale_min = vmin, .vscale_max = vmax, \
     .vector_width = vw, .vector_bytes = vb}
#define GPU(n, s, a, smem, smsm, thsm, blsm, nsm) \
    {.name = n, .cls = TARGET_GPU, .sm = s, .arch_specific = a, .max_threads_block = 1024, \
     .max_smem_block = smem, .regs_per_block = 65536, .max_regs_thread = 255, .smem_sm = smsm, \
     .threads_sm = thsm, .blocks_sm = blsm, .mma_sync = true, .cp_async = true, .wgmma = a && s >= 90, \
     .tma = s >= 90, .sms = nsm}

static const char *const X86 = "x86_64-unknown-linux-gnu", *const ARM = "aarch64-unknown-linux-gnu",
                         *const RV = "riscv64-unknown-linux-gnu";

static Target targets[] = {
    /* host: filled in by host_init (architecture, vector bytes); LLVM fills in the
     * triple, CPU and features (codegen/llvm/target.c) */
    {.name = "host", .cls = TARGET_CPU, .host = true, .triple = "", .cpu = "", .features = "", .abi = ""},
    CPU("x86_64", ARCH_X86_64, X86, "x86-64", "", "", NULL, false, false, 0, 0, 0, 16),
    CPU("x86_64-avx2", ARCH_X86_64, X86, "haswell", "", "", "avx2", true, true, 0, 0, 0, 32),
    /* Skylake prefers 256-bit vectors for auto-vectorisation; perfc's explicit
     * 16-lane vectors are meant for zmm, so the width is pinned to 512. */
    CPU("x86_64-avx512", ARCH_X86_64, X86, "skylake-avx512", "", "", "avx512f", true, true, 0, 0, 512, 64),
    {.name = "x86_64-avx512bf16", .cls = TARGET_CPU, .arch = ARCH_X86_64, .triple = X86, .cpu = "cooperlake",
     .features = "", .abi = "", .needs = "avx512_bf16", .fma = true, .native_half = true, .vector_width = 512,
     .vector_bytes = 64, .dot_bf16 = true},
    /* Sapphire Rapids and later: AMX tiles (tdpbf16ps) besides AVX-512 BF16 */
    {.name = "x86_64-amx", .cls = TARGET_CPU, .arch = ARCH_X86_64, .triple = X86, .cpu = "sapphirerapids",
     .features = "", .abi = "", .needs = "amx_bf16", .fma = true, .native_half = true, .vector_width = 512,
     .vector_bytes = 64, .dot_bf16 = true, .amx_bf16 = true},
    CPU("aarch64", ARCH_AARCH64, ARM, "generic", "+neon,+fp-armv8", "", NULL, true, true, 0, 0, 0, 16),
    CPU("aarch64-sve", ARCH_AARCH64, ARM, "generic", "+neon,+fp-armv8,+sve", "", "sve", true, true, 2, 16, 0, 16),
    CPU("riscv64", ARCH_RISCV64, RV, "generic-rv64", "+m,+a,+f,+d,+c", "lp64d", NULL, true, false, 0, 0, 0, 16),
    /* V implies Zvl128b: vscale_range(2,1024) is what clang puts on such code. */
    CPU("riscv64-v", ARCH_RISCV64, RV, "generic-rv64", "+m,+a,+f,+d,+c,+v", "lp64d", NULL, true, false, 2, 1024, 0,
        16),
    /* SM counts: A100, A40 / A10 class, L40 / RTX 4090 class, H100 SXM */
    GPU("sm_80", 80, false, 163 * 1024, 164 * 1024, 2048, 32, 108),
    GPU("sm_86", 86, false, 99 * 1024, 100 * 1024, 1536, 16, 84),
    GPU("sm_89", 89, false, 99 * 1024, 100 * 1024, 1536, 24, 128),
    GPU("sm_90", 90, false, 227 * 1024, 228 * 1024, 2048, 32, 132),
    GPU("sm_90a", 90, true, 227 * 1024, 228 * 1024, 2048, 32, 132),
    {.name = "interp", .cls = TARGET_INTERP},
};
enum { NTARGETS = sizeof targets / sizeof targets[0] };

static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* Whether the running CPU has AMX tiles with the bf16 product and the OS saves the
 * tile state (XCR0 bits 17 and 18): CPUID leaf 7 EDX bits 24 (AMX-TILE) and 22
 * (AMX-BF16).  A process must still ask Linux for the tiles before it uses them
 * (perfc_amx_permit, runtime/pool.c). */
static bool host_amx(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)))
        return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE: xgetbv works */
        return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17);
#else
    return false;
#endif
}

/* What is known of the running CPU without LLVM: the architecture perfc was built
 * for, and on x86-64 the widest vector registers it has. */
static void host_init(void)
{
    Target *h = &targets[0];
    h->vector_bytes = 16;
#if defined(__x86_64__)
    h->arch = ARCH_X86_64;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        h->vector_bytes = 64;
    else if (__builtin_cpu_supports("avx"))
        h->vector_bytes = 32;
    h->fma = __builtin_cpu_supports("fma");
    h->dot_bf16 = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vl");
    h->amx_bf16 = host_amx();
#elif defined(__aarch64__)
    h->arch = ARCH_AARCH64;
    h->fma = h->native_half = true;
#elif defined(__riscv) && __riscv_xlen == 64
    h->arch = ARCH_RISCV64;
    h->abi = "lp64d";
#endif
}

const Target *target_at(int i)
{
    pthread_once(&host_once, host_init);
    return i >= 0 && i < NTARGETS ? &targets[i] : NULL;
}

const Target *target_find(const char *name)
{
    if (!name)
        name = "host";
    for (int i = 0; i < NTARGETS; i++)
        if (strcmp(targets[i].name, name) == 0)
            return target_at(i);
    return NULL;
}

const char *target_names(TargetClass cls)
{
    return cls == TARGET_GPU ? "sm_80 sm_86 sm_89 sm_90 sm_90a"
                             : "host, x86_64, x86_64-avx2, x86_64-avx512, x86_64-avx512bf16, aarch64, aarch64-sve, riscv64, riscv64-v";
}

bool target_name_gpu(const char *name)
{
    return name && strncmp(name, "sm_", 3) == 0;
}

const Target *target_parse(const char *name, Diags *d)
{
    const Target *t = target_find(name);
    if (t)
        return t;
    if (target_name_gpu(name))
        diag_plain(d, DIAG_ERROR, "unknown CUDA target '%s' (supported: %s)", name, target_names(TARGET_GPU));
    else
        diag_plain(d, DIAG_ERROR, "unknown CPU target '%s' (known: %s)", name, target_names(TARGET_CPU));
    return NULL;
}
