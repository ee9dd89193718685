/*
 * Per-worker aggregation of request records into the distributions and counters of METRICS.md, merged after
 * the workers join, and the exporters that turn the merged result into the console table and the files.
 *
 * Definitions (docs/metrics.md has the full text):
 *   ttft = first_token - intended; ttft_from_send = first_token - sent; ttst = second_token - first_token;
 *   ttfo = first_output - intended (the first content that is not reasoning);
 *   request_latency = end - intended; request_latency_from_send = end - sent; schedule_lag = sent - intended;
 *   itl = (request_latency - ttft) / (osl - 1) for osl >= 2; inter_chunk = gaps between content events;
 *   output_token_throughput_per_user = 1e9 / itl_ns tokens/s, for itl > 0 (none when every token came at once).
 * Only successful, non-warmup requests feed the latency and length distributions; failed ones are counted by
 * class. Requests surge cancelled itself (SG_ERRC_CANCELLED: an interrupt, a probe stopped early, the end of
 * --benchmark-grace-period) are neither: counted apart, with their wait (cancellation - intended) kept as a
 * right-censored observation, and in no error count or rate. schedule_lag is recorded for every non-warmup
 * request that was sent, whatever its end.
 *
 * Threading: a sg_metrics_t has one writer (its worker); merge and export run after the join.
 */
#ifndef SG_METRICS_H
#define SG_METRICS_H

#include "sg_common.h"
#include "sg_hist.h"
#include "sg_record.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

typedef enum {
    SG_M_TTFT = 0,
    SG_M_TTFT_FROM_SEND,
    SG_M_TTST,
    SG_M_TTFO, /* time to first output token: the first content that is not reasoning */
    SG_M_ITL,
    SG_M_INTER_CHUNK,
    SG_M_LATENCY,
    SG_M_LATENCY_FROM_SEND,
    SG_M_SCHEDULE_LAG,
    SG_M_OSL,
    SG_M_ISL,
    SG_M_CACHED_ISL,      /* prompt tokens the server reported taken from its cache; only where it said */
    SG_M_REASONING,       /* reasoning tokens per response */
    SG_M_TOKENS_PER_USER, /* recorded in milli-tokens/s */
    /* HTTP trace (AIPerf's and k6's names; docs/metrics.md, "HTTP trace"), times in ns like the ones above */
    SG_M_HTTP_CONNECTING, /* TCP connect + TLS handshake of a new connection; 0 on a reused one */
    SG_M_HTTP_TLS,        /* TLS handshake of a new connection; 0 on a reused one; https:// only */
    SG_M_HTTP_SENDING,    /* first request byte handed to the kernel to the last one sent */
    SG_M_HTTP_WAITING,    /* last request byte sent to the first response byte (TTFB) */
    SG_M_HTTP_RECEIVING,  /* first response byte to the end of the response */
    SG_M_HTTP_DURATION,   /* first request byte to the end of the response: sending + waiting + receiving */
    SG_M_TOOL_CALLS,      /* tool calls per response, over the responses that made any (docs/metrics.md) */
    SG_M_TOOL_TOKENS,     /* tool-call argument tokens per response, over the same responses */
    SG_M_TTFTC,           /* time to first tool-call token: the first streamed argument fragment - intended */
    SG_M__COUNT
} sg_metric_id_t;

/*
 * JSON/CSV tag (e.g. "time_to_first_token"), display name, and unit ("ms", "tokens", "tokens/sec/user").
 * The label is what the table and the CSV print and carries the unit: "Time to first token (ms)"; sg_metric_name
 * is the bare name ("Time to first token"). Static strings.
 */
const char *sg_metric_tag(sg_metric_id_t id);
const char *sg_metric_label(sg_metric_id_t id);
const char *sg_metric_unit(sg_metric_id_t id);
const char *sg_metric_name(sg_metric_id_t id);
/* Metrics only a streamed response has (a first token before the end, gaps between events). */
bool sg_metric_streamed_only(sg_metric_id_t id);
/* Metrics that need two tokens (or two events) in a response: ITL and the per-user rate, TTST, inter-chunk. */
bool sg_metric_needs_two_tokens(sg_metric_id_t id);
/* Times are recorded in ns and shown in ms; true for those. */
bool sg_metric_is_time(sg_metric_id_t id);
/* The HTTP trace's metrics (http_req_*): in the console table only with --show-trace-timing. */
bool sg_metric_is_trace(sg_metric_id_t id);
/* Factor from the histogram's integer unit to the exported unit: 1e-6 for times, 1e-3 for tokens/s, else 1. */
double sg_metric_scale(sg_metric_id_t id);

