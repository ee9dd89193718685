/*
 * --slo (sg_slo.h): what the parser takes and refuses, the canonical text it keeps, and the verdicts on metrics
 * filled with hand-built requests of known timing: measured values, the boundary under < and <=, > and >=, checks
 * with nothing to measure, and which checks a probe may count request by request.
 */
#include "sg_metrics.h"
#include "sg_slo.h"
#include "sg_stats.h"
#include "test.h"

#include <math.h>

#define MS 1000000LL
#define T0 (500LL * 1000 * MS) /* an arbitrary monotonic origin: 500 s */

static uint32_t events[64];

/* A streamed request intended at `at`: first token ttft_ms later, then osl - 1 more tokens gap_ms apart. */
static sg_record_t streamed(uint64_t id, int64_t at, int64_t ttft_ms, uint32_t osl, int64_t gap_ms)
{
    sg_record_t r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.streaming = true;
    r.intended_ns = at;
    r.sent_ns = at;
    r.first_byte_ns = at + ttft_ms * MS;
    r.first_token_ns = at + ttft_ms * MS;
    r.second_token_ns = osl >= 2 ? r.first_token_ns + gap_ms * MS : 0;
    r.end_ns = r.first_token_ns + (int64_t)(osl - 1) * gap_ms * MS;
    r.http_status = 200;
    r.osl = osl;
    r.osl_server = (int32_t)osl;
    r.osl_source = SG_OSL_USAGE;
    r.isl = 10;
    r.isl_server = -1;
    r.osl_tokenizer = -1;
    r.content_events = osl;
    for (uint32_t i = 0; i < osl && i < SG_ARRAY_LEN(events); i++)
        events[i] = (uint32_t)(i * gap_ms * 1000);
    r.event_us = events;
    r.n_events = osl < SG_ARRAY_LEN(events) ? osl : (uint32_t)SG_ARRAY_LEN(events);
    return r;
}

/* A whole (not streamed) answer of osl tokens, latency_ms after `at`. */
static sg_record_t whole(uint64_t id, int64_t at, int64_t latency_ms, uint32_t osl)
{
    sg_record_t r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = at;
    r.first_byte_ns = r.end_ns = at + latency_ms * MS;
    r.http_status = 200;
    r.osl = osl;
    r.osl_server = (int32_t)osl;
    r.osl_source = SG_OSL_USAGE;
    r.isl = 10;
    r.isl_server = r.osl_tokenizer = -1;
    return r;
}

static sg_record_t failure(uint64_t id, int64_t at)
{
    sg_record_t r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = at;
    r.end_ns = at + MS;
    r.err_class = SG_ERRC_HTTP;
    r.http_status = 500;
    r.isl_server = r.osl_server = r.osl_tokenizer = -1;
    snprintf(r.err_msg, sizeof r.err_msg, "boom");
    return r;
}

static void check_accepts(const char *text, const char *canonical)
{
    sg_slo_check_t c;
    char err[512] = "";
    int rc = sg_slo_parse(text, &c, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "refused \"%s\": %s\n", text, err);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0)
        CHECK_EQ_STR(c.text, strlen(c.text), canonical);
    /* the canonical text is itself accepted, as the same check */
    sg_slo_check_t again;
    CHECK_EQ_INT(sg_slo_parse(c.text, &again, err, sizeof err), 0);
    CHECK(again.kind == c.kind && again.op == c.op && again.target == c.target);
    CHECK(c.kind != SG_SLO_DIST ||
          (again.metric == c.metric && again.stat == c.stat && (c.stat != SG_SLO_STAT_PCT || again.pct == c.pct)));
}

static void check_refuses(const char *text, const char *says)
{
    sg_slo_check_t c;
    char err[512] = "";
    CHECK_EQ_INT(sg_slo_parse(text, &c, err, sizeof err), SG_EINVAL);
    if (!strstr(err, says))
        fprintf(stderr, "\"%s\": message \"%s\" lacks \"%s\"\n", text, err, says);
    CHECK(strstr(err, says) != NULL);
}

static sg_slo_check_t parsed(const char *text)
{
    sg_slo_check_t c;
    char err[512] = "";
    int rc = sg_slo_parse(text, &c, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "refused \"%s\": %s\n", text, err);
    CHECK_EQ_INT(rc, 0);
    return c;
}

