/*
 * One mock worker: a thread with its own ring, listening socket (SO_REUSEPORT), connections, timer heap and
 * record buffer. Nothing is shared with other workers on the hot path.
 *
 * A connection answers its requests in order (HTTP/1.1 pipelining), so each keeps a FIFO of jobs; only the head
 * job is ever scheduled. A job renders into the connection's pending buffer when it falls due; at the end of
 * every loop turn each connection that got bytes is flushed with one send, so events due together leave
 * together. One send per connection is in flight at a time; the buffer it reads from is left alone until its
 * CQE, while new bytes go to the other buffer.
 *
 * A connection that opens with the HTTP/2 client preface (h2c, prior knowledge) is served by an nghttp2 server
 * session instead (proto/sg_h2srv.h): every stream's job runs on its own timer, its body is rendered into the
 * job's buffer and framed as DATA when the session is drained into the connection's pending buffer (at flush
 * time, so frames due together leave together). --drop-rate resets the stream (RST_STREAM INTERNAL_ERROR).
 *
 * --tls: every connection has an sg_tls_conn from the worker's server context. Received ciphertext is fed to it,
 * the handshake driven, and the plaintext read out goes to conn_recv as plaintext bytes would (so the preface
 * test above picks HTTP/2 for a client that selected h2 through ALPN). At flush time the pending buffer is
 * encrypted into the filter and its ciphertext sent, one send in flight (the wire buffer is unused).
 */
#define _GNU_SOURCE
#include "mock_internal.h"

#include "sg_api_request.h"
#include "sg_h1.h"
#include "sg_h2srv.h"
#include "sg_kserve.h"
#include "sg_loop.h"
#include "sg_workload.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING_ENTRIES 4096
#ifndef RECV_BUFS /* overridable so tests can starve the provided-buffer ring (-ENOBUFS) */
#define RECV_BUFS 1024
#endif
#define RECV_BUF_SIZE 8192
#define POOL_BUF 4096             /* output buffers of this size are recycled per worker */
#define POOL_MAX 256              /* at most this many idle ones are kept (1 MiB) */
#define OUT_HIGH_WATER (1u << 20) /* stop rendering a stream while this much waits to be sent */
#define RECORD_FLUSH_BYTES (64u << 10)
#define RECORD_FLUSH_NS (50 * 1000000LL) /* a record line reaches the file within this */
/* --fault-origin request: how often a worker that has taken no request yet looks whether another has */
#define FAULT_CLOCK_POLL_NS (2 * 1000000LL)
#define ACCEPT_RETRY_NS (10 * 1000000LL) /* after EMFILE and the like */
#define JOBS_KEPT 1024
#define H2_BODY_KEPT (16u << 10) /* a recycled job keeps an HTTP/2 body buffer up to this size */
/*
 * An HTTP/2 stream stops rendering while this much of its body waits for nghttp2 to take it: a client that opens
 * huge windows and stops reading then holds at most about twice this per stream in the mock (the body, and what
 * one drain moved into the connection's output while a send waits), not the whole response.
 */
#define H2_STREAM_HIGH_WATER (64u << 10)
#define TLS_PLAIN_BUF (32u << 10)

typedef struct sg_mock_conn conn_t;
struct sg_mock_conn {
    sg_op_t recv_op;
    sg_op_t send_op;
    sg_mock_worker_t *w;
    conn_t *prev, *next; /* the worker's open connections */
    conn_t *dirty_next;  /* the worker's list of connections to flush */
    sg_mock_job_t *q_head, *q_tail;
    sg_h1_req_t parser;
    sg_mock_buf_t out;  /* rendered, not yet handed to the kernel */
    sg_mock_buf_t wire; /* being sent; untouched until its CQE */
    size_t wire_off;
    uint64_t serial;
    int64_t recv_ns; /* when the bytes being parsed were reaped: the arrival time of requests in them */
    int fd;
    bool recv_armed;
    bool send_inflight;
    bool dirty;
    bool closing;           /* shut down; freed once no operation is in flight */
    bool close_after_flush; /* no more responses; close once what is rendered has been sent */
    bool read_stopped;      /* ignore further requests (after Connection: close or a parse error) */
    bool expect_checked;    /* the buffered partial request's head was looked at for Expect: 100-continue */
    bool proto_known;       /* the first bytes told HTTP/1.1 from the HTTP/2 preface */
    uint32_t h1_answered;   /* HTTP/1.1 requests taken on this connection (--close-after counts them) */
    uint8_t pre_n;
    char pre[SG_H2SRV_PREFACE_LEN]; /* the first bytes, while they still match the preface */
    sg_h2srv_t *h2;                 /* HTTP/2 connections only */
    sg_tls_conn_t *tls;             /* --tls only */
    bool tls_closed;                /* our close_notify is queued */
    /* --fault (docs/mock.md#faults) */
    bool half_close_after_flush; /* half-close: shutdown(SHUT_WR) once what is rendered has been sent */
    bool abort_close;            /* rst over HTTP/1.1: the close is a TCP reset (SO_LINGER 0) */
    bool h2_cut;                 /* HTTP/2 cut / half-close: one more drain, then nothing more is framed */
    bool h2_frozen;
    bool half_closed;  /* the write side is shut: nothing more is sent; the peer's close ends it */
    bool held_listed;  /* stall-read: in the worker's list of connections with received bytes held back */
    bool held_fault;   /* the requests being parsed came out of a stall-read window */
    uint8_t fault;     /* the per-connection fault drawn at accept (trickle, bwcap, goaway); NONE */
    uint8_t fault_idx; /* its --fault entry */
    uint32_t reqs;     /* requests received on this connection (goaway counts them) */
    int64_t pace_bytes, pace_gap_ns, pace_next_ns; /* trickle, bwcap: at most pace_bytes per send, this far apart */
    conn_t *held_next;
    sg_mock_buf_t held; /* stall-read: received bytes not yet read */
};

struct sg_mock_worker {
    sg_mock_server_t *srv;
    unsigned idx;
    int listen_fd;
    sg_loop_t loop;
    bool loop_ok;
    int init_err;
    const char *init_what;
    pthread_t thread;
    bool thread_started;

    sg_op_t accept_op;
    bool accept_armed;
    int64_t accept_retry_ns;

    sg_rng_t rng;
    uint64_t next_id;
    conn_t *conns;
    conn_t *dirty;
    sg_mock_job_t **heap;
    uint32_t heap_n, heap_cap;
    sg_mock_job_t *free_jobs;
    unsigned free_jobs_n;
    char **pool;
    unsigned pool_n;

    sg_mock_buf_t rec;
    int64_t rec_first_ns;
    sg_mock_buf_t slog; /* --send-log lines not yet written */

    /* --tokenizer: this thread's encoder, a scratch buffer, and the count of the last n-token text */
    sg_tok_enc_t *enc;
    sg_mock_buf_t scratch;
    uint32_t text_n;
    int64_t text_tokens; /* -1: nothing cached */

    sg_tls_ctx_t *tls_ctx; /* --tls */
    char *tls_buf;         /* TLS_PLAIN_BUF: plaintext out of sg_tls_read */

    sg_mock_stats_t st;
    struct sg_kserve_dec *kdec; /* gRPC requests; created on the first call */

    /* --fault */
    uint64_t jobs_live;                     /* requests in progress: a crash leaves them unanswered */
    int64_t pace_wake_ns;                   /* the earliest paced connection's next send */
    int64_t crash_ns, restart_ns;           /* INT64_MAX: none (to come) */
    int64_t rstall_start_ns, rstall_end_ns; /* stall-read window; equal: none */
    int64_t stall_start_ns, stall_end_ns;   /* --stall-start-ms/--stall-ms window, nothing sent; equal: none */
    bool faults_armed; /* the crash, stall-read and stall window times are set (fault_origin_ns known) */
    conn_t *held;      /* connections whose received bytes wait for the window's end */
};

static inline bool in_stall(const sg_mock_worker_t *w, int64_t now)
{
    return now >= w->stall_start_ns && now < w->stall_end_ns;
}

/* --fault crash and stall-read, and the --stall-start-ms window: their times, counted from origin. */
static void faults_arm(sg_mock_worker_t *w, int64_t origin)
{
    const sg_mock_opts_t *o = &w->srv->opts;
    w->faults_armed = true;
    if (o->stall_ms > 0) {
        w->stall_start_ns = origin + llround(o->stall_start_ms * 1e6);
        w->stall_end_ns = w->stall_start_ns + llround(o->stall_ms * 1e6);
    }
    for (unsigned k = 0; k < o->n_faults; k++) {
        const sg_mock_fault_t *f = &o->faults[k];
        if (f->kind == SG_MOCK_FAULT_CRASH) {
            w->crash_ns = origin + f->a;
            w->restart_ns = f->b >= 0 ? w->crash_ns + f->b : INT64_MAX;
        } else if (f->kind == SG_MOCK_FAULT_STALL_READ) {
            w->rstall_start_ns = origin + f->a;
            w->rstall_end_ns = w->rstall_start_ns + f->b;
        }
    }
}

/* --fault-origin request: the first request any worker takes (arriving at `arrival`) starts the fault clock. The
 * worker that takes it arms at once; the others see it at their next wake-up (next_deadline polls until then). */
static void faults_clock(sg_mock_worker_t *w, int64_t arrival)
{
    if (w->faults_armed)
        return;
    int64_t origin = 0;
    if (!atomic_compare_exchange_strong(&w->srv->fault_origin_ns, &origin, arrival))
        arrival = origin; /* another worker's request came first */
    faults_arm(w, arrival);
}

/* ---------- timer heap of head jobs, keyed by due_ns ---------- */

static inline void heap_set(sg_mock_worker_t *w, uint32_t i, sg_mock_job_t *j)
{
    w->heap[i] = j;
    j->heap_idx = i;
}

static void heap_up(sg_mock_worker_t *w, uint32_t i)
{
    sg_mock_job_t *j = w->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (w->heap[parent]->due_ns <= j->due_ns)
            break;
        heap_set(w, i, w->heap[parent]);
        i = parent;
    }
    heap_set(w, i, j);
}

static void heap_down(sg_mock_worker_t *w, uint32_t i)
{
    sg_mock_job_t *j = w->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= w->heap_n)
            break;
        if (child + 1 < w->heap_n && w->heap[child + 1]->due_ns < w->heap[child]->due_ns)
            child++;
        if (w->heap[child]->due_ns >= j->due_ns)
            break;
        heap_set(w, i, w->heap[child]);
        i = child;
    }
    heap_set(w, i, j);
}

static int heap_push(sg_mock_worker_t *w, sg_mock_job_t *j)
{
    if (w->heap_n == w->heap_cap) {
        uint32_t cap = w->heap_cap ? w->heap_cap * 2 : 256;
        sg_mock_job_t **h = realloc(w->heap, cap * sizeof(*h));
        if (!h)
            return -ENOMEM;
        w->heap = h;
        w->heap_cap = cap;
    }
    w->heap[w->heap_n] = j;
    j->heap_idx = w->heap_n++;
    heap_up(w, j->heap_idx);
    return 0;
}