/* An SLO for goodput: a request is "good" when metric <= threshold (ms for times, tokens/s for throughput: >=). */
typedef struct {
    sg_metric_id_t metric;
    double threshold;
} sg_slo_t;

/* The most SLOs one run can give (the config's array holds as many). */
#define SG_SLO_MAX 8

/*
 * One metric of one successful record, as sg_metrics_add derives it (ns for times, tokens, tokens/s for the
 * per-user rate; an inter-chunk value is the record's largest gap). False when the record does not have it. For
 * the workers' live count of requests over a probe's bound (engine/search.c), off the usual path.
 */
bool sg_record_metric(const sg_record_t *r, sg_metric_id_t id, double *value);

/*
 * A metric by the name an SLO gives it (--goodput, --slo): its tag (time_to_first_token) or vLLM's and AIPerf's
 * spelling (ttft, tpot, itl, e2el). Lengths are not found: they describe the workload, not the service
 * (sg_metric_slo_ok). 0, or -1 when the name is none of those.
 */
int sg_metric_find(const char *name, size_t len, sg_metric_id_t *out);
/* False for the lengths (input/output sequence length): an SLO takes latencies and the per-user token rate. */
bool sg_metric_slo_ok(sg_metric_id_t id);

/* True for the metrics where more is better (the per-user token rate): their SLO is a floor, not a ceiling. */
bool sg_metric_larger_is_better(sg_metric_id_t id);

/*
 * How the successful requests of a run fared against one SLO. A request that does not have the metric (no TTFT
 * without a content event, no ITL with OSL below 2, ...) is neither met nor missed: it is not_measurable, and,
 * as in AIPerf, it does not count as good (docs/metrics.md, Goodput).
 */
typedef struct {
    uint64_t met;
    uint64_t missed;
    uint64_t not_measurable;
} sg_slo_tally_t;

typedef struct sg_metrics sg_metrics_t;

/* slos may be NULL when n_slos == 0; copied. NULL on OOM or when n_slos > SG_SLO_MAX. */
SG_WUR sg_metrics_t *sg_metrics_new(const sg_slo_t *slos, size_t n_slos);
void sg_metrics_free(sg_metrics_t *m);
/* Hot path, on the worker: derive and record the metrics of one completed request. Warmup records are ignored. */
void sg_metrics_add(sg_metrics_t *m, const sg_record_t *r);
/* dst += src, after the workers joined. */
SG_WUR int sg_metrics_merge(sg_metrics_t *dst, const sg_metrics_t *src);

/* Bytes held by m and its histograms (for sizing reports). */
size_t sg_metrics_bytes(const sg_metrics_t *m);

/* Multi-turn sessions: records with in_session are also counted in metrics of their turn index (the last index,
 * SG_METRICS_TURNS_MAX - 1, holds that turn and every later one). sg_metrics_turn is NULL for an index no record had;
 * the per-turn metrics carry no SLOs. */
#define SG_METRICS_TURNS_MAX 256
size_t sg_metrics_turns(const sg_metrics_t *m);
/* Several URLs: records with multi_url are also counted in the metrics of their URL index (no SLOs). sg_metrics_url is
 * NULL for an index no record had; sg_metrics_urls is one past the highest index seen (0: one URL). */
size_t sg_metrics_urls(const sg_metrics_t *m);
const sg_metrics_t *sg_metrics_url(const sg_metrics_t *m, size_t i);
const sg_metrics_t *sg_metrics_turn(const sg_metrics_t *m, size_t i);

/* Read-only views, for the exporters and the progress line. */
const sg_hist_t *sg_metrics_hist(const sg_metrics_t *m, sg_metric_id_t id);
uint64_t sg_metrics_ok(const sg_metrics_t *m);        /* successful requests */
uint64_t sg_metrics_errors(const sg_metrics_t *m);    /* failed requests, every class but cancelled */
uint64_t sg_metrics_cancelled(const sg_metrics_t *m); /* requests surge cancelled (not failed, not ok) */
/* requests cancelled on purpose by --request-cancellation-rate (not failed, not ok, not censored), and each one's
 * time from its last byte sent to its cancellation (ns) */
