/*
 * The capacity search (--search max-request-rate | max-concurrency): the largest load whose point meets every
 * --slo, found with load points of the prepared run (run.c) as probes. docs/capacity.md has the method and why
 * its answer is free of coordinated omission; in short:
 *
 *  - Open loop (max-request-rate): each probe offers a Poisson (or --request-distribution) schedule at a fixed
 *    rate, whatever the server does, and every latency counts from the request's intended start, so a server
 *    that falls behind shows it in full, including in the requests that waited to be sent.
 *  - Bracket, then bisect: from LO the value doubles until a probe fails (or HI passes), then the interval
 *    between the highest passing and the lowest failing value is halved until it is within --search-precision
 *    of the passing value. A value passes only when each of its --search-trials probes passes.
 *  - A probe fails when an --slo fails, when its requests fail beyond --max-error-rate, or when the server fell
 *    behind: the requests outstanding (in flight or waiting to be sent) grew through the sending, which a
 *    probe too short for its percentiles to show the backlog would otherwise pass.
 *  - A probe stops early once its verdict is certain: a percentile ceiling (pNN < T) fails as soon as more of
 *    the probe's planned requests are above T than the percentile leaves room for; an error-rate ceiling once
 *    the failures alone exceed it. The workers count those requests as they complete (sg_run_bound_t).
 */
#define _GNU_SOURCE
#include "run_int.h"
#include "sg_points.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBES 200

/* ---------- one probe: its bounds, its look at the workers, its overload test ---------- */

void probe_begin(profile_t *p, point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    probe_t *pr = &pt->probe;
    sg_run_t *run = &p->run;
    if (cfg->request_count)
        pr->planned = (int64_t)cfg->request_count;
    else if (cfg->request_rate > 0 && !isinf(cfg->request_rate) && cfg->benchmark_duration_s > 0) {
        /* what a duration-bound open loop may issue: the expected count and three standard deviations */
        double e = cfg->request_rate * cfg->benchmark_duration_s;
        pr->planned = (int64_t)ceil(e + 3 * sqrt(e) + 1);
    }
    run->n_bounds = 0;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        double share;
        if (!sg_slo_per_request_bound(c, &share))
            continue;
        sg_run_bound_t *b = &run->bounds[run->n_bounds];
        b->metric = c->metric;
        b->bound = sg_metric_is_time(c->metric) ? c->target * 1e6 : c->target;
        b->floor = c->op == SG_SLO_OP_GT || c->op == SG_SLO_OP_GE;
        b->strict = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_GT;
        pr->bound_check[run->n_bounds] = i;
        pr->bound_share[run->n_bounds] = share;
        run->n_bounds++;
    }
    pr->n_bounds = run->n_bounds;
    if (cfg->request_rate > 0 && !isinf(cfg->request_rate)) {
        pr->sample_t = malloc(PROBE_SAMPLES * sizeof *pr->sample_t);
        pr->sample_n = malloc(PROBE_SAMPLES * sizeof *pr->sample_n);
    }
}

static void probe_stop(profile_t *p, point_t *pt)
{
    pt->probe.stopped_early = true;
    atomic_store(&p->run.stop, SG_STOP_PROBE);
    for (unsigned i = 0; i < pt->n_workers; i++)
        sg_worker_wake(pt->ws[i]);
}

