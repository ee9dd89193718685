/*
 * Exporters of the merged metrics: the console table (GenAI-Perf's boxed look), the summary JSON (AIPerf's
 * layout) and the CSV (GenAI-Perf's two-part shape). All run once, after the workers joined.
 */
#include "sg_export_util.h"
#include "sg_slo.h"
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

/* Distributions with data, in table order (the enum's). */
static bool exported(const sg_metrics_t *m, sg_metric_id_t id)
{
    /* the data decides: a stream's metrics appear when some response was a stream, whatever the flags said; the
     * time to first output token when some response reasoned first (else it is the TTFT again) */
    if (id == SG_M_TTFO && sg_hist_count(sg_metrics_hist(m, SG_M_REASONING)) == 0)
        return false;
    return sg_hist_count(sg_metrics_hist(m, id)) > 0;
}

/* Some response generated tokens, or none succeeded: an embeddings or rankings run has no output rows. */
static bool generated(const sg_metrics_t *m)
{
    return sg_metrics_ok(m) == 0 || exported(m, SG_M_OSL);
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

/* ---------- error groups, as people read them ---------- */

/* The reason phrases of the statuses inference servers and their proxies answer with. */
static const char *http_reason(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return NULL;
    }
}

void sg_error_group_label(const sg_error_group_t *g, char *buf, size_t cap)
{
    const char *cls = sg_err_class_name(g->cls);
    if (!g->http_status) {
        snprintf(buf, cap, "%s", cls);
    } else if (g->cls == SG_ERRC_HTTP) {
        const char *reason = http_reason(g->http_status);
        snprintf(buf, cap, "%s %d%s%s", cls, (int)g->http_status, reason ? " " : "", reason ? reason : "");
    } else {
        /* The status of a response whose head arrived before the failure: said as such, so "timeout 200" cannot
         * read as 200 ms. */
        snprintf(buf, cap, "%s (after HTTP %d headers)", cls, (int)g->http_status);
    }
}

/* ---------- console table ---------- */

/*
 * Row order of the table and the CSV: GenAI-Perf's and AIPerf's metrics in their order first (a reader of their
 * output finds the rows where they were), surge's own after them.
 */
static const sg_metric_id_t display_order[] = {
    SG_M_TTFT,
    SG_M_TTST,
    SG_M_TTFO,
    SG_M_TTFTC,
    SG_M_LATENCY,
    SG_M_ITL,
    SG_M_TOKENS_PER_USER,
    SG_M_OSL,
    SG_M_REASONING,
    SG_M_TOOL_CALLS,
    SG_M_TOOL_TOKENS,
    SG_M_ISL,
    SG_M_CACHED_ISL,
    SG_M_TTFT_FROM_SEND,
    SG_M_LATENCY_FROM_SEND,
    SG_M_INTER_CHUNK,
    SG_M_SCHEDULE_LAG,
    SG_M_HTTP_CONNECTING,
    SG_M_HTTP_TLS,
    SG_M_HTTP_SENDING,
    SG_M_HTTP_WAITING,
    SG_M_HTTP_RECEIVING,
    SG_M_HTTP_DURATION,
};
_Static_assert(SG_ARRAY_LEN(display_order) == SG_M__COUNT, "every metric has a place in the table");

/* The union of GenAI-Perf's console columns (p75) and AIPerf's (p50, std), each reader finding all of its own. */
#define N_COLS 8
#define CELL 40
#define MAX_ROWS (SG_M__COUNT + 12)
/* Longer labels put their unit on a second line, as GenAI-Perf and AIPerf do, so the table fits 120 columns. */
#define LABEL_WRAP 36

