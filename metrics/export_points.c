/* The rows of a sweep or a search: console table, JSON and CSV (sg_points.h). */
#define _GNU_SOURCE
#include "sg_points.h"

#include "sg_export_util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

static double pct_ms(const sg_metrics_t *m, sg_metric_id_t id, double p)
{
    const sg_hist_t *h = sg_metrics_hist(m, id);
    if (!h || sg_hist_count(h) == 0)
        return NAN;
    return sg_hist_percentile(h, p) * sg_metric_scale(id);
}

void sg_point_row_fill(sg_point_row_t *row, const sg_metrics_t *m)
{
    row->ok = sg_metrics_ok(m);
    row->errors = sg_metrics_errors(m);
    row->cancelled = sg_metrics_cancelled(m);
    row->cancelled_by_test = sg_metrics_cancel_tests(m);
    row->duration_s = sg_metrics_duration_s(m);
    double d = row->duration_s;
    row->offered_rate = sg_metrics_offered_rate(m);
    row->request_throughput = d > 0 ? (double)row->ok / d : 0;
    row->output_token_throughput = d > 0 ? (double)sg_metrics_output_tokens(m) / d : 0;
    row->ttft_p50 = pct_ms(m, SG_M_TTFT, 50);
    row->ttft_p99 = pct_ms(m, SG_M_TTFT, 99);
    row->itl_p50 = pct_ms(m, SG_M_ITL, 50);
    row->itl_p99 = pct_ms(m, SG_M_ITL, 99);
    row->latency_p50 = pct_ms(m, SG_M_LATENCY, 50);
    row->latency_p99 = pct_ms(m, SG_M_LATENCY, 99);
    row->lag_p99 = pct_ms(m, SG_M_SCHEDULE_LAG, 99);
}

/* ---------- console ---------- */

static void cell_num(char *buf, size_t cap, double v)
{
    if (isnan(v))
        snprintf(buf, cap, "-");
    else if (v != 0 && fabs(v) < 10)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "%.1f", v);
}

static bool any(const sg_point_row_t *rows, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(*(const double *)((const char *)&rows[i] + off)))
            return true;
    return false;
}

typedef struct {
    const char *head;
    size_t off; /* a double in sg_point_row_t */
} col_t;

void sg_points_table(FILE *out, const char *title, const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks,
                     size_t n_slo, bool probes)
{
    static const col_t figures[] = {
        {"offered/s", offsetof(sg_point_row_t, offered_rate)},
        {"ok/s", offsetof(sg_point_row_t, request_throughput)},
        {"TTFT p50", offsetof(sg_point_row_t, ttft_p50)},
        {"TTFT p99", offsetof(sg_point_row_t, ttft_p99)},
        {"ITL p50", offsetof(sg_point_row_t, itl_p50)},
        {"ITL p99", offsetof(sg_point_row_t, itl_p99)},
        {"latency p50", offsetof(sg_point_row_t, latency_p50)},
        {"latency p99", offsetof(sg_point_row_t, latency_p99)},
        {"out tok/s", offsetof(sg_point_row_t, output_token_throughput)},
    };
    bool closed = n > 0 && rows[0].closed;
    bool by_test = false; /* the cancellation test's column (cancelled_by_test), where a point ran one */
    for (size_t i = 0; i < n; i++)
        by_test = by_test || rows[i].cancel_test || rows[i].cancelled_by_test;
    bool trials = probes; /* a search's trials, or a sweep's repeated runs (--num-profile-runs) */
    for (size_t i = 0; i < n; i++)
        trials = trials || rows[i].trial > 1;
    fprintf(out, "%s\n", title);
    fprintf(out, "%12s", closed ? "concurrency" : "rate (req/s)");
    if (trials)
        fprintf(out, " %5s", "trial");
    for (size_t c = 0; c < SG_ARRAY_LEN(figures); c++)
        if (any(rows, n, figures[c].off))
            fprintf(out, " %11s", figures[c].head);
    fprintf(out, " %8s %8s %9s", "ok", "failed", "cancelled");
    if (by_test)
        fprintf(out, " %17s", "cancelled_by_test");
    if (n_slo)
        fprintf(out, " %6s", "SLOs");
    if (probes)
        fprintf(out, "  verdict");
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        const sg_point_row_t *r = &rows[i];
        char v[32];
        if (r->closed)
            snprintf(v, sizeof v, "%.0f", r->value);
        else
            snprintf(v, sizeof v, "%.4g", r->value);
        fprintf(out, "%12s", v);
        if (trials)
            fprintf(out, " %5u", r->trial);
        for (size_t c = 0; c < SG_ARRAY_LEN(figures); c++)
            if (any(rows, n, figures[c].off)) {
                cell_num(v, sizeof v, *(const double *)((const char *)r + figures[c].off));
                fprintf(out, " %11s", v);
            }
        fprintf(out, " %8llu %8llu %9llu", (unsigned long long)r->ok, (unsigned long long)r->errors,
                (unsigned long long)r->cancelled);
        if (by_test)
            fprintf(out, " %17llu", (unsigned long long)r->cancelled_by_test);
        if (n_slo) {
            size_t passed = 0;
            for (size_t k = 0; k < r->n_slo; k++)
                passed += r->verdicts[k].pass;
            snprintf(v, sizeof v, "%zu/%zu", passed, r->n_slo);
            fprintf(out, " %6s", v);
        }
        if (probes) {
            const char *word = r->verdict == SG_SLO_PASS ? "pass" : r->verdict == SG_SLO_FAIL ? "FAIL" : "inconclusive";
            fprintf(out, "  %s", word);
            if (r->pooled > 1)
                fprintf(out, " (%u probes pooled)", r->pooled);
            fprintf(out, "%s%s", r->why[0] ? ": " : "", r->why);
        } else if (r->interrupted) {
            fprintf(out, "  (interrupted)");
        } else if (n_slo && r->slo_outcome != SG_SLO_PASS) {
            fprintf(out, "  SLOs %s", sg_slo_outcome_name(r->slo_outcome));
        }
        fputc('\n', out);
    }
    if (n_slo) {
        fprintf(out, "SLOs:");
        for (size_t k = 0; k < n_slo; k++)
            fprintf(out, "%s %s", k ? "," : "", checks[k].text);
        fputc('\n', out);
    }
    fprintf(out,
            "Times in ms (latencies of ok requests; cancelled ones are censored, in none); %s%s"
            "offered/s: requests issued (ok + failed + cancelled) per second of the sending; ok/s: request "
            "throughput, ok requests per second of the point's duration\n",
            closed ? "" : "rate: the configured request rate; ",
            by_test ? "cancelled_by_test: cut on purpose by --request-cancellation-rate, neither ok nor failed; " : "");
}

