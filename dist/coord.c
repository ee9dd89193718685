/*
 * The coordinator connection of a multi-process run: one TCP connection from each rank to rank 0, used before
 * the run (hello, layout, clocks, start), during it (heartbeats, stop) and after it (results, verdict). Off the
 * workers' path: only the controller thread touches it, between its 20 ms looks at the workers.
 *
 * Frames: a 4-byte big-endian length, a kind byte ('J': a JSON message, 'B': a chunk of a file), the bytes.
 * Messages, by their "t":
 *   hello {rank, world, workers, host, version, config}  rank -> 0
 *   welcome {workers, stream_offset, streams_total}      0 -> rank   (or error {message}, abort {why})
 *   ready                                                rank -> 0   its workers are set up
 *   ping {t0} / pong {t0, t1}                            0 -> rank -> 0: the clock offset, NTP's way
 *   start {start_realtime_ns, offset_ns}                 0 -> rank
 *   hb                                                   both ways, every second during the run
 *   stop {why}                                           rank -> 0 (interrupted), then 0 -> every rank
 *   result {code, files} then file {name, size} + B...  rank -> 0
 *   done {code}                                          0 -> rank: the merged run's exit status
 * A peer silent for SILENCE_NS during the run, or whose connection closes, is lost: the run stops everywhere.
 */
#define _GNU_SOURCE
#include "sg_dist.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX (16u << 20)
#define CHUNK (1u << 20)
#define HB_NS 1000000000LL
#define SILENCE_NS 10000000000LL
#define PING_ROUNDS 8
#define START_LEAD_NS 200000000LL /* the start instant this far ahead, plus round trips */
#define PROTO_VERSION 1

typedef struct {
    int fd;
    unsigned rank;
    char host[256];
    unsigned want, workers, offset;
    int64_t clock_offset_ns, rtt_ns;
    bool lost;
    char why[256];
    char *rx;
    size_t rx_len, rx_cap, rx_head;
    int64_t last_rx_ns, last_tx_ns;
} peer_t;

struct sg_coord {
    sg_dist_opts_t o;
    bool root;
    peer_t *peers; /* rank 0: one per rank (its own entry has no connection); others: peers[0] is rank 0 */
    unsigned n_peers;
    unsigned workers, offset, total;
    int64_t clock_offset_ns, rtt_ns; /* this rank's, against rank 0's clock */
    int64_t start_realtime_ns;       /* on rank 0's clock */
    bool stop_sent, stopped;
    char stop_why[512];
    char self_host[256];
};

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int ms_until(int64_t deadline)
{
    int64_t left = deadline - sg_now_ns();
    if (left <= 0)
        return 0;
    return left > 1000000000LL ? 1000 : (int)((left + 999999) / 1000000);
}

/* ---------------- frames ---------------- */

static int write_all(int fd, const void *buf, size_t n, int64_t deadline)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if (sg_now_ns() >= deadline)
            return -ETIMEDOUT;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        poll(&pfd, 1, ms_until(deadline));
    }
    return 0;
}

static int send_frame(peer_t *p, char kind, const void *data, size_t n, int64_t deadline)
{
    if (p->lost || p->fd < 0)
        return -ENOTCONN;
    unsigned char h[5];
    uint32_t len = (uint32_t)n + 1;
    h[0] = (unsigned char)(len >> 24), h[1] = (unsigned char)(len >> 16), h[2] = (unsigned char)(len >> 8);
    h[3] = (unsigned char)len, h[4] = (unsigned char)kind;
    int rc = write_all(p->fd, h, sizeof h, deadline);
    if (!rc)
        rc = write_all(p->fd, data, n, deadline);
    if (!rc)
        p->last_tx_ns = sg_now_ns();
    return rc;
}

/* Sends msg and releases it. */
static int send_msg(peer_t *p, json_t *msg, int64_t deadline)
{
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!text)
        return -ENOMEM;
    int rc = send_frame(p, 'J', text, strlen(text), deadline);
    free(text);
    return rc;
}

