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
 *  - Beside the interval, a point estimate: per --slo check, an isotonic fit (sg_isotonic.h) of every probed value's
 *    signed margin, and where it crosses zero; the lowest crossing. An estimate, not a confidence statement.
 */
#define _GNU_SOURCE
#include "run_int.h"
#include "sg_isotonic.h"
#include "sg_points.h"
#include "sg_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBES 200

/* ---------- one probe: its bounds, its look at the workers, its overload test ---------- */

/* A check that holds its value above the target (a floor: > or >=), rather than under it. */
static bool slo_floor(const sg_slo_check_t *c)
{
    return c->op == SG_SLO_OP_GT || c->op == SG_SLO_OP_GE;
}

/*
 * The --slo checks the workers count live (sg_run_bound_t): every point counts each percentile check's requests past
 * its target by second of intended start, to measure how clustered they are (point_dispersion); a search probe also
 * stops early on them once its failure is significant (probe_look). probe_begin sets what a probe plans first.
 */
void bounds_begin(profile_t *p, point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    probe_t *pr = &pt->probe;
    sg_run_t *run = &p->run;
    run->n_bounds = 0;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        double share;
        if (!sg_slo_per_request_bound(c, &share))
            continue;
        sg_run_bound_t *b = &run->bounds[run->n_bounds];
        b->metric = c->metric;
        b->bound = sg_metric_is_time(c->metric) ? c->target * 1e6 : c->target;
        b->floor = slo_floor(c);
        b->strict = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_GT;
        pr->bound_check[run->n_bounds] = i;
        pr->dispersion[i] = pt->spec.dispersion && pt->spec.dispersion[i] > 1 ? pt->spec.dispersion[i] : 1;
        pr->bound_room[run->n_bounds] =
            pt->spec.probe && pr->planned > 0
                ? sg_slo_significant_room_clustered(c, (uint64_t)pr->planned, cfg->confidence_level, pr->dispersion[i])
                : UINT64_MAX;
        run->n_bounds++;
    }
    pr->n_bounds = run->n_bounds;
    free(run->blocks);
    run->blocks = NULL;
    if (run->n_bounds)
        run->blocks = calloc((size_t)pt->n_workers * SG_SLO_MAX * SG_PROBE_BLOCKS * 2, sizeof *run->blocks);
}

/* Once the workers have stopped: their counts by second, added into pt->probe.blocks. */
void bounds_end(profile_t *p, point_t *pt)
{
    probe_t *pr = &pt->probe;
    p->run.n_bounds = 0;
    if (!p->run.blocks)
        return;
    if ((pr->blocks = calloc((size_t)SG_SLO_MAX * SG_PROBE_BLOCKS * 2, sizeof *pr->blocks)))
        for (unsigned w = 0; w < pt->n_workers; w++)
            for (size_t k = 0; k < pr->n_bounds; k++) {
                const uint32_t *c = SG_PROBE_BLOCK(p->run.blocks, w, k, 0);
                uint32_t *sum = SG_PROBE_BLOCK(pr->blocks, 0, k, 0);
                for (size_t j = 0; j < (size_t)SG_PROBE_BLOCKS * 2; j++)
                    sum[j] += c[j];
            }
    free(p->run.blocks);
    p->run.blocks = NULL;
}

/* A check's counts by second, summed for sg_slo_dispersion: the requests measured and those past its target, the
 * sum over seconds of past^2 / measured, and the seconds with requests. */
typedef struct {
    uint64_t n, past, seconds;
    double s2;
} seconds_t;

static void seconds_add(seconds_t *t, const probe_t *pr, size_t k)
{
    for (size_t sec = 0; pr->blocks && sec < SG_PROBE_BLOCKS; sec++) {
        const uint32_t *c = SG_PROBE_BLOCK(pr->blocks, 0, k, sec);
        if (c[0] == 0)
            continue;
        t->n += c[0];
        t->past += c[1];
        t->s2 += (double)c[1] * (double)c[1] / (double)c[0];
        t->seconds++;
    }
}

void point_dispersion(const point_t *pt, double *disp)
{
    const probe_t *pr = &pt->probe;
    for (size_t i = 0; i < SG_SLO_MAX; i++)
        disp[i] = 1;
    for (size_t k = 0; k < pr->n_bounds; k++) {
        seconds_t t = {0};
        seconds_add(&t, pr, k);
        /* fewer than 5 past cannot show their clustering: judged as independent (a search lends its other values') */
        if (t.past >= 5)
            disp[pr->bound_check[k]] = sg_slo_dispersion(t.s2, t.past, t.n, t.seconds);
    }
}