static void heap_remove(sg_mock_worker_t *w, sg_mock_job_t *j)
{
    uint32_t i = j->heap_idx;
    j->heap_idx = SG_MOCK_NOT_IN_HEAP;
    sg_mock_job_t *last = w->heap[--w->heap_n];
    if (i == w->heap_n)
        return;
    heap_set(w, i, last);
    heap_up(w, i);
    heap_down(w, last->heap_idx);
}

/* ---------- jobs ---------- */

static sg_mock_job_t *job_new(sg_mock_worker_t *w)
{
    sg_mock_job_t *j = w->free_jobs;
    if (j) {
        w->free_jobs = j->next;
        w->free_jobs_n--;
    } else {
        j = malloc(sizeof(*j));
        if (!j)
            return NULL;
        j->h2_body = (sg_mock_buf_t){0};
    }
    /* only the fields every job relies on; the rest is set by whoever builds it */
    j->next = NULL;
    j->heap_idx = SG_MOCK_NOT_IN_HEAP;
    j->k = 0;
    j->n = 0;
    j->drop_at = SG_MOCK_NO_DROP;
    j->fault = SG_MOCK_FAULT_NONE;
    j->fault_idx = 0;
    j->stall_at = 0;
    j->stall_ns = 0;
    j->cut_at = -1;
    j->resp_bytes = 0;
    j->prompt_words = 0;
    j->include_usage = false;
    j->send_usage = false;
    j->usage_prompt = 0;
    j->usage_cached = -1;
    j->usage_completion = 0;
    j->drop_full = false;
    j->close_after = false;
    j->close_silent = false;
    j->close_linger = false;
    j->ka_max = 0;
    j->reasoning = 0;
    j->tool = false;
    j->items = 0;
    j->shown = 0;
    j->status = 0;
    j->details = false;
    j->serial = 0;
    j->created = 0;
    j->err_msg = NULL;
    j->started = false;
    j->blocked = false;
    j->head = j->head_inline;
    j->head_len = 0;
    j->h2_id = 0;
    j->h2_off = 0;
    j->h2_eof = false;
    j->h2_body.len = 0;
    j->h2_body.oom = false;
    w->jobs_live++;
    return j;
}

static void job_free(sg_mock_worker_t *w, sg_mock_job_t *j)
{
    w->jobs_live--;
    if (j->heap_idx != SG_MOCK_NOT_IN_HEAP)
        heap_remove(w, j);
    if (j->head != j->head_inline)
        free(j->head);
    if (j->h2_body.cap > H2_BODY_KEPT) {
        free(j->h2_body.p);
        j->h2_body = (sg_mock_buf_t){0};
    }
    if (w->free_jobs_n < JOBS_KEPT) {
        j->next = w->free_jobs;
        w->free_jobs = j;
        w->free_jobs_n++;
    } else {
        free(j->h2_body.p);
        free(j);
    }
}

/* ---------- output buffers ---------- */

