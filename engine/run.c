/*
 * The run controller: everything before the workers start (validate, build the workload, check the target,
 * create the artifact directory), the wait (progress line, SIGINT), and everything after they join (merge,
 * export, exit status). Runs on the main thread only.
 */
#define _GNU_SOURCE
#include "sg_run.h"

#include "sg_grpc.h"
#include "sg_input.h"
#include "sg_kserve.h"
#include "sg_osl.h"
#include "sg_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_OK 0
#define EXIT_REQUEST_ERRORS 1 /* the run completed, but more requests failed than --max-error-rate allows */
#define EXIT_USAGE 2          /* bad input or a target we cannot use: nothing was measured */
#define EXIT_FATAL 3          /* the run could not go on (I/O set-up, out of memory) */
#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static int mkdir_p(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* One blocking connect before anything starts, so an unreachable server is a clear message, not N errors.
 * With fd_out the connected socket is handed back (non-blocking) instead of closed. */
static int preflight(const sg_run_t *run, int timeout_ms, int *fd_out)
{
    int fd = socket(run->addr.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int err = 0;
    if (connect(fd, (const struct sockaddr *)&run->addr.addr, run->addr.len) < 0) {
        if (errno != EINPROGRESS) {
            err = -errno;
        } else {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int n = poll(&pfd, 1, timeout_ms);
            if (n == 0) {
                err = -ETIMEDOUT;
            } else if (n < 0) {
                err = -errno;
            } else {
                int soerr = 0;
                socklen_t len = sizeof(soerr);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
                err = -soerr;
            }
        }
    }
    if (fd_out && err == 0)
        *fd_out = fd;
    else
        close(fd);
    return err;
}

/* Blocking send of the filter's pending ciphertext. 0 or -errno. */
static int tls_send_pending(sg_tls_conn_t *t, int fd, int64_t deadline)
{
    for (;;) {
        const uint8_t *p;
        size_t n;
        sg_tls_out_peek(t, &p, &n);
        if (!n)
            return 0;
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            sg_tls_out_consume(t, (size_t)k);
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        int left = (int)((deadline - sg_now_ns()) / 1000000);
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (left <= 0 || poll(&pfd, 1, left) == 0)
            return -ETIMEDOUT;
    }
}

/*
 * https://: one handshake on fd with the run's options, so that an untrusted certificate, a host-name mismatch, a
 * server without h2 when --http2 requires it, or a bad --cacert/--cert file is one clear line before the run.
 * Tells which protocol the server selected (alpn, "" for none) and describes the session in info. 0, or -1 with
 * the reason in err.
 */
static int preflight_tls(const sg_run_t *run, int fd, int timeout_ms, char *alpn, size_t alpn_len, char *info,
                         size_t info_len, char *err, size_t errlen)
{
    const sg_config_t *cfg = run->cfg;
    sg_tls_ctx_t *ctx = NULL;
    sg_tls_conn_t *t = NULL;
    int rc = -1;
    char cerr[256];
    if (sg_tls_client_ctx_new(&run->tls_opts, &ctx, cerr, sizeof cerr) < 0) {
        snprintf(err, errlen, "TLS set-up: %s", cerr);
        return -1;
    }
    if (sg_tls_conn_new(ctx, cfg->host, cfg->host_header, &t) < 0) {
        snprintf(err, errlen, "TLS set-up failed for the host \"%s\"", cfg->host);
        goto out;
    }
    int64_t deadline = sg_now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int h = sg_tls_handshake(t);
        int e = tls_send_pending(t, fd, deadline);
        if (h < 0) {
            snprintf(err, errlen, "%s", sg_tls_error(t));
            goto out;
        }
        if (e < 0) {
            snprintf(err, errlen, "TLS handshake: sending: %s", sg_strerror(e));
            goto out;
        }
        if (h == 0)
            break;
        int left = (int)((deadline - sg_now_ns()) / 1000000);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, left) == 0) {
            snprintf(err, errlen,
                     "TLS handshake: no answer from the server within %d s (does it speak TLS on this port?)",
                     timeout_ms / 1000);
            goto out;
        }
        uint8_t buf[16384];
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (k < 0) {
            snprintf(err, errlen, "TLS handshake: %s", strerror(errno));
            goto out;
        }
        if (k == 0)
            sg_tls_feed_eof(t);
        else if (sg_tls_feed(t, buf, (size_t)k) < 0) {
            snprintf(err, errlen, "TLS handshake: the server sent too much");
            goto out;
        }
    }
    snprintf(alpn, alpn_len, "%s", sg_tls_alpn(t));
    snprintf(info, info_len, "%s %s%s, ALPN %s", sg_tls_version(t), sg_tls_cipher(t),
             cfg->insecure ? " (not verified: -k)" : "", alpn[0] ? alpn : "none");
    if (sg_tls_close(t) == 0)
        (void)tls_send_pending(t, fd, deadline);
    rc = 0;
