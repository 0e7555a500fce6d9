/* What a report says about the machine: the CPU model, core count, the ISA
 * extensions that matter to vector code, the clock where readable, the last-level
 * cache size (which the host device also uses to flush caches), and the versions of
 * the libraries involved (OpenBLAS at run time, LLVM, perfc).
 *
 * Everything comes from /proc/cpuinfo and /sys on Linux; a field that cannot be
 * read is left empty or zero rather than guessed, so a report never claims more
 * than it knows. */
#include "runtime.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef PERFC_HAVE_LLVM
#include <llvm-c/Core.h>
#endif

int rt_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The value of the first "key : value" line of /proc/cpuinfo whose key is one of
 * keys (tried in order), trimmed. */
static bool cpuinfo_value(const char *const *keys, int nkeys, char *out, size_t n)
{
    for (int ki = 0; ki < nkeys; ki++) {
        FILE *f = fopen("/proc/cpuinfo", "r");
        if (!f)
            return false;
        char line[8192];
        size_t kl = strlen(keys[ki]);
        bool found = false;
        while (!found && fgets(line, sizeof line, f)) {
            if (strncmp(line, keys[ki], kl) != 0)
                continue;
            char *p = line + kl;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ':')
                continue;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t len = strcspn(p, "\n");
            while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
                len--;
            if (len >= n)
                len = n - 1;
            memcpy(out, p, len);
            out[len] = 0;
            found = true;
        }
        fclose(f);
        if (found)
            return true;
    }
    return false;
}

static bool flags_line(char *out, size_t n)
{
    static const char *const keys[] = {"flags", "Features", "isa"};
    return cpuinfo_value(keys, 3, out, n);
}

static bool word_in(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += wl) {
        bool start = p == list || p[-1] == ' ';
        bool end = p[wl] == 0 || p[wl] == ' ';
        if (start && end)
            return true;
    }
    return false;
}

bool rt_cpu_has(const char *feature)
{
    char flags[8192];
    return flags_line(flags, sizeof flags) && word_in(flags, feature);
}

static int64_t read_size_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = {0};
    int64_t v = 0;
    if (fgets(buf, sizeof buf, f)) {
        char *end;
        v = strtoll(buf, &end, 10);
        if (*end == 'K')
            v *= 1024;
        else if (*end == 'M')
            v *= 1024 * 1024;
    }
    fclose(f);
    return v;
}

int64_t rt_llc_bytes(void)
{
    /* The highest cache level of cpu0 (sysconf's figure on some VMs sums the L3
     * slices of every socket, which would overstate what one core can evict). */
    int64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int64_t level = read_size_file(path);
        if (!level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        int64_t size = read_size_file(path);
        if (level > best_level || (level == best_level && size > best)) {
            best_level = (int)level;
            best = size;
        }
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (!best) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        best = v > 0 ? v : 0;
    }
#endif
    return best;
}

void rt_machine_fact(RtMachine *m, const char *key, const char *fmt, ...)
{
    if (m->nfacts >= (int)(sizeof m->facts / sizeof m->facts[0]))
        return;
    RtFact *f = &m->facts[m->nfacts++];
    snprintf(f->key, sizeof f->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
}

void rt_machine_host(RtMachine *m)
{
    memset(m, 0, sizeof *m);
    static const char *const model_keys[] = {"model name", "Model", "Hardware", "uarch", "cpu model"};
    if (!cpuinfo_value(model_keys, 5, m->cpu, sizeof m->cpu)) {
        struct utsname u;
        snprintf(m->cpu, sizeof m->cpu, "%s CPU", uname(&u) == 0 ? u.machine : "unknown");
    }
    m->cores = rt_cpu_count();

    /* The extensions a reader needs to judge vector code, in a fixed order. */
    static const char *const isa[] = {
        "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
        "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "asimdhp", "sve", "sve2", "bf16",
        "i8mm",
    };
    char flags[8192];
    if (flags_line(flags, sizeof flags)) {
        StrBuf sb = {0};
        for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++)
            if (word_in(flags, isa[i]))
                sb_printf(&sb, "%s%s", sb.len ? " " : "", isa[i]);
        if (strncmp(flags, "rv", 2) == 0) /* RISC-V: the isa string itself */
            sb_printf(&sb, "%s%s", sb.len ? " " : "", flags);
        snprintf(m->isa, sizeof m->isa, "%s", sb.s ? sb.s : "");
        sb_free(&sb);
    }

    char mhz[64];
    static const char *const mhz_keys[] = {"cpu MHz"};
    if (cpuinfo_value(mhz_keys, 1, mhz, sizeof mhz))
        m->cpu_mhz = atof(mhz);
    if (m->cpu_mhz <= 0) {
        int64_t khz = read_size_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
        m->cpu_mhz = (double)khz / 1000.0;
    }
    m->llc_bytes = rt_llc_bytes();
    rt_blas_describe(m->blas, sizeof m->blas);
#ifdef PERFC_HAVE_LLVM
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(m->llvm, sizeof m->llvm, "%u.%u.%u", major, minor, patch);
#else
    snprintf(m->llvm, sizeof m->llvm, "none");
#endif
    snprintf(m->device, sizeof m->device, "%s (%d cores%s%s)", m->cpu, m->cores, m->isa[0] ? ", " : "",
             m->isa);
}
