/*
 * The worker's connections: open, connect, receive, send, close, and the HTTP/1.1 exchange (one request
 * per connection at a time). HTTP/2 sessions ride on the same connections (worker_h2.c).
 *
 * https://: each connection gets an sg_tls_conn from the worker's context once TCP is connected, and stays
 * C_CONNECTING (counted in n_connecting) until its handshake is done: the handshake is connection set-up, as the
 * TCP connect is. Received ciphertext is fed to the filter and the plaintext read out of it goes to the same
 * handle_data as plaintext connections; what the protocols send (the pre-rendered HTTP/1.1 request, the HTTP/2
 * session's frames) is encrypted at once and the ciphertext leaves through send_op, one send in flight
 * (sg_tls_out_peek/consume keep the in-flight region stable while more is written behind it). http:// keeps
 * its zero-copy sends straight from the payload table.
 */
#define _GNU_SOURCE
#include "worker_int.h"

#include "sg_openai.h"
#include "sg_sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Issue 22's budget: at most 2 KiB of client memory per in-flight HTTP/1.1 stream (bench/README.md, 1.3 KiB
 * measured), of which a connection and a request are most; the rest is its token times and allocator overhead. */
_Static_assert(sizeof(sg_conn_t) + sizeof(sg_req_t) <= 1536, "an in-flight stream's structs fit its memory budget");

/* A connection that never carried a request idles on its own list: only those may take a re-send. */
static sg_conn_t **idle_list(sg_worker_t *w, const sg_conn_t *c)
{
    return c->served ? &w->idle_head[c->url] : &w->idle_fresh_head[c->url];
}

void wk_idle_push(sg_worker_t *w, sg_conn_t *c)
{
    sg_conn_t **head = idle_list(w, c);
    c->prev = NULL;
    c->next = *head;
    if (*head)
        (*head)->prev = c;
    *head = c;
    c->state = C_IDLE;
}

void wk_idle_remove(sg_worker_t *w, sg_conn_t *c)
{
    sg_conn_t **head = idle_list(w, c);
    if (c->prev)
        c->prev->next = c->next;
    else if (*head == c)
        *head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

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
        wk_h2_conn_release(c);
    sg_tls_conn_free(c->tls); /* keeps its session in the worker's context for the next connection */
    sg_loop_close(&w->loop, c->fd);
    sg_h1_resp_free(&c->h1);
    sg_sse_free(&c->rs.sse);
    free(c->rs.body);
    free(c->wbuf);
    w->n_conns--;
    w->n_closing--;
    free(c);
}

void wk_conn_put(sg_conn_t *c)
{
    if (--c->ops == 0 && c->state == C_CLOSING) {
        sg_worker_t *w = c->w;
        conn_free(c);
        /* The descriptor it held may be the one a waiting request needs (--max-connections, or the share of
         * RLIMIT_NOFILE): nothing else would look again, and the run would wait for ever. */
        if (w->wait_head || w->fresh_head)
            wk_conn_dispatch(w);
    }
}

/* Idempotent. Pending operations are cancelled; the memory goes when the last of them has completed. */
void wk_conn_close(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (c->state == C_CLOSING)
        return;
    bool connecting = c->state == C_CONNECTING;
    if (c->state == C_IDLE)
        wk_idle_remove(w, c);
    if (connecting) {
        w->n_connecting--;
        w->url_connecting[c->url]--;
    }
    c->state = C_CLOSING;
    w->n_closing++;
    if (c->h2v_idx)
        wk_h2v_remove(w, c);
    if (c->ops == 0) {
        conn_free(c);
        return;
    }
    /* shutdown ends a pending receive (it completes with 0) and fails a pending send */
    shutdown(c->fd, SHUT_RDWR);
    if (connecting)
        sg_loop_cancel(&w->loop, &c->connect_op, c->fd); /* a connect is not ended by shutdown */
}

/* ---------------- TLS ---------------- */

/* Send the pending ciphertext unless a send is already out (its completion sends the rest). */
static void tls_kick(sg_conn_t *c)
{
    if (c->tls_sending || c->state == C_CLOSING)
        return;
    const uint8_t *p;
    size_t n;
    sg_tls_out_peek(c->tls, &p, &n);
    if (!n)
        return;
    sg_loop_send(&c->w->loop, &c->send_op, c->fd, p, n);
    c->ops++;
    c->tls_sending = true;
}

/*
 * A connection that never became usable (handshake failed, the server closed or reset it during the handshake):
 * one failed attempt fails the request it was opened for, as a refused connect does. refusal: the server turned the
 * connection down before any request went out (a reset or a close during the handshake: a TLS front whose backend
 * is gone, a server shedding load). Then, as for a refused connect, a closed-loop slot backs off before its next
 * request, and a reset opens an unreachable window; without it a closed loop would spin on the handshake.
 */