void probe_begin(profile_t *p, point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    probe_t *pr = &pt->probe;
    if (cfg->request_count)
        pr->planned = (int64_t)cfg->request_count;
    else if (cfg->request_rate > 0 && !isinf(cfg->request_rate) && cfg->benchmark_duration_s > 0) {
        /* what a duration-bound open loop may issue: the expected count and three standard deviations */
        double e = cfg->request_rate * cfg->benchmark_duration_s;
        pr->planned = (int64_t)ceil(e + 3 * sqrt(e) + 1);
    }
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
    for (size_t k = 0; k < pr->n_bounds; k++) {
        const sg_slo_check_t *c = &cfg->slo_checks[pr->bound_check[k]];
        /* past its room, the check's interval lies beyond the target however the remaining requests end, and with
         * fewer of them measured too (sg_slo_significant_room) */
        if (over[k] > pr->bound_room[k]) {
            /* a long SLO text may cut the tail of the reason; the return value is its full length */
            char clu[48] = "";
            if (pr->dispersion[pr->bound_check[k]] > 1)
                snprintf(clu, sizeof clu, ", clustered x%.1f", pr->dispersion[pr->bound_check[k]]);
            int len =
                snprintf(pr->why, sizeof pr->why,
                         "stopped early: %s fails at %g%% confidence whatever the rest do (%llu of %lld planned "
                         "requests past %g %s; significant past %llu%s)",
                         c->text, 100 * cfg->confidence_level, (unsigned long long)over[k], (long long)pr->planned,
                         c->target, sg_metric_unit(c->metric), (unsigned long long)pr->bound_room[k], clu);
            (void)len;
            probe_stop(p, pt);
            return;
        }
    }
    if (errors == pr->errors_seen)
        return;
    pr->errors_seen = errors;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        if (c->kind != SG_SLO_ERROR_RATE || c->op > SG_SLO_OP_LE || errors <= c->target * (double)pr->planned)
            continue;
        /* the rate's lower bound only rises over fewer requests, so judging it over all planned is safe */
        double lo, hi;
        sg_proportion_interval(errors, (uint64_t)pr->planned, cfg->confidence_level, &lo, &hi);
        if (lo > c->target || (c->op == SG_SLO_OP_LT && lo == c->target)) {
            int len =
                snprintf(pr->why, sizeof pr->why,
                         "stopped early: %s fails at %g%% confidence whatever the rest do (%llu of %lld planned "
                         "requests failed)",
                         c->text, 100 * cfg->confidence_level, (unsigned long long)errors, (long long)pr->planned);
            (void)len;
            probe_stop(p, pt);
            return;
        }
    }
    /* the probe's own test, --max-error-rate: the failures alone are past it over every request the probe can
     * issue (planned is an upper bound), so it fails however the rest end. At the default of 0 that is the first
     * failure: a probe of a dead server ends at once instead of running its full length on refused connects. */
    if ((double)errors > cfg->max_error_rate * (double)pr->planned) {
        snprintf(pr->why, sizeof pr->why,
                 "stopped early: %llu of %lld planned requests failed, past --max-error-rate %g whatever the rest do",
                 (unsigned long long)errors, (long long)pr->planned, cfg->max_error_rate);
        probe_stop(p, pt);
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
    (void)p;
    probe_t *pr = &pt->probe;
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

#define MAX_VALUES 64

/* One load value and the evidence pooled over its probes. */
typedef struct {
    double v;
    sg_metrics_t *pool;   /* every probe of this value merged */
    double pool_duration; /* their durations added (the throughputs are over the time measured, not the gaps) */
    unsigned probes;
    sg_slo_outcome_t outcome;
    bool point_pass; /* inconclusive: what the point estimates say (a provisional pass while bracketing) */
    bool undecided;  /* still inconclusive once its budget of probes was spent: neither end of the answer */
    bool futile;     /* inconclusive, and the rest of the budget would not narrow it enough to decide */
    bool backlog;    /* a probe of it was stopped early or overloaded: its slow requests bunch as a backlog does */
    uint64_t n;      /* requests measured over the pooled probes */
    seconds_t secs[SG_SLO_MAX];    /* per --slo check, its counts by second over the pooled probes */
    double dispersion[SG_SLO_MAX]; /* what its verdicts took: value_dispersion */
    /* per --slo check, then the probe's own test: the signed margin the point estimate fits (value_margins) and its
     * weight, 0 where the value has none */
    double margin[SG_SLO_MAX + 1], weight[SG_SLO_MAX + 1];
    char why[256];
} value_t;

typedef struct {
    profile_t *p;
    bool closed;
    sg_point_row_t rows[MAX_PROBES];
    size_t n;
    value_t vals[MAX_VALUES];
    size_t n_vals;
    int code; /* the worst status of a probe that could not give a verdict (interrupt, broken run) */
    bool interrupted;
    char stopped_why[240]; /* why the search stopped before an answer, other than an interrupt ("" when it did not) */
    value_t *pass, *fail;  /* the highest passing (perhaps provisionally) and the lowest failing value; NULL: none */
    uint64_t need;         /* requests a probe should plan for its percentile verdicts to be able to pass */
    int64_t t0;
    search_exec_fn exec; /* runs one probe: point_exec, or a test's simulated server */
} search_t;

/* Why a probe or a value did not pass, in words: its failed or undecided SLOs with what they measured and on what
 * evidence, then the probe's own reason. */
static void verdicts_why(const sg_config_t *cfg, const sg_slo_verdict_t *vs, const char *extra, char *w, size_t cap)
{
    size_t o = 0;
    w[0] = '\0';
    for (size_t i = 0; i < cfg->n_slo_checks && o < cap; i++) {
        const sg_slo_verdict_t *v = &vs[i];
        if (v->outcome == SG_SLO_PASS)
            continue;
        const char *sep = o ? "; " : "";
        if (!v->measurable) {
            o += (size_t)snprintf(w + o, cap - o, "%s%s not measurable", sep, cfg->slo_checks[i].text);
            continue;
        }
        o += (size_t)snprintf(w + o, cap - o, "%s%s %s: measured %.4g", sep, cfg->slo_checks[i].text,
                              v->outcome == SG_SLO_FAIL ? "fails" : "undecided", v->measured);
        if (v->has_interval && o < cap)
            o += (size_t)snprintf(w + o, cap - o, ", %g%% interval %.4g..%.4g over %llu", 100 * v->level, v->lo, v->hi,
                                  (unsigned long long)v->n);
        if (v->has_interval && v->dispersion > 1 && o < cap)
            o += (size_t)snprintf(w + o, cap - o, " (clustered x%.1f: as %.0f independent)", v->dispersion,
                                  floor((double)v->n / v->dispersion));
    }
    if (extra && extra[0] && o + 2 < cap) {
        if (o) {
            memcpy(w + o, "; ", 3);
            o += 2;
        }
        size_t len = strnlen(extra, cap - o - 1);
        memcpy(w + o, extra, len);
        w[o + len] = '\0';
    }
}

static json_t *value_json(const value_t *v)
{
    return v ? json_real(v->v) : json_null();
}

/*
 * The point estimate of the capacity (docs/capacity.md, "The point estimate"): per check, the isotonic fit of its
 * margins over every value with evidence (value_margins) and where that fit crosses zero; the search's estimate is
 * the lowest crossing. Below the lowest value when a check's fit is past its target there; at least the highest when
 * every check's fit meets its target up to it. Not a confidence statement: the interval is the verdict.
 */
typedef struct {
    sg_iso_kind_t kind;                  /* SG_ISO_NONE: no value with evidence */
    double value;                        /* the crossing, or the highest / lowest value tried */
    size_t by;                           /* the check that sets it (n_slo_checks: the probe's own test) */
    unsigned probes;                     /* the probes fitted */
    size_t values;                       /* the values they were at */
    sg_iso_kind_t kinds[SG_SLO_MAX + 1]; /* per check */
    double at[SG_SLO_MAX + 1];
} estimate_t;

/* How low a check's kind of estimate puts the capacity: below the range, a crossing, at least the highest, none. */
static int iso_rank(sg_iso_kind_t k)
{
    return k == SG_ISO_BELOW ? 0 : k == SG_ISO_CROSSING ? 1 : k == SG_ISO_AT_LEAST ? 2 : 3;
}

static void estimate(const search_t *s, estimate_t *e)
{
    const sg_config_t *cfg = &s->p->cfg;
    memset(e, 0, sizeof *e);
    const value_t *vs[MAX_VALUES];
    size_t m = 0;
    for (size_t i = 0; i < s->n_vals; i++)
        if (s->vals[i].pool && s->vals[i].n > 0) {
            vs[m++] = &s->vals[i];
            e->probes += s->vals[i].probes;
        }
    for (size_t i = 1; i < m; i++) /* few values: insertion sort */
        for (size_t j = i; j > 0 && vs[j]->v < vs[j - 1]->v; j--) {
            const value_t *t = vs[j];
            vs[j] = vs[j - 1];
            vs[j - 1] = t;
        }
    e->values = m;
    for (size_t i = 0; i <= cfg->n_slo_checks; i++) {
        double x[MAX_VALUES], y[MAX_VALUES], w[MAX_VALUES], fit[MAX_VALUES];
        size_t k = 0;
        for (size_t j = 0; j < m; j++)
            if (vs[j]->weight[i] > 0) {
                x[k] = vs[j]->v;
                y[k] = vs[j]->margin[i];
                w[k] = vs[j]->weight[i];
                k++;
            }
        e->kinds[i] =
            k && sg_isotonic_fit(y, w, k, fit) == 0 ? sg_isotonic_crossing(x, fit, k, &e->at[i]) : SG_ISO_NONE;
        /* the lowest: a check below the range first, then the lowest crossing, then at least */
        sg_iso_kind_t ki = e->kinds[i];
        if (ki != SG_ISO_NONE && (iso_rank(ki) < iso_rank(e->kind) || (ki == e->kind && e->at[i] < e->value))) {
            e->kind = ki;
            e->value = e->at[i];
            e->by = i;
        }
    }
}

/* A load with three significant figures, as an estimate deserves (42.9, 128, 3.47), never in exponent form. */
static void estimate_value(double v, char *buf, size_t cap)
{
    double a = fabs(v);
    snprintf(buf, cap, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : 2, v);
}

/* The answer line's addition: "; point estimate 42.9 req/s (isotonic fit over 16 probes, ...)"; "" without one. */
static void estimate_text(const search_t *s, const estimate_t *e, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (e->kind == SG_ISO_NONE)
        return;
    char v[32];
    estimate_value(e->value, v, sizeof v);
    snprintf(buf, cap,
             "; point estimate %s%s%s%s (isotonic fit over %u probe%s; an estimate, not a confidence statement)",
             e->kind == SG_ISO_AT_LEAST ? "at least "
             : e->kind == SG_ISO_BELOW  ? "below "
                                        : "",
             v, s->closed ? "" : " req/s",
             e->kind == SG_ISO_AT_LEAST ? ", the highest value tried"
             : e->kind == SG_ISO_BELOW  ? ", the lowest value tried"
                                        : "",
             e->probes, e->probes == 1 ? "" : "s");
}

static json_t *estimate_json(const search_t *s, const estimate_t *e)
{
    const sg_config_t *cfg = &s->p->cfg;
    if (e->kind == SG_ISO_NONE)
        return json_null();
    json_t *o = json_object(), *checks = json_array();
    if (!o || !checks) {
        json_decref(o);
        json_decref(checks);
        return json_null();
    }
    for (size_t i = 0; i <= cfg->n_slo_checks; i++) {
        json_t *c = json_object();
        if (!c)
            continue;
        json_object_set_new(c, "slo", json_string(i < cfg->n_slo_checks ? cfg->slo_checks[i].text : "probe"));
        json_object_set_new(c, "kind",
                            e->kinds[i] == SG_ISO_NONE ? json_null() : json_string(sg_iso_kind_name(e->kinds[i])));
        json_object_set_new(c, "value", e->kinds[i] == SG_ISO_NONE ? json_null() : json_real(e->at[i]));
        json_array_append_new(checks, c);
    }
    json_object_set_new(o, "value", json_real(e->value));
    json_object_set_new(o, "kind", json_string(sg_iso_kind_name(e->kind)));
    json_object_set_new(o, "method", json_string("isotonic"));
    json_object_set_new(o, "set_by",
                        e->kind == SG_ISO_AT_LEAST
                            ? json_null()
                            : json_string(e->by < cfg->n_slo_checks ? cfg->slo_checks[e->by].text : "probe"));
    json_object_set_new(o, "probes", json_integer((json_int_t)e->probes));
    json_object_set_new(o, "values", json_integer((json_int_t)e->values));
    json_object_set_new(o, "checks", checks);
    return o;
}

static json_t *search_header(const search_t *s, bool complete)
{
    const sg_config_t *cfg = &s->p->cfg;
    json_t *h = json_object();
    json_t *slos = json_array(), *undecided = json_array();
    if (!h || !slos || !undecided) {
        json_decref(h);
        json_decref(slos);
        json_decref(undecided);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_slo_checks; i++)
        json_array_append_new(slos, json_string(cfg->slo_checks[i].text));
    for (size_t i = 0; i < s->n_vals; i++)
        if (s->vals[i].undecided)
            json_array_append_new(undecided, json_real(s->vals[i].v));
    bool lo_sure = s->pass && s->pass->outcome == SG_SLO_PASS, hi_sure = s->fail && s->fail->outcome == SG_SLO_FAIL;
    json_object_set_new(h, "kind", json_string(s->closed ? "max-concurrency" : "max-request-rate"));
    json_object_set_new(h, "slo", slos);
    json_object_set_new(h, "range_lo", json_real(cfg->search_lo));
    json_object_set_new(h, "range_hi", cfg->search_hi > 0 ? json_real(cfg->search_hi) : json_null());
    json_object_set_new(h, "precision", json_real(cfg->search_precision));
    json_object_set_new(h, "trials", json_integer(cfg->search_trials));
    json_object_set_new(h, "max_trials", json_integer(cfg->search_max_trials));
    json_object_set_new(h, "confidence_level", json_real(cfg->confidence_level));
    json_object_set_new(h, "requests_per_probe_for_a_pass", json_integer((json_int_t)s->need));
    /* the answer: capacity lies between the highest value shown to pass and the lowest shown to fail */
    json_object_set_new(h, "capacity_low", lo_sure ? value_json(s->pass) : json_null());
    json_object_set_new(h, "capacity_high", value_json(s->fail));
    json_object_set_new(h, "capacity_high_conclusive", json_boolean(hi_sure));
    json_object_set_new(h, "undecided_values", undecided);
    json_object_set_new(h, "highest_passing", value_json(s->pass));
    json_object_set_new(h, "highest_passing_conclusive", json_boolean(lo_sure));
    json_object_set_new(h, "lowest_failing", value_json(s->fail));
    json_object_set_new(h, "lowest_failing_why", s->fail ? json_string(s->fail->why) : json_null());
    estimate_t est;
    estimate(s, &est);
    json_object_set_new(h, "capacity_estimate", estimate_json(s, &est));
    json_object_set_new(h, "probes", json_integer((json_int_t)s->n));
    json_object_set_new(h, "complete", json_boolean(complete));
    json_object_set_new(h, "was_interrupted", json_boolean(s->interrupted));
    json_object_set_new(h, "stopped_why", s->stopped_why[0] ? json_string(s->stopped_why) : json_null());
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

static value_t *value_at(search_t *s, double v)
{
    for (size_t i = 0; i < s->n_vals; i++)
        if (s->vals[i].v == v)
            return &s->vals[i];
    if (s->n_vals == MAX_VALUES)
        return NULL;
    value_t *x = &s->vals[s->n_vals++];
    memset(x, 0, sizeof *x);
    x->v = v;
    x->outcome = SG_SLO_INCONCLUSIVE;
    return x;
}

/*
 * How long a probe at v lasts: the configured duration, or longer where that would plan fewer requests than a
 * percentile verdict needs to be able to pass (s->need), when `sized`. A count-bound probe, or a closed loop (whose
 * rate is not known ahead), keeps the configured length; an inconclusive one is pooled with more instead.
 */
static double probe_duration(const search_t *s, double v, bool sized, double dispersion)
{
    const sg_config_t *cfg = &s->p->cfg;
    if (!sized || s->closed || cfg->request_count || cfg->benchmark_duration_s <= 0)
        return 0;
    /* clustered requests count for fewer: up to 4 times as long a probe, and pooling for the rest */
    double want = (double)s->need * (dispersion < 4 ? dispersion : 4) / v;
    return want > cfg->benchmark_duration_s ? ceil(want) : 0;
}

/*
 * A percentile check's evidence as the count it is: of the n values pooled, the share on the wrong side of the target
 * (past it for a ceiling, at or under it for a floor), and the share the percentile allows there (1% for a p99
 * ceiling, 10% for a p10 floor): the percentile meets the target when the first is under the second. False for other
 * checks, and without values.
 */
static bool wrong_share(const sg_slo_check_t *c, const sg_metrics_t *pool, uint64_t *n, double *wrong, double *allowed)
{
    const sg_hist_t *h =
        c->kind == SG_SLO_DIST && c->stat == SG_SLO_STAT_PCT && pool ? sg_metrics_hist(pool, c->metric) : NULL;
    if (!h || sg_hist_count(h) == 0)
        return false;
    bool floor = slo_floor(c);
    double raw = c->target / sg_metric_scale(c->metric);
    uint64_t above = sg_hist_count_above(h, raw > 0 ? (uint64_t)raw : 0);
    *n = sg_hist_count(h);
    *wrong = (double)(floor ? *n - above : above) / (double)*n;
    *allowed = floor ? c->pct / 100 : 1 - c->pct / 100;
    return true;
}

/*
 * Whether more probes of an undecided value are unlikely to decide it within --search-max-trials. For each undecided
 * check, project the evidence after the whole budget (the same measurements, grow times as many):
 *  - a percentile is a count: of n values, k are on the wrong side of the target (past it for a ceiling, at or under
 *    it for a floor), and the percentile meets the target when that share is under what it allows (1% for a p99
 *    ceiling). If the Clopper-Pearson interval of the same share over grow * n values would still hold the allowed
 *    share, more probes are unlikely to decide it. (Its order-statistic interval is the same test, but its width in
 *    milliseconds says little about how many values would settle it: a thin tail makes it wide.)
 *  - an average or error_rate: its interval narrows as 1/sqrt(n); if the measured value is closer to the target than
 *    the projected half-width, likewise.
 * Only when every undecided check is so does the value sit where its SLO is borderline, and the search spends its
 * probes elsewhere. A check whose interval is still open on one side needs more requests to close it: never futile.
 */
static bool futile(const sg_config_t *cfg, const value_t *x, const sg_slo_verdict_t *vs)
{
    if (x->probes >= cfg->search_max_trials)
        return true;
    double grow = (double)cfg->search_max_trials / (double)x->probes;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_verdict_t *v = &vs[i];
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        if (v->outcome != SG_SLO_INCONCLUSIVE)
            continue;
        if (!v->has_interval || isinf(v->lo) || isinf(v->hi))
            return false;
        uint64_t n;
        double wrong, allowed;
        if (wrong_share(c, x->pool, &n, &wrong, &allowed)) {
            /* clustered requests count for fewer (value_dispersion) */
            double n2 = ceil((double)n / (v->dispersion > 1 ? v->dispersion : 1) * grow), lo, hi;
            sg_proportion_interval((uint64_t)llround(wrong * n2), (uint64_t)n2, cfg->confidence_level, &lo, &hi);
            if (hi < allowed || lo > allowed)
                return false;
            continue;
        }
        if (fabs(v->measured - c->target) >= (v->hi - v->lo) / 2 / sqrt(grow))
            return false;
    }
    return true;
}

/*
 * What the point estimate fits at x (docs/capacity.md, "The point estimate"): per --slo check a signed margin,
 * negative where the pooled evidence meets the check, and its weight.
 *  - a percentile: the share of values on the wrong side of the target less the share it allows (wrong_share),
 *    weighted by the values as independent ones (n / dispersion): the fit is then that of binomial shares;
 *  - an average, error_rate or throughput: the measured value's distance past the target, relative to it (a floor's
 *    below it), weighted by the requests.
 * Last, the probe's own test: +1 where x failed although its SLO verdicts did not (overload, --max-error-rate, an
 * early stop its pooled evidence does not show), else -1, weighted by the requests: a server that fell behind at a
 * load its SLOs would pass bounds the estimate as it bounds the answer.
 */
static void value_margins(const sg_config_t *cfg, value_t *x, const sg_slo_verdict_t *vs, sg_slo_outcome_t slo)
{
    for (size_t i = 0; i <= SG_SLO_MAX; i++)
        x->weight[i] = 0;
    if (!x->pool || x->n == 0)
        return;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        uint64_t n;
        double wrong, allowed;
        if (wrong_share(c, x->pool, &n, &wrong, &allowed)) {
            x->margin[i] = wrong - allowed;
            x->weight[i] = (double)n / (x->dispersion[i] > 1 ? x->dispersion[i] : 1);
        } else if (vs[i].measurable && isfinite(vs[i].measured)) {
            bool floor = slo_floor(c);
            double d = floor ? c->target - vs[i].measured : vs[i].measured - c->target;
            x->margin[i] = c->target != 0 ? d / fabs(c->target) : d;
            x->weight[i] = (double)x->n;
        }
    }
    x->margin[cfg->n_slo_checks] = x->outcome == SG_SLO_FAIL && slo != SG_SLO_FAIL ? 1 : -1;
    x->weight[cfg->n_slo_checks] = (double)x->n;
}

