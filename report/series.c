/*
 * The charts' data, computed once in C so the page stays responsive with a million requests:
 *  - CDFs from every value, sorted: percentiles are exact (nearest rank); the curve keeps an even grid of ranks
 *    plus the whole top of the tail, so the part people read (p90 and up) is drawn from every point there.
 *  - The timeline's per-request points are downsampled by time bin (each bin's worst request always kept, so a
 *    spike survives); its rates, requests in flight and schedule lag are exact per bin.
 *  - Histograms of ISL and OSL; errors by class per bin; the server's known metrics as scraped.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CDF_GRID 1000       /* evenly spaced ranks */
#define CDF_TAIL 400        /* and every one of the top ranks */
#define TIMELINE_ALL 20000  /* up to this many requests, every one is drawn */
#define TIMELINE_BINS 4000  /* above it, per bin: the worst TTFT, the worst latency and one more */
#define RATE_BINS 100       /* at most about this many bins for rates, in flight and errors */
#define RATE_MIN_PER_BIN 20 /* and wide enough for this many completions in a bin, on average */
#define HIST_BINS 50

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Nearest rank, as surge's summary counts it: the value at rank ceil(q * n). */
static size_t rank_of(double q, size_t n)
{
    double r = ceil(q * (double)n);
    size_t k = r < 1 ? 1 : (size_t)r;
    return (k > n ? n : k) - 1;
}

/* {"x": [ms...], "q": [fraction at or below...], "n": count, "p50"...: exact} from one field of the ok requests. */
static json_t *cdf(const rp_run_t *run, size_t offset)
{
    float *v = malloc((run->n ? run->n : 1) * sizeof *v);
    if (!v)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < run->n; i++) {
        float x = *(const float *)((const char *)&run->req[i] + offset);
        if (!isnan(x))
            v[n++] = x;
    }
    qsort(v, n, sizeof *v, cmp_float);
    json_t *o = json_object(), *xs = json_array(), *qs = json_array();
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    size_t last = (size_t)-1;
    for (size_t g = 0; n > 0 && g <= CDF_GRID + CDF_TAIL; g++) {
        size_t k;
        if (g < CDF_GRID)
            k = g * n / CDF_GRID;
        else
            k = n > CDF_TAIL ? n - CDF_TAIL + (g - CDF_GRID) : g - CDF_GRID;
        if (k >= n || (last != (size_t)-1 && k <= last))
            continue;
        last = k;
        json_array_append_new(xs, json_real(v[k]));
        json_array_append_new(qs, json_real((double)(k + 1) / (double)n));
    }
    json_object_set_new(o, "x", xs);
    json_object_set_new(o, "q", qs);
    static const struct {
        const char *name;
        double q;
    } pct[] = {{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p99_9", 0.999}};
    for (size_t i = 0; i < SG_ARRAY_LEN(pct); i++)
        json_object_set_new(o, pct[i].name, n ? json_real(v[rank_of(pct[i].q, n)]) : json_null());
    free(v);
    return o;
}

static double run_span(const rp_run_t *run)
{
    double hi = 0;
    for (size_t i = 0; i < run->n; i++) {
        if (run->req[i].end_s > hi)
            hi = run->req[i].end_s;
        if (run->req[i].intended_s > hi)
            hi = run->req[i].intended_s;
    }
    return hi;
}

/* A bin width of 1, 2 or 5 times a power of ten: at most about RATE_BINS bins over span seconds, and about
 * RATE_MIN_PER_BIN of the n requests in each (a rate from a handful of requests is noise). */
static double nice_width(double span, size_t n)
{
    double raw = span / RATE_BINS;
    if (n > 0 && span * RATE_MIN_PER_BIN / (double)n > raw) /* but never fewer than about 10 bins */
        raw = fmin(span * RATE_MIN_PER_BIN / (double)n, span / 10);
    if (!(raw > 0.001))
        return 0.001;
    double p = pow(10, floor(log10(raw)));
    double w = raw / p <= 1 ? p : raw / p <= 2 ? 2 * p : raw / p <= 5 ? 5 * p : 10 * p;
    return w;
}

static json_t *array_of(const double *v, size_t n, double scale)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, jnum(v[i] * scale));
    return a;
}

