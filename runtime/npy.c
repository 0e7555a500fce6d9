/* NumPy .npy arrays and .npz archives, read and written without NumPy or zlib.
 *
 * A .npy file is a magic string, a version, a header length and a Python dict
 * literal ({'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }), then the
 * elements in C order.  A .npz file is a zip archive of .npy files, one per array;
 * numpy.savez stores them uncompressed, which is all perfc reads (an entry
 * compressed by savez_compressed is refused with a message that says so: perfc
 * does not link zlib).  Every length in a file is checked against the file's size
 * before it is used, the header is capped at NPY_MAX_HEADER bytes, and every fault
 * (a wrong magic, dtype or shape, a truncated file, a missing array) is one error
 * that names the file and the array: a malformed file never crashes a run. */
#include "npy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lang/checked.h"
#include "../lang/util.h"
#include "runtime.h"

/* n bytes onto b, which may hold NULs (StrBuf's own functions write text). */
static void sb_append(StrBuf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = 0;
}

/* "a/b.npy" and "b.npy", on the heap. */
static char *joined(const char *dir, const char *name)
{
    size_t n = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 5;
    char *s = xmalloc(n);
    if (dir)
        snprintf(s, n, "%s/%s.npy", dir, name);
    else
        snprintf(s, n, "%s.npy", name);
    return s;
}

/* ---- the .npy header ---- */

typedef struct P {
    const char *s, *end;
} P;

static void skip_ws(P *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static bool eat(P *p, char c)
{
    skip_ws(p);
    if (p->s < p->end && *p->s == c) {
        p->s++;
        return true;
    }
    return false;
}

/* A quoted Python string, at most cap-1 bytes. */
static bool str_lit(P *p, char *out, size_t cap)
{
    skip_ws(p);
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"'))
        return false;
    char q = *p->s++;
    size_t n = 0;
    while (p->s < p->end && *p->s != q) {
        if (n + 1 >= cap)
            return false;
        out[n++] = *p->s++;
    }
    if (p->s >= p->end)
        return false;
    p->s++;
    out[n] = 0;
    return true;
}

bool npy_parse_header(const unsigned char *b, size_t n, NpyHeader *h, char *err, size_t errn)
{
    memset(h, 0, sizeof *h);
    if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        snprintf(err, errn, "not a .npy array (no \\x93NUMPY magic)");
        return false;
    }
    int major = b[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) {
            snprintf(err, errn, "the .npy header is truncated");
            return false;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        snprintf(err, errn, ".npy format version %d is not one perfc reads (1, 2, 3)", major);
        return false;
    }
    if (hlen > NPY_MAX_HEADER) {
        snprintf(err, errn, "the .npy header claims %zu bytes; perfc reads at most %d", hlen, NPY_MAX_HEADER);
        return false;
    }
    if (off + hlen > n) {
        snprintf(err, errn, "the .npy header is truncated (%zu bytes claimed, %zu present)", hlen, n - off);
        return false;
    }
    P p = {(const char *)b + off, (const char *)b + off + hlen};
    bool got_descr = false, got_shape = false, got_order = false;
    if (!eat(&p, '{'))
        goto bad;
    while (!eat(&p, '}')) {
        char key[32];
        if (!str_lit(&p, key, sizeof key) || !eat(&p, ':'))
            goto bad;
        if (!strcmp(key, "descr")) {
            if (!str_lit(&p, h->descr, sizeof h->descr)) {
                snprintf(err, errn, "the .npy dtype is not a simple type (a structured array?)");
                return false;
            }
            got_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            skip_ws(&p);
            if (p.end - p.s >= 4 && !memcmp(p.s, "True", 4)) {
                h->fortran = true;
                p.s += 4;
            } else if (p.end - p.s >= 5 && !memcmp(p.s, "False", 5)) {
                p.s += 5;
            } else {
                goto bad;
            }
            got_order = true;
        } else if (!strcmp(key, "shape")) {
            if (!eat(&p, '('))
                goto bad;
            while (!eat(&p, ')')) {
                skip_ws(&p);
                int64_t v = 0;
                bool digits = false;
                while (p.s < p.end && *p.s >= '0' && *p.s <= '9') {
                    if (!ck_mul(v, 10, &v) || !ck_add(v, *p.s - '0', &v)) {
                        snprintf(err, errn, "a dimension of the .npy shape overflows 64 bits");
                        return false;
                    }
                    p.s++;
                    digits = true;
                }
                if (p.s < p.end && *p.s == 'L') /* Python 2 longs */
                    p.s++;
                if (!digits)
                    goto bad;
                if (h->rank == (int)(sizeof h->shape / sizeof h->shape[0])) {
                    snprintf(err, errn, "the .npy array has more than 32 dimensions");
                    return false;
                }
                h->shape[h->rank++] = v;
                if (!eat(&p, ',')) {
                    if (!eat(&p, ')'))
                        goto bad;
                    break;
                }
            }
            got_shape = true;
        } else {
            goto bad;
        }
        if (!eat(&p, ',')) {
            if (!eat(&p, '}'))
                goto bad;
            break;
        }
    }
    if (!got_descr || !got_shape || !got_order)
        goto bad;
    h->data_off = off + hlen;
    return true;
bad:
    snprintf(err, errn, "the .npy header is not the dict NumPy writes ('descr', 'fortran_order', 'shape')");
    return false;
}

