/* Exporters: the summary JSON parsed back, the CSV's shape, the console table, the record log round trip. */
#include "sg_export_util.h"
#include "sg_metrics.h"
#include "test.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS 1000000LL
#define T0 (5000LL * 1000 * MS)

static char dir[64];
static uint32_t events[64];

static void path_in(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* No temporary file may be left in the directory once an exporter returns. */
static int count_tmp_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static sg_record_t streamed(uint64_t id, uint32_t worker, int64_t at, int64_t ttft_ms, uint32_t osl, int64_t gap_ms)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.worker = worker;
    r.streaming = true;
    r.intended_ns = at;
    r.sent_ns = at + MS;
    r.first_byte_ns = at + 2 * MS;
    r.first_token_ns = at + ttft_ms * MS;
    r.second_token_ns = osl >= 2 ? r.first_token_ns + gap_ms * MS : 0;
    r.end_ns = r.first_token_ns + (int64_t)(osl - 1) * gap_ms * MS;
    r.http_status = 200;
    r.osl = osl;
    r.isl = 200;
    r.isl_server = 201;
    r.isl_cached = -1;
    r.osl_server = -1;
    r.osl_tokenizer = (int32_t)osl;
    r.osl_source = SG_OSL_TOKENIZER;
    r.max_tokens = osl;
    r.content_events = osl;
    r.response_bytes = 100u * osl;
    for (uint32_t i = 0; i < osl && i < SG_ARRAY_LEN(events); i++)
        events[i] = (uint32_t)(i * gap_ms * 1000);
    r.event_us = events;
    r.n_events = osl < SG_ARRAY_LEN(events) ? osl : (uint32_t)SG_ARRAY_LEN(events);
    return r;
}

static sg_record_t failed(uint64_t id, uint32_t worker, int64_t at, int status, const char *msg)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.worker = worker;
    r.intended_ns = at;
    r.sent_ns = at + MS;
    r.first_byte_ns = at + 3 * MS;
    r.end_ns = at + 4 * MS;
    r.err_class = SG_ERRC_HTTP;
    r.http_status = status;
    r.isl = 200;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = -1;
    r.osl_tokenizer = -1;
    snprintf(r.err_msg, sizeof(r.err_msg), "%s", msg);
    return r;
}

/* A streamed run: 10 requests, TTFT 10..19 ms, 20 tokens 5 ms apart; two HTTP 500s. Duration 1.0 s. */
static sg_metrics_t *streamed_run(const sg_slo_t *slos, size_t n_slos)
{
    sg_metrics_t *m = sg_metrics_new(slos, n_slos);
    for (int i = 0; i < 10; i++) {
        sg_record_t r = streamed((uint64_t)i, 0, T0 + i * 10 * MS, 10 + i, 20, 5);
        sg_metrics_add(m, &r);
    }
    sg_record_t e = failed(10, 0, T0 + 900 * MS, 500, "Internal Server Error");
    sg_metrics_add(m, &e);
    e.end_ns = T0 + 1000 * MS;
    sg_metrics_add(m, &e);
    return m;
}

