/*
 * Per-worker record log and its merge into the per-request JSONL files (surge's own, and AIPerf's by
 * export_aiperf.c in the same pass).
 *
 * File format (host byte order: the log is read back on the machine that wrote it):
 *   file header: "SGRECLOG" magic, u32 version, u32 size of the record header
 *   per record:  the fixed header (struct wire_rec), err_msg bytes (msg_len, no NUL), n_events u32 offsets,
 *                then text_len bytes of output text (version 2; only with --tokenizer, flag FLAG_TEXT)
 * Every record starts with a marker word so that a torn or shifted file is caught at the first bad record.
 *
 * With --tokenizer the log is also where OSL is settled: after the join, sg_reclog_finalize counts each
 * record's text, writes the tokenizer count and the final OSL into the record's header in place, and adds the
 * record to the worker's metrics (the worker deferred them). The JSONL merge then reads final values.
 *
 * The worker appends with one write(2) per 64 KiB; nothing is held in RAM beyond that buffer. After the run
 * sg_export_jsonl maps each log, checks it end to end, keeps a 24-byte index entry per measured record, sorts
 * those by intended time and writes the lines. Warmup records are kept in the log but never exported.
 *
 * JSONL conventions beyond the brief: times are ns relative to the earliest intended time in the output;
 * http_status and max_tokens are null when 0 (no response head / not asked).
 */
#include "sg_export_util.h"
#include "sg_metrics.h"
#include "sg_numfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECLOG_MAGIC "SGRECLOG"
#define RECLOG_VERSION 4u
#define RECLOG_BUF (64u * 1024u)
#define REC_MARKER 0x31434552u /* "REC1" */
#define FLAG_STREAMING 1u
#define FLAG_WARMUP 2u
#define FLAG_TEXT 4u /* output text follows the events */
#define FLAG_RESENT 8u
#define FLAG_NO_OUTPUT 16u
#define FLAG_SESSION 32u         /* a turn of a multi-turn session: session and turn hold it */
#define FLAG_REASONING_USAGE 64u /* reasoning_tokens is the server's usage */
#define FLAG_ALL 127u
/* A stream of more than 16 Mi events is not a record we wrote: treat it as corruption. */
#define MAX_EVENTS (1u << 24)

struct file_header {
    char magic[8];
    uint32_t version;
    uint32_t rec_size;
};

/* Fixed-width fields in an order that leaves no padding, so the bytes on disk are exactly these. */
struct wire_rec {
    uint32_t marker;
    uint32_t worker;
    uint64_t id;
    uint32_t payload;
    uint32_t model;
    int64_t intended_ns;
    int64_t sent_ns;
    int64_t first_byte_ns;
    int64_t first_token_ns;
    int64_t second_token_ns;
    int64_t end_ns;
    int32_t http_status;
    uint8_t err_class;
    uint8_t osl_source;
    uint8_t flags;
    uint8_t reserved;
    uint32_t isl;
    int32_t isl_server;
    uint32_t osl;
    int32_t osl_server;
    uint32_t max_tokens;
    uint32_t content_events;
    uint32_t msg_len;
    uint32_t n_events;
    uint64_t response_bytes;
    uint32_t text_len;
    int32_t osl_tokenizer;
    int64_t first_output_ns;
    uint32_t reasoning_tokens;
    uint32_t reasoning_events;
    uint64_t session;
    uint32_t turn;
    uint32_t reasoning_text_len; /* the text's first bytes that are reasoning (FLAG_TEXT) */
    int32_t isl_cached;          /* version 4 */
    uint32_t reserved2;
};
_Static_assert(sizeof(struct file_header) == 16, "file header layout");
_Static_assert(sizeof(struct wire_rec) == 168, "record header layout");

struct sg_reclog {
    int fd;
    int err; /* sticky: the first write error is what close reports */
    size_t used;
    unsigned char buf[RECLOG_BUF];
};

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int flush(sg_reclog_t *l)
{
    if (!l->err && l->used)
        l->err = write_all(l->fd, l->buf, l->used);
    l->used = 0;
    return l->err;
}

static int put(sg_reclog_t *l, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        if (l->used == RECLOG_BUF && flush(l))
            return l->err;
        size_t n = RECLOG_BUF - l->used;
        n = n < len ? n : len;
        memcpy(l->buf + l->used, p, n);
        l->used += n;
        p += n;
        len -= n;
    }
    return l->err;
}

sg_reclog_t *sg_reclog_open(const char *path, int *err)
{
    sg_reclog_t *l = malloc(sizeof(*l));
    if (!l) {
        *err = -ENOMEM;
        return NULL;
    }
    l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        *err = -errno;
        free(l);
        return NULL;
    }
    l->err = 0;
    l->used = 0;
    struct file_header h = {.version = RECLOG_VERSION, .rec_size = sizeof(struct wire_rec)};
    memcpy(h.magic, RECLOG_MAGIC, sizeof(h.magic));
    (void)put(l, &h, sizeof(h)); /* fits in the empty buffer */
    *err = 0;
    return l;
}

