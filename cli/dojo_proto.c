/* `perfc dojo`: the game's JSON-lines protocol on a stream, the Unix-socket server,
 * --replay and the command line (docs/dojo.md is the reference).
 *
 * One request per line, one reply per request, in order.  Nothing a client sends can
 * stop the server other than `close` or the end of its stream: a line that is not
 * JSON, not an object, names an unknown verb or field, or is longer than
 * DOJO_MAX_LINE gets an error reply and the next line is read (an overlong line is
 * skipped up to its newline, never buffered whole).  A reply that cannot be written
 * (the client went away) ends the session quietly; a measurement that finished after
 * the client left is not written to the database (dojo_measure asks still_there). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dojo.h"

typedef struct Conn {
    int in, out;
    bool socket;
    bool gone;        /* a write failed */
    bool closed;      /* `close` received */
} Conn;

static bool write_all(Conn *c, const char *p, size_t n)
{
    while (n && !c->gone) {
        ssize_t w = write(c->out, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->gone = true;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    return !c->gone;
}

/* True while the reader of our replies is still there: a pipe whose reader closed
 * polls POLLERR, a socket whose peer closed polls POLLHUP. */
static bool still_there(void *ctx)
{
    Conn *c = ctx;
    if (c->gone)
        return false;
    struct pollfd p = {.fd = c->out, .events = POLLOUT};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
        c->gone = true;
    return !c->gone;
}

/* ---- replies ---- */

typedef struct Reply {
    StrBuf b;
    bool first;
} Reply;

static void reply_start(Reply *r, const Jv *id)
{
    memset(r, 0, sizeof *r);
    r->first = true;
    sb_putc(&r->b, '{');
    jw_key(&r->b, "id", &r->first);
    if (id && id->kind == JV_STR)
        sb_json_str(&r->b, id->str);
    else if (id && id->kind == JV_NUM && id->is_int)
        sb_printf(&r->b, "%lld", (long long)id->i);
    else if (id && id->kind == JV_NUM)
        sb_printf(&r->b, "%.17g", id->num);
    else
        sb_puts(&r->b, "null");
}

static void reply_error(Reply *r, const char *code, const char *msg)
{
    jw_key(&r->b, "ok", &r->first);
    sb_puts(&r->b, "false");
    jw_key(&r->b, "error", &r->first);
    sb_puts(&r->b, "{\"code\":");
    sb_json_str(&r->b, code);
    sb_puts(&r->b, ",\"message\":");
    sb_json_str(&r->b, msg);
    sb_putc(&r->b, '}');
}

static void reply_ok(Reply *r)
{
    jw_key(&r->b, "ok", &r->first);
    sb_puts(&r->b, "true");
}

static bool reply_send(Conn *c, Reply *r)
{
    sb_puts(&r->b, "}\n");
    bool ok = write_all(c, r->b.s, r->b.len);
    sb_free(&r->b);
    return ok;
}

/* ---- requests ---- */

typedef struct Verb {
    const char *name;
    const char *fields; /* allowed fields besides cmd and id, space-separated */
} Verb;

static const Verb verbs[] = {
    {"reset", "file source kernel target sizes seed schedule threads auto_measure compare"},
    {"state", "ir"},
    {"actions", ""},
    {"step", "action"},
    {"undo", ""},
    {"measure", ""},
    {"predict", ""},
    {"hints", "hint choices"},
    {"schedule", ""},
    {"close", ""},
};

static bool field_allowed(const Verb *v, const char *key)
{
    if (!strcmp(key, "cmd") || !strcmp(key, "id"))
        return true;
    size_t n = strlen(key);
    for (const char *p = v->fields; (p = strstr(p, key)); p += n)
        if ((p == v->fields || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return true;
    return false;
}

static bool parse_reset(const Jv *q, DojoResetArgs *a, StrBuf *err)
{
    memset(a, 0, sizeof *a);
    bool bad = false;
    a->file = jv_str(q, "file", &bad);
    a->source = jv_str(q, "source", &bad);
    a->kernel = jv_str(q, "kernel", &bad);
    a->target = jv_str(q, "target", &bad);
    a->compare = jv_str(q, "compare", &bad);
    if (bad) {
        sb_puts(err, "file, source, kernel, target and compare are strings");
        return false;
    }
    if (!!a->file == !!a->source) {
        sb_puts(err, "reset needs exactly one of \"file\" (a path) and \"source\" (PDL text)");
        return false;
    }
    if (a->compare && strcmp(a->compare, "openblas") && strcmp(a->compare, "cublas") && strcmp(a->compare, "none")) {
        sb_puts(err, "compare is \"openblas\", \"cublas\" or \"none\"");
        return false;
    }
    const Jv *sz = jv_get(q, "sizes");
    if (sz && sz->kind != JV_NULL) {
        if (sz->kind != JV_OBJ) {
            sb_puts(err, "sizes is an object of integers, e.g. {\"M\": 512}");
            return false;
        }
        if (sz->n > MAX_DEFINES) {
            sb_printf(err, "at most %d sizes", MAX_DEFINES);
            return false;
        }
        for (int i = 0; i < sz->n; i++) {
            const Jv *v = sz->items[i];
            if (v->kind != JV_NUM || !v->is_int || v->i < 1 || v->i > ((int64_t)1 << 40)) {
                sb_printf(err, "size %s must be an integer from 1 to 2^40", sz->keys[i]);
                return false;
            }
            a->names[i] = sz->keys[i];
            a->values[i] = v->i;
        }
        a->nsizes = sz->n;
    }
    const Jv *v = jv_get(q, "seed");
    if (v && v->kind != JV_NULL) {
        if (v->kind != JV_NUM || !v->is_int || v->i < 0) {
            sb_puts(err, "seed is a non-negative integer");
            return false;
        }
        a->seed = (uint64_t)v->i;
        a->seed_given = true;
    }
    v = jv_get(q, "threads");
    if (v && v->kind != JV_NULL) {
        if (v->kind != JV_NUM || !v->is_int || v->i < 0 || v->i > 1024) {
            sb_puts(err, "threads is an integer from 0 (every core) to 1024");
            return false;
        }
        a->threads = (int)v->i;
    }
    const char *flags[] = {"schedule", "auto_measure"};
    bool *dst[] = {&a->schedule, &a->auto_measure};
    for (int i = 0; i < 2; i++) {
        v = jv_get(q, flags[i]);
        if (v && v->kind != JV_NULL) {
            if (v->kind != JV_BOOL) {
                sb_printf(err, "%s is true or false", flags[i]);
                return false;
            }
            *dst[i] = v->b;
        }
    }
    return true;
}

static const char *rc_code(int rc) { return rc == 3 ? "device" : "measure"; }

/* One request.  Returns false when the connection is to end (close, or the client
 * is gone). */
static bool handle(Conn *c, DojoSession *s, const char *line, size_t len)
{
    char perr[160];
    Reply r;
    Jv *q = jv_parse(line, len, perr, sizeof perr);
    if (!q) {
        reply_start(&r, NULL);
        StrBuf m = {0};
        sb_printf(&m, "malformed JSON: %s", perr);
        reply_error(&r, "bad_json", m.s);
        sb_free(&m);
        return reply_send(c, &r);
    }
    const Jv *id = jv_get(q, "id");
    reply_start(&r, id && (id->kind == JV_STR || id->kind == JV_NUM) ? id : NULL);
    StrBuf err = {0};
    bool keep = true;
    bool bad = false;
    const char *cmd = q->kind == JV_OBJ ? jv_str(q, "cmd", &bad) : NULL;
    const Verb *verb = NULL;
    for (size_t i = 0; cmd && i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(verbs[i].name, cmd))
            verb = &verbs[i];
    if (q->kind != JV_OBJ) {
        reply_error(&r, "bad_request", "a request is a JSON object with a \"cmd\"");
        goto send;
    }
    if (!cmd) {
        reply_error(&r, "bad_request", bad ? "\"cmd\" is a string" : "a request needs a \"cmd\"");
        goto send;
    }
    if (!verb) {
        sb_puts(&err, "unknown cmd (reset, state, actions, step, undo, measure, predict, hints, schedule, close)");
        reply_error(&r, "unknown_cmd", err.s);
        goto send;
    }
    for (int i = 0; i < q->n; i++)
        if (!field_allowed(verb, q->keys[i])) {
            sb_printf(&err, "%s takes no field \"%s\"%s%s", verb->name, q->keys[i], *verb->fields ? " (it takes: " : "",
                      *verb->fields ? verb->fields : "");
            if (*verb->fields)
                sb_putc(&err, ')');
            reply_error(&r, "bad_request", err.s);
            goto send;
        }
    if (!strcmp(cmd, "close")) {
        dojo_record_end(s);
        reply_ok(&r);
        c->closed = true;
        keep = false;
        goto send;
    }
    if (!strcmp(cmd, "reset")) {
        DojoResetArgs a;
        if (!parse_reset(q, &a, &err)) {
            reply_error(&r, "bad_request", err.s);
            goto send;
        }
        if (!dojo_reset(s, &a, &err)) {
            reply_error(&r, "compile", err.s);
            goto send;
        }
        reply_ok(&r);
        jw_key(&r.b, "state", &r.first);
        dojo_state_json(s, &r.b, true);
        goto send;
    }
    if (!dojo_active(s)) {
        reply_error(&r, "no_game", "no game: send reset first");
        goto send;
    }
    if (!strcmp(cmd, "state")) {
        const Jv *w = jv_get(q, "ir");
        if (w && w->kind != JV_BOOL) {
            reply_error(&r, "bad_request", "ir is true or false");
            goto send;
        }
        reply_ok(&r);
        jw_key(&r.b, "state", &r.first);
        dojo_state_json(s, &r.b, !w || w->b);
    } else if (!strcmp(cmd, "actions")) {
        reply_ok(&r);
        jw_key(&r.b, "fingerprint", &r.first);
        sb_json_str(&r.b, dojo_fingerprint(s));
        jw_key(&r.b, "actions", &r.first);
        dojo_actions_json(s, &r.b);
    } else if (!strcmp(cmd, "step")) {
        const Jv *a = jv_get(q, "action");
        int idn = -1;
        const char *text = NULL;
        if (a && a->kind == JV_NUM && a->is_int && a->i >= 0 && a->i < (1 << 30))
            idn = (int)a->i;
        else if (a && a->kind == JV_STR)
            text = a->str;
        else {
            reply_error(&r, "bad_request", "step needs \"action\": a move id from actions, or a move's PDL text");
            goto send;
        }
        bool legal;
        if (!dojo_step(s, idn, text, &legal, &err)) {
            reply_error(&r, "bad_move", err.s);
            goto send;
        }
        reply_ok(&r);
        jw_key(&r.b, "legal", &r.first);
        sb_puts(&r.b, legal ? "true" : "false");
        jw_key(&r.b, "reason", &r.first);
        sb_json_str(&r.b, legal ? NULL : err.s);
        DojoMeasure m;
        int rc = -1;
        StrBuf merr = {0};
        if (legal && dojo_auto_measure(s))
            rc = dojo_measure(s, &m, still_there, c, &merr);
        jw_key(&r.b, "reward", &r.first);
        jw_num(&r.b, rc == 0 && m.valid ? m.speedup : legal && rc < 0 ? 0 : NAN);
        jw_key(&r.b, "measurement", &r.first);
        if (rc == 0 || rc == 2)
            dojo_measure_json(&m, &r.b);
        else
            sb_puts(&r.b, "null");
        if (rc > 0 && rc != 2) {
            jw_key(&r.b, "measure_error", &r.first);
            sb_json_str(&r.b, merr.s);
        }
        sb_free(&merr);
        jw_key(&r.b, "state", &r.first);
        dojo_state_json(s, &r.b, true);
    } else if (!strcmp(cmd, "undo")) {
        int d = dojo_depth(s);
        char *last = d ? xstrdup(dojo_move(s, d - 1)) : NULL;
        if (!dojo_undo(s)) {
            reply_error(&r, "no_move", "nothing to undo");
        } else {
            reply_ok(&r);
            jw_key(&r.b, "undone", &r.first);
            sb_json_str(&r.b, last);
            jw_key(&r.b, "state", &r.first);
            dojo_state_json(s, &r.b, true);
        }
        free(last);
    } else if (!strcmp(cmd, "measure")) {
        DojoMeasure m;
        int rc = dojo_measure(s, &m, still_there, c, &err);
        if (rc != 0 && rc != 2) {
            reply_error(&r, rc_code(rc), err.s);
            goto send;
        }
        reply_ok(&r);
        jw_key(&r.b, "reward", &r.first);
        jw_num(&r.b, m.valid ? m.speedup : NAN);
        jw_key(&r.b, "measurement", &r.first);
        dojo_measure_json(&m, &r.b);
    } else if (!strcmp(cmd, "predict")) {
        DojoPredict p;
        if (!dojo_predict(s, &p, &err)) {
            reply_error(&r, "measure", err.s);
            goto send;
        }
        reply_ok(&r);
        jw_key(&r.b, "fingerprint", &r.first);
        sb_json_str(&r.b, dojo_fingerprint(s));
        jw_key(&r.b, "features", &r.first);
        sb_putc(&r.b, '{');
        bool ff = true;
        for (int i = 0; i < p.nfeat; i++) {
            jw_key(&r.b, dojo_feature_name(i), &ff);
            jw_num(&r.b, p.f[i]);
        }
        sb_putc(&r.b, '}');
        jw_key(&r.b, "work", &r.first);
        jw_num(&r.b, p.work);
        jw_key(&r.b, "rows", &r.first);
        sb_printf(&r.b, "%d", p.rows);
        jw_key(&r.b, "predicted_ms", &r.first);
        jw_num(&r.b, p.fitted ? p.predicted_ms : NAN);
        jw_key(&r.b, "cv_r2", &r.first);
        jw_num(&r.b, p.fitted ? p.cv_r2 : NAN);
    } else if (!strcmp(cmd, "hints")) {
        const DojoHint *h;
        int dropped, n = dojo_hints(s, &h, &dropped);
        const Jv *hi = jv_get(q, "hint"), *ch = jv_get(q, "choices");
        DojoHint one = {0};
        int first = 0;
        if (hi || ch) {
            /* one hint at other values of its parameters */
            if (!hi || hi->kind != JV_NUM || !hi->is_int || hi->i < 0 || hi->i >= n) {
                sb_printf(&err, "\"hint\" is the index of a hint (0 to %d)", n - 1);
                reply_error(&r, "bad_request", err.s);
                goto send;
            }
            const DojoHint *base = &h[hi->i];
            int choice[DOJO_HINT_PARAMS];
            for (int p = 0; p < base->nparams; p++)
                choice[p] = base->params[p].chosen;
            if (ch && ch->kind != JV_OBJ) {
                reply_error(&r, "bad_request", "\"choices\" is an object: parameter name -> index of its value");
                goto send;
            }
            for (int k = 0; ch && k < ch->n; k++) {
                int p = 0;
                while (p < base->nparams && strcmp(base->params[p].name, ch->keys[k]))
                    p++;
                const Jv *v = ch->items[k];
                if (p == base->nparams || v->kind != JV_NUM || !v->is_int || v->i < 0 ||
                    v->i >= base->params[p].nvalues) {
                    if (p == base->nparams)
                        sb_printf(&err, "hint %d has no parameter '%s'", (int)hi->i, ch->keys[k]);
                    else
                        sb_printf(&err, "choice of %s: an index from 0 to %d", ch->keys[k],
                                  base->params[p].nvalues - 1);
                    reply_error(&r, "bad_request", err.s);
                    goto send;
                }
                choice[p] = (int)v->i;
            }
            if (!dojo_hint_at(s, (int)hi->i, choice, &one, &err)) {
                reply_error(&r, "bad_move", err.s);
                goto send;
            }
            h = &one;
            first = (int)hi->i;
            n = 1;
        }
        reply_ok(&r);
        jw_key(&r.b, "hints", &r.first);
        sb_putc(&r.b, '[');
        for (int i = 0; i < n; i++) {
            sb_puts(&r.b, i ? ",{" : "{");
            bool ff = true;
            jw_key(&r.b, "hint", &ff);
            sb_printf(&r.b, "%d", first + i);
            jw_key(&r.b, "origin", &ff);
            sb_json_str(&r.b, h[i].origin);
            jw_key(&r.b, "params", &ff);
            sb_putc(&r.b, '[');
            for (int p = 0; p < h[i].nparams; p++) {
                const DojoHintParam *hp = &h[i].params[p];
                sb_puts(&r.b, p ? ",{" : "{");
                bool pf = true;
                jw_key(&r.b, "name", &pf);
                sb_json_str(&r.b, hp->name);
                jw_key(&r.b, "values", &pf);
                sb_putc(&r.b, '[');
                for (int v = 0; v < hp->nvalues; v++) {
                    if (v)
                        sb_putc(&r.b, ',');
                    sb_json_str(&r.b, hp->values[v]);
                }
                sb_putc(&r.b, ']');
                jw_key(&r.b, "chosen", &pf);
                sb_printf(&r.b, "%d}", hp->chosen);
            }
            sb_putc(&r.b, ']');
            jw_key(&r.b, "moves", &ff);
            sb_putc(&r.b, '[');
            for (int j = 0; j < h[i].n; j++) {
                if (j)
                    sb_putc(&r.b, ',');
                sb_json_str(&r.b, h[i].moves[j]);
            }
            sb_puts(&r.b, "]}");
        }
        sb_putc(&r.b, ']');
        jw_key(&r.b, "dropped", &r.first);
        sb_printf(&r.b, "%d", dropped);
        dojo_hints_free_moves(&one);
    } else if (!strcmp(cmd, "schedule")) {
        reply_ok(&r);
        StrBuf t = {0};
        dojo_schedule_text(s, &t);
        jw_key(&r.b, "schedule", &r.first);
        sb_json_str(&r.b, t.s);
        sb_free(&t);
        jw_key(&r.b, "moves", &r.first);
        sb_putc(&r.b, '[');
        for (int i = 0; i < dojo_depth(s); i++) {
            if (i)
                sb_putc(&r.b, ',');
            sb_json_str(&r.b, dojo_move(s, i));
        }
        sb_putc(&r.b, ']');
    }
send:
    sb_free(&err);
    jv_free(q);
    if (!reply_send(c, &r))
        return false;
    return keep;
}

/* Reads requests from c->in until close or end of stream. */
static int serve(Conn *c, DojoSession *s)
{
    enum { CHUNK = 65536 };
    char *buf = xmalloc(CHUNK);
    StrBuf line = {0};
    bool skipping = false; /* inside a line over the limit: drop bytes up to its newline */
    bool more = true;
    while (more && !c->gone && !c->closed) {
        ssize_t n = read(c->in, buf, CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* end of stream: a last line without newline still counts */
            if (line.len && !skipping)
                handle(c, s, line.s, line.len);
            break;
        }
        for (ssize_t i = 0; i < n && more;) {
            char *nl = memchr(buf + i, '\n', (size_t)(n - i));
            size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)(n - i);
            if (!skipping) {
                if (line.len + take > DOJO_MAX_LINE) {
                    skipping = true;
                    line.len = 0;
                } else {
                    for (size_t j = 0; j < take; j++)
                        sb_putc(&line, buf[i + (ssize_t)j]);
                }
            }
            i += (ssize_t)take;
            if (!nl)
                break;
            i++; /* the newline */
            if (skipping) {
                Reply r;
                reply_start(&r, NULL);
                StrBuf m = {0};
                sb_printf(&m, "request line longer than %d bytes: skipped up to its newline", DOJO_MAX_LINE);
                reply_error(&r, "too_large", m.s);
                sb_free(&m);
                more = reply_send(c, &r);
                skipping = false;
            } else {
                size_t len = line.len;
                if (len && line.s[len - 1] == '\r')
                    len--;
                bool blank = true;
                for (size_t j = 0; j < len && blank; j++)
                    blank = line.s[j] == ' ' || line.s[j] == '\t';
                if (!blank)
                    more = handle(c, s, line.s, len);
            }
            line.len = 0;
            if (line.s)
                line.s[0] = 0;
        }
    }
    free(buf);
    sb_free(&line);
    return 0;
}

/* ---- the socket server: one process per client ---- */

static volatile sig_atomic_t stop_server;
static void on_stop(int sig) { (void)sig, stop_server = 1; }

static int serve_socket(const char *path, const char *db, bool no_db, FILE *rec)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        fprintf(stderr, "perfc: error: dojo: socket path longer than %zu bytes: %s\n", sizeof addr.sun_path - 1,
                path);
        return 1;
    }
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fprintf(stderr, "perfc: error: dojo: %s exists and is not a socket (not replaced)\n", path);
            return 1;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM, 0);
        bool live = probe >= 0 && connect(probe, (struct sockaddr *)&addr, sizeof addr) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            fprintf(stderr, "perfc: error: dojo: %s is in use by another server\n", path);
            return 1;
        }
        unlink(path); /* a socket left by a server that died */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 16)) {
        fprintf(stderr, "perfc: error: dojo: cannot listen on %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_stop; /* no SA_RESTART: accept returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction ch = {0};
    ch.sa_handler = SIG_DFL;
    ch.sa_flags = SA_NOCLDWAIT; /* finished players are reaped by the kernel */
    sigaction(SIGCHLD, &ch, NULL);
    fprintf(stderr, "perfc dojo: listening on %s\n", path);
    while (!stop_server) {
        int conn = accept(fd, NULL, NULL);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            fprintf(stderr, "perfc: error: dojo: accept: %s\n", strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid == 0) { /* the player: nothing heavy has been set up in the parent */
            close(fd);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            Conn c = {.in = conn, .out = conn, .socket = true};
            DojoSession *s = dojo_new(db, no_db);
            dojo_record_to(s, rec);
            serve(&c, s);
            dojo_free(s);
            close(conn);
            if (rec)
                fflush(rec);
            _exit(0);
        }
        if (pid < 0)
            fprintf(stderr, "perfc: warning: dojo: fork: %s\n", strerror(errno));
        close(conn);
    }
    close(fd);
    unlink(path);
    return 0;
}

/* ---- --replay ---- */

typedef struct Replay {
    int64_t session, episode;
    DojoSession *s;
    int moves;
} Replay;

static int64_t jint(const Jv *o, const char *k, int64_t dflt)
{
    const Jv *v = jv_get(o, k);
    return v && v->kind == JV_NUM && v->is_int ? v->i : dflt;
}

static int replay(const char *path, const char *db)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "perfc: error: dojo --replay: cannot read '%s': %s\n", path, strerror(errno));
        return 1;
    }
    PtrVec live = {0};
    int rc = 0, lineno = 0, episodes = 0;
    char *p = text;
    while (rc == 0 && p < text + len) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        lineno++;
        char err[160];
        Jv *q = n ? jv_parse(p, n, err, sizeof err) : NULL;
        p += n + 1;
        if (!n)
            continue;
        if (!q) {
            fprintf(stderr, "perfc: error: %s:%d: not a record: %s\n", path, lineno, err);
            rc = 1;
            break;
        }
        bool bad = false;
        const char *type = jv_str(q, "type", &bad);
        int64_t sess = jint(q, "session", 0), ep = jint(q, "episode", 0);
        Replay *r = NULL;
        for (int i = 0; i < live.n; i++) {
            Replay *x = live.v[i];
            if (x->session == sess && x->episode == ep)
                r = x;
        }
        StrBuf e = {0};
        if (!type) {
            fprintf(stderr, "perfc: error: %s:%d: a record needs a \"type\"\n", path, lineno);
            rc = 1;
        } else if (!strcmp(type, "reset")) {
            DojoResetArgs a = {0};
            a.file = jv_str(q, "file", &bad);
            a.source = jv_str(q, "source", &bad);
            a.kernel = jv_str(q, "kernel", &bad);
            a.target = jv_str(q, "target", &bad);
            a.schedule = jv_get(q, "schedule") && jv_get(q, "schedule")->b;
            a.threads = (int)jint(q, "threads", 0);
            a.seed = (uint64_t)jint(q, "seed", 1);
            a.seed_given = true;
            const Jv *sz = jv_get(q, "sizes");
            for (int i = 0; sz && sz->kind == JV_OBJ && i < sz->n && i < MAX_DEFINES; i++) {
                a.names[i] = sz->keys[i];
                a.values[i] = sz->items[i]->i;
                a.nsizes++;
            }
            if (!r) {
                r = xcalloc(1, sizeof *r);
                r->session = sess;
                r->episode = ep;
                r->s = dojo_new(db, true);
                vec_push(&live, r);
            }
            const char *want = jv_str(jv_get(q, "state"), "fingerprint", &bad);
            if (!dojo_reset(r->s, &a, &e)) {
                fprintf(stderr, "perfc: error: %s:%d: reset failed: %s\n", path, lineno, e.s);
                rc = 1;
            } else if (want && strcmp(want, dojo_fingerprint(r->s))) {
                fprintf(stderr, "perfc: error: %s:%d: the start state differs (fingerprint %s, recorded %s)\n", path,
                        lineno, dojo_fingerprint(r->s), want);
                rc = 2;
            }
            r->moves = 0;
        } else if (!r) {
            fprintf(stderr, "perfc: error: %s:%d: %s before the episode's reset\n", path, lineno, type);
            rc = 1;
        } else if (!strcmp(type, "step")) {
            const char *action = jv_str(q, "action", &bad);
            const Jv *lv = jv_get(q, "legal");
            const char *want = jv_str(jv_get(q, "next_state"), "fingerprint", &bad);
            bool legal = false;
            if (!action || !lv || lv->kind != JV_BOOL || !want) {
                fprintf(stderr, "perfc: error: %s:%d: a step record needs action, legal and next_state\n", path,
                        lineno);
                rc = 1;
            } else if (!dojo_step(r->s, -1, action, &legal, &e)) {
                fprintf(stderr, "perfc: error: %s:%d: %s is not a move: %s\n", path, lineno, action, e.s);
                rc = 2;
            } else if (legal != lv->b) {
                fprintf(stderr, "perfc: error: %s:%d: %s was %s when recorded and is %s now%s%s\n", path, lineno,
                        action, lv->b ? "legal" : "illegal", legal ? "legal" : "illegal", legal ? "" : ": ",
                        legal ? "" : e.s);
                rc = 2;
            } else if (strcmp(want, dojo_fingerprint(r->s))) {
                fprintf(stderr, "perfc: error: %s:%d: after %s the kernel differs (fingerprint %s, recorded %s)\n",
                        path, lineno, action, dojo_fingerprint(r->s), want);
                rc = 2;
            }
            r->moves++;
        } else if (!strcmp(type, "undo")) {
            const char *want = jv_str(q, "next_state", &bad);
            if (!dojo_undo(r->s)) {
                fprintf(stderr, "perfc: error: %s:%d: undo with no move to take back\n", path, lineno);
                rc = 2;
            } else if (want && strcmp(want, dojo_fingerprint(r->s))) {
                fprintf(stderr, "perfc: error: %s:%d: after undo the kernel differs\n", path, lineno);
                rc = 2;
            }
        } else if (!strcmp(type, "end")) {
            const char *want = jv_str(q, "final", &bad);
            if (!want || strcmp(want, dojo_fingerprint(r->s))) {
                fprintf(stderr, "perfc: error: %s:%d: episode %lld ends on kernel %s, recorded %s\n", path, lineno,
                        (long long)ep, dojo_fingerprint(r->s), want ? want : "(none)");
                rc = 2;
            } else {
                printf("episode %lld: %d steps replayed (%d moves kept), reached kernel %s as recorded\n", (long long)ep,
                       r->moves, dojo_depth(r->s), want);
                episodes++;
            }
        } else if (strcmp(type, "measure")) {
            fprintf(stderr, "perfc: error: %s:%d: unknown record type \"%s\"\n", path, lineno, type);
            rc = 1;
        }
        sb_free(&e);
        jv_free(q);
    }
    for (int i = 0; i < live.n; i++) {
        Replay *r = live.v[i];
        dojo_free(r->s);
        free(r);
    }
    vec_free(&live);
    free(text);
    if (rc == 0 && episodes == 0) {
        fprintf(stderr, "perfc: error: %s: no finished episode to replay\n", path);
        rc = 1;
    }
    return rc;
}