static double num(json_t *o, const char *metric, const char *key)
{
    json_t *v = json_object_get(json_object_get(o, metric), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void test_json(void)
{
    sg_slo_t slos[] = {{SG_M_TTFT, 15.0}};
    sg_metrics_t *m = streamed_run(slos, 1);
    sg_run_info_t info = {.title = "surge | LLM Metrics",
                          .streaming = true,
                          .interrupted = true,
                          .interrupted_by = "SIGINT",
                          .warmup_count = 4,
                          .input_config_json = "{\"model\": \"m\", \"concurrency\": 8}",
                          .has_slos = true};
    char path[128];
    path_in(path, sizeof(path), "profile_export_surge.json");
    CHECK_EQ_INT(sg_export_json(path, m, &info), 0);
    CHECK_EQ_INT(count_tmp_files(), 0);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    CHECK(root != NULL);
    if (!root) {
        fprintf(stderr, "json: %s\n", jerr.text);
        sg_metrics_free(m);
        return;
    }
    /* TTFT: 10..19 ms, mean 14.5, p50 = 5th of 10 = 14, p90 = 9th = 18, p99 = 10th = 19 */
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "time_to_first_token"), "unit")), "ms") == 0);
    CHECK_NEAR(num(root, "time_to_first_token", "avg"), 14.5, 1e-9);
    CHECK_NEAR(num(root, "time_to_first_token", "min"), 10.0, 1e-9);
    CHECK_NEAR(num(root, "time_to_first_token", "max"), 19.0, 1e-9);
    CHECK_NEAR(num(root, "time_to_first_token", "p50"), 14.0, 14.0 / 2048);
    CHECK_NEAR(num(root, "time_to_first_token", "p90"), 18.0, 18.0 / 2048);
    CHECK_NEAR(num(root, "time_to_first_token", "p99"), 19.0, 19.0 / 2048);
    CHECK_NEAR(num(root, "time_to_first_token", "std"), sqrt(8.25), 1e-9);
    CHECK_NEAR(num(root, "time_to_first_token", "count"), 10, 0);
    CHECK(json_is_integer(json_object_get(json_object_get(root, "time_to_first_token"), "count")));
    static const char *const keys[] = {"unit", "avg", "min", "max", "std", "p1",  "p5",    "p10",
                                       "p25",  "p50", "p75", "p90", "p95", "p99", "p99_9", "count"};
    static const char *const tags[] = {"time_to_first_token",
                                       "time_to_first_token_from_send",
                                       "time_to_second_token",
                                       "inter_token_latency",
                                       "inter_chunk_latency",
                                       "request_latency",
                                       "request_latency_from_send",
                                       "schedule_lag",
                                       "output_sequence_length",
                                       "input_sequence_length",
                                       "output_token_throughput_per_user"};
    for (size_t t = 0; t < SG_ARRAY_LEN(tags); t++) {
        json_t *o = json_object_get(root, tags[t]);
        CHECK(json_is_object(o));
        for (size_t k = 0; o && k < SG_ARRAY_LEN(keys); k++)
            CHECK(json_object_get(o, keys[k]) != NULL);
    }
    CHECK_NEAR(num(root, "inter_token_latency", "avg"), 5.0, 1e-9);
    CHECK_NEAR(num(root, "time_to_second_token", "max"), 5.0, 1e-9);
    CHECK_NEAR(num(root, "output_token_throughput_per_user", "avg"), 200.0, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "output_token_throughput_per_user"), "unit")),
                 "tokens/sec/user") == 0);
    CHECK_NEAR(num(root, "output_sequence_length", "avg"), 20, 0);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "input_sequence_length"), "unit")),
                 "tokens") == 0);
    /* schedule lag: 1 ms for all 12 (the failed ones were sent) */
    CHECK_NEAR(num(root, "schedule_lag", "count"), 12, 0);
    CHECK_NEAR(num(root, "schedule_lag", "p99_9"), 1.0, 1e-9);

    /* Duration: T0 .. T0 + 1000 ms. 200 tokens and 10 requests over 1 s. */
    CHECK_NEAR(num(root, "benchmark_duration", "avg"), 1.0, 1e-12);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "benchmark_duration"), "unit")), "sec") == 0);
    CHECK_NEAR(num(root, "output_token_throughput", "avg"), 200.0, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "output_token_throughput"), "unit")),
                 "tokens/sec") == 0);
    CHECK_NEAR(num(root, "request_throughput", "avg"), 10.0, 1e-9);
    CHECK_NEAR(num(root, "request_count", "avg"), 10, 0);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "request_count"), "unit")), "requests") == 0);
    CHECK_NEAR(num(root, "error_request_count", "avg"), 2, 0);
    CHECK_NEAR(num(root, "goodput", "avg"), 6.0, 1e-9); /* TTFT 10..15 ms: 6 requests */
    CHECK_NEAR(num(root, "good_request_count", "avg"), 6, 0);
    CHECK_NEAR(num(root, "input_token_throughput", "avg"), 2000.0, 1e-9); /* 10 x 200 tokens in 1 s */
    CHECK_NEAR(num(root, "total_token_throughput", "avg"), 2200.0, 1e-9);
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(root, "total_token_throughput"), "unit")),
                 "tokens/sec") == 0);
    json_t *gc = json_object_get(root, "goodput_constraints");
    CHECK(json_is_array(gc) && json_array_size(gc) == 1);
    json_t *g0 = json_array_get(gc, 0);
    CHECK(g0 && strcmp(json_string_value(json_object_get(g0, "metric")), "time_to_first_token") == 0);
    CHECK(g0 && strcmp(json_string_value(json_object_get(g0, "comparison")), "<=") == 0);
    CHECK(g0 && strcmp(json_string_value(json_object_get(g0, "unit")), "ms") == 0);
    CHECK_NEAR(json_number_value(json_object_get(g0, "threshold")), 15.0, 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(g0, "met")), 6);
    CHECK_EQ_INT(json_integer_value(json_object_get(g0, "missed")), 4);
    CHECK_EQ_INT(json_integer_value(json_object_get(g0, "not_measurable")), 0);
    CHECK_NEAR(num(root, "warmup_request_count", "avg"), 4, 0);

    json_t *es = json_object_get(root, "error_summary");
    CHECK(json_is_array(es) && json_array_size(es) == 1);
    json_t *e0 = json_array_get(es, 0);
    CHECK(strcmp(json_string_value(json_object_get(e0, "class")), "http") == 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "code")), 500);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "http_status")), 500);
    CHECK(strcmp(json_string_value(json_object_get(e0, "label")), "http 500 Internal Server Error") == 0);
    CHECK(strcmp(json_string_value(json_object_get(e0, "message")), "Internal Server Error") == 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(e0, "count")), 2);

    json_t *src = json_object_get(root, "osl_source");
    CHECK_EQ_INT(json_integer_value(json_object_get(src, "tokenizer")), 10);
    CHECK_EQ_INT(json_integer_value(json_object_get(src, "usage")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(src, "events")), 0);
    json_t *od = json_object_get(root, "osl_disagreement");
    CHECK_EQ_INT(json_integer_value(json_object_get(od, "compared")), 0); /* no usage in these records */
    CHECK_EQ_INT(json_integer_value(json_object_get(od, "count")), 0);
    json_t *id = json_object_get(root, "isl_server_minus_client");
    CHECK_EQ_INT(json_integer_value(json_object_get(id, "compared")), 10);
    CHECK_EQ_INT(json_integer_value(json_object_get(id, "differ")), 10);
    CHECK_NEAR(json_number_value(json_object_get(id, "mean_diff")), 1.0, 1e-12);
    CHECK_EQ_INT(json_integer_value(json_object_get(id, "max_diff")), 1);
    CHECK(json_is_null(json_object_get(root, "tokenizer")));
    CHECK(json_is_null(json_object_get(root, "isl_source")));
    CHECK(json_is_true(json_object_get(root, "was_interrupted")));
    json_t *ic = json_object_get(root, "input_config");
    CHECK(json_is_object(ic));
    CHECK_EQ_INT(json_integer_value(json_object_get(ic, "concurrency")), 8);
    json_decref(root);

    /* Not streamed, no SLOs, a config that is not JSON: no TTFT family, no goodput, the config kept as text. */
    sg_metrics_t *p = sg_metrics_new(NULL, 0);
    sg_record_t r = streamed(1, 0, T0, 10, 5, 1);
    r.first_token_ns = r.second_token_ns = 0;
    r.n_events = 0;
    r.streaming = false;
    sg_metrics_add(p, &r);
    sg_run_info_t pinfo = {.input_config_json = "{not json"};
    CHECK_EQ_INT(sg_export_json(path, p, &pinfo), 0);
    root = json_load_file(path, 0, &jerr);
    CHECK(root != NULL);
    CHECK(json_object_get(root, "time_to_first_token") == NULL);
    CHECK(json_object_get(root, "inter_token_latency") == NULL);
    CHECK(json_object_get(root, "output_token_throughput_per_user") == NULL);
    CHECK(json_object_get(root, "request_latency") != NULL);
    CHECK(json_object_get(root, "goodput") == NULL);
    CHECK(json_object_get(root, "goodput_constraints") == NULL && json_object_get(root, "good_request_count") == NULL);
    CHECK(json_is_false(json_object_get(root, "was_interrupted")));
    CHECK(json_is_string(json_object_get(root, "input_config")));
    CHECK(strcmp(json_string_value(json_object_get(root, "input_config")), "{not json") == 0);
    CHECK_EQ_INT(json_array_size(json_object_get(root, "error_summary")), 0);
    json_decref(root);

    /* A path that cannot be written: an error, and nothing left behind. */
    CHECK(sg_export_json("/nonexistent-dir/x.json", p, &pinfo) < 0);
    sg_metrics_free(p);
    sg_metrics_free(m);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_csv(void)
{
    sg_slo_t slos[] = {{SG_M_TTFT, 15.0}};
    sg_metrics_t *m = streamed_run(slos, 1);
    sg_run_info_t info = {.streaming = true, .has_slos = true, .warmup_count = 2, .resent_count = 3};
    char path[128];
    path_in(path, sizeof(path), "profile_export_surge.csv");
    CHECK_EQ_INT(sg_export_csv(path, m, &info), 0);
    CHECK_EQ_INT(count_tmp_files(), 0);
    char *text = read_all(path);
    CHECK(text != NULL);
    if (!text) {
        sg_metrics_free(m);
        return;
    }
    /* GenAI-Perf's header, its columns in its order, then surge's std, p99_9 and count. */
    const char *header = "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1,std,p99_9,count\n";
    CHECK(strncmp(text, header, strlen(header)) == 0);
    /* Part one: 11 distribution rows with 16 fields each; then a blank line; then Metric,Value rows. */
    char *part2 = strstr(text, "\n\nMetric,Value\n");
    CHECK(part2 != NULL);
    if (!part2) {
        sg_metrics_free(m);
        return;
    }
    int rows = 0, bad_fields = 0;
    char first_col[16][64];
    for (char *line = text + strlen(header); line < part2;) {
        char *nl = strchr(line, '\n');
        int commas = 0;
        for (char *c = line; c < nl; c++)
            commas += *c == ',';
        bad_fields += commas != 15;
        if (rows < 16)
            snprintf(first_col[rows], sizeof(first_col[rows]), "%.*s", (int)strcspn(line, ","), line);
        rows++;
        line = nl + 1;
    }
    CHECK_EQ_INT(rows, 11);
    CHECK_EQ_INT(bad_fields, 0);
    /* GenAI-Perf's rows, its names, its order; surge's own after them. */
    static const char *const order[] = {
        "Time To First Token (ms)",
        "Time To Second Token (ms)",
        "Request Latency (ms)",
        "Inter Token Latency (ms)",
        "Output Token Throughput Per User (tokens/sec/user)",
        "Output Sequence Length (tokens)",
        "Input Sequence Length (tokens)",
        "Time To First Token From Send (ms)",
        "Request Latency From Send (ms)",
        "Inter Chunk Latency (ms)",
        "Schedule Lag (ms)",
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(order) && (int)i < rows; i++) {
        bool same = strcmp(first_col[i], order[i]) == 0;
        CHECK(same);
        if (!same)
            fprintf(stderr, "CSV row %zu: [%s], want [%s]\n", i, first_col[i], order[i]);
    }
    /* TTFT 10..19 ms: avg, min, max, then p99 (19), p95 (19), p90 (18), p75 (17), p50 (14) ... p1 (10). */
    CHECK(strstr(text, "\nTime To First Token (ms),14.50,10.00,19.00,19.00,19.00,18.00,17.00,14.00,12.00,10.00,"
                       "10.00,10.00,2.87,19.00,10\n") != NULL);
    CHECK(strstr(text, "\nOutput Sequence Length (tokens),20.00,20.00,20.00,") != NULL);
    /* GenAI-Perf's single values first, in its order, then surge's: 200 output and 2,000 input tokens in 1 s. */
    const char *values = "\n\nMetric,Value\n"
                         "Output Token Throughput (tokens/sec),200.00\n"
                         "Request Throughput (per sec),10.00\n"
                         "Request Goodput (per sec),6.00\n"
                         "Request Count (count),10\n"
                         "Input Token Throughput (tokens/sec),2000.00\n"
                         "Total Token Throughput (tokens/sec),2200.00\n"
                         "Error Request Count (count),2\n"
                         "Cancelled Request Count (count),0\n"
                         "Offered Request Rate (per sec),12.22\n"
                         "Good Request Count (count),6\n"
                         "Benchmark Duration (sec),1.000\n"
                         "Warmup Request Count (count),2\n"
                         "Resent Request Count (count),3\n";
    CHECK(strcmp(part2, values) == 0);
    if (strcmp(part2, values) != 0)
        fprintf(stderr, "CSV values:\n%s", part2);

    /* The data decides, not the flag: streamed records keep their rows even when the run was not asked to
     * stream (raw bodies with "stream": true, a server that streams unasked). */
    sg_run_info_t plain = {.streaming = false};
    CHECK_EQ_INT(sg_export_csv(path, m, &plain), 0);
    text = read_all(path);
    CHECK(text && strstr(text, "\nTime To First Token (ms),") != NULL && strstr(text, "Inter Token Latency") != NULL);
    sg_metrics_free(m);

    /* Whole answers, no SLOs: GenAI-Perf leaves out the streamed rows and the goodput row; so does surge, even
     * when the flag said streaming (a body that asked for a whole answer). */
    m = sg_metrics_new(NULL, 0);
    for (int i = 0; i < 4; i++) {
        sg_record_t r = streamed((uint64_t)i, 0, T0 + i * 10 * MS, 10, 5, 1);
        r.streaming = false;
        r.first_token_ns = r.second_token_ns = 0;
        r.content_events = 1;
        r.n_events = 0;
        sg_metrics_add(m, &r);
    }
    sg_run_info_t whole = {.streaming = true};
    CHECK_EQ_INT(sg_export_csv(path, m, &whole), 0);
    text = read_all(path);
    CHECK(text && strstr(text, "Time To First Token") == NULL && strstr(text, "Inter Token Latency") == NULL &&
          strstr(text, "Per User") == NULL && strstr(text, "Inter Chunk") == NULL);
    CHECK(text && strstr(text, "\nRequest Latency (ms),") != NULL && strstr(text, "Goodput") == NULL &&
          strstr(text, "Good Request") == NULL);
    sg_metrics_free(m);
}

