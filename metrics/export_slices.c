/*
 * --slice-duration (AIPerf's time slices): the run's measured requests in consecutive windows of S seconds, each
 * request in the window of its intended start (so a window holds the requests the schedule put there, and a
 * server that fell behind shows in that window's latencies, not in a later one's), each window measured with the
 * run's definitions: its records go through sg_metrics_add into a metrics object of its own. A metrics object is
 * large (histograms), so the logs are read once per batch of WINDOWS_PER_PASS windows.
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

static double pct(const sg_metrics_t *m, sg_metric_id_t id, double p)
{
    const sg_hist_t *h = sg_metrics_hist(m, id);
    return h && sg_hist_count(h) ? sg_hist_percentile(h, p) * sg_metric_scale(id) : NAN;
}

static double avg(const sg_metrics_t *m, sg_metric_id_t id)
{
    const sg_hist_t *h = sg_metrics_hist(m, id);
    return h && sg_hist_count(h) ? sg_hist_mean(h) * sg_metric_scale(id) : NAN;
}

static void csv_num(FILE *f, double v)
{
    if (isnan(v))
        fputs(",", f);
    else
        fprintf(f, ",%.6g", v);
}

static const sg_metric_id_t csv_metrics[] = {SG_M_TTFT, SG_M_ITL, SG_M_LATENCY, SG_M_SCHEDULE_LAG};

static void csv_header(FILE *f)
{
    fputs("Slice,Start (sec),End (sec),Request Count,Error Request Count,Request Throughput (per sec),"
          "Output Token Throughput (tokens/sec)",
          f);
    for (size_t i = 0; i < SG_ARRAY_LEN(csv_metrics); i++) {
        const char *name = sg_metric_name(csv_metrics[i]);
        fprintf(f, ",%s avg (ms),%s p50 (ms),%s p90 (ms),%s p99 (ms)", name, name, name, name);
    }
    fputc('\n', f);
}

static void csv_row(FILE *f, size_t k, double start_s, double end_s, const sg_metrics_t *m, double slice_s)
{
    /* rates over the window's length: what the schedule put in it, per second */
    fprintf(f, "%zu,%.6g,%.6g,%" PRIu64 ",%" PRIu64, k, start_s, end_s, sg_metrics_ok(m), sg_metrics_errors(m));
    csv_num(f, (double)sg_metrics_ok(m) / slice_s);
    csv_num(f, (double)sg_metrics_output_tokens(m) / slice_s);
    for (size_t i = 0; i < SG_ARRAY_LEN(csv_metrics); i++) {
        csv_num(f, avg(m, csv_metrics[i]));
        csv_num(f, pct(m, csv_metrics[i], 50));
        csv_num(f, pct(m, csv_metrics[i], 90));
        csv_num(f, pct(m, csv_metrics[i], 99));
    }
    fputc('\n', f);
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

    json_t *root = json_object(), *slices = json_array();
    sg_outfile_t csv;
    if (!root || !slices) {
        json_decref(root);
        json_decref(slices);
        return -ENOMEM;
    }
    json_object_set_new(root, "slice_duration", json_real(slice_s));
    json_object_set_new(root, "slice_assignment", json_string("intended_start"));
    json_object_set_new(root, "slices", slices);
    rc = sg_outfile_open(&csv, csv_path);
    if (rc) {
        json_decref(root);
        return rc;
    }
    csv_header(csv.f);
    sg_run_info_t wi = info ? *info : (sg_run_info_t){0};
    wi.input_config_json = NULL; /* the run's summary has it once */
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
            /* what belongs to the whole run, not to a window */
            static const char *const run_only[] = {"input_config", "keep_alive", "resent_request_count",
                                                   "warmup_request_count"};
            for (size_t d = 0; d < SG_ARRAY_LEN(run_only); d++)
                json_object_del(o, run_only[d]);
            json_object_set_new(o, "slice_index", json_integer((json_int_t)idx));
            json_object_set_new(o, "slice_start", json_real(start_s));
            json_object_set_new(o, "slice_end", json_real(end_s));
            json_array_append_new(slices, o);
            csv_row(csv.f, idx, start_s, end_s, win[k], slice_s);
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
