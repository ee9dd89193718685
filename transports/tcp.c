#include "sg_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int sg_tcp_resolve(const char *host, uint16_t port, sg_addr_t *out, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%u", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve host \"%s\": %s", host, rc ? gai_strerror(rc) : "no address");
        return SG_EINVAL;
    }
    memset(out, 0, sizeof(*out));
    memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int sg_tcp_client_socket(const sg_addr_t *addr)
{
    int fd = socket(addr->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int sg_tcp_listen(const sg_addr_t *addr, int backlog)
{
    int fd = socket(addr->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->addr, addr->len) < 0 || listen(fd, backlog) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

int sg_tcp_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -EAFNOSUPPORT;
}

uint64_t sg_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur;
}

void sg_addr_format(const sg_addr_t *a, char *out, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->addr.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&a->addr;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        snprintf(out, len, "%s:%u", ip, ntohs(s->sin_port));
    } else if (a->addr.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->addr;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        snprintf(out, len, "[%s]:%u", ip, ntohs(s->sin6_port));
    } else {
        snprintf(out, len, "?");
    }
}

void sg_addr_format_ip(const sg_addr_t *a, char *out, size_t len)
{
    if (len)
        out[0] = 0;
    if (a->addr.ss_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)&a->addr)->sin_addr, out, (socklen_t)len);
    else if (a->addr.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, out, (socklen_t)len);
}

/* One address literal of either family into 16 bytes, big-endian (IPv4 in the last 4). Its family, or 0. */
static int ip_parse(const char *s, uint8_t ip[16])
{
    memset(ip, 0, 16);
    struct in_addr a4;
    if (inet_pton(AF_INET, s, &a4) == 1) {
        memcpy(ip + 12, &a4, 4);
        return AF_INET;
    }
    struct in6_addr a6;
    if (inet_pton(AF_INET6, s, &a6) == 1) {
        memcpy(ip, &a6, 16);
        return AF_INET6;
    }
    return 0;
}

static int ip_cmp(const uint8_t a[16], const uint8_t b[16])
{
    return memcmp(a, b, 16);
}

static void ip_inc(uint8_t ip[16])
{
    for (int i = 15; i >= 0; i--)
        if (++ip[i] != 0)
            break;
}

/* b - a, saturated at limit + 1 (a <= b) */
static uint64_t ip_span(const uint8_t a[16], const uint8_t b[16], uint64_t limit)
{
    uint64_t d = 0;
    int borrow = 0;
    uint8_t diff[16];
    for (int i = 15; i >= 0; i--) {
        int v = (int)b[i] - (int)a[i] - borrow;
        borrow = v < 0;
        diff[i] = (uint8_t)(v + (borrow ? 256 : 0));
    }
    for (int i = 0; i < 16; i++) {
        if (i < 8 && diff[i])
            return limit + 1;
        if (i >= 8)
            d = (d << 8) | diff[i];
    }
    return d > limit ? limit + 1 : d;
}

static void addr_from_ip(int family, const uint8_t ip[16], sg_addr_t *out)
{
    memset(out, 0, sizeof(*out));
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&out->addr;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, ip + 12, 4);
        out->len = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&out->addr;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, ip, 16);
        out->len = sizeof(*s);
    }
}

static int addr_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(sg_addr_t)); /* addr_from_ip zeroes every byte it does not set */
}

