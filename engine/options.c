/* `surge profile`'s options table: see sg_options.h. */
#define _GNU_SOURCE
#include "sg_options.h"
#include "config_int.h"
#include "sg_config.h"

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ALIASES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define OPT(n, v, a, ...)                                                                                              \
    {                                                                                                                  \
        .name = n, .val = v, .has_arg = a, __VA_ARGS__                                                                 \
    }
#define ARG required_argument
#define NOARG no_argument
#define OPTARG optional_argument
/* a typed row's field, its type checked: a pointer comparison of distinct types does not compile */
#define FIELD(f, T) (offsetof(sg_config_t, f) + 0 * sizeof(&((sg_config_t *)0)->f == (T *)0))
#define FLAG(f) .type = SG_OT_FLAG, .field = FIELD(f, bool)
#define U32(f, l, h) .type = SG_OT_U32, .field = FIELD(f, uint32_t), .lo = (l), .hi = (h)
#define U64(f, l) .type = SG_OT_U64, .field = FIELD(f, uint64_t), .lo = (l)
#define NUM(f, what, l, open, h)                                                                                       \
    .type = SG_OT_NUM, .field = FIELD(f, double), .range = what, .lo = (l), .lo_open = (open), .hi = (h)
#define STR(f, what) .type = SG_OT_STR, .field = FIELD(f, char *), .range = what
#define GIVEN(g) .given = 1 + offsetof(parse_state_t, g) + 0 * sizeof(&((parse_state_t *)0)->g == (bool *)0)

/*
 * The peers' flags we do not implement take optional_argument: whatever form the user typed (--flag, --flag=x,
 * --flag x), we get to explain instead of getopt complaining about the argument first.
 */
