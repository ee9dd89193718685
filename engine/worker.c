/*
 * The client worker: arrival schedule, connection pool, request lifecycle over HTTP/1.1 (+ SSE), all on one
 * io_uring loop. Protocol bytes are handed to the sans-I/O parsers in proto/; this file only moves bytes,
 * keeps time and decides what to do next.
 *
 * Time: every request has an intended start (open loop: its arrival; closed loop: when its slot freed). A
 * request that cannot go out on time (no idle connection, the concurrency cap, the worker is behind) waits in
 * a FIFO and keeps that intended time; latencies are measured from it, and separately from the actual send.
 *
 * OSL with --tokenizer: the worker keeps each request's output text (content and reasoning, unescaped, appended
 * to a buffer the request slot reuses) and writes it into its record log; it neither tokenizes nor adds the
 * record to its metrics, because OSL (and ITL, throughput, goodput, which follow from it) is settled only after
 * the join, when run.c's pass (osl.c) counts the text and adds every measured record from the log. Without a
 * tokenizer nothing is kept and metrics are added here, at completion, as before.
 */
#define _GNU_SOURCE
#include "sg_worker.h"

#include "sg_h1.h"
#include "sg_h2.h"
#include "sg_loop.h"
#include "sg_openai.h"
#include "sg_sched.h"
#include "sg_sse.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENT_BYTES (1u << 20) /* one SSE event */
#define MAX_BODY_BYTES (16u << 20) /* one non-streamed body */
#define ERR_BODY_SAMPLE 200        /* bytes of an error body kept for the message */
#define SETUP_CONNECT_NS 3000000000LL
#define FIXED_PREOPEN 4 /* connections opened before a fixed schedule starts, per worker */

typedef struct sg_conn sg_conn_t;
typedef struct sg_req sg_req_t;

/*
 * One response being received: HTTP/1.1 connections embed one; HTTP/2 gives each stream its own (from a
 * per-worker free list). The parser callbacks below work on it, whatever the protocol.
 */
typedef struct resp resp_t;
struct resp {
    sg_worker_t *w;
    sg_req_t *req; /* NULL once the request was finished elsewhere (timeout, cancel) */
    sg_sse_t sse;
    char *body; /* non-streamed body, or the start of an error body */
    size_t body_len;
    size_t body_cap;
    bool event_stream;
    bool complete; /* the parser reported the end of the response */
    resp_t *next_free;
};

struct sg_req {
    sg_record_t rec;
    const sg_payload_t *payload;
    sg_conn_t *conn;
    sg_req_t *next;    /* wait queue or free list */
    sg_req_t *fl_prev; /* in-flight list, in send order (so timeouts come in order) */
    sg_req_t *fl_next;
    uint32_t *events; /* content-event times for rec.event_us */
    uint32_t events_cap;
    char *text; /* --tokenizer: output text so far, unescaped */
    uint32_t text_len;
    uint32_t text_cap;
    bool text_lost; /* over SG_RECORD_TEXT_MAX, a bad escape, or out of memory: no tokenizer count */
    bool in_flight;
    bool retried;       /* re-sent once after a kept-alive connection turned out to be closed */
    uint8_t h2_resends; /* HTTP/2: times re-sent after the server refused the stream or sent GOAWAY below it */
    resp_t *rs;         /* --http2: the stream's response */
    int32_t stream_id;
};

enum conn_state { C_CONNECTING, C_IDLE, C_BUSY, C_CLOSING };

struct sg_conn {
    sg_op_t connect_op;
    sg_op_t send_op;
    sg_op_t recv_op;
    sg_worker_t *w;
    int fd;
    enum conn_state state;
    unsigned ops; /* operations in flight; the conn is freed when closing and this reaches 0 */
    bool recv_armed;
    bool for_setup; /* opened before the start instant */
    resp_t rs;      /* HTTP/1.1: the response of the request on this connection (rs.req) */
    size_t send_off;
    sg_h1_resp_t h1;
    uint64_t served; /* responses completed on this connection */
    /* --http2 */
    sg_h2_t *h2;
    char *wbuf; /* bytes being sent (wlen), sent up to woff */
    size_t wlen, wcap, woff;
    bool sending;
    bool h2_lost; /* the connection broke: its streams end as disconnects (or are re-sent) */
    int lost_res;
    size_t h2v_idx;        /* 1 + index in the worker's usable HTTP/2 connections; 0 when not there */
    sg_conn_t *dirty_next; /* conns with frames to flush after a dispatch */
    bool dirty;
    sg_conn_t *next; /* idle list */
    sg_conn_t *prev;
    sg_conn_t *all_next; /* every connection of the worker, for the final clean-up */
    sg_conn_t *all_prev;
};

struct sg_worker {
    sg_run_t *run;
    const sg_config_t *cfg;
    unsigned index, n;
    int cpu;
    pthread_t thread;
    bool started;
    sg_loop_t loop;

    /* schedule */
    sg_sched_t sched;
    double rate; /* this worker's share of the request rate; 0 = closed loop */
    int64_t next_arrival_ns;
    uint64_t quota; /* requests this worker issues, warmup included; UINT64_MAX = until the duration */
    uint64_t warmup_quota;
    uint64_t issued;
    int64_t stop_issue_ns;  /* INT64_MAX until the measured phase starts with a duration */
    uint32_t slots;         /* closed loop */
    uint32_t max_in_flight; /* 0 = no cap */
    bool issuing_done;

    /* requests */
    sg_req_t *free_reqs;
    sg_req_t *wait_head, *wait_tail;
    uint64_t n_waiting;
    sg_req_t *fl_head, *fl_tail;
    uint64_t n_in_flight;
    int64_t timeout_ns;

    /* connections */
    sg_conn_t *idle_head;
    sg_conn_t *all_head;
    uint64_t n_conns;
    uint64_t n_connecting;
    uint64_t max_conns;
    int last_connect_err;
    uint64_t conns_opened, conns_peak, connect_failures, resent;

    /* --http2 */
    bool http2;
    bool in_h2_cb;   /* inside nghttp2 (feed, drain, free): queue frames, do not flush */
    sg_conn_t **h2v; /* connected sessions that may take streams */
    size_t h2n, h2cap;
    sg_conn_t *dirty_head; /* sessions with frames to flush */
    resp_t *free_resps;
    uint32_t h2_per_conn; /* streams a connection takes: the peer's last SETTINGS_MAX_CONCURRENT_STREAMS */
    uint64_t h2_streams_peak, h2_goaways, h2_refused_resent, h2_resets;

    sg_metrics_t *metrics;
    bool keep_text; /* --tokenizer: keep output text, defer measured records' metrics to the post-run pass */
    sg_reclog_t *log;
    char log_path[4096];
    uint64_t warmup_done;
    int fatal;
    char fatal_msg[4400];

    sg_worker_progress_t progress;
};

static void conn_dispatch(sg_worker_t *w);
static void conn_close(sg_conn_t *c);
static void req_finish(sg_worker_t *w, sg_req_t *r, int64_t now);
static void issue_closed(sg_worker_t *w, int64_t intended);
static void conn_put(sg_conn_t *c);
static void recv_arm(sg_conn_t *c);
static void fail_waiting_head(sg_worker_t *w, int err);
static sg_conn_t *conn_open(sg_worker_t *w, bool for_setup);
static void h2_conn_release(sg_conn_t *c);
static void h2v_remove(sg_worker_t *w, sg_conn_t *c);
static void h2_conn_lost(sg_conn_t *c, int res);
static void h2_handle_data(sg_conn_t *c, const char *data, size_t len);
static void h2_on_sent(sg_conn_t *c, int res);
static int h2_conn_ready(sg_conn_t *c);
static void h2_dispatch(sg_worker_t *w);
static void h2_abandon(sg_req_t *r);