/* ---------- JSON ---------- */

static json_t *num_or_null(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

json_t *sg_points_json(const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks, size_t n_slo)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const sg_point_row_t *r = &rows[i];
        json_t *o = json_object();
        if (!o) {
            json_decref(a);
            return NULL;
        }
        json_object_set_new(o, r->closed ? "concurrency" : "request_rate",
                            r->closed ? json_integer((json_int_t)r->value) : json_real(r->value));
        json_object_set_new(o, "trial", json_integer(r->trial));
        json_object_set_new(o, "artifact_subdir", json_string(r->dir));
        json_object_set_new(o, "exit_code", json_integer(r->exit_code));
        json_object_set_new(o, "was_interrupted", json_boolean(r->interrupted));
        json_object_set_new(o, "request_count", json_integer((json_int_t)r->ok));
        json_object_set_new(o, "error_count", json_integer((json_int_t)r->errors));
        json_object_set_new(o, "cancelled_count", json_integer((json_int_t)r->cancelled));
        json_object_set_new(o, "cancelled_by_test_count", json_integer((json_int_t)r->cancelled_by_test));
        json_object_set_new(o, "benchmark_duration", json_real(r->duration_s));
        json_object_set_new(o, "offered_request_rate", json_real(r->offered_rate));
        json_object_set_new(o, "request_throughput", json_real(r->request_throughput));
        json_object_set_new(o, "output_token_throughput", json_real(r->output_token_throughput));
        json_object_set_new(o, "time_to_first_token_p50", num_or_null(r->ttft_p50));
        json_object_set_new(o, "time_to_first_token_p99", num_or_null(r->ttft_p99));
        json_object_set_new(o, "inter_token_latency_p50", num_or_null(r->itl_p50));
        json_object_set_new(o, "inter_token_latency_p99", num_or_null(r->itl_p99));
        json_object_set_new(o, "request_latency_p50", num_or_null(r->latency_p50));
        json_object_set_new(o, "request_latency_p99", num_or_null(r->latency_p99));
        json_object_set_new(o, "schedule_lag_p99", num_or_null(r->lag_p99));
        json_t *slo = json_array();
        for (size_t k = 0; slo && k < r->n_slo && k < n_slo; k++) {
            json_t *e = json_object();
            if (!e)
                continue;
            json_object_set_new(e, "slo", json_string(checks[k].text));
            json_object_set_new(e, "target", json_real(checks[k].target));
            json_object_set_new(e, "measured",
                                r->verdicts[k].measurable ? json_real(r->verdicts[k].measured) : json_null());
            json_object_set_new(e, "pass", json_boolean(r->verdicts[k].pass));
            json_object_set_new(e, "verdict", json_string(sg_slo_outcome_name(r->verdicts[k].outcome)));
            json_object_set_new(e, "n", json_integer((json_int_t)r->verdicts[k].n));
            json_object_set_new(e, "confidence_level", json_real(r->verdicts[k].level));
            json_object_set_new(e, "interval", sg_slo_interval_json(&r->verdicts[k]));
            /* a search probe's percentile: how clustered its wrong-side requests were (docs/capacity.md) */
            if (r->verdicts[k].dispersion > 1)
                json_object_set_new(e, "dispersion", json_real(r->verdicts[k].dispersion));
            json_array_append_new(slo, e);
        }
        json_object_set_new(o, "slo", slo ? slo : json_null());
        json_object_set_new(o, "slo_pass", json_boolean(r->slo_pass));
        json_object_set_new(o, "slo_verdict", n_slo ? json_string(sg_slo_outcome_name(r->slo_outcome)) : json_null());
        if (r->pooled) { /* a search probe: the value's verdict after it, on how many probes, and why */
            json_object_set_new(o, "verdict", json_string(sg_slo_outcome_name(r->verdict)));
            json_object_set_new(o, "pooled_probes", json_integer(r->pooled));
            json_object_set_new(o, "pass", json_boolean(r->pass));
            json_object_set_new(o, "why", r->why[0] ? json_string(r->why) : json_null());
            json_object_set_new(o, "stopped_early", json_boolean(r->stopped_early));
            json_object_set_new(o, "overloaded", json_boolean(r->overloaded));
        }
        json_array_append_new(a, o);
    }
    return a;
}

