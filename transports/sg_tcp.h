/*
 * Plain TCP: address resolution and socket set-up, done before or beside the ring. The ring performs every
 * connect, send and receive; this file only makes and configures sockets. (TLS comes as a filter over the same
 * byte pipe, on memory buffers.)
 */
#ifndef SG_TCP_H
#define SG_TCP_H

#include "sg_common.h"

#include <sys/socket.h>

typedef struct {
    struct sockaddr_storage addr;
    socklen_t len;
} sg_addr_t;

/* Resolve host (name, IPv4 or IPv6 literal) and port, before the run. 0, or negative with a message in err. */
SG_WUR int sg_tcp_resolve(const char *host, uint16_t port, sg_addr_t *out, char *err, size_t errlen);
/* A client socket for addr's family: close-on-exec, TCP_NODELAY. Returns the fd or -errno. */
SG_WUR int sg_tcp_client_socket(const sg_addr_t *addr);
/* A listening socket bound to addr (SO_REUSEADDR, SO_REUSEPORT so each worker can own one). fd or -errno. */
SG_WUR int sg_tcp_listen(const sg_addr_t *addr, int backlog);
/* The port a socket is bound to, or -errno. */
SG_WUR int sg_tcp_local_port(int fd);
/* Raise RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit. */
uint64_t sg_raise_nofile(void);
/* Format addr as "ip:port" / "[ip6]:port". */
void sg_addr_format(const sg_addr_t *a, char *out, size_t len);

#endif
