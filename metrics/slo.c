/* --slo verdicts: parse, evaluate on a point's merged metrics (sg_slo.h). */
#define _GNU_SOURCE
#include "sg_slo.h"
#include "sg_stats.h"

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

/* v as the canonical text writes it: 15 significant digits, or 17 where 15 would not read back as v. */
static const char *num_text(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, cap, "%.17g", v);
    return buf;
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

static int parse_check(const char *text, sg_slo_check_t *out, char *err, size_t errlen);

int sg_slo_parse(const char *text, sg_slo_check_t *out, char *err, size_t errlen)
{
    int rc = parse_check(text, out, err, errlen);
    /* the messages quote the user's text: a control character in it (a newline) must not break the one line */
    if (rc != 0 && err)
        for (char *c = err; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    return rc;
}

static int parse_check(const char *text, sg_slo_check_t *out, char *err, size_t errlen)
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
        char t[32];
        snprintf(out->text, sizeof out->text, "%s%s%s", left, op_text[out->op], num_text(t, sizeof t, out->target));
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
    char canon[40], t[32];
    if (out->stat == SG_SLO_STAT_PCT)
        snprintf(canon, sizeof canon, "p%s", num_text(t, sizeof t, out->pct));
    else
        snprintf(canon, sizeof canon, "%s", stat_text[out->stat]);
    snprintf(out->text, sizeof out->text, "%s:%s%s%s", sg_metric_tag(out->metric), canon, op_text[out->op],
             num_text(t, sizeof t, out->target));
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

/* The interval's verdict: pass when all of it meets the target, fail when none of it does. */
static sg_slo_outcome_t judge(sg_slo_op_t op, double lo, double hi, double target)
{
    bool lo_ok = compare(op, lo, target), hi_ok = compare(op, hi, target);
    return lo_ok && hi_ok ? SG_SLO_PASS : !lo_ok && !hi_ok ? SG_SLO_FAIL : SG_SLO_INCONCLUSIVE;
}

/* A statistic of a distribution: the point estimate, and the interval of a percentile or the average. */
/*
 * The ranks bounding the p-quantile among n values of which only n / disp count as independent (disp >= 1): the
 * ranks n / disp values would give, scaled back to n, the lower one down and the upper one up (0 and n + 1: no
 * bound). disp <= 1: sg_quantile_ranks itself.
 */
static void clustered_ranks(uint64_t n, double p, double level, double disp, uint64_t *l, uint64_t *u)
{
    if (!(disp > 1)) {
        sg_quantile_ranks(n, p, level, l, u);
        return;
    }
    uint64_t ne = (uint64_t)floor((double)n / disp);
    if (ne < 1) {
        *l = 0;
        *u = n + 1;
        return;
    }
    uint64_t le, ue;
    sg_quantile_ranks(ne, p, level, &le, &ue);
    double r = (double)n / (double)ne;
    *l = le < 1 ? 0 : (uint64_t)floor((double)le * r);
    *u = ue > ne ? n + 1 : (uint64_t)ceil((double)ue * r);
    if (*u > n + 1)
        *u = n + 1;
}

double sg_slo_chi2_dispersion(double chi2, double df)
{
    if (!(df >= 1) || !(chi2 > df))
        return 1;
    /* the chi-square's 99th percentile (Wilson-Hilferty): independent requests' counts pass it once in 100 */
    double a = 2 / (9 * df), q = df * pow(1 - a + 2.3263478740408408 * sqrt(a), 3);
    return chi2 > q ? chi2 / df : 1;
}

double sg_slo_dispersion(double s2, uint64_t k, uint64_t n, uint64_t blocks)
{
    if (blocks < 2 || k == 0 || k >= n)
        return 1;
    double p = (double)k / (double)n;
    /* sum over blocks of (k_b - n_b p)^2 / (n_b p (1 - p)), expanded: (s2 - k^2 / n) / (p (1 - p)) */
    double chi2 = (s2 - (double)k * (double)k / (double)n) / (p * (1 - p));
    return sg_slo_chi2_dispersion(chi2, (double)(blocks - 1));
}

static void eval_dist(const sg_slo_check_t *c, const sg_metrics_t *m, const sg_hist_t *h, double level, double disp,
                      sg_slo_verdict_t *v)
{
    double scale = sg_metric_scale(c->metric);
    uint64_t n = sg_hist_count(h);
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
        break;
    }
    /* cancelled requests are censored: their latency is at least their wait. When counting them at their waits
     * already lifts the percentile, the point's is at least that (docs/metrics.md) */
    double least = 0;
    if (c->stat == SG_SLO_STAT_PCT && c->metric == SG_M_LATENCY && sg_metrics_cancelled(m)) {
        least = sg_metrics_latency_at_least(m, c->pct);
        raw = least > raw ? least : raw;
    }
    v->measured = raw * scale;
    v->n = n;
    if (c->stat == SG_SLO_STAT_PCT) {
        /* with cancelled requests in a latency percentile, the ranks are among all of them (each cancelled one a
         * value at least its wait): the lower bound is the l-th of the completed and the waits together, the upper
         * the u-th completed one (none: open), which no cancelled value can push up */
        uint64_t cancelled = least > 0 ? sg_metrics_cancelled(m) : 0, all = n + cancelled, l, u;
        clustered_ranks(all, c->pct / 100, level, disp, &l, &u);
        v->dispersion = disp > 1 ? disp : 1;
        v->has_interval = true;
        v->n = all;
        if (l < 1)
            v->lo = -INFINITY;
        else if (cancelled)
            v->lo = sg_metrics_latency_at_least(m, 100 * ((double)l - 0.5) / (double)all) * scale;
        else
            v->lo = sg_hist_at_rank(h, l) * scale;
        v->hi = u <= n ? sg_hist_at_rank(h, u) * scale : INFINITY;
        if (v->hi < v->lo)
            v->hi = v->lo;
    } else if (c->stat == SG_SLO_STAT_AVG) {
        v->has_interval = true;
        if (n >= 2) {
            /* the sample's standard deviation from the population one the histogram keeps */
            double sd = sg_hist_stddev(h) * sqrt((double)n / (double)(n - 1)) * scale;
            double half = sg_t_quantile((1 + level) / 2, (double)(n - 1)) * sd / sqrt((double)n);
            v->lo = v->measured - half;
            v->hi = v->measured + half;
        } else {
            v->lo = -INFINITY;
            v->hi = INFINITY;
        }
    }
}

