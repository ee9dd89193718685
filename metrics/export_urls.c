/*
 * Several URLs (-u given more than once; docs/metrics.md, "Several URLs"): the per-URL part of the summary, the
 * console and the CSV, from the metrics each URL's records were also counted in (sg_metrics_url) and what the
 * workers saw of each URL (sg_run_info_t.url_info: failed connects, outages, requests re-routed).
 */
#include "sg_export_util.h"
#include "sg_metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* The distributions a URL's part carries, and the statistics of each. */
static const sg_metric_id_t url_metrics[] = {SG_M_TTFT, SG_M_LATENCY, SG_M_ITL, SG_M_OSL};
static const struct {
    const char *key;
    double p;
} url_pcts[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}};

static const char *url_name(const sg_run_info_t *info, size_t i)
{
    return info && info->url_names && i < info->n_url_names ? info->url_names[i] : NULL;
}

static const sg_url_info_t *url_seen(const sg_run_info_t *info, size_t i)
{
    return info && info->url_info && i < info->n_url_names ? &info->url_info[i] : NULL;
}

/* The URLs: every one named (a URL no request reached has zeros), or as many as the records had. */
static size_t n_urls(const sg_metrics_t *m, const sg_run_info_t *info)
{
    size_t n = sg_metrics_urls(m);
    return info && info->url_names && info->n_url_names > n ? info->n_url_names : n;
}

static json_t *dist(const sg_metrics_t *u, sg_metric_id_t id)
{
    const sg_hist_t *h = sg_metrics_hist(u, id);
    double scale = sg_metric_scale(id);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "unit", json_string(sg_metric_unit(id)));
    json_object_set_new(o, "avg", json_real(sg_hist_mean(h) * scale));
    json_object_set_new(o, "min", json_real((double)sg_hist_min(h) * scale));
    json_object_set_new(o, "max", json_real((double)sg_hist_max(h) * scale));
    for (size_t k = 0; k < sizeof url_pcts / sizeof url_pcts[0]; k++)
        json_object_set_new(o, url_pcts[k].key, json_real(sg_hist_percentile(h, url_pcts[k].p) * scale));
    json_object_set_new(o, "count", json_integer((json_int_t)sg_hist_count(h)));
    return o;
}

json_t *sg_export_urls_json(const sg_metrics_t *m, const sg_run_info_t *info)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (size_t i = 0; i < n_urls(m, info); i++) {
        const sg_metrics_t *u = sg_metrics_url(m, i);
        const sg_url_info_t *seen = url_seen(info, i);
        const char *name = url_name(info, i);
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) < 0) {
            json_decref(a);
            return NULL;
        }
        json_object_set_new(o, "index", json_integer((json_int_t)i));
        json_object_set_new(o, "url", name ? json_string(name) : json_null());
        json_object_set_new(o, "request_count", json_integer(u ? (json_int_t)sg_metrics_ok(u) : 0));
        json_object_set_new(o, "error_request_count", json_integer(u ? (json_int_t)sg_metrics_errors(u) : 0));
        json_object_set_new(o, "cancelled_request_count", json_integer(u ? (json_int_t)sg_metrics_cancelled(u) : 0));
        for (size_t k = 0; u && k < sizeof url_metrics / sizeof url_metrics[0]; k++)
            if (sg_hist_count(sg_metrics_hist(u, url_metrics[k])))
                json_object_set_new(o, sg_metric_tag(url_metrics[k]), dist(u, url_metrics[k]));
        if (seen) {
            json_object_set_new(o, "connect_failures", json_integer((json_int_t)seen->connect_failures));
            json_object_set_new(o, "rerouted_request_count", json_integer((json_int_t)seen->rerouted));
            json_object_set_new(o, "outages", json_integer((json_int_t)seen->outages));
            json_object_set_new(o, "first_down_s",
                                seen->first_down_s >= 0 ? json_real(seen->first_down_s) : json_null());
            json_object_set_new(o, "last_up_s", seen->last_up_s >= 0 ? json_real(seen->last_up_s) : json_null());
            json_object_set_new(o, "down_at_end", json_boolean(seen->down_at_end));
        }
    }
    return a;
}

