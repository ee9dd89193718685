/*
 * The validated configuration of one `surge profile` run: everything argv said, in one struct. Built by
 * sg_config_parse() on the main thread before any worker starts; read-only afterwards (workers share it).
 */
#ifndef SG_CONFIG_H
#define SG_CONFIG_H

#include "sg_common.h"
#include "sg_metrics.h"
#include "sg_openai.h"
#include "sg_slo.h"
#include "sg_workload.h"

typedef enum { SG_DIST_POISSON = 0, SG_DIST_CONSTANT = 1, SG_DIST_GAMMA = 2 } sg_dist_t;
typedef enum { SG_MODEL_ROUND_ROBIN = 0, SG_MODEL_RANDOM = 1 } sg_model_strategy_t;
/* What a sweep varies: a list or range of --concurrency or --request-rate values, each its own load point. */
typedef enum { SG_SWEEP_NONE = 0, SG_SWEEP_CONCURRENCY, SG_SWEEP_RATE } sg_sweep_kind_t;
/* --search: the largest load whose point meets every --slo (engine/search.c). */
typedef enum { SG_SEARCH_NONE = 0, SG_SEARCH_MAX_RATE, SG_SEARCH_MAX_CONCURRENCY } sg_search_kind_t;

#define SG_MAX_SCRAPE_URLS 8 /* --server-metrics-url given at most this many times */

/* --coalesce-us: `auto` (the default), the window auto means where receive times are the kernel's (docs/
 * architecture.md gives the measurements behind it; 0 where they are taken in user space), and the most it takes */
#define SG_COALESCE_AUTO UINT32_MAX
#define SG_COALESCE_US_DEFAULT 1000u
#define SG_COALESCE_US_MAX 100000u
#define SG_STABLE_MAX_TRIALS 1000u /* --max-trials at most */

/* -u/--url given several times (AIPerf's multi-URL load balancing, docs/cli.md): at most this many */
#define SG_MAX_URLS 8
typedef enum { SG_URL_ROUND_ROBIN = 0, SG_URL_LEAST_IN_FLIGHT } sg_url_strategy_t;
typedef struct {
    char *url;         /* as given */
    char *host;        /* parsed: name or address */
    char *host_header; /* "host:port" */
    uint16_t port;
} sg_url_target_t;