/* inputs.json: bodies copied as they are into GenAI-Perf's layout, whatever their size; NULL skips one. */
static const char *const *input_bodies;
static const char *body_at(void *ctx, size_t i, size_t *len)
{
    (void)ctx;
    const char *b = input_bodies[i];
    *len = b ? strlen(b) : 0;
    return b;
}

static void test_inputs(void)
{
    /* a body larger than the 1 MiB buffer: written in pieces */
    size_t big_len = 3u << 20;
    char *big = malloc(big_len + 64);
    int k = snprintf(big, 64, "{\"model\":\"m\",\"prompt\":\"");
    memset(big + k, 'x', big_len);
    strcpy(big + k + big_len, "\"}");
    const char *bodies[] = {"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9 \\\"q\\\"\"}]}",
                            NULL, big, "{\"model\":\"b\",\"stream\":true}"};
    input_bodies = bodies;
    char path[128];
    path_in(path, sizeof(path), "inputs.json");
    CHECK_EQ_INT(sg_export_inputs(path, SG_ARRAY_LEN(bodies), body_at, NULL), 0);
    CHECK_EQ_INT(count_tmp_files(), 0);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    CHECK(root != NULL);
    json_t *data = json_object_get(root, "data");
    CHECK(json_is_array(data) && json_array_size(data) == 3);
    const size_t from[] = {0, 2, 3};
    for (size_t i = 0; i < 3 && json_array_size(data) == 3; i++) {
        json_t *pl = json_object_get(json_array_get(data, i), "payload");
        CHECK(json_is_array(pl) && json_array_size(pl) == 1);
        json_t *want = json_loads(bodies[from[i]], 0, NULL);
        CHECK(want && json_equal(json_array_get(pl, 0), want));
        json_decref(want);
    }
    json_decref(root);
    /* No bodies: still a valid file with an empty list. */
    CHECK_EQ_INT(sg_export_inputs(path, 0, body_at, NULL), 0);
    root = json_load_file(path, 0, &jerr);
    CHECK(root && json_is_array(json_object_get(root, "data")) && json_array_size(json_object_get(root, "data")) == 0);
    json_decref(root);
    /* A path that cannot be written: an error, nothing left behind. */
    CHECK(sg_export_inputs("/nonexistent-dir/inputs.json", 1, body_at, NULL) < 0);
    free(big);
}

