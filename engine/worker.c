/*
 * The client worker: arrival schedule and request lifecycle, all on one event loop. Connections are in
 * worker_conn.c (HTTP/1.1) and worker_h2.c (HTTP/2), what responses mean in worker_resp.c; protocol bytes go to
 * the sans-I/O parsers in proto/. This file keeps time and decides what to do next.
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
#include "worker_int.h"

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
#include <time.h>
#include <unistd.h>

/* ---------------- helpers ---------------- */

static uint64_t share(uint64_t total, unsigned i, unsigned n)
{
    return total / n + (i < total % n ? 1 : 0);
}

void wk_set_error(sg_req_t *r, sg_err_class_t cls, const char *fmt, ...)
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

void wk_fl_append(sg_worker_t *w, sg_req_t *r)
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
    if (w->n_urls > 1)
        w->url_in_flight[r->rec.url]++;
}

void wk_fl_remove(sg_worker_t *w, sg_req_t *r)
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
    if (w->n_urls > 1)
        w->url_in_flight[r->rec.url]--;
}

void wk_wait_push(sg_worker_t *w, sg_req_t *r)
{
    r->next = NULL;
    if (w->wait_tail)
        w->wait_tail->next = r;
    else
        w->wait_head = r;
    w->wait_tail = r;
    w->n_waiting++;
    wk_url_queued(w, r);
}

void wk_wait_push_front(sg_worker_t *w, sg_req_t *r)
{
    r->next = w->wait_head;
    w->wait_head = r;
    if (!w->wait_tail)
        w->wait_tail = r;
    w->n_waiting++;
    wk_url_queued(w, r); /* its URL again, or another when that one left the rotation */
}

sg_req_t *wk_wait_pop(sg_worker_t *w)
{
    sg_req_t *r = w->wait_head;
    if (r) {
        w->wait_head = r->next;
        if (!w->wait_head)
            w->wait_tail = NULL;
        w->n_waiting--;
        wk_url_unqueued(w, r);
    }
    return r;
}

void wk_fresh_push(sg_worker_t *w, sg_req_t *r)
{
    r->next = NULL;
    if (w->fresh_tail)
        w->fresh_tail->next = r;
    else
        w->fresh_head = r;
    w->fresh_tail = r;
    w->n_fresh++;
    wk_url_queued(w, r);
}

sg_req_t *wk_fresh_pop(sg_worker_t *w)
{
    sg_req_t *r = w->fresh_head;
    if (r) {
        w->fresh_head = r->next;
        if (!w->fresh_head)
            w->fresh_tail = NULL;
        w->n_fresh--;
        wk_url_unqueued(w, r);
    }
    return r;
}

sg_req_t *wk_wait_pop_opened_for(sg_worker_t *w)
{
    sg_req_t *r = wk_fresh_pop(w);
    return r ? r : wk_wait_pop(w);
}

/* ---------------- the server unreachable ---------------- */

/* The server turned the connection down (as opposed to the client running out of something): a closed loop backs off
 * after such a failure (worker.c). */
bool wk_refusal(int err)
{
    return err == -ECONNREFUSED || err == -ECONNRESET || err == -ECONNABORTED || err == -EPIPE || err == -ENETUNREACH ||
           err == -EHOSTUNREACH;
}

/* What note_silent_close learnt is forgotten: the counts go to zero, connections are pooled again after every kind of
 * response. */
static void ka_forget(sg_worker_t *w)
{
    if (w->silent_streak[0] || w->silent_streak[1] || w->no_reuse_after[0] || w->no_reuse_after[1])
        w->ka_relearned++;
    w->silent_streak[0] = w->silent_streak[1] = 0;
    w->no_reuse_after[0] = w->no_reuse_after[1] = false;
    w->ka_probe_at[0] = w->ka_probe_at[1] = 0;
}

void wk_note_unreachable(sg_worker_t *w, int err, int64_t now)
{
    /* the client's own failures (no local port or address left, out of buffers) say nothing about the server */
    if (!wk_refusal(err) && err != -ETIMEDOUT)
        return;
    w->refused_total++;
    atomic_store_explicit(&w->progress.refused, w->refused_total, memory_order_relaxed);
    if (!w->unreach_start_ns) {
        w->unreach_start_ns = now;
        w->unreach_refused = 0;
        w->unreach_waiting = 0;
        /* the closes that came just before were the server going down, not its habit */
        ka_forget(w);
        atomic_store_explicit(&w->progress.unreach_since_ns, now, memory_order_release);
    }
    w->unreach_refused++;
    wk_unreach_peak(w);
}

void wk_unreach_peak(sg_worker_t *w)
{
    uint64_t waiting = w->n_waiting + w->n_fresh + w->n_backoff;
    if (w->unreach_start_ns && waiting > w->unreach_waiting)
        w->unreach_waiting = waiting;
}

/* The window closes: into the worker's list (published with unreach_n), or counted when the list is full. */
static void unreach_close(sg_worker_t *w, int64_t now, bool recovered)
{
    if (w->n_unreach < SG_UNREACH_WINDOWS_MAX) {
        w->unreach[w->n_unreach++] = (sg_unreach_win_t){
            .start_ns = w->unreach_start_ns,
            .end_ns = now,
            .refused = w->unreach_refused,
            .waiting = w->unreach_waiting,
            .recovered = recovered,
        };
        atomic_store_explicit(&w->progress.unreach_n, w->n_unreach, memory_order_release);
    } else {
        w->unreach_dropped++;
    }
    w->unreach_start_ns = 0;
    atomic_store_explicit(&w->progress.unreach_since_ns, 0, memory_order_release);
}

void wk_note_reachable(sg_worker_t *w, int64_t now)
{
    if (!w->unreach_start_ns)
        return;
    unreach_close(w, now, true);
    ka_forget(w); /* the server is back, maybe a new process: it is learnt afresh */
}

void wk_unreach_end(sg_worker_t *w, int64_t now)
{
    if (w->unreach_start_ns)
        unreach_close(w, now, false);
}

/* ---------------- closed-loop back-off ---------------- */

/*
 * A slot whose request failed because the server refused the connection (or reset it before any response) waits
 * before its next request: SG_BACKOFF_MIN_MS after the first such failure, doubling with each one in a row, at most
 * SG_BACKOFF_MAX_MS. Without it a closed loop against a dead server issues a request per failed connect(), tens of
 * thousands a second, and its count says how fast connect() fails. The waiting slots are a min-heap by due time; the
 * next request is intended when its back-off ends (the wait is the server's absence, not any request's latency).
 */
