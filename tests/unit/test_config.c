/* `surge profile` command lines: accepted ones give the right fields, every rejected one gives SG_EINVAL. */
#include "test.h"

#include "sg_config.h"
#include "sg_sched.h"
#include "sg_kserve.h"
#include "sg_input.h"
#include "sg_options.h"
#include "sg_opts.h"

#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parses "profile" followed by the NULL-terminated arguments. The argv array is local: getopt permutes it. */
static int parse_v(sg_config_t *cfg, va_list ap)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = "profile";
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 63)
        argv[argc++] = (char *)a;
    argv[argc] = NULL;
    return sg_config_parse(cfg, argc, argv);
}

static int parse(sg_config_t *cfg, ...)
{
    va_list ap;
    va_start(ap, cfg);
    int rc = parse_v(cfg, ap);
    va_end(ap);
    return rc;
}

/* Expect the command line to be rejected, and the config to hold nothing afterwards. */
static void bad(int line, ...)
{
    sg_config_t cfg;
    va_list ap;
    va_start(ap, line);
    int rc = parse_v(&cfg, ap);
    va_end(ap);
    test_checks++;
    if (rc != SG_EINVAL) {
        test_failures++;
        fprintf(stderr, "test_config.c:%d: expected SG_EINVAL, got %d\n", line, rc);
    }
    CHECK(cfg.models == NULL && cfg.url == NULL && cfg.headers == NULL);
    sg_config_free(&cfg);
}
#define BAD(...) bad(__LINE__, __VA_ARGS__, (const char *)NULL)

static void test_defaults(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "my-model", NULL), 0);
    CHECK_EQ_INT(c.n_models, 1);
    CHECK_EQ_STR(c.models[0], strlen(c.models[0]), "my-model");
    CHECK_EQ_INT(c.model_strategy, SG_MODEL_ROUND_ROBIN);
    CHECK_EQ_STR(c.url, strlen(c.url), "localhost:8000");
    CHECK_EQ_STR(c.host, strlen(c.host), "localhost");
    CHECK_EQ_INT(c.port, 8000);
    CHECK_EQ_STR(c.base_path, strlen(c.base_path), "");
    CHECK_EQ_STR(c.host_header, strlen(c.host_header), "localhost:8000");
    CHECK_EQ_INT(c.endpoint_type, SG_OAI_CHAT);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/v1/chat/completions");
    CHECK(!c.streaming);
    CHECK(!c.generate_plots);
    CHECK_EQ_INT(c.n_headers, 0);
    CHECK(c.headers != NULL && c.headers[0] == NULL);
    CHECK_EQ_STR(c.extra_inputs_json, strlen(c.extra_inputs_json), "{}");
    CHECK(c.request_rate == 0);
    CHECK_EQ_INT(c.distribution, SG_DIST_POISSON);
    CHECK_EQ_INT(c.concurrency, 1);
    CHECK_EQ_INT(c.max_concurrency, 0);
    CHECK_EQ_INT(c.request_count, 100);
    CHECK(c.benchmark_duration_s == 0);
    CHECK_EQ_INT(c.warmup_request_count, 0);
    CHECK_NEAR(c.request_timeout_s, 600, 0);
    CHECK_EQ_INT(c.random_seed, 0);
    CHECK(c.workers >= 1);
    CHECK_EQ_INT(c.isl_mean, 550);
    CHECK_EQ_INT(c.isl_stddev, 0);
    CHECK_EQ_INT(c.num_prompts, 100);
    CHECK_EQ_INT(c.osl_mean, -1);
    CHECK_EQ_INT(c.osl_stddev, 0);
    CHECK(!c.osl_deterministic);
    CHECK_EQ_STR(c.artifact_dir, strlen(c.artifact_dir), "artifacts/my-model-openai-chat-concurrency1");
    CHECK_EQ_STR(c.profile_export_file, strlen(c.profile_export_file), "profile_export.json");
    CHECK_EQ_STR(c.profile_export_stem, strlen(c.profile_export_stem), "profile_export");
    CHECK(!c.verbose);
    CHECK(c.max_error_rate == 0);
    CHECK_EQ_INT(c.n_slos, 0);
    CHECK_EQ_INT(c.progress, -1);
    CHECK(!c.show_version);
    sg_config_free(&c);
    CHECK(c.models == NULL && c.n_models == 0);
    sg_config_free(&c); /* twice is fine */
}

static void test_everything(void)
{
    sg_config_t c;
    int rc =
        parse(&c, "--model", "a/b", "-m", "c", "--model-selection-strategy", "random", "-u",
              "http://10.0.0.5:9000/api/", "--service-kind", "openai", "--endpoint-type", "completions", "--endpoint",
              "v2/complete", "--streaming", "-H", "X-Trace:  on ", "--header=X-Other: 1", "--api-key", "sk-123",
              "--request-rate", "12.5", "--request-distribution", "constant", "--max-concurrency", "64",
              "--request-count", "1000", "--benchmark-duration", "30.5", "--warmup-request-count", "10",
              "--request-timeout", "5.5", "--random-seed", "42", "--workers", "3", "--synthetic-input-tokens-mean",
              "200", "--synthetic-input-tokens-stddev", "20", "--num-prompts", "500", "--output-tokens-mean", "128",
              "--output-tokens-stddev", "8", "--output-tokens-mean-deterministic", "--artifact-dir", "out/run1",
              "--profile-export-file", "my_run.json", "-v", "--max-error-rate", "0.05", "--goodput",
              "time_to_first_token:200", "--no-progress", "--generate-plots", NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    CHECK_EQ_INT(c.n_models, 2);
    CHECK_EQ_STR(c.models[0], strlen(c.models[0]), "a/b");
    CHECK_EQ_STR(c.models[1], strlen(c.models[1]), "c");
    CHECK_EQ_INT(c.model_strategy, SG_MODEL_RANDOM);
    CHECK_EQ_STR(c.host, strlen(c.host), "10.0.0.5");
    CHECK_EQ_INT(c.port, 9000);
    CHECK_EQ_STR(c.base_path, strlen(c.base_path), "/api");
    CHECK_EQ_STR(c.host_header, strlen(c.host_header), "10.0.0.5:9000");
    CHECK_EQ_INT(c.endpoint_type, SG_OAI_COMPLETIONS);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/api/v2/complete");
    CHECK(c.streaming);
    CHECK_EQ_INT(c.n_headers, 3);
    CHECK_EQ_STR(c.headers[0], strlen(c.headers[0]), "X-Trace: on");
    CHECK_EQ_STR(c.headers[1], strlen(c.headers[1]), "X-Other: 1");
    CHECK_EQ_STR(c.headers[2], strlen(c.headers[2]), "Authorization: Bearer sk-123");
    CHECK(c.headers[3] == NULL);
    CHECK_NEAR(c.request_rate, 12.5, 0);
    CHECK_EQ_INT(c.distribution, SG_DIST_CONSTANT);
    CHECK_EQ_INT(c.concurrency, 0);
    CHECK_EQ_INT(c.max_concurrency, 64);
    CHECK_EQ_INT(c.request_count, 1000);
    CHECK_NEAR(c.benchmark_duration_s, 30.5, 0);
    CHECK_EQ_INT(c.warmup_request_count, 10);
    CHECK_NEAR(c.request_timeout_s, 5.5, 0);
    CHECK_EQ_INT(c.random_seed, 42);
    CHECK_EQ_INT(c.workers, 3);
    CHECK_EQ_INT(c.isl_mean, 200);
    CHECK_EQ_INT(c.isl_stddev, 20);
    CHECK_EQ_INT(c.num_prompts, 500);
    CHECK_EQ_INT(c.osl_mean, 128);
    CHECK_EQ_INT(c.osl_stddev, 8);
    CHECK(c.osl_deterministic);
    CHECK_EQ_STR(c.artifact_dir, strlen(c.artifact_dir), "out/run1");
    CHECK_EQ_STR(c.profile_export_file, strlen(c.profile_export_file), "my_run.json");
    CHECK_EQ_STR(c.profile_export_stem, strlen(c.profile_export_stem), "my_run");
    CHECK(c.verbose);
    CHECK(c.generate_plots);
    CHECK_NEAR(c.max_error_rate, 0.05, 0);
    CHECK_EQ_INT(c.n_slos, 1);
    CHECK_EQ_INT(c.progress, 0);

    /* the summary's input_config: valid JSON, secrets kept out */
    char *json = sg_config_to_json(&c);
    CHECK(json != NULL);
    if (json) {
        json_t *o = json_loads(json, 0, NULL);
        CHECK(o != NULL && json_is_object(o));
        CHECK(strstr(json, "sk-123") == NULL);
        CHECK(strstr(json, "Authorization: <redacted>") != NULL);
        CHECK(json_is_array(json_object_get(o, "model")));
        CHECK_NEAR(json_real_value(json_object_get(o, "request_rate")), 12.5, 0);
        CHECK_NEAR(json_number_value(json_object_get(json_object_get(o, "goodput"), "time_to_first_token")), 200, 0);
        json_decref(o);
        free(json);
    }
    char *name = sg_config_run_name(&c);
    CHECK_EQ_STR(name, strlen(name), "a_b_multi-openai-completions-request_rate12.5");
    free(name);
    sg_config_free(&c);

    /* duration alone: no default count */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--benchmark-duration", "10", NULL), 0);
    CHECK_EQ_INT(c.request_count, 0);
    CHECK_NEAR(c.benchmark_duration_s, 10, 0);
    CHECK_EQ_INT(c.concurrency, 1);
    CHECK(c.benchmark_grace_s < 0); /* no grace period by default: each request waited for up to its timeout */
    sg_config_free(&c);

    /* AIPerf's --benchmark-grace-period: seconds, 0, or inf (wait for every request) */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--benchmark-duration", "10", "--benchmark-grace-period", "2.5", NULL), 0);
    CHECK_NEAR(c.benchmark_grace_s, 2.5, 0);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--benchmark-duration", "10", "--benchmark-grace-period", "0", NULL), 0);
    CHECK_NEAR(c.benchmark_grace_s, 0, 0);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--benchmark-duration", "10", "--benchmark-grace-period", "inf", NULL), 0);
    CHECK(c.benchmark_grace_s < 0);
    sg_config_free(&c);

    /* -u twice: two URLs (AIPerf's multi-URL), the first's fields the run's; progress on */
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "a:1", "-u", "b:2", "--progress", NULL), 0);
    CHECK_EQ_STR(c.host_header, strlen(c.host_header), "a:1");
    CHECK_EQ_INT(c.n_urls, 2);
    CHECK_EQ_STR(c.urls[1].host_header, strlen(c.urls[1].host_header), "b:2");
    CHECK_EQ_INT(c.urls[1].port, 2);
    CHECK_EQ_INT(c.url_strategy, SG_URL_ROUND_ROBIN);
    CHECK_EQ_INT(c.progress, 1);
    sg_config_free(&c);
    CHECK_EQ_INT(
        parse(&c, "-m", "x", "-u", "http://a:1/v1", "-u", "http://b:2/v1/", "--url-strategy", "least_in_flight", NULL),
        0);
    CHECK_EQ_INT(c.url_strategy, SG_URL_LEAST_IN_FLIGHT);
    CHECK_EQ_STR(c.urls[1].host, strlen(c.urls[1].host), "b");
    sg_config_free(&c);
    /* several URLs work over HTTP/2, with triton's gRPC, over several ranks and with multi-turn sessions */
    static const char *const with[][5] = {
        {"--http2"}, {"--service-kind", "triton"}, {"--world-size", "2", "--rank", "0"}, {"--session-turns-mean", "3"}};
    for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) {
        CHECK_EQ_INT(
            parse(&c, "-m", "x", "-u", "a:1", "-u", "b:2", with[i][0], with[i][1], with[i][2], with[i][3], with[i][4]),
            0);
        CHECK_EQ_INT(c.n_urls, 2);
        sg_config_free(&c);
    }
    /* several URLs: one scheme, one base path, each server once, at most 8 */
    BAD("-m", "x", "-u", "http://a:1", "-u", "https://b:2");
    BAD("-m", "x", "-u", "http://a:1/x", "-u", "http://b:2/y");
    BAD("-m", "x", "-u", "a:1", "-u", "http://a:1/");
    BAD("-m", "x", "-u", "a:1", "-u", "b:2", "--url-strategy", "random");
    BAD("-m", "x", "-u", "a:1", "-u", "a:2", "-u", "a:3", "-u", "a:4", "-u", "a:5", "-u", "a:6", "-u", "a:7", "-u",
        "a:8", "-u", "a:9");
    BAD("-m", "x", "-u", "a:1", "-u", "b:0");

    /* extension-less export file: the stem is the name */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--profile-export-file", "run", NULL), 0);
    CHECK_EQ_STR(c.profile_export_stem, strlen(c.profile_export_stem), "run");
    sg_config_free(&c);
}