/* An error group's class and status read as one phrase: a status is never left to look like a duration. */
static void test_error_labels(void)
{
    static const struct {
        sg_err_class_t cls;
        int32_t status;
        const char *want;
    } cases[] = {
        {SG_ERRC_HTTP, 404, "http 404 Not Found"},
        {SG_ERRC_HTTP, 429, "http 429 Too Many Requests"},
        {SG_ERRC_HTTP, 418, "http 418"},
        {SG_ERRC_TIMEOUT, 200, "timeout (after HTTP 200 headers)"},
        {SG_ERRC_DISCONNECT, 200, "disconnect (after HTTP 200 headers)"},
        {SG_ERRC_TIMEOUT, 0, "timeout"},
        {SG_ERRC_CONNECT, 0, "connect"},
        {SG_ERRC_GRPC, 200, "grpc (after HTTP 200 headers)"},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(cases); i++) {
        sg_error_group_t g = {.cls = cases[i].cls, .http_status = cases[i].status};
        char buf[96];
        sg_error_group_label(&g, buf, sizeof(buf));
        CHECK(strcmp(buf, cases[i].want) == 0);
        if (strcmp(buf, cases[i].want) != 0)
            fprintf(stderr, "label [%s], want [%s]\n", buf, cases[i].want);
    }
    sg_error_group_t g = {.cls = SG_ERRC_HTTP, .http_status = 503};
    char small[8];
    sg_error_group_label(&g, small, sizeof(small));
    CHECK(strcmp(small, "http 50") == 0); /* cut, terminated */
}

/* Every line of the box must have the same display width (code points; our box characters are narrow). */
static void check_box(const char *text, size_t *width_out)
{
    size_t width = 0;
    int lines = 0, bad = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        if (!nl)
            break;
        bool box = strncmp(line, "┏", 3) == 0 || strncmp(line, "┃", 3) == 0 || strncmp(line, "┡", 3) == 0 ||
                   strncmp(line, "│", 3) == 0 || strncmp(line, "└", 3) == 0;
        if (box) {
            size_t w = 0;
            for (const char *c = line; c < nl; c++)
                w += ((unsigned char)*c & 0xC0) != 0x80;
            if (width == 0)
                width = w;
            bad += w != width;
            lines++;
        }
        line = nl + 1;
    }
    CHECK(lines >= 5);
    CHECK_EQ_INT(bad, 0);
    *width_out = width;
}

/* Each of want[] found in text, in order. */
static void check_in_order(const char *text, const char *const *want, size_t n)
{
    const char *at = text;
    for (size_t i = 0; i < n; i++) {
        const char *hit = at ? strstr(at, want[i]) : NULL;
        CHECK(hit != NULL);
        if (!hit) {
            fprintf(stderr, "missing in table (in this order): [%s]\n", want[i]);
            continue;
        }
        at = hit + strlen(want[i]);
    }
}

/* Values past a histogram's range and requests without a per-user rate: the notes under the table name the metric,
 * the count and the range, and the summary carries the same counts. */
static void test_range_notes(void)
{
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK(m != NULL);
    /* every token in one read: ITL 0, no 1/ITL */
    sg_record_t once = streamed(1, 0, T0, 10, 8, 0);
    sg_metrics_add(m, &once);
    sg_metrics_add(m, &once);
    /* 4 tokens within 1 ns of each other: 3e9 tokens/s, above the 1e9 range */
    sg_record_t fast = streamed(2, 0, T0, 10, 4, 0);
    fast.end_ns = fast.first_token_ns + 1;
    sg_metrics_add(m, &fast);
    /* a latency past an hour */
    sg_record_t slow = streamed(3, 0, T0, 10, 2, 0);
    slow.end_ns = T0 + 2 * 3600LL * 1000 * MS;
    sg_metrics_add(m, &slow);
    sg_run_info_t info = {.title = "t", .streaming = true};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ_INT(sg_export_table(f, m, &info), 0);
    fclose(f);
    static const char *const want[] = {
        "Note: request_latency: 1 value above the histogram's 3.6e+06 ms range was clamped to it\n",
        ("Note: output_token_throughput_per_user: 1 value above the histogram's 1e+09 tokens/sec/user range was "
         "clamped to it\n"),
        "Note: output_token_throughput_per_user: 2 requests left out: all their tokens arrived at once",
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(want); i++) {
        CHECK(buf && strstr(buf, want[i]) != NULL);
        if (!buf || !strstr(buf, want[i]))
            fprintf(stderr, "missing under the table: [%s] in:\n%s\n", want[i], buf ? buf : "");
    }
    CHECK(buf && strstr(buf, "past the histogram range") == NULL);
    free(buf);

    char path[256];
    path_in(path, sizeof(path), "range_notes.json");
    CHECK_EQ_INT(sg_export_json(path, m, &info), 0);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    CHECK(root != NULL);
    json_t *undef = json_object_get(root, "output_token_throughput_per_user_undefined_count");
    CHECK_EQ_INT(json_integer_value(json_object_get(undef, "avg")), 2);
    json_t *clamped = json_object_get(root, "clamped_values");
    CHECK_EQ_INT(json_integer_value(json_object_get(clamped, "request_latency")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(clamped, "output_token_throughput_per_user")), 1);
    /* the slow request's ITL and latency from send are past an hour too; nothing else is */
    CHECK_EQ_INT(json_integer_value(json_object_get(clamped, "request_latency_from_send")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(clamped, "inter_token_latency")), 1);
    CHECK_EQ_INT(json_object_size(clamped), 4);
    /* the per-user distribution holds the one request that has a rate, at the top of its range */
    json_t *tps = json_object_get(root, "output_token_throughput_per_user");
    CHECK_EQ_INT(json_integer_value(json_object_get(tps, "count")), 2);
    json_decref(root);
    sg_metrics_free(m);
}