static void tls_setup_failed(sg_conn_t *c, const char *why, bool refusal, int res)
{
    sg_worker_t *w = c->w;
    w->tls_failures++;
    bool for_setup = c->for_setup;
    wk_conn_close(c);
    if (refusal && res < 0)
        wk_note_unreachable(w, res, sg_now_ns());
    if (!for_setup) {
        sg_req_t *r = wk_wait_pop_opened_for(w);
        if (r) {
            r->refused = refusal;
            wk_set_error(r, SG_ERRC_TLS, "%s", why);
            wk_req_finish(w, r, sg_now_ns());
        }
    }
    wk_conn_dispatch(w);
}

static void conn_ready(sg_conn_t *c);

static void tls_handshake(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    int rc = sg_tls_handshake(c->tls);
    if (rc < 0) {
        tls_setup_failed(c, sg_tls_error(c->tls), false, 0);
        return;
    }
    tls_kick(c);
    if (rc == 1)
        return;
    if (sg_tls_resumed(c->tls))
        w->tls_resumed++;
    else
        w->tls_full++;
    c->ready_ns = sg_now_ns();
    w->n_connecting--;
    w->url_connecting[c->url]--;
    c->state = C_BUSY;                 /* so a failure below does not count the connect twice */
    wk_note_reachable(w, c->ready_ns); /* over TLS the server is back when a handshake completes */
    conn_ready(c);
}

/* A TCP connection is up: start its handshake. */
static void tls_start(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    const sg_config_t *cfg = w->cfg;
    /* several URLs: each server's own name (SNI, certificate check) */
    const char *host = cfg->n_urls > 1 ? cfg->urls[c->url].host : cfg->host;
    const char *host_header = cfg->n_urls > 1 ? cfg->urls[c->url].host_header : cfg->host_header;
    int err = sg_tls_conn_new(w->tls_ctx, host, host_header, &c->tls);
    if (err < 0) {
        char why[128];
        snprintf(why, sizeof why, "TLS: cannot set up the connection: %s", sg_strerror(err));
        tls_setup_failed(c, why, false, 0);
        return;
    }
    tls_handshake(c);
}

static void conn_lost(sg_conn_t *c, int res);
static void handle_data(sg_conn_t *c, const char *data, size_t len);

/* The TLS layer failed on an established connection (or the peer ended it with close_notify). */
static void tls_broken(sg_conn_t *c, int err)
{
    conn_lost(c, err == SG_ETLS_CLOSED ? 0 : err);
}

static void tls_on_data(sg_conn_t *c, const char *data, size_t len)
{
    sg_worker_t *w = c->w;
    int err = sg_tls_feed(c->tls, data, len);
    if (err < 0) {
        if (c->state == C_CONNECTING)
            tls_setup_failed(c, "TLS: the server sent more than 4 MiB during the handshake", false, 0);
        else
            tls_broken(c, err);
        return;
    }
    if (c->state == C_CONNECTING) {
        tls_handshake(c);
        if (c->state == C_CONNECTING || c->state == C_CLOSING)
            return;
    }
    for (;;) {
        int n = sg_tls_read(c->tls, w->tls_buf, TLS_PLAIN_BUF);
        if (n == 0)
            break;
        if (n < 0) {
            tls_broken(c, n);
            return;
        }
        handle_data(c, w->tls_buf, (size_t)n);
        if (c->state == C_CLOSING)
            return;
    }
    tls_kick(c); /* what reading produced (a key update's answer, an alert) */
}

/* The peer closed (res 0) or the receive failed. */
static void tls_on_eof(sg_conn_t *c, int res)
{
    if (c->state == C_CONNECTING) {
        char why[160];
        if (res == 0)
            snprintf(why, sizeof why, "TLS: the server closed the connection during the handshake");
        else
            snprintf(why, sizeof why, "TLS: connection error during the handshake: %s", sg_strerror(res));
        tls_setup_failed(c, why, res == 0 || wk_refusal(res), res);
        return;
    }
    if (res == 0) {
        /* Records the filter still holds go first. A close without close_notify is then an ordinary EOF, as
         * over plaintext: the HTTP framing tells whether the response was complete. */
        wk_t_recv_ns = sg_now_ns(); /* an end of stream comes without a stamp */
        tls_on_data(c, NULL, 0);
        if (c->state == C_CLOSING)
            return;
    }
    conn_lost(c, res);
}

static void tls_on_sent(sg_conn_t *c, int res, int64_t t_ns)
{
    c->tls_sending = false;
    if (c->state == C_CLOSING)
        return;
    if (res < 0) {
        tls_on_eof(c, res);
        return;
    }
    sg_tls_out_consume(c->tls, (size_t)res);
    tls_kick(c);
    /* the last of the request's ciphertext is out: when it left is its send time */
    if (c->unsent && !c->tls_sending && c->rs.req) {
        c->unsent = false;
        wk_mark_sent(c->rs.req, t_ns);
        wk_cancel_arm(c->w, c->rs.req, t_ns);
    }
    /* an HTTP/2 session waits for its frames to be out before it drains more, as over plaintext */
    if (!c->tls_sending && c->sending && c->h2)
        wk_h2_on_sent(c, (int)(c->wlen - c->woff));
}