/* ---------------- helpers ---------------- */

static uint64_t share(uint64_t total, unsigned i, unsigned n)
{
    return total / n + (i < total % n ? 1 : 0);
}

static void set_error(sg_req_t *r, sg_err_class_t cls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_error(sg_req_t *r, sg_err_class_t cls, const char *fmt, ...)
{
    if (r->rec.err_class != SG_ERRC_NONE)
        return; /* the first cause wins */
    r->rec.err_class = (uint8_t)cls;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->rec.err_msg, sizeof(r->rec.err_msg), fmt, ap);
    va_end(ap);
}

static sg_req_t *req_alloc(sg_worker_t *w)
{
    sg_req_t *r = w->free_reqs;
    if (r) {
        w->free_reqs = r->next;
        uint32_t *ev = r->events;
        uint32_t cap = r->events_cap;
        char *text = r->text;
        uint32_t text_cap = r->text_cap;
        memset(r, 0, sizeof(*r));
        r->events = ev;
        r->events_cap = cap;
        r->text = text;
        r->text_cap = text_cap;
    } else {
        r = calloc(1, sizeof(*r));
        if (!r)
            return NULL;
    }
    return r;
}

static void req_release(sg_worker_t *w, sg_req_t *r)
{
    /* Keep small event arrays for reuse; drop big ones so one long answer does not pin memory. */
    if (r->events_cap > 4096) {
        free(r->events);
        r->events = NULL;
        r->events_cap = 0;
    }
    if (r->text_cap > (64u << 10)) {
        free(r->text);
        r->text = NULL;
        r->text_cap = 0;
    }
    r->next = w->free_reqs;
    w->free_reqs = r;
}

static void fl_append(sg_worker_t *w, sg_req_t *r)
{
    r->fl_prev = w->fl_tail;
    r->fl_next = NULL;
    if (w->fl_tail)
        w->fl_tail->fl_next = r;
    else
        w->fl_head = r;
    w->fl_tail = r;
    r->in_flight = true;
    w->n_in_flight++;
}

static void fl_remove(sg_worker_t *w, sg_req_t *r)
{
    if (!r->in_flight)
        return;
    if (r->fl_prev)
        r->fl_prev->fl_next = r->fl_next;
    else
        w->fl_head = r->fl_next;
    if (r->fl_next)
        r->fl_next->fl_prev = r->fl_prev;
    else
        w->fl_tail = r->fl_prev;
    r->in_flight = false;
    w->n_in_flight--;
}

static void wait_push(sg_worker_t *w, sg_req_t *r)
{
    r->next = NULL;
    if (w->wait_tail)
        w->wait_tail->next = r;
    else
        w->wait_head = r;
    w->wait_tail = r;
    w->n_waiting++;
}

static sg_req_t *wait_pop(sg_worker_t *w)
{
    sg_req_t *r = w->wait_head;
    if (r) {
        w->wait_head = r->next;
        if (!w->wait_head)
            w->wait_tail = NULL;
        w->n_waiting--;
    }
    return r;
}

static void idle_push(sg_worker_t *w, sg_conn_t *c)
{
    c->prev = NULL;
    c->next = w->idle_head;
    if (w->idle_head)
        w->idle_head->prev = c;
    w->idle_head = c;
    c->state = C_IDLE;
}

static void idle_remove(sg_worker_t *w, sg_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (w->idle_head == c)
        w->idle_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

/* ---------------- request completion ---------------- */

static void req_finish(sg_worker_t *w, sg_req_t *r, int64_t now)
{
    sg_record_t *rec = &r->rec;
    fl_remove(w, r);
    if (rec->end_ns == 0)
        rec->end_ns = now;
    rec->event_us = r->events;
    rec->osl_tokenizer = -1; /* counted after the run, from the log */
    sg_record_settle_osl(rec);
    rec->has_text = w->keep_text && !rec->warmup && !r->text_lost && rec->err_class == SG_ERRC_NONE;
    rec->text = r->text;
    rec->text_len = rec->has_text ? r->text_len : 0;
    if (rec->warmup) {
        w->warmup_done++;
        atomic_store_explicit(&w->progress.warmup_done, w->warmup_done, memory_order_relaxed);
    } else {
        if (!w->keep_text)
            sg_metrics_add(w->metrics, rec);
        atomic_fetch_add_explicit(&w->progress.completed, 1, memory_order_relaxed);
        if (rec->err_class != SG_ERRC_NONE)
            atomic_fetch_add_explicit(&w->progress.errors, 1, memory_order_relaxed);
    }
    if (w->log) {
        int err = sg_reclog_append(w->log, rec);
        if (err < 0 && !w->fatal) {
            w->fatal = err;
            snprintf(w->fatal_msg, sizeof(w->fatal_msg), "writing the record log %s: %s", w->log_path,
                     sg_strerror(err));
        }
    }
    req_release(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);

    /* Closed loop: the slot is free now, and that is the next request's intended start. */
    if (w->rate == 0 && !w->issuing_done && !atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        issue_closed(w, now);
}

/* ---------------- events from the parsers ---------------- */

static int body_append(resp_t *c, const char *data, size_t len, size_t cap_limit)
{
    if (c->body_len + len > cap_limit)
        return SG_ETOOBIG;
    if (c->body_len + len > c->body_cap) {
        size_t ncap = c->body_cap ? c->body_cap : 1024;
        while (ncap < c->body_len + len)
            ncap *= 2;
        char *nb = realloc(c->body, ncap);
        if (!nb)
            return SG_ENOMEM;
        c->body = nb;
        c->body_cap = ncap;
    }
    memcpy(c->body + c->body_len, data, len);
    c->body_len += len;
    return 0;
}

/* Receive time of the completion being parsed: every event in one read shares it (see docs/metrics.md). */
static __thread int64_t t_recv_ns;

static void apply_decoded(sg_req_t *r, const sg_oai_result_t *res)
{
    if (res->completion_tokens >= 0)
        r->rec.osl_server = (int32_t)res->completion_tokens;
    if (res->prompt_tokens >= 0)
        r->rec.isl_server = (int32_t)res->prompt_tokens;
}

/* --tokenizer: append a raw (escaped) string's decoded bytes to the request's output text. */
static void text_append(sg_req_t *r, sg_slice_t raw)
{
    if (raw.len == 0 || r->text_lost)
        return;
    /* Unescaping never lengthens a JSON string, so raw.len bytes of room always suffice. */
    if (raw.len > SG_RECORD_TEXT_MAX - r->text_len) {
        r->text_lost = true;
        return;
    }
    uint32_t need = r->text_len + (uint32_t)raw.len;
    if (need > r->text_cap) {
        uint32_t ncap = r->text_cap ? r->text_cap : 1024;
        while (ncap < need)
            ncap *= 2;
        char *nt = realloc(r->text, ncap);
        if (!nt) {
            r->text_lost = true;
            return;
        }
        r->text = nt;
        r->text_cap = ncap;
    }
    ssize_t n = sg_json_unescape(raw.base, raw.len, r->text + r->text_len, raw.len);
    if (n < 0 || (size_t)n > raw.len) {
        r->text_lost = true;
        return;
    }
    r->text_len += (uint32_t)n;
}

static void capture_text(sg_worker_t *w, sg_req_t *r, const sg_oai_result_t *res)
{
    if (!w->keep_text || r->rec.warmup)
        return;
    text_append(r, res->reasoning); /* a server that sends both in one chunk thought before it answered */
    text_append(r, res->content);
}

static int add_content_event(sg_req_t *r, int64_t t)
{
    sg_record_t *rec = &r->rec;
    if (rec->first_token_ns == 0)
        rec->first_token_ns = t;
    else if (rec->second_token_ns == 0)
        rec->second_token_ns = t;
    if (rec->n_events == r->events_cap) {
        uint32_t ncap = r->events_cap ? r->events_cap * 2 : 64;
        uint32_t *ne = realloc(r->events, ncap * sizeof(*ne));
        if (!ne)
            return SG_ENOMEM;
        r->events = ne;
        r->events_cap = ncap;
    }
    int64_t off_us = (t - rec->first_token_ns) / 1000;
    r->events[rec->n_events++] = off_us > UINT32_MAX ? UINT32_MAX : (uint32_t)off_us;
    rec->content_events++;
    return 0;
}

static int on_sse_event(void *ud, const sg_sse_event_t *ev)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    if (!r)
        return SG_EPROTO;
    if (sg_oai_is_done(ev->data.base, ev->data.len))
        return 0; /* the end of the response is taken when the HTTP body ends, in the same read */
    sg_oai_result_t res;
    if (sg_oai_decode(c->w->cfg->endpoint_type, ev->data.base, ev->data.len, &res) < 0) {
        set_error(r, SG_ERRC_PROTOCOL, "malformed JSON in SSE event: %.*s",
                  (int)(ev->data.len > 60 ? 60 : ev->data.len), ev->data.base);
        return 0; /* keep reading so the connection stays in step; the request is failed */
    }
    if (res.is_error) {
        set_error(r, SG_ERRC_SERVER, "server error in stream: %.*s",
                  (int)(res.error_message.len > 90 ? 90 : res.error_message.len),
                  res.error_message.base ? res.error_message.base : "");
        return 0;
    }
    apply_decoded(r, &res);
    if (res.content.len > 0 || res.reasoning.len > 0) {
        capture_text(c->w, r, &res);
        return add_content_event(r, t_recv_ns);
    }
    return 0;
}

static const sg_sse_cb_t sse_cb = {.on_event = on_sse_event};

static int on_head(void *ud, const sg_h1_resp_head_t *head)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    if (!r)
        return SG_EPROTO; /* a response nobody asked for */
    r->rec.http_status = head->status;
    c->event_stream = head->event_stream;
    if (head->status < 200 || head->status > 299)
        set_error(r, SG_ERRC_HTTP, "HTTP %d", head->status);
    return 0;
}

