/*
 * The run controller: everything before the workers start (validate, build the workload, check the target,
 * create the artifact directory), the wait (progress line, SIGINT), and everything after they join (merge,
 * export, exit status). Runs on the main thread only.
 */
#define _GNU_SOURCE
#include "run_int.h"

#include "sg_artdir.h"
#include "sg_report.h"
#include "sg_scrape.h"

#include "sg_grpc.h"
#include "sg_kserve.h"
#include "sg_loop.h"
#include "sg_osl.h"
#include "sg_preflight.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_interrupted; /* the signal that interrupted the run (SIGINT, SIGTERM), 0: none */

bool run_interrupted(void)
{
    return g_interrupted != 0;
}

const char *run_interrupt_name(void)
{
    return g_interrupted == SIGTERM ? "SIGTERM" : g_interrupted ? "SIGINT" : NULL;
}

void run_cooldown(double s)
{
    int64_t until = sg_now_ns() + (int64_t)(s * 1e9);
    while (!g_interrupted && sg_now_ns() < until) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
}

static void on_sigint(int sig)
{
    g_interrupted = sig;
}

static unsigned cpu_list(int *cpus, unsigned max)
{
    cpu_set_t set;
    unsigned n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < max; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    if (n == 0)
        cpus[n++] = -1;
    return n;
}

/*
 * The progress line: measured requests done (ok + failed + cancelled, of --request-count), the split, and the
 * request throughput so far: ok requests per second since the start instant, the run's request_throughput as it
 * stands (docs/metrics.md, Rates). Warmup shows its own count.
 */
static void progress_line(sg_worker_t **ws, unsigned n, const sg_config_t *cfg, int64_t start_ns, bool final)
{
    uint64_t done = 0, errors = 0, cancelled = 0, inflight = 0, warm = 0;
    for (unsigned i = 0; i < n; i++) {
        const sg_worker_progress_t *p = sg_worker_progress(ws[i]);
        done += atomic_load_explicit(&p->completed, memory_order_relaxed);
        errors += atomic_load_explicit(&p->errors, memory_order_relaxed);
        cancelled += atomic_load_explicit(&p->cancelled, memory_order_relaxed);
        inflight += atomic_load_explicit(&p->in_flight, memory_order_relaxed);
        warm += atomic_load_explicit(&p->warmup_done, memory_order_relaxed);
    }
    int64_t now = sg_now_ns();
    uint64_t ok = done - errors - cancelled;
    char total[32] = "?";
    if (cfg->request_count)
        snprintf(total, sizeof(total), "%llu", (unsigned long long)cfg->request_count);
    double elapsed = (double)(now - start_ns) / 1e9;
    if (elapsed < 0)
        elapsed = 0;
    fprintf(stderr, "\r\033[K%s %llu/%s done: %llu ok, %llu failed, %llu cancelled  %.1f ok/s  %llu in flight  %.1fs",
            warm < cfg->warmup_request_count ? "warmup" : "profile", (unsigned long long)done, total,
            (unsigned long long)ok, (unsigned long long)errors, (unsigned long long)cancelled,
            elapsed > 0 ? (double)ok / elapsed : 0.0, (unsigned long long)inflight, elapsed);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

/* User and system CPU of the whole process so far, every thread: the workers' cost (and the controller's, which
 * sleeps). Whole microseconds, as getrusage counts them; both 0 when it fails. */
static void process_cpu(int64_t *user_us, int64_t *sys_us)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        *user_us = *sys_us = 0;
        return;
    }
    *user_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
    *sys_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

/* Microseconds in seconds: the double nearest the decimal the summary prints, so that a figure read back from the
 * summary (surge merge) is this one exactly, and a ratio over it (tokens per CPU-second) comes out the same. */
static double us_s(int64_t us)
{
    return (double)us / 1e6;
}

/* "profile_export.json" -> "profile_export" */
static char *export_stem(const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char *stem = strdup(base);
    if (!stem)
        return NULL;
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem)
        *dot = 0;
    return stem;
}

/* The files of one point, named from the --profile-export-file stem: surge's own (<stem>_surge.json/.csv/.jsonl)
 * and AIPerf's (<stem>.jsonl, <stem>_aiperf.json/.csv: AIPerf's names for its default stem, profile_export). */
typedef struct {
    char *surge_json, *surge_csv, *surge_jsonl, *aiperf_json, *aiperf_csv, *aiperf_jsonl;
} export_paths_t;

static void export_paths_free(export_paths_t *x)
{
    free(x->surge_json);
    free(x->surge_csv);
    free(x->surge_jsonl);
    free(x->aiperf_json);
    free(x->aiperf_csv);
    free(x->aiperf_jsonl);
}

static char *export_path(const char *dir, const char *stem, const char *suffix)
{
    char name[512];
    snprintf(name, sizeof(name), "%s%s", stem, suffix);
    return sg_path_join(dir, name);
}

static int export_paths(export_paths_t *x, const char *dir, const char *stem)
{
    x->surge_json = export_path(dir, stem, "_surge.json");
    x->surge_csv = export_path(dir, stem, "_surge.csv");
    x->surge_jsonl = export_path(dir, stem, "_surge.jsonl");
    x->aiperf_json = export_path(dir, stem, "_aiperf.json");
    x->aiperf_csv = export_path(dir, stem, "_aiperf.csv");
    x->aiperf_jsonl = export_path(dir, stem, ".jsonl");
    return x->surge_json && x->surge_csv && x->surge_jsonl && x->aiperf_json && x->aiperf_csv && x->aiperf_jsonl
               ? 0
               : -ENOMEM;
}

static int report_err(const char *what, int err, int rc)
{
    if (err >= 0)
        return rc;
    fprintf(stderr, "surge: writing %s: %s\n", what, sg_strerror(err));
    return err;
}

/* The base names of the files that failed, for the summary's files_not_written (at most 8). */
typedef struct {
    const char *names[8];
    size_t n;
} not_written_t;

static void not_written(not_written_t *nw, const char *path, int err)
{
    if (err >= 0 || !path || nw->n == 8)
        return;
    const char *slash = strrchr(path, '/');
    nw->names[nw->n++] = slash ? slash + 1 : path;
}

