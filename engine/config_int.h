/*
 * What engine/config.c (the parse) and engine/options.c (the options table) share: the limits of the values and the
 * parse's own state, which the table's rows mark ("given") as they set their fields.
 */
#ifndef SG_CONFIG_INT_H
#define SG_CONFIG_INT_H

#include "sg_config.h"

#include <jansson.h>
#include <stdbool.h>

#define MAX_PROMPTS 10000000u /* each prompt is pre-rendered in memory; beyond this the table outgrows RAM */
#define MAX_ISL 1000000u      /* words; far beyond any model's context, still a sane allocation */
#define MAX_WORKERS 4096u
#define MAX_CONCURRENCY 10000000u
#define MAX_BATCH 65536u /* inputs (or passages) in one request */
#define MAX_RATE 1e9
#define MAX_PROFILE_RUNS 1000u /* --num-profile-runs */

/* What the parse learns on the way that sg_config_t does not hold: which flags were given, and how. */
typedef struct {
    json_t *extra;
    bool rate_given, concurrency_given, max_concurrency_given, distribution_given;
    bool conv_given;             /* a --conversation-* flag */
    const char *burstiness_flag; /* --burstiness or --arrival-smoothness, as given */
    const char *sweep_flag; /* the flag that made a sweep: "concurrency", "request-rate", "concurrency-range", ... */
    bool cooldown_given, search_range_given, search_precision_given, search_trials_given, search_max_trials_given;
    const char *multirun_flag; /* the first --profile-run-* flag given */
    bool scrape_interval_given;
    bool count_given, duration_given, artifact_dir_given, grace_given;
    const char *cache_bust; /* --cache-bust as given, NULL when absent */
    bool isl_given, num_prompts_given, prefix_len_given, warmup_given, format_given, speedup_given, block_given;
    bool ignore_eos;
    char *endpoint;
    const char *backend;
    const char *endpoint_type;
    bool rankings_generic; /* --endpoint-type rankings: NIM's shape unless --extra-inputs rankings:tei */
    bool osl_given;
    const char *api_key;
    const char *rankings_flag; /* the first --rankings-* flag given */
    bool batch_given;
    bool ramp_start_given, ramp_dur_given, cancel_delay_given;
    double ramp_end;            /* --ramp-up-end-rps; 0 when not given */
    const char *stability_flag; /* --stability-percentage or --max-trials, the first given */
    bool gpu_url_given;         /* --gpu-telemetry named an endpoint */
} parse_state_t;

/* The echo of the configuration (sg_options.h, sg_config_to_json): the hooks of the rows whose value is a structure,
 * each writing its key(s) into o, and the conditions under which a row's value means something (else null). */
#define SG_ECHO_HOOKS(X)                                                                                               \
    X(models)                                                                                                          \
    X(url)                                                                                                             \
    X(backend)                                                                                                         \
    X(endpoint_type)                                                                                                   \
    X(headers)                                                                                                         \
    X(extra_inputs)                                                                                                    \
    X(input_format)                                                                                                    \
    X(media)                                                                                                           \
    X(goodput)                                                                                                         \
    X(stability)                                                                                                       \
    X(sweep)                                                                                                           \
    X(slo)                                                                                                             \
    X(server_metrics_urls)                                                                                             \
    X(search)                                                                                                          \
    X(multi_run)                                                                                                       \
    X(io_backend)                                                                                                      \
    X(coalesce_us)                                                                                                     \
    X(config_file)
#define SG_ECHO_CONDS(X) X(rate) X(closed) X(grace) X(rankings) X(prefix) X(fixed) X(gamma) X(urls) X(rank) X(ramp)
#define SG_ECHO_HOOK_DECL(n) void sg_echo_##n(json_t *o, const sg_config_t *cfg);
#define SG_ECHO_COND_DECL(n) bool sg_echo_if_##n(const sg_config_t *cfg);
SG_ECHO_HOOKS(SG_ECHO_HOOK_DECL)
SG_ECHO_CONDS(SG_ECHO_COND_DECL)

#endif