static int on_body(void *ud, const char *data, size_t len)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    r->rec.response_bytes += len;
    if (r->rec.err_class == SG_ERRC_HTTP) {
        /* keep the start of an error body for the message sample */
        if (c->body_len < ERR_BODY_SAMPLE)
            return body_append(c, data, len < ERR_BODY_SAMPLE - c->body_len ? len : ERR_BODY_SAMPLE - c->body_len,
                               ERR_BODY_SAMPLE);
        return 0;
    }
    if (c->event_stream) {
        int err = sg_sse_feed(&c->sse, data, len, &sse_cb, c);
        if (err < 0) {
            set_error(r, SG_ERRC_PROTOCOL, "SSE: %s", sg_strerror(err));
            return err;
        }
        return 0;
    }
    int err = body_append(c, data, len, MAX_BODY_BYTES);
    if (err < 0)
        set_error(r, SG_ERRC_PROTOCOL, "response body: %s", sg_strerror(err));
    return err;
}

static void finish_error_body(resp_t *c, sg_req_t *r)
{
    /* Prefer the server's own error message over "HTTP 500". */
    sg_oai_result_t res;
    if (c->body_len && sg_oai_decode(c->w->cfg->endpoint_type, c->body, c->body_len, &res) == 0 && res.is_error &&
        res.error_message.len) {
        snprintf(r->rec.err_msg, sizeof(r->rec.err_msg), "HTTP %d: %.*s", r->rec.http_status,
                 (int)(res.error_message.len > 100 ? 100 : res.error_message.len), res.error_message.base);
    } else if (c->body_len) {
        char sample[80];
        size_t n = c->body_len < sizeof(sample) - 1 ? c->body_len : sizeof(sample) - 1;
        for (size_t i = 0; i < n; i++)
            sample[i] = (c->body[i] >= 32 && c->body[i] < 127) ? c->body[i] : ' ';
        sample[n] = 0;
        snprintf(r->rec.err_msg, sizeof(r->rec.err_msg), "HTTP %d: %s", r->rec.http_status, sample);
    }
}

static int on_complete(void *ud)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    sg_record_t *rec = &r->rec;
    if (rec->err_class == SG_ERRC_HTTP) {
        finish_error_body(c, r);
    } else if (rec->err_class == SG_ERRC_NONE) {
        if (c->event_stream) {
            if (sg_sse_pending(&c->sse))
                set_error(r, SG_ERRC_PROTOCOL, "stream ended inside an SSE event");
        } else {
            sg_oai_result_t res;
            if (sg_oai_decode(c->w->cfg->endpoint_type, c->body ? c->body : "", c->body_len, &res) < 0) {
                set_error(r, SG_ERRC_PROTOCOL, "malformed JSON response body");
            } else if (res.is_error) {
                set_error(r, SG_ERRC_SERVER, "server error: %.*s",
                          (int)(res.error_message.len > 100 ? 100 : res.error_message.len),
                          res.error_message.base ? res.error_message.base : "");
            } else {
                apply_decoded(r, &res);
                if (res.content.len > 0 || res.reasoning.len > 0) {
                    rec->content_events = 1;
                    capture_text(c->w, r, &res);
                }
            }
        }
    }
    rec->end_ns = t_recv_ns;
    c->complete = true;
    return 0;
}

static const sg_h1_resp_cb_t h1_cb = {.on_head = on_head, .on_body = on_body, .on_complete = on_complete};

/* ---------------- connections ---------------- */

static void conn_free(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (c->all_prev)
        c->all_prev->all_next = c->all_next;
    else
        w->all_head = c->all_next;
    if (c->all_next)
        c->all_next->all_prev = c->all_prev;
    if (c->h2)
        h2_conn_release(c);
    close(c->fd);
    sg_h1_resp_free(&c->h1);
    sg_sse_free(&c->rs.sse);
    free(c->rs.body);
    free(c->wbuf);
    w->n_conns--;
    free(c);
}

static void conn_put(sg_conn_t *c)
{
    if (--c->ops == 0 && c->state == C_CLOSING)
        conn_free(c);
}