typedef struct {
    char label[64];
    char unit_line[32]; /* the unit on its own line when label was too long; "" otherwise */
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

static void set_label(row_t *r, const char *label)
{
    const char *open = strrchr(label, '(');
    size_t len = strlen(label);
    if (len > LABEL_WRAP && open && open > label + 1 && open[-1] == ' ') {
        snprintf(r->label, sizeof(r->label), "%.*s", (int)(open - 1 - label), label);
        snprintf(r->unit_line, sizeof(r->unit_line), "%s", open);
    } else {
        snprintf(r->label, sizeof(r->label), "%s", label);
        r->unit_line[0] = '\0';
    }
}

/* A single-valued row: the value under avg, N/A elsewhere. */
static void value_row(row_t *r, const char *label, double v, int decimals)
{
    set_label(r, label);
    fmt_num(r->cell[0], CELL, v, decimals);
    for (int c = 1; c < N_COLS; c++)
        snprintf(r->cell[c], CELL, "N/A");
}

static void dist_row(row_t *r, const sg_metrics_t *m, sg_metric_id_t id)
{
    double v[N_COLS] = {stat_avg(m, id),       stat_min(m, id),       stat_max(m, id),       stat_pct(m, id, 99.0),
                        stat_pct(m, id, 90.0), stat_pct(m, id, 75.0), stat_pct(m, id, 50.0), stat_std(m, id)};
    set_label(r, sg_metric_label(id));
    for (int c = 0; c < N_COLS; c++)
        fmt_num(r->cell[c], CELL, v[c], 2);
}

/* The rows of the table: the distributions with data, then the run's single values. Returns how many. */
static size_t table_rows(row_t *rows, const sg_metrics_t *m, const sg_run_info_t *info)
{
    size_t n = 0;
    double duration = sg_metrics_duration_s(m);
    for (size_t i = 0; i < SG_ARRAY_LEN(display_order); i++)
        if (exported(m, display_order[i]) &&
            (!sg_metric_is_trace(display_order[i]) || (info && info->show_trace_timing)))
            dist_row(&rows[n++], m, display_order[i]);
    uint64_t out_tok = sg_metrics_output_tokens(m), in_tok = sg_metrics_input_tokens(m);
    bool output = generated(m);
    if (output)
        value_row(&rows[n++], "Output token throughput (tokens/sec)", per_sec(out_tok, duration), 2);
    value_row(&rows[n++], "Input token throughput (tokens/sec)", per_sec(in_tok, duration), 2);
    if (output)
        value_row(&rows[n++], "Total token throughput (tokens/sec)", per_sec(out_tok + in_tok, duration), 2);
    value_row(&rows[n++], "Request throughput (per sec)", per_sec(sg_metrics_ok(m), duration), 2);
    value_row(&rows[n++], "Offered request rate (per sec)", sg_metrics_offered_rate(m), 2);
    if (sg_metrics_tool_calls(m) && out_tok)
        value_row(&rows[n++], "Tool-call share of output (%)",
                  100.0 * (double)sg_metrics_tool_tokens(m) / (double)out_tok, 2);
    if (info && info->has_slos)
        value_row(&rows[n++], "Goodput (per sec)", per_sec(sg_metrics_good(m), duration), 2);
    value_row(&rows[n++], "Request count", (double)sg_metrics_ok(m), 0);
    value_row(&rows[n++], "Error request count", (double)sg_metrics_errors(m), 0);
    value_row(&rows[n++], "Cancelled request count", (double)sg_metrics_cancelled(m), 0);
    value_row(&rows[n++], "Benchmark duration (sec)", duration, 2);
    return n;
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

static void put_rule(FILE *out, const char *left, const char *fill, const char *mid, const char *right, const size_t *w)
{
    fputs(left, out);
    put_repeat(out, fill, w[0] + 2);
    for (int c = 1; c <= N_COLS; c++) {
        fputs(mid, out);
        put_repeat(out, fill, w[c] + 2);
    }
    fputs(right, out);
    fputc('\n', out);
}

/* cells[0] is the label, cells[1..N_COLS] the numbers; all right-aligned, as in GenAI-Perf and AIPerf. */
static void put_cells(FILE *out, const char *bar, const char *const *cells, const size_t *w)
{
    fputs(bar, out);
    for (int c = 0; c <= N_COLS; c++)
        fprintf(out, " %*s %s", (int)w[c], cells[c], bar);
    fputc('\n', out);
}

static void put_box(FILE *out, const row_t *rows, size_t n_rows, const char *title)
{
    static const char *const heads[N_COLS + 1] = {"Statistic", "avg", "min", "max", "p99", "p90", "p75", "p50", "std"};
    size_t w[N_COLS + 1];
    for (int c = 0; c <= N_COLS; c++)
        w[c] = strlen(heads[c]);
    for (size_t i = 0; i < n_rows; i++) {
        size_t l = strlen(rows[i].label), u = strlen(rows[i].unit_line);
        w[0] = l > w[0] ? l : w[0];
        w[0] = u > w[0] ? u : w[0];
        for (int c = 0; c < N_COLS; c++) {
            size_t cl = strlen(rows[i].cell[c]);
            w[c + 1] = cl > w[c + 1] ? cl : w[c + 1];
        }
    }
    /* label cell + numeric cells (each padded by a space on both sides) + the N_COLS + 2 bars */
    size_t total = N_COLS + 2;
    for (int c = 0; c <= N_COLS; c++)
        total += w[c] + 2;
    size_t tw = text_width(title);
    fprintf(out, "%*s%s\n", (int)(tw < total ? (total - tw) / 2 : 0), "", title);
    put_rule(out, "┏", "━", "┳", "┓", w);
    put_cells(out, "┃", heads, w);
    put_rule(out, "┡", "━", "╇", "┩", w);
    for (size_t i = 0; i < n_rows; i++) {
        const char *cells[N_COLS + 1] = {rows[i].label};
        for (int c = 0; c < N_COLS; c++)
            cells[c + 1] = rows[i].cell[c];
        put_cells(out, "│", cells, w);
        if (rows[i].unit_line[0]) {
            const char *more[N_COLS + 1] = {rows[i].unit_line};
            for (int c = 1; c <= N_COLS; c++)
                more[c] = "";
            put_cells(out, "│", more, w);
        }
    }
    put_rule(out, "└", "─", "┴", "┘", w);
}

static void put_errors(FILE *out, const sg_metrics_t *m)
{
    uint64_t errors = sg_metrics_errors(m);
    if (!errors)
        return;
    char num[CELL], all[CELL];
    fmt_num(num, sizeof(num), (double)errors, 0);
    fmt_num(all, sizeof(all), (double)(errors + sg_metrics_ok(m)), 0);
    fprintf(out, "Errors: %s of %s requests failed\n", num, all);
    size_t n_groups;
    const sg_error_group_t **g = sorted_groups(m, &n_groups);
    for (size_t i = 0; g && i < n_groups; i++) {
        char label[96];
        sg_error_group_label(g[i], label, sizeof(label));
        fprintf(out, "  %s: %" PRIu64, label, g[i]->count);
        if (g[i]->message[0]) {
            char msg[SG_RECORD_MSG];
            sg_utf8_sanitize(msg, sizeof(msg), g[i]->message);
            fprintf(out, " (%s)", msg);
        }
        fputc('\n', out);
    }
    free(g);
}

/* A metric's histogram range in the metric's unit ("3.6e+06 ms", "1.67772e+07 tokens", "1e+09 tokens/sec/user"). */
static void range_text(sg_metric_id_t id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%g %s", (double)sg_metric_range_max(id) * sg_metric_scale(id), sg_metric_unit(id));
}

/* Values past a metric's histogram range are recorded at its top: one line per metric that had any, naming it. */
static void put_clamped(FILE *out, const sg_metrics_t *m)
{
    for (int i = 0; i < SG_M__COUNT; i++) {
        uint64_t n = sg_hist_clamped(sg_metrics_hist(m, (sg_metric_id_t)i));
        if (!n)
            continue;
        char range[64];
        range_text((sg_metric_id_t)i, range, sizeof range);
        fprintf(out, "Note: %s: %" PRIu64 " value%s above the histogram's %s range %s clamped to it\n",
                sg_metric_tag((sg_metric_id_t)i), n, n == 1 ? "" : "s", range, n == 1 ? "was" : "were");
    }
}

/* The percentiles the table shows, and which of them the censored requests can be said to push up. */
static const struct {
    const char *key;
    double p;
} table_pcts[] = {{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p99", 99}};

/*
 * Requests surge cancelled: how many, why, how long they had waited. They are in no distribution; each one's latency
 * is at least its wait, so when counting them at their waits lifts a percentile the table shows, say by how much.
 */
/* Requests the cancellation test cut (--request-cancellation-rate): how many, and how long after their last byte. */
static void put_cancel_tests(FILE *out, const sg_metrics_t *m)
{
    uint64_t n = sg_metrics_cancel_tests(m);
    if (!n)
        return;
    const sg_hist_t *t = sg_metrics_cancel_test_time(m);
    char num[CELL], med[CELL], max[CELL];
    fmt_num(num, sizeof num, (double)n, 0);
    fmt_num(med, sizeof med, sg_hist_percentile(t, 50) * 1e-6, 2);
    fmt_num(max, sizeof max, (double)sg_hist_max(t) * 1e-6, 2);
    fprintf(out,
            "Cancelled by the test: %s request%s (--request-cancellation-rate), neither ok nor failed (in no error "
            "count, rate or goodput); cut %s ms median, %s ms max after the last byte was sent\n",
            num, n == 1 ? "" : "s", med, max);
}

static void put_cancelled(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    uint64_t n = sg_metrics_cancelled(m);
    if (!n)
        return;
    const sg_hist_t *w = sg_metrics_cancel_wait(m);
    char num[CELL], med[CELL], max[CELL];
    fmt_num(num, sizeof num, (double)n, 0);
    fmt_num(med, sizeof med, sg_hist_percentile(w, 50) * 1e-6, 2);
    fmt_num(max, sizeof max, (double)sg_hist_max(w) * 1e-6, 2);
    const char *why = info && info->cancelled_why ? info->cancelled_why : NULL;
    fprintf(out,
            "Cancelled: %s request%s stopped by surge%s%s%s, neither ok nor failed (in no error count or rate); they "
            "had waited %s ms median, %s ms max from their intended start\n",
            num, n == 1 ? "" : "s", why ? " (" : "", why ? why : "", why ? ")" : "", med, max);
    fputs("  censored: in no distribution above; each one's latency is at least its wait\n", out);
    if (sg_hist_count(sg_metrics_hist(m, SG_M_LATENCY)) == 0) {
        fputs("  no request completed: the run's latency percentiles are unknown, at least the waits above\n", out);
        return;
    }
    bool said = false;
    for (size_t i = 0; i < SG_ARRAY_LEN(table_pcts); i++) {
        double shown = stat_pct(m, SG_M_LATENCY, table_pcts[i].p);
        double least = sg_metrics_latency_at_least(m, table_pcts[i].p) * 1e-6;
        if (!(least > shown))
            continue;
        char a[CELL], b[CELL];
        fmt_num(a, sizeof a, least, 2);
        fmt_num(b, sizeof b, shown, 2);
        fprintf(out, "%s %s at least %s ms (table: %s)", said ? "," : "  with them at their waits, request latency",
                table_pcts[i].key, a, b);
        said = true;
    }
    if (said)
        fputs("\n", out);
}

/* Why a successful request can lack a metric an SLO names; NULL for the metrics every such request has. */
static const char *unmeasurable_reason(sg_metric_id_t id)
{
    switch (id) {
    case SG_M_TTFT:
    case SG_M_TTFT_FROM_SEND:
        return "no content event";
    case SG_M_TTFO:
        return "no content event after the reasoning";
    case SG_M_TTST:
    case SG_M_INTER_CHUNK:
        return "fewer than 2 content events";
    case SG_M_ITL:
        return "no content event, or OSL below 2";
    case SG_M_TOKENS_PER_USER:
        return "no content event, OSL below 2, or all tokens at once";
    case SG_M_TTFTC:
        return "no streamed tool-call arguments";
    default:
        return NULL;
    }
}

/* One SLO as written on the command line's terms: "time_to_first_token <= 500 ms". */
static void slo_text(const sg_slo_t *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s %s %g %s", sg_metric_tag(s->metric),
             sg_metric_larger_is_better(s->metric) ? ">=" : "<=", s->threshold, sg_metric_unit(s->metric));
}

static void put_goodput(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    const sg_slo_t *slos;
    const sg_slo_tally_t *t;
    size_t n = sg_metrics_slo_tallies(m, &slos, &t);
    if (!info || !info->has_slos || n == 0)
        return;
    fprintf(out, "Goodput: %" PRIu64 " of %" PRIu64 " successful requests met every SLO", sg_metrics_good(m),
            sg_metrics_ok(m));
    uint64_t unmeasurable = 0;
    for (size_t i = 0; i < n; i++)
        unmeasurable += t[i].not_measurable;
    fputs(unmeasurable ? " (a request without a constrained metric is not good)\n" : "\n", out);
    for (size_t i = 0; i < n; i++) {
        char text[96];
        slo_text(&slos[i], text, sizeof(text));
        fprintf(out, "  %s: met %" PRIu64 ", missed %" PRIu64 ", not measurable %" PRIu64, text, t[i].met, t[i].missed,
                t[i].not_measurable);
        const char *why = unmeasurable_reason(slos[i].metric);
        if (t[i].not_measurable && why)
            fprintf(out, " (%s)", why);
        fputc('\n', out);
    }
}

/*
 * usage.completion_tokens against the --tokenizer count of the same text. When they differ on every request the
 * likeliest cause is a tokenizer that is not the model's: say so, with the tokenizer's name and the mean gap.
 */
static void put_osl_compare(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    sg_len_cmp_t c;
    sg_metrics_osl_cmp(m, &c);
    if (!c.compared) {
        if (info && info->tokenizer)
            fputs("  usage vs tokenizer: no request had both counts\n", out);
        return;
    }
    fprintf(out,
            "  usage vs tokenizer: %" PRIu64 " of %" PRIu64 " requests differ (mean |diff| %.2f, max |diff| %" PRIu64
            " tokens)\n",
            c.differ, c.compared, (double)c.sum_abs_diff / (double)c.compared, c.max_abs_diff);
    if (c.differ != c.compared)
        return;
    char desc[512];
    sg_utf8_sanitize(desc, sizeof(desc), info && info->tokenizer ? info->tokenizer : "the tokenizer");
    fprintf(out,
            "Hint: the server's usage.completion_tokens and --tokenizer %s differ on every one of the %" PRIu64
            " compared requests (usage minus tokenizer: mean %+.2f tokens); it is probably not the model's "
            "tokenizer: give the model's own (its tokenizer.json, or its Hugging Face id)",
            desc, c.compared, (double)c.sum_diff / (double)c.compared);
    if (c.min_diff == c.max_diff && (c.min_diff == 1 || c.min_diff == -1))
        fputs("; a constant difference of one is also what a server that counts a stop token it does not send "
              "shows",
              out);
    fputc('\n', out);
}

/* v to about sig significant digits in fixed notation (1,235; 50.51; 0.01961), trailing zeros dropped. */
static void fmt_sig(char *out, size_t cap, double v, int sig)
{
    int decimals = 0;
    if (isfinite(v) && v != 0) {
        decimals = sig - 1 - (int)floor(log10(fabs(v)));
        decimals = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    }
    fmt_num(out, cap, v, decimals);
    if (decimals > 0 && strchr(out, '.')) {
        size_t n = strlen(out);
        while (n > 0 && out[n - 1] == '0')
            out[--n] = '\0';
        if (n > 0 && out[n - 1] == '.')
            out[--n] = '\0';
    }
}

/* A verdict's interval as "lo..hi" (an end the evidence cannot bound: "-inf" / "inf"), or "-" when it has none. */
static void interval_text(char *buf, size_t cap, const sg_slo_verdict_t *v)
{
    if (!v->measurable || !v->has_interval) {
        snprintf(buf, cap, "-");
        return;
    }
    char lo[CELL], hi[CELL];
    if (isinf(v->lo))
        snprintf(lo, sizeof lo, "-inf");
    else
        fmt_sig(lo, sizeof lo, v->lo, 4);
    if (isinf(v->hi))
        snprintf(hi, sizeof hi, "inf");
    else
        fmt_sig(hi, sizeof hi, v->hi, 4);
    snprintf(buf, cap, "%s..%s", lo, hi);
}

/*
 * The --slo verdicts after the metrics: one line per SLO, its target, what the run measured, how many values that
 * rests on, the interval at the confidence level, and PASS, FAIL or INCONCLUSIVE.
 */
static void put_verdicts(FILE *out, const sg_run_info_t *info)
{
    if (!info || !info->n_slo_checks)
        return;
    size_t passed = 0, failed = 0, n = info->n_slo_checks < SG_SLO_MAX ? info->n_slo_checks : SG_SLO_MAX;
    char target[SG_SLO_MAX][CELL], measured[SG_SLO_MAX][CELL], count[SG_SLO_MAX][CELL], ival[SG_SLO_MAX][2 * CELL + 8];
    double level = info->slo_verdicts[0].level;
    char ihead[32];
    snprintf(ihead, sizeof ihead, "%g%% interval", 100 * level);
    const char *heads[] = {"SLO", "target", "measured", "n", ihead, "unit"};
    enum { NCOL = 6 };
    size_t w[NCOL];
    for (int c = 0; c < NCOL; c++)
        w[c] = strlen(heads[c]);
    for (size_t i = 0; i < n; i++) {
        const sg_slo_check_t *c = &info->slo_checks[i];
        const sg_slo_verdict_t *v = &info->slo_verdicts[i];
        passed += v->outcome == SG_SLO_PASS;
        failed += v->outcome == SG_SLO_FAIL;
        /* the target as given; the measured value to 4 significant digits, never in exponent form */
        snprintf(target[i], CELL, "%.15g", c->target);
        if (v->measurable)
            fmt_sig(measured[i], CELL, v->measured, 4);
        else
            snprintf(measured[i], CELL, "-");
        if (v->n)
            snprintf(count[i], CELL, "%" PRIu64, v->n);
        else
            snprintf(count[i], CELL, "-");
        interval_text(ival[i], sizeof ival[i], v);
        const size_t lens[NCOL] = {strlen(c->text),  strlen(target[i]), strlen(measured[i]),
                                   strlen(count[i]), strlen(ival[i]),   strlen(sg_slo_unit(c))};
        for (int k = 0; k < NCOL; k++)
            w[k] = lens[k] > w[k] ? lens[k] : w[k];
    }
    fprintf(out, "SLO verdicts at %g%% confidence: %zu of %zu passed, %zu failed, %zu inconclusive\n", 100 * level,
            passed, n, failed, n - passed - failed);
    fprintf(out, "  %-*s  %*s  %*s  %*s  %*s  %-*s  %s\n", (int)w[0], heads[0], (int)w[1], heads[1], (int)w[2],
            heads[2], (int)w[3], heads[3], (int)w[4], heads[4], (int)w[5], heads[5], "verdict");
    for (size_t i = 0; i < n; i++) {
        const sg_slo_check_t *c = &info->slo_checks[i];
        const sg_slo_verdict_t *v = &info->slo_verdicts[i];
        char clustered[96] = "";
        if (v->dispersion > 1 && v->outcome == SG_SLO_INCONCLUSIVE)
            snprintf(clustered, sizeof clustered,
                     "INCONCLUSIVE (the interval holds the target; clustered x%.1f: as %.0f independent)",
                     v->dispersion, floor((double)v->n / v->dispersion));
        const char *verdict = clustered[0]                        ? clustered
                              : v->outcome == SG_SLO_PASS         ? "PASS"
                              : v->outcome == SG_SLO_INCONCLUSIVE ? "INCONCLUSIVE (the interval holds the target)"
                              : v->measurable                     ? "FAIL"
                              : c->kind == SG_SLO_DIST            ? "FAIL (not measurable: no request had this metric)"
                                                                  : "FAIL (not measurable: no request was measured)";
        fprintf(out, "  %-*s  %*s  %*s  %*s  %*s  %-*s  %s\n", (int)w[0], c->text, (int)w[1], target[i], (int)w[2],
                measured[i], (int)w[3], count[i], (int)w[4], ival[i], (int)w[5], sg_slo_unit(c), verdict);
    }
}

/* Client stalls: how many, and the first few windows, so a client stall is not read as a slow server. */
static void put_stalls(FILE *out, const sg_run_info_t *info)
{
    if (!info || info->stall_threshold_ms <= 0 || info->n_stalls + info->stalls_dropped == 0)
        return;
    uint64_t n = info->n_stalls + info->stalls_dropped;
    fprintf(out,
            "Client stalls: %" PRIu64 " window%s in which a worker ran more than %g ms behind its schedule (the "
            "client, not the server: requests due then went out late, and what arrived was timed late)\n",
            n, n == 1 ? "" : "s", info->stall_threshold_ms);
    size_t show = info->n_stalls < 5 ? info->n_stalls : 5;
    for (size_t i = 0; i < show; i++) {
        const sg_stall_t *x = &info->stalls[i];
        fprintf(out, "  worker %u: from +%.3f s to +%.3f s, up to %.0f ms behind, %" PRIu64 " requests due in it\n",
                x->worker, x->start_s, x->end_s, x->max_lag_ms, x->requests);
    }
    if (n > show)
        fprintf(out, "  and %" PRIu64 " more (profile_export_surge.json: client_stalls)\n", n - show);
}

/* The server unreachable: each window, so an outage reads as one, not as a count of failed requests. */
static void put_unreach(FILE *out, const sg_run_info_t *info)
{
    if (!info || info->n_unreach + info->unreach_dropped == 0)
        return;
    for (size_t i = 0; i < info->n_unreach; i++) {
        const sg_unreach_t *x = &info->unreach[i];
        fprintf(out,
                "Server unreachable from +%.3f s to +%.3f s%s: %" PRIu64 " connection attempt%s refused (failed, "
                "class connect), up to %" PRIu64 " requests or slots waiting\n",
                x->start_s, x->end_s, x->recovered ? "" : " (the end of the run: it did not come back)", x->refused,
                x->refused == 1 ? "" : "s", x->waiting);
    }
    if (info->unreach_dropped)
        fprintf(out, "  and %" PRIu64 " more windows not listed\n", info->unreach_dropped);
}

/* Multi-turn sessions: one line per turn index under the table. */
static void put_turns(FILE *out, const sg_metrics_t *m)
{
    if (!sg_metrics_turns(m))
        return;
    fprintf(out, "Per turn (ms; ISL/OSL tokens):  turn  requests  errors  TTFT p50  TTFT p99  latency p50  latency p99"
                 "  ISL avg  OSL avg\n");
    for (size_t i = 0; i < sg_metrics_turns(m); i++) {
        const sg_metrics_t *t = sg_metrics_turn(m, i);
        if (!t)
            continue;
        bool ttft = sg_hist_count(sg_metrics_hist(t, SG_M_TTFT)) > 0;
        fprintf(out, "%31s%4zu%s  %8" PRIu64 "  %6" PRIu64 "  %8.2f  %8.2f  %11.2f  %11.2f  %7.1f  %7.1f\n", "", i,
                i == SG_METRICS_TURNS_MAX - 1 ? "+" : " ", sg_metrics_ok(t), sg_metrics_errors(t),
                ttft ? stat_pct(t, SG_M_TTFT, 50) : 0.0, ttft ? stat_pct(t, SG_M_TTFT, 99) : 0.0,
                stat_pct(t, SG_M_LATENCY, 50), stat_pct(t, SG_M_LATENCY, 99), stat_avg(t, SG_M_ISL),
                stat_avg(t, SG_M_OSL));
    }
}

int sg_export_table(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info)
{
    row_t rows[MAX_ROWS];
    size_t n_rows = table_rows(rows, m, info);
    put_box(out, rows, n_rows, info && info->title ? info->title : "surge | LLM Metrics");
    put_turns(out, m);
    sg_export_urls_table(out, m, info);
    put_errors(out, m);
    put_cancelled(out, m, info);
    put_cancel_tests(out, m);
    if (sg_metrics_ramp(m))
        fprintf(out,
                "Ramp: %" PRIu64 " of the measured requests were intended inside the ramp (\"ramp\": true in "
                "the JSONL)\n",
                sg_metrics_ramp(m));
    put_goodput(out, m, info);
    put_verdicts(out, info);
    if (info && info->resent_count)
        fprintf(out,
                "Re-sent: %" PRIu64 " requests that got no response on their first try (a reused connection the "
                "server had closed, or a refused HTTP/2 stream); latency still from the intended start\n",
                info->resent_count);
    if (info && info->warmup_count)
        fprintf(out, "Warmup requests (not counted): %" PRIu64 "\n", info->warmup_count);
    if (info && info->client_cpu_s > 0) {
        uint64_t sent = sg_metrics_ok(m) + sg_metrics_errors(m) + sg_metrics_cancelled(m) + sg_metrics_cancel_tests(m) +
                        info->warmup_count;
        char split[96] = "";
        if (info->client_cpu_user_s + info->client_cpu_sys_s > 0)
            snprintf(split, sizeof split, "user %.2f s, system %.2f s; ", info->client_cpu_user_s,
                     info->client_cpu_sys_s);
        fprintf(out, "Client CPU, load phase: %.2f s (%s%.2f us per request%s%s)\n", info->client_cpu_s, split,
                sent ? info->client_cpu_s * 1e6 / (double)sent : 0.0, info->io_backend ? ", " : "",
                info->io_backend ? info->io_backend : "");
    }
    double proc_cpu = info ? info->process_cpu_user_s + info->process_cpu_sys_s : 0;
    if (proc_cpu > 0)
        fprintf(out,
                "Client CPU, whole process: %.2f s (user %.2f s, system %.2f s; set-up, connections and teardown "
                "included)\n",
                proc_cpu, info->process_cpu_user_s, info->process_cpu_sys_s);
    if (info && info->streaming && sg_metrics_output_tokens(m) > 0 && (proc_cpu > 0 || info->client_cpu_s > 0)) {
        char a[32] = "-", b[32] = "-";
        double tok = (double)sg_metrics_output_tokens(m);
        if (proc_cpu > 0)
            fmt_num(a, sizeof a, tok / proc_cpu, 0);
        if (info->client_cpu_s > 0)
            fmt_num(b, sizeof b, tok / info->client_cpu_s, 0);
        fprintf(out, "Output tokens per client CPU-second: %s (whole process), %s (load phase)\n", a, b);
    }
    put_stalls(out, info);
    if (info && info->timestamp_source) {
        fprintf(out, "Timestamps: %s", info->timestamp_source);
        if (strcmp(info->timestamp_source, "mixed") == 0)
            fprintf(out, " (%" PRIu64 " reads stamped by the kernel, %" PRIu64 " timed by the client's clock)",
                    info->rx_stamped, info->rx_unstamped);
        else if (strcmp(info->timestamp_source, "kernel") == 0)
            fprintf(out, " (the kernel's receive stamp of every read)");
        else if (info->rx_stamped + info->rx_unstamped == 0 && info->stamp_refused == 0)
            fprintf(out, " (the client's clock when it handled each read)");
        else
            fprintf(out, " (the kernel gave no stamps: the client's clock when it handled each read)");
        if (info->events_shared)
            fprintf(out, "; %" PRIu64 " content events came in one read with the one before and carry its time",
                    info->events_shared);
        if (info->clock_steps)
            fprintf(out, "; the realtime clock was stepped %" PRIu64 " times during the run (largest %.3f ms)",
                    info->clock_steps, (double)info->clock_step_max_ns / 1e6);
        fputc('\n', out);
    }
    if (info && info->coalesce_method && info->loop_waits)
        fprintf(out,
                "Client wake-ups: %" PRIu64 " (%.1f completions each; %" PRIu64 " coalesced, --coalesce-us %u%s%s)\n",
                info->loop_waits, (double)info->loop_completions / (double)info->loop_waits, info->loop_coalesced,
                info->coalesce_us, info->coalesce_us ? ", " : "", info->coalesce_us ? info->coalesce_method : "");
    put_unreach(out, info);
    if (info)
        sg_export_gpu_table(out, info->gpu_json);
    put_clamped(out, m);
    if (sg_metrics_per_user_undefined(m))
        fprintf(out,
                "Note: output_token_throughput_per_user: %" PRIu64 " requests left out: all their tokens arrived at "
                "once (latency = TTFT, so ITL is 0 and 1/ITL has no value), as AIPerf leaves them out\n",
                sg_metrics_per_user_undefined(m));
    if (info && info->interrupted)
        fprintf(out, "Run INTERRUPTED: results cover what completed before %s\n",
                info->interrupted_by ? info->interrupted_by : "the interrupt");
    if (generated(m))
        fprintf(out, "Output sequence length source: usage %" PRIu64 ", tokenizer %" PRIu64 ", events %" PRIu64 "\n",
                sg_metrics_osl_source_count(m, SG_OSL_USAGE), sg_metrics_osl_source_count(m, SG_OSL_TOKENIZER),
                sg_metrics_osl_source_count(m, SG_OSL_EVENTS));
    put_osl_compare(out, m, info);
    sg_len_cmp_t c;
    sg_metrics_isl_cmp(m, &c);
    if (c.compared)
        fprintf(out,
                "Input sequence length, server usage minus client (%s): mean %+.2f, min %+" PRId64 ", max %+" PRId64
                " over %" PRIu64 " requests (a chat server adds its template's tokens)\n",
                info && info->isl_source ? info->isl_source : "client count", (double)c.sum_diff / (double)c.compared,
                c.min_diff, c.max_diff, c.compared);
    sg_cached_t k;
    sg_metrics_cached(m, &k);
    if (k.requests) {
        char a[32], b[32];
        fmt_num(a, sizeof a, (double)k.cached, 0);
        fmt_num(b, sizeof b, (double)k.prompt, 0);
        fprintf(out,
                "Cached input tokens (server): %s of %s prompt tokens (%.1f%%) over the %" PRIu64
                " requests whose server said\n",
                a, b, k.prompt ? 100.0 * (double)k.cached / (double)k.prompt : 0.0, k.requests);
    }
    json_t *reuse = info && info->prompt_reuse_json ? json_loads(info->prompt_reuse_json, 0, NULL) : NULL;
    if (reuse) {
        char line[400];
        sg_prompt_reuse_line(reuse, line, sizeof line);
        fprintf(out, "Prompts: %s\n", line);
        json_decref(reuse);
    }
    json_t *media = info && info->media_json ? json_loads(info->media_json, 0, NULL) : NULL;
    if (media) {
        char line[400];
        sg_media_line(media, line, sizeof line);
        fprintf(out, "Media: %s\n", line);
        json_decref(media);
    }
    return ferror(out) ? -EIO : 0;
}

void sg_media_line(const json_t *o, char *line, size_t cap)
{
    double images = json_number_value(json_object_get(o, "images_per_request"));
    double audios = json_number_value(json_object_get(o, "audios_per_request"));
    double bytes = json_number_value(json_object_get(o, "media_bytes_per_request"));
    double share = json_number_value(json_object_get(o, "media_share_of_request_bytes"));
    json_int_t sent = json_integer_value(json_object_get(o, "requests"));
    json_int_t distinct = json_integer_value(json_object_get(o, "distinct_media_sets"));
    char b[32];
    fmt_num(b, sizeof b, bytes, 0);
    snprintf(line, cap,
             "%.2f images and %.2f audio clips per request, %s bytes of media per request (mean, as sent: %.1f%% "
             "of the request bytes); %lld distinct sets for %lld requests, each sent %.1f times on average",
             images, audios, b, share * 100, (long long)distinct, (long long)sent,
             distinct > 0 ? (double)sent / (double)distinct : 0.0);
}

/* ---------- prompt reuse ---------- */

void sg_prompt_reuse_fill(json_t *o)
{
    json_int_t sent = json_integer_value(json_object_get(o, "requests"));
    const json_t *d = json_object_get(o, "distinct_prompts");
    json_int_t distinct = json_integer_value(d);
    json_object_set_new(o, "sends_per_prompt",
                        json_is_integer(d) && distinct > 0 ? json_real((double)sent / (double)distinct) : json_null());
}

void sg_prompt_reuse_line(const json_t *o, char *line, size_t cap)
{
    json_int_t sent = json_integer_value(json_object_get(o, "requests"));
    const char *bust = json_string_value(json_object_get(o, "cache_bust"));
    const char *reason = json_string_value(json_object_get(o, "reason"));
    const json_t *d = json_object_get(o, "distinct_prompts");
    if (bust && strcmp(bust, "first_turn_prefix") == 0) {
        snprintf(line, cap,
                 "every prompt unique: each of the %lld requests starts its prompt with words of its own "
                 "(--cache-bust first_turn_prefix)",
                 (long long)sent);
        return;
    }
    if (!json_is_integer(d)) {
        snprintf(line, cap, "%s: each turn sends its session's history again, a prefix shared on purpose",
                 reason && *reason ? reason : "multi-turn sessions");
        return;
    }
    json_int_t distinct = json_integer_value(d), prefixes = json_integer_value(json_object_get(o, "shared_prefixes"));
    char shared[120] = "";
    if (prefixes > 0)
        snprintf(shared, sizeof shared, "; each starts with one of %lld shared prefixes of %lld tokens",
                 (long long)prefixes, (long long)json_integer_value(json_object_get(o, "prefix_prompt_length")));
    snprintf(line, cap, "%lld distinct %s for %lld requests, each sent %.1f times on average%s (reuse asked by %s)",
             (long long)distinct, json_is_true(json_object_get(o, "input_file")) ? "input file entries" : "prompts",
             (long long)sent, distinct > 0 ? (double)sent / (double)distinct : 0.0, shared,
             reason && *reason ? reason : "the run");
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

/* {"unit", "avg", "min", "max", "std", "p1" ... "p99_9", "count"} of one histogram, its values times scale. */
static json_t *hist_distribution(const sg_hist_t *h, const char *unit, double scale)
{
    json_t *o = json_object();
    int rc = o ? 0 : -ENOMEM;
    rc = rc ? rc : set(o, "unit", json_string(unit));
    rc = rc ? rc : set(o, "avg", real(sg_hist_mean(h) * scale));
    rc = rc ? rc : set(o, "min", real((double)sg_hist_min(h) * scale));
    rc = rc ? rc : set(o, "max", real((double)sg_hist_max(h) * scale));
    rc = rc ? rc : set(o, "std", real(sg_hist_stddev(h) * scale));
    for (size_t i = 0; i < SG_ARRAY_LEN(json_stats) && !rc; i++)
        rc = set(o, json_stats[i].key, real(sg_hist_percentile(h, json_stats[i].p) * scale));
    rc = rc ? rc : set(o, "count", json_integer((json_int_t)sg_hist_count(h)));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *distribution(const sg_metrics_t *m, sg_metric_id_t id)
{
    return hist_distribution(sg_metrics_hist(m, id), sg_metric_unit(id), sg_metric_scale(id));
}

/*
 * What the cancelled (right-censored) requests do to the latency percentiles: they are in no distribution; with
 * each counted at its wait, request_latency's percentiles are lower bounds of what a run that waited for them
 * would have shown. understated: the table's percentiles (p50, p75, p90, p99) that bound is above.
 */
static json_t *censoring(const sg_metrics_t *m)
{
    uint64_t n = sg_metrics_cancelled(m);
    json_t *o = json_object(), *least = n ? json_object() : json_null(), *under = json_array();
    int rc = o && least && under ? 0 : -ENOMEM;
    if (rc) {
        json_decref(o);
        json_decref(least);
        json_decref(under);
        return NULL;
    }
    rc = set(o, "cancelled", json_integer((json_int_t)n));
    rc = rc ? rc : set(o, "in_distributions", json_false());
    rc = rc ? rc : set(o, "request_latency_at_least", least);
    rc = rc ? rc : set(o, "understated", under);
    bool completed = sg_hist_count(sg_metrics_hist(m, SG_M_LATENCY)) > 0;
    for (size_t i = 0; n && i < SG_ARRAY_LEN(json_stats) && !rc; i++) {
        double v = sg_metrics_latency_at_least(m, json_stats[i].p) * 1e-6;
        rc = set(least, json_stats[i].key, real(v));
        for (size_t k = 0; k < SG_ARRAY_LEN(table_pcts) && !rc; k++)
            if (table_pcts[k].p == json_stats[i].p && (!completed || v > stat_pct(m, SG_M_LATENCY, json_stats[i].p)))
                rc = json_array_append_new(under, json_string(json_stats[i].key)) ? -ENOMEM : 0;
    }
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
        char label[96];
        sg_error_group_label(g[i], label, sizeof(label));
        /* "code" stays for the readers that know it; "http_status" says what the number is, and "label" is the
         * table's phrase for the group ("timeout (after HTTP 200 headers)"). */
        json_t *status = g[i]->http_status ? json_integer(g[i]->http_status) : json_null();
        if (set(e, "class", json_string(sg_err_class_name(g[i]->cls))) || set(e, "code", json_incref(status)) ||
            set(e, "http_status", status) || set(e, "label", json_string(label)) ||
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

/* Per SLO: what it asked and how many successful requests met it, missed it, or did not have the metric. */
static json_t *goodput_constraints(const sg_metrics_t *m)
{
    const sg_slo_t *slos;
    const sg_slo_tally_t *t;
    size_t n = sg_metrics_slo_tallies(m, &slos, &t);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        bool floor = sg_metric_larger_is_better(slos[i].metric);
        json_t *o = json_object();
        int rc = o && json_array_append_new(arr, o) == 0 ? 0 : -ENOMEM;
        rc = rc ? rc : set(o, "metric", json_string(sg_metric_tag(slos[i].metric)));
        rc = rc ? rc : set(o, "comparison", json_string(floor ? ">=" : "<="));
        rc = rc ? rc : set(o, "threshold", real(slos[i].threshold));
        rc = rc ? rc : set(o, "unit", json_string(sg_metric_unit(slos[i].metric)));
        rc = rc ? rc : set(o, "met", json_integer((json_int_t)t[i].met));
        rc = rc ? rc : set(o, "missed", json_integer((json_int_t)t[i].missed));
        rc = rc ? rc : set(o, "not_measurable", json_integer((json_int_t)t[i].not_measurable));
        if (rc) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
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

/* A string the summary must keep valid JSON whatever its bytes (a path, an argument): null for NULL. */
static json_t *text_or_null(const char *text)
{
    if (!text)
        return json_null();
    size_t cap = strlen(text) + 1; /* an invalid byte becomes "?" */
    char *clean = malloc(cap);
    if (!clean)
        return NULL;
    sg_utf8_sanitize(clean, cap, text);
    json_t *v = json_string(clean);
    free(clean);
    return v;
}

/* Where the figures came from: surge's version, the command line, the client host and the wall-clock times of the
 * first intended send and the last end (ISO 8601 UTC, as AIPerf's start_time and end_time). The report shows them,
 * so a page made later still says when and how the run happened. */
static int set_provenance(json_t *root, const sg_metrics_t *m, const sg_run_info_t *info)
{
    char t0[48], t1[48];
    int64_t off = info ? info->wall_offset_ns : 0;
    int64_t first = sg_metrics_first_intended_ns(m), last = sg_metrics_last_end_ns(m);
    bool have0 = off && first && sg_iso_utc(t0, sizeof t0, first + off);
    bool have1 = off && last && sg_iso_utc(t1, sizeof t1, last + off);
    int rc = set(root, "surge_version", json_string(sg_version()));
    rc = rc ? rc : set(root, "command", text_or_null(info ? info->command : NULL));
    rc = rc ? rc : set(root, "host", text_or_null(info ? info->host : NULL));
    rc = rc ? rc : set(root, "start_time", have0 ? json_string(t0) : json_null());
    return rc ? rc : set(root, "end_time", have1 ? json_string(t1) : json_null());
}

/* Multi-turn sessions: per turn index, the counts and the distributions it has (docs/sessions.md). */
static json_t *turns_summary(const sg_metrics_t *m)
{
    static const sg_metric_id_t ids[] = {SG_M_TTFT, SG_M_ITL, SG_M_LATENCY, SG_M_SCHEDULE_LAG, SG_M_ISL, SG_M_OSL};
    json_t *a = json_array();
    int rc = a ? 0 : -ENOMEM;
    for (size_t i = 0; i < sg_metrics_turns(m) && !rc; i++) {
        const sg_metrics_t *t = sg_metrics_turn(m, i);
        if (!t)
            continue;
        json_t *o = json_object();
        rc = o && json_array_append_new(a, o) == 0 ? 0 : -ENOMEM;
        rc = rc ? rc : set(o, "turn", json_integer((json_int_t)i));
        if (!rc && i == SG_METRICS_TURNS_MAX - 1)
            rc = set(o, "and_later", json_true());
        rc = rc ? rc : set(o, "request_count", json_integer((json_int_t)sg_metrics_ok(t)));
        rc = rc ? rc : set(o, "error_request_count", json_integer((json_int_t)sg_metrics_errors(t)));
        rc = rc ? rc : set(o, "cancelled_request_count", json_integer((json_int_t)sg_metrics_cancelled(t)));
        for (size_t k = 0; k < SG_ARRAY_LEN(ids) && !rc; k++)
            if (exported(t, ids[k]))
                rc = set(o, sg_metric_tag(ids[k]), distribution(t, ids[k]));
    }
    if (rc) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* The summary's "client_stalls" object: the threshold, the count, their total time and worst lag, each window. */
static json_t *stalls_summary(const sg_run_info_t *info)
{
    json_t *o = json_object(), *a = json_array();
    double total = 0, worst = 0;
    for (size_t i = 0; i < info->n_stalls; i++) {
        const sg_stall_t *x = &info->stalls[i];
        json_t *e = json_pack("{s:I, s:f, s:f, s:f, s:f, s:I}", "worker", (json_int_t)x->worker, "start_s",
                              isfinite(x->start_s) ? x->start_s : 0.0, "end_s", isfinite(x->end_s) ? x->end_s : 0.0,
                              "duration_ms", isfinite(x->end_s - x->start_s) ? (x->end_s - x->start_s) * 1e3 : 0.0,
                              "max_lag_ms", isfinite(x->max_lag_ms) ? x->max_lag_ms : 0.0, "requests_due",
                              (json_int_t)x->requests);
        if (!e || json_array_append_new(a, e)) {
            json_decref(o);
            json_decref(a);
            return NULL;
        }
        total += x->end_s - x->start_s;
        worst = x->max_lag_ms > worst ? x->max_lag_ms : worst;
    }
    if (!o || !a) {
        json_decref(o);
        json_decref(a);
        return NULL;
    }
    if (set(o, "threshold_ms", real(info->stall_threshold_ms)) ||
        set(o, "count", json_integer((json_int_t)(info->n_stalls + info->stalls_dropped))) ||
        set(o, "not_listed", json_integer((json_int_t)info->stalls_dropped)) || set(o, "total_s", real(total)) ||
        set(o, "max_lag_ms", real(worst)) || set(o, "windows", a)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The summary's "server_unreachable" array: each window the server refused connections (empty: none). */
static json_t *unreach_summary(const sg_run_info_t *info)
{
    json_t *a = json_array();
    for (size_t i = 0; a && info && i < info->n_unreach; i++) {
        const sg_unreach_t *x = &info->unreach[i];
        json_t *e =
            json_pack("{s:f, s:f, s:f, s:I, s:I, s:b}", "start_s", isfinite(x->start_s) ? x->start_s : 0.0, "end_s",
                      isfinite(x->end_s) ? x->end_s : 0.0, "duration_s",
                      isfinite(x->end_s - x->start_s) ? x->end_s - x->start_s : 0.0, "refused", (json_int_t)x->refused,
                      "slots_waiting", (json_int_t)x->waiting, "recovered", (int)x->recovered);
        if (!e || json_array_append_new(a, e)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
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
        if (exported(m, id))
            rc = set(root, sg_metric_tag(id), distribution(m, id));
    }
    rc = rc ? rc
            : set(root, "output_token_throughput",
                  single("tokens/sec", real(per_sec(sg_metrics_output_tokens(m), duration))));
    uint64_t in_tok = sg_metrics_input_tokens(m), out_tok = sg_metrics_output_tokens(m);
    rc = rc ? rc : set(root, "input_token_throughput", single("tokens/sec", real(per_sec(in_tok, duration))));
    rc = rc ? rc : set(root, "total_token_throughput", single("tokens/sec", real(per_sec(in_tok + out_tok, duration))));
    rc = rc ? rc : set(root, "request_throughput", single("requests/sec", real(per_sec(sg_metrics_ok(m), duration))));
    rc = rc ? rc : set(root, "request_count", single("requests", json_integer((json_int_t)sg_metrics_ok(m))));
    if (sg_metrics_tool_calls(m)) {
        /* tool calls: all of them, and their argument tokens' share of the output tokens */
        rc =
            rc ? rc : set(root, "tool_call_total", single("calls", json_integer((json_int_t)sg_metrics_tool_calls(m))));
        rc = rc ? rc
                : set(root, "tool_call_token_share",
                      single("ratio", real(out_tok ? (double)sg_metrics_tool_tokens(m) / (double)out_tok : 0)));
    }
    rc = rc ? rc : set(root, "error_request_count", single("requests", json_integer((json_int_t)sg_metrics_errors(m))));
    rc = rc ? rc : set(root, "offered_request_rate", single("requests/sec", real(sg_metrics_offered_rate(m))));
    rc = rc ? rc
            : set(root, "cancelled_request_count",
                  single("requests", json_integer((json_int_t)sg_metrics_cancelled(m))));
    if (sg_metrics_cancelled(m))
        rc = rc ? rc : set(root, "cancelled_request_wait", hist_distribution(sg_metrics_cancel_wait(m), "ms", 1e-6));
    if (sg_metrics_cancel_tests(m)) {
        rc = rc ? rc
                : set(root, "cancelled_by_test_request_count",
                      single("requests", json_integer((json_int_t)sg_metrics_cancel_tests(m))));
        rc = rc ? rc
                : set(root, "cancelled_by_test_time", hist_distribution(sg_metrics_cancel_test_time(m), "ms", 1e-6));
    }
    if (sg_metrics_ramp(m))
        rc =
            rc ? rc : set(root, "ramp_request_count", single("requests", json_integer((json_int_t)sg_metrics_ramp(m))));
    rc = rc ? rc : set(root, "censoring", censoring(m));
    if (!rc && info && info->cancelled_why && sg_metrics_cancelled(m))
        rc = set(root, "cancelled_why", json_string(info->cancelled_why));
    rc = rc ? rc
            : set(root, "resent_request_count",
                  single("requests", json_integer((json_int_t)(info ? info->resent_count : 0))));
    if (!rc) {
        /* how the server treated kept-alive connections, as surge learnt it (docs/metrics.md) */
        json_t *o = json_object();
        rc = set(root, "keep_alive", o);
        rc = rc ? rc : set(o, "silent_closes", json_integer((json_int_t)(info ? info->silent_closes : 0)));
        rc = rc ? rc : set(o, "reused_after_streamed", json_boolean(!(info && info->no_reuse_after_stream)));
        rc = rc ? rc : set(o, "reused_after_whole", json_boolean(!(info && info->no_reuse_after_whole)));
    }
    if (!rc && exported(m, SG_M_ITL)) /* requests with an ITL of 0: in inter_token_latency, not in its inverse */
        rc = set(root, "output_token_throughput_per_user_undefined_count",
                 single("requests", json_integer((json_int_t)sg_metrics_per_user_undefined(m))));
    if (!rc) {
        /* values past a histogram's range, recorded at its top: per metric, only those that had any */
        json_t *o = NULL;
        for (int i = 0; i < SG_M__COUNT && !rc; i++) {
            uint64_t n = sg_hist_clamped(sg_metrics_hist(m, (sg_metric_id_t)i));
            if (n && !o)
                rc = set(root, "clamped_values", o = json_object());
            if (n && !rc)
                rc = set(o, sg_metric_tag((sg_metric_id_t)i), json_integer((json_int_t)n));
        }
    }
    rc = rc ? rc : set(root, "benchmark_duration", single("sec", real(duration)));
    if (sg_metrics_turns(m))
        rc = rc ? rc : set(root, "turns", turns_summary(m));
    if (info && info->has_slos) {
        rc = rc ? rc : set(root, "goodput", single("requests/sec", real(per_sec(sg_metrics_good(m), duration))));
        rc =
            rc ? rc : set(root, "good_request_count", single("requests", json_integer((json_int_t)sg_metrics_good(m))));
        rc = rc ? rc : set(root, "goodput_constraints", goodput_constraints(m));
    }
    if (info && info->n_slo_checks) {
        json_t *a = json_array();
        rc = rc ? rc : set(root, "slo", a);
        bool all = true;
        for (size_t i = 0; i < info->n_slo_checks && !rc; i++) {
            const sg_slo_check_t *c = &info->slo_checks[i];
            const sg_slo_verdict_t *v = &info->slo_verdicts[i];
            static const char *const ops[] = {"<", "<=", ">", ">="};
            static const char *const stats[] = {"avg", "min", "max", "std", "pct"};
            static const char *const quantities[] = {NULL, "error_rate", "request_throughput",
                                                     "output_token_throughput"};
            char stat[32];
            if (c->stat == SG_SLO_STAT_PCT)
                snprintf(stat, sizeof stat, "p%.15g", c->pct);
            else
                snprintf(stat, sizeof stat, "%s", stats[c->stat]);
            json_t *e = json_object();
            rc = json_array_append_new(a, e) ? -ENOMEM : 0;
            rc = rc ? rc : set(e, "slo", json_string(c->text));
            rc = rc ? rc
                    : set(e, "metric",
                          json_string(c->kind == SG_SLO_DIST ? sg_metric_tag(c->metric) : quantities[c->kind]));
            rc = rc ? rc : set(e, "stat", c->kind == SG_SLO_DIST ? json_string(stat) : json_null());
            rc = rc ? rc : set(e, "op", json_string(ops[c->op]));
            rc = rc ? rc : set(e, "target", real(c->target));
            rc = rc ? rc : set(e, "unit", json_string(sg_slo_unit(c)));
            rc = rc ? rc : set(e, "measured", v->measurable ? real(v->measured) : json_null());
            rc = rc ? rc : set(e, "measurable", json_boolean(v->measurable));
            rc = rc ? rc : set(e, "pass", json_boolean(v->pass));
            rc = rc ? rc : set(e, "verdict", json_string(sg_slo_outcome_name(v->outcome)));
            rc = rc ? rc : set(e, "n", json_integer((json_int_t)v->n));
            rc = rc ? rc : set(e, "confidence_level", real(v->level));
            rc = rc ? rc : set(e, "interval", sg_slo_interval_json(v));
            if (v->dispersion > 1) /* clustered: the interval counts its n as n / dispersion (docs/metrics.md) */
                rc = rc ? rc : set(e, "dispersion", real(v->dispersion));
            all = all && v->pass;
        }
        rc = rc ? rc : set(root, "slo_pass", json_boolean(all));
        rc = rc ? rc
                : set(root, "slo_verdict",
                      json_string(sg_slo_outcome_name(sg_slo_overall(info->slo_verdicts, info->n_slo_checks))));
    }
    rc = rc ? rc
            : set(root, "warmup_request_count",
                  single("requests", json_integer((json_int_t)(info ? info->warmup_count : 0))));
    if (info && info->client_cpu_s > 0) {
        rc = rc ? rc : set(root, "client_cpu_time", single("sec", real(info->client_cpu_s)));
        if (info->client_cpu_user_s + info->client_cpu_sys_s > 0) {
            rc = rc ? rc : set(root, "client_cpu_time_user", single("sec", real(info->client_cpu_user_s)));
            rc = rc ? rc : set(root, "client_cpu_time_system", single("sec", real(info->client_cpu_sys_s)));
        }
    }
    double proc_cpu = info ? info->process_cpu_user_s + info->process_cpu_sys_s : 0;
    if (proc_cpu > 0) {
        rc = rc ? rc : set(root, "process_cpu_time", single("sec", real(proc_cpu)));
        rc = rc ? rc : set(root, "process_cpu_time_user", single("sec", real(info->process_cpu_user_s)));
        rc = rc ? rc : set(root, "process_cpu_time_system", single("sec", real(info->process_cpu_sys_s)));
    }
    if (info && info->streaming && sg_metrics_output_tokens(m) > 0) {
        double tok = (double)sg_metrics_output_tokens(m);
        if (proc_cpu > 0)
            rc = rc ? rc : set(root, "output_tokens_per_process_cpu_sec", single("tokens/sec", real(tok / proc_cpu)));
        if (info->client_cpu_s > 0)
            rc = rc ? rc
                    : set(root, "output_tokens_per_client_cpu_sec",
                          single("tokens/sec", real(tok / info->client_cpu_s)));
    }
    if (info && info->stall_threshold_ms > 0)
        rc = rc ? rc : set(root, "client_stalls", stalls_summary(info));
    rc = rc ? rc : set(root, "server_unreachable", unreach_summary(info));
    if (info && info->io_backend)
        rc = rc ? rc : set(root, "io_backend", json_string(info->io_backend));
    if (info && info->timestamp_source) {
        rc = rc ? rc : set(root, "timestamp_source", json_string(info->timestamp_source));
        json_t *t = json_object();
        rc = rc ? rc : set(root, "timestamps", t);
        rc = rc ? rc : set(t, "kernel_reads", json_integer((json_int_t)info->rx_stamped));
        rc = rc ? rc : set(t, "user_reads", json_integer((json_int_t)info->rx_unstamped));
        rc = rc ? rc : set(t, "refused_connections", json_integer((json_int_t)info->stamp_refused));
        rc = rc ? rc : set(t, "clock_steps", json_integer((json_int_t)info->clock_steps));
        rc = rc ? rc : set(t, "clock_step_max_ms", real((double)info->clock_step_max_ns / 1e6));
        rc = rc ? rc : set(t, "events_sharing_a_read", json_integer((json_int_t)info->events_shared));
    }
    if (info && info->coalesce_method && !rc) {
        json_t *o = json_object();
        rc = set(root, "client_wakeups", o);
        rc = rc ? rc : set(o, "coalesce_us", json_integer((json_int_t)info->coalesce_us));
        rc = rc ? rc : set(o, "method", json_string(info->coalesce_method));
        rc = rc ? rc : set(o, "turns", json_integer((json_int_t)info->loop_turns));
        rc = rc ? rc : set(o, "wakeups", json_integer((json_int_t)info->loop_waits));
        rc = rc ? rc : set(o, "coalesced", json_integer((json_int_t)info->loop_coalesced));
        rc = rc ? rc
                : set(o, "mean_window_us",
                      real(info->loop_coalesced ? (double)info->loop_coalesced_ns / 1e3 / (double)info->loop_coalesced
                                                : 0));
        rc = rc ? rc : set(o, "completions", json_integer((json_int_t)info->loop_completions));
        rc = rc ? rc
                : set(o, "completions_per_wakeup",
                      real(info->loop_waits ? (double)info->loop_completions / (double)info->loop_waits : 0));
    }
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
    if (!rc) {
        sg_cached_t k;
        sg_metrics_cached(m, &k);
        json_t *o = json_object();
        rc = set(root, "cached_input_share", o);
        rc = rc ? rc : set(o, "requests", json_integer((json_int_t)k.requests));
        rc = rc ? rc : set(o, "cached_tokens", json_integer((json_int_t)k.cached));
        rc = rc ? rc : set(o, "prompt_tokens", json_integer((json_int_t)k.prompt));
        rc = rc ? rc : set(o, "share", k.prompt ? real((double)k.cached / (double)k.prompt) : json_null());
    }
    if (!rc && info && info->prompt_reuse_json)
        rc = set(root, "prompt_reuse", input_config(info->prompt_reuse_json));
    if (!rc && sg_metrics_urls(m))
        rc = set(root, "urls", sg_export_urls_json(m, info));
    if (!rc && info && info->media_json)
        rc = set(root, "media", input_config(info->media_json));
    rc = rc ? rc : set(root, "isl_source", info && info->isl_source ? json_string(info->isl_source) : json_null());
    if (!rc && info && info->tokenizer) {
        char desc[1024]; /* a path need not be UTF-8: the summary must stay valid JSON */
        sg_utf8_sanitize(desc, sizeof(desc), info->tokenizer);
        rc = set(root, "tokenizer", json_string(desc));
    } else if (!rc) {
        rc = set(root, "tokenizer", json_null());
    }
    if (!rc && info && info->server_metrics_json)
        rc = set(root, "server_metrics", input_config(info->server_metrics_json));
    if (!rc && info && info->gpu_json)
        rc = set(root, "gpu_telemetry", input_config(info->gpu_json));
    rc = rc ? rc : set(root, "was_interrupted", json_boolean(info && info->interrupted));
    if (!rc) { /* the files before the summary that could not be written: the summary's presence no longer vouches */
        json_t *nw = json_array();
        for (size_t i = 0; nw && info && i < info->n_files_not_written; i++)
            json_array_append_new(nw, json_string(info->files_not_written[i]));
        rc = set(root, "files_not_written", nw);
    }
    rc = rc ? rc : set(root, "input_config", input_config(info ? info->input_config_json : NULL));
    rc = rc ? rc : set_provenance(root, m, info);
    if (!rc && info && info->extra_json) {
        json_t *extra = json_loads(info->extra_json, 0, NULL);
        rc = json_is_object(extra) ? json_object_update(root, extra) : -1;
        json_decref(extra);
    }
    if (rc) {
        json_decref(root);
        return NULL;
    }
    return root;
}

json_t *sg_export_summary(const sg_metrics_t *m, const sg_run_info_t *info)
{
    return build_summary(m, info);
}

int sg_export_json(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    return sg_json_write(path, build_summary(m, info));
}

/* ---------- CSV ---------- */

/* GenAI-Perf's label: the tag's words capitalized, then the unit in parentheses ("Time To First Token (ms)"). */
static void csv_label(char *buf, size_t cap, const char *tag, const char *unit)
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
    if (unit && unit[0] && o < cap)
        snprintf(buf + o, cap - o, " (%s)", unit);
}

/*
 * The distributions: GenAI-Perf's columns in its order (avg, min, max, then p99 down to p1), surge's std, p99_9
 * and count after them; GenAI-Perf's rows in its order, surge's own after them. A reader of GenAI-Perf's file
 * finds every column and row where it was.
 */
static void csv_distributions(FILE *f, const sg_metrics_t *m, const sg_run_info_t *info)
{
    static const double pcts[] = {99, 95, 90, 75, 50, 25, 10, 5, 1};
    fputs("Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1,std,p99_9,count\n", f);
    for (size_t i = 0; i < SG_ARRAY_LEN(display_order); i++) {
        sg_metric_id_t id = display_order[i];
        if (!exported(m, id))
            continue;
        char label[96];
        csv_label(label, sizeof(label), sg_metric_tag(id), sg_metric_unit(id));
        fprintf(f, "%s,%.2f,%.2f,%.2f", label, stat_avg(m, id), stat_min(m, id), stat_max(m, id));
        for (size_t p = 0; p < SG_ARRAY_LEN(pcts); p++)
            fprintf(f, ",%.2f", stat_pct(m, id, pcts[p]));
        fprintf(f, ",%.2f,%.2f,%" PRIu64 "\n", stat_std(m, id), stat_pct(m, id, 99.9),
                sg_hist_count(sg_metrics_hist(m, id)));
    }
    /* the cancelled requests' waits (censored: not latencies), after every metric */
    const sg_hist_t *w = sg_metrics_cancel_wait(m);
    if (sg_hist_count(w)) {
        fprintf(f, "Cancelled Request Wait (ms),%.2f,%.2f,%.2f", sg_hist_mean(w) * 1e-6, (double)sg_hist_min(w) * 1e-6,
                (double)sg_hist_max(w) * 1e-6);
        for (size_t p = 0; p < SG_ARRAY_LEN(pcts); p++)
            fprintf(f, ",%.2f", sg_hist_percentile(w, pcts[p]) * 1e-6);
        fprintf(f, ",%.2f,%.2f,%" PRIu64 "\n", sg_hist_stddev(w) * 1e-6, sg_hist_percentile(w, 99.9) * 1e-6,
                sg_hist_count(w));
    }
}

/* The single values: GenAI-Perf's rows first, in its order and with its names, then surge's. */
static void csv_values(FILE *f, const sg_metrics_t *m, const sg_run_info_t *info)
{
    double duration = sg_metrics_duration_s(m);
    uint64_t in_tok = sg_metrics_input_tokens(m), out_tok = sg_metrics_output_tokens(m);
    bool slos = info && info->has_slos;
    fputs("Metric,Value\n", f);
    fprintf(f, "Output Token Throughput (tokens/sec),%.2f\n", per_sec(out_tok, duration));
    fprintf(f, "Request Throughput (per sec),%.2f\n", per_sec(sg_metrics_ok(m), duration));
    if (slos)
        fprintf(f, "Request Goodput (per sec),%.2f\n", per_sec(sg_metrics_good(m), duration));
    fprintf(f, "Request Count (count),%" PRIu64 "\n", sg_metrics_ok(m));
    fprintf(f, "Input Token Throughput (tokens/sec),%.2f\n", per_sec(in_tok, duration));
    fprintf(f, "Total Token Throughput (tokens/sec),%.2f\n", per_sec(in_tok + out_tok, duration));
    fprintf(f, "Error Request Count (count),%" PRIu64 "\n", sg_metrics_errors(m));
    fprintf(f, "Cancelled Request Count (count),%" PRIu64 "\n", sg_metrics_cancelled(m));
    if (sg_metrics_cancel_tests(m))
        fprintf(f, "Cancelled By Test Request Count (count),%" PRIu64 "\n", sg_metrics_cancel_tests(m));
    fprintf(f, "Offered Request Rate (per sec),%.2f\n", sg_metrics_offered_rate(m));
    if (slos)
        fprintf(f, "Good Request Count (count),%" PRIu64 "\n", sg_metrics_good(m));
    fprintf(f, "Benchmark Duration (sec),%.3f\n", duration);
    fprintf(f, "Warmup Request Count (count),%" PRIu64 "\n", info ? info->warmup_count : 0);
    fprintf(f, "Resent Request Count (count),%" PRIu64 "\n", info ? info->resent_count : 0);
    if (sg_metrics_tool_calls(m)) {
        fprintf(f, "Tool Call Total (count),%" PRIu64 "\n", sg_metrics_tool_calls(m));
        fprintf(f, "Tool-Call Token Share (%%),%.2f\n",
                out_tok ? 100.0 * (double)sg_metrics_tool_tokens(m) / (double)out_tok : 0);
    }
    if (!info || !info->n_slo_checks)
        return;
    /* a third part, after a blank line: the verdicts (SLO texts hold no comma) */
    fputs("\nSLO,Target,Measured,Pass,Verdict,N,Confidence Level,Interval Low,Interval High\n", f);
    for (size_t i = 0; i < info->n_slo_checks; i++) {
        const sg_slo_verdict_t *v = &info->slo_verdicts[i];
        fprintf(f, "%s,%.15g,", info->slo_checks[i].text, info->slo_checks[i].target);
        if (v->measurable)
            fprintf(f, "%.6g", v->measured);
        fprintf(f, ",%s,%s,%" PRIu64 ",%g,", v->pass ? "true" : "false", sg_slo_outcome_name(v->outcome), v->n,
                v->level);
        /* an open end is written as -inf / inf; no interval: empty cells */
        if (v->measurable && v->has_interval)
            fprintf(f, "%.6g,%.6g", v->lo, v->hi);
        else
            fputs(",", f);
        fputc('\n', f);
    }
}

int sg_export_csv(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc)
        return rc;
    /* GenAI-Perf's two parts, a blank line between. Labels hold no comma, so no field needs quoting. */
    csv_distributions(of.f, m, info);
    fputc('\n', of.f);
    csv_values(of.f, m, info);
    sg_export_urls_csv(of.f, m, info);
    if (ferror(of.f)) {
        int err = sg_outfile_error(&of);
        sg_outfile_abort(&of);
        return err;
    }
    return sg_outfile_commit(&of);
}

const char *sg_timestamp_source(bool asked, uint64_t stamped, uint64_t unstamped)
{
    return !asked || stamped == 0 ? "user" : unstamped ? "mixed" : "kernel";
}