static void test_parse(void)
{
    check_accepts("time_to_first_token:p99<500", "time_to_first_token:p99<500");
    check_accepts("  ttft : p99  <  500 ", "time_to_first_token:p99<500");
    check_accepts("ttft:p99.0<500", "time_to_first_token:p99<500");
    check_accepts("ttft:p99.9<=800", "time_to_first_token:p99.9<=800");
    check_accepts("tpot:p95<=30", "inter_token_latency:p95<=30");
    check_accepts("itl:p95<30", "inter_token_latency:p95<30");
    check_accepts("e2el:avg<2000", "request_latency:avg<2000");
    check_accepts("request_latency:mean<2e3", "request_latency:avg<2000");
    check_accepts("request_latency:min>=1.5", "request_latency:min>=1.5");
    check_accepts("request_latency:max < 10000", "request_latency:max<10000");
    check_accepts("inter_token_latency:std<=4", "inter_token_latency:std<=4");
    check_accepts("output_token_throughput_per_user:p10>20", "output_token_throughput_per_user:p10>20");
    check_accepts("time_to_first_token_from_send:p50<100", "time_to_first_token_from_send:p50<100");
    check_accepts("request_latency_from_send:p1>=0", "request_latency_from_send:p1>=0");
    check_accepts("time_to_second_token:p90<40", "time_to_second_token:p90<40");
    check_accepts("inter_chunk_latency:p99<50", "inter_chunk_latency:p99<50");
    check_accepts("schedule_lag:p99<=5", "schedule_lag:p99<=5");
    check_accepts("error_rate<0.01", "error_rate<0.01");
    check_accepts("error_rate <= 0", "error_rate<=0");
    check_accepts("error_rate<=1", "error_rate<=1");
    check_accepts("request_throughput>100", "request_throughput>100");
    check_accepts("output_token_throughput>=5000", "output_token_throughput>=5000");

    sg_slo_check_t c = parsed("ttft:p99.9 <= 800");
    CHECK(c.kind == SG_SLO_DIST && c.metric == SG_M_TTFT && c.stat == SG_SLO_STAT_PCT && c.pct == 99.9);
    CHECK(c.op == SG_SLO_OP_LE && c.target == 800);
    c = parsed("output_token_throughput_per_user:p10>20");
    CHECK(c.metric == SG_M_TOKENS_PER_USER && c.op == SG_SLO_OP_GT && c.pct == 10);
    c = parsed("error_rate<0.01");
    CHECK(c.kind == SG_SLO_ERROR_RATE && c.op == SG_SLO_OP_LT && c.target == 0.01);
    c = parsed("request_throughput>=2.5");
    CHECK(c.kind == SG_SLO_REQUEST_THROUGHPUT && c.op == SG_SLO_OP_GE && c.target == 2.5);
    CHECK(strcmp(sg_slo_unit(&c), "requests/sec") == 0);
    c = parsed("output_token_throughput>1");
    CHECK(c.kind == SG_SLO_OUTPUT_TOKEN_THROUGHPUT && strcmp(sg_slo_unit(&c), "tokens/sec") == 0);
    c = parsed("ttft:avg<1");
    CHECK(c.stat == SG_SLO_STAT_AVG && strcmp(sg_slo_unit(&c), "ms") == 0);
    c = parsed("error_rate<1");
    CHECK(strcmp(sg_slo_unit(&c), "") == 0);
}

static void test_parse_refused(void)
{
    check_refuses("", "expected METRIC:STAT<VALUE");
    check_refuses("ttft:p99", "expected METRIC:STAT<VALUE");
    check_refuses("ttft:p99=500", "expected METRIC:STAT<VALUE");
    check_refuses("ttft:p99<500<600", "one comparison per SLO");
    check_refuses("ttft:p99<500 error_rate<0.01", "give each SLO its own --slo");
    check_refuses("ttft:p99=<500", "percentile");
    check_refuses("ttft<500", "say which statistic");
    check_refuses("ttft:<500", "expected a statistic");
    check_refuses("ttft:p100<500", "percentile");
    check_refuses("ttft:p0<500", "percentile");
    check_refuses("ttft:p99x<500", "percentile");
    check_refuses("ttft:q99<500", "unknown statistic");
    check_refuses("ttft:P99<500", "unknown statistic");
    check_refuses("ttft:p99<fast", "expected a number");
    check_refuses("ttft:p99<500ms", "no unit");
    check_refuses("ttft:p99<", "expected a number");
    check_refuses("ttft:p99<inf", "expected a number");
    check_refuses("ttft:p99<nan", "expected a number");
    check_refuses("ttft:p99<-1", "negative");
    check_refuses("ttft:p99<0", "could never pass");
    check_refuses("error_rate<0", "could never pass");
    check_refuses("error_rate<1.5", "fraction");
    check_refuses("error_rate:avg<0.01", "takes no statistic");
    check_refuses("request_throughput:p50>1", "takes no statistic");
    check_refuses("errors<0.01", "unknown quantity");
    check_refuses("<500", "expected a metric");
    check_refuses(":p99<500", "expected a metric");
    check_refuses("latency:p99<500", "unknown metric \"latency\"");
    check_refuses("latency:p99<500", "time_to_first_token"); /* the valid names are listed */
    check_refuses("latency:p99<500", "e2el");
    check_refuses("isl:p99<5", "unknown metric"); /* not an alias of ours */
    check_refuses("input_sequence_length:p99<5", "describes the workload");
    check_refuses("output_sequence_length:avg>5", "describes the workload");
    char longname[200];
    memset(longname, 'x', 150);
    snprintf(longname + 150, sizeof longname - 150, ":p99<5");
    check_refuses(longname, "unknown metric");
}

