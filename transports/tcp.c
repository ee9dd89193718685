#include "sg_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
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