static void check_url(const char *url, const char *host, int port, const char *base, const char *hh)
{
    sg_config_t c;
    int rc = parse(&c, "-m", "x", "-u", url, NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "  url was %s\n", url);
        return;
    }
    CHECK_EQ_STR(c.host, strlen(c.host), host);
    CHECK_EQ_INT(c.port, port);
    CHECK_EQ_STR(c.base_path, strlen(c.base_path), base);
    CHECK_EQ_STR(c.host_header, strlen(c.host_header), hh);
    CHECK_EQ_STR(c.url, strlen(c.url), url);
    sg_config_free(&c);
}

static void test_urls(void)
{
    check_url("localhost:8000", "localhost", 8000, "", "localhost:8000");
    check_url("example.com", "example.com", 80, "", "example.com:80");
    check_url("127.0.0.1:1", "127.0.0.1", 1, "", "127.0.0.1:1");
    check_url("http://host", "host", 80, "", "host:80");
    check_url("HTTP://host:65535/", "host", 65535, "", "host:65535");
    check_url("http://my-server.local:8080/base", "my-server.local", 8080, "/base", "my-server.local:8080");
    check_url("http://h:8080/a/b//", "h", 8080, "/a/b", "h:8080");
    check_url("[::1]:8000", "::1", 8000, "", "[::1]:8000");
    check_url("http://[::1]", "::1", 80, "", "[::1]:80");
    check_url("http://[fe80::1%eth0]:81/p", "fe80::1%eth0", 81, "/p", "[fe80::1%eth0]:81");
    check_url("host:8000/prefix", "host", 8000, "/prefix", "host:8000");

    check_url("https://host:8443/base", "host", 8443, "/base", "host:8443");
    check_url("HTTPS://host", "host", 443, "", "host:443");
    {
        sg_config_t c;
        CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "https://h", NULL), 0);
        CHECK(c.tls);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h", NULL), 0);
        CHECK(!c.tls);
        sg_config_free(&c);
    }
    BAD("-m", "x", "-u", "ftp://host");
    BAD("-m", "x", "-u", "http://");
    BAD("-m", "x", "-u", "http://:8000");
    BAD("-m", "x", "-u", ":8000");
    BAD("-m", "x", "-u", "");
    BAD("-m", "x", "-u", "host:");
    BAD("-m", "x", "-u", "host:0");
    BAD("-m", "x", "-u", "host:65536");
    BAD("-m", "x", "-u", "host:99999999999999999999");
    BAD("-m", "x", "-u", "host:80a");
    BAD("-m", "x", "-u", "host:-1");
    BAD("-m", "x", "-u", "::1:8000");
    BAD("-m", "x", "-u", "[::1");
    BAD("-m", "x", "-u", "[::1]8000");
    BAD("-m", "x", "-u", "[nope]:80");
    BAD("-m", "x", "-u", "http://user:pw@host");
    BAD("-m", "x", "-u", "http://host/a?b=c");
    BAD("-m", "x", "-u", "http://ho st");
    BAD("-m", "x", "-u", "http://h!st");

    /* endpoint: with and without the leading slash, under a base path */
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:1/proxy/", "--endpoint", "/v1/x", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/proxy/v1/x");
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:1/proxy", "--endpoint", "v1/x", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/proxy/v1/x");
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "completions", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/v1/completions");
    sg_config_free(&c);
    BAD("-m", "x", "--endpoint", "/");
    BAD("-m", "x", "--endpoint", "v1/a b");
}