static void buf_release(sg_mock_worker_t *w, sg_mock_buf_t *b)
{
    if (b->p) {
        if (b->cap == POOL_BUF && w->pool_n < POOL_MAX)
            w->pool[w->pool_n++] = b->p;
        else
            free(b->p);
    }
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

/* The pending buffer, taken from the pool when the connection had none (it gives them back when idle). */
static sg_mock_buf_t *conn_out(conn_t *c)
{
    sg_mock_buf_t *b = &c->out;
    if (!b->p) {
        sg_mock_worker_t *w = c->w;
        if (w->pool_n) {
            b->p = w->pool[--w->pool_n];
            b->cap = POOL_BUF;
        } else if ((b->p = malloc(POOL_BUF))) {
            b->cap = POOL_BUF;
        }
        /* on failure the first append retries through realloc and flags oom */
    }
    return b;
}

/* ---------- connections ---------- */

static void on_recv(sg_op_t *op, const sg_ev_t *ev);
static void on_send(sg_op_t *op, const sg_ev_t *ev);
static void conn_pump(conn_t *c, int64_t now);

static void mark_dirty(conn_t *c)
{
    if (!c->dirty) {
        c->dirty = true;
        c->dirty_next = c->w->dirty;
        c->w->dirty = c;
    }
}

static void conn_discard_jobs(conn_t *c)
{
    sg_mock_job_t *j = c->q_head;
    while (j) {
        sg_mock_job_t *next = j->next;
        job_free(c->w, j);
        j = next;
    }
    c->q_head = c->q_tail = NULL;
}

/* Stop everything on c; its memory goes once the kernel has returned every operation (conn_maybe_free). */
static void conn_close(conn_t *c)
{
    if (c->closing)
        return;
    c->closing = true;
    conn_discard_jobs(c);
    if (c->abort_close) {
        /* --fault rst over HTTP/1.1: the close that follows sends a reset, not a FIN */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        shutdown(c->fd, SHUT_RD);
    } else {
        /* FIN to the peer now; the multishot receive then ends with 0, and a cancel makes sure of it */
        shutdown(c->fd, SHUT_RDWR);
    }
    if (c->recv_armed)
        sg_loop_cancel(&c->w->loop, &c->recv_op, c->fd);
}

static void conn_maybe_free(conn_t *c)
{
    if (!c->closing || c->recv_armed || c->send_inflight || c->dirty || c->held_listed)
        return;
    sg_mock_worker_t *w = c->w;
    sg_loop_close(&w->loop, c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    sg_h1_req_free(&c->parser);
    sg_h2srv_free(c->h2); /* its streams' jobs are freed through on_close */
    sg_tls_conn_free(c->tls);
    buf_release(w, &c->out);
    buf_release(w, &c->wire);
    free(c->held.p);
    atomic_fetch_sub_explicit(&w->srv->conns_open, 1, memory_order_relaxed);
    free(c);
}

/*
 * An idle keep-alive connection holds no output memory, and no request buffer unless a request is half in:
 * thousands of idle connections then cost a few hundred bytes each.
 */
static void conn_trim(conn_t *c)
{
    buf_release(c->w, &c->out);
    buf_release(c->w, &c->wire);
    if (c->parser.len == 0 && c->parser.cap) {
        sg_h1_req_free(&c->parser);
        sg_h1_req_init(&c->parser, SG_MOCK_MAX_REQUEST);
    }
}

static void conn_arm_recv(conn_t *c)
{
    sg_loop_recv(&c->w->loop, &c->recv_op, c->fd);
    c->recv_armed = true;
}

/* One send, at most pace_bytes long on a trickle or bwcap connection. */
static void conn_send(conn_t *c, const void *p, size_t n, int64_t now)
{
    if (c->pace_bytes) {
        if (n > (size_t)c->pace_bytes)
            n = (size_t)c->pace_bytes;
        c->pace_next_ns = now + c->pace_gap_ns;
    }
    sg_loop_send(&c->w->loop, &c->send_op, c->fd, p, n);
    c->send_inflight = true;
}

/* A paced connection whose next send is not due yet stays on the dirty list; the loop wakes for it. */
static bool conn_paced(conn_t *c, int64_t now)
{
    if (!c->pace_bytes || now >= c->pace_next_ns)
        return false;
    mark_dirty(c);
    if (c->pace_next_ns < c->w->pace_wake_ns)
        c->w->pace_wake_ns = c->pace_next_ns;
    return true;
}

/* HTTP/2: move what the session has to send into the pending buffer (after a cut, once more and no more). */
static void conn_h2_drain(conn_t *c)
{
    sg_mock_buf_t *b = conn_out(c);
    if (!c->h2_frozen && !b->oom && sg_h2srv_want_write(c->h2) && sg_h2srv_drain(c->h2, &b->p, &b->len, &b->cap) < 0)
        b->oom = true;
    if (c->h2_cut)
        c->h2_frozen = true;
    if (b->len == 0 && (sg_h2srv_done(c->h2) || c->h2_frozen) && !c->half_close_after_flush && !c->half_closed)
        c->close_after_flush = true; /* GOAWAY exchanged, or the session broke, or cut */
}

/* half-close: everything rendered is out; the write side ends, reading goes on until the peer closes. */
static void conn_half_close(conn_t *c)
{
    c->half_close_after_flush = false;
    c->half_closed = true;
    shutdown(c->fd, SHUT_WR);
}

/* --tls: encrypt the pending bytes and send the ciphertext (one send in flight). */
static void conn_flush_tls(conn_t *c, int64_t now)
{
    if (c->h2)
        conn_h2_drain(c);
    if (SG_UNLIKELY(c->out.oom)) {
        conn_close(c);
        return;
    }
    if (c->out.len || sg_tls_out_pending(c->tls)) {
        if (in_stall(c->w, now)) {
            mark_dirty(c);
            return;
        }
    }
    if (c->out.len) {
        if (sg_tls_write(c->tls, c->out.p, c->out.len) < 0) {
            conn_close(c);
            return;
        }
        c->out.len = 0;
    }
    if (c->close_after_flush && !c->tls_closed && !c->abort_close) { /* a reset has no close_notify */
        c->tls_closed = true;
        int e = sg_tls_close(c->tls); /* close_notify goes with the last bytes; failing, the close just goes */
        (void)e;
    }
    const uint8_t *p;
    size_t n;
    sg_tls_out_peek(c->tls, &p, &n);
    if (n == 0) {
        if (c->close_after_flush)
            conn_close(c);
        else if (c->half_close_after_flush)
            conn_half_close(c);
        return;
    }
    conn_send(c, p, n, now);
}

/* Hand the pending bytes to the kernel unless a send is in flight or the stall window holds them. */
static void conn_flush(conn_t *c, int64_t now)
{
    if (c->closing || c->send_inflight || conn_paced(c, now))
        return;
    if (c->tls) {
        conn_flush_tls(c, now);
        return;
    }
    if (c->wire_off < c->wire.len) {
        /* the rest of a short send that the stall window held back */
        if (in_stall(c->w, now)) {
            mark_dirty(c);
            return;
        }
        conn_send(c, c->wire.p + c->wire_off, c->wire.len - c->wire_off, now);
        return;
    }
    if (c->h2)
        conn_h2_drain(c);
    if (c->out.len == 0) {
        if (c->close_after_flush)
            conn_close(c);
        else if (c->half_close_after_flush)
            conn_half_close(c);
        return;
    }
    if (in_stall(c->w, now)) {
        mark_dirty(c);
        return;
    }
    if (SG_UNLIKELY(c->out.oom)) {
        conn_close(c);
        return;
    }
    sg_mock_buf_t t = c->wire;
    c->wire = c->out;
    c->out = t;
    c->out.len = 0;
    c->wire_off = 0;
    conn_send(c, c->wire.p, c->wire.len, now);
}

static void on_send(sg_op_t *op, const sg_ev_t *ev)
{
    conn_t *c = SG_CONTAINER_OF(op, conn_t, send_op);
    c->send_inflight = false;
    if (c->closing || ev->res <= 0) {
        conn_close(c);
        conn_maybe_free(c);
        return;
    }
    int64_t now = sg_now_ns();
    if (c->tls) {
        sg_tls_out_consume(c->tls, (size_t)ev->res);
        if (sg_tls_out_pending(c->tls)) {
            conn_flush(c, now); /* the rest, with whatever was rendered meanwhile */
            return;
        }
    }
    c->wire_off += c->tls ? 0 : (size_t)ev->res;
    if (c->wire_off < c->wire.len) {
        /* short send: the rest of the same buffer, which stays untouched until it is all out */
        conn_flush(c, now);
        return;
    }
    c->wire.len = 0;
    c->wire_off = 0;
    sg_mock_job_t *head = c->q_head;
    if (head && head->blocked) {
        head->blocked = false;
        conn_pump(c, now);
    }
    if (c->out.len || c->close_after_flush || c->half_close_after_flush || (c->h2_cut && !c->half_closed) ||
        (c->h2 && sg_h2srv_want_write(c->h2))) {
        conn_flush(c, now);
    } else if (!c->q_head) {
        conn_trim(c);
    }
    conn_maybe_free(c);
}

/* ---------- request handling ---------- */

static bool slice_eq(sg_slice_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.base, lit, n) == 0;
}

static bool ends_with(sg_slice_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len >= n && memcmp(s.base + s.len - n, lit, n) == 0;
}

/* One --record line. a: the other APIs' scan (their API's name and input count go in too); NULL for chat and
 * completions. */
static void record_request(sg_mock_worker_t *w, conn_t *c, int64_t now, sg_slice_t path, const sg_oai_request_t *r,
                           const sg_api_request_t *a, int fault)
{
    sg_mock_buf_t *b = &w->rec;
    sg_mock_record_head(b, &w->rec_first_ns, now, w->idx, c->serial, path);
    SG_MOCK_BUF_LIT(b, ",\"model\":\"");
    sg_mock_buf_json_raw(b, r->model); /* "" when the request named none */
    SG_MOCK_BUF_LIT(b, "\"");
    if (r->stream)
        SG_MOCK_BUF_LIT(b, ",\"stream\":true,\"max_tokens\":");
    else
        SG_MOCK_BUF_LIT(b, ",\"stream\":false,\"max_tokens\":");
    if (r->max_tokens >= 0)
        sg_mock_buf_u64(b, (uint64_t)r->max_tokens);
    else
        SG_MOCK_BUF_LIT(b, "null");
    if (r->tools.n) { /* the tools the request carried, and a tool_choice of none */
        SG_MOCK_BUF_LIT(b, ",\"tools\":");
        sg_mock_buf_u64(b, r->tools.n);
        if (r->tools.none)
            SG_MOCK_BUF_LIT(b, ",\"tool_choice\":\"none\"");
    }
    SG_MOCK_BUF_LIT(b, ",\"prompt_words\":");
    sg_mock_buf_u64(b, r->prompt_words);
    if (r->media.images || r->media.audios) {
        SG_MOCK_BUF_LIT(b, ",\"images\":");
        sg_mock_buf_u64(b, r->media.images);
        SG_MOCK_BUF_LIT(b, ",\"images_sized\":");
        sg_mock_buf_u64(b, r->media.images_sized);
        SG_MOCK_BUF_LIT(b, ",\"audios\":");
        sg_mock_buf_u64(b, r->media.audios);
        SG_MOCK_BUF_LIT(b, ",\"audios_timed\":");
        sg_mock_buf_u64(b, r->media.audios_timed);
        SG_MOCK_BUF_LIT(b, ",\"media_bytes\":");
        sg_mock_buf_u64(b, r->media.bytes);
        SG_MOCK_BUF_LIT(b, ",\"media_tokens\":");
        sg_mock_buf_u64(b, r->media.tokens);
    }
    SG_MOCK_BUF_LIT(b, ",\"prompt\":\"");
    if (r->prompt.base)
        sg_mock_buf_json_raw(b, r->prompt);
    if (fault != SG_MOCK_FAULT_NONE) {
        SG_MOCK_BUF_LIT(b, "\",\"fault\":\"");
        const char *name = sg_mock_fault_name(fault);
        sg_mock_buf_mem(b, name, strlen(name));
    }
    if (a) {
        SG_MOCK_BUF_LIT(b, "\",\"api\":\"");
        const char *name = sg_mock_api_name(a->kind);
        sg_mock_buf_mem(b, name, strlen(name));
        SG_MOCK_BUF_LIT(b, "\",\"inputs\":");
        sg_mock_buf_u64(b, a->inputs);
        SG_MOCK_BUF_LIT(b, "}\n");
        return;
    }
    SG_MOCK_BUF_LIT(b, "\"}\n");
}

/* Write whole lines with one O_APPEND write each, so lines from several workers never interleave. */
static void buf_flush(sg_mock_buf_t *b, int fd)
{
    if (b->oom) {
        /* a partial line may sit at the end; keep only complete lines */
        while (b->len && b->p[b->len - 1] != '\n')
            b->len--;
        b->oom = false;
    }
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(fd, b->p + off, b->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* disk full or the like: the record is best effort, serving goes on */
        off += (size_t)n;
    }
    b->len = 0;
    if (b->cap > (4u << 20)) {
        /* a burst of huge prompts grew it: give the memory back */
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
}

static void record_flush(sg_mock_worker_t *w)
{
    buf_flush(&w->rec, w->srv->record_fd);
    if (w->slog.len)
        buf_flush(&w->slog, w->srv->send_log_fd);
}

/* --send-log: token k of response id goes out now (rendered into the output the same loop turn sends). */
static void send_log(sg_mock_worker_t *w, const sg_mock_job_t *j)
{
    sg_mock_buf_t *b = &w->slog;
    if (!b->len && !w->rec.len)
        w->rec_first_ns = sg_now_ns();
    SG_MOCK_BUF_LIT(b, "{\"id\":");
    sg_mock_buf_u64(b, j->serial);
    SG_MOCK_BUF_LIT(b, ",\"k\":");
    sg_mock_buf_u64(b, j->k);
    SG_MOCK_BUF_LIT(b, ",\"t_ns\":");
    sg_mock_buf_u64(b, (uint64_t)sg_now_ns());
    SG_MOCK_BUF_LIT(b, "}\n");
}

static uint32_t tokens_for(const sg_mock_server_t *s, int64_t max_tokens)
{
    uint64_t n = s->opts.output_tokens;
    if (!n)
        n = max_tokens >= 0 ? (uint64_t)max_tokens : SG_MOCK_DEFAULT_TOKENS;
    if (n < 1)
        n = 1; /* max_tokens 0 still gets one token: every response has a first token to time */
    if (n > SG_MOCK_MAX_TOKENS)
        n = SG_MOCK_MAX_TOKENS;
    return (uint32_t)n;
}

static void conn_enqueue(conn_t *c, sg_mock_job_t *j, int64_t now)
{
    j->conn = c;
    if (c->q_tail)
        c->q_tail->next = j;
    else
        c->q_head = j;
    c->q_tail = j;
    if (j == c->q_head)
        conn_pump(c, now);
}

/* A request the worker answers with a constant response. */
static void build_static(sg_mock_job_t *j, sg_mock_static_t id, int64_t now)
{
    j->type = SG_MOCK_JOB_STATIC;
    j->static_id = (uint8_t)id;
    j->due_ns = now;
}

/*
 * What usage reports for j. Without --tokenizer: the prompt's words and the n words sent (one token each in
 * GPT-family vocabularies). With it: the tokenizer's count of the last message's content (or the prompt) and of
 * the text sent. --usage-completion-offset is added to completion_tokens either way. 0 or SG_ENOMEM.
 */
static int usage_counts(sg_mock_worker_t *w, sg_mock_job_t *j, const sg_oai_request_t *r)
{
    j->usage_prompt = r->prompt_words;
    int64_t completion = j->n;
    if (w->enc && j->n) { /* embeddings and rankings (no output) count words: their prompt is many texts */
        if (r->prompt.len) {
            w->scratch.len = 0;
            char *d = sg_mock_buf_room(&w->scratch, r->prompt.len);
            if (!d)
                return SG_ENOMEM;
            ssize_t n = sg_json_unescape(r->prompt.base, r->prompt.len, d, r->prompt.len);
            if (n >= 0) { /* a bad escape keeps the word count: the request is odd, not the mock's to judge */
                ssize_t t = sg_tok_count(w->enc, d, (size_t)n);
                if (t < 0)
                    return (int)t;
                j->usage_prompt = (uint64_t)t;
            }
        }
        if (w->text_tokens < 0 || w->text_n != j->n) { /* requests mostly ask for the same length: cache it */
            size_t tl = sg_mock_text_len(j->n);
            w->scratch.len = 0;
            char *d = sg_mock_buf_room(&w->scratch, tl ? tl : 1);
            if (!d)
                return SG_ENOMEM;
            sg_mock_text(d, j->n);
            ssize_t t = sg_tok_count(w->enc, d, tl);
            if (t < 0)
                return (int)t;
            w->text_n = j->n;
            w->text_tokens = t;
        }
        completion = w->text_tokens;
    }
    completion += w->srv->opts.usage_completion_offset;
    j->usage_completion = completion < 0 ? 0 : (uint64_t)completion;
    return 0;
}

/* The API a path asks for, or -1. TEI and Cohere share /rerank: the body tells them apart (sg_api_request.h). */
static int route(sg_slice_t path)
{
    if (ends_with(path, "/chat/completions")) /* first: the hot path */
        return SG_OAI_CHAT;
    if (ends_with(path, "/completions"))
        return SG_OAI_COMPLETIONS;
    if (ends_with(path, "/embeddings"))
        return SG_OAI_EMBEDDINGS;
    if (ends_with(path, "/ranking"))
        return SG_OAI_RANK_NIM;
    if (ends_with(path, "/rerank"))
        return SG_OAI_RANK_COHERE;
    if (ends_with(path, "/responses"))
        return SG_OAI_RESPONSES;
    if (ends_with(path, "/messages"))
        return SG_OAI_MESSAGES;
    if (ends_with(path, "/generate") || ends_with(path, "/generate_stream"))
        return SG_OAI_GENERATE;
    if (ends_with(path, "/infer"))
        return SG_OAI_IMAGE_RETRIEVAL;
    return -1;
}

/*
 * Scan the body of a request to one of the APIs beside chat and completions into r (the fields every API has)
 * and a. false when j now answers an error in the API's shape (*kind is then the body's API).
 */
static bool scan_api(const sg_mock_server_t *s, sg_mock_job_t *j, int *kind, sg_slice_t path, sg_slice_t body,
                     sg_oai_request_t *r, sg_api_request_t *a, int64_t now)
{
    int err = sg_api_scan_request((sg_oai_kind_t)*kind, body.base, body.len, a);
    *kind = a->kind;
    if (err == 0 && a->inputs > SG_MOCK_MAX_ITEMS) {
        err = SG_EPROTO;
        a->err = "more than 65536 inputs in one request";
    } else if (err == 0 && (*kind == SG_OAI_EMBEDDINGS || *kind == SG_OAI_IMAGE_RETRIEVAL) &&
               (uint64_t)a->inputs * s->opts.embedding_dim > SG_MOCK_MAX_FLOATS) {
        err = SG_EPROTO;
        a->err = "inputs x --embedding-dim is over 4194304 floats";
    }
    if (err < 0) {
        sg_mock_api_error(j, (sg_oai_kind_t)*kind, 400, a->err, now);
        return false;
    }
    *r = (sg_oai_request_t){.model = a->model,
                            .max_tokens = a->max_tokens,
                            /* TGI: /generate_stream always streams, /generate never does */
                            .stream = *kind == SG_OAI_GENERATE ? ends_with(path, "/generate_stream") : a->stream,
                            .prompt = a->prompt,
                            .prompt_words = a->prompt_words,
                            .tools = a->tools,
                            .media = a->media};
    return true;
}

/* The per-request --fault this request draws (one uniform draw over the kinds' fractions, in flag order), set up
 * on j; NONE for most. */
static int draw_request_fault(sg_mock_worker_t *w, sg_mock_job_t *j)
{
    const sg_mock_server_t *s = w->srv;
    if (s->req_fault_sum <= 0)
        return SG_MOCK_FAULT_NONE;
    double u = sg_rng_uniform(&w->rng), acc = 0;
    for (unsigned k = 0; k < s->opts.n_faults; k++) {
        const sg_mock_fault_t *f = &s->opts.faults[k];
        if (!sg_mock_fault_per_request(f->kind))
            continue;
        acc += f->fraction;
        if (u > acc)
            continue;
        j->fault = f->kind;
        j->fault_idx = (uint8_t)k;
        if (f->kind == SG_MOCK_FAULT_STALL_WRITE) {
            j->stall_ns = f->a;
            j->stall_at = (uint32_t)f->b;
        } else if (f->kind == SG_MOCK_FAULT_CUT || f->kind == SG_MOCK_FAULT_HALF_CLOSE) {
            j->cut_at = f->a;
        }
        w->st.faults[f->kind]++;
        return f->kind;
    }
    return SG_MOCK_FAULT_NONE;
}

/* What --record says of a request with no fault of its own: its connection's (trickle, bwcap, the request that
 * goaway answers), or stall-read when it was taken out of that window. */
static int conn_fault_now(const conn_t *c)
{
    if (c->held_fault)
        return SG_MOCK_FAULT_STALL_READ;
    if (c->fault == SG_MOCK_FAULT_GOAWAY)
        return c->reqs == (uint64_t)c->w->srv->opts.faults[c->fault_idx].a ? SG_MOCK_FAULT_GOAWAY : SG_MOCK_FAULT_NONE;
    return c->fault;
}

/* When token k of j is due (a write stall shifts it and those after it). */
static inline int64_t token_due(const sg_mock_server_t *s, const sg_mock_job_t *j, uint32_t k)
{
    int64_t due = j->start_ns + j->ttft_ns + s->itl_ns * (int64_t)k;
    return k >= j->stall_at ? due + j->stall_ns : due;
}

/*
 * Make j the answer to a request for API kind (a POST): the body's scan, --record, the --error-rate and
 * --drop-rate draws, the timing. 0, or SG_ENOMEM.
 */
static int build_answer(conn_t *c, sg_mock_job_t *j, int kind, sg_slice_t full_path, sg_slice_t path, sg_slice_t body,
                        int64_t now)
{
    sg_mock_worker_t *w = c->w;
    const sg_mock_server_t *s = w->srv;
    sg_oai_request_t r;
    sg_api_request_t a = {.inputs = 1, .top_n = -1};
    bool api = kind > SG_OAI_COMPLETIONS;
    if (!api) {
        int err = sg_oai_scan_request((sg_oai_kind_t)kind, body.base, body.len, &r);
        if (err < 0) {
            build_static(j, err == SG_EJSON ? SG_MOCK_ST_BAD_JSON : SG_MOCK_ST_NO_PROMPT, now);
            return 0;
        }
    } else if (!scan_api(s, j, &kind, path, body, &r, &a, now)) {
        return 0;
    }
    w->st.completions++;
    int fault = draw_request_fault(w, j);
    if (s->record_fd >= 0)
        record_request(w, c, now, full_path, &r, api ? &a : NULL, fault ? fault : conn_fault_now(c));
    if (s->opts.error_rate > 0 && sg_rng_uniform(&w->rng) <= s->opts.error_rate) {
        w->st.errors++;
        if (api)
            sg_mock_api_error(j, (sg_oai_kind_t)kind, 500, "injected error (--error-rate)", now);
        else
            build_static(j, SG_MOCK_ST_INJECTED, now);
        return 0;
    }
    bool drop = s->opts.drop_rate > 0 && sg_rng_uniform(&w->rng) <= s->opts.drop_rate;
    if (fault)
        drop = fault == SG_MOCK_FAULT_RST; /* one fault per request: rst cuts where --drop-rate does */
    /* embeddings and rankings generate nothing: answered whole once the prompt is read (the TTFT) */
    bool generates = kind <= SG_OAI_COMPLETIONS || (kind >= SG_OAI_RESPONSES && kind != SG_OAI_IMAGE_RETRIEVAL);
    j->kind = (uint8_t)kind;
    j->n = generates ? tokens_for(s, r.max_tokens) : 0;
    if (kind == SG_OAI_CHAT || kind == SG_OAI_RESPONSES || kind == SG_OAI_MESSAGES)
        j->reasoning = s->opts.reasoning_tokens < j->n ? s->opts.reasoning_tokens : j->n;
    if (SG_UNLIKELY(r.tools.n) && (kind == SG_OAI_CHAT || kind == SG_OAI_RESPONSES || kind == SG_OAI_MESSAGES)) {
        /* a request with tools: a tool call (its arguments the n tokens, no reasoning before it) at the rate */
        w->st.tool_requests++;
        bool draw = s->opts.tool_call_rate >= 1 || sg_rng_uniform(&w->rng) < s->opts.tool_call_rate;
        if (draw && sg_mock_tool_pick(j, &r.tools)) {
            j->tool = true;
            j->reasoning = 0;
            w->st.tool_calls++;
        }
    }
    j->items = j->shown = a.inputs;
    if (kind == SG_OAI_RANK_COHERE && a.top_n >= 0 && (uint64_t)a.top_n < a.inputs)
        j->shown = (uint32_t)a.top_n;
    j->details = a.details;
    j->prompt_words = r.prompt_words;
    j->include_usage = r.include_usage && !s->opts.no_usage;
    j->send_usage = !s->opts.no_usage;
    j->usage_cached = s->pcache && kind <= SG_OAI_COMPLETIONS && r.prompt.len
                          ? (int64_t)sg_mock_pcache_lookup(s->pcache, r.prompt.base, r.prompt.len)
                          : -1;
    int err = usage_counts(w, j, &r);
    if (err < 0)
        return err;
    /* images and audio: their tokens by the documented formula (sg_media_probe.h) join the prompt's */
    j->usage_prompt += r.media.tokens;
    w->st.images += r.media.images;
    w->st.audios += r.media.audios;
    w->st.media_bytes += r.media.bytes;
    if ((r.media.images || r.media.audios) && s->load)
        sg_mock_load_media(s->load, w->idx, &r.media);
    /* ids are unique across workers: worker w hands out w, w + N, w + 2N, ... */
    j->serial = w->next_id++ * s->opts.workers + w->idx;
    j->created = (int64_t)time(NULL);
    err = api ? sg_mock_api_head(j, r.model) : sg_mock_render_head(j, j->serial, j->created, r.model, r.stream);
    if (err < 0)
        return err;
    sg_mock_job_schedule(s, j, now, w->idx);
    if (r.stream && generates) {
        w->st.streamed++;
        j->type = SG_MOCK_JOB_STREAM;
        j->due_ns = now; /* the head and the first events (chat's role chunk) go out on arrival */
        if (drop)
            j->drop_at = j->n / 2;
    } else {
        j->type = SG_MOCK_JOB_FULL;
        j->due_ns = j->start_ns + j->ttft_ns + (j->n ? s->itl_ns * (int64_t)(j->n - 1) : 0) + j->stall_ns;
        j->drop_full = drop;
    }
    return 0;
}

/*
 * The job that answers one request (either protocol): routing, then build_answer for the APIs. NULL (SG_ENOMEM)
 * when memory ran out.
 */
static sg_mock_job_t *build_job(conn_t *c, sg_slice_t method, sg_slice_t full_path, sg_slice_t body, bool keep_alive,
                                int64_t now)
{
    sg_mock_worker_t *w = c->w;
    w->st.requests++;
    faults_clock(w, now);

    sg_mock_job_t *j = job_new(w);
    if (!j)
        return NULL;
    j->arrival_ns = now;
    j->close_after = !keep_alive;

    sg_slice_t path = full_path;
    const char *q = memchr(path.base, '?', path.len);
    if (q)
        path.len = (size_t)(q - path.base);
    bool is_get = slice_eq(method, "GET"), is_post = slice_eq(method, "POST");
    if (!is_get && !is_post)
        j->close_after = true; /* HEAD and friends: our bodies would break their framing, so end there */

    int kind = route(path);
    if (kind >= 0) {
        if (!is_post) {
            build_static(j, SG_MOCK_ST_METHOD, now);
        } else if (build_answer(c, j, kind, full_path, path, body, now) < 0) {
            job_free(w, j);
            return NULL;
        }
    } else if (ends_with(path, "/models")) {
        build_static(j, is_get ? SG_MOCK_ST_MODELS : SG_MOCK_ST_METHOD, now);
    } else if (ends_with(path, "/health")) {
        build_static(j, is_get ? SG_MOCK_ST_HEALTH : SG_MOCK_ST_METHOD, now);
    } else if (ends_with(path, "/metrics")) {
        build_static(j, is_get ? SG_MOCK_ST_METRICS : SG_MOCK_ST_METHOD, now);
    } else {
        build_static(j, SG_MOCK_ST_NOT_FOUND, now);
    }
    return j;
}

/*
 * --close-after N: the N-th response on a connection is its last. What the responses say about it follows
 * --close-notice: Connection: close on the last (honest), a Keep-Alive max that counts down to it (honest, and
 * only that), or a Keep-Alive advertisement that promises more (llama-server after a streamed response). With
 * --close-delay-ms the FIN comes that long after the last byte, and whatever the client sends meanwhile is read
 * and dropped: the race a client loses when it reuses a connection the server is about to close.
 */
static void keep_alive_faults(conn_t *c, sg_mock_job_t *j)
{
    const sg_mock_opts_t *o = &c->w->srv->opts;
    if (!o->close_after)
        return;
    uint32_t seq = ++c->h1_answered;
    bool last = seq >= o->close_after;
    if (o->close_notice == SG_MOCK_NOTICE_MAX)
        j->ka_max = o->close_after - seq + 1;
    else if (o->close_notice == SG_MOCK_NOTICE_NONE)
        j->ka_max = 100;
    if (!last || j->close_after)
        return; /* a close the request asked for (or an error) is always announced */
    j->close_after = true;
    j->close_silent = o->close_notice != SG_MOCK_NOTICE_CONNECTION;
    j->close_linger = o->close_delay_ns > 0;
}

/* --fault goaway: this connection's request count reached the fault's N (counted once, when it fires). */
static bool goaway_now(conn_t *c)
{
    if (c->fault != SG_MOCK_FAULT_GOAWAY || c->reqs != (uint64_t)c->w->srv->opts.faults[c->fault_idx].a)
        return false;
    c->w->st.faults[SG_MOCK_FAULT_GOAWAY]++;
    return true;
}

static int on_request(void *ud, const sg_h1_request_t *req)
{
    conn_t *c = ud;
    if (c->read_stopped || c->closing)
        return SG_EABORT;
    c->reqs++;
    sg_mock_job_t *j = build_job(c, req->method, req->path, req->body, req->keep_alive, c->recv_ns);
    if (!j)
        return SG_ENOMEM;
    keep_alive_faults(c, j);
    if (goaway_now(c)) {
        /* HTTP/1.1's GOAWAY: the graceful one is Connection: close on this answer; with an error code this request
         * is not answered and the connection closes */
        if (c->w->srv->opts.faults[c->fault_idx].b == 0) {
            j->close_after = true;
            j->close_silent = false;
        } else {
            job_free(c->w, j);
            conn_discard_jobs(c);
            c->read_stopped = true;
            c->close_after_flush = true;
            mark_dirty(c);
            return SG_EABORT;
        }
    }
    conn_enqueue(c, j, c->recv_ns);
    if (j->close_after || c->close_after_flush || c->closing) {
        c->read_stopped = true;
        return SG_EABORT;
    }
    return 0;
}

static const sg_h1_req_cb_t req_cb = {.on_request = on_request};

/* The connection is cut on purpose (--drop-rate): what was rendered goes out, then FIN. */
static void conn_drop(conn_t *c)
{
    if (c->q_head && c->q_head->fault == SG_MOCK_FAULT_RST)
        c->abort_close = true;
    else
        c->w->st.drops++;
    conn_discard_jobs(c);
    c->close_after_flush = true;
    c->read_stopped = true;
    mark_dirty(c);
}

/*
 * Render what the head job has due. Returns true when the job is finished (the caller pops it), false when
 * it waits (in the heap, or blocked on output) or the connection went away.
 */
static bool job_run(conn_t *c, sg_mock_job_t *j, int64_t now)
{
    sg_mock_worker_t *w = c->w;
    const sg_mock_server_t *s = w->srv;
    if (!j->started) {
        j->started = true;
        if (j->type == SG_MOCK_JOB_STREAM) {
            sg_mock_render_stream_start(conn_out(c), j);
            mark_dirty(c);
        }
    }
    switch (j->type) {
    case SG_MOCK_JOB_STATIC:
        if (j->static_id == SG_MOCK_ST_METRICS)
            sg_mock_render_metrics(conn_out(c), s, now, j->close_after);
        else
            sg_mock_render_static(conn_out(c), j);
        return true;
    case SG_MOCK_JOB_API_ERROR: {
        int status;
        sg_mock_api_render_error(conn_out(c), j, &status);
        return true;
    }
    case SG_MOCK_JOB_CLOSE:
        if (j->due_ns > now)
            break;
        mark_dirty(c); /* the flush finds nothing to send and closes (close_after_flush, set by conn_pump) */
        return true;
    case SG_MOCK_JOB_FULL:
        if (j->due_ns > now)
            break;
        if (j->drop_full) {
            conn_drop(c);
            return false;
        }
        sg_mock_render_full(conn_out(c), j);
        return true;
    default:
        while (j->k < j->n) {
            int64_t due = token_due(s, j, j->k);
            if (due > now) {
                j->due_ns = due;
                goto wait;
            }
            if (j->k == j->drop_at) {
                conn_drop(c);
                return false;
            }
            if (c->out.len >= OUT_HIGH_WATER) {
                /* the peer reads slower than we render: go on when the send in flight completes */
                j->blocked = true;
                return false;
            }
            sg_mock_render_token(conn_out(c), j, j->k);
            if (SG_UNLIKELY(s->send_log_fd >= 0))
                send_log(w, j);
            j->k++;
        }
        sg_mock_render_stream_end(conn_out(c), j);
        return true;
    }
wait:
    if (heap_push(w, j) < 0) {
        conn_close(c);
        return false;
    }
    return false;
}

/*
 * --fault cut / half-close over HTTP/1.1: count the bytes of j's response rendered since before (the pending
 * buffer's length then); once they reach the cut, drop what lies past it and end the connection (cut) or its write
 * side (half-close) after the rest is sent. true when j is gone.
 */
static bool h1_cut(conn_t *c, sg_mock_job_t *j, size_t before)
{
    size_t added = c->out.len - before;
    if (j->cut_at == SG_MOCK_AT_HEAD && added) {
        const char *e = memmem(c->out.p + before, added, "\r\n\r\n", 4);
        j->cut_at = j->resp_bytes + (e ? (int64_t)(e + 4 - (c->out.p + before)) : (int64_t)added);
    }
    j->resp_bytes += (int64_t)added;
    if (j->resp_bytes < j->cut_at)
        return false;
    c->out.len -= (size_t)(j->resp_bytes - j->cut_at);
    if (j->fault == SG_MOCK_FAULT_CUT)
        c->close_after_flush = true;
    else
        c->half_close_after_flush = true;
    conn_discard_jobs(c);
    c->read_stopped = true;
    mark_dirty(c);
    return true;
}

/* Run the head job and, as each finishes, the next one in order. */
static void conn_pump(conn_t *c, int64_t now)
{
    sg_mock_job_t *j;
    while ((j = c->q_head) && !c->closing && j->heap_idx == SG_MOCK_NOT_IN_HEAP && !j->blocked) {
        bool cutting = j->cut_at >= 0;
        size_t before = c->out.len;
        bool done = job_run(c, j, now);
        if (c->out.len)
            mark_dirty(c);
        if (cutting && !c->closing && c->q_head == j && h1_cut(c, j, before))
            return;
        if (!done)
            break;
        c->q_head = j->next;
        if (!c->q_head)
            c->q_tail = NULL;
        if (j->close_after && j->close_linger) {
            /* --close-delay-ms: what is rendered goes out now, the FIN later (a CLOSE job in the timer heap) */
            job_free(c->w, j);
            conn_discard_jobs(c);
            sg_mock_job_t *k = job_new(c->w);
            if (!k) {
                c->close_after_flush = true;
                break;
            }
            k->type = SG_MOCK_JOB_CLOSE;
            k->close_after = true;
            k->due_ns = now + c->w->srv->opts.close_delay_ns;
            k->conn = c;
            c->q_head = c->q_tail = k;
            continue;
        }
        if (j->close_after) {
            c->close_after_flush = true;
            job_free(c->w, j);
            conn_discard_jobs(c);
            break;
        }
        job_free(c->w, j);
    }
}

/* ---------- HTTP/2 streams ---------- */

/* The stream is over for us: reset it (the job is freed by on_close). */
static void h2_drop(conn_t *c, sg_mock_job_t *j)
{
    uint32_t code = NGHTTP2_INTERNAL_ERROR;
    if (j->fault == SG_MOCK_FAULT_RST)
        code = (uint32_t)c->w->srv->opts.faults[j->fault_idx].a;
    else
        c->w->st.drops++;
    sg_h2srv_reset(c->h2, j->h2_id, code);
    mark_dirty(c);
}

static void h2_respond(conn_t *c, sg_mock_job_t *j, int status, const char *ctype, int64_t len, bool sse)
{
    if (sg_h2srv_respond(c->h2, j->h2_id, status, ctype, len, sse, true) < 0)
        sg_h2srv_reset(c->h2, j->h2_id, NGHTTP2_INTERNAL_ERROR);
}

/* gRPC: the response head (200, application/grpc) and, when ending, grpc-status as trailers or Trailers-Only. */
static void h2_grpc_head(conn_t *c, sg_mock_job_t *j, int code, bool trailers_only)
{
    sg_h2srv_field_t f[3] = {{"content-type", "application/grpc", 16}};
    char buf[4];
    size_t n = 1;
    if (trailers_only)
        n += sg_mock_grpc_status_fields(code, f + 1, buf);
    if (sg_h2srv_respond_fields(c->h2, j->h2_id, 200, f, n, !trailers_only) < 0)
        sg_h2srv_reset(c->h2, j->h2_id, NGHTTP2_INTERNAL_ERROR);
}

/* The last message is rendered: grpc-status 0 follows it as trailers. */
static void h2_grpc_end(conn_t *c, sg_mock_job_t *j)
{
    sg_h2srv_field_t f[2];
    char buf[4];
    size_t n = sg_mock_grpc_status_fields(0, f, buf);
    if (sg_h2srv_set_trailers(c->h2, j->h2_id, f, n) < 0)
        sg_h2srv_reset(c->h2, j->h2_id, NGHTTP2_INTERNAL_ERROR);
    j->h2_eof = true;
    sg_h2srv_resume(c->h2, j->h2_id);
}

enum h2_tok {
    H2_TOK_DONE, /* every token is rendered */
    H2_TOK_WAIT, /* the next is due at j->due_ns: back to the timer heap */
    H2_TOK_STOP, /* dropped (--drop-rate), or blocked on output until h2_on_read has taken the body */
};

/* Render a streamed job's tokens that are due, SSE events or gRPC messages, with the same timing, drops and
 * back-pressure (H2_STREAM_HIGH_WATER) for both. */
static enum h2_tok h2_tokens(conn_t *c, sg_mock_job_t *j, int64_t now, bool grpc)
{
    const sg_mock_server_t *s = c->w->srv;
    sg_mock_buf_t *b = &j->h2_body;
    while (j->k < j->n) {
        int64_t due = token_due(s, j, j->k);
        if (due > now) {
            j->due_ns = due;
            sg_h2srv_resume(c->h2, j->h2_id);
            mark_dirty(c);
            return H2_TOK_WAIT;
        }
        if (j->k == j->drop_at) {
            h2_drop(c, j);
            return H2_TOK_STOP;
        }
        if (b->len - j->h2_off >= H2_STREAM_HIGH_WATER) {
            /* the peer takes less than we render: go on once h2_on_read has taken it all */
            j->blocked = true;
            sg_h2srv_resume(c->h2, j->h2_id);
            mark_dirty(c);
            return H2_TOK_STOP;
        }
        if (grpc)
            sg_mock_grpc_render_token(b, j, j->k);
        else
            sg_mock_render_token(b, j, j->k);
        j->k++;
    }
    return H2_TOK_DONE;
}

/* A gRPC job (mock_grpc.c builds and renders, this sends). false: it waits until j->due_ns. */
static bool h2_grpc_run(conn_t *c, sg_mock_job_t *j, int64_t now)
{
    sg_mock_buf_t *b = &j->h2_body;
    switch (j->type) {
    case SG_MOCK_JOB_GRPC_STATUS:
        h2_grpc_head(c, j, j->static_id, true);
        return true;
    case SG_MOCK_JOB_GRPC_CONST:
        h2_grpc_head(c, j, 0, false);
        sg_mock_grpc_render_const(b);
        h2_grpc_end(c, j);
        return true;
    case SG_MOCK_JOB_GRPC_UNARY:
        if (j->due_ns > now)
            return false;
        if (j->drop_full) {
            h2_drop(c, j);
            return true;
        }
        h2_grpc_head(c, j, 0, false);
        sg_mock_grpc_render_full(b, j);
        h2_grpc_end(c, j);
        return true;
    default: /* SG_MOCK_JOB_GRPC_STREAM */
        if (!j->started) {
            j->started = true;
            h2_grpc_head(c, j, 0, false);
        }
        switch (h2_tokens(c, j, now, true)) {
        case H2_TOK_WAIT:
            return false;
        case H2_TOK_STOP:
            return true;
        case H2_TOK_DONE:
            break;
        }
        h2_grpc_end(c, j);
        return true;
    }
}

/*
 * --fault cut / half-close over HTTP/2: the stream's body bytes count (head: none); once they reach the cut, what
 * lies past it is dropped, the session is drained once more and the connection ends (cut) or its write side does
 * (half-close). true when it did.
 */
static bool h2_cut(conn_t *c, sg_mock_job_t *j, size_t before)
{
    sg_mock_buf_t *b = &j->h2_body;
    int64_t at = j->cut_at == SG_MOCK_AT_HEAD ? 0 : j->cut_at;
    j->resp_bytes += (int64_t)(b->len - before);
    if (j->resp_bytes < at || !j->started)
        return false;
    b->len -= (size_t)(j->resp_bytes - at);
    j->h2_eof = false; /* the stream never ends: the connection does */
    sg_h2srv_resume(c->h2, j->h2_id);
    c->h2_cut = true;
    c->read_stopped = true;
    if (j->fault == SG_MOCK_FAULT_HALF_CLOSE)
        c->half_close_after_flush = true;
    mark_dirty(c);
    return true;
}

/* Render what the stream's job has due; it waits in the heap for the rest. The HTTP/2 twin of job_run. */
static void h2_job_run(conn_t *c, sg_mock_job_t *j, int64_t now)
{
    if (c->closing || c->h2_cut)
        return; /* freed with the session */
    sg_mock_buf_t *b = &j->h2_body;
    size_t before = b->len;
    switch (j->type) {
    case SG_MOCK_JOB_STATIC: {
        int status;
        sg_slice_t body = sg_mock_static_body(j->static_id, &status);
        const char *ctype = "application/json";
        char metrics[SG_MOCK_METRICS_MAX];
        if (j->static_id == SG_MOCK_ST_METRICS) {
            body = (sg_slice_t){metrics, sg_mock_metrics_text(c->w->srv, now, metrics, sizeof metrics)};
            ctype = "text/plain; version=0.0.4";
        }
        sg_mock_buf_slice(b, body);
        j->h2_eof = true;
        h2_respond(c, j, status, ctype, (int64_t)body.len, false);
        break;
    }
    case SG_MOCK_JOB_API_ERROR: {
        int status;
        sg_mock_api_render_error(b, j, &status);
        j->h2_eof = true;
        h2_respond(c, j, status, "application/json", (int64_t)b->len, false);
        break;
    }
    case SG_MOCK_JOB_FULL:
        if (j->due_ns > now)
            goto wait;
        if (j->drop_full) {
            h2_drop(c, j);
            return;
        }
        sg_mock_render_full(b, j);
        j->h2_eof = true;
        j->started = true;
        h2_respond(c, j, 200, "application/json", (int64_t)b->len, false);
        break;
    case SG_MOCK_JOB_GRPC_STATUS:
    case SG_MOCK_JOB_GRPC_CONST:
    case SG_MOCK_JOB_GRPC_UNARY:
    case SG_MOCK_JOB_GRPC_STREAM:
        if (!h2_grpc_run(c, j, now))
            goto wait;
        break;
    default:
        if (!j->started) {
            j->started = true;
            h2_respond(c, j, 200, "text/event-stream", -1, true);
            sg_mock_render_stream_start(b, j);
        }
        switch (h2_tokens(c, j, now, false)) {
        case H2_TOK_WAIT:
            goto wait;
        case H2_TOK_STOP:
            return;
        case H2_TOK_DONE:
            break;
        }
        sg_mock_render_stream_end(b, j);
        j->h2_eof = true;
        sg_h2srv_resume(c->h2, j->h2_id);
        break;
    }
    if (SG_UNLIKELY(b->oom))
        sg_h2srv_reset(c->h2, j->h2_id, NGHTTP2_INTERNAL_ERROR);
    else if (j->cut_at >= 0)
        h2_cut(c, j, before);
    mark_dirty(c);
    return;
wait:
    if (j->cut_at >= 0 && h2_cut(c, j, before))
        return;
    if (heap_push(c->w, j) < 0)
        h2_drop(c, j);
}

/* The job of a gRPC call (mock_grpc.c decides what it is); NULL on out of memory. */
static sg_mock_job_t *h2_grpc_job(conn_t *c, sg_slice_t path, sg_slice_t body)
{
    sg_mock_worker_t *w = c->w;
    w->st.requests++;
    faults_clock(w, c->recv_ns);
    if (!w->kdec && !(w->kdec = sg_kserve_dec_new()))
        return NULL;
    sg_mock_job_t *j = job_new(w);
    if (!j)
        return NULL;
    j->arrival_ns = c->recv_ns;
    sg_mock_grpc_ctx_t x = {.srv = w->srv,
                            .rng = &w->rng,
                            .kdec = w->kdec,
                            .rec = w->srv->record_fd >= 0 ? &w->rec : NULL,
                            .rec_first_ns = &w->rec_first_ns,
                            .st = &w->st,
                            .worker = w->idx,
                            .conn = c->serial};
    if (sg_mock_grpc_build(&x, j, path, body, c->recv_ns) < 0) {
        job_free(w, j);
        return NULL;
    }
    return j;
}

static int h2_on_request(void *ud, int32_t id, sg_slice_t method, sg_slice_t path, sg_slice_t body)
{
    conn_t *c = ud;
    sg_mock_job_t *j;
    c->reqs++;
    if (sg_mock_grpc_path(path)) {
        j = h2_grpc_job(c, path, body);
    } else {
        j = build_job(c, method, path, body, true, c->recv_ns);
    }
    if (!j)
        return SG_ENOMEM;
    j->conn = c;
    j->h2_id = id;
    j->close_after = false; /* a stream ends by itself; the connection stays */
    sg_h2srv_set_stream_ud(c->h2, id, j);
    if (goaway_now(c)) {
        int e = sg_h2srv_goaway(c->h2, (uint32_t)c->w->srv->opts.faults[c->fault_idx].b);
        (void)e; /* out of memory: the connection just goes on */
        mark_dirty(c);
    }
    h2_job_run(c, j, c->recv_ns);
    return 0;
}

static ssize_t h2_on_read(void *ud, void *stream_ud, uint8_t *buf, size_t len, bool *eof)
{
    (void)ud;
    sg_mock_job_t *j = stream_ud;
    size_t avail = j->h2_body.len - j->h2_off;
    if (avail == 0) {
        if (!j->h2_eof)
            return -EAGAIN;
        *eof = true;
        return 0;
    }
    size_t n = avail < len ? avail : len;
    memcpy(buf, j->h2_body.p + j->h2_off, n);
    j->h2_off += (uint32_t)n;
    if (j->h2_off == j->h2_body.len) {
        j->h2_off = 0;
        j->h2_body.len = 0;
        *eof = j->h2_eof;
        if (j->blocked) {
            /* rendering stopped at H2_STREAM_HIGH_WATER: it goes on from the timer heap, not from in here */
            j->blocked = false;
            j->due_ns = 0;
            if (heap_push(j->conn->w, j) < 0)
                return -ENOMEM; /* resets the stream */
        }
    }
    return (ssize_t)n;
}

static void h2_on_close(void *ud, void *stream_ud, uint32_t error_code)
{
    conn_t *c = ud;
    if (error_code == 0x8 && !c->closing) /* the client reset the stream (CANCEL) before its end */
        c->w->st.client_aborts++;
    job_free(c->w, stream_ud);
}

static const sg_h2srv_cb_t h2_cb = {.on_request = h2_on_request, .on_read = h2_on_read, .on_close = h2_on_close};

static void h2_recv(conn_t *c, const char *data, size_t len)
{
    if (sg_h2srv_feed(c->h2, data, len) < 0) {
        /* the session queued its GOAWAY: send it, then close */
        c->read_stopped = true;
        c->close_after_flush = true;
    }
    mark_dirty(c);
}

/* Case-insensitive: does the head's line at p (up to end) start with the header name (lowercase, with ':')? */
static bool header_is(const char *p, const char *end, const char *name)
{
    for (; *name; name++, p++)
        if (p >= end || (*p | 0x20) != *name)
            return false;
    return true;
}

/*
 * A client that sent "Expect: 100-continue" (curl does for large bodies) waits for an interim 100 before
 * sending the body; without one it stalls a second or more, which would pass for server latency. The request
 * parser hands over whole requests only, so look at the head it has buffered: once per request, and only when
 * no earlier response is still queued (the 100 must not overtake those).
 */
static void maybe_continue(conn_t *c)
{
    const char *buf = c->parser.buf;
    size_t len = c->parser.len;
    const char *head_end = memmem(buf, len < SG_H1_MAX_HEAD + 4 ? len : SG_H1_MAX_HEAD + 4, "\r\n\r\n", 4);
    if (!head_end)
        return; /* the head is not all here yet: look again on the next receive */
    c->expect_checked = true;
    if (c->q_head)
        return;
    for (const char *line = memchr(buf, '\n', (size_t)(head_end - buf)); line && line < head_end;
         line = memchr(line + 1, '\n', (size_t)(head_end - line - 1))) {
        const char *p = line + 1;
        if (!header_is(p, head_end, "expect:"))
            continue;
        p += 7;
        while (p < head_end && (*p == ' ' || *p == '\t'))
            p++;
        if (header_is(p, head_end, "100-continue")) {
            SG_MOCK_BUF_LIT(conn_out(c), "HTTP/1.1 100 Continue\r\n\r\n");
            mark_dirty(c);
        }
        return;
    }
}

static void h1_recv(conn_t *c, const char *data, size_t len)
{
    sg_mock_worker_t *w = c->w;
    int err = sg_h1_req_feed(&c->parser, data, len, &req_cb, c);
    if (err >= 0 && c->parser.len == 0)
        c->expect_checked = false;
    else if (err >= 0 && !c->expect_checked)
        maybe_continue(c);
    if (err < 0 && err != SG_EABORT && !c->closing) {
        /* answer what we can say about it, in order after what is already queued, then close */
        sg_mock_job_t *j = job_new(w);
        c->read_stopped = true;
        if (j && (err == SG_ETOOBIG || err == SG_EPROTO)) {
            build_static(j, err == SG_ETOOBIG ? SG_MOCK_ST_TOO_BIG : SG_MOCK_ST_BAD_HTTP, c->recv_ns);
            j->close_after = true;
            conn_enqueue(c, j, c->recv_ns);
        } else {
            if (j)
                job_free(w, j);
            conn_close(c);
        }
    }
}

/*
 * The first bytes decide the protocol: the HTTP/2 client preface (h2c with prior knowledge) or HTTP/1.1. They
 * are held back only while they are still a prefix of the preface; "GET " or "POST" differ at once.
 */
static void conn_recv(conn_t *c, const char *data, size_t len)
{
    if (c->proto_known) {
        if (c->h2)
            h2_recv(c, data, len);
        else
            h1_recv(c, data, len);
        return;
    }
    size_t held = c->pre_n;
    size_t take = SG_H2SRV_PREFACE_LEN - held < len ? SG_H2SRV_PREFACE_LEN - held : len;
    memcpy(c->pre + held, data, take);
    if (memcmp(c->pre, SG_H2SRV_PREFACE, held + take) != 0) {
        c->proto_known = true;
        if (held)
            h1_recv(c, c->pre, held);
        if (!c->closing && !c->read_stopped)
            h1_recv(c, data, len);
        return;
    }
    if (held + take < SG_H2SRV_PREFACE_LEN) {
        c->pre_n = (uint8_t)(held + take);
        return;
    }
    c->proto_known = true;
    c->h2 = sg_h2srv_new(&h2_cb, c, c->w->srv->opts.max_streams, SG_MOCK_MAX_REQUEST);
    if (!c->h2) {
        conn_close(c);
        return;
    }
    h2_recv(c, c->pre, SG_H2SRV_PREFACE_LEN);
    if (len > take && !c->read_stopped)
        h2_recv(c, data + take, len - take);
}

/* --tls: ciphertext in; the handshake, then plaintext to conn_recv. A failed handshake just closes: the client
 * has the alert. */
static void tls_recv(conn_t *c, const char *data, size_t len)
{
    if (sg_tls_feed(c->tls, data, len) < 0) {
        conn_close(c);
        return;
    }
    mark_dirty(c); /* handshake flights, tickets, and whatever the requests render */
    int rc = sg_tls_handshake(c->tls);
    if (rc != 0) {
        if (rc < 0)
            conn_close(c);
        return;
    }
    for (;;) {
        int n = sg_tls_read(c->tls, c->w->tls_buf, TLS_PLAIN_BUF);
        if (n == 0)
            return;
        if (n < 0) { /* close_notify, or a broken record: either way the peer is done */
            c->read_stopped = true;
            c->close_after_flush = true;
            return;
        }
        conn_recv(c, c->w->tls_buf, (size_t)n);
        if (c->closing || c->read_stopped)
            return;
    }
}

/* --fault stall-read: keep received bytes unread until the window ends (release_held). */
static void conn_hold(conn_t *c, const char *data, size_t len)
{
    sg_mock_buf_mem(&c->held, data, len);
    if (c->held.oom) {
        conn_close(c);
        return;
    }
    if (!c->held_listed) {
        c->held_listed = true;
        c->held_next = c->w->held;
        c->w->held = c;
    }
}

/* The stall-read window is over: read what it held, as if it had all arrived now. */
static void release_held(sg_mock_worker_t *w, int64_t now)
{
    conn_t *c = w->held;
    w->held = NULL;
    while (c) {
        conn_t *next = c->held_next;
        c->held_listed = false;
        c->held_next = NULL;
        if (!c->closing && !c->read_stopped && c->held.len) {
            w->st.faults[SG_MOCK_FAULT_STALL_READ]++;
            c->recv_ns = now;
            c->held_fault = true;
            if (c->tls)
                tls_recv(c, c->held.p, c->held.len);
            else
                conn_recv(c, c->held.p, c->held.len);
            c->held_fault = false;
        }
        free(c->held.p);
        c->held = (sg_mock_buf_t){0};
        conn_maybe_free(c);
        c = next;
    }
}

static void on_recv(sg_op_t *op, const sg_ev_t *ev)
{
    conn_t *c = SG_CONTAINER_OF(op, conn_t, recv_op);
    sg_mock_worker_t *w = c->w;
    bool more = ev->more;
    if (!more)
        c->recv_armed = false;
    int res = ev->res;
    if (res > 0 && ev->buf) {
        unsigned bid = ev->bid;
        if (!c->closing && !c->read_stopped) {
            c->recv_ns = sg_now_ns();
            if (c->held_listed || (c->recv_ns >= w->rstall_start_ns && c->recv_ns < w->rstall_end_ns))
                conn_hold(c, sg_loop_data(&w->loop, ev), (size_t)res);
            else if (c->tls)
                tls_recv(c, sg_loop_data(&w->loop, ev), (size_t)res);
            else
                conn_recv(c, sg_loop_data(&w->loop, ev), (size_t)res);
        }
        sg_loop_buf_release(&w->loop, bid);
    } else if (res == -ENOBUFS) {
        /* every provided buffer was in use; they come back at the end of this dispatch, so just re-arm */
    } else if (res <= 0 && res != -ENOBUFS) {
        if (!c->closing) /* the peer closed (or reset) with responses unfinished: it gave them up */
            for (const sg_mock_job_t *j = c->q_head; j; j = j->next)
                c->w->st.client_aborts++;
        conn_close(c); /* 0: the peer closed; <0: reset, or our own cancel */
    }
    if (!more && !c->closing)
        conn_arm_recv(c);
    conn_maybe_free(c);
}

/* ---------- accepting ---------- */

static void accept_arm(sg_mock_worker_t *w)
{
    sg_loop_accept(&w->loop, &w->accept_op, w->listen_fd);
    w->accept_armed = true;
}

/* The per-connection --fault a new connection draws (trickle, bwcap, goaway), or none. */
static void draw_conn_fault(conn_t *c)
{
    sg_mock_worker_t *w = c->w;
    const sg_mock_opts_t *o = &w->srv->opts;
    double u = sg_rng_uniform(&w->rng), acc = 0;
    for (unsigned k = 0; k < o->n_faults; k++) {
        const sg_mock_fault_t *f = &o->faults[k];
        if (!sg_mock_fault_per_conn(f->kind))
            continue;
        acc += f->fraction;
        if (u > acc)
            continue;
        c->fault = f->kind;
        c->fault_idx = (uint8_t)k;
        if (f->kind == SG_MOCK_FAULT_TRICKLE) {
            c->pace_bytes = f->a;
            c->pace_gap_ns = f->b;
        } else if (f->kind == SG_MOCK_FAULT_BWCAP) {
            /* sends of a fiftieth of a second's bytes, 20 ms apart (fewer and longer when that is under 1 byte) */
            c->pace_bytes = f->a >= 50 ? f->a / 50 : 1;
            c->pace_gap_ns = (int64_t)((double)c->pace_bytes * 1e9 / (double)f->a);
        }
        if (f->kind != SG_MOCK_FAULT_GOAWAY) /* goaway counts when it fires */
            w->st.faults[f->kind]++;
        return;
    }
}

static void on_accept(sg_op_t *op, const sg_ev_t *ev)
{
    sg_mock_worker_t *w = SG_CONTAINER_OF(op, sg_mock_worker_t, accept_op);
    sg_mock_server_t *s = w->srv;
    if (!ev->more) {
        w->accept_armed = false;
        /* out of descriptors and the like: back off briefly instead of spinning on the error */
        w->accept_retry_ns = ev->res < 0 ? sg_now_ns() + ACCEPT_RETRY_NS : 0;
    }
    if (ev->res < 0)
        return;
    int fd = ev->res;
    if (atomic_load_explicit(&s->stop, memory_order_relaxed) || w->listen_fd < 0) {
        close(fd); /* stopping, or crashed (--fault crash) */
        return;
    }
    /* the descriptor budget is shared by all workers: past it, new connections are closed at once */
    if (atomic_fetch_add_explicit(&s->conns_open, 1, memory_order_relaxed) >= s->max_conns) {
        atomic_fetch_sub_explicit(&s->conns_open, 1, memory_order_relaxed);
        close(fd);
        return;
    }
    conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        atomic_fetch_sub_explicit(&s->conns_open, 1, memory_order_relaxed);
        close(fd);
        return;
    }
    int one = 1;
    /* SSE events are small and timed: never let Nagle hold one back */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->w = w;
    c->fd = fd;
    c->recv_op.fn = on_recv;
    c->send_op.fn = on_send;
    if (w->tls_ctx && sg_tls_conn_new(w->tls_ctx, NULL, NULL, &c->tls) < 0) {
        atomic_fetch_sub_explicit(&s->conns_open, 1, memory_order_relaxed);
        close(fd);
        free(c);
        return;
    }
    c->serial = atomic_fetch_add_explicit(&s->conn_serial, 1, memory_order_relaxed);
    if (s->conn_fault_sum > 0)
        draw_conn_fault(c);
    sg_h1_req_init(&c->parser, SG_MOCK_MAX_REQUEST);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    conn_arm_recv(c);
}

/* ---------- the loop ---------- */

static void flush_dirty(sg_mock_worker_t *w, int64_t now)
{
    conn_t *c = w->dirty;
    w->dirty = NULL;
    w->pace_wake_ns = INT64_MAX;
    if (in_stall(w, now)) {
        /* nothing leaves in the window; keep the list, the loop wakes at its end */
        w->dirty = c;
        return;
    }
    while (c) {
        conn_t *next = c->dirty_next;
        c->dirty = false;
        c->dirty_next = NULL;
        conn_flush(c, now);
        conn_maybe_free(c);
        c = next;
    }
}

static int64_t next_deadline(const sg_mock_worker_t *w, int64_t now)
{
    int64_t d = INT64_MAX;
    if (w->heap_n)
        d = w->heap[0]->due_ns;
    if (w->dirty && in_stall(w, now) && w->stall_end_ns < d)
        d = w->stall_end_ns;
    if (!w->accept_armed && w->listen_fd >= 0 && w->accept_retry_ns < d)
        d = w->accept_retry_ns;
    if (w->dirty && w->pace_wake_ns < d)
        d = w->pace_wake_ns;
    if (w->crash_ns < d)
        d = w->crash_ns;
    if (w->listen_fd < 0 && w->restart_ns < d)
        d = w->restart_ns;
    if (w->held && w->rstall_end_ns < d)
        d = w->rstall_end_ns;
    if (w->rec.len && w->rec_first_ns + RECORD_FLUSH_NS < d)
        d = w->rec_first_ns + RECORD_FLUSH_NS;
    if (!w->faults_armed && now + FAULT_CLOCK_POLL_NS < d) /* --fault-origin request, the clock not started here */
        d = now + FAULT_CLOCK_POLL_NS;
    return d;
}

/* --fault crash: what a killed server does. Every connection closes at once, the listening socket goes (so
 * connects are refused), and the requests in progress are never answered. With DOWN 0 the listening socket stays:
 * a server respawned so fast (or handed its socket by a supervisor) that no connect is ever refused. */
static void worker_crash(sg_mock_worker_t *w, int64_t now)
{
    bool instant = w->restart_ns <= w->crash_ns;
    w->crash_ns = INT64_MAX;
    if (instant) {
        w->restart_ns = INT64_MAX;
    } else {
        if (w->accept_armed)
            sg_loop_cancel(&w->loop, &w->accept_op, w->listen_fd);
        sg_loop_close(&w->loop, w->listen_fd);
        w->listen_fd = -1;
    }
    uint64_t lost = w->jobs_live, conns = 0;
    for (conn_t *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->closing)
            continue;
        conns++;
        conn_close(c);
        conn_maybe_free(c);
    }
    w->st.faults[SG_MOCK_FAULT_CRASH]++;
    w->st.crash_conns += conns;
    w->st.crash_lost += lost;
    if (!w->srv->opts.quiet) {
        fprintf(stderr,
                "surge mock: worker %u crashed at %.3f s: %llu connections closed, %llu requests unanswered%s\n",
                w->idx, (double)(now - w->srv->start_ns) / 1e9, (unsigned long long)conns, (unsigned long long)lost,
                instant                      ? "; still listening (an instant respawn)"
                : w->restart_ns == INT64_MAX ? "; it stays down"
                                             : "");
    }
}

