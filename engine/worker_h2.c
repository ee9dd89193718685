/*
 * The worker's HTTP/2 side (--http2: h2c with prior knowledge; over https:// h2 through ALPN).
 *
 * Each connection holds one sg_h2 session and many streams; a stream's response has its own resp_t, handled by
 * the same parser callbacks as HTTP/1.1. Frames the session queues are sent from c->wbuf, one send in flight
 * per connection; while it is out, new frames wait in nghttp2 and go with the next send.
 *
 * Sessions with something to send are marked dirty and written once per loop iteration, just before the ring
 * is submitted (the loop's before_submit hook), never from inside nghttp2's callbacks. A batch of completions
 * (a response arriving in several receive buffers, sends completing) thus leaves as one send per connection
 * holding every frame it queued: flushing after each completion sent about 1.5x the TCP segments h2load does
 * for the same requests, and each segment costs both ends a wakeup.
 */
#define _GNU_SOURCE
#include "worker_int.h"

#include "sg_sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

_Static_assert(sizeof(resp_t) % _Alignof(struct wk_grpc_state) == 0, "the gRPC state after a resp_t is aligned");

static resp_t *resp_alloc(sg_worker_t *w)
{
    resp_t *rs = w->free_resps;
    if (rs) {
        w->free_resps = rs->next_free;
        sg_sse_reset(&rs->sse);
    } else {
        /* a triton stream's gRPC state rides behind it (resp_t's size keeps it aligned) */
        rs = calloc(1, sizeof(*rs) + (w->grpc ? sizeof(struct wk_grpc_state) : 0));
        if (!rs)
            return NULL;
        if (w->grpc)
            rs->g = (struct wk_grpc_state *)(rs + 1);
        rs->w = w;
        sg_sse_init(&rs->sse, MAX_EVENT_BYTES);
    }
    rs->req = NULL;
    rs->body_len = 0;
    rs->event_stream = false;
    rs->complete = false;
    if (w->grpc)
        wk_grpc_resp_reset(rs);
    return rs;
}

static void resp_release(sg_worker_t *w, resp_t *rs)
{
    if (rs->turn_bytes) {
        sg_h2_req_free(&rs->turn_req);
        free(rs->turn_bytes);
        rs->turn_bytes = NULL;
    }
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

void wk_h2v_remove(sg_worker_t *w, sg_conn_t *c)
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
    wk_fl_remove(w, r);
    r->conn = NULL;
    r->rs = NULL;
    r->rec.sent_ns = 0;
    wk_wait_push_front(w, r);
}

static int h2_cb_head(void *ud, void *sud, int status, bool event_stream)
{
    resp_t *rs = sud;
    if (!rs->req)
        return -1; /* nobody waits for it any more: reset */
    if (rs->req->rec.first_byte_ns == 0)
        wk_first_byte(rs->req, wk_t_recv_ns);
    if (rs->req->rec.head_ns == 0)
        rs->req->rec.head_ns = wk_t_recv_ns;
    if (rs->w->grpc)
        return wk_grpc_on_head(rs, status);
    sg_h1_resp_head_t head = {.status = status, .content_length = -1, .event_stream = event_stream};
    return wk_on_head(rs, &head);
}

static int h2_cb_data(void *ud, void *sud, const char *data, size_t len)
{
    resp_t *rs = sud;
    if (!rs->req)
        return -1;
    if (rs->req->rec.first_byte_ns == 0)
        wk_first_byte(rs->req, wk_t_recv_ns);
    if (rs->w->grpc)
        return wk_grpc_on_data(rs, data, len);
    return wk_on_body(rs, data, len);
}