/*
 * How clustered check i's wrong-side requests are at x (docs/capacity.md, "Clustered evidence"): slow requests come
 * in bursts (a burst of arrivals, a stall of the server), so k of n past the target may be a few episodes, not k
 * independent requests, and a verdict that counted them as independent would be surer than its evidence. The
 * dispersion is Pearson's chi-square of x's counts by second over its degrees of freedom (at least 1). Judged from
 * x's own seconds once it has 5 requests past the target; with fewer, x cannot show its clustering (an unclustered
 * pass has none), so the search's other values near the target lend theirs: those with at least 2 past and a share
 * past at most 3 times what the check allows, pooled as one chi-square, and none stopped early or overloaded. Farther
 * up the episodes are longer (a queue's busy periods grow steeply toward saturation), and a backlog growing through
 * an overloaded probe, or piling up until a probe stops, reads as clustering too: lent to a value below, such values
 * made a pass with none past in 9,000 requests impossible against llama-server, and a p90 (whose 3 times allows 30%
 * past) took x79 from stopped probes to every value under the mock's capacity.
 * Either way a chi-square chance could give independent requests (under its 99th percentile) counts as no clustering.
 */
static double value_dispersion(const search_t *s, const value_t *x, size_t i)
{
    const sg_slo_check_t *c = &s->p->cfg.slo_checks[i];
    const seconds_t *t = &x->secs[i];
    double own = sg_slo_dispersion(t->s2, t->past, t->n, t->seconds), allowed;
    if (t->past >= 5 || !sg_slo_per_request_bound(c, &allowed))
        return own;
    double chi2 = 0, df = 0;
    for (size_t j = 0; j < s->n_vals; j++) {
        const seconds_t *u = &s->vals[j].secs[i];
        if (u->past < 2 || u->past >= u->n || u->seconds < 2 || (double)u->past > 3 * allowed * (double)u->n ||
            s->vals[j].backlog)
            continue;
        double share = (double)u->past / (double)u->n;
        chi2 += (u->s2 - (double)u->past * share) / (share * (1 - share));
        df += (double)(u->seconds - 1);
    }
    double lent = sg_slo_chi2_dispersion(chi2, df);
    return own > lent ? own : lent;
}

