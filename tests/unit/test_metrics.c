/* sg_metrics: hand-built request timelines in, exact TTFT/ITL/... out; warmup, errors, goodput, merge. */
#include "sg_metrics.h"
#include "sg_slo.h"
#include "test.h"

#include <stdlib.h>

#define MS 1000000LL
#define T0 (1000LL * 1000 * MS) /* an arbitrary monotonic origin: 1000 s */

static uint32_t events[200];

/*
 * A streamed request: intended at `at`, sent lag_ms later, first token ttft_ms after intended, then osl tokens
 * one event each, gap_ms apart, ending at the last one.
 */
static sg_record_t streamed(uint64_t id, int64_t at, int64_t lag_ms, int64_t ttft_ms, uint32_t osl, int64_t gap_ms)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.streaming = true;
    r.intended_ns = at;
    r.sent_ns = at + lag_ms * MS;
    r.first_byte_ns = r.sent_ns + MS;
    r.first_token_ns = at + ttft_ms * MS;
    r.second_token_ns = osl >= 2 ? r.first_token_ns + gap_ms * MS : 0;
    r.end_ns = r.first_token_ns + (int64_t)(osl - 1) * gap_ms * MS;
    r.http_status = 200;
    r.osl = osl;
    r.isl = 200;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = (int32_t)osl;
    r.osl_source = SG_OSL_USAGE;
    r.content_events = osl;
    for (uint32_t i = 0; i < osl && i < SG_ARRAY_LEN(events); i++)
        events[i] = (uint32_t)(i * gap_ms * 1000);
    r.event_us = events;
    r.n_events = osl;
    return r;
}

static sg_record_t plain(uint64_t id, int64_t at, int64_t lag_ms, int64_t latency_ms, uint32_t osl)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = at + lag_ms * MS;
    r.first_byte_ns = at + latency_ms * MS;
    r.end_ns = at + latency_ms * MS;
    r.http_status = 200;
    r.osl = osl;
    r.isl = 100;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = -1;
    r.osl_source = SG_OSL_TOKENIZER;
    return r;
}

static sg_record_t failed(uint64_t id, int64_t at, sg_err_class_t cls, int status, const char *msg, bool sent)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = sent ? at + 3 * MS : 0;
    r.end_ns = at + 10 * MS;
    r.err_class = (uint8_t)cls;
    r.http_status = status;
    r.isl_server = r.osl_server = r.isl_cached = -1;
    snprintf(r.err_msg, sizeof(r.err_msg), "%s", msg);
    return r;
}

static const sg_hist_t *H(const sg_metrics_t *m, sg_metric_id_t id)
{
    return sg_metrics_hist(m, id);
}