uint64_t sg_metrics_cancel_tests(const sg_metrics_t *m);
uint64_t sg_metrics_ramp(const sg_metrics_t *m); /* measured requests intended inside a ramp */
const sg_hist_t *sg_metrics_cancel_test_time(const sg_metrics_t *m);
/* The cancelled requests' waits: cancellation - intended start, ns. Their latency would have been at least that. */
const sg_hist_t *sg_metrics_cancel_wait(const sg_metrics_t *m);
/*
 * Offered request rate: measured requests issued (ok + failed + cancelled) per second of the sending, i.e.
 * (n - 1) / (last intended start - first intended start); 0 with fewer than 2 requests. Open loop: the schedule's
 * rate as it came out; closed loop: what the slots asked of the server.
 */
double sg_metrics_offered_rate(const sg_metrics_t *m);
/*
 * The request_latency percentile p (ns) with each cancelled request counted at its wait: a lower bound of what the
 * percentile would have been had they completed. Equal to the reported one when nothing was cancelled. NAN on OOM.
 */
double sg_metrics_latency_at_least(const sg_metrics_t *m, double p);
uint64_t sg_metrics_good(const sg_metrics_t *m);          /* successful requests meeting every SLO */
uint64_t sg_metrics_output_tokens(const sg_metrics_t *m); /* sum of OSL over successful requests */
uint64_t sg_metrics_input_tokens(const sg_metrics_t *m);  /* sum of ISL (client count) over successful requests */
/* Tool calls over successful requests: the calls, and their argument tokens (a part of sg_metrics_output_tokens:
 * each response's at most its OSL). */
uint64_t sg_metrics_tool_calls(const sg_metrics_t *m);
uint64_t sg_metrics_tool_tokens(const sg_metrics_t *m);
/* Successful requests of two or more tokens that all arrived at once (latency == TTFT, so ITL is 0): no
 * output_token_throughput_per_user (1/ITL) for them; they are left out of that metric, as AIPerf does. */
uint64_t sg_metrics_per_user_undefined(const sg_metrics_t *m);
/* The top of a metric's histogram, in its recorded unit (ns, tokens, milli-tokens/s): larger values are clamped. */
uint64_t sg_metric_range_max(sg_metric_id_t id);
/* The SLOs m was made with (*slos) and a tally for each (*tallies), in the order given; returns how many. */
size_t sg_metrics_slo_tallies(const sg_metrics_t *m, const sg_slo_t **slos, const sg_slo_tally_t **tallies);
uint64_t sg_metrics_osl_source_count(const sg_metrics_t *m, sg_osl_source_t s);

/*
 * A server's count next to the client's for the same requests: OSL (usage.completion_tokens vs the tokenizer
 * on the output text) and ISL (usage.prompt_tokens vs the client's prompt count; a chat server adds its
 * template's tokens, so those differ by design). diff = server - client. Only successful requests with both.
 */
typedef struct {
    uint64_t compared; /* requests that had both counts */
    uint64_t differ;   /* of those, how many disagree */
    int64_t sum_diff;
    uint64_t sum_abs_diff;
    int64_t min_diff, max_diff; /* 0 when compared is 0 */
    uint64_t max_abs_diff;
} sg_len_cmp_t;
void sg_metrics_osl_cmp(const sg_metrics_t *m, sg_len_cmp_t *out);
void sg_metrics_isl_cmp(const sg_metrics_t *m, sg_len_cmp_t *out);
/* Cached prompt tokens over the requests whose server reported them: their count, the cached tokens, and their
 * prompt tokens (the server's usage count, else the client's ISL), so cached / prompt is the share served from
 * the server's cache. */
typedef struct {
    uint64_t requests;
    uint64_t cached;
    uint64_t prompt;
} sg_cached_t;
void sg_metrics_cached(const sg_metrics_t *m, sg_cached_t *out);
int64_t sg_metrics_first_intended_ns(const sg_metrics_t *m); /* min intended over counted requests; 0 if none */
int64_t sg_metrics_last_end_ns(const sg_metrics_t *m);       /* max end over counted requests; 0 if none */