/*
 * Ten streamed requests, TTFT 1..10 ms, 5 tokens each 2 ms apart (ITL 2 ms, 500 tokens/s per user), intended
 * 100 ms apart; one whole answer; one failure. The last request ends at 900 + 10 + 8 = 918 ms.
 */
static sg_metrics_t *known_run(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK(m != NULL);
    for (int i = 0; i < 10; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * 100 * MS, i + 1, 5, 2);
        sg_metrics_add(m, &r);
    }
    sg_record_t w = whole(10, T0 + 50 * MS, 20, 5);
    sg_metrics_add(m, &w);
    sg_record_t f = failure(11, T0 + 60 * MS);
    sg_metrics_add(m, &f);
    return m;
}

typedef struct {
    const char *text;
    bool pass;
} want_t;

static void expect(const sg_metrics_t *m, const want_t *w, size_t n)
{
    double d = sg_metrics_duration_s(m);
    for (size_t i = 0; i < n; i++) {
        sg_slo_check_t c = parsed(w[i].text);
        sg_slo_verdict_t v;
        sg_slo_eval(&c, 1, m, d, 0.95, &v);
        if (v.point_pass != w[i].pass)
            fprintf(stderr, "%s: measured %.9g (measurable %d), point_pass %d, want %d\n", w[i].text, v.measured,
                    v.measurable, v.point_pass, w[i].pass);
        CHECK(v.point_pass == w[i].pass);
        CHECK(v.measurable);
    }
}

static double measured(const sg_metrics_t *m, const char *text)
{
    sg_slo_check_t c = parsed(text);
    sg_slo_verdict_t v;
    sg_slo_eval(&c, 1, m, sg_metrics_duration_s(m), 0.95, &v);
    CHECK(v.measurable);
    return v.measured;
}