static int64_t backoff_ns(uint32_t refusals)
{
    int64_t d = (int64_t)SG_BACKOFF_MIN_MS * 1000000LL;
    for (uint32_t k = 1; k < refusals && d < (int64_t)SG_BACKOFF_MAX_MS * 1000000LL; k++)
        d *= 2;
    return d < (int64_t)SG_BACKOFF_MAX_MS * 1000000LL ? d : (int64_t)SG_BACKOFF_MAX_MS * 1000000LL;
}

static void backoff_push(sg_worker_t *w, int64_t now, uint32_t refusals)
{
    if (refusals > 255)
        refusals = 255;
    if (w->n_backoff == w->backoff_cap) {
        uint32_t cap = w->backoff_cap ? w->backoff_cap * 2 : 16;
        struct wk_backoff *b = realloc(w->backoff, cap * sizeof(*b));
        if (!b) { /* no room to wait: the slot goes on at once, as before back-off existed */
            wk_issue_closed(w, now);
            return;
        }
        w->backoff = b;
        w->backoff_cap = cap;
    }
    struct wk_backoff e = {now + backoff_ns(refusals), refusals};
    uint32_t i = w->n_backoff++;
    while (i > 0 && w->backoff[(i - 1) / 2].due_ns > e.due_ns) {
        w->backoff[i] = w->backoff[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->backoff[i] = e;
    w->backoffs++;
    wk_unreach_peak(w);
}

static struct wk_backoff backoff_pop(sg_worker_t *w)
{
    struct wk_backoff top = w->backoff[0], last = w->backoff[--w->n_backoff];
    uint32_t i = 0, n = w->n_backoff;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && w->backoff[c + 1].due_ns < w->backoff[c].due_ns)
            c++;
        if (w->backoff[c].due_ns >= last.due_ns)
            break;
        w->backoff[i] = w->backoff[c];
        i = c;
    }
    if (n)
        w->backoff[i] = last;
    return top;
}

/* Slots whose back-off is over issue their next request, intended then. */
static void backoff_due(sg_worker_t *w, int64_t now)
{
    if (now >= w->stop_issue_ns)
        w->issuing_done = true; /* --benchmark-duration is over: no slot issues again, none need wait */
    while (w->n_backoff && w->backoff[0].due_ns <= now && !w->issuing_done) {
        struct wk_backoff e = backoff_pop(w);
        w->issue_refusals = (uint8_t)e.refusals;
        wk_issue_closed(w, e.due_ns);
        w->issue_refusals = 0;
    }
    if (w->issuing_done)
        w->n_backoff = 0; /* nothing more is issued: the waiting slots have nothing to wait for */
}

/* ---------------- request completion ---------------- */

/* --measurement-interval: the window a measured request intended at t belongs to; NULL outside them. */
static sg_win_count_t *win_of(sg_worker_t *w, int64_t t)
{
    if (w->win_origin_ns == 0 || t < w->win_origin_ns)
        return NULL;
    int64_t k = (t - w->win_origin_ns) / w->win_ns;
    return k < (int64_t)w->n_win ? &w->win[k] : NULL;
}

static void bump(atomic_uint_fast64_t *a, uint64_t by)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + by, memory_order_relaxed);
}

/* A measured request finished: its window's counts (engine/stable.c judges them while the run goes on). */
static void win_done(sg_worker_t *w, const sg_record_t *rec)
{
    sg_win_count_t *c = win_of(w, rec->intended_ns);
    if (!c)
        return;
    if (rec->err_class == SG_ERRC_NONE && rec->end_ns > rec->intended_ns) {
        bump(&c->ok, 1);
        bump(&c->latency_ns, (uint64_t)(rec->end_ns - rec->intended_ns));
    } else if (rec->err_class == SG_ERRC_CANCELLED) {
        bump(&c->cancelled, 1);
    }
    /* release: a reader that sees this count sees the ok and latency before it */
    atomic_store_explicit(&c->done, atomic_load_explicit(&c->done, memory_order_relaxed) + 1, memory_order_release);
}

/*
 * A search probe's bounds (sg_run_bound_t): count this request where it is on the wrong side. With a tokenizer the
 * OSL is settled after the run, so the metrics that divide by it (ITL, the per-user rate) are not counted live.
 */
static void count_bounds(sg_worker_t *w, const sg_record_t *rec)
{
    const sg_run_t *run = w->run;
    for (size_t i = 0; i < run->n_bounds; i++) {
        const sg_run_bound_t *b = &run->bounds[i];
        double v;
        if (w->keep_text && (b->metric == SG_M_ITL || b->metric == SG_M_TOKENS_PER_USER))
            continue;
        if (!sg_record_metric(rec, b->metric, &v))
            continue;
        bool wrong = b->floor ? (b->strict ? v <= b->bound : v < b->bound) : (b->strict ? v >= b->bound : v > b->bound);
        if (wrong)
            atomic_fetch_add_explicit(&w->progress.over[i], 1, memory_order_relaxed);
        if (run->blocks) {
            /* this worker's own counts: read once the workers have stopped */
            int64_t t = rec->intended_ns - run->start_ns;
            int64_t s = t > 0 ? t / 1000000000 : 0;
            uint32_t *c = SG_PROBE_BLOCK(run->blocks, w->index - run->stream_offset, i,
                                         s < SG_PROBE_BLOCKS ? s : SG_PROBE_BLOCKS - 1);
            c[0]++;
            c[1] += wrong;
        }
    }
}

void wk_record_done(sg_worker_t *w, sg_record_t *rec)
{
    if (SG_UNLIKELY(w->win) && !rec->warmup)
        win_done(w, rec);
    if (!rec->warmup && rec->resent)
        w->resent_measured++;
    if (rec->warmup) {
        w->warmup_done++;
        atomic_store_explicit(&w->progress.warmup_done, w->warmup_done, memory_order_relaxed);
    } else {
        if (!w->keep_text)
            sg_metrics_add(w->metrics, rec);
        if (SG_UNLIKELY(w->run->n_bounds) && rec->err_class == SG_ERRC_NONE)
            count_bounds(w, rec);
        atomic_fetch_add_explicit(&w->progress.completed, 1, memory_order_relaxed);
        if (rec->err_class == SG_ERRC_CANCELLED)
            atomic_fetch_add_explicit(&w->progress.cancelled, 1, memory_order_relaxed);
        else if (rec->err_class != SG_ERRC_NONE)
            atomic_fetch_add_explicit(&w->progress.errors, 1, memory_order_relaxed);
    }
    if (w->log) {
        int err = sg_reclog_append(w->log, rec);
        /* the disk fell far behind and the record was dropped (counted): with a tokenizer its metrics were
         * deferred to the log, so they go in now, with OSL from usage or the events */
        if (SG_UNLIKELY(err == SG_RECLOG_DROPPED) && w->keep_text && !rec->warmup)
            sg_metrics_add(w->metrics, rec);
        if (err < 0 && !w->log_err)
            w->log_err = err;
        if (err < 0 && !w->fatal) {
            w->fatal = err;
            snprintf(w->fatal_msg, sizeof(w->fatal_msg), "writing the record log %s: %s", w->log_path,
                     sg_strerror(err));
        }
    }
}

