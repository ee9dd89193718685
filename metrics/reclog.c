/*
 * Per-worker record log and its merge into the per-request JSONL files (surge's own, and AIPerf's by
 * export_aiperf.c in the same pass).
 *
 * File format, version 8 (host byte order: the log is read back on the machine that wrote it):
 *   file header: "SGRECLOG" magic, u32 version, u32 0
 *   per record:  a marker byte (REC_MARKER), a varint length of the body, then the body:
 *     varint flags, a varint of which times are present (a bit each), varint id/worker/payload/model, zigzag varint
 * intended_ns, each present time as a zigzag varint of its distance from intended_ns (exact to the ns), the other
 * fields as varints (signed ones zigzag), the error message (varint length, bytes), varint n_events, session and turn
 * (FLAG_SESSION), text_len and reasoning_text_len (FLAG_TEXT), the tool calls' counts (FLAG_TOOLS: calls, argument
 * events, then tool_text_len with FLAG_TEXT or the argument tokens without), the request's images, audio clips and
 * media bytes (FLAG_MEDIA); then the event offsets (µs from the first
 * token) as zigzag varints of the change in the gap between one and the next (a steady stream costs a byte a token,
 * exact to the µs whatever the order); then the output text (FLAG_TEXT,
 *     --tokenizer only) and a fixed 17-byte block of the fields the OSL pass rewrites in place (osl_tokenizer,
 *     osl, reasoning_tokens, osl_source, tool_tokens: FLAG_TEXT records only; the others carry them as varints).
 *   A record decodes to exactly its body length, or the log is corrupt: a torn or shifted file is caught at the
 *   first bad record. A non-streamed request takes about 50 bytes, a streamed one about 1 to 3 more per token
 *   (docs/files.md has measured figures); version 4 took 168 bytes plus 4 per token.
 *
 * Writing. The workers' logs (sg_reclog_open_async) never call write(2): a record is encoded into a 64 KiB
 * buffer; a full buffer goes to one writer thread for the whole process through a single-producer/single-consumer
 * ring (lock-free; the worker posts a semaphore once per buffer), and the writer hands written buffers back
 * through a second ring. A worker holds at most cap bytes of buffers: when the writer (the disk) falls that far
 * behind, the worker drops whole records rather than wait, counts them, and the writer says so on stderr at
 * once; sg_reclog_close reports the count and the run prints it (nothing is lost silently). sg_reclog_open
 * (dist/merge.c, tests) writes itself, one write(2) per 64 KiB.
 *
 * With --tokenizer the log is also where OSL is settled: after the join, sg_reclog_finalize counts each
 * record's text, writes the tokenizer count and the final OSL into the record's fixed block in place, and adds
 * the record to the worker's metrics (the worker deferred them). The JSONL merge then reads final values.
 *
 * After the run sg_export_jsonl maps each log, checks it end to end, keeps a 24-byte index entry per measured
 * record, sorts those by intended time and writes the lines. Warmup records are kept in the log but never
 * exported.
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
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECLOG_MAGIC "SGRECLOG"
#define RECLOG_VERSION                                                                                                 \
    8u /* 6: the HTTP trace (send start, response head, connection set-up, FLAG_TLS), FLAG_URL,                        \
        * FLAG_RAMP; 7: FLAG_TOOLS and the first tool-call time, the presence of times a varint; 8: FLAG_MEDIA */
#define RECLOG_BUF (64u * 1024u)
#define REC_MARKER 0xA5u
#define FLAG_STREAMING 1u
#define FLAG_WARMUP 2u
#define FLAG_TEXT 4u /* output text follows the events */
#define FLAG_RESENT 8u
#define FLAG_NO_OUTPUT 16u
#define FLAG_SESSION 32u         /* a turn of a multi-turn session: session and turn hold it */
#define FLAG_REASONING_USAGE 64u /* reasoning_tokens is the server's usage */
#define FLAG_TLS 128u            /* sent over TLS */
#define FLAG_URL 256u            /* several URLs: the URL's index follows the events' count */
#define FLAG_RAMP 512u           /* intended inside a ramp */
#define FLAG_TOOLS 1024u         /* the response made tool calls: their counts follow (and tool_text_len) */
#define FLAG_MEDIA 2048u         /* the request carried images or audio: their counts and bytes follow the tools' */
#define FLAG_ALL 4095u
/* A stream of more than 16 Mi events is not a record we wrote: treat it as corruption. */
#define MAX_EVENTS (1u << 24)
/* The most a record's fields take before its events: about 45 varints of at most 10 bytes (room for 76) and the
 * message. */
#define HEAD_MAX (768u + SG_RECORD_MSG)
#define EVENT_MAX 5u /* a zigzag varint of a difference of two gaps between u32s: under 2^35 */
#define FIN_SIZE 17u /* osl_tokenizer i32, osl u32, reasoning_tokens u32, osl_source u8, tool_tokens u32 */
#define BODY_MAX ((size_t)HEAD_MAX + (size_t)MAX_EVENTS * EVENT_MAX + SG_RECORD_TEXT_MAX + FIN_SIZE)

/* Bits of the presence byte: which times are not 0. */
enum {
    T_SENT,
    T_FIRST_BYTE,
    T_FIRST_TOKEN,
    T_SECOND_TOKEN,
    T_END,
    T_FIRST_OUTPUT,
    T_SEND_START,
    T_HEAD,
    T_FIRST_TOOL,
    T__COUNT
};
_Static_assert(T__COUNT <= 32, "the presence varint has a bit per time");

