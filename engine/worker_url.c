/*
 * Several URLs (-u/--url given more than once; AIPerf's multi-URL load balancing; docs/metrics.md, "Several URLs"):
 * which server each of a worker's requests goes to. A request gets its URL when it is queued, by --url-strategy:
 * round_robin takes the URLs in turn (AIPerf's), least_in_flight the one with the fewest of this worker's requests in
 * flight or waiting (ties in turn), so a faster server, which finishes sooner, gets more. It then waits for a
 * connection to that URL (worker_conn.c keeps the idle connections per URL and opens them per URL; over HTTP/2,
 * worker_h2.c its sessions). A multi-turn session's turns all go to the URL its first turn got (session.c).
 *
 * A dead URL is skipped, not spun on: a connect to it that is refused, reset, unreachable or timed out takes it out
 * of the rotation for a back-off (URL_BACKOFF_MIN_MS, doubling with each failure in a row, URL_BACKOFF_MAX_MS at
 * most), and the requests waiting for it go to the URLs still in rotation, none of them failed (counted as re-routed).
 * When the back-off ends it is in rotation again; the next request sent its way tries it, and a connect that
 * succeeds clears its record. When every URL is out, requests keep their URLs and fail as with one URL (the server
 * unreachable: worker.c's window and the closed loop's back-off). Requests already sent on a connection that then
 * breaks fail as they would with one URL (the server saw them): only requests not yet sent are re-routed.
 */
#include "worker_int.h"

#include <errno.h>

#define URL_BACKOFF_MIN_MS 100
#define URL_BACKOFF_MAX_MS 2000

static bool in_rotation(const sg_worker_t *w, unsigned u, int64_t now)
{
    return w->url_down_until[u] <= now;
}

/* Some URL had a failed connect not yet followed by one that worked: the clock is needed to tell its back-off. */
static bool any_down(const sg_worker_t *w)
{
    for (unsigned u = 0; u < w->n_urls; u++)
        if (w->url_down_until[u])
            return true;
    return false;
}

static unsigned pick(sg_worker_t *w, int64_t now)
{
    unsigned n = w->n_urls, best = n;
    uint64_t best_load = UINT64_MAX;
    for (unsigned k = 0; k < n; k++) {
        unsigned u = (w->url_next + k) % n;
        if (!in_rotation(w, u, now))
            continue;
        if (w->cfg->url_strategy == SG_URL_ROUND_ROBIN) {
            best = u;
            break;
        }
        uint64_t load = w->url_in_flight[u] + w->url_waiting[u];
        if (load < best_load) {
            best_load = load;
            best = u;
        }
    }
    if (best == n) /* every URL is out of rotation: in turn, as one URL would be (their connects fail) */
        best = w->url_next % n;
    w->url_next = (best + 1) % n;
    return best;
}

void wk_url_queued(sg_worker_t *w, sg_req_t *r)
{
    if (w->n_urls < 2)
        return;
    r->rec.multi_url = true;
    int64_t now = any_down(w) ? sg_now_ns() : 0;
    if (!r->url_picked || (now && !in_rotation(w, r->rec.url, now))) {
        r->rec.url = (uint8_t)pick(w, now);
        r->url_picked = true;
    }
    w->url_waiting[r->rec.url]++;
}

void wk_url_unqueued(sg_worker_t *w, const sg_req_t *r)
{
    if (w->n_urls >= 2)
        w->url_waiting[r->rec.url]--;
}

/* The queued requests of URL u (the wait queue, then the re-sends') go to URLs in rotation. */
static void reroute(sg_worker_t *w, unsigned u, int64_t now)
{
    sg_req_t *queues[2] = {w->wait_head, w->fresh_head};
    for (int q = 0; q < 2; q++)
        for (sg_req_t *r = queues[q]; r; r = r->next) {
            if (r->rec.url != u)
                continue;
            w->url_waiting[u]--;
            r->rec.url = (uint8_t)pick(w, now);
            w->url_waiting[r->rec.url]++;
            w->url_stats[u].rerouted++;
        }
}

bool wk_url_failed(sg_worker_t *w, unsigned u, int err, int64_t now)
{
    if (w->n_urls < 2 || (!wk_refusal(err) && err != -ETIMEDOUT))
        return false;
    sg_url_stats_t *st = &w->url_stats[u];
    st->connect_failures++;
    uint32_t streak = w->url_down_streak[u]++;
    if (streak == 0) {
        st->outages++;
        if (!st->first_down_ns)
            st->first_down_ns = now;
    }
    int64_t ms = (int64_t)URL_BACKOFF_MIN_MS << (streak < 8 ? streak : 8);
    w->url_down_until[u] = now + (ms < URL_BACKOFF_MAX_MS ? ms : URL_BACKOFF_MAX_MS) * 1000000LL;
    bool other = false;
    for (unsigned v = 0; v < w->n_urls && !other; v++)
        other = v != u && in_rotation(w, v, now);
    if (!other)
        return false;
    reroute(w, u, now);
    return true;
}

void wk_url_connected(sg_worker_t *w, unsigned u, int64_t now)
{
    if (w->n_urls < 2 || !w->url_down_streak[u])
        return;
    w->url_down_streak[u] = 0;
    w->url_down_until[u] = 0;
    w->url_stats[u].last_up_ns = now;
}

unsigned wk_url_want(const sg_worker_t *w, uint64_t *want)
{
    /* the queue's head's URL first: at the connection cap, the descriptor an idle connection to another URL gave up
     * is for it (taken by another URL, the head would wait for ever, and every request with it) */
    const sg_req_t *head = w->fresh_head ? w->fresh_head : w->wait_head;
    for (unsigned k = 0, first = head ? head->rec.url : 0; k < w->n_urls; k++) {
        unsigned u = (first + k) % w->n_urls;
        if (w->url_waiting[u] > w->url_connecting[u]) {
            *want = w->url_waiting[u];
            return u;
        }
    }
    *want = 0;
    return 0;
}

void wk_url_init(sg_worker_t *w)
{
    int64_t now = sg_now_ns();
    for (unsigned u = 0; u < w->n_urls && w->n_urls > 1; u++)
        if (w->run->url_refused[u]) {
            w->url_down_streak[u] = 1;
            w->url_down_until[u] = now + URL_BACKOFF_MIN_MS * 1000000LL;
            w->url_stats[u].outages = 1;
            w->url_stats[u].first_down_ns = now;
        }
}

unsigned wk_url_setup_next(sg_worker_t *w)
{
    return w->n_urls > 1 ? pick(w, sg_now_ns()) : 0;
}

void wk_url_end(sg_worker_t *w, int64_t now)
{
    (void)now;
    for (unsigned u = 0; u < w->n_urls; u++)
        w->url_stats[u].down_at_end = w->url_down_streak[u] > 0;
}

void sg_worker_url_stats(const sg_worker_t *w, size_t u, sg_url_stats_t *out)
{
    *out = u < SG_MAX_URLS ? w->url_stats[u] : (sg_url_stats_t){0};
}