static void test_streamed_exact(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK(m != NULL);
    /* ttft 52 ms, lag 2 ms, 100 tokens 10 ms apart: latency 52 + 990 ms, ITL exactly 10 ms = 100 tok/s */
    sg_record_t r = streamed(1, T0, 2, 52, 100, 10);
    sg_metrics_add(m, &r);
    CHECK_EQ_INT(sg_metrics_ok(m), 1);
    CHECK_EQ_INT(sg_metrics_errors(m), 0);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_TTFT)), 52 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_TTFT_FROM_SEND)), 50 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_TTST)), 10 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_ITL)), 10 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_LATENCY)), 1042 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_LATENCY_FROM_SEND)), 1040 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_SCHEDULE_LAG)), 2 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_OSL)), 100);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_ISL)), 200);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_TOKENS_PER_USER)), 100000); /* milli-tokens/s */
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_INTER_CHUNK)), 99);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_INTER_CHUNK)), 10 * MS);
    CHECK_EQ_INT(sg_hist_max(H(m, SG_M_INTER_CHUNK)), 10 * MS);
    CHECK_EQ_INT(sg_metrics_output_tokens(m), 100);
    CHECK_EQ_INT(sg_metrics_input_tokens(m), 200);
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_USAGE), 1);
    CHECK_EQ_INT(sg_metrics_first_intended_ns(m), T0);
    CHECK_EQ_INT(sg_metrics_last_end_ns(m), T0 + 1042 * MS);
    CHECK_NEAR(sg_metrics_duration_s(m), 1.042, 1e-12);

    /* A second one: ITL is the mean over (osl - 1) gaps, not over the events seen. */
    r = streamed(2, T0 + 500 * MS, 0, 30, 11, 4); /* latency 30 + 40 ms, ITL 4 ms */
    r.n_events = 3;                               /* the server batched tokens: 3 chunks carried 11 tokens */
    events[1] = 15000;
    events[2] = 40000;
    sg_metrics_add(m, &r);
    CHECK_EQ_INT(sg_hist_max(H(m, SG_M_ITL)), 10 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_ITL)), 4 * MS);
    CHECK_NEAR(sg_hist_mean(H(m, SG_M_TTFT)), 41.0 * MS, 1e-6);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_INTER_CHUNK)), 101);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_INTER_CHUNK)), 10 * MS);
    CHECK_EQ_INT(sg_hist_max(H(m, SG_M_INTER_CHUNK)), 25 * MS);
    CHECK_EQ_INT(sg_hist_max(H(m, SG_M_TOKENS_PER_USER)), 250000);
    CHECK_EQ_INT(sg_metrics_output_tokens(m), 111);
    /* The run still ends with request 1. */
    CHECK_EQ_INT(sg_metrics_last_end_ns(m), T0 + 1042 * MS);

    /* A non-integer ITL is rounded to the nearest ns: 1000001 ns over 3 gaps. */
    sg_record_t odd = streamed(3, T0, 0, 1, 4, 0);
    odd.end_ns = odd.first_token_ns + 1000001;
    odd.n_events = 0;
    sg_metrics_t *m2 = sg_metrics_new(NULL, 0);
    sg_metrics_add(m2, &odd);
    CHECK_EQ_INT(sg_hist_min(H(m2, SG_M_ITL)), 333334);
    CHECK_EQ_INT(sg_hist_min(H(m2, SG_M_TOKENS_PER_USER)), 2999997); /* 1e12 / 333333.67, in milli-tokens/s */
    CHECK_EQ_INT(sg_hist_count(H(m2, SG_M_TTST)), 1);
    CHECK_EQ_INT(sg_hist_count(H(m2, SG_M_INTER_CHUNK)), 0);
    /* All tokens at once (ITL 0): in inter_token_latency as 0, but 1/ITL has no value: left out of the per-user
     * rate (AIPerf's rule) and counted, never a clamped 1e6. */
    odd.end_ns = odd.first_token_ns;
    sg_metrics_add(m2, &odd);
    CHECK_EQ_INT(sg_hist_count(H(m2, SG_M_ITL)), 2);
    CHECK_EQ_INT(sg_hist_min(H(m2, SG_M_ITL)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m2, SG_M_TOKENS_PER_USER)), 1);
    CHECK_EQ_INT(sg_hist_clamped(H(m2, SG_M_TOKENS_PER_USER)), 0);
    CHECK_EQ_INT(sg_metrics_per_user_undefined(m2), 1);
    double v = 0;
    CHECK(!sg_record_metric(&odd, SG_M_TOKENS_PER_USER, &v));
    CHECK(sg_record_metric(&odd, SG_M_ITL, &v) && v == 0);
    /* Several tokens in one read but not all: a finite 1/ITL, exact, not clamped. 4 tokens, the last 3 ns after
     * the first: ITL 1 ns, 1e9 tokens/s, the top of the range itself. */
    odd.end_ns = odd.first_token_ns + 3;
    sg_metrics_add(m2, &odd);
    CHECK_EQ_INT(sg_hist_max(H(m2, SG_M_TOKENS_PER_USER)), 1000000000000ULL);
    CHECK_EQ_INT(sg_hist_clamped(H(m2, SG_M_TOKENS_PER_USER)), 0);
    CHECK(sg_record_metric(&odd, SG_M_TOKENS_PER_USER, &v) && v == 1e9);
    /* merged, the count adds up */
    sg_metrics_t *m3 = sg_metrics_new(NULL, 0);
    CHECK(sg_metrics_merge(m3, m2) == 0 && sg_metrics_merge(m3, m2) == 0);
    CHECK_EQ_INT(sg_metrics_per_user_undefined(m3), 2);
    sg_metrics_free(m3);
    sg_metrics_free(m2);
    sg_metrics_free(m);
}