static void test_table(void)
{
    sg_metrics_t *m = streamed_run(NULL, 0);
    /* One slow request: 1,915.41 ms latency puts a thousands separator in the table. */
    sg_record_t r = streamed(20, 0, T0, 15, 2, 0);
    r.end_ns = T0 + 1915410000LL;
    sg_metrics_add(m, &r);
    sg_record_t c = failed(21, 0, T0, 0, "connection refused");
    c.err_class = SG_ERRC_CONNECT;
    sg_metrics_add(m, &c);
    /* A timeout after the response head: its status is that of the head, not a number of milliseconds. */
    sg_record_t t = failed(22, 0, T0, 200, "no complete response within --request-timeout 1 s");
    t.err_class = SG_ERRC_TIMEOUT;
    sg_metrics_add(m, &t);
    sg_run_info_t info = {.title = "surge | LLM Metrics",
                          .streaming = true,
                          .interrupted = true,
                          .interrupted_by = "SIGINT",
                          .warmup_count = 3,
                          .isl_source = "tokenizer"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ_INT(sg_export_table(f, m, &info), 0);
    fclose(f);
    /* 11 successful requests over 1.91541 s: 202 output and 2,200 input tokens. GenAI-Perf's and AIPerf's rows
     * in their order, surge's after; a label longer than 36 columns puts its unit on a line of its own. */
    static const char *const want[] = {
        "surge | LLM Metrics\n",
        "┏━━━",
        "┃                            Statistic ┃",
        "      avg ┃    min ┃      max ┃      p99 ┃    p90 ┃    p75 ┃    p50 ┃    std ┃\n",
        "┡━━━",
        "│             Time to first token (ms) │",
        "│            Time to second token (ms) │",
        "│                 Request latency (ms) │   273.67 │ 105.00 │ 1,915.41 │ 1,915.41 │ 114.00 │ ",
        "│             Inter token latency (ms) │",
        "│     Output token throughput per user │",
        "│                    (tokens/sec/user) │          │        │          │          │        │        │        │"
        "        │\n",
        "│      Output sequence length (tokens) │",
        "│       Input sequence length (tokens) │",
        "│   Time to first token from send (ms) │",
        "│       Request latency from send (ms) │",
        "│             Inter chunk latency (ms) │",
        "│                    Schedule lag (ms) │",
        "│ Output token throughput (tokens/sec) │   105.46 │    N/A │",
        "│  Input token throughput (tokens/sec) │ 1,148.58 │    N/A │",
        "│  Total token throughput (tokens/sec) │ 1,254.04 │    N/A │",
        "│         Request throughput (per sec) │     5.74 │    N/A │",
        ("│                        Request count │       11 │    N/A │      N/A │      N/A │    N/A │    N/A │    N/A │"
         "    N/A │\n"),
        "│                  Error request count │        4 │    N/A │",
        "│             Benchmark duration (sec) │     1.92 │    N/A │",
        "└───",
        "─┘\n",
        "Errors: 4 of 15 requests failed\n",
        "  http 500 Internal Server Error: 2 (Internal Server Error)\n",
        "  connect: 1 (connection refused)\n",
        "  timeout (after HTTP 200 headers): 1 (no complete response within --request-timeout 1 s)\n",
        "Warmup requests (not counted): 3\n",
        "Run INTERRUPTED: results cover what completed before SIGINT\n",
        "Output sequence length source: usage 0, tokenizer 11, events 0\n",
        "Input sequence length, server usage minus client (tokenizer): mean +1.00, min +1, max +1 over 11 requests",
    };
    check_in_order(buf, want, SG_ARRAY_LEN(want));
    /* p50 and std of TTFT (10..19 ms and one of 15): nearest rank 6 of 11 is 15, population std 2.74 */
    CHECK(strstr(buf, "│             Time to first token (ms) │    14.55 │  10.00 │    19.00 │    19.00 │  18.00 │  "
                      "17.00 │  15.00 │   2.74 │\n") != NULL);
    CHECK(strstr(buf, "Hint:") == NULL);
    CHECK(strstr(buf, "Goodput") == NULL);
    size_t width;
    check_box(buf, &width);
    /* The title is centered over the box. */
    size_t title_pad = strspn(buf, " ");
    CHECK_EQ_INT(title_pad, (width - strlen("surge | LLM Metrics")) / 2);
    if (test_failures)
        fputs(buf, stderr);
    else
        fputs(buf, stdout);
    free(buf);
    sg_metrics_free(m);

    /* A plain run: no streamed rows, goodput with SLOs, no error lines; narrower columns. */
    sg_slo_t slos[] = {{SG_M_LATENCY, 100.0}};
    sg_metrics_t *p = sg_metrics_new(slos, 1);
    for (int i = 0; i < 4; i++) {
        sg_record_t q = streamed((uint64_t)i, 0, T0 + i * 250 * MS, 10, 5, 1);
        q.first_token_ns = q.second_token_ns = 0;
        q.n_events = 0;
        q.end_ns = T0 + i * 250 * MS + (i + 1) * 40 * MS; /* 40, 80, 120, 160 ms; duration 0.91 s */
        q.osl_source = SG_OSL_USAGE;
        q.osl_server = i == 2 ? 7 : 5; /* one request where usage says 7 and the tokenizer 5 */
        q.isl_server = -1;
        q.isl_cached = -1;
        sg_metrics_add(p, &q);
    }
    sg_run_info_t pinfo = {.title = "Plain", .has_slos = true};
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK_EQ_INT(sg_export_table(f, p, &pinfo), 0);
    fclose(f);
    CHECK(strstr(buf, "Time to first token") == NULL);
    CHECK(strstr(buf, "Inter token latency") == NULL);
    /* p99/p90/p75 are bucket midpoints (within 1/2048); avg, min and max are exact. */
    CHECK(strstr(buf, "│                 Request latency (ms) │ 100.00 │  40.00 │ 160.00 │ 1") != NULL);
    CHECK(strstr(buf, "│                    Goodput (per sec) │   2.20 │    N/A │") != NULL);
    CHECK(strstr(buf, "Errors") == NULL);
    CHECK(strstr(buf, "INTERRUPTED") == NULL);
    CHECK(strstr(buf, "Warmup") == NULL);
    CHECK(strstr(buf, "usage 4, tokenizer 0, events 0") != NULL);
    CHECK(strstr(buf, "  usage vs tokenizer: 1 of 4 requests differ (mean |diff| 0.50, max |diff| 2 tokens)\n") !=
          NULL);
    CHECK(strstr(buf, "Input sequence length, server") == NULL);
    CHECK(strstr(buf, "Goodput: 2 of 4 successful requests met every SLO\n"
                      "  request_latency <= 100 ms: met 2, missed 2, not measurable 0\n") != NULL);
    CHECK(strstr(buf, "Hint:") == NULL); /* only one of four differs */
    check_box(buf, &width);
    if (test_failures)
        fputs(buf, stderr);
    free(buf);
    sg_metrics_free(p);

    /* A request without the constrained metric is reported as not measurable, not as a miss; a tokenizer that
     * disagrees with usage on every request gets a hint naming it. */
    sg_slo_t two[] = {{SG_M_ITL, 10.0}, {SG_M_TTFT, 11.0}};
    sg_metrics_t *g = sg_metrics_new(two, 2);
    for (int i = 0; i < 4; i++) {
        sg_record_t q = streamed((uint64_t)i, 0, T0 + i * 100 * MS, 10 + (i < 3 ? i : 0), i < 3 ? 20 : 1, 5);
        q.osl_server = (int32_t)q.osl + 2; /* usage counts two more than the tokenizer, every time */
        q.osl_source = SG_OSL_USAGE;
        sg_metrics_add(g, &q);
    }
    sg_run_info_t ginfo = {.streaming = true, .has_slos = true, .tokenizer = "cl100k_base (tiktoken, /x)"};
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK_EQ_INT(sg_export_table(f, g, &ginfo), 0);
    fclose(f);
    static const char *const gwant[] = {
        "Goodput: 2 of 4 successful requests met every SLO (a request without a constrained metric is not good)\n",
        "  inter_token_latency <= 10 ms: met 3, missed 0, not measurable 1 (no content event, or OSL below 2)\n",
        "  time_to_first_token <= 11 ms: met 3, missed 1, not measurable 0\n",
        "  usage vs tokenizer: 4 of 4 requests differ (mean |diff| 2.00, max |diff| 2 tokens)\n",
        ("Hint: the server's usage.completion_tokens and --tokenizer cl100k_base (tiktoken, /x) differ on every one "
         "of the 4 compared requests (usage minus tokenizer: mean +2.00 tokens); it is probably not the model's "
         "tokenizer"),
    };
    check_in_order(buf, gwant, SG_ARRAY_LEN(gwant));
    CHECK(strstr(buf, "stop token") == NULL);
    if (test_failures)
        fputs(buf, stderr);
    free(buf);
    sg_metrics_free(g);

    /* One more than the tokenizer on every request: a stop token the server counts is the other likely cause. */
    sg_metrics_t *one = sg_metrics_new(NULL, 0);
    sg_record_t q = streamed(1, 0, T0, 10, 20, 5);
    q.osl_server = 21;
    sg_metrics_add(one, &q);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK_EQ_INT(sg_export_table(f, one, &ginfo), 0);
    fclose(f);
    CHECK(strstr(buf, "mean +1.00 tokens") != NULL && strstr(buf, "counts a stop token it does not send") != NULL);
    free(buf);
    sg_metrics_free(one);
}

/* ---------- record log ---------- */

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(fwrite(data, 1, len, f), len);
        fclose(f);
    }
}