struct file_header {
    char magic[8];
    uint32_t version;
    uint32_t reserved;
};
_Static_assert(sizeof(struct file_header) == 16, "file header layout");

/* One record's fields, decoded (the exporters read these). */
struct wire_rec {
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
    int64_t first_output_ns;
    int64_t send_start_ns;
    int64_t head_ns;
    int64_t conn_connect_ns;
    int64_t conn_tls_ns;
    int32_t http_status;
    uint8_t err_class;
    uint8_t osl_source;
    uint16_t flags;
    uint8_t url;
    uint32_t isl;
    int32_t isl_server;
    int32_t isl_cached;
    uint32_t osl;
    int32_t osl_server;
    int32_t osl_tokenizer;
    uint32_t max_tokens;
    uint32_t content_events;
    uint32_t reasoning_tokens;
    uint32_t reasoning_events;
    uint32_t msg_len;
    uint32_t n_events;
    uint64_t response_bytes;
    uint32_t text_len;
    uint32_t reasoning_text_len;
    uint64_t session;
    uint32_t turn;
    int64_t first_tool_ns;
    uint32_t tool_calls;
    uint32_t tool_events;
    uint32_t tool_tokens;
    uint32_t tool_text_len;
    uint32_t images, audios, media_bytes;
};

/* ---------- varints ---------- */

static inline uint64_t zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzz(uint64_t u)
{
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static inline unsigned char *put_v(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static inline unsigned v_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A varint at *p before end into *v; false when it runs past end or past 10 bytes. */
static inline bool get_v(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    const unsigned char *q = *p;
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 70 && q < end; shift += 7) {
        unsigned char b = *q++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            *p = q;
            return true;
        }
    }
    return false;
}

/* A decoder over one record's body: ok turns false at the first bad field and stays so. */
typedef struct {
    const unsigned char *p, *end;
    bool ok;
} dec_t;

static inline uint64_t d_u64(dec_t *d)
{
    if (SG_LIKELY(d->p < d->end && *d->p < 0x80)) /* most fields are one byte */
        return *d->p++;
    uint64_t v = 0;
    if (d->ok && !get_v(&d->p, d->end, &v))
        d->ok = false;
    return d->ok ? v : 0;
}

static inline uint32_t d_u32(dec_t *d)
{
    uint64_t v = d_u64(d);
    if (v > UINT32_MAX)
        d->ok = false;
    return d->ok ? (uint32_t)v : 0;
}

static inline int32_t d_i32(dec_t *d)
{
    int64_t v = unzz(d_u64(d));
    if (v < INT32_MIN || v > INT32_MAX)
        d->ok = false;
    return d->ok ? (int32_t)v : 0;
}

static const unsigned char *d_bytes(dec_t *d, size_t n)
{
    if (!d->ok || (size_t)(d->end - d->p) < n) {
        d->ok = false;
        return NULL;
    }
    const unsigned char *q = d->p;
    d->p += n;
    return q;
}

/* ---------- encoding ---------- */

/* The record's fields up to its events (no marker, no length) into h (HEAD_MAX bytes); its length. */
static size_t encode_head(unsigned char *h, const sg_record_t *r, bool has_text, uint32_t text_len, uint32_t n_events,
                          uint32_t msg_len)
{
    unsigned flags = (r->streaming ? FLAG_STREAMING : 0) | (r->warmup ? FLAG_WARMUP : 0) | (has_text ? FLAG_TEXT : 0) |
                     (r->resent ? FLAG_RESENT : 0) | (r->no_output ? FLAG_NO_OUTPUT : 0) |
                     (r->in_session ? FLAG_SESSION : 0) | (r->reasoning_from_usage ? FLAG_REASONING_USAGE : 0) |
                     (r->tls ? FLAG_TLS : 0) | (r->multi_url ? FLAG_URL : 0) | (r->ramp ? FLAG_RAMP : 0) |
                     (r->tool_calls || r->tool_events ? FLAG_TOOLS : 0) | (r->images || r->audios ? FLAG_MEDIA : 0);
    const int64_t t[T__COUNT] = {r->sent_ns,         r->first_byte_ns, r->first_token_ns, r->second_token_ns, r->end_ns,
                                 r->first_output_ns, r->send_start_ns, r->head_ns,        r->first_tool_ns};
    unsigned present = 0;
    for (unsigned i = 0; i < T__COUNT; i++)
        present |= t[i] ? 1u << i : 0;
    unsigned char *p = h;
    p = put_v(p, flags);
    p = put_v(p, present);
    p = put_v(p, r->id);
    p = put_v(p, r->worker);
    p = put_v(p, r->payload);
    p = put_v(p, r->model);
    p = put_v(p, zz(r->intended_ns));
    for (unsigned i = 0; i < T__COUNT; i++)
        if (t[i]) /* the distance in two's complement: exact for any two times */
            p = put_v(p, zz((int64_t)((uint64_t)t[i] - (uint64_t)r->intended_ns)));
    p = put_v(p, zz(r->http_status));
    *p++ = r->err_class;
    p = put_v(p, r->isl);
    p = put_v(p, zz(r->isl_server));
    p = put_v(p, zz(r->isl_cached));
    if (!has_text) { /* with text these are in the fixed block the OSL pass rewrites */
        *p++ = r->osl_source;
        p = put_v(p, r->osl);
        p = put_v(p, zz(r->osl_tokenizer));
        p = put_v(p, r->reasoning_tokens);
    }
    p = put_v(p, zz(r->osl_server));
    p = put_v(p, r->max_tokens);
    p = put_v(p, r->content_events);
    p = put_v(p, r->reasoning_events);
    p = put_v(p, r->response_bytes);
    p = put_v(p, (uint64_t)(r->conn_connect_ns > 0 ? r->conn_connect_ns : 0));
    p = put_v(p, (uint64_t)(r->conn_tls_ns > 0 ? r->conn_tls_ns : 0));
    p = put_v(p, msg_len);
    memcpy(p, r->err_msg, msg_len);
    p += msg_len;
    p = put_v(p, n_events);
    if (r->multi_url)
        p = put_v(p, r->url);
    if (r->in_session) {
        p = put_v(p, r->session);
        p = put_v(p, r->turn);
    }
    if (has_text) {
        p = put_v(p, text_len);
        p = put_v(p, r->reasoning_text_len <= text_len ? r->reasoning_text_len : 0);
    }
    if (flags & FLAG_TOOLS) {
        p = put_v(p, r->tool_calls);
        p = put_v(p, r->tool_events);
        if (has_text)
            p = put_v(p, r->tool_text_len <= text_len ? r->tool_text_len : 0);
        else
            p = put_v(p, r->tool_tokens); /* with text: in the fixed block */
    }
    if (flags & FLAG_MEDIA) {
        p = put_v(p, r->images);
        p = put_v(p, r->audios);
        p = put_v(p, r->media_bytes);
    }
    return (size_t)(p - h);
}

