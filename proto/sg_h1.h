/*
 * HTTP/1.1, sans-I/O: a response parser (client side), a request parser (mock server side) and the request
 * writer. Nothing here makes a syscall or reads a clock. Parsers are fed whatever bytes arrived, in any split;
 * they keep the small amount of state they need (a partial header or chunk-size line is copied into an internal
 * buffer with a hard cap) and hand body bytes to the caller in place, pointing into the fed buffer.
 *
 * Threading: a parser belongs to one connection and is used by one thread at a time.
 */
#ifndef SG_H1_H
#define SG_H1_H

#include "sg_common.h"

#include <sys/types.h>

#define SG_H1_MAX_HEAD 16384 /* cap on a response/request head (status line + headers) */

/* ---------- response parser ---------- */

typedef struct {
    int status;             /* e.g. 200 */
    int minor_version;      /* 1 for HTTP/1.1, 0 for HTTP/1.0 */
    int64_t content_length; /* -1 when absent */
    bool chunked;           /* Transfer-Encoding: chunked */
    bool keep_alive;        /* false on "Connection: close" or HTTP/1.0 without keep-alive */
    bool event_stream;      /* Content-Type is text/event-stream */
    bool body_until_close;  /* neither length nor chunked: body ends when the peer closes */
    /*
     * The Keep-Alive header's hints (RFC 2068 19.7.1.1; HTTP/1.1 left it to practice), -1 when absent or not a
     * number, as sent: what they mean for reuse is the engine's call. max: how many requests the server lets the
     * connection carry (cpp-httplib, llama-server's, repeats its fixed total on every response; Apache counts
     * down those left after this one). timeout: seconds the server keeps an idle connection open. A malformed
     * Keep-Alive header is ignored: it is a hint, never a reason to fail a response. With several values the
     * smallest wins.
     */
    int32_t ka_max;
    int32_t ka_timeout_s;
} sg_h1_resp_head_t;

/* Callbacks: return 0 to go on, a negative value to stop parsing; that value is returned from feed. */
typedef struct {
    int (*on_head)(void *ud, const sg_h1_resp_head_t *head);
    int (*on_body)(void *ud, const char *data, size_t len); /* in place; valid only during the call */
    int (*on_complete)(void *ud);                           /* the whole response has been received */
} sg_h1_resp_cb_t;

/* Fields are private; the struct is public so connections can embed it without a malloc. */
typedef struct {
    int state;
    sg_h1_resp_head_t head;
    uint64_t remaining; /* bytes left in the current Content-Length body or chunk */
    char *line;         /* partial head/chunk-size line carried between feeds; lazily allocated */
    size_t line_len;
    size_t line_cap;
    size_t head_bytes; /* bytes of head seen so far, for the cap (1xx heads and trailers count too) */
    bool is_head_request;
    uint32_t hflags; /* header facts seen so far (SG_H1F_* in h1_parse.h) */
} sg_h1_resp_t;

/*
 * Lifecycle: init once per connection; feed until on_complete; then sg_h1_resp_reset before the next
 * response. Callbacks may be NULL (cb itself too: the bytes are parsed and dropped).
 *
 * Feeding a parser whose response already completed, without a reset, returns SG_EPROTO (a caller bug, or a
 * peer that sent bytes we did not ask for); feeding it 0 bytes returns 0. After any negative return (a parse
 * error or a callback's stop) the parser stays failed: feed and eof return SG_EPROTO until sg_h1_resp_reset.
 */
void sg_h1_resp_init(sg_h1_resp_t *p);
/* Prepare for the next response on a kept-alive connection; keeps the allocated line buffer. Clears the
 * HEAD-request mark. */
void sg_h1_resp_reset(sg_h1_resp_t *p);
void sg_h1_resp_free(sg_h1_resp_t *p);
/*
 * The next response answers a HEAD request, so it has no body whatever its Content-Length says. Call after
 * init/reset, before feeding that response.
 */