static void count_one(void *ctx, const sg_record_t *r)
{
    (void)r;
    (*(uint64_t *)ctx)++;
}

static void test_reclog(void)
{
    char logs[3][128], out[128];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "worker%d.reclog", i);
        path_in(logs[i], sizeof(logs[i]), name);
    }
    path_in(out, sizeof(out), "profile_export_surge.jsonl");

    /*
     * Three workers, requests interleaved in time and appended in completion order (not intended order).
     * Worker w's request k is intended at T0 + (3k + w) * 10 ms, with ids assigned so that worker 2's first
     * request ties worker 1's in time and must come after it by id.
     */
    uint32_t big[20000]; /* one record larger than the 64 KiB buffer */
    for (uint32_t i = 0; i < SG_ARRAY_LEN(big); i++)
        big[i] = i * 10;
    int expected = 0;
    for (uint32_t w = 0; w < 3; w++) {
        int err = 1;
        sg_reclog_t *l = sg_reclog_open(logs[w], &err);
        CHECK(l != NULL);
        CHECK_EQ_INT(err, 0);
        if (!l)
            return;
        for (int k = 9; k >= 0; k--) {
            int64_t at = T0 + (3 * k + (int)w) * 10 * MS;
            if (w == 2 && k == 0)
                at = T0 + 10 * MS; /* same time as worker 1's k = 0 */
            uint64_t id = (uint64_t)(100 * w + (uint32_t)k);
            sg_record_t r;
            if (k == 4)
                r = failed(id, w, at, 500, "bad \"quote\"\n\ttab \\ \x01 \xff end");
            else
                r = streamed(id, w, at, 5 + k, 3 + (uint32_t)k, 2);
            r.model = w % 2;
            if (w == 1 && k == 7) {
                r.event_us = big;
                r.n_events = SG_ARRAY_LEN(big);
            }
            CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
            expected++;
        }
        /* Warmup records are logged but never exported. */
        sg_record_t wu = streamed(999 + w, w, T0 - 1000 * MS, 5, 3, 1);
        wu.warmup = true;
        CHECK_EQ_INT(sg_reclog_append(l, &wu), 0);
        CHECK_EQ_INT(sg_reclog_close(l), 0);
    }
    const char *const paths[3] = {logs[0], logs[1], logs[2]};
    const char *const models[2] = {"model-a", "model-b"};
    CHECK_EQ_INT(sg_export_jsonl(out, paths, 3, models, 2), 0);
    CHECK_EQ_INT(count_tmp_files(), 0);

    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    int n = 0, order_bad = 0, parse_bad = 0;
    int64_t prev_t = -1;
    uint64_t prev_id = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t jerr;
        json_t *o = json_loads(line, 0, &jerr);
        if (!o) {
            parse_bad++;
            fprintf(stderr, "line %d: %s\n", n, jerr.text);
            continue;
        }
        int64_t t = json_integer_value(json_object_get(o, "intended_ns"));
        uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
        if (n == 0) {
            CHECK_EQ_INT(t, 0); /* relative to the earliest measured request, not to the warmup */
            CHECK_EQ_INT(id, 0);
        }
        if (n > 0 && (t < prev_t || (t == prev_t && id <= prev_id)))
            order_bad++;
        if (n == 1 || n == 2) { /* the tie at 10 ms: worker 1's id 100 before worker 2's id 200 */
            CHECK_EQ_INT(t, 10 * MS);
            CHECK_EQ_INT(id, n == 1 ? 100 : 200);
        }
        prev_t = t;
        prev_id = id;
        uint32_t w = (uint32_t)json_integer_value(json_object_get(o, "worker"));
        CHECK(strcmp(json_string_value(json_object_get(o, "model")), models[w % 2]) == 0);
        const char *status = json_string_value(json_object_get(o, "status"));
        if (id % 100 == 4) {
            CHECK(status && strcmp(status, "error") == 0);
            CHECK(strcmp(json_string_value(json_object_get(o, "error_class")), "http") == 0);
            const char *msg = json_string_value(json_object_get(o, "error"));
            CHECK(msg && strcmp(msg, "bad \"quote\"\n\ttab \\ \x01 \xef\xbf\xbd end") == 0);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "http_status")), 500);
            CHECK(json_is_null(json_object_get(o, "first_token_ns")));
            CHECK(json_is_null(json_object_get(o, "time_to_first_token_ms")));
            CHECK(json_is_null(json_object_get(o, "input_sequence_length_server")));
            CHECK(json_is_null(json_object_get(o, "output_sequence_length_tokenizer")));
            CHECK(json_is_null(json_object_get(o, "max_tokens")));
            CHECK_EQ_INT(json_array_size(json_object_get(o, "token_times_ms")), 0);
            CHECK(json_is_false(json_object_get(o, "streaming")));
        } else {
            int k = (int)(id % 100);
            CHECK(status && strcmp(status, "ok") == 0);
            CHECK(json_object_get(o, "error") == NULL);
            CHECK(json_object_get(o, "error_class") == NULL);
            CHECK(json_is_true(json_object_get(o, "streaming")));
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "sent_ns")), t + MS);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "first_byte_ns")), t + 2 * MS);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "first_token_ns")), t + (5 + k) * MS);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "end_ns")), t + (5 + k + 2 * (2 + k)) * MS);
            CHECK_NEAR(json_real_value(json_object_get(o, "schedule_lag_ms")), 1.0, 1e-9);
            CHECK_NEAR(json_real_value(json_object_get(o, "time_to_first_token_ms")), 5 + k, 1e-9);
            CHECK_NEAR(json_real_value(json_object_get(o, "request_latency_ms")), 5 + k + 2 * (2 + k), 1e-9);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "input_sequence_length")), 200);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "input_sequence_length_server")), 201);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "output_sequence_length")), 3 + k);
            CHECK(json_is_null(json_object_get(o, "output_sequence_length_server")));
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "output_sequence_length_tokenizer")), 3 + k);
            CHECK(strcmp(json_string_value(json_object_get(o, "osl_source")), "tokenizer") == 0);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "max_tokens")), 3 + k);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "content_events")), 3 + k);
            CHECK_EQ_INT(json_integer_value(json_object_get(o, "response_bytes")), 100 * (3 + k));
            json_t *tt = json_object_get(o, "token_times_ms");
            if (id == 107) {
                CHECK_EQ_INT(json_array_size(tt), SG_ARRAY_LEN(big));
                CHECK_NEAR(json_number_value(json_array_get(tt, 19999)), 12 + 199.99, 1e-9);
            } else {
                CHECK_EQ_INT(json_array_size(tt), 3 + k);
                for (size_t i = 0; i < json_array_size(tt); i++)
                    CHECK_NEAR(json_number_value(json_array_get(tt, i)), 5 + k + 2.0 * (double)i, 1e-9);
            }
        }
        json_decref(o);
        n++;
    }
    free(line);
    fclose(f);
    CHECK_EQ_INT(parse_bad, 0);
    CHECK_EQ_INT(n, expected);
    CHECK_EQ_INT(order_bad, 0);

    /* Without model names the index is written. */
    CHECK_EQ_INT(sg_export_jsonl(out, paths, 1, NULL, 0), 0);
    f = fopen(out, "r");
    char first[512] = "";
    CHECK(f && fgets(first, sizeof(first), f));
    if (f)
        fclose(f);
    CHECK(strncmp(first, "{\"id\":0,\"worker\":0,\"payload\":0,\"model\":0,", 41) == 0);

    /* Corruption: truncated in a record, bad magic, a flipped marker, an empty file. Each is rejected, and the
     * output of a previous run is neither replaced nor joined by a partial file. */
    char *orig = NULL;
    size_t orig_len = 0;
    {
        FILE *lf = fopen(logs[1], "rb");
        fseek(lf, 0, SEEK_END);
        orig_len = (size_t)ftell(lf);
        fseek(lf, 0, SEEK_SET);
        orig = calloc(1, orig_len + 8); /* room for the trailing-garbage case below */
        CHECK_EQ_INT(fread(orig, 1, orig_len, lf), orig_len);
        fclose(lf);
    }
    char bad_path[128], bad_out[128];
    path_in(bad_path, sizeof(bad_path), "bad.reclog");
    path_in(bad_out, sizeof(bad_out), "bad.jsonl");
    const char *const bad_paths[3] = {logs[0], bad_path, logs[2]};

    write_file(bad_path, orig, orig_len - 7);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    CHECK(!exists(bad_out));
    write_file(bad_path, orig, 16 + 60);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    CHECK(!exists(bad_out));
    orig[0] ^= 1;
    write_file(bad_path, orig, orig_len);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    orig[0] ^= 1;
    orig[16] ^= 0x40; /* first record's marker */
    write_file(bad_path, orig, orig_len);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    orig[16] ^= 0x40;
    write_file(bad_path, orig, orig_len + 3); /* trailing garbage: a torn next record */
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    write_file(bad_path, "", 0);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    CHECK(!exists(bad_out));
    write_file(bad_path, orig, orig_len); /* intact again: accepted */
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), 0);
    CHECK(exists(bad_out));
    /* A previous good output survives a failed export untouched. */
    write_file(bad_path, orig, orig_len - 1);
    CHECK_EQ_INT(sg_export_jsonl(bad_out, bad_paths, 3, models, 2), SG_EPROTO);
    CHECK(exists(bad_out));
    CHECK_EQ_INT(count_tmp_files(), 0);

    /* Every byte of a log's first records changed in turn (the whole log would take minutes: each export writes
     * the 20,000-event record too). The export's index reads only each record's head; the rest of a record is
     * checked as it is written. The export refuses exactly the logs the full decoder (sg_reclog_each) refuses,
     * and a refused export leaves neither its file nor a temporary one. */
    {
        char flip_out[128];
        path_in(flip_out, sizeof(flip_out), "flip.jsonl");
        int disagree = 0, left = 0, refused = 0, inside = 0;
        for (size_t i = 16; i < orig_len && i < 16 + 400; i++) {
            for (unsigned flip = 1; flip < 256; flip <<= 6) {
                orig[i] ^= (char)flip;
                write_file(bad_path, orig, orig_len);
                orig[i] ^= (char)flip;
                unlink(flip_out);
                uint64_t g = 0;
                int full = sg_reclog_each(bad_path, count_one, &g);
                int rc = sg_export_jsonl(flip_out, bad_paths, 3, models, 2);
                disagree += rc != full;
                left += rc != 0 && exists(flip_out);
                refused += rc == SG_EPROTO;
                inside += rc == SG_EPROTO && i > 16 + 8; /* past the first record's frame and head */
            }
        }
        CHECK_EQ_INT(disagree, 0);
        CHECK_EQ_INT(left, 0);
        CHECK(refused > 0 && inside > 0);
        CHECK_EQ_INT(count_tmp_files(), 0);
        unlink(flip_out);
    }
    free(orig);

    const char *const missing[1] = {"/nonexistent-dir/w.reclog"};
    CHECK(sg_export_jsonl(bad_out, missing, 1, NULL, 0) < 0);
    int err = 0;
    CHECK(sg_reclog_open("/nonexistent-dir/w.reclog", &err) == NULL);
    CHECK(err < 0);

    /* No logs at all: an empty file. */
    CHECK_EQ_INT(sg_export_jsonl(bad_out, NULL, 0, NULL, 0), 0);
    struct stat st;
    CHECK(stat(bad_out, &st) == 0 && st.st_size == 0);
}