static void test_eval(void)
{
    sg_metrics_t *m = known_run();
    double d = sg_metrics_duration_s(m);
    CHECK_NEAR(d, 0.918, 1e-12);

    /* measured values, in the exported units */
    CHECK_NEAR(measured(m, "ttft:avg<100"), 5.5, 1e-9);
    CHECK_NEAR(measured(m, "ttft:min<100"), 1.0, 1e-9);
    CHECK_NEAR(measured(m, "ttft:max<100"), 10.0, 1e-9);
    CHECK_NEAR(measured(m, "ttft:std<100"), sqrt(8.25), 1e-9);
    /* nearest rank: p50 of 1..10 is the 5th value, p51 the 6th (numpy's interpolation would say 5.5 and 5.59) */
    CHECK_NEAR(measured(m, "ttft:p50<100"), 5.0, 5.0 / 2048);
    CHECK_NEAR(measured(m, "ttft:p51<100"), 6.0, 6.0 / 2048);
    CHECK_NEAR(measured(m, "ttft:p99.9<100"), 10.0, 10.0 / 2048);
    CHECK_NEAR(measured(m, "itl:p50<100"), 2.0, 2.0 / 2048);
    CHECK_NEAR(measured(m, "output_token_throughput_per_user:p50>1"), 500.0, 500.0 / 2048);
    /* request latency covers the whole answer too: 10 streamed (9..18 ms) and one of 20 ms */
    CHECK_NEAR(measured(m, "request_latency:max<100"), 20.0, 1e-9);
    CHECK_NEAR(measured(m, "error_rate<1"), 1.0 / 12, 1e-15);
    CHECK_NEAR(measured(m, "request_throughput>0"), 11 / 0.918, 1e-9);
    CHECK_NEAR(measured(m, "output_token_throughput>0"), 55 / 0.918, 1e-9);

    /* the boundary: exact values (min, max, avg, a quantity) under each comparison */
    static const want_t bounds[] = {
        {"ttft:max<10", false},
        {"ttft:max<=10", true},
        {"ttft:max>10", false},
        {"ttft:max>=10", true},
        {"ttft:min>1", false},
        {"ttft:min>=1", true},
        {"ttft:avg<5.5", false},
        {"ttft:avg<=5.5", true},
        {"error_rate<0.0833", false},
        {"error_rate<0.0834", true},
        {"ttft:p50<=5.01", true},
        {"ttft:p50<4.99", false},
        {"ttft:p51>5.99", true},
        {"ttft:p90<=9.01", true},
        {"ttft:p91<9.99", false},
        {"tpot:p99<=2.01", true},
        {"output_token_throughput_per_user:p10>=499", true},
        {"output_token_throughput_per_user:p10>501", false},
        {"request_throughput>=11", true},
        {"request_throughput>12", false},
        {"output_token_throughput>60", false},
        {"output_token_throughput>=59", true},
    };
    expect(m, bounds, SG_ARRAY_LEN(bounds));

    /* a percentile on a distribution of equal values is exact: clamped to [min, max] */
    sg_metrics_t *same = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 7; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * MS, 250, 3, 4);
        sg_metrics_add(same, &r);
    }
    static const want_t exact[] = {
        {"ttft:p99<250", false}, {"ttft:p99<=250", true}, {"ttft:p50>250", false},
        {"ttft:p50>=250", true}, {"ttft:std<=0", true},   {"error_rate<=0", true},
    };
    expect(same, exact, SG_ARRAY_LEN(exact));

    /* several at once, in order; all_pass only when every one does */
    sg_slo_check_t cs[3] = {parsed("ttft:p99<=250"), parsed("error_rate<0.5"), parsed("itl:avg<=4")};
    sg_slo_verdict_t vs[3];
    sg_slo_eval(cs, 3, same, sg_metrics_duration_s(same), 0.95, vs);
    CHECK(vs[0].point_pass && vs[1].point_pass && vs[2].point_pass);
    /* seven values cannot bound a p99 from above: undecided; no failure in seven bounds the error rate below 0.5
     * (Clopper-Pearson 0..0.41), and the average of equal values is exact (no spread) */
    CHECK(vs[0].outcome == SG_SLO_INCONCLUSIVE && vs[1].outcome == SG_SLO_PASS && vs[2].outcome == SG_SLO_PASS);
    CHECK(sg_slo_overall(vs, 3) == SG_SLO_INCONCLUSIVE && !sg_slo_all_pass(vs, 3));
    CHECK_NEAR(vs[2].measured, 4.0, 1e-9);
    cs[1] = parsed("request_throughput>1000000");
    sg_slo_eval(cs, 3, same, sg_metrics_duration_s(same), 0.95, vs);
    CHECK(vs[0].point_pass && !vs[1].point_pass && vs[1].measurable && vs[2].point_pass);
    CHECK(vs[1].outcome == SG_SLO_FAIL && sg_slo_overall(vs, 3) == SG_SLO_FAIL && !sg_slo_all_pass(vs, 3));
    CHECK(!sg_slo_all_pass(vs, 0));
    sg_metrics_free(same);
    sg_metrics_free(m);
}

/*
 * Outcomes against exact values: 1,000 requests with TTFT 1, 2, ..., 1000 ms. Their p99's 95% interval runs from
 * the 983rd to the 997th value (exact binomial sums), so 983..997 ms; the average's is 500.5 -+ t(0.975, 999) x
 * 288.8194 / sqrt(1000) = 500.5 -+ 17.92; three failures in 100 bound the error rate to 0.00623..0.0852.
 */