/* --fault crash with DOWN: listen on the same port again. */
static void worker_restart(sg_mock_worker_t *w, int64_t now)
{
    int fd = sg_tcp_listen(&w->srv->listen_addr, 4096);
    if (fd < 0) {
        fprintf(stderr, "surge mock: worker %u cannot listen again: %s; retrying\n", w->idx, sg_strerror(fd));
        w->restart_ns = now + 100 * 1000000LL;
        return;
    }
    w->restart_ns = INT64_MAX;
    w->listen_fd = fd;
    accept_arm(w);
    if (!w->srv->opts.quiet)
        fprintf(stderr, "surge mock: worker %u listening again at %.3f s\n", w->idx,
                (double)(now - w->srv->start_ns) / 1e9);
}

static void worker_report(sg_mock_worker_t *w)
{
    sg_mock_server_t *s = w->srv;
    pthread_mutex_lock(&s->mu);
    s->reported++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void *worker_main(void *arg)
{
    sg_mock_worker_t *w = arg;
    sg_mock_server_t *s = w->srv;
    /* sleeps end on time: the heap's deadlines are what the tests measure */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    int err = sg_loop_init(&w->loop, (sg_io_backend_t)s->io_backend, RING_ENTRIES, RECV_BUFS, RECV_BUF_SIZE);
    if (err < 0) {
        w->init_err = err;
        w->init_what = s->io_backend == SG_IO_URING ? "cannot set up io_uring" : "cannot set up epoll";
        worker_report(w);
        return NULL;
    }
    w->loop_ok = true;
    w->accept_op.fn = on_accept;
    accept_arm(w);
    err = sg_loop_flush(&w->loop);
    if (err < 0) {
        w->init_err = err;
        w->init_what = "cannot submit to io_uring";
        worker_report(w);
        return NULL;
    }
    worker_report(w);

    int64_t now = sg_now_ns();
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        int rc = sg_loop_run_once(&w->loop, next_deadline(w, now));
        if (rc < 0) {
            fprintf(stderr, "surge mock: worker %u: event loop wait failed: %s\n", w->idx, sg_strerror(rc));
            break;
        }
        now = sg_now_ns();
        if (!w->faults_armed) {
            int64_t origin = atomic_load(&s->fault_origin_ns);
            if (origin)
                faults_arm(w, origin);
        }
        while (w->heap_n && w->heap[0]->due_ns <= now) {
            sg_mock_job_t *j = w->heap[0];
            heap_remove(w, j);
            if (j->conn->h2)
                h2_job_run(j->conn, j, now);
            else
                conn_pump(j->conn, now);
        }
        if (now >= w->crash_ns)
            worker_crash(w, now);
        if (w->listen_fd < 0 && now >= w->restart_ns)
            worker_restart(w, now);
        if (w->held && now >= w->rstall_end_ns)
            release_held(w, now);
        if (!w->accept_armed && w->listen_fd >= 0 && now >= w->accept_retry_ns)
            accept_arm(w);
        flush_dirty(w, now);
        size_t rec_len = w->rec.len + w->slog.len;
        if (rec_len && (rec_len >= RECORD_FLUSH_BYTES || now - w->rec_first_ns >= RECORD_FLUSH_NS))
            record_flush(w);
    }

    /* stop: no more accepts, connections closed (the ring's teardown in finish completes the closes) */
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    w->listen_fd = -1;
    for (conn_t *c = w->conns; c; c = c->next) {
        shutdown(c->fd, SHUT_RDWR);
    }
    if (w->rec.len || w->slog.len)
        record_flush(w);
    if (w->tls_ctx)
        sg_tls_thread_done();
    return NULL;
}