const sg_opt_t sg_opt_table[] = {
    OPT("model", OPT_MODEL, ARG, .short_name = 'm', .flags = SG_OPT_REPEATABLE),
    OPT("model-selection-strategy", OPT_MODEL_STRATEGY, ARG),
    OPT("url", OPT_URL, ARG, .short_name = 'u', .flags = SG_OPT_REPEATABLE,
        .aliases = ALIASES("base-url")), /* vLLM: base-url */
    OPT("service-kind", OPT_SERVICE_KIND, ARG),
    OPT("backend", OPT_BACKEND, ARG),
    OPT("endpoint-type", OPT_ENDPOINT_TYPE, ARG),
    OPT("endpoint", OPT_ENDPOINT, ARG),
    OPT("streaming", OPT_STREAMING, NOARG, FLAG(streaming)),
    OPT("http2", OPT_HTTP2, NOARG, FLAG(http2)),
    OPT("max-connections", OPT_MAX_CONNECTIONS, ARG, U32(max_connections, 1, 1000000)),
    OPT("local-address", OPT_LOCAL_ADDRESS, ARG),
    OPT("header", OPT_HEADER, ARG, .short_name = 'H', .flags = SG_OPT_REPEATABLE),
    OPT("api-key", OPT_API_KEY, ARG),
    OPT("extra-inputs", OPT_EXTRA_INPUTS, ARG, .flags = SG_OPT_REPEATABLE),
    OPT("request-rate", OPT_REQUEST_RATE, ARG),
    OPT("request-distribution", OPT_DISTRIBUTION, ARG),
    OPT("concurrency", OPT_CONCURRENCY, ARG),
    OPT("max-concurrency", OPT_MAX_CONCURRENCY, ARG, U32(max_concurrency, 1, 10000000), GIVEN(max_concurrency_given)),
    OPT("request-count", OPT_REQUEST_COUNT, ARG, .aliases = ALIASES("num-requests"), U64(request_count, 1),
        GIVEN(count_given)), /* AIPerf */
    OPT("benchmark-duration", OPT_DURATION, ARG,
        NUM(benchmark_duration_s, "a positive number of seconds", 0, true, 1e9), GIVEN(duration_given)),
    OPT("benchmark-grace-period", OPT_GRACE, ARG),
    OPT("warmup-request-count", OPT_WARMUP, ARG, U64(warmup_request_count, 0), GIVEN(warmup_given)),
    OPT("request-timeout", OPT_TIMEOUT, ARG, NUM(request_timeout_s, "a positive number of seconds", 0, true, 1e9)),
    OPT("random-seed", OPT_SEED, ARG, .aliases = ALIASES("seed"), U64(random_seed, 0)), /* vLLM: seed */
    OPT("workers", OPT_WORKERS, ARG),
    OPT("synthetic-input-tokens-mean", OPT_ISL_MEAN, ARG,
        .aliases = ALIASES("isl", "prompt-input-tokens-mean", "random-input-len"), U32(isl_mean, 1, MAX_ISL),
        GIVEN(isl_given)), /* vLLM: random-input-len */
    OPT("synthetic-input-tokens-stddev", OPT_ISL_STDDEV, ARG,
        .aliases = ALIASES("isl-stddev", "prompt-input-tokens-stddev"), U32(isl_stddev, 0, MAX_ISL), GIVEN(isl_given)),
    OPT("num-prompts", OPT_NUM_PROMPTS, ARG),
    OPT("cache-bust", OPT_CACHE_BUST, ARG),
    OPT("output-tokens-mean", OPT_OSL_MEAN, ARG,
        .aliases = ALIASES("osl", "prompt-output-tokens-mean", "random-output-len")), /* vLLM: random-output-len */
    OPT("output-tokens-stddev", OPT_OSL_STDDEV, ARG, .aliases = ALIASES("osl-stddev", "prompt-output-tokens-stddev"),
        U32(osl_stddev, 0, INT32_MAX)),
    OPT("ignore-eos", OPT_IGNORE_EOS, NOARG), /* vLLM */
    OPT("output-tokens-mean-deterministic", OPT_OSL_DETERMINISTIC, NOARG, FLAG(osl_deterministic)),
    OPT("tokenizer", OPT_TOKENIZER, ARG,
        STR(tokenizer,
            "expected a tokenizer.json file, a directory holding one, a *.tiktoken file or a Hugging Face model id")),
    OPT("input-file", OPT_INPUT_FILE, ARG, .aliases = ALIASES("dataset-path"),
        STR(input_file, "expected a file")),                                               /* vLLM: dataset-path */
    OPT("input-format", OPT_INPUT_FORMAT, ARG, .aliases = ALIASES("custom-dataset-type")), /* AIPerf's */
    OPT("rankings-passages-mean", OPT_RANK_PASSAGES_MEAN, ARG),
    OPT("rankings-passages-stddev", OPT_RANK_PASSAGES_STDDEV, ARG),
    OPT("rankings-passages-prompt-token-mean", OPT_RANK_PASSAGE_TOKENS_MEAN, ARG),
    OPT("rankings-passages-prompt-token-stddev", OPT_RANK_PASSAGE_TOKENS_STDDEV, ARG),
    OPT("rankings-query-prompt-token-mean", OPT_RANK_QUERY_TOKENS_MEAN, ARG),
    OPT("rankings-query-prompt-token-stddev", OPT_RANK_QUERY_TOKENS_STDDEV, ARG),
    OPT("image-width-mean", OPT_MEDIA, ARG),
    OPT("image-width-stddev", OPT_MEDIA, ARG),
    OPT("image-height-mean", OPT_MEDIA, ARG),
    OPT("image-height-stddev", OPT_MEDIA, ARG),
    OPT("image-format", OPT_MEDIA, ARG),
    OPT("image-batch-size", OPT_MEDIA, ARG, .aliases = ALIASES("batch-size-image")),
    OPT("audio-length-mean", OPT_MEDIA, ARG),
    OPT("audio-length-stddev", OPT_MEDIA, ARG),
    OPT("audio-format", OPT_MEDIA, ARG),
    OPT("audio-batch-size", OPT_MEDIA, ARG, .aliases = ALIASES("batch-size-audio")),
    OPT("audio-sample-rates", OPT_MEDIA, ARG),
    OPT("audio-depths", OPT_MEDIA, ARG),
    OPT("audio-num-channels", OPT_MEDIA, ARG),
    OPT("conversation-num", OPT_CONV_NUM, ARG, .aliases = ALIASES("num-conversations", "num-sessions"),
        U32(conversation_num, 1, MAX_PROMPTS), GIVEN(conv_given)),
    OPT("conversation-turn-mean", OPT_TURN_MEAN, ARG, .aliases = ALIASES("session-turns-mean"),
        NUM(turn_mean, "a number of turns, at least 1", 1, false, 10000), GIVEN(conv_given)),
    OPT("conversation-turn-stddev", OPT_TURN_STDDEV, ARG, .aliases = ALIASES("session-turns-stddev"),
        NUM(turn_stddev, "a number of turns, at least 0", 0, false, 10000), GIVEN(conv_given)),
    OPT("conversation-turn-delay-mean", OPT_TURN_DELAY_MEAN, ARG, .aliases = ALIASES("session-turn-delay-mean"),
        NUM(turn_delay_mean_ms, "milliseconds, at least 0", 0, false, 1e9), GIVEN(conv_given)),
    OPT("conversation-turn-delay-stddev", OPT_TURN_DELAY_STDDEV, ARG, .aliases = ALIASES("session-turn-delay-stddev"),
        NUM(turn_delay_stddev_ms, "milliseconds, at least 0", 0, false, 1e9), GIVEN(conv_given)),
    OPT("conversation-turn-delay-ratio", OPT_TURN_DELAY_RATIO, ARG, .aliases = ALIASES("session-delay-ratio"),
        NUM(turn_delay_ratio, "a factor, at least 0 (0.5 halves every delay)", 0, false, 1e6), GIVEN(conv_given)),
    OPT("prefix-prompt-length", OPT_PREFIX_LEN, ARG, U32(prefix_len, 1, MAX_ISL), GIVEN(prefix_len_given)),
    OPT("num-prefix-prompts", OPT_NUM_PREFIX, ARG, .aliases = ALIASES("prefix-prompt-pool-size"),
        U32(num_prefix, 0, MAX_PROMPTS)),
    OPT("isl-block-size", OPT_BLOCK_SIZE, ARG, U32(block_size, 1, MAX_ISL), GIVEN(block_given)),
    OPT("fixed-schedule", OPT_FIXED_SCHEDULE, NOARG, FLAG(fixed_schedule)),
    OPT("fixed-schedule-speedup", OPT_FIXED_SPEEDUP, ARG,
        NUM(fixed_schedule_speedup, "a positive number (2 replays twice as fast)", 0, true, 1e9), GIVEN(speedup_given)),
    OPT("artifact-dir", OPT_ARTIFACT_DIR, ARG, .aliases = ALIASES("result-dir"),
        STR(artifact_dir, "expected a directory"), GIVEN(artifact_dir_given)), /* vLLM: result-dir */
    OPT("overwrite", OPT_OVERWRITE, NOARG, FLAG(overwrite)),
    OPT("profile-export-file", OPT_EXPORT_FILE, ARG, .aliases = ALIASES("result-filename")), /* vLLM: result-filename */
    OPT("export-level", OPT_EXPORT_LEVEL, ARG),
    OPT("verbose", OPT_VERBOSE, NOARG, .short_name = 'v', FLAG(verbose)),
    OPT("max-error-rate", OPT_MAX_ERROR_RATE, ARG, NUM(max_error_rate, "a number from 0 to 1", 0, false, 1)),
    OPT("goodput", OPT_GOODPUT, ARG, .flags = SG_OPT_REPEATABLE),
    OPT("progress", OPT_PROGRESS, NOARG),
    OPT("no-progress", OPT_NO_PROGRESS, NOARG, .aliases = ALIASES("disable-tqdm")), /* vLLM: disable-tqdm */
    OPT("version", OPT_VERSION, NOARG, .flags = SG_OPT_NOT_A_KEY),
    OPT("help", OPT_HELP, NOARG, .short_name = 'h', .flags = SG_OPT_NOT_A_KEY),
    OPT("measurement-interval", OPT_MEASUREMENT_INTERVAL, ARG, .short_name = 'p',
        NUM(measurement_interval_ms, "milliseconds, 10 or more", 10, false,
            86400e3)),                                                           /* perf_analyzer, GenAI-Perf: ms */
    OPT("stability-percentage", OPT_STABILITY, ARG, .short_name = 's'),          /* perf_analyzer, GenAI-Perf */
    OPT("max-trials", OPT_MAX_TRIALS, ARG),                                      /* perf_analyzer */
    OPT("gpu-telemetry", OPT_GPU_TELEMETRY, OPTARG, .flags = SG_OPT_REPEATABLE), /* AIPerf: DCGM exporter URLs */
    OPT("batch-size", OPT_BATCH_SIZE, ARG, .short_name = 'b',
        .aliases = ALIASES("batch-size-text", "prompt-batch-size"), U32(batch_size, 1, MAX_BATCH),
        GIVEN(batch_given)),                              /* GenAI-Perf's newer name; AIPerf's */
    OPT("concurrency-range", OPT_CONCURRENCY_RANGE, ARG), /* perf_analyzer */
    OPT("request-rate-range", OPT_RATE_RANGE, ARG),       /* perf_analyzer */
    OPT("parameter-sweep-cooldown-seconds", OPT_COOLDOWN, ARG, NUM(cooldown_s, "seconds, 0 or more", 0, false, 86400),
        GIVEN(cooldown_given)), /* AIPerf */
    OPT("slo", OPT_SLO, ARG, .flags = SG_OPT_REPEATABLE),
    OPT("slice-duration", OPT_SLICE_DURATION, ARG,
        NUM(slice_duration_s, "seconds, above 0", 0, true, 86400 * 365)), /* AIPerf */
    OPT("stall-threshold-ms", OPT_STALL_THRESHOLD, ARG),
    OPT("server-metrics-url", OPT_SERVER_METRICS_URL, ARG, .flags = SG_OPT_REPEATABLE), /* GenAI-Perf, AIPerf */
    OPT("server-metrics-interval", OPT_SERVER_METRICS_INTERVAL, ARG,
        NUM(server_metrics_interval_s, "seconds, 0.1 or more", 0.1, false, 3600),
        GIVEN(scrape_interval_given)),                                                /* seconds */
    OPT("burstiness", OPT_BURSTINESS, ARG, .aliases = ALIASES("arrival-smoothness")), /* vLLM; AIPerf */
    OPT("search", OPT_SEARCH, ARG),
    OPT("search-range", OPT_SEARCH_RANGE, ARG),
    OPT("search-precision", OPT_SEARCH_PRECISION, ARG,
        NUM(search_precision, "a fraction above 0 and at most 1 (0.05 = 5%)", 0, true, 1),
        GIVEN(search_precision_given)),
    OPT("search-trials", OPT_SEARCH_TRIALS, ARG, U32(search_trials, 1, 100), GIVEN(search_trials_given)),
    OPT("search-max-trials", OPT_SEARCH_MAX_TRIALS, ARG, U32(search_max_trials, 1, 100),
        GIVEN(search_max_trials_given)),
    OPT("num-profile-runs", OPT_NUM_PROFILE_RUNS, ARG, U32(num_profile_runs, 1, MAX_PROFILE_RUNS)), /* AIPerf */
    OPT("confidence-level", OPT_CONFIDENCE_LEVEL, ARG),                                             /* AIPerf */
    OPT("profile-run-cooldown-seconds", OPT_PROFILE_RUN_COOLDOWN, ARG),                             /* AIPerf */
    OPT("profile-run-disable-warmup-after-first", OPT_WARMUP_FIRST_ONLY, OPTARG),                   /* AIPerf */
    OPT("no-profile-run-disable-warmup-after-first", OPT_NO_WARMUP_FIRST_ONLY, NOARG),
    OPT("set-consistent-seed", OPT_CONSISTENT_SEED, OPTARG), /* AIPerf */
    OPT("no-set-consistent-seed", OPT_NO_CONSISTENT_SEED, NOARG),
    OPT("input-dataset", OPT_INPUT_DATASET, OPTARG),
    OPT("generate-plots", OPT_GENERATE_PLOTS, OPTARG),
    OPT("show-trace-timing", OPT_SHOW_TRACE_TIMING, NOARG, FLAG(show_trace_timing)), /* AIPerf */
    OPT("url-strategy", OPT_URL_STRATEGY, ARG),                                      /* AIPerf */
    OPT("io-backend", OPT_IO_BACKEND, ARG),
    OPT("timestamps", OPT_TIMESTAMPS, ARG),
    OPT("coalesce-us", OPT_COALESCE_US, ARG),
    OPT("world-size", OPT_WORLD_SIZE, ARG),
    OPT("rank", OPT_RANK, ARG),
    OPT("coordinator", OPT_COORDINATOR, ARG),
    OPT("coordinator-timeout", OPT_COORD_TIMEOUT, ARG,
        NUM(coordinator_timeout_s, "seconds, 1 or more", 1, false, 86400)),
    OPT("cacert", OPT_CACERT, ARG),
    OPT("insecure", OPT_INSECURE, NOARG, .short_name = 'k', FLAG(insecure)),
    OPT("cert", OPT_CERT, ARG),
    OPT("key", OPT_KEY, ARG),
    OPT("config", OPT_CONFIG, ARG, .short_name = 'f', .flags = SG_OPT_NOT_A_KEY),
    OPT("random-range-ratio", OPT_VLLM_RANGE_RATIO, ARG), /* vLLM */
    OPT("dataset-name", OPT_VLLM_DATASET_NAME, ARG),      /* vLLM */
    OPT("save-result", OPT_VLLM_SAVE_RESULT, NOARG,
        .aliases = ALIASES("save-detailed")),                    /* vLLM: save-detailed; vLLM */
    OPT("percentile-metrics", OPT_VLLM_PERCENTILE_METRICS, ARG), /* vLLM */
    OPT("metric-percentiles", OPT_VLLM_METRIC_PERCENTILES, ARG), /* vLLM */
    OPT("ramp-up-strategy", OPT_RAMP_STRATEGY, ARG),             /* vLLM */
    OPT("ramp-up-start-rps", OPT_RAMP_START_RPS, ARG, NUM(ramp_start_rps, "requests/s, 0 or more", 0, false, MAX_RATE),
        GIVEN(ramp_start_given)),                  /* vLLM */
    OPT("ramp-up-end-rps", OPT_RAMP_END_RPS, ARG), /* vLLM */
    OPT("request-rate-ramp-duration", OPT_RATE_RAMP_DURATION, ARG,
        NUM(ramp_duration_s, "seconds, above 0", 0, true, 1e7), GIVEN(ramp_dur_given)), /* AIPerf */
    OPT("concurrency-ramp-duration", OPT_CONCURRENCY_RAMP_DURATION, ARG,
        NUM(concurrency_ramp_s, "seconds, above 0", 0, true, 1e7)), /* AIPerf */
    OPT("request-cancellation-rate", OPT_CANCEL_RATE, ARG,
        NUM(cancel_rate_pct, "a percentage from 0 to 100", 0, false, 100)), /* AIPerf */
    OPT("request-cancellation-delay", OPT_CANCEL_DELAY, ARG, NUM(cancel_delay_s, "seconds, 0 or more", 0, false, 1e7),
        GIVEN(cancel_delay_given)), /* AIPerf */
    OPT("tools", OPT_TOOLS, ARG, STR(tools_file, "expected a JSON file of tool definitions")),
    OPT("tool-choice", OPT_TOOL_CHOICE, ARG, STR(tool_choice, "expected auto, required, none or a tool's name")),
};
const size_t sg_opt_count = sizeof sg_opt_table / sizeof sg_opt_table[0];