/* Idempotent. Pending operations are cancelled; the memory goes when the last of them has completed. */
static void conn_close(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (c->state == C_CLOSING)
        return;
    bool connecting = c->state == C_CONNECTING;
    if (c->state == C_IDLE)
        idle_remove(w, c);
    if (connecting)
        w->n_connecting--;
    c->state = C_CLOSING;
    if (c->h2v_idx)
        h2v_remove(w, c);
    if (c->ops == 0) {
        conn_free(c);
        return;
    }
    /* shutdown ends a pending receive (it completes with 0) and fails a pending send */
    shutdown(c->fd, SHUT_RDWR);
    if (connecting) {
        /* A connect is not ended by shutdown: cancel it, and submit now, while the op it names still exists. */
        struct io_uring_sqe *sqe = sg_loop_sqe(&w->loop, NULL);
        io_uring_prep_cancel(sqe, &c->connect_op, 0);
        io_uring_submit(&w->loop.ring);
    }
}

static void conn_send(sg_conn_t *c)
{
    const sg_payload_t *p = c->rs.req->payload;
    struct io_uring_sqe *sqe = sg_loop_sqe(&c->w->loop, &c->send_op);
    io_uring_prep_send(sqe, c->fd, p->bytes + c->send_off, p->len - c->send_off, MSG_NOSIGNAL);
    c->ops++;
}

static void conn_start(sg_conn_t *c, sg_req_t *r)
{
    sg_worker_t *w = c->w;
    c->rs.req = r;
    c->state = C_BUSY;
    c->rs.complete = false;
    c->rs.body_len = 0;
    c->send_off = 0;
    sg_h1_resp_reset(&c->h1);
    sg_sse_reset(&c->rs.sse);
    r->conn = c;
    r->rec.sent_ns = sg_now_ns();
    fl_append(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);
    conn_send(c);
}

/* A kept-alive connection the server had already closed: re-send once on a fresh one, keeping the intended
 * time, as HTTP clients do when not a byte of the response arrived. */
static bool maybe_retry(sg_conn_t *c, sg_req_t *r)
{
    sg_worker_t *w = c->w;
    if (r->retried || c->served == 0 || sg_h1_resp_started(&c->h1) || r->rec.first_byte_ns)
        return false;
    r->retried = true;
    w->resent++;
    fl_remove(w, r);
    r->conn = NULL;
    r->rec.sent_ns = 0;
    c->rs.req = NULL;
    /* back to the front of the queue: it was due before everything waiting */
    r->next = w->wait_head;
    w->wait_head = r;
    if (!w->wait_tail)
        w->wait_tail = r;
    w->n_waiting++;
    return true;
}

static void conn_lost(sg_conn_t *c, int res)
{
    sg_worker_t *w = c->w;
    if (w->http2) {
        h2_conn_lost(c, res);
        return;
    }
    sg_req_t *r = c->rs.req;
    if (r && !maybe_retry(c, r)) {
        c->rs.req = NULL;
        int64_t now = sg_now_ns();
        t_recv_ns = now;
        int e = res == 0 ? sg_h1_resp_eof(&c->h1, &h1_cb, &c->rs) : SG_EINCOMPLETE;
        if (!(e == 0 && c->rs.complete)) {
            if (res == 0)
                set_error(r, SG_ERRC_DISCONNECT, "connection closed by the server %s",
                          sg_h1_resp_started(&c->h1) ? "in the middle of the response" : "before any response");
            else
                set_error(r, SG_ERRC_DISCONNECT, "connection error: %s", sg_strerror(res));
        }
        req_finish(w, r, now);
    }
    conn_close(c);
    conn_dispatch(w);
}

static void handle_data(sg_conn_t *c, const char *data, size_t len)
{
    sg_worker_t *w = c->w;
    if (c->h2) {
        h2_handle_data(c, data, len);
        return;
    }
    sg_req_t *r = c->rs.req;
    if (!r || c->state != C_BUSY) {
        /* bytes nobody asked for: the connection is out of step, drop it */
        conn_close(c);
        return;
    }
    t_recv_ns = sg_now_ns();
    if (r->rec.first_byte_ns == 0)
        r->rec.first_byte_ns = t_recv_ns;
    ssize_t n = sg_h1_resp_feed(&c->h1, data, len, &h1_cb, &c->rs);
    if (n < 0) {
        set_error(r, SG_ERRC_PROTOCOL, "malformed HTTP response: %s", sg_strerror((int)n));
        c->rs.req = NULL;
        conn_close(c);
        req_finish(w, r, t_recv_ns);
        conn_dispatch(w);
        return;
    }
    if (!c->rs.complete)
        return;
    bool keep = c->h1.head.keep_alive && (size_t)n == len;
    c->rs.req = NULL;
    c->served++;
    if (keep)
        idle_push(w, c);
    else
        conn_close(c);
    req_finish(w, r, t_recv_ns);
    conn_dispatch(w);
}

static void recv_arm(sg_conn_t *c)
{
    sg_loop_recv_multishot(&c->w->loop, c->fd, &c->recv_op);
    c->recv_armed = true;
    c->ops++;
}

static void on_recv(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, recv_op);
    sg_worker_t *w = c->w;
    bool more = cqe->flags & IORING_CQE_F_MORE;
    int res = cqe->res;
    if (res > 0) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        if (c->state != C_CLOSING)
            handle_data(c, sg_loop_buf(&w->loop, bid), (size_t)res);
        sg_loop_buf_release(&w->loop, bid);
    } else if (res == 0 || (res < 0 && res != -ENOBUFS && res != -ECANCELED)) {
        if (c->state != C_CLOSING)
            conn_lost(c, res);
    }
    if (!more) {
        c->recv_armed = false;
        if (c->state != C_CLOSING && (res > 0 || res == -ENOBUFS)) {
            /* multishot ended (buffers ran out, or the kernel chose to): arm again */
            c->ops--;
            recv_arm(c);
            return;
        }
        conn_put(c);
    }
}

static void on_send(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, send_op);
    int res = cqe->res;
    if (c->w->http2) {
        h2_on_sent(c, res);
        conn_put(c);
        return;
    }
    if (c->state == C_BUSY && c->rs.req) {
        if (res < 0) {
            conn_lost(c, res);
        } else {
            c->send_off += (size_t)res;
            if (c->send_off < c->rs.req->payload->len)
                conn_send(c); /* short send: the rest */
        }
    }
    conn_put(c);
}

static void fail_waiting_head(sg_worker_t *w, int err)
{
    sg_req_t *r = wait_pop(w);
    if (!r)
        return;
    set_error(r, SG_ERRC_CONNECT, "connect to %s: %s", w->run->addr_text, sg_strerror(err));
    req_finish(w, r, sg_now_ns());
}

static void on_connect(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, connect_op);
    sg_worker_t *w = c->w;
    if (c->state == C_CONNECTING) {
        w->n_connecting--;
        if (cqe->res < 0) {
            w->last_connect_err = cqe->res;
            w->connect_failures++;
            c->state = C_BUSY; /* so conn_close does not count it twice */
            conn_close(c);
            if (!c->for_setup)
                fail_waiting_head(w, cqe->res); /* one failed attempt fails the request it was opened for */
            conn_put(c);
            conn_dispatch(w);
            return;
        }
        recv_arm(c);
        if (w->http2) {
            if (h2_conn_ready(c) < 0) {
                c->state = C_BUSY; /* so conn_close does not count the connect twice */
                conn_close(c);
                fail_waiting_head(w, SG_ENOMEM);
            }
        } else {
            idle_push(w, c);
        }
        conn_put(c);
        conn_dispatch(w);
        return;
    }
    conn_put(c);
}