static void encode_fin(unsigned char *f, int32_t osl_tokenizer, uint32_t osl, uint32_t reasoning_tokens,
                       uint8_t osl_source, uint32_t tool_tokens)
{
    memcpy(f, &osl_tokenizer, 4);
    memcpy(f + 4, &osl, 4);
    memcpy(f + 8, &reasoning_tokens, 4);
    f[12] = osl_source;
    memcpy(f + 13, &tool_tokens, 4);
}

/* ---------- the writer thread (async logs) ---------- */

typedef struct buf {
    size_t len;
    unsigned char data[RECLOG_BUF];
} buf_t;

/* Single producer, single consumer; capacity a power of two no smaller than the buffers that exist. */
typedef struct {
    _Atomic size_t head, tail;
    size_t mask;
    buf_t **slot;
} ring_t;

static void ring_push(ring_t *q, buf_t *b)
{
    size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    q->slot[t & q->mask] = b;
    atomic_store_explicit(&q->tail, t + 1, memory_order_release);
}

static buf_t *ring_pop(ring_t *q)
{
    size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (h == atomic_load_explicit(&q->tail, memory_order_acquire))
        return NULL;
    buf_t *b = q->slot[h & q->mask];
    atomic_store_explicit(&q->head, h + 1, memory_order_release);
    return b;
}

/* What the consumer could pop now (at least). */
static size_t ring_count(ring_t *q)
{
    return atomic_load_explicit(&q->tail, memory_order_acquire) - atomic_load_explicit(&q->head, memory_order_relaxed);
}

struct sg_reclog {
    int fd;
    int err; /* sticky: the first error is what close reports (worker side) */
    bool async;
    int delay_ms; /* SURGE_TEST_WRITE_DELAY_MS: a slow disk, for tests */
    char *path;
    /* the buffer being filled; sync logs write it when full */
    buf_t *cur;
    /* async only */
    ring_t full;  /* worker -> writer */
    ring_t spare; /* writer -> worker: written buffers to reuse */
    size_t n_bufs, max_bufs;
    _Atomic int werr;         /* the writer's first write error */
    _Atomic uint64_t dropped; /* records the worker dropped: no buffer was free */
    uint64_t dropped_told;    /* writer side: how many it has reported */
    _Atomic bool closing;     /* the worker pushed its last buffer */
    sem_t done;               /* the writer wrote everything after closing */
    buf_t **bufs;             /* every buffer, to free at close */
};