/* ---- the command line ---- */

static void usage(FILE *f)
{
    fputs("usage: perfc dojo [--record FILE] [--db FILE | --no-db] [--socket PATH]\n"
          "       perfc dojo --replay FILE\n"
          "       perfc dojo --agent random|greedy|beam FILE [-k KERNEL] [-D N=V ...] [-target T] [--seed N]\n"
          "                  [--threads N] [--budget N] [--time S] [--steps N] [--width W] [--depth D] [--schedule]\n"
          "                  [--no-hints] [-q]\n"
          "\n"
          "Kernel optimisation as a game: JSON-lines requests on stdin (or on each connection to the Unix\n"
          "socket PATH), one reply per line on stdout.  docs/dojo.md describes every verb.\n"
          "  --record FILE   append every game as JSON-lines episodes (state, action, reward)\n"
          "  --replay FILE   replay recorded episodes and check each reaches the same kernel\n"
          "  --agent A       play one game with a built-in agent on the same session calls\n",
          f);
}

int cli_dojo_main(int argc, char **argv)
{
    const char *sock = NULL, *record = NULL, *replay_file = NULL, *db = NULL;
    bool no_db = false;
    DojoAgentOpts ao = {.budget = 200, .steps = 50, .width = 4, .depth = 40};
    DojoResetArgs ra = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        char *end;
        if (!strcmp(a, "--socket") && has) {
            sock = argv[++i];
        } else if (!strcmp(a, "--record") && has) {
            record = argv[++i];
        } else if (!strcmp(a, "--replay") && has) {
            replay_file = argv[++i];
        } else if (!strcmp(a, "--db") && has) {
            db = argv[++i];
        } else if (!strcmp(a, "--no-db")) {
            no_db = true;
        } else if (!strcmp(a, "--agent") && has) {
            ao.agent = argv[++i];
        } else if (!strcmp(a, "-k") && has) {
            ra.kernel = argv[++i];
        } else if (!strcmp(a, "-target") && has) {
            ra.target = argv[++i];
        } else if (!strcmp(a, "--schedule")) {
            ra.schedule = true;
        } else if (!strcmp(a, "-q")) {
            ao.quiet = true;
        } else if (!strcmp(a, "--no-hints")) {
            ao.no_hints = true;
        } else if (!strcmp(a, "-D") && has) {
            const char *d = argv[++i];
            const char *eq = strchr(d, '=');
            long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
            if (!eq || eq == d || *end || v < 1 || ra.nsizes == MAX_DEFINES) {
                fprintf(stderr, "perfc: error: dojo: -D wants NAME=POSITIVE_INTEGER, got '%s'\n", d);
                return 1;
            }
            char *name = xstrdup(d);
            name[eq - d] = 0;
            ra.names[ra.nsizes] = name;
            ra.values[ra.nsizes++] = v;
        } else if ((!strcmp(a, "--seed") || !strcmp(a, "--threads") || !strcmp(a, "--budget") ||
                    !strcmp(a, "--steps") || !strcmp(a, "--width") || !strcmp(a, "--depth") || !strcmp(a, "--time")) &&
                   has) {
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 0 || v > 1000000000) {
                fprintf(stderr, "perfc: error: dojo: %s wants a non-negative integer, got '%s'\n", a, argv[i]);
                return 1;
            }
            if (!strcmp(a, "--seed"))
                ra.seed = (uint64_t)v, ra.seed_given = true;
            else if (!strcmp(a, "--threads"))
                ra.threads = (int)v;
            else if (!strcmp(a, "--budget"))
                ao.budget = (int)v;
            else if (!strcmp(a, "--steps"))
                ao.steps = (int)v;
            else if (!strcmp(a, "--time"))
                ao.time_s = (double)v;
            else if (!strcmp(a, "--width"))
                ao.width = v ? (int)v : 1;
            else
                ao.depth = (int)v;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] != '-' && !ra.file) {
            ra.file = a;
        } else {
            fprintf(stderr, "perfc: error: dojo: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (replay_file)
        return replay(replay_file, db);
    /* a client that goes away must not kill the server with SIGPIPE: the write
     * fails instead and the session ends */
    signal(SIGPIPE, SIG_IGN);
    FILE *rec = NULL;
    if (record) {
        rec = fopen(record, "a");
        if (!rec) {
            fprintf(stderr, "perfc: error: dojo: cannot open '%s': %s\n", record, strerror(errno));
            return 1;
        }
        setvbuf(rec, NULL, _IOFBF, 1 << 20); /* one write per line, flushed at its end */
    }
    int rc;
    if (ao.agent) {
        if (!ra.file) {
            fprintf(stderr, "perfc: error: dojo --agent needs a .pdl file\n");
            rc = 1;
        } else {
            DojoSession *s = dojo_new(db, no_db);
            dojo_record_to(s, rec);
            StrBuf err = {0};
            if (!dojo_reset(s, &ra, &err)) {
                fprintf(stderr, "%s\n", err.s);
                rc = 1;
            } else {
                rc = dojo_run_agent(s, &ao);
            }
            sb_free(&err);
            dojo_free(s);
        }
    } else if (sock) {
        rc = serve_socket(sock, db, no_db, rec);
    } else {
        Conn c = {.in = 0, .out = 1};
        DojoSession *s = dojo_new(db, no_db);
        dojo_record_to(s, rec);
        rc = serve(&c, s);
        dojo_free(s);
    }
    for (int i = 0; i < ra.nsizes; i++)
        free((char *)ra.names[i]);
    if (rec)
        fclose(rec);
    return rc;
}