static sg_conn_t *conn_open(sg_worker_t *w, bool for_setup)
{
    int fd = sg_tcp_client_socket(&w->run->addr);
    if (fd < 0) {
        w->last_connect_err = fd;
        return NULL;
    }
    sg_conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        w->last_connect_err = -ENOMEM;
        return NULL;
    }
    c->w = w;
    c->fd = fd;
    c->for_setup = for_setup;
    c->connect_op.fn = on_connect;
    c->send_op.fn = on_send;
    c->recv_op.fn = on_recv;
    sg_h1_resp_init(&c->h1);
    c->rs.w = w;
    sg_sse_init(&c->rs.sse, MAX_EVENT_BYTES);
    c->state = C_CONNECTING;
    c->all_next = w->all_head;
    if (w->all_head)
        w->all_head->all_prev = c;
    w->all_head = c;
    w->n_conns++;
    w->n_connecting++;
    w->conns_opened++;
    if (w->n_conns > w->conns_peak)
        w->conns_peak = w->n_conns;
    struct io_uring_sqe *sqe = sg_loop_sqe(&w->loop, &c->connect_op);
    io_uring_prep_connect(sqe, fd, (const struct sockaddr *)&w->run->addr.addr, w->run->addr.len);
    c->ops++;
    return c;
}

/* Give waiting requests to idle connections, opening connections as demand requires. */
static void conn_dispatch(sg_worker_t *w)
{
    if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        return;
    if (w->http2) {
        h2_dispatch(w);
        return;
    }
    while (w->wait_head) {
        if (w->max_in_flight && w->n_in_flight >= w->max_in_flight)
            return;
        sg_conn_t *c = w->idle_head;
        if (!c)
            break;
        idle_remove(w, c);
        conn_start(c, wait_pop(w));
    }
    uint64_t want = w->n_waiting;
    if (w->max_in_flight) {
        uint64_t room = w->max_in_flight - w->n_in_flight;
        if (want > room)
            want = room;
    }
    while (w->n_connecting < want && w->n_conns < w->max_conns) {
        if (!conn_open(w, false)) {
            fail_waiting_head(w, w->last_connect_err);
            want = w->n_waiting < want ? w->n_waiting : want;
        }
    }
}

/* ---------------- HTTP/2 (--http2: h2c with prior knowledge) ---------------- */

/*
 * Each connection holds one sg_h2 session and many streams; a stream's response has its own resp_t, handled by
 * the same parser callbacks as HTTP/1.1. Frames the session queues are sent from c->wbuf, one send in flight
 * per connection; while it is out, new frames wait in nghttp2 and go with the next send. Nothing is flushed
 * from inside nghttp2's callbacks (w->in_h2_cb): dirty sessions are flushed once the callback has returned.
 */

static resp_t *resp_alloc(sg_worker_t *w)
{
    resp_t *rs = w->free_resps;
    if (rs) {
        w->free_resps = rs->next_free;
        sg_sse_reset(&rs->sse);
    } else {
        rs = calloc(1, sizeof(*rs));
        if (!rs)
            return NULL;
        rs->w = w;
        sg_sse_init(&rs->sse, MAX_EVENT_BYTES);
    }
    rs->req = NULL;
    rs->body_len = 0;
    rs->event_stream = false;
    rs->complete = false;
    return rs;
}

static void resp_release(sg_worker_t *w, resp_t *rs)
{
    if (rs->body_cap > (64u << 10)) {
        free(rs->body);
        rs->body = NULL;
        rs->body_cap = 0;
    }
    rs->next_free = w->free_resps;
    w->free_resps = rs;
}

static int h2v_add(sg_worker_t *w, sg_conn_t *c)
{
    if (w->h2n == w->h2cap) {
        size_t ncap = w->h2cap ? w->h2cap * 2 : 8;
        sg_conn_t **nv = realloc(w->h2v, ncap * sizeof(*nv));
        if (!nv)
            return SG_ENOMEM;
        w->h2v = nv;
        w->h2cap = ncap;
    }
    w->h2v[w->h2n++] = c;
    c->h2v_idx = w->h2n;
    return 0;
}

static void h2v_remove(sg_worker_t *w, sg_conn_t *c)
{
    if (!c->h2v_idx)
        return;
    size_t i = c->h2v_idx - 1;
    w->h2v[i] = w->h2v[--w->h2n];
    w->h2v[i]->h2v_idx = i + 1;
    c->h2v_idx = 0;
}

static void h2_mark(sg_conn_t *c)
{
    if (c->dirty)
        return;
    c->dirty = true;
    c->dirty_next = c->w->dirty_head;
    c->w->dirty_head = c;
}

static void h2_unmark(sg_conn_t *c)
{
    if (!c->dirty)
        return;
    for (sg_conn_t **p = &c->w->dirty_head; *p; p = &(*p)->dirty_next)
        if (*p == c) {
            *p = c->dirty_next;
            break;
        }
    c->dirty = false;
}

/*
 * HTTP/2 says a refused stream, or one above a GOAWAY's last-stream-id, was not processed, so re-sending it is
 * safe; a server that drains connections often (nginx's keepalive_requests) can refuse the same request on the
 * next connection too. A few re-sends, not one; a server that refuses everything still ends in an error.
 */
#define H2_MAX_RESENDS 8

/* Requeue a request that was not processed (refused stream, GOAWAY, a dead kept-alive connection) at the front,
 * keeping its intended time. */
static void h2_requeue(sg_worker_t *w, sg_req_t *r)
{
    r->h2_resends++;
    fl_remove(w, r);
    r->conn = NULL;
    r->rs = NULL;
    r->rec.sent_ns = 0;
    r->next = w->wait_head;
    w->wait_head = r;
    if (!w->wait_tail)
        w->wait_tail = r;
    w->n_waiting++;
}

static int h2_cb_head(void *ud, void *sud, int status, bool event_stream)
{
    resp_t *rs = sud;
    if (!rs->req)
        return -1; /* nobody waits for it any more: reset */
    if (rs->req->rec.first_byte_ns == 0)
        rs->req->rec.first_byte_ns = t_recv_ns;
    sg_h1_resp_head_t head = {.status = status, .content_length = -1, .event_stream = event_stream};
    return on_head(rs, &head);
}

static int h2_cb_data(void *ud, void *sud, const char *data, size_t len)
{
    resp_t *rs = sud;
    if (!rs->req)
        return -1;
    if (rs->req->rec.first_byte_ns == 0)
        rs->req->rec.first_byte_ns = t_recv_ns;
    return on_body(rs, data, len);
}

