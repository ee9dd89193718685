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

typedef struct {
    int64_t origin, min_intended, max_intended;
    int64_t slice_ns;
    size_t first, n; /* the windows of this pass */
    sg_metrics_t **win;
} pass_t;

static void find_range(void *ctx, const sg_record_t *r)
{
    pass_t *p = ctx;
    if (r->intended_ns < p->min_intended)
        p->min_intended = r->intended_ns;
    if (r->intended_ns > p->max_intended)
        p->max_intended = r->intended_ns;
}

static void add_to_window(void *ctx, const sg_record_t *r)
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

int sg_export_timeslices(const char *json_path, const char *csv_path, const char *const *log_paths, size_t n_logs,
                         double slice_s, const sg_slo_t *slos, size_t n_slos, const sg_run_info_t *info)
{
    pass_t p = {.min_intended = INT64_MAX, .max_intended = INT64_MIN, .slice_ns = (int64_t)llround(slice_s * 1e9)};
    if (p.slice_ns <= 0)
        return -EINVAL;
    int rc = 0;
    for (size_t i = 0; i < n_logs && !rc; i++)
        rc = sg_reclog_each(log_paths[i], find_range, &p);
    if (rc)
        return rc;
    size_t n_windows =
        p.min_intended <= p.max_intended ? (size_t)((p.max_intended - p.min_intended) / p.slice_ns) + 1 : 0;
    p.origin = p.min_intended;

    /* AIPerf's layout: {"timeslices": [{"timeslice_index": 0, <metrics>}, ...], "input_config": {...}} */
    json_t *root = json_object(), *slices = json_array();
    json_t *config = info && info->input_config_json ? json_loads(info->input_config_json, 0, NULL) : NULL;
    if (!root || !slices || json_object_set_new(root, "slice_duration", json_real(slice_s)) ||
        json_object_set_new(root, "slice_assignment", json_string("intended_start")) ||
        json_object_set_new(root, "timeslices", json_incref(slices)) ||
        json_object_set_new(root, "input_config", config ? config : json_null())) {
        json_decref(root);
        json_decref(slices);
        return -ENOMEM;
    }
    json_decref(slices); /* root holds it */
    sg_outfile_t csv;
    rc = sg_outfile_open(&csv, csv_path);
    if (rc) {
        json_decref(root);
        return rc;
    }
    fputs("Timeslice,Metric,Unit,Stat,Value,Start (sec),End (sec)\n", csv.f);
    sg_run_info_t wi = info ? *info : (sg_run_info_t){0};
    wi.input_config_json = NULL; /* once, at the top */
    wi.n_slo_checks = 0;         /* verdicts judge the whole run */
    wi.client_cpu_s = 0;
    for (p.first = 0; p.first < n_windows && !rc; p.first += WINDOWS_PER_PASS) {
        p.n = n_windows - p.first < WINDOWS_PER_PASS ? n_windows - p.first : WINDOWS_PER_PASS;
        sg_metrics_t *win[WINDOWS_PER_PASS] = {0};
        p.win = win;
        for (size_t k = 0; k < p.n && !rc; k++)
            if (!(win[k] = sg_metrics_new(slos, n_slos)))
                rc = -ENOMEM;
        for (size_t i = 0; i < n_logs && !rc; i++)
            rc = sg_reclog_each(log_paths[i], add_to_window, &p);
        for (size_t k = 0; k < p.n && !rc; k++) {
            size_t idx = p.first + k;
            double start_s = (double)idx * slice_s, end_s = start_s + slice_s;
            json_t *o = sg_export_summary(win[k], &wi);
            if (!o) {
                rc = -ENOMEM;
                break;
            }
            /* what belongs to the whole run, not to a window (the run's summary has it) */
            static const char *const run_only[] = {"input_config",         "keep_alive", "resent_request_count",
                                                   "warmup_request_count", "isl_source", "tokenizer",
                                                   "was_interrupted"};
            for (size_t d = 0; d < SG_ARRAY_LEN(run_only); d++)
                json_object_del(o, run_only[d]);
            if (json_object_set_new(o, "slice_request_throughput",
                                    per_slice("requests/sec", (double)sg_metrics_ok(win[k]) / slice_s)) ||
                json_object_set_new(o, "slice_output_token_throughput",
                                    per_slice("tokens/sec", (double)sg_metrics_output_tokens(win[k]) / slice_s)) ||
                json_object_set_new(o, "timeslice_index", json_integer((json_int_t)idx)) ||
                json_object_set_new(o, "timeslice_start", json_real(start_s)) ||
                json_object_set_new(o, "timeslice_end", json_real(end_s)) || json_array_append_new(slices, o)) {
                rc = -ENOMEM;
                break;
            }
            csv_window(csv.f, o, idx, start_s, end_s);
        }
        for (size_t k = 0; k < p.n; k++)
            sg_metrics_free(win[k]);
    }
    if (rc || ferror(csv.f)) {
        sg_outfile_abort(&csv);
        json_decref(root);
        return rc ? rc : -EIO;
    }
    rc = sg_outfile_commit(&csv);
    sg_outfile_t js;
    int jrc = sg_outfile_open(&js, json_path);
    if (!jrc) {
        if (json_dumpf(root, js.f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0 || fputc('\n', js.f) == EOF) {
            sg_outfile_abort(&js);
            jrc = -EIO;
        } else {
            jrc = sg_outfile_commit(&js);
        }
    }
    json_decref(root);
    return rc ? rc : jrc;
}