static void h2_cb_close(void *ud, void *sud, uint32_t code, bool complete, bool retryable)
{
    sg_conn_t *c = ud;
    sg_worker_t *w = c->w;
    resp_t *rs = sud;
    sg_req_t *r = rs->req;
    if (r) {
        /* a connection that died under a stream not a byte of whose response came: as a dead keep-alive, once;
         * not after a GOAWAY, which said this stream (at or under its last-stream-id: those above come here
         * retryable) may have been processed, so a re-send could make the server do the work twice */
        bool resend = retryable && r->h2_resends < H2_MAX_RESENDS;
        if (!retryable && c->h2_lost && !c->h2_goaway && r->rec.first_byte_ns == 0 && c->served > 0 && !r->retried) {
            r->retried = true;
            resend = true;
        }
        if (resend) {
            w->h2_refused_resent++;
            h2_requeue(w, r);
        } else {
            int64_t now = c->h2_lost ? sg_now_ns() : wk_t_recv_ns;
            if (complete) {
                wk_t_recv_ns = now;
                if (w->grpc)
                    wk_grpc_on_complete(rs);
                else
                    wk_on_complete(rs);
                c->served++;
            } else if (c->h2_lost) {
                if (c->h2_goaway && c->h2_goaway_code != 0)
                    wk_set_error(r, SG_ERRC_DISCONNECT, "the server sent GOAWAY (%s) and closed the connection %s",
                                 sg_h2_error_name(c->h2_goaway_code),
                                 r->rec.first_byte_ns ? "in the middle of the response" : "before any response");
                else if (c->lost_res == SG_EPROTO && w->h2_lost_why[0])
                    wk_set_error(r, SG_ERRC_DISCONNECT, "HTTP/2 protocol error (%s) %s", w->h2_lost_why,
                                 r->rec.first_byte_ns ? "in the middle of the response" : "before any response");
                else if (c->lost_res == 0 || c->lost_res == SG_EPROTO)
                    wk_set_error(r, SG_ERRC_DISCONNECT, "connection %s %s",
                                 c->lost_res == 0 ? "closed by the server" : "broke (HTTP/2 protocol error)",
                                 r->rec.first_byte_ns ? "in the middle of the response" : "before any response");
                else
                    wk_set_error(r, SG_ERRC_DISCONNECT, "connection error: %s", sg_strerror(c->lost_res));
            } else {
                w->h2_resets++;
                if (retryable)
                    wk_set_error(r, SG_ERRC_STREAM_RESET, "HTTP/2 stream refused by the server %d times: %s",
                                 H2_MAX_RESENDS + 1, sg_h2_error_name(code));
                else
                    wk_set_error(r, SG_ERRC_STREAM_RESET, "HTTP/2 stream reset by the server: %s",
                                 sg_h2_error_name(code));
            }
            r->conn = NULL;
            r->rs = NULL;
            wk_req_finish(w, r, now);
        }
    }
    resp_release(w, rs);
}

static void h2_cb_goaway(void *ud, int32_t last_stream_id, uint32_t code)
{
    sg_conn_t *c = ud;
    c->w->h2_goaways++;
    c->h2_goaway = true;
    c->h2_goaway_code = code;
    wk_h2v_remove(c->w, c); /* no new streams here; those above last_stream_id come back refused */
}

/*
 * The request leaves now: its HEADERS were serialized into the drain about to be sent. h2_start stamped the
 * submit; a stream can wait in the session after that (the peer's stream limit is known only once its SETTINGS
 * arrive, and one send is on the wire at a time), and that wait is not the server's time.
 */
static void h2_cb_sent(void *ud, void *sud)
{
    sg_conn_t *c = ud;
    resp_t *rs = sud;
    if (rs->req) {
        if (c->w->drain_ns == 0)
            c->w->drain_ns = sg_now_ns(); /* one clock read for every request leaving in this drain */
        rs->req->rec.sent_ns = c->w->drain_ns;
        wk_cancel_arm(c->w, rs->req, c->w->drain_ns); /* its frames leave in this drain */
    }
    uint32_t n = sg_h2_sent_streams(c->h2);
    if (n > c->w->h2_streams_peak)
        c->w->h2_streams_peak = n;
}

static const sg_h2_cb_t h2_cb = {.on_head = h2_cb_head,
                                 .on_data = h2_cb_data,
                                 .on_close = h2_cb_close,
                                 .on_goaway = h2_cb_goaway,
                                 .on_sent = h2_cb_sent};
