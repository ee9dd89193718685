/*
 * The Prometheus text parser (sg_prom.h) on what servers write: HELP and TYPE lines, labels with escapes,
 * special values, timestamps, histogram and counter families, CRLF and a missing final newline; and the lines
 * it refuses, with their number. Then the store (sg_srvmetrics.h): series kept apart by labels, the known names
 * mapped (a label-matched one included), failures counted, and the summary's gauge and counter figures.
 */
#include "sg_prom.h"
#include "sg_srvmetrics.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char names[16][64];
    char labels[16][256];
    double values[16];
    sg_prom_type_t types[16];
    bool has_ts[16];
    int64_t ts[16];
    int n;
} seen_t;

static int collect(void *ud, const sg_prom_sample_t *s)
{
    seen_t *v = ud;
    if (v->n == 16)
        return -1;
    int i = v->n++;
    snprintf(v->names[i], sizeof v->names[i], "%.*s", (int)s->name.len, s->name.base);
    size_t o = 0;
    for (size_t l = 0; l < s->n_labels; l++)
        o += (size_t)snprintf(v->labels[i] + o, sizeof v->labels[i] - o, "%s%.*s=%.*s", l ? "," : "",
                              (int)s->labels[l].name.len, s->labels[l].name.base, (int)s->labels[l].value.len,
                              s->labels[l].value.base);
    v->values[i] = s->value;
    v->types[i] = s->type;
    v->has_ts[i] = s->has_timestamp;
    v->ts[i] = s->timestamp_ms;
    return 0;
}

static void test_parse(void)
{
    static const char text[] = "# HELP vllm:num_requests_running Number of requests.\n"
                               "# TYPE vllm:num_requests_running gauge\n"
                               "vllm:num_requests_running{model_name=\"m\"} 3\n"
                               "# TYPE http_requests counter\r\n"
                               "http_requests_total{path=\"/a\\\\b\",msg=\"say \\\"hi\\\"\\n\"} 1027 1395066363000\r\n"
                               "\n"
                               "   # a plain comment\n"
                               "# TYPE lat histogram\n"
                               "lat_bucket{le=\"0.5\"} 1\n"
                               "lat_bucket{le=\"+Inf\"} 2\n"
                               "lat_sum 1.5e-3\n"
                               "lat_count 2\n"
                               "other NaN\n"
                               "neg -Inf\n"
                               "trailing_comma{a=\"1\",} +Inf";
    seen_t v = {0};
    size_t bad = 0;
    int n = sg_prom_parse(text, sizeof text - 1, collect, &v, &bad);
    CHECK_EQ_INT(n, 9);
    CHECK_EQ_INT(v.n, 9);
    CHECK(strcmp(v.names[0], "vllm:num_requests_running") == 0 && v.types[0] == SG_PROM_GAUGE);
    CHECK(strcmp(v.labels[0], "model_name=m") == 0 && v.values[0] == 3);
    CHECK(strcmp(v.names[1], "http_requests_total") == 0 && v.types[1] == SG_PROM_COUNTER);
    CHECK(strcmp(v.labels[1], "path=/a\\b,msg=say \"hi\"\n") == 0);
    CHECK(v.has_ts[1] && v.ts[1] == 1395066363000LL && v.values[1] == 1027);
    for (int i = 2; i <= 5; i++)
        CHECK(v.types[i] == SG_PROM_HISTOGRAM);
    CHECK(isinf(v.values[3]) == 0 && v.values[3] == 2 && strcmp(v.labels[3], "le=+Inf") == 0);
    CHECK_NEAR(v.values[4], 1.5e-3, 1e-12);
    CHECK(isnan(v.values[6]) && v.types[6] == SG_PROM_UNTYPED);
    CHECK(isinf(v.values[7]) && v.values[7] < 0);
    CHECK(isinf(v.values[8]) && v.values[8] > 0 && strcmp(v.labels[8], "a=1") == 0);
}