static double pct(const sg_metrics_t *u, sg_metric_id_t id, double p)
{
    return u ? sg_hist_percentile(sg_metrics_hist(u, id), p) * sg_metric_scale(id) : NAN;
}

/* A number of ms, or "-" where the URL has none. */
static void ms(char *buf, size_t cap, const sg_metrics_t *u, sg_metric_id_t id, double p)
{
    if (!u || !sg_hist_count(sg_metrics_hist(u, id)))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.2f", pct(u, id, p));
}

void sg_export_urls_table(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    size_t n = n_urls(m, info);
    if (!n)
        return;
    fprintf(out, "Per URL (ms):  #  requests  errors  cancelled  TTFT p50  TTFT p99  latency p50  latency p99  URL\n");
    for (size_t i = 0; i < n; i++) {
        const sg_metrics_t *u = sg_metrics_url(m, i);
        char t50[32], t99[32], l50[32], l99[32];
        ms(t50, sizeof t50, u, SG_M_TTFT, 50);
        ms(t99, sizeof t99, u, SG_M_TTFT, 99);
        ms(l50, sizeof l50, u, SG_M_LATENCY, 50);
        ms(l99, sizeof l99, u, SG_M_LATENCY, 99);
        const char *name = url_name(info, i);
        fprintf(out, "%14s%3zu  %8" PRIu64 "  %6" PRIu64 "  %9" PRIu64 "  %8s  %8s  %11s  %11s  %s\n", "", i,
                u ? sg_metrics_ok(u) : 0, u ? sg_metrics_errors(u) : 0, u ? sg_metrics_cancelled(u) : 0, t50, t99, l50,
                l99, name ? name : "?");
    }
    for (size_t i = 0; i < n; i++) {
        const sg_url_info_t *seen = url_seen(info, i);
        if (!seen || !seen->outages)
            continue;
        const char *name = url_name(info, i);
        char when[48];
        if (seen->first_down_s <= 0)
            snprintf(when, sizeof when, "at the start");
        else
            snprintf(when, sizeof when, "from +%.3f s", seen->first_down_s);
        fprintf(out,
                "URL %zu (%s) refused connections %s: out of rotation %" PRIu64 " time%s, %" PRIu64
                " request%s re-routed to the other URLs, %" PRIu64 " failed connect%s; %s",
                i, name ? name : "?", when, seen->outages, seen->outages == 1 ? "" : "s", seen->rerouted,
                seen->rerouted == 1 ? "" : "s", seen->connect_failures, seen->connect_failures == 1 ? "" : "s",
                seen->down_at_end ? "still out at the end\n" : "");
        if (!seen->down_at_end)
            fprintf(out, "back from +%.3f s\n", seen->last_up_s);
    }
}

void sg_export_urls_csv(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    size_t n = n_urls(m, info);
    if (!n)
        return;
    fprintf(out, "\nURL,Index,Request Count,Error Request Count,Cancelled Request Count,TTFT p50 (ms),TTFT p99 (ms),"
                 "Request Latency p50 (ms),Request Latency p99 (ms),Connect Failures,Rerouted Requests,Outages\n");
    for (size_t i = 0; i < n; i++) {
        const sg_metrics_t *u = sg_metrics_url(m, i);
        const sg_url_info_t *seen = url_seen(info, i);
        const char *name = url_name(info, i);
        char t50[32], t99[32], l50[32], l99[32];
        ms(t50, sizeof t50, u, SG_M_TTFT, 50);
        ms(t99, sizeof t99, u, SG_M_TTFT, 99);
        ms(l50, sizeof l50, u, SG_M_LATENCY, 50);
        ms(l99, sizeof l99, u, SG_M_LATENCY, 99);
        /* quoted: a URL's path may hold a comma (a quote in it is doubled) */
        sg_csv_quoted(out, name);
        fprintf(out, ",%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i,
                u ? sg_metrics_ok(u) : 0, u ? sg_metrics_errors(u) : 0, u ? sg_metrics_cancelled(u) : 0, t50, t99, l50,
                l99, seen ? seen->connect_failures : 0, seen ? seen->rerouted : 0, seen ? seen->outages : 0);
    }
}