/* --service-kind triton: the same, and every head and trailer field for grpc-status */
static const sg_h2_cb_t h2_grpc_cb = {.on_head = h2_cb_head,
                                      .on_data = h2_cb_data,
                                      .on_close = h2_cb_close,
                                      .on_goaway = h2_cb_goaway,
                                      .on_field = wk_grpc_on_field,
                                      .on_sent = h2_cb_sent};

/* Free the session; streams still open end through h2_cb_close (as disconnects, or re-sent). */
void wk_h2_conn_release(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    sg_h2_t *h = c->h2;
    c->h2 = NULL;
    c->h2_lost = true;
    wk_h2v_remove(w, c);
    h2_unmark(c);
    sg_h2_free(h);
}

void wk_h2_conn_lost(sg_conn_t *c, int res)
{
    sg_worker_t *w = c->w;
    c->lost_res = res;
    /* nghttp2's account of a protocol error, for the streams that end below (all of them inside the release) */
    snprintf(w->h2_lost_why, sizeof(w->h2_lost_why), "%s", res == SG_EPROTO && c->h2 ? sg_h2_error_text(c->h2) : "");
    if (c->h2)
        wk_h2_conn_release(c);
    wk_conn_close(c);
    wk_conn_dispatch(w);
}

/*
 * A GOAWAY'd session with nothing left open is closed. A session nghttp2 ended itself (the peer's bytes were not
 * HTTP/2: an HTTP/1.1 server's 400 where its SETTINGS belong) reads nothing more, so its open streams could only
 * wait for --request-timeout: the connection is dropped as broken now, and its streams fail with nghttp2's reason.
 */
static void h2_maybe_retire(sg_conn_t *c)
{
    if (!c->h2 || c->state == C_CLOSING || !sg_h2_going_away(c->h2))
        return;
    if (sg_h2_open_streams(c->h2) == 0)
        wk_conn_close(c);
    else if (sg_h2_closed(c->h2))
        wk_h2_conn_lost(c, SG_EPROTO);
}

static void h2_flush(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (!c->h2 || c->state == C_CLOSING || c->sending)
        return;
    c->wlen = c->woff = 0;
    w->drain_ns = 0;
    int err = sg_h2_drain(c->h2, &c->wbuf, &c->wlen, &c->wcap);
    if (err < 0) {
        wk_h2_conn_lost(c, err);
        return;
    }
    if (c->wlen) {
        err = wk_conn_send(c, c->wbuf, c->wlen); /* over TLS: until the ciphertext is out */
        if (err < 0) {
            wk_h2_conn_lost(c, err);
            return;
        }
        c->sending = true;
    }
    h2_maybe_retire(c);
}

static void h2_flush_dirty(sg_worker_t *w)
{
    while (w->dirty_head) {
        sg_conn_t *c = w->dirty_head;
        w->dirty_head = c->dirty_next;
        c->dirty = false;
        h2_flush(c);
    }
}

void wk_h2_on_sent(sg_conn_t *c, int res)
{
    if (c->state == C_CLOSING)
        return;
    if (res < 0) {
        c->sending = false;
        wk_h2_conn_lost(c, res);
        return;
    }
    c->woff += (size_t)res;
    if (c->woff < c->wlen) {
        (void)wk_conn_send(c, c->wbuf + c->woff, c->wlen - c->woff); /* a short plaintext send: the rest */
        return;
    }
    c->sending = false;
    h2_mark(c);
    wk_conn_dispatch(c->w);
}

void wk_h2_before_submit(void *arg)
{
    h2_flush_dirty(arg);
}

int wk_h2_conn_ready(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    c->h2 = sg_h2_client_new(w->grpc ? &h2_grpc_cb : &h2_cb, c);
    if (!c->h2 || h2v_add(w, c) < 0)
        return SG_ENOMEM;
    c->state = C_IDLE;
    h2_mark(c); /* the preface and our SETTINGS */
    return 0;
}