/* ---- dtypes ---- */

/* NumPy's spelling of a dtype's storage on a little-endian machine. */
static const char *descr_of(DType t)
{
    switch (t) {
    case DT_F64: return "<f8";
    case DT_F32: return "<f4";
    case DT_F16: return "<f2";
    case DT_BF16: return "<f4"; /* NumPy has no bfloat16: float32 values bf16 holds */
    case DT_I32: return "<i4";
    case DT_I64: return "<i8";
    case DT_BOOL: return "|b1";
    default: return "?";
    }
}

static const char *numpy_name(const char *descr)
{
    static const struct {
        const char *d, *n;
    } t[] = {{"<f8", "float64"}, {"<f4", "float32"}, {"<f2", "float16"}, {"<i4", "int32"}, {"<i8", "int64"},
             {"|b1", "bool"},    {"<i2", "int16"},   {"|i1", "int8"},    {"|u1", "uint8"}, {"<u4", "uint32"},
             {"<u8", "uint64"},  {"<u2", "uint16"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(descr, t[i].d))
            return t[i].n;
    return descr;
}

/* ---- finding the array: an .npz entry or a file in a folder ---- */

typedef struct Src {
    FILE *f;
    uint64_t off, size; /* the .npy bytes inside f */
} Src;

static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static bool read_at(FILE *f, uint64_t off, void *buf, size_t n)
{
    if (off > (uint64_t)INT64_MAX || fseeko(f, (off_t)off, SEEK_SET) != 0)
        return false;
    return fread(buf, 1, n, f) == n;
}

/* Finds NAME.npy in the zip archive f of size fsize. */
static bool zip_find(FILE *f, uint64_t fsize, const char *path, const char *want, Src *s, Diags *d)
{
    /* the end-of-central-directory record: in the last 22 + 65535 bytes */
    size_t tail = fsize < 22 + 65535 ? (size_t)fsize : 22 + 65535;
    unsigned char *t = xmalloc(tail ? tail : 1);
    bool ok = false;
    if (tail < 22 || !read_at(f, fsize - tail, t, tail)) {
        diag_plain(d, DIAG_ERROR, "%s: not a .npz (zip) archive: it is too short", path);
        goto out;
    }
    long eocd = -1;
    for (long i = (long)tail - 22; i >= 0; i--)
        if (le32(t + i) == 0x06054b50) {
            eocd = i;
            break;
        }
    if (eocd < 0) {
        diag_plain(d, DIAG_ERROR, "%s: not a .npz (zip) archive: no end-of-archive record", path);
        goto out;
    }
    uint64_t nent = le16(t + eocd + 10), cdsize = le32(t + eocd + 12), cdoff = le32(t + eocd + 16);
    if (cdoff == 0xffffffffu || nent == 0xffff) {
        /* zip64: the locator sits just before the record */
        unsigned char loc[20], z[56];
        uint64_t at = fsize - tail + (uint64_t)eocd;
        if (at < 20 || !read_at(f, at - 20, loc, 20) || le32(loc) != 0x07064b50 || !read_at(f, le64(loc + 8), z, 56) ||
            le32(z) != 0x06064b50) {
            diag_plain(d, DIAG_ERROR, "%s: a zip64 archive whose directory cannot be found", path);
            goto out;
        }
        nent = le64(z + 32);
        cdsize = le64(z + 40);
        cdoff = le64(z + 48);
    }
    if (cdoff > fsize || cdsize > fsize - cdoff || cdsize > ((uint64_t)1 << 30)) {
        diag_plain(d, DIAG_ERROR, "%s: the archive's directory lies outside the file (truncated?)", path);
        goto out;
    }
    unsigned char *cd = xmalloc(cdsize ? (size_t)cdsize : 1);
    if (!read_at(f, cdoff, cd, (size_t)cdsize)) {
        free(cd);
        diag_plain(d, DIAG_ERROR, "%s: cannot read the archive's directory", path);
        goto out;
    }
    size_t wl = strlen(want);
    bool malformed = false;
    StrBuf names = {0};
    uint64_t pos = 0;
    for (uint64_t e = 0; e < nent; e++) {
        if (pos + 46 > cdsize || le32(cd + pos) != 0x02014b50) {
            malformed = true;
            break;
        }
        const unsigned char *c = cd + pos;
        uint32_t method = le16(c + 10);
        uint64_t csize = le32(c + 20), usize = le32(c + 24), lho = le32(c + 42);
        size_t nl = le16(c + 28), xl = le16(c + 30), kl = le16(c + 32);
        if (pos + 46 + nl + xl + kl > cdsize) {
            malformed = true;
            break;
        }
        const char *nm = (const char *)c + 46;
        if (nl > 4 && !memcmp(nm + nl - 4, ".npy", 4)) {
            if (names.len)
                sb_puts(&names, ", ");
            sb_printf(&names, "%.*s", (int)(nl - 4 < 64 ? nl - 4 : 64), nm);
        }
        if (nl == wl + 4 && !memcmp(nm, want, wl) && !memcmp(nm + wl, ".npy", 4)) {
            /* zip64 sizes and offset, in that order, for the fields that overflowed */
            for (size_t x = 0; x + 4 <= xl;) {
                const unsigned char *xf = c + 46 + nl + x;
                size_t id = le16(xf), len = le16(xf + 2), q = 4;
                if (x + 4 + len > xl)
                    break;
                if (id == 1) {
                    if (usize == 0xffffffffu && q + 8 <= 4 + len) { usize = le64(xf + q); q += 8; }
                    if (csize == 0xffffffffu && q + 8 <= 4 + len) { csize = le64(xf + q); q += 8; }
                    if (lho == 0xffffffffu && q + 8 <= 4 + len) { lho = le64(xf + q); q += 8; }
                }
                x += 4 + len;
            }
            unsigned char lh[30];
            if (method != 0) {
                diag_plain(d, DIAG_ERROR, "%s: array %s is compressed (zip method %u, as numpy.savez_compressed "
                           "writes); perfc reads uncompressed archives: write it with numpy.savez", path, want,
                           method);
            } else if (csize != usize || lho > fsize || !read_at(f, lho, lh, 30) || le32(lh) != 0x04034b50) {
                diag_plain(d, DIAG_ERROR, "%s: the archive entry of %s is malformed or truncated", path, want);
            } else {
                uint64_t data = lho + 30 + le16(lh + 26) + le16(lh + 28);
                if (data > fsize || csize > fsize - data) {
                    diag_plain(d, DIAG_ERROR, "%s: array %s is truncated: its entry runs past the end of the file",
                               path, want);
                } else {
                    s->f = f;
                    s->off = data;
                    s->size = csize;
                    ok = true;
                }
            }
            free(cd);
            sb_free(&names);
            goto out;
        }
        pos += 46 + nl + xl + kl;
    }
    if (malformed)
        diag_plain(d, DIAG_ERROR, "%s: the archive's directory is malformed (truncated?)", path);
    else
        diag_plain(d, DIAG_ERROR, "%s holds no array %s (it holds: %s)", path, want, names.len ? names.s : "none");
    free(cd);
    sb_free(&names);
out:
    free(t);
    return ok;
}

/* ---- loading ---- */

bool npy_load(const char *path, const char *name, DType t, int rank, const int64_t *shape, double *out,
              int64_t count, Diags *d)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        diag_plain(d, DIAG_ERROR, "--inputs %s: %s", path, strerror(errno));
        return false;
    }
    bool dir = S_ISDIR(st.st_mode);
    char *file = dir ? joined(path, name) : xstrdup(path);
    const char *shown = file;
    FILE *f = fopen(file, "rb");
    bool ok = false;
    unsigned char *hb = NULL;
    Src s = {0};
    if (!f) {
        diag_plain(d, DIAG_ERROR, dir ? "--inputs: the folder %s has no %s.npy for input %s (%s)" : "--inputs %s: %s",
                   dir ? path : file, dir ? name : strerror(errno), name, strerror(errno));
        goto done;
    }
    struct stat fs;
    if (fstat(fileno(f), &fs) != 0 || !S_ISREG(fs.st_mode)) {
        diag_plain(d, DIAG_ERROR, "--inputs: %s is not a regular file", file);
        goto done;
    }
    if (dir) {
        s = (Src){f, 0, (uint64_t)fs.st_size};
    } else {
        int before = d->nerrors;
        if (!zip_find(f, (uint64_t)fs.st_size, file, name, &s, d)) {
            if (d->nerrors == before)
                diag_plain(d, DIAG_ERROR, "%s: cannot read array %s", file, name);
            goto done;
        }
    }
    size_t hn = s.size < 12 + NPY_MAX_HEADER ? (size_t)s.size : 12 + NPY_MAX_HEADER;
    hb = xmalloc(hn ? hn : 1);
    char err[200];
    NpyHeader h;
    if (!read_at(f, s.off, hb, hn)) {
        diag_plain(d, DIAG_ERROR, "%s: cannot read array %s", shown, name);
        goto done;
    }
    if (!npy_parse_header(hb, hn, &h, err, sizeof err)) {
        diag_plain(d, DIAG_ERROR, "%s: array %s: %s", shown, name, err);
        goto done;
    }
    const char *want = descr_of(t);
    /* '=' and '<' are the same on the little-endian machines perfc runs on */
    if (h.descr[0] == '=')
        h.descr[0] = '<';
    if (strcmp(h.descr, want) != 0) {
        diag_plain(d, DIAG_ERROR, "%s: array %s is %s but input %s is %s: convert it with .astype(numpy.%s)%s", shown,
                   name, numpy_name(h.descr), name, dtype_name(t), numpy_name(want),
                   t == DT_BF16 ? " (bf16 inputs are given as float32 values that bf16 holds exactly)" : "");
        goto done;
    }
    if (h.fortran && h.rank > 1) {
        diag_plain(d, DIAG_ERROR, "%s: array %s is in Fortran order; perfc reads C order: pass "
                   "numpy.ascontiguousarray(...)", shown, name);
        goto done;
    }
    bool same = h.rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = h.shape[i] == shape[i];
    if (!same) {
        StrBuf a = {0}, b = {0};
        for (int i = 0; i < h.rank; i++)
            sb_printf(&a, i + 1 == h.rank && h.rank == 1 ? "%lld," : i + 1 < h.rank ? "%lld, " : "%lld",
                      (long long)h.shape[i]);
        for (int i = 0; i < rank; i++)
            sb_printf(&b, i + 1 == rank && rank == 1 ? "%lld," : i + 1 < rank ? "%lld, " : "%lld",
                      (long long)shape[i]);
        diag_plain(d, DIAG_ERROR, "%s: array %s has shape (%s) but input %s is (%s) at these sizes", shown, name,
                   a.s ? a.s : "", name, b.s ? b.s : "");
        sb_free(&a);
        sb_free(&b);
        goto done;
    }
    int item = t == DT_BF16 ? 4 : dtype_bytes(t);
    int64_t need = 0;
    if (!ck_mul(count, item, &need) || s.size < h.data_off || s.size - h.data_off < (uint64_t)need) {
        diag_plain(d, DIAG_ERROR, "%s: array %s is truncated: %lld elements need %lld bytes, the file holds %lld",
                   shown, name, (long long)count, (long long)need,
                   (long long)(s.size > h.data_off ? s.size - h.data_off : 0));
        goto done;
    }
    /* in chunks: the native bytes are never held whole beside the doubles */
    enum { CH = 1 << 16 };
    unsigned char *buf = xmalloc((size_t)CH * (size_t)item);
    ok = true;
    for (int64_t i = 0; i < count && ok; i += CH) {
        int64_t m = count - i < CH ? count - i : CH;
        if (!read_at(f, s.off + h.data_off + (uint64_t)i * (uint64_t)item, buf, (size_t)m * (size_t)item)) {
            diag_plain(d, DIAG_ERROR, "%s: cannot read the data of array %s", shown, name);
            ok = false;
            break;
        }
        rt_from_native(t == DT_BF16 ? DT_F32 : t, buf, out + i, m);
        for (int64_t j = 0; j < m && t == DT_BF16; j++)
            if (dtype_round(out[i + j], DT_BF16) != out[i + j] && !isnan(out[i + j])) {
                diag_plain(d, DIAG_ERROR, "%s: array %s, element %lld (%.9g), is not a bf16 value: round the "
                           "array to bfloat16 first", shown, name, (long long)(i + j), out[i + j]);
                ok = false;
                break;
            }
    }
    free(buf);