static void test_outcomes(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    for (int i = 1; i <= 1000; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * MS, i, 2, 1);
        sg_metrics_add(m, &r);
    }
    double d = sg_metrics_duration_s(m);
    sg_slo_check_t c = parsed("ttft:p99<997.5");
    sg_slo_verdict_t v;
    sg_slo_eval(&c, 1, m, d, 0.95, &v);
    CHECK(v.has_interval && v.n == 1000);
    CHECK_NEAR(v.lo, 983, 983.0 / 1024);
    CHECK_NEAR(v.hi, 997, 997.0 / 1024);
    CHECK_NEAR(v.level, 0.95, 0);
    CHECK(v.outcome == SG_SLO_PASS);
    static const struct {
        const char *text;
        sg_slo_outcome_t want;
    } cases[] = {
        {"ttft:p99<997.5", SG_SLO_PASS},         {"ttft:p99<996.5", SG_SLO_INCONCLUSIVE},
        {"ttft:p99<990", SG_SLO_INCONCLUSIVE},   {"ttft:p99<983.5", SG_SLO_INCONCLUSIVE},
        {"ttft:p99<982.5", SG_SLO_FAIL},         {"ttft:p99>982.5", SG_SLO_PASS},
        {"ttft:p99>997.5", SG_SLO_FAIL},         {"ttft:avg<518.6", SG_SLO_PASS},
        {"ttft:avg<518.2", SG_SLO_INCONCLUSIVE}, {"ttft:avg<482.4", SG_SLO_FAIL},
        {"ttft:avg<482.8", SG_SLO_INCONCLUSIVE}, {"ttft:max<1001", SG_SLO_PASS},
        {"ttft:max<999", SG_SLO_FAIL},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(cases); i++) {
        c = parsed(cases[i].text);
        sg_slo_eval(&c, 1, m, d, 0.95, &v);
        if (v.outcome != cases[i].want)
            fprintf(stderr, "%s: measured %.6g, interval %.6g..%.6g over %llu: %s, want %s\n", cases[i].text,
                    v.measured, v.lo, v.hi, (unsigned long long)v.n, sg_slo_outcome_name(v.outcome),
                    sg_slo_outcome_name(cases[i].want));
        CHECK(v.outcome == cases[i].want);
        CHECK(v.pass == (v.outcome == SG_SLO_PASS));
    }
    c = parsed("ttft:avg<1000");
    sg_slo_eval(&c, 1, m, d, 0.95, &v);
    CHECK_NEAR(v.lo, 500.5 - 1.9623415 * 288.8194361 / sqrt(1000), 1e-4);
    CHECK_NEAR(v.hi, 500.5 + 1.9623415 * 288.8194361 / sqrt(1000), 1e-4);
    /* a higher level widens the interval: at 99.9% the upper bound is past the largest value */
    c = parsed("ttft:p99<997.5");
    sg_slo_eval(&c, 1, m, d, 0.999, &v);
    CHECK(v.outcome == SG_SLO_INCONCLUSIVE);
    /* no interval for min, max, std and the throughputs */
    c = parsed("ttft:max<1001");
    sg_slo_eval(&c, 1, m, d, 0.95, &v);
    CHECK(!v.has_interval && v.n == 1000);
    sg_metrics_free(m);

    /* error rate: 3 failures in 100 */
    m = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 100; i++) {
        sg_record_t r = i < 3 ? failure((uint64_t)i, T0 + i * MS) : whole((uint64_t)i, T0 + i * MS, 10, 3);
        sg_metrics_add(m, &r);
    }
    d = sg_metrics_duration_s(m);
    static const struct {
        const char *text;
        sg_slo_outcome_t want;
    } rates[] = {
        {"error_rate<0.09", SG_SLO_PASS}, {"error_rate<0.05", SG_SLO_INCONCLUSIVE}, {"error_rate<0.006", SG_SLO_FAIL}};
    for (size_t i = 0; i < SG_ARRAY_LEN(rates); i++) {
        c = parsed(rates[i].text);
        sg_slo_eval(&c, 1, m, d, 0.95, &v);
        CHECK(v.outcome == rates[i].want && v.n == 100);
    }
    CHECK_NEAR(v.lo, 0.006229971538306392, 1e-9);
    CHECK_NEAR(v.hi, 0.08517605297428002, 1e-9);
    sg_metrics_free(m);

    /* how many values a percentile needs to be able to pass, and a probe's room before its failure is significant:
     * among 1,000 planned, p99 < T fails significantly once the 983rd value is past T (more than 17 past it), p10 > T
     * once the 120th is below it (120 below) */
    c = parsed("ttft:p99<500");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 368);
    CHECK_EQ_INT(sg_slo_significant_room(&c, 1000, 0.95), 17);
    c = parsed("output_token_throughput_per_user:p10>20");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 36);
    CHECK_EQ_INT(sg_slo_significant_room(&c, 1000, 0.95), 119);
    c = parsed("ttft:avg<500");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 0);
    c = parsed("error_rate<0.01");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 368);
    c = parsed("error_rate<0.1");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 36);
    c = parsed("error_rate<=0");
    CHECK_EQ_INT(sg_slo_min_n(&c, 0.95), 0);
}

