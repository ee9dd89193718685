/* --slo verdicts: parse, evaluate on a point's merged metrics (sg_slo.h). */
#define _GNU_SOURCE
#include "sg_slo.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_text[] = {"<", "<=", ">", ">="};

static const struct {
    const char *name;
    sg_slo_kind_t kind;
} quantities[] = {
    {"error_rate", SG_SLO_ERROR_RATE},
    {"request_throughput", SG_SLO_REQUEST_THROUGHPUT},
    {"output_token_throughput", SG_SLO_OUTPUT_TOKEN_THROUGHPUT},
};

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SG_EINVAL;
}

/* The names an SLO takes, for messages. */
static void metric_names(char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int m = 0; m < SG_M__COUNT && o < cap; m++)
        if (sg_metric_slo_ok((sg_metric_id_t)m) && sg_metric_tag((sg_metric_id_t)m))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", sg_metric_tag((sg_metric_id_t)m));
}

static bool parse_value(const char *s, double *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int sg_slo_parse(const char *text, sg_slo_check_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *opp = strpbrk(text, "<>");
    if (!opp)
        return bad(err, errlen,
                   "expected METRIC:STAT<VALUE (time_to_first_token:p99<500) or QUANTITY<VALUE (error_rate<0.01), "
                   "with <, <=, > or >=; got \"%s\"",
                   text);
    bool ge = opp[0] == '>', eq = opp[1] == '=';
    out->op = ge ? (eq ? SG_SLO_OP_GE : SG_SLO_OP_GT) : (eq ? SG_SLO_OP_LE : SG_SLO_OP_LT);
    const char *vtext = opp + 1 + eq;
    if (strpbrk(vtext, "<>="))
        return bad(err, errlen, "one comparison per SLO, got \"%s\": give each SLO its own --slo", text);
    if (!parse_value(vtext, &out->target))
        return bad(err, errlen,
                   "expected a number after the comparison in \"%s\" (no unit: ms for times, tokens/s for rates, a "
                   "fraction for error_rate)",
                   text);
    /* every quantity is 0 or more: "< 0" could never pass, and is a typo for "<= 0" */
    if (out->op == SG_SLO_OP_LT && out->target == 0)
        return bad(err, errlen, "nothing measured is below 0, so \"%s\" could never pass; <=0 is what can", text);

    /* the left side, without surrounding spaces */
    const char *l = text;
    while (isspace((unsigned char)*l))
        l++;
    const char *le = opp;
    while (le > l && isspace((unsigned char)le[-1]))
        le--;
    char left[96];
    if (le == l)
        return bad(err, errlen, "expected a metric before the comparison in \"%s\"", text);
    if ((size_t)(le - l) >= sizeof left)
        return bad(err, errlen, "unknown metric \"%.40s...\" (see surge profile --help, SLO verdicts)", l);
    memcpy(left, l, (size_t)(le - l));
    left[le - l] = '\0';

    char *colon = strchr(left, ':');
    if (colon) {
        /* spaces around the colon too: "ttft : p99 < 500" */
        char *ce = colon;
        while (ce > left && isspace((unsigned char)ce[-1]))
            ce--;
        const char *st = colon + 1;
        while (isspace((unsigned char)*st))
            st++;
        *ce = ':';
        memmove(ce + 1, st, strlen(st) + 1);
        colon = ce;
        if (colon == left)
            return bad(err, errlen, "expected a metric before the ':' in \"%s\"", text);
    }
    if (!colon) {
        for (size_t i = 0; i < SG_ARRAY_LEN(quantities); i++)
            if (strcmp(left, quantities[i].name) == 0)
                out->kind = quantities[i].kind;
        if (out->kind == SG_SLO_DIST) {
            sg_metric_id_t id;
            if (sg_metric_find(left, strlen(left), &id) == 0)
                return bad(err, errlen, "%s is a distribution: say which statistic, e.g. %s:p99<VALUE", left, left);
            return bad(err, errlen,
                       "unknown quantity \"%s\" (error_rate, request_throughput, output_token_throughput; or "
                       "METRIC:STAT such as time_to_first_token:p99)",
                       left);
        }
        if (out->target < 0)
            return bad(err, errlen, "a negative target in \"%s\"", text);
        if (out->kind == SG_SLO_ERROR_RATE && out->target > 1)
            return bad(err, errlen, "error_rate is a fraction from 0 to 1 (0.01 = 1%%), got \"%s\"", text);
        snprintf(out->text, sizeof out->text, "%s%s%.15g", left, op_text[out->op], out->target);
        return 0;
    }
    *colon = '\0';
    const char *stat = colon + 1;
    for (size_t i = 0; i < SG_ARRAY_LEN(quantities); i++)
        if (strcmp(left, quantities[i].name) == 0)
            return bad(err, errlen, "%s is one number for the whole run and takes no statistic: %s<VALUE", left, left);
    if (sg_metric_find(left, strlen(left), &out->metric) != 0) {
        char names[512];
        metric_names(names, sizeof names);
        for (int m = 0; m < SG_M__COUNT; m++)
            if (sg_metric_tag((sg_metric_id_t)m) && strcmp(sg_metric_tag((sg_metric_id_t)m), left) == 0)
                return bad(err, errlen, "%s describes the workload, not the service", left);
        snprintf(err, errlen, "unknown metric \"%s\" (known: %s; or ttft, tpot, itl, e2el)", left, names);
        return SG_EINVAL;
    }
    if (!*stat)
        return bad(err, errlen, "expected a statistic after \"%s:\" (avg, min, max, std, or a percentile such as p99)",
                   left);
    if (strcmp(stat, "avg") == 0 || strcmp(stat, "mean") == 0)
        out->stat = SG_SLO_STAT_AVG;
    else if (strcmp(stat, "min") == 0)
        out->stat = SG_SLO_STAT_MIN;
    else if (strcmp(stat, "max") == 0)
        out->stat = SG_SLO_STAT_MAX;
    else if (strcmp(stat, "std") == 0)
        out->stat = SG_SLO_STAT_STD;
    else if (stat[0] == 'p' && isdigit((unsigned char)stat[1])) {
        char *end;
        errno = 0;
        double pct = strtod(stat + 1, &end);
        if (*end || errno || !(pct > 0 && pct < 100))
            return bad(err, errlen,
                       "expected a percentile such as p50, p90, p99 or p99.9 (above 0, below 100), got \"%s\"", stat);
        out->stat = SG_SLO_STAT_PCT;
        out->pct = pct;
    } else {
        return bad(err, errlen, "unknown statistic \"%s\" (avg, min, max, std, or a percentile such as p99)", stat);
    }
    if (out->target < 0)
        return bad(err, errlen, "a negative target in \"%s\"", text);
    /* one spelling per check, so that the same SLO given twice is seen as such (mean = avg, p99.0 = p99) */
    static const char *const stat_text[] = {"avg", "min", "max", "std"};
    char canon[32];
    if (out->stat == SG_SLO_STAT_PCT)
        snprintf(canon, sizeof canon, "p%.15g", out->pct);
    else
        snprintf(canon, sizeof canon, "%s", stat_text[out->stat]);
    snprintf(out->text, sizeof out->text, "%s:%s%s%.15g", sg_metric_tag(out->metric), canon, op_text[out->op],
             out->target);
    return 0;
}

const char *sg_slo_unit(const sg_slo_check_t *c)
{
    switch (c->kind) {
    case SG_SLO_ERROR_RATE:
        return "";
    case SG_SLO_REQUEST_THROUGHPUT:
        return "requests/sec";
    case SG_SLO_OUTPUT_TOKEN_THROUGHPUT:
        return "tokens/sec";
    default:
        return sg_metric_unit(c->metric);
    }
}

static bool compare(sg_slo_op_t op, double v, double t)
{
    switch (op) {
    case SG_SLO_OP_LT:
        return v < t;
    case SG_SLO_OP_LE:
        return v <= t;
    case SG_SLO_OP_GT:
        return v > t;
    default:
        return v >= t;
    }
}

void sg_slo_eval(const sg_slo_check_t *checks, size_t n, const sg_metrics_t *m, double duration_s,
                 sg_slo_verdict_t *out)
{
    uint64_t ok = sg_metrics_ok(m), failed = sg_metrics_errors(m);
    for (size_t i = 0; i < n; i++) {
        const sg_slo_check_t *c = &checks[i];
        sg_slo_verdict_t *v = &out[i];
        memset(v, 0, sizeof *v);
        switch (c->kind) {
        case SG_SLO_ERROR_RATE:
            v->measurable = ok + failed > 0;
            v->measured = v->measurable ? (double)failed / (double)(ok + failed) : 0;
            break;
        case SG_SLO_REQUEST_THROUGHPUT:
            v->measurable = duration_s > 0;
            v->measured = v->measurable ? (double)ok / duration_s : 0;
            break;
        case SG_SLO_OUTPUT_TOKEN_THROUGHPUT:
            v->measurable = duration_s > 0;
            v->measured = v->measurable ? (double)sg_metrics_output_tokens(m) / duration_s : 0;
            break;
        default: {
            const sg_hist_t *h = sg_metrics_hist(m, c->metric);
            v->measurable = h && sg_hist_count(h) > 0;
            if (!v->measurable)
                break;
            double raw;
            switch (c->stat) {
            case SG_SLO_STAT_AVG:
                raw = sg_hist_mean(h);
                break;
            case SG_SLO_STAT_MIN:
                raw = (double)sg_hist_min(h);
                break;
            case SG_SLO_STAT_MAX:
                raw = (double)sg_hist_max(h);
                break;
            case SG_SLO_STAT_STD:
                raw = sg_hist_stddev(h);
                break;
            default:
                raw = sg_hist_percentile(h, c->pct);
                /* cancelled requests are censored: their latency is at least their wait. When counting them at
                 * their waits already lifts the percentile, the point's is at least that (docs/metrics.md) */
                if (c->metric == SG_M_LATENCY && sg_metrics_cancelled(m)) {
                    double least = sg_metrics_latency_at_least(m, c->pct);
                    raw = least > raw ? least : raw;
                }
                break;
            }
            v->measured = raw * sg_metric_scale(c->metric);
            break;
        }
        }
        v->pass = v->measurable && compare(c->op, v->measured, c->target);
    }
}

bool sg_slo_all_pass(const sg_slo_verdict_t *v, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!v[i].pass)
            return false;
    return true;
}

bool sg_slo_per_request_bound(const sg_slo_check_t *c, double *share_allowed)
{
    /* inter_chunk_latency's distribution holds every gap, many per request: a count of requests cannot bound it */
    if (c->kind != SG_SLO_DIST || c->stat != SG_SLO_STAT_PCT || c->metric == SG_M_INTER_CHUNK)
        return false;
    bool ceiling = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_LE;
    if (ceiling == sg_metric_larger_is_better(c->metric))
        return false;
    *share_allowed = ceiling ? 1 - c->pct / 100 : c->pct / 100;
    return true;
}