/* Reads what is there (waiting up to timeout_ms for it): >0 bytes, 0 nothing, -1 closed or failed. */
static int fill(peer_t *p, int timeout_ms)
{
    if (p->rx_head && p->rx_head == p->rx_len)
        p->rx_head = p->rx_len = 0;
    if (p->rx_cap - p->rx_len < 65536) {
        if (p->rx_head) {
            memmove(p->rx, p->rx + p->rx_head, p->rx_len - p->rx_head);
            p->rx_len -= p->rx_head;
            p->rx_head = 0;
        }
        if (p->rx_cap - p->rx_len < 65536) {
            size_t cap = p->rx_cap ? p->rx_cap * 2 : 131072;
            char *b = realloc(p->rx, cap);
            if (!b)
                return -1;
            p->rx = b;
            p->rx_cap = cap;
        }
    }
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
    if (poll(&pfd, 1, timeout_ms) <= 0)
        return 0;
    ssize_t r = recv(p->fd, p->rx + p->rx_len, p->rx_cap - p->rx_len, MSG_DONTWAIT);
    if (r > 0) {
        p->rx_len += (size_t)r;
        p->last_rx_ns = sg_now_ns();
        return (int)r;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return -1;
}

/* A whole frame at the head of the buffer: 1 (consumed from the buffer; data valid until the next fill), 0 not
 * yet, -1 malformed. */
static int take_frame(peer_t *p, char *kind, const char **data, size_t *len)
{
    size_t have = p->rx_len - p->rx_head;
    if (have < 5)
        return 0;
    const unsigned char *h = (const unsigned char *)p->rx + p->rx_head;
    uint32_t n = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    if (n == 0 || n > FRAME_MAX + 1)
        return -1;
    if (have < 4 + (size_t)n)
        return 0;
    *kind = (char)h[4];
    *data = p->rx + p->rx_head + 5;
    *len = n - 1;
    p->rx_head += 4 + (size_t)n;
    return 1;
}

/* The next frame by deadline: 1, 0 (time up), -1 (closed, failed, malformed). */
static int recv_frame(peer_t *p, int64_t deadline, char *kind, const char **data, size_t *len)
{
    for (;;) {
        int rc = take_frame(p, kind, data, len);
        if (rc)
            return rc;
        if (sg_now_ns() >= deadline)
            return 0;
        if (fill(p, ms_until(deadline)) < 0)
            return -1;
    }
}

static const char *type_of(json_t *m)
{
    const char *t = json_string_value(json_object_get(m, "t"));
    return t ? t : "";
}

/* The next message that is not a heartbeat: *msg (caller releases), or NULL with why filled. */
static json_t *recv_msg(peer_t *p, int64_t deadline, char *why, size_t whylen)
{
    for (;;) {
        char kind;
        const char *data;
        size_t len;
        int rc = recv_frame(p, deadline, &kind, &data, &len);
        if (rc == 0) {
            snprintf(why, whylen, "no word from it in time");
            return NULL;
        }
        if (rc < 0) {
            snprintf(why, whylen, "its connection closed");
            return NULL;
        }
        if (kind != 'J') {
            snprintf(why, whylen, "it sent a file chunk out of turn");
            return NULL;
        }
        json_t *m = json_loadb(data, len, 0, NULL);
        if (!json_is_object(m)) {
            json_decref(m);
            snprintf(why, whylen, "it sent a malformed message");
            return NULL;
        }
        if (strcmp(type_of(m), "hb") == 0) {
            json_decref(m);
            continue;
        }
        return m;
    }
}

static void peer_close(peer_t *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

static void lose(peer_t *p, const char *why)
{
    if (!p->lost)
        snprintf(p->why, sizeof p->why, "%s", why);
    p->lost = true;
    peer_close(p);
}

/* ---------------- connecting ---------------- */

static void nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/*
 * Rank 0 listens on every address of its host, at the coordinator's port: the name the other ranks were given
 * is their view of us (a Service, a NAT, a node name), and it may resolve here to something else entirely:
 * Debian's /etc/hosts maps a host's own name to 127.0.1.1. IPv6 and IPv4 alike where the host has IPv6.
 */
static int listen_on(const sg_dist_opts_t *o, char *err, size_t errlen)
{
    int one = 1, zero = 0;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(o->port), .sin6_addr = in6addr_any};
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, (struct sockaddr *)&a6, sizeof a6) == 0 && listen(fd, SG_DIST_MAX_RANKS) == 0)
            return fd;
        int e = errno;
        close(fd);
        if (e == EADDRINUSE) {
            snprintf(err, errlen, "rank 0 cannot listen on port %u (--coordinator %s:%u): %s", o->port, o->host,
                     o->port, strerror(e));
            return -1;
        }
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* no IPv6 here */
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(o->port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a4, sizeof a4) < 0 || listen(fd, SG_DIST_MAX_RANKS) < 0) {
        snprintf(err, errlen, "rank 0 cannot listen on port %u (--coordinator %s:%u): %s", o->port, o->host, o->port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Connect to rank 0, retrying until the deadline (its process may start after ours). */
static int connect_root(const sg_dist_opts_t *o, int64_t deadline, char *err, size_t errlen)
{
    char port[8];
    snprintf(port, sizeof port, "%u", o->port);
    char last[256] = "nothing answered";
    while (sg_now_ns() < deadline) {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        int gai = getaddrinfo(o->host, port, &hints, &res);
        if (gai != 0) {
            snprintf(last, sizeof last, "cannot resolve %.150s: %s", o->host, gai_strerror(gai));
        } else {
            for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd < 0)
                    continue;
                int rc = connect(fd, a->ai_addr, a->ai_addrlen);
                if (rc < 0 && errno == EINPROGRESS) {
                    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                    int left = ms_until(deadline);
                    if (poll(&pfd, 1, left < 1000 ? left : 1000) == 1) {
                        int soerr = 0;
                        socklen_t sl = sizeof soerr;
                        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                        rc = soerr ? -1 : 0;
                        errno = soerr ? soerr : ETIMEDOUT;
                    } else {
                        errno = ETIMEDOUT;
                    }
                }
                if (rc == 0) {
                    freeaddrinfo(res);
                    nonblock(fd);
                    return fd;
                }
                snprintf(last, sizeof last, "%s", strerror(errno));
                close(fd);
            }
            freeaddrinfo(res);
        }
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    snprintf(err, errlen, "rank 0 at %s:%u did not answer within %.0f s (%s)", o->host, o->port, o->timeout_s, last);
    return -1;
}

/* ---------------- hello and layout ---------------- */

static void broadcast(sg_coord_t *d, json_t *msg)
{
    for (unsigned r = 1; r < d->n_peers; r++)
        if (!d->peers[r].lost && d->peers[r].fd >= 0)
            send_msg(&d->peers[r], json_incref(msg), sg_now_ns() + 1000000000LL);
    json_decref(msg);
}

/* Rank 0: each rank at least one stream, the rest as they asked, up to max_streams in all. */
static int deal_streams(sg_coord_t *d, unsigned max_streams, char *err, size_t errlen)
{
    unsigned n = d->o.world;
    uint64_t wanted = 0;
    for (unsigned r = 0; r < n; r++)
        wanted += d->peers[r].want ? d->peers[r].want : 1;
    if (max_streams && max_streams < n) {
        snprintf(err, errlen,
                 "the load allows %u worker stream%s in all (the concurrency, --max-concurrency or "
                 "--max-connections) and there are %u ranks: each rank needs one",
                 max_streams, max_streams == 1 ? "" : "s", n);
        return -1;
    }
    uint64_t total = max_streams && max_streams < wanted ? max_streams : wanted;
    uint64_t given = n;
    for (unsigned r = 0; r < n; r++)
        d->peers[r].workers = 1;
    while (given < total)
        for (unsigned r = 0; r < n && given < total; r++)
            if (d->peers[r].workers < (d->peers[r].want ? d->peers[r].want : 1))
                d->peers[r].workers++, given++;
    unsigned off = 0;
    for (unsigned r = 0; r < n; r++) {
        d->peers[r].offset = off;
        off += d->peers[r].workers;
    }
    d->total = off;
    return 0;
}

static int root_open(sg_coord_t *d, unsigned want, unsigned max_streams, const char *fingerprint, char *err,
                     size_t errlen)
{
    int lfd = listen_on(&d->o, err, errlen);
    if (lfd < 0)
        return -1;
    fprintf(stderr, "surge: rank 0 of %u (%s): waiting up to %.0f s on %s:%u for the other ranks\n", d->o.world,
            d->o.source, d->o.timeout_s, d->o.host, d->o.port);
    int64_t deadline = sg_now_ns() + (int64_t)(d->o.timeout_s * 1e9);
    d->peers[0].want = want;
    snprintf(d->peers[0].host, sizeof d->peers[0].host, "%s", d->self_host);
    unsigned joined = 1;
    int rc = 0;
    while (joined < d->o.world && rc == 0) {
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        if (sg_now_ns() >= deadline || poll(&pfd, 1, ms_until(deadline)) < 0) {
            char missing[512] = "";
            size_t off = 0;
            for (unsigned r = 1; r < d->o.world && off < sizeof missing - 16; r++)
                if (d->peers[r].fd < 0)
                    off += (size_t)snprintf(missing + off, sizeof missing - off, "%s%u", off ? ", " : "", r);
            snprintf(err, errlen, "rank%s %s never arrived within %.0f s (--coordinator-timeout)",
                     strchr(missing, ',') ? "s" : "", missing, d->o.timeout_s);
            rc = -1;
            break;
        }
        if (!(pfd.revents & POLLIN))
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        nonblock(fd);
        peer_t tmp = {.fd = fd};
        char why[256];
        int64_t hello_by = sg_now_ns() + 10000000000LL;
        json_t *m = recv_msg(&tmp, hello_by < deadline ? hello_by : deadline, why, sizeof why);
        const char *problem = NULL;
        char buf[512];
        json_int_t rank = m ? json_integer_value(json_object_get(m, "rank")) : -1;
        if (!m || strcmp(type_of(m), "hello") != 0) {
            problem = "not a surge rank"; /* a stray connection: ignored, not fatal */
        } else if (json_integer_value(json_object_get(m, "version")) != PROTO_VERSION) {
            snprintf(buf, sizeof buf, "rank %lld runs another surge version (protocol %lld, rank 0's %d)",
                     (long long)rank, (long long)json_integer_value(json_object_get(m, "version")), PROTO_VERSION);
            problem = buf;
        } else if (json_integer_value(json_object_get(m, "world")) != (json_int_t)d->o.world) {
            snprintf(buf, sizeof buf, "rank %lld was started for %lld ranks, rank 0 for %u", (long long)rank,
                     (long long)json_integer_value(json_object_get(m, "world")), d->o.world);
            problem = buf;
        } else if (rank < 1 || rank >= (json_int_t)d->o.world) {
            snprintf(buf, sizeof buf, "a rank %lld arrived: out of range for %u ranks", (long long)rank, d->o.world);
            problem = buf;
        } else if (d->peers[rank].fd >= 0) {
            snprintf(buf, sizeof buf, "rank %lld arrived twice (two processes were given the same rank)",
                     (long long)rank);
            problem = buf;
        } else if (!json_is_string(json_object_get(m, "config")) ||
                   strcmp(json_string_value(json_object_get(m, "config")), fingerprint) != 0) {
            snprintf(buf, sizeof buf,
                     "rank %lld was started with another configuration than rank 0's (every rank must be given "
                     "the same load, workload and target flags)",
                     (long long)rank);
            problem = buf;
        }
        if (problem && problem != buf) {
            close(fd);
            free(tmp.rx);
            json_decref(m);
            continue;
        }
        if (problem) {
            json_t *e = json_pack("{s:s, s:s}", "t", "error", "message", problem);
            send_msg(&tmp, e, sg_now_ns() + 1000000000LL);
            close(fd);
            free(tmp.rx);
            json_decref(m);
            snprintf(err, errlen, "%s", problem);
            rc = -1;
            break;
        }
        peer_t *p = &d->peers[rank];
        p->fd = fd;
        p->rank = (unsigned)rank;
        p->want = (unsigned)json_integer_value(json_object_get(m, "workers"));
        snprintf(p->host, sizeof p->host, "%s", json_string_value(json_object_get(m, "host")) ?: "?");
        p->rx = tmp.rx, p->rx_len = tmp.rx_len, p->rx_cap = tmp.rx_cap, p->rx_head = tmp.rx_head;
        p->last_rx_ns = p->last_tx_ns = sg_now_ns();
        json_decref(m);
        joined++;
    }
    close(lfd);
    if (rc == 0)
        rc = deal_streams(d, max_streams, err, errlen);
    if (rc < 0) {
        broadcast(d, json_pack("{s:s, s:s}", "t", "abort", "why", err));
        return -1;
    }
    for (unsigned r = 1; r < d->o.world; r++) {
        peer_t *p = &d->peers[r];
        json_t *w = json_pack("{s:s, s:I, s:I, s:I}", "t", "welcome", "workers", (json_int_t)p->workers,
                              "stream_offset", (json_int_t)p->offset, "streams_total", (json_int_t)d->total);
        if (send_msg(p, w, sg_now_ns() + 5000000000LL) < 0) {
            snprintf(err, errlen, "rank %u (%s) went away before the run", r, p->host);
            broadcast(d, json_pack("{s:s, s:s}", "t", "abort", "why", err));
            return -1;
        }
    }
    d->workers = d->peers[0].workers;
    d->offset = 0;
    return 0;
}

static int rank_open(sg_coord_t *d, unsigned want, const char *fingerprint, char *err, size_t errlen)
{
    fprintf(stderr, "surge: rank %d of %u (%s): connecting to rank 0 at %s:%u (up to %.0f s)\n", d->o.rank, d->o.world,
            d->o.source, d->o.host, d->o.port, d->o.timeout_s);
    int64_t deadline = sg_now_ns() + (int64_t)(d->o.timeout_s * 1e9);
    int fd = connect_root(&d->o, deadline, err, errlen);
    if (fd < 0)
        return -1;
    peer_t *p = &d->peers[0];
    p->fd = fd;
    p->last_rx_ns = p->last_tx_ns = sg_now_ns();
    snprintf(p->host, sizeof p->host, "%s", d->o.host);
    json_t *hello = json_pack("{s:s, s:i, s:I, s:I, s:s, s:i, s:s}", "t", "hello", "rank", d->o.rank, "world",
                              (json_int_t)d->o.world, "workers", (json_int_t)want, "host", d->self_host, "version",
                              PROTO_VERSION, "config", fingerprint);
    char why[256];
    /* rank 0 waits up to the timeout for the last rank and then says why it gives up: wait a little longer
     * than it, so that its reason arrives rather than our own time running out */
    deadline = sg_now_ns() + (int64_t)(d->o.timeout_s * 1e9) + 10000000000LL;
    if (send_msg(p, hello, deadline) < 0) {
        snprintf(err, errlen, "rank 0 at %s:%u closed the connection", d->o.host, d->o.port);
        return -1;
    }
    json_t *m = recv_msg(p, deadline, why, sizeof why);
    if (!m) {
        snprintf(err, errlen, "rank 0 at %s:%u did not take this rank in: %s", d->o.host, d->o.port, why);
        return -1;
    }
    int rc = 0;
    if (strcmp(type_of(m), "welcome") == 0) {
        d->workers = (unsigned)json_integer_value(json_object_get(m, "workers"));
        d->offset = (unsigned)json_integer_value(json_object_get(m, "stream_offset"));
        d->total = (unsigned)json_integer_value(json_object_get(m, "streams_total"));
        if (d->workers == 0 || d->offset + d->workers > d->total) {
            snprintf(err, errlen, "rank 0 sent a layout that makes no sense");
            rc = -1;
        }
    } else {
        const char *msg = json_string_value(json_object_get(m, "message"));
        if (!msg)
            msg = json_string_value(json_object_get(m, "why"));
        snprintf(err, errlen, "rank 0 stopped the run: %s", msg ? msg : "no reason given");
        rc = -1;
    }
    json_decref(m);
    return rc;
}

int sg_dist_open(const sg_dist_opts_t *o, unsigned want_workers, unsigned max_streams, const char *fingerprint,
                 sg_coord_t **out, char *err, size_t errlen)
{
    *out = NULL;
    sg_coord_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->peers = calloc(o->world, sizeof(*d->peers)))) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->o = *o;
    d->root = o->rank == 0;
    d->n_peers = d->root ? o->world : 1;
    for (unsigned r = 0; r < o->world; r++) {
        d->peers[r].fd = -1;
        d->peers[r].rank = r;
    }
    if (gethostname(d->self_host, sizeof d->self_host) != 0)
        snprintf(d->self_host, sizeof d->self_host, "?");
    d->self_host[sizeof d->self_host - 1] = '\0';
    int rc = d->root ? root_open(d, want_workers, max_streams, fingerprint, err, errlen)
                     : rank_open(d, want_workers, fingerprint, err, errlen);
    if (rc < 0) {
        sg_dist_free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void sg_dist_layout(const sg_coord_t *d, unsigned *workers, unsigned *stream_offset, unsigned *streams_total)
{
    *workers = d->workers;
    *stream_offset = d->offset;
    *streams_total = d->total;
}

unsigned sg_dist_rank(const sg_coord_t *d)
{
    return (unsigned)d->o.rank;
}

unsigned sg_dist_world(const sg_coord_t *d)
{
    return d->o.world;
}

/* ---------------- the start ---------------- */

/* Rank 0: the offset of r's clock to ours, from the exchange with the least round trip. */
static int measure_clock(sg_coord_t *d, peer_t *p, int64_t deadline, char *why, size_t whylen)
{
    int64_t best_rtt = INT64_MAX, best_off = 0;
    for (int i = 0; i < PING_ROUNDS; i++) {
        int64_t t0 = realtime_ns();
        if (send_msg(p, json_pack("{s:s, s:I}", "t", "ping", "t0", (json_int_t)t0), deadline) < 0) {
            snprintf(why, whylen, "its connection closed");
            return -1;
        }
        json_t *m = recv_msg(p, deadline, why, whylen);
        int64_t t2 = realtime_ns();
        if (!m)
            return -1;
        if (strcmp(type_of(m), "pong") != 0 || json_integer_value(json_object_get(m, "t0")) != t0) {
            snprintf(why, whylen, "it answered a clock ping with \"%s\"", type_of(m));
            json_decref(m);
            return -1;
        }
        int64_t t1 = (int64_t)json_integer_value(json_object_get(m, "t1"));
        json_decref(m);
        if (t2 - t0 < best_rtt) {
            best_rtt = t2 - t0;
            best_off = t1 - t0 - (t2 - t0) / 2;
        }
    }
    p->rtt_ns = best_rtt;
    p->clock_offset_ns = best_off;
    (void)d;
    return 0;
}

static int64_t mono_of_realtime(int64_t real)
{
    return real - (realtime_ns() - sg_now_ns());
}

int sg_dist_start(sg_coord_t *d, int64_t *start_mono_ns, char *err, size_t errlen)
{
    int64_t deadline = sg_now_ns() + (int64_t)(d->o.timeout_s * 1e9);
    char why[256];
    if (!d->root) {
        peer_t *p = &d->peers[0];
        if (send_msg(p, json_pack("{s:s}", "t", "ready"), deadline) < 0) {
            snprintf(err, errlen, "rank 0 went away before the start");
            return -1;
        }
        for (;;) {
            json_t *m = recv_msg(p, deadline, why, sizeof why);
            if (!m) {
                snprintf(err, errlen, "rank 0 gave no start: %s", why);
                return -1;
            }
            const char *t = type_of(m);
            if (strcmp(t, "ping") == 0) {
                json_t *pong = json_pack("{s:s, s:O, s:I}", "t", "pong", "t0", json_object_get(m, "t0"), "t1",
                                         (json_int_t)realtime_ns());
                json_decref(m);
                if (send_msg(p, pong, deadline) < 0) {
                    snprintf(err, errlen, "rank 0 went away before the start");
                    return -1;
                }
                continue;
            }
            if (strcmp(t, "start") == 0) {
                d->start_realtime_ns = (int64_t)json_integer_value(json_object_get(m, "start_realtime_ns"));
                d->clock_offset_ns = (int64_t)json_integer_value(json_object_get(m, "offset_ns"));
                d->rtt_ns = (int64_t)json_integer_value(json_object_get(m, "rtt_ns"));
                json_decref(m);
                /* rank 0's instant on our clock: its time plus our offset to it */
                *start_mono_ns = mono_of_realtime(d->start_realtime_ns + d->clock_offset_ns);
                int64_t late = sg_now_ns() - *start_mono_ns;
                if (late > 0)
                    fprintf(stderr,
                            "surge: warning: rank %d got the start instant %.3f ms after it passed: its "
                            "first requests go out late (and show as schedule lag)\n",
                            d->o.rank, (double)late / 1e6);
                return 0;
            }
            const char *w = json_string_value(json_object_get(m, "why"));
            snprintf(err, errlen, "rank 0 stopped the run before the start: %s", w ? w : t);
            json_decref(m);
            return -1;
        }
    }
    /* rank 0: every rank ready, then the clocks, then one instant */
    for (unsigned r = 1; r < d->o.world; r++) {
        peer_t *p = &d->peers[r];
        json_t *m = recv_msg(p, deadline, why, sizeof why);
        bool ok = m && strcmp(type_of(m), "ready") == 0;
        if (!ok && m && strcmp(type_of(m), "stop") == 0)
            snprintf(why, sizeof why, "it stopped: %s", json_string_value(json_object_get(m, "why")) ?: "?");
        json_decref(m);
        if (!ok || measure_clock(d, p, deadline, why, sizeof why) < 0) {
            snprintf(err, errlen, "rank %u (%s) failed before the start: %s", r, p->host, why);
            lose(p, why);
            broadcast(d, json_pack("{s:s, s:s}", "t", "abort", "why", err));
            return -1;
        }
    }
    int64_t worst = 0;
    for (unsigned r = 1; r < d->o.world; r++)
        worst = d->peers[r].rtt_ns > worst ? d->peers[r].rtt_ns : worst;
    d->start_realtime_ns = realtime_ns() + START_LEAD_NS + 4 * worst;
    for (unsigned r = 1; r < d->o.world; r++) {
        peer_t *p = &d->peers[r];
        json_t *s =
            json_pack("{s:s, s:I, s:I, s:I}", "t", "start", "start_realtime_ns", (json_int_t)d->start_realtime_ns,
                      "offset_ns", (json_int_t)p->clock_offset_ns, "rtt_ns", (json_int_t)p->rtt_ns);
        if (send_msg(p, s, deadline) < 0) {
            snprintf(err, errlen, "rank %u (%s) went away before the start", r, p->host);
            lose(p, "its connection closed");
            broadcast(d, json_pack("{s:s, s:s}", "t", "abort", "why", err));
            return -1;
        }
    }
    *start_mono_ns = mono_of_realtime(d->start_realtime_ns);
    /* what the ranks' clocks said, and how far apart their starts may be */
    char line[2048];
    size_t off = 0;
    double skew = 0;
    for (unsigned r = 1; r < d->o.world && off < sizeof line - 128; r++) {
        const peer_t *p = &d->peers[r];
        double bound = (double)p->rtt_ns / 2e6;
        skew = bound > skew ? bound : skew;
        off += (size_t)snprintf(line + off, sizeof line - off, "%s rank %u %+.3f ms (round trip %.3f ms)",
                                r > 1 ? "," : "", r, (double)p->clock_offset_ns / 1e6, (double)p->rtt_ns / 1e6);
    }
    fprintf(stderr,
            "surge: %u ranks, %u worker streams; clock offsets to rank 0 (corrected for):%s; starts within "
            "%.3f ms of each other\n",
            d->o.world, d->total, line, skew);
    for (unsigned r = 1; r < d->o.world; r++) {
        const peer_t *p = &d->peers[r];
        if (p->rtt_ns / 2 > 1000000)
            fprintf(stderr,
                    "surge: warning: rank %u's start may be off by up to %.3f ms (half its %.3f ms round "
                    "trip to rank 0)\n",
                    r, (double)p->rtt_ns / 2e6, (double)p->rtt_ns / 1e6);
        if (llabs(p->clock_offset_ns) > 50000000LL)
            fprintf(stderr,
                    "surge: warning: rank %u's clock is %+.1f ms off rank 0's: the start corrects for it, "
                    "but wall-clock times in its own files carry it (synchronise the clocks: chrony, NTP)\n",
                    r, (double)p->clock_offset_ns / 1e6);
    }
    return 0;
}

/* ---------------- during the run ---------------- */

static void stop_all(sg_coord_t *d, const char *why)
{
    if (d->stop_sent)
        return;
    d->stop_sent = true;
    if (d->root)
        broadcast(d, json_pack("{s:s, s:s}", "t", "stop", "why", why));
    else
        send_msg(&d->peers[0], json_pack("{s:s, s:s}", "t", "stop", "why", why), sg_now_ns() + 1000000000LL);
}

static int stop_now(sg_coord_t *d, const char *why, char *out, size_t outlen)
{
    if (d->stopped)
        return 0;
    d->stopped = true;
    snprintf(d->stop_why, sizeof d->stop_why, "%.*s", (int)sizeof d->stop_why - 1, why);
    snprintf(out, outlen, "%s", why);
    if (d->root)
        stop_all(d, why);
    return 1;
}

int sg_dist_tick(sg_coord_t *d, bool local_stop, const char *local_why, char *why, size_t whylen)
{
    int64_t now = sg_now_ns();
    char buf[512];
    if (local_stop && !d->stop_sent) {
        stop_all(d, local_why);
        if (d->root && !d->stopped) {
            d->stopped = true;
            snprintf(d->stop_why, sizeof d->stop_why, "%s", local_why);
        }
    }
    for (unsigned i = d->root ? 1 : 0; i < d->n_peers; i++) {
        peer_t *p = &d->peers[i];
        if (p->lost)
            continue;
        if (now - p->last_tx_ns >= HB_NS)
            send_msg(p, json_pack("{s:s}", "t", "hb"), now + 100000000LL);
        int rc;
        while ((rc = fill(p, 0)) > 0)
            ;
        char kind;
        const char *data;
        size_t len;
        int fr;
        while ((fr = take_frame(p, &kind, &data, &len)) == 1) {
            json_t *m = kind == 'J' ? json_loadb(data, len, 0, NULL) : NULL;
            const char *t = type_of(m);
            if (strcmp(t, "stop") == 0) {
                const char *w = json_string_value(json_object_get(m, "why"));
                if (d->root)
                    snprintf(buf, sizeof buf, "rank %u stopped: %s", p->rank, w ? w : "?");
                else
                    snprintf(buf, sizeof buf, "%s", w ? w : "rank 0 stopped the run");
                json_decref(m);
                return stop_now(d, buf, why, whylen);
            }
            json_decref(m);
        }
        const char *lost = fr < 0                             ? "it sent a malformed frame"
                           : rc < 0                           ? "its connection closed"
                           : now - p->last_rx_ns > SILENCE_NS ? "it has been silent for 10 s"
                                                              : NULL;
        if (lost) {
            lose(p, lost);
            if (d->root)
                snprintf(buf, sizeof buf, "rank %u (%s) was lost: %s", p->rank, p->host, lost);
            else
                snprintf(buf, sizeof buf, "rank 0 (%s) was lost: %s", p->host, lost);
            return stop_now(d, buf, why, whylen);
        }
    }
    return 0;
}

/* ---------------- results ---------------- */

static int send_file(peer_t *p, const char *path, const char *name, int64_t deadline)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    struct stat st;
    if (fstat(fileno(f), &st) < 0) {
        fclose(f);
        return -errno;
    }
    int rc =
        send_msg(p, json_pack("{s:s, s:s, s:I}", "t", "file", "name", name, "size", (json_int_t)st.st_size), deadline);
    char *buf = rc ? NULL : malloc(CHUNK);
    if (!rc && !buf)
        rc = -ENOMEM;
    off_t left = st.st_size;
    while (!rc && left > 0) {
        size_t n = fread(buf, 1, left > (off_t)CHUNK ? CHUNK : (size_t)left, f);
        if (n == 0) {
            rc = -EIO;
            break;
        }
        rc = send_frame(p, 'B', buf, n, deadline);
        left -= (off_t)n;
    }
    free(buf);
    fclose(f);
    return rc;
}