done:
    free(hb);
    if (f)
        fclose(f);
    free(file);
    return ok;
}

/* ---- writing ---- */

static uint32_t crc32_update(uint32_t c, const unsigned char *p, size_t n)
{
    static uint32_t table[256];
    static bool ready;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t x = i;
            for (int k = 0; k < 8; k++)
                x = x & 1 ? 0xedb88320u ^ (x >> 1) : x >> 1;
            table[i] = x;
        }
        ready = true;
    }
    c = ~c;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return ~c;
}

static void put16(StrBuf *b, uint32_t v)
{
    unsigned char c[2] = {(unsigned char)(v & 0xff), (unsigned char)(v >> 8 & 0xff)};
    sb_append(b, c, 2);
}

static void put32(StrBuf *b, uint32_t v)
{
    put16(b, v & 0xffff);
    put16(b, v >> 16);
}

/* One array as .npy bytes: a version 1.0 header padded to 64 bytes, then the data. */
static bool npy_bytes(const NpyOut *a, StrBuf *o)
{
    StrBuf h = {0};
    sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of(a->t));
    int64_t n = 1;
    for (int i = 0; i < a->rank; i++) {
        sb_printf(&h, i ? ", %lld" : "%lld", (long long)a->shape[i]);
        if (!ck_mul(n, a->shape[i], &n)) {
            sb_free(&h);
            return false;
        }
    }
    sb_puts(&h, a->rank == 1 ? ",), }" : "), }");
    while ((10 + h.len + 1) % 64)
        sb_putc(&h, ' ');
    sb_putc(&h, '\n');
    sb_append(o, "\x93NUMPY\x01\x00", 8);
    put16(o, (uint32_t)h.len);
    sb_puts(o, h.s);
    sb_free(&h);
    DType st = a->t == DT_BF16 ? DT_F32 : a->t;
    int item = dtype_bytes(st);
    enum { CH = 1 << 16 };
    unsigned char *buf = xmalloc((size_t)CH * (size_t)item);
    for (int64_t i = 0; i < n; i += CH) {
        int64_t m = n - i < CH ? n - i : CH;
        rt_to_native(st, a->values + i, buf, m);
        sb_append(o, (const char *)buf, (size_t)m * (size_t)item);
    }
    free(buf);
    return true;
}