static void test_not_measurable(void)
{
    /* whole answers only: no TTFT; one token each: no ITL */
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 4; i++) {
        sg_record_t r = whole((uint64_t)i, T0 + i * MS, 30, 1);
        sg_metrics_add(m, &r);
    }
    const char *none[] = {"ttft:p99<1000", "ttft:avg>=0", "itl:max<1000", "inter_chunk_latency:p50<9",
                          "output_token_throughput_per_user:p10>0"};
    for (size_t i = 0; i < SG_ARRAY_LEN(none); i++) {
        sg_slo_check_t c = parsed(none[i]);
        sg_slo_verdict_t v = {.measurable = true, .measured = 7, .pass = true};
        sg_slo_eval(&c, 1, m, sg_metrics_duration_s(m), 0.95, &v);
        CHECK(!v.measurable && !v.pass && v.measured == 0);
    }
    /* what they did have is measured */
    sg_slo_check_t c = parsed("e2el:p99<=30");
    sg_slo_verdict_t v;
    sg_slo_eval(&c, 1, m, sg_metrics_duration_s(m), 0.95, &v);
    CHECK(v.measurable && v.point_pass && v.outcome == SG_SLO_INCONCLUSIVE); /* four values */
    sg_metrics_free(m);

    /* nothing ran: no error rate (0 of 0), no duration, no distribution */
    sg_metrics_t *empty = sg_metrics_new(NULL, 0);
    const char *all[] = {"error_rate<=1", "request_throughput>=0", "output_token_throughput>=0", "e2el:max>=0"};
    for (size_t i = 0; i < SG_ARRAY_LEN(all); i++) {
        c = parsed(all[i]);
        sg_slo_eval(&c, 1, empty, sg_metrics_duration_s(empty), 0.95, &v);
        CHECK(!v.measurable && !v.pass);
    }
    /* every request failed: the error rate is 1, the latencies have nothing */
    for (int i = 0; i < 3; i++) {
        sg_record_t f = failure((uint64_t)i, T0 + i * MS);
        sg_metrics_add(empty, &f);
    }
    c = parsed("error_rate<=1");
    sg_slo_eval(&c, 1, empty, sg_metrics_duration_s(empty), 0.95, &v);
    CHECK(v.measurable && v.pass && v.measured == 1.0);
    c = parsed("e2el:max>=0");
    sg_slo_eval(&c, 1, empty, sg_metrics_duration_s(empty), 0.95, &v);
    CHECK(!v.measurable && !v.pass);
    sg_metrics_free(empty);
}

static void test_per_request_bound(void)
{
    double share = -1;
    sg_slo_check_t c = parsed("ttft:p99<500");
    CHECK(sg_slo_per_request_bound(&c, &share) && fabs(share - 0.01) < 1e-12);
    c = parsed("e2el:p90<=2000");
    CHECK(sg_slo_per_request_bound(&c, &share) && fabs(share - 0.1) < 1e-12);
    c = parsed("ttft:p99.9<800");
    CHECK(sg_slo_per_request_bound(&c, &share) && fabs(share - 0.001) < 1e-12);
    c = parsed("output_token_throughput_per_user:p10>20");
    CHECK(sg_slo_per_request_bound(&c, &share) && fabs(share - 0.1) < 1e-12);
    c = parsed("output_token_throughput_per_user:p5>=20");
    CHECK(sg_slo_per_request_bound(&c, &share) && fabs(share - 0.05) < 1e-12);
    /* not a per-request count: a statistic other than a percentile, the wrong direction, a run quantity, gaps */
    const char *no[] = {"ttft:avg<500",
                        "ttft:max<500",
                        "ttft:p99>5",
                        "output_token_throughput_per_user:p10<20",
                        "error_rate<0.01",
                        "request_throughput>1",
                        "inter_chunk_latency:p99<50"};
    for (size_t i = 0; i < SG_ARRAY_LEN(no); i++) {
        c = parsed(no[i]);
        CHECK(!sg_slo_per_request_bound(&c, &share));
    }
}

/* A request surge cancelled (SIGINT, a probe stopped early, the grace period's end) after waiting wait_ms. */
static sg_record_t cancelled(uint64_t id, int64_t at, int64_t wait_ms, bool sent)
{
    sg_record_t r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = sent ? at : 0;
    r.end_ns = at + wait_ms * MS;
    r.err_class = SG_ERRC_CANCELLED;
    r.isl = 10;
    r.isl_server = r.osl_server = r.osl_tokenizer = -1;
    snprintf(r.err_msg, sizeof r.err_msg, "the run was interrupted while the request was in flight");
    return r;
}

/*
 * Cancelled is not failed: 8 ok (latency 100 ms), 2 failed, 10 cancelled. error_rate is 2 / 10, not 12 / 20; the
 * cancelled ones are in no error group and no distribution, but counted, with their waits; and when their waits lift
 * a latency percentile, the verdict sees the lifted value.
 */