void probe_look(profile_t *p, point_t *pt, int64_t now)
{
    probe_t *pr = &pt->probe;
    const sg_config_t *cfg = &pt->cfg;
    uint64_t outstanding = 0, errors = 0, over[SG_SLO_MAX] = {0};
    unsigned issuing_done = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        outstanding += atomic_load_explicit(&wp->in_flight, memory_order_relaxed) +
                       atomic_load_explicit(&wp->waiting, memory_order_relaxed);
        errors += atomic_load_explicit(&wp->errors, memory_order_relaxed);
        issuing_done += (unsigned)(atomic_load_explicit(&wp->issuing_done, memory_order_relaxed) ||
                                   atomic_load_explicit(&wp->finished, memory_order_relaxed));
        for (size_t k = 0; k < pr->n_bounds; k++)
            over[k] += atomic_load_explicit(&wp->over[k], memory_order_relaxed);
    }
    if (pr->sample_t && pr->sample_n && issuing_done < pt->n_workers && pr->n_samples < PROBE_SAMPLES &&
        now >= p->run.start_ns) {
        pr->sample_t[pr->n_samples] = (float)((double)(now - p->run.start_ns) / 1e9);
        pr->sample_n[pr->n_samples] = (uint32_t)(outstanding > UINT32_MAX ? UINT32_MAX : outstanding);
        pr->n_samples++;
    }
    if (pr->stopped_early || pr->planned <= 0 || run_interrupted())
        return;
    double planned = (double)pr->planned;
    for (size_t k = 0; k < pr->n_bounds; k++) {
        const sg_slo_check_t *c = &cfg->slo_checks[pr->bound_check[k]];
        /* the nearest-rank percentile of n values fails once more than n - ceil(pct/100 n) are past the bound,
         * and that room only shrinks if fewer than the planned requests end up measured */
        double room = planned - ceil((1 - pr->bound_share[k]) * planned - 1e-9);
        if ((double)over[k] > room) {
            snprintf(pr->why, sizeof pr->why,
                     "stopped early: %s can no longer hold (%llu requests past %g %s, room for %.0f in %lld)", c->text,
                     (unsigned long long)over[k], c->target, sg_metric_unit(c->metric), room, (long long)pr->planned);
            probe_stop(p, pt);
            return;
        }
    }
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        if (c->kind != SG_SLO_ERROR_RATE || c->op > SG_SLO_OP_LE)
            continue;
        double floor_rate = (double)errors / planned; /* the rate can only be higher over fewer requests */
        if (floor_rate > c->target || (c->op == SG_SLO_OP_LT && floor_rate == c->target && errors > 0)) {
            snprintf(pr->why, sizeof pr->why, "stopped early: %s can no longer hold (%llu of %lld requests failed)",
                     c->text, (unsigned long long)errors, (long long)pr->planned);
            probe_stop(p, pt);
            return;
        }
    }
}

/*
 * The overload test of an open-loop probe: the mean number of requests outstanding in each quarter of the sending
 * (its first tenth left out: the ramp from zero). A server that keeps up holds it level, with noise; one that falls
 * behind makes it climb quarter after quarter. Failing: a rise through all four quarters to at least twice the
 * first, plus 4 (so that a level of 1 or 2 in flight cannot trip it).
 */
void probe_end(profile_t *p, point_t *pt)
{
    probe_t *pr = &pt->probe;
    p->run.n_bounds = 0;
    if (pr->n_samples < 20 || pr->stopped_early)
        return;
    double t0 = pr->sample_t[0], t1 = pr->sample_t[pr->n_samples - 1];
    double from = t0 + 0.1 * (t1 - t0), q = (t1 - from) / 4;
    if (q <= 0)
        return;
    double sum[4] = {0}, cnt[4] = {0};
    for (uint32_t i = 0; i < pr->n_samples; i++) {
        double t = pr->sample_t[i];
        if (t < from)
            continue;
        int k = (int)((t - from) / q);
        k = k > 3 ? 3 : k;
        sum[k] += pr->sample_n[i];
        cnt[k]++;
    }
    double m[4];
    for (int k = 0; k < 4; k++) {
        if (cnt[k] == 0)
            return;
        m[k] = sum[k] / cnt[k];
    }
    if (m[0] < m[1] && m[1] < m[2] && m[2] < m[3] && m[3] >= 2 * m[0] + 4) {
        pr->overloaded = true;
        pr->grew_from = m[0];
        pr->grew_to = m[3];
        snprintf(pr->why, sizeof pr->why,
                 "overload: requests outstanding grew from %.1f to %.1f on average (first to last quarter of the "
                 "sending): the server fell behind %g req/s",
                 m[0], m[3], pt->cfg.request_rate);
    }
}