/*
 * A probe none of whose requests got an answer because none could connect (refused, unreachable, reset before any
 * response): the server is down, not slow. Failing the value would send the search down through lower values that
 * fail for the same reason, each a probe long, and end on a "capacity" below the range; the search stops instead and
 * says why (exit status 1, as a run whose requests failed). True, with s->stopped_why set, when so.
 */
static bool server_down(search_t *s, const point_t *pt, const sg_point_row_t *row)
{
    if (row->ok != 0 || row->errors == 0 || !pt->merged)
        return false;
    const sg_error_group_t *g;
    size_t n = sg_metrics_error_groups(pt->merged, &g);
    const sg_error_group_t *refused = NULL;
    for (size_t i = 0; i < n; i++) {
        if (g[i].cls != SG_ERRC_CONNECT && g[i].cls != SG_ERRC_CANCELLED)
            return false;
        if (g[i].cls == SG_ERRC_CONNECT && !refused)
            refused = &g[i];
    }
    if (!refused)
        return false;
    snprintf(s->stopped_why, sizeof s->stopped_why,
             "the server is down: every request of the probe failed to connect (%llu; %.80s); the search stops, as "
             "a value failing for that says nothing of capacity",
             (unsigned long long)row->errors, refused->message);
    return true;
}

/*
 * x judged on its pooled verdicts vs (overall outcome o): the outcome, whether every point estimate passes, the reason
 * (with extra, what else decided, appended), futility and the margins. Shared by a probe's own verdict and by a pass
 * judged again later (pass_undone), so the two cannot drift apart.
 */