sg_mock_worker_t *sg_mock_worker_new(sg_mock_server_t *srv, unsigned idx, int listen_fd)
{
    sg_mock_worker_t *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->pool = malloc(POOL_MAX * sizeof(*w->pool));
    w->enc = srv->tok ? sg_tok_enc_new(srv->tok) : NULL;
    if (!w->pool || (srv->tok && !w->enc)) {
        free(w->pool);
        sg_tok_enc_free(w->enc);
        free(w);
        return NULL;
    }
    if (srv->opts.tls) {
        /* the options were tried once by the main thread: a failure here is memory */
        char err[160];
        if (sg_tls_server_ctx_new(&srv->tls_opts, &w->tls_ctx, err, sizeof(err)) < 0 ||
            !(w->tls_buf = malloc(TLS_PLAIN_BUF))) {
            sg_tls_ctx_free(w->tls_ctx);
            free(w->pool);
            sg_tok_enc_free(w->enc);
            free(w);
            return NULL;
        }
    }
    w->text_tokens = -1;
    w->pace_wake_ns = INT64_MAX;
    w->crash_ns = w->restart_ns = INT64_MAX;
    w->rstall_start_ns = w->rstall_end_ns = INT64_MAX;
    w->stall_start_ns = w->stall_end_ns = INT64_MAX;
    w->srv = srv;
    bool timed = srv->opts.stall_ms > 0; /* a stall window, crash or stall-read to time */
    for (unsigned k = 0; k < srv->opts.n_faults; k++)
        timed |=
            srv->opts.faults[k].kind == SG_MOCK_FAULT_CRASH || srv->opts.faults[k].kind == SG_MOCK_FAULT_STALL_READ;
    int64_t origin = atomic_load(&srv->fault_origin_ns);
    if (origin || !timed)
        faults_arm(w, origin);
    w->idx = idx;
    w->listen_fd = listen_fd;
    /* deterministic per worker, so a fault pattern can be reproduced */
    sg_rng_seed(&w->rng, 0x6d6f636bULL, idx);
    return w;
}