out:
    sg_tls_conn_free(t);
    sg_tls_ctx_free(ctx);
    return rc;
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

static void progress_line(sg_worker_t **ws, unsigned n, const sg_config_t *cfg, int64_t start_ns, uint64_t *last_done,
                          int64_t *last_ns, bool final)
{
    uint64_t done = 0, errors = 0, inflight = 0, warm = 0;
    for (unsigned i = 0; i < n; i++) {
        const sg_worker_progress_t *p = sg_worker_progress(ws[i]);
        done += atomic_load_explicit(&p->completed, memory_order_relaxed);
        errors += atomic_load_explicit(&p->errors, memory_order_relaxed);
        inflight += atomic_load_explicit(&p->in_flight, memory_order_relaxed);
        warm += atomic_load_explicit(&p->warmup_done, memory_order_relaxed);
    }
    int64_t now = sg_now_ns();
    double dt = (double)(now - *last_ns) / 1e9;
    double rate = dt > 0 ? (double)(done - *last_done) / dt : 0;
    *last_done = done;
    *last_ns = now;
    char total[32] = "?";
    if (cfg->request_count)
        snprintf(total, sizeof(total), "%llu", (unsigned long long)cfg->request_count);
    double elapsed = (double)(now - start_ns) / 1e9;
    fprintf(stderr, "\r\033[K%s %llu/%s done  %.0f req/s  %llu in flight  %llu errors  %.1fs",
            warm < cfg->warmup_request_count ? "warmup" : "profile", (unsigned long long)done, total, rate,
            (unsigned long long)inflight, (unsigned long long)errors, elapsed < 0 ? 0 : elapsed);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

/* User + system CPU of the whole process so far: the workers' cost (and the controller's, which sleeps). */
static double process_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
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

static int write_exports(const sg_run_t *run, sg_worker_t **ws, unsigned n, sg_metrics_t *merged,
                         const sg_run_info_t *info)
{
    const sg_config_t *cfg = run->cfg;
    char *stem = export_stem(cfg->profile_export_file ? cfg->profile_export_file : "profile_export.json");
    if (!stem)
        return -ENOMEM;
    char name[512];
    int rc = 0;

    snprintf(name, sizeof(name), "%s_surge.json", stem);
    char *json_path = path_join(run->artifact_dir, name);
    snprintf(name, sizeof(name), "%s_surge.csv", stem);
    char *csv_path = path_join(run->artifact_dir, name);
    snprintf(name, sizeof(name), "%s.jsonl", stem);
    char *jsonl_path = path_join(run->artifact_dir, name);
    const char **logs = calloc(n, sizeof(*logs));
    if (!json_path || !csv_path || !jsonl_path || !logs) {
        rc = -ENOMEM;
        goto out;
    }
    for (unsigned i = 0; i < n; i++)
        logs[i] = sg_worker_log_path(ws[i]);

    int err = sg_export_jsonl(jsonl_path, logs, n, (const char *const *)cfg->models, cfg->n_models);
    if (err < 0) {
        fprintf(stderr, "surge: writing %s: %s\n", jsonl_path, sg_strerror(err));
        rc = err;
    }
    for (unsigned i = 0; i < n; i++)
        unlink(logs[i]);
    err = sg_export_csv(csv_path, merged, info);
    if (err < 0) {
        fprintf(stderr, "surge: writing %s: %s\n", csv_path, sg_strerror(err));
        rc = err;
    }
    /* the summary last: its presence says the other files are complete */
    err = sg_export_json(json_path, merged, info);
    if (err < 0) {
        fprintf(stderr, "surge: writing %s: %s\n", json_path, sg_strerror(err));
        rc = err;
    }
out:
    free(logs);
    free(json_path);
    free(csv_path);
    free(jsonl_path);
    free(stem);
    return rc;
}

static void describe(const sg_run_t *run, unsigned n_workers)
{
    const sg_config_t *cfg = run->cfg;
    char load[96];
    if (cfg->fixed_schedule) {
        int k = snprintf(load, sizeof(load), "fixed schedule from %s", cfg->input_file);
        if (cfg->fixed_schedule_speedup != 1 && k > 0 && (size_t)k < sizeof(load))
            snprintf(load + k, sizeof(load) - (size_t)k, " at %gx", cfg->fixed_schedule_speedup);
    } else if (cfg->request_rate > 0) {
        int k = snprintf(load, sizeof(load), "request rate %g/s (%s)", cfg->request_rate,
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
    else
        snprintf(stop, sizeof(stop), "%gs", cfg->benchmark_duration_s);
    if (cfg->triton)
        fprintf(stderr, "surge: profiling %s at %s over gRPC%s, %s, backend %s (%s, %s), %u worker%s\n", cfg->models[0],
                run->addr_text, cfg->tls ? " (TLS)" : "", cfg->streaming ? "ModelStreamInfer" : "ModelInfer",
                sg_kserve_backend_name((sg_kserve_backend_t)cfg->backend), load, stop, n_workers,
                n_workers == 1 ? "" : "s");
    else
        fprintf(stderr, "surge: profiling %s at %s://%s%s (%s%s, %s, %s), %u worker%s\n", cfg->models[0],
                cfg->tls ? "https" : "http", run->addr_text, cfg->endpoint_path, run->http2 ? "HTTP/2, " : "",
                cfg->streaming ? "streaming" : "not streaming", load, stop, n_workers, n_workers == 1 ? "" : "s");
}

int sg_profile_main(int argc, char **argv)
{
    sg_config_t cfg;
    int rc = sg_config_parse(&cfg, argc, argv);
    if (rc == 1) {
        sg_config_free(&cfg);
        return EXIT_OK;
    }
    if (rc < 0)
        return EXIT_USAGE;

    int exit_code = EXIT_OK;
    char err[512];
    sg_payload_table_t payloads = {0};
    sg_tokenizer_t *tok = NULL;
    sg_input_t input = {0};
    int64_t *schedule = NULL;
    sg_worker_t **ws = NULL;
    unsigned n_workers = 0;
    sg_metrics_t *merged = NULL;
    char *input_json = NULL;
    char *run_name = NULL;

    sg_run_t run;
    memset(&run, 0, sizeof(run));
    run.cfg = &cfg;
    run.payloads = &payloads;

    /* Everything that reads local files comes first: a bad tokenizer or input file is reported before any
     * connection is made. */
    if (cfg.tokenizer) {
        if (sg_tok_load(cfg.tokenizer, &tok, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: --tokenizer %s: %s\n", cfg.tokenizer, err);
            exit_code = EXIT_USAGE;
            goto out;
        }
        run.tok = tok;
    }
    if (cfg.input_file) {
        if (sg_input_load(cfg.input_file, (sg_input_format_t)cfg.input_format, &input, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge: --input-file: %s\n", err);
            exit_code = EXIT_USAGE;
            goto out;
        }
        if (input.skipped)
            fprintf(stderr,
                    "surge: --input-file %s: skipped %zu of %zu conversations without a human turn followed "
                    "by a reply\n",
                    cfg.input_file, input.skipped, input.skipped + input.n);
        if (cfg.fixed_schedule) {
            if (input.format != SG_INPUT_MOONCAKE) {
                fprintf(stderr,
                        "surge: --fixed-schedule: %s is %s, not a trace (mooncake_trace lines with "
                        "\"timestamp\")\n",
                        cfg.input_file, sg_input_format_name(input.format));
                exit_code = EXIT_USAGE;
                goto out;
            }
            schedule = malloc(input.n * sizeof(*schedule));
            if (!schedule) {
                exit_code = EXIT_FATAL;
                goto out;
            }
            for (size_t i = 0; i < input.n; i++)
                schedule[i] = input.e[i].t_ns; /* sorted, relative to the first */
            run.schedule_ns = schedule;
            run.schedule_n = input.n;
            cfg.request_count = input.n; /* every entry once */
        }
    }
    /* a deadline the server can see (--request-timeout), as gRPC clients send it */
    char grpc_timeout[SG_GRPC_TIMEOUT_MAX] = "";
    if (cfg.triton && sg_grpc_timeout_format((int64_t)(cfg.request_timeout_s * 1e9), grpc_timeout) < 0)
        grpc_timeout[0] = '\0';
    sg_workload_spec_t spec = {
        .host_header = cfg.host_header,
        .path = cfg.endpoint_path,
        .headers = (const char *const *)cfg.headers,
        .kind = cfg.endpoint_type,
        .models = (const char *const *)cfg.models,
        .n_models = cfg.n_models,
        .model_strategy = (int)cfg.model_strategy,
        .streaming = cfg.streaming,
        .extra_inputs_json = cfg.extra_inputs_json,
        .num_prompts = cfg.num_prompts,
        .isl_mean = cfg.isl_mean,
        .isl_stddev = cfg.isl_stddev,
        .osl_mean = cfg.osl_mean,
        .osl_stddev = cfg.osl_stddev,
        .seed = cfg.random_seed,
        .tok = tok,
        .prefix_len = cfg.num_prefix ? cfg.prefix_len : 0,
        .num_prefix = cfg.num_prefix,
        .input = cfg.input_file ? &input : NULL,
        .input_name = cfg.input_file,
        .block_size = cfg.block_size,
        .grpc = cfg.triton,
        .backend = cfg.backend,
        .deterministic = cfg.osl_deterministic,
        .grpc_timeout = grpc_timeout[0] ? grpc_timeout : NULL,
    };
    if (sg_workload_build(&spec, &payloads, err, sizeof(err)) < 0) {
        fprintf(stderr, "surge: building the workload: %s\n", err);
        exit_code = EXIT_USAGE;
        goto out;
    }
    sg_input_free(&input); /* the payloads hold what the requests need */
    if (sg_tcp_resolve(cfg.host, cfg.port, &run.addr, err, sizeof(err)) < 0) {
        fprintf(stderr, "surge: -u/--url %s: %s\n", cfg.url, err);
        exit_code = EXIT_USAGE;
        goto out;
    }
    sg_addr_format(&run.addr, run.addr_text, sizeof(run.addr_text));
    int pfd = -1;
    int perr = preflight(&run, 5000, cfg.tls ? &pfd : NULL);
    if (perr < 0) {
        fprintf(stderr, "surge: cannot connect to %s (from -u/--url %s): %s\n", run.addr_text, cfg.url,
                sg_strerror(perr));
        exit_code = EXIT_USAGE;
        goto out;
    }
    run.http2 = cfg.http2;
    char tls_info[160] = "";
    if (cfg.tls) {
        /* --http2 demands h2; otherwise offer both and let the server choose. The workers then offer only what
         * it chose here, so every connection of the run speaks one protocol (h2 then required). */
        run.tls_opts = (sg_tls_opts_t){
            .cafile = cfg.cacert,
            .insecure = cfg.insecure,
            .cert_file = cfg.client_cert,
            .key_file = cfg.client_key,
            .alpn = cfg.http2 ? "h2" : "h2,http/1.1",
            .alpn_required = cfg.http2,
        };
        char alpn[64];
        int terr = preflight_tls(&run, pfd, 5000, alpn, sizeof alpn, tls_info, sizeof tls_info, err, sizeof err);
        close(pfd);
        if (terr < 0) {
            fprintf(stderr, "surge: %s (-u/--url %s)\n", err, cfg.url);
            if (cfg.http2 && (strstr(err, "ALPN") || strstr(err, "no_application_protocol")))
                fprintf(stderr, "surge: --http2 on https:// requires the server to select h2 through ALPN; "
                                "without --http2 surge uses what the server selects\n");
            exit_code = EXIT_USAGE;
            goto out;
        }
        run.http2 = strcmp(alpn, "h2") == 0;
        run.tls_opts.alpn = run.http2 ? "h2" : "http/1.1";
        run.tls_opts.alpn_required = run.http2;
    }
    if (run.http2) {
        /* Each pre-rendered request once more in HTTP/2 form (header fields, body in place), shared read-only. */
        run.h2_reqs = calloc(payloads.n, sizeof(*run.h2_reqs));
        if (!run.h2_reqs) {
            exit_code = EXIT_FATAL;
            goto out;
        }
        for (size_t i = 0; i < payloads.n; i++) {
            int herr = sg_h2_req_from_h1(payloads.items[i].bytes, payloads.items[i].len, cfg.tls ? "https" : "http",
                                         &run.h2_reqs[i]);
            if (herr < 0) {
                fprintf(stderr, "surge: HTTP/2: cannot express request %zu in HTTP/2: %s\n", i, sg_strerror(herr));
                exit_code = herr == SG_ENOMEM ? EXIT_FATAL : EXIT_USAGE;
                goto out;
            }
        }
    }

    run_name = sg_config_run_name(&cfg);
    if (cfg.artifact_dir) {
        run.artifact_dir = strdup(cfg.artifact_dir);
    } else {
        size_t len = strlen(run_name) + 16;
        run.artifact_dir = malloc(len);
        if (run.artifact_dir)
            snprintf(run.artifact_dir, len, "artifacts/%s", run_name);
    }
    if (!run.artifact_dir) {
        exit_code = EXIT_FATAL;
        goto out;
    }
    int derr = mkdir_p(run.artifact_dir);
    if (derr < 0) {
        fprintf(stderr, "surge: --artifact-dir %s: %s\n", run.artifact_dir, sg_strerror(derr));
        exit_code = EXIT_USAGE;
        goto out;
    }
    run.nofile = sg_raise_nofile();
    uint64_t want_conns = cfg.request_rate > 0 ? cfg.max_concurrency : cfg.concurrency;
    if (want_conns && run.nofile < want_conns + 64)
        fprintf(stderr,
                "surge: warning: RLIMIT_NOFILE (%llu) leaves room for fewer connections than the %llu requests asked "
                "to be in flight; the rest will wait, and that shows as schedule lag (raise it with ulimit -n)\n",
                (unsigned long long)run.nofile, (unsigned long long)want_conns);

    /* Workers inherit a mask that blocks SIGINT/SIGTERM: only the controller handles them. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);

    int cpus[1024];
    unsigned n_cpus = cpu_list(cpus, SG_ARRAY_LEN(cpus));
    n_workers = cfg.workers;
    /* A worker without a slot would hold a share of the requests it can never send. */
    if (cfg.request_rate == 0 && !cfg.fixed_schedule && cfg.concurrency < n_workers)
        n_workers = cfg.concurrency;
    if (cfg.max_concurrency && cfg.max_concurrency < n_workers)
        n_workers = cfg.max_concurrency;
    /* --max-connections: every worker needs a connection of its own */
    if (cfg.max_connections && cfg.max_connections < n_workers)
        n_workers = cfg.max_connections;
    ws = calloc(n_workers, sizeof(*ws));
    if (!ws) {
        exit_code = EXIT_FATAL;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        goto out;
    }
    for (unsigned i = 0; i < n_workers; i++) {
        ws[i] = sg_worker_new(&run, i, n_workers, cpus[i % n_cpus], err, sizeof(err));
        if (!ws[i]) {
            fprintf(stderr, "surge: %s\n", err);
            exit_code = EXIT_FATAL;
            break;
        }
    }
    for (unsigned i = 0; i < n_workers && exit_code == EXIT_OK; i++) {
        int e = sg_worker_start(ws[i]);
        if (e < 0) {
            fprintf(stderr, "surge: starting worker %u: %s\n", i, sg_strerror(e));
            exit_code = EXIT_FATAL;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (exit_code != EXIT_OK) {
        atomic_store(&run.stop, 1);
        run.start_ns = sg_now_ns();
        atomic_store(&run.go, 1);
        for (unsigned i = 0; i < n_workers; i++)
            if (ws[i]) {
                sg_worker_join(ws[i], err, sizeof(err));
                unlink(sg_worker_log_path(ws[i])); /* nothing was measured: leave no half-made files */
            }
        goto out;
    }

    describe(&run, n_workers);
    if (cfg.verbose && cfg.tls)
        fprintf(stderr, "surge: TLS: %s\n", tls_info);
    if (cfg.verbose)
        fprintf(stderr, "surge: %zu distinct payloads, RLIMIT_NOFILE %llu, artifacts in %s\n", payloads.n,
                (unsigned long long)run.nofile, run.artifact_dir);
    /* Wait for every worker's set-up, then release them all at one start instant. */
    for (;;) {
        unsigned ready = 0;
        for (unsigned i = 0; i < n_workers; i++)
            ready += (unsigned)atomic_load(&sg_worker_progress(ws[i])->ready);
        if (ready == n_workers || g_interrupted)
            break;
        usleep(1000);
    }
    run.start_ns = sg_now_ns() + 2000000; /* 2 ms: every worker is past its wait before the first arrival */
    double cpu_at_start = process_cpu_s();
    atomic_store(&run.go, 1);

    bool show = cfg.progress > 0 || (cfg.progress < 0 && isatty(STDERR_FILENO));
    uint64_t last_done = 0;
    int64_t last_ns = run.start_ns, last_print = 0;
    bool stop_sent = false;
    for (;;) {
        unsigned finished = 0;
        for (unsigned i = 0; i < n_workers; i++)
            finished += (unsigned)atomic_load(&sg_worker_progress(ws[i])->finished);
        if (finished == n_workers)
            break;
        if (g_interrupted && !stop_sent) {
            atomic_store(&run.stop, 1);
            for (unsigned i = 0; i < n_workers; i++)
                sg_worker_wake(ws[i]);
            stop_sent = true;
        }
        int64_t now = sg_now_ns();
        if (show && now - last_print >= 500000000LL) {
            progress_line(ws, n_workers, &cfg, run.start_ns, &last_done, &last_ns, false);
            last_print = now;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    double client_cpu = process_cpu_s() - cpu_at_start;
    if (show)
        progress_line(ws, n_workers, &cfg, run.start_ns, &last_done, &last_ns, true);

    bool fatal = false;
    uint64_t warmup = 0, resent = 0;
    merged = sg_metrics_new(cfg.slos, cfg.n_slos);
    if (!merged) {
        exit_code = EXIT_FATAL;
        goto out;
    }
    for (unsigned i = 0; i < n_workers; i++) {
        if (sg_worker_join(ws[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "surge: %s\n", err);
            fatal = true;
        }
        warmup += sg_worker_warmup_count(ws[i]);
        sg_worker_stats_t st;
        sg_worker_stats(ws[i], &st);
        resent += st.resent_measured;
        if (cfg.verbose) {
            fprintf(stderr,
                    "surge: worker %u (cpu %d): %llu requests issued, %llu connections opened (peak %llu open, %llu "
                    "failed to connect), %llu re-sent after a closed keep-alive connection\n",
                    i, st.cpu, (unsigned long long)st.issued, (unsigned long long)st.conns_opened,
                    (unsigned long long)st.conns_peak, (unsigned long long)st.connect_failures,
                    (unsigned long long)st.resent);
            if (cfg.tls)
                fprintf(stderr, "surge: worker %u: tls: %llu full handshakes, %llu resumed, %llu failed\n", i,
                        (unsigned long long)st.tls_full, (unsigned long long)st.tls_resumed,
                        (unsigned long long)st.tls_failures);
            if (run.http2)
                fprintf(stderr,
                        "surge: worker %u: http2: peak %llu streams on one connection, %llu GOAWAY received, %llu "
                        "streams refused and re-sent, %llu streams reset\n",
                        i, (unsigned long long)st.h2_streams_peak, (unsigned long long)st.h2_goaways,
                        (unsigned long long)st.h2_refused_resent, (unsigned long long)st.h2_resets);
        }
    }
    /* With a tokenizer the workers deferred their measured records: settle OSL from the logs, off the hot path
     * (sg_osl.h), before anything reads the metrics. */
    if (run.tok) {
        const char **logs = calloc(n_workers, sizeof(*logs));
        sg_metrics_t **wm = calloc(n_workers, sizeof(*wm));
        int oerr = logs && wm ? 0 : SG_ENOMEM;
        for (unsigned i = 0; i < n_workers && !oerr; i++) {
            logs[i] = sg_worker_log_path(ws[i]);
            wm[i] = sg_worker_metrics(ws[i]);
        }
        if (!oerr)
            oerr = sg_osl_pass(run.tok, logs, wm, n_workers, err, sizeof(err));
        else
            snprintf(err, sizeof(err), "out of memory");
        if (oerr < 0) {
            fprintf(stderr, "surge: %s\n", err);
            fatal = true;
        }
        free(logs);
        free(wm);
    }
    for (unsigned i = 0; i < n_workers; i++)
        if (sg_metrics_merge(merged, sg_worker_metrics(ws[i])) < 0)
            fatal = true;

    input_json = sg_config_to_json(&cfg);
    sg_run_info_t info = {
        .title = "surge | LLM Metrics",
        .streaming = cfg.streaming,
        .interrupted = g_interrupted != 0,
        .warmup_count = warmup,
        .input_config_json = input_json ? input_json : "{}",
        .has_slos = cfg.n_slos > 0,
        .client_cpu_s = client_cpu,
        .tokenizer = run.tok ? sg_tok_describe(run.tok) : NULL,
        /* the payload build counts prompt tokens with --tokenizer when one is given, else words */
        .isl_source = run.tok ? "tokenizer" : "words",
        .resent_count = resent,
    };
    sg_export_table(stdout, merged, &info);
    fflush(stdout);
    int xerr = write_exports(&run, ws, n_workers, merged, &info);
    fprintf(stderr, "surge: artifacts in %s/\n", run.artifact_dir);

    uint64_t ok = sg_metrics_ok(merged), failed = sg_metrics_errors(merged);
    if (cfg.triton && ok == 0 && failed > 0) {
        /* a wrong port or an HTTP server: say so in one line rather than only in the error table */
        const sg_error_group_t *g;
        size_t ng = sg_metrics_error_groups(merged, &g);
        for (size_t i = 0; i < ng; i++)
            if (strstr(g[i].message, "not a gRPC server")) {
                fprintf(stderr, "surge: the server at %s is not a gRPC server (--service-kind triton): %s\n",
                        run.addr_text, g[i].message);
                break;
            }
    }
    if (g_interrupted) {
        fprintf(stderr, "surge: run INTERRUPTED: the results cover what completed before the interrupt\n");
        exit_code = EXIT_INTERRUPTED;
    } else if (fatal || xerr < 0) {
        exit_code = EXIT_FATAL;
    } else if (failed > 0 && (double)failed > cfg.max_error_rate * (double)(ok + failed)) {
        fprintf(stderr, "surge: %llu of %llu requests failed (%.2f%%), above --max-error-rate %g\n",
                (unsigned long long)failed, (unsigned long long)(ok + failed),
                100.0 * (double)failed / (double)(ok + failed), cfg.max_error_rate);
        exit_code = EXIT_REQUEST_ERRORS;
    } else if (ok + failed == 0) {
        fprintf(stderr, "surge: no request was measured\n");
        exit_code = EXIT_REQUEST_ERRORS;
    }

out:
    if (ws)
        for (unsigned i = 0; i < n_workers; i++)
            sg_worker_free(ws[i]);
    free(ws);
    sg_metrics_free(merged);
    if (run.h2_reqs)
        for (size_t i = 0; i < payloads.n; i++)
            sg_h2_req_free(&run.h2_reqs[i]);
    free(run.h2_reqs);
    sg_workload_free(&payloads);
    sg_input_free(&input);
    free(schedule);
    sg_tok_free(tok);
    free(run.artifact_dir);
    free(input_json);
    free(run_name);
    if (cfg.tls)
        sg_tls_thread_done(); /* the preflight's handshake ran here */
    sg_config_free(&cfg);
    return exit_code;
}