static void test_non_streamed_and_single_token(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    sg_record_t r = plain(1, T0, 1, 300, 50);
    sg_metrics_add(m, &r);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_TTFT)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_TTFT_FROM_SEND)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_ITL)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_INTER_CHUNK)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_TOKENS_PER_USER)), 0);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_LATENCY)), 300 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_LATENCY_FROM_SEND)), 299 * MS);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_OSL)), 50);
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_TOKENIZER), 1);

    /* Streamed, one token: TTFT yes, no second token, no ITL. */
    sg_record_t s = streamed(2, T0, 0, 20, 1, 0);
    s.osl_source = SG_OSL_EVENTS;
    sg_metrics_add(m, &s);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_TTFT)), 1);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_TTST)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_ITL)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_INTER_CHUNK)), 0);
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_EVENTS), 1);
    CHECK_EQ_INT(sg_metrics_ok(m), 2);
    sg_metrics_free(m);
}

static void test_warmup_ignored(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    sg_record_t w = streamed(1, T0 - 5000 * MS, 0, 10, 5, 1);
    w.warmup = true;
    sg_metrics_add(m, &w);
    sg_record_t we = failed(2, T0 + 9000 * MS, SG_ERRC_HTTP, 500, "boom", true);
    we.warmup = true;
    sg_metrics_add(m, &we);
    CHECK_EQ_INT(sg_metrics_ok(m), 0);
    CHECK_EQ_INT(sg_metrics_errors(m), 0);
    CHECK_EQ_INT(sg_metrics_first_intended_ns(m), 0);
    CHECK_EQ_INT(sg_metrics_last_end_ns(m), 0);
    CHECK_NEAR(sg_metrics_duration_s(m), 0, 0);
    for (int i = 0; i < SG_M__COUNT; i++)
        CHECK_EQ_INT(sg_hist_count(H(m, (sg_metric_id_t)i)), 0);
    const sg_error_group_t *g;
    CHECK_EQ_INT(sg_metrics_error_groups(m, &g), 0);

    sg_record_t r = plain(3, T0, 0, 100, 10);
    sg_metrics_add(m, &r);
    CHECK_EQ_INT(sg_metrics_first_intended_ns(m), T0);
    CHECK_NEAR(sg_metrics_duration_s(m), 0.1, 1e-12);
    sg_metrics_free(m);
}

static void test_errors(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 3; i++) {
        sg_record_t e = failed((uint64_t)i, T0 + i * MS, SG_ERRC_HTTP, 500, "Internal Server Error", true);
        sg_metrics_add(m, &e);
    }
    sg_record_t e = failed(10, T0, SG_ERRC_HTTP, 503, "Service Unavailable", true);
    sg_metrics_add(m, &e);
    e = failed(11, T0 + 50 * MS, SG_ERRC_CONNECT, 0, "connection refused", false);
    sg_metrics_add(m, &e);
    sg_metrics_add(m, &e);
    e = failed(12, T0, SG_ERRC_HTTP, 500, "other text", true);
    sg_metrics_add(m, &e);

    CHECK_EQ_INT(sg_metrics_errors(m), 7);
    CHECK_EQ_INT(sg_metrics_ok(m), 0);
    /* Latency distributions are for successes only; schedule lag counts failed requests that were sent. */
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_LATENCY)), 0);
    CHECK_EQ_INT(sg_hist_count(H(m, SG_M_SCHEDULE_LAG)), 5);
    CHECK_EQ_INT(sg_hist_min(H(m, SG_M_SCHEDULE_LAG)), 3 * MS);
    /* Duration covers failed requests too: intended T0 .. end of the connect errors (T0 + 60 ms). */
    CHECK_NEAR(sg_metrics_duration_s(m), 0.060, 1e-12);

    const sg_error_group_t *g;
    size_t n = sg_metrics_error_groups(m, &g);
    CHECK_EQ_INT(n, 4);
    CHECK(g[0].cls == SG_ERRC_HTTP && g[0].http_status == 500 && g[0].count == 3);
    CHECK(strcmp(g[0].message, "Internal Server Error") == 0);
    CHECK(g[1].http_status == 503 && g[1].count == 1);
    CHECK(g[2].cls == SG_ERRC_CONNECT && g[2].count == 2 && strcmp(g[2].message, "connection refused") == 0);
    CHECK(g[3].http_status == 500 && g[3].count == 1 && strcmp(g[3].message, "other text") == 0);
    sg_metrics_free(m);
}

