/*
 * Stability windows (--measurement-interval MS, --stability-percentage P, --max-trials N; perf_analyzer's time
 * windows). A point runs as one continuous load whose measured phase is tiled by windows of MS (its
 * --benchmark-duration is N windows); a request belongs to the window of its intended start, as with
 * --slice-duration. The workers count each window's requests live (sg_win_count_t: issued, finished, successful and
 * their latency sum); the controller judges a window once every worker has issued everything intended in it and all
 * of those have finished. Window k's throughput is its successful requests / MS and its latency their mean request
 * latency; the point is stable at window k when over windows k-2, k-1 and k the largest throughput is within P% of
 * the smallest (max / min <= 1 + P/100) and so is the largest latency: perf_analyzer's rule. The run then stops
 * (what is in flight, all of it intended after window k, is cancelled) and the point's metrics become those of the
 * three windows' records, pooled: read back from the record logs with the span reader --slice-duration uses, each
 * record through sg_metrics_add, so every figure keeps the run's definitions. If N windows pass without that, the
 * last three are reported the same way and the point is NOT STABLE (EXIT_NOT_STABLE, as perf_analyzer fails).
 */
#define _GNU_SOURCE
#include "run_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A closed loop's next request is intended when its slot freed: at the response's receive time, which with the
 * kernel's stamps can lie a little before the worker handles it (a read held for coalescing, or left for a later
 * turn). A window is judged once every worker has issued up to this much past its end, and after the join every
 * judged window is counted again from the final counts (stab_finish), so the figures reported are always whole.
 */
#define LATE_NS 5000000LL

typedef struct {
    uint64_t requests, ok; /* requests: ok and failed, as the summary's request_count (cancelled ones apart) */
    uint64_t cancelled;
    double throughput; /* successful requests / s */
    double latency_ms; /* mean request latency of the successful ones; NAN when none */
} stab_win_t;

struct stab {
    int64_t win_ns;
    double pct;
    uint32_t max;
    uint32_t judged; /* windows 0 .. judged-1 are complete and measured */
    stab_win_t *win;
    bool decided, stable, stopped;
    bool pooled;                   /* the point's metrics are the three windows' */
    uint32_t first;                /* the windows reported: first .. first + 2 */
    double spread_thr, spread_lat; /* over those three: (max / min - 1) in %, INFINITY where one had no success */
};

stab_t *stab_new(const sg_config_t *cfg)
{
    stab_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->win_ns = (int64_t)llround(cfg->measurement_interval_ms * 1e6); /* as the workers' (worker.c) */
    s->pct = cfg->stability_pct;
    s->max = cfg->max_trials;
    s->win = calloc(s->max, sizeof(*s->win));
    if (!s->win) {
        free(s);
        return NULL;
    }
    return s;
}

void stab_free(stab_t *s)
{
    if (!s)
        return;
    free(s->win);
    free(s);
}

/* Window k summed over the workers into *out; false while a worker may still issue or finish one of its requests.
 * After the join (joined) every count is final. */
static bool window_complete(const stab_t *s, const point_t *pt, uint32_t k, bool joined, stab_win_t *out)
{
    uint64_t requests = 0, ok = 0, cancelled = 0, lat_ns = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        uint32_t n = 0;
        const sg_win_count_t *c = sg_worker_windows(pt->ws[i], &n);
        if (!c || k >= n)
            return false;
        /* live: the worker is past the window (its issued_to is a release store after its counts); a worker that
         * stopped turning before that (the last window, the run's end) is judged after the join */
        if (!joined) {
            int64_t origin = atomic_load_explicit(&wp->win_origin_ns, memory_order_acquire);
            if (origin == 0 || atomic_load_explicit(&wp->issued_to_ns, memory_order_acquire) <
                                   origin + (int64_t)(k + 1) * s->win_ns + LATE_NS)
                return false; /* its measured phase has not begun, or it may still issue into window k */
        }
        uint64_t issued = atomic_load_explicit(&c[k].issued, memory_order_relaxed);
        uint64_t done = atomic_load_explicit(&c[k].done, memory_order_acquire);
        if (done < issued)
            return false;
        uint64_t cut = atomic_load_explicit(&c[k].cancelled, memory_order_relaxed);
        requests += issued - cut;
        cancelled += cut;
        ok += atomic_load_explicit(&c[k].ok, memory_order_relaxed);
        lat_ns += atomic_load_explicit(&c[k].latency_ns, memory_order_relaxed);
    }
    double win_s = (double)s->win_ns / 1e9;
    *out = (stab_win_t){
        .requests = requests,
        .ok = ok,
        .cancelled = cancelled,
        .throughput = (double)ok / win_s,
        .latency_ms = ok ? (double)lat_ns / (double)ok / 1e6 : NAN,
    };
    return true;
}