static void h2_cb_close(void *ud, void *sud, uint32_t code, bool complete, bool retryable)
{
    sg_conn_t *c = ud;
    sg_worker_t *w = c->w;
    resp_t *rs = sud;
    sg_req_t *r = rs->req;
    if (r) {
        /* a connection that died under a stream not a byte of whose response came: as a dead keep-alive, once */
        bool resend = retryable && r->h2_resends < H2_MAX_RESENDS;
        if (!retryable && c->h2_lost && r->rec.first_byte_ns == 0 && c->served > 0 && !r->retried) {
            r->retried = true;
            resend = true;
        }
        if (resend) {
            w->h2_refused_resent++;
            h2_requeue(w, r);
        } else {
            int64_t now = c->h2_lost ? sg_now_ns() : t_recv_ns;
            if (complete) {
                t_recv_ns = now;
                on_complete(rs);
                c->served++;
            } else if (c->h2_lost) {
                if (c->lost_res == 0 || c->lost_res == SG_EPROTO)
                    set_error(r, SG_ERRC_DISCONNECT, "connection %s %s",
                              c->lost_res == 0 ? "closed by the server" : "broke (HTTP/2 protocol error)",
                              r->rec.first_byte_ns ? "in the middle of the response" : "before any response");
                else
                    set_error(r, SG_ERRC_DISCONNECT, "connection error: %s", sg_strerror(c->lost_res));
            } else {
                w->h2_resets++;
                if (retryable)
                    set_error(r, SG_ERRC_STREAM_RESET, "HTTP/2 stream refused by the server %d times: %s",
                              H2_MAX_RESENDS + 1, sg_h2_error_name(code));
                else
                    set_error(r, SG_ERRC_STREAM_RESET, "HTTP/2 stream reset by the server: %s", sg_h2_error_name(code));
            }
            r->conn = NULL;
            r->rs = NULL;
            req_finish(w, r, now);
        }
    }
    resp_release(w, rs);
}

static void h2_cb_goaway(void *ud, int32_t last_stream_id, uint32_t code)
{
    sg_conn_t *c = ud;
    c->w->h2_goaways++;
    h2v_remove(c->w, c); /* no new streams here; those above last_stream_id come back refused */
}

static const sg_h2_cb_t h2_cb = {
    .on_head = h2_cb_head, .on_data = h2_cb_data, .on_close = h2_cb_close, .on_goaway = h2_cb_goaway};

/* Free the session; streams still open end through h2_cb_close (as disconnects, or re-sent). */
static void h2_conn_release(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    sg_h2_t *h = c->h2;
    c->h2 = NULL;
    c->h2_lost = true;
    h2v_remove(w, c);
    h2_unmark(c);
    bool was = w->in_h2_cb;
    w->in_h2_cb = true;
    sg_h2_free(h);
    w->in_h2_cb = was;
}

static void h2_conn_lost(sg_conn_t *c, int res)
{
    sg_worker_t *w = c->w;
    c->lost_res = res;
    if (c->h2)
        h2_conn_release(c);
    conn_close(c);
    conn_dispatch(w);
}

/* A GOAWAY'd session with nothing left open is closed. */
static void h2_maybe_retire(sg_conn_t *c)
{
    if (c->h2 && c->state != C_CLOSING && sg_h2_going_away(c->h2) && sg_h2_open_streams(c->h2) == 0)
        conn_close(c);
}

static void h2_flush(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (!c->h2 || c->state == C_CLOSING || c->sending)
        return;
    c->wlen = c->woff = 0;
    w->in_h2_cb = true;
    int err = sg_h2_drain(c->h2, &c->wbuf, &c->wlen, &c->wcap);
    w->in_h2_cb = false;
    if (err < 0) {
        h2_conn_lost(c, err);
        return;
    }
    if (c->wlen) {
        struct io_uring_sqe *sqe = sg_loop_sqe(&w->loop, &c->send_op);
        io_uring_prep_send(sqe, c->fd, c->wbuf, c->wlen, MSG_NOSIGNAL);
        c->ops++;
        c->sending = true;
    }
    h2_maybe_retire(c);
}

static void h2_flush_dirty(sg_worker_t *w)
{
    while (w->dirty_head && !w->in_h2_cb) {
        sg_conn_t *c = w->dirty_head;
        w->dirty_head = c->dirty_next;
        c->dirty = false;
        h2_flush(c);
    }
}