/*
 * Send n bytes at p. http://: one send from p, which the caller leaves untouched until on_send. https://: they
 * are encrypted now (p is free again on return) and the ciphertext goes out behind what is pending. 0 or an
 * error (TLS only).
 */
int wk_conn_send(sg_conn_t *c, const void *p, size_t n)
{
    if (c->tls) {
        int err = sg_tls_write(c->tls, p, n);
        if (err < 0)
            return err;
        tls_kick(c);
        return 0;
    }
    sg_loop_send(&c->w->loop, &c->send_op, c->fd, p, n);
    c->ops++;
    return 0;
}

/* ---------------- HTTP/1.1 ---------------- */

/*
 * A payload's bytes as sent: the table's, with a slot (--cache-bust) the request's own words in its place. Up to
 * three pieces from byte `from` on, into iov; returns how many.
 */
static int payload_pieces(const sg_req_t *r, size_t from, struct iovec *iov)
{
    const sg_payload_t *p = r->payload;
    size_t cut[4] = {0, p->uniq_off, (size_t)p->uniq_off + p->uniq_len, p->len};
    const char *src[3] = {p->bytes, r->uniq, p->bytes + cut[2]};
    int n = 0;
    for (int k = 0; k < 3; k++) {
        if (from >= cut[k + 1])
            continue;
        size_t skip = from > cut[k] ? from - cut[k] : 0;
        iov[n].iov_base = (void *)(src[k] + skip);
        iov[n].iov_len = cut[k + 1] - cut[k] - skip;
        n++;
    }
    return n;
}

static void conn_send(sg_conn_t *c)
{
    const sg_req_t *r = c->rs.req;
    const sg_payload_t *p = r->payload;
    if (p->uniq_len) {
        c->send_msg = (struct msghdr){.msg_iov = c->send_iov};
        c->send_msg.msg_iovlen = (size_t)payload_pieces(r, c->send_off, c->send_iov);
        sg_loop_sendmsg(&c->w->loop, &c->send_op, c->fd, &c->send_msg);
    } else {
        sg_loop_send(&c->w->loop, &c->send_op, c->fd, p->bytes + c->send_off, p->len - c->send_off);
    }
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
    /* provisional (timeouts count from it): wk_mark_sent stamps when its last byte has left */
    r->rec.sent_ns = sg_now_ns();
    wk_trace_conn(r, c, r->rec.sent_ns);
    c->unsent = true;
    wk_fl_append(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);
    if (c->tls) {
        struct iovec iov[3];
        int n = r->payload->uniq_len ? payload_pieces(r, 0, iov) : 1;
        if (n == 1)
            iov[0] = (struct iovec){(void *)r->payload->bytes, r->payload->len};
        int err = 0;
        for (int k = 0; k < n && err >= 0; k++)
            err = sg_tls_write(c->tls, iov[k].iov_base, iov[k].iov_len);
        if (err < 0)
            conn_lost(c, err);
        else
            tls_kick(c);
        return;
    }
    conn_send(c);
}

/*
 * Learning that a server closes silently. A server that closes a kept-alive connection right after a response,
 * without Connection: close or an exhausted Keep-Alive: max (llama-server does after every streamed response),
 * costs every request that would reuse it a wasted attempt and a re-send: a round trip added to its latency from
 * intended. Such a close shows as a FIN on the connection while it idles, or as the loss of the request sent on it
 * (maybe_retry), soon after the response: within SILENT_CLOSE_WINDOW_NS, so that a server's idle timeout, which
 * closes later, does not count. After SG_SILENT_CLOSE_LIMIT of them in a row for one kind of response (streamed or
 * whole: llama-server keeps connections after whole answers), the worker closes connections after responses of that
 * kind instead of pooling them; a successful reuse in between resets the count. It does not probe again later: a
 * server does not change how it treats connections within a run, and each probe would put a wasted attempt into some
 * request's latency.
 *
 * A crash is not a habit. A server that dies closes every connection at once, and the closes look the same (the
 * requests on them lost, idle ones FIN'd); what tells them apart is what follows: connects refused. A habit's lost
 * request is re-sent on a fresh connection that the server accepts and answers. So a failed connect (refused, reset,
 * unreachable) opens an unreachable window (wk_note_unreachable) and resets the learning: counts to zero, connections
 * pooled again after every kind of response; the first connect that succeeds after it (the server is back, maybe a
 * new process with habits of its own) closes the window and resets it again (wk_note_reachable), and a later run of
 * silent closes on the healthy server is learnt as before.
 */