/*
 * Error summary: distinct (class, http status, message sample) groups with counts, up to 32 distinct messages
 * per metrics object; further distinct messages fold into a group with the same class+status and the message
 * "(other messages)". Groups are in first-seen order (exporters sort by count). The array belongs to m.
 */
typedef struct {
    sg_err_class_t cls;
    int32_t http_status;
    char message[SG_RECORD_MSG];
    uint64_t count;
} sg_error_group_t;
size_t sg_metrics_error_groups(const sg_metrics_t *m, const sg_error_group_t **groups);
/*
 * The group's class and HTTP status as one phrase nobody misreads: "http 404 Not Found", "connect",
 * "timeout (after HTTP 200 headers)" (a status on a class other than http is that of the response head that had
 * arrived when the request failed). Into buf (cap bytes, always NUL-terminated).
 */
void sg_error_group_label(const sg_error_group_t *g, char *buf, size_t cap);

/* ---------- exporters (after the run; they may allocate and do I/O) ---------- */

struct sg_slo_check;
struct sg_slo_verdict;

/* A client stall (--stall-threshold-ms): a window in which a worker's loop ran late by more than the threshold. */
typedef struct {
    uint32_t worker;
    double start_s, end_s; /* seconds after the run's start instant */
    double max_lag_ms;     /* the largest lateness in it */
    uint64_t requests;     /* requests due in it (issued late), warmup included */
} sg_stall_t;

/* The server unreachable: a window in which connects to it failed (refused, unreachable, reset), the workers' windows
 * that overlap merged into one. */
typedef struct {
    double start_s,
        end_s;        /* seconds after the run's start instant: the first failed connect, the next that succeeded */
    uint64_t refused; /* connection attempts that failed in it (each failed the request it was opened for) */
    uint64_t waiting; /* the most requests and backed-off closed-loop slots waiting at once, summed over workers */
    bool recovered;   /* false: the run ended with the server still unreachable (end_s: when it ended) */
} sg_unreach_t;