int sg_reclog_append(sg_reclog_t *l, const sg_record_t *r)
{
    if (l->err)
        return l->err;
    uint32_t n_events = r->event_us ? r->n_events : 0;
    bool has_text = r->has_text && r->text_len <= SG_RECORD_TEXT_MAX && (r->text || !r->text_len);
    uint32_t text_len = has_text ? r->text_len : 0;
    struct wire_rec w = {
        .marker = REC_MARKER,
        .worker = r->worker,
        .id = r->id,
        .payload = r->payload,
        .model = r->model,
        .intended_ns = r->intended_ns,
        .sent_ns = r->sent_ns,
        .first_byte_ns = r->first_byte_ns,
        .first_token_ns = r->first_token_ns,
        .second_token_ns = r->second_token_ns,
        .end_ns = r->end_ns,
        .http_status = r->http_status,
        .err_class = r->err_class,
        .osl_source = r->osl_source,
        .flags =
            (uint8_t)((r->streaming ? FLAG_STREAMING : 0) | (r->warmup ? FLAG_WARMUP : 0) | (has_text ? FLAG_TEXT : 0) |
                      (r->resent ? FLAG_RESENT : 0) | (r->no_output ? FLAG_NO_OUTPUT : 0) |
                      (r->in_session ? FLAG_SESSION : 0) | (r->reasoning_from_usage ? FLAG_REASONING_USAGE : 0)),
        .isl = r->isl,
        .isl_server = r->isl_server,
        .isl_cached = r->isl_cached,
        .osl = r->osl,
        .osl_server = r->osl_server,
        .max_tokens = r->max_tokens,
        .content_events = r->content_events,
        .msg_len = (uint32_t)strnlen(r->err_msg, SG_RECORD_MSG - 1),
        .n_events = n_events,
        .response_bytes = r->response_bytes,
        .text_len = text_len,
        .osl_tokenizer = r->osl_tokenizer,
        .first_output_ns = r->first_output_ns,
        .reasoning_tokens = r->reasoning_tokens,
        .reasoning_events = r->reasoning_events,
        .session = r->session,
        .turn = r->turn,
        .reasoning_text_len = has_text && r->reasoning_text_len <= text_len ? r->reasoning_text_len : 0,
    };
    /* Small records are copied whole into the buffer; a long event list streams through it in pieces. */
    if (put(l, &w, sizeof(w)) || put(l, r->err_msg, w.msg_len) ||
        put(l, r->event_us, (size_t)n_events * sizeof(uint32_t)) || put(l, r->text, text_len))
        return l->err;
    return 0;
}

int sg_reclog_close(sg_reclog_t *l)
{
    if (!l)
        return 0;
    int err = flush(l);
    if (close(l->fd) != 0 && !err)
        err = -errno;
    free(l);
    return err;
}

/* ---------- merge into JSONL ---------- */

typedef struct {
    const unsigned char *base;
    size_t size;
} mapped_t;

/* One per measured record: what the sort needs and where to find the rest. */
typedef struct {
    int64_t intended_ns;
    uint64_t id;
    uint64_t loc; /* offset << 16 | log index */
} idx_t;

#define LOC_LOG_BITS 16

static int map_log(const char *path, mapped_t *mp, bool writable)
{
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    if ((size_t)st.st_size < sizeof(struct file_header)) {
        close(fd);
        return SG_EPROTO;
    }
    /* writable: the finalize pass patches headers in place, shared so the JSONL merge sees them */
    void *p = mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                   writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    int err = p == MAP_FAILED ? -errno : 0;
    close(fd);
    if (err)
        return err;
    mp->base = p;
    mp->size = (size_t)st.st_size;
    return 0;
}

static int check_file_header(const mapped_t *mp)
{
    struct file_header h;
    memcpy(&h, mp->base, sizeof(h));
    if (memcmp(h.magic, RECLOG_MAGIC, sizeof(h.magic)) != 0 || h.version != RECLOG_VERSION ||
        h.rec_size != sizeof(struct wire_rec))
        return SG_EPROTO;
    return 0;
}

/* One record as it lies in a mapped log. msg, ev and text are unaligned and point into the map. */
typedef struct {
    struct wire_rec w;
    size_t off; /* of the header */
    const char *msg;
    const unsigned char *ev;
    const char *text;
} rec_view_t;

/* The record at off, already checked by next_rec (scan_log checks every indexed record before the output exists):
 * write_line reads it without checking it again. */