const sg_opt_t *sg_opt_find(const char *name)
{
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        if (strcmp(r->name, name) == 0)
            return r;
        for (const char *const *a = r->aliases; a && *a; a++)
            if (strcmp(*a, name) == 0)
                return r;
    }
    return NULL;
}

const sg_opt_t *sg_opt_by_val(int val)
{
    for (size_t i = 0; i < sg_opt_count; i++)
        if (sg_opt_table[i].val == val)
            return &sg_opt_table[i];
    return NULL;
}

#define MAX_LONGS 256 /* names and aliases together; sg_opt_getopt stops short of overflowing (unit.test_config) */

const struct option *sg_opt_getopt(const char **shorts)
{
    static struct option longs[MAX_LONGS + 1];
    static char short_str[64];
    if (!longs[0].name) {
        size_t n = 0, ns = 0;
        short_str[ns++] = ':';
        for (size_t i = 0; i < sg_opt_count; i++) {
            const sg_opt_t *r = &sg_opt_table[i];
            if (n < MAX_LONGS)
                longs[n++] = (struct option){r->name, r->has_arg, NULL, r->val};
            for (const char *const *a = r->aliases; a && *a; a++)
                if (n < MAX_LONGS)
                    longs[n++] = (struct option){*a, r->has_arg, NULL, r->val};
            if (r->short_name && ns + 3 < sizeof short_str) {
                short_str[ns++] = r->short_name;
                if (r->has_arg == required_argument)
                    short_str[ns++] = ':';
            }
        }
        short_str[ns] = '\0';
    }
    if (shorts)
        *shorts = short_str;
    return longs;
}