/* ---------- the search ---------- */

typedef struct {
    profile_t *p;
    bool closed;
    sg_point_row_t rows[MAX_PROBES];
    size_t n;
    int code; /* the worst status of a probe that could not give a verdict (interrupt, broken run) */
    bool interrupted;
    double pass_v, fail_v; /* NAN until known */
    char fail_why[512];    /* why the lowest failing value failed */
    int64_t t0;
} search_t;

/* Why a probe failed, in words: its failed SLOs with what they measured, then the probe's own reason. */
static void probe_why(const point_t *pt, int code, sg_point_row_t *row)
{
    const sg_config_t *cfg = &pt->cfg;
    size_t o = 0;
    char *w = row->why;
    size_t cap = sizeof row->why;
    /* a probe stopped early says which SLO stopped it; its other verdicts are of a probe cut short (what it had
     * outstanding is counted as cancelled, in its row's cancelled column, not as failed) */
    if (pt->probe.stopped_early) {
        snprintf(w, cap, "%s", pt->probe.why);
        return;
    }
    for (size_t i = 0; i < cfg->n_slo_checks && o < cap; i++) {
        const sg_slo_verdict_t *v = &pt->verdicts[i];
        if (v->pass)
            continue;
        if (v->measurable)
            o += (size_t)snprintf(w + o, cap - o, "%s%s measured %.4g", o ? "; " : "", cfg->slo_checks[i].text,
                                  v->measured);
        else
            o += (size_t)snprintf(w + o, cap - o, "%s%s not measurable", o ? "; " : "", cfg->slo_checks[i].text);
    }
    if (pt->probe.why[0] && o < cap)
        o += (size_t)snprintf(w + o, cap - o, "%s%s", o ? "; " : "", pt->probe.why);
    if (code == EXIT_REQUEST_ERRORS && o < cap)
        o += (size_t)snprintf(w + o, cap - o, "%s%llu of %llu requests failed (--max-error-rate %g)", o ? "; " : "",
                              (unsigned long long)row->errors, (unsigned long long)(row->ok + row->errors),
                              cfg->max_error_rate);
}

static json_t *search_header(const search_t *s, bool complete)
{
    const sg_config_t *cfg = &s->p->cfg;
    json_t *h = json_object();
    json_t *slos = json_array();
    if (!h || !slos) {
        json_decref(h);
        json_decref(slos);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_slo_checks; i++)
        json_array_append_new(slos, json_string(cfg->slo_checks[i].text));
    json_object_set_new(h, "kind", json_string(s->closed ? "max-concurrency" : "max-request-rate"));
    json_object_set_new(h, "slo", slos);
    json_object_set_new(h, "range_lo", json_real(cfg->search_lo));
    json_object_set_new(h, "range_hi", cfg->search_hi > 0 ? json_real(cfg->search_hi) : json_null());
    json_object_set_new(h, "precision", json_real(cfg->search_precision));
    json_object_set_new(h, "trials", json_integer(cfg->search_trials));
    json_object_set_new(h, "highest_passing", isnan(s->pass_v) ? json_null() : json_real(s->pass_v));
    json_object_set_new(h, "lowest_failing", isnan(s->fail_v) ? json_null() : json_real(s->fail_v));
    json_object_set_new(h, "lowest_failing_why", isnan(s->fail_v) ? json_null() : json_string(s->fail_why));
    json_object_set_new(h, "probes", json_integer((json_int_t)s->n));
    json_object_set_new(h, "complete", json_boolean(complete));
    json_object_set_new(h, "was_interrupted", json_boolean(s->interrupted));
    json_object_set_new(h, "duration_s", json_real((double)(sg_now_ns() - s->t0) / 1e9));
    return h;
}