#define SILENT_CLOSE_WINDOW_NS 1000000000LL
/*
 * A crash whose server is back at once (a supervisor's instant respawn) refuses no connect, so the rule above does
 * not see it, and its closes teach the habit. They differ in when they come: a dying process's connections all close
 * together, so the client sees the streak within a moment, while a habit closes each connection after its own
 * response. Closes that bunch are not proof (a server that answers a batch at a time closes in bunches too), so a
 * habit learnt from a streak seen within SILENT_CLOSE_MASS_NS gets one probe KA_PROBE_AFTER_NS later: one connection
 * is pooled after such a response anyway. If the server keeps it (the reuse is answered), the habit is forgotten and
 * connections are pooled again; if it closes it, the habit stands (its one lost request re-sent) and no more probes.
 */
#define SILENT_CLOSE_MASS_NS 10000000LL
#define KA_PROBE_AFTER_NS 1000000000LL

/* c was closed by the server at `at` (a FIN, or the loss of a request sent then), unannounced. */
static void note_silent_close(sg_conn_t *c, int64_t at)
{
    sg_worker_t *w = c->w;
    if (c->served == 0 || at - c->idle_since_ns > SILENT_CLOSE_WINDOW_NS)
        return;
    int kind = c->last_stream;
    w->silent_closes++;
    if (w->no_reuse_after[kind])
        return;
    int64_t seen = sg_now_ns();
    if (w->silent_streak[kind] == 0)
        w->silent_first_ns[kind] = seen;
    if (++w->silent_streak[kind] < SG_SILENT_CLOSE_LIMIT)
        return;
    w->no_reuse_after[kind] = true;
    w->ka_probe_at[kind] = seen - w->silent_first_ns[kind] < SILENT_CLOSE_MASS_NS ? seen + KA_PROBE_AFTER_NS : 0;
    /* connections idle after such a response are as good as closed already: do not send on them */
    for (unsigned u = 0; u < w->n_urls; u++)
        for (sg_conn_t *i = w->idle_head[u], *next; i; i = next) {
            next = i->next;
            if (i != c && i->last_stream == kind)
                wk_conn_close(i);
        }
}

/*
 * A reused connection that the server had closed (its FIN crossed our request, or it closed after the last
 * response without saying so, as llama-server does after a streamed one): not a byte of the response came.
 * Re-send once, as HTTP clients do, on a connection that never carried a request: the fresh queue waits for one
 * (wk_conn_dispatch), so the re-send cannot meet another stale connection. It keeps its intended time, so the
 * reconnect counts in its latency; only the send time is taken again.
 */
static bool maybe_retry(sg_conn_t *c, sg_req_t *r)
{
    sg_worker_t *w = c->w;
    if (r->retried || c->served == 0 || sg_h1_resp_started(&c->h1) || r->rec.first_byte_ns)
        return false;
    note_silent_close(c, r->rec.sent_ns);
    r->retried = true;
    w->resent++;
    wk_fl_remove(w, r);
    r->conn = NULL;
    r->rec.sent_ns = 0;
    c->rs.req = NULL;
    wk_fresh_push(w, r);
    return true;
}

/* Seconds of Keep-Alive timeout to the idle time after which a connection is not reused: a margin (a quarter,
 * at most a second) keeps a request from crossing the server's own close at the edge. 0 s: never reused. */
static int64_t ka_idle_ns(int32_t timeout_s)
{
    int64_t t = (int64_t)timeout_s * 1000000000LL;
    int64_t margin = t / 4 < 1000000000LL ? t / 4 : 1000000000LL;
    return t - margin;
}

/*
 * What the response's Keep-Alive header says about reusing c (sg_h1_resp_head_t): max counts the requests the
 * connection may carry, taken as including the one just answered (exact for cpp-httplib's fixed total, one short
 * of Apache's count of those left, never one too many); timeout bounds how long it may idle. The smallest total
 * any response implied stands.
 */
static void keep_alive_hints(sg_conn_t *c, const sg_h1_resp_head_t *h)
{
    if (h->ka_max >= 0) {
        uint64_t limit = (c->served - 1) + (uint64_t)h->ka_max;
        if (limit < c->ka_limit)
            c->ka_limit = limit;
    }
    if (h->ka_timeout_s >= 0)
        c->ka_idle_ns = ka_idle_ns(h->ka_timeout_s);
}