static int write_all(const sg_reclog_t *l, const unsigned char *p, size_t len)
{
    if (SG_UNLIKELY(l->delay_ms > 0)) { /* test-only: a disk this slow per write */
        struct timespec ts = {l->delay_ms / 1000, (long)(l->delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    while (len) {
        ssize_t n = write(l->fd, p, len);
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

static struct {
    pthread_mutex_t life; /* refs, start and stop (held across the join) */
    unsigned refs;
    pthread_t thread;
    sem_t wake;
    pthread_mutex_t mu; /* the registry and stop */
    sg_reclog_t **logs;
    size_t n_logs, cap_logs;
    bool stop;
} g_wr = {.life = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER};

static void writer_drain(sg_reclog_t *l)
{
    buf_t *b;
    while ((b = ring_pop(&l->full))) {
        if (!atomic_load_explicit(&l->werr, memory_order_relaxed)) {
            int e = write_all(l, b->data, b->len);
            if (e)
                atomic_store_explicit(&l->werr, e, memory_order_relaxed);
        }
        b->len = 0;
        ring_push(&l->spare, b);
    }
    uint64_t dropped = atomic_load_explicit(&l->dropped, memory_order_relaxed);
    if (dropped != l->dropped_told && !l->dropped_told)
        fprintf(stderr,
                "surge: the record writer is behind on %s: the worker holds %zu KiB of records and is dropping "
                "new ones (counted; the per-request files will miss them)\n",
                l->path, l->max_bufs * RECLOG_BUF >> 10);
    l->dropped_told = dropped;
}

static void *writer_main(void *arg)
{
    (void)arg;
    sg_reclog_t **snap = NULL;
    size_t cap = 0;
    for (;;) {
        while (sem_wait(&g_wr.wake) != 0 && errno == EINTR) {
        }
        pthread_mutex_lock(&g_wr.mu);
        bool stop = g_wr.stop;
        size_t n = g_wr.n_logs;
        if (n > cap) {
            sg_reclog_t **ns = realloc(snap, n * sizeof(*ns));
            if (ns) {
                snap = ns;
                cap = n;
            }
        }
        n = n < cap ? n : cap; /* out of memory: the rest on a later wake */
        if (n)
            memcpy(snap, g_wr.logs, n * sizeof(*snap));
        pthread_mutex_unlock(&g_wr.mu);
        /* only this thread removes a log from the registry: the snapshot's logs stay valid */
        for (size_t i = 0; i < n; i++) {
            sg_reclog_t *l = snap[i];
            bool closing = atomic_load_explicit(&l->closing, memory_order_acquire);
            writer_drain(l);
            if (!closing)
                continue;
            pthread_mutex_lock(&g_wr.mu);
            for (size_t j = 0; j < g_wr.n_logs; j++)
                if (g_wr.logs[j] == l) {
                    g_wr.logs[j] = g_wr.logs[--g_wr.n_logs];
                    break;
                }
            pthread_mutex_unlock(&g_wr.mu);
            sem_post(&l->done);
        }
        if (stop)
            break;
    }
    free(snap);
    return NULL;
}

/* One more async log: the writer thread starts with the first. */
static int writer_ref(void)
{
    pthread_mutex_lock(&g_wr.life);
    int rc = 0;
    if (!g_wr.refs) {
        g_wr.stop = false;
        if (sem_init(&g_wr.wake, 0, 0) != 0) {
            rc = -errno;
        } else if ((rc = -pthread_create(&g_wr.thread, NULL, writer_main, NULL)) != 0) {
            sem_destroy(&g_wr.wake);
        }
    }
    if (!rc)
        g_wr.refs++;
    pthread_mutex_unlock(&g_wr.life);
    return rc;
}

/* One async log less: the writer thread ends with the last. */
static void writer_unref(void)
{
    pthread_mutex_lock(&g_wr.life);
    if (--g_wr.refs == 0) {
        pthread_mutex_lock(&g_wr.mu);
        g_wr.stop = true;
        pthread_mutex_unlock(&g_wr.mu);
        sem_post(&g_wr.wake);
        pthread_join(g_wr.thread, NULL);
        sem_destroy(&g_wr.wake);
        free(g_wr.logs);
        g_wr.logs = NULL;
        g_wr.n_logs = g_wr.cap_logs = 0;
    }
    pthread_mutex_unlock(&g_wr.life);
}

static int writer_register(sg_reclog_t *l)
{
    pthread_mutex_lock(&g_wr.mu);
    int rc = 0;
    if (g_wr.n_logs == g_wr.cap_logs) {
        size_t nc = g_wr.cap_logs ? g_wr.cap_logs * 2 : 16;
        sg_reclog_t **nl = realloc(g_wr.logs, nc * sizeof(*nl));
        if (nl) {
            g_wr.logs = nl;
            g_wr.cap_logs = nc;
        } else {
            rc = -ENOMEM;
        }
    }
    if (!rc)
        g_wr.logs[g_wr.n_logs++] = l;
    pthread_mutex_unlock(&g_wr.mu);
    return rc;
}

/* ---------- the worker's side ---------- */

/* A buffer to fill: a written one back from the writer, else a new one while under the cap; NULL when none. */
static buf_t *take_buf(sg_reclog_t *l)
{
    buf_t *b = ring_pop(&l->spare);
    if (b || l->n_bufs == l->max_bufs)
        return b;
    b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->len = 0;
    l->bufs[l->n_bufs++] = b;
    return b;
}

/* The full current buffer out (sync: written; async: to the writer) and an empty one in its place. */
static int next_buf(sg_reclog_t *l)
{
    if (!l->async) {
        if (!l->err && l->cur->len)
            l->err = write_all(l, l->cur->data, l->cur->len);
        l->cur->len = 0;
        return l->err;
    }
    ring_push(&l->full, l->cur);
    sem_post(&g_wr.wake); /* once per 64 KiB: a futex wake only while the writer sleeps */
    l->cur = take_buf(l);
    if (!l->cur) /* append checked the room first: only malloc can fail here */
        l->err = -ENOMEM;
    return l->err;
}

static int put(sg_reclog_t *l, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        if (l->cur->len == RECLOG_BUF && next_buf(l))
            return l->err;
        size_t n = RECLOG_BUF - l->cur->len;
        n = n < len ? n : len;
        memcpy(l->cur->data + l->cur->len, p, n);
        l->cur->len += n;
        p += n;
        len -= n;
    }
    return l->err;
}

static void reclog_free(sg_reclog_t *l)
{
    if (l->async) {
        for (size_t i = 0; i < l->n_bufs; i++)
            free(l->bufs[i]);
        free(l->bufs);
        free(l->full.slot);
        free(l->spare.slot);
    } else {
        free(l->cur);
    }
    free(l->path);
    free(l);
}

static sg_reclog_t *reclog_new(const char *path, bool async, size_t cap_bytes, int *err)
{
    sg_reclog_t *l = calloc(1, sizeof(*l));
    if (!l) {
        *err = -ENOMEM;
        return NULL;
    }
    l->fd = -1;
    l->async = async;
    l->path = strdup(path);
    const char *delay = getenv("SURGE_TEST_WRITE_DELAY_MS");
    l->delay_ms = delay ? atoi(delay) : 0;
    bool ok = l->path != NULL;
    if (async) {
        l->max_bufs = cap_bytes / RECLOG_BUF < 2 ? 2 : cap_bytes / RECLOG_BUF;
        size_t ring = 1;
        while (ring < l->max_bufs + 1)
            ring <<= 1;
        l->full.mask = l->spare.mask = ring - 1;
        l->full.slot = calloc(ring, sizeof(buf_t *));
        l->spare.slot = calloc(ring, sizeof(buf_t *));
        l->bufs = calloc(l->max_bufs, sizeof(buf_t *));
        ok = ok && l->full.slot && l->spare.slot && l->bufs && (l->cur = take_buf(l));
    } else {
        ok = ok && (l->cur = malloc(sizeof(*l->cur)));
        if (ok)
            l->cur->len = 0;
    }
    if (!ok) {
        reclog_free(l);
        *err = -ENOMEM;
        return NULL;
    }
    l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        *err = -errno;
        reclog_free(l);
        return NULL;
    }
    struct file_header h = {.version = RECLOG_VERSION};
    memcpy(h.magic, RECLOG_MAGIC, sizeof(h.magic));
    (void)put(l, &h, sizeof(h)); /* fits in the empty buffer */
    *err = 0;
    return l;
}

sg_reclog_t *sg_reclog_open(const char *path, int *err)
{
    return reclog_new(path, false, 0, err);
}

sg_reclog_t *sg_reclog_open_async(const char *path, size_t cap_bytes, int *err)
{
    sg_reclog_t *l = reclog_new(path, true, cap_bytes, err);
    if (!l)
        return NULL;
    int rc = sem_init(&l->done, 0, 0) != 0 ? -errno : 0;
    if (rc) {
        close(l->fd);
        reclog_free(l);
        *err = rc;
        return NULL;
    }
    if (!rc && !(rc = writer_ref()) && (rc = writer_register(l)))
        writer_unref();
    if (rc) {
        sem_destroy(&l->done);
        close(l->fd);
        reclog_free(l);
        *err = rc;
        return NULL;
    }
    return l;
}

uint64_t sg_reclog_dropped(const sg_reclog_t *l)
{
    return l && l->async ? atomic_load_explicit(&((sg_reclog_t *)l)->dropped, memory_order_relaxed) : 0;
}

/* Room for need bytes without waiting for the writer: the current buffer, the written ones back, the ones not
 * yet made. */
static bool has_room(sg_reclog_t *l, size_t need)
{
    size_t room = RECLOG_BUF - l->cur->len;
    if (room >= need)
        return true;
    size_t bufs = ring_count(&l->spare) + (l->max_bufs - l->n_bufs);
    return bufs >= (need - room + RECLOG_BUF - 1) / RECLOG_BUF;
}

int sg_reclog_append(sg_reclog_t *l, const sg_record_t *r)
{
    if (l->err)
        return l->err;
    uint32_t n_events = r->event_us ? r->n_events : 0;
    bool has_text = r->has_text && r->text_len <= SG_RECORD_TEXT_MAX && (r->text || !r->text_len);
    uint32_t text_len = has_text ? r->text_len : 0;
    uint32_t msg_len = (uint32_t)strnlen(r->err_msg, SG_RECORD_MSG - 1);
    if (SG_UNLIKELY(n_events > MAX_EVENTS))
        n_events = MAX_EVENTS; /* never: a record so long is corrupt to the reader */
    unsigned char head[1 + 10 + HEAD_MAX];
    size_t head_len = encode_head(head + 11, r, has_text, text_len, n_events, msg_len);
    size_t ev_len = 0;
    int64_t prev = 0, prev_gap = 0;
    for (uint32_t i = 0; i < n_events; i++) {
        int64_t gap = (int64_t)r->event_us[i] - prev;
        ev_len += v_len(zz(gap - prev_gap));
        prev = r->event_us[i];
        prev_gap = gap;
    }
    size_t body = head_len + ev_len + text_len + (has_text ? FIN_SIZE : 0);
    /* marker and length right before the head, so that they go out in one copy */
    unsigned lv = v_len(body);
    unsigned char *start = head + 11 - lv - 1;
    start[0] = REC_MARKER;
    put_v(start + 1, body);
    if (l->async && !has_room(l, 1 + lv + body)) {
        /* the writer is that far behind: drop the record whole, never wait (the writer reports the count) */
        atomic_store_explicit(&l->dropped, atomic_load_explicit(&l->dropped, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return SG_RECLOG_DROPPED;
    }
    if (put(l, start, 1 + lv + head_len))
        return l->err;
    unsigned char evbuf[256 * EVENT_MAX];
    prev = prev_gap = 0;
    for (uint32_t i = 0; i < n_events;) {
        unsigned char *p = evbuf;
        for (uint32_t end = n_events - i > 256 ? i + 256 : n_events; i < end; i++) {
            int64_t gap = (int64_t)r->event_us[i] - prev;
            p = put_v(p, zz(gap - prev_gap)); /* steady token gaps cost a byte each */
            prev = r->event_us[i];
            prev_gap = gap;
        }
        if (put(l, evbuf, (size_t)(p - evbuf)))
            return l->err;
    }
    if (has_text) {
        unsigned char fin[FIN_SIZE];
        encode_fin(fin, r->osl_tokenizer, r->osl, r->reasoning_tokens, r->osl_source, r->tool_tokens);
        if (put(l, r->text, text_len) || put(l, fin, sizeof(fin)))
            return l->err;
    }
    return 0;
}

int sg_reclog_close(sg_reclog_t *l)
{
    if (!l)
        return 0;
    int err = l->err;
    if (l->async) {
        if (l->cur && l->cur->len) {
            ring_push(&l->full, l->cur);
            l->cur = NULL;
        }
        atomic_store_explicit(&l->closing, true, memory_order_release);
        sem_post(&g_wr.wake);
        while (sem_wait(&l->done) != 0 && errno == EINTR) {
        }
        sem_destroy(&l->done);
        writer_unref();
        int werr = atomic_load_explicit(&l->werr, memory_order_relaxed);
        err = err ? err : werr;
    } else if (!err && l->cur->len) {
        err = write_all(l, l->cur->data, l->cur->len);
    }
    if (close(l->fd) != 0 && !err)
        err = -errno;
    reclog_free(l);
    return err;
}

/* ---------- reading ---------- */

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
    /* writable: the finalize pass patches records in place, shared so the JSONL merge sees them */
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
    if (memcmp(h.magic, RECLOG_MAGIC, sizeof(h.magic)) != 0 || h.version != RECLOG_VERSION)
        return SG_EPROTO;
    return 0;
}

/* One record as it lies in a mapped log. msg, ev and text point into the map. */
typedef struct {
    struct wire_rec w;
    size_t off; /* of the marker */
    const char *msg;
    const unsigned char *ev;  /* n_events varints */
    const unsigned char *fin; /* the fixed block (FLAG_TEXT), else NULL */
    const char *text;
} rec_view_t;

/* The record at off into v, checked end to end; the offset after it, or 0 when it is corrupt. */
static size_t decode_at(const mapped_t *mp, size_t off, rec_view_t *v)
{
    const unsigned char *p = mp->base + off, *end = mp->base + mp->size;
    uint64_t body;
    if (*p++ != REC_MARKER || !get_v(&p, end, &body) || body > BODY_MAX || (uint64_t)(end - p) < body)
        return 0;
    dec_t d = {p, p + body, true};
    struct wire_rec *w = &v->w;
    memset(w, 0, sizeof(*w));
    uint64_t flags = d_u64(&d);
    w->flags = (uint16_t)flags;
    uint64_t present = d_u64(&d);
    w->id = d_u64(&d);
    w->worker = d_u32(&d);
    w->payload = d_u32(&d);
    w->model = d_u32(&d);
    w->intended_ns = unzz(d_u64(&d));
    int64_t *t[T__COUNT] = {&w->sent_ns,         &w->first_byte_ns, &w->first_token_ns, &w->second_token_ns, &w->end_ns,
                            &w->first_output_ns, &w->send_start_ns, &w->head_ns,        &w->first_tool_ns};
    for (unsigned i = 0; i < T__COUNT; i++)
        if (present & (1ull << i))
            *t[i] = (int64_t)((uint64_t)w->intended_ns + (uint64_t)unzz(d_u64(&d)));
    w->http_status = d_i32(&d);
    const unsigned char *ec = d_bytes(&d, 1);
    w->err_class = ec ? *ec : 0;
    w->isl = d_u32(&d);
    w->isl_server = d_i32(&d);
    w->isl_cached = d_i32(&d);
    bool text = flags & FLAG_TEXT;
    if (!text) {
        const unsigned char *os = d_bytes(&d, 1);
        w->osl_source = os ? *os : 0;
        w->osl = d_u32(&d);
        w->osl_tokenizer = d_i32(&d);
        w->reasoning_tokens = d_u32(&d);
    }
    w->osl_server = d_i32(&d);
    w->max_tokens = d_u32(&d);
    w->content_events = d_u32(&d);
    w->reasoning_events = d_u32(&d);
    w->response_bytes = d_u64(&d);
    w->conn_connect_ns = (int64_t)(d_u64(&d) & INT64_MAX);
    w->conn_tls_ns = (int64_t)(d_u64(&d) & INT64_MAX);
    w->msg_len = d_u32(&d);
    if (w->msg_len >= SG_RECORD_MSG)
        return 0;
    v->msg = (const char *)d_bytes(&d, w->msg_len);
    w->n_events = d_u32(&d);
    if (flags & FLAG_URL) {
        uint32_t u = d_u32(&d);
        if (u >= 256)
            return 0;
        w->url = (uint8_t)u;
    }
    if (flags & FLAG_SESSION) {
        w->session = d_u64(&d);
        w->turn = d_u32(&d);
    }
    if (text) {
        w->text_len = d_u32(&d);
        w->reasoning_text_len = d_u32(&d);
    }
    if (flags & FLAG_TOOLS) {
        w->tool_calls = d_u32(&d);
        w->tool_events = d_u32(&d);
        if (text)
            w->tool_text_len = d_u32(&d);
        else
            w->tool_tokens = d_u32(&d);
    }
    if (flags & FLAG_MEDIA) {
        w->images = d_u32(&d);
        w->audios = d_u32(&d);
        w->media_bytes = d_u32(&d);
        if (w->images > UINT16_MAX || w->audios > UINT16_MAX)
            return 0;
    }
    if (!d.ok || present >> T__COUNT || w->n_events > MAX_EVENTS || w->text_len > SG_RECORD_TEXT_MAX ||
        w->reasoning_text_len > w->text_len || w->tool_text_len > w->text_len)
        return 0;
    v->ev = d.p;
    for (uint32_t i = 0; i < w->n_events && d.ok; i++) {
        int64_t delta = unzz(d_u64(&d));
        (void)delta;
    }
    v->text = (const char *)d_bytes(&d, w->text_len);
    v->fin = text ? d_bytes(&d, FIN_SIZE) : NULL;
    if (!d.ok || d.p != d.end)
        return 0;
    if (v->fin) {
        memcpy(&w->osl_tokenizer, v->fin, 4);
        memcpy(&w->osl, v->fin + 4, 4);
        memcpy(&w->reasoning_tokens, v->fin + 8, 4);
        w->osl_source = v->fin[12];
        memcpy(&w->tool_tokens, v->fin + 13, 4);
    }
    /* ids count up from 0: one past INT64_MAX is corruption, and JSON readers (jansson) refuse it */
    if (w->err_class >= SG_ERRC__COUNT || w->osl_source > SG_OSL_EVENTS || (flags & ~(uint64_t)FLAG_ALL) ||
        w->osl_tokenizer < -1 || w->id > INT64_MAX || w->session > INT64_MAX)
        return 0;
    v->off = off;
    return (size_t)(d.end - mp->base);
}

/*
 * What the export's index needs of the record at off: its flags, id and intended time, the first fields of its
 * body. The offset after it, or 0 when its frame is broken. The rest of the body is checked when the record is
 * written (write_record), before the output files are committed: each record decoded once, not twice (the second
 * decode was 5% of the whole process in the h2 benchmark).
 */
static size_t head_at(const mapped_t *mp, size_t off, uint64_t *flags, uint64_t *id, int64_t *intended_ns)
{
    const unsigned char *p = mp->base + off, *end = mp->base + mp->size;
    uint64_t body;
    if (*p++ != REC_MARKER || !get_v(&p, end, &body) || body > BODY_MAX || (uint64_t)(end - p) < body)
        return 0;
    dec_t d = {p, p + body, true};
    *flags = d_u64(&d);
    (void)d_u64(&d); /* the times present */
    *id = d_u64(&d);
    (void)d_u32(&d); /* worker */
    (void)d_u32(&d); /* payload */
    (void)d_u32(&d); /* model */
    *intended_ns = unzz(d_u64(&d));
    return d.ok ? (size_t)(d.end - mp->base) : 0;
}

/* The record at *off, checked, and *off moved past it. 1: got one; 0: end of the log; SG_EPROTO: corrupt. */
static int next_rec(const mapped_t *mp, size_t *off, rec_view_t *v)
{
    if (*off >= mp->size)
        return 0;
    size_t next = decode_at(mp, *off, v);
    if (!next)
        return SG_EPROTO;
    *off = next;
    return 1;
}

/* The event offsets of a view, one after another. */
typedef struct {
    const unsigned char *p;
    int64_t prev, prev_gap;
} ev_iter_t;

static inline uint32_t ev_next(ev_iter_t *it)
{
    uint64_t u = 0;
    (void)get_v(&it->p, it->p + 10, &u); /* checked by decode_at */
    it->prev_gap += unzz(u);
    it->prev += it->prev_gap;
    return (uint32_t)it->prev;
}

/* Append one log's measured records to the index: each record's frame and head checked (head_at), the warm-up
 * records, which are not written, checked end to end. */
static int scan_log(const mapped_t *mp, uint32_t log, idx_t **idx, size_t *n, size_t *cap)
{
    int rc = check_file_header(mp);
    if (rc)
        return rc;
    if (mp->size >> (64 - LOC_LOG_BITS))
        return SG_ETOOBIG;
    size_t off = sizeof(struct file_header);
    while (off < mp->size) {
        uint64_t flags, id;
        int64_t intended_ns;
        size_t at = off;
        rec_view_t v;
        off = head_at(mp, at, &flags, &id, &intended_ns);
        if (off && (flags & FLAG_WARMUP))
            off = decode_at(mp, at, &v);
        if (!off)
            return SG_EPROTO;
        if (flags & FLAG_WARMUP)
            continue;
        if (*n == *cap) {
            /* first: room for as many records as the log can hold at 40 bytes each (few re-copies while it fills) */
            size_t nc = *cap ? *cap * 2 : mp->size / 40 + 1;
            idx_t *ni = realloc(*idx, nc * sizeof(*ni));
            if (!ni)
                return -ENOMEM;
            *idx = ni;
            *cap = nc;
        }
        (*idx)[(*n)++] = (idx_t){intended_ns, id, ((uint64_t)at << LOC_LOG_BITS) | log};
    }
    return 0;
}

/* A log record as an sg_record_t; its events decoded into *events (grown as needed). 0 or -ENOMEM. */
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
    r.send_start_ns = w->send_start_ns;
    r.head_ns = w->head_ns;
    r.conn_connect_ns = w->conn_connect_ns;
    r.conn_tls_ns = w->conn_tls_ns;
    r.conn_reused = w->send_start_ns && !w->conn_connect_ns;
    r.tls = w->flags & FLAG_TLS;
    r.multi_url = w->flags & FLAG_URL;
    r.url = w->url;
    r.reasoning_tokens = w->reasoning_tokens;
    r.reasoning_events = w->reasoning_events;
    r.reasoning_from_usage = w->flags & FLAG_REASONING_USAGE;
    r.reasoning_text_len = w->reasoning_text_len;
    r.tool_calls = w->tool_calls;
    r.tool_events = w->tool_events;
    r.tool_tokens = w->tool_tokens;
    r.tool_text_len = w->tool_text_len;
    r.first_tool_ns = w->first_tool_ns;
    r.images = (uint16_t)w->images;
    r.audios = (uint16_t)w->audios;
    r.media_bytes = w->media_bytes;
    r.warmup = w->flags & FLAG_WARMUP;
    r.ramp = w->flags & FLAG_RAMP;
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
    if (w->n_events) {
        if (w->n_events > *events_cap) {
            uint32_t *ne = realloc(*events, (size_t)w->n_events * sizeof(*ne));
            if (!ne)
                return -ENOMEM;
            *events = ne;
            *events_cap = w->n_events;
        }
        ev_iter_t it = {v->ev, 0, 0};
        for (uint32_t i = 0; i < w->n_events; i++)
            (*events)[i] = ev_next(&it);
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
            /* tool-call arguments: the tokens of the text's tail they fill */
            if (r.tool_text_len) {
                n = count(ctx, v.text + (w->text_len - r.tool_text_len), r.tool_text_len);
                if (n < 0) {
                    rc = (int)n;
                    break;
                }
                r.tool_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
                w->tool_tokens = r.tool_tokens;
            }
            encode_fin((unsigned char *)v.fin, w->osl_tokenizer, w->osl, w->reasoning_tokens, w->osl_source,
                       w->tool_tokens);
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

/*
 * The HTTP trace (docs/files.md): whether the connection was new and its set-up in exact ns (connect_ns;
 * tls_handshake_ns over https:// only, else null; 0 on a reused connection). The http_req_* phases follow from these
 * and the timeline's ns times (docs/files.md gives the sums); AIPerf's records carry them in ms. Writing them here as
 * well made every line 200 bytes longer and the export 2 us a request slower, for numbers the line already holds.
 */
static char *put_trace(char *p, const struct wire_rec *w)
{
    bool sent = w->send_start_ns != 0, tls = w->flags & FLAG_TLS;
    if (sent) {
        if (w->conn_connect_ns)
            SG_PUT_LIT(p, ",\"connection_reused\":false");
        else
            SG_PUT_LIT(p, ",\"connection_reused\":true");
    } else {
        SG_PUT_LIT(p, ",\"connection_reused\":null");
    }
    PUT_OPT_INT(p, "connect_ns", sent, w->conn_connect_ns);
    PUT_OPT_INT(p, "tls_handshake_ns", sent && tls, w->conn_tls_ns);
    return p;
}

/* Room for everything in a line but the model and the token times: the keys (about 1,100 bytes), 30-odd numbers of
 * at most 23 bytes, the error class and the escaped error message. */
#define LINE_FIXED_MAX (3072 + SG_JSON_ESCAPED_MAX(SG_RECORD_MSG))
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
static void write_line(sg_outbuf_t *ob, const rec_view_t *vp, int64_t base, const model_json_t *models, size_t n_models)
{
    const rec_view_t v = *vp;
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
    if (w->flags & FLAG_URL) {
        SG_PUT_LIT(p, ",\"url\":");
        p = sg_put_u64(p, w->url);
    }
    if (w->flags & FLAG_RAMP)
        SG_PUT_LIT(p, ",\"ramp\":true");
    if (w->flags & FLAG_SESSION) {
        SG_PUT_LIT(p, ",\"session\":");
        p = sg_put_u64(p, w->session);
        SG_PUT_LIT(p, ",\"turn\":");
        p = sg_put_u64(p, w->turn);
    }
    bool cancelled = w->err_class == SG_ERRC_CANCELLED || w->err_class == SG_ERRC_CANCEL_TEST;
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
    PUT_REL_NS(p, "send_start_ns", w->send_start_ns, base);
    PUT_REL_NS(p, "response_head_ns", w->head_ns, base);
    p = put_trace(p, w);
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
    switch (output ? (int)w->osl_source : -1) { /* checked by decode_at */
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
    if (w->flags & FLAG_MEDIA) { /* only on requests that carried images or audio */
        PUT_OPT_INT(p, "images", true, w->images);
        PUT_OPT_INT(p, "audios", true, w->audios);
        PUT_OPT_INT(p, "media_bytes", true, w->media_bytes);
    }
    if (w->flags & FLAG_TOOLS) { /* only on responses that made tool calls */
        PUT_OPT_INT(p, "tool_calls", true, w->tool_calls);
        PUT_OPT_INT(p, "tool_call_tokens", true, w->tool_tokens);
        PUT_REL_NS(p, "first_tool_call_token_ns", w->first_tool_ns, base);
        PUT_MS(p, "time_to_first_tool_call_token_ms", w->first_tool_ns != 0, w->first_tool_ns - w->intended_ns);
    }
    SG_PUT_LIT(p, ",\"token_times_ms\":[");
    ob->len += (size_t)(p - start);
    if (w->first_token_ns) {
        int64_t first_ns = w->first_token_ns - w->intended_ns;
        ev_iter_t it = {v.ev, 0, 0};
        for (uint32_t i = 0; i < w->n_events;) {
            uint32_t end = w->n_events - i > TOKEN_TIMES_PER_ROOM ? i + TOKEN_TIMES_PER_ROOM : w->n_events;
            p = start = sg_outbuf_room(ob, (size_t)(end - i) * TOKEN_TIME_MAX);
            if (!p)
                return;
            for (; i < end; i++) {
                uint32_t us = ev_next(&it);
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
    rec_view_t v;
    if (!decode_at(mp, off, &v)) /* checked here, once for both lines (scan_log read its head only) */
        return SG_EPROTO;
    write_line(&o->surge, &v, base, models, out->n_models);
    if (!o->with_aiperf)
        return 0;
    sg_record_t r;
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
    /* A log whose frames are broken fails here, before the output exists; a record broken inside fails as it is
     * written, and the output files, still temporary, go (outputs_close): a bad log leaves no file behind. */
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