static void search_save(search_t *s, bool complete)
{
    json_t *h = search_header(s, complete);
    if (points_write(s->p, "search", "search", h, "probes", s->rows, s->n) < 0)
        s->code = points_worse(s->code, EXIT_FATAL);
    json_decref(h);
}

/* Every trial of one value: 1 when all pass, 0 when one fails, -1 when the search cannot go on. */
static int probe_value(search_t *s, double v)
{
    const sg_config_t *cfg = &s->p->cfg;
    for (uint32_t t = 1; t <= cfg->search_trials; t++) {
        if (s->n == MAX_PROBES) {
            fprintf(stderr, "surge: --search: stopping after %d probes\n", MAX_PROBES);
            return -1;
        }
        if (s->n > 0 && cfg->cooldown_s > 0)
            run_cooldown(cfg->cooldown_s);
        if (run_interrupted()) {
            s->interrupted = true;
            return -1;
        }
        sg_point_row_t *row = &s->rows[s->n];
        memset(row, 0, sizeof *row);
        row->closed = s->closed;
        row->value = v;
        row->trial = t;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "probe_%02zu_", s->n + 1);
        points_subdir(row->dir, sizeof row->dir, s->closed, v, prefix);
        if (cfg->search_trials > 1)
            fprintf(stderr, "surge: probe %zu: %s %g, trial %u of %u\n", s->n + 1,
                    s->closed ? "concurrency" : "request rate", v, t, cfg->search_trials);
        else
            fprintf(stderr, "surge: probe %zu: %s %g\n", s->n + 1, s->closed ? "concurrency" : "request rate", v);
        point_spec_t spec = {
            .set_load = true, .closed = s->closed, .value = v, .subdir = row->dir, .quiet = true, .probe = true};
        point_t pt = {0};
        int pc = point_exec(s->p, &spec, &pt);
        if (!pt.merged) {
            point_free(&pt);
            s->code = points_worse(s->code, pc);
            return -1;
        }
        points_row(row, &pt, pc);
        row->stopped_early = pt.probe.stopped_early;
        row->overloaded = pt.probe.overloaded;
        s->n++;
        if (pt.interrupted || pc == EXIT_FATAL) {
            s->interrupted = pt.interrupted;
            s->code = points_worse(s->code, pc);
            row->pass = false;
            snprintf(row->why, sizeof row->why, "%s", pt.interrupted ? "interrupted" : "the run broke");
            point_free(&pt);
            search_save(s, false);
            return -1;
        }
        row->pass = pt.slo_pass && !pt.probe.stopped_early && !pt.probe.overloaded && pc != EXIT_REQUEST_ERRORS;
        if (!row->pass)
            probe_why(&pt, pc, row);
        fprintf(stderr, "surge: probe %zu: %s %g: %s%s%s%s\n", s->n, s->closed ? "concurrency" : "request rate", v,
                row->pass ? "pass" : "FAIL", row->pass ? "" : " (", row->pass ? "" : row->why, row->pass ? "" : ")");
        point_free(&pt);
        search_save(s, false);
        if (!row->pass) {
            snprintf(s->fail_why, sizeof s->fail_why, "%s", row->why);
            return 0;
        }
    }
    return 1;
}

/* The next value to bracket with: twice this one, held to HI, a whole number for concurrency. */
static double bracket_next(const sg_config_t *cfg, bool closed, double v)
{
    double next = v * 2;
    if (cfg->search_hi > 0 && next > cfg->search_hi)
        next = cfg->search_hi;
    return closed ? floor(next) : next;
}

/* Halfway between, or -1 when the interval is as narrow as asked (or, for concurrency, no whole number is left). */
static double bisect_next(const sg_config_t *cfg, bool closed, double pass, double fail)
{
    if (fail - pass <= cfg->search_precision * pass)
        return -1;
    if (!closed)
        return (pass + fail) / 2;
    double mid = floor((pass + fail) / 2);
    return mid > pass && mid < fail ? mid : -1;
}