bool npz_write(const char *path, const NpyOut *arrays, int n, Diags *d)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        diag_plain(d, DIAG_ERROR, "cannot write %s: %s", path, strerror(errno));
        return false;
    }
    StrBuf cd = {0};
    uint64_t off = 0;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        StrBuf data = {0}, lh = {0};
        char *fname = joined(NULL, arrays[i].name);
        size_t nl = strlen(fname);
        if (!npy_bytes(&arrays[i], &data) || data.len >= 0xffffffffu || off + data.len + 30 + nl >= 0xffffffffu) {
            diag_plain(d, DIAG_ERROR, "cannot write %s: array %s makes the archive larger than 4 GiB, which perfc "
                       "does not write", path, arrays[i].name);
            ok = false;
        } else {
            uint32_t crc = crc32_update(0, (const unsigned char *)data.s, data.len);
            /* local header: version 2.0, no flags, stored, no time stamp */
            put32(&lh, 0x04034b50); put16(&lh, 20); put16(&lh, 0); put16(&lh, 0); put16(&lh, 0); put16(&lh, 0x21);
            put32(&lh, crc); put32(&lh, (uint32_t)data.len); put32(&lh, (uint32_t)data.len);
            put16(&lh, (uint32_t)nl); put16(&lh, 0);
            sb_append(&lh, fname, nl);
            put32(&cd, 0x02014b50); put16(&cd, 20); put16(&cd, 20); put16(&cd, 0); put16(&cd, 0); put16(&cd, 0);
            put16(&cd, 0x21); put32(&cd, crc); put32(&cd, (uint32_t)data.len); put32(&cd, (uint32_t)data.len);
            put16(&cd, (uint32_t)nl); put16(&cd, 0); put16(&cd, 0); put16(&cd, 0); put16(&cd, 0);
            put32(&cd, 0); put32(&cd, (uint32_t)off);
            sb_append(&cd, fname, nl);
            ok = fwrite(lh.s, 1, lh.len, f) == lh.len && fwrite(data.s, 1, data.len, f) == data.len;
            off += lh.len + data.len;
            if (!ok)
                diag_plain(d, DIAG_ERROR, "cannot write %s: %s", path, strerror(errno));
        }
        free(fname);
        sb_free(&data);
        sb_free(&lh);
    }
    if (ok) {
        StrBuf e = {0};
        put32(&e, 0x06054b50); put16(&e, 0); put16(&e, 0); put16(&e, (uint32_t)n); put16(&e, (uint32_t)n);
        put32(&e, (uint32_t)cd.len); put32(&e, (uint32_t)off); put16(&e, 0);
        ok = (cd.len == 0 || fwrite(cd.s, 1, cd.len, f) == cd.len) && fwrite(e.s, 1, e.len, f) == e.len;
        sb_free(&e);
        if (!ok)
            diag_plain(d, DIAG_ERROR, "cannot write %s: %s", path, strerror(errno));
    }
    sb_free(&cd);
    if (fclose(f) != 0 && ok) {
        diag_plain(d, DIAG_ERROR, "cannot write %s: %s", path, strerror(errno));
        ok = false;
    }
    if (!ok)
        remove(path);
    return ok;
}