static void test_cancelled(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0), *other = sg_metrics_new(NULL, 0);
    CHECK(m != NULL && other != NULL);
    for (int i = 0; i < 8; i++) {
        sg_record_t r = whole((uint64_t)i, T0 + i * 10 * MS, 100, 5);
        sg_metrics_add(m, &r);
    }
    for (int i = 0; i < 2; i++) {
        sg_record_t f = failure((uint64_t)(8 + i), T0 + (80 + i * 10) * MS);
        sg_metrics_add(m, &f);
    }
    /* half of them in another worker's metrics: the merge keeps them apart too */
    for (int i = 0; i < 10; i++) {
        sg_record_t c = cancelled((uint64_t)(10 + i), T0 + (100 + i * 10) * MS, 5000 + i * 100, i % 2 == 0);
        sg_metrics_add(i < 5 ? m : other, &c);
    }
    CHECK_EQ_INT(sg_metrics_merge(m, other), 0);
    CHECK_EQ_INT((int)sg_metrics_ok(m), 8);
    CHECK_EQ_INT((int)sg_metrics_errors(m), 2);
    CHECK_EQ_INT((int)sg_metrics_cancelled(m), 10);
    CHECK_NEAR(measured(m, "error_rate<0.5"), 0.2, 1e-12);
    expect(m, (const want_t[]){{"error_rate<=0.2", true}, {"error_rate<0.2", false}}, 2);
    /* no error group for them: the error summary is the failures' */
    const sg_error_group_t *g;
    size_t ng = sg_metrics_error_groups(m, &g);
    uint64_t in_groups = 0;
    for (size_t i = 0; i < ng; i++) {
        CHECK(g[i].cls != SG_ERRC_CANCELLED);
        in_groups += g[i].count;
    }
    CHECK_EQ_INT((int)in_groups, 2);
    /* in no distribution but the schedule lag of those that were sent (5 of 10) */
    CHECK_EQ_INT((int)sg_hist_count(sg_metrics_hist(m, SG_M_LATENCY)), 8);
    CHECK_EQ_INT((int)sg_hist_count(sg_metrics_hist(m, SG_M_ISL)), 8);
    CHECK_EQ_INT((int)sg_hist_count(sg_metrics_hist(m, SG_M_SCHEDULE_LAG)), 8 + 2 + 5);
    /* their waits: 5,000 .. 5,900 ms */
    const sg_hist_t *w = sg_metrics_cancel_wait(m);
    CHECK_EQ_INT((int)sg_hist_count(w), 10);
    CHECK_NEAR((double)sg_hist_min(w) / MS, 5000, 1e-9);
    CHECK_NEAR((double)sg_hist_max(w) / MS, 5900, 1e-9);
    /* offered: 20 requests intended 0 .. 190 ms apart, 19 gaps */
    CHECK_NEAR(sg_metrics_offered_rate(m), 19 / 0.19, 1e-6);
    /* censored: the completed requests' p50 is 100 ms; with the 10 cancelled at their waits, p50 of 18 values is
     * the 9th, a wait (5,000 ms): the run's p50 is at least that, and a latency SLO is judged on it */
    CHECK_NEAR(sg_hist_percentile(sg_metrics_hist(m, SG_M_LATENCY), 50) / MS, 100, 100.0 / 2048);
    CHECK_NEAR(sg_metrics_latency_at_least(m, 50) / MS, 5000, 5000.0 / 2048);
    CHECK_NEAR(measured(m, "request_latency:p50<1000"), 5000, 5000.0 / 2048);
    expect(m, (const want_t[]){{"request_latency:p50<1000", false}, {"request_latency:p25<1000", true}}, 2);
    /* the throughput is the ok requests' */
    CHECK_NEAR(measured(m, "request_throughput>0"), 8 / sg_metrics_duration_s(m), 1e-9);
    sg_metrics_free(other);

    /* a run whose only trouble is what surge cancelled has no error at all */
    sg_metrics_t *k = sg_metrics_new(NULL, 0);
    CHECK(k != NULL);
    for (int i = 0; i < 4; i++) {
        sg_record_t r = whole((uint64_t)i, T0 + i * 10 * MS, 100, 5);
        sg_metrics_add(k, &r);
        sg_record_t c = cancelled((uint64_t)(4 + i), T0 + i * 10 * MS, 50, true);
        sg_metrics_add(k, &c);
    }
    CHECK_EQ_INT((int)sg_metrics_errors(k), 0);
    CHECK_NEAR(measured(k, "error_rate<0.01"), 0, 0);
    expect(k, (const want_t[]){{"error_rate<0.01", true}}, 1);
    /* waits (50 ms) below every completed latency cannot lift a percentile: the verdict is the completed ones' */
    CHECK_NEAR(measured(k, "request_latency:p99<1000"), 100, 100.0 / 2048);
    sg_metrics_free(k);
    sg_metrics_free(m);
}

