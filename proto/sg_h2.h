/*
 * HTTP/2 client sessions (sans-I/O, over nghttp2): bytes received go in with sg_h2_feed, bytes to send come
 * out with sg_h2_drain, and what happened on each stream comes back through callbacks. No sockets, no clocks.
 *
 * Requests are the workload's pre-rendered HTTP/1.1 requests turned once into an HTTP/2 form (sg_h2_req_t:
 * header fields with the pseudo-headers first, body in place), so a submit copies nothing but the body into
 * DATA frames.
 *
 * Flow control never throttles a response: the session advertises a 16 MiB stream window and a 1 GiB
 * connection window, and returns consumed bytes to the peer as it goes (nghttp2's automatic WINDOW_UPDATE).
 * The peer's SETTINGS_MAX_CONCURRENT_STREAMS is respected: sg_h2_can_submit says when one more stream fits.
 *
 * Streams end in on_close with the HTTP/2 error code and whether the whole response arrived. A stream the peer
 * refused (RST_STREAM REFUSED_STREAM, or above a GOAWAY's last-stream-id) reports retryable: the server did not
 * process it, and the request may be sent again on another connection.
 */
#ifndef SG_H2_H
#define SG_H2_H

#include "sg_common.h"

#include <nghttp2/nghttp2.h>
#include <sys/types.h>

#define SG_H2_LOCAL_STREAM_WINDOW (16u << 20)
#define SG_H2_LOCAL_CONN_WINDOW (1u << 30)

/* An HTTP/2 request: header fields (pseudo-headers first, lowercase names) and a body, built once. */
typedef struct {
    nghttp2_nv *nv;
    size_t n_nv;
    const char *body; /* points into the HTTP/1.1 bytes it was made from */
    size_t body_len;
    char *store; /* lowercased names */
} sg_h2_req_t;

/*
 * The HTTP/2 form of a complete HTTP/1.1 request (as sg_h1_write_request renders it): the request line gives
 * :method and :path, Host gives :authority, :scheme is the one given; connection-specific headers (Connection,
 * Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, TE other than "trailers") are dropped. The body
 * is referenced, not copied: bytes must outlive out. 0, SG_EINVAL (not a request we can convert) or SG_ENOMEM.
 */
SG_WUR int sg_h2_req_from_h1(const char *bytes, size_t len, const char *scheme, sg_h2_req_t *out);
void sg_h2_req_free(sg_h2_req_t *r);

typedef struct {
    /* Response head (final, non-1xx): status and whether Content-Type is text/event-stream. */
    int (*on_head)(void *ud, void *stream_ud, int status, bool event_stream);
    /* Response body bytes, in place (valid only during the call). A negative return resets the stream. */
    int (*on_data)(void *ud, void *stream_ud, const char *data, size_t len);
    /*
     * The stream is over. error_code: HTTP/2 error code (0 for a normal end); complete: the peer ended the
     * stream after a response head (the response is whole); retryable: the peer did not process it (refused, or
     * above a GOAWAY's last-stream-id) and no response byte arrived. Called exactly once per submitted stream,
     * also when the session is freed with streams open (error_code NGHTTP2_CANCEL, nothing retryable).
     */
    void (*on_close)(void *ud, void *stream_ud, uint32_t error_code, bool complete, bool retryable);
    /* The peer sent GOAWAY: streams above last_stream_id will close retryable; no new stream may be submitted. */
    void (*on_goaway)(void *ud, int32_t last_stream_id, uint32_t error_code);
    /*
     * Optional (gRPC reads grpc-status and grpc-message from it): every field of the final response head and of
     * the trailers, as received (names lower case), before on_head for the head; trailer is true for fields of a
     * HEADERS frame after the head (a Trailers-Only response is one head block with END_STREAM: trailer false).
     * Valid only during the call. A negative return resets the stream.
     */
    int (*on_field)(void *ud, void *stream_ud, const char *name, size_t name_len, const char *value, size_t value_len,
                    bool trailer);
    /*
     * Optional: the stream's HEADERS were just serialized by sg_h2_drain, so the request leaves with that drain. A
     * submitted stream can wait in the session before this (behind the peer's MAX_CONCURRENT_STREAMS, which is
     * only known once its SETTINGS arrive, or while the caller still has an earlier drain on the wire).
     */
    void (*on_sent)(void *ud, void *stream_ud);
} sg_h2_cb_t;

typedef struct sg_h2 sg_h2_t;

/* A client session; its preface and SETTINGS are queued for sg_h2_drain. NULL on OOM. */
sg_h2_t *sg_h2_client_new(const sg_h2_cb_t *cb, void *ud);
/* Free the session; every open stream gets on_close (NGHTTP2_CANCEL, not complete) first. */
void sg_h2_free(sg_h2_t *s);

/* A new stream for req; stream_ud comes back in the callbacks. The stream id (> 0), or -EAGAIN when the
 * session cannot take one more (see sg_h2_can_submit), SG_ENOMEM, SG_EPROTO. */
