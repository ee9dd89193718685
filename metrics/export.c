/*
 * Exporters of the merged metrics: the console table (GenAI-Perf's boxed look), the summary JSON (AIPerf's
 * layout) and the CSV (GenAI-Perf's two-part shape). All run once, after the workers joined.
 */
#include "sg_export_util.h"
#include "sg_metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The percentiles every distribution exports, in file order. */
static const struct {
    const char *key;
    double p;
} json_stats[] = {
    {"p1", 1},   {"p5", 5},   {"p10", 10}, {"p25", 25}, {"p50", 50},
    {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p99_9", 99.9},
};

static bool streamed_only(sg_metric_id_t id)
{
    switch (id) {
    case SG_M_TTFT:
    case SG_M_TTFT_FROM_SEND:
    case SG_M_TTST:
    case SG_M_ITL:
    case SG_M_INTER_CHUNK:
    case SG_M_TOKENS_PER_USER:
        return true;
    default:
        return false;
    }
}

/* Distributions with data, in table order (the enum's). */
static bool exported(const sg_metrics_t *m, const sg_run_info_t *info, sg_metric_id_t id)
{
    if (info && !info->streaming && streamed_only(id))
        return false;
    return sg_hist_count(sg_metrics_hist(m, id)) > 0;
}

static double stat_avg(const sg_metrics_t *m, sg_metric_id_t id)
{
    return sg_hist_mean(sg_metrics_hist(m, id)) * sg_metric_scale(id);
}

static double stat_min(const sg_metrics_t *m, sg_metric_id_t id)
{
    return (double)sg_hist_min(sg_metrics_hist(m, id)) * sg_metric_scale(id);
}

static double stat_max(const sg_metrics_t *m, sg_metric_id_t id)
{
    return (double)sg_hist_max(sg_metrics_hist(m, id)) * sg_metric_scale(id);
}

static double stat_std(const sg_metrics_t *m, sg_metric_id_t id)
{
    return sg_hist_stddev(sg_metrics_hist(m, id)) * sg_metric_scale(id);
}

static double stat_pct(const sg_metrics_t *m, sg_metric_id_t id, double p)
{
    return sg_hist_percentile(sg_metrics_hist(m, id), p) * sg_metric_scale(id);
}

static double per_sec(uint64_t n, double duration_s)
{
    return duration_s > 0 ? (double)n / duration_s : 0.0;
}

static int cmp_group_count(const void *a, const void *b)
{
    const sg_error_group_t *x = *(const sg_error_group_t *const *)a, *y = *(const sg_error_group_t *const *)b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* Error groups sorted by count, largest first (stable for ties: first seen first). Caller frees. */
static const sg_error_group_t **sorted_groups(const sg_metrics_t *m, size_t *n_out)
{
    const sg_error_group_t *groups;
    size_t n = sg_metrics_error_groups(m, &groups);
    *n_out = n;
    const sg_error_group_t **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = &groups[i];
    /* Insertion sort keeps ties in first-seen order; n is at most a few dozen. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp_group_count(&v[j - 1], &v[j]) > 0; j--) {
            const sg_error_group_t *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v;
}

/* ---------- console table ---------- */

#define N_COLS 6
#define CELL 40
#define MAX_ROWS (SG_M__COUNT + 4)

typedef struct {
    const char *label;
    char cell[N_COLS][CELL];
} row_t;

/* "%.*f" with thousands separators (1,915.41); N/A for what is not a finite number. */
static void fmt_num(char *out, size_t cap, double v, int decimals)
{
    char tmp[CELL];
    if (!isfinite(v) || fabs(v) >= 1e18) {
        snprintf(out, cap, "N/A");
        return;
    }
    snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);
    const char *p = tmp;
    size_t o = 0;
    if (*p == '-' && o + 1 < cap)
        out[o++] = *p++;
    size_t int_len = strcspn(p, ".");
    for (size_t i = 0; i < int_len && o + 2 < cap; i++) {
        if (i && (int_len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = p[i];
    }
    for (const char *q = p + int_len; *q && o + 1 < cap; q++)
        out[o++] = *q;
    out[o] = '\0';
}

static void na_row(row_t *r, const char *label, const char *first)
{
    r->label = label;
    snprintf(r->cell[0], CELL, "%s", first);
    for (int c = 1; c < N_COLS; c++)
        snprintf(r->cell[c], CELL, "N/A");
}

/* Display width of a UTF-8 string: one column per code point (no wide characters in our titles). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void put_repeat(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputs(s, out);
}

static void put_rule(FILE *out, const char *left, const char *fill, const char *mid, const char *right, size_t w0,
                     size_t wn)
{
    fputs(left, out);
    put_repeat(out, fill, w0 + 2);
    for (int c = 0; c < N_COLS; c++) {
        fputs(mid, out);
        put_repeat(out, fill, wn + 2);
    }
    fputs(right, out);
    fputc('\n', out);
}

static void put_cells(FILE *out, const char *bar, const char *label, const char *const *cells, size_t w0, size_t wn)
{
    fprintf(out, "%s %*s %s", bar, (int)w0, label, bar);
    for (int c = 0; c < N_COLS; c++)
        fprintf(out, " %*s %s", (int)wn, cells[c], bar);
    fputc('\n', out);
}

int sg_export_table(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    static const char *const heads[N_COLS] = {"avg", "min", "max", "p99", "p90", "p75"};
    row_t rows[MAX_ROWS];
    size_t n_rows = 0;
    double duration = sg_metrics_duration_s(m);

    for (int i = 0; i < SG_M__COUNT; i++) {
        sg_metric_id_t id = (sg_metric_id_t)i;
        if (!exported(m, info, id))
            continue;
        row_t *r = &rows[n_rows++];
        double v[N_COLS] = {stat_avg(m, id),       stat_min(m, id),       stat_max(m, id),
                            stat_pct(m, id, 99.0), stat_pct(m, id, 90.0), stat_pct(m, id, 75.0)};
        r->label = sg_metric_label(id);
        for (int c = 0; c < N_COLS; c++)
            fmt_num(r->cell[c], CELL, v[c], 2);
    }
    char num[CELL];
    fmt_num(num, sizeof(num), per_sec(sg_metrics_output_tokens(m), duration), 2);
    na_row(&rows[n_rows++], "Output token throughput (tokens/sec)", num);
    fmt_num(num, sizeof(num), per_sec(sg_metrics_ok(m), duration), 2);
    na_row(&rows[n_rows++], "Request throughput (per sec)", num);
    fmt_num(num, sizeof(num), (double)sg_metrics_ok(m), 0);
    na_row(&rows[n_rows++], "Request count", num);
    if (info && info->has_slos) {
        fmt_num(num, sizeof(num), per_sec(sg_metrics_good(m), duration), 2);
        na_row(&rows[n_rows++], "Goodput (per sec)", num);
    }

    size_t w0 = strlen("Statistic"), wn = 0;
    for (size_t i = 0; i < n_rows; i++) {
        size_t l = strlen(rows[i].label);
        w0 = l > w0 ? l : w0;
        for (int c = 0; c < N_COLS; c++) {
            size_t cl = strlen(rows[i].cell[c]);
            wn = cl > wn ? cl : wn;
        }
    }
    /* At least as wide as GenAI-Perf's narrowest tables, so short numbers still read as columns. */
    wn = wn < 6 ? 6 : wn;

    const char *title = info && info->title ? info->title : "surge | LLM Metrics";
    /* label cell + numeric cells (each padded by a space on both sides) + the N_COLS + 2 bars */
    size_t total = (w0 + 2) + N_COLS * (wn + 2) + N_COLS + 2;
    size_t tw = text_width(title);
    fprintf(out, "%*s%s\n", (int)(tw < total ? (total - tw) / 2 : 0), "", title);
    put_rule(out, "┏", "━", "┳", "┓", w0, wn);
    put_cells(out, "┃", "Statistic", heads, w0, wn);
    put_rule(out, "┡", "━", "╇", "┩", w0, wn);
    for (size_t i = 0; i < n_rows; i++) {
        const char *cells[N_COLS];
        for (int c = 0; c < N_COLS; c++)
            cells[c] = rows[i].cell[c];
        put_cells(out, "│", rows[i].label, cells, w0, wn);
    }
    put_rule(out, "└", "─", "┴", "┘", w0, wn);

    uint64_t errors = sg_metrics_errors(m);
    if (errors) {
        fmt_num(num, sizeof(num), (double)errors, 0);
        char all[CELL];
        fmt_num(all, sizeof(all), (double)(errors + sg_metrics_ok(m)), 0);
        fprintf(out, "Errors: %s of %s requests failed\n", num, all);
        size_t n_groups;
        const sg_error_group_t **g = sorted_groups(m, &n_groups);
        for (size_t i = 0; g && i < n_groups; i++) {
            fprintf(out, "  %s", sg_err_class_name(g[i]->cls));
            if (g[i]->http_status)
                fprintf(out, " %d", (int)g[i]->http_status);
            fprintf(out, ": %" PRIu64, g[i]->count);
            if (g[i]->message[0]) {
                char msg[SG_RECORD_MSG];
                sg_utf8_sanitize(msg, sizeof(msg), g[i]->message);
                fprintf(out, " (%s)", msg);
            }
            fputc('\n', out);
        }
        free(g);
    }
    if (info && info->resent_count)
        fprintf(out,
                "Re-sent: %" PRIu64 " requests that got no response on their first try (a reused connection the "
                "server had closed, or a refused HTTP/2 stream); latency still from the intended start\n",
                info->resent_count);
    if (info && info->warmup_count)
        fprintf(out, "Warmup requests (not counted): %" PRIu64 "\n", info->warmup_count);
    if (info && info->client_cpu_s > 0) {
        uint64_t sent = sg_metrics_ok(m) + sg_metrics_errors(m) + info->warmup_count;
        fprintf(out, "Client CPU: %.2f s (%.2f us per request)\n", info->client_cpu_s,
                sent ? info->client_cpu_s * 1e6 / (double)sent : 0.0);
    }
    uint64_t clamped = 0;
    for (int i = 0; i < SG_M__COUNT; i++)
        clamped += sg_hist_clamped(sg_metrics_hist(m, (sg_metric_id_t)i));
    if (clamped)
        fprintf(out, "Note: %" PRIu64 " values past the histogram range were clamped to its maximum\n", clamped);
    if (info && info->interrupted)
        fputs("Run INTERRUPTED: results cover what completed before SIGINT\n", out);
    fprintf(out, "Output sequence length source: usage %" PRIu64 ", tokenizer %" PRIu64 ", events %" PRIu64 "\n",
            sg_metrics_osl_source_count(m, SG_OSL_USAGE), sg_metrics_osl_source_count(m, SG_OSL_TOKENIZER),
            sg_metrics_osl_source_count(m, SG_OSL_EVENTS));
    sg_len_cmp_t c;
    sg_metrics_osl_cmp(m, &c);
    if (c.compared)
        fprintf(out,
                "  usage vs tokenizer: %" PRIu64 " of %" PRIu64
                " requests differ (mean |diff| %.2f, max |diff| %" PRIu64 " tokens)\n",
                c.differ, c.compared, (double)c.sum_abs_diff / (double)c.compared, c.max_abs_diff);
    else if (info && info->tokenizer)
        fputs("  usage vs tokenizer: no request had both counts\n", out);
    sg_metrics_isl_cmp(m, &c);
    if (c.compared)
        fprintf(out,
                "Input sequence length, server usage minus client (%s): mean %+.2f, min %+" PRId64 ", max %+" PRId64
                " over %" PRIu64 " requests (a chat server adds its template's tokens)\n",
                info && info->isl_source ? info->isl_source : "client count", (double)c.sum_diff / (double)c.compared,
                c.min_diff, c.max_diff, c.compared);
    return ferror(out) ? -EIO : 0;
}

/* ---------- summary JSON ---------- */

/* jansson refuses NaN and infinities; none should reach here, but a summary must never fail for it. */
static json_t *real(double v)
{
    return json_real(isfinite(v) ? v : 0.0);
}

static int set(json_t *obj, const char *key, json_t *v)
{
    return v && json_object_set_new(obj, key, v) == 0 ? 0 : -ENOMEM;
}

static json_t *single(const char *unit, json_t *avg)
{
    json_t *o = json_object();
    if (!o || set(o, "unit", json_string(unit)) || set(o, "avg", avg)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *distribution(const sg_metrics_t *m, sg_metric_id_t id)
{
    json_t *o = json_object();
    int rc = o ? 0 : -ENOMEM;
    rc = rc ? rc : set(o, "unit", json_string(sg_metric_unit(id)));
    rc = rc ? rc : set(o, "avg", real(stat_avg(m, id)));
    rc = rc ? rc : set(o, "min", real(stat_min(m, id)));
    rc = rc ? rc : set(o, "max", real(stat_max(m, id)));
    rc = rc ? rc : set(o, "std", real(stat_std(m, id)));
    for (size_t i = 0; i < SG_ARRAY_LEN(json_stats) && !rc; i++)
        rc = set(o, json_stats[i].key, real(stat_pct(m, id, json_stats[i].p)));
    rc = rc ? rc : set(o, "count", json_integer((json_int_t)sg_hist_count(sg_metrics_hist(m, id))));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *error_summary(const sg_metrics_t *m)
{
    json_t *arr = json_array();
    size_t n;
    const sg_error_group_t **g = sorted_groups(m, &n);
    if (!arr || !g)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        char msg[SG_RECORD_MSG];
        sg_utf8_sanitize(msg, sizeof(msg), g[i]->message);
        json_t *e = json_object();
        if (!e || json_array_append_new(arr, e))
            goto fail;
        if (set(e, "class", json_string(sg_err_class_name(g[i]->cls))) ||
            set(e, "code", g[i]->http_status ? json_integer(g[i]->http_status) : json_null()) ||
            set(e, "message", json_string(msg)) || set(e, "count", json_integer((json_int_t)g[i]->count)))
            goto fail;
    }
    free(g);
    return arr;
fail:
    free(g);
    json_decref(arr);
    return NULL;
}

static json_t *input_config(const char *text)
{
    if (!text)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (v)
        return v;
    /* Keep what the caller gave even when it does not parse: it is the only record of the run's settings. */
    size_t len = strlen(text);
    char *clean = malloc(len + 1);
    if (!clean)
        return NULL;
    sg_utf8_sanitize(clean, len + 1, text);
    v = json_string(clean);
    free(clean);
    return v;
}

static json_t *build_summary(const sg_metrics_t *m, const sg_run_info_t *info)
{
    json_t *root = json_object();
    if (!root)
        return NULL;
    double duration = sg_metrics_duration_s(m);
    int rc = 0;
    for (int i = 0; i < SG_M__COUNT && !rc; i++) {
        sg_metric_id_t id = (sg_metric_id_t)i;
        if (exported(m, info, id))
            rc = set(root, sg_metric_tag(id), distribution(m, id));
    }
    rc = rc ? rc
            : set(root, "output_token_throughput",
                  single("tokens/sec", real(per_sec(sg_metrics_output_tokens(m), duration))));
    rc = rc ? rc : set(root, "request_throughput", single("requests/sec", real(per_sec(sg_metrics_ok(m), duration))));
    rc = rc ? rc : set(root, "request_count", single("requests", json_integer((json_int_t)sg_metrics_ok(m))));
    rc = rc ? rc : set(root, "error_request_count", single("requests", json_integer((json_int_t)sg_metrics_errors(m))));
    rc = rc ? rc
            : set(root, "resent_request_count",
                  single("requests", json_integer((json_int_t)(info ? info->resent_count : 0))));
    rc = rc ? rc : set(root, "benchmark_duration", single("sec", real(duration)));
    if (info && info->has_slos)
        rc = rc ? rc : set(root, "goodput", single("requests/sec", real(per_sec(sg_metrics_good(m), duration))));
    rc = rc ? rc
            : set(root, "warmup_request_count",
                  single("requests", json_integer((json_int_t)(info ? info->warmup_count : 0))));
    if (info && info->client_cpu_s > 0)
        rc = rc ? rc : set(root, "client_cpu_time", single("sec", real(info->client_cpu_s)));
    rc = rc ? rc : set(root, "error_summary", error_summary(m));
    if (!rc) {
        json_t *src = json_object();
        rc = set(root, "osl_source", src);
        for (int s = SG_OSL_USAGE; s <= SG_OSL_EVENTS && !rc; s++)
            rc = set(src, sg_osl_source_name((sg_osl_source_t)s),
                     json_integer((json_int_t)sg_metrics_osl_source_count(m, (sg_osl_source_t)s)));
    }
    if (!rc) {
        sg_len_cmp_t c;
        sg_metrics_osl_cmp(m, &c);
        json_t *o = json_object();
        rc = set(root, "osl_disagreement", o);
        rc = rc ? rc : set(o, "compared", json_integer((json_int_t)c.compared));
        rc = rc ? rc : set(o, "count", json_integer((json_int_t)c.differ));
        rc = rc ? rc : set(o, "mean_abs_diff", real(c.compared ? (double)c.sum_abs_diff / (double)c.compared : 0));
        rc = rc ? rc : set(o, "max_abs_diff", json_integer((json_int_t)c.max_abs_diff));
        rc = rc ? rc : set(o, "mean_diff", real(c.compared ? (double)c.sum_diff / (double)c.compared : 0));
    }
    if (!rc) {
        sg_len_cmp_t c;
        sg_metrics_isl_cmp(m, &c);
        json_t *o = json_object();
        rc = set(root, "isl_server_minus_client", o);
        rc = rc ? rc : set(o, "compared", json_integer((json_int_t)c.compared));
        rc = rc ? rc : set(o, "differ", json_integer((json_int_t)c.differ));
        rc = rc ? rc : set(o, "mean_diff", real(c.compared ? (double)c.sum_diff / (double)c.compared : 0));
        rc = rc ? rc : set(o, "min_diff", json_integer((json_int_t)c.min_diff));
        rc = rc ? rc : set(o, "max_diff", json_integer((json_int_t)c.max_diff));
    }
    rc = rc ? rc : set(root, "isl_source", info && info->isl_source ? json_string(info->isl_source) : json_null());
    if (!rc && info && info->tokenizer) {
        char desc[1024]; /* a path need not be UTF-8: the summary must stay valid JSON */
        sg_utf8_sanitize(desc, sizeof(desc), info->tokenizer);
        rc = set(root, "tokenizer", json_string(desc));
    } else if (!rc) {
        rc = set(root, "tokenizer", json_null());
    }
    rc = rc ? rc : set(root, "was_interrupted", json_boolean(info && info->interrupted));
    rc = rc ? rc : set(root, "input_config", input_config(info ? info->input_config_json : NULL));
    if (rc) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int sg_export_json(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    json_t *root = build_summary(m, info);
    if (!root)
        return -ENOMEM;
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc) {
        json_decref(root);
        return rc;
    }
    /* 15 significant digits: every digit the data has, without %.17g's 0.10000000000000001. */
    if (json_dumpf(root, of.f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0 || fputc('\n', of.f) == EOF) {
        json_decref(root);
        sg_outfile_abort(&of);
        return -EIO;
    }
    json_decref(root);
    return sg_outfile_commit(&of);
}

/* ---------- CSV ---------- */

int sg_export_csv(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc)
        return rc;
    FILE *f = of.f;
    double duration = sg_metrics_duration_s(m);

    /* GenAI-Perf's CSV: a table of distributions, a blank line, then Metric,Value rows. Labels hold no comma. */
    fputs("Metric,avg,min,max", f);
    for (size_t i = 0; i < SG_ARRAY_LEN(json_stats); i++)
        fprintf(f, ",%s", json_stats[i].key);
    fputs(",std,count\n", f);
    for (int i = 0; i < SG_M__COUNT; i++) {
        sg_metric_id_t id = (sg_metric_id_t)i;
        if (!exported(m, info, id))
            continue;
        fprintf(f, "%s,%.2f,%.2f,%.2f", sg_metric_label(id), stat_avg(m, id), stat_min(m, id), stat_max(m, id));
        for (size_t s = 0; s < SG_ARRAY_LEN(json_stats); s++)
            fprintf(f, ",%.2f", stat_pct(m, id, json_stats[s].p));
        fprintf(f, ",%.2f,%" PRIu64 "\n", stat_std(m, id), sg_hist_count(sg_metrics_hist(m, id)));
    }
    fputs("\nMetric,Value\n", f);
    fprintf(f, "Output token throughput (tokens/sec),%.2f\n", per_sec(sg_metrics_output_tokens(m), duration));
    fprintf(f, "Request throughput (per sec),%.2f\n", per_sec(sg_metrics_ok(m), duration));
    fprintf(f, "Request count,%" PRIu64 "\n", sg_metrics_ok(m));
    fprintf(f, "Error request count,%" PRIu64 "\n", sg_metrics_errors(m));
    fprintf(f, "Benchmark duration (sec),%.3f\n", duration);
    if (info && info->has_slos)
        fprintf(f, "Goodput (per sec),%.2f\n", per_sec(sg_metrics_good(m), duration));
    fprintf(f, "Warmup request count,%" PRIu64 "\n", info ? info->warmup_count : 0);
    if (ferror(f)) {
        sg_outfile_abort(&of);
        return -EIO;
    }
    return sg_outfile_commit(&of);
}
