/*
 * Per-worker record log and its merge into profile_export.jsonl.
 *
 * File format (host byte order: the log is read back on the machine that wrote it):
 *   file header: "SGRECLOG" magic, u32 version, u32 size of the record header
 *   per record:  the fixed header (struct wire_rec), err_msg bytes (msg_len, no NUL), n_events u32 offsets
 * Every record starts with a marker word so that a torn or shifted file is caught at the first bad record.
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

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECLOG_MAGIC "SGRECLOG"
#define RECLOG_VERSION 1u
#define RECLOG_BUF (64u * 1024u)
#define REC_MARKER 0x31434552u /* "REC1" */
#define FLAG_STREAMING 1u
#define FLAG_WARMUP 2u
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
};
_Static_assert(sizeof(struct file_header) == 16, "file header layout");
_Static_assert(sizeof(struct wire_rec) == 120, "record header layout");

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
        .flags = (uint8_t)((r->streaming ? FLAG_STREAMING : 0) | (r->warmup ? FLAG_WARMUP : 0)),
        .isl = r->isl,
        .isl_server = r->isl_server,
        .osl = r->osl,
        .osl_server = r->osl_server,
        .max_tokens = r->max_tokens,
        .content_events = r->content_events,
        .msg_len = (uint32_t)strnlen(r->err_msg, SG_RECORD_MSG - 1),
        .n_events = n_events,
        .response_bytes = r->response_bytes,
    };
    /* Small records are copied whole into the buffer; a long event list streams through it in pieces. */
    if (put(l, &w, sizeof(w)) || put(l, r->err_msg, w.msg_len) ||
        put(l, r->event_us, (size_t)n_events * sizeof(uint32_t)))
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

static int map_log(const char *path, mapped_t *mp)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = p == MAP_FAILED ? -errno : 0;
    close(fd);
    if (err)
        return err;
    mp->base = p;
    mp->size = (size_t)st.st_size;
    return 0;
}

/* Check one log end to end and append its measured records to the index. */
static int scan_log(const mapped_t *mp, uint32_t log, idx_t **idx, size_t *n, size_t *cap)
{
    struct file_header h;
    memcpy(&h, mp->base, sizeof(h));
    if (memcmp(h.magic, RECLOG_MAGIC, sizeof(h.magic)) != 0 || h.version != RECLOG_VERSION ||
        h.rec_size != sizeof(struct wire_rec))
        return SG_EPROTO;
    size_t off = sizeof(h);
    if (mp->size >> (64 - LOC_LOG_BITS))
        return SG_ETOOBIG;
    while (off < mp->size) {
        struct wire_rec w;
        if (mp->size - off < sizeof(w))
            return SG_EPROTO;
        memcpy(&w, mp->base + off, sizeof(w));
        size_t body = (size_t)w.msg_len + (size_t)w.n_events * sizeof(uint32_t);
        if (w.marker != REC_MARKER || w.msg_len >= SG_RECORD_MSG || w.n_events > MAX_EVENTS ||
            w.err_class >= SG_ERRC__COUNT || w.osl_source > SG_OSL_EVENTS || (w.flags & ~3u) ||
            mp->size - off - sizeof(w) < body)
            return SG_EPROTO;
        if (!(w.flags & FLAG_WARMUP)) {
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 4096;
                idx_t *ni = realloc(*idx, nc * sizeof(*ni));
                if (!ni)
                    return -ENOMEM;
                *idx = ni;
                *cap = nc;
            }
            (*idx)[(*n)++] = (idx_t){w.intended_ns, w.id, ((uint64_t)off << LOC_LOG_BITS) | log};
        }
        off += sizeof(w) + body;
    }
    return 0;
}

static int cmp_idx(const void *a, const void *b)
{
    const idx_t *x = a, *y = b;
    if (x->intended_ns != y->intended_ns)
        return x->intended_ns < y->intended_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A line under construction: JSONL lines are built in memory and written with one fwrite, because printf per field
 * was most of the export's CPU. */
typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} line_t;

static void lb_reserve(line_t *l, size_t more)
{
    if (l->len + more <= l->cap || l->oom)
        return;
    size_t nc = l->cap ? l->cap : 1024;
    while (nc < l->len + more)
        nc *= 2;
    char *nb = realloc(l->buf, nc);
    if (!nb) {
        l->oom = true;
        return;
    }
    l->buf = nb;
    l->cap = nc;
}