static void value_judged(const sg_config_t *cfg, value_t *x, const sg_slo_verdict_t *vs, sg_slo_outcome_t o,
                         const char *extra)
{
    x->outcome = o;
    x->point_pass = true;
    for (size_t i = 0; i < cfg->n_slo_checks; i++)
        x->point_pass = x->point_pass && vs[i].point_pass;
    verdicts_why(cfg, vs, extra, x->why, sizeof x->why);
    x->futile = o == SG_SLO_INCONCLUSIVE && futile(cfg, x, vs);
    value_margins(cfg, x, vs, o);
}

/* One probe at x's value, pooled into x: its row, and x's verdict on all of its probes. 0, or -1 when the search
 * cannot go on. */
static int probe_once(search_t *s, value_t *x, bool sized)
{
    profile_t *p = s->p;
    const sg_config_t *cfg = &p->cfg;
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
    const char *what = s->closed ? "concurrency" : "request rate";
    sg_point_row_t *row = &s->rows[s->n];
    memset(row, 0, sizeof *row);
    row->closed = s->closed;
    row->value = x->v;
    row->trial = x->probes + 1;
    row->pooled = x->probes + 1; /* a probe row, whatever becomes of it */
    char prefix[32];
    snprintf(prefix, sizeof prefix, "probe_%02zu_", s->n + 1);
    points_subdir(row->dir, sizeof row->dir, s->closed, x->v, prefix);
    double disp[SG_SLO_MAX] = {0}, most = 1;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        disp[i] = value_dispersion(s, x, i);
        most = disp[i] > most ? disp[i] : most;
    }
    double dur = probe_duration(s, x->v, sized, most);
    char len[96] = "";
    if (dur > 0 && most > 1)
        snprintf(len, sizeof len, ", %.0f s for %.0f requests (clustered x%.1f)", dur, dur * x->v, most);
    else if (dur > 0)
        snprintf(len, sizeof len, ", %.0f s for %llu requests", dur, (unsigned long long)s->need);
    if (x->probes)
        fprintf(stderr, "surge: probe %zu: %s %g, pooled with its %u earlier probe%s%s\n", s->n + 1, what, x->v,
                x->probes, x->probes > 1 ? "s" : "", len);
    else
        fprintf(stderr, "surge: probe %zu: %s %g%s\n", s->n + 1, what, x->v, len);
    point_spec_t spec = {.set_load = true,
                         .closed = s->closed,
                         .value = x->v,
                         .subdir = row->dir,
                         .quiet = true,
                         .probe = true,
                         .duration_s = dur,
                         .reseed = x->probes,
                         .dispersion = disp};
    point_t pt = {0};
    int pc = s->exec(p, &spec, &pt);
    if (!pt.merged) {
        point_free(&pt);
        s->code = points_worse(s->code, pc);
        return -1;
    }
    points_row(row, &pt, pc);
    row->stopped_early = pt.probe.stopped_early;
    row->overloaded = pt.probe.overloaded;
    s->n++;
    if (!pt.interrupted && server_down(s, &pt, row)) { /* an interrupt says so first (exit 130) */
        s->code = points_worse(s->code, EXIT_REQUEST_ERRORS);
        row->verdict = SG_SLO_FAIL;
        snprintf(row->why, sizeof row->why, "%s", s->stopped_why);
        fprintf(stderr, "surge: probe %zu: %s %g: %s\n", s->n, what, x->v, s->stopped_why);
        point_free(&pt);
        search_save(s, false);
        return -1;
    }
    if (pt.interrupted || pc == EXIT_FATAL) {
        s->interrupted = pt.interrupted;
        s->code = points_worse(s->code, pc);
        row->verdict = SG_SLO_INCONCLUSIVE;
        snprintf(row->why, sizeof row->why, "%s", pt.interrupted ? "interrupted" : "the run broke");
        point_free(&pt);
        search_save(s, false);
        return -1;
    }
    /* pool: the value's verdicts rest on every probe it had */
    if (!x->pool && !(x->pool = sg_metrics_new(cfg->slos, cfg->n_slos))) {
        point_free(&pt);
        s->code = points_worse(s->code, EXIT_FATAL);
        return -1;
    }
    if (sg_metrics_merge(x->pool, pt.merged) != 0) {
        point_free(&pt);
        s->code = points_worse(s->code, EXIT_FATAL);
        return -1;
    }
    x->probes++;
    x->pool_duration += pt.duration_s;
    x->n = sg_metrics_ok(x->pool) + sg_metrics_errors(x->pool);
    for (size_t k = 0; k < pt.probe.n_bounds; k++)
        seconds_add(&x->secs[pt.probe.bound_check[k]], &pt.probe, k);
    for (size_t i = 0; i < cfg->n_slo_checks; i++)
        x->dispersion[i] = value_dispersion(s, x, i);
    sg_slo_eval_clustered(cfg->slo_checks, cfg->n_slo_checks, x->pool, x->pool_duration, cfg->confidence_level,
                          x->dispersion, row->verdicts);
    row->slo_outcome = sg_slo_overall(row->verdicts, cfg->n_slo_checks);
    row->slo_pass = row->slo_outcome == SG_SLO_PASS;
    row->pooled = x->probes;
    /* what decides beyond the SLO intervals: a probe stopped once its failure was significant, an overloaded server,
     * failures past --max-error-rate */
    const char *extra = pt.probe.why[0] ? pt.probe.why : NULL;
    char errs[128];
    if (pc == EXIT_REQUEST_ERRORS) {
        snprintf(errs, sizeof errs, "%llu of %llu requests failed (--max-error-rate %g)",
                 (unsigned long long)row->errors, (unsigned long long)(row->ok + row->errors), cfg->max_error_rate);
        extra = errs;
    }
    /* an early stop stands: it was judged with the clustering known before the probe. Its own seconds cannot
     * overrule it, since a stop comes when slow requests pile up, and a backlog growing through an overloaded probe
     * piles them up at its end too */
    bool stopped = pt.probe.stopped_early;
    x->backlog = x->backlog || stopped || pt.probe.overloaded;
    if (stopped || pt.probe.overloaded || pc == EXIT_REQUEST_ERRORS) {
        x->outcome = SG_SLO_FAIL;
        x->futile = false;
        if (stopped)
            snprintf(x->why, sizeof x->why, "%s", pt.probe.why);
        else
            verdicts_why(cfg, row->verdicts, extra, x->why, sizeof x->why);
        value_margins(cfg, x, row->verdicts, row->slo_outcome);
    } else {
        value_judged(cfg, x, row->verdicts, row->slo_outcome, extra);
    }
    row->verdict = x->outcome;
    row->pass = x->outcome == SG_SLO_PASS;
    snprintf(row->why, sizeof row->why, "%s", x->outcome == SG_SLO_PASS ? "" : x->why);
    fprintf(stderr, "surge: probe %zu: %s %g: %s%s%s%s%s\n", s->n, what, x->v,
            x->outcome == SG_SLO_PASS   ? "pass"
            : x->outcome == SG_SLO_FAIL ? "FAIL"
                                        : "inconclusive",
            x->outcome == SG_SLO_INCONCLUSIVE
                ? (x->point_pass ? " (passes on its point estimate)" : " (fails on its point estimate)")
                : "",
            row->why[0] ? " (" : "", row->why, row->why[0] ? ")" : "");
    point_free(&pt);
    search_save(s, false);
    return 0;
}