static void conn_lost(sg_conn_t *c, int res)
{
    sg_worker_t *w = c->w;
    if (w->http2) {
        wk_h2_conn_lost(c, res);
        return;
    }
    sg_req_t *r = c->rs.req;
    if (!r && c->state == C_IDLE && res == 0)
        note_silent_close(c, sg_now_ns()); /* a FIN while it idled */
    if (r && !maybe_retry(c, r)) {
        c->rs.req = NULL;
        int64_t now = sg_now_ns();
        wk_t_recv_ns = now;
        int e = res == 0 ? sg_h1_resp_eof(&c->h1, &wk_h1_cb, &c->rs) : SG_EINCOMPLETE;
        if (!(e == 0 && c->rs.complete)) {
            /* a connection that never carried a response, reset before any: the server turned it down (a FIN is
             * the server's answer to this request, as a --drop-rate mock gives it, not a refusal) */
            r->refused = c->served == 0 && !sg_h1_resp_started(&c->h1) && wk_refusal(res);
            if (res == 0)
                wk_set_error(r, SG_ERRC_DISCONNECT, "connection closed by the server %s",
                             sg_h1_resp_started(&c->h1) ? "in the middle of the response" : "before any response");
            else if (c->tls && (res == SG_ETLS || res == SG_ETOOBIG))
                wk_set_error(r, SG_ERRC_TLS, "%s", sg_tls_error(c->tls));
            else
                wk_set_error(r, SG_ERRC_DISCONNECT, "connection error: %s", sg_strerror(res));
        }
        wk_req_finish(w, r, now);
    }
    wk_conn_close(c);
    wk_conn_dispatch(w);
}

static void handle_data(sg_conn_t *c, const char *data, size_t len)
{
    sg_worker_t *w = c->w;
    if (c->h2) {
        wk_h2_handle_data(c, data, len);
        return;
    }
    sg_req_t *r = c->rs.req;
    if (!r || c->state != C_BUSY) {
        /* bytes nobody asked for: the connection is out of step, drop it */
        wk_conn_close(c);
        return;
    }
    /* wk_t_recv_ns: the receive time of the read these bytes came in (on_recv) */
    if (r->rec.first_byte_ns == 0)
        wk_first_byte(r, wk_t_recv_ns);
    ssize_t n = sg_h1_resp_feed(&c->h1, data, len, &wk_h1_cb, &c->rs);
    if (n < 0) {
        wk_set_error(r, SG_ERRC_PROTOCOL, "malformed HTTP response: %s", sg_strerror((int)n));
        c->rs.req = NULL;
        wk_conn_close(c);
        wk_req_finish(w, r, wk_t_recv_ns);
        wk_conn_dispatch(w);
        return;
    }
    if (!c->rs.complete)
        return;
    c->rs.req = NULL;
    c->served++;
    keep_alive_hints(c, &c->h1.head);
    if (c->served >= 2) { /* a reuse after that kind of response worked */
        w->silent_streak[c->last_stream] = 0;
        if (w->no_reuse_after[c->last_stream]) { /* a probe: the closes it was learnt from were a crash's */
            w->no_reuse_after[c->last_stream] = false;
            w->ka_relearned++;
        }
    }
    c->last_stream = c->rs.event_stream;
    int kind = c->last_stream;
    bool probe = w->no_reuse_after[kind] && w->ka_probe_at[kind] && wk_t_recv_ns >= w->ka_probe_at[kind];
    bool keep =
        c->h1.head.keep_alive && (size_t)n == len && c->served < c->ka_limit && (!w->no_reuse_after[kind] || probe);
    if (keep && probe)
        w->ka_probe_at[kind] = 0; /* one probe */
    if (keep) {
        c->idle_since_ns = wk_t_recv_ns;
        wk_idle_push(w, c);
    } else {
        wk_conn_close(c);
    }
    wk_req_finish(w, r, wk_t_recv_ns);
    wk_conn_dispatch(w);
}

static void recv_arm(sg_conn_t *c)
{
    sg_loop_recv(&c->w->loop, &c->recv_op, c->fd);
    c->recv_armed = true;
    c->ops++;
}

static void on_recv(sg_op_t *op, const sg_ev_t *ev)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, recv_op);
    sg_worker_t *w = c->w;
    bool more = ev->more;
    int res = ev->res;
    if (res > 0) {
        unsigned bid = ev->bid;
        w->bytes_received += (uint64_t)res; /* the controller's sign that the server is alive (sg_worker.h) */
        if (c->state != C_CLOSING) {
            /* every event in these bytes, through TLS records and HTTP/2 frames, gets the read's time */
            wk_t_recv_ns = wk_read_time(w, ev);
            if (c->tls)
                tls_on_data(c, sg_loop_data(&w->loop, ev), (size_t)res);
            else
                handle_data(c, sg_loop_data(&w->loop, ev), (size_t)res);
        }
        sg_loop_buf_release(&w->loop, bid);
    } else if (res == 0 || (res < 0 && res != -ENOBUFS && res != -ECANCELED)) {
        if (c->state != C_CLOSING) {
            if (c->tls)
                tls_on_eof(c, res);
            else
                conn_lost(c, res);
        }
    }
    if (!more) {
        c->recv_armed = false;
        if (c->state != C_CLOSING && (res > 0 || res == -ENOBUFS)) {
            /* multishot ended (buffers ran out, or the kernel chose to): arm again */
            c->ops--;
            recv_arm(c);
            return;
        }
        wk_conn_put(c);
    }
}