/* The JSONL writer's buffer: pieces of every size, across many 1 MiB flushes and an unaligned tail, come back
 * byte for byte, in the test directory and on tmpfs (where O_DIRECT may be refused and the page cache is used). */
static void outbuf_round_trip(const char *path)
{
    size_t total = 3 * SG_OUTBUF_CAP + 12345;
    unsigned char *want = malloc(total);
    CHECK(want != NULL);
    if (!want)
        return;
    uint32_t x = 12345;
    for (size_t i = 0; i < total; i++) {
        x = x * 1103515245u + 12345u;
        want[i] = (unsigned char)(x >> 16);
    }
    sg_outbuf_t ob;
    CHECK_EQ_INT(sg_outbuf_open(&ob, path), 0);
    size_t off = 0, piece = 1;
    while (off < total) {
        size_t n = piece < total - off ? piece : total - off;
        char *p = sg_outbuf_room(&ob, n);
        CHECK(p != NULL);
        if (!p)
            break;
        memcpy(p, want + off, n);
        ob.len += n;
        off += n;
        piece = piece * 7 % SG_OUTBUF_ROOM_MAX + 1;
    }
    CHECK(!exists(path));                                  /* nothing under the final name before commit */
    CHECK(sg_outbuf_room(&ob, SG_OUTBUF_CAP + 1) == NULL); /* too big a piece: an error commit reports */
    CHECK_EQ_INT(sg_outbuf_commit(&ob), SG_ETOOBIG);
    CHECK(!exists(path));

    CHECK_EQ_INT(sg_outbuf_open(&ob, path), 0);
    for (off = 0; off < total;) {
        size_t n = total - off < 100000 ? total - off : 100000;
        char *p = sg_outbuf_room(&ob, n);
        CHECK(p != NULL);
        if (!p)
            break;
        memcpy(p, want + off, n);
        ob.len += n;
        off += n;
    }
    CHECK_EQ_INT(sg_outbuf_commit(&ob), 0);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    /* calloc: under -fsanitize gcc warns that a short read would leave malloc'd bytes unset */
    unsigned char *got = calloc(1, total + 1);
    size_t n = f && got ? fread(got, 1, total + 1, f) : 0;
    CHECK_EQ_INT(n, total);
    CHECK(got && memcmp(got, want, total) == 0);
    if (f)
        fclose(f);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
    unlink(path);
    free(got);
    free(want);

    /* Aborted: no file, no temporary. */
    CHECK_EQ_INT(sg_outbuf_open(&ob, path), 0);
    char *p = sg_outbuf_room(&ob, 10);
    CHECK(p != NULL);
    if (p)
        memcpy(p, "0123456789", 10);
    ob.len += 10;
    sg_outbuf_abort(&ob);
    CHECK(!exists(path));
}

