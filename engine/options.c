/* `surge profile`'s options table: see sg_options.h. */
#define _GNU_SOURCE
#include "sg_options.h"

#include <getopt.h>
#include <string.h>

#define ALIASES(...) ((const char *const[]){__VA_ARGS__, NULL})

/*
 * The peers' flags we do not implement take optional_argument: whatever form the user typed (--flag, --flag=x,
 * --flag x), we get to explain instead of getopt complaining about the argument first.
 */
const sg_opt_t sg_opt_table[] = {
    {"model", OPT_MODEL, required_argument, 'm', SG_OPT_REPEATABLE, NULL},
    {"model-selection-strategy", OPT_MODEL_STRATEGY, required_argument, 0, 0, NULL},
    {"url", OPT_URL, required_argument, 'u', SG_OPT_REPEATABLE, ALIASES("base-url")}, /* vLLM: base-url */
    {"service-kind", OPT_SERVICE_KIND, required_argument, 0, 0, NULL},
    {"backend", OPT_BACKEND, required_argument, 0, 0, NULL},
    {"endpoint-type", OPT_ENDPOINT_TYPE, required_argument, 0, 0, NULL},
    {"endpoint", OPT_ENDPOINT, required_argument, 0, 0, NULL},
    {"streaming", OPT_STREAMING, no_argument, 0, 0, NULL},
    {"http2", OPT_HTTP2, no_argument, 0, 0, NULL},
    {"max-connections", OPT_MAX_CONNECTIONS, required_argument, 0, 0, NULL},
    {"local-address", OPT_LOCAL_ADDRESS, required_argument, 0, 0, NULL},
    {"header", OPT_HEADER, required_argument, 'H', SG_OPT_REPEATABLE, NULL},
    {"api-key", OPT_API_KEY, required_argument, 0, 0, NULL},
    {"extra-inputs", OPT_EXTRA_INPUTS, required_argument, 0, SG_OPT_REPEATABLE, NULL},
    {"request-rate", OPT_REQUEST_RATE, required_argument, 0, 0, NULL},
    {"request-distribution", OPT_DISTRIBUTION, required_argument, 0, 0, NULL},
    {"concurrency", OPT_CONCURRENCY, required_argument, 0, 0, NULL},
    {"max-concurrency", OPT_MAX_CONCURRENCY, required_argument, 0, 0, NULL},
    {"request-count", OPT_REQUEST_COUNT, required_argument, 0, 0, ALIASES("num-requests")}, /* AIPerf */
    {"benchmark-duration", OPT_DURATION, required_argument, 0, 0, NULL},
    {"benchmark-grace-period", OPT_GRACE, required_argument, 0, 0, NULL},
    {"warmup-request-count", OPT_WARMUP, required_argument, 0, 0, NULL},
    {"request-timeout", OPT_TIMEOUT, required_argument, 0, 0, NULL},
    {"random-seed", OPT_SEED, required_argument, 0, 0, ALIASES("seed")}, /* vLLM: seed */
    {"workers", OPT_WORKERS, required_argument, 0, 0, NULL},
    {"synthetic-input-tokens-mean", OPT_ISL_MEAN, required_argument, 0, 0,
     .aliases = ALIASES("isl", "prompt-input-tokens-mean", "random-input-len")}, /* vLLM: random-input-len */
    {"synthetic-input-tokens-stddev", OPT_ISL_STDDEV, required_argument, 0, 0,
     .aliases = ALIASES("isl-stddev", "prompt-input-tokens-stddev")},
    {"num-prompts", OPT_NUM_PROMPTS, required_argument, 0, 0, NULL},
    {"cache-bust", OPT_CACHE_BUST, required_argument, 0, 0, NULL},
    {"output-tokens-mean", OPT_OSL_MEAN, required_argument, 0, 0,
     .aliases = ALIASES("osl", "prompt-output-tokens-mean", "random-output-len")}, /* vLLM: random-output-len */
    {"output-tokens-stddev", OPT_OSL_STDDEV, required_argument, 0, 0,
     .aliases = ALIASES("osl-stddev", "prompt-output-tokens-stddev")},
    {"ignore-eos", OPT_IGNORE_EOS, no_argument, 0, 0, NULL}, /* vLLM */
    {"output-tokens-mean-deterministic", OPT_OSL_DETERMINISTIC, no_argument, 0, 0, NULL},
    {"tokenizer", OPT_TOKENIZER, required_argument, 0, 0, NULL},
    {"input-file", OPT_INPUT_FILE, required_argument, 0, 0,
     .aliases = ALIASES("dataset-path")}, /* vLLM: dataset-path */
    {"input-format", OPT_INPUT_FORMAT, required_argument, 0, 0,
     .aliases = ALIASES("custom-dataset-type")}, /* AIPerf's */
    {"rankings-passages-mean", OPT_RANK_PASSAGES_MEAN, required_argument, 0, 0, NULL},
    {"rankings-passages-stddev", OPT_RANK_PASSAGES_STDDEV, required_argument, 0, 0, NULL},
    {"rankings-passages-prompt-token-mean", OPT_RANK_PASSAGE_TOKENS_MEAN, required_argument, 0, 0, NULL},
    {"rankings-passages-prompt-token-stddev", OPT_RANK_PASSAGE_TOKENS_STDDEV, required_argument, 0, 0, NULL},
    {"rankings-query-prompt-token-mean", OPT_RANK_QUERY_TOKENS_MEAN, required_argument, 0, 0, NULL},
    {"rankings-query-prompt-token-stddev", OPT_RANK_QUERY_TOKENS_STDDEV, required_argument, 0, 0, NULL},
    {"image-width-mean", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"image-width-stddev", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"image-height-mean", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"image-height-stddev", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"image-format", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"image-batch-size", OPT_MEDIA, required_argument, 0, 0, ALIASES("batch-size-image")},
    {"audio-length-mean", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"audio-length-stddev", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"audio-format", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"audio-batch-size", OPT_MEDIA, required_argument, 0, 0, ALIASES("batch-size-audio")},
    {"audio-sample-rates", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"audio-depths", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"audio-num-channels", OPT_MEDIA, required_argument, 0, 0, NULL},
    {"conversation-num", OPT_CONV_NUM, required_argument, 0, 0,
     .aliases = ALIASES("num-conversations", "num-sessions")},
    {"conversation-turn-mean", OPT_TURN_MEAN, required_argument, 0, 0, ALIASES("session-turns-mean")},
    {"conversation-turn-stddev", OPT_TURN_STDDEV, required_argument, 0, 0, ALIASES("session-turns-stddev")},
    {"conversation-turn-delay-mean", OPT_TURN_DELAY_MEAN, required_argument, 0, 0,
     .aliases = ALIASES("session-turn-delay-mean")},
    {"conversation-turn-delay-stddev", OPT_TURN_DELAY_STDDEV, required_argument, 0, 0,
     .aliases = ALIASES("session-turn-delay-stddev")},
    {"conversation-turn-delay-ratio", OPT_TURN_DELAY_RATIO, required_argument, 0, 0,
     .aliases = ALIASES("session-delay-ratio")},
    {"prefix-prompt-length", OPT_PREFIX_LEN, required_argument, 0, 0, NULL},
    {"num-prefix-prompts", OPT_NUM_PREFIX, required_argument, 0, 0, ALIASES("prefix-prompt-pool-size")},
    {"isl-block-size", OPT_BLOCK_SIZE, required_argument, 0, 0, NULL},
    {"fixed-schedule", OPT_FIXED_SCHEDULE, no_argument, 0, 0, NULL},
    {"fixed-schedule-speedup", OPT_FIXED_SPEEDUP, required_argument, 0, 0, NULL},
    {"artifact-dir", OPT_ARTIFACT_DIR, required_argument, 0, 0,
     .aliases = ALIASES("result-dir")}, /* vLLM: result-dir */
    {"overwrite", OPT_OVERWRITE, no_argument, 0, 0, NULL},
    {"profile-export-file", OPT_EXPORT_FILE, required_argument, 0, 0,
     .aliases = ALIASES("result-filename")}, /* vLLM: result-filename */
    {"export-level", OPT_EXPORT_LEVEL, required_argument, 0, 0, NULL},
    {"verbose", OPT_VERBOSE, no_argument, 'v', 0, NULL},
    {"max-error-rate", OPT_MAX_ERROR_RATE, required_argument, 0, 0, NULL},
    {"goodput", OPT_GOODPUT, required_argument, 0, SG_OPT_REPEATABLE, NULL},
    {"progress", OPT_PROGRESS, no_argument, 0, 0, NULL},
    {"no-progress", OPT_NO_PROGRESS, no_argument, 0, 0, ALIASES("disable-tqdm")}, /* vLLM: disable-tqdm */
    {"version", OPT_VERSION, no_argument, 0, SG_OPT_NOT_A_KEY, NULL},
    {"help", OPT_HELP, no_argument, 'h', SG_OPT_NOT_A_KEY, NULL},
    {"measurement-interval", OPT_MEASUREMENT_INTERVAL, required_argument, 'p', 0,
     NULL},                                                                   /* perf_analyzer, GenAI-Perf: ms */
    {"stability-percentage", OPT_STABILITY, required_argument, 's', 0, NULL}, /* perf_analyzer, GenAI-Perf */
    {"max-trials", OPT_MAX_TRIALS, required_argument, 0, 0, NULL},            /* perf_analyzer */
    {"gpu-telemetry", OPT_GPU_TELEMETRY, optional_argument, 0, SG_OPT_REPEATABLE,
     NULL}, /* AIPerf: DCGM exporter URLs */
    {"batch-size", OPT_BATCH_SIZE, required_argument, 'b', 0,
     .aliases = ALIASES("batch-size-text", "prompt-batch-size")},                /* GenAI-Perf's newer name; AIPerf's */
    {"concurrency-range", OPT_CONCURRENCY_RANGE, required_argument, 0, 0, NULL}, /* perf_analyzer */
    {"request-rate-range", OPT_RATE_RANGE, required_argument, 0, 0, NULL},       /* perf_analyzer */
    {"parameter-sweep-cooldown-seconds", OPT_COOLDOWN, required_argument, 0, 0, NULL}, /* AIPerf */
    {"slo", OPT_SLO, required_argument, 0, SG_OPT_REPEATABLE, NULL},
    {"slice-duration", OPT_SLICE_DURATION, required_argument, 0, 0, NULL}, /* AIPerf */
    {"stall-threshold-ms", OPT_STALL_THRESHOLD, required_argument, 0, 0, NULL},
    {"server-metrics-url", OPT_SERVER_METRICS_URL, required_argument, 0, SG_OPT_REPEATABLE,
     NULL},                                                                                  /* GenAI-Perf, AIPerf */
    {"server-metrics-interval", OPT_SERVER_METRICS_INTERVAL, required_argument, 0, 0, NULL}, /* seconds */
    {"burstiness", OPT_BURSTINESS, required_argument, 0, 0,
     .aliases = ALIASES("arrival-smoothness")}, /* vLLM; AIPerf */
    {"search", OPT_SEARCH, required_argument, 0, 0, NULL},
    {"search-range", OPT_SEARCH_RANGE, required_argument, 0, 0, NULL},
    {"search-precision", OPT_SEARCH_PRECISION, required_argument, 0, 0, NULL},
    {"search-trials", OPT_SEARCH_TRIALS, required_argument, 0, 0, NULL},
    {"search-max-trials", OPT_SEARCH_MAX_TRIALS, required_argument, 0, 0, NULL},
    {"num-profile-runs", OPT_NUM_PROFILE_RUNS, required_argument, 0, 0, NULL},                        /* AIPerf */
    {"confidence-level", OPT_CONFIDENCE_LEVEL, required_argument, 0, 0, NULL},                        /* AIPerf */
    {"profile-run-cooldown-seconds", OPT_PROFILE_RUN_COOLDOWN, required_argument, 0, 0, NULL},        /* AIPerf */
    {"profile-run-disable-warmup-after-first", OPT_WARMUP_FIRST_ONLY, optional_argument, 0, 0, NULL}, /* AIPerf */
    {"no-profile-run-disable-warmup-after-first", OPT_NO_WARMUP_FIRST_ONLY, no_argument, 0, 0, NULL},
    {"set-consistent-seed", OPT_CONSISTENT_SEED, optional_argument, 0, 0, NULL}, /* AIPerf */
    {"no-set-consistent-seed", OPT_NO_CONSISTENT_SEED, no_argument, 0, 0, NULL},
    {"input-dataset", OPT_INPUT_DATASET, optional_argument, 0, 0, NULL},
    {"generate-plots", OPT_GENERATE_PLOTS, optional_argument, 0, 0, NULL},
    {"show-trace-timing", OPT_SHOW_TRACE_TIMING, no_argument, 0, 0, NULL}, /* AIPerf */
    {"url-strategy", OPT_URL_STRATEGY, required_argument, 0, 0, NULL},     /* AIPerf */
    {"io-backend", OPT_IO_BACKEND, required_argument, 0, 0, NULL},
    {"timestamps", OPT_TIMESTAMPS, required_argument, 0, 0, NULL},
    {"coalesce-us", OPT_COALESCE_US, required_argument, 0, 0, NULL},
    {"world-size", OPT_WORLD_SIZE, required_argument, 0, 0, NULL},
    {"rank", OPT_RANK, required_argument, 0, 0, NULL},
    {"coordinator", OPT_COORDINATOR, required_argument, 0, 0, NULL},
    {"coordinator-timeout", OPT_COORD_TIMEOUT, required_argument, 0, 0, NULL},
    {"cacert", OPT_CACERT, required_argument, 0, 0, NULL},
    {"insecure", OPT_INSECURE, no_argument, 'k', 0, NULL},
    {"cert", OPT_CERT, required_argument, 0, 0, NULL},
    {"key", OPT_KEY, required_argument, 0, 0, NULL},
    {"config", OPT_CONFIG, required_argument, 'f', SG_OPT_NOT_A_KEY, NULL},
    {"random-range-ratio", OPT_VLLM_RANGE_RATIO, required_argument, 0, 0, NULL}, /* vLLM */
    {"dataset-name", OPT_VLLM_DATASET_NAME, required_argument, 0, 0, NULL},      /* vLLM */
    {"save-result", OPT_VLLM_SAVE_RESULT, no_argument, 0, 0,
     .aliases = ALIASES("save-detailed")},                                              /* vLLM: save-detailed; vLLM */
    {"percentile-metrics", OPT_VLLM_PERCENTILE_METRICS, required_argument, 0, 0, NULL}, /* vLLM */
    {"metric-percentiles", OPT_VLLM_METRIC_PERCENTILES, required_argument, 0, 0, NULL}, /* vLLM */
    {"ramp-up-strategy", OPT_RAMP_STRATEGY, required_argument, 0, 0, NULL},             /* vLLM */
    {"ramp-up-start-rps", OPT_RAMP_START_RPS, required_argument, 0, 0, NULL},           /* vLLM */
    {"ramp-up-end-rps", OPT_RAMP_END_RPS, required_argument, 0, 0, NULL},               /* vLLM */
    {"request-rate-ramp-duration", OPT_RATE_RAMP_DURATION, required_argument, 0, 0, NULL},       /* AIPerf */
    {"concurrency-ramp-duration", OPT_CONCURRENCY_RAMP_DURATION, required_argument, 0, 0, NULL}, /* AIPerf */
    {"request-cancellation-rate", OPT_CANCEL_RATE, required_argument, 0, 0, NULL},               /* AIPerf */
    {"request-cancellation-delay", OPT_CANCEL_DELAY, required_argument, 0, 0, NULL},             /* AIPerf */
    {"tools", OPT_TOOLS, required_argument, 0, 0, NULL},
    {"tool-choice", OPT_TOOL_CHOICE, required_argument, 0, 0, NULL},
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
