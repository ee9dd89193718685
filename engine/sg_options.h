/*
 * `surge profile`'s options, one row each (engine/options.c): the row's name is the long flag, the config file's key
 * (engine/cfgfile.c) and the name docs/cli.md and --help list; its aliases are peers' names for the same option
 * (GenAI-Perf's older ones, AIPerf's, vLLM's), each parsed as the row. getopt's table is made from the rows
 * (sg_opt_getopt), as is what a config file may hold and repeat, surge profile --help (each row's block, in
 * options.c's help_layout), for the rows that say how (a flag, a number in a range, a string, a word of a set),
 * the value's parse into its sg_config_t field (the rest, and the rules across options, are engine/config.c's), and
 * the JSON echo of the configuration (below).
 */
#ifndef SG_OPTIONS_H
#define SG_OPTIONS_H

#include "sg_config.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What getopt_long returns for each option: a short option's letter, else a number above any character. */
enum {
    OPT_MODEL = 'm',
    OPT_URL = 'u',
    OPT_HEADER = 'H',
    OPT_VERBOSE = 'v',
    OPT_HELP = 'h',
    OPT_MEASUREMENT_INTERVAL = 'p',
    OPT_STABILITY = 's',
    OPT_BATCH_SIZE = 'b',
    OPT_CONFIG = 'f', /* --config/-f FILE: a YAML file of flags (engine/cfgfile.c expands it before the parse) */
    OPT_MODEL_STRATEGY = 256,
    OPT_SERVICE_KIND,
    OPT_BACKEND,
    OPT_ENDPOINT_TYPE,
    OPT_ENDPOINT,
    OPT_STREAMING,
    OPT_HTTP2,
    OPT_MAX_CONNECTIONS,
    OPT_LOCAL_ADDRESS,
    OPT_API_KEY,
    OPT_EXTRA_INPUTS,
    OPT_REQUEST_RATE,
    OPT_DISTRIBUTION,
    OPT_CONCURRENCY,
    OPT_MAX_CONCURRENCY,
    OPT_REQUEST_COUNT,
    OPT_DURATION,
    OPT_GRACE,
    OPT_WARMUP,
    OPT_TIMEOUT,
    OPT_SEED,
    OPT_WORKERS,
    OPT_ISL_MEAN,
    OPT_ISL_STDDEV,
    OPT_NUM_PROMPTS,
    OPT_CACHE_BUST,
    OPT_OSL_MEAN,
    OPT_OSL_STDDEV,
    OPT_OSL_DETERMINISTIC,
    OPT_TOKENIZER,
    OPT_INPUT_FILE,
    OPT_ARTIFACT_DIR,
    OPT_OVERWRITE,
    OPT_EXPORT_FILE,
    OPT_MAX_ERROR_RATE,
    OPT_GOODPUT,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_VERSION,
    OPT_CONCURRENCY_RANGE,
    OPT_RATE_RANGE,
    OPT_INPUT_DATASET,
    OPT_GENERATE_PLOTS,
    OPT_SHOW_TRACE_TIMING,
    OPT_URL_STRATEGY,
    OPT_FIXED_SCHEDULE,
    OPT_FIXED_SPEEDUP,
    OPT_INPUT_FORMAT,
    OPT_PREFIX_LEN,
    OPT_NUM_PREFIX,
    OPT_BLOCK_SIZE,
    OPT_IGNORE_EOS,
    OPT_COOLDOWN,
    OPT_SLICE_DURATION,
    OPT_MAX_TRIALS,
    OPT_GPU_TELEMETRY,
    OPT_STALL_THRESHOLD,
    OPT_SERVER_METRICS_URL,
    OPT_SERVER_METRICS_INTERVAL,
    OPT_BURSTINESS,
    OPT_IO_BACKEND,
    OPT_EXPORT_LEVEL,
    OPT_TIMESTAMPS,
    OPT_COALESCE_US,
    OPT_WORLD_SIZE,
    OPT_RANK,
    OPT_COORDINATOR,
    OPT_COORD_TIMEOUT,
    OPT_SLO,
    OPT_SEARCH,
    OPT_SEARCH_RANGE,
    OPT_SEARCH_PRECISION,
    OPT_SEARCH_TRIALS,
    OPT_SEARCH_MAX_TRIALS,
    OPT_CONFIDENCE_LEVEL,
    OPT_NUM_PROFILE_RUNS,
    OPT_PROFILE_RUN_COOLDOWN,
    OPT_WARMUP_FIRST_ONLY,
    OPT_NO_WARMUP_FIRST_ONLY,
    OPT_CONSISTENT_SEED,
    OPT_NO_CONSISTENT_SEED,
    OPT_CONV_NUM,
    OPT_TURN_MEAN,
    OPT_TURN_STDDEV,
    OPT_TURN_DELAY_MEAN,
    OPT_TURN_DELAY_STDDEV,
    OPT_TURN_DELAY_RATIO,
    OPT_RANK_PASSAGES_MEAN,
    OPT_RANK_PASSAGES_STDDEV,
    OPT_RANK_PASSAGE_TOKENS_MEAN,
    OPT_RANK_PASSAGE_TOKENS_STDDEV,
    OPT_RANK_QUERY_TOKENS_MEAN,
    OPT_RANK_QUERY_TOKENS_STDDEV,
    /* vLLM's `vllm bench serve` flags that are not aliases of ours */
    OPT_VLLM_DATASET_NAME,
    OPT_VLLM_RANGE_RATIO,
    OPT_VLLM_SAVE_RESULT,
    OPT_VLLM_PERCENTILE_METRICS,
    OPT_VLLM_METRIC_PERCENTILES,
    OPT_RAMP_STRATEGY,
    OPT_RAMP_START_RPS,
    OPT_RAMP_END_RPS,
    OPT_RATE_RAMP_DURATION,
    OPT_CONCURRENCY_RAMP_DURATION,
    OPT_CANCEL_RATE,
    OPT_CANCEL_DELAY,
    OPT_MEDIA, /* every --image-* and --audio-* flag: sg_media_option tells them apart by name */
    /* TLS */
    OPT_INSECURE = 'k',
    OPT_CACERT = 0x200,
    OPT_CERT,
    OPT_KEY,
    OPT_TOOLS,
    OPT_TOOL_CHOICE,
};

