/*
 * --slice-duration (AIPerf's time slices): the run's measured requests in consecutive windows of S seconds from
 * the first intended start, each request in the window of its intended start (so a window holds the requests the
 * schedule put there, and a server that fell behind shows in that window's latencies, not in a later one's), each
 * window measured with the run's definitions: its records go through sg_metrics_add into a metrics object of its
 * own. A metrics object is large (histograms), so the logs are read once per batch of WINDOWS_PER_PASS windows.
 * The files keep AIPerf's layout (profile_export_aiperf_timeslices.json and .csv): a "timeslices" array of
 * summaries with a "timeslice_index", and a tidy CSV of Timeslice,Metric,Unit,Stat,Value rows. Unlike AIPerf, an
 * empty window is kept (with its zero counts), so that index i is always the window [i S, (i + 1) S).
 */
#include "sg_export_util.h"
#include "sg_metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WINDOWS_PER_PASS 32

/* Where one batch of windows lies in one log: the byte offsets of its first and last record there. */
typedef struct {
    uint64_t lo, hi;
} band_t;

typedef struct {
    int64_t origin, min_intended, max_intended;
    int64_t slice_ns;
    size_t first, n; /* the windows of this pass */
    sg_metrics_t **win;
    band_t *bands; /* [batch * n_logs + log] */
    size_t log, n_logs;
} pass_t;

static void find_range(void *ctx, const sg_record_t *r)
{
    pass_t *p = ctx;
    if (r->intended_ns < p->min_intended)
        p->min_intended = r->intended_ns;
    if (r->intended_ns > p->max_intended)
        p->max_intended = r->intended_ns;
}

/*
 * A log is in completion order, so a batch's records lie in a band of it (wider by the requests that took longer
 * than their neighbours): each pass reads its band, and the passes together read about one log, not one log each.
 */
static void find_bands(void *ctx, const sg_record_t *r, uint64_t pos)
{
    pass_t *p = ctx;
    size_t batch = (size_t)((r->intended_ns - p->origin) / p->slice_ns) / WINDOWS_PER_PASS;
    band_t *b = &p->bands[batch * p->n_logs + p->log];
    if (pos < b->lo)
        b->lo = pos;
    if (pos > b->hi)
        b->hi = pos;
}

static void add_to_window(void *ctx, const sg_record_t *r, uint64_t pos)
{
    pass_t *p = ctx;
    int64_t k = (r->intended_ns - p->origin) / p->slice_ns;
    if (k >= (int64_t)p->first && k < (int64_t)(p->first + p->n))
        sg_metrics_add(p->win[k - (int64_t)p->first], r);
}