int search_main(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    search_t *s = calloc(1, sizeof *s);
    if (!s)
        return EXIT_FATAL;
    s->p = p;
    s->closed = cfg->search == SG_SEARCH_MAX_CONCURRENCY;
    s->pass_v = s->fail_v = NAN;
    s->t0 = sg_now_ns();
    const char *what = s->closed ? "concurrency" : "request rate";
    fprintf(stderr, "surge: searching for the highest %s that meets every --slo, from %g%s, within %g%%\n", what,
            cfg->search_lo, cfg->search_hi > 0 ? "" : " up", cfg->search_precision * 100);

    /* bracket: double from LO until a value fails or HI passes */
    double v = s->closed ? floor(cfg->search_lo) : cfg->search_lo;
    int r;
    for (;;) {
        r = probe_value(s, v);
        if (r < 0)
            break;
        if (r == 0) {
            s->fail_v = v;
            break;
        }
        s->pass_v = v;
        if (cfg->search_hi > 0 && v >= cfg->search_hi)
            break;
        double next = bracket_next(cfg, s->closed, v);
        if (next <= v)
            break;
        v = next;
    }
    /* bisect between the highest passing and the lowest failing value */
    while (r >= 0 && !isnan(s->pass_v) && !isnan(s->fail_v)) {
        double mid = bisect_next(cfg, s->closed, s->pass_v, s->fail_v);
        if (mid < 0)
            break;
        r = probe_value(s, mid);
        if (r > 0)
            s->pass_v = mid;
        else if (r == 0)
            s->fail_v = mid;
    }
    bool complete = r >= 0;
    search_save(s, complete);

    char title[96];
    snprintf(title, sizeof title, "surge | Capacity search: highest %s meeting every SLO", what);
    if (s->n)
        sg_points_table(stdout, title, s->rows, s->n, cfg->slo_checks, cfg->n_slo_checks, true);
    double took = (double)(sg_now_ns() - s->t0) / 1e9;
    const char *unit = s->closed ? "" : " req/s";
    int code = s->code;
    if (!complete) {
        fprintf(stderr, "surge: search %s after %zu probes (%.0f s): so far ",
                s->interrupted ? "INTERRUPTED" : "stopped", s->n, took);
        if (!isnan(s->pass_v))
            fprintf(stderr, "%g%s passes", s->pass_v, unit);
        else
            fprintf(stderr, "no value passed");
        if (!isnan(s->fail_v))
            fprintf(stderr, ", %g%s fails", s->fail_v, unit);
        fprintf(stderr, "\n");
        if (s->interrupted)
            code = EXIT_INTERRUPTED;
        else if (code == EXIT_OK)
            code = EXIT_FATAL;
    } else if (isnan(s->pass_v)) {
        printf("Capacity: none found: the lowest value tried, %s %g%s, fails (%s); lower --search-range\n", what,
               s->fail_v, unit, s->fail_why);
        code = points_worse(code, EXIT_SLO_FAILED);
    } else if (isnan(s->fail_v)) {
        printf("Capacity: at least %s %g%s: every value up to --search-range's HI passes; raise HI to go further "
               "(%zu probes, %.0f s)\n",
               what, s->pass_v, unit, s->n, took);
    } else {
        char within[64];
        if (s->closed && s->fail_v - s->pass_v <= 1)
            snprintf(within, sizeof within, "No whole number between");
        else
            snprintf(within, sizeof within, "Interval within %.1f%%", 100 * (s->fail_v - s->pass_v) / s->pass_v);
        printf("Capacity: %s %g%s meets every SLO; %g%s fails (%s). %s, %zu probes, %.0f s\n", what, s->pass_v, unit,
               s->fail_v, unit, s->fail_why, within, s->n, took);
    }
    fflush(stdout);
    fprintf(stderr, "surge: search record in %s/search.json and .csv; each probe's files in its sub-directory\n",
            p->artifact_dir);
    free(s);
    return code;
}