/* Adds the time the interval [a, b) spends in each bin of width w (exact: partial bins at both ends). */
static void add_overlap(double *acc, size_t nb, double w, double a, double b)
{
    if (a < 0)
        a = 0;
    if (!(b > a))
        return;
    size_t i = (size_t)(a / w), j = (size_t)(b / w);
    if (i >= nb)
        return;
    if (j >= nb) {
        j = nb - 1;
        b = (double)nb * w;
    }
    if (i == j) {
        acc[i] += b - a;
        return;
    }
    acc[i] += (double)(i + 1) * w - a;
    for (size_t k = i + 1; k < j; k++)
        acc[k] += w;
    acc[j] += b - (double)j * w;
}

static size_t bin_of(double t, double w, size_t nb)
{
    if (!(t >= 0))
        return 0;
    size_t b = (size_t)(t / w);
    return b < nb ? b : nb - 1;
}

/* Per bin: ok requests and their output tokens (by end), mean in flight and outstanding, the
 * schedule lag's max and mean (by intended time), failures per class (by end). */
static json_t *bins(const rp_run_t *run)
{
    double span = run_span(run), w = nice_width(span, run->n);
    size_t nb = (size_t)ceil(span / w);
    if (nb == 0)
        nb = 1;
    double *m = calloc(nb * 7, sizeof *m);
    double *errs = calloc(nb * (run->n_err_class ? run->n_err_class : 1), sizeof *errs);
    if (!m || !errs) {
        free(m);
        free(errs);
        return NULL;
    }
    double *done = m, *tok = m + nb, *inflight = m + 2 * nb, *outstanding = m + 3 * nb, *lag_max = m + 4 * nb,
           *lag_sum = m + 5 * nb, *lag_n = m + 6 * nb;
    for (size_t i = 0; i < run->n; i++) {
        const rp_req_t *q = &run->req[i];
        size_t be = bin_of(q->end_s, w, nb);
        bool ok = q->err == 0 && !q->cancelled;
        done[be] += ok; /* request throughput counts ok requests, as the summary's request_throughput */
        if (ok && q->osl > 0)
            tok[be] += q->osl;
        if (q->err)
            errs[(q->err - 1) * nb + be] += 1;
        if (!isnan(q->sent_s))
            add_overlap(inflight, nb, w, q->sent_s, q->end_s);
        add_overlap(outstanding, nb, w, q->intended_s, q->end_s);
        if (!isnan(q->lag)) {
            size_t bi = bin_of(q->intended_s, w, nb);
            lag_max[bi] = q->lag > lag_max[bi] ? q->lag : lag_max[bi];
            lag_sum[bi] += q->lag;
            lag_n[bi] += 1;
        }
    }
    for (size_t b = 0; b < nb; b++)
        lag_sum[b] = lag_n[b] > 0 ? lag_sum[b] / lag_n[b] : NAN;
    for (size_t b = 0; b < nb; b++)
        if (lag_n[b] == 0)
            lag_max[b] = NAN;
    json_t *o = json_object();
    json_object_set_new(o, "width_s", json_real(w));
    json_object_set_new(o, "request_rate", array_of(done, nb, 1 / w));
    json_object_set_new(o, "output_token_rate", array_of(tok, nb, 1 / w));
    json_object_set_new(o, "in_flight", array_of(inflight, nb, 1 / w));
    json_object_set_new(o, "outstanding", array_of(outstanding, nb, 1 / w));
    json_object_set_new(o, "schedule_lag_max", array_of(lag_max, nb, 1));
    json_object_set_new(o, "schedule_lag_mean", array_of(lag_sum, nb, 1));
    json_t *ec = json_array(), *eb = json_array();
    for (size_t c = 0; c < run->n_err_class; c++) {
        json_array_append_new(ec, json_string(run->err_class[c]));
        json_array_append_new(eb, array_of(errs + c * nb, nb, 1));
    }
    json_object_set_new(o, "error_classes", ec);
    json_object_set_new(o, "errors", eb);
    free(m);
    free(errs);
    return o;
}