/* A single value as the summary writes one: {"unit": ..., "avg": v}. */
static json_t *per_slice(const char *unit, double v)
{
    json_t *o = json_object();
    if (o && (json_object_set_new(o, "unit", json_string(unit)) || json_object_set_new(o, "avg", json_real(v)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* "time_to_first_token" -> "Time To First Token": the label of the run's CSV, less its unit (a column here). */
static void metric_label(char *buf, size_t cap, const char *tag)
{
    size_t o = 0;
    bool word_start = true;
    for (const char *p = tag; *p && o + 1 < cap; p++) {
        char ch = *p == '_' ? ' ' : *p;
        if (word_start && ch >= 'a' && ch <= 'z')
            ch = (char)(ch - 'a' + 'A');
        word_start = ch == ' ';
        buf[o++] = ch;
    }
    buf[o] = '\0';
}

/*
 * AIPerf's tidy CSV (Timeslice,Metric,Unit,Stat,Value), one row per window, metric and statistic, written from
 * the window's JSON object so that the two files cannot disagree: every entry with a unit is a metric, each of
 * its other numbers a statistic (a single value is its "avg", as in AIPerf). The window's start and end (s from
 * the first intended start) follow in two more columns, so a reader by column position finds AIPerf's five.
 */
static void csv_window(FILE *f, const json_t *win, size_t idx, double start_s, double end_s)
{
    const char *tag;
    json_t *metric;
    json_object_foreach((json_t *)win, tag, metric)
    {
        const json_t *unit = json_object_get(metric, "unit");
        if (!json_is_object(metric) || !json_is_string(unit))
            continue;
        char label[96];
        metric_label(label, sizeof(label), tag);
        const char *stat;
        json_t *v;
        json_object_foreach(metric, stat, v)
        {
            if (json_is_integer(v))
                fprintf(f, "%zu,%s,%s,%s,%" JSON_INTEGER_FORMAT, idx, label, json_string_value(unit), stat,
                        json_integer_value(v));
            else if (json_is_real(v))
                fprintf(f, "%zu,%s,%s,%s,%.15g", idx, label, json_string_value(unit), stat, json_real_value(v));
            else
                continue;
            fprintf(f, ",%.15g,%.15g\n", start_s, end_s);
        }
    }
}

/* The logs' range of intended starts, hence the windows, and each batch's band in each log. 0 or -errno. */
static int scan_logs(pass_t *p, const char *const *log_paths, size_t n_logs, size_t *n_windows)
{
    int rc = 0;
    for (size_t i = 0; i < n_logs && !rc; i++)
        rc = sg_reclog_each(log_paths[i], find_range, p);
    if (rc)
        return rc;
    *n_windows =
        p->min_intended <= p->max_intended ? (size_t)((p->max_intended - p->min_intended) / p->slice_ns) + 1 : 0;
    p->origin = p->min_intended;
    size_t n_batches = (*n_windows + WINDOWS_PER_PASS - 1) / WINDOWS_PER_PASS;
    p->n_logs = n_logs;
    if (n_batches == 0 || n_logs == 0)
        return 0;
    if (n_batches > SIZE_MAX / sizeof(band_t) / n_logs || !(p->bands = malloc(n_batches * n_logs * sizeof(band_t))))
        return -ENOMEM;
    for (size_t i = 0; i < n_batches * n_logs; i++)
        p->bands[i] = (band_t){UINT64_MAX, 0};
    for (p->log = 0; p->log < n_logs && !rc; p->log++)
        rc = sg_reclog_each_span(log_paths[p->log], 0, UINT64_MAX, INT64_MIN, INT64_MAX, find_bands, p);
    return rc;
}

/* Window idx's summary: the run's, less what belongs to the whole run, plus the window. New reference or NULL. */
static json_t *window_summary(const sg_metrics_t *m, const sg_run_info_t *wi, size_t idx, double slice_s)
{
    json_t *o = sg_export_summary(m, wi);
    if (!o)
        return NULL;
    static const char *const run_only[] = {"input_config", "keep_alive", "resent_request_count", "warmup_request_count",
                                           "isl_source",   "tokenizer",  "was_interrupted",      "io_backend"};
    for (size_t d = 0; d < SG_ARRAY_LEN(run_only); d++)
        json_object_del(o, run_only[d]);
    double start_s = (double)idx * slice_s;
    if (json_object_set_new(o, "slice_request_throughput",
                            per_slice("requests/sec", (double)sg_metrics_ok(m) / slice_s)) ||
        json_object_set_new(o, "slice_output_token_throughput",
                            per_slice("tokens/sec", (double)sg_metrics_output_tokens(m) / slice_s)) ||
        json_object_set_new(o, "timeslice_index", json_integer((json_int_t)idx)) ||
        json_object_set_new(o, "timeslice_start", json_real(start_s)) ||
        json_object_set_new(o, "timeslice_end", json_real(start_s + slice_s))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Every window, a batch at a time: its records from the batch's bands, then its summary and CSV rows. */
static int write_windows(pass_t *p, const char *const *log_paths, size_t n_windows, double slice_s,
                         const sg_slo_t *slos, size_t n_slos, const sg_run_info_t *wi, json_t *slices, FILE *csv)
{
    int rc = 0;
    for (p->first = 0; p->first < n_windows && !rc; p->first += WINDOWS_PER_PASS) {
        p->n = n_windows - p->first < WINDOWS_PER_PASS ? n_windows - p->first : WINDOWS_PER_PASS;
        sg_metrics_t *win[WINDOWS_PER_PASS] = {0};
        p->win = win;
        for (size_t k = 0; k < p->n && !rc; k++)
            if (!(win[k] = sg_metrics_new(slos, n_slos)))
                rc = -ENOMEM;
        int64_t from_ns = p->origin + (int64_t)p->first * p->slice_ns;
        int64_t to_ns = p->origin + (int64_t)(p->first + p->n) * p->slice_ns;
        for (size_t i = 0; i < p->n_logs && !rc; i++) {
            const band_t *b = &p->bands[p->first / WINDOWS_PER_PASS * p->n_logs + i];
            if (b->lo <= b->hi)
                rc = sg_reclog_each_span(log_paths[i], b->lo, b->hi, from_ns, to_ns, add_to_window, p);
        }
        for (size_t k = 0; k < p->n && !rc; k++) {
            size_t idx = p->first + k;
            json_t *o = window_summary(win[k], wi, idx, slice_s);
            if (!o || json_array_append_new(slices, o)) {
                rc = -ENOMEM;
                break;
            }
            csv_window(csv, o, idx, (double)idx * slice_s, (double)(idx + 1) * slice_s);
        }
        for (size_t k = 0; k < p->n; k++)
            sg_metrics_free(win[k]);
    }
    return rc;
}

int sg_export_timeslices(const char *json_path, const char *csv_path, const char *const *log_paths, size_t n_logs,
                         double slice_s, const sg_slo_t *slos, size_t n_slos, const sg_run_info_t *info)
{
    pass_t p = {.min_intended = INT64_MAX, .max_intended = INT64_MIN, .slice_ns = (int64_t)llround(slice_s * 1e9)};
    if (p.slice_ns <= 0)
        return -EINVAL;
    size_t n_windows = 0;
    int rc = scan_logs(&p, log_paths, n_logs, &n_windows);
    if (rc) {
        free(p.bands);
        return rc;
    }

    /* AIPerf's layout: {"timeslices": [{"timeslice_index": 0, <metrics>}, ...], "input_config": {...}} */
    json_t *root = json_object(), *slices = json_array();
    json_t *config = info && info->input_config_json ? json_loads(info->input_config_json, 0, NULL) : NULL;
    if (!root || !slices || json_object_set_new(root, "slice_duration", json_real(slice_s)) ||
        json_object_set_new(root, "slice_assignment", json_string("intended_start")) ||
        json_object_set_new(root, "timeslices", json_incref(slices)) ||
        json_object_set_new(root, "input_config", config ? config : json_null())) {
        json_decref(root);
        json_decref(slices);
        free(p.bands);
        return -ENOMEM;
    }
    json_decref(slices); /* root holds it */
    sg_outfile_t csv;
    rc = sg_outfile_open(&csv, csv_path);
    if (rc) {
        json_decref(root);
        free(p.bands);
        return rc;
    }
    fputs("Timeslice,Metric,Unit,Stat,Value,Start (sec),End (sec)\n", csv.f);
    sg_run_info_t wi = info ? *info : (sg_run_info_t){0};
    wi.input_config_json = NULL; /* once, at the top */
    wi.n_slo_checks = 0;         /* verdicts judge the whole run */
    wi.client_cpu_s = 0;         /* the run's CPU, not a slice's */
    wi.client_cpu_user_s = wi.client_cpu_sys_s = 0;
    wi.process_cpu_user_s = wi.process_cpu_sys_s = 0;
    wi.stall_threshold_ms = 0; /* the run's client stalls, not a slice's */
    wi.extra_json = NULL;      /* the run's clock and ranks are the run's, not a slice's */
    wi.gpu_json = NULL;        /* the GPUs' energy and tokens per joule are the run's */
    rc = write_windows(&p, log_paths, n_windows, slice_s, slos, n_slos, &wi, slices, csv.f);
    free(p.bands);
    if (rc || ferror(csv.f)) {
        rc = rc ? rc : sg_outfile_error(&csv);
        sg_outfile_abort(&csv);
        json_decref(root);
        return rc;
    }
    rc = sg_outfile_commit(&csv);
    int jrc = sg_json_write(json_path, root);
    return rc ? rc : jrc;
}