static void rec_at(const mapped_t *mp, size_t off, rec_view_t *v)
{
    memcpy(&v->w, mp->base + off, sizeof(v->w));
    v->off = off;
    v->msg = (const char *)mp->base + off + sizeof(v->w);
    v->ev = mp->base + off + sizeof(v->w) + v->w.msg_len;
    v->text = (const char *)v->ev + (size_t)v->w.n_events * sizeof(uint32_t);
}

/* The record at *off, checked, and *off moved past it. 1: got one; 0: end of the log; SG_EPROTO: corrupt. */
static int next_rec(const mapped_t *mp, size_t *off, rec_view_t *v)
{
    size_t o = *off;
    if (o >= mp->size)
        return 0;
    if (mp->size - o < sizeof(v->w))
        return SG_EPROTO;
    memcpy(&v->w, mp->base + o, sizeof(v->w));
    const struct wire_rec *w = &v->w;
    size_t body = (size_t)w->msg_len + (size_t)w->n_events * sizeof(uint32_t) + (size_t)w->text_len;
    if (w->marker != REC_MARKER || w->msg_len >= SG_RECORD_MSG || w->n_events > MAX_EVENTS ||
        w->text_len > SG_RECORD_TEXT_MAX || (w->text_len && !(w->flags & FLAG_TEXT)) ||
        w->reasoning_text_len > w->text_len || w->err_class >= SG_ERRC__COUNT || w->osl_source > SG_OSL_EVENTS ||
        (w->flags & ~FLAG_ALL) || w->osl_tokenizer < -1 || mp->size - o - sizeof(*w) < body)
        return SG_EPROTO;
    v->off = o;
    v->msg = (const char *)mp->base + o + sizeof(*w);
    v->ev = mp->base + o + sizeof(*w) + w->msg_len;
    v->text = (const char *)v->ev + (size_t)w->n_events * sizeof(uint32_t);
    *off = o + sizeof(*w) + body;
    return 1;
}

/* Check one log end to end and append its measured records to the index. */
static int scan_log(const mapped_t *mp, uint32_t log, idx_t **idx, size_t *n, size_t *cap)
{
    int rc = check_file_header(mp);
    if (rc)
        return rc;
    if (mp->size >> (64 - LOC_LOG_BITS))
        return SG_ETOOBIG;
    size_t off = sizeof(struct file_header);
    rec_view_t v;
    while ((rc = next_rec(mp, &off, &v)) == 1) {
        if (v.w.flags & FLAG_WARMUP)
            continue;
        if (*n == *cap) {
            /* first: room for as many records as the log can hold (no re-copying while it fills) */
            size_t nc = *cap ? *cap * 2 : mp->size / sizeof(struct wire_rec) + 1;
            idx_t *ni = realloc(*idx, nc * sizeof(*ni));
            if (!ni)
                return -ENOMEM;
            *idx = ni;
            *cap = nc;
        }
        (*idx)[(*n)++] = (idx_t){v.w.intended_ns, v.w.id, ((uint64_t)v.off << LOC_LOG_BITS) | log};
    }
    return rc;
}

/* A log record as an sg_record_t; its events copied into *events (aligned, grown as needed). 0 or -ENOMEM. */
static int rec_decode(const rec_view_t *v, sg_record_t *out, uint32_t **events, uint32_t *events_cap)
{
    const struct wire_rec *w = &v->w;
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = w->id;
    r.worker = w->worker;
    r.payload = w->payload;
    r.model = w->model;
    r.streaming = w->flags & FLAG_STREAMING;
    r.resent = w->flags & FLAG_RESENT;
    r.no_output = w->flags & FLAG_NO_OUTPUT;
    r.in_session = w->flags & FLAG_SESSION;
    r.session = w->session;
    r.turn = w->turn;
    r.first_output_ns = w->first_output_ns;
    r.reasoning_tokens = w->reasoning_tokens;
    r.reasoning_events = w->reasoning_events;
    r.reasoning_from_usage = w->flags & FLAG_REASONING_USAGE;
    r.reasoning_text_len = w->reasoning_text_len;
    r.warmup = w->flags & FLAG_WARMUP;
    r.intended_ns = w->intended_ns;
    r.sent_ns = w->sent_ns;
    r.first_byte_ns = w->first_byte_ns;
    r.first_token_ns = w->first_token_ns;
    r.second_token_ns = w->second_token_ns;
    r.end_ns = w->end_ns;
    r.http_status = w->http_status;
    r.err_class = w->err_class;
    r.osl_source = w->osl_source;
    r.isl = w->isl;
    r.isl_server = w->isl_server;
    r.isl_cached = w->isl_cached;
    r.osl = w->osl;
    r.osl_server = w->osl_server;
    r.osl_tokenizer = w->osl_tokenizer;
    r.max_tokens = w->max_tokens;
    r.content_events = w->content_events;
    r.response_bytes = w->response_bytes;
    memcpy(r.err_msg, v->msg, w->msg_len);
    r.err_msg[w->msg_len] = '\0';
    if (w->n_events) { /* the log's copy is unaligned: metrics read an aligned one */
        if (w->n_events > *events_cap) {
            uint32_t *ne = realloc(*events, (size_t)w->n_events * sizeof(*ne));
            if (!ne)
                return -ENOMEM;
            *events = ne;
            *events_cap = w->n_events;
        }
        memcpy(*events, v->ev, (size_t)w->n_events * sizeof(**events));
        r.event_us = *events;
        r.n_events = w->n_events;
    }
    *out = r;
    return 0;
}