#define SG_OPT_REPEATABLE 1u     /* each time given adds a value (-m a -m b); a config file's list is several */
#define SG_OPT_NOT_A_KEY 2u      /* the command line's only (--help, --version, --config): no config-file key */
#define SG_OPT_ECHO_ZERO_NULL 4u /* the echo shows the field's 0 as null (not set) */
#define SG_OPT_ECHO_OFF_ZERO 8u  /* when echo_if is false the echo shows 0, not null */

/*
 * How a row's value is taken. SG_OT_CUSTOM: engine/config.c's one_option has a case for it. The others are generic
 * (config.c's typed_option): FLAG sets a bool field, U32/U64 take a whole number in [lo, hi] (U64: no upper bound),
 * NUM a number in [lo, hi] (or (lo, hi] with lo_open) described by `range` in the message, STR a non-empty string
 * (`range` says what was expected), ENUM one of `choices`, stored as the int of `values` at the same place (`range`
 * lists them for the message).
 */
typedef enum { SG_OT_CUSTOM = 0, SG_OT_FLAG, SG_OT_U32, SG_OT_U64, SG_OT_NUM, SG_OT_STR, SG_OT_ENUM } sg_opt_type_t;

/*
 * The JSON echo of the configuration (sg_config_to_json: the summary's input_config, surge config expand) is made
 * from the rows, so that a new option cannot be missing from it: each row says how it is echoed. A typed row (and a
 * custom one that names its field with echo_type) is echoed by one loop in config.c, under its key (the name with
 * '_' for '-'), as its type says (a FLAG a boolean, U32/U64/INT an integer, NUM a number, "inf" for infinity, STR a
 * string, ENUM its word; null for a NULL string or an ENUM value without a word); echo_if false shows null (or 0).
 * A row whose value is a structure has an echo hook that writes its key(s); a row echoed inside another's structure
 * or not at all says why in no_echo. unit.test_config checks that every row does one of these.
 */