SG_WUR int32_t sg_h2_submit(sg_h2_t *s, const sg_h2_req_t *req, void *stream_ud);
/* The most bytes sg_h2_submit_patched replaces. */
#define SG_H2_PATCH_MAX 96
/* sg_h2_submit, with the body's bytes [patch_off, patch_off + patch_len) sent as patch's (copied: at most
 * SG_H2_PATCH_MAX bytes, inside the body) instead of the request's: one request table, each stream its own words. */
SG_WUR int32_t sg_h2_submit_patched(sg_h2_t *s, const sg_h2_req_t *req, void *stream_ud, size_t patch_off,
                                    const void *patch, size_t patch_len);
/* Reset a stream we no longer want (RST_STREAM CANCEL); its on_close follows, from this call or a later one. */
void sg_h2_cancel(sg_h2_t *s, int32_t stream_id);

/* Feed received bytes (all are consumed). 0, or SG_EPROTO (the connection is broken: drop it). */
SG_WUR int sg_h2_feed(sg_h2_t *s, const char *data, size_t len);
/* Append every byte the session wants to send to *buf (grown with realloc). 0, SG_ENOMEM or SG_EPROTO. */
SG_WUR int sg_h2_drain(sg_h2_t *s, char **buf, size_t *len, size_t *cap);
/* The same for any nghttp2 session (the mock's server sessions use it too). */
SG_WUR int sg_h2_session_drain(nghttp2_session *ng, char **buf, size_t *len, size_t *cap);

/* The nghttp2 callbacks a session of ours (client or server) registers. */
typedef struct {
    nghttp2_on_begin_headers_callback begin_headers;
    nghttp2_on_header_callback header;
    nghttp2_on_frame_recv_callback frame_recv;
    nghttp2_on_data_chunk_recv_callback data_chunk;
    nghttp2_on_stream_close_callback stream_close;
    nghttp2_on_frame_send_callback frame_send; /* may be NULL */
    nghttp2_error_callback2 error;             /* may be NULL: nghttp2's text for an error it found */
} sg_h2_fns_t;

/* Create a client or server nghttp2 session with these callbacks and user data, queue our SETTINGS (iv) and
 * raise the connection's receive window to conn_window. 0, or SG_ENOMEM (nothing is left allocated). */
SG_WUR int sg_h2_session_open(nghttp2_session **ng, bool server, const sg_h2_fns_t *fns, void *ud,
                              const nghttp2_settings_entry *iv, size_t niv, int32_t conn_window);
bool sg_h2_want_write(const sg_h2_t *s);

/* One more stream fits: no GOAWAY either way, and fewer open streams than the peer's limit. */
bool sg_h2_can_submit(const sg_h2_t *s);
/* Streams open (submitted and not closed). */
uint32_t sg_h2_open_streams(const sg_h2_t *s);
/* Of those, the streams whose HEADERS have gone out (sent and not closed): what the peer sees open. */
uint32_t sg_h2_sent_streams(const sg_h2_t *s);
/* The peer's SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 assumes 100 until the peer's SETTINGS arrive). */
uint32_t sg_h2_peer_max_streams(const sg_h2_t *s);
/* The peer's first SETTINGS frame has been received: its stream limit is known. */
bool sg_h2_peer_settings_seen(const sg_h2_t *s);
/* A GOAWAY was received (or the session ended): no new streams. */
bool sg_h2_going_away(const sg_h2_t *s);
/*
 * The session reads nothing more: nghttp2 ended it (it found a protocol error in what the peer sent, e.g. an
 * HTTP/1.1 answer where the server's SETTINGS belong, and queued a GOAWAY; mem_recv still reports success), or
 * everything is done after a GOAWAY. Streams still open on a closed session can never finish: the caller drops
 * the connection rather than wait for them.
 */
bool sg_h2_closed(const sg_h2_t *s);
/* The first sentence of nghttp2's account of the last protocol error it found in the peer's bytes ("" when none).
 * Valid until the session is freed. */
const char *sg_h2_error_text(const sg_h2_t *s);

/*
 * The first bytes a server sent after our client connection preface (h2c with prior knowledge, or h2 after ALPN),
 * classified for the start-up check: an HTTP/2 server's first frame is its SETTINGS (RFC 9113, 3.4), so anything
 * else, or nothing, means the port does not speak HTTP/2.
 */
typedef enum {
    SG_H2_REPLY_MORE,   /* too few bytes to tell: read more, or call again with final once nothing more comes */
    SG_H2_REPLY_H2,     /* a SETTINGS frame */
    SG_H2_REPLY_NOT_H2, /* something else; `what` says what (an HTTP/1.x status line, a TLS record, bytes) */
} sg_h2_reply_t;
/*
 * p, n: every byte received so far (n may be 0 only with final). final: no more will come (the peer closed, the
 * wait is over, or the caller's buffer is full). what: a description for the user (always filled for NOT_H2).
 */
sg_h2_reply_t sg_h2_classify_reply(const uint8_t *p, size_t n, bool final, char *what, size_t what_len);

/* The name of an HTTP/2 error code ("REFUSED_STREAM", ...). */
const char *sg_h2_error_name(uint32_t code);

#endif