/*
 * Probe x until its verdict is conclusive: at least --search-trials probes, then more, pooled, while it is
 * inconclusive, up to --search-max-trials. While bracketing (!sized), an inconclusive value is left open after its
 * --search-trials probes, short as they are: one that passes on its point estimate is taken provisionally (a higher
 * one will be shown to pass, or the search confirms it at the end), one that fails on it is settled with sized probes
 * once the search narrows (next_value). Spending the budget on short probes would leave it undecided on thin
 * evidence. 0, or -1 when the search cannot go on.
 */
static int settle(search_t *s, value_t *x, bool sized)
{
    const sg_config_t *cfg = &s->p->cfg;
    while (x->probes < cfg->search_max_trials) {
        if (x->probes >= cfg->search_trials && (x->outcome != SG_SLO_INCONCLUSIVE || !sized || x->futile))
            break;
        if (probe_once(s, x, sized) < 0)
            return -1;
    }
    /* spent, or futile: still inconclusive after sized probes is undecided */
    x->undecided = x->outcome == SG_SLO_INCONCLUSIVE && (sized || x->probes >= cfg->search_max_trials);
    if (x->undecided && x->probes < cfg->search_max_trials)
        fprintf(stderr,
                "surge: %s %g stays undecided after %u probes: its SLO is borderline there (what it measured is "
                "closer to the target than the rest of --search-max-trials could resolve)\n",
                s->closed ? "concurrency" : "request rate", x->v, x->probes);
    return 0;
}

/* A value the search can build on: shown to pass, or passing on its point estimate (provisional). */
static bool passes(const value_t *x)
{
    return x->outcome == SG_SLO_PASS || (x->outcome == SG_SLO_INCONCLUSIVE && x->point_pass && !x->undecided);
}

/* Where x stands now: raise s->pass or lower s->fail. An inconclusive value that fails on its point estimate bounds
 * the search from above only when nothing conclusive does (while bracketing). */
static void place(search_t *s, value_t *x)
{
    if (passes(x)) {
        if (!s->pass || x->v > s->pass->v || (x->v == s->pass->v))
            s->pass = x;
        if (s->fail && s->fail->outcome != SG_SLO_FAIL && s->fail->v <= x->v)
            s->fail = NULL; /* an undecided value below a passing one bounds nothing */
    } else if (x->outcome == SG_SLO_FAIL) {
        if (!s->fail || x->v < s->fail->v || s->fail->outcome != SG_SLO_FAIL)
            s->fail = x;
    } else if (!s->fail) {
        s->fail = x;
    }
}

/*
 * The next value to probe between the highest passing and the lowest failing one: the middle of the widest gap
 * between the values tried there, once that gap is wider than --search-precision of the passing value; concurrency
 * in whole numbers. The values tried between the two ends were left undecided, and they split the interval. A gap
 * between two of them is still probed: an undecided value may be one whose evidence was unlucky rather than one
 * at the SLO's edge, and a value between can be decided (test_search_sim: skipping such gaps saved a quarter of the
 * probing at the softest knee, and widened its answer from 38.75-48.75 to 16.9-55.6). -1: nothing left to narrow.
 */
static double next_value(const search_t *s)
{
    const sg_config_t *cfg = &s->p->cfg;
    if (s->fail && !s->pass) {
        /* nothing passes yet: settle the lowest value bracketing left open below the failing end (its short probes
         * failed on their point estimate only) before calling the search's answer none */
        const value_t *low = NULL;
        for (size_t i = 0; i < s->n_vals; i++) {
            const value_t *x = &s->vals[i];
            if (x->v < s->fail->v && x->outcome == SG_SLO_INCONCLUSIVE && !x->undecided && (!low || x->v < low->v))
                low = x;
        }
        return low ? low->v : -1;
    }
    if (!s->pass || !s->fail || s->fail->v <= s->pass->v)
        return -1;
    double lo = s->pass->v, hi = s->fail->v;
    /* a value bracketing left open (inconclusive on short probes) is settled first, the failing end too */
    if (s->fail->outcome == SG_SLO_INCONCLUSIVE && !s->fail->undecided)
        return hi;
    for (size_t i = 0; i < s->n_vals; i++) {
        const value_t *x = &s->vals[i];
        if (x->v > lo && x->v < hi && x->outcome == SG_SLO_INCONCLUSIVE && !x->undecided)
            return x->v;
    }
    double edges[MAX_VALUES + 2];
    size_t ne = 0;
    edges[ne++] = lo;
    for (size_t i = 0; i < s->n_vals; i++)
        if (s->vals[i].v > lo && s->vals[i].v < hi)
            edges[ne++] = s->vals[i].v;
    edges[ne++] = hi;
    for (size_t i = 1; i < ne; i++) /* few values: insertion sort */
        for (size_t j = i; j > 0 && edges[j] < edges[j - 1]; j--) {
            double t = edges[j];
            edges[j] = edges[j - 1];
            edges[j - 1] = t;
        }
    double best = -1, width = cfg->search_precision * lo;
    for (size_t i = 1; i < ne; i++) {
        double a = edges[i - 1], b = edges[i];
        if (b - a <= width)
            continue;
        double mid = s->closed ? floor((a + b) / 2) : (a + b) / 2;
        if (mid <= a || mid >= b)
            continue;
        width = b - a;
        best = mid;
    }
    return best;
}

/* The next value to bracket with: twice this one, held to HI, a whole number for concurrency. */
static double bracket_next(const sg_config_t *cfg, bool closed, double v)
{
    double next = v * 2;
    if (cfg->search_hi > 0 && next > cfg->search_hi)
        next = cfg->search_hi;
    return closed ? floor(next) : next;
}