typedef struct {
    /* endpoint */
    char **models; /* -m/--model, repeatable; at least one */
    size_t n_models;
    sg_model_strategy_t model_strategy;
    char *url;  /* as given */
    char *host; /* parsed from url: name or address */
    uint16_t port;
    bool tls;          /* https:// */
    char *base_path;   /* "" or "/prefix" without trailing slash */
    char *host_header; /* "host:port" */
    sg_oai_kind_t endpoint_type;
    uint32_t batch_size; /* --batch-size: inputs per embeddings request, passages per rankings query (1) */
    /* AIPerf's --rankings-* (synthetic rankings): on when any was given; then every field is set, the ones not
     * given from --batch-size and the synthetic ISL */
    sg_rankings_synth_t rankings;
    char *endpoint_path; /* full request path, e.g. "/v1/chat/completions" (base_path + endpoint) */
    bool endpoint_given; /* --endpoint named the endpoint; else the type's default (after a /v1 base: without v1/) */
    bool streaming;
    /* --service-kind triton: KServe v2 gRPC (ModelInfer / ModelStreamInfer) over HTTP/2; implies http2 */
    bool triton;
    int backend;              /* sg_kserve_backend_t: --backend tensorrtllm (default) or vllm; triton only */
    bool http2;               /* --http2: h2c with prior knowledge, many streams per connection */
    uint32_t max_connections; /* --max-connections: per target, over all workers; 0 = as demand needs */
    char *local_address;      /* --local-address as given (syntax checked: sg_tcp_local_parse); NULL = none */
    char **headers;           /* -H "Name: value", validated; NULL-terminated */
    size_t n_headers;
    char *extra_inputs_json; /* JSON object text merged into every body ("{}" when none) */

    /* TLS (validated: the files exist and are readable; cert and key come together) */
    char *cacert;      /* --cacert: PEM CA certificates to trust instead of the system store; NULL = system */
    bool insecure;     /* -k/--insecure: no certificate or host-name verification */
    char *client_cert; /* --cert: PEM client certificate (chain); NULL = none */
    char *client_key;  /* --key: its PEM private key; set exactly when client_cert is */

    /* load */
    double request_rate; /* req/s; 0 = closed loop; INFINITY (--request-rate inf): every request due at the start */
    sg_dist_t distribution;
    double burstiness;        /* gamma's shape k (vLLM's --burstiness; AIPerf's --arrival-smoothness): CV 1/sqrt(k) */
    uint32_t concurrency;     /* closed loop slots (when request_rate == 0) */
    uint32_t max_concurrency; /* open-loop cap on in-flight requests; 0 = none */
    /* ramps (docs/scheduling.md): the open loop's rate goes from ramp_start_rps to request_rate over
     * ramp_duration_s (the parse derives it when not given); the closed loop's slots open one by one over
     * concurrency_ramp_s */
    int ramp_strategy; /* sg_ramp_t (sg_sched.h): 0 = no rate ramp */
    double ramp_start_rps;
    double ramp_duration_s;
    double concurrency_ramp_s; /* 0 = none */
    /* cancellation tests (AIPerf's): this percentage of requests, chosen by --random-seed, is cancelled
     * cancel_delay_s after its last byte was sent (docs/metrics.md) */
    double cancel_rate_pct;
    double cancel_delay_s;
    uint64_t request_count;      /* measured requests; 0 = bounded by duration only */
    double benchmark_duration_s; /* 0 = bounded by count only */
    double benchmark_grace_s;    /* --benchmark-grace-period: after the duration's sending, how long requests
                                    outstanding may finish before they are cancelled; < 0 (default) = no bound but
                                    --request-timeout */
    uint64_t warmup_request_count;
    double request_timeout_s; /* per request, from send; also bounds the drain */
    uint64_t random_seed;
    unsigned workers;
    int io_backend;       /* sg_io_backend_t (sg_loop.h): --io-backend, else $SURGE_IO_BACKEND, else auto */
    bool user_timestamps; /* --timestamps user: receive times from the clock at the callback, not the kernel */
    uint32_t coalesce_us; /* --coalesce-us: the workers' longest coalescing window; 0 = off, SG_COALESCE_AUTO */
    /* one run over several processes (dist/): 0 / -1 / NULL when not given (the launcher's environment may say) */
    uint32_t world_size;
    int32_t rank;
    char *coordinator;
    double coordinator_timeout_s;

    /* load points: a sweep runs each value in turn; a search picks its values (concurrency/request_rate above
     * hold the first value, so that everything validated for one point holds for each) */
    sg_sweep_kind_t sweep;
    double *sweep_values; /* in the order given (a range: ascending); n_sweep_values >= 2 */
    size_t n_sweep_values;
    double cooldown_s; /* --parameter-sweep-cooldown-seconds: pause between the points of a sweep or search */
    sg_search_kind_t search;
    double search_lo, search_hi; /* --search-range; search_hi 0 = no upper bound */
    double search_precision;     /* relative: stop when (lowest failing - highest passing) <= this x passing */
    uint32_t search_trials;      /* probes pooled at each value before its verdict is read */
    uint32_t search_max_trials;  /* at most this many, while the pooled verdict is inconclusive */
    /* a multi-run (engine/multirun.c): the same load point num_profile_runs times, mean and confidence interval of
     * every metric across the runs (AIPerf's --num-profile-runs); 1 is a single run */
    uint32_t num_profile_runs;
    double confidence_level;       /* --confidence-level, in (0, 1): of every interval surge states */
    double profile_run_cooldown_s; /* --profile-run-cooldown-seconds: pause between runs */
    bool warmup_only_first_run;    /* --profile-run-disable-warmup-after-first (AIPerf's default: true) */

    /* workload */
    char *tokenizer; /* --tokenizer as given (file, directory or Hugging Face id), NULL when absent */
    uint32_t isl_mean, isl_stddev;
    uint32_t num_prompts;
    int32_t osl_mean; /* -1: do not ask for max_tokens */
    uint32_t osl_stddev;
    bool osl_deterministic;
    uint32_t prefix_len, num_prefix; /* shared prefixes: num_prefix prompts of prefix_len tokens; 0 = none */
    /* --cache-bust (AIPerf's flag): true when every synthetic prompt starts with words of its own request
     * (first_turn_prefix), so that no request repeats an earlier one's prompt. On by default unless the run asks for
     * reuse; cache_bust_off_reason then says what asked ("--num-prompts", "--cache-bust none", ...). */
    bool cache_bust;
    const char *cache_bust_off_reason; /* static; NULL when cache_bust */
    bool cache_bust_given;             /* --cache-bust was given (else the default, which gives way to a tokenizer
                                          that cannot spell the words exactly) */
    char *input_file;                  /* --input-file, NULL for synthetic prompts */
    char *tools_file;                  /* --tools FILE, or NULL */
    char *tool_choice;                 /* --tool-choice, or NULL (not sent) */
    char *tools_json;                  /* the --tools file's array, checked, compact; NULL without --tools */
    /* images and audio (AIPerf's --image-* and --audio-* flags, workload/sg_media.h; docs/workloads.md) */
    sg_media_spec_t media;
    bool num_prompts_given; /* --num-prompts was given: the table keeps that size even with media */
    int input_format;       /* sg_input_format_t; 0 = detect */
    uint32_t block_size;    /* tokens per hash_ids block of a trace */
    bool fixed_schedule;    /* send each trace entry at its timestamp */
    /* multi-turn sessions (docs/sessions.md): on with turn_mean > 1 or a multi_turn input file */
    bool sessions;
    uint32_t conversation_num;                       /* --conversation-num: distinct synthetic conversations */
    double turn_mean, turn_stddev;                   /* --conversation-turn-mean/-stddev: turns per conversation */
    double turn_delay_mean_ms, turn_delay_stddev_ms; /* --conversation-turn-delay-mean/-stddev */
    double turn_delay_ratio;                         /* --conversation-turn-delay-ratio: scales every delay */
    double fixed_schedule_speedup;                   /* timestamps are divided by this */

    /* output */
    char *artifact_dir;
    char *profile_export_file; /* base name; "profile_export.json" by default */
    char *profile_export_stem; /* profile_export_file without its extension: <stem>_surge.json, <stem>.jsonl */
    bool verbose;
    bool generate_plots; /* --generate-plots: report.html (surge report) in the artifact directory */
    bool export_summary; /* --export-level summary: no per-request JSONL files (AIPerf's flag; records is the
                            default, raw is refused: surge keeps no request and response bodies) */
    bool overwrite;      /* --overwrite: an artifact directory holding a run is emptied of it, not left for DIR-2 */
    /* -u/--url given more than once: every URL (urls[0] is url, host, port, host_header above), the same scheme and
     * base path, requests balanced over them per worker by url_strategy (--url-strategy); n_urls 0 or 1: one URL */
    sg_url_target_t urls[SG_MAX_URLS];
    size_t n_urls;
    sg_url_strategy_t url_strategy;
    /* --show-trace-timing (AIPerf): the http_req_* rows in the console table */
    bool show_trace_timing;
    char *server_metrics_urls[SG_MAX_SCRAPE_URLS]; /* --server-metrics-url, each http://HOST[:PORT]/PATH */
    size_t n_server_metrics_urls;
    double server_metrics_interval_s; /* --server-metrics-interval (default 1) */
    bool gpu_telemetry;               /* --gpu-telemetry: its DCGM URLs are in server_metrics_urls too */
    double slice_duration_s;          /* --slice-duration: per-window metrics in <stem>_surge_timeslices.*; 0 = none */
    /* stability windows (engine/stable.c): windows of measurement_interval_ms (0: off) until the last three agree
     * within stability_pct, at most max_trials windows */
    double measurement_interval_ms;
    double stability_pct;
    uint32_t max_trials;
    double stall_threshold_ms; /* --stall-threshold-ms: a worker this late is a client stall (default 100; 0 off) */
    double max_error_rate;     /* share of failed requests allowed before a non-zero exit; 0 by default */
    sg_slo_t slos[8];          /* --goodput: per-request thresholds */
    size_t n_slos;
    sg_slo_check_t slo_checks[SG_SLO_MAX]; /* --slo: verdicts on the whole point (sg_slo.h) */
    size_t n_slo_checks;
    int progress;           /* -1 auto (stderr is a tty), 0 off, 1 on */
    char *config_file;      /* --config FILE as given, NULL without one (engine/cfgfile.c) */
    char config_sha256[65]; /* its content's SHA-256, lowercase hex; "" without one */
    bool show_version;      /* --version was given: parse returned 1, the caller prints the version */
} sg_config_t;

