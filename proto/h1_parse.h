/*
 * Private to proto/: the pieces of HTTP/1.1 head parsing that the response parser (line by line, across feeds)
 * and the request parser (whole head at once) share. Every function works on one complete line, without its
 * line ending.
 */
#ifndef SG_H1_PARSE_H
#define SG_H1_PARSE_H

#include "sg_common.h"

/* Facts gathered from header fields, as bits of one word so the public parser structs stay small. */
enum {
    SG_H1F_TE_SEEN = 1u << 0,         /* a Transfer-Encoding field was present */
    SG_H1F_TE_CHUNKED_LAST = 1u << 1, /* ... and its final coding is chunked */
    SG_H1F_TE_CHUNKED_SEEN = 1u << 2, /* chunked appeared (twice is an error) */
    SG_H1F_CONN_CLOSE = 1u << 3,
    SG_H1F_CONN_KEEP_ALIVE = 1u << 4,
    SG_H1F_EVENT_STREAM = 1u << 5, /* Content-Type is text/event-stream */
};

/* The Keep-Alive header's parameters (-1: not given); the response head carries them (sg_h1_resp_head_t). */
typedef struct {
    int32_t max;
    int32_t timeout_s;
} sg_h1_keep_alive_t;

/*
 * Parse one header field line ("Name: value") and fold what matters into *content_length (-1 until a
 * Content-Length is seen), *flags and, when ka is not NULL, the Keep-Alive parameters (start them at -1).
 * Returns 0 or SG_EPROTO: obs-fold, a bad name, control characters in the value, a malformed or conflicting
 * Content-Length, chunked applied twice. A Keep-Alive value that does not parse is ignored.
 */
int sg_h1_header_line(const char *line, size_t len, int64_t *content_length, uint32_t *flags, sg_h1_keep_alive_t *ka);

/* "HTTP/1.x" exactly (8 bytes at s, len >= 8). Returns x (0..9) or SG_EPROTO. */
int sg_h1_version(const char *s, size_t len);

/*
 * A chunk-size line: hex digits, optional whitespace, optional ";extension" (ignored). Returns 0 with *size
 * set, or SG_EPROTO (no digits, junk, or a size that does not fit in 64 bits).
 */
int sg_h1_chunk_size(const char *line, size_t len, uint64_t *size);

/* Largest chunk-size line we buffer (extensions included); longer is SG_ETOOBIG. */
#define SG_H1_MAX_CHUNK_LINE 4096

#endif