/*
 * Clustered requests (docs/metrics.md): the dispersion of counts by second, and the wider interval it gives. Ten
 * seconds of 100 requests with all 10 slow ones in one second: p = 0.01, chi-square (1 - 10^2/1000) / (0.01 x 0.99)
 * = 90.909..., over 9 degrees of freedom 10.101...; the same 10 one per second: chi-square 0, so 1.
 */
static void test_clustered(void)
{
    CHECK_NEAR(sg_slo_dispersion(100.0 / 100, 10, 1000, 10), 0.9 / 0.0099 / 9, 1e-9);
    /* chance: a chi-square with 9 degrees of freedom passes 21.67 once in 100 (21.70 by Wilson-Hilferty's form) */
    CHECK_NEAR(sg_slo_chi2_dispersion(21.5, 9), 1, 0);
    CHECK_NEAR(sg_slo_chi2_dispersion(21.8, 9), 21.8 / 9, 1e-12);
    CHECK_NEAR(sg_slo_chi2_dispersion(5, 0), 1, 0);
    CHECK_NEAR(sg_slo_dispersion(10 * (1.0 / 100), 10, 1000, 10), 1, 0);
    CHECK_NEAR(sg_slo_dispersion(0, 0, 1000, 10), 1, 0);       /* none past: cannot be told */
    CHECK_NEAR(sg_slo_dispersion(1000, 1000, 1000, 10), 1, 0); /* all past */
    CHECK_NEAR(sg_slo_dispersion(1, 10, 100, 1), 1, 0);        /* one second */
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    for (int i = 1; i <= 1000; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * MS, i, 2, 1);
        sg_metrics_add(m, &r);
    }
    double d = sg_metrics_duration_s(m);
    sg_slo_check_t c = parsed("ttft:p99<997.5");
    sg_slo_verdict_t plain, one, two, four;
    sg_slo_eval(&c, 1, m, d, 0.95, &plain);
    double disp = 1;
    sg_slo_eval_clustered(&c, 1, m, d, 0.95, &disp, &one);
    CHECK(one.lo == plain.lo && one.hi == plain.hi && one.outcome == SG_SLO_PASS && one.dispersion == 1);
    /* as 500 independent: the ranks 500 values give for a p99, doubled; no longer sure under 997.5 */
    disp = 2;
    sg_slo_eval_clustered(&c, 1, m, d, 0.95, &disp, &two);
    uint64_t l, u;
    sg_quantile_ranks(500, 0.99, 0.95, &l, &u);
    CHECK_NEAR(two.lo, (double)(2 * l), 2.0 * (double)l / 1024);
    if (u <= 500)
        CHECK_NEAR(two.hi, (double)(2 * u), 2.0 * (double)u / 1024);
    CHECK(two.lo < plain.lo && two.hi >= plain.hi && two.outcome == SG_SLO_INCONCLUSIVE && two.dispersion == 2);
    CHECK(two.n == 1000);
    /* as 250: under the 368 a p99 needs for an upper bound */
    disp = 4;
    sg_slo_eval_clustered(&c, 1, m, d, 0.95, &disp, &four);
    CHECK(isinf(four.hi) && four.outcome == SG_SLO_INCONCLUSIVE);
    /* an average is not a count: unchanged */
    sg_slo_check_t avg = parsed("ttft:avg<518.6");
    sg_slo_verdict_t a1, a4;
    sg_slo_eval(&avg, 1, m, d, 0.95, &a1);
    sg_slo_eval_clustered(&avg, 1, m, d, 0.95, &disp, &a4);
    CHECK(a1.lo == a4.lo && a1.hi == a4.hi && a4.dispersion == 1);
    /* a probe's early stop needs more past its target when they come clustered */
    sg_slo_check_t p99 = parsed("ttft:p99<100");
    uint64_t room1 = sg_slo_significant_room(&p99, 600, 0.95),
             room8 = sg_slo_significant_room_clustered(&p99, 600, 0.95, 8);
    CHECK(sg_slo_significant_room_clustered(&p99, 600, 0.95, 1) == room1);
    CHECK(room8 > room1);
    sg_metrics_free(m);
}

int main(void)
{
    test_parse();
    test_parse_refused();
    test_eval();
    test_outcomes();
    test_not_measurable();
    test_per_request_bound();
    test_cancelled();
    test_clustered();
    return test_finish("test_slo");
}