static void on_send(sg_op_t *op, const sg_ev_t *ev)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, send_op);
    int res = ev->res;
    if (c->tls) {
        tls_on_sent(c, res, ev->t_ns);
        wk_conn_put(c);
        return;
    }
    if (c->w->http2) {
        wk_h2_on_sent(c, res);
        wk_conn_put(c);
        return;
    }
    if (c->state == C_BUSY && c->rs.req) {
        if (res < 0) {
            conn_lost(c, res);
        } else {
            c->send_off += (size_t)res;
            if (c->send_off < c->rs.req->payload->len) {
                conn_send(c); /* short send: the rest */
            } else if (c->unsent) {
                c->unsent = false;
                wk_mark_sent(c->rs.req, ev->t_ns);
                wk_cancel_arm(c->w, c->rs.req, ev->t_ns);
            }
        }
    }
    wk_conn_put(c);
}

void wk_fail_waiting_head(sg_worker_t *w, int err)
{
    sg_req_t *r = wk_wait_pop_opened_for(w);
    if (!r)
        return;
    r->refused = wk_refusal(err);
    wk_set_error(r, SG_ERRC_CONNECT, "connect to %s: %s",
                 w->n_urls > 1 ? w->run->url_text[r->rec.url] : w->run->addr_text, sg_strerror(err));
    wk_req_finish(w, r, sg_now_ns());
}

void wk_trace_conn(sg_req_t *r, sg_conn_t *c, int64_t now)
{
    r->rec.send_start_ns = now;
    r->rec.head_ns = 0;
    r->rec.tls = c->tls != NULL;
    if (c->setup_traced || !c->connected_ns) {
        r->rec.conn_reused = true;
        r->rec.conn_connect_ns = r->rec.conn_tls_ns = 0;
        return;
    }
    c->setup_traced = true;
    r->rec.conn_reused = false;
    /* a connect that completes within the clock's step still took time: at least 1 ns, so 0 keeps meaning "none" */
    int64_t connect = c->connected_ns - c->opened_ns;
    r->rec.conn_connect_ns = connect > 0 ? connect : 1;
    int64_t tls = c->ready_ns - c->connected_ns;
    r->rec.conn_tls_ns = c->tls ? (tls > 0 ? tls : 1) : 0;
}

/* Connected, and over TLS the handshake done: HTTP/2 opens its session, HTTP/1.1 goes idle. */
static void conn_ready(sg_conn_t *c)
{
    sg_worker_t *w = c->w;
    if (w->http2) {
        if (wk_h2_conn_ready(c) < 0) {
            c->state = C_BUSY; /* so wk_conn_close does not count the connect twice */
            wk_conn_close(c);
            wk_fail_waiting_head(w, SG_ENOMEM);
        }
    } else {
        wk_idle_push(w, c);
    }
    wk_conn_dispatch(w);
}

static void on_connect(sg_op_t *op, const sg_ev_t *ev)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, connect_op);
    sg_worker_t *w = c->w;
    if (c->state == C_CONNECTING) {
        if (ev->res < 0) {
            w->n_connecting--;
            w->url_connecting[c->url]--;
            w->last_connect_err = ev->res;
            w->connect_failures++;
            int64_t now = sg_now_ns();
            /* several URLs: this one leaves the rotation and its requests go to the others, none failed */
            bool rerouted = wk_url_failed(w, c->url, ev->res, now);
            if (!rerouted)
                wk_note_unreachable(w, ev->res, now);
            c->state = C_BUSY; /* so wk_conn_close does not count it twice */
            wk_conn_close(c);
            if (!c->for_setup && !rerouted)
                wk_fail_waiting_head(w, ev->res); /* one failed attempt fails the request it was opened for */
            wk_conn_put(c);
            wk_conn_dispatch(w);
            return;
        }
        c->connected_ns = sg_now_ns();
        if (!w->tls_ctx) /* over TLS: when its handshake completes (a server can reset every handshake) */
            wk_note_reachable(w, c->connected_ns);
        wk_url_connected(w, c->url, c->connected_ns);
        recv_arm(c);
        if (w->tls_ctx) {
            tls_start(c); /* still connecting until the handshake is done */
        } else {
            c->ready_ns = c->connected_ns;
            w->n_connecting--;
            w->url_connecting[c->url]--;
            conn_ready(c);
        }
        wk_conn_put(c);
        return;
    }
    wk_conn_put(c);
}