void sg_slo_eval(const sg_slo_check_t *checks, size_t n, const sg_metrics_t *m, double duration_s, double level,
                 sg_slo_verdict_t *out)
{
    sg_slo_eval_clustered(checks, n, m, duration_s, level, NULL, out);
}

void sg_slo_eval_clustered(const sg_slo_check_t *checks, size_t n, const sg_metrics_t *m, double duration_s,
                           double level, const double *dispersion, sg_slo_verdict_t *out)
{
    uint64_t ok = sg_metrics_ok(m), failed = sg_metrics_errors(m);
    for (size_t i = 0; i < n; i++) {
        const sg_slo_check_t *c = &checks[i];
        sg_slo_verdict_t *v = &out[i];
        memset(v, 0, sizeof *v);
        v->level = level;
        v->dispersion = 1;
        switch (c->kind) {
        case SG_SLO_ERROR_RATE:
            v->measurable = ok + failed > 0;
            v->measured = v->measurable ? (double)failed / (double)(ok + failed) : 0;
            v->n = ok + failed;
            /* "no request failed" (<= 0) is an observation of the run, decided exactly: an interval on a rate never
             * reaches 0 */
            if (v->measurable && !(c->op == SG_SLO_OP_LE && c->target == 0)) {
                v->has_interval = true;
                sg_proportion_interval(failed, ok + failed, level, &v->lo, &v->hi);
            }
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
            if (v->measurable)
                eval_dist(c, m, h, level, dispersion ? dispersion[i] : 1, v);
            break;
        }
        }
        v->point_pass = v->measurable && compare(c->op, v->measured, c->target);
        if (!v->measurable)
            v->outcome = SG_SLO_FAIL;
        else if (v->has_interval)
            v->outcome = judge(c->op, v->lo, v->hi, c->target);
        else
            v->outcome = v->point_pass ? SG_SLO_PASS : SG_SLO_FAIL;
        v->pass = v->outcome == SG_SLO_PASS;
    }
}

sg_slo_outcome_t sg_slo_overall(const sg_slo_verdict_t *v, size_t n)
{
    if (n == 0)
        return SG_SLO_FAIL;
    sg_slo_outcome_t o = SG_SLO_PASS;
    for (size_t i = 0; i < n; i++) {
        if (v[i].outcome == SG_SLO_FAIL)
            return SG_SLO_FAIL;
        if (v[i].outcome == SG_SLO_INCONCLUSIVE)
            o = SG_SLO_INCONCLUSIVE;
    }
    return o;
}

bool sg_slo_all_pass(const sg_slo_verdict_t *v, size_t n)
{
    return sg_slo_overall(v, n) == SG_SLO_PASS;
}

const char *sg_slo_outcome_name(sg_slo_outcome_t o)
{
    return o == SG_SLO_PASS ? "pass" : o == SG_SLO_FAIL ? "fail" : "inconclusive";
}

uint64_t sg_slo_min_n(const sg_slo_check_t *c, double level)
{
    /* an error-rate ceiling passes once the rate's upper bound with no failure at all, 1 - ((1-level)/2)^(1/n), is
     * under it */
    if (c->kind == SG_SLO_ERROR_RATE)
        return (c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_LE) && c->target > 0 && c->target < 1
                   ? sg_quantile_min_n(1 - c->target, level)
                   : 0;
    if (c->kind != SG_SLO_DIST || c->stat != SG_SLO_STAT_PCT)
        return 0;
    /* a ceiling needs its upper bound (a high rank) to exist, a floor its lower bound (a low rank): the tail of the
     * quantile that is further from the median needs the most values */
    double p = c->pct / 100;
    bool ceiling = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_LE;
    return sg_quantile_min_n(ceiling ? p : 1 - p, level);
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

uint64_t sg_slo_significant_room(const sg_slo_check_t *c, uint64_t planned, double level)
{
    return sg_slo_significant_room_clustered(c, planned, level, 1);
}

uint64_t sg_slo_significant_room_clustered(const sg_slo_check_t *c, uint64_t planned, double level, double dispersion)
{
    uint64_t l, u;
    clustered_ranks(planned, c->pct / 100, level, dispersion, &l, &u);
    /* a ceiling fails significantly once its lower bound, the l-th smallest value, is past the target: once more
     * than planned - l values are; a floor once its upper bound, the u-th smallest, is below it: u values */
    bool ceiling = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_LE;
    if (ceiling)
        return l == 0 ? planned : planned - l;
    return u > planned ? planned : u - 1;
}

json_t *sg_slo_interval_json(const sg_slo_verdict_t *v)
{
    if (!v->measurable || !v->has_interval)
        return json_null();
    json_t *a = json_array();
    json_array_append_new(a, isinf(v->lo) ? json_null() : json_real(v->lo));
    json_array_append_new(a, isinf(v->hi) ? json_null() : json_real(v->hi));
    return a;
}