static void test_bad_values(void)
{
    BAD("--streaming"); /* no model */
    BAD("-m", "");
    BAD("-m");
    BAD("-m", "x", "--model-selection-strategy", "first");
    BAD("-m", "x", "--request-rate", "abc");
    BAD("-m", "x", "--request-rate", "0");
    BAD("-m", "x", "--request-rate", "-5");
    BAD("-m", "x", "--request-rate", "infinite");
    BAD("-m", "x", "--request-rate", "nan");
    BAD("-m", "x", "--request-rate", "5x");
    BAD("-m", "x", "--request-rate", "");
    BAD("-m", "x", "--request-rate", " 5");
    BAD("-m", "x", "--concurrency", "0");
    BAD("-m", "x", "--concurrency", "-1");
    BAD("-m", "x", "--concurrency", "1.5");
    BAD("-m", "x", "--concurrency", "");
    BAD("-m", "x", "--concurrency", "99999999999999999999999");
    BAD("-m", "x", "--concurrency", "4", "--request-rate", "10");
    BAD("-m", "x", "--max-concurrency", "4");
    BAD("-m", "x", "--concurrency", "4", "--max-concurrency", "4");
    BAD("-m", "x", "--request-rate", "10", "--max-concurrency", "0");
    BAD("-m", "x", "--request-distribution", "poisson"); /* closed loop has no arrivals */
    BAD("-m", "x", "--request-rate", "10", "--request-distribution", "uniform");
    BAD("-m", "x", "--request-count", "0");
    BAD("-m", "x", "--request-count", "-3");
    BAD("-m", "x", "--benchmark-duration", "0");
    BAD("-m", "x", "--benchmark-duration", "soon");
    BAD("-m", "x", "--benchmark-grace-period", "5"); /* it bounds the drain after a duration: needs one */
    BAD("-m", "x", "--benchmark-duration", "5", "--benchmark-grace-period", "-1");
    BAD("-m", "x", "--benchmark-duration", "5", "--benchmark-grace-period", "later");
    BAD("-m", "x", "--warmup-request-count", "-1");
    BAD("-m", "x", "--request-timeout", "0");
    BAD("-m", "x", "--random-seed", "-1");
    BAD("-m", "x", "--random-seed", "seed");
    BAD("-m", "x", "--workers", "0");
    BAD("-m", "x", "--workers", "100000");
    BAD("-m", "x", "--synthetic-input-tokens-mean", "0");
    BAD("-m", "x", "--synthetic-input-tokens-mean", "12.5");
    BAD("-m", "x", "--synthetic-input-tokens-stddev", "-1");
    BAD("-m", "x", "--num-prompts", "0");
    BAD("-m", "x", "--output-tokens-mean", "0");
    BAD("-m", "x", "--output-tokens-mean", "-2");
    BAD("-m", "x", "--output-tokens-mean", "many");
    BAD("-m", "x", "--output-tokens-stddev", "-1");
    BAD("-m", "x", "--max-error-rate", "1.5");
    BAD("-m", "x", "--max-error-rate", "-0.1");
    BAD("-m", "x", "--service-kind", "grpc");
    BAD("-m", "x", "--backend", "vllm"); /* triton only */
    BAD("-m", "x", "--service-kind", "triton", "--endpoint-type", "chat");
    BAD("-m", "x", "--service-kind", "triton", "--endpoint", "v1/x");
    BAD("-m", "x", "--service-kind", "triton", "-u", "http://h:8001/base");
    BAD("-m", "x", "--service-kind", "triton", "--extra-inputs", "stop:[1,2]");
    BAD("-m", "x", "--service-kind", "triton", "--extra-inputs", "x:null");
    BAD("-m", "x", "--service-kind", "triton", "--backend", "onnx");
    BAD("-m", "x", "--backend", "sglang");
    BAD("-m", "x", "--endpoint-type", "images");
    {
        sg_config_t c;
        CHECK_EQ_INT(parse(&c, "-m", "x", "--tokenizer", "org/name", NULL), 0);
        CHECK_EQ_STR(c.tokenizer, strlen(c.tokenizer), "org/name");
        sg_config_free(&c);
    }
    BAD("-m", "x", "--tokenizer", "");
    BAD("-m", "x", "--input-file", "");
    BAD("-m", "x", "--input-format", "csv");
    BAD("-m", "x", "--input-format", "sharegpt"); /* without --input-file */
    BAD("-m", "x", "--input-file", "p.jsonl", "--synthetic-input-tokens-mean", "10");
    BAD("-m", "x", "--input-file", "p.jsonl", "--num-prompts", "10");
    BAD("-m", "x", "--fixed-schedule");                                         /* no trace */
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule-speedup", "2"); /* without --fixed-schedule */
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--fixed-schedule-speedup", "0");
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--request-rate", "5");
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--concurrency", "5");
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--request-count", "5");
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--benchmark-duration", "5");
    BAD("-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--input-format", "sharegpt");
    BAD("-m", "x", "--prefix-prompt-length", "10"); /* without --num-prefix-prompts */
    BAD("-m", "x", "--input-file", "p.jsonl", "--num-prefix-prompts", "2");
    BAD("-m", "x", "--isl-block-size", "16"); /* without a trace */
    {
        sg_config_t c;
        CHECK_EQ_INT(parse(&c, "-m", "x", "--input-file", "t.jsonl", "--fixed-schedule", "--fixed-schedule-speedup",
                           "2.5", "--max-concurrency", "4", NULL),
                     0);
        CHECK(c.fixed_schedule && c.fixed_schedule_speedup == 2.5 && c.request_rate == 0 && c.concurrency == 0);
        CHECK_EQ_INT(c.request_count, 0); /* the number of entries, once the file is read */
        CHECK_EQ_INT(c.block_size, 512);
        CHECK(strstr(c.artifact_dir, "fixed_schedule") != NULL);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "--num-prefix-prompts", "3", "--prefix-prompt-length", "64", NULL), 0);
        CHECK(c.num_prefix == 3 && c.prefix_len == 64);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "--input-file", "s.json", "--input-format", "sharegpt", NULL), 0);
        CHECK(c.input_format == SG_INPUT_SHAREGPT && strcmp(c.input_file, "s.json") == 0);
        sg_config_free(&c);
    }
    BAD("-m", "x", "--artifact-dir", "");
    BAD("-m", "x", "--profile-export-file", "dir/file.json");
    BAD("-m", "x", "--profile-export-file", "");
    /* getopt-level mistakes */
    BAD("-m", "x", "--no-such-flag");
    BAD("-m", "x", "-z");
    BAD("-m", "x", "--streaming=yes");
    BAD("-m", "x", "--concurrency");
    BAD("-m", "x", "stray");
    /* stability windows (perf_analyzer's and GenAI-Perf's -p, -s; perf_analyzer's --max-trials) */
    {
        sg_config_t c;
        CHECK_EQ_INT(parse(&c, "-m", "x", "-p", "5000", NULL), 0);
        CHECK(c.measurement_interval_ms == 5000 && c.stability_pct == 10 && c.max_trials == 10);
        CHECK(c.request_count == 0 && c.benchmark_duration_s == 50); /* the windows bound the point */
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "-p500", "-s", "5", "--max-trials", "4", "--concurrency", "2,4", NULL), 0);
        CHECK(c.measurement_interval_ms == 500 && c.stability_pct == 5 && c.max_trials == 4 && c.n_sweep_values == 2);
        CHECK(c.benchmark_duration_s == 2);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "--measurement-interval=300", "--stability-percentage=12.5", NULL), 0);
        CHECK(c.measurement_interval_ms == 300 && c.stability_pct == 12.5);
        sg_config_free(&c);
    }
    BAD("-m", "x", "--stability-percentage=10"); /* without windows */
    BAD("-m", "x", "-s", "10");                  /* without windows */
    BAD("-m", "x", "--max-trials", "5");         /* without windows */
    BAD("-m", "x", "-p", "5");                   /* under 10 ms */
    BAD("-m", "x", "-p", "abc");
    BAD("-m", "x", "-p", "500", "-s", "0");
    BAD("-m", "x", "-p", "500", "--max-trials", "2"); /* three are compared */
    BAD("-m", "x", "-p", "500", "--max-trials", "1001");
    BAD("-m", "x", "-p", "500", "--request-count", "10"); /* the windows bound the point */
    BAD("-m", "x", "-p", "500", "--benchmark-duration", "10");
    BAD("-m", "x", "-p", "500", "--search", "max-concurrency", "--slo", "time_to_first_token:p99<500");
    BAD("-m", "x", "-p", "500", "--conversation-turn-mean", "3");
    BAD("-m", "x", "-p");
    /* --gpu-telemetry (AIPerf's): DCGM exporter URLs join the scrape list */
    {
        sg_config_t c;
        CHECK_EQ_INT(parse(&c, "-m", "x", "--gpu-telemetry", NULL), 0);
        CHECK(c.gpu_telemetry && c.n_server_metrics_urls == 1 &&
              strcmp(c.server_metrics_urls[0], "http://localhost:9400/metrics") == 0);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "--server-metrics-url", "http://node1:9400/metrics", "--gpu-telemetry",
                           "node1:9400", "http://node2:9401/dcgm", "--streaming", NULL),
                     0);
        CHECK(c.streaming && c.n_server_metrics_urls == 2); /* a URL already scraped is scraped once */
        CHECK(strcmp(c.server_metrics_urls[0], "http://node1:9400/metrics") == 0);
        CHECK(strcmp(c.server_metrics_urls[1], "http://node2:9401/dcgm") == 0);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", "--gpu-telemetry=127.0.0.1:9400", "--server-metrics-interval", "0.5", NULL),
                     0);
        CHECK(c.gpu_telemetry && c.n_server_metrics_urls == 1 && c.server_metrics_interval_s == 0.5);
        sg_config_free(&c);
        CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
        CHECK(!c.gpu_telemetry && c.n_server_metrics_urls == 0);
        sg_config_free(&c);
    }
    BAD("-m", "x", "--gpu-telemetry", "pynvml");
    BAD("-m", "x", "--gpu-telemetry", "https://node1:9400");
    BAD("-m", "x", "--gpu-telemetry", "node1:99999");
    /* peers' flags we do not do */
    BAD("-m", "x", "--input-dataset", "openorca");
    BAD("-m", "x", "--generate-plots=yes");
    /* server metrics */
    BAD("-m", "x", "--server-metrics-url", "notaurl");
    BAD("-m", "x", "--server-metrics-url", "https://127.0.0.1:8000/metrics");
    BAD("-m", "x", "--server-metrics-url", "http://127.0.0.1:0/metrics");
    BAD("-m", "x", "--server-metrics-url", "http:///metrics");
    BAD("-m", "x", "--server-metrics-url", "http://h/a b");
    BAD("-m", "x", "--server-metrics-url", "http://h/m", "--server-metrics-interval", "0.05");
    BAD("-m", "x", "--server-metrics-interval", "2");
    BAD("-m", "x", "--batch-size", "4"); /* chat takes one prompt per request */
    BAD("-m", "x", "-b", "4");
    BAD("-m", "x", "--", "--concurrency-range", "1:4");
    BAD("-m", "x", "--", "-v");
    /* headers */
    BAD("-m", "x", "-H", "NoColon");
    BAD("-m", "x", "-H", ": value");
    BAD("-m", "x", "-H", "Bad Name: x");
    BAD("-m", "x", "-H", "X-A: a\r\nInjected: 1");
    BAD("-m", "x", "-H", "X-A: a\nb");
    BAD("-m", "x", "-H", "Content-Length: 5");
    BAD("-m", "x", "-H", "transfer-encoding: chunked");
    BAD("-m", "x", "-H", "Authorization: Bearer a", "--api-key", "b");
    BAD("-m", "x", "--api-key", "");
    BAD("-m", "x", "--api-key", "a\r\nb");
    /* extra inputs */
    BAD("-m", "x", "--extra-inputs", "nocolon");
    BAD("-m", "x", "--extra-inputs", ":5");
    BAD("-m", "x", "--extra-inputs", "{\"a\":");
    BAD("-m", "x", "--extra-inputs", "{\"a\":1} trailing");
    /* goodput */
    BAD("-m", "x", "--goodput", "");
    BAD("-m", "x", "--goodput", "fast:1");
    BAD("-m", "x", "--goodput", "time_to_first_token");
    BAD("-m", "x", "--goodput", "time_to_first_token:abc");
    BAD("-m", "x", "--goodput", "time_to_first_token:-1");
    BAD("-m", "x", "--goodput", "time_to_first_token:0");
    BAD("-m", "x", "--goodput", "time_to_first_token:1 ttft:2");
    BAD("-m", "x", "--goodput", "output_sequence_length:100");
    BAD("-m", "x", "--goodput", "ttft:100", "e2el:x");
    BAD("-m", "x", "ttft:100"); /* no --goodput to continue */

    /* a bare "--" with nothing after it is harmless */
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "--", NULL), 0);
    sg_config_free(&c);
    /* "--" as a header value is a value, not the passthrough marker... which then fails as a header */
    BAD("-m", "x", "-H", "--", "-v");
}

static void test_help_version(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "--version", NULL), 1);
    CHECK(c.show_version);
    CHECK(c.models == NULL);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "--help", NULL), 1);
    CHECK(!c.show_version);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-h", NULL), 1);
    sg_config_free(&c);

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    CHECK(mem != NULL);
    if (!mem)
        return;
    sg_config_usage(mem);
    fclose(mem);
    CHECK(strstr(text, "and ISL is the word count") != NULL);
    CHECK(strstr(text, "exactly the asked number of tokens") != NULL);
    CHECK(strstr(text, "chat template") != NULL);
    CHECK(strstr(text, "usage.prompt_tokens") != NULL);
    CHECK(strstr(text, "intended start (coordinated omission") != NULL);
    CHECK(strstr(text, "_from_send") != NULL);
    CHECK(strstr(text, "default: 100 when --benchmark-duration") != NULL);
    CHECK(strstr(text, "Endpoint options") && strstr(text, "Load options") && strstr(text, "Input options") &&
          strstr(text, "Output options"));
    /* every line fits a terminal */
    size_t line_len = 0, longest = 0;
    for (const char *p = text; *p; p++) {
        line_len = *p == '\n' ? 0 : line_len + 1;
        if (line_len > longest)
            longest = line_len;
    }
    CHECK(longest <= 100);
    free(text);
}

static void test_extra_inputs(void)
{
    sg_config_t c;
    int rc = parse(&c, "-m", "x", "--extra-inputs", "max_tokens:256", "--extra-inputs", "temperature:0.5",
                   "--extra-inputs", "ignore_eos:true", "--extra-inputs", "echo:False", "--extra-inputs",
                   "stop:\"\\n\"", "--extra-inputs", "name:hello world", "--extra-inputs", "nothing:null",
                   "--extra-inputs", "arr:[1,\"two\"]", "--extra-inputs", "obj:{\"a\":{\"b\":2}}", "--extra-inputs",
                   "empty:", "--extra-inputs", "url:http://x:1", "--extra-inputs", "big:123456789012345678901234567890",
                   "--extra-inputs", "{\"temperature\": 0.7, \"top_p\": 0.9}", "--extra-inputs", "top_p:1", NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    json_t *o = json_loads(c.extra_inputs_json, 0, NULL);
    CHECK(o && json_is_object(o));
    if (o) {
        json_t *v;
        v = json_object_get(o, "max_tokens");
        CHECK(json_is_integer(v) && json_integer_value(v) == 256);
        v = json_object_get(o, "temperature"); /* the JSON object came later: it wins */
        CHECK(json_is_real(v) && json_real_value(v) == 0.7);
        v = json_object_get(o, "top_p"); /* and a later name:value wins over it */
        CHECK(json_is_integer(v) && json_integer_value(v) == 1);
        CHECK(json_is_true(json_object_get(o, "ignore_eos")));
        CHECK(json_is_false(json_object_get(o, "echo")));
        v = json_object_get(o, "stop");
        CHECK(json_is_string(v) && strcmp(json_string_value(v), "\n") == 0);
        v = json_object_get(o, "name");
        CHECK(json_is_string(v) && strcmp(json_string_value(v), "hello world") == 0);
        CHECK(json_is_null(json_object_get(o, "nothing")));
        v = json_object_get(o, "arr");
        CHECK(json_is_array(v) && json_array_size(v) == 2);
        v = json_object_get(o, "obj");
        CHECK(json_is_object(v) && json_integer_value(json_object_get(json_object_get(v, "a"), "b")) == 2);
        v = json_object_get(o, "empty");
        CHECK(json_is_string(v) && strcmp(json_string_value(v), "") == 0);
        v = json_object_get(o, "url");
        CHECK(json_is_string(v) && strcmp(json_string_value(v), "http://x:1") == 0);
        CHECK(json_is_real(json_object_get(o, "big")));
        json_decref(o);
    }
    sg_config_free(&c);
}

static void test_goodput(void)
{
    sg_config_t c;
    int rc = parse(&c, "-m", "x", "--goodput",
                   "time_to_first_token:200 inter_token_latency:20,request_latency:1000  "
                   "output_token_throughput_per_user:30",
                   NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        CHECK_EQ_INT(c.n_slos, 4);
        CHECK_EQ_INT(c.slos[0].metric, SG_M_TTFT);
        CHECK_NEAR(c.slos[0].threshold, 200, 0);
        CHECK_EQ_INT(c.slos[1].metric, SG_M_ITL);
        CHECK_NEAR(c.slos[1].threshold, 20, 0);
        CHECK_EQ_INT(c.slos[2].metric, SG_M_LATENCY);
        CHECK_NEAR(c.slos[2].threshold, 1000, 0);
        CHECK_EQ_INT(c.slos[3].metric, SG_M_TOKENS_PER_USER);
        CHECK_NEAR(c.slos[3].threshold, 30, 0);
        sg_config_free(&c);
    }
    /* vLLM's names, unquoted as vLLM allows */
    rc = parse(&c, "-m", "x", "--goodput", "ttft:150.5", "tpot:10", "e2el:900", "--streaming", NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        CHECK_EQ_INT(c.n_slos, 3);
        CHECK_EQ_INT(c.slos[0].metric, SG_M_TTFT);
        CHECK_NEAR(c.slos[0].threshold, 150.5, 0);
        CHECK_EQ_INT(c.slos[1].metric, SG_M_ITL);
        CHECK_EQ_INT(c.slos[2].metric, SG_M_LATENCY);
        CHECK(c.streaming);
        sg_config_free(&c);
    }
    rc = parse(&c, "-m", "x", "--goodput", "time_to_first_token_from_send:50", NULL);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        CHECK_EQ_INT(c.slos[0].metric, SG_M_TTFT_FROM_SEND);
        sg_config_free(&c);
    }
}

