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
/*
 * --local-address: a comma-separated list whose items are an address ("127.0.0.2", "::1"), a range of addresses
 * ("127.0.0.2-127.0.0.9", both ends included, one family) or a CIDR block ("127.0.0.0/29": its host addresses, the
 * network and broadcast addresses left out below /31 for IPv4). Parsing only, no I/O. On success *out (malloc'd,
 * port 0) holds *n >= 1 addresses in the order given; at most SG_LOCAL_ADDR_MAX, none twice, one family. 0, or
 * SG_EINVAL with a message naming the item in err.
 */
#define SG_LOCAL_ADDR_MAX 65536
SG_WUR int sg_tcp_local_parse(const char *spec, sg_addr_t **out, size_t *n, char *err, size_t errlen);
/* Bind a client socket to a source address with IP_BIND_ADDRESS_NO_PORT: the kernel picks the port at connect
 * time, per 4-tuple, so each source address has its own ~28k ports to each destination. 0 or -errno. */
SG_WUR int sg_tcp_bind_source(int fd, const sg_addr_t *src);
/* Format addr without its port: "ip". */
void sg_addr_format_ip(const sg_addr_t *a, char *out, size_t len);
/* Format addr as "ip:port" / "[ip6]:port". */
void sg_addr_format(const sg_addr_t *a, char *out, size_t len);

#endif
