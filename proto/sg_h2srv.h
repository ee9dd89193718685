/*
 * HTTP/2 server sessions (sans-I/O, over nghttp2), for surge mock: bytes received go in with sg_h2srv_feed
 * (the client connection preface first), bytes to send come out with sg_h2srv_drain. Each complete request
 * (END_STREAM seen) comes back once through on_request with its method, path and whole body; the owner answers
 * with sg_h2srv_respond and supplies the body through on_read, which may say "nothing yet" (SG_EAGAIN) until
 * sg_h2srv_resume. No sockets, no clocks.
 *
 * Windows are large (16 MiB per stream, 1 GiB per connection) so request bodies never wait on WINDOW_UPDATEs;
 * SETTINGS_MAX_CONCURRENT_STREAMS is advertised as given.
 */
#ifndef SG_H2SRV_H
#define SG_H2SRV_H

#include "sg_common.h"

#include <nghttp2/nghttp2.h>
#include <sys/types.h>

#define SG_H2SRV_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define SG_H2SRV_PREFACE_LEN 24

typedef struct {
    /*
     * A whole request on stream id; slices are valid only during the call. Set the stream's user data with
     * sg_h2srv_set_stream_ud (from here or later). A negative return resets the stream (INTERNAL_ERROR).
     */
    int (*on_request)(void *ud, int32_t id, sg_slice_t method, sg_slice_t path, sg_slice_t body);
    /*
     * Up to len body bytes of the response on a stream with user data stream_ud, copied into buf: the count
     * (set *eof with the last ones), or -EAGAIN when none are ready yet (sg_h2srv_resume wakes it).
     */
    ssize_t (*on_read)(void *ud, void *stream_ud, uint8_t *buf, size_t len, bool *eof);
    /* A stream with user data is over (answered, reset by either side, or the session freed). Once per stream. */
    void (*on_close)(void *ud, void *stream_ud, uint32_t error_code);
} sg_h2srv_cb_t;

typedef struct sg_h2srv sg_h2srv_t;

/* A server session advertising max_streams concurrent streams; its SETTINGS are queued. NULL on OOM. */
sg_h2srv_t *sg_h2srv_new(const sg_h2srv_cb_t *cb, void *ud, uint32_t max_streams, size_t max_body);
/* Free the session; streams with user data get on_close (NGHTTP2_CANCEL) first. */
void sg_h2srv_free(sg_h2srv_t *s);

void sg_h2srv_set_stream_ud(sg_h2srv_t *s, int32_t id, void *stream_ud);

/*
 * Response head: :status, content-type (NULL: none), content-length when content_length >= 0, and
 * "cache-control: no-cache" when no_cache; a body follows through on_read unless has_body is false.
 * 0, SG_ENOMEM or SG_EPROTO (the stream is gone).
 */
SG_WUR int sg_h2srv_respond(sg_h2srv_t *s, int32_t id, int status, const char *content_type, int64_t content_length,
                            bool no_cache, bool has_body);
/* A header or trailer field (lowercase name; the value need not be NUL-terminated). */
typedef struct {
    const char *name;
    const char *value;
    size_t value_len;
} sg_h2srv_field_t;

/*
 * Response head: :status and the given fields (copied), then a body through on_read when has_body; without a
 * body the HEADERS frame ends the stream (a gRPC Trailers-Only answer). 0, SG_ENOMEM or SG_EPROTO.
 */
SG_WUR int sg_h2srv_respond_fields(sg_h2srv_t *s, int32_t id, int status, const sg_h2srv_field_t *f, size_t n,
                                   bool has_body);
/*
 * Trailers for stream id (copied): sent in a HEADERS frame with END_STREAM after the body's last byte, instead of
 * ending the stream with the last DATA frame (gRPC's grpc-status). Set them before on_read reports eof.
 * 0, SG_ENOMEM or SG_EPROTO (no such stream).
 */
SG_WUR int sg_h2srv_set_trailers(sg_h2srv_t *s, int32_t id, const sg_h2srv_field_t *f, size_t n);

/* More body bytes are ready for stream id. */
void sg_h2srv_resume(sg_h2srv_t *s, int32_t id);
/* RST_STREAM with error_code; on_close follows. */
void sg_h2srv_reset(sg_h2srv_t *s, int32_t id, uint32_t error_code);

/*
 * GOAWAY naming the last stream processed. NO_ERROR is graceful: the streams up to it go on, later ones are
 * refused, and the session is done once they are answered. Any other code ends the session once the GOAWAY is
 * sent (its streams are lost). 0, SG_ENOMEM or SG_EPROTO.
 */
SG_WUR int sg_h2srv_goaway(sg_h2srv_t *s, uint32_t error_code);
/* Feed received bytes (all are consumed). 0, or SG_EPROTO / SG_ENOMEM (drain the GOAWAY, then close). */
SG_WUR int sg_h2srv_feed(sg_h2srv_t *s, const char *data, size_t len);
/* Append every byte the session wants to send to *buf (grown with realloc). 0, SG_ENOMEM or SG_EPROTO. */
SG_WUR int sg_h2srv_drain(sg_h2srv_t *s, char **buf, size_t *len, size_t *cap);
bool sg_h2srv_want_write(const sg_h2srv_t *s);
/* The session is over (GOAWAY exchanged, or an error): close the connection once drained. */
bool sg_h2srv_done(const sg_h2srv_t *s);

#endif