/* ---------- the post-run OSL pass ---------- */

int sg_reclog_finalize(const char *path, sg_token_count_fn count, void *ctx, sg_metrics_t *m)
{
    mapped_t mp = {0};
    int rc = map_log(path, &mp, true);
    if (rc)
        return rc;
    rc = check_file_header(&mp);
    /* Check the whole log before changing a byte of it or of m. */
    size_t off = sizeof(struct file_header);
    rec_view_t v;
    while (!rc && (rc = next_rec(&mp, &off, &v)) == 1)
        rc = 0;
    uint32_t *events = NULL;
    uint32_t events_cap = 0;
    off = sizeof(struct file_header);
    while (!rc && (rc = next_rec(&mp, &off, &v)) == 1) {
        rc = 0;
        struct wire_rec *w = &v.w;
        if ((w->flags & FLAG_WARMUP))
            continue;
        sg_record_t r;
        rc = rec_decode(&v, &r, &events, &events_cap);
        if (rc)
            break;
        if ((w->flags & FLAG_TEXT) && count && r.err_class == SG_ERRC_NONE) {
            ssize_t n = count(ctx, v.text, w->text_len);
            if (n < 0) {
                rc = (int)n;
                break;
            }
            r.osl_tokenizer = n > INT32_MAX ? INT32_MAX : (int32_t)n;
            sg_record_settle_osl(&r);
            w->osl_tokenizer = r.osl_tokenizer;
            w->osl = r.osl;
            w->osl_source = r.osl_source;
            /* reasoning the server did not count: the tokens of its text, as OSL counts the whole */
            if (!r.reasoning_from_usage && r.reasoning_text_len) {
                n = count(ctx, v.text, r.reasoning_text_len);
                if (n < 0) {
                    rc = (int)n;
                    break;
                }
                r.reasoning_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
                w->reasoning_tokens = r.reasoning_tokens;
            }
            memcpy((unsigned char *)mp.base + v.off, w, sizeof(*w));
        }
        if (m)
            sg_metrics_add(m, &r);
    }
    free(events);
    munmap((void *)mp.base, mp.size);
    return rc;
}

/* The measured records at byte offsets [from_pos, to_pos] intended in [from_ns, to_ns), to fn or fn_pos. */
static int each(const char *path, uint64_t from_pos, uint64_t to_pos, int64_t from_ns, int64_t to_ns, sg_record_fn fn,
                sg_record_pos_fn fn_pos, void *ctx)
{
    mapped_t mp = {0};
    int rc = map_log(path, &mp, false);
    if (rc)
        return rc;
    rc = check_file_header(&mp);
    size_t off = from_pos > sizeof(struct file_header) ? (size_t)from_pos : sizeof(struct file_header);
    rec_view_t v;
    uint32_t *events = NULL, events_cap = 0;
    while (!rc && off <= to_pos && (rc = next_rec(&mp, &off, &v)) == 1) {
        rc = 0;
        /* the header says when it was intended: a record out of range costs no decode */
        if ((v.w.flags & FLAG_WARMUP) || v.w.intended_ns < from_ns || v.w.intended_ns >= to_ns)
            continue;
        sg_record_t r;
        rc = rec_decode(&v, &r, &events, &events_cap);
        if (!rc && fn)
            fn(ctx, &r);
        else if (!rc)
            fn_pos(ctx, &r, v.off);
    }
    free(events);
    munmap((void *)mp.base, mp.size);
    return rc;
}

int sg_reclog_each(const char *path, sg_record_fn fn, void *ctx)
{
    return each(path, 0, UINT64_MAX, INT64_MIN, INT64_MAX, fn, NULL, ctx);
}

int sg_reclog_each_span(const char *path, uint64_t from_pos, uint64_t to_pos, int64_t from_ns, int64_t to_ns,
                        sg_record_pos_fn fn, void *ctx)
{
    return each(path, from_pos, to_pos, from_ns, to_ns, NULL, fn, ctx);
}