/* Which requests the timeline draws: all of them, or per time bin the worst TTFT, the worst latency and the
 * bin's first request (so the density shows too). */
static json_t *points(const rp_run_t *run)
{
    size_t n = run->n;
    unsigned char *keep = calloc(n ? n : 1, 1);
    if (!keep)
        return NULL;
    if (n <= TIMELINE_ALL) {
        memset(keep, 1, n);
    } else {
        double span = run_span(run);
        double w = span > 0 ? span / TIMELINE_BINS : 1;
        size_t *worst_ttft = malloc(TIMELINE_BINS * 3 * sizeof(size_t));
        if (!worst_ttft) {
            free(keep);
            return NULL;
        }
        size_t *worst_lat = worst_ttft + TIMELINE_BINS, *first = worst_lat + TIMELINE_BINS;
        for (size_t b = 0; b < TIMELINE_BINS * 3; b++)
            worst_ttft[b] = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            const rp_req_t *q = &run->req[i];
            size_t b = bin_of(q->intended_s, w, TIMELINE_BINS);
            if (first[b] == SIZE_MAX)
                first[b] = i;
            if (!isnan(q->ttft) && (worst_ttft[b] == SIZE_MAX || q->ttft > run->req[worst_ttft[b]].ttft))
                worst_ttft[b] = i;
            if (!isnan(q->lat) && (worst_lat[b] == SIZE_MAX || q->lat > run->req[worst_lat[b]].lat))
                worst_lat[b] = i;
        }
        for (size_t b = 0; b < TIMELINE_BINS * 3; b++)
            if (worst_ttft[b] != SIZE_MAX)
                keep[worst_ttft[b]] = 1;
        free(worst_ttft);
    }
    json_t *o = json_object(), *t = json_array(), *ttft = json_array(), *lat = json_array(), *err = json_array();
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        const rp_req_t *q = &run->req[i];
        kept++;
        json_array_append_new(t, json_real(q->intended_s));
        json_array_append_new(ttft, jnum(q->ttft));
        json_array_append_new(lat, jnum(q->lat));
        json_array_append_new(err, json_integer(q->err));
    }
    free(keep);
    json_object_set_new(o, "t", t);
    json_object_set_new(o, "ttft", ttft);
    json_object_set_new(o, "latency", lat);
    json_object_set_new(o, "err", err);
    json_object_set_new(o, "downsampled", json_boolean(kept < n));
    return o;
}

/* {"lo", "width", "counts"} over the ok requests' known values of one length field. */
static json_t *hist(const rp_run_t *run, bool input)
{
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (size_t i = 0; i < run->n; i++) {
        int32_t v = input ? run->req[i].isl : run->req[i].osl;
        if (run->req[i].err || run->req[i].cancelled || v < 0)
            continue;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo > hi)
        return json_null();
    int64_t range = (int64_t)hi - lo + 1;
    int64_t width = range <= HIST_BINS ? 1 : (range + HIST_BINS - 1) / HIST_BINS;
    size_t nb = (size_t)((range + width - 1) / width);
    double *c = calloc(nb, sizeof *c);
    if (!c)
        return NULL;
    for (size_t i = 0; i < run->n; i++) {
        int32_t v = input ? run->req[i].isl : run->req[i].osl;
        if (!run->req[i].err && !run->req[i].cancelled && v >= 0)
            c[(size_t)(((int64_t)v - lo) / width)] += 1;
    }
    json_t *o = json_object();
    json_object_set_new(o, "lo", json_integer(lo));
    json_object_set_new(o, "width", json_integer(width));
    json_object_set_new(o, "counts", array_of(c, nb, 1));
    free(c);
    return o;
}

/* The scraped series the page draws: those with a known meaning (running, waiting, KV cache...); a counter
 * as its rate between scrapes. */