typedef struct {
    const char *title;                    /* table title, e.g. "surge | LLM Metrics" */
    bool streaming;                       /* false: no TTFT/ITL rows */
    bool interrupted;                     /* the run was stopped by SIGINT or SIGTERM (or another rank) */
    const char *interrupted_by;           /* "SIGINT", "SIGTERM", "another rank stopped"; NULL: not said */
    const char *const *files_not_written; /* base names of the files written before the summary that failed */
    size_t n_files_not_written;
    const char *cancelled_why;       /* why surge cancelled requests ("the run was interrupted", "the probe was
                                        stopped early", "--benchmark-grace-period ended"); NULL: not said */
    uint64_t warmup_count;           /* warmup requests (not in the metrics) */
    const char *input_config_json;   /* a JSON object (text) describing the run's configuration */
    const char *server_metrics_json; /* --server-metrics-url: the scrapes' summary object (text); NULL: none */
    const char *gpu_json; /* DCGM series scraped: the summary's "gpu_telemetry" (sg_srvm_gpu_json); NULL: none */
    bool has_slos;
    /* --show-trace-timing: the http_req_* rows in the console table too */
    bool show_trace_timing;
    /* several URLs (-u given more than once): each one as given, and what the workers saw of it (NULL: not known) */
    const char *const *url_names;
    size_t n_url_names;
    const struct sg_url_info *url_info;
    double client_cpu_s; /* CPU time surge spent from the start instant to the last response; 0 = unknown */
    double client_cpu_user_s, client_cpu_sys_s; /* its split into user and system time (0, 0 = unknown) */
    /* the whole process's CPU when the summary was written (set-up and teardown included); 0, 0 = unknown */
    double process_cpu_user_s, process_cpu_sys_s;
    /* client stalls: the summary's client_stalls and the console's lines; threshold 0 = not watched (no object) */
    double stall_threshold_ms;
    const sg_stall_t *stalls; /* n_stalls, by start */
    size_t n_stalls;
    uint64_t stalls_dropped; /* windows past what the workers keep (SG_STALL_WINDOWS_MAX each), not listed */
    const char *io_backend;  /* the workers' I/O: "io_uring" or "epoll"; NULL = unknown */
    /* Where receive times came from (docs/metrics.md, "Timestamps"): sg_timestamp_source's name, NULL = unknown;
     * reads stamped by the kernel and reads timed by the client's clock; connections that refused stamps; steps
     * of CLOCK_REALTIME seen during the run and the largest */
    const char *timestamp_source;
    uint64_t rx_stamped, rx_unstamped, stamp_refused, clock_steps;
    int64_t clock_step_max_ns;
    uint64_t events_shared; /* content events that shared their read's time with the one before */
    /* the workers' wake-ups: --coalesce-us (auto resolved), how the loops coalesce (sg_loop_coalesce_method; NULL =
     * unknown: no "client_wakeups" then), and from the start instant their loops' turns, the turns that waited
     * (wake-ups; the others polled), the completions handed over, the turns that coalesced and the sum of their windows
     * (ns) */
    uint32_t coalesce_us;
    const char *coalesce_method;
    uint64_t loop_turns, loop_waits, loop_completions, loop_coalesced, loop_coalesced_ns;
    const char *tokenizer;       /* sg_tok_describe() of --tokenizer, NULL without one */
    const char *isl_source;      /* how the client counted prompt tokens: "tokenizer" or "words"; NULL = unknown */
    const sg_unreach_t *unreach; /* n_unreach windows the server was unreachable, by start */
    size_t n_unreach;
    uint64_t unreach_dropped; /* windows past what the workers keep (SG_UNREACH_WINDOWS_MAX each), not listed */
    uint64_t silent_closes;   /* kept-alive connections the server closed right after a response, unannounced */
    bool no_reuse_after_stream, no_reuse_after_whole; /* so connections were not reused after those responses */
    /* --slo: the checks and their verdicts on m (sg_slo.h), n_slo_checks of each; none when 0 */
    const struct sg_slo_check *slo_checks;
    const struct sg_slo_verdict *slo_verdicts;
    size_t n_slo_checks;
    uint64_t resent_count;  /* measured requests sent again (a reused connection closed before any response;
                               HTTP/2: a refused stream); each counted once, its latency still from intended */
    int64_t wall_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC during the run: AIPerf's files carry wall-clock
                               times; 0 = unknown (they are then left out) */
    const char *extra_json; /* a JSON object (text) whose members join the summary's (a run's clock, a merge's
                               ranks); NULL: none */
    const char *command;    /* the command line that ran it, shell-quoted (sg_config_command); NULL: unknown */
    const char *host;       /* the client host's name (gethostname); NULL: unknown */
    /* How often the run's prompts repeat: the summary's "prompt_reuse" object (text), also a console line
     * (sg_prompt_reuse_line); NULL: not known (then neither is written) */
    const char *prompt_reuse_json;
    /* Images and audio in the requests: the summary's "media" object (text, sg_media_summary in workload/), also
     * a console line (sg_media_line); NULL when no request carried any */
    const char *media_json;
} sg_run_info_t;

/* The console's GPU lines from a "gpu_telemetry" object (sg_srvm_gpu_json's text); nothing when NULL. */
void sg_export_gpu_table(FILE *out, const char *gpu_json);

/* "kernel" (every read carried the kernel's stamp), "user" (none did, or none were asked for: --timestamps
 * user), "mixed" (some fell back to the client's clock) */
const char *sg_timestamp_source(bool asked, uint64_t stamped, uint64_t unstamped);

/*
 * The "prompt_reuse" object: cache_bust ("first_turn_prefix" or "none"), requests (sent, warmup included),
 * distinct_prompts (null for sessions), and with "none" the reason and, for a prompt table, table_prompts,
 * input_file, shared_prefixes and prefix_prompt_length. sg_prompt_reuse_fill adds sends_per_prompt
 * (requests / distinct_prompts; null when unknown); sg_prompt_reuse_line says it in one line for the console.
 */
void sg_prompt_reuse_fill(json_t *o);
void sg_prompt_reuse_line(const json_t *o, char *line, size_t cap);
/* The "media" object (docs/metrics.md) in one line for the console. */
void sg_media_line(const json_t *o, char *line, size_t cap);