static void check_name(const char *want, ...)
{
    sg_config_t c;
    va_list ap;
    va_start(ap, want);
    int rc = parse_v(&c, ap);
    va_end(ap);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    char *name = sg_config_run_name(&c);
    CHECK(name != NULL);
    if (name)
        CHECK_EQ_STR(name, strlen(name), want);
    /* the default artifact directory is that name under artifacts/ */
    char dir[512];
    snprintf(dir, sizeof dir, "artifacts/%s", want);
    CHECK_EQ_STR(c.artifact_dir, strlen(c.artifact_dir), dir);
    free(name);
    sg_config_free(&c);
}

static void test_triton(void)
{
    sg_config_t c;
    /* GenAI-Perf's defaults for triton: localhost:8001, tensorrtllm; gRPC runs over HTTP/2 */
    CHECK_EQ_INT(parse(&c, "-m", "gpt2", "--service-kind", "triton", "--streaming", NULL), 0);
    CHECK(c.triton);
    CHECK(c.http2);
    CHECK_EQ_INT(c.backend, SG_KSERVE_TENSORRTLLM);
    CHECK_EQ_INT(c.port, 8001);
    CHECK_EQ_STR(c.host, strlen(c.host), "localhost");
    char *json = sg_config_to_json(&c);
    CHECK(json && strstr(json, "\"service_kind\":\"triton\"") && strstr(json, "\"backend\":\"tensorrtllm\""));
    free(json);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "gpt2", "--service-kind", "triton", "--backend", "vllm", "-u", "10.0.0.1:9001",
                       "--extra-inputs", "temperature:0.5", "--extra-inputs", "top_k:4", "--extra-inputs",
                       "ignore_eos:true", NULL),
                 0);
    CHECK_EQ_INT(c.backend, SG_KSERVE_VLLM);
    CHECK_EQ_INT(c.port, 9001);
    sg_config_free(&c);
    /* --endpoint-type kserve is GenAI-Perf's other spelling */
    CHECK_EQ_INT(parse(&c, "-m", "gpt2", "--endpoint-type", "kserve", NULL), 0);
    CHECK(c.triton);
    sg_config_free(&c);
}

static void test_run_names(void)
{
    check_name("gpt2-triton-tensorrtllm-concurrency1", "-m", "gpt2", "--service-kind", "triton", NULL);
    check_name("gpt2-triton-vllm-concurrency4", "-m", "gpt2", "--service-kind", "triton", "--backend", "vllm",
               "--concurrency", "4", NULL);
    check_name("meta-llama_Llama-3.1-8B-Instruct-openai-chat-concurrency1", "-m", "meta-llama/Llama-3.1-8B-Instruct",
               NULL);
    check_name("gpt2-openai-completions-concurrency8", "-m", "gpt2", "--endpoint-type", "completions", "--concurrency",
               "8", NULL);
    check_name("m-openai-chat-request_rate500", "-m", "m", "--request-rate", "500", NULL);
    check_name("m-openai-chat-request_rate12.5", "-m", "m", "--request-rate", "12.5", NULL);
    check_name("m-openai-chat-request_rate0.1", "-m", "m", "--request-rate", "0.1", NULL);
    check_name("a_b_multi-openai-chat-concurrency2", "-m", "a/b", "-m", "c/d", "--concurrency", "2", NULL);
}

/* Only full names and declared aliases: getopt_long's prefix matching took --isl for --isl-block-size. */
static void test_no_abbreviations(void)
{
    BAD("-m", "x", "--stream");
    BAD("-m", "x", "--isl-block", "4");
    BAD("-m", "x", "--request-c=5");
    BAD("-m", "x", "--concurrency-ra=4");
    BAD("-m", "x", "--header", "A: b", "--verb");
    /* what looks like a flag but is an option's value is not one */
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "--stream", "-H", "X-A: --isl", NULL), 0);
    CHECK_EQ_STR(c.models[0], strlen(c.models[0]), "--stream");
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--extra-inputs", "--isl", "--streaming", NULL), SG_EINVAL); /* not name:value */

    const struct option longs[] = {{"streaming", no_argument, NULL, 1},
                                   {"isl", required_argument, NULL, 2},
                                   {"isl-stddev", required_argument, NULL, 3},
                                   {"isl-block-size", required_argument, NULL, 4},
                                   {NULL, 0, NULL, 0}};
    const char *m[4];
    CHECK_EQ_INT(sg_opts_suggest("stream", longs, m, 4), 1);
    CHECK_EQ_STR(m[0], strlen(m[0]), "streaming");
    CHECK_EQ_INT(sg_opts_suggest("isl=5", longs, m, 4), 3);
    CHECK_EQ_INT(sg_opts_suggest("isl-mean", longs, m, 4), 3); /* same family: isl-... */
    CHECK_EQ_INT(sg_opts_suggest("zzz", longs, m, 4), 0);
    char *argv1[] = {"p", "-m", "x", "--isl", "4", "--isl-s", "1", NULL};
    CHECK_EQ_INT(sg_opts_check("t", "t --help", 7, argv1, "m:", longs), -1);
    char *argv2[] = {"p", "-mx", "--isl=4", "--", "--whatever", NULL};
    CHECK_EQ_INT(sg_opts_check("t", "t --help", 5, argv2, "m:", longs), 0);
}

/* AIPerf's and vLLM's names where they mean what GenAI-Perf's do. */
static void test_peer_aliases(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "--isl", "128", "--isl-stddev", "4", "--osl", "64", "--osl-stddev", "2",
                       "--num-requests", "7", NULL),
                 0);
    CHECK_EQ_INT(c.isl_mean, 128);
    CHECK_EQ_INT(c.isl_stddev, 4);
    CHECK_EQ_INT(c.osl_mean, 64);
    CHECK_EQ_INT(c.osl_stddev, 2);
    CHECK_EQ_INT(c.request_count, 7);
    CHECK_EQ_INT(c.block_size, 512); /* --isl is not --isl-block-size */
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--prompt-input-tokens-mean", "9", "--prompt-output-tokens-mean", "3", NULL), 0);
    CHECK_EQ_INT(c.isl_mean, 9);
    CHECK_EQ_INT(c.osl_mean, 3);
    sg_config_free(&c);
    BAD("-m", "x", "--isl", "0");
    BAD("-m", "x", "--isl", "128", "--input-file", "/dev/null");

    /* vLLM's --ignore-eos: in every body, and not against an --extra-inputs that says otherwise */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--ignore-eos", "--extra-inputs", "temperature:0", NULL), 0);
    json_t *e = json_loads(c.extra_inputs_json, 0, NULL);
    CHECK(e && json_is_true(json_object_get(e, "ignore_eos")) && json_object_get(e, "temperature"));
    json_decref(e);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--ignore-eos", "--extra-inputs", "ignore_eos:true", NULL), 0);
    sg_config_free(&c);
    BAD("-m", "x", "--ignore-eos", "--extra-inputs", "ignore_eos:false");
    BAD("-m", "x", "--ignore-eos", "--service-kind", "triton");

    /* vLLM's --request-rate inf: every request due at the start; a count bounds it */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "inf", "--request-count", "20", NULL), 0);
    CHECK(isinf(c.request_rate) && c.request_rate > 0);
    CHECK_EQ_INT(c.concurrency, 0);
    char *j = sg_config_to_json(&c);
    CHECK(j && strstr(j, "\"request_rate\":\"inf\"") != NULL);
    free(j);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "INF", "--max-concurrency", "4", NULL), 0);
    CHECK(isinf(c.request_rate));
    CHECK_EQ_INT(c.request_count, 100);
    sg_config_free(&c);
    BAD("-m", "x", "--request-rate", "inf", "--benchmark-duration", "5");
    BAD("-m", "x", "--request-rate", "inf", "--request-distribution", "constant");
    BAD("-m", "x", "--request-rate", "-inf");
    BAD("-m", "x", "--request-rate", "nan");
}

/* The OpenAI SDK's base URL ends in /v1: the API's paths follow it, v1 is not repeated. */
static void test_v1_base(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:8000/v1", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/v1/chat/completions");
    CHECK(!c.endpoint_given);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:8000/v1/", "--endpoint-type", "completions", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/v1/completions");
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:8000/openai/v1", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/openai/v1/chat/completions");
    sg_config_free(&c);
    /* an --endpoint is the user's, kept as given */
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:8000/v1", "--endpoint", "v1/chat/completions", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/v1/v1/chat/completions");
    CHECK(c.endpoint_given);
    sg_config_free(&c);
    /* a base that only ends in ...v1 is not /v1 */
    CHECK_EQ_INT(parse(&c, "-m", "x", "-u", "http://h:8000/apiv1", NULL), 0);
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/apiv1/v1/chat/completions");
    sg_config_free(&c);
}