int sg_dist_send_results(sg_coord_t *d, const char *dir, const char *const *files, size_t n_files, int code,
                         int *final_code, char *err, size_t errlen)
{
    peer_t *p = &d->peers[0];
    if (p->lost) {
        snprintf(err, errlen, "rank 0 (%s) was lost: %s", p->host, p->why);
        return -1;
    }
    int64_t deadline = sg_now_ns() + (int64_t)(d->o.timeout_s * 1e9);
    int rc =
        send_msg(p, json_pack("{s:s, s:i, s:I}", "t", "result", "code", code, "files", (json_int_t)n_files), deadline);
    for (size_t i = 0; i < n_files && !rc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        rc = send_file(p, path, files[i], deadline);
    }
    if (rc < 0) {
        snprintf(err, errlen, "sending this rank's results to rank 0: %s", sg_strerror(rc));
        return -1;
    }
    char why[256];
    for (;;) {
        json_t *m = recv_msg(p, deadline, why, sizeof why);
        if (!m) {
            snprintf(err, errlen, "rank 0 (%s) gave no verdict after the results: %s", p->host, why);
            return -1;
        }
        if (strcmp(type_of(m), "done") == 0) {
            *final_code = (int)json_integer_value(json_object_get(m, "code"));
            json_decref(m);
            return 0;
        }
        json_decref(m); /* a stop that crossed our results */
    }
}