static void test_refused(void)
{
    static const struct {
        const char *text;
        size_t line;
    } bad[] = {
        {"ok 1\nbad{a=\"1\" 2\n", 2},    /* unclosed labels */
        {"x 1\ny 2\nz abc\n", 3},        /* not a number */
        {"x{a=1} 2\n", 1},               /* unquoted label value */
        {"x{a=\"\\q\"} 2\n", 1},         /* unknown escape */
        {"x 1 2 3\n", 1},                /* more than a timestamp */
        {"# TYPE x sometype\nx 1\n", 1}, /* unknown type */
        {"1x 2\n", 1},                   /* a name cannot start with a digit */
        {"x 0x10\n", 1},                 /* hex is not the format's */
        {"x 1 1.5\n", 1},                /* timestamps are integers */
        {"x{a=\"1\"b=\"2\"} 1\n", 1},    /* labels need commas */
        {"x\n", 1},                      /* no value */
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++) {
        size_t line = 0;
        int rc = sg_prom_parse(bad[i].text, strlen(bad[i].text), NULL, NULL, &line);
        CHECK_EQ_INT(rc, SG_EPROTO);
        CHECK_EQ_INT((int)line, (int)bad[i].line);
    }
    CHECK_EQ_INT(sg_prom_parse("", 0, NULL, NULL, NULL), 0);
    CHECK_EQ_INT(sg_prom_parse("# only comments\n\n", 17, NULL, NULL, NULL), 0);
}

static void test_known(void)
{
    const char *none[1] = {NULL};
    CHECK(strcmp(sg_srvm_known("vllm:num_requests_waiting", 25, none, 0), "requests_waiting") == 0);
    CHECK(strcmp(sg_srvm_known("llamacpp:tokens_predicted_total", 31, none, 0), "generation_tokens") == 0);
    const char *active[] = {"model", "m", "request_type", "active"};
    const char *maxed[] = {"model", "m", "request_type", "max"};
    CHECK(strcmp(sg_srvm_known("nv_trt_llm_request_metrics", 26, active, 2), "requests_running") == 0);
    CHECK(sg_srvm_known("nv_trt_llm_request_metrics", 26, maxed, 2) == NULL);
    CHECK(sg_srvm_known("node_cpu_seconds_total", 22, none, 0) == NULL);
}

#define S 1000000000LL

static void test_store(void)
{
    const char *urls[] = {"http://a/metrics", "http://b/metrics"};
    sg_srvm_t *m = sg_srvm_new(urls, 2, 1.0);
    char err[256];
    static const char *const bodies[] = {
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"x\"} 2\nvllm:num_requests_running{model_name=\"y\"} 1\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 100\n",
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"x\"} 4\nvllm:num_requests_running{model_name=\"y\"} 3\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 160\n",
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"x\"} 0\nvllm:num_requests_running{model_name=\"y\"} 0\n"
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total 10\n", /* a restart: reset */
    };
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(sg_srvm_add_scrape(m, 0, (10 + i) * S, bodies[i], strlen(bodies[i]), err, sizeof err), 0);
    CHECK_EQ_INT(sg_srvm_add_scrape(m, 1, 10 * S, "x{", 2, err, sizeof err), -1);
    CHECK(strstr(err, "line 1") != NULL);
    sg_srvm_add_failure(m, 1, 11 * S, "connect: refused");
    CHECK_EQ_INT((int)sg_srvm_series_count(m), 3);
    uint64_t n, failed;
    sg_srvm_counts(m, 0, &n, &failed);
    CHECK(n == 3 && failed == 0);
    sg_srvm_counts(m, 1, &n, &failed);
    CHECK(n == 2 && failed == 2);
    char *text = sg_srvm_summary_json(m, INT64_MIN, INT64_MAX);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_t *k = json_object_get(json_array_get(json_object_get(j, "endpoints"), 0), "metrics");
    json_t *run = json_object_get(k, "requests_running"), *gen = json_object_get(k, "generation_tokens");
    /* the two models' series add up per scrape: 3, 7, 0 */
    CHECK_NEAR(json_real_value(json_object_get(run, "max")), 7, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(run, "avg")), 10.0 / 3, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(run, "last")), 0, 1e-9);
    /* 100 -> 160 is 60; the drop to 10 is a reset, counted as 10 more */
    CHECK_NEAR(json_real_value(json_object_get(gen, "delta")), 70, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(gen, "rate")), 35, 1e-9);
    json_decref(j);
    sg_srvm_free(m);
}

int main(void)
{
    test_parse();
    test_refused();
    test_known();
    test_store();
    return test_finish("test_prom");
}
