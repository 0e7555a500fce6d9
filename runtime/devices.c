/* Which device runs code for a -target: the host CPU for host and the x86-64 /
 * AArch64 / RISC-V variants this machine can execute, one NVIDIA GPU for sm_*.
 *
 * A cross target (aarch64 code on an x86-64 machine) cannot be run here; saying so
 * is a usage error (status 1), with the way out (-emit asm/obj), rather than a
 * crash on the first illegal instruction. */
#include "runtime.h"

#include <string.h>
#include <sys/utsname.h>

static const char *arch_name(TargetArch a)
{
    return a == ARCH_X86_64 ? "x86_64" : a == ARCH_AARCH64 ? "aarch64" : a == ARCH_RISCV64 ? "riscv64" : NULL;
}

/* The host architecture as the target names spell it. */
static const char *host_arch(void)
{
    const char *a = arch_name(target_find("host")->arch);
    if (a)
        return a;
    static struct utsname u;
    return uname(&u) == 0 ? u.machine : "unknown";
}

RtDevice *rt_device_open(const char *target, int *rc, Diags *d)
{
    const Target *t = target_find(target);
    if (target_is_gpu(t)) {
        RtDevice *dev = rt_cuda_open(t->name, d);
        if (!dev)
            *rc = 3;
        return dev;
    }
    if (!target_is_cpu(t)) {
        diag_plain(d, DIAG_ERROR, "unknown target '%s'", target);
        *rc = 1;
        return NULL;
    }
    if (!t->host) {
        const char *arch = host_arch();
        if (t->arch != target_find("host")->arch) {
            diag_plain(d, DIAG_ERROR,
                       "-target %s code cannot run on this %s machine: use -emit asm or -emit obj to "
                       "cross-compile, or -target host to run",
                       target, arch);
            *rc = 1;
            return NULL;
        }
        const char *need = t->needs;
        if (need && !rt_cpu_has(need)) {
            diag_plain(d, DIAG_ERROR,
                       "-target %s needs %s, which this CPU lacks: use -emit asm or -emit obj, or -target host",
                       target, need);
            *rc = 1;
            return NULL;
        }
    }
    RtDevice *dev = rt_host_open(d);
    if (!dev)
        *rc = 3;
    return dev;
}