static int cmp_idx(const void *a, const void *b)
{
    const idx_t *x = a, *y = b;
    if (x->intended_ns != y->intended_ns)
        return x->intended_ns < y->intended_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * JSONL lines are formatted straight into the output buffer: constant keys as fixed-size copies, numbers with
 * sg_numfmt.h. printf per field, and later a line buffer copied through stdio, were most of the export's user CPU.
 */

#define PUT_REL_NS(p, key, t, base)                                                                                    \
    do {                                                                                                               \
        SG_PUT_LIT(p, ",\"" key "\":");                                                                                \
        if (t)                                                                                                         \
            p = sg_put_i64(p, (t) - (base));                                                                           \
        else                                                                                                           \
            SG_PUT_LIT(p, "null");                                                                                     \
    } while (0)

#define PUT_MS(p, key, have, ns)                                                                                       \
    do {                                                                                                               \
        SG_PUT_LIT(p, ",\"" key "\":");                                                                                \
        if (have)                                                                                                      \
            p = sg_put_fixed(p, ns, 6, 1000000);                                                                       \
        else                                                                                                           \
            SG_PUT_LIT(p, "null");                                                                                     \
    } while (0)

#define PUT_OPT_INT(p, key, have, v)                                                                                   \
    do {                                                                                                               \
        SG_PUT_LIT(p, ",\"" key "\":");                                                                                \
        if (have)                                                                                                      \
            p = sg_put_i64(p, v);                                                                                      \
        else                                                                                                           \
            SG_PUT_LIT(p, "null");                                                                                     \
    } while (0)

/* Room for everything in a line but the model and the token times: the keys (about 600 bytes), 20-odd numbers of
 * at most 23 bytes, the error class and the escaped error message. */
#define LINE_FIXED_MAX (2048 + SG_JSON_ESCAPED_MAX(SG_RECORD_MSG))
/* One token time: a comma and a fixed-point number. */
#define TOKEN_TIME_MAX 24
#define TOKEN_TIMES_PER_ROOM 1024

/* ",\"model\":<name or index>" for every model, rendered once. */
typedef struct {
    char *text;
    size_t len;
} model_json_t;

static int render_models(model_json_t *out, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = names[i] ? strlen(names[i]) : 0;
        char *t = malloc(sizeof(",\"model\":") + SG_JSON_ESCAPED_MAX(len) + 1);
        if (!t)
            return -ENOMEM;
        char *p = t;
        SG_PUT_LIT(p, ",\"model\":");
        if (names[i])
            p += sg_json_escape(p, names[i], len);
        out[i].text = t;
        out[i].len = (size_t)(p - t);
    }
    return 0;
}

