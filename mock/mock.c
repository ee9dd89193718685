/*
 * `surge mock`: process lifecycle. The main thread parses flags, binds one listening socket per worker (the
 * first picks the port, the rest join it with SO_REUSEPORT), starts the workers, announces the port once all
 * of them accept, then sleeps in sigtimedwait until SIGINT/SIGTERM or --exit-after, and stops them.
 */
#define _GNU_SOURCE
#include "sg_mock.h"

#include "mock_internal.h"
#include "sg_tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Write the port so that a reader never sees a partial file: a temporary beside it, then rename. */
static int write_port_file(const char *path, int port)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return -ENOMEM;
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    int err = 0;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        err = -errno;
        goto out;
    }
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0) {
        err = -errno;
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        err = -errno;
        unlink(tmp);
    }
out:
    free(tmp);
    return err;
}

static void set_port(sg_addr_t *a, int port)
{
    if (a->addr.ss_family == AF_INET)
        ((struct sockaddr_in *)&a->addr)->sin_port = htons((uint16_t)port);
    else if (a->addr.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a->addr)->sin6_port = htons((uint16_t)port);
}

/* 0 when nothing listens on addr's port (a bind without SO_REUSEPORT succeeds), else -errno. */
static int probe_port_free(const sg_addr_t *a)
{
    int fd = socket(a->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int one = 1, err = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* TIME_WAIT leftovers are no conflict */
    if (bind(fd, (const struct sockaddr *)&a->addr, a->len) < 0)
        err = -errno;
    close(fd);
    return err;
}

/* Sleep until a stop signal or the --exit-after deadline (absolute, CLOCK_MONOTONIC; INT64_MAX: none). */
static void wait_for_stop(const sigset_t *set, int64_t deadline_ns)
{
    for (;;) {
        int sig;
        if (deadline_ns == INT64_MAX) {
            if (sigwait(set, &sig) == 0)
                return;
            continue;
        }
        int64_t left = deadline_ns - sg_now_ns();
        if (left <= 0)
            return;
        struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
        if (sigtimedwait(set, NULL, &ts) >= 0)
            return;
        /* EAGAIN: the timeout (checked above on the next turn); EINTR: some other signal */
    }
}

int sg_mock_main(int argc, char **argv)
{
    sg_mock_opts_t o;
    int rc = sg_mock_parse_args(argc, argv, &o);
    if (rc == 1)
        return 0;
    if (rc != 0)
        return 2;

    char err[256];
    sg_addr_t addr;
    if (sg_tcp_resolve(o.host, o.port, &addr, err, sizeof(err)) < 0) {
        fprintf(stderr, "surge mock: --host: %s\n", err);
        return 2;
    }
    sg_mock_render_init(&o);
    if (sg_mock_api_init(&o) < 0) {
        fprintf(stderr, "surge mock: out of memory\n");
        return 1;
    }

    sg_mock_server_t *s = calloc(1, sizeof(*s));
    sg_mock_worker_t **workers = calloc(o.workers, sizeof(*workers));
    int *fds = malloc(o.workers * sizeof(*fds));
    if (!s || !workers || !fds) {
        fprintf(stderr, "surge mock: out of memory\n");
        sg_mock_api_free();
        free(s);
        free(workers);
        free(fds);
        return 1;
    }
    int exit_code = 1;
    unsigned n_fds = 0, n_workers = 0;
    int port = o.port;
    s->opts = o;
    s->record_fd = -1;
    s->send_log_fd = -1;
    s->ttft_ns = llround(o.ttft_ms * 1e6);
    s->itl_ns = llround(o.itl_ms * 1e6);
    if ((o.max_batch && !(s->batch = sg_mock_batch_new(o.max_batch))) || !(s->load = sg_mock_load_new(o.workers)) ||
        (o.prefix_cache && !(s->pcache = sg_mock_pcache_new()))) {
        fprintf(stderr, "surge mock: out of memory\n");
        sg_mock_api_free();
        free(s);
        free(workers);
        free(fds);
        return 1;
    }
    atomic_init(&s->conns_open, 0);
    atomic_init(&s->conn_serial, 0);
    atomic_init(&s->stop, false);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);

    char *self_cert = NULL, *self_key = NULL;
    if (o.tls) {
        if (!o.tls_cert) {
            if (sg_tls_self_signed(&self_cert, &self_key, err, sizeof(err)) < 0) {
                fprintf(stderr, "surge mock: --tls: %s\n", err);
                goto out;
            }
            if (o.tls_cert_out) {
                FILE *f = fopen(o.tls_cert_out, "w");
                if (!f || fputs(self_cert, f) < 0 || fclose(f) != 0) {
                    fprintf(stderr, "surge mock: --tls-cert-out: cannot write %s\n", o.tls_cert_out);
                    goto out;
                }
            }
        }
        s->tls_opts = (sg_tls_opts_t){.cert_file = o.tls_cert,
                                      .key_file = o.tls_key,
                                      .cert_pem = self_cert,
                                      .key_pem = self_key,
                                      .alpn = o.tls_alpn ? o.tls_alpn : "h2,http/1.1"};
        /* one context now, only to say what is wrong with the files before anything listens */
        sg_tls_ctx_t *probe = NULL;
        if (sg_tls_server_ctx_new(&s->tls_opts, &probe, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge mock: --tls: %s\n", err);
            goto out;
        }
        sg_tls_ctx_free(probe);
    }

    char why[256];
    int be = sg_loop_pick((sg_io_backend_t)o.io_backend, why, sizeof why);
    if (be < 0) {
        fprintf(stderr, "surge mock: --io-backend %s: %s\n", sg_io_backend_name((sg_io_backend_t)o.io_backend), why);
        goto out;
    }
    if (o.io_backend == SG_IO_AUTO && be == SG_IO_EPOLL)
        fprintf(stderr, "surge mock: io_uring is unavailable (%s); using epoll\n", why);
    s->io_backend = be;

    /* connections are capped by descriptors; keep some for the rings, eventfds, listeners and the record */
    uint64_t nofile = sg_raise_nofile();
    uint64_t reserve = 32 + 8 * (uint64_t)o.workers;
    s->max_conns = nofile > reserve + 16 ? nofile - reserve : 16;

    if (o.tokenizer) {
        sg_tokenizer_t *tok = NULL;
        if (sg_tok_load(o.tokenizer, &tok, err, sizeof(err)) < 0) {
            fprintf(stderr, "surge mock: --tokenizer %s: %s\n", o.tokenizer, err);
            exit_code = 2;
            goto out;
        }
        s->tok = tok;
    }
    if (o.record_path) {
        s->record_fd = open(o.record_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (s->record_fd < 0) {
            fprintf(stderr, "surge mock: --record: cannot open %s: %s\n", o.record_path, strerror(errno));
            goto out;
        }
    }

    if (o.send_log_path) {
        s->send_log_fd = open(o.send_log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (s->send_log_fd < 0) {
            fprintf(stderr, "surge mock: --send-log: cannot open %s: %s\n", o.send_log_path, strerror(errno));
            goto out;
        }
    }

    char where[128];
    if (o.port != 0 && !o.reuse_port) {
        /*
         * SO_REUSEPORT would let us join a port that another process (an older mock, a real server) already
         * listens on, and silently split its connections with it. Bind once without it first, to fail loudly.
         */
        int e = probe_port_free(&addr);
        if (e < 0) {
            sg_addr_format(&addr, where, sizeof(where));
            fprintf(stderr, "surge mock: cannot listen on %s: %s\n", where, sg_strerror(e));
            goto out;
        }
    }
    for (unsigned i = 0; i < o.workers; i++) {
        int fd = sg_tcp_listen(&addr, (int)o.backlog);
        if (fd < 0) {
            sg_addr_format(&addr, where, sizeof(where));
            fprintf(stderr, "surge mock: cannot listen on %s: %s\n", where, sg_strerror(fd));
            goto out;
        }
        fds[n_fds++] = fd;
        if (i == 0) {
            /* --port 0: the kernel picked one; the other workers join that port */
            port = sg_tcp_local_port(fd);
            if (port < 0) {
                fprintf(stderr, "surge mock: cannot read the bound port: %s\n", sg_strerror(port));
                goto out;
            }
            set_port(&addr, port);
        }
    }

    /* Signals are taken synchronously by this thread; workers inherit the mask and never see them. */
    sigset_t stop_set, old_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, &old_set);

    s->listen_addr = addr;
    for (unsigned k = 0; k < o.n_faults; k++) {
        if (sg_mock_fault_per_request(o.faults[k].kind))
            s->req_fault_sum += o.faults[k].fraction;
        else if (sg_mock_fault_per_conn(o.faults[k].kind))
            s->conn_fault_sum += o.faults[k].fraction;
    }
    s->start_ns = sg_now_ns();
    atomic_store(&s->fault_origin_ns, o.fault_from_request ? 0 : s->start_ns);
    int64_t exit_ns = o.exit_after_s > 0 ? s->start_ns + llround(o.exit_after_s * 1e9) : INT64_MAX;

    for (unsigned i = 0; i < o.workers; i++) {
        workers[i] = sg_mock_worker_new(s, i, fds[i]);
        if (!workers[i]) {
            fprintf(stderr, "surge mock: out of memory\n");
            goto stop;
        }
        fds[i] = -1; /* the worker owns it now */
        n_workers++;
        int e = sg_mock_worker_start(workers[i]);
        if (e < 0) {
            fprintf(stderr, "surge mock: cannot start worker thread: %s\n", sg_strerror(e));
            goto stop;
        }
        pthread_mutex_lock(&s->mu);
        while (s->reported < i + 1)
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        const char *what = NULL;
        e = sg_mock_worker_init_error(workers[i], &what);
        if (e < 0) {
            fprintf(stderr, "surge mock: %s: %s\n", what, sg_strerror(e));
            goto stop;
        }
    }

    sg_addr_format(&addr, where, sizeof(where));
    if (!o.quiet) {
        printf("surge mock listening on %s\n", where);
        if (o.max_batch && o.output_tokens && o.prefill_ms_per_token == 0) {
            double service_s = (o.ttft_ms + (o.output_tokens - 1) * o.itl_ms) / 1e3;
            printf("surge mock: at most %u sequences at once, each %.4g ms: capacity %.6g requests/s\n", o.max_batch,
                   service_s * 1e3, o.max_batch / service_s);
        } else if (o.max_batch) {
            printf("surge mock: at most %u sequences at once (capacity: docs/mock.md)\n", o.max_batch);
        }
        fflush(stdout);
    }
    if (o.port_file) {
        int e = write_port_file(o.port_file, port);
        if (e < 0) {
            fprintf(stderr, "surge mock: --port-file: cannot write %s: %s\n", o.port_file, sg_strerror(e));
            goto stop;
        }
    }

    wait_for_stop(&stop_set, exit_ns);
    exit_code = 0;

stop:
    atomic_store(&s->stop, true);
    for (unsigned i = 0; i < n_workers; i++)
        sg_mock_worker_wake(workers[i]);
    sg_mock_stats_t st = {0};
    for (unsigned i = 0; i < n_workers; i++)
        sg_mock_worker_finish(workers[i], &st);
    if (exit_code == 0 && !o.quiet)
        fprintf(stderr,
                "surge mock: %llu requests served (%llu completions, %llu streamed), %llu errors injected, "
                "%llu connections dropped\n",
                (unsigned long long)st.requests, (unsigned long long)st.completions, (unsigned long long)st.streamed,
                (unsigned long long)st.errors, (unsigned long long)st.drops);
    if (exit_code == 0 && !o.quiet && st.client_aborts)
        fprintf(stderr,
                "surge mock: %llu responses abandoned by the client (HTTP/1.1: connection closed with the response "
                "pending; HTTP/2: RST_STREAM CANCEL)\n",
                (unsigned long long)st.client_aborts);
    if (exit_code == 0 && !o.quiet && st.tool_requests)
        fprintf(stderr, "surge mock: %llu requests carried tools, %llu answered with a tool call\n",
                (unsigned long long)st.tool_requests, (unsigned long long)st.tool_calls);
    if (exit_code == 0 && !o.quiet && (st.images || st.audios))
        fprintf(stderr, "surge mock: media received: %llu images, %llu audio clips, %llu bytes decoded\n",
                (unsigned long long)st.images, (unsigned long long)st.audios, (unsigned long long)st.media_bytes);
    if (exit_code == 0 && !o.quiet && o.n_faults) {
        char line[512];
        size_t n = 0;
        for (int k = 1; k < SG_MOCK_FAULT_KINDS; k++) {
            if (!st.faults[k])
                continue;
            const char *unit = sg_mock_fault_per_request(k)    ? "requests"
                               : k == SG_MOCK_FAULT_CRASH      ? "workers crashed"
                               : k == SG_MOCK_FAULT_STALL_READ ? "connections held"
                                                               : "connections";
            n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %llu %s", n ? "," : "", sg_mock_fault_name(k),
                                  (unsigned long long)st.faults[k], unit);
            if (n >= sizeof line)
                break;
        }
        fprintf(stderr, "surge mock: faults:%s\n", n ? line : " none hit");
        if (st.faults[SG_MOCK_FAULT_CRASH])
            fprintf(stderr, "surge mock: the crash closed %llu connections; %llu requests were never answered\n",
                    (unsigned long long)st.crash_conns, (unsigned long long)st.crash_lost);
    }
    if (exit_code == 0 && !o.quiet && s->batch) {
        uint64_t admitted, waited;
        double mean_ms, max_ms;
        sg_mock_batch_stats(s->batch, &admitted, &waited, &mean_ms, &max_ms);
        fprintf(stderr,
                "surge mock: --max-batch %u: %llu sequences, %llu waited for a slot (mean wait %.1f ms, max %.1f ms)\n",
                o.max_batch, (unsigned long long)admitted, (unsigned long long)waited, mean_ms, max_ms);
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
out:
    for (unsigned i = 0; i < n_fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (s->record_fd >= 0)
        close(s->record_fd);
    if (s->send_log_fd >= 0)
        close(s->send_log_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    sg_mock_batch_free(s->batch);
    sg_mock_pcache_free(s->pcache);
    sg_mock_load_free(s->load, o.workers);
    sg_tok_free(s->tok);
    free(self_cert);
    free(self_key);
    if (o.tls)
        sg_tls_thread_done(); /* the certificate was made and tried on this thread */
    sg_mock_api_free();
    free(fds);
    free(workers);
    free(s);
    return exit_code;
}