/* Sweeps (lists and ranges), --slo and --search: the points they make and what they refuse. */
static void test_points(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "--concurrency", "1,4,16,64", NULL), 0);
    CHECK_EQ_INT(c.sweep, SG_SWEEP_CONCURRENCY);
    CHECK_EQ_INT(c.n_sweep_values, 4);
    CHECK(c.sweep_values[0] == 1 && c.sweep_values[3] == 64 && c.concurrency == 1 && c.request_rate == 0);
    CHECK(c.cooldown_s == 1);
    char *name = sg_config_run_name(&c);
    CHECK(name && strstr(name, "-concurrency_sweep"));
    free(name);
    sg_config_free(&c);

    CHECK_EQ_INT(
        parse(&c, "-m", "x", "--request-rate-range", "10:40:10", "--parameter-sweep-cooldown-seconds", "0", NULL), 0);
    CHECK_EQ_INT(c.sweep, SG_SWEEP_RATE);
    CHECK_EQ_INT(c.n_sweep_values, 4);
    CHECK(c.sweep_values[1] == 20 && c.sweep_values[3] == 40 && c.request_rate == 10 && c.cooldown_s == 0);
    sg_config_free(&c);
    /* a fractional step lands on END despite rounding; STEP defaults to 1 */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate-range", "0.1:0.3:0.1", NULL), 0);
    CHECK(c.n_sweep_values == 3 && fabs(c.sweep_values[2] - 0.3) < 1e-12);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--concurrency-range", "2:5", NULL), 0);
    CHECK(c.n_sweep_values == 4 && c.sweep_values[0] == 2 && c.sweep_values[3] == 5);
    sg_config_free(&c);

    BAD("-m", "x", "--concurrency", "1,,4");
    BAD("-m", "x", "--concurrency", "4,8,4");
    BAD("-m", "x", "--concurrency", "1,0");
    BAD("-m", "x", "--concurrency", "4,");
    BAD("-m", "x", "--request-rate", "1,inf");
    BAD("-m", "x", "--request-rate", "1,-2");
    BAD("-m", "x", "--concurrency-range", "8:4");
    BAD("-m", "x", "--concurrency-range", "1:4:0");
    BAD("-m", "x", "--concurrency-range", "1:2:3:4");
    BAD("-m", "x", "--request-rate-range", "1:1000000:0.5");
    BAD("-m", "x", "--concurrency", "1,2", "--request-rate", "4");
    BAD("-m", "x", "--concurrency", "1,2", "--concurrency-range", "1:4");
    BAD("-m", "x", "--parameter-sweep-cooldown-seconds", "2");
    BAD("-m", "x", "--concurrency", "1,2", "--input-file", "/dev/null", "--fixed-schedule");

    /* gamma arrivals: --burstiness (vLLM) or --arrival-smoothness (AIPerf) imply them */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "10", "--burstiness", "0.5", NULL), 0);
    CHECK(c.distribution == SG_DIST_GAMMA && c.burstiness == 0.5);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "10", "--request-distribution", "gamma", NULL), 0);
    CHECK(c.distribution == SG_DIST_GAMMA && c.burstiness == 1);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "10", "--arrival-smoothness", "4", NULL), 0);
    CHECK(c.distribution == SG_DIST_GAMMA && c.burstiness == 4);
    sg_config_free(&c);
    BAD("-m", "x", "--request-rate", "10", "--burstiness", "0");
    BAD("-m", "x", "--request-rate", "10", "--burstiness", "-1");
    BAD("-m", "x", "--request-rate", "10", "--request-distribution", "constant", "--burstiness", "2");
    BAD("-m", "x", "--concurrency", "4", "--burstiness", "2");
    BAD("-m", "x", "--request-rate", "10", "--request-distribution", "weibull");
    BAD("-m", "x", "--request-rate", "10", "--burstiness", "abc");
    BAD("-m", "x", "--request-rate", "10", "--burstiness", "nan");
    BAD("-m", "x", "--request-rate", "10", "--arrival-smoothness", "0");
    BAD("-m", "x", "--request-rate", "10", "--request-distribution", "poisson", "--arrival-smoothness", "2");
    BAD("-m", "x", "--request-rate", "inf", "--burstiness", "2");

    /* --slice-duration S: seconds, above 0 */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--slice-duration", "0.5", NULL), 0);
    CHECK(c.slice_duration_s == 0.5);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    CHECK(c.slice_duration_s == 0);
    sg_config_free(&c);
    BAD("-m", "x", "--slice-duration", "0");
    BAD("-m", "x", "--slice-duration", "-1");
    BAD("-m", "x", "--slice-duration", "abc");
    BAD("-m", "x", "--slice-duration", "1s");
    BAD("-m", "x", "--slice-duration", "inf");
    BAD("-m", "x", "--slice-duration", "");
    BAD("-m", "x", "--slice-duration");

    /* --slo */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--slo", "ttft:p99 < 500", "--slo", "error_rate<=0.01", "--slo",
                       "output_token_throughput_per_user:p10>20", NULL),
                 0);
    CHECK_EQ_INT(c.n_slo_checks, 3);
    CHECK_EQ_STR(c.slo_checks[0].text, strlen(c.slo_checks[0].text), "time_to_first_token:p99<500");
    CHECK(c.slo_checks[0].kind == SG_SLO_DIST && c.slo_checks[0].stat == SG_SLO_STAT_PCT && c.slo_checks[0].pct == 99);
    CHECK(c.slo_checks[1].kind == SG_SLO_ERROR_RATE && c.slo_checks[1].op == SG_SLO_OP_LE);
    double share = 0;
    CHECK(sg_slo_per_request_bound(&c.slo_checks[0], &share) && fabs(share - 0.01) < 1e-12);
    CHECK(sg_slo_per_request_bound(&c.slo_checks[2], &share) && fabs(share - 0.1) < 1e-12);
    CHECK(!sg_slo_per_request_bound(&c.slo_checks[1], &share));
    sg_config_free(&c);
    BAD("-m", "x", "--slo", "ttft<500");
    BAD("-m", "x", "--slo", "ttft:p99=500");
    BAD("-m", "x", "--slo", "ttft:p100<500");
    BAD("-m", "x", "--slo", "ttft:q99<500");
    BAD("-m", "x", "--slo", "ttft:p99<fast");
    BAD("-m", "x", "--slo", "isl:p99<5");
    BAD("-m", "x", "--slo", "error_rate<2");
    BAD("-m", "x", "--slo", "ttft:p99<5", "--slo", "time_to_first_token:p99<5");

    /* --search */
    CHECK_EQ_INT(
        parse(&c, "-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<500", "--search-range", "5:200", NULL),
        0);
    CHECK(c.search == SG_SEARCH_MAX_RATE && c.search_lo == 5 && c.search_hi == 200 && c.request_rate == 5);
    CHECK(c.benchmark_duration_s == 10 && c.request_count == 0 && c.search_precision == 0.05 && c.search_trials == 1);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--search", "max-concurrency", "--slo", "e2el:p90<900", "--request-count", "50",
                       "--search-trials", "3", "--search-precision", "0.1", NULL),
                 0);
    CHECK(c.search == SG_SEARCH_MAX_CONCURRENCY && c.concurrency == 1 && c.request_count == 50 &&
          c.benchmark_duration_s == 0 && c.search_trials == 3 && c.search_precision == 0.1);
    sg_config_free(&c);
    BAD("-m", "x", "--search", "max-request-rate");
    BAD("-m", "x", "--search", "fastest", "--slo", "ttft:p99<5");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--request-rate", "4");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--concurrency", "1,2");
    BAD("-m", "x", "--search", "max-concurrency", "--slo", "ttft:p99<5", "--search-range", "1.5:8");
    BAD("-m", "x", "--search", "max-concurrency", "--slo", "ttft:p99<5", "--max-concurrency", "8");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--search-range", "8:4");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--search-range", "0:4");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--search-precision", "0");
    BAD("-m", "x", "--search", "max-request-rate", "--slo", "ttft:p99<5", "--search-trials", "0");
    BAD("-m", "x", "--search-range", "1:8");
    BAD("-m", "x", "--search-trials", "2");
}

static void test_server_metrics_flags(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    CHECK(c.n_server_metrics_urls == 0 && c.server_metrics_interval_s == 1);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--server-metrics-url", "http://127.0.0.1:8000/metrics", "--server-metrics-url",
                       "http://[::1]:9100/metrics", "--server-metrics-interval", "0.5", NULL),
                 0);
    CHECK_EQ_INT((int)c.n_server_metrics_urls, 2);
    CHECK(strcmp(c.server_metrics_urls[1], "http://[::1]:9100/metrics") == 0);
    CHECK(c.server_metrics_interval_s == 0.5);
    sg_config_free(&c);
}

/* --endpoint-type: every API's name and default path, the flags that apply to each, the Messages API's headers. */
static void test_sessions(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    CHECK(!c.sessions && c.conversation_num == 100 && c.turn_mean == 1 && c.turn_delay_ratio == 1);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--conversation-turn-mean", "3", "--conversation-turn-stddev", "1",
                       "--num-sessions", "7", "--session-turn-delay-mean", "250", "--session-turn-delay-stddev", "5",
                       "--session-delay-ratio", "0.5", NULL),
                 0);
    CHECK(c.sessions && c.turn_mean == 3 && c.turn_stddev == 1 && c.conversation_num == 7);
    CHECK(c.turn_delay_mean_ms == 250 && c.turn_delay_stddev_ms == 5 && c.turn_delay_ratio == 0.5);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--input-file", "f.jsonl", "--custom-dataset-type", "multi_turn", NULL), 0);
    CHECK(c.sessions && c.input_format == SG_INPUT_MULTI_TURN);
    sg_config_free(&c);
    bad(__LINE__, "-m", "x", "--conversation-turn-mean", "0.5", NULL);
    bad(__LINE__, "-m", "x", "--conversation-turn-delay-mean", "-1", "--conversation-turn-mean", "2", NULL);
    bad(__LINE__, "-m", "x", "--conversation-turn-delay-mean", "5", NULL); /* no sessions to shape */
    bad(__LINE__, "-m", "x", "--conversation-turn-mean", "2", "--endpoint-type", "embeddings", NULL);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--conversation-turn-mean", "2", "--http2", NULL), 0); /* turns as streams */
    CHECK(c.sessions && c.http2);
    sg_config_free(&c);
    bad(__LINE__, "-m", "x", "--conversation-turn-mean", "2", "--service-kind", "triton", NULL);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--conversation-turn-mean", "2", "--concurrency-range", "1:4", NULL), 0);
    sg_config_free(&c); /* each load point runs sessions of its own */
    bad(__LINE__, "-m", "x", "--conversation-turn-mean", "2", "--input-file", "f.jsonl", NULL);
    /* a multi_turn file replayed at its timestamps; synthetic sessions have none */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--input-file", "f.jsonl", "--custom-dataset-type", "multi_turn",
                       "--fixed-schedule", NULL),
                 0);
    CHECK(c.sessions && c.fixed_schedule);
    sg_config_free(&c);
    bad(__LINE__, "-m", "x", "--conversation-turn-mean", "2", "--fixed-schedule", NULL);
    bad(__LINE__, "-m", "x", "--input-file", "f.jsonl", "--custom-dataset-type", "multi_turn", "--fixed-schedule",
        "--concurrency", "2", NULL);
}