static void test_error_group_cap(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 40; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "bad thing #%d", i);
        sg_record_t e = failed((uint64_t)i, T0, SG_ERRC_PROTOCOL, 0, msg, true);
        sg_metrics_add(m, &e);
        sg_metrics_add(m, &e);
    }
    sg_record_t h = failed(99, T0, SG_ERRC_HTTP, 429, "slow down", true);
    sg_metrics_add(m, &h);
    const sg_error_group_t *g;
    size_t n = sg_metrics_error_groups(m, &g);
    CHECK_EQ_INT(n, 34);
    uint64_t total = 0, other = 0, other_http = 0;
    for (size_t i = 0; i < n; i++) {
        total += g[i].count;
        if (strcmp(g[i].message, "(other messages)") == 0 && g[i].cls == SG_ERRC_PROTOCOL)
            other = g[i].count;
        if (strcmp(g[i].message, "(other messages)") == 0 && g[i].http_status == 429)
            other_http = g[i].count;
    }
    CHECK_EQ_INT(total, 81);
    CHECK_EQ_INT(other, 16); /* messages #32..#39, twice each */
    CHECK_EQ_INT(other_http, 1);

    /* Hundreds of distinct statuses: the total stays right and the table stays bounded. */
    for (int s = 0; s < 300; s++) {
        sg_record_t e = failed(1000 + (uint64_t)s, T0, SG_ERRC_HTTP, 300 + s, "x", true);
        sg_metrics_add(m, &e);
    }
    n = sg_metrics_error_groups(m, &g);
    CHECK(n <= 64);
    total = 0;
    for (size_t i = 0; i < n; i++)
        total += g[i].count;
    CHECK_EQ_INT(total, 381);
    CHECK_EQ_INT(sg_metrics_errors(m), 381);
    sg_metrics_free(m);
}