/* A file name a rank may send: a plain name, no path. */
static bool plain_name(const char *s)
{
    return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strlen(s) < 200;
}

static int recv_file(peer_t *p, const char *dir, json_t *hdr, int64_t timeout, char *why, size_t whylen)
{
    const char *name = json_string_value(json_object_get(hdr, "name"));
    json_int_t size = json_integer_value(json_object_get(hdr, "size"));
    if (!plain_name(name) || size < 0) {
        snprintf(why, whylen, "it sent a file without a plain name");
        return -1;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.part", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(why, whylen, "%.150s: %s", tmp, strerror(errno));
        return -1;
    }
    json_int_t left = size;
    int rc = 0;
    while (left > 0) {
        char kind;
        const char *data;
        size_t len;
        int fr = recv_frame(p, sg_now_ns() + timeout, &kind, &data, &len);
        if (fr <= 0 || kind != 'B' || (json_int_t)len > left) {
            snprintf(why, whylen, "%s arrived incomplete (%s)", name, fr == 0 ? "no word in time" : "cut off");
            rc = -1;
            break;
        }
        if (fwrite(data, 1, len, f) != len) {
            snprintf(why, whylen, "%.150s: %s", tmp, strerror(errno));
            rc = -1;
            break;
        }
        left -= (json_int_t)len;
    }
    if (fclose(f) != 0 && rc == 0) {
        snprintf(why, whylen, "%.150s: %s", tmp, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        snprintf(why, whylen, "%.150s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc)
        unlink(tmp);
    return rc;
}

int sg_dist_gather(sg_coord_t *d, const char *base_dir, char **dirs, char *err, size_t errlen)
{
    int64_t timeout = (int64_t)(d->o.timeout_s * 1e9);
    for (unsigned r = 0; r < d->o.world; r++) {
        dirs[r] = NULL;
        if (r > 0 && d->peers[r].lost)
            continue;
        if (asprintf(&dirs[r], "%s/rank%u", base_dir, r) < 0) {
            dirs[r] = NULL;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (r == 0)
            continue;
        peer_t *p = &d->peers[r];
        mkdir(dirs[r], 0755);
        char why[256] = "";
        json_t *m = NULL;
        do { /* stops and heartbeats that crossed the run's end come first */
            json_decref(m);
            m = recv_msg(p, sg_now_ns() + timeout, why, sizeof why);
        } while (m && strcmp(type_of(m), "result") != 0);
        int rc = m ? 0 : -1;
        json_int_t n = m ? json_integer_value(json_object_get(m, "files")) : 0;
        json_decref(m);
        for (json_int_t i = 0; i < n && rc == 0; i++) {
            json_t *h = recv_msg(p, sg_now_ns() + timeout, why, sizeof why);
            if (!h || strcmp(type_of(h), "file") != 0) {
                if (h)
                    snprintf(why, sizeof why, "it sent \"%s\" where a file was due", type_of(h));
                rc = -1;
            } else {
                rc = recv_file(p, dirs[r], h, timeout, why, sizeof why);
            }
            json_decref(h);
        }
        if (rc < 0) {
            fprintf(stderr, "surge: rank %u (%s): its results did not arrive: %s\n", r, p->host, why);
            lose(p, why);
            free(dirs[r]);
            dirs[r] = NULL;
        }
    }
    return 0;
}

void sg_dist_done(sg_coord_t *d, int code)
{
    for (unsigned r = 1; r < d->n_peers; r++)
        if (!d->peers[r].lost)
            send_msg(&d->peers[r], json_pack("{s:s, s:i}", "t", "done", "code", code), sg_now_ns() + 5000000000LL);
}

bool sg_dist_stopped_early(const sg_coord_t *d, char *why, size_t whylen)
{
    bool lost = false;
    for (unsigned r = 1; r < d->n_peers && d->root; r++)
        if (d->peers[r].lost) {
            if (!lost)
                snprintf(why, whylen, "rank %u (%s) was lost: %s", r, d->peers[r].host, d->peers[r].why);
            lost = true;
        }
    if (!lost && d->stopped)
        snprintf(why, whylen, "%s", d->stop_why);
    return lost || d->stopped;
}

/* ---------------- for the summaries ---------------- */

char *sg_dist_rank_json(const sg_coord_t *d)
{
    json_t *o =
        json_pack("{s:{s:i, s:I, s:s, s:I, s:I, s:I, s:f, s:f, s:s}}", "dist", "rank", d->o.rank, "world",
                  (json_int_t)d->o.world, "host", d->self_host, "workers", (json_int_t)d->workers, "stream_offset",
                  (json_int_t)d->offset, "streams_total", (json_int_t)d->total, "clock_offset_ms",
                  (double)d->clock_offset_ns / 1e6, "rtt_ms", (double)d->rtt_ns / 1e6, "launched_by", d->o.source);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *sg_dist_ranks_json(const sg_coord_t *d)
{
    json_t *arr = json_array();
    double skew = 0;
    for (unsigned r = 0; arr && r < d->o.world; r++) {
        const peer_t *p = &d->peers[r];
        double bound = r ? (double)p->rtt_ns / 2e6 : 0;
        skew = bound > skew ? bound : skew;
        json_t *e = json_pack("{s:I, s:s, s:I, s:I, s:f, s:f, s:f, s:b}", "rank", (json_int_t)r, "host", p->host,
                              "workers", (json_int_t)p->workers, "stream_offset", (json_int_t)p->offset,
                              "clock_offset_ms", (double)p->clock_offset_ns / 1e6, "rtt_ms", (double)p->rtt_ns / 1e6,
                              "start_skew_bound_ms", bound, "lost", p->lost);
        if (e && p->lost)
            json_object_set_new(e, "lost_why", json_string(p->why));
        json_array_append_new(arr, e);
    }
    json_t *o =
        json_pack("{s:{s:I, s:s, s:s, s:I, s:I, s:f, s:o}}", "ranks", "world", (json_int_t)d->o.world, "launched_by",
                  d->o.source, "coordinator", d->o.host, "port", (json_int_t)d->o.port, "start_realtime_ns",
                  (json_int_t)d->start_realtime_ns, "start_skew_bound_ms", skew, "each", arr);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

void sg_dist_free(sg_coord_t *d)
{
    if (!d)
        return;
    for (unsigned r = 0; r < d->o.world; r++) {
        peer_close(&d->peers[r]);
        free(d->peers[r].rx);
    }
    free(d->peers);
    free(d);
}