static json_t *server(const rp_run_t *run)
{
    json_t *series = json_object_get(run->server, "series");
    if (!json_is_array(series))
        return json_null();
    json_t *out = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(series, i, s)
    {
        const char *known = json_string_value(json_object_get(s, "known"));
        json_t *samples = json_object_get(s, "samples");
        if (!known || !json_is_array(samples))
            continue;
        bool counter = json_is_string(json_object_get(s, "type")) &&
                       strcmp(json_string_value(json_object_get(s, "type")), "counter") == 0;
        json_t *t = json_array(), *v = json_array();
        double pt = NAN, pv = NAN;
        size_t k;
        json_t *smp;
        json_array_foreach(samples, k, smp)
        {
            json_t *jv = json_array_get(smp, 1); /* null: a NaN or infinite sample */
            double ts = json_number_value(json_array_get(smp, 0)),
                   val = json_is_number(jv) ? json_number_value(jv) : NAN;
            if (isnan(val))
                continue;
            if (counter) {
                if (!isnan(pt) && ts > pt) {
                    json_array_append_new(t, json_real(ts));
                    json_array_append_new(v, jnum((val - pv) / (ts - pt)));
                }
                pt = ts;
                pv = val;
            } else {
                json_array_append_new(t, json_real(ts));
                json_array_append_new(v, jnum(val));
            }
        }
        json_t *o = json_object();
        json_object_set(o, "name", json_object_get(s, "name"));
        json_object_set_new(o, "known", json_string(known));
        json_object_set(o, "endpoint", json_object_get(s, "endpoint"));
        json_object_set(o, "labels", json_object_get(s, "labels"));
        json_object_set_new(o, "rate", json_boolean(counter));
        json_object_set_new(o, "t", t);
        json_object_set_new(o, "v", v);
        json_array_append_new(out, o);
    }
    return out;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How many of the n sorted values are at most v. */
static size_t upper(const double *t, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * surge's client stalls on the timeline's clock (s from the records' origin, where the charts count from): each
 * window with the requests due in it (their sends and everything timed then were late: the client's doing). NULL
 * when the run has none to say (no client_stalls: not watched, or not surge's).
 */
static json_t *stalls(const rp_run_t *run)
{
    json_t *cs = run->stalls;
    if (!cs)
        return NULL;
    /* the intended times, sorted: a window's requests by two binary searches */
    double *t = malloc((run->n ? run->n : 1) * sizeof *t);
    for (size_t k = 0; t && k < run->n; k++)
        t[k] = run->req[k].intended_s;
    if (t)
        qsort(t, run->n, sizeof *t, cmp_double);
    json_t *o = json_object(), *out = json_array();
    json_object_set(o, "threshold_ms", json_object_get(cs, "threshold_ms"));
    json_object_set(o, "count", json_object_get(cs, "count"));
    json_object_set(o, "not_listed", json_object_get(cs, "not_listed"));
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(cs, "windows"), i, w)
    {
        json_t *a = json_object_get(w, "start_s"), *b = json_object_get(w, "end_s");
        if (!json_is_number(a) || !json_is_number(b))
            continue;
        double from = json_number_value(a) - run->records_origin_s, to = json_number_value(b) - run->records_origin_s;
        uint64_t due = t ? (uint64_t)(upper(t, run->n, to) - upper(t, run->n, nextafter(from, -INFINITY))) : 0;
        json_t *e = json_object();
        json_object_set(e, "worker", json_object_get(w, "worker"));
        json_object_set_new(e, "start", jnum(from));
        json_object_set_new(e, "end", jnum(to));
        json_object_set(e, "max_lag_ms", json_object_get(w, "max_lag_ms"));
        json_object_set_new(e, "requests", json_integer((json_int_t)due));
        json_array_append_new(out, e);
    }
    json_object_set_new(o, "windows", out);
    free(t);
    return o;
}

/*
 * The windows in which the server refused connections (surge's server_unreachable), on the timeline's clock, with
 * the requests due in each. NULL when the run does not say (a peer's run, an older surge).
 */
static json_t *unreachable(const rp_run_t *run)
{
    if (!run->unreach)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(run->unreach, i, w)
    {
        json_t *a = json_object_get(w, "start_s"), *b = json_object_get(w, "end_s");
        if (!json_is_number(a) || !json_is_number(b))
            continue;
        double from = json_number_value(a) - run->records_origin_s, to = json_number_value(b) - run->records_origin_s;
        uint64_t due = 0;
        for (size_t k = 0; k < run->n; k++)
            due += run->req[k].intended_s >= from && run->req[k].intended_s <= to;
        json_t *e = json_object();
        json_object_set_new(e, "start", jnum(from));
        json_object_set_new(e, "end", jnum(to));
        json_object_set(e, "refused", json_object_get(w, "refused"));
        json_object_set(e, "slots_waiting", json_object_get(w, "slots_waiting"));
        json_object_set(e, "recovered", json_object_get(w, "recovered"));
        json_object_set_new(e, "requests", json_integer((json_int_t)due));
        json_array_append_new(out, e);
    }
    return out;
}

static void set_or_null(json_t *o, const char *key, json_t *v)
{
    json_object_set(o, key, v ? v : json_null());
}

json_t *rp_run_data(const rp_run_t *run)
{
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(run->label ? run->label : ""));
    json_object_set_new(o, "dir", json_string(run->dir ? run->dir : ""));
    json_object_set_new(o, "source", json_string(run->source));
    json_object_set_new(o, "interrupted", json_boolean(run->interrupted));
    json_object_set_new(o, "requests", json_integer((json_int_t)run->n));
    set_or_null(o, "summary", run->summary);
    set_or_null(o, "slo", run->slo);
    set_or_null(o, "config", run->config);
    set_or_null(o, "error_summary", run->errors);
    set_or_null(o, "meta", run->meta);
    set_or_null(o, "gpu", run->gpu);
    json_t *c = json_object();
    json_object_set_new(c, "time_to_first_token", cdf(run, offsetof(rp_req_t, ttft)));
    json_object_set_new(c, "time_to_first_token_from_send", cdf(run, offsetof(rp_req_t, ttft_send)));
    json_object_set_new(c, "request_latency", cdf(run, offsetof(rp_req_t, lat)));
    json_object_set_new(c, "request_latency_from_send", cdf(run, offsetof(rp_req_t, lat_send)));
    json_object_set_new(c, "inter_token_latency", cdf(run, offsetof(rp_req_t, itl)));
    json_object_set_new(c, "schedule_lag", cdf(run, offsetof(rp_req_t, lag)));
    bool tools = false; /* only a run whose responses streamed tool calls has this one */
    for (size_t i = 0; i < run->n && !tools; i++)
        tools = !isnan(run->req[i].ttftc);
    if (tools)
        json_object_set_new(c, "time_to_first_tool_call_token", cdf(run, offsetof(rp_req_t, ttftc)));
    json_object_set_new(o, "cdf", c);
    json_object_set_new(o, "points", points(run));
    json_object_set_new(o, "bins", bins(run));
    json_t *h = json_object();
    json_object_set_new(h, "input_sequence_length", hist(run, true));
    json_object_set_new(h, "output_sequence_length", hist(run, false));
    json_object_set_new(o, "hist", h);
    json_object_set_new(o, "server", server(run));
    json_t *st = stalls(run);
    set_or_null(o, "stalls", st);
    json_decref(st);
    json_t *un = unreachable(run);
    set_or_null(o, "unreachable", un);
    json_decref(un);
    return o;
}

json_t *rp_points_data(const rp_points_t *pts)
{
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(pts->label ? pts->label : ""));
    json_object_set_new(o, "dir", json_string(pts->dir ? pts->dir : ""));
    json_object_set_new(o, "search", json_boolean(pts->search));
    json_object_set(o, "header", pts->header);
    json_object_set(o, "rows", pts->rows);
    set_or_null(o, "slo", pts->slo);
    set_or_null(o, "meta", pts->meta);
    set_or_null(o, "config", pts->config);
    return o;
}

json_t *rp_multi_data(const rp_multi_t *mr)
{
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(mr->label ? mr->label : ""));
    json_object_set_new(o, "dir", json_string(mr->dir ? mr->dir : ""));
    json_object_set(o, "metadata", mr->metadata);
    json_object_set(o, "metrics", mr->metrics);
    json_object_set(o, "per_run", mr->runs);
    return o;
}