static void test_goodput(void)
{
    sg_slo_t slos[] = {{SG_M_TTFT, 60.0}, {SG_M_ITL, 10.0}, {SG_M_TOKENS_PER_USER, 90.0}};
    sg_metrics_t *m = sg_metrics_new(slos, 3);
    sg_record_t r = streamed(1, T0, 0, 60, 100, 10); /* TTFT == 60 (holds), ITL == 10, 100 tok/s: good */
    sg_metrics_add(m, &r);
    r = streamed(2, T0, 0, 61, 100, 10); /* TTFT 61: bad */
    sg_metrics_add(m, &r);
    r = streamed(3, T0, 0, 10, 100, 11); /* ITL 11: bad */
    sg_metrics_add(m, &r);
    r = streamed(4, T0, 0, 10, 1, 0); /* one token: no ITL, so cannot meet an ITL SLO */
    sg_metrics_add(m, &r);
    r = plain(5, T0, 0, 10, 20); /* not streamed: no TTFT */
    sg_metrics_add(m, &r);
    sg_record_t e = failed(6, T0, SG_ERRC_TIMEOUT, 0, "timed out", true);
    sg_metrics_add(m, &e);
    CHECK_EQ_INT(sg_metrics_ok(m), 5);
    CHECK_EQ_INT(sg_metrics_good(m), 1);
    /* Each SLO is tallied on its own; a request without the metric is not measurable, never a miss. */
    const sg_slo_t *got;
    const sg_slo_tally_t *tl;
    CHECK_EQ_INT(sg_metrics_slo_tallies(m, &got, &tl), 3);
    CHECK(got[1].metric == SG_M_ITL && got[1].threshold == 10.0);
    CHECK_EQ_INT(tl[0].met, 3); /* TTFT: 1, 3, 4 */
    CHECK_EQ_INT(tl[0].missed, 1);
    CHECK_EQ_INT(tl[0].not_measurable, 1); /* the plain one */
    CHECK_EQ_INT(tl[1].met, 2);            /* ITL: 1, 2 */
    CHECK_EQ_INT(tl[1].missed, 1);
    CHECK_EQ_INT(tl[1].not_measurable, 2); /* one token, and the plain one */
    CHECK_EQ_INT(tl[2].met, 3);            /* tokens/s/user >= 90: 100, 100, 90.9 */
    CHECK_EQ_INT(tl[2].missed, 0);
    CHECK_EQ_INT(tl[2].not_measurable, 2);
    CHECK(sg_metric_larger_is_better(SG_M_TOKENS_PER_USER) && !sg_metric_larger_is_better(SG_M_ITL));
    /* More SLOs than a run can give: refused. */
    sg_slo_t many[SG_SLO_MAX + 1];
    for (size_t i = 0; i < SG_ARRAY_LEN(many); i++)
        many[i] = (sg_slo_t){SG_M_LATENCY, 1.0};
    CHECK(sg_metrics_new(many, SG_ARRAY_LEN(many)) == NULL);
    sg_metrics_t *eight = sg_metrics_new(many, SG_SLO_MAX);
    CHECK(eight != NULL);
    sg_metrics_free(eight);

    /* Throughput SLO alone: >= threshold holds. */
    sg_slo_t tput[] = {{SG_M_TOKENS_PER_USER, 100.0}};
    sg_metrics_t *t = sg_metrics_new(tput, 1);
    r = streamed(1, T0, 0, 10, 100, 10); /* exactly 100 tok/s */
    sg_metrics_add(t, &r);
    r = streamed(2, T0, 0, 10, 100, 11); /* 90.9 tok/s */
    sg_metrics_add(t, &r);
    CHECK_EQ_INT(sg_metrics_good(t), 1);

    /* Latency and inter-chunk SLOs; the inter-chunk one holds when every gap does. */
    sg_slo_t lat[] = {{SG_M_LATENCY, 500.0}, {SG_M_INTER_CHUNK, 10.0}};
    sg_metrics_t *l = sg_metrics_new(lat, 2);
    r = streamed(1, T0, 0, 10, 10, 10); /* 100 ms, gaps 10 */
    sg_metrics_add(l, &r);
    r = streamed(2, T0, 0, 10, 10, 10);
    events[5] += 1000; /* one gap of 11 ms */
    sg_metrics_add(l, &r);
    r = streamed(3, T0, 0, 10, 100, 10); /* 1000 ms */
    sg_metrics_add(l, &r);
    CHECK_EQ_INT(sg_metrics_good(l), 1);

    /* Without SLOs every success is good. */
    sg_metrics_t *none = sg_metrics_new(NULL, 0);
    sg_metrics_add(none, &r);
    sg_metrics_add(none, &e);
    CHECK_EQ_INT(sg_metrics_good(none), 1);

    sg_metrics_free(none);
    sg_metrics_free(l);
    sg_metrics_free(t);
    sg_metrics_free(m);
}