typedef void (*sg_opt_echo_fn)(json_t *o, const sg_config_t *cfg);
typedef bool (*sg_opt_echo_if)(const sg_config_t *cfg);
/* A custom row's echo as if typed: SG_OT_FLAG, U32, U64, NUM, STR, or one of these: an int32_t field, or a bool
 * field shown as a word, choices[0] for false and choices[1] for true */
#define SG_OT_INT 100
#define SG_OT_BOOL_WORD 101

typedef struct {
    const char *name;           /* canonical long name: config key, docs/cli.md's and --help's name */
    int val;                    /* OPT_*: several rows share OPT_MEDIA (sg_media_option tells them apart by name) */
    int has_arg;                /* getopt's no_argument, required_argument, optional_argument */
    char short_name;            /* 0 for none */
    unsigned flags;             /* SG_OPT_* */
    const char *const *aliases; /* NULL-terminated other names, or NULL */
    sg_opt_type_t type;
    size_t field;      /* typed rows (and echo_type rows): offsetof(sg_config_t, the field) */
    size_t given;      /* 0, or 1 + offsetof(parse_state_t, a bool the row sets to true when given) */
    size_t set;        /* 0, or 1 + offsetof(sg_config_t, a bool the row sets to true when given) */
    size_t first;      /* 0, or 1 + offsetof(parse_state_t, a const char * set to the row's name unless already set) */
    double lo, hi;     /* U32, NUM: the range; U64: lo only */
    bool lo_open;      /* NUM: lo itself is refused */
    const char *range; /* NUM, STR, ENUM: what the message says was expected */
    const char *const *choices; /* ENUM: the words taken (NULL-terminated); SG_OT_BOOL_WORD: false's, true's */
    const int *values;          /* ENUM: the value of each */
    const char *help;           /* its block of --help, as printed: the synopsis line(s), then the text at column 32 */
    const char *help_in;        /* or: the row whose block describes this one too (--key is in --cert's) */
    /* the echo (above): */
    int echo_type;          /* a custom row's field's type for the generic echo (.field); 0 for none */
    sg_opt_echo_if echo_if; /* NULL: always; false: null (SG_OPT_ECHO_OFF_ZERO: 0) */
    sg_opt_echo_fn echo;    /* a structure's hook */
    const char *no_echo;    /* or: why the row is not echoed, or the key it is echoed in */
} sg_opt_t;

/* The rows, in getopt's order (--help's is options.c's help_layout). */
extern const sg_opt_t sg_opt_table[];
extern const size_t sg_opt_count;

/* The echo's key of a generically echoed row: its name with '_' for '-' (buf of cap bytes). */
const char *sg_opt_echo_key(const sg_opt_t *r, char *buf, size_t cap);

/* The row of a long name (canonical or an alias), or NULL. */
const sg_opt_t *sg_opt_find(const char *name);
/* The first row whose val is val (a short option's, or one of OPT_MEDIA's), or NULL. */
const sg_opt_t *sg_opt_by_val(int val);

/* The i-th item of --help's layout (NULL past the end): a row's name (*is_row) or text printed as it is. */
const char *sg_opt_help_layout(size_t i, bool *is_row);

struct option;
/* getopt_long's table made from the rows (each name, then its aliases; NULL-terminated) and, in *shorts, the
 * short-option string (":" first: getopt reports a missing value as ':'). Made on the first call; main thread. */
const struct option *sg_opt_getopt(const char **shorts);

#endif