/*
 * Parse the arguments of `surge profile`: argv[0] is the subcommand name ("profile") and is skipped, like a
 * program name; the flags follow. argv may be permuted (GNU getopt). On bad input prints one clear line to stderr
 * naming the flag and the problem and returns SG_EINVAL; on --help prints usage to stdout and returns 1; on
 * --version sets cfg->show_version and returns 1 without printing (the caller knows the version); the caller
 * exits 0 on 1. 0 on success. On any non-zero return cfg owns nothing (sg_config_free is still safe to call).
 * Not thread-safe (getopt's globals); call from the main thread.
 */
SG_WUR int sg_config_parse(sg_config_t *cfg, int argc, char **argv);
/* Sessions (cfg->sessions) with what they cannot run with: 0, or SG_EINVAL with one line on stderr. Called by the
 * parse, and again once an input file turned out to be multi_turn. */
SG_WUR int sg_config_check_sessions(const sg_config_t *cfg);
/* The media flags with the rest of cfg (engine/config_media.c): 0, or SG_EINVAL with one line on stderr. */
SG_WUR int sg_config_check_media(const sg_config_t *cfg);
/* Frees every string cfg owns and zeroes it; safe on a zeroed or already freed cfg. */
void sg_config_free(sg_config_t *cfg);
/* A JSON object (malloc'd text) describing cfg, for input_config in the summary: made from the options table
 * (engine/sg_options.h), every row echoed or saying why not. surge config expand prints it, and --config reads it
 * back (engine/cfgfile.c). */