/* (max / min - 1) in % of one quantity over windows first .. first + 2; INFINITY when one is 0 or unknown. */
static double spread(const stab_t *s, uint32_t first, bool latency)
{
    double lo = INFINITY, hi = 0;
    for (uint32_t k = first; k < first + 3; k++) {
        double v = latency ? s->win[k].latency_ms : s->win[k].throughput;
        if (!(v > 0)) /* no success in the window (NAN or 0): nothing to compare */
            return INFINITY;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    return (hi / lo - 1) * 100;
}

/* The three windows ending at the last one judged: stable when both spreads are within the percentage. */
static bool judge_last(stab_t *s)
{
    s->first = s->judged - 3;
    s->spread_thr = spread(s, s->first, false);
    s->spread_lat = spread(s, s->first, true);
    /* a hair of slack for the division's rounding: 10% means 1.10 / 1.00 passes */
    return s->spread_thr <= s->pct * (1 + 1e-12) && s->spread_lat <= s->pct * (1 + 1e-12);
}

/* Judge every window that is complete; decide once three agree or the last window is in. */
static void judge(stab_t *s, const point_t *pt, bool joined)
{
    stab_win_t w;
    while (!s->decided && s->judged < s->max && window_complete(s, pt, s->judged, joined, &w)) {
        s->win[s->judged++] = w;
        if (s->judged >= 3 && judge_last(s))
            s->decided = s->stable = true;
        else if (s->judged == s->max)
            s->decided = true; /* not stable: the last three stand */
    }
}

void stab_look(profile_t *p, point_t *pt)
{
    stab_t *s = pt->stab;
    if (s->decided)
        return;
    judge(s, pt, false);
    if (s->decided && s->stable && !atomic_load(&p->run.stop)) {
        /* the rest of the load is outside the windows reported: stop it, as a probe is stopped */
        atomic_store(&p->run.stop, SG_STOP_STABLE);
        for (unsigned i = 0; i < pt->n_workers; i++)
            sg_worker_wake(pt->ws[i]);
        s->stopped = true;
    }
}

bool stab_stopped(const stab_t *s)
{
    return s && s->stopped;
}

static void add_record(void *ctx, const sg_record_t *r, uint64_t pos)
{
    (void)pos;
    sg_metrics_add(ctx, r);
}

/* The point's metrics from the records of windows first .. first + 2 of every worker (each worker's own windows). */
static int pool_windows(const stab_t *s, point_t *pt)
{
    sg_metrics_t *m = sg_metrics_new(pt->cfg.slos, pt->cfg.n_slos);
    if (!m)
        return SG_ENOMEM;
    int rc = 0;
    for (unsigned i = 0; i < pt->n_workers && !rc; i++) {
        int64_t origin = atomic_load(&sg_worker_progress(pt->ws[i])->win_origin_ns);
        if (origin == 0)
            continue; /* it measured nothing */
        int64_t from = origin + (int64_t)s->first * s->win_ns, to = from + 3 * s->win_ns;
        rc = sg_reclog_each_span(sg_worker_log_path(pt->ws[i]), 0, UINT64_MAX, from, to, add_record, m);
    }
    if (rc) {
        sg_metrics_free(m);
        return rc;
    }
    sg_metrics_free(pt->merged);
    pt->merged = m;
    return 0;
}

static void say_spread(char *buf, size_t cap, double v)
{
    if (isinf(v))
        snprintf(buf, cap, "n/a (a window without a success)");
    else
        snprintf(buf, cap, "%.2f%%", v);
}

int stab_finish(profile_t *p, point_t *pt)
{
    (void)p;
    stab_t *s = pt->stab;
    /* the windows judged live, counted again from the final counts: a request handled after its window was judged
     * (LATE_NS) is in them now, and the verdict is the rule's on these figures */
    for (uint32_t k = 0; k < s->judged; k++)
        window_complete(s, pt, k, true, &s->win[k]);
    if (s->decided && s->judged >= 3)
        s->stable = judge_last(s);
    /* a run that went its whole length has every window whole; an interrupted one's last window is partial */
    if (!s->decided && !pt->interrupted)
        judge(s, pt, true);
    if (!s->decided && s->judged >= 3)
        judge_last(s); /* interrupted: the last three complete windows, not stable */
    double ms = (double)s->win_ns / 1e6;
    if (s->judged < 3) {
        fprintf(stderr,
                "surge: NOT STABLE: only %u complete window%s of %g ms (three are needed to judge); the figures are "
                "the whole run's\n",
                s->judged, s->judged == 1 ? "" : "s", ms);
        return EXIT_NOT_STABLE;
    }
    int rc = pool_windows(s, pt);
    if (rc < 0) {
        fprintf(stderr, "surge: reading the stable windows' records back: %s\n", sg_strerror(rc));
        return EXIT_FATAL;
    }
    s->pooled = true;
    char thr[48], lat[48];
    say_spread(thr, sizeof thr, s->spread_thr);
    say_spread(lat, sizeof lat, s->spread_lat);
    const stab_win_t *w = &s->win[s->first];
    if (s->stable)
        fprintf(stderr,
                "surge: stable after %u windows of %g ms: the last three (%g-%g s of the measured phase) agree within "
                "%g%% (throughput %.4g, %.4g, %.4g req/s: %s apart; mean latency %.4g, %.4g, %.4g ms: %s apart); "
                "the figures are those three windows' requests\n",
                s->judged, ms, ms * s->first / 1e3, ms * (s->first + 3) / 1e3, s->pct, w[0].throughput, w[1].throughput,
                w[2].throughput, thr, w[0].latency_ms, w[1].latency_ms, w[2].latency_ms, lat);
    else
        fprintf(stderr,
                "surge: NOT STABLE after %u windows of %g ms%s: the last three (%g-%g s of the measured phase) differ "
                "by %s in "
                "throughput (%.4g, %.4g, %.4g req/s) and %s in mean latency (%.4g, %.4g, %.4g ms), more than %g%%; "
                "the figures are those three windows' requests\n",
                s->judged, ms, pt->interrupted ? " (interrupted)" : "", ms * s->first / 1e3, ms * (s->first + 3) / 1e3,
                thr, w[0].throughput, w[1].throughput, w[2].throughput, lat, w[0].latency_ms, w[1].latency_ms,
                w[2].latency_ms, s->pct);
    return s->stable ? EXIT_OK : EXIT_NOT_STABLE;
}

/* A number, or null for a window without a success. */
static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

char *stab_json(const stab_t *s)
{
    if (!s)
        return NULL;
    json_t *root = json_object(), *o = json_object(), *wins = json_array();
    if (!root || !o || !wins) {
        json_decref(root);
        json_decref(o);
        json_decref(wins);
        return NULL;
    }
    double ms = (double)s->win_ns / 1e6;
    for (uint32_t k = 0; k < s->judged; k++) {
        const stab_win_t *w = &s->win[k];
        json_array_append_new(
            wins, json_pack("{s:I, s:f, s:f, s:I, s:I, s:I, s:o, s:o}", "index", (json_int_t)k, "start_ms", ms * k,
                            "end_ms", ms * (k + 1), "request_count", (json_int_t)w->requests, "ok_count",
                            (json_int_t)w->ok, "cancelled_count", (json_int_t)w->cancelled, "request_throughput",
                            num_or_null(w->throughput), "avg_request_latency", num_or_null(w->latency_ms)));
    }
    json_object_set_new(o, "measurement_interval_ms", json_real(ms));
    json_object_set_new(o, "stability_percentage", json_real(s->pct));
    json_object_set_new(o, "max_trials", json_integer(s->max));
    json_object_set_new(o, "rule",
                        json_string("max/min of request_throughput and of avg_request_latency over the "
                                    "last 3 windows within stability_percentage"));
    json_object_set_new(o, "stable", json_boolean(s->decided && s->stable));
    json_object_set_new(o, "windows_measured", json_integer(s->judged));
    json_t *used = s->pooled ? json_pack("[I, I]", (json_int_t)s->first, (json_int_t)s->first + 2) : json_null();
    json_object_set_new(o, "windows_reported", used ? used : json_null());
    json_object_set_new(o, "throughput_spread_percent", s->pooled ? num_or_null(s->spread_thr) : json_null());
    json_object_set_new(o, "latency_spread_percent", s->pooled ? num_or_null(s->spread_lat) : json_null());
    json_object_set_new(o, "windows", wins);
    json_object_set_new(root, "stability", o);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}