/* The highest value below x that passes (perhaps provisionally), or NULL. */
static value_t *pass_below(search_t *s, double v)
{
    value_t *best = NULL;
    for (size_t i = 0; i < s->n_vals; i++)
        if (s->vals[i].v < v && passes(&s->vals[i]) && (!best || s->vals[i].v > best->v))
            best = &s->vals[i];
    return best;
}

/*
 * Whether x's pass still stands on what the search knows now (docs/capacity.md, "Clustered evidence"). A pass with no
 * slow request cannot show its own clustering; it borrows what its neighbours showed by the time it was judged, and a
 * pass from early in the search, while bracketing, was judged before any value near the target had shown any: its
 * requests counted as independent ones. Judged again with the clustering seen since, it may rest on too few (377
 * requests passed a p99 at 40 req/s against llama-server, where 42.5 later showed its slow requests clustered x13.7,
 * as 27 independent). Then x is undecided again, with its new reason, for the search to confirm with sized probes.
 * False when it still passes.
 */
static bool pass_undone(search_t *s, value_t *x)
{
    const sg_config_t *cfg = &s->p->cfg;
    if (x->outcome != SG_SLO_PASS || !x->pool)
        return false;
    double disp[SG_SLO_MAX], was = 1, now = 1;
    bool more = false;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        disp[i] = value_dispersion(s, x, i);
        if (disp[i] > x->dispersion[i] * 1.01) {
            more = true;
            was = x->dispersion[i] > was ? x->dispersion[i] : was;
            now = disp[i] > now ? disp[i] : now;
        }
    }
    if (!more)
        return false;
    sg_slo_verdict_t vs[SG_SLO_MAX];
    sg_slo_eval_clustered(cfg->slo_checks, cfg->n_slo_checks, x->pool, x->pool_duration, cfg->confidence_level, disp,
                          vs);
    sg_slo_outcome_t o = sg_slo_overall(vs, cfg->n_slo_checks);
    if (o == SG_SLO_PASS)
        return false;
    memcpy(x->dispersion, disp, sizeof disp);
    value_judged(cfg, x, vs, o, NULL);
    fprintf(stderr,
            "surge: %s %g: its pass rested on %llu requests taken as %s; requests past the target near it have "
            "since come clustered x%.1f: %s\n",
            s->closed ? "concurrency" : "request rate", x->v, (unsigned long long)x->n,
            was > 1 ? "clustered less" : "independent", now,
            o == SG_SLO_FAIL ? "it fails after all" : "confirming it with more");
    return true;
}

/*
 * Bisect, then confirm the passing end. A provisional pass that fails after all sends the search back below it (the
 * evidence was not monotonic); one still undecided after its budget is left as such, and the next passing value
 * below is confirmed instead. -1 when the search cannot go on.
 */
static int narrow(search_t *s)
{
    for (;;) {
        double mid;
        while ((mid = next_value(s)) >= 0) {
            value_t *x = value_at(s, mid);
            if (!x || settle(s, x, true) < 0)
                return -1;
            place(s, x);
        }
        if (!s->pass)
            return 0;
        /* the passing end rests on a point estimate, or on requests taken as less clustered than its neighbours have
         * shown since: pool more probes there, sized for a verdict */
        value_t *x = s->pass;
        const char *what = s->closed ? "concurrency" : "request rate";
        if (x->outcome == SG_SLO_PASS) {
            if (!pass_undone(s, x))
                return 0;
        } else {
            fprintf(stderr, "surge: confirming %s %g: it passed on its point estimate only\n", what, x->v);
        }
        if (x->outcome != SG_SLO_FAIL && settle(s, x, true) < 0)
            return -1;
        if (x->outcome == SG_SLO_PASS)
            return 0;
        if (x->outcome == SG_SLO_FAIL) {
            fprintf(stderr, "surge: %s %g fails after all: searching below it\n", what, x->v);
            if (!s->fail || s->fail->outcome != SG_SLO_FAIL || x->v < s->fail->v)
                s->fail = x;
        } else {
            fprintf(stderr, "surge: %s %g is still undecided after %u probes%s: confirming below it\n", what, x->v,
                    x->probes,
                    x->futile && x->probes < s->p->cfg.search_max_trials ? " (more would not decide it)" : "");
            if (!s->fail)
                s->fail = x;
        }
        s->pass = pass_below(s, x->v);
        if (!s->pass)
            return 0;
    }
}

static void answer(const search_t *s, bool complete, double took)
{
    const sg_config_t *cfg = &s->p->cfg;
    const char *what = s->closed ? "concurrency" : "request rate", *unit = s->closed ? "" : " req/s";
    double pct = 100 * cfg->confidence_level;
    /* the point estimate follows the answer, after its own semicolon (what comes before it is unchanged) */
    estimate_t e;
    char est[256];
    estimate(s, &e);
    estimate_text(s, &e, est, sizeof est);
    if (!complete) {
        fprintf(stderr, "surge: search %s after %zu probes (%.0f s)%s%s: so far ",
                s->interrupted ? "INTERRUPTED" : "stopped", s->n, took, s->stopped_why[0] ? ": " : "", s->stopped_why);
        if (s->pass)
            fprintf(stderr, "%g%s passes%s", s->pass->v, unit,
                    s->pass->outcome == SG_SLO_PASS ? "" : " (provisionally)");
        else
            fprintf(stderr, "no value passed");
        if (s->fail)
            fprintf(stderr, ", %g%s %s", s->fail->v, unit, s->fail->outcome == SG_SLO_FAIL ? "fails" : "is undecided");
        /* no estimate from a search that found the server down: the failures before it may be the outage's */
        fprintf(stderr, "%s\n", s->stopped_why[0] ? "" : est);
        return;
    }
    /* after narrow(), the passing end is either shown to pass or absent */
    bool hi_sure = s->fail && s->fail->outcome == SG_SLO_FAIL;
    size_t undecided = 0;
    char list[160] = "";
    for (size_t i = 0; i < s->n_vals; i++) {
        const value_t *x = &s->vals[i];
        if (!x->undecided || (s->pass && x->v < s->pass->v) || (s->fail && hi_sure && x->v > s->fail->v))
            continue;
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s%g", undecided++ ? ", " : "", x->v);
    }
    if (!s->pass && !undecided) {
        printf("Capacity: none found: the lowest value tried, %s %g%s, fails (%s); lower --search-range%s\n", what,
               s->fail->v, unit, s->fail->why, est);
        return;
    }
    if (!s->pass) {
        printf("Capacity: not shown at %g%% confidence: %s %s%s stayed undecided after up to %u probes each%s%s%s; "
               "longer probes (--benchmark-duration, --request-count) or --search-max-trials decide it (%zu probes, "
               "%.0f s)%s\n",
               pct, what, list, unit, cfg->search_max_trials, hi_sure ? ", " : "", hi_sure ? "and fails at " : "",
               hi_sure ? s->fail->why : "", s->n, took, est);
        return;
    }
    if (!s->fail) {
        printf("Capacity: at least %s %g%s at %g%% confidence (%llu requests over %u probe%s): every value up to "
               "--search-range's HI passes; raise HI to go further (%zu probes, %.0f s)%s\n",
               what, s->pass->v, unit, pct, (unsigned long long)s->pass->n, s->pass->probes,
               s->pass->probes > 1 ? "s" : "", s->n, took, est);
        return;
    }
    if (!hi_sure) {
        /* an upper end that was not shown to fail bounds nothing at the level: say what is known */
        printf("Capacity: at least %s %g%s at %g%% confidence (%llu requests over %u probe%s); no value was shown to "
               "fail: %s%s stayed undecided after up to %u probes each, where the SLO is borderline; longer probes "
               "(--benchmark-duration, --request-count) or --search-max-trials decide it (%zu probes, %.0f s)%s\n",
               what, s->pass->v, unit, pct, (unsigned long long)s->pass->n, s->pass->probes,
               s->pass->probes > 1 ? "s" : "", undecided ? list : "", unit, cfg->search_max_trials, s->n, took, est);
        return;
    }
    printf("Capacity: %s %g-%g%s at %g%% confidence: %g passes every SLO (%llu requests over %u probe%s); %g fails "
           "(%s). ",
           what, s->pass->v, s->fail->v, unit, pct, s->pass->v, (unsigned long long)s->pass->n, s->pass->probes,
           s->pass->probes > 1 ? "s" : "", s->fail->v, s->fail->why);
    if (undecided)
        printf("Undecided between them after up to %u probes each: %s%s, where the SLO is borderline. ",
               cfg->search_max_trials, list, unit);
    if (s->closed && s->fail->v - s->pass->v <= 1)
        printf("No whole number between");
    else
        printf("Interval within %.1f%%", 100 * (s->fail->v - s->pass->v) / s->pass->v);
    /* wider than asked only where undecided values split it (next_value probes every wider gap otherwise) */
    if (undecided && s->fail->v - s->pass->v > cfg->search_precision * s->pass->v * (1 + 1e-9))
        printf(" (wider than --search-precision %g%%: the undecided values split it)", 100 * cfg->search_precision);
    printf(", %zu probes, %.0f s%s\n", s->n, took, est);
}

