/* The server-metrics scraper thread (sg_scrape.h). */
#include "sg_scrape.h"

#include "sg_h1.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SCRAPE_BODY_MAX (64u << 20) /* a /metrics body larger than this is refused */
#define SCRAPE_TIMEOUT_MAX_NS 5000000000LL

int sg_scrape_url_parse(const char *url, char *host, size_t hcap, char *port, size_t pcap, char *path, size_t pathcap,
                        char *err, size_t errlen)
{
    static const char scheme[] = "http://";
    if (strncmp(url, "https://", 8) == 0) {
        snprintf(err, errlen, "https is not supported for scraping: give the http:// address of /metrics");
        return -1;
    }
    if (strncmp(url, scheme, sizeof scheme - 1) != 0) {
        snprintf(err, errlen, "expected http://HOST[:PORT]/PATH, got \"%s\"", url);
        return -1;
    }
    const char *h = url + sizeof scheme - 1, *slash = strchr(h, '/');
    size_t auth = slash ? (size_t)(slash - h) : strlen(h);
    const char *hend, *colon = NULL;
    if (auth > 0 && h[0] == '[') {
        const char *rb = memchr(h, ']', auth);
        if (!rb) {
            snprintf(err, errlen, "unclosed [ in the host of \"%s\"", url);
            return -1;
        }
        hend = rb + 1;
        if (hend < h + auth && *hend != ':') {
            snprintf(err, errlen, "expected :PORT after ] in \"%s\"", url);
            return -1;
        }
        colon = hend < h + auth ? hend : NULL;
        h++; /* the brackets are not part of the address */
        hend = rb;
    } else {
        colon = memchr(h, ':', auth);
        hend = colon ? colon : h + auth;
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl >= hcap || memchr(h, '@', hl)) {
        snprintf(err, errlen, "no usable host in \"%s\"", url);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    const char *p0 = colon ? colon + 1 : NULL;
    size_t plen = colon ? (size_t)(url + sizeof scheme - 1 + auth - p0) : 0;
    if (colon) {
        if (plen == 0 || plen >= pcap || plen > 5 || strspn(p0, "0123456789") < plen) {
            snprintf(err, errlen, "bad port in \"%s\"", url);
            return -1;
        }
        memcpy(port, p0, plen);
        port[plen] = 0;
        long v = strtol(port, NULL, 10);
        if (v < 1 || v > 65535) {
            snprintf(err, errlen, "port out of range in \"%s\"", url);
            return -1;
        }
    } else {
        snprintf(port, pcap, "80");
    }
    const char *pa = slash ? slash : "/";
    if (strlen(pa) >= pathcap || strpbrk(pa, " \r\n")) {
        snprintf(err, errlen, "bad path in \"%s\"", url);
        return -1;
    }
    snprintf(path, pathcap, "%s", pa);
    return 0;
}

typedef struct {
    const char *url;
    char host[256], port[8], path[1024];
    struct addrinfo *ai; /* NULL: not resolved (each scrape records why) */
    char resolve_error[560];
} target_t;

struct sg_scraper {
    target_t *t;
    size_t n;
    int64_t interval_ns, timeout_ns;
    bool verbose;
    sg_srvm_t *store;
    pthread_t thread;
    bool started;
    bool sync_ready; /* mu and cv initialised */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    char *buf; /* the body being read */
    size_t len, cap;
};

typedef struct {
    sg_scraper_t *s;
    bool complete;
    int status;
    int err;
} resp_ctx_t;

static int on_head(void *ud, const sg_h1_resp_head_t *head)
{
    ((resp_ctx_t *)ud)->status = head->status;
    return 0;
}

static int on_body(void *ud, const char *data, size_t len)
{
    sg_scraper_t *s = ((resp_ctx_t *)ud)->s;
    if (s->len + len > SCRAPE_BODY_MAX)
        return SG_ETOOBIG;
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + len)
            cap *= 2;
        char *n = realloc(s->buf, cap);
        if (!n)
            return SG_ENOMEM;
        s->buf = n;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return 0;
}

static int on_complete(void *ud)
{
    ((resp_ctx_t *)ud)->complete = true;
    return 0;
}