static void lb_mem(line_t *l, const char *s, size_t n)
{
    lb_reserve(l, n);
    if (l->oom)
        return;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void lb_str(line_t *l, const char *s)
{
    lb_mem(l, s, strlen(s));
}

/*
 * v / 10^decimals in fixed point (decimals 0: a plain integer), from integers: exact (no double rounding) and
 * much cheaper than printf's %f, which matters for token_times_ms (one number per token, millions of tokens).
 */
static void lb_fixed(line_t *l, int64_t v, unsigned decimals)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char tmp[32];
    size_t n = 0;
    for (unsigned i = 0; i < decimals; i++, u /= 10)
        tmp[n++] = (char)('0' + u % 10);
    if (decimals)
        tmp[n++] = '.';
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    lb_reserve(l, n + 1);
    if (l->oom)
        return;
    if (v < 0)
        l->buf[l->len++] = '-';
    while (n)
        l->buf[l->len++] = tmp[--n];
}

static void lb_i64(line_t *l, int64_t v)
{
    lb_fixed(l, v, 0);
}

static void lb_key(line_t *l, const char *key)
{
    lb_mem(l, ",\"", 2);
    lb_str(l, key);
    lb_mem(l, "\":", 2);
}

static void put_rel_ns(line_t *l, const char *key, int64_t t, int64_t base)
{
    lb_key(l, key);
    if (t)
        lb_i64(l, t - base);
    else
        lb_mem(l, "null", 4);
}

static void put_ms(line_t *l, const char *key, bool have, int64_t ns)
{
    lb_key(l, key);
    if (have)
        lb_fixed(l, ns, 6);
    else
        lb_mem(l, "null", 4);
}

static void put_opt_int(line_t *l, const char *key, bool have, int64_t v)
{
    lb_key(l, key);
    if (have)
        lb_i64(l, v);
    else
        lb_mem(l, "null", 4);
}

static void lb_json_string(line_t *l, const char *s, size_t n)
{
    bool plain = true;
    for (size_t i = 0; i < n && plain; i++) {
        unsigned char c = (unsigned char)s[i];
        plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
    }
    if (plain) { /* the common case (model names, most messages): no escaping needed */
        lb_mem(l, "\"", 1);
        lb_mem(l, s, n);
        lb_mem(l, "\"", 1);
        return;
    }
    /* the shared escaper (UTF-8 checks included) writes to a FILE: give it one over memory */
    char *mem = NULL;
    size_t mlen = 0;
    FILE *m = open_memstream(&mem, &mlen);
    if (!m) {
        l->oom = true;
        return;
    }
    sg_json_put_string(m, s, n);
    fclose(m);
    lb_mem(l, mem, mlen);
    free(mem);
}