static void test_merge(void)
{
    sg_slo_t slos[] = {{SG_M_TTFT, 30.0}, {SG_M_LATENCY, 200.0}};
    sg_metrics_t *all = sg_metrics_new(slos, 2), *w[3];
    for (int i = 0; i < 3; i++)
        w[i] = sg_metrics_new(slos, 2);
    for (int i = 0; i < 300; i++) {
        sg_record_t r;
        if (i % 10 == 3)
            r = failed((uint64_t)i, T0 + i * 7 * MS, SG_ERRC_HTTP, 500 + i % 3, "err", true);
        else if (i % 2)
            r = streamed((uint64_t)i, T0 + i * 7 * MS, i % 5, 20 + i % 17, 2 + (uint32_t)(i % 50), 1 + i % 4);
        else
            r = plain((uint64_t)i, T0 + i * 7 * MS, i % 3, 100 + i, 10 + (uint32_t)i);
        sg_metrics_add(all, &r);
        sg_metrics_add(w[i % 3], &r);
    }
    sg_metrics_t *merged = sg_metrics_new(slos, 2);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(sg_metrics_merge(merged, w[i]), 0);
    CHECK_EQ_INT(sg_metrics_input_tokens(merged), sg_metrics_input_tokens(all));
    CHECK(sg_metrics_input_tokens(all) > 0);
    const sg_slo_t *sa_, *sb_;
    const sg_slo_tally_t *ta, *tb;
    CHECK_EQ_INT(sg_metrics_slo_tallies(all, &sa_, &ta), 2);
    CHECK_EQ_INT(sg_metrics_slo_tallies(merged, &sb_, &tb), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(ta[i].met, tb[i].met);
        CHECK_EQ_INT(ta[i].missed, tb[i].missed);
        CHECK_EQ_INT(ta[i].not_measurable, tb[i].not_measurable);
        CHECK_EQ_INT(ta[i].met + ta[i].missed + ta[i].not_measurable, sg_metrics_ok(all));
    }
    CHECK(ta[0].not_measurable > 0 && ta[0].met > 0); /* the plain ones have no TTFT */
    CHECK_EQ_INT(sg_metrics_ok(merged), sg_metrics_ok(all));
    CHECK_EQ_INT(sg_metrics_errors(merged), sg_metrics_errors(all));
    CHECK_EQ_INT(sg_metrics_good(merged), sg_metrics_good(all));
    CHECK_EQ_INT(sg_metrics_output_tokens(merged), sg_metrics_output_tokens(all));
    CHECK_EQ_INT(sg_metrics_first_intended_ns(merged), sg_metrics_first_intended_ns(all));
    CHECK_EQ_INT(sg_metrics_last_end_ns(merged), sg_metrics_last_end_ns(all));
    for (int s = 0; s < 3; s++)
        CHECK_EQ_INT(sg_metrics_osl_source_count(merged, (sg_osl_source_t)s),
                     sg_metrics_osl_source_count(all, (sg_osl_source_t)s));
    for (int i = 0; i < SG_M__COUNT; i++) {
        const sg_hist_t *a = H(all, (sg_metric_id_t)i), *b = H(merged, (sg_metric_id_t)i);
        CHECK_EQ_INT(sg_hist_count(a), sg_hist_count(b));
        CHECK(sg_hist_mean(a) == sg_hist_mean(b));
        CHECK(sg_hist_percentile(a, 90) == sg_hist_percentile(b, 90));
    }
    const sg_error_group_t *ga, *gb;
    size_t na = sg_metrics_error_groups(all, &ga), nb = sg_metrics_error_groups(merged, &gb);
    CHECK_EQ_INT(na, 3);
    CHECK_EQ_INT(nb, 3);
    uint64_t sa = 0, sb = 0;
    for (size_t i = 0; i < na; i++)
        sa += ga[i].count * (uint64_t)ga[i].http_status;
    for (size_t i = 0; i < nb; i++)
        sb += gb[i].count * (uint64_t)gb[i].http_status;
    CHECK_EQ_INT(sa, sb);
    CHECK_NEAR(sg_metrics_duration_s(merged), sg_metrics_duration_s(all), 0);

    printf("one sg_metrics_t: %zu bytes\n", sg_metrics_bytes(all));
    sg_metrics_free(merged);
    sg_metrics_free(all);
    for (int i = 0; i < 3; i++)
        sg_metrics_free(w[i]);
}