/* Several URLs: what the workers saw of one URL, over all of them (engine/run_urls.c). */
typedef struct sg_url_info {
    uint64_t connect_failures; /* connects refused, reset or timed out */
    uint64_t rerouted;         /* requests meant for it sent to another URL while it was out of rotation */
    uint64_t outages;          /* times a worker took it out of rotation */
    double first_down_s;       /* the first of those, s from the start instant; < 0: never */
    double last_up_s;          /* the last connect that worked after one, s from the start; < 0: none */
    bool down_at_end;          /* some worker still had it out of rotation at the end */
} sg_url_info_t;

/* Several URLs (export_urls.c): the summary's "urls" array (NULL without several URLs or on OOM), the console's
 * per-URL lines, and the CSV's per-URL part. */
json_t *sg_export_urls_json(const sg_metrics_t *m, const sg_run_info_t *info);
void sg_export_urls_table(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info);
void sg_export_urls_csv(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info);

/* Benchmark duration in seconds: last end - first intended over the measured phase. 0 when nothing ran. */
double sg_metrics_duration_s(const sg_metrics_t *m);

/* The boxed console table in GenAI-Perf's style plus throughput/error lines. */
int sg_export_table(FILE *out, const sg_metrics_t *m, const sg_run_info_t *info);
/* profile_export_surge.json (AIPerf summary layout + ours). 0 or -errno. */
SG_WUR int sg_export_json(const char *path, const sg_metrics_t *m, const sg_run_info_t *info);
/* A JSON document to path, whole or not at all (pretty, 15 digits); every JSON file surge writes goes through it.
 * Takes the reference (NULL: -ENOMEM). 0 or -errno. */
SG_WUR int sg_json_write(const char *path, json_t *root);
/* profile_export_surge.csv. 0 or -errno. */
SG_WUR int sg_export_csv(const char *path, const sg_metrics_t *m, const sg_run_info_t *info);
/*
 * AIPerf's summary files, for the tools that read AIPerf's (export_aiperf.c, docs/files.md):
 * profile_export_aiperf.json (its JsonExportData: AIPerf's metric tags and units, input_config in its UserConfig
 * shape, error_summary, start_time/end_time) and profile_export_aiperf.csv (its two-part CSV). Same numbers as
 * profile_export_surge.json. info may be NULL. 0 or -errno.
 */
SG_WUR int sg_export_aiperf_json(const char *path, const sg_metrics_t *m, const sg_run_info_t *info);
SG_WUR int sg_export_aiperf_csv(const char *path, const sg_metrics_t *m, const sg_run_info_t *info);

/*
 * inputs.json, in GenAI-Perf's layout {"data": [{"payload": [BODY]}, ...]}: one element per i in [0, n) for which
 * body_at(ctx, i, &len) returns a body (NULL skips i). Each body must be one JSON value; it is copied as it is.
 * Streams through a fixed buffer, written whole or not at all. 0 or -errno.
 */
typedef const char *(*sg_body_at_fn)(void *ctx, size_t i, size_t *len);
SG_WUR int sg_export_inputs(const char *path, size_t n, sg_body_at_fn body_at, void *ctx);

/* ---- per-worker record log: binary, appended, merged into the per-request JSONL files after the run ---- */

typedef struct sg_reclog sg_reclog_t;

/* Creates/truncates path; the caller's thread writes it (one write(2) per 64 KiB). NULL with *err = -errno. */
SG_WUR sg_reclog_t *sg_reclog_open(const char *path, int *err);
/*
 * The same for a measuring thread: appends never touch the disk. Full 64 KiB buffers go through a lock-free ring
 * to one writer thread for the process (started with the first such log, ended with the last). The log holds at
 * most cap_bytes of buffers (at least 2): past that, while the writer is behind, whole records are dropped and
 * counted (sg_reclog_dropped; the writer says so on stderr), never waited for. SURGE_TEST_WRITE_DELAY_MS
 * (test-only) delays every write of every record log by that many ms: a slow disk.
 */
