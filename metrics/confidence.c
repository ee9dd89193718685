/* The across-runs aggregate of a multi-run (sg_confidence.h); Student's t is sg_stats.h's. */
#define _GNU_SOURCE
#include "sg_confidence.h"

#include "sg_export_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sg_ci_compute(const double *v, size_t n, double level, sg_ci_t *out)
{
    memset(out, 0, sizeof *out);
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) {
            sum += v[i];
            mn = v[i] < mn ? v[i] : mn;
            mx = v[i] > mx ? v[i] : mx;
            k++;
        }
    out->n = k;
    if (k == 0) {
        out->mean = out->std = out->min = out->max = out->cv = out->se = NAN;
        out->t_critical = out->ci_low = out->ci_high = NAN;
        return;
    }
    double mean = sum / (double)k, ss = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            ss += (v[i] - mean) * (v[i] - mean);
    out->mean = mean;
    out->min = mn;
    out->max = mx;
    if (k < 2) { /* no spread to measure: the point estimate alone, as AIPerf reports a single run */
        out->std = out->se = out->cv = 0;
        out->t_critical = NAN;
        out->ci_low = out->ci_high = mean;
        return;
    }
    out->std = sqrt(ss / (double)(k - 1));
    out->cv = mean != 0 ? out->std / fabs(mean) : NAN;
    out->se = out->std / sqrt((double)k);
    out->t_critical = sg_t_quantile((1 + level) / 2, (double)(k - 1));
    double half = out->t_critical * out->se;
    out->ci_low = mean - half;
    out->ci_high = mean + half;
}

/* The statistics aggregated, in this order (those a summary's metric has): AIPerf's STAT_KEYS and surge's p99_9. */
static const char *const STATS[] = {"avg", "min", "max", "std", "p1",  "p5",  "p10",
                                    "p25", "p50", "p75", "p90", "p95", "p99", "p99_9"};

/* A real, or null for a figure that is not a number (JSON has no NaN or infinity). */
static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *ci_json(const sg_ci_t *c, const char *unit)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "mean", num(c->mean));
    json_object_set_new(o, "std", num(c->std));
    json_object_set_new(o, "min", num(c->min));
    json_object_set_new(o, "max", num(c->max));
    json_object_set_new(o, "cv", num(c->cv));
    json_object_set_new(o, "se", num(c->se));
    json_object_set_new(o, "ci_low", num(c->ci_low));
    json_object_set_new(o, "ci_high", num(c->ci_high));
    json_object_set_new(o, "t_critical", num(c->t_critical));
    json_object_set_new(o, "unit", json_string(unit));
    json_object_set_new(o, "n", json_integer((json_int_t)c->n));
    return o;
}

json_t *sg_ci_metrics(json_t *const *summaries, size_t n, double level)
{
    json_t *out = json_object();
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!out || !v) {
        json_decref(out);
        free(v);
        return NULL;
    }
    for (size_t r = 0; r < n; r++) {
        const char *metric;
        json_t *m;
        json_object_foreach(summaries[r], metric, m)
        {
            const char *unit = json_string_value(json_object_get(m, "unit"));
            if (!json_is_object(m) || !unit)
                continue;
            for (size_t s = 0; s < SG_ARRAY_LEN(STATS); s++) {
                if (!json_is_number(json_object_get(m, STATS[s])))
                    continue;
                char key[256];
                if (snprintf(key, sizeof key, "%s_%s", metric, STATS[s]) >= (int)sizeof key ||
                    json_object_get(out, key))
                    continue; /* done from an earlier run's summary */
                for (size_t i = 0; i < n; i++) {
                    json_t *x = json_object_get(json_object_get(summaries[i], metric), STATS[s]);
                    v[i] = json_is_number(x) ? json_number_value(x) : NAN;
                }
                sg_ci_t c;
                sg_ci_compute(v, n, level, &c);
                json_t *o = ci_json(&c, unit);
                if (!o || json_object_set_new(out, key, o) != 0) {
                    json_decref(out);
                    free(v);
                    return NULL;
                }
            }
        }
    }
    free(v);
    return out;
}