void wk_h2_handle_data(sg_conn_t *c, const char *data, size_t len)
{
    sg_worker_t *w = c->w;
    /* wk_t_recv_ns is the read's (on_recv): nghttp2's callbacks all run inside this feed */
    int err = sg_h2_feed(c->h2, data, len);
    if (err < 0) {
        wk_h2_conn_lost(c, err);
        return;
    }
    uint32_t m = sg_h2_peer_max_streams(c->h2);
    if (m > 0)
        w->h2_per_conn = m;
    h2_mark(c); /* WINDOW_UPDATE, SETTINGS ack, PING replies */
    wk_conn_dispatch(w);
}

/* A session opened before the run whose peer has not sent its SETTINGS yet (its stream limit is unknown). */
bool wk_h2_awaiting_settings(const sg_worker_t *w)
{
    for (size_t i = 0; i < w->h2n; i++)
        if (!sg_h2_peer_settings_seen(w->h2v[i]->h2))
            return true;
    return false;
}

/* A timed-out or cancelled request lets go of its stream: reset it; the response is dropped when it closes. */
void wk_h2_abandon(sg_req_t *r)
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

/* The HTTP/2 form of a session's turn, from a copy of its HTTP/1.1 bytes that the stream owns. */
static int turn_request(sg_worker_t *w, resp_t *rs, const sg_payload_t *p)
{
    rs->turn_bytes = malloc(p->len ? p->len : 1);
    if (!rs->turn_bytes)
        return SG_ENOMEM;
    memcpy(rs->turn_bytes, p->bytes, p->len);
    int rc = sg_h2_req_from_h1(rs->turn_bytes, p->len, w->cfg->tls ? "https" : "http", &rs->turn_req);
    if (rc < 0) {
        free(rs->turn_bytes);
        rs->turn_bytes = NULL;
    }
    return rc;
}

/* Submit r on c. false when the session cannot take it now (r is back at the front of the queue). */
static bool h2_start(sg_conn_t *c, sg_req_t *r)
{
    sg_worker_t *w = c->w;
    resp_t *rs = resp_alloc(w);
    if (!rs) {
        wk_set_error(r, SG_ERRC_CONNECT, "out of memory for an HTTP/2 stream");
        wk_req_finish(w, r, sg_now_ns());
        return true;
    }
    rs->req = r;
    const sg_h2_req_t *hreq = &w->run->h2_reqs[r->rec.payload];
    if (r->sess) {
        int rc = turn_request(w, rs, r->payload);
        if (rc < 0) {
            resp_release(w, rs);
            wk_set_error(r, SG_ERRC_SESSION, "the turn's HTTP/2 request: %s", sg_strerror(rc));
            wk_req_finish(w, r, sg_now_ns());
            return true;
        }
        hreq = &rs->turn_req;
    }
    /* --cache-bust: the request's own words in its payload's slot (the body's offset in the table's bytes) */
    const sg_payload_t *p = r->payload;
    size_t body_off = p->uniq_len ? (size_t)p->uniq_off - (size_t)(hreq->body - p->bytes) : 0;
    int32_t id = sg_h2_submit_patched(c->h2, hreq, rs, body_off, r->uniq, p->uniq_len);
    if (id < 0) {
        resp_release(w, rs);
        if (id == -EAGAIN) {
            wk_h2v_remove(w, c);
            wk_wait_push_front(w, r);
            return false;
        }
        wk_set_error(r, SG_ERRC_PROTOCOL, "HTTP/2 request: %s", sg_strerror(id));
        wk_req_finish(w, r, sg_now_ns());
        return true;
    }
    r->rs = rs;
    r->conn = c;
    r->stream_id = id;
    r->rec.sent_ns = sg_now_ns(); /* provisional, for timeouts: h2_cb_sent stamps when its HEADERS go out */
    wk_trace_conn(r, c, r->rec.sent_ns);
    wk_fl_append(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);
    h2_mark(c);
    return true;
}

/*
 * Several URLs (worker_url.c): each URL has its own sessions, and a stream goes on a session to its request's URL
 * (rec.url), as an HTTP/1.1 request waits for a connection to it. Connections are opened per URL for the streams
 * queued for it that its sessions have no room for; at the connection cap, a URL whose request heads the queue and
 * has neither a session nor one being opened gets the descriptor of a session to another URL with no stream open
 * (else the queue waits for one to finish: every URL's requests are behind that head).
 */
