/*
 * Moving HTTP/2 bytes between two in-memory sessions in the unit tests (test_h2.c, test_h2srv.c): whole, or in
 * pieces of step bytes so that every frame is seen split. The side under test is fed through a sink function;
 * the plain nghttp2 peer through h2pipe_to_ng.
 */
#ifndef SG_TEST_H2PIPE_H
#define SG_TEST_H2PIPE_H

#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Takes n bytes: 0, or negative on error. */
typedef int (*h2pipe_sink_fn)(void *ctx, const char *p, size_t n);

/* Hand buf to sink in pieces of step bytes (0: whole). The first negative result, else 0. */
static inline int h2pipe_split(const char *buf, size_t len, size_t step, h2pipe_sink_fn sink, void *ctx)
{
    for (size_t off = 0; off < len;) {
        size_t n = step && len - off > step ? step : len - off;
        int rv = sink(ctx, buf + off, n);
        if (rv < 0)
            return rv;
        off += n;
    }
    return 0;
}

/* A sink into a plain nghttp2 session (ctx): every byte must be consumed. */
static inline int h2pipe_to_ng(void *ctx, const char *p, size_t n)
{
    ssize_t rv = nghttp2_session_mem_recv(ctx, (const uint8_t *)p, n);
    return rv == (ssize_t)n ? 0 : -1;
}

/*
 * Everything the nghttp2 session ng wants to send, into sink in pieces of step bytes. Each chunk is copied to
 * an allocation of its exact size first (mem_send's buffer is valid only until the next call; the copy lets
 * ASan see over-reads). Bytes moved, or negative.
 */
static inline ssize_t h2pipe_from_ng(nghttp2_session *ng, size_t step, h2pipe_sink_fn sink, void *ctx)
{
    ssize_t moved = 0;
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(ng, &p)) > 0) {
        char *copy = malloc((size_t)n);
        if (!copy)
            return -1;
        memcpy(copy, p, (size_t)n);
        int rv = h2pipe_split(copy, (size_t)n, step, sink, ctx);
        free(copy);
        if (rv < 0)
            return rv;
        moved += n;
    }
    return n < 0 ? n : moved;
}

#endif