/* A CSV cell: a number at full precision, or empty for null. */
static void csv_num(FILE *f, json_t *x)
{
    if (json_is_number(x))
        fprintf(f, ",%.10g", json_number_value(x));
    else
        fputs(",", f);
}

/* "num_profile_runs" -> "Num Profile Runs", as AIPerf titles its metadata keys. */
static void csv_title(FILE *f, const char *key)
{
    bool start = true;
    for (const char *c = key; *c; c++) {
        if (*c == '_') {
            fputc(' ', f);
            start = true;
            continue;
        }
        fputc(start && *c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, f);
        start = false;
    }
}

int sg_ci_csv(const char *path, json_t *agg)
{
    static const char *const cols[] = {"mean", "std", "min", "max", "cv", "se", "ci_low", "ci_high", "t_critical"};
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc < 0)
        return rc;
    FILE *f = of.f;
    fputs("metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit,n\n", f);
    const char *key;
    json_t *m;
    json_object_foreach(json_object_get(agg, "metrics"), key, m)
    {
        fputs(key, f);
        for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++)
            csv_num(f, json_object_get(m, cols[c]));
        fprintf(f, ",%s,%lld\n", json_string_value(json_object_get(m, "unit")),
                (long long)json_integer_value(json_object_get(m, "n")));
    }
    fputc('\n', f);
    json_t *v;
    json_object_foreach(json_object_get(agg, "metadata"), key, v)
    {
        csv_title(f, key);
        if (json_is_array(v)) { /* run labels, failed runs: their JSON, quoted */
            char *s = json_dumps(v, JSON_COMPACT);
            fputc(',', f);
            sg_csv_quoted(f, s);
            fputc('\n', f);
            free(s);
        } else if (json_is_string(v)) {
            fprintf(f, ",%s\n", json_string_value(v));
        } else if (json_is_boolean(v)) {
            fprintf(f, ",%s\n", json_is_true(v) ? "true" : "false");
        } else if (json_is_integer(v)) {
            fprintf(f, ",%lld\n", (long long)json_integer_value(v));
        } else if (json_is_number(v)) {
            fprintf(f, ",%.10g\n", json_number_value(v));
        } else {
            fputs(",\n", f);
        }
    }
    return sg_outfile_commit(&of);
}

/* A figure for the console: 4 significant digits, thousands kept whole; "-" for none. */
static void cell(char *buf, size_t cap, double v)
{
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else if (fabs(v) >= 1000)
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%.4g", v);
}