static void h2_on_sent(sg_conn_t *c, int res)
{
    if (c->state == C_CLOSING)
        return;
    if (res < 0) {
        c->sending = false;
        h2_conn_lost(c, res);
        return;
    }
    c->woff += (size_t)res;
    if (c->woff < c->wlen) {
        struct io_uring_sqe *sqe = sg_loop_sqe(&c->w->loop, &c->send_op);
        io_uring_prep_send(sqe, c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        c->ops++;
        return;
    }
    c->sending = false;
    h2_mark(c);
    conn_dispatch(c->w);
    h2_flush_dirty(c->w); /* also when the run is stopping and dispatch returned early */
}

static int h2_conn_ready(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    c->h2 = sg_h2_client_new(&h2_cb, c);
    if (!c->h2 || h2v_add(w, c) < 0)
        return SG_ENOMEM;
    c->state = C_IDLE;
    h2_mark(c); /* the preface and our SETTINGS */
    return 0;
}

static void h2_handle_data(sg_conn_t *c, const char *data, size_t len)
{
    sg_worker_t *w = c->w;
    t_recv_ns = sg_now_ns();
    w->in_h2_cb = true;
    int err = sg_h2_feed(c->h2, data, len);
    w->in_h2_cb = false;
    if (err < 0) {
        h2_conn_lost(c, err);
        return;
    }
    uint32_t m = sg_h2_peer_max_streams(c->h2);
    if (m > 0)
        w->h2_per_conn = m;
    h2_mark(c); /* WINDOW_UPDATE, SETTINGS ack, PING replies */
    conn_dispatch(w);
    h2_flush_dirty(w);
}

/* A timed-out or cancelled request lets go of its stream: reset it; the response is dropped when it closes. */
static void h2_abandon(sg_req_t *r)
{
    sg_conn_t *c = r->conn;
    r->rs->req = NULL;
    r->rs = NULL;
    r->conn = NULL;
    if (c && c->h2) {
        sg_h2_cancel(c->h2, r->stream_id);
        h2_mark(c);
    }
}

/* Submit r on c. false when the session cannot take it now (r is back at the front of the queue). */
static bool h2_start(sg_conn_t *c, sg_req_t *r)
{
    sg_worker_t *w = c->w;
    resp_t *rs = resp_alloc(w);
    if (!rs) {
        set_error(r, SG_ERRC_CONNECT, "out of memory for an HTTP/2 stream");
        req_finish(w, r, sg_now_ns());
        return true;
    }
    rs->req = r;
    int32_t id = sg_h2_submit(c->h2, &w->run->h2_reqs[r->rec.payload], rs);
    if (id < 0) {
        resp_release(w, rs);
        if (id == -EAGAIN) {
            h2v_remove(w, c);
            r->next = w->wait_head;
            w->wait_head = r;
            if (!w->wait_tail)
                w->wait_tail = r;
            w->n_waiting++;
            return false;
        }
        set_error(r, SG_ERRC_PROTOCOL, "HTTP/2 request: %s", sg_strerror(id));
        req_finish(w, r, sg_now_ns());
        return true;
    }
    r->rs = rs;
    r->conn = c;
    r->stream_id = id;
    r->rec.sent_ns = sg_now_ns();
    fl_append(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);
    uint32_t open = sg_h2_open_streams(c->h2);
    if (open > w->h2_streams_peak)
        w->h2_streams_peak = open;
    h2_mark(c);
    return true;
}

/* Give waiting requests to the least-loaded session that has room; open connections as demand requires. */
static void h2_dispatch(sg_worker_t *w)
{
    while (w->wait_head) {
        if (w->max_in_flight && w->n_in_flight >= w->max_in_flight)
            break;
        sg_conn_t *best = NULL;
        uint32_t best_open = UINT32_MAX;
        for (size_t i = 0; i < w->h2n; i++) {
            sg_conn_t *c = w->h2v[i];
            if (!sg_h2_can_submit(c->h2))
                continue;
            uint32_t open = sg_h2_open_streams(c->h2);
            if (open < best_open) {
                best = c;
                best_open = open;
                if (open == 0)
                    break;
            }
        }
        if (!best || !h2_start(best, wait_pop(w)))
            break;
    }
    uint64_t want = w->n_waiting;
    if (w->max_in_flight) {
        uint64_t room = w->max_in_flight > w->n_in_flight ? w->max_in_flight - w->n_in_flight : 0;
        if (want > room)
            want = room;
    }
    while (want > w->n_connecting * w->h2_per_conn && w->n_conns < w->max_conns) {
        if (!conn_open(w, false)) {
            fail_waiting_head(w, w->last_connect_err);
            want = w->n_waiting < want ? w->n_waiting : want;
        }
    }
    h2_flush_dirty(w);
}

/* ---------------- schedule ---------------- */

static void new_request(sg_worker_t *w, int64_t intended)
{
    sg_req_t *r = req_alloc(w);
    if (!r) {
        w->fatal = SG_ENOMEM;
        snprintf(w->fatal_msg, sizeof(w->fatal_msg), "out of memory for requests");
        w->issuing_done = true;
        return;
    }
    uint64_t k = w->issued++;
    sg_record_t *rec = &r->rec;
    rec->id = k * w->n + w->index;
    rec->worker = w->index;
    uint32_t pi = 0;
    r->payload = sg_payload_pick(w->run->payloads, rec->id, (int)w->cfg->model_strategy, w->cfg->random_seed, &pi);
    rec->payload = pi;
    rec->model = r->payload->model;
    rec->isl = r->payload->isl;
    rec->max_tokens = r->payload->max_tokens;
    rec->isl_server = -1;
    rec->osl_server = -1;
    rec->streaming = w->cfg->streaming;
    rec->intended_ns = intended;
    rec->warmup = k < w->warmup_quota;
    if (k == w->warmup_quota && w->cfg->benchmark_duration_s > 0)
        w->stop_issue_ns = intended + (int64_t)llround(w->cfg->benchmark_duration_s * 1e9);
    wait_push(w, r);
}

static bool may_issue(sg_worker_t *w, int64_t intended)
{
    if (w->issued >= w->quota || intended >= w->stop_issue_ns ||
        atomic_load_explicit(&w->run->stop, memory_order_relaxed)) {
        w->issuing_done = true;
        return false;
    }
    return true;
}

static void issue_closed(sg_worker_t *w, int64_t intended)
{
    if (!may_issue(w, intended))
        return;
    new_request(w, intended);
    conn_dispatch(w);
}

static void issue_due(sg_worker_t *w, int64_t now)
{
    bool any = false;
    if (w->next_arrival_ns == INT64_MAX)
        w->issuing_done = true; /* a fixed schedule with nothing more for this worker */
    while (!w->issuing_done && w->next_arrival_ns <= now) {
        if (!may_issue(w, w->next_arrival_ns))
            break;
        new_request(w, w->next_arrival_ns);
        any = true;
        w->next_arrival_ns = sg_sched_next(&w->sched);
        if (w->next_arrival_ns == INT64_MAX)
            w->issuing_done = true;
    }
    if (any)
        conn_dispatch(w);
}

static void check_timeouts(sg_worker_t *w, int64_t now)
{
    while (w->fl_head && now - w->fl_head->rec.sent_ns >= w->timeout_ns) {
        sg_req_t *r = w->fl_head;
        sg_conn_t *c = r->conn;
        set_error(r, SG_ERRC_TIMEOUT, "no complete response within --request-timeout %.3g s",
                  w->cfg->request_timeout_s);
        if (r->rs) {
            h2_abandon(r);
        } else if (c) {
            c->rs.req = NULL;
            conn_close(c);
        }
        req_finish(w, r, now);
    }
    conn_dispatch(w);
}

static void cancel_all(sg_worker_t *w, int64_t now)
{
    w->issuing_done = true;
    while (w->fl_head) {
        sg_req_t *r = w->fl_head;
        if (r->rs) {
            h2_abandon(r);
        } else if (r->conn) {
            r->conn->rs.req = NULL;
            conn_close(r->conn);
        }
        set_error(r, SG_ERRC_CANCELLED, "run interrupted while the request was in flight");
        req_finish(w, r, now);
    }
    sg_req_t *r;
    while ((r = wait_pop(w))) {
        set_error(r, SG_ERRC_CANCELLED, "run interrupted before the request could be sent");
        req_finish(w, r, now);
    }
}

/* ---------------- the thread ---------------- */

static void pin(sg_worker_t *w)
{
    if (w->cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort: a cgroup may forbid it */
}

static void fatal(sg_worker_t *w, int err, const char *what)
{
    if (w->fatal)
        return;
    w->fatal = err;
    snprintf(w->fatal_msg, sizeof(w->fatal_msg), "worker %u: %s: %s", w->index, what, sg_strerror(err));
}

static void preopen(sg_worker_t *w)
{
    /* Closed loop: open the connections before the clock starts, as h2load does, so the first requests do
     * not pay for the handshake. Open loop grows the pool to demand instead. */
    uint64_t n = w->rate == 0 ? w->slots : 0;
    /* A trace's first requests are due at the start instant: have a few connections ready for them too. */
    if (w->cfg->fixed_schedule)
        n = w->quota < FIXED_PREOPEN ? w->quota : FIXED_PREOPEN;
    /* HTTP/2: streams, not connections, carry the slots; spread them over --max-connections when given */
    if (w->http2 && !w->cfg->max_connections)
        n = (n + w->h2_per_conn - 1) / w->h2_per_conn;
    if (n > w->max_conns)
        n = w->max_conns;
    for (uint64_t i = 0; i < n; i++)
        if (!conn_open(w, true))
            break;
    int64_t until = sg_now_ns() + SETUP_CONNECT_NS;
    while (w->n_connecting > 0 && sg_now_ns() < until) {
        int err = sg_loop_run_once(&w->loop, until);
        if (err < 0) {
            fatal(w, err, "io_uring wait");
            return;
        }
    }
}

static void *worker_main(void *arg)
{
    sg_worker_t *w = arg;
    pin(w);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int err = sg_loop_init(&w->loop, 4096, 1024, 4096);
    if (err < 0) {
        fatal(w, err,
              err == -EPERM || err == -ENOSYS
                  ? "io_uring is unavailable (a seccomp profile or kernel.io_uring_disabled blocks it)"
                  : "io_uring set-up");
        atomic_store(&w->progress.ready, 1);
        atomic_store(&w->progress.finished, 1);
        return NULL;
    }
    preopen(w);
    atomic_store(&w->progress.ready, 1);
    while (!atomic_load(&w->run->go))
        usleep(100);

    int64_t start = w->run->start_ns;
    if (w->cfg->fixed_schedule) {
        sg_sched_init_fixed(&w->sched, w->run->schedule_ns, w->run->schedule_n, w->cfg->fixed_schedule_speedup,
                            w->index, w->n, start);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else if (w->rate > 0) {
        sg_sched_init(&w->sched, w->cfg->distribution == SG_DIST_CONSTANT ? SG_SCHED_CONSTANT : SG_SCHED_POISSON,
                      w->cfg->request_rate, w->index, w->n, w->cfg->random_seed, start);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else {
        while (sg_now_ns() < start)
            ;
        for (uint32_t i = 0; i < w->slots && !w->issuing_done; i++)
            issue_closed(w, start);
        if (w->slots == 0)
            w->issuing_done = true;
    }

    bool stopped = false;
    while (!w->fatal) {
        int64_t now = sg_now_ns();
        if (!stopped && atomic_load_explicit(&w->run->stop, memory_order_relaxed)) {
            cancel_all(w, now);
            stopped = true;
        }
        if (w->rate > 0)
            issue_due(w, now);
        if (w->fl_head)
            check_timeouts(w, now);
        if (w->issuing_done && !w->wait_head && !w->fl_head)
            break;
        int64_t deadline = INT64_MAX;
        if (w->rate > 0 && !w->issuing_done)
            deadline = w->next_arrival_ns;
        if (w->fl_head && w->fl_head->rec.sent_ns + w->timeout_ns < deadline)
            deadline = w->fl_head->rec.sent_ns + w->timeout_ns;
        err = sg_loop_run_once(&w->loop, deadline);
        if (err < 0)
            fatal(w, err, "io_uring wait");
    }
    if (w->fatal)
        cancel_all(w, sg_now_ns());

    while (w->all_head) {
        sg_conn_t *c = w->all_head;
        w->all_head = c->all_next;
        if (c->h2)
            h2_conn_release(c);
        close(c->fd);
        sg_h1_resp_free(&c->h1);
        sg_sse_free(&c->rs.sse);
        free(c->rs.body);
        free(c->wbuf);
        free(c);
    }
    w->idle_head = NULL;
    w->dirty_head = NULL;
    free(w->h2v);
    w->h2v = NULL;
    w->h2n = w->h2cap = 0;
    while (w->free_resps) {
        resp_t *rs = w->free_resps;
        w->free_resps = rs->next_free;
        sg_sse_free(&rs->sse);
        free(rs->body);
        free(rs);
    }
    /* The ring (and its eventfd) stays until sg_worker_join: the controller may still be waking us. */
    if (w->log) {
        err = sg_reclog_close(w->log);
        w->log = NULL;
        if (err < 0)
            fatal(w, err, "closing the record log");
    }
    atomic_store(&w->progress.finished, 1);
    return NULL;
}

/* ---------------- public ---------------- */

sg_worker_t *sg_worker_new(sg_run_t *run, unsigned index, unsigned n, int cpu, char *err, size_t errlen)
{
    const sg_config_t *cfg = run->cfg;
    sg_worker_t *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->run = run;
    w->cfg = cfg;
    w->index = index;
    w->n = n;
    w->cpu = cpu;
    w->rate = cfg->request_rate > 0 ? cfg->request_rate / n : 0;
    if (cfg->fixed_schedule)
        w->rate = 1; /* open loop: any positive value says so; the arrival times come from the trace */
    w->slots = cfg->request_rate > 0 ? 0 : (uint32_t)share(cfg->concurrency, index, n);
    w->max_in_flight = cfg->max_concurrency ? (uint32_t)share(cfg->max_concurrency, index, n) : 0;
    if (cfg->max_concurrency && w->max_in_flight == 0)
        w->max_in_flight = 1; /* a share of 0 would stall this worker: give it one slot */
    w->warmup_quota = share(cfg->warmup_request_count, index, n);
    w->quota = cfg->request_count ? share(cfg->request_count, index, n) + w->warmup_quota : UINT64_MAX;
    w->stop_issue_ns = INT64_MAX;
    w->timeout_ns = (int64_t)llround(cfg->request_timeout_s * 1e9);
    uint64_t reserve = 64;
    w->max_conns = run->nofile > reserve * 2 ? (run->nofile - reserve) / n : 16;
    if (cfg->max_connections && share(cfg->max_connections, index, n) < w->max_conns)
        w->max_conns = share(cfg->max_connections, index, n);
    if (w->max_conns == 0)
        w->max_conns = 1;
    w->http2 = cfg->http2;
    w->h2_per_conn = 100; /* RFC 9113's recommended minimum, until a peer's SETTINGS say otherwise */
    w->keep_text = run->tok != NULL;
    w->metrics = sg_metrics_new(cfg->slos, cfg->n_slos);
    if (!w->metrics) {
        snprintf(err, errlen, "out of memory for metrics");
        free(w);
        return NULL;
    }
    snprintf(w->log_path, sizeof(w->log_path), "%s/.surge-worker-%u.reclog", run->artifact_dir, index);
    int e = 0;
    w->log = sg_reclog_open(w->log_path, &e);
    if (!w->log) {
        snprintf(err, errlen, "cannot create %s: %s", w->log_path, sg_strerror(e));
        sg_metrics_free(w->metrics);
        free(w);
        return NULL;
    }
    return w;
}

int sg_worker_start(sg_worker_t *w)
{
    int err = pthread_create(&w->thread, NULL, worker_main, w);
    if (err)
        return -err;
    w->started = true;
    return 0;
}

void sg_worker_wake(sg_worker_t *w)
{
    /* ready: the loop exists; it is destroyed only by sg_worker_join, on the controller's thread, like this call */
    if (atomic_load(&w->progress.ready))
        sg_loop_wake(&w->loop);
}

int sg_worker_join(sg_worker_t *w, char *err, size_t errlen)
{
    if (w->started) {
        pthread_join(w->thread, NULL);
        w->started = false;
    }
    sg_loop_destroy(&w->loop); /* here, not on the worker: sg_worker_wake runs on this thread */
    if (w->fatal)
        snprintf(err, errlen, "%s", w->fatal_msg);
    return w->fatal;
}

const sg_worker_progress_t *sg_worker_progress(const sg_worker_t *w)
{
    return &w->progress;
}

sg_metrics_t *sg_worker_metrics(sg_worker_t *w)
{
    return w->metrics;
}

const char *sg_worker_log_path(const sg_worker_t *w)
{
    return w->log_path;
}

uint64_t sg_worker_warmup_count(const sg_worker_t *w)
{
    return w->warmup_done;
}

void sg_worker_stats(const sg_worker_t *w, sg_worker_stats_t *out)
{
    out->cpu = w->cpu;
    out->issued = w->issued;
    out->conns_opened = w->conns_opened;
    out->conns_peak = w->conns_peak;
    out->connect_failures = w->connect_failures;
    out->resent = w->resent;
    out->h2_streams_peak = w->h2_streams_peak;
    out->h2_goaways = w->h2_goaways;
    out->h2_refused_resent = w->h2_refused_resent;
    out->h2_resets = w->h2_resets;
}

void sg_worker_free(sg_worker_t *w)
{
    if (!w)
        return;
    sg_loop_destroy(&w->loop); /* a no-op when join did it, or when the loop never came up */
    if (w->log) {
        int e = sg_reclog_close(w->log);
        (void)e;
    }
    sg_metrics_free(w->metrics);
    sg_req_t *r = w->free_reqs;
    while (r) {
        sg_req_t *next = r->next;
        free(r->events);
        free(r->text);
        free(r);
        r = next;
    }
    free(w);
}
