/*
 * The start-up checks of `surge profile`: blocking, each bounded by a deadline, run once on the controller's thread
 * before any worker starts, so that a target that cannot serve the run is one clear line and exit 2, not a run of
 * errors or, worse, a run that waits on a server that will never answer.
 *
 *   connect  the target accepts a TCP connection;
 *   tls      https://: the handshake with the run's own settings succeeds, and tells which protocol the run speaks;
 *   h2       --http2 (and --service-kind triton): the server answers the HTTP/2 connection preface with its
 *            SETTINGS, as every HTTP/2 server does at once (h2c with prior knowledge on http://; inside TLS when
 *            ALPN selected h2). An HTTP/1.1 server answers it with a 400, an HTML page, a close, or nothing.
 */
#ifndef SG_PREFLIGHT_H
#define SG_PREFLIGHT_H

#include "sg_run.h"

/* The bound of each check (connect, handshake, SETTINGS), in milliseconds. */
#define SG_PREFLIGHT_MS 5000

/* Connect to run->addr within timeout_ms. 0 or -errno (-ETIMEDOUT). With fd_out the connected socket is handed
 * back (non-blocking; the caller closes it) instead of closed. */
SG_WUR int sg_preflight_connect(const sg_run_t *run, int timeout_ms, int *fd_out);
/* The same to another address (several URLs: each one after the first). */
SG_WUR int sg_preflight_connect_to(const sg_run_t *run, const sg_addr_t *to, int timeout_ms, int *fd_out);

/*
 * https://: one handshake on fd with run->tls_opts and the host of run->cfg. Tells which protocol the server
 * selected (alpn, "" for none) and describes the session in info. When the server selected h2 it must then also
 * answer the HTTP/2 preface with SETTINGS (sg_preflight_h2's check, inside TLS). 0, or -1 with one line in err.
 */
SG_WUR int sg_preflight_tls(const sg_run_t *run, int fd, int timeout_ms, char *alpn, size_t alpn_len, char *info,
                            size_t info_len, char *err, size_t errlen);

/*
 * h2c with prior knowledge: send the client preface (the bytes a worker's session sends first) on the connected fd
 * and wait up to timeout_ms for the server's SETTINGS. 0 when they came; else -1 with what came instead in `got`,
 * worded to follow "it answered the HTTP/2 preface with" or standing alone ("it closed the connection ...").
 */
SG_WUR int sg_preflight_h2(int fd, int timeout_ms, char *got, size_t got_len);

#endif