/* A figure of an aggregate's metric; NAN for null. */
static double fig(json_t *m, const char *key)
{
    json_t *x = json_object_get(m, key);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

void sg_ci_table(FILE *out, json_t *agg)
{
    static const struct {
        const char *key, *label;
    } rows[] = {
        {"time_to_first_token_avg", "TTFT avg (ms)"},
        {"time_to_first_token_p50", "TTFT p50 (ms)"},
        {"time_to_first_token_p90", "TTFT p90 (ms)"},
        {"time_to_first_token_p99", "TTFT p99 (ms)"},
        {"inter_token_latency_avg", "ITL avg (ms)"},
        {"inter_token_latency_p50", "ITL p50 (ms)"},
        {"inter_token_latency_p90", "ITL p90 (ms)"},
        {"inter_token_latency_p99", "ITL p99 (ms)"},
        {"request_latency_avg", "Request latency avg (ms)"},
        {"request_latency_p50", "Request latency p50 (ms)"},
        {"request_latency_p90", "Request latency p90 (ms)"},
        {"request_latency_p99", "Request latency p99 (ms)"},
        {"output_token_throughput_avg", "Output token throughput (tokens/s)"},
        {"total_token_throughput_avg", "Total token throughput (tokens/s)"},
        {"request_throughput_avg", "Request throughput (req/s)"},
    };
    json_t *meta = json_object_get(agg, "metadata"), *metrics = json_object_get(agg, "metrics");
    long long used = (long long)json_integer_value(json_object_get(meta, "num_successful_runs"));
    double level = json_number_value(json_object_get(meta, "confidence_level"));
    fprintf(out, "surge | Across %lld run%s: mean and %g%% confidence interval (Student's t)\n", used,
            used == 1 ? "" : "s", level * 100);
    fprintf(out, "%-36s %12s %12s %8s %12s %12s\n", "Metric", "mean", "+/- CI", "CV", "min", "max");
    double t = NAN;
    for (size_t i = 0; i < SG_ARRAY_LEN(rows); i++) {
        json_t *m = json_object_get(metrics, rows[i].key);
        if (!m)
            continue;
        char mean[32], half[32], cv[32], mn[32], mx[32];
        cell(mean, sizeof mean, fig(m, "mean"));
        double tc = fig(m, "t_critical");
        if (isfinite(tc))
            t = tc;
        cell(half, sizeof half, isfinite(tc) ? (fig(m, "ci_high") - fig(m, "ci_low")) / 2 : NAN);
        double c = fig(m, "cv");
        if (isfinite(c))
            snprintf(cv, sizeof cv, "%.1f%%", c * 100);
        else
            snprintf(cv, sizeof cv, "-");
        cell(mn, sizeof mn, fig(m, "min"));
        cell(mx, sizeof mx, fig(m, "max"));
        fprintf(out, "%-36s %12s %12s %8s %12s %12s\n", rows[i].label, mean, half, cv, mn, mx);
    }
    if (isfinite(t))
        fprintf(out,
                "N = %lld runs, confidence level %g, t = %.4f (%lld degrees of freedom): interval = mean +/- t x "
                "std / sqrt(N)\n",
                used, level, t, used - 1);
    else
        fprintf(out, "N = %lld run%s: no interval (it needs two runs or more)\n", used, used == 1 ? "" : "s");
}

/* "12.3 ± 0.4" of an aggregate's metric, or "-". */
static void mean_pm(char *buf, size_t cap, json_t *metrics, const char *key)
{
    json_t *m = json_object_get(metrics, key);
    double mean = fig(m, "mean"), t = fig(m, "t_critical");
    char a[32], b[32];
    cell(a, sizeof a, mean);
    if (!m || !isfinite(mean)) {
        snprintf(buf, cap, "-");
        return;
    }
    if (!isfinite(t)) {
        snprintf(buf, cap, "%s", a);
        return;
    }
    cell(b, sizeof b, (fig(m, "ci_high") - fig(m, "ci_low")) / 2);
    snprintf(buf, cap, "%s +/- %s", a, b);
}

void sg_ci_sweep_table(FILE *out, bool closed, const double *values, json_t *const *aggs, size_t n)
{
    static const struct {
        const char *key, *head;
    } cols[] = {
        {"request_throughput_avg", "req/s"},          {"time_to_first_token_p50", "TTFT p50"},
        {"time_to_first_token_p99", "TTFT p99"},      {"inter_token_latency_p99", "ITL p99"},
        {"request_latency_p50", "latency p50"},       {"request_latency_p99", "latency p99"},
        {"output_token_throughput_avg", "out tok/s"},
    };
    double level = NAN;
    for (size_t i = 0; i < n && !isfinite(level); i++)
        level = fig(json_object_get(aggs[i], "metadata"), "confidence_level");
    fprintf(out, "surge | Sweep of multi-runs: mean +/- half-width of the %g%% confidence interval across the runs\n",
            level * 100);
    fprintf(out, "%12s %5s", closed ? "concurrency" : "rate (req/s)", "runs");
    for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++)
        fprintf(out, " %19s", cols[c].head);
    fputc('\n', out);
    for (size_t i = 0; i < n; i++) {
        json_t *md = json_object_get(aggs[i], "metadata"), *metrics = json_object_get(aggs[i], "metrics");
        char v[32];
        snprintf(v, sizeof v, closed ? "%.0f" : "%.4g", values[i]);
        fprintf(out, "%12s %5lld", v, (long long)json_integer_value(json_object_get(md, "num_successful_runs")));
        for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++) {
            char buf[80];
            mean_pm(buf, sizeof buf, metrics, cols[c].key);
            fprintf(out, " %19s", buf);
        }
        fputc('\n', out);
    }
}