char *sg_config_to_json(const sg_config_t *cfg);
/* The echo of the defaults, before any flag (a new reference, or NULL): what an expanded file need not say. */
struct json_t;
struct json_t *sg_config_default_echo(void);
/* The command line (argc words of argv, argv[0] being "profile"), as one line a POSIX shell reads back the same:
 * "surge profile -m m ...", each word quoted where needed, the values of --api-key and of credential headers
 * (-H 'Authorization: ...') replaced by <redacted>. Call before sg_config_parse (it permutes argv). malloc'd. */
char *sg_config_command(int argc, char *const *argv);
/* GenAI-Perf style run name: "<model>-openai-<endpoint-type>-concurrency<N>" or "-request_rate<R>". malloc'd. */
char *sg_config_run_name(const sg_config_t *cfg);
void sg_config_usage(FILE *out);

/* For engine/cfgfile.c, which turns a config file's keys into these flags. */
struct option;
/* getopt's table of `surge profile`'s long options (NULL-terminated) and, in *shorts, its short-option string. */
const struct option *sg_config_options(const char **shorts);
/* Whether the option (its table val) adds a value each time it is given (-m, -H, --extra-inputs, --slo, ...). */
bool sg_config_option_repeatable(int val);
/* Check one option's value alone, as the parse takes it (long name, value or NULL): 0, or SG_EINVAL after one line on
 * stderr that begins with where ("FILE:LINE") when given. Cross-option rules are the full parse's. */
SG_WUR int sg_config_check_value(const char *name, const char *arg, const char *where);

#endif