static void test_names(void)
{
    CHECK(strcmp(sg_metric_tag(SG_M_TTFT), "time_to_first_token") == 0);
    CHECK(strcmp(sg_metric_tag(SG_M_TOKENS_PER_USER), "output_token_throughput_per_user") == 0);
    CHECK(strcmp(sg_metric_label(SG_M_ISL), "Input sequence length (tokens)") == 0);
    CHECK(strcmp(sg_metric_unit(SG_M_ITL), "ms") == 0);
    CHECK(strcmp(sg_metric_unit(SG_M_TOKENS_PER_USER), "tokens/sec/user") == 0);
    for (int i = 0; i < SG_M__COUNT; i++) {
        CHECK(sg_metric_tag((sg_metric_id_t)i) != NULL && strcmp(sg_metric_tag((sg_metric_id_t)i), "unknown"));
        CHECK(sg_metric_label((sg_metric_id_t)i)[0] != '\0');
    }
    CHECK(strcmp(sg_metric_tag(SG_M__COUNT), "unknown") == 0);
}

/*
 * --slo verdicts on known values: TTFT 1..100 ms (one request each), 2 failures in 102. The nearest-rank p99 of
 * 1..100 is 99 (reported within 1/2048: 98.99), so p99<98.9 fails and p99<=99 passes; a floor on the per-user rate;
 * the run-level quantities; and a metric no request has (not measurable, so failing).
 */
static void test_slo_verdicts(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK(m != NULL);
    for (int i = 1; i <= 100; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * MS, 0, i, 11, 2); /* ITL 2 ms: 500 tok/s per user */
        sg_metrics_add(m, &r);
    }
    for (int i = 0; i < 2; i++) {
        sg_record_t f = failed((uint64_t)(200 + i), T0, SG_ERRC_HTTP, 500, "boom", true);
        sg_metrics_add(m, &f);
    }
    const char *texts[] = {"ttft:p99<98.9",
                           "ttft:p99<=99",
                           "ttft:avg<50.6",
                           "ttft:max>=100",
                           "itl:p50<2",
                           "tpot:p50<=2",
                           "error_rate<0.0196",
                           "error_rate<0.02",
                           "output_token_throughput_per_user:p10>499",
                           "request_throughput>0",
                           "inter_chunk_latency:p99<5"};
    const bool want[] = {false, true, true, true, false, true, false, true, true, true, true};
    sg_slo_check_t c[SG_ARRAY_LEN(texts)];
    char err[256];
    for (size_t i = 0; i < SG_ARRAY_LEN(texts); i++) {
        CHECK_EQ_INT(sg_slo_parse(texts[i], &c[i], err, sizeof err), 0);
    }
    sg_slo_verdict_t v[SG_ARRAY_LEN(texts)];
    double d = sg_metrics_duration_s(m);
    sg_slo_eval(c, SG_ARRAY_LEN(texts), m, d, 0.95, v);
    for (size_t i = 0; i < SG_ARRAY_LEN(texts); i++) {
        if (v[i].point_pass != want[i])
            fprintf(stderr, "slo %s: measured %g, point_pass %d\n", texts[i], v[i].measured, v[i].point_pass);
        CHECK(v[i].point_pass == want[i]);
    }
    CHECK_NEAR(v[0].measured, 99.0, 99.0 / 2048);
    CHECK_NEAR(v[2].measured, 50.5, 1e-9);
    CHECK_NEAR(v[6].measured, 2.0 / 102, 1e-12);
    CHECK_NEAR(v[9].measured, 100 / d, 1e-9);
    /* 100 requests cannot show a p99 under its target at 95%: the point estimate passes, the verdict is undecided */
    CHECK(v[1].outcome == SG_SLO_INCONCLUSIVE && !sg_slo_all_pass(v, SG_ARRAY_LEN(texts)));
    /* per-request values, as the workers count them for a probe's early stop */
    sg_record_t r = streamed(1, T0, 3, 40, 11, 2);
    double x = 0;
    CHECK(sg_record_metric(&r, SG_M_TTFT, &x) && x == 40.0 * MS);
    CHECK(sg_record_metric(&r, SG_M_ITL, &x) && x == 2.0 * MS);
    CHECK(sg_record_metric(&r, SG_M_SCHEDULE_LAG, &x) && x == 3.0 * MS);
    sg_record_t p1 = plain(2, T0, 0, 30, 1);
    CHECK(!sg_record_metric(&p1, SG_M_TTFT, &x) && !sg_record_metric(&p1, SG_M_ITL, &x));
    /* nothing measured: not measurable, and failing */
    sg_metrics_t *empty = sg_metrics_new(NULL, 0);
    sg_slo_eval(c, 1, empty, 0, 0.95, v);
    CHECK(!v[0].measurable && !v[0].pass);
    sg_metrics_free(empty);
    sg_metrics_free(m);
}

