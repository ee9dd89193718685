/*
 * The worker's connections: open, connect, receive, send, close, and the HTTP/1.1 exchange (one request
 * per connection at a time). HTTP/2 sessions ride on the same connections (worker_h2.c).
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

void wk_idle_push(sg_worker_t *w, sg_conn_t *c)
{
    c->prev = NULL;
    c->next = w->idle_head;
    if (w->idle_head)
        w->idle_head->prev = c;
    w->idle_head = c;
    c->state = C_IDLE;
}

void wk_idle_remove(sg_worker_t *w, sg_conn_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (w->idle_head == c)
        w->idle_head = c->next;
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
    close(c->fd);
    sg_h1_resp_free(&c->h1);
    sg_sse_free(&c->rs.sse);
    free(c->rs.body);
    free(c->wbuf);
    w->n_conns--;
    free(c);
}

void wk_conn_put(sg_conn_t *c)
{
    if (--c->ops == 0 && c->state == C_CLOSING)
        conn_free(c);
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
    if (connecting)
        w->n_connecting--;
    c->state = C_CLOSING;
    if (c->h2v_idx)
        wk_h2v_remove(w, c);
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
    wk_fl_append(w, r);
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
    wk_fl_remove(w, r);
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
        wk_h2_conn_lost(c, res);
        return;
    }
    sg_req_t *r = c->rs.req;
    if (r && !maybe_retry(c, r)) {
        c->rs.req = NULL;
        int64_t now = sg_now_ns();
        wk_t_recv_ns = now;
        int e = res == 0 ? sg_h1_resp_eof(&c->h1, &wk_h1_cb, &c->rs) : SG_EINCOMPLETE;
        if (!(e == 0 && c->rs.complete)) {
            if (res == 0)
                wk_set_error(r, SG_ERRC_DISCONNECT, "connection closed by the server %s",
                             sg_h1_resp_started(&c->h1) ? "in the middle of the response" : "before any response");
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
    wk_t_recv_ns = sg_now_ns();
    if (r->rec.first_byte_ns == 0)
        r->rec.first_byte_ns = wk_t_recv_ns;
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
    bool keep = c->h1.head.keep_alive && (size_t)n == len;
    c->rs.req = NULL;
    c->served++;
    if (keep)
        wk_idle_push(w, c);
    else
        wk_conn_close(c);
    wk_req_finish(w, r, wk_t_recv_ns);
    wk_conn_dispatch(w);
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
        wk_conn_put(c);
    }
}

static void on_send(sg_op_t *op, const struct io_uring_cqe *cqe)
{
    sg_conn_t *c = SG_CONTAINER_OF(op, sg_conn_t, send_op);
    int res = cqe->res;
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
            if (c->send_off < c->rs.req->payload->len)
                conn_send(c); /* short send: the rest */
        }
    }
    wk_conn_put(c);
}

void wk_fail_waiting_head(sg_worker_t *w, int err)
{
    sg_req_t *r = wk_wait_pop(w);
    if (!r)
        return;
    wk_set_error(r, SG_ERRC_CONNECT, "connect to %s: %s", w->run->addr_text, sg_strerror(err));
    wk_req_finish(w, r, sg_now_ns());
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
            c->state = C_BUSY; /* so wk_conn_close does not count it twice */
            wk_conn_close(c);
            if (!c->for_setup)
                wk_fail_waiting_head(w, cqe->res); /* one failed attempt fails the request it was opened for */
            wk_conn_put(c);
            wk_conn_dispatch(w);
            return;
        }
        recv_arm(c);
        if (w->http2) {
            if (wk_h2_conn_ready(c) < 0) {
                c->state = C_BUSY; /* so wk_conn_close does not count the connect twice */
                wk_conn_close(c);
                wk_fail_waiting_head(w, SG_ENOMEM);
            }
        } else {
            wk_idle_push(w, c);
        }
        wk_conn_put(c);
        wk_conn_dispatch(w);
        return;
    }
    wk_conn_put(c);
}

sg_conn_t *wk_conn_open(sg_worker_t *w, bool for_setup)
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
void wk_conn_dispatch(sg_worker_t *w)
{
    if (atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        return;
    if (w->http2) {
        wk_h2_dispatch(w);
        return;
    }
    while (w->wait_head) {
        if (w->max_in_flight && w->n_in_flight >= w->max_in_flight)
            return;
        sg_conn_t *c = w->idle_head;
        if (!c)
            break;
        wk_idle_remove(w, c);
        conn_start(c, wk_wait_pop(w));
    }
    uint64_t want = w->n_waiting;
    if (w->max_in_flight) {
        uint64_t room = w->max_in_flight - w->n_in_flight;
        if (want > room)
            want = room;
    }
    while (w->n_connecting < want && w->n_conns < w->max_conns) {
        if (!wk_conn_open(w, false)) {
            wk_fail_waiting_head(w, w->last_connect_err);
            want = w->n_waiting < want ? w->n_waiting : want;
        }
    }
}

/* The end of the thread: every connection goes, whatever state it is in (the ring is not waited on again). */
void wk_conns_free_all(sg_worker_t *w)
{
    while (w->all_head) {
        sg_conn_t *c = w->all_head;
        w->all_head = c->all_next;
        if (c->h2)
            wk_h2_conn_release(c);
        close(c->fd);
        sg_h1_resp_free(&c->h1);
        sg_sse_free(&c->rs.sse);
        free(c->rs.body);
        free(c->wbuf);
        free(c);
    }
    w->idle_head = NULL;
}