static void cq_remove(sg_worker_t *w, sg_req_t *r)
{
    if (!r->cq_in)
        return;
    if (r->cq_prev)
        r->cq_prev->cq_next = r->cq_next;
    else
        w->cq_head = r->cq_next;
    if (r->cq_next)
        r->cq_next->cq_prev = r->cq_prev;
    else
        w->cq_tail = r->cq_prev;
    r->cq_in = false;
}

void wk_cancel_arm(sg_worker_t *w, sg_req_t *r, int64_t t)
{
    if (SG_LIKELY(!r->cancel_planned) || r->cq_in)
        return;
    r->cancel_at_ns = (t ? t : sg_now_ns()) + w->cancel_delay_ns;
    r->cq_prev = w->cq_tail;
    r->cq_next = NULL;
    if (w->cq_tail)
        w->cq_tail->cq_next = r;
    else
        w->cq_head = r;
    w->cq_tail = r;
    r->cq_in = true;
}

/* The cancellation test: requests whose delay after their last byte is over and that are still unanswered are
 * cut as a user would: HTTP/1.1 closes the connection, HTTP/2 (and gRPC) resets the stream with CANCEL. */
static void check_cancels(sg_worker_t *w, int64_t now)
{
    bool any = false;
    while (w->cq_head && w->cq_head->cancel_at_ns <= now) {
        sg_req_t *r = w->cq_head;
        cq_remove(w, r);
        if (!r->in_flight)
            continue; /* sent again after a lost connection: armed again when that send is out */
        wk_set_error(r, SG_ERRC_CANCEL_TEST, "cancelled by --request-cancellation-rate %.3g s after its last byte",
                     w->cfg->cancel_delay_s);
        if (r->rs) {
            wk_h2_abandon(r);
        } else if (r->conn) {
            r->conn->rs.req = NULL;
            wk_conn_close(r->conn);
        }
        wk_req_finish(w, r, now);
        any = true;
    }
    if (any)
        wk_conn_dispatch(w);
}

/* Whether request id is one the cancellation test cuts: a hash of (seed, id), so the choice is the seed's. */
static bool cancel_chosen(const sg_worker_t *w, uint64_t id)
{
    uint64_t z = w->cfg->random_seed ^ (id + 1) * 0x9e3779b97f4a7c15ULL; /* splitmix64's finalizer */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z < w->cancel_below;
}

void wk_req_finish(sg_worker_t *w, sg_req_t *r, int64_t now)
{
    sg_record_t *rec = &r->rec;
    wk_fl_remove(w, r);
    cq_remove(w, r);
    if (rec->end_ns == 0)
        rec->end_ns = now;
    rec->event_us = r->events;
    rec->osl_tokenizer = -1; /* counted after the run, from the log */
    sg_record_settle_osl(rec);
    if (rec->reasoning_tokens == 0 && rec->err_class == SG_ERRC_NONE)
        rec->reasoning_tokens = rec->reasoning_events; /* no usage said: one token per event, as OSL */
    rec->has_text = w->keep_text && !rec->warmup && !r->text_lost && rec->err_class == SG_ERRC_NONE;
    rec->text = r->text;
    rec->text_len = rec->has_text ? r->text_len : 0;
    rec->reasoning_text_len = rec->has_text && !r->reasoning_mixed ? r->reasoning_len : 0;
    rec->tool_text_len = rec->has_text && r->tool_text && !r->tool_mixed ? r->text_len - r->tool_text_at : 0;
    if (rec->err_class == SG_ERRC_NONE) /* the tokenizer's count replaces these after the run (osl.c) */
        rec->tool_tokens = r->tool_only && !rec->tool_events ? rec->osl : rec->tool_events;
    rec->resent = r->retried || r->h2_resends;
    if (rec->sent_ns && rec->end_ns > rec->sent_ns) {
        int64_t e2e = rec->end_ns - rec->sent_ns;
        int64_t gap = e2e / (rec->content_events > 1 ? rec->content_events : 1);
        w->e2e_avg_ns = w->e2e_avg_ns ? w->e2e_avg_ns + (e2e - w->e2e_avg_ns) / 16 : e2e;
        w->gap_avg_ns = w->gap_avg_ns ? w->gap_avg_ns + (gap - w->gap_avg_ns) / 16 : gap;
    }
    wk_record_done(w, rec);
    if (SG_UNLIKELY(r->sess)) {
        /* the session decides what comes next (its next turn after a delay, or, once it ends, a new session) */
        wk_sess_turn_done(w, r);
        req_release(w, r);
        atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);
        return;
    }
    uint32_t refusals = r->refused ? r->slot_refusals + 1u : 0;
    req_release(w, r);
    atomic_store_explicit(&w->progress.in_flight, w->n_in_flight, memory_order_relaxed);

    /* Closed loop: the slot is free now, and that is the next request's intended start; after a refusal, once the
     * slot's back-off is over. */
    if (w->rate == 0 && !w->issuing_done && !atomic_load_explicit(&w->run->stop, memory_order_relaxed))
        wk_slot_free(w, now, refusals);
}

void wk_slot_free(sg_worker_t *w, int64_t now, uint32_t refusals)
{
    if (refusals)
        backoff_push(w, now, refusals);
    else
        wk_issue_closed(w, now);
}
/* ---------------- schedule ---------------- */

sg_req_t *wk_req_new(sg_worker_t *w, int64_t intended)
{
    sg_req_t *r = req_alloc(w);
    if (!r) {
        w->fatal = SG_ENOMEM;
        snprintf(w->fatal_msg, sizeof(w->fatal_msg), "out of memory for requests");
        w->issuing_done = true;
        return NULL;
    }
    sg_record_t *rec = &r->rec;
    rec->id = w->issued++ * w->n + w->index;
    rec->worker = w->index;
    rec->isl_server = -1;
    rec->isl_cached = -1;
    rec->osl_server = -1;
    rec->no_output = w->no_output;
    rec->intended_ns = intended;
    rec->ramp = intended < w->ramp_end_ns;
    r->slot_refusals = w->issue_refusals; /* a closed-loop slot back from its back-off (a session's first turn too) */
    if (SG_UNLIKELY(w->stall_open))       /* issued late: due inside the open client stall */
        w->stall_cur.requests++;
    return r;
}