static void test_endpoints(void)
{
    static const struct {
        const char *type, *name, *path, *url;
        bool streaming;
    } cases[] = {
        {"chat", "chat", "/v1/chat/completions", "http://h:1", false},
        {"embeddings", "embeddings", "/v1/embeddings", "http://h:1", false},
        {"embeddings", "embeddings", "/v1/embeddings", "http://h:1/v1", false},
        {"rankings", "nim_rankings", "/v1/ranking", "http://h:1", false},
        {"nim_rankings", "nim_rankings", "/v1/ranking", "http://h:1", false},
        {"hf_tei_rankings", "hf_tei_rankings", "/rerank", "http://h:1", false},
        {"cohere_rankings", "cohere_rankings", "/v1/rerank", "http://h:1", false},
        {"responses", "responses", "/v1/responses", "http://h:1", true},
        {"messages", "messages", "/v1/messages", "http://h:1", true},
        {"anthropic_messages", "messages", "/v1/messages", "http://h:1", false},
        {"generate", "generate", "/generate", "http://h:1", false},
        {"generate", "generate", "/generate_stream", "http://h:1", true},
        {"huggingface_generate", "generate", "/tgi/generate_stream", "http://h:1/tgi", true},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(cases); i++) {
        sg_config_t c;
        int rc = cases[i].streaming
                     ? parse(&c, "-m", "x", "-u", cases[i].url, "--endpoint-type", cases[i].type, "--streaming", NULL)
                     : parse(&c, "-m", "x", "-u", cases[i].url, "--endpoint-type", cases[i].type, NULL);
        CHECK_EQ_INT(rc, 0);
        if (rc == 0) {
            CHECK_EQ_STR(sg_endpoint(c.endpoint_type)->name, strlen(sg_endpoint(c.endpoint_type)->name), cases[i].name);
            CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), cases[i].path);
        }
        sg_config_free(&c);
    }
    /* GenAI-Perf's rankings:tei picks TEI's shape and leaves the bodies */
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "rankings", "--extra-inputs", "rankings:tei", "-b", "5",
                       "--extra-inputs", "top_n:3", NULL),
                 0);
    CHECK(c.endpoint_type == SG_OAI_RANK_TEI);
    CHECK_EQ_INT((int)c.batch_size, 5);
    CHECK(c.extra_inputs_json && !strstr(c.extra_inputs_json, "rankings") && strstr(c.extra_inputs_json, "top_n"));
    CHECK_EQ_STR(c.endpoint_path, strlen(c.endpoint_path), "/rerank"); /* TEI's path, without --endpoint */
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "embeddings", "--batch-size-text", "8", NULL), 0);
    CHECK_EQ_INT((int)c.batch_size, 8);
    sg_config_free(&c);
    /* the Messages API: its version header, and the key as x-api-key, not a bearer token */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "messages", "--api-key", "k1", NULL), 0);
    bool version = false, key = false, bearer = false;
    for (size_t i = 0; i < c.n_headers; i++) {
        version |= strcmp(c.headers[i], "anthropic-version: 2023-06-01") == 0;
        key |= strcmp(c.headers[i], "x-api-key: k1") == 0;
        bearer |= strncmp(c.headers[i], "Authorization", 13) == 0;
    }
    CHECK(version && key && !bearer);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "messages", "-H", "anthropic-version: 2025-01-01", NULL), 0);
    CHECK_EQ_INT((int)c.n_headers, 1);
    sg_config_free(&c);

    BAD("-m", "x", "--endpoint-type", "embeddings", "--streaming");
    BAD("-m", "x", "--endpoint-type", "cohere_rankings", "--streaming");
    BAD("-m", "x", "--endpoint-type", "embeddings", "--output-tokens-mean", "10");
    BAD("-m", "x", "--endpoint-type", "responses", "-b", "2");
    BAD("-m", "x", "--endpoint-type", "embeddings", "-b", "0");
    BAD("-m", "x", "--endpoint-type", "rankings", "--extra-inputs", "rankings:cohere");
    BAD("-m", "x", "--endpoint-type", "messages", "--api-key", "k", "-H", "x-api-key: j");
    BAD("-m", "x", "--endpoint-type", "embeddings", "--service-kind", "triton");

    /* AIPerf's synthetic rankings flags: the parts not given come from --batch-size and the synthetic ISL */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "hf_tei_rankings", "--rankings-passages-mean", "6",
                       "--rankings-passages-stddev", "2", "--rankings-query-prompt-token-mean", "16",
                       "--synthetic-input-tokens-mean", "40", "--synthetic-input-tokens-stddev", "5", NULL),
                 0);
    CHECK(c.rankings.on && c.rankings.passages_mean == 6 && c.rankings.passages_stddev == 2);
    CHECK(c.rankings.query_mean == 16 && c.rankings.query_stddev == 5);
    CHECK(c.rankings.passage_mean == 40 && c.rankings.passage_stddev == 5);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "rankings", "-b", "3", "--rankings-passages-prompt-token-mean",
                       "8", "--rankings-passages-prompt-token-stddev", "0", NULL),
                 0);
    CHECK(c.rankings.on && c.rankings.passages_mean == 3 && c.rankings.passage_mean == 8 &&
          c.rankings.passage_stddev == 0);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--endpoint-type", "rankings", NULL), 0);
    CHECK(!c.rankings.on);
    sg_config_free(&c);
    BAD("-m", "x", "--endpoint-type", "chat", "--rankings-passages-mean", "3");
    BAD("-m", "x", "--endpoint-type", "embeddings", "--rankings-query-prompt-token-mean", "3");
    BAD("-m", "x", "--endpoint-type", "rankings", "-b", "2", "--rankings-passages-mean", "3");
    BAD("-m", "x", "--endpoint-type", "rankings", "--rankings-passages-mean", "0");
    BAD("-m", "x", "--endpoint-type", "rankings", "--rankings-passages-prompt-token-mean", "-1");
    BAD("-m", "x", "--endpoint-type", "rankings", "--rankings-passages-mean", "2", "--input-file", "/dev/null");
}

/* The command line as the files record it: a POSIX shell reads it back word for word; credentials are left out. */
static void test_command_line(void)
{
    char *argv[] = {"profile",
                    "-m",
                    "my model",
                    "--url",
                    "http://h:8000/v1",
                    "--extra-inputs",
                    "{\"a\":\"it's\"}",
                    "-H",
                    "Authorization: Bearer sk-123",
                    "-HX-Trace: on",
                    "--header=Cookie: c=1",
                    "--api-key",
                    "sk-456",
                    "--api-key=sk-789",
                    "--endpoint",
                    ""};
    char *cmd = sg_config_command((int)(sizeof argv / sizeof argv[0]), argv);
    CHECK(cmd != NULL);
    if (!cmd)
        return;
    const char *want = "surge profile -m 'my model' --url http://h:8000/v1 --extra-inputs '{\"a\":\"it'\\''s\"}' -H "
                       "'Authorization: <redacted>' '-HX-Trace: on' '--header=Cookie: <redacted>' --api-key "
                       "'<redacted>' '--api-key=<redacted>' --endpoint ''";
    CHECK_EQ_STR(cmd, strlen(cmd), want);
    CHECK(strstr(cmd, "sk-") == NULL);
    free(cmd);
}

/* --num-profile-runs and its companions: defaults, AIPerf's boolean forms, what they need and what they refuse. */
static void test_multirun(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    CHECK(c.num_profile_runs == 1 && c.confidence_level == 0.95 && c.profile_run_cooldown_s == 0 &&
          c.warmup_only_first_run);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--num-profile-runs", "5", "--confidence-level", "0.99",
                       "--profile-run-cooldown-seconds", "2.5", "--set-consistent-seed", NULL),
                 0);
    CHECK(c.num_profile_runs == 5 && c.confidence_level == 0.99 && c.profile_run_cooldown_s == 2.5 &&
          c.warmup_only_first_run);
    sg_config_free(&c);
    /* the value as the next word (AIPerf's docs write it so), after '=', or the --no- form */
    static const char *const off[][2] = {{"--profile-run-disable-warmup-after-first", "false"},
                                         {"--profile-run-disable-warmup-after-first=false", NULL},
                                         {"--no-profile-run-disable-warmup-after-first", NULL}};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        CHECK_EQ_INT(parse(&c, "-m", "x", "--num-profile-runs", "2", off[i][0], off[i][1], NULL), 0);
        CHECK(!c.warmup_only_first_run);
        sg_config_free(&c);
    }
    CHECK_EQ_INT(parse(&c, "-m", "x", "--num-profile-runs", "2", "--profile-run-disable-warmup-after-first", "true",
                       "--set-consistent-seed", "true", NULL),
                 0);
    CHECK(c.warmup_only_first_run);
    sg_config_free(&c);
    /* with a sweep: accepted (each value a multi-run) */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--concurrency", "1,4", "--num-profile-runs", "3", NULL), 0);
    CHECK(c.num_profile_runs == 3 && c.n_sweep_values == 2);
    sg_config_free(&c);
    BAD("-m", "x", "--num-profile-runs", "0");
    BAD("-m", "x", "--num-profile-runs", "1001");
    BAD("-m", "x", "--num-profile-runs", "2.5");
    /* --confidence-level stands alone too: it is every --slo verdict's level */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--confidence-level", "0.9", NULL), 0);
    CHECK(c.confidence_level == 0.9);
    sg_config_free(&c);
    BAD("-m", "x", "--num-profile-runs", "1", "--profile-run-cooldown-seconds", "1");
    BAD("-m", "x", "--no-profile-run-disable-warmup-after-first");
    BAD("-m", "x", "--num-profile-runs", "2", "--confidence-level", "1");
    BAD("-m", "x", "--num-profile-runs", "2", "--confidence-level", "0");
    BAD("-m", "x", "--num-profile-runs", "2", "--confidence-level", "nan");
    BAD("-m", "x", "--num-profile-runs", "2", "--profile-run-cooldown-seconds", "-1");
    BAD("-m", "x", "--num-profile-runs", "2", "--profile-run-disable-warmup-after-first=maybe");
    BAD("-m", "x", "--num-profile-runs", "2", "--profile-run-disable-warmup-after-first", "maybe");
    BAD("-m", "x", "--num-profile-runs", "2", "--set-consistent-seed", "false");
    BAD("-m", "x", "--num-profile-runs", "2", "--no-set-consistent-seed");
    BAD("-m", "x", "--num-profile-runs", "2", "--search", "max-concurrency", "--slo", "request_latency:p99<100");
}

/* --cache-bust: on by default for synthetic prompts, off (and why) where the run asks for reuse, refused where it
 * cannot apply, and only AIPerf's targets surge has */
static void test_cache_bust(void)
{
    static const struct {
        const char *a[6];
        bool on;
        const char *why;
    } cases[] = {
        {{NULL}, true, NULL},
        {{"--num-prompts", "5", NULL}, false, "--num-prompts"},
        {{"--num-prompts", "5", "--cache-bust", "first_turn_prefix", NULL}, true, NULL},
        {{"--cache-bust", "none", NULL}, false, "--cache-bust none"},
        {{"--num-prefix-prompts", "2", NULL}, false, "--num-prefix-prompts"},
        {{"--endpoint-type", "embeddings", NULL}, false, "embeddings and rankings"},
        {{"--conversation-turn-mean", "3", NULL}, false, "multi-turn sessions"},
        {{"--service-kind", "triton", NULL}, true, NULL},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(cases); i++) {
        sg_config_t c;
        const char *const *a = cases[i].a;
        int rc = parse(&c, "-m", "m", a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL,
                       a[0] && a[1] && a[2] ? a[3] : NULL, NULL);
        CHECK_EQ_INT(rc, 0);
        if (rc == 0) {
            CHECK_EQ_INT(c.cache_bust, cases[i].on);
            CHECK(cases[i].why ? c.cache_bust_off_reason && strcmp(c.cache_bust_off_reason, cases[i].why) == 0
                               : c.cache_bust_off_reason == NULL);
            bool given = false;
            for (int k = 0; k < 6 && a[k]; k++)
                given |= strcmp(a[k], "--cache-bust") == 0;
            CHECK_EQ_INT(c.cache_bust_given, given);
        }
        sg_config_free(&c);
    }
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "m", "--cache-bust", "none", NULL), 0);
    CHECK(c.cache_bust_given);
    sg_config_free(&c);
    BAD("-m", "m", "--cache-bust", "system_prefix");
    BAD("-m", "m", "--cache-bust", "");
    BAD("-m", "m", "--cache-bust", "first_turn_prefix", "--num-prefix-prompts", "2");
    BAD("-m", "m", "--cache-bust", "first_turn_prefix", "--endpoint-type", "rankings");
    BAD("-m", "m", "--cache-bust", "first_turn_prefix", "--conversation-turn-mean", "2");
}