static void h2_open_urls(sg_worker_t *w, uint64_t room)
{
    uint64_t spare[SG_MAX_URLS] = {0};
    bool has[SG_MAX_URLS] = {false};
    for (size_t i = 0; i < w->h2n; i++) {
        sg_conn_t *c = w->h2v[i];
        has[c->url] = true;
        uint32_t open = sg_h2_open_streams(c->h2);
        if (sg_h2_can_submit(c->h2) && open < w->h2_per_conn)
            spare[c->url] += w->h2_per_conn - open;
    }
    const sg_req_t *head = w->wait_head;
    if (head && w->n_conns >= w->max_conns && !has[head->rec.url] && !w->url_connecting[head->rec.url] &&
        w->n_closing == 0)
        for (size_t i = 0; i < w->h2n; i++) {
            sg_conn_t *c = w->h2v[i];
            if (c->url != head->rec.url && sg_h2_open_streams(c->h2) == 0) {
                wk_conn_close(c);
                break;
            }
        }
    /* the head's URL first: at the cap, the descriptor given up above is for it */
    for (unsigned k = 0, first = head ? head->rec.url : 0; k < w->n_urls; k++) {
        unsigned u = (first + k) % w->n_urls;
        uint64_t want = w->url_waiting[u] > spare[u] ? w->url_waiting[u] - spare[u] : 0;
        if (want > room)
            want = room;
        while (want > w->url_connecting[u] * w->h2_per_conn && w->n_connecting < CONNECT_WINDOW &&
               w->n_conns < w->max_conns) {
            if (!wk_conn_open(w, false, u)) {
                wk_fail_waiting_head(w, w->last_connect_err);
                return;
            }
        }
    }
}

/* Give waiting requests to the least-loaded session that has room (to their URL); open connections as demand
 * requires. */
void wk_h2_dispatch(sg_worker_t *w)
{
    while (w->wait_head) {
        if (w->max_in_flight && w->n_in_flight >= w->max_in_flight)
            break;
        unsigned url = w->wait_head->rec.url; /* 0 with one URL */
        sg_conn_t *best = NULL;
        uint32_t best_open = UINT32_MAX;
        for (size_t i = 0; i < w->h2n; i++) {
            sg_conn_t *c = w->h2v[i];
            if (c->url != url || !sg_h2_can_submit(c->h2))
                continue;
            uint32_t open = sg_h2_open_streams(c->h2);
            if (open < best_open) {
                best = c;
                best_open = open;
                if (open == 0)
                    break;
            }
        }
        if (!best || !h2_start(best, wk_wait_pop(w)))
            break;
    }
    uint64_t want = w->n_waiting;
    uint64_t room = UINT64_MAX;
    if (w->max_in_flight) {
        room = w->max_in_flight > w->n_in_flight ? w->max_in_flight - w->n_in_flight : 0;
        if (want > room)
            want = room;
    }
    if (w->n_urls > 1) {
        h2_open_urls(w, room);
        return;
    }
    while (want > w->n_connecting * w->h2_per_conn && w->n_connecting < CONNECT_WINDOW && w->n_conns < w->max_conns) {
        if (!wk_conn_open(w, false, 0)) {
            wk_fail_waiting_head(w, w->last_connect_err);
            want = w->n_waiting < want ? w->n_waiting : want;
        }
    }
}

/* The end of the thread: the session list and the pooled stream responses. */
void wk_h2_free_all(sg_worker_t *w)
{
    w->dirty_head = NULL;
    free(w->h2v);
    w->h2v = NULL;
    w->h2n = w->h2cap = 0;
    while (w->free_resps) {
        resp_t *rs = w->free_resps;
        w->free_resps = rs->next_free;
        sg_sse_free(&rs->sse);
        wk_grpc_resp_free(rs);
        free(rs->body);
        free(rs);
    }
    wk_grpc_free_all(w);
}
