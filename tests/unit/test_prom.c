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
    /* DCGM exporter's */
    CHECK(strcmp(sg_srvm_known("DCGM_FI_DEV_GPU_UTIL", 20, none, 0), "gpu_utilization") == 0);
    CHECK(strcmp(sg_srvm_known("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 36, none, 0), "gpu_energy") == 0);
    CHECK(strcmp(sg_srvm_known("DCGM_FI_DEV_FB_USED", 19, none, 0), "gpu_memory_used") == 0);
    CHECK(sg_srvm_known("DCGM_FI_DEV_MEM_CLOCK", 21, none, 0) == NULL);
}

#define S 1000000000LL

/* Per GPU: the gauges' statistics, energy from the counter (a reset counted from 0), else the power integrated;
 * tokens per joule only when every GPU's energy is known. */
static void test_gpu(void)
{
    const char *urls[] = {"http://dcgm:9400/metrics"};
    sg_srvm_t *m = sg_srvm_new(urls, 1, 1.0);
    char err[256], body[1024];
    /* GPU 0 has the energy counter (mJ): 1000000, 1250000, then a reset to 50000: 250 J + 50 J. GPU 1 has only
     * power: 100 W, 300 W, 200 W at 0, 2, 3 s: (100+300)/2 x 2 + (300+200)/2 x 1 = 650 J */
    static const double energy[] = {1000000, 1250000, 50000}, power1[] = {100, 300, 200}, util[] = {10, 90, 50};
    static const int64_t t[] = {10 * S, 12 * S, 13 * S};
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body,
                 "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
                 "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"H100\",Hostname=\"n1\"} %g\n"
                 "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",modelName=\"H100\",Hostname=\"n1\"} %g\n"
                 "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
                 "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} %g\n"
                 "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
                 "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} %g\n",
                 util[i], util[2 - i], energy[i], power1[i]);
        CHECK_EQ_INT(sg_srvm_add_scrape(m, 0, t[i], body, strlen(body), err, sizeof err), 0);
    }
    char *text = sg_srvm_gpu_json(m, 1900);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_t *gpus = json_object_get(j, "gpus");
    CHECK_EQ_INT((int)json_array_size(gpus), 2);
    json_t *g0 = json_array_get(gpus, 0), *g1 = json_array_get(gpus, 1);
    CHECK(strcmp(json_string_value(json_object_get(g0, "uuid")), "GPU-a") == 0);
    CHECK(strcmp(json_string_value(json_object_get(g1, "model_name")), "H100") == 0);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(g0, "gpu_utilization"), "avg")), 50, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(g0, "gpu_utilization"), "max")), 90, 1e-9);
    CHECK(json_is_null(json_object_get(g0, "gpu_power")));
    json_t *e0 = json_object_get(g0, "energy"), *e1 = json_object_get(g1, "energy");
    CHECK_NEAR(json_real_value(json_object_get(e0, "value")), 300, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(e0, "source")), "energy_counter") == 0);
    CHECK_NEAR(json_real_value(json_object_get(e0, "span_s")), 3, 1e-9);
    CHECK_NEAR(json_real_value(json_object_get(e1, "value")), 650, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(e1, "source")), "power_integral") == 0);
    CHECK_NEAR(json_real_value(json_object_get(j, "energy_j")), 950, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(j, "energy_source")), "mixed") == 0);
    CHECK_NEAR(json_real_value(json_object_get(j, "tokens_per_joule")), 2, 1e-12);
    json_decref(j);
    sg_srvm_free(m);

    /* one GPU without energy or power: no total, no tokens per joule; no DCGM series at all: no object */
    m = sg_srvm_new(urls, 1, 1.0);
    const char *b = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 100\n";
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(sg_srvm_add_scrape(m, 0, t[i], b, strlen(b), err, sizeof err), 0);
    text = sg_srvm_gpu_json(m, 10);
    j = json_loads(text, 0, NULL);
    free(text);
    CHECK(json_is_null(json_object_get(j, "energy_j")) && json_is_null(json_object_get(j, "tokens_per_joule")));
    CHECK_NEAR(json_real_value(
                   json_object_get(json_object_get(json_array_get(json_object_get(j, "gpus"), 1), "energy"), "value")),
               200, 1e-9);
    json_decref(j);
    sg_srvm_free(m);
    m = sg_srvm_new(urls, 1, 1.0);
    CHECK_EQ_INT(sg_srvm_add_scrape(m, 0, t[0], "vllm:num_requests_running 1\n", 28, err, sizeof err), 0);
    CHECK(sg_srvm_gpu_json(m, 10) == NULL);
    sg_srvm_free(m);
}

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
    test_gpu();
    return test_finish("test_prom");
}