/* Ramps (vLLM's and AIPerf's flags) and the cancellation test: what they set, derive and refuse. */
static void test_ramps_cancel(void)
{
    sg_config_t c;
    /* vLLM's form alone: the ramp spans the run, Lambda(D) = N: linear D = 2N / (A + B) */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "2", "--ramp-up-end-rps",
                       "18", "--request-count", "200", NULL),
                 0);
    CHECK(c.ramp_strategy == SG_RAMP_LINEAR && c.ramp_start_rps == 2 && c.request_rate == 18 && c.concurrency == 0);
    CHECK_NEAR(c.ramp_duration_s, 20, 1e-12);
    sg_config_free(&c);
    /* exponential: D = N ln(B/A) / (B - A); the warmup's requests are in the ramp too */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "1",
                       "--ramp-up-end-rps", "100", "--request-count", "90", "--warmup-request-count", "9", NULL),
                 0);
    CHECK_NEAR(c.ramp_duration_s, 99 * log(100) / 99, 1e-12);
    sg_config_free(&c);
    /* a duration-bounded run ramps over its duration; an explicit duration wins */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0", "--ramp-up-end-rps",
                       "5", "--benchmark-duration", "30", NULL),
                 0);
    CHECK(c.ramp_duration_s == 30);
    sg_config_free(&c);
    /* AIPerf's form: linear from 0 to --request-rate over D */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "50", "--request-rate-ramp-duration", "7", NULL), 0);
    CHECK(c.ramp_strategy == SG_RAMP_LINEAR && c.ramp_start_rps == 0 && c.ramp_duration_s == 7 && c.request_rate == 50);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-rate", "50", "--ramp-up-end-rps", "50", "--ramp-up-strategy",
                       "exponential", "--ramp-up-start-rps", "5", "--request-rate-ramp-duration", "3", NULL),
                 0);
    CHECK(c.ramp_strategy == SG_RAMP_EXPONENTIAL && c.ramp_duration_s == 3);
    sg_config_free(&c);
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    CHECK(c.ramp_strategy == SG_RAMP_NONE && c.concurrency_ramp_s == 0 && c.cancel_rate_pct == 0);
    sg_config_free(&c);
    BAD("-m", "x", "--ramp-up-strategy", "sigmoid", "--ramp-up-end-rps", "5");
    BAD("-m", "x", "--ramp-up-strategy", "linear");                                /* no end rate */
    BAD("-m", "x", "--ramp-up-end-rps", "5");                                      /* no strategy, no duration */
    BAD("-m", "x", "--ramp-up-strategy", "exponential", "--ramp-up-end-rps", "5"); /* starts at 0 */
    BAD("-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "9", "--ramp-up-end-rps", "5");
    BAD("-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-end-rps", "5", "--request-rate", "6");
    BAD("-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-end-rps", "5", "--concurrency", "4");
    BAD("-m", "x", "--request-rate", "inf", "--request-rate-ramp-duration", "5", "--request-count", "9");
    BAD("-m", "x", "--request-rate", "5,10", "--request-rate-ramp-duration", "5");
    BAD("-m", "x", "--request-rate-ramp-duration", "5"); /* closed loop: nothing to ramp */
    BAD("-m", "x", "--request-rate", "5", "--request-rate-ramp-duration", "0");
    BAD("-m", "x", "--ramp-up-strategy", "linear", "--ramp-up-end-rps", "0");
    /* the concurrency ramp: a closed loop's */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--concurrency", "8", "--concurrency-ramp-duration", "4", NULL), 0);
    CHECK(c.concurrency == 8 && c.concurrency_ramp_s == 4);
    sg_config_free(&c);
    BAD("-m", "x", "--request-rate", "8", "--concurrency-ramp-duration", "4");
    BAD("-m", "x", "--concurrency", "1,8", "--concurrency-ramp-duration", "4");
    BAD("-m", "x", "--concurrency", "8", "--concurrency-ramp-duration", "-1");
    /* the cancellation test: a percentage, a delay from the send */
    CHECK_EQ_INT(parse(&c, "-m", "x", "--request-cancellation-rate", "25", "--request-cancellation-delay", "0.5", NULL),
                 0);
    CHECK(c.cancel_rate_pct == 25 && c.cancel_delay_s == 0.5);
    sg_config_free(&c);
    BAD("-m", "x", "--request-cancellation-rate", "101");
    BAD("-m", "x", "--request-cancellation-rate", "-1");
    BAD("-m", "x", "--request-cancellation-rate", "10", "--request-cancellation-delay", "-1");
    BAD("-m", "x", "--request-cancellation-delay", "1"); /* no rate */
    BAD("-m", "x", "--request-cancellation-rate", "10", "--conversation-turn-mean", "3");
}

/* The parse of "-m x --NAME [VALUE]" as input_config's JSON, or NULL when it is refused. */
static char *echo_of(const char *name, const char *value)
{
    char flag[128];
    snprintf(flag, sizeof flag, "--%s", name);
    sg_config_t c;
    int rc = value ? parse(&c, "-m", "x", flag, value, NULL) : parse(&c, "-m", "x", flag, NULL);
    char *j = rc == 0 ? sg_config_to_json(&c) : NULL;
    sg_config_free(&c);
    return j;
}

/*
 * engine/options.c's rows: names unique across rows and aliases, getopt's table holds every name once with its row's
 * value, and each alias parses as its row's name does (the same input_config for the first value of a few that the
 * canonical name takes).
 */
static void test_options_table(void)
{
    static const char *const values[] = {"1", "0.5", "2", "x", "true", "openai", "random", "linear", "none", NULL};
    const char *shorts;
    const struct option *longs = sg_opt_getopt(&shorts);
    size_t n_longs = 0;
    while (longs[n_longs].name)
        n_longs++;
    size_t n_names = 0;
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        CHECK(r->name && r->name[0] && sg_opt_find(r->name) == r);
        n_names++;
        if (r->short_name)
            CHECK(strchr(shorts, r->short_name) != NULL);
        for (const char *const *a = r->aliases; a && *a; a++) {
            n_names++;
            if (sg_opt_find(*a) != r) {
                test_checks++;
                test_failures++;
                fprintf(stderr, "test_config.c: alias --%s is not found as --%s's\n", *a, r->name);
            }
        }
    }
    CHECK_EQ_INT(n_longs, n_names); /* nothing dropped by sg_opt_getopt, no name twice */
    for (size_t i = 0; i < n_longs; i++) {
        const sg_opt_t *r = sg_opt_find(longs[i].name);
        CHECK(r && r->val == longs[i].val && r->has_arg == longs[i].has_arg);
    }
    /* --help: every row has its block (or is in another row's, or in the prose), and each block is printed once */
    {
        char *usage = NULL;
        size_t usage_len = 0;
        FILE *mem = open_memstream(&usage, &usage_len);
        CHECK(mem != NULL);
        sg_config_usage(mem);
        fclose(mem);
        for (size_t i = 0; i < sg_opt_count; i++) {
            const sg_opt_t *r = &sg_opt_table[i];
            size_t listed = 0;
            bool is_row;
            const char *t;
            for (size_t k = 0; (t = sg_opt_help_layout(k, &is_row)); k++)
                listed += is_row && strcmp(t, r->name) == 0;
            char flag[128];
            snprintf(flag, sizeof flag, "--%s", r->name);
            const sg_opt_t *in = r->help_in ? sg_opt_find(r->help_in) : NULL;
            bool ok = r->help ? listed == 1 && strstr(r->help, flag) != NULL
                              : listed == 0 && ((in && in->help && strstr(in->help, flag)) || strstr(usage, flag));
            if (!ok) {
                test_failures++;
                fprintf(stderr, "test_config.c: --%s: help %s, listed %zu times in --help's layout, help_in %s\n",
                        r->name, r->help ? "given" : "none", listed, r->help_in ? r->help_in : "none");
            }
            test_checks++;
        }
        bool is_row;
        const char *t;
        for (size_t k = 0; (t = sg_opt_help_layout(k, &is_row)); k++)
            if (is_row)
                CHECK(sg_opt_find(t) && sg_opt_find(t)->help && strcmp(sg_opt_find(t)->name, t) == 0);
        free(usage);
    }
    /* every alias parses to its row: compared through the configuration's JSON echo (stderr quiet meanwhile) */
    fflush(stderr);
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    CHECK(saved >= 0 && devnull >= 0);
    dup2(devnull, 2);
    char report[4096] = "";
    size_t off = 0, compared = 0;
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        if (!r->aliases || (r->flags & SG_OPT_NOT_A_KEY))
            continue;
        const char *value = NULL;
        char *want = NULL;
        if (r->has_arg == no_argument) {
            want = echo_of(r->name, NULL);
        } else {
            for (const char *const *v = values; *v && !want; v++)
                if ((want = echo_of(r->name, *v)))
                    value = *v;
        }
        if (!want)
            continue; /* none of the values is one it takes: getopt's check above still holds */
        for (const char *const *a = r->aliases; a && *a; a++) {
            char *got = echo_of(*a, value);
            compared++;
            if (!got || strcmp(got, want) != 0)
                off +=
                    (size_t)snprintf(report + off, sizeof report - off > 0 ? sizeof report - off : 0,
                                     "--%s %s is not --%s %s\n", *a, value ? value : "", r->name, value ? value : "");
            free(got);
            if (off >= sizeof report)
                off = sizeof report - 1;
        }
        free(want);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(devnull);
    test_checks++;
    if (report[0] || compared < 20) {
        test_failures++;
        fprintf(stderr, "test_config.c: aliases compared %zu (at least 20 expected):\n%s", compared, report);
    }
}

/*
 * The echo of the configuration is made from the options table: every row is echoed (by the generic loop, typed or
 * with echo_type, or by its hook) or says why not (no_echo), never both; a generically echoed row's key is in the
 * echo of a plain run.
 */