/* The whole record as one line; a no-op after an output error (the buffer reports it). */
static void write_line(sg_outbuf_t *ob, const mapped_t *mp, size_t off, int64_t base, const model_json_t *models,
                       size_t n_models)
{
    rec_view_t v;
    rec_at(mp, off, &v);
    const struct wire_rec *w = &v.w;
    bool ok = w->err_class == SG_ERRC_NONE;
    bool named = models && w->model < n_models && models[w->model].len > sizeof(",\"model\":") - 1;
    /* the model name is the only unbounded field before the token times */
    char *p = sg_outbuf_room(ob, LINE_FIXED_MAX + (named ? models[w->model].len : 0));
    if (!p)
        return;
    char *start = p;
    SG_PUT_LIT(p, "{\"id\":");
    p = sg_put_i64(p, (int64_t)w->id);
    SG_PUT_LIT(p, ",\"worker\":");
    p = sg_put_u64(p, w->worker);
    SG_PUT_LIT(p, ",\"payload\":");
    p = sg_put_u64(p, w->payload);
    if (named) {
        memcpy(p, models[w->model].text, models[w->model].len);
        p += models[w->model].len;
    } else {
        SG_PUT_LIT(p, ",\"model\":");
        p = sg_put_u64(p, w->model);
    }
    if (w->flags & FLAG_STREAMING)
        SG_PUT_LIT(p, ",\"streaming\":true");
    else
        SG_PUT_LIT(p, ",\"streaming\":false");
    if (w->flags & FLAG_RESENT)
        SG_PUT_LIT(p, ",\"resent\":true");
    else
        SG_PUT_LIT(p, ",\"resent\":false");
    if (w->flags & FLAG_SESSION) {
        SG_PUT_LIT(p, ",\"session\":");
        p = sg_put_u64(p, w->session);
        SG_PUT_LIT(p, ",\"turn\":");
        p = sg_put_u64(p, w->turn);
    }
    bool cancelled = w->err_class == SG_ERRC_CANCELLED;
    if (ok) {
        SG_PUT_LIT(p, ",\"status\":\"ok\"");
    } else {
        /* a request surge cancelled is a status of its own, not an error (its class stays for the readers) */
        if (cancelled)
            SG_PUT_LIT(p, ",\"status\":\"cancelled\",\"error_class\":\"");
        else
            SG_PUT_LIT(p, ",\"status\":\"error\",\"error_class\":\"");
        const char *cls = sg_err_class_name((sg_err_class_t)w->err_class);
        size_t cl = strlen(cls);
        memcpy(p, cls, cl);
        p += cl;
        SG_PUT_LIT(p, "\",\"error\":");
        p += sg_json_escape(p, v.msg, w->msg_len);
    }
    PUT_OPT_INT(p, "http_status", w->http_status != 0, w->http_status);
    PUT_REL_NS(p, "intended_ns", w->intended_ns, base);
    PUT_REL_NS(p, "sent_ns", w->sent_ns, base);
    PUT_REL_NS(p, "first_byte_ns", w->first_byte_ns, base);
    PUT_REL_NS(p, "first_token_ns", w->first_token_ns, base);
    PUT_REL_NS(p, "second_token_ns", w->second_token_ns, base);
    PUT_REL_NS(p, "first_output_token_ns", w->first_output_ns, base);
    PUT_REL_NS(p, "end_ns", w->end_ns, base);
    PUT_MS(p, "schedule_lag_ms", w->sent_ns != 0, w->sent_ns - w->intended_ns);
    PUT_MS(p, "time_to_first_token_ms", w->first_token_ns != 0, w->first_token_ns - w->intended_ns);
    /* a cancelled request has no latency, only its wait until the cancellation (a lower bound of it) */
    PUT_MS(p, "request_latency_ms", w->end_ns != 0 && !cancelled, w->end_ns - w->intended_ns);
    if (cancelled)
        PUT_MS(p, "cancelled_wait_ms", w->end_ns != 0, w->end_ns - w->intended_ns);
    PUT_OPT_INT(p, "input_sequence_length", true, w->isl);
    PUT_OPT_INT(p, "input_sequence_length_server", w->isl_server != -1, w->isl_server);
    PUT_OPT_INT(p, "cached_input_tokens", w->isl_cached >= 0, w->isl_cached);
    /* an endpoint that generates nothing (embeddings, rankings) has no OSL: null, and no source */
    bool output = !(w->flags & FLAG_NO_OUTPUT);
    if (!output)
        SG_PUT_LIT(p, ",\"no_output\":true");
    PUT_OPT_INT(p, "output_sequence_length", output, w->osl);
    PUT_OPT_INT(p, "reasoning_tokens", w->reasoning_tokens > 0, w->reasoning_tokens);
    switch (output ? (int)w->osl_source : -1) { /* checked by next_rec */
    case SG_OSL_USAGE:
        SG_PUT_LIT(p, ",\"osl_source\":\"usage\"");
        break;
    case SG_OSL_TOKENIZER:
        SG_PUT_LIT(p, ",\"osl_source\":\"tokenizer\"");
        break;
    case SG_OSL_EVENTS:
        SG_PUT_LIT(p, ",\"osl_source\":\"events\"");
        break;
    }
    PUT_OPT_INT(p, "output_sequence_length_server", w->osl_server != -1, w->osl_server);
    PUT_OPT_INT(p, "output_sequence_length_tokenizer", w->osl_tokenizer >= 0, w->osl_tokenizer);
    PUT_OPT_INT(p, "max_tokens", w->max_tokens != 0, w->max_tokens);
    PUT_OPT_INT(p, "content_events", true, w->content_events);
    PUT_OPT_INT(p, "response_bytes", true, (int64_t)w->response_bytes);
    SG_PUT_LIT(p, ",\"token_times_ms\":[");
    ob->len += (size_t)(p - start);
    if (w->first_token_ns) {
        int64_t first_ns = w->first_token_ns - w->intended_ns;
        for (uint32_t i = 0; i < w->n_events;) {
            uint32_t end = w->n_events - i > TOKEN_TIMES_PER_ROOM ? i + TOKEN_TIMES_PER_ROOM : w->n_events;
            p = start = sg_outbuf_room(ob, (size_t)(end - i) * TOKEN_TIME_MAX);
            if (!p)
                return;
            for (; i < end; i++) {
                uint32_t us;
                memcpy(&us, v.ev + (size_t)i * sizeof(us), sizeof(us)); /* events follow the message: unaligned */
                int64_t ns = first_ns + (int64_t)us * 1000;
                /* round to the microsecond: 3 decimals of ms */
                int64_t rounded_us = ns >= 0 ? (ns + 500) / 1000 : -((-ns + 500) / 1000);
                if (i)
                    *p++ = ',';
                p = sg_put_fixed(p, rounded_us, 3, 1000);
            }
            ob->len += (size_t)(p - start);
        }
    }
    p = sg_outbuf_room(ob, 3);
    if (p) {
        memcpy(p, "]}\n", 3);
        ob->len += 3;
    }
}