sg_conn_t *wk_conn_open(sg_worker_t *w, bool for_setup, unsigned url)
{
    const sg_addr_t *to = w->n_urls > 1 ? &w->run->url_addrs[url] : &w->run->addr;
    int fd = sg_tcp_client_socket(to);
    if (fd < 0) {
        w->last_connect_err = fd;
        return NULL;
    }
    if (w->run->n_local_addrs) {
        /* --local-address: the next source in turn; the kernel picks the port at connect time, per 4-tuple */
        int err = sg_tcp_bind_source(fd, &w->run->local_addrs[w->next_src]);
        if (++w->next_src == w->run->n_local_addrs)
            w->next_src = 0;
        if (err < 0) {
            close(fd);
            w->last_connect_err = err;
            return NULL;
        }
    }
    sg_conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        w->last_connect_err = -ENOMEM;
        return NULL;
    }
    /* kernel receive stamps on every read of it (--timestamps kernel); refused, its reads use the clock */
    if (w->loop.rx_stamps && sg_loop_stamp_socket(fd) < 0)
        w->stamp_refused++;
    c->w = w;
    c->fd = fd;
    c->for_setup = for_setup;
    c->url = (uint8_t)url;
    c->connect_op.fn = on_connect;
    c->send_op.fn = on_send;
    c->recv_op.fn = on_recv;
    sg_h1_resp_init(&c->h1);
    c->ka_limit = UINT64_MAX;
    c->ka_idle_ns = INT64_MAX;
    c->rs.w = w;
    sg_sse_init(&c->rs.sse, MAX_EVENT_BYTES);
    c->state = C_CONNECTING;
    c->opened_ns = sg_now_ns();
    if (w->setup_check_ns == INT64_MAX)
        w->setup_check_ns = c->opened_ns + w->setup_timeout_ns;
    c->all_next = w->all_head;
    if (w->all_head)
        w->all_head->all_prev = c;
    w->all_head = c;
    w->n_conns++;
    w->n_connecting++;
    w->url_connecting[url]++;
    w->conns_opened++;
    if (w->n_conns > w->conns_peak)
        w->conns_peak = w->n_conns;
    sg_loop_connect(&w->loop, &c->connect_op, fd, (const struct sockaddr *)&to->addr, to->len);
    c->ops++;
    return c;
}

/*
 * An idle connection from the list at *head that may still be reused, taken off it; NULL when none. One that
 * idled past the server's Keep-Alive timeout is closed instead (*now: the clock, read once when first needed).
 */
static sg_conn_t *idle_take(sg_worker_t *w, sg_conn_t **head, int64_t *now)
{
    sg_conn_t *c;
    while ((c = *head)) {
        wk_idle_remove(w, c);
        c->state = C_BUSY;
        if (c->ka_idle_ns == INT64_MAX)
            return c;
        if (!*now)
            *now = sg_now_ns();
        if (*now - c->idle_since_ns < c->ka_idle_ns)
            return c;
        wk_conn_close(c);
    }
    return NULL;
}

static bool room_in_flight(const sg_worker_t *w)
{
    return !w->max_in_flight || w->n_in_flight < w->max_in_flight;
}

/*
 * Several URLs: connections opened per URL, as many as its queued requests need (worker_url.c), under the same
 * bounds as one URL's (the set-up window, the connection cap, room in flight). At the cap, a URL that has requests
 * waiting and nothing being opened for it gets a descriptor from an idle connection to another URL (the queue's head
 * waits for its own URL, and the rest behind it).
 */
static void dispatch_urls(sg_worker_t *w)
{
    uint64_t room = UINT64_MAX;
    if (w->max_in_flight)
        room = w->max_in_flight > w->n_in_flight ? w->max_in_flight - w->n_in_flight : 0;
    uint64_t want_all = w->n_waiting + w->n_fresh < room ? w->n_waiting + w->n_fresh : room;
    sg_req_t *head = w->fresh_head ? w->fresh_head : w->wait_head;
    if (head && w->n_conns >= w->max_conns && !w->url_connecting[head->rec.url] && w->n_closing == 0) {
        for (unsigned u = 0; u < w->n_urls; u++) {
            sg_conn_t *idle = u == head->rec.url ? NULL : w->idle_head[u] ? w->idle_head[u] : w->idle_fresh_head[u];
            if (idle) {
                wk_conn_close(idle);
                break;
            }
        }
    }
    uint64_t want;
    while (w->n_connecting < want_all && w->n_connecting < CONNECT_WINDOW && w->n_conns < w->max_conns) {
        unsigned u = wk_url_want(w, &want);
        if (!want)
            break;
        if (!wk_conn_open(w, false, u)) {
            wk_fail_waiting_head(w, w->last_connect_err);
            uint64_t left = w->n_waiting + w->n_fresh;
            want_all = left < want_all ? left : want_all;
        }
    }
}

/*
 * Give waiting requests to idle connections, opening connections as demand requires. Re-sends go first (they
 * were due before anything queued) and only to connections that never carried a request; the queue takes the
 * most recently used idle connection, then a fresh one.
 */