void sg_h1_resp_set_head_request(sg_h1_resp_t *p, bool is_head);
/*
 * Feed bytes. Returns the number of bytes consumed, which is len unless the response completed inside this
 * buffer (then it is the number of bytes up to the end of that response; the rest belongs to whatever comes
 * next and the caller decides what to do with it). Negative on error: SG_EPROTO (malformed), SG_ETOOBIG
 * (head over SG_H1_MAX_HEAD, trailers over SG_H1_MAX_HEAD, or a chunk-size line too long), SG_ENOMEM (the
 * line buffer could not grow), or a callback's negative return.
 *
 * Exactly: on_complete is called at most once per feed, and the return value is then the offset just past
 * the response's last byte (the LF ending the chunked trailer section, or the last Content-Length byte, or
 * the blank line ending the head of a response without a body). 1xx interim responses (100 Continue, 103)
 * are consumed and skipped without any callback; 101 is SG_EPROTO (we never ask to switch protocols).
 *
 * Body framing (RFC 9112 6.3): HEAD requests, 204 and 304 have no body; then Transfer-Encoding whose final
 * coding is chunked; Transfer-Encoding with another final coding, or neither Transfer-Encoding nor
 * Content-Length, means read until close (head.body_until_close, and head.keep_alive is false); both
 * Transfer-Encoding and Content-Length is SG_EPROTO. Line endings are CRLF or a bare LF. on_body is called
 * with each run of body bytes as it lies in the fed buffer (chunk framing removed), never with len 0.
 */
SG_WUR ssize_t sg_h1_resp_feed(sg_h1_resp_t *p, const char *data, size_t len, const sg_h1_resp_cb_t *cb, void *ud);
/*
 * The peer closed the connection. Completes a read-until-close body (calls on_complete, returns 0 or the
 * callback's negative value); returns SG_EINCOMPLETE if the close came in the middle of a response, 0 if no
 * response had started or the last one completed.
 */
SG_WUR int sg_h1_resp_eof(sg_h1_resp_t *p, const sg_h1_resp_cb_t *cb, void *ud);
/*
 * True once any byte of a response has been consumed (so a close now is a truncated response); false again
 * once that response completed.
 */
bool sg_h1_resp_started(const sg_h1_resp_t *p);

/* ---------- request parser (for the mock server) ---------- */

typedef struct {
    sg_slice_t method;
    sg_slice_t path; /* request-target as sent, query included */
    sg_slice_t body; /* whole body (Content-Length or chunked, decoded) */
    bool keep_alive;
    int minor_version;
} sg_h1_request_t;

typedef struct {
    /* One call per complete request; slices are valid only during the call. */
    int (*on_request)(void *ud, const sg_h1_request_t *req);
} sg_h1_req_cb_t;

typedef struct {
    char *buf; /* accumulates a request that spans feeds; lazily allocated, capped at max_request */
    size_t len;
    size_t cap;
    size_t max_request;
    /* private */
    size_t scanned; /* how far into buf the search for the end of the head has got */
    size_t need;    /* bytes buf must hold before the buffered request can be complete; 0 when unknown */
    bool failed;    /* a negative return happened: the connection must be dropped */
} sg_h1_req_t;

/* max_request: hard cap on head+body of one request (e.g. 8 MiB), counted on the wire (chunk framing too). */
void sg_h1_req_init(sg_h1_req_t *p, size_t max_request);
void sg_h1_req_free(sg_h1_req_t *p);
/*
 * Feed bytes; calls on_request for every complete request (pipelining works). Returns 0 (all bytes consumed
 * or buffered) or negative: SG_EPROTO, SG_ETOOBIG, SG_ENOMEM, or a callback's negative return. After a
 * negative return every later feed returns SG_EPROTO: close the connection.
 *
 * Requests lying whole in the fed buffer are parsed in place (slices point into data); only a request that
 * straddles feeds is copied into buf. Empty lines before a request line are skipped (RFC 9112 2.2). A request
 * with Transfer-Encoding whose final coding is not chunked, or with both Transfer-Encoding and
 * Content-Length, is SG_EPROTO; without either it has no body. Heads over SG_H1_MAX_HEAD are SG_ETOOBIG.
 */
SG_WUR int sg_h1_req_feed(sg_h1_req_t *p, const char *data, size_t len, const sg_h1_req_cb_t *cb, void *ud);

/* ---------- request writer ---------- */

typedef struct {
    const char *method;         /* "POST" */
    const char *host;           /* Host header value, e.g. "127.0.0.1:8000" */
    const char *path;           /* "/v1/chat/completions" */
    const char *const *headers; /* extra header lines "Name: value", NULL-terminated list, may be NULL */
    const char *content_type;   /* NULL: no Content-Type */
    const char *accept;         /* NULL: no Accept */
    const char *body;
    size_t body_len;
} sg_h1_req_spec_t;

/*
 * Render a complete request (head + body) into a new malloc'd buffer; the caller frees it. Returns the length,
 * or SG_EINVAL if a header line contains CR/LF or lacks "Name:" form, or SG_ENOMEM.
 */
SG_WUR ssize_t sg_h1_write_request(const sg_h1_req_spec_t *spec, char **out);

#endif