/*
 * The index in (intended_ns, id) order, as cmp_idx orders it: a stable LSD radix sort on intended_ns (11-bit
 * digits of its distance from the smallest, so a run of seconds takes 3 passes and digits every key shares are
 * skipped), then runs of equal times put in id order. glibc's qsort, a merge sort that moves 24-byte elements
 * with memcpy calls, was about 7% of the whole process's CPU in the h2 benchmark (100k records).
 */
#define PREFETCH_AHEAD 8

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

static uint64_t idx_key(const idx_t *x)
{
    return (uint64_t)x->intended_ns ^ (1ull << 63); /* signed order as unsigned */
}

static void sort_idx(idx_t *idx, size_t n)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = idx_key(&idx[i]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    unsigned digits = 0;
    for (uint64_t range = hi - lo; range; range >>= RADIX_BITS)
        digits++;
    idx_t *tmp = digits ? malloc(n * sizeof(*tmp)) : NULL;
    size_t *count = digits ? calloc((size_t)digits * RADIX_SIZE, sizeof(*count)) : NULL;
    if (digits && (!tmp || !count)) {
        free(tmp);
        free(count);
        qsort(idx, n, sizeof(*idx), cmp_idx);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t k = idx_key(&idx[i]) - lo;
        for (unsigned d = 0; d < digits; d++)
            count[(size_t)d * RADIX_SIZE + ((k >> (d * RADIX_BITS)) & (RADIX_SIZE - 1))]++;
    }
    idx_t *src = idx, *dst = tmp;
    for (unsigned d = 0; d < digits; d++) {
        size_t *c = count + (size_t)d * RADIX_SIZE;
        unsigned shift = d * RADIX_BITS;
        if (c[((idx_key(&src[0]) - lo) >> shift) & (RADIX_SIZE - 1)] == n)
            continue; /* every key has this digit */
        size_t sum = 0;
        for (unsigned b = 0; b < RADIX_SIZE; b++) {
            size_t t = c[b];
            c[b] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            dst[c[((idx_key(&src[i]) - lo) >> shift) & (RADIX_SIZE - 1)]++] = src[i];
        idx_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx)
        memcpy(idx, src, n * sizeof(*idx));
    free(tmp);
    free(count);
    /* equal times: by id (insertion: such runs are short) */
    for (size_t i = 1; i < n; i++) {
        if (idx[i].intended_ns != idx[i - 1].intended_ns || idx[i].id >= idx[i - 1].id)
            continue;
        idx_t x = idx[i];
        size_t j = i;
        while (j > 0 && idx[j - 1].intended_ns == x.intended_ns && idx[j - 1].id > x.id) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = x;
    }
}

/*
 * A worker numbers its requests in the order it issues them, and it issues them in intended-time order; its log
 * is in completion order. So when the ids are exactly lo..lo+n-1 (one worker, or several splitting one arrival
 * sequence), putting each entry at slot id - lo usually yields the output order with no sort: each entry is
 * swapped straight into its slot, in place, O(n), with no second array (fresh pages cost more than the moves here).
 * The caller still checks the order. false when the ids are not such a range (the index is then permuted but
 * whole).
 */
static bool place_by_id(idx_t *idx, size_t n)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = idx[i].id < lo ? idx[i].id : lo;
        hi = idx[i].id > hi ? idx[i].id : hi;
    }
    if (hi - lo != n - 1)
        return false;
    for (size_t i = 0; i < n; i++) {
        while (idx[i].id - lo != i) {
            size_t j = (size_t)(idx[i].id - lo);
            if (idx[j].id == idx[i].id)
                return false; /* a repeated id: some other id is missing */
            idx_t t = idx[j];
            idx[j] = idx[i];
            idx[i] = t;
        }
    }
    return true;
}

/* True when the index is already in output order (one worker's log usually is): the sort can be skipped. */
static bool idx_sorted(const idx_t *idx, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_idx(&idx[i - 1], &idx[i]) > 0)
            return false;
    return true;
}

/* The output files of one merge: surge's lines always, AIPerf's when asked for. */
typedef struct {
    sg_outbuf_t surge, aiperf;
    bool with_aiperf;
    uint32_t *events; /* AIPerf's lines read a record decoded: its events, aligned */
    uint32_t events_cap;
} outputs_t;