void wk_conn_dispatch(sg_worker_t *w)
{
    if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        return;
    if (w->http2) {
        wk_h2_dispatch(w);
        return;
    }
    int64_t now = 0;
    sg_conn_t *c;
    /* several URLs: each request waits for a connection to its own URL (rec.url; 0 with one) */
    while (w->fresh_head && room_in_flight(w) && (c = idle_take(w, &w->idle_fresh_head[w->fresh_head->rec.url], &now)))
        conn_start(c, wk_fresh_pop(w));
    while (w->wait_head && room_in_flight(w) &&
           ((c = idle_take(w, &w->idle_head[w->wait_head->rec.url], &now)) ||
            (c = idle_take(w, &w->idle_fresh_head[w->wait_head->rec.url], &now))))
        conn_start(c, wk_wait_pop(w));
    if (w->n_urls > 1) {
        dispatch_urls(w);
        return;
    }
    uint64_t want = w->n_waiting + w->n_fresh;
    if (w->max_in_flight) {
        uint64_t room = w->max_in_flight > w->n_in_flight ? w->max_in_flight - w->n_in_flight : 0;
        if (want > room)
            want = room;
    }
    /* At the connection cap, re-sends still need new connections: idle reused ones (the queue is empty when there
     * are any) give up their descriptors, as many as the connections being opened or closed do not cover;
     * wk_conn_put dispatches again once one is freed. */
    while (w->n_fresh > w->n_connecting + w->n_closing && w->n_conns >= w->max_conns && w->idle_head[0])
        wk_conn_close(w->idle_head[0]);
    while (w->n_connecting < want && w->n_connecting < CONNECT_WINDOW && w->n_conns < w->max_conns) {
        if (!wk_conn_open(w, false, 0)) {
            wk_fail_waiting_head(w, w->last_connect_err);
            uint64_t left = w->n_waiting + w->n_fresh;
            want = left < want ? left : want;
        }
    }
}

/*
 * The kernel gives up a connect only after its SYN retries (about two minutes on Linux), and a server may accept
 * and then never answer the TLS handshake: a connection still being set up w->setup_timeout_ns after it was opened
 * is closed, and fails the request it was opened for (class connect, or tls during the handshake).
 */
static void setup_timed_out(sg_conn_t *c, int64_t now)
{
    sg_worker_t *w = c->w;
    double s = (double)w->setup_timeout_ns / 1e9;
    char why[192];
    if (c->tls) {
        /* TCP is up (tls_start ran): the handshake is what did not finish */
        snprintf(why, sizeof why, "TLS: the handshake with %s was not done within %.3g s", w->run->addr_text, s);
        tls_setup_failed(c, why, false, 0);
        return;
    }
    w->last_connect_err = -ETIMEDOUT;
    w->connect_failures++;
    bool for_setup = c->for_setup;
    unsigned url = c->url;
    wk_conn_close(c); /* counts it out of n_connecting and cancels the connect (and may free c) */
    bool rerouted = wk_url_failed(w, url, -ETIMEDOUT, now);
    if (!for_setup && !rerouted) {
        sg_req_t *r = wk_wait_pop(w);
        if (r) {
            wk_set_error(r, SG_ERRC_CONNECT, "connect to %s: not connected within %.3g s (no answer to the attempt)",
                         w->n_urls > 1 ? w->run->url_text[url] : w->run->addr_text, s);
            wk_req_finish(w, r, now);
        }
    }
    wk_conn_dispatch(w);
}

void wk_conns_expire_setup(sg_worker_t *w, int64_t now)
{
    int64_t next = INT64_MAX;
    w->setup_check_ns = INT64_MAX; /* connections opened below (a failed request's successor) set it again */
    for (sg_conn_t *c = w->all_head, *nx; c; c = nx) {
        nx = c->all_next; /* c may be freed; nothing below frees another connection */
        if (c->state != C_CONNECTING)
            continue;
        int64_t due = c->opened_ns + w->setup_timeout_ns;
        if (due <= now)
            setup_timed_out(c, now);
        else if (due < next)
            next = due;
    }
    if (next < w->setup_check_ns)
        w->setup_check_ns = next;
}

/* The end of the thread: every connection goes, whatever state it is in (the ring is not waited on again). */
void wk_conns_free_all(sg_worker_t *w)
{
    while (w->all_head) {
        sg_conn_t *c = w->all_head;
        w->all_head = c->all_next;
        if (c->h2)
            wk_h2_conn_release(c);
        sg_tls_conn_free(c->tls);
        sg_loop_close(&w->loop, c->fd);
        sg_h1_resp_free(&c->h1);
        sg_sse_free(&c->rs.sse);
        free(c->rs.body);
        free(c->wbuf);
        free(c);
    }
    memset(w->idle_head, 0, sizeof w->idle_head);
    memset(w->idle_fresh_head, 0, sizeof w->idle_fresh_head);
}
