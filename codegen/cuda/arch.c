/* The CUDA targets perfc accepts and the per-block limits of each, so that a kernel
 * that could never launch is refused at compile time with the numbers, on a machine
 * with no GPU.  Values are the CUDA programming guide's per-compute-capability
 * limits: shared memory is the opt-in maximum a block can get after raising
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (the runtime does that). */
#include <string.h>

#include "cg_cuda.h"

static const CgArch archs[] = {
    {"sm_80", 8, 0, 1024, 163 * 1024, 65536, 255},
    {"sm_86", 8, 6, 1024, 99 * 1024, 65536, 255},
    {"sm_89", 8, 9, 1024, 99 * 1024, 65536, 255},
    {"sm_90", 9, 0, 1024, 227 * 1024, 65536, 255},
    {"sm_90a", 9, 0, 1024, 227 * 1024, 65536, 255},
};

const CgArch *cg_cuda_arch(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(archs[i].name, name) == 0)
            return &archs[i];
    return NULL;
}

bool cg_cuda_is_target(const char *name)
{
    return name && strncmp(name, "sm_", 3) == 0;
}

const char *cg_cuda_targets(void)
{
    return "sm_80 sm_86 sm_89 sm_90 sm_90a";
}