SG_WUR sg_reclog_t *sg_reclog_open_async(const char *path, size_t cap_bytes, int *err);
#define SG_RECLOG_CAP_DEFAULT (64u << 20)
/* Buffered append. 0, SG_RECLOG_DROPPED (an async log whose writer is behind: counted, not an error) or -errno. */
#define SG_RECLOG_DROPPED 1
SG_WUR int sg_reclog_append(sg_reclog_t *l, const sg_record_t *r);
/* Records an async log dropped so far (0 for sg_reclog_open's). */
uint64_t sg_reclog_dropped(const sg_reclog_t *l);
/* Flush and close (async: waits until the writer has written everything). 0 or -errno. */
SG_WUR int sg_reclog_close(sg_reclog_t *l);
/* Counts the tokens of len bytes of text; a negative SG_E* code on failure. */
typedef ssize_t (*sg_token_count_fn)(void *ctx, const char *text, size_t len);
/*
 * The post-run OSL pass over one worker's log (after the join; one thread per log, each with its own ctx):
 * checks the log end to end, then for each measured record with output text sets the tokenizer count (count)
 * and the final OSL (sg_record_settle_osl) in the log itself, and adds every measured record to m (when not
 * NULL) with those final values. 0, -errno, SG_EPROTO (corrupt log) or count's error.
 */
SG_WUR int sg_reclog_finalize(const char *path, sg_token_count_fn count, void *ctx, sg_metrics_t *m);
/* Every measured (non-warmup) record of one log, in log order, to fn (after the OSL pass: with final OSL). The
 * record and its events are valid during the call only. 0, -errno or SG_EPROTO (corrupt log). */
typedef void (*sg_record_fn)(void *ctx, const sg_record_t *r);
SG_WUR int sg_reclog_each(const char *path, sg_record_fn fn, void *ctx);
/*
 * The same for part of a log: the records that start at byte offsets from_pos to to_pos (both included) and were
 * intended in [from_ns, to_ns); the others in that span are skipped before they are decoded. fn gets each
 * record's offset. from_pos is 0 (the first record) or an offset fn was given; to_pos UINT64_MAX is the end.
 * Re-reading a band of a log costs that band, not the log. 0, -errno or SG_EPROTO (corrupt log).
 */
typedef void (*sg_record_pos_fn)(void *ctx, const sg_record_t *r, uint64_t pos);
SG_WUR int sg_reclog_each_span(const char *path, uint64_t from_pos, uint64_t to_pos, int64_t from_ns, int64_t to_ns,
                               sg_record_pos_fn fn, void *ctx);

/*
 * --slice-duration: the measured requests of the logs in consecutive windows of slice_s seconds from the first
 * intended start, each request in the window of its intended start; each window's metrics as the run's (same
 * definitions, sg_metrics_add), written to json_path (AIPerf's layout: {"timeslices": [summary + timeslice_index,
 * ...], "input_config"}) and csv_path (AIPerf's tidy rows: Timeslice,Metric,Unit,Stat,Value, then the window's
 * start and end). Every window from the first to the last is written, empty ones too. slos as the run's goodput
 * SLOs; info as the run's (its input_config once at the top). Each file whole or not at all. 0, -errno, SG_EPROTO.
 */
SG_WUR int sg_export_timeslices(const char *json_path, const char *csv_path, const char *const *log_paths,
                                size_t n_logs, double slice_s, const sg_slo_t *slos, size_t n_slos,
                                const sg_run_info_t *info);

/*
 * Read every worker's log, order records by intended time, and write one JSON object per non-warmup request to
 * out_path (surge's own lines: profile_export_surge.jsonl). model_names maps sg_record_t.model to a name (may be
 * NULL). 0 or -errno / SG_EPROTO (corrupt log).
 */
SG_WUR int sg_export_jsonl(const char *out_path, const char *const *log_paths, size_t n_logs,
                           const char *const *model_names, size_t n_models);

/* The per-request files of one run, written in one pass over the logs (sg_export_records). */
typedef struct {
    const char *surge_path;  /* surge's own lines, as sg_export_jsonl writes them */
    const char *aiperf_path; /* AIPerf's MetricRecordInfo lines (profile_export.jsonl); NULL: not written */
    const char *const *model_names;
    size_t n_models;
    int64_t wall_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC: AIPerf's times are wall-clock ns */
    int64_t *base_out;      /* when set: gets the absolute time surge's lines count from (the earliest intended
                               start; 0 when nothing was measured), so merges can put several runs on one clock */
} sg_records_out_t;
/* sg_export_jsonl, plus AIPerf's per-request file from the same records in the same order. Each file whole or not
 * at all; a corrupt log leaves neither. 0 or -errno / SG_EPROTO. */
SG_WUR int sg_export_records(const sg_records_out_t *out, const char *const *log_paths, size_t n_logs);

#endif