int sg_mock_worker_start(sg_mock_worker_t *w)
{
    int err = pthread_create(&w->thread, NULL, worker_main, w);
    if (err)
        return -err;
    w->thread_started = true;
    return 0;
}

int sg_mock_worker_init_error(const sg_mock_worker_t *w, const char **what)
{
    *what = w->init_what;
    return w->init_err;
}

void sg_mock_worker_wake(sg_mock_worker_t *w)
{
    if (w->loop_ok)
        sg_loop_wake(&w->loop);
}

void sg_mock_worker_finish(sg_mock_worker_t *w, sg_mock_stats_t *st)
{
    if (w->thread_started)
        pthread_join(w->thread, NULL);
    /* the ring goes first: it cancels the sends still reading from buffers freed below */
    if (w->loop_ok)
        sg_loop_destroy(&w->loop);
    conn_t *c = w->conns;
    while (c) {
        conn_t *next = c->next;
        conn_discard_jobs(c);
        sg_h2srv_free(c->h2);
        sg_tls_conn_free(c->tls);
        close(c->fd);
        sg_h1_req_free(&c->parser);
        free(c->out.p);
        free(c->wire.p);
        free(c->held.p);
        atomic_fetch_sub_explicit(&w->srv->conns_open, 1, memory_order_relaxed);
        free(c);
        c = next;
    }
    if (w->listen_fd >= 0)
        close(w->listen_fd);
    while (w->free_jobs) {
        sg_mock_job_t *j = w->free_jobs;
        w->free_jobs = j->next;
        free(j->h2_body.p);
        free(j);
    }
    for (unsigned i = 0; i < w->pool_n; i++)
        free(w->pool[i]);
    free(w->pool);
    free(w->heap);
    free(w->rec.p);
    free(w->slog.p);
    free(w->scratch.p);
    sg_tok_enc_free(w->enc);
    sg_kserve_dec_free(w->kdec);
    sg_tls_ctx_free(w->tls_ctx);
    free(w->tls_buf);
    st->requests += w->st.requests;
    st->completions += w->st.completions;
    st->images += w->st.images;
    st->audios += w->st.audios;
    st->media_bytes += w->st.media_bytes;
    st->streamed += w->st.streamed;
    st->tool_requests += w->st.tool_requests;
    st->tool_calls += w->st.tool_calls;
    st->errors += w->st.errors;
    st->drops += w->st.drops;
    st->client_aborts += w->st.client_aborts;
    for (int k = 0; k < SG_MOCK_FAULT_KINDS; k++)
        st->faults[k] += w->st.faults[k];
    st->crash_conns += w->st.crash_conns;
    st->crash_lost += w->st.crash_lost;
    free(w);
}