int sg_tcp_local_parse(const char *spec, sg_addr_t **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    sg_addr_t *v = NULL;
    size_t nv = 0, cap = 0;
    int family = 0;
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, errlen, "%s: an empty or over-long item (expected ADDR, FIRST-LAST or ADDR/PREFIX)",
                     len ? "item too long" : "empty item");
            goto bad;
        }
        memcpy(item, p, len);
        item[len] = 0;
        uint8_t lo[16], hi[16];
        int fam = 0;
        char *dash = strchr(item, '-'), *slash = strchr(item, '/');
        if (dash && !slash) {
            *dash = 0;
            int f1 = ip_parse(item, lo), f2 = ip_parse(dash + 1, hi);
            *dash = '-';
            if (!f1 || !f2 || f1 != f2) {
                snprintf(err, errlen, "\"%s\" is not a range FIRST-LAST of two addresses of one family", item);
                goto bad;
            }
            if (ip_cmp(lo, hi) > 0) {
                snprintf(err, errlen, "range \"%s\" ends before it starts", item);
                goto bad;
            }
            fam = f1;
        } else if (slash && !dash) {
            *slash = 0;
            fam = ip_parse(item, lo);
            *slash = '/';
            char *e;
            long bits = strtol(slash + 1, &e, 10);
            int width = fam == AF_INET ? 32 : 128;
            if (!fam || e == slash + 1 || *e || bits < 0 || bits > width) {
                snprintf(err, errlen, "\"%s\" is not a CIDR block ADDR/PREFIX (prefix 0 to %d)", item,
                         fam == AF_INET6 ? 128 : 32);
                goto bad;
            }
            int host_bits = width - (int)bits;
            if (host_bits > 16) {
                snprintf(err, errlen, "\"%s\" holds more than %d addresses", item, SG_LOCAL_ADDR_MAX);
                goto bad;
            }
            /* the block: host bits cleared in lo, set in hi */
            memcpy(hi, lo, 16);
            for (int b = 0; b < host_bits; b++) {
                int byte = 15 - b / 8;
                lo[byte] &= (uint8_t) ~(1u << (b % 8));
                hi[byte] |= (uint8_t)(1u << (b % 8));
            }
            if (fam == AF_INET && host_bits >= 2) { /* not the network and broadcast addresses */
                ip_inc(lo);
                for (int i = 15; i >= 0; i--)
                    if (hi[i]-- != 0)
                        break;
            }
        } else {
            fam = ip_parse(item, lo);
            if (!fam) {
                snprintf(err, errlen,
                         "\"%s\" is not an IPv4 or IPv6 address, a range FIRST-LAST or a block ADDR/PREFIX", item);
                goto bad;
            }
            memcpy(hi, lo, 16);
        }
        if (family && fam != family) {
            snprintf(err, errlen, "\"%s\": every address must be of one family (IPv4 or IPv6)", item);
            goto bad;
        }
        family = fam;
        uint64_t span = ip_span(lo, hi, SG_LOCAL_ADDR_MAX);
        if (nv + span + 1 > SG_LOCAL_ADDR_MAX) {
            snprintf(err, errlen, "more than %d addresses", SG_LOCAL_ADDR_MAX);
            goto bad;
        }
        if (nv + span + 1 > cap) {
            size_t nc = cap ? cap : 8;
            while (nc < nv + span + 1)
                nc *= 2;
            sg_addr_t *nvp = realloc(v, nc * sizeof(*v));
            if (!nvp) {
                snprintf(err, errlen, "out of memory");
                goto bad;
            }
            v = nvp;
            cap = nc;
        }
        for (uint64_t i = 0; i <= span; i++, ip_inc(lo)) {
            addr_from_ip(fam, lo, &v[nv]);
            nv++;
        }
        if (!end)
            break;
        p = end + 1;
    }
    /* none twice: a sorted copy has its duplicates side by side */
    sg_addr_t *sorted = malloc(nv * sizeof(*v));
    if (!sorted) {
        snprintf(err, errlen, "out of memory");
        goto bad;
    }
    memcpy(sorted, v, nv * sizeof(*v));
    qsort(sorted, nv, sizeof(*v), addr_cmp);
    for (size_t i = 1; i < nv; i++)
        if (addr_cmp(&sorted[i - 1], &sorted[i]) == 0) {
            char ip[INET6_ADDRSTRLEN];
            sg_addr_format_ip(&sorted[i], ip, sizeof ip);
            snprintf(err, errlen, "%s is given twice", ip);
            free(sorted);
            goto bad;
        }
    free(sorted);
    *out = v;
    *n = nv;
    return 0;
bad:
    free(v);
    return SG_EINVAL;
}

int sg_tcp_bind_source(int fd, const sg_addr_t *src)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0)
        return -errno;
    if (bind(fd, (const struct sockaddr *)&src->addr, src->len) < 0)
        return -errno;
    return 0;
}