static void test_echo_table(void)
{
    sg_config_t c;
    CHECK_EQ_INT(parse(&c, "-m", "x", NULL), 0);
    char *text = sg_config_to_json(&c);
    json_t *echo = text ? json_loads(text, 0, NULL) : NULL;
    CHECK(json_is_object(echo));
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        bool generic = !r->echo && !r->no_echo && (r->type != SG_OT_CUSTOM || r->echo_type);
        bool ok = (generic || r->echo || (r->no_echo && r->no_echo[0])) && !(r->echo && r->no_echo);
        char key[128];
        if (ok && generic && !json_object_get(echo, sg_opt_echo_key(r, key, sizeof key)))
            ok = false;
        test_checks++;
        if (!ok) {
            test_failures++;
            fprintf(stderr,
                    "test_config.c: --%s is neither echoed nor excepted in input_config (sg_options.h: a typed row, "
                    "echo_type, an echo hook or no_echo; generic key %s)\n",
                    r->name, generic ? key : "-");
        }
    }
    json_decref(echo);
    free(text);
    sg_config_free(&c);
}

/* Whether a generically echoed row's field is the same in a and b; its name on stderr when not. */
static bool same_field(const sg_opt_t *r, const sg_config_t *a, const sg_config_t *b)
{
    const char *fa = (const char *)a + r->field, *fb = (const char *)b + r->field;
    bool same;
    switch (r->type != SG_OT_CUSTOM ? (int)r->type : r->echo_type) {
    case SG_OT_FLAG:
    case SG_OT_BOOL_WORD:
        same = *(const bool *)fa == *(const bool *)fb;
        break;
    case SG_OT_U32:
        same = *(const uint32_t *)fa == *(const uint32_t *)fb;
        break;
    case SG_OT_U64:
        same = *(const uint64_t *)fa == *(const uint64_t *)fb;
        break;
    case SG_OT_INT:
    case SG_OT_ENUM:
        same = *(const int *)fa == *(const int *)fb;
        break;
    case SG_OT_NUM:
        same = *(const double *)fa == *(const double *)fb;
        break;
    case SG_OT_STR: {
        const char *sa = *(char *const *)fa, *sb = *(char *const *)fb;
        same = sa == sb || (sa && sb && strcmp(sa, sb) == 0);
        break;
    }
    default:
        return true;
    }
    if (!same)
        fprintf(stderr, "test_config.c: round trip: --%s differs\n", r->name);
    return same;
}

/*
 * A run's echo fed back with --config gives the same run: the same echo (but for the file it came from), the same
 * field for every generically echoed row, and the same structures the hooks echo. A row whose echo is dropped (or
 * cannot be read back) loses its value on the way and fails here.
 */
static void round_trip(int line, const char *const *args)
{
    char *argv[200];
    int argc = 0;
    argv[argc++] = "profile";
    for (; args[argc - 1] && argc < 199; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc] = NULL;
    sg_config_t a, b;
    int rc = sg_config_parse(&a, argc, argv);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "test_config.c:%d: the run itself is refused\n", line);
        return;
    }
    char *ea = sg_config_to_json(&a);
    char path[] = "/tmp/surge_echo_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && ea);
    if (fd >= 0 && ea) {
        CHECK_EQ_INT(write(fd, ea, strlen(ea)), (long)strlen(ea));
        close(fd);
    }
    rc = parse(&b, "--config", path, NULL);
    unlink(path);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "test_config.c:%d: the echo fed back is refused: %s\n", line, ea);
        sg_config_free(&a);
        free(ea);
        return;
    }
    char *eb = sg_config_to_json(&b);
    json_t *ja = ea ? json_loads(ea, 0, NULL) : NULL, *jb = eb ? json_loads(eb, 0, NULL) : NULL;
    CHECK(ja && jb);
    json_object_del(jb, "config_file");
    json_object_del(jb, "config_file_sha256");
    json_object_del(ja, "config_file");
    json_object_del(ja, "config_file_sha256");
    test_checks++;
    if (!json_equal(ja, jb)) {
        test_failures++;
        const char *k;
        json_t *v;
        json_object_foreach(ja, k, v)
        {
            if (!json_equal(v, json_object_get(jb, k))) {
                char *x = json_dumps(v, JSON_ENCODE_ANY), *y = json_dumps(json_object_get(jb, k), JSON_ENCODE_ANY);
                fprintf(stderr, "test_config.c:%d: round trip: %s was %s, read back %s\n", line, k, x, y ? y : "-");
                free(x);
                free(y);
            }
        }
    }
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        if (r->type != SG_OT_CUSTOM || r->echo_type)
            CHECK(same_field(r, &a, &b));
    }
    /* what the hooks echo */
    CHECK_EQ_INT(a.n_models, b.n_models);
    CHECK_EQ_INT(a.n_urls > 1 ? a.n_urls : 1, b.n_urls > 1 ? b.n_urls : 1); /* 0 or 1: one URL */
    CHECK_EQ_INT(a.n_headers, b.n_headers);
    for (size_t i = 0; i < a.n_headers && i < b.n_headers; i++)
        CHECK(strcmp(a.headers[i], b.headers[i]) == 0);
    CHECK(strcmp(a.endpoint_path, b.endpoint_path) == 0);
    CHECK(strcmp(a.extra_inputs_json ? a.extra_inputs_json : "", b.extra_inputs_json ? b.extra_inputs_json : "") == 0);
    CHECK_EQ_INT(a.n_slos, b.n_slos);
    CHECK_EQ_INT(a.n_slo_checks, b.n_slo_checks);
    CHECK_EQ_INT(a.n_server_metrics_urls, b.n_server_metrics_urls);
    CHECK_EQ_INT(a.sweep, b.sweep);
    CHECK_EQ_INT(a.n_sweep_values, b.n_sweep_values);
    CHECK_EQ_INT(a.search, b.search);
    CHECK_NEAR(a.search_lo, b.search_lo, 0);
    CHECK_NEAR(a.search_hi, b.search_hi, 0);
    CHECK_NEAR(a.cooldown_s, b.cooldown_s, 0);
    CHECK_NEAR(a.stability_pct, b.stability_pct, 0);
    CHECK_EQ_INT(a.max_trials, b.max_trials);
    CHECK_NEAR(a.profile_run_cooldown_s, b.profile_run_cooldown_s, 0);
    CHECK_EQ_INT(a.warmup_only_first_run, b.warmup_only_first_run);
    CHECK_EQ_INT(a.cache_bust, b.cache_bust);
    CHECK_EQ_INT(a.coalesce_us, b.coalesce_us);
    CHECK_EQ_INT(a.user_timestamps, b.user_timestamps);
    CHECK_EQ_INT(a.export_summary, b.export_summary);
    json_decref(ja);
    json_decref(jb);
    free(ea);
    free(eb);
    sg_config_free(&a);
    sg_config_free(&b);
}
#define ROUND_TRIP(...) round_trip(__LINE__, (const char *const[]){__VA_ARGS__, NULL})

static void test_echo_round_trip(void)
{
    /* an open loop with most single-run options set away from their defaults */
    ROUND_TRIP("-m", "a/b", "-m", "c", "--model-selection-strategy", "random", "-u", "http://10.0.0.5:9000/api/",
               "--endpoint-type", "completions", "--endpoint", "v2/complete", "--streaming", "-H", "X-Trace: on",
               "--max-connections", "7", "--local-address", "127.0.0.1", "--extra-inputs", "temperature:0.25",
               "--ignore-eos", "--request-rate", "12.5", "--request-distribution", "gamma", "--burstiness", "0.5",
               "--max-concurrency", "64", "--request-count", "1000", "--warmup-request-count", "10",
               "--request-timeout", "5.5", "--random-seed", "18446744073709551615", "--workers", "3",
               "--synthetic-input-tokens-mean", "200", "--synthetic-input-tokens-stddev", "20", "--num-prompts", "500",
               "--cache-bust", "none", "--output-tokens-mean", "128", "--output-tokens-stddev", "8",
               "--output-tokens-mean-deterministic", "--num-prefix-prompts", "3", "--prefix-prompt-length", "40",
               "--artifact-dir", "out/run1", "--profile-export-file", "my_run.json", "--export-level", "summary", "-v",
               "--max-error-rate", "0.05", "--goodput", "time_to_first_token:200", "--show-trace-timing", "--overwrite",
               "--slice-duration", "2.5", "--stall-threshold-ms", "50", "--server-metrics-url",
               "http://127.0.0.1:9/metrics", "--server-metrics-interval", "0.5", "--slo", "time_to_first_token:p99<500",
               "--confidence-level", "0.9", "--timestamps", "user", "--coalesce-us", "250", "--io-backend", "epoll",
               "--request-cancellation-rate", "10", "--request-cancellation-delay", "0.5", "--batch-size", "1",
               "--insecure");
    /* a ramp, and several URLs */
    ROUND_TRIP("-m", "x", "-u", "a:1", "-u", "b:2", "--url-strategy", "least_in_flight", "--request-rate", "20",
               "--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "2", "--request-rate-ramp-duration", "3",
               "--benchmark-duration", "9", "--benchmark-grace-period", "1");
    /* a sweep of closed loops with stability windows, repeated runs and images */
    ROUND_TRIP("-m", "x", "--concurrency", "1,4,16", "--parameter-sweep-cooldown-seconds", "0.5",
               "--measurement-interval", "2000", "--stability-percentage", "5", "--max-trials", "6",
               "--num-profile-runs", "3", "--profile-run-cooldown-seconds", "2",
               "--profile-run-disable-warmup-after-first", "false", "--warmup-request-count", "4", "--image-width-mean",
               "64", "--image-height-mean", "32", "--image-format", "png");
    /* a capacity search */
    ROUND_TRIP("-m", "x", "--search", "max-request-rate", "--search-range", "2:40", "--search-precision", "0.1",
               "--search-trials", "2", "--search-max-trials", "3", "--slo", "request_latency:p90<900",
               "--parameter-sweep-cooldown-seconds", "0");
    /* a closed loop with a concurrency ramp, a base path ending in /v1 */
    ROUND_TRIP("-m", "x", "-u", "http://h:8/v1", "--concurrency", "8", "--concurrency-ramp-duration", "2");
    /* synthetic multi-turn sessions */
    ROUND_TRIP("-m", "x", "--conversation-turn-mean", "3", "--conversation-turn-stddev", "1", "--conversation-num", "5",
               "--conversation-turn-delay-mean", "100", "--conversation-turn-delay-stddev", "10",
               "--conversation-turn-delay-ratio", "0.5", "--request-count", "12");
    /* synthetic rankings, and DCGM exporters beside a scrape URL */
    ROUND_TRIP("-m", "x", "--endpoint-type", "rankings", "--rankings-passages-mean", "3",
               "--rankings-query-prompt-token-mean", "12", "--gpu-telemetry", "127.0.0.1:9401", "--server-metrics-url",
               "http://127.0.0.1:9/metrics");
}

int main(void)
{
    test_options_table();
    test_echo_table();
    test_echo_round_trip();
    test_multirun();
    test_cache_bust();
    test_endpoints();
    test_sessions();
    test_server_metrics_flags();
    test_no_abbreviations();
    test_peer_aliases();
    test_v1_base();
    test_points();
    test_defaults();
    test_everything();
    test_urls();
    test_bad_values();
    test_help_version();
    test_extra_inputs();
    test_goodput();
    test_run_names();
    test_triton();
    test_command_line();
    test_ramps_cancel();
    return test_finish("test_config");
}