/* Wait for events on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - sg_now_ns();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, (int)((left + 999999) / 1000000));
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

static int connect_any(const target_t *t, int64_t deadline, char *err, size_t errlen)
{
    int saved = ECONNREFUSED;
    for (const struct addrinfo *a = t->ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            return fd;
        if (errno == EINPROGRESS) {
            int r = wait_fd(fd, POLLOUT, deadline);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                return fd;
            saved = r == 0 ? ETIMEDOUT : soerr ? soerr : errno;
        } else {
            saved = errno;
        }
        close(fd);
        if (saved == ETIMEDOUT)
            break;
    }
    snprintf(err, errlen, "connect: %s", saved == ETIMEDOUT ? "timed out" : strerror(saved));
    return -1;
}

/* One GET of t's path: 0 with the body in s->buf, or -1 with why in err. */
static int fetch(sg_scraper_t *s, const target_t *t, char *err, size_t errlen)
{
    int64_t deadline = sg_now_ns() + s->timeout_ns;
    s->len = 0;
    if (!t->ai) {
        snprintf(err, errlen, "%s", t->resolve_error);
        return -1;
    }
    int fd = connect_any(t, deadline, err, errlen);
    if (fd < 0)
        return -1;
    char req[1536];
    int rl = snprintf(req, sizeof req,
                      "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: surge\r\nAccept: text/plain;version=0.0.4\r\n"
                      "Connection: close\r\n\r\n",
                      t->path, t->host, t->port);
    int rc = -1;
    for (int off = 0; off < rl;) {
        ssize_t w = send(fd, req + off, (size_t)(rl - off), MSG_NOSIGNAL);
        if (w > 0) {
            off += (int)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) != 1) {
                snprintf(err, errlen, "send: timed out");
                goto out;
            }
        } else {
            snprintf(err, errlen, "send: %s", strerror(errno));
            goto out;
        }
    }
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    static const sg_h1_resp_cb_t cb = {on_head, on_body, on_complete};
    resp_ctx_t ctx = {.s = s};
    char chunk[65536];
    while (!ctx.complete) {
        int r = wait_fd(fd, POLLIN, deadline);
        if (r == 0) {
            snprintf(err, errlen, "no whole response within %.1f s", (double)s->timeout_ns / 1e9);
            break;
        }
        if (r < 0) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            break;
        }
        ssize_t got = recv(fd, chunk, sizeof chunk, 0);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (got < 0) {
            snprintf(err, errlen, "recv: %s", strerror(errno));
            break;
        }
        ssize_t used = got == 0 ? sg_h1_resp_eof(&p, &cb, &ctx) : sg_h1_resp_feed(&p, chunk, (size_t)got, &cb, &ctx);
        if (used < 0) {
            snprintf(err, errlen, "%s",
                     used == SG_EINCOMPLETE ? "the connection closed inside the response"
                     : used == SG_ETOOBIG   ? "the response is too large"
                                            : "not an HTTP/1.1 response");
            break;
        }
        if (got == 0 && !ctx.complete) {
            snprintf(err, errlen, "the connection closed before a response");
            break;
        }
    }
    sg_h1_resp_free(&p);
    if (ctx.complete && ctx.status != 200)
        snprintf(err, errlen, "HTTP %d", ctx.status);
    else if (ctx.complete)
        rc = 0;
out:
    close(fd);
    return rc;
}

static void scrape_all(sg_scraper_t *s)
{
    char err[640];
    for (size_t i = 0; i < s->n; i++) {
        int rc = fetch(s, &s->t[i], err, sizeof err);
        int64_t now = sg_now_ns();
        if (rc == 0)
            rc = sg_srvm_add_scrape(s->store, i, now, s->buf, s->len, err, sizeof err);
        else
            sg_srvm_add_failure(s->store, i, now, err);
        if (rc < 0 && s->verbose)
            fprintf(stderr, "surge: scraping %s: %s\n", s->t[i].url, err);
    }
}

static void *scrape_thread(void *arg)
{
    sg_scraper_t *s = arg;
    int64_t next = sg_now_ns() + s->interval_ns;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        int r = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->stop)
            break;
        if (r != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&s->mu);
        scrape_all(s);
        int64_t now = sg_now_ns();
        next += s->interval_ns;
        if (next < now) /* a scrape ran past a tick: the next is on the schedule, not a burst to catch up */
            next = now + s->interval_ns - (now - next) % s->interval_ns;
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    scrape_all(s); /* just after the load */
    return NULL;
}

static void resolve(target_t *t)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int r = getaddrinfo(t->host, t->port, &hints, &t->ai);
    if (r != 0) {
        t->ai = NULL;
        snprintf(t->resolve_error, sizeof t->resolve_error, "resolving %s: %s", t->host, gai_strerror(r));
    }
}

sg_scraper_t *sg_scraper_start(const char *const *urls, size_t n, double interval_s, bool verbose)
{
    sg_scraper_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->t = calloc(n, sizeof *s->t);
    s->store = sg_srvm_new(urls, n, interval_s);
    if (!s->t || !s->store) {
        sg_scraper_free(s);
        return NULL;
    }
    s->n = n;
    s->verbose = verbose;
    s->interval_ns = (int64_t)(interval_s * 1e9);
    s->timeout_ns = s->interval_ns < SCRAPE_TIMEOUT_MAX_NS ? s->interval_ns : SCRAPE_TIMEOUT_MAX_NS;
    if (s->timeout_ns < 200000000LL)
        s->timeout_ns = 200000000LL;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        s->t[i].url = urls[i];
        if (sg_scrape_url_parse(urls[i], s->t[i].host, sizeof s->t[i].host, s->t[i].port, sizeof s->t[i].port,
                                s->t[i].path, sizeof s->t[i].path, err, sizeof err) < 0)
            snprintf(s->t[i].resolve_error, sizeof s->t[i].resolve_error, "%s", err);
        else
            resolve(&s->t[i]);
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->sync_ready = true;
    scrape_all(s); /* the baseline, before the load */
    if (pthread_create(&s->thread, NULL, scrape_thread, s) != 0) {
        sg_scraper_free(s);
        return NULL;
    }
    s->started = true;
    return s;
}

void sg_scraper_stop(sg_scraper_t *s)
{
    if (!s || !s->started)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->started = false;
}

const sg_srvm_t *sg_scraper_store(const sg_scraper_t *s)
{
    return s->store;
}

void sg_scraper_free(sg_scraper_t *s)
{
    if (!s)
        return;
    sg_scraper_stop(s);
    for (size_t i = 0; s->t && i < s->n; i++)
        if (s->t[i].ai)
            freeaddrinfo(s->t[i].ai);
    if (s->sync_ready) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    free(s->t);
    free(s->buf);
    sg_srvm_free(s->store);
    free(s);
}