/* ---- a kernel's buffers ---- */

static int shape_of(const Kernel *k, const Buffer *b, int64_t *shape)
{
    for (int r = 0; r < b->rank; r++)
        if (!ir_eval_size(k, b->shape[r], &shape[r]))
            return -1;
    return b->rank;
}

bool rt_npy_load_input(const Kernel *k, const Buffer *b, const char *path, double *out, int64_t n, Diags *d)
{
    int64_t shape[16];
    int rank = shape_of(k, b, shape);
    if (rank < 0) {
        diag_plain(d, DIAG_ERROR, "the shape of input %s is not bound", b->name);
        return false;
    }
    if (!npy_load(path, b->name, b->dtype, rank, shape, out, n, d))
        return false;
    char err[256];
    if (!ir_domain_holds(k, b, out, n, err, sizeof err)) {
        diag_plain(d, DIAG_ERROR, "%s: %s", path, err);
        return false;
    }
    return true;
}

bool rt_npz_save(const Kernel *k, const char *path, int kind, double *const *values, Diags *d)
{
    NpyOut *a = xcalloc((size_t)k->nbufs + 1, sizeof *a);
    int64_t(*shapes)[16] = xcalloc((size_t)k->nbufs + 1, sizeof *shapes);
    int n = 0;
    bool ok = true;
    for (int i = 0; i < k->nbufs && ok; i++) {
        const Buffer *b = k->bufs[i];
        if ((int)b->kind != kind || !values[i])
            continue;
        int rank = shape_of(k, b, shapes[n]);
        if (rank < 0) {
            diag_plain(d, DIAG_ERROR, "the shape of %s is not bound", b->name);
            ok = false;
            break;
        }
        a[n] = (NpyOut){.name = b->name, .t = b->dtype, .rank = rank, .shape = shapes[n], .values = values[i]};
        n++;
    }
    ok = ok && npz_write(path, a, n, d);
    free(a);
    free(shapes);
    return ok;
}