static void test_outbuf(void)
{
    char path[128];
    path_in(path, sizeof(path), "outbuf.bin");
    outbuf_round_trip(path);
    CHECK_EQ_INT(count_tmp_files(), 0);
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof(path), "/dev/shm/sg_test_outbuf.%d", (int)getpid());
        outbuf_round_trip(path);
    }
    sg_outbuf_t ob;
    CHECK(sg_outbuf_open(&ob, "/nonexistent-dir/x.jsonl") < 0);
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/*
 * One worker's log, in completion order, through each way the export orders it: ids a dense range whose order
 * is the intended order (placed by id, no sort), a dense range whose order is not (placed, then sorted), and ids
 * with one repeated and one missing (sorted). Every line must come out once, in (intended, id) order.
 */
static void check_order_case(const char *name, int which)
{
    enum { N = 300 };
    char log[128], out[128];
    path_in(log, sizeof(log), "order.reclog");
    path_in(out, sizeof(out), "order.jsonl");
    int err = 1;
    sg_reclog_t *l = sg_reclog_open(log, &err);
    CHECK(l != NULL);
    if (!l)
        return;
    uint64_t rng = 42;
    uint32_t perm[N];
    for (uint32_t i = 0; i < N; i++)
        perm[i] = i;
    for (uint32_t i = N - 1; i > 0; i--) { /* a completion order: any order */
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t j = (uint32_t)((rng >> 33) % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t i = 0; i < N; i++) {
        uint64_t id = 1000 + perm[i];
        int64_t at = T0 + (int64_t)perm[i] * MS;
        if (which == 1 && perm[i] % 3 == 0)
            at = T0 + (int64_t)(N - perm[i]) * MS; /* intended order is not id order */
        if (which == 2 && perm[i] == 7)
            id = 1000 + 6; /* 6 twice, 7 missing */
        sg_record_t r = streamed(id, 0, at, 5, 2, 1);
        CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    }
    CHECK_EQ_INT(sg_reclog_close(l), 0);
    const char *const paths[1] = {log};
    CHECK_EQ_INT(sg_export_jsonl(out, paths, 1, NULL, 0), 0);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    int n = 0, order_bad = 0;
    int64_t prev_t = INT64_MIN;
    uint64_t prev_id = 0, id_sum = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        CHECK(o != NULL);
        if (!o)
            continue;
        int64_t t = json_integer_value(json_object_get(o, "intended_ns"));
        uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
        if (n > 0 && (t < prev_t || (t == prev_t && id < prev_id)))
            order_bad++;
        prev_t = t;
        prev_id = id;
        id_sum += id;
        n++;
        json_decref(o);
    }
    free(line);
    fclose(f);
    uint64_t want_sum = 1000ull * N + (uint64_t)N * (N - 1) / 2 - (which == 2 ? 1 : 0);
    if (order_bad || n != N || id_sum != want_sum)
        fprintf(stderr, "order case %s: %d lines, %d out of order, id sum %llu (want %llu)\n", name, n, order_bad,
                (unsigned long long)id_sum, (unsigned long long)want_sum);
    CHECK_EQ_INT(n, N);
    CHECK_EQ_INT(order_bad, 0);
    CHECK_EQ_INT(id_sum, want_sum);
    unlink(out);
}

static void test_reclog_orders(void)
{
    check_order_case("dense ids in intended order", 0);
    check_order_case("dense ids, intended order differs", 1);
    check_order_case("a repeated id", 2);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/sg_test_export.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_json();
    test_csv();
    test_error_labels();
    test_inputs();
    test_table();
    test_range_notes();
    test_reclog();
    test_reclog_orders();
    test_outbuf();
    cleanup();
    return test_finish("test_export");
}