/*
 * The HTTP trace (http_req_*): a new TLS connection's request (connect 2 ms, handshake 5 ms), a reused one's (0 and
 * 0), a plain-HTTP request (no TLS value), and a failed one (in none). Each value exact to the ns.
 */
static void test_http_trace(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK(m != NULL);
    if (!m)
        return;
    sg_record_t a = plain(1, T0, 10, 100, 4); /* sent at +10 ms, answered whole at +100 ms */
    a.send_start_ns = a.sent_ns - 3000;       /* 3 us of sending */
    a.first_byte_ns = a.sent_ns + 40 * MS;    /* TTFB 40 ms */
    a.head_ns = a.first_byte_ns;
    a.conn_connect_ns = 2 * MS;
    a.conn_tls_ns = 5 * MS;
    a.tls = true;
    sg_record_t b = a;
    b.id = 2;
    b.conn_connect_ns = b.conn_tls_ns = 0;
    b.conn_reused = true;
    sg_record_t c = a;
    c.id = 3;
    c.tls = false;
    c.conn_tls_ns = 0;
    sg_record_t d = failed(4, T0, SG_ERRC_HTTP, 500, "HTTP 500", true);
    d.send_start_ns = d.sent_ns;
    d.conn_connect_ns = 9 * MS;
    sg_metrics_add(m, &a);
    sg_metrics_add(m, &b);
    sg_metrics_add(m, &c);
    sg_metrics_add(m, &d);
    const sg_hist_t *conn = H(m, SG_M_HTTP_CONNECTING), *tls = H(m, SG_M_HTTP_TLS);
    CHECK(sg_hist_count(conn) == 3 && sg_hist_min(conn) == 0);
    /* AIPerf's http_req_connecting holds the handshake: a's 7 ms is the largest; c's is its 2 ms connect */
    CHECK(sg_hist_max(conn) == (uint64_t)(7 * MS));
    CHECK(sg_hist_count(tls) == 2 && sg_hist_min(tls) == 0 && sg_hist_max(tls) == (uint64_t)(5 * MS));
    CHECK(sg_hist_count(H(m, SG_M_HTTP_SENDING)) == 3 && sg_hist_max(H(m, SG_M_HTTP_SENDING)) == 3000);
    CHECK(sg_hist_min(H(m, SG_M_HTTP_WAITING)) == (uint64_t)(40 * MS));
    CHECK(sg_hist_max(H(m, SG_M_HTTP_RECEIVING)) == (uint64_t)(50 * MS)); /* 100 - 10 - 40 */
    CHECK(sg_hist_max(H(m, SG_M_HTTP_DURATION)) == (uint64_t)(90 * MS + 3000));
    CHECK(sg_metric_is_time(SG_M_HTTP_DURATION) && sg_metric_is_trace(SG_M_HTTP_CONNECTING));
    CHECK(!sg_metric_is_trace(SG_M_SCHEDULE_LAG));
    CHECK(strcmp(sg_metric_tag(SG_M_HTTP_TLS), "http_req_tls_handshaking") == 0);
    double v;
    CHECK(sg_record_metric(&a, SG_M_HTTP_CONNECTING, &v) && v == (double)(7 * MS));
    CHECK(!sg_record_metric(&c, SG_M_HTTP_TLS, &v));
    sg_record_t never = plain(5, T0, 10, 100, 4); /* no send start: no trace */
    CHECK(!sg_record_metric(&never, SG_M_HTTP_DURATION, &v));
    sg_metrics_free(m);
}

int main(void)
{
    test_http_trace();
    test_slo_verdicts();
    test_streamed_exact();
    test_non_streamed_and_single_token();
    test_warmup_ignored();
    test_errors();
    test_error_group_cap();
    test_goodput();
    test_merge();
    test_names();
    return test_finish("test_metrics");
}