static void new_request(sg_worker_t *w, int64_t intended)
{
    uint64_t k = w->issued;
    sg_req_t *r = wk_req_new(w, intended);
    if (!r)
        return;
    sg_record_t *rec = &r->rec;
    uint32_t pi = 0;
    r->payload = sg_payload_pick(w->run->payloads, rec->id, (int)w->cfg->model_strategy, w->cfg->random_seed, &pi);
    rec->payload = pi;
    rec->model = r->payload->model;
    rec->isl = r->payload->isl;
    rec->max_tokens = r->payload->max_tokens;
    rec->images = r->payload->images;
    rec->audios = r->payload->audios;
    rec->media_bytes = r->payload->media_bytes;
    rec->streaming = r->payload->streaming; /* what was asked; the response's head says what it is */
    if (r->payload->uniq_len)               /* each request its own prompt start: no server cache holds it */
        sg_payload_uniq(w->run->payloads, r->payload, w->run->uniq_base + rec->id, r->uniq);
    rec->warmup = k < w->warmup_quota;
    r->cancel_planned = w->cancel_below && !rec->warmup && cancel_chosen(w, rec->id);
    if (k == w->warmup_quota && w->cfg->benchmark_duration_s > 0) {
        w->stop_issue_ns = wk_window_end(w, intended, w->warmup_quota > 0);
        if (SG_UNLIKELY(w->win)) { /* the windows tile the measured phase */
            w->win_origin_ns = w->stop_issue_ns - (int64_t)llround(w->cfg->benchmark_duration_s * 1e9);
            atomic_store_explicit(&w->progress.win_origin_ns, w->win_origin_ns, memory_order_release);
        }
    }
    if (SG_UNLIKELY(w->win) && !rec->warmup) {
        sg_win_count_t *c = win_of(w, intended);
        if (c)
            atomic_store_explicit(&c->issued, atomic_load_explicit(&c->issued, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
    }
    wk_wait_push(w, r);
}

int64_t wk_window_end(const sg_worker_t *w, int64_t first, bool warmed_up)
{
    /* Without a warmup every worker's window starts at the shared start instant, so that no worker, whose first
     * arrival comes a little after it, schedules past the run's --benchmark-duration. After a warmup the window
     * starts with this worker's first measured request. */
    int64_t from = warmed_up || first < w->run->start_ns ? first : w->run->start_ns;
    return from + (int64_t)llround(w->cfg->benchmark_duration_s * 1e9);
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

void wk_issue_closed(sg_worker_t *w, int64_t intended)
{
    if (!may_issue(w, intended))
        return;
    if (SG_UNLIKELY(w->sess)) {
        if (!wk_sess_start(w, intended))
            w->issuing_done = true;
    } else {
        new_request(w, intended);
    }
    wk_conn_dispatch(w);
}

static void issue_due(sg_worker_t *w, int64_t now)
{
    bool any = false;
    if (w->next_arrival_ns == INT64_MAX)
        w->issuing_done = true; /* a fixed schedule with nothing more for this worker */
    while (!w->issuing_done && w->next_arrival_ns <= now) {
        if (!may_issue(w, w->next_arrival_ns))
            break;
        if (SG_UNLIKELY(w->sess)) {
            if (!wk_sess_start(w, w->next_arrival_ns)) { /* the count is spent: no session starts any more */
                w->issuing_done = true;
                break;
            }
        } else {
            new_request(w, w->next_arrival_ns);
        }
        any = true;
        w->next_arrival_ns = sg_sched_next(&w->sched);
        if (w->next_arrival_ns == INT64_MAX)
            w->issuing_done = true;
    }
    if (any)
        wk_conn_dispatch(w);
}

/* --concurrency-ramp-duration D: global slot j of C opens at start + j D / (C - 1); this worker's m-th is
 * j = index + m n. */
static int64_t slot_open_ns(const sg_worker_t *w, uint32_t m)
{
    uint32_t c = w->cfg->concurrency;
    double j = (double)w->index + (double)m * w->n;
    return w->run->start_ns + (c > 1 ? (int64_t)llround(j * w->cfg->concurrency_ramp_s * 1e9 / (c - 1)) : 0);
}

static void open_slots(sg_worker_t *w, int64_t now)
{
    while (w->slots_open < w->slots && !w->issuing_done) {
        int64_t at = slot_open_ns(w, w->slots_open);
        if (at > now)
            break;
        w->slots_open++;
        wk_issue_closed(w, at); /* the slot's first request is intended when it opens */
    }
}

static void check_timeouts(sg_worker_t *w, int64_t now)
{
    while (w->fl_head && now - w->fl_head->rec.sent_ns >= w->timeout_ns) {
        sg_req_t *r = w->fl_head;
        sg_conn_t *c = r->conn;
        wk_set_error(r, SG_ERRC_TIMEOUT, "no complete response within --request-timeout %.3g s",
                     w->cfg->request_timeout_s);
        if (r->rs) {
            wk_h2_abandon(r);
        } else if (c) {
            c->rs.req = NULL;
            wk_conn_close(c);
        }
        wk_req_finish(w, r, now);
    }
    wk_conn_dispatch(w);
}

/* Why the run stopped, for the cancelled requests' messages (sg_stop_why_t). */
static const char *stop_why(const sg_worker_t *w)
{
    switch (atomic_load_explicit(&w->run->stop, memory_order_relaxed)) {
    case SG_STOP_PROBE:
        return "the probe stopped early";
    case SG_STOP_GRACE:
        return "--benchmark-grace-period ended";
    case SG_STOP_INTERRUPT:
        return "the run was interrupted";
    case SG_STOP_STABLE:
        return "the measurement windows were stable";
    default:
        return w->fatal ? "the worker failed" : "the run stopped";
    }
}

/* Everything outstanding ends as cancelled: surge's decision, not the server's failure (docs/metrics.md). */
static void cancel_all(sg_worker_t *w, int64_t now)
{
    const char *why = stop_why(w);
    w->issuing_done = true;
    w->n_backoff = 0; /* slots waiting out a back-off hold no request: nothing to cancel */
    if (w->sess)
        wk_sess_cancel(w, now);
    while (w->fl_head) {
        sg_req_t *r = w->fl_head;
        if (r->rs) {
            wk_h2_abandon(r);
        } else if (r->conn) {
            r->conn->rs.req = NULL;
            wk_conn_close(r->conn);
        }
        wk_set_error(r, SG_ERRC_CANCELLED, "%s while the request was in flight", why);
        wk_req_finish(w, r, now);
    }
    sg_req_t *r;
    while ((r = wk_wait_pop_opened_for(w))) {
        wk_set_error(r, SG_ERRC_CANCELLED, "%s before the request could be sent", why);
        wk_req_finish(w, r, now);
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

/* What the controller watches (sg_worker_progress_t), once per loop iteration: plain stores, no shared lines
 * written per request beyond the existing counters. */
static void publish(sg_worker_t *w, int64_t now)
{
    sg_worker_progress_t *p = &w->progress;
    atomic_store_explicit(&p->waiting, w->n_waiting + w->n_fresh, memory_order_relaxed);
    atomic_store_explicit(&p->connecting, w->n_connecting, memory_order_relaxed);
    atomic_store_explicit(&p->bytes_received, w->bytes_received, memory_order_relaxed);
    atomic_store_explicit(&p->backing_off, w->n_backoff, memory_order_relaxed);
    /* a closed loop learns that the duration is over only when a slot frees: say so from the clock */
    if (w->issuing_done || now >= w->stop_issue_ns)
        atomic_store_explicit(&p->issuing_done, 1, memory_order_relaxed);
    /* after this turn's issuing: a request issued later is intended at a later completion or arrival */
    if (SG_UNLIKELY(w->win))
        atomic_store_explicit(&p->issued_to_ns, now, memory_order_release);
}

/*
 * The client-stall watch, at the top of every turn of the loop. The loop is due to turn again at the deadline of its
 * wait (the next arrival, a timeout, a session's turn; at most half the bound away, so a loop with nothing due is
 * still watched). Turning later than that by more than the bound means the worker did not get the CPU, or was
 * blocked, while something was due: requests went out late and what arrived was timed late, whatever the server
 * did. A window opens at the due instant and closes at the first turn that is on time again, ending where the last
 * late turn began; the controller reads the open window and the closed ones (sg_worker_progress_t).
 * Waits for a connection or a --max-concurrency slot are not the loop's lateness: they are in schedule_lag only.
 */
static void stall_close(sg_worker_t *w)
{
    sg_worker_progress_t *p = &w->progress;
    w->stall_open = false;
    w->stall_cur.end_ns = w->stall_caught_ns;
    if (w->n_stalls < SG_STALL_WINDOWS_MAX) {
        w->stalls[w->n_stalls++] = w->stall_cur;
        atomic_store_explicit(&p->stalls_n, w->n_stalls, memory_order_release);
    } else {
        w->stalls_dropped++;
    }
    atomic_store_explicit(&p->stall_since_ns, 0, memory_order_release);
}

static void stall_watch(sg_worker_t *w, int64_t now)
{
    sg_worker_progress_t *p = &w->progress;
    atomic_store_explicit(&p->beat_ns, now, memory_order_relaxed);
    int64_t late = now > w->due_ns ? now - w->due_ns : 0;
    if (late > w->stall_bound_ns) {
        if (!w->stall_open) {
            w->stall_open = true;
            w->stall_caught_ns = now;
            w->stall_cur = (sg_stall_win_t){.start_ns = w->due_ns, .max_lag_ns = late};
            atomic_store_explicit(&p->stall_lag_ns, late, memory_order_relaxed);
            atomic_store_explicit(&p->stall_since_ns, w->due_ns, memory_order_release);
        } else if (late > w->stall_cur.max_lag_ns) {
            w->stall_cur.max_lag_ns = late;
            atomic_store_explicit(&p->stall_lag_ns, late, memory_order_relaxed);
        }
    } else if (w->stall_open) {
        stall_close(w);
    }
}

/* Just before the loop waits: the deadline it is due by (capped at half the bound) is published. */
static int64_t stall_before_wait(sg_worker_t *w, int64_t now, int64_t deadline)
{
    if (deadline - now > w->stall_bound_ns / 2)
        deadline = now + w->stall_bound_ns / 2;
    /* the window ends at this turn's start unless the next turn is late too: what was due by then went out in this
     * turn, while the window was open, and what falls due later goes out after it closes, so the window's requests are
     * exactly those due inside it */
    if (w->stall_open)
        w->stall_caught_ns = now;
    w->due_ns = deadline > now ? deadline : now;
    atomic_store_explicit(&w->progress.due_ns, w->due_ns, memory_order_relaxed);
    return deadline;
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
    /* several URLs over HTTP/2: a session to each (those in rotation, in turn), as far as the slots need them */
    if (w->http2 && w->n_urls > 1 && n > 0 && n < w->n_urls)
        n = w->rate == 0 && w->slots < w->n_urls ? w->slots : w->n_urls;
    if (n > w->max_conns)
        n = w->max_conns;
    /* At most CONNECT_WINDOW being set up at once, the next opened as one is done; each connection is waited for
     * up to SETUP_CONNECT_NS from when it was opened. */
    uint64_t opened = 0;
    bool open_failed = false;
    int64_t until = 0;
    for (;;) {
        bool more = false;
        while (opened < n && !open_failed && w->n_connecting < CONNECT_WINDOW) {
            /* several URLs: the connections opened ahead go to each in turn (those in rotation) */
            if (!wk_conn_open(w, true, wk_url_setup_next(w))) {
                open_failed = true;
                break;
            }
            opened++;
            more = true;
        }
        if (more)
            until = sg_now_ns() + SETUP_CONNECT_NS;
        /* HTTP/2: set-up ends with the server's SETTINGS, so the first requests keep to its stream limit (sent
         * before it, they would go out against nghttp2's assumed 100 and come back refused) */
        if (!(w->n_connecting > 0 || (w->http2 && wk_h2_awaiting_settings(w))) || sg_now_ns() >= until)
            break;
        int err = sg_loop_run_once(&w->loop, until < w->setup_check_ns ? until : w->setup_check_ns);
        if (err < 0) {
            fatal(w, err, "event loop wait");
            return;
        }
        int64_t now = sg_now_ns();
        if (now >= w->setup_check_ns)
            wk_conns_expire_setup(w, now);
    }
    /* What is not ready now (still connecting or handshaking, no SETTINGS yet, failed, closed) is not waited for
     * any longer, but the controller says so rather than start silently */
    uint64_t usable = 0;
    if (w->http2)
        for (size_t i = 0; i < w->h2n; i++)
            usable += sg_h2_peer_settings_seen(w->h2v[i]->h2);
    else /* pre-opened connections never carried a request: they idle on the fresh list */
        for (unsigned u = 0; u < w->n_urls; u++)
            for (const sg_conn_t *c = w->idle_fresh_head[u]; c; c = c->next)
                usable++;
    atomic_store_explicit(&w->progress.setup_opened, (unsigned)opened, memory_order_relaxed);
    atomic_store_explicit(&w->progress.setup_pending, (unsigned)(opened > usable ? opened - usable : 0),
                          memory_order_relaxed);
}

/* How long before the start instant a closed-loop worker stops sleeping and spins (timer slack is 1 ns, but a
 * wakeup on a busy VM can be late by tens of microseconds). */
#define START_SPIN_NS 200000

/*
 * The kernel's receive stamps are CLOCK_REALTIME, mapped onto the run's CLOCK_MONOTONIC through an offset read at
 * the loop's start (sg_loop_clock_sync). Read again every CLOCK_CHECK_NS: NTP's slewing moves it by at most 0.5 ms
 * a second (50 us per check), so a move past CLOCK_STEP_NS is a step (NTP stepping, an operator, a VM resumed).
 * Stamps from then on map with the new offset; those between the step and its detection, at most CLOCK_CHECK_NS
 * of them, mapped with the old one. Steps are counted for the summary.
 */
#define CLOCK_CHECK_NS 100000000LL
#define CLOCK_STEP_NS 1000000LL

static void clock_check(sg_worker_t *w, int64_t now)
{
    w->clock_check_ns = now + CLOCK_CHECK_NS;
    if (!w->loop.rx_stamps)
        return;
    int64_t moved = sg_loop_clock_sync(&w->loop);
    if (moved > CLOCK_STEP_NS) {
        w->clock_steps++;
        if (moved > w->clock_step_max_ns)
            w->clock_step_max_ns = moved;
    }
}

/* The coalescing window is at most this fraction (1/N) of the requests' mean sent-to-end time, and half the mean
 * gap between one request's content events. */
#define COALESCE_SHARE 100
#define COALESCE_GAP_SHARE 2

/*
 * Coalesced wake-ups: how long the loop's next wait may hold completions back (sg_loop.h, coalesce_ns) so that
 * a worker receiving many slow streams wakes once per batch of segments instead of once per segment. The loop
 * already ends the window before any deadline (a due send, a session's next turn, a timeout), so an open loop
 * sends on time. What the loop cannot know is that a held completion ends a request: a closed loop's next
 * request starts when it is handled, and a request's end is seen late by up to the window. So:
 *   - the window is at most 1/COALESCE_SHARE of the requests' mean sent-to-end time (before any has finished,
 *     of the oldest in flight's age so far): a closed loop of 2 s streams gets the whole window and loses at
 *     most 1/100 of its rate; a fast exchange (a whole answer in 100 us) gets none;
 *   - and at most half the mean gap between a stream's chunks: a receive runs when the window ends, so two
 *     segments of one stream held in one window would be read together, as one chunk with one receive time;
 *   - none while requests wait for a connection or a re-send waits (what a completion frees is wanted now),
 *     and none with nothing in flight (nothing to coalesce).
 */
static int64_t coalesce_window(const sg_worker_t *w, int64_t now)
{
    if (!w->coalesce_ns || !w->fl_head || w->wait_head || w->fresh_head)
        return 0;
    int64_t est = w->e2e_avg_ns ? w->e2e_avg_ns : now - w->fl_head->rec.sent_ns;
    int64_t cap = est / COALESCE_SHARE;
    if (w->gap_avg_ns && w->gap_avg_ns / COALESCE_GAP_SHARE < cap)
        cap = w->gap_avg_ns / COALESCE_GAP_SHARE;
    if (cap >= w->coalesce_ns)
        return w->coalesce_ns;
    return cap < SG_LOOP_WINDOW_MIN_NS ? 0 : cap; /* a few microseconds are not worth a wait of their own */
}

static void *worker_main(void *arg)
{
    sg_worker_t *w = arg;
    char name[16]; /* "surge-w3" in top -H, ps -L, and for tests that stop one worker (test_client_stall.py) */
    snprintf(name, sizeof name, "surge-w%u", w->index);
    pthread_setname_np(pthread_self(), name);
    pin(w);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* 512 SQEs (4,096 CQEs): a full SQ is submitted and reused, and a CQ overflow is kept by the kernel, so size
     * only trades syscalls. The rings are allocated and cleared at set-up: 4,096 SQEs cost 3 ms of CPU there
     * (0.37 ms for 512) on this project's VMs, 1.5% of a 100k-request benchmark. */
    int err = sg_loop_init(&w->loop, (sg_io_backend_t)w->run->io_backend, 512, 1024, 4096);
    if (err < 0) {
        fatal(w, err, w->run->io_backend == SG_IO_URING ? "io_uring set-up" : "epoll set-up");
        atomic_store(&w->progress.ready, 1);
        atomic_store(&w->progress.finished, 1);
        return NULL;
    }
    /* --timestamps kernel: every connection stamps its reads (wk_conn_open), receives carry the stamps */
    w->loop.rx_stamps = !w->cfg->user_timestamps;
    w->clock_check_ns = sg_now_ns() + CLOCK_CHECK_NS;

    w->rx_kernel_times = w->loop.rx_stamps; /* --coalesce-us auto needs to know */
    w->coalesce_method = sg_loop_coalesce_method(&w->loop);
    /* --coalesce-us auto: a window only where it cannot delay a receive time (measured: +1 ms on TTFT p50 with
     * user-space times and a 1 ms window) */
    w->coalesce_ns = w->cfg->coalesce_us != SG_COALESCE_AUTO ? (int64_t)w->cfg->coalesce_us * 1000
                     : w->rx_kernel_times                    ? (int64_t)SG_COALESCE_US_DEFAULT * 1000
                                                             : 0;
    if (w->http2) {
        w->loop.before_submit = wk_h2_before_submit;
        w->loop.before_submit_arg = w;
    }
    preopen(w);
    atomic_store(&w->progress.ready, 1);
    while (!atomic_load(&w->run->go))
        usleep(100);

    /* the loop's counts cover the load, not the connections opened ahead of it */
    w->loop.turns = w->loop.waits = w->loop.completions = w->loop.coalesced = w->loop.coalesced_ns = 0;
    int64_t start = w->run->start_ns;
    if (w->cfg->fixed_schedule) {
        sg_sched_init_fixed(&w->sched, w->run->schedule_ns, w->run->schedule_n, w->cfg->fixed_schedule_speedup,
                            w->index, w->n, start);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else if (w->rate > 0 && w->cfg->ramp_strategy) {
        const sg_config_t *cfg = w->cfg;
        sg_sched_kind_t base = cfg->distribution == SG_DIST_CONSTANT ? SG_SCHED_CONSTANT
                               : cfg->distribution == SG_DIST_GAMMA  ? SG_SCHED_GAMMA
                                                                     : SG_SCHED_POISSON;
        sg_sched_init_ramp(&w->sched, base, cfg->burstiness, (sg_ramp_t)cfg->ramp_strategy, cfg->ramp_start_rps,
                           cfg->request_rate, cfg->ramp_duration_s, w->index, w->n, cfg->random_seed, start);
        w->ramp_end_ns = start + (int64_t)llround(cfg->ramp_duration_s * 1e9);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else if (w->rate > 0 && w->cfg->distribution == SG_DIST_GAMMA && !isinf(w->cfg->request_rate)) {
        sg_sched_init_gamma(&w->sched, w->cfg->request_rate, w->cfg->burstiness, w->index, w->n, w->cfg->random_seed,
                            start);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else if (w->rate > 0) {
        sg_sched_init(&w->sched, w->cfg->distribution == SG_DIST_CONSTANT ? SG_SCHED_CONSTANT : SG_SCHED_POISSON,
                      w->cfg->request_rate, w->index, w->n, w->cfg->random_seed, start);
        w->next_arrival_ns = sg_sched_next(&w->sched);
    } else {
        /* Sleep to just short of the start instant, then spin the rest: spinning all of the controller's 2 ms
         * lead was 1% of the CPU of a 100k-request benchmark. */
        if (start - sg_now_ns() > START_SPIN_NS) {
            int64_t wake = start - START_SPIN_NS;
            struct timespec ts = {.tv_sec = wake / 1000000000LL, .tv_nsec = wake % 1000000000LL};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
        }
        while (sg_now_ns() < start)
            ;
        if (w->cfg->concurrency_ramp_s > 0) {
            w->ramp_end_ns = start + (int64_t)llround(w->cfg->concurrency_ramp_s * 1e9);
            open_slots(w, start);
        } else {
            for (uint32_t i = 0; i < w->slots && !w->issuing_done; i++)
                wk_issue_closed(w, start);
        }
        if (w->slots == 0)
            w->issuing_done = true;
    }

    bool stopped = false;
    while (!w->fatal) {
        int64_t now = sg_now_ns();
        if (w->stall_bound_ns)
            stall_watch(w, now);
        if (!stopped && atomic_load_explicit(&w->run->stop, memory_order_relaxed)) {
            cancel_all(w, now);
            stopped = true;
        }
        if (w->rate > 0)
            issue_due(w, now);
        else if (w->n_backoff)
            backoff_due(w, now);
        if (SG_UNLIKELY(w->slots_open < w->slots) && w->rate == 0 && !w->issuing_done)
            open_slots(w, now);
        if (SG_UNLIKELY(w->cq_head))
            check_cancels(w, now);
        if (SG_UNLIKELY(w->sess))
            wk_sess_due(w, now);
        if (w->fl_head)
            check_timeouts(w, now);
        if (now >= w->setup_check_ns)
            wk_conns_expire_setup(w, now);
        if (SG_UNLIKELY(now >= w->clock_check_ns))
            clock_check(w, now);
        publish(w, now);
        int64_t deadline = INT64_MAX;
        if (SG_UNLIKELY(w->sess))
            deadline = wk_sess_next_due(w); /* a session waiting for its next turn is still work to do */
        if (w->issuing_done && !w->wait_head && !w->fresh_head && !w->fl_head && deadline == INT64_MAX)
            break;
        if (w->rate > 0 && !w->issuing_done && w->next_arrival_ns < deadline)
            deadline = w->next_arrival_ns;
        if (SG_UNLIKELY(w->slots_open < w->slots) && w->rate == 0 && !w->issuing_done &&
            slot_open_ns(w, w->slots_open) < deadline)
            deadline = slot_open_ns(w, w->slots_open);
        if (w->cq_head && w->cq_head->cancel_at_ns < deadline)
            deadline = w->cq_head->cancel_at_ns;
        if (w->n_backoff && w->backoff[0].due_ns < deadline)
            deadline = w->backoff[0].due_ns;
        if (w->n_backoff && w->stop_issue_ns < deadline)
            deadline = w->stop_issue_ns;
        if (w->fl_head && w->fl_head->rec.sent_ns + w->timeout_ns < deadline)
            deadline = w->fl_head->rec.sent_ns + w->timeout_ns;
        if (w->setup_check_ns < deadline)
            deadline = w->setup_check_ns;
        if (w->stall_bound_ns)
            deadline = stall_before_wait(w, now, deadline);
        w->loop.coalesce_ns = coalesce_window(w, now);
        err = sg_loop_run_once(&w->loop, deadline);
        if (err < 0)
            fatal(w, err, "event loop wait");
    }
    if (w->stall_open) /* the run ended inside a window: it ends where the worker last caught up */
        stall_close(w);
    wk_unreach_end(w, sg_now_ns()); /* the server still refused connections when the worker stopped */
    wk_url_end(w, sg_now_ns());
    atomic_store_explicit(&w->progress.due_ns, INT64_MAX, memory_order_relaxed);
    if (w->fatal)
        cancel_all(w, sg_now_ns());

    w->events_shared = wk_events_shared;
    wk_conns_free_all(w);
    wk_h2_free_all(w);
    if (w->tls_ctx)
        sg_tls_thread_done();
    /* The ring (and its eventfd) stays until sg_worker_join: the controller may still be waking us. */
    if (w->log) {
        /* after the loop: waiting here for the writer to catch up costs the measurement nothing */
        w->records_dropped = sg_reclog_dropped(w->log);
        err = sg_reclog_close(w->log);
        w->log = NULL;
        if (err < 0 && !w->log_err)
            w->log_err = err;
        if (err < 0)
            fatal(w, err, "closing the record log");
        if (w->records_dropped)
            fprintf(stderr,
                    "surge: worker %u dropped %llu per-request records: the disk could not keep up with the record "
                    "log (the metrics count them; the per-request files miss them)\n",
                    w->index, (unsigned long long)w->records_dropped);
    }
    atomic_store(&w->progress.finished, 1);
    return NULL;
}

/* ---------------- public ---------------- */

double sg_worker_setup_timeout_s(const sg_config_t *cfg)
{
    double max = (double)SETUP_TIMEOUT_MAX_NS / 1e9;
    return cfg->request_timeout_s < max ? cfg->request_timeout_s : max;
}

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
    /* over several processes, index and n are global: this process's workers are streams stream_offset.. of
     * streams_total, and every share below (slots, counts, arrivals, ids) is taken as one process would */
    unsigned local_n = n;
    if (run->streams_total) {
        index += run->stream_offset;
        n = run->streams_total;
    }
    w->index = index;
    w->n = n;
    w->n_urls = run->n_urls > 1 ? (unsigned)run->n_urls : 1;
    wk_url_init(w);
    w->cpu = cpu;
    w->rate = cfg->request_rate > 0 ? cfg->request_rate / n : 0;
    if (cfg->fixed_schedule)
        w->rate = 1; /* open loop: any positive value says so; the arrival times come from the trace */
    w->slots = cfg->request_rate > 0 ? 0 : (uint32_t)share(cfg->concurrency, index, n);
    w->max_in_flight = cfg->max_concurrency ? (uint32_t)share(cfg->max_concurrency, index, n) : 0;
    if (cfg->max_concurrency && w->max_in_flight == 0)
        w->max_in_flight = 1; /* a share of 0 would stall this worker: give it one slot */
    w->stall_bound_ns = (int64_t)llround(cfg->stall_threshold_ms * 1e6);
    w->due_ns = INT64_MAX;
    atomic_init(&w->progress.due_ns, INT64_MAX);
    w->warmup_quota = share(cfg->warmup_request_count, index, n);
    w->quota = cfg->request_count ? share(cfg->request_count, index, n) + w->warmup_quota : UINT64_MAX;
    w->stop_issue_ns = INT64_MAX;
    w->ramp_end_ns = INT64_MIN;
    w->slots_open = cfg->concurrency_ramp_s > 0 ? 0 : w->slots;
    if (cfg->cancel_rate_pct > 0)
        w->cancel_below = cfg->cancel_rate_pct >= 100 ? UINT64_MAX : (uint64_t)(cfg->cancel_rate_pct / 100 * 0x1p64);
    w->cancel_delay_ns = (int64_t)llround(cfg->cancel_delay_s * 1e9);
    w->timeout_ns = (int64_t)llround(cfg->request_timeout_s * 1e9);
    w->setup_timeout_ns = (int64_t)llround(sg_worker_setup_timeout_s(cfg) * 1e9);
    w->setup_check_ns = INT64_MAX;
    uint64_t reserve = 64;
    w->max_conns = run->nofile > reserve * 2 ? (run->nofile - reserve) / local_n : 16;
    if (cfg->max_connections && share(cfg->max_connections, index, n) < w->max_conns)
        w->max_conns = share(cfg->max_connections, index, n);
    if (w->max_conns == 0)
        w->max_conns = 1;
    if (run->n_local_addrs) /* workers start at different sources, so few connections still use them all */
        w->next_src = index % run->n_local_addrs;
    w->http2 = run->http2;
    w->grpc = cfg->triton;
    w->h2_per_conn = 100; /* RFC 9113's recommended minimum, until a peer's SETTINGS say otherwise */
    w->keep_text = run->tok != NULL;
    w->no_output = !w->cfg->triton && !sg_endpoint(w->cfg->endpoint_type)->output;
    w->metrics = sg_metrics_new(cfg->slos, cfg->n_slos);
    if (!w->metrics) {
        snprintf(err, errlen, "out of memory for metrics");
        free(w);
        return NULL;
    }
    if (cfg->sessions && wk_sess_init(w, err, errlen) < 0) {
        sg_metrics_free(w->metrics);
        free(w);
        return NULL;
    }
    if (cfg->tls) {
        /* made here, on the controller's thread, and used only by the worker's thread from its start */
        int terr = sg_tls_client_ctx_new(&run->tls_opts, &w->tls_ctx, err, errlen);
        w->tls_buf = terr < 0 ? NULL : malloc(TLS_PLAIN_BUF);
        if (!w->tls_buf) {
            if (terr >= 0)
                snprintf(err, errlen, "out of memory for TLS");
            sg_tls_ctx_free(w->tls_ctx);
            sg_metrics_free(w->metrics);
            free(w);
            return NULL;
        }
    }
    snprintf(w->log_path, sizeof(w->log_path), "%s/.surge-worker-%u.reclog", run->artifact_dir, index);
    int e = 0;
    w->log = sg_reclog_open_async(w->log_path, SG_RECLOG_CAP_DEFAULT, &e); /* never write(2) on this thread */
    if (!w->log) {
        snprintf(err, errlen, "cannot create %s: %s", w->log_path, sg_strerror(e));
        sg_tls_ctx_free(w->tls_ctx);
        free(w->tls_buf);
        sg_metrics_free(w->metrics);
        free(w);
        return NULL;
    }
    if (cfg->measurement_interval_ms > 0) { /* last: nothing after it can fail */
        w->win_ns = (int64_t)llround(cfg->measurement_interval_ms * 1e6);
        w->n_win = cfg->max_trials;
        w->win = calloc(w->n_win, sizeof(*w->win));
        if (!w->win) {
            snprintf(err, errlen, "out of memory for the stability windows");
            sg_worker_free(w);
            return NULL;
        }
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

const sg_win_count_t *sg_worker_windows(const sg_worker_t *w, uint32_t *n)
{
    *n = w->n_win;
    return w->win;
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
    out->resent_measured = w->resent_measured;
    out->silent_closes = w->silent_closes;
    out->no_reuse_after_whole = w->no_reuse_after[0];
    out->no_reuse_after_stream = w->no_reuse_after[1];
    out->ka_relearned = w->ka_relearned;
    out->backoffs = w->backoffs;
    out->h2_streams_peak = w->h2_streams_peak;
    out->h2_goaways = w->h2_goaways;
    out->h2_refused_resent = w->h2_refused_resent;
    out->h2_resets = w->h2_resets;
    out->tls_full = w->tls_full;
    out->tls_resumed = w->tls_resumed;
    out->tls_failures = w->tls_failures;
    out->records_dropped = w->records_dropped;
    out->log_err = w->log_err;
    out->rx_stamps = w->loop.rx_stamps;
    out->rx_stamped = w->rx_stamped;
    out->rx_unstamped = w->rx_unstamped;
    out->stamp_refused = w->stamp_refused;
    out->clock_steps = w->clock_steps;
    out->clock_step_max_ns = w->clock_step_max_ns;
    out->events_shared = w->events_shared;
    out->loop_turns = w->loop.turns;
    out->loop_waits = w->loop.waits;
    out->loop_completions = w->loop.completions;
    out->loop_coalesced = w->loop.coalesced;
    out->loop_coalesced_ns = w->loop.coalesced_ns;
    out->coalesce_method = w->coalesce_method;
    out->coalesce_us = (uint32_t)(w->coalesce_ns / 1000);
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
    free(w->win);
    wk_sess_free(w);
    free(w->backoff);
    sg_tls_ctx_free(w->tls_ctx); /* after every connection: wk_conns_free_all ran at the thread's end */
    free(w->tls_buf);
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

const sg_stall_win_t *sg_worker_stalls(const sg_worker_t *w, uint64_t *dropped)
{
    if (dropped)
        *dropped = w->stalls_dropped;
    return w->stalls;
}

const sg_unreach_win_t *sg_worker_unreachable(const sg_worker_t *w, uint64_t *dropped)
{
    if (dropped)
        *dropped = w->unreach_dropped;
    return w->unreach;
}