static int outputs_open(outputs_t *o, const sg_records_out_t *out)
{
    memset(o, 0, sizeof(*o));
    int rc = sg_outbuf_open(&o->surge, out->surge_path);
    if (rc || !out->aiperf_path)
        return rc;
    rc = sg_outbuf_open(&o->aiperf, out->aiperf_path);
    if (rc)
        sg_outbuf_abort(&o->surge);
    o->with_aiperf = !rc;
    return rc;
}

static int outputs_err(const outputs_t *o)
{
    return o->surge.err ? o->surge.err : o->with_aiperf ? o->aiperf.err : 0;
}

/* Commit both, or neither when either failed. */
static int outputs_close(outputs_t *o, int rc)
{
    rc = rc ? rc : outputs_err(o);
    free(o->events);
    if (rc) {
        sg_outbuf_abort(&o->surge);
        if (o->with_aiperf)
            sg_outbuf_abort(&o->aiperf);
        return rc;
    }
    rc = sg_outbuf_commit(&o->surge);
    if (o->with_aiperf) {
        if (rc)
            sg_outbuf_abort(&o->aiperf);
        else
            rc = sg_outbuf_commit(&o->aiperf);
    }
    return rc;
}

/* One record's lines: surge's from the log as it lies, AIPerf's from the record decoded. */
static int write_record(outputs_t *o, const mapped_t *mp, size_t off, int64_t base, const model_json_t *models,
                        const sg_records_out_t *out)
{
    write_line(&o->surge, mp, off, base, models, out->n_models);
    if (!o->with_aiperf)
        return 0;
    rec_view_t v;
    sg_record_t r;
    rec_at(mp, off, &v);
    int rc = rec_decode(&v, &r, &o->events, &o->events_cap);
    if (!rc)
        sg_aiperf_record_line(&o->aiperf, &r, out->wall_offset_ns);
    return rc;
}

int sg_export_records(const sg_records_out_t *out, const char *const *log_paths, size_t n_logs)
{
    if (n_logs >= (1u << LOC_LOG_BITS))
        return SG_EINVAL;
    mapped_t *maps = calloc(n_logs ? n_logs : 1, sizeof(*maps));
    idx_t *idx = NULL;
    size_t n = 0, cap = 0;
    int rc = maps ? 0 : -ENOMEM;
    for (size_t i = 0; i < n_logs && !rc; i++) {
        rc = map_log(log_paths[i], &maps[i], false);
        if (!rc)
            rc = scan_log(&maps[i], (uint32_t)i, &idx, &n, &cap);
    }
    /* Everything was checked before the output exists: a bad log leaves no file behind. */
    model_json_t *models = NULL;
    if (!rc && out->model_names && out->n_models) {
        models = calloc(out->n_models, sizeof(*models));
        rc = models ? render_models(models, out->model_names, out->n_models) : -ENOMEM;
    }
    if (!rc) {
        if (n > 1 && !idx_sorted(idx, n) && !(place_by_id(idx, n) && idx_sorted(idx, n)))
            sort_idx(idx, n);
        int64_t base = 0;
        for (size_t i = 0; i < n; i++)
            if (idx[i].intended_ns) {
                base = idx[i].intended_ns; /* sorted: the first non-zero is the earliest */
                break;
            }
        if (out->base_out)
            *out->base_out = base;
        outputs_t o;
        rc = outputs_open(&o, out);
        if (!rc) {
            for (size_t i = 0; i < n && !rc && !outputs_err(&o); i++) {
                /* Lines go out in intended order and records lie in completion order: each header is a cache
                 * miss. Asking for one PREFETCH_AHEAD lines on overlaps them (a fifth of the export's time). */
                if (i + PREFETCH_AHEAD < n) {
                    uint64_t ahead = idx[i + PREFETCH_AHEAD].loc;
                    const unsigned char *h = maps[ahead & ((1u << LOC_LOG_BITS) - 1)].base + (ahead >> LOC_LOG_BITS);
                    __builtin_prefetch(h);
                    __builtin_prefetch(h + 64);
                }
                const mapped_t *mp = &maps[idx[i].loc & ((1u << LOC_LOG_BITS) - 1)];
                rc = write_record(&o, mp, (size_t)(idx[i].loc >> LOC_LOG_BITS), base, models, out);
            }
            rc = outputs_close(&o, rc);
        }
    }
    for (size_t i = 0; models && i < out->n_models; i++)
        free(models[i].text);
    free(models);
    for (size_t i = 0; maps && i < n_logs; i++)
        if (maps[i].base)
            munmap((void *)maps[i].base, maps[i].size);
    free(maps);
    free(idx);
    return rc;
}

int sg_export_jsonl(const char *out_path, const char *const *log_paths, size_t n_logs, const char *const *model_names,
                    size_t n_models)
{
    sg_records_out_t out = {.surge_path = out_path, .model_names = model_names, .n_models = n_models};
    return sg_export_records(&out, log_paths, n_logs);
}
