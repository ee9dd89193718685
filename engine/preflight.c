/*
 * The start-up checks (sg_preflight.h): a connect, a TLS handshake, the HTTP/2 preface and the server's SETTINGS, each
 * blocking on the controller's thread under one deadline. The HTTP/2 reply is judged by proto/'s
 * sg_h2_classify_reply; this file only moves the bytes.
 */
#define _GNU_SOURCE
#include "sg_preflight.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One blocking connect before anything starts, so an unreachable server is a clear message, not N errors.
 * With fd_out the connected socket is handed back (non-blocking) instead of closed. */
int sg_preflight_connect(const sg_run_t *run, int timeout_ms, int *fd_out)
{
    return sg_preflight_connect_to(run, &run->addr, timeout_ms, fd_out);
}

int sg_preflight_connect_to(const sg_run_t *run, const sg_addr_t *to, int timeout_ms, int *fd_out)
{
    int fd = socket(to->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int err = 0;
    if (run->n_local_addrs) /* from the first source address, as the run's first connection is */
        err = sg_tcp_bind_source(fd, &run->local_addrs[0]);
    if (err == 0 && connect(fd, (const struct sockaddr *)&to->addr, to->len) < 0) {
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

/* ---------------- the HTTP/2 preface and the server's SETTINGS ---------------- */

/* The preflight's connection as a byte pipe for the HTTP/2 check: plaintext, or through the handshaken TLS filter. */
typedef struct {
    int fd;
    sg_tls_conn_t *tls; /* NULL over h2c */
    bool eof;           /* the peer closed (TLS: fed to the filter) */
    int64_t deadline;
} pipe_t;

/* All of p, or -errno (-ETIMEDOUT past the deadline). */
static int pipe_send(pipe_t *io, const void *p, size_t n)
{
    if (io->tls) {
        int err = sg_tls_write(io->tls, p, n);
        return err < 0 ? err : tls_send_pending(io->tls, io->fd, io->deadline);
    }
    const char *b = p;
    while (n) {
        ssize_t k = send(io->fd, b, n, MSG_NOSIGNAL);
        if (k > 0) {
            b += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        int left = (int)((io->deadline - sg_now_ns()) / 1000000);
        struct pollfd pfd = {.fd = io->fd, .events = POLLOUT};
        if (left <= 0 || poll(&pfd, 1, left) == 0)
            return -ETIMEDOUT;
    }
    return 0;
}

/* Some bytes (> 0), 0 when the peer closed, -ETIMEDOUT when nothing came by the deadline, or another error. */
static ssize_t pipe_recv(pipe_t *io, uint8_t *buf, size_t cap)
{
    for (;;) {
        if (io->tls) {
            int n = sg_tls_read(io->tls, buf, cap);
            if (n > 0)
                return n;
            if (n == SG_ETLS_CLOSED || (n < 0 && io->eof))
                return 0;
            if (n < 0)
                return n;
        }
        if (io->eof)
            return 0;
        int left = (int)((io->deadline - sg_now_ns()) / 1000000);
        struct pollfd pfd = {.fd = io->fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, left) == 0)
            return -ETIMEDOUT;
        uint8_t cipher[16384];
        uint8_t *into = io->tls ? cipher : buf;
        ssize_t k = recv(io->fd, into, io->tls ? sizeof cipher : cap, 0);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (k < 0)
            return -errno;
        if (k == 0) {
            io->eof = true;
            if (io->tls)
                sg_tls_feed_eof(io->tls);
            continue;
        }
        if (!io->tls)
            return k;
        int err = sg_tls_feed(io->tls, cipher, (size_t)k);
        if (err < 0)
            return err;
    }
}

/* The HTTP/2 check over io (sg_preflight_h2); `got` completes "it ...". */
static int probe_h2(pipe_t *io, int timeout_ms, char *got, size_t got_len)
{
    /* the bytes a worker's session starts with: the preface, our SETTINGS and the connection window */
    static const sg_h2_cb_t no_callbacks;
    sg_h2_t *s = sg_h2_client_new(&no_callbacks, NULL);
    char *preface = NULL;
    size_t len = 0, cap = 0;
    int err = s ? sg_h2_drain(s, &preface, &len, &cap) : SG_ENOMEM;
    sg_h2_free(s);
    if (err == 0)
        err = pipe_send(io, preface, len);
    free(preface);
    if (err < 0) {
        if (err == SG_ENOMEM)
            snprintf(got, got_len, "it could not be asked: out of memory");
        else if (err == -EPIPE || err == -ECONNRESET)
            snprintf(got, got_len, "it closed the connection before the HTTP/2 connection preface was sent (%s)",
                     sg_strerror(err));
        else
            snprintf(got, got_len, "sending it the HTTP/2 connection preface failed: %s", sg_strerror(err));
        return -1;
    }
    uint8_t buf[256];
    size_t n = 0;
    for (;;) {
        ssize_t k = pipe_recv(io, buf + n, sizeof buf - n);
        if (k > 0)
            n += (size_t)k;
        char what[200];
        sg_h2_reply_t r = sg_h2_classify_reply(buf, n, k <= 0 || n == sizeof buf, what, sizeof what);
        if (r == SG_H2_REPLY_H2)
            return 0;
        if (r == SG_H2_REPLY_MORE)
            continue;
        bool closed = k == 0 || k == -ECONNRESET; /* a close with our preface unread is a reset */
        if (n > 0)
            snprintf(got, got_len, "it answered the HTTP/2 connection preface with %s%s", what,
                     closed ? ", then closed the connection" : "");
        else if (closed)
            snprintf(got, got_len, "it closed the connection without answering the HTTP/2 connection preface%s",
                     k ? " (reset)" : "");
        else if (k == -ETIMEDOUT)
            snprintf(got, got_len,
                     "it sent nothing within %d s of the HTTP/2 connection preface (an HTTP/2 server sends its "
                     "SETTINGS at once)",
                     timeout_ms / 1000);
        else
            snprintf(got, got_len, "reading its answer to the HTTP/2 connection preface failed: %s",
                     k == SG_ETLS && io->tls ? sg_tls_error(io->tls) : sg_strerror((int)k));
        return -1;
    }
}

int sg_preflight_h2(int fd, int timeout_ms, char *got, size_t got_len)
{
    pipe_t io = {.fd = fd, .deadline = sg_now_ns() + (int64_t)timeout_ms * 1000000};
    return probe_h2(&io, timeout_ms, got, got_len);
}

/* ---------------- TLS ---------------- */

int sg_preflight_tls(const sg_run_t *run, int fd, int timeout_ms, char *alpn, size_t alpn_len, char *info,
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
    if (*sg_tls_ctx_note(ctx))
        fprintf(stderr, "surge: %s\n", sg_tls_ctx_note(ctx));
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
    if (strcmp(alpn, "h2") == 0) {
        /* A server that chose h2 has promised its SETTINGS; one that then answers in HTTP/1.1, or not at all,
         * would leave every stream of the run waiting. */
        pipe_t io = {.fd = fd, .tls = t, .deadline = sg_now_ns() + (int64_t)timeout_ms * 1000000};
        char got[300];
        if (probe_h2(&io, timeout_ms, got, sizeof got) < 0) {
            snprintf(err, errlen, "the server chose h2 in the TLS handshake but does not speak HTTP/2: %s", got);
            goto out;
        }
        deadline = io.deadline;
    }
    if (sg_tls_close(t) == 0)
        (void)tls_send_pending(t, fd, deadline);
    rc = 0;
out:
    sg_tls_conn_free(t);
    sg_tls_ctx_free(ctx);
    return rc;
}