int search_main(profile_t *p)
{
    return search_with(p, point_exec);
}

int search_with(profile_t *p, search_exec_fn exec)
{
    const sg_config_t *cfg = &p->cfg;
    search_t *s = calloc(1, sizeof *s);
    if (!s)
        return EXIT_FATAL;
    s->p = p;
    s->exec = exec;
    s->closed = cfg->search == SG_SEARCH_MAX_CONCURRENCY;
    s->t0 = sg_now_ns();
    const char *what = s->closed ? "concurrency" : "request rate";
    /* a percentile verdict can pass only over enough requests; a probe plans half as many again, so that a tail
     * short of the bound passes without being right at the edge */
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        uint64_t need = sg_slo_min_n(&cfg->slo_checks[i], cfg->confidence_level);
        if (need && need + need / 2 > s->need)
            s->need = need + need / 2;
    }
    /* what each probe is: its arrivals and its length, which the answer depends on (docs/capacity.md) */
    char probe[160], length[64];
    if (cfg->benchmark_duration_s > 0)
        snprintf(length, sizeof length, "%g s", cfg->benchmark_duration_s);
    else
        snprintf(length, sizeof length, "%llu requests", (unsigned long long)cfg->request_count);
    if (s->closed)
        snprintf(probe, sizeof probe, "closed loop, each probe %s", length);
    else
        snprintf(probe, sizeof probe, "%s arrivals, each probe %s",
                 cfg->distribution == SG_DIST_CONSTANT ? "constant (evenly spaced)"
                 : cfg->distribution == SG_DIST_GAMMA  ? "gamma"
                                                       : "Poisson",
                 length);
    fprintf(stderr,
            "surge: searching for the highest %s that meets every --slo at %g%% confidence, from %g%s, within %g%% "
            "(%s)\n",
            what, 100 * cfg->confidence_level, cfg->search_lo, cfg->search_hi > 0 ? "" : " up",
            cfg->search_precision * 100, probe);
    if (s->need && !s->closed && !cfg->request_count)
        fprintf(stderr,
                "surge: once the search narrows, a probe lasts as long as it takes to send %llu requests if that is "
                "longer (%llu are the fewest with which the --slo checks can pass); an undecided value gets up to "
                "%u probes, pooled\n",
                (unsigned long long)s->need, (unsigned long long)(s->need * 2 / 3), cfg->search_max_trials);
    else if (s->need > cfg->request_count && cfg->request_count)
        fprintf(stderr,
                "surge: probes of --request-count %llu cannot pass every --slo at %g%% confidence (that takes %llu): "
                "undecided values are pooled, up to %u probes\n",
                (unsigned long long)cfg->request_count, 100 * cfg->confidence_level,
                (unsigned long long)(s->need * 2 / 3), cfg->search_max_trials);

    /* bracket: double from LO until a value fails or HI passes */
    double v = s->closed ? floor(cfg->search_lo) : cfg->search_lo;
    int r = 0;
    for (;;) {
        value_t *x = value_at(s, v);
        if (!x || (r = settle(s, x, false)) < 0)
            break;
        place(s, x);
        /* an undecided value does not bound the search: only a value shown to fail does, so the answer's upper end
         * is one (a value above it may still fail) */
        if (x->outcome == SG_SLO_FAIL)
            break;
        if (cfg->search_hi > 0 && v >= cfg->search_hi)
            break;
        double next = bracket_next(cfg, s->closed, v);
        if (next <= v)
            break;
        v = next;
    }
    /* bisect between the highest passing and the lowest failing value, then confirm the passing end; with no value
     * failing (HI passed), confirm HI */
    if (r >= 0)
        r = narrow(s);
    bool complete = r >= 0;
    search_save(s, complete);

    char title[96];
    snprintf(title, sizeof title, "surge | Capacity search: highest %s meeting every SLO", what);
    if (s->n)
        sg_points_table(stdout, title, s->rows, s->n, cfg->slo_checks, cfg->n_slo_checks, true);
    double took = (double)(sg_now_ns() - s->t0) / 1e9;
    answer(s, complete, took);
    int code = s->code;
    if (!complete) {
        if (s->interrupted)
            code = EXIT_INTERRUPTED;
        else if (code == EXIT_OK)
            code = EXIT_FATAL;
    } else if (s->pass && s->fail && s->fail->outcome != SG_SLO_FAIL) {
        code = points_worse(code, EXIT_SLO_INCONCLUSIVE); /* a lower bound only: no value was shown to fail */
    } else if (!s->pass) {
        /* nothing was shown to pass: every value failed, or some stayed undecided */
        bool any_undecided = false;
        for (size_t i = 0; i < s->n_vals; i++)
            any_undecided = any_undecided || s->vals[i].undecided;
        code = points_worse(code, any_undecided ? EXIT_SLO_INCONCLUSIVE : EXIT_SLO_FAILED);
    }
    fflush(stdout);
    fprintf(stderr, "surge: search record in %s/search.json and .csv; each probe's files in its sub-directory\n",
            p->artifact_dir);
    for (size_t i = 0; i < s->n_vals; i++)
        sg_metrics_free(s->vals[i].pool);
    free(s);
    return code;
}