/* ---------- CSV ---------- */

static void csv_num(FILE *f, double v)
{
    if (isnan(v))
        fputs(",", f);
    else
        fprintf(f, ",%.6g", v);
}

int sg_points_csv(const char *path, const sg_point_row_t *rows, size_t n, const sg_slo_check_t *checks, size_t n_slo)
{
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc)
        return rc;
    FILE *f = of.f;
    bool closed = n > 0 && rows[0].closed;
    fprintf(f,
            "%s,Trial,Artifact Subdir,Exit Code,Request Count,Error Count,Cancelled Count,Cancelled By Test Count,"
            "Benchmark Duration (sec),"
            "Offered Request Rate (per sec),Request Throughput (per sec),Output Token Throughput (tokens/sec),"
            "Time To First Token p50 (ms),Time To First Token p99 (ms),Inter Token Latency p50 (ms),"
            "Inter Token Latency p99 (ms),Request Latency p50 (ms),Request Latency p99 (ms),Schedule Lag p99 (ms)",
            closed ? "Concurrency" : "Request Rate (per sec)");
    for (size_t k = 0; k < n_slo; k++)
        fprintf(f, ",\"SLO %s\"", checks[k].text);
    fprintf(f, ",SLO Pass\n");
    for (size_t i = 0; i < n; i++) {
        const sg_point_row_t *r = &rows[i];
        fprintf(f, "%.15g,%u,%s,%d,%llu,%llu,%llu,%llu", r->value, r->trial, r->dir, r->exit_code,
                (unsigned long long)r->ok, (unsigned long long)r->errors, (unsigned long long)r->cancelled,
                (unsigned long long)r->cancelled_by_test);
        csv_num(f, r->duration_s);
        csv_num(f, r->offered_rate);
        csv_num(f, r->request_throughput);
        csv_num(f, r->output_token_throughput);
        csv_num(f, r->ttft_p50);
        csv_num(f, r->ttft_p99);
        csv_num(f, r->itl_p50);
        csv_num(f, r->itl_p99);
        csv_num(f, r->latency_p50);
        csv_num(f, r->latency_p99);
        csv_num(f, r->lag_p99);
        for (size_t k = 0; k < n_slo; k++)
            fprintf(f, ",%s", k < r->n_slo ? sg_slo_outcome_name(r->verdicts[k].outcome) : "");
        fprintf(f, ",%s\n", n_slo ? sg_slo_outcome_name(r->slo_outcome) : (r->slo_pass ? "pass" : "fail"));
    }
    if (ferror(f)) {
        int err = sg_outfile_error(&of);
        sg_outfile_abort(&of);
        return err;
    }
    return sg_outfile_commit(&of);
}