static int write_exports(const sg_run_t *run, sg_worker_t **ws, unsigned n, sg_metrics_t *merged,
                         const sg_run_info_t *info)
{
    const sg_config_t *cfg = run->cfg;
    char *stem = export_stem(cfg->profile_export_file ? cfg->profile_export_file : "profile_export.json");
    export_paths_t x = {0};
    const char **logs = calloc(n, sizeof(*logs));
    int rc = stem && logs ? export_paths(&x, run->artifact_dir, stem) : -ENOMEM;
    if (rc)
        goto out;
    for (unsigned i = 0; i < n; i++)
        logs[i] = sg_worker_log_path(ws[i]);

    /* the payload table's names: -m's, then the models raw request bodies name themselves */
    int64_t base = 0;
    sg_records_out_t recs = {
        .surge_path = x.surge_jsonl,
        .aiperf_path = x.aiperf_jsonl,
        .model_names = (const char *const *)run->payloads->model_names,
        .n_models = run->payloads->n_model_names,
        .wall_offset_ns = info->wall_offset_ns,
        .base_out = &base,
    };
    /* the record logs as they lay on disk (the workers' compact form, before any JSONL), and what the workers
     * had to drop because the disk fell behind (each said so on stderr) */
    uint64_t log_bytes = 0, dropped = 0;
    int log_err = 0; /* a worker's record log that could not be written: the JSONL cannot be whole */
    for (unsigned i = 0; i < n; i++) {
        struct stat st;
        if (stat(logs[i], &st) == 0)
            log_bytes += (uint64_t)st.st_size;
        sg_worker_stats_t ws_st;
        sg_worker_stats(ws[i], &ws_st);
        dropped += ws_st.records_dropped;
        if (ws_st.log_err && !log_err)
            log_err = ws_st.log_err;
    }
    /* --export-level summary: no per-request files (the time slices below still read the logs) */
    not_written_t nw = {0};
    /* a log cut short by the disk reads as corrupt: name the disk's error, not the reader's */
    int jerr = cfg->export_summary ? 0 : log_err ? log_err : sg_export_records(&recs, logs, n);
    if (jerr < 0) { /* one pass writes both: neither is whole */
        char both[1024];
        snprintf(both, sizeof both, "%s and %s", x.surge_jsonl, x.aiperf_jsonl);
        rc = report_err(both, jerr, rc);
        not_written(&nw, x.surge_jsonl, jerr);
        not_written(&nw, x.aiperf_jsonl, jerr);
    }
    /* where the JSONL's times count from, on the run's clock: what a merge of several runs lines them up by */
    sg_run_info_t with_clock = *info;
    json_t *extra = info->extra_json ? json_loads(info->extra_json, 0, NULL) : json_object();
    if (extra) {
        json_object_set_new(extra, "clock",
                            json_pack("{s:I, s:I}", "start_realtime_ns",
                                      (json_int_t)(run->start_ns + info->wall_offset_ns), "records_origin_ns",
                                      (json_int_t)(base ? base - run->start_ns : 0)));
        json_object_set_new(extra, "record_log",
                            json_pack("{s:I, s:I, s:s}", "bytes", (json_int_t)log_bytes, "records_dropped",
                                      (json_int_t)dropped, "export_level",
                                      cfg->export_summary ? "summary" : "records"));
    }
    char *extra_text = extra ? json_dumps(extra, JSON_COMPACT) : NULL;
    json_decref(extra);
    with_clock.extra_json = extra_text;
    info = &with_clock;
    if (cfg->slice_duration_s > 0) {
        char *sj = export_path(run->artifact_dir, stem, "_surge_timeslices.json");
        char *sc = export_path(run->artifact_dir, stem, "_surge_timeslices.csv");
        int err = sj && sc ? sg_export_timeslices(sj, sc, logs, n, cfg->slice_duration_s, cfg->slos, cfg->n_slos, info)
                           : -ENOMEM;
        rc = report_err(sj ? sj : "the time slices", err, rc);
        not_written(&nw, sj ? sj : "profile_export_surge_timeslices.json", err);
        free(sj);
        free(sc);
    }
    for (unsigned i = 0; i < n; i++)
        unlink(logs[i]);
    int e = sg_export_csv(x.surge_csv, merged, info);
    rc = report_err(x.surge_csv, e, rc);
    not_written(&nw, x.surge_csv, e);
    e = sg_export_aiperf_csv(x.aiperf_csv, merged, info);
    rc = report_err(x.aiperf_csv, e, rc);
    not_written(&nw, x.aiperf_csv, e);
    /* AIPerf's readers take a directory with profile_export.jsonl and profile_export_aiperf.json for a run */
    e = sg_export_aiperf_json(x.aiperf_json, merged, info);
    rc = report_err(x.aiperf_json, e, rc);
    not_written(&nw, x.aiperf_json, e);
    /* the summary last: its presence says the other files are complete, or its files_not_written names those that
     * are not */
    with_clock.files_not_written = nw.names;
    with_clock.n_files_not_written = nw.n;
    rc = report_err(x.surge_json, sg_export_json(x.surge_json, merged, info), rc);
    free(extra_text);
out:
    free(logs);
    export_paths_free(&x);
    free(stem);
    return rc;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC now: turns surge's monotonic times into the wall-clock times AIPerf's files
 * carry. Sampled once, after the run: a clock step during the run does not bend the request times. */
static int64_t wall_offset_ns(void)
{
    struct timespec mono, real;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    return ((int64_t)real.tv_sec - (int64_t)mono.tv_sec) * 1000000000 + ((int64_t)real.tv_nsec - (int64_t)mono.tv_nsec);
}

/* n_streaming: payloads that ask for a stream (raw request bodies decide for themselves) */
static void describe(const sg_run_t *run, unsigned n_workers, size_t n_streaming)
{
    const sg_config_t *cfg = run->cfg;
    char load[96];
    if (cfg->fixed_schedule) {
        int k = snprintf(load, sizeof(load), "fixed schedule from %s", cfg->input_file);
        if (cfg->fixed_schedule_speedup != 1 && k > 0 && (size_t)k < sizeof(load))
            snprintf(load + k, sizeof(load) - (size_t)k, " at %gx", cfg->fixed_schedule_speedup);
    } else if (cfg->request_rate > 0) {
        int k = isinf(cfg->request_rate)
                    ? snprintf(load, sizeof(load), "request rate inf: every request due at the start")
                : cfg->distribution == SG_DIST_GAMMA
                    ? snprintf(load, sizeof(load), "request rate %g/s (gamma, burstiness %g)", cfg->request_rate,
                               cfg->burstiness)
                    : snprintf(load, sizeof(load), "request rate %g/s (%s)", cfg->request_rate,
                               cfg->distribution == SG_DIST_POISSON ? "poisson" : "constant");
        if (cfg->max_concurrency)
            snprintf(load + k, sizeof(load) - (size_t)k, ", max concurrency %u", cfg->max_concurrency);
    } else {
        snprintf(load, sizeof(load), "concurrency %u", cfg->concurrency);
    }
    char stop[96];
    if (cfg->request_count && cfg->benchmark_duration_s > 0)
        snprintf(stop, sizeof(stop), "%llu requests or %gs", (unsigned long long)cfg->request_count,
                 cfg->benchmark_duration_s);
    else if (cfg->request_count)
        snprintf(stop, sizeof(stop), "%llu requests", (unsigned long long)cfg->request_count);
    else if (cfg->measurement_interval_ms > 0)
        snprintf(stop, sizeof(stop), "windows of %g ms until the last 3 agree within %g%%, at most %u",
                 cfg->measurement_interval_ms, cfg->stability_pct, cfg->max_trials);
    else
        snprintf(stop, sizeof(stop), "%gs", cfg->benchmark_duration_s);
    /* the URL as given (a name stays a name: SNI and the certificate check use it), then the address it resolved
     * to when that differs */
    char at[320];
    if (cfg->host_header && strcmp(cfg->host_header, run->addr_text) != 0)
        snprintf(at, sizeof at, "%s [%s]", cfg->host_header, run->addr_text);
    else
        snprintf(at, sizeof at, "%s", run->addr_text);
    if (cfg->triton)
        fprintf(stderr, "surge: profiling %s at %s over gRPC%s, %s, backend %s (%s, %s), %u worker%s\n", cfg->models[0],
                at, cfg->tls ? " (TLS)" : "", cfg->streaming ? "ModelStreamInfer" : "ModelInfer",
                sg_kserve_backend_name((sg_kserve_backend_t)cfg->backend), load, stop, n_workers,
                n_workers == 1 ? "" : "s");
    else {
        char streams[64];
        size_t n = run->payloads->n;
        if (n_streaming == n || n_streaming == 0)
            snprintf(streams, sizeof streams, "%s", n_streaming ? "streaming" : "not streaming");
        else
            snprintf(streams, sizeof streams, "%zu of %zu bodies streaming", n_streaming, n);
        char *sp = strchr(at, ' '); /* the path goes after host:port, before the resolved address */
        if (run->n_urls > 1)
            fprintf(stderr, "surge: profiling %s at %zu URLs, %s (%s%s, %s, %s), %u worker%s\n", cfg->models[0],
                    run->n_urls, cfg->endpoint_path, run->http2 ? "HTTP/2, " : "", streams, load, stop, n_workers,
                    n_workers == 1 ? "" : "s");
        else
            fprintf(stderr, "surge: profiling %s at %s://%.*s%s%s (%s%s, %s, %s), %u worker%s\n", cfg->models[0],
                    cfg->tls ? "https" : "http", sp ? (int)(sp - at) : (int)strlen(at), at, cfg->endpoint_path,
                    sp ? sp : "", run->http2 ? "HTTP/2, " : "", streams, load, stop, n_workers,
                    n_workers == 1 ? "" : "s");
    }
    /* several URLs: each one, and how a worker balances over them (AIPerf says it the same way) */
    for (size_t i = 0; run->n_urls > 1 && i < run->n_urls; i++)
        fprintf(stderr, "surge:   URL %zu: %s [%s]%s\n", i, cfg->urls[i].url, run->url_text[i],
                i + 1 < run->n_urls ? ""
                : cfg->url_strategy == SG_URL_LEAST_IN_FLIGHT
                    ? " (each worker sends to the URL with the fewest of its requests in flight: least_in_flight)"
                    : " (each worker takes them in turn: round_robin)");
}

/* Everything that reads local files comes first: a bad tokenizer or input file is reported before any
 * connection is made. */
static int prepare_inputs(profile_t *p)
{
    sg_config_t *cfg = &p->cfg;
    char err[512];
    if (cfg->tokenizer) {
        if (sg_tok_load(cfg->tokenizer, &p->tok, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: --tokenizer %s: %s\n", cfg->tokenizer, err);
            return EXIT_USAGE;
        }
        p->run.tok = p->tok;
    }
    if (!cfg->input_file)
        return EXIT_OK;
    sg_input_t *in = &p->input;
    if (sg_input_load(cfg->input_file, (sg_input_format_t)cfg->input_format, in, err, sizeof(err)) < 0) {
        fprintf(stderr, "surge: --input-file: %s\n", err);
        return EXIT_USAGE;
    }
    if (in->skipped)
        fprintf(stderr,
                "surge: --input-file %s: skipped %zu of %zu conversations without a human turn followed "
                "by a reply\n",
                cfg->input_file, in->skipped, in->skipped + in->n);
    if (in->format == SG_INPUT_MULTI_TURN && !cfg->sessions) {
        /* a multi_turn file found by detection: sessions, with what they cannot run with refused now */
        cfg->sessions = true;
        cfg->input_format = SG_INPUT_MULTI_TURN;
        if (sg_config_check_sessions(cfg) < 0)
            return EXIT_USAGE;
    }
    if (!cfg->fixed_schedule)
        return EXIT_OK;
    if (in->format == SG_INPUT_MULTI_TURN) {
        /* sessions replayed: each starts at its first turn's timestamp (prepare_conversations builds the schedule) */
        for (size_t i = 0; i < in->n; i++) {
            if ((i == 0 || in->e[i - 1].session != in->e[i].session) && in->e[i].t_ns < 0) {
                fprintf(stderr,
                        "surge: --fixed-schedule: %s line %u: a session's first turn needs a \"timestamp\" (ms): "
                        "it is when the session starts\n",
                        cfg->input_file, in->e[i].where);
                return EXIT_USAGE;
            }
        }
        cfg->request_count = in->n; /* every turn once */
        return EXIT_OK;
    }
    if (in->format != SG_INPUT_MOONCAKE) {
        fprintf(
            stderr,
            "surge: --fixed-schedule: %s is %s, not a trace (mooncake_trace lines with \"timestamp\") or multi_turn "
            "sessions\n",
            cfg->input_file, sg_input_format_name(in->format));
        return EXIT_USAGE;
    }
    if (!(p->schedule = malloc(in->n * sizeof(*p->schedule))))
        return EXIT_FATAL;
    for (size_t i = 0; i < in->n; i++)
        p->schedule[i] = in->e[i].t_ns; /* sorted, relative to the first */
    p->run.schedule_ns = p->schedule;
    p->run.schedule_n = in->n;
    cfg->request_count = in->n; /* every entry once */
    return EXIT_OK;
}

/*
 * Multi-turn sessions: the conversations, and a payload table of one entry per user turn (its own message alone:
 * what inputs.json lists, and where the model names come from). Each turn's request is rendered with its history
 * when it is sent (engine/session.c).
 */
static int prepare_conversations(profile_t *p, sg_workload_spec_t *spec)
{
    const sg_config_t *cfg = &p->cfg;
    char err[512];
    sg_conv_spec_t cs = {
        .num = cfg->conversation_num,
        .turn_mean = cfg->turn_mean,
        .turn_stddev = cfg->turn_stddev,
        .delay_mean_ms = cfg->turn_delay_mean_ms,
        .delay_stddev = cfg->turn_delay_stddev_ms,
        .delay_ratio = cfg->turn_delay_ratio,
        .isl_mean = cfg->isl_mean,
        .isl_stddev = cfg->isl_stddev,
        .osl_mean = cfg->osl_mean,
        .osl_stddev = cfg->osl_stddev,
        .seed = cfg->random_seed,
        .tok = p->tok,
        .input = cfg->input_file ? &p->input : NULL,
    };
    if (sg_conv_build(&cs, &p->convs, err, sizeof err) < 0) {
        fprintf(stderr, "surge: building the conversations%s%s: %s\n", cfg->input_file ? " of " : "",
                cfg->input_file ? cfg->input_file : "", err);
        return EXIT_USAGE;
    }
    sg_input_t turns = {.format = SG_INPUT_GENAI_PERF, .n = p->convs.n_turns};
    if (!(turns.e = calloc(turns.n, sizeof *turns.e)))
        return EXIT_FATAL;
    for (size_t i = 0; i < turns.n; i++) {
        const sg_turn_t *t = &p->convs.turns[i];
        turns.e[i] = (sg_input_entry_t){.prompt = t->text,
                                        .prompt_len = t->len,
                                        .where = (uint32_t)i + 1,
                                        .max_tokens = t->max_tokens ? (int64_t)t->max_tokens : -1};
    }
    spec->input = &turns;
    spec->input_name = "the conversations";
    int rc = sg_workload_build(spec, &p->payloads, err, sizeof(err));
    free(turns.e); /* the texts belong to the conversations */
    if (rc < 0) {
        fprintf(stderr, "surge: building the workload: %s\n", err);
        return EXIT_USAGE;
    }
    p->run.convs = &p->convs;
    if (cfg->fixed_schedule) {
        if (sg_conv_fixed_schedule(&p->convs, &p->schedule) < 0)
            return EXIT_FATAL;
        p->run.schedule_ns = p->schedule;
        p->run.schedule_n = p->convs.n_convs;
    }
    return EXIT_OK;
}

/* --tools and --tool-choice (checked with the flags) into spec; what they cannot go with refused. */
static int prepare_tools(profile_t *p, sg_workload_spec_t *spec)
{
    const sg_config_t *cfg = &p->cfg;
    bool raw =
        cfg->input_file && (p->input.format == SG_INPUT_RAW_PAYLOAD || p->input.format == SG_INPUT_PERF_ANALYZER);
    if (cfg->sessions || raw) {
        fprintf(stderr, "surge: --%s: %s\n", cfg->tools_json ? "tools" : "tool-choice",
                cfg->sessions ? "multi-turn sessions do not carry tools: give single-turn prompts"
                              : "request bodies are sent as written: put \"tools\" in the bodies themselves");
        return EXIT_USAGE;
    }
    if (cfg->tools_json && !(p->tools = json_loads(cfg->tools_json, 0, NULL)))
        return EXIT_FATAL;
    spec->tools = p->tools;
    return EXIT_OK;
}

/* The payload table: every request rendered once into the bytes sent. */
static int prepare_workload(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    char err[512];
    /* a deadline the server can see (--request-timeout), as gRPC clients send it */
    char grpc_timeout[SG_GRPC_TIMEOUT_MAX] = "";
    if (cfg->triton && sg_grpc_timeout_format((int64_t)(cfg->request_timeout_s * 1e9), grpc_timeout) < 0)
        grpc_timeout[0] = '\0';
    sg_workload_spec_t spec = {
        .host_header = cfg->host_header,
        .path = cfg->endpoint_path,
        .headers = (const char *const *)cfg->headers,
        .kind = cfg->endpoint_type,
        .batch_size = cfg->batch_size,
        .rankings = cfg->rankings,
        .models = (const char *const *)cfg->models,
        .n_models = cfg->n_models,
        .model_strategy = (int)cfg->model_strategy,
        .streaming = cfg->streaming,
        .extra_inputs_json = cfg->extra_inputs_json,
        .num_prompts = cfg->num_prompts,
        .isl_mean = cfg->isl_mean,
        .isl_stddev = cfg->isl_stddev,
        .osl_mean = cfg->osl_mean,
        .osl_stddev = cfg->osl_stddev,
        .seed = cfg->random_seed,
        .tok = p->tok,
        .prefix_len = cfg->num_prefix ? cfg->prefix_len : 0,
        .num_prefix = cfg->num_prefix,
        .input = cfg->input_file ? &p->input : NULL,
        .input_name = cfg->input_file,
        .block_size = cfg->block_size,
        .grpc = cfg->triton,
        .backend = cfg->backend,
        .deterministic = cfg->osl_deterministic,
        .grpc_timeout = grpc_timeout[0] ? grpc_timeout : NULL,
        .cache_bust = cfg->cache_bust,
        .tool_choice = cfg->tool_choice,
        .media = &cfg->media,
        .media_requests = cfg->request_count ? cfg->request_count + cfg->warmup_request_count : 0,
        .num_prompts_given = cfg->num_prompts_given,
    };
    if (cfg->tools_json || cfg->tool_choice) {
        int rc = prepare_tools(p, &spec);
        if (rc != EXIT_OK)
            return rc;
    }
    if (cfg->sessions) {
        int rc = prepare_conversations(p, &spec);
        if (rc != EXIT_OK)
            return rc;
    } else if (sg_workload_build(&spec, &p->payloads, err, sizeof(err)) < 0) {
        if (!spec.cache_bust || cfg->cache_bust_given) {
            fprintf(stderr, "surge: building the workload: %s\n", err);
            return EXIT_USAGE;
        }
        /* the default's per-request words cannot be spelled exactly (a tokenizer that splits surge's words): the
         * prompts repeat, as said here and in the summary, rather than the run failing on a default */
        fprintf(stderr, "surge: note: prompts will repeat (--cache-bust none): %s\n", err);
        p->cfg.cache_bust = false;
        p->cfg.cache_bust_off_reason = "a tokenizer that cannot spell per-request words exactly";
        spec.cache_bust = false;
        if (sg_workload_build(&spec, &p->payloads, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: building the workload: %s\n", err);
            return EXIT_USAGE;
        }
    }
    sg_input_free(&p->input); /* the payloads hold what the requests need */
    /* --cache-bust: this run's requests count on from a random start, so that a second run against the same server
     * (with the same seed: the same prompt table) does not send the first run's prompts again; a server that keeps
     * prompts across requests (llama-server's host prompt cache, vLLM's prefix cache) would serve them */
    if (p->payloads.uniq.n && getrandom(&p->run.uniq_base, sizeof p->run.uniq_base, 0) != sizeof p->run.uniq_base)
        p->run.uniq_base = (uint64_t)sg_now_ns() ^ ((uint64_t)getpid() << 32);
    return EXIT_OK;
}

/*
 * Raw request bodies are sent as written, so their own "stream" decides, not --streaming: say so when the two
 * differ. Each response is measured by what it is (worker_resp.c), so a run of mixed bodies is measured right,
 * request by request; the streamed metrics then cover the streamed requests (their counts say how many).
 */
static void note_streaming(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    const sg_payload_table_t *t = &p->payloads;
    for (size_t i = 0; i < t->n; i++)
        p->n_streaming += t->items[i].streaming;
    if (!cfg->input_file || cfg->triton || p->n_streaming == (cfg->streaming ? t->n : 0))
        return;
    if (!cfg->streaming)
        fprintf(stderr,
                "surge: --input-file %s: %zu of %zu request bodies ask for \"stream\": true; they are sent as written "
                "and measured as streams (time to first token, inter-token latency)\n",
                cfg->input_file, p->n_streaming, t->n);
    else
        fprintf(stderr,
                "surge: --input-file %s: --streaming does not change request bodies, which are sent as written: %zu "
                "of %zu do not ask for \"stream\": true and are measured as whole answers\n",
                cfg->input_file, t->n - p->n_streaming, t->n);
}

/*
 * A --goodput SLO the run cannot measure is refused before anything is sent, not reported as missed by every
 * request: a time to first token (or a gap between tokens) needs streamed responses, and a gap between tokens
 * needs answers of two tokens or more.
 */
/*
 * Before a run or sweep: a percentile --slo that its planned requests cannot show to pass at --confidence-level
 * (sg_slo_min_n) is said at once, so a run is not spent on a verdict that can only fail or stay inconclusive. The
 * plan is --request-count, or the expected count of a duration-bound open loop; a closed loop bounded by time has
 * no plan to judge. The search sizes its own probes (search.c).
 */
static void note_slo_evidence(const sg_config_t *cfg)
{
    if (cfg->search)
        return;
    double planned = (double)cfg->request_count;
    if (!planned && cfg->request_rate > 0 && !isinf(cfg->request_rate))
        planned = cfg->request_rate * cfg->benchmark_duration_s;
    if (!(planned > 0))
        return;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        uint64_t need = sg_slo_min_n(c, cfg->confidence_level);
        if (!need || planned >= (double)need)
            continue;
        bool ceiling = c->op == SG_SLO_OP_LT || c->op == SG_SLO_OP_LE;
        fprintf(stderr,
                "surge: --slo %s: %s%.0f requests cannot show %s %s its target at %g%% confidence (that "
                "takes %llu): the verdict can fail or be inconclusive, not pass\n",
                c->text, cfg->request_count ? "" : "about ", planned,
                c->kind == SG_SLO_ERROR_RATE ? "the error rate" : "this percentile", ceiling ? "below" : "above",
                100 * cfg->confidence_level, (unsigned long long)need);
    }
}

static int prepare_slos(profile_t *p)
{
    note_streaming(p);
    const sg_config_t *cfg = &p->cfg;
    const sg_payload_table_t *t = &p->payloads;
    bool two_tokens = false;
    for (size_t i = 0; i < t->n && !two_tokens; i++)
        two_tokens = t->items[i].max_tokens != 1;
    for (size_t i = 0; i < cfg->n_slo_checks; i++) {
        const sg_slo_check_t *c = &cfg->slo_checks[i];
        if (c->kind != SG_SLO_DIST)
            continue;
        if (sg_metric_streamed_only(c->metric) && p->n_streaming == 0) {
            fprintf(stderr,
                    "surge: --slo: %s cannot be measured without streamed responses: add --streaming%s, or leave it "
                    "out\n",
                    c->text, cfg->input_file && !cfg->triton ? " (raw request bodies: \"stream\": true)" : "");
            return EXIT_USAGE;
        }
        if (sg_metric_needs_two_tokens(c->metric) && !two_tokens) {
            fprintf(stderr,
                    "surge: --slo: %s needs answers of two tokens or more, and every request asks for one (max_tokens "
                    "1): ask for more (--output-tokens-mean), or leave it out\n",
                    c->text);
            return EXIT_USAGE;
        }
    }
    for (size_t i = 0; i < cfg->n_slos; i++) {
        sg_metric_id_t id = cfg->slos[i].metric;
        if (sg_metric_streamed_only(id) && p->n_streaming == 0) {
            fprintf(stderr,
                    "surge: --goodput: %s cannot be measured without streamed responses: add --streaming%s, or "
                    "leave it out of the SLOs\n",
                    sg_metric_tag(id),
                    cfg->input_file && !cfg->triton ? " (raw request bodies: \"stream\": true)" : "");
            return EXIT_USAGE;
        }
        if (sg_metric_needs_two_tokens(id) && !two_tokens) {
            fprintf(stderr,
                    "surge: --goodput: %s needs answers of two tokens or more, and every request asks for one "
                    "(max_tokens 1): ask for more (--output-tokens-mean), or leave it out of the SLOs\n",
                    sg_metric_tag(id));
            return EXIT_USAGE;
        }
    }
    note_slo_evidence(cfg);
    return EXIT_OK;
}

/* What to do when the target does not speak HTTP/2: --http2 is a choice, triton's gRPC needs another port. */
static const char *not_h2_advice(const sg_config_t *cfg)
{
    return cfg->triton ? "--service-kind triton speaks gRPC over HTTP/2: point -u/--url at the server's gRPC port "
                         "(Triton's is 8001 unless changed; 8000 serves HTTP)"
                       : "drop --http2 to speak HTTP/1.1 to it";
}

/* Ports in net.ipv4.ip_local_port_range (the ones a connect picks from), or 0 when it cannot be read. */
static uint64_t local_port_count(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    unsigned lo = 0, hi = 0;
    int n = f ? fscanf(f, "%u %u", &lo, &hi) : 0;
    if (f)
        fclose(f);
    return n == 2 && hi >= lo ? (uint64_t)(hi - lo + 1) : 0;
}

/*
 * --local-address: its addresses (the syntax was checked with the flags), each of the target's family and an
 * address of this host, which a bind tells (EADDRNOTAVAIL otherwise). One line and -1 on the first that is not.
 */
static int check_local_addrs(const sg_config_t *cfg, sg_run_t *run)
{
    char err[256];
    if (sg_tcp_local_parse(cfg->local_address, &run->local_addrs, &run->n_local_addrs, err, sizeof err) < 0) {
        fprintf(stderr, "surge: --local-address %s: %s\n", cfg->local_address, err);
        return -1;
    }
    for (size_t i = 0; i < run->n_local_addrs; i++) {
        const sg_addr_t *a = &run->local_addrs[i];
        char ip[64];
        sg_addr_format_ip(a, ip, sizeof ip);
        if (a->addr.ss_family != run->addr.addr.ss_family) {
            fprintf(stderr, "surge: --local-address: %s is %s but the target %s is %s\n", ip,
                    a->addr.ss_family == AF_INET ? "IPv4" : "IPv6", run->addr_text,
                    run->addr.addr.ss_family == AF_INET ? "IPv4" : "IPv6");
            return -1;
        }
        int fd = socket(a->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int rc = fd < 0 ? -errno : sg_tcp_bind_source(fd, a);
        if (fd >= 0)
            close(fd);
        if (rc < 0) {
            fprintf(stderr, "surge: --local-address: cannot send from %s: %s%s\n", ip, sg_strerror(rc),
                    rc == -EADDRNOTAVAIL ? " (it is not an address of this host)" : "");
            return -1;
        }
    }
    return 0;
}

/*
 * Several URLs (-u given more than once): each resolved (a name that does not resolve is a typo: exit 2) and, after
 * the first, each checked to accept a connection. One that does not is said now and left to the workers, which skip
 * it until it accepts connections (worker_url.c); the first URL gets the one-URL checks below (TLS, protocol).
 */
static int prepare_urls(profile_t *p, const sg_config_t *cfg, sg_run_t *run)
{
    char err[512];
    run->n_urls = cfg->n_urls;
    for (size_t i = 0; i < cfg->n_urls; i++)
        p->url_names[i] = cfg->urls[i].url;
    run->url_addrs[0] = run->addr;
    snprintf(run->url_text[0], sizeof run->url_text[0], "%s", run->addr_text);
    for (size_t i = 1; i < cfg->n_urls; i++) {
        if (sg_tcp_resolve(cfg->urls[i].host, cfg->urls[i].port, &run->url_addrs[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: -u/--url %s: %s\n", cfg->urls[i].url, err);
            return EXIT_USAGE;
        }
        sg_addr_format(&run->url_addrs[i], run->url_text[i], sizeof(run->url_text[i]));
        if (run->n_local_addrs && run->local_addrs[0].addr.ss_family != run->url_addrs[i].addr.ss_family) {
            fprintf(stderr, "surge: --local-address: %s is %s, the -u/--url %s resolved to %s\n", cfg->local_address,
                    run->local_addrs[0].addr.ss_family == AF_INET ? "IPv4" : "IPv6", cfg->urls[i].url,
                    run->url_addrs[i].addr.ss_family == AF_INET ? "IPv4" : "IPv6");
            return EXIT_USAGE;
        }
    }
    for (size_t i = 1; i < cfg->n_urls; i++) {
        int perr = sg_preflight_connect_to(run, &run->url_addrs[i], SG_PREFLIGHT_MS, NULL);
        run->url_refused[i] = perr < 0;
        if (perr < 0)
            fprintf(stderr,
                    "surge: URL %zu, %s (%s): cannot connect: %s; its requests go to the other URLs until it accepts "
                    "connections\n",
                    i, cfg->urls[i].url, run->url_text[i], sg_strerror(perr));
    }
    return EXIT_OK;
}

/*
 * Resolve the target and check it before anything is measured (sg_preflight.h): it accepts a connection, over
 * https:// its TLS handshake succeeds and tells which protocol the run speaks, and under HTTP/2 it answers the
 * connection preface with SETTINGS. Each check has a bound: nothing here waits longer than SG_PREFLIGHT_MS.
 */
static int prepare_target(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    sg_run_t *run = &p->run;
    char err[512];
    if (sg_tcp_resolve(cfg->host, cfg->port, &run->addr, err, sizeof(err)) < 0) {
        fprintf(stderr, "surge: -u/--url %s: %s\n", cfg->url, err);
        return EXIT_USAGE;
    }
    sg_addr_format(&run->addr, run->addr_text, sizeof(run->addr_text));
    /* a metrics host that does not resolve is a typo to say now, not a run of failed scrapes */
    for (size_t i = 0; i < cfg->n_server_metrics_urls; i++) {
        char host[256], port[8], path[1024];
        sg_addr_t addr;
        if (sg_scrape_url_parse(cfg->server_metrics_urls[i], host, sizeof host, port, sizeof port, path, sizeof path,
                                err, sizeof err) < 0 ||
            sg_tcp_resolve(host, (uint16_t)atoi(port), &addr, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: --server-metrics-url %s: %s\n", cfg->server_metrics_urls[i], err);
            return EXIT_USAGE;
        }
    }
    if (cfg->local_address && check_local_addrs(cfg, run) < 0)
        return EXIT_USAGE;
    if (cfg->n_urls > 1) {
        int rc = prepare_urls(p, cfg, run);
        if (rc != EXIT_OK)
            return rc;
    }
    int pfd = -1;
    int perr = sg_preflight_connect(run, SG_PREFLIGHT_MS, cfg->tls || cfg->http2 ? &pfd : NULL);
    if (perr < 0) {
        fprintf(stderr, "surge: cannot connect to %s (from -u/--url %s): %s\n", run->addr_text, cfg->url,
                sg_strerror(perr));
        return EXIT_USAGE;
    }
    run->http2 = cfg->http2;
    if (!cfg->tls) {
        if (!cfg->http2)
            return EXIT_OK;
        /* h2c with prior knowledge: an HTTP/1.1 server answers the preface with a 400, or waits for a request
         * line that never ends; without this check every stream of the run would wait for --request-timeout */
        char got[300];
        int herr = sg_preflight_h2(pfd, SG_PREFLIGHT_MS, got, sizeof got);
        close(pfd);
        if (herr < 0) {
            fprintf(stderr, "surge: %s does not speak HTTP/2 (h2c, prior knowledge): %s; %s\n", run->addr_text, got,
                    not_h2_advice(cfg));
            return EXIT_USAGE;
        }
        return EXIT_OK;
    }
    /* --http2 demands h2; otherwise offer both and let the server choose. The workers then offer only what it
     * chose here, so every connection of the run speaks one protocol (h2 then required). */
    run->tls_opts = (sg_tls_opts_t){
        .cafile = cfg->cacert,
        .insecure = cfg->insecure,
        .cert_file = cfg->client_cert,
        .key_file = cfg->client_key,
        /* several URLs: the first one's choice is the run's, and every URL's connections then require it */
        .alpn = cfg->http2 ? "h2" : "h2,http/1.1",
        .alpn_required = cfg->http2,
    };
    char alpn[64];
    int terr = sg_preflight_tls(run, pfd, SG_PREFLIGHT_MS, alpn, sizeof alpn, p->tls_info, sizeof p->tls_info, err,
                                sizeof err);
    close(pfd);
    if (terr < 0) {
        fprintf(stderr, "surge: %s (-u/--url %s)\n", err, cfg->url);
        if (cfg->http2 && (strstr(err, "ALPN") || strstr(err, "no_application_protocol")))
            fprintf(stderr, "surge: --http2 on https:// requires the server to select h2 through ALPN; "
                            "without --http2 surge uses what the server selects\n");
        else if (cfg->triton && strstr(err, "does not speak HTTP/2"))
            fprintf(stderr, "surge: %s\n", not_h2_advice(cfg));
        return EXIT_USAGE;
    }
    run->http2 = strcmp(alpn, "h2") == 0;
    run->tls_opts.alpn = run->http2 ? "h2" : "http/1.1";
    run->tls_opts.alpn_required = run->http2;
    return EXIT_OK;
}

/*
 * The workers' I/O backend, picked once for the run: --io-backend auto takes io_uring where it works and epoll
 * where it is blocked (a container's seccomp profile, kernel.io_uring_disabled) or too old, and says so once.
 */
static int prepare_io(profile_t *p)
{
    char why[256];
    int b = sg_loop_pick((sg_io_backend_t)p->cfg.io_backend, why, sizeof why);
    if (b < 0) {
        fprintf(stderr, "surge: --io-backend %s: %s%s\n", sg_io_backend_name((sg_io_backend_t)p->cfg.io_backend), why,
                p->cfg.io_backend == SG_IO_URING ? " (a seccomp profile or kernel.io_uring_disabled may block it; "
                                                   "--io-backend epoll works without it)"
                                                 : "");
        return EXIT_FATAL;
    }
    if (p->cfg.io_backend == SG_IO_AUTO && b == SG_IO_EPOLL)
        fprintf(stderr, "surge: io_uring is unavailable (%s); using epoll\n", why);
    p->run.io_backend = b;
    /* --timestamps kernel: the kernel switches receive stamping on lazily when the first socket asks (a deferred
     * static key; a busy CPU can delay it by milliseconds), and reads before that come unstamped. A socket of our
     * own asks now, long before the first connection, and holds it on for the life of the process. */
    static int stamp_hold = -1;
    if (!p->cfg.user_timestamps && stamp_hold < 0) {
        stamp_hold = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (stamp_hold >= 0 && sg_loop_stamp_socket(stamp_hold) < 0) {
            close(stamp_hold);
            stamp_hold = -1; /* refused: the connections will be refused too, and say so */
        }
    }
    return EXIT_OK;
}

/* HTTP/2: each pre-rendered request once more in HTTP/2 form (header fields, body in place), shared read-only. */
static int prepare_h2(profile_t *p)
{
    sg_run_t *run = &p->run;
    if (!run->http2)
        return EXIT_OK;
    const sg_payload_table_t *pl = &p->payloads;
    if (!(run->h2_reqs = calloc(pl->n, sizeof(*run->h2_reqs))))
        return EXIT_FATAL;
    for (size_t i = 0; i < pl->n; i++) {
        int herr =
            sg_h2_req_from_h1(pl->items[i].bytes, pl->items[i].len, p->cfg.tls ? "https" : "http", &run->h2_reqs[i]);
        if (herr < 0) {
            fprintf(stderr, "surge: HTTP/2: cannot express request %zu in HTTP/2: %s\n", i, sg_strerror(herr));
            return herr == SG_ENOMEM ? EXIT_FATAL : EXIT_USAGE;
        }
    }
    return EXIT_OK;
}

/* The artifact directory (config.c always names one), and room for the connections asked for. */
static int prepare_output(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    sg_run_t *run = &p->run;
    /* never into an earlier run's directory: a fresh name, or with --overwrite that run's files gone first. Every
     * rank of a run over several processes decides alike, before any rank writes a run's files. */
    char err[1024];
    if (sg_artdir_claim("surge", cfg->artifact_dir, cfg->overwrite, &p->artifact_dir, err, sizeof err) < 0) {
        fprintf(stderr, "surge: --artifact-dir %s\n", err);
        return EXIT_USAGE;
    }
    run->artifact_dir = p->artifact_dir;
    if (strcmp(p->artifact_dir, cfg->artifact_dir) != 0) { /* the files say where they are */
        char *moved = strdup(p->artifact_dir);
        if (!moved)
            return EXIT_FATAL;
        free(p->cfg.artifact_dir);
        p->cfg.artifact_dir = moved;
    }
    run->nofile = sg_raise_nofile();
    uint64_t want_conns = cfg->request_rate > 0 ? cfg->max_concurrency : cfg->concurrency;
    if (want_conns && run->nofile < want_conns + 64)
        fprintf(stderr,
                "surge: warning: RLIMIT_NOFILE (%llu) leaves room for fewer connections than the %llu requests asked "
                "to be in flight; the rest will wait, and that shows as schedule lag (raise it with ulimit -n)\n",
                (unsigned long long)run->nofile, (unsigned long long)want_conns);
    /* each source address has the ephemeral range's ports towards the one server address:port */
    uint64_t ports = local_port_count();
    uint64_t sources = run->n_local_addrs ? run->n_local_addrs : 1;
    uint64_t mine = p->dist_opts.world > 1 ? want_conns / p->dist_opts.world : want_conns;
    if (mine > run->nofile)
        mine = run->nofile; /* no more are opened at once */
    if (ports && mine > ports * sources)
        fprintf(stderr,
                "surge: warning: %llu connections to %s need more source ports than %llu source address%s "
                "(%llu each, net.ipv4.ip_local_port_range); the rest will fail to connect: give more with "
                "--local-address\n",
                (unsigned long long)mine, run->addr_text, (unsigned long long)sources,
                sources == 1 ? " gives" : "es give", (unsigned long long)ports);
    return EXIT_OK;
}

/*
 * inputs.json's bodies: the payload table's, in table order (entry, then model variant). With --cache-bust, each
 * prompt as the first request of the run's first load point that carries it sent it (request id = the entry's
 * index); later requests put other words in the slot.
 */
typedef struct {
    const sg_payload_table_t *t;
    uint64_t base; /* the run's first counter (sg_run_t.uniq_base) */
    char *scratch; /* a body with its slot filled; as long as the longest request */
} inputs_ctx_t;

static const char *payload_body_at(void *ctx, size_t i, size_t *len)
{
    inputs_ctx_t *x = ctx;
    const sg_payload_t *p = &x->t->items[i];
    const char *body = sg_payload_body(p, len);
    if (!body || !p->uniq_len || !x->scratch)
        return body;
    size_t head = (size_t)(body - p->bytes);
    memcpy(x->scratch, body, *len);
    sg_payload_uniq(x->t, p, x->base + i / x->t->n_variants, x->scratch + (p->uniq_off - head));
    return x->scratch;
}

/*
 * inputs.json with the exact bodies the run sends, in GenAI-Perf's layout (docs/metrics.md, Files), written before
 * the first request so that it exists whatever becomes of the run. A gRPC call carries protobuf, not JSON: none
 * for --service-kind triton. It is the first file the run writes: if the directory cannot take it (a full disk, no
 * permission), the records and results could not be kept either, and the run stops before sending anything.
 */
static int prepare_inputs_json(profile_t *p)
{
    if (p->cfg.triton)
        return EXIT_OK;
    char *path = sg_path_join(p->artifact_dir, "inputs.json");
    if (!path)
        return EXIT_FATAL;
    inputs_ctx_t x = {.t = &p->payloads, .base = p->run.uniq_base};
    size_t longest = 0;
    for (size_t i = 0; p->payloads.uniq.n && i < p->payloads.n; i++)
        longest = p->payloads.items[i].len > longest ? p->payloads.items[i].len : longest;
    if (longest && !(x.scratch = malloc(longest))) {
        free(path);
        return EXIT_FATAL;
    }
    int err = sg_export_inputs(path, p->payloads.n, payload_body_at, &x);
    free(x.scratch);
    if (err < 0) /* the records and every result go to the same directory: a run that cannot write is not started */
        fprintf(stderr, "surge: writing %s: %s: the artifact directory cannot take the run's files; nothing was sent\n",
                path, sg_strerror(err));
    free(path);
    return err < 0 ? EXIT_FATAL : EXIT_OK;
}

/* Workers the point runs: one per usable CPU, fewer when the load cannot keep more of them busy. */
unsigned point_worker_count(const sg_config_t *cfg)
{
    unsigned n = cfg->workers;
    /* A worker without a slot would hold a share of the requests it can never send. */
    if (cfg->request_rate == 0 && !cfg->fixed_schedule && cfg->concurrency < n)
        n = cfg->concurrency;
    if (cfg->max_concurrency && cfg->max_concurrency < n)
        n = cfg->max_concurrency;
    /* --max-connections: every worker needs a connection of its own */
    if (cfg->max_connections && cfg->max_connections < n)
        n = cfg->max_connections;
    return n;
}

/* Join every worker of a point that failed to start, leaving no half-made files. */
static void point_abort(sg_run_t *run, point_t *pt)
{
    char err[512];
    atomic_store(&run->stop, SG_STOP_ABORT);
    run->start_ns = sg_now_ns();
    atomic_store(&run->go, 1);
    for (unsigned i = 0; i < pt->n_workers; i++)
        if (pt->ws[i]) {
            sg_worker_join(pt->ws[i], err, sizeof(err));
            unlink(sg_worker_log_path(pt->ws[i])); /* nothing was measured */
        }
}

/*
 * The point's configuration (the run's, with its load), its artifact directory, and the shared run state reset:
 * the workers of every point read run->cfg and start at their own instant.
 */
static int point_setup(profile_t *p, const point_spec_t *spec, point_t *pt)
{
    pt->spec = *spec;
    pt->cfg = p->cfg;
    pt->slo_pass = true;
    if (spec->set_load) {
        pt->cfg.concurrency = spec->closed ? (uint32_t)spec->value : 0;
        pt->cfg.request_rate = spec->closed ? 0 : spec->value;
    }
    if (spec->duration_s > 0)
        pt->cfg.benchmark_duration_s = spec->duration_s;
    if (spec->reseed)
        pt->cfg.random_seed ^= spec->reseed * 0x9e3779b97f4a7c15ULL; /* a distinct stream per reseed value */
    if (spec->no_warmup)
        pt->cfg.warmup_request_count = 0;
    if (pt->cfg.measurement_interval_ms > 0 && !(pt->stab = stab_new(&pt->cfg)))
        return EXIT_FATAL;
    const char *subdir = spec->subdir;
    char rank_dir[32];
    if (p->dist) { /* each rank's own files; rank 0 merges them into the artifact directory itself */
        snprintf(rank_dir, sizeof rank_dir, "rank%u", sg_dist_rank(p->dist));
        subdir = rank_dir;
        pt->spec.quiet = true;
    }
    pt->artifact_dir = subdir ? sg_path_join(p->artifact_dir, subdir) : strdup(p->artifact_dir);
    if (!pt->artifact_dir)
        return EXIT_FATAL;
    int derr = sg_mkdir_p(pt->artifact_dir);
    if (derr < 0) {
        fprintf(stderr, "surge: %s: %s\n", pt->artifact_dir, sg_strerror(derr));
        return EXIT_FATAL;
    }
    sg_run_t *run = &p->run;
    run->cfg = &pt->cfg;
    run->artifact_dir = pt->artifact_dir;
    run->start_ns = 0;
    atomic_store(&run->go, 0);
    atomic_store(&run->stop, 0);
    return EXIT_OK;
}

/* Create and start the workers; SIGINT/SIGTERM go to the controller only. */
static int point_start(profile_t *p, point_t *pt)
{
    sg_run_t *run = &p->run;
    char err[512];
    int code = EXIT_OK;
    /* Workers inherit a mask that blocks SIGINT/SIGTERM: only the controller handles them. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);

    int cpus[1024];
    unsigned n_cpus = cpu_list(cpus, SG_ARRAY_LEN(cpus));
    pt->n_workers = p->dist ? p->dist_workers : point_worker_count(&pt->cfg);
    if (!(pt->ws = calloc(pt->n_workers, sizeof(*pt->ws)))) {
        pt->n_workers = 0;
        code = EXIT_FATAL;
    }
    if (code == EXIT_OK)
        bounds_begin(p, pt); /* the percentile checks counted live, per worker */
    for (unsigned i = 0; i < pt->n_workers && code == EXIT_OK; i++) {
        pt->ws[i] = sg_worker_new(run, i, pt->n_workers, cpus[i % n_cpus], err, sizeof(err));
        if (!pt->ws[i]) {
            fprintf(stderr, "surge: %s\n", err);
            code = EXIT_FATAL;
        }
    }
    for (unsigned i = 0; i < pt->n_workers && code == EXIT_OK; i++) {
        int e = sg_worker_start(pt->ws[i]);
        if (e < 0) {
            fprintf(stderr, "surge: starting worker %u: %s\n", i, sg_strerror(e));
            code = EXIT_FATAL;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (code != EXIT_OK)
        point_abort(run, pt);
    return code;
}

/* Connections the workers opened before the start and could not set up in time: the run starts anyway, and says so. */
static void report_setup(const profile_t *p, const point_t *pt)
{
    uint64_t opened = 0, pending = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        opened += atomic_load_explicit(&wp->setup_opened, memory_order_relaxed);
        pending += atomic_load_explicit(&wp->setup_pending, memory_order_relaxed);
    }
    if (pending == 0 || g_interrupted)
        return;
    fprintf(stderr,
            "surge: %s: %llu of %llu connections opened before the start were not ready within %d s (%s failed or "
            "still pending); the run starts anyway and opens connections as requests need them, each given up %.3g "
            "s after it was opened\n",
            p->run.addr_text, (unsigned long long)pending, (unsigned long long)opened, SG_WORKER_SETUP_WAIT_S,
            p->run.http2 ? (p->cfg.tls ? "connect, TLS handshake or the server's HTTP/2 SETTINGS"
                                       : "connect or the server's HTTP/2 SETTINGS")
                         : (p->cfg.tls ? "connect or TLS handshake" : "connect"),
            sg_worker_setup_timeout_s(&p->cfg));
}

/*
 * The controller's watch on a server that has gone quiet (a benchmark never waits silently). Every look (20 ms)
 * sums what the workers publish; while something is outstanding (requests in flight or waiting for a connection,
 * connections being set up) and no byte has come from the server for 5 s, one line says so, then again at 10, 20,
 * 40 s ... of silence over the whole run, so a slow server does not flood stderr. After the sending ends under
 * --benchmark-duration, a drain that lasts says what it waits for.
 */
#define WATCH_FIRST_S 5.0

typedef struct {
    uint64_t bytes;       /* bytes received at the last look */
    int64_t quiet_since;  /* nothing received since (while something was outstanding) */
    double report_at_s;   /* silence that earns the next line */
    int64_t drain_since;  /* every worker done issuing, something still outstanding; 0 = not (yet) */
    int64_t sending_over; /* every worker done issuing (--benchmark-grace-period counts from it); 0 = not (yet) */
    bool drain_said;
} watch_t;

static void watch_line_start(bool show)
{
    if (show)
        fputs("\r\033[K", stderr); /* the progress line is redrawn at its next tick */
}

static void watch(const profile_t *p, const point_t *pt, watch_t *wt, int64_t now, bool show)
{
    const sg_config_t *cfg = &pt->cfg;
    uint64_t bytes = 0, in_flight = 0, waiting = 0, connecting = 0;
    unsigned done_issuing = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        bytes += atomic_load_explicit(&wp->bytes_received, memory_order_relaxed);
        in_flight += atomic_load_explicit(&wp->in_flight, memory_order_relaxed);
        waiting += atomic_load_explicit(&wp->waiting, memory_order_relaxed);
        connecting += atomic_load_explicit(&wp->connecting, memory_order_relaxed);
        done_issuing += (unsigned)(atomic_load_explicit(&wp->issuing_done, memory_order_relaxed) ||
                                   atomic_load_explicit(&wp->finished, memory_order_relaxed));
    }
    if (done_issuing == pt->n_workers && !wt->sending_over)
        wt->sending_over = now;
    if (g_interrupted)
        return;
    bool outstanding = in_flight + waiting + connecting > 0;
    if (bytes != wt->bytes || !outstanding) {
        wt->bytes = bytes;
        wt->quiet_since = now;
    } else if ((double)(now - wt->quiet_since) >= wt->report_at_s * 1e9) {
        char what[192] = "";
        size_t k = 0;
        const uint64_t counts[] = {in_flight, waiting, connecting};
        const char *const names[][2] = {{"request in flight", "requests in flight"},
                                        {"request waiting for a connection", "requests waiting for a connection"},
                                        {"connection being set up", "connections being set up"}};
        for (size_t i = 0; i < SG_ARRAY_LEN(counts); i++)
            if (counts[i] && k < sizeof what)
                k += (size_t)snprintf(what + k, sizeof what - k, "%s%llu %s", k ? ", " : "",
                                      (unsigned long long)counts[i], names[i][counts[i] != 1]);
        watch_line_start(show);
        if (in_flight)
            fprintf(stderr,
                    "surge: no response from %s for %.0f s (%s); still waiting, up to --request-timeout %g s from "
                    "each send%s\n",
                    p->run.addr_text, wt->report_at_s, what, cfg->request_timeout_s,
                    p->n_streaming ? "" : " (without --streaming an answer comes whole, after its last token)");
        else
            fprintf(stderr,
                    "surge: no response from %s for %.0f s (%s); still waiting, up to %.3g s from each connection "
                    "attempt\n",
                    p->run.addr_text, wt->report_at_s, what, sg_worker_setup_timeout_s(cfg));
        fflush(stderr);
        wt->report_at_s *= 2;
    }
    /* --benchmark-duration: the user expects the end at the duration; a drain that goes on says why */
    if (cfg->benchmark_duration_s > 0 && done_issuing == pt->n_workers && in_flight + waiting > 0) {
        if (!wt->drain_since)
            wt->drain_since = now;
        bool quiet = now - wt->quiet_since >= (int64_t)(WATCH_FIRST_S * 1e9);
        if (!wt->drain_said && !quiet && now - wt->drain_since >= (int64_t)(WATCH_FIRST_S * 1e9)) {
            watch_line_start(show);
            fprintf(stderr,
                    "surge: sending is over (--benchmark-duration %g s); waiting for the %llu request%s still "
                    "outstanding, each at most --request-timeout %g s after its send (Ctrl-C, or "
                    "--benchmark-grace-period S, ends the run and keeps what was measured; what is outstanding then "
                    "is counted as cancelled)\n",
                    cfg->benchmark_duration_s, (unsigned long long)(in_flight + waiting),
                    in_flight + waiting == 1 ? "" : "s", cfg->request_timeout_s);
            fflush(stderr);
            wt->drain_said = true;
        }
    }
}

/*
 * The controller's look at client stalls (--stall-threshold-ms; the workers' side is stall_watch in worker.c), every
 * 20 ms: a worker whose loop is late by more than the bound is said at once (an open window, or a loop that has not
 * turned since it was due: descheduled, or blocked), and each window the worker closes gets a line when it caught
 * up. Times are from the run's start instant.
 */
typedef struct {
    int64_t said_since; /* the open window already said (its start) */
    int64_t said_due;   /* the frozen loop already said (its due instant) */
    unsigned seen;      /* closed windows already said */
} stall_seen_t;

static void stall_look(const point_t *pt, stall_seen_t *seen, int64_t start_ns, int64_t now, bool show)
{
    int64_t bound = (int64_t)llround(pt->cfg.stall_threshold_ms * 1e6);
    if (!bound || !seen)
        return;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        stall_seen_t *st = &seen[i];
        unsigned n = atomic_load_explicit(&wp->stalls_n, memory_order_acquire);
        const sg_stall_win_t *win = sg_worker_stalls(pt->ws[i], NULL);
        for (; st->seen < n; st->seen++) {
            const sg_stall_win_t *x = &win[st->seen];
            watch_line_start(show);
            if (st->said_since == x->start_ns || st->said_due == x->start_ns)
                fprintf(stderr,
                        "surge: worker %u caught up at +%.3f s: up to %.0f ms behind its schedule from +%.3f s (a "
                        "client stall, not the server's doing; listed in the summary's client_stalls)\n",
                        i, (double)(x->end_ns - start_ns) / 1e9, (double)x->max_lag_ns / 1e6,
                        (double)(x->start_ns - start_ns) / 1e9);
            else
                fprintf(stderr,
                        "surge: worker %u fell %.0f ms behind its schedule at +%.3f s and caught up at +%.3f s: a "
                        "client stall (its CPU or a block, not the server; listed in the summary's client_stalls)\n",
                        i, (double)x->max_lag_ns / 1e6, (double)(x->start_ns - start_ns) / 1e9,
                        (double)(x->end_ns - start_ns) / 1e9);
            st->said_due = 0;
        }
        int64_t since = atomic_load_explicit(&wp->stall_since_ns, memory_order_acquire);
        if (since && since != st->said_since && since != st->said_due) { /* a frozen loop's line said it */
            st->said_since = since;
            watch_line_start(show);
            fprintf(stderr,
                    "surge: worker %u is %.0f ms behind its schedule since +%.3f s: the client fell behind (its CPU "
                    "or a block, not the server); what it sends and times meanwhile is late\n",
                    i, (double)atomic_load_explicit(&wp->stall_lag_ns, memory_order_relaxed) / 1e6,
                    (double)(since - start_ns) / 1e9);
        }
        /* a loop that has not turned since it was due (beat before due) cannot say so itself */
        int64_t beat = atomic_load_explicit(&wp->beat_ns, memory_order_relaxed);
        int64_t due = atomic_load_explicit(&wp->due_ns, memory_order_relaxed);
        if (due != INT64_MAX && beat < due && now - due > bound && due != st->said_due && !since &&
            !atomic_load_explicit(&wp->finished, memory_order_relaxed)) {
            st->said_due = due;
            watch_line_start(show);
            fprintf(stderr,
                    "surge: worker %u has not run its loop for %.0f ms, since +%.3f s: the client is stalled "
                    "(descheduled or blocked, not the server); nothing it receives meanwhile is timed\n",
                    i, (double)(now - due) / 1e6, (double)(due - start_ns) / 1e9);
        }
    }
    fflush(stderr);
}

/* After the join: every worker's windows, by start, into pt (times from the start instant). */
static void stalls_collect(point_t *pt, int64_t start_ns)
{
    size_t total = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        uint64_t dropped;
        sg_worker_stalls(pt->ws[i], &dropped);
        total += atomic_load(&sg_worker_progress(pt->ws[i])->stalls_n);
        pt->stalls_dropped += dropped;
    }
    if (!total || !(pt->stalls = calloc(total, sizeof(*pt->stalls)))) {
        pt->stalls_dropped += total;
        return;
    }
    for (unsigned i = 0; i < pt->n_workers; i++) {
        unsigned n = atomic_load(&sg_worker_progress(pt->ws[i])->stalls_n);
        const sg_stall_win_t *win = sg_worker_stalls(pt->ws[i], NULL);
        for (unsigned k = 0; k < n; k++)
            pt->stalls[pt->n_stalls++] = (sg_stall_t){
                .worker = i,
                .start_s = (double)(win[k].start_ns - start_ns) / 1e9,
                .end_s = (double)(win[k].end_ns - start_ns) / 1e9,
                .max_lag_ms = (double)win[k].max_lag_ns / 1e6,
                .requests = win[k].requests,
            };
    }
    /* by start (insertion: there are few) */
    for (size_t a = 1; a < pt->n_stalls; a++)
        for (size_t b = a; b > 0 && pt->stalls[b].start_s < pt->stalls[b - 1].start_s; b--) {
            sg_stall_t t = pt->stalls[b];
            pt->stalls[b] = pt->stalls[b - 1];
            pt->stalls[b - 1] = t;
        }
}

/*
 * The controller's look at a server that stopped accepting connections, every 20 ms: one line as soon as any worker
 * has a window open (its first failed connect), one when the windows close (a connect succeeded again), so a killed
 * server is said while it happens, not at the end. Per worker: unreach_since_ns, refused, backing_off and the closed
 * windows (unreach_n, acquire).
 */
typedef struct {
    bool said;       /* the "unreachable" line for the window now open was said */
    int64_t since;   /* its start (the earliest worker's) */
    unsigned *seen;  /* per worker: closed windows already looked at */
    bool recovered;  /* a window closed by a successful connect since the line */
    int64_t back_ns; /* the latest such connect */
} unreach_seen_t;

static void unreach_look(const profile_t *p, const point_t *pt, unreach_seen_t *us, int64_t start_ns, int64_t now,
                         bool show)
{
    if (!us->seen)
        return;
    bool open = false;
    int64_t since = INT64_MAX;
    uint64_t refused = 0, backing = 0, waiting = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        const sg_worker_progress_t *wp = sg_worker_progress(pt->ws[i]);
        int64_t s = atomic_load_explicit(&wp->unreach_since_ns, memory_order_acquire);
        unsigned n = atomic_load_explicit(&wp->unreach_n, memory_order_acquire);
        const sg_unreach_win_t *win = sg_worker_unreachable(pt->ws[i], NULL);
        for (; us->seen[i] < n; us->seen[i]++)
            if (win[us->seen[i]].recovered && us->said) {
                us->recovered = true;
                if (win[us->seen[i]].end_ns > us->back_ns)
                    us->back_ns = win[us->seen[i]].end_ns;
            }
        refused += atomic_load_explicit(&wp->refused, memory_order_relaxed);
        backing += atomic_load_explicit(&wp->backing_off, memory_order_relaxed);
        waiting += atomic_load_explicit(&wp->waiting, memory_order_relaxed);
        if (s) {
            open = true;
            since = s < since ? s : since;
        }
    }
    if (open && !us->said) {
        us->said = true;
        us->since = since > start_ns ? since : start_ns; /* connections opened in advance failed: from the start */
        us->recovered = false;
        us->back_ns = 0;
        watch_line_start(show);
        if (pt->cfg.request_rate > 0 || pt->cfg.fixed_schedule)
            fprintf(stderr,
                    "surge: server unreachable since +%.3f s: connections to %s fail (refused or reset); %llu "
                    "requests waiting; arrivals keep their schedule, each failing as its connect does (class "
                    "connect)\n",
                    (double)(us->since - start_ns) / 1e9, p->run.addr_text, (unsigned long long)waiting);
        else
            fprintf(stderr,
                    "surge: server unreachable since +%.3f s: connections to %s fail (refused or reset); %llu slots "
                    "waiting, each backing off %d ms doubling to %d ms between attempts (each attempt counted as a "
                    "failed request, class connect)\n",
                    (double)(us->since - start_ns) / 1e9, p->run.addr_text, (unsigned long long)(backing + waiting),
                    SG_BACKOFF_MIN_MS, SG_BACKOFF_MAX_MS);
        fflush(stderr);
    } else if (!open && us->said && us->recovered) {
        us->said = false;
        watch_line_start(show);
        fprintf(stderr,
                "surge: server reachable again at +%.3f s: unreachable from +%.3f s (%.3f s), %llu connection "
                "attempts refused so far in the run (listed in the summary's server_unreachable)\n",
                (double)(us->back_ns - start_ns) / 1e9, (double)(us->since - start_ns) / 1e9,
                (double)(us->back_ns - us->since) / 1e9, (unsigned long long)refused);
        fflush(stderr);
    }
}

/* Several URLs: the workers' counts of each URL summed, their first outage and last recovery, from the start. */
static void urls_collect(point_t *pt, int64_t start_ns, size_t n_urls)
{
    for (size_t u = 0; u < n_urls; u++) {
        sg_url_info_t *x = &pt->url_info[u];
        *x = (sg_url_info_t){.first_down_s = -1, .last_up_s = -1};
        int64_t first = 0, last = 0;
        for (unsigned i = 0; i < pt->n_workers; i++) {
            sg_url_stats_t st;
            sg_worker_url_stats(pt->ws[i], u, &st);
            x->connect_failures += st.connect_failures;
            x->rerouted += st.rerouted;
            x->outages += st.outages;
            x->down_at_end |= st.down_at_end;
            if (st.first_down_ns && (!first || st.first_down_ns < first))
                first = st.first_down_ns;
            if (st.last_up_ns > last)
                last = st.last_up_ns;
        }
        if (first)
            x->first_down_s = (double)(first - start_ns) / 1e9;
        if (last)
            x->last_up_s = (double)(last - start_ns) / 1e9;
    }
}

/* After the join: every worker's windows, the overlapping ones merged, by start, into pt. */
static void unreach_collect(point_t *pt, int64_t start_ns)
{
    size_t total = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        uint64_t dropped;
        sg_worker_unreachable(pt->ws[i], &dropped);
        total += atomic_load(&sg_worker_progress(pt->ws[i])->unreach_n);
        pt->unreach_dropped += dropped;
    }
    sg_unreach_win_t *all = total ? calloc(total, sizeof(*all)) : NULL;
    if (!all || !(pt->unreach = calloc(total, sizeof(*pt->unreach)))) {
        free(all);
        pt->unreach_dropped += total;
        return;
    }
    size_t k = 0;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        unsigned n = atomic_load(&sg_worker_progress(pt->ws[i])->unreach_n);
        memcpy(all + k, sg_worker_unreachable(pt->ws[i], NULL), n * sizeof(*all));
        k += n;
    }
    for (size_t a = 1; a < k; a++) /* by start (insertion: there are few) */
        for (size_t b = a; b > 0 && all[b].start_ns < all[b - 1].start_ns; b--) {
            sg_unreach_win_t t = all[b];
            all[b] = all[b - 1];
            all[b - 1] = t;
        }
    int64_t end = 0;
    for (size_t i = 0; i < k; i++) {
        sg_unreach_t *cur = pt->n_unreach ? &pt->unreach[pt->n_unreach - 1] : NULL;
        if (!cur || all[i].start_ns > end) {
            cur = &pt->unreach[pt->n_unreach++];
            /* a window opened by the connections opened in advance starts, for the run, at its start */
            int64_t from = all[i].start_ns > start_ns ? all[i].start_ns : start_ns;
            *cur = (sg_unreach_t){.start_s = (double)(from - start_ns) / 1e9, .recovered = true};
            end = all[i].end_ns;
        }
        if (all[i].end_ns >= end) {
            end = all[i].end_ns;
            cur->recovered = all[i].recovered; /* the last to end says whether the server came back */
        }
        cur->end_s = (double)(end - start_ns) / 1e9;
        cur->refused += all[i].refused;
        cur->waiting += all[i].waiting;
    }
    free(all);
}

/* Release the workers at one start instant once all are set up, and wait for them, passing SIGINT on. */
static void point_wait(profile_t *p, point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    sg_run_t *run = &p->run;
    sg_worker_t **ws = pt->ws;
    unsigned n = pt->n_workers;
    /* bounded by the workers: each is ready within SG_WORKER_SETUP_WAIT_S of starting its set-up */
    for (;;) {
        unsigned ready = 0;
        for (unsigned i = 0; i < n; i++)
            ready += (unsigned)atomic_load(&sg_worker_progress(ws[i])->ready);
        if (ready == n || g_interrupted)
            break;
        usleep(1000);
    }
    report_setup(p, pt);
    run->start_ns = sg_now_ns() + 2000000; /* 2 ms: every worker is past its wait before the first arrival */
    if (p->dist && !g_interrupted && dist_start(p, &run->start_ns) < 0) {
        /* no start for everyone: the workers go and stop at once, measuring nothing */
        run->start_ns = sg_now_ns();
        atomic_store(&run->stop, SG_STOP_ABORT);
        pt->fatal = true;
    }
    int64_t user_at_start, sys_at_start;
    process_cpu(&user_at_start, &sys_at_start);
    atomic_store(&run->go, 1);

    bool show = cfg->progress > 0 || (cfg->progress < 0 && isatty(STDERR_FILENO));
    int64_t last_print = 0;
    bool stop_sent = false;
    watch_t wt = {.quiet_since = run->start_ns, .report_at_s = WATCH_FIRST_S};
    stall_seen_t *seen = calloc(n, sizeof(*seen)); /* NULL on OOM: the lines are not said, the summary has them */
    unreach_seen_t us = {.seen = calloc(n, sizeof(unsigned))}; /* NULL on OOM: as above */
    for (;;) {
        unsigned finished = 0;
        for (unsigned i = 0; i < n; i++)
            finished += (unsigned)atomic_load(&sg_worker_progress(ws[i])->finished);
        if (finished == n)
            break;
        if (p->dist && !stop_sent && dist_tick(p, g_interrupted != 0)) {
            atomic_store(&run->stop, SG_STOP_INTERRUPT);
            for (unsigned i = 0; i < n; i++)
                sg_worker_wake(ws[i]);
            stop_sent = true;
        }
        if (g_interrupted && !stop_sent) {
            atomic_store(&run->stop, SG_STOP_INTERRUPT);
            for (unsigned i = 0; i < n; i++)
                sg_worker_wake(ws[i]);
            stop_sent = true;
        }
        int64_t now = sg_now_ns();
        watch(p, pt, &wt, now, show);
        if (!g_interrupted) {
            stall_look(pt, seen, run->start_ns, now, show);
            unreach_look(p, pt, &us, run->start_ns, now, show);
        }
        /* --benchmark-grace-period: what is still outstanding that long after the sending ended is cancelled */
        if (cfg->benchmark_grace_s >= 0 && wt.sending_over && !stop_sent && !atomic_load(&run->stop) &&
            now - wt.sending_over >= (int64_t)(cfg->benchmark_grace_s * 1e9)) {
            atomic_store(&run->stop, SG_STOP_GRACE);
            for (unsigned i = 0; i < n; i++)
                sg_worker_wake(ws[i]);
            stop_sent = true;
            pt->grace_ended = true;
        }
        if (pt->spec.probe)
            probe_look(p, pt, now);
        if (pt->stab)
            stab_look(p, pt);
        if (show && now - last_print >= 500000000LL) {
            progress_line(ws, n, cfg, run->start_ns, false);
            last_print = now;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    int64_t user_us, sys_us;
    process_cpu(&user_us, &sys_us);
    pt->client_cpu_user_s = us_s(user_us - user_at_start);
    pt->client_cpu_sys_s = us_s(sys_us - sys_at_start);
    pt->client_cpu_s = us_s(user_us - user_at_start + sys_us - sys_at_start);
    stall_look(pt, seen, run->start_ns, sg_now_ns(), show); /* the windows closed at the end */
    free(seen);
    if (!g_interrupted)
        unreach_look(p, pt, &us, run->start_ns, sg_now_ns(), show); /* a recovery just before the end */
    if (us.said && !us.recovered && !g_interrupted) {
        watch_line_start(show);
        fprintf(stderr, "surge: the run ended with %s still unreachable (since +%.3f s)\n", p->run.addr_text,
                (double)(us.since - run->start_ns) / 1e9);
    }
    free(us.seen);
    pt->interrupted = g_interrupted != 0 || p->dist_stopped;
    if (show)
        progress_line(ws, n, cfg, run->start_ns, true);
}

static void print_worker_stats(const sg_run_t *run, unsigned i, const sg_worker_t *w)
{
    sg_worker_stats_t st;
    sg_worker_stats(w, &st);
    fprintf(stderr,
            "surge: worker %u (cpu %d): %llu requests issued, %llu connections opened (peak %llu open, %llu "
            "failed to connect), %llu re-sent after a closed keep-alive connection\n",
            i, st.cpu, (unsigned long long)st.issued, (unsigned long long)st.conns_opened,
            (unsigned long long)st.conns_peak, (unsigned long long)st.connect_failures, (unsigned long long)st.resent);
    if (run->cfg->tls)
        fprintf(stderr, "surge: worker %u: tls: %llu full handshakes, %llu resumed, %llu failed\n", i,
                (unsigned long long)st.tls_full, (unsigned long long)st.tls_resumed,
                (unsigned long long)st.tls_failures);
    if (run->http2)
        fprintf(stderr,
                "surge: worker %u: http2: peak %llu streams on one connection, %llu GOAWAY received, %llu "
                "streams refused and re-sent, %llu streams reset\n",
                i, (unsigned long long)st.h2_streams_peak, (unsigned long long)st.h2_goaways,
                (unsigned long long)st.h2_refused_resent, (unsigned long long)st.h2_resets);
    if (st.backoffs || st.ka_relearned)
        fprintf(stderr,
                "surge: worker %u: server unreachable: %llu slot back-offs after a refused attempt, keep-alive "
                "learning reset %llu times when the server came back\n",
                i, (unsigned long long)st.backoffs, (unsigned long long)st.ka_relearned);
}

/*
 * Join the workers and merge what they measured. With a tokenizer the workers deferred their measured records:
 * OSL is settled from the logs first, off the hot path (sg_osl.h), before anything reads the metrics.
 */
static int point_collect(profile_t *p, point_t *pt)
{
    sg_run_t *run = &p->run;
    char err[512];
    if (!(pt->merged = sg_metrics_new(p->cfg.slos, p->cfg.n_slos)))
        return EXIT_FATAL;
    for (unsigned i = 0; i < pt->n_workers; i++) {
        if (sg_worker_join(pt->ws[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "surge: %s\n", err);
            pt->fatal = true;
        }
        pt->warmup += sg_worker_warmup_count(pt->ws[i]);
        sg_worker_stats_t st;
        sg_worker_stats(pt->ws[i], &st);
        uint64_t streams = run->streams_total ? run->streams_total : pt->n_workers;
        if ((st.issued + 1) * streams > run->point_ids)
            run->point_ids = (st.issued + 1) * streams;
        pt->resent += st.resent_measured;
        pt->silent_closes += st.silent_closes;
        pt->rx_stamps |= st.rx_stamps;
        pt->rx_stamped += st.rx_stamped;
        pt->rx_unstamped += st.rx_unstamped;
        pt->stamp_refused += st.stamp_refused;
        pt->clock_steps += st.clock_steps;
        pt->events_shared += st.events_shared;
        if (st.clock_step_max_ns > pt->clock_step_max_ns)
            pt->clock_step_max_ns = st.clock_step_max_ns;
        pt->loop_turns += st.loop_turns;
        pt->loop_waits += st.loop_waits;
        pt->loop_completions += st.loop_completions;
        pt->loop_coalesced += st.loop_coalesced;
        pt->loop_coalesced_ns += st.loop_coalesced_ns;
        if (st.coalesce_method)
            pt->coalesce_method = st.coalesce_method;
        if (st.coalesce_us > pt->coalesce_us)
            pt->coalesce_us = st.coalesce_us;
        pt->no_reuse_after[0] |= st.no_reuse_after_whole;
        pt->no_reuse_after[1] |= st.no_reuse_after_stream;
        if (p->cfg.verbose)
            print_worker_stats(run, i, pt->ws[i]);
    }
    stalls_collect(pt, run->start_ns);
    unreach_collect(pt, run->start_ns);
    if (run->n_urls > 1)
        urls_collect(pt, run->start_ns, run->n_urls);
    if (run->tok) {
        const char **logs = calloc(pt->n_workers, sizeof(*logs));
        sg_metrics_t **wm = calloc(pt->n_workers, sizeof(*wm));
        int oerr = logs && wm ? 0 : SG_ENOMEM;
        for (unsigned i = 0; i < pt->n_workers && !oerr; i++) {
            logs[i] = sg_worker_log_path(pt->ws[i]);
            wm[i] = sg_worker_metrics(pt->ws[i]);
        }
        if (!oerr)
            oerr = sg_osl_pass(run->tok, logs, wm, pt->n_workers, err, sizeof(err));
        else
            snprintf(err, sizeof(err), "out of memory");
        if (oerr < 0) {
            fprintf(stderr, "surge: %s\n", err);
            pt->fatal = true;
        }
        free(logs);
        free(wm);
    }
    for (unsigned i = 0; i < pt->n_workers; i++)
        if (sg_metrics_merge(pt->merged, sg_worker_metrics(pt->ws[i])) < 0)
            pt->fatal = true;
    return EXIT_OK;
}

/* One load point, start to merge. */
static int point_run(profile_t *p, point_t *pt)
{
    int code = point_start(p, pt);
    if (code != EXIT_OK)
        return code;
    if (!pt->spec.quiet) /* a sweep or search announces each point itself */
        describe(&p->run, pt->n_workers, p->n_streaming);
    if (p->cfg.verbose && p->cfg.tls)
        fprintf(stderr, "surge: TLS: %s\n", p->tls_info);
    if (p->cfg.verbose)
        fprintf(stderr, "surge: %zu distinct payloads, RLIMIT_NOFILE %llu, artifacts in %s\n", p->payloads.n,
                (unsigned long long)p->run.nofile, p->run.artifact_dir);
    /* over several ranks, rank 0 alone scrapes: one server, one view of it */
    if (p->cfg.n_server_metrics_urls && (!p->dist || sg_dist_rank(p->dist) == 0))
        pt->scraper = sg_scraper_start((const char *const *)p->cfg.server_metrics_urls, p->cfg.n_server_metrics_urls,
                                       p->cfg.server_metrics_interval_s, p->cfg.verbose);
    point_wait(p, pt);
    sg_scraper_stop(pt->scraper);
    return point_collect(p, pt);
}

/* --server-metrics-url: server_metrics.json/.csv beside the point's other files, a line per endpoint, and the
 * summary object for profile_export_surge.json (malloc'd; NULL without scraping). */
static char *report_scrapes(const profile_t *p, const point_t *pt)
{
    if (!pt->scraper)
        return NULL;
    const sg_srvm_t *m = sg_scraper_store(pt->scraper);
    char *json = sg_path_join(pt->artifact_dir, "server_metrics.json");
    char *csv = sg_path_join(pt->artifact_dir, "server_metrics.csv");
    int err = json && csv ? sg_srvm_write(m, p->run.start_ns, json, csv) : -ENOMEM;
    if (err < 0)
        fprintf(stderr, "surge: writing %s: %s\n", json ? json : "server_metrics.json", sg_strerror(err));
    free(json);
    free(csv);
    for (size_t i = 0; i < p->cfg.n_server_metrics_urls; i++) {
        uint64_t n, failed;
        sg_srvm_counts(m, i, &n, &failed);
        if (failed || !pt->spec.quiet)
            fprintf(stderr, "surge: server metrics: %llu scrapes of %s, %llu failed%s\n", (unsigned long long)n,
                    p->cfg.server_metrics_urls[i], (unsigned long long)failed,
                    failed ? " (server_metrics.json has each error)" : "");
    }
    return sg_srvm_summary_json(m, INT64_MIN, INT64_MAX);
}

/* A wrong port or an HTTP server under --service-kind triton: one line rather than only the error table. */
static void hint_not_grpc(const profile_t *p, const point_t *pt)
{
    if (!p->cfg.triton || sg_metrics_ok(pt->merged) != 0 || sg_metrics_errors(pt->merged) == 0)
        return;
    const sg_error_group_t *g;
    size_t ng = sg_metrics_error_groups(pt->merged, &g);
    for (size_t i = 0; i < ng; i++)
        if (strstr(g[i].message, "not a gRPC server")) {
            fprintf(stderr, "surge: the server at %s is not a gRPC server (--service-kind triton): %s\n",
                    p->run.addr_text, g[i].message);
            return;
        }
}

/* A server that closes kept-alive connections unannounced, as surge learnt during the run (worker_conn.c): once
 * per kind of response and run, however many points (each point's workers learn it afresh; its summary's
 * keep_alive says so). */
static void note_keep_alive(profile_t *p, const point_t *pt)
{
    for (int kind = 1; kind >= 0; kind--)
        if (pt->no_reuse_after[kind] && !p->keep_alive_told[kind]) {
            p->keep_alive_told[kind] = true;
            fprintf(stderr,
                    "surge: the server closed kept-alive connections right after %s responses without saying so (no "
                    "Connection: close); after %d in a row a worker stops reusing connections after such responses, "
                    "so later requests open a connection of their own (%llu closes seen, %llu requests re-sent)\n",
                    kind ? "streamed" : "whole", SG_SILENT_CLOSE_LIMIT, (unsigned long long)pt->silent_closes,
                    (unsigned long long)pt->resent);
        }
}

/* True when every request of the point failed with HTTP 404: the server has nothing at the path surge used. */
static bool all_not_found(const point_t *pt)
{
    uint64_t failed = sg_metrics_errors(pt->merged), not_found = 0;
    if (sg_metrics_ok(pt->merged) != 0 || failed == 0)
        return false;
    const sg_error_group_t *g;
    size_t ng = sg_metrics_error_groups(pt->merged, &g);
    for (size_t i = 0; i < ng; i++)
        if (g[i].cls == SG_ERRC_HTTP && g[i].http_status == 404)
            not_found += g[i].count;
    return not_found == failed;
}

/*
 * A run of 404s: one line naming the method, the URL and how its path was made (the URL's base path, then the
 * endpoint), with the flag that changes the part most likely wrong. config.c builds the path as base + "/" +
 * endpoint, the endpoint being --endpoint or the type's default.
 */
static void hint_not_found(const profile_t *p, const point_t *pt)
{
    const sg_config_t *cfg = &p->cfg;
    if (cfg->triton || !all_not_found(pt))
        return;
    const char *base = cfg->base_path ? cfg->base_path : "";
    size_t base_len = strlen(base);
    const char *endpoint = cfg->endpoint_path + (strncmp(cfg->endpoint_path, base, base_len) == 0 ? base_len : 0);
    endpoint += endpoint[0] == '/';
    const char *type = sg_endpoint(cfg->endpoint_type)->name;
    bool v1_base = base_len >= 3 && strcmp(base + base_len - 3, "/v1") == 0;
    fprintf(stderr, "surge: every request got HTTP 404 Not Found from POST %s://%s%s; ", cfg->tls ? "https" : "http",
            cfg->host_header, cfg->endpoint_path);
    if (cfg->endpoint_given && v1_base && strncmp(endpoint, "v1/", 3) == 0)
        fprintf(stderr,
                "the URL's base path is %s and --endpoint is %s, so v1 comes twice: drop /v1 from -u/--url, or give "
                "--endpoint %s\n",
                base, endpoint, endpoint + 3);
    else if (cfg->endpoint_given)
        fprintf(stderr,
                "%s%s and --endpoint is %s: check --endpoint (OpenAI-compatible servers serve v1/chat/completions and "
                "v1/completions; without --endpoint, --endpoint-type %s uses the one of those it names)\n",
                base_len ? "the URL's base path is " : "the URL has no base path", base, endpoint, type);
    else if (base_len)
        fprintf(stderr,
                "the URL's base path is %s and the endpoint %s (--endpoint-type %s%s): if the server does not serve "
                "its API under %s, drop it from -u/--url; if it serves it at another path, give that with --endpoint\n",
                base, endpoint, type, v1_base ? ", after a base ending in /v1" : "", base);
    else
        fprintf(stderr,
                "the URL has no base path and the endpoint is %s (--endpoint-type %s): if the server serves its API "
                "under a prefix, add it to -u/--url (http://host:port/PREFIX); if at another path, give that with "
                "--endpoint\n",
                endpoint, type);
}

/* The point's --slo verdicts, on its merged metrics (sg_slo.h). */
static void point_verdicts(point_t *pt)
{
    pt->duration_s = sg_metrics_duration_s(pt->merged);
    size_t n = pt->cfg.n_slo_checks;
    double disp[SG_SLO_MAX];
    point_dispersion(pt, disp); /* slow requests that came together count for fewer */
    sg_slo_eval_clustered(pt->cfg.slo_checks, n, pt->merged, pt->duration_s, pt->cfg.confidence_level, disp,
                          pt->verdicts);
    pt->slo_outcome = n == 0 ? SG_SLO_PASS : sg_slo_overall(pt->verdicts, n);
    pt->slo_pass = pt->slo_outcome == SG_SLO_PASS;
}

/* A point of a sweep or search in one line, its table being in its files; its rates named as everywhere else. */
static void point_line(const point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    const sg_metrics_t *m = pt->merged;
    uint64_t ok = sg_metrics_ok(m), failed = sg_metrics_errors(m), cancelled = sg_metrics_cancelled(m);
    double d = pt->duration_s;
    char load[64];
    if (cfg->request_rate > 0)
        snprintf(load, sizeof load, "request rate %g/s", cfg->request_rate);
    else
        snprintf(load, sizeof load, "concurrency %u", cfg->concurrency);
    const sg_hist_t *lat = sg_metrics_hist(m, SG_M_LATENCY);
    const sg_hist_t *ttft = sg_metrics_hist(m, SG_M_TTFT);
    char ttft_txt[64] = "";
    if (sg_hist_count(ttft))
        snprintf(ttft_txt, sizeof ttft_txt, ", TTFT p99 %.1f ms", sg_hist_percentile(ttft, 99) * 1e-6);
    fprintf(stderr,
            "surge: %s: %llu ok, %llu failed, %llu cancelled; offered %.1f req/s, throughput %.1f ok/s%s, latency p99 "
            "%.1f ms%s%s (%s/)\n",
            load, (unsigned long long)ok, (unsigned long long)failed, (unsigned long long)cancelled,
            sg_metrics_offered_rate(m), d > 0 ? (double)ok / d : 0, ttft_txt,
            sg_hist_count(lat) ? sg_hist_percentile(lat, 99) * 1e-6 : 0, cancelled ? " (censored)" : "",
            !cfg->n_slo_checks                       ? ""
            : pt->slo_outcome == SG_SLO_PASS         ? ", SLOs pass"
            : pt->slo_outcome == SG_SLO_INCONCLUSIVE ? ", SLOs inconclusive"
                                                     : ", SLOs FAIL",
            pt->artifact_dir);
}

/*
 * How often this point's prompts repeated (the summary's "prompt_reuse", sg_prompt_reuse_line for the console):
 * every prompt unique (--cache-bust), or the table's prompts in turn over the requests sent (measured and warmup),
 * and what asked for the reuse. The object's text, malloc'd (NULL on OOM).
 */
static char *prompt_reuse(const profile_t *p, const point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    uint64_t sent = sg_metrics_ok(pt->merged) + sg_metrics_errors(pt->merged) + pt->warmup;
    json_t *o = json_object();
    json_object_set_new(o, "cache_bust", json_string(cfg->cache_bust ? "first_turn_prefix" : "none"));
    json_object_set_new(o, "requests", json_integer((json_int_t)sent));
    if (!cfg->cache_bust)
        json_object_set_new(o, "reason", json_string(cfg->cache_bust_off_reason ? cfg->cache_bust_off_reason : ""));
    if (cfg->cache_bust) {
        json_object_set_new(o, "distinct_prompts", json_integer((json_int_t)sent));
        /* a full slot's words and the words each can be: requests below slot_alphabet ^ slot_words differ */
        json_object_set_new(o, "slot_words", json_integer(p->payloads.uniq.digits));
        json_object_set_new(o, "slot_alphabet", json_integer(p->payloads.uniq.n));
        /* this point's first counter: request id + this numbers its words (random per run) */
        json_object_set_new(o, "slot_base", json_integer((json_int_t)(p->run.uniq_base & INT64_MAX)));
    } else if (cfg->sessions) {
        json_object_set_new(o, "distinct_prompts", json_null());
    } else {
        uint64_t n = p->payloads.n_entries;
        json_object_set_new(o, "table_prompts", json_integer((json_int_t)n));
        json_object_set_new(o, "input_file", json_boolean(cfg->input_file != NULL));
        json_object_set_new(o, "distinct_prompts", json_integer((json_int_t)(sent < n ? sent : n)));
        json_object_set_new(o, "shared_prefixes", json_integer(cfg->num_prefix));
        json_object_set_new(o, "prefix_prompt_length", json_integer(cfg->num_prefix ? cfg->prefix_len : 0));
    }
    sg_prompt_reuse_fill(o);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The table, the files and the exit status of a point that ran. */
static int point_report(profile_t *p, point_t *pt)
{
    const sg_config_t *cfg = &pt->cfg;
    point_verdicts(pt);
    char *input_json = sg_config_to_json(cfg);
    char *reuse_json = prompt_reuse(p, pt);
    /* images and audio: the requests sent (warmup included) take the table's entries in turn */
    char *media_json =
        cfg->sessions
            ? NULL
            : sg_media_summary(&p->payloads, sg_metrics_ok(pt->merged) + sg_metrics_errors(pt->merged) + pt->warmup);
    char *scrapes = report_scrapes(p, pt);
    char *dist_json = p->dist ? sg_dist_rank_json(p->dist) : NULL;
    char *stab_text = stab_json(pt->stab);
    /* DCGM exporter series among the scrapes: per GPU, and tokens per joule over the point's output tokens */
    char *gpu_text =
        pt->scraper ? sg_srvm_gpu_json(sg_scraper_store(pt->scraper), sg_metrics_output_tokens(pt->merged)) : NULL;
    if (!gpu_text && pt->scraper && cfg->gpu_telemetry)
        fprintf(stderr, "surge: --gpu-telemetry: no DCGM exporter metric (DCGM_FI_DEV_*) was scraped from %s\n",
                cfg->n_server_metrics_urls == 1 ? cfg->server_metrics_urls[0] : "the URLs given");
    /* why surge cancelled what it did (the workers' messages say it per request) */
    const char *cancelled_why = pt->interrupted           ? "the run was interrupted"
                                : pt->probe.stopped_early ? "the probe was stopped early"
                                : stab_stopped(pt->stab)  ? "the measurement windows were stable"
                                : pt->grace_ended         ? "--benchmark-grace-period ended"
                                                          : NULL;
    /* the whole process's CPU, just before the summary: set-up before the start instant (payload table, connections
     * opened in advance), the load, closing the connections, the OSL pass and the merge; over a sweep's or search's
     * points, the process so far */
    int64_t proc_user_us, proc_sys_us;
    process_cpu(&proc_user_us, &proc_sys_us);
    sg_run_info_t info = {
        .extra_json = dist_json ? dist_json : stab_text, /* a run over several ranks has no windows */
        .server_metrics_json = scrapes,
        .gpu_json = gpu_text,
        .title = "surge | LLM Metrics",
        .streaming = p->n_streaming > 0,
        .interrupted = pt->interrupted,
        .interrupted_by = run_interrupted() ? run_interrupt_name()
                          : p->dist_stopped ? "another rank stopped"
                                            : NULL,
        .cancelled_why = cancelled_why,
        .warmup_count = pt->warmup,
        .input_config_json = input_json ? input_json : "{}",
        .has_slos = cfg->n_slos > 0,
        .show_trace_timing = cfg->show_trace_timing,
        .url_names = p->url_names,
        .n_url_names = p->run.n_urls > 1 ? p->run.n_urls : 0,
        .url_info = pt->url_info,
        .client_cpu_s = pt->client_cpu_s,
        .client_cpu_user_s = pt->client_cpu_user_s,
        .client_cpu_sys_s = pt->client_cpu_sys_s,
        .process_cpu_user_s = us_s(proc_user_us),
        .process_cpu_sys_s = us_s(proc_sys_us),
        .stall_threshold_ms = cfg->stall_threshold_ms,
        .stalls = pt->stalls,
        .n_stalls = pt->n_stalls,
        .stalls_dropped = pt->stalls_dropped,
        .unreach = pt->unreach,
        .n_unreach = pt->n_unreach,
        .unreach_dropped = pt->unreach_dropped,
        .io_backend = sg_io_backend_name((sg_io_backend_t)p->run.io_backend),
        .coalesce_us = pt->coalesce_us,
        .coalesce_method = pt->coalesce_method,
        .loop_turns = pt->loop_turns,
        .loop_waits = pt->loop_waits,
        .loop_completions = pt->loop_completions,
        .loop_coalesced = pt->loop_coalesced,
        .loop_coalesced_ns = pt->loop_coalesced_ns,
        .tokenizer = p->run.tok ? sg_tok_describe(p->run.tok) : NULL,
        /* the payload build counts prompt tokens with --tokenizer when one is given, else words */
        .isl_source = p->run.tok ? "tokenizer" : "words",
        .slo_checks = cfg->slo_checks,
        .slo_verdicts = pt->verdicts,
        .n_slo_checks = cfg->n_slo_checks,
        .resent_count = pt->resent,
        .silent_closes = pt->silent_closes,
        .timestamp_source = sg_timestamp_source(pt->rx_stamps, pt->rx_stamped, pt->rx_unstamped),
        .rx_stamped = pt->rx_stamped,
        .rx_unstamped = pt->rx_unstamped,
        .stamp_refused = pt->stamp_refused,
        .clock_steps = pt->clock_steps,
        .events_shared = pt->events_shared,
        .clock_step_max_ns = pt->clock_step_max_ns,
        .no_reuse_after_whole = pt->no_reuse_after[0],
        .no_reuse_after_stream = pt->no_reuse_after[1],
        .wall_offset_ns = wall_offset_ns(),
        .command = p->command,
        .host = p->host[0] ? p->host : NULL,
        .prompt_reuse_json = reuse_json,
        .media_json = media_json,
    };
    if (!pt->spec.quiet) {
        sg_export_table(stdout, pt->merged, &info);
        fflush(stdout);
    }
    int xerr = write_exports(&p->run, pt->ws, pt->n_workers, pt->merged, &info);
    free(input_json);
    free(reuse_json);
    free(media_json);
    free(scrapes);
    free(dist_json);
    free(stab_text);
    free(gpu_text);
    if (pt->spec.quiet)
        point_line(pt);
    else if (xerr < 0)
        fprintf(stderr, "surge: artifacts in %s/ are INCOMPLETE: the files named above could not be written%s\n",
                pt->artifact_dir, pt->spec.quiet ? "" : " (the table above is whole)");
    else
        fprintf(stderr, "surge: artifacts in %s/\n", pt->artifact_dir);
    hint_not_grpc(p, pt);
    hint_not_found(p, pt);
    note_keep_alive(p, pt);

    uint64_t ok = sg_metrics_ok(pt->merged), failed = sg_metrics_errors(pt->merged);
    if (pt->interrupted) {
        const char *sig = run_interrupt_name();
        fprintf(stderr, "surge: run INTERRUPTED by %s: the results cover what completed before it\n",
                sig ? sig : "a signal");
        return EXIT_INTERRUPTED;
    }
    if (pt->fatal || xerr < 0)
        return EXIT_FATAL;
    if (failed > 0 && (double)failed > cfg->max_error_rate * (double)(ok + failed)) {
        if (!pt->spec.quiet) /* a sweep's or search's row says it */
            fprintf(stderr, "surge: %llu of %llu requests failed (%.2f%%), above --max-error-rate %g\n",
                    (unsigned long long)failed, (unsigned long long)(ok + failed),
                    100.0 * (double)failed / (double)(ok + failed), cfg->max_error_rate);
        return EXIT_REQUEST_ERRORS;
    }
    if (ok + failed == 0) {
        uint64_t cancelled = sg_metrics_cancelled(pt->merged);
        if (cancelled)
            fprintf(stderr, "surge: no request completed: the %llu measured were all cancelled (%s)\n",
                    (unsigned long long)cancelled, cancelled_why ? cancelled_why : "the run stopped");
        else if (sg_metrics_cancel_tests(pt->merged))
            fprintf(stderr,
                    "surge: no request completed: the %llu measured were all cut by the cancellation test "
                    "(--request-cancellation-rate), so there are no latencies to report\n",
                    (unsigned long long)sg_metrics_cancel_tests(pt->merged));
        else
            fprintf(stderr, "surge: no request was measured\n");
        return EXIT_REQUEST_ERRORS;
    }
    if (pt->slo_outcome == SG_SLO_FAIL) {
        if (!pt->spec.quiet)
            fprintf(stderr, "surge: an --slo failed (see SLO verdicts above): exit status %d\n", EXIT_SLO_FAILED);
        return EXIT_SLO_FAILED;
    }
    if (pt->slo_outcome == SG_SLO_INCONCLUSIVE) {
        if (!pt->spec.quiet)
            fprintf(stderr,
                    "surge: an --slo is inconclusive at %g%% confidence: its interval straddles the target (see SLO "
                    "verdicts above; more requests narrow it): exit status %d\n",
                    100 * cfg->confidence_level, EXIT_SLO_INCONCLUSIVE);
        return EXIT_SLO_INCONCLUSIVE;
    }
    return EXIT_OK;
}

int point_exec(profile_t *p, const point_spec_t *spec, point_t *pt)
{
    int code = point_setup(p, spec, pt);
    if (code == EXIT_OK && spec->probe)
        probe_begin(p, pt);
    if (code == EXIT_OK)
        code = point_run(p, pt); /* point_start calls bounds_begin once it knows its workers */
    bounds_end(p, pt);
    if (spec->probe)
        probe_end(p, pt);
    int stab_code = EXIT_OK;
    if (code == EXIT_OK && pt->stab)
        stab_code = stab_finish(p, pt); /* before the report: its figures are the windows' */
    if (code == EXIT_OK)
        code = points_worse(point_report(p, pt), stab_code);
    p->run.uniq_base += p->run.point_ids; /* the next point's prompts start past this one's */
    p->run.point_ids = 0;
    return code;
}

char *point_summary_path(const point_t *pt)
{
    char *stem = export_stem(pt->cfg.profile_export_file ? pt->cfg.profile_export_file : "profile_export.json");
    char *path = stem ? export_path(pt->artifact_dir, stem, "_surge.json") : NULL;
    free(stem);
    return path;
}

void point_free(point_t *pt)
{
    if (pt->ws)
        for (unsigned i = 0; i < pt->n_workers; i++)
            sg_worker_free(pt->ws[i]);
    free(pt->ws);
    sg_metrics_free(pt->merged);
    free(pt->stalls);
    free(pt->unreach);
    free(pt->artifact_dir);
    free(pt->probe.sample_t);
    free(pt->probe.blocks);
    free(pt->probe.sample_n);
    sg_scraper_free(pt->scraper);
    stab_free(pt->stab);
    memset(pt, 0, sizeof(*pt));
}

static void profile_free(profile_t *p)
{
    if (p->run.h2_reqs)
        for (size_t i = 0; i < p->payloads.n; i++)
            sg_h2_req_free(&p->run.h2_reqs[i]);
    free(p->run.h2_reqs);
    free(p->run.local_addrs);
    sg_workload_free(&p->payloads);
    sg_conv_free(&p->convs);
    sg_input_free(&p->input);
    json_decref(p->tools);
    free(p->schedule);
    sg_tok_free(p->tok);
    sg_dist_free(p->dist);
    free(p->artifact_dir);
    if (p->cfg.tls)
        sg_tls_thread_done(); /* the preflight's handshake ran here */
    sg_config_free(&p->cfg);
    free(p->command);
}

/* --generate-plots: the report of what the run (or sweep, or search) wrote, interrupted ones included. A report
 * that cannot be written turns a clean exit into EXIT_FATAL; the run's own failure keeps its code. */
static int write_plots(profile_t *p, int code)
{
    if (!p->cfg.generate_plots || !p->artifact_dir ||
        (code != EXIT_OK && code != EXIT_REQUEST_ERRORS && code != EXIT_SLO_FAILED && code != EXIT_SLO_INCONCLUSIVE &&
         code != EXIT_INTERRUPTED))
        return code;
    int rc = sg_report_dirs(&p->artifact_dir, 1, NULL, false);
    return rc != 0 && code == EXIT_OK ? EXIT_FATAL : code;
}

int sg_profile_main(int argc, char **argv)
{
    profile_t p;
    memset(&p, 0, sizeof(p));
    /* before the parse, which permutes argv */
    p.command = sg_config_command(argc, argv);
    p.started_wall_ns = sg_now_ns() + wall_offset_ns();
    if (gethostname(p.host, sizeof p.host - 1) != 0)
        p.host[0] = '\0';
    int rc = sg_config_parse(&p.cfg, argc, argv);
    if (rc == 1) {
        sg_config_free(&p.cfg);
        free(p.command);
        return EXIT_OK;
    }
    if (rc < 0) {
        free(p.command);
        return EXIT_USAGE;
    }
    p.run.cfg = &p.cfg;
    p.run.payloads = &p.payloads;

    static int (*const prepare[])(profile_t *) = {
        dist_prepare,   prepare_inputs, prepare_workload, prepare_slos,        prepare_io,
        prepare_target, prepare_h2,     prepare_output,   prepare_inputs_json, dist_join,
    };
    int code = EXIT_OK;
    for (size_t i = 0; i < SG_ARRAY_LEN(prepare) && code == EXIT_OK; i++)
        code = prepare[i](&p);
    if (code == EXIT_OK && p.cfg.sweep) {
        code = sweep_main(&p);
    } else if (code == EXIT_OK && p.cfg.search) {
        code = search_main(&p);
    } else if (code == EXIT_OK && p.cfg.num_profile_runs > 1) {
        code = multirun_main(&p);
    } else if (code == EXIT_OK) {
        point_t pt = {0};
        point_spec_t one = {0};
        code = point_exec(&p, &one, &pt);
        if (p.dist)
            code = dist_finish(&p, &pt, code);
        point_free(&pt);
    }
    if (!p.dist || sg_dist_rank(p.dist) == 0)
        code = write_plots(&p, code);
    profile_free(&p);
    return code;
}