static void write_line(FILE *f, line_t *l, const unsigned char *rec, int64_t base, const char *const *model_names,
                       size_t n_models)
{
    struct wire_rec w;
    memcpy(&w, rec, sizeof(w));
    const char *msg = (const char *)rec + sizeof(w);
    const unsigned char *ev = rec + sizeof(w) + w.msg_len;
    bool ok = w.err_class == SG_ERRC_NONE;

    l->len = 0;
    lb_str(l, "{\"id\":");
    lb_i64(l, (int64_t)w.id);
    lb_str(l, ",\"worker\":");
    lb_i64(l, w.worker);
    lb_str(l, ",\"model\":");
    if (model_names && w.model < n_models && model_names[w.model])
        lb_json_string(l, model_names[w.model], strlen(model_names[w.model]));
    else
        lb_i64(l, w.model);
    lb_str(l, (w.flags & FLAG_STREAMING) ? ",\"streaming\":true" : ",\"streaming\":false");
    lb_str(l, ok ? ",\"status\":\"ok\"" : ",\"status\":\"error\"");
    if (!ok) {
        lb_str(l, ",\"error_class\":\"");
        lb_str(l, sg_err_class_name((sg_err_class_t)w.err_class));
        lb_str(l, "\",\"error\":");
        lb_json_string(l, msg, w.msg_len);
    }
    put_opt_int(l, "http_status", w.http_status != 0, w.http_status);
    put_rel_ns(l, "intended_ns", w.intended_ns, base);
    put_rel_ns(l, "sent_ns", w.sent_ns, base);
    put_rel_ns(l, "first_byte_ns", w.first_byte_ns, base);
    put_rel_ns(l, "first_token_ns", w.first_token_ns, base);
    put_rel_ns(l, "end_ns", w.end_ns, base);
    put_ms(l, "schedule_lag_ms", w.sent_ns != 0, w.sent_ns - w.intended_ns);
    put_ms(l, "time_to_first_token_ms", w.first_token_ns != 0, w.first_token_ns - w.intended_ns);
    put_ms(l, "request_latency_ms", w.end_ns != 0, w.end_ns - w.intended_ns);
    put_opt_int(l, "input_sequence_length", true, w.isl);
    put_opt_int(l, "input_sequence_length_server", w.isl_server != -1, w.isl_server);
    put_opt_int(l, "output_sequence_length", true, w.osl);
    lb_str(l, ",\"osl_source\":\"");
    lb_str(l, sg_osl_source_name((sg_osl_source_t)w.osl_source));
    lb_str(l, "\"");
    put_opt_int(l, "output_sequence_length_server", w.osl_server != -1, w.osl_server);
    put_opt_int(l, "max_tokens", w.max_tokens != 0, w.max_tokens);
    put_opt_int(l, "content_events", true, w.content_events);
    put_opt_int(l, "response_bytes", true, (int64_t)w.response_bytes);
    lb_str(l, ",\"token_times_ms\":[");
    if (w.first_token_ns) {
        int64_t first_ns = w.first_token_ns - w.intended_ns;
        for (uint32_t i = 0; i < w.n_events; i++) {
            uint32_t us;
            memcpy(&us, ev + (size_t)i * sizeof(us), sizeof(us)); /* events follow the message: unaligned */
            int64_t ns = first_ns + (int64_t)us * 1000;
            /* round to the microsecond: 3 decimals of ms */
            int64_t rounded_us = ns >= 0 ? (ns + 500) / 1000 : -((-ns + 500) / 1000);
            if (i)
                lb_mem(l, ",", 1);
            lb_fixed(l, rounded_us, 3);
        }
    }
    lb_str(l, "]}\n");
    if (!l->oom)
        fwrite(l->buf, 1, l->len, f);
}

int sg_export_jsonl(const char *out_path, const char *const *log_paths, size_t n_logs, const char *const *model_names,
                    size_t n_models)
{
    if (n_logs >= (1u << LOC_LOG_BITS))
        return SG_EINVAL;
    mapped_t *maps = calloc(n_logs ? n_logs : 1, sizeof(*maps));
    idx_t *idx = NULL;
    size_t n = 0, cap = 0;
    int rc = maps ? 0 : -ENOMEM;
    for (size_t i = 0; i < n_logs && !rc; i++) {
        rc = map_log(log_paths[i], &maps[i]);
        if (!rc)
            rc = scan_log(&maps[i], (uint32_t)i, &idx, &n, &cap);
    }
    /* Everything was checked before the output exists: a bad log leaves no file behind. */
    if (!rc) {
        if (n)
            qsort(idx, n, sizeof(*idx), cmp_idx);
        int64_t base = 0;
        for (size_t i = 0; i < n; i++)
            if (idx[i].intended_ns) {
                base = idx[i].intended_ns; /* sorted: the first non-zero is the earliest */
                break;
            }
        sg_outfile_t of;
        rc = sg_outfile_open(&of, out_path);
        if (!rc) {
            /* Lines are small and many: a large stdio buffer turns them into few big writes. */
            char *iobuf = malloc(1u << 20);
            if (iobuf)
                setvbuf(of.f, iobuf, _IOFBF, 1u << 20);
            line_t line = {0};
            for (size_t i = 0; i < n; i++) {
                const mapped_t *mp = &maps[idx[i].loc & ((1u << LOC_LOG_BITS) - 1)];
                write_line(of.f, &line, mp->base + (idx[i].loc >> LOC_LOG_BITS), base, model_names, n_models);
            }
            bool oom = line.oom;
            free(line.buf);
            if (oom) {
                sg_outfile_abort(&of);
                rc = -ENOMEM;
            } else if (ferror(of.f)) {
                sg_outfile_abort(&of);
                rc = -EIO;
            } else {
                rc = sg_outfile_commit(&of);
            }
            free(iobuf); /* after the stream that used it is closed */
        }
    }
    for (size_t i = 0; maps && i < n_logs; i++)
        if (maps[i].base)
            munmap((void *)maps[i].base, maps[i].size);
    free(maps);
    free(idx);
    return rc;
}
