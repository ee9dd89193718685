/*
 * gRPC over HTTP/2, the parts that are bytes only (sans-I/O): message framing, the request headers of a call,
 * the response metadata (headers and trailers: :status, content-type, grpc-status, grpc-message) and the
 * grpc-timeout value of a deadline. The HTTP/2 session itself lives elsewhere; it hands DATA payloads to the
 * decoder and header fields to sg_grpc_meta_header().
 *
 * A message on the wire is a 5-byte prefix, then the message: one flag byte (0: plain, 1: compressed with the
 * call's grpc-encoding) and the message length as a 32-bit big-endian number. surge never asks for compression
 * (it sends no grpc-accept-encoding), so a compressed message from the peer is a protocol error.
 */
#ifndef SG_GRPC_H
#define SG_GRPC_H

#include "sg_common.h"

#define SG_GRPC_PREFIX_LEN 5
/* Default cap on one received message (grpc's own default receive limit is 4 MiB). */
#define SG_GRPC_DEFAULT_MAX_MSG (4u << 20)
/* grpc-message bytes kept after percent-decoding; longer messages are cut (and marked with "..."). */
#define SG_GRPC_MESSAGE_MAX 512
/* A grpc-timeout value: up to 8 digits and a unit letter, NUL-terminated. */
#define SG_GRPC_TIMEOUT_MAX 10

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum {
    SG_GRPC_OK = 0,
    SG_GRPC_CANCELLED = 1,
    SG_GRPC_UNKNOWN = 2,
    SG_GRPC_INVALID_ARGUMENT = 3,
    SG_GRPC_DEADLINE_EXCEEDED = 4,
    SG_GRPC_NOT_FOUND = 5,
    SG_GRPC_ALREADY_EXISTS = 6,
    SG_GRPC_PERMISSION_DENIED = 7,
    SG_GRPC_RESOURCE_EXHAUSTED = 8,
    SG_GRPC_FAILED_PRECONDITION = 9,
    SG_GRPC_ABORTED = 10,
    SG_GRPC_OUT_OF_RANGE = 11,
    SG_GRPC_UNIMPLEMENTED = 12,
    SG_GRPC_INTERNAL = 13,
    SG_GRPC_UNAVAILABLE = 14,
    SG_GRPC_DATA_LOSS = 15,
    SG_GRPC_UNAUTHENTICATED = 16,
};

/* "UNAVAILABLE" for 14; "UNKNOWN_STATUS" outside 0..16. Static storage. */
const char *sg_grpc_status_name(int code);

/* ---------- framing ---------- */

/* The prefix of a plain (uncompressed) message of len bytes. */
void sg_grpc_prefix(uint8_t out[SG_GRPC_PREFIX_LEN], uint32_t len);

/*
 * A whole frame (prefix + msg) into a malloc'd buffer: *out, *out_len. Returns 0, SG_ETOOBIG (len over
 * UINT32_MAX) or SG_ENOMEM.
 */
SG_WUR int sg_grpc_frame(const void *msg, size_t len, uint8_t **out, size_t *out_len);

typedef struct {
    /* Called once per whole message, in order. The slice is valid only during the call: it points into the
     * fed buffer when the message lies whole inside it, else into the decoder's own buffer. Return 0 to go
     * on, negative to stop (feed returns it; reset the decoder before feeding it again). */
    int (*on_message)(void *ud, sg_slice_t msg);
} sg_grpc_dec_cb_t;

typedef struct {
    uint32_t max_msg;                   /* hard cap on one message's length */
    uint8_t prefix[SG_GRPC_PREFIX_LEN]; /* private: a prefix split across feeds */
    uint8_t prefix_len;                 /* private: its bytes so far */
    bool in_msg;                        /* private: the prefix is done; need more message bytes */
    uint32_t msg_len;                   /* private: length of the message being read */
    char *buf;                          /* private: a message split across feeds */
    size_t len, cap;                    /* private */
    uint64_t messages;                  /* messages delivered since init */
    char err[96];                       /* why the last feed failed with SG_EPROTO or SG_ETOOBIG */
} sg_grpc_dec_t;

/* max_msg 0 means SG_GRPC_DEFAULT_MAX_MSG. */
void sg_grpc_dec_init(sg_grpc_dec_t *d, uint32_t max_msg);
/* Forget a partial message (next call on the same decoder); keeps the buffer. */
void sg_grpc_dec_reset(sg_grpc_dec_t *d);
void sg_grpc_dec_free(sg_grpc_dec_t *d);
/*
 * Feed DATA bytes in any split. Returns 0; SG_EPROTO (a compressed message, or a flag byte other than 0 or 1),
 * SG_ETOOBIG (a message over max_msg), with d->err saying which; SG_ENOMEM; or a callback's negative return.
 * After any error the decoder must be reset before it is fed again.
 */
SG_WUR int sg_grpc_dec_feed(sg_grpc_dec_t *d, const void *data, size_t len, const sg_grpc_dec_cb_t *cb, void *ud);
/* True when the stream ended inside a message (a prefix or message bytes are pending): the call is truncated. */
bool sg_grpc_dec_pending(const sg_grpc_dec_t *d);

/* ---------- request headers ---------- */

typedef struct {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} sg_grpc_hdr_t;

#define SG_GRPC_REQ_HDRS_MAX 8

/*
 * The header block of a call, pseudo-headers first: :method POST, :scheme, :path, :authority, content-type
 * application/grpc, te trailers, user-agent, and grpc-timeout when timeout is not NULL (a value from
 * sg_grpc_timeout_format). Every string is borrowed: the block is valid while the arguments are. Returns the
 * number of fields written to out (at most SG_GRPC_REQ_HDRS_MAX).
 */
size_t sg_grpc_request_headers(sg_grpc_hdr_t out[SG_GRPC_REQ_HDRS_MAX], const char *scheme, const char *authority,
                               const char *path, const char *user_agent, const char *timeout);

/*
 * grpc-timeout for a deadline ns from now: at most 8 digits and the finest unit that fits (n, u, m, S, M, H),
 * rounded up so the server never sees a shorter deadline than ours. Writes a NUL-terminated value and returns
 * its length; SG_EINVAL for ns <= 0.
 */
int sg_grpc_timeout_format(int64_t ns, char out[SG_GRPC_TIMEOUT_MAX]);
/* The other way (for servers): 1 to 8 digits and a unit. Returns 0 and *ns, or SG_EPROTO. */
SG_WUR int sg_grpc_timeout_parse(const char *v, size_t len, int64_t *ns);

/*
 * grpc-message is percent-encoded (every byte outside 0x20..0x7E, and '%', as %XX). Decodes into out (cap
 * bytes; the result is NUL-terminated and cut to cap - 1 bytes) and returns the decoded length before any cut.
 * A '%' not followed by two hex digits is kept as it is, as the gRPC spec asks of receivers.
 */
size_t sg_grpc_message_decode(const char *in, size_t len, char *out, size_t cap);
/* The encoding side (for servers and tests): writes at most cap - 1 bytes plus a NUL; returns the full length. */
size_t sg_grpc_message_encode(const char *in, size_t len, char *out, size_t cap);

/* ---------- response metadata: headers, then trailers (or one Trailers-Only block) ---------- */

typedef struct {
    int http_status;        /* :status; 0 until seen */
    int grpc_status;        /* grpc-status; -1 until seen */
    bool content_type_seen; /* a content-type field came */
    bool content_type_grpc; /* ... and it is application/grpc or application/grpc+... / ;... */
    char content_type[48];  /* the (cut) content-type value, for messages */
    size_t message_len;     /* grpc-message after decoding (may exceed what message holds) */
    char message[SG_GRPC_MESSAGE_MAX];
} sg_grpc_meta_t;

void sg_grpc_meta_init(sg_grpc_meta_t *m);
/*
 * One received header or trailer field (names are lower case in HTTP/2). Unknown fields are ignored. Returns 0,
 * or SG_EPROTO for a :status or grpc-status that is not a number in range.
 */
SG_WUR int sg_grpc_meta_header(sg_grpc_meta_t *m, const char *name, size_t name_len, const char *value,
                               size_t value_len);

typedef enum {
    SG_GRPC_CALL_OK = 0,    /* HTTP 200, gRPC content type, grpc-status 0 */
    SG_GRPC_CALL_STATUS,    /* the server ended the call with a grpc-status other than 0 */
    SG_GRPC_CALL_NOT_GRPC,  /* HTTP status other than 200, or no/other content-type: not a gRPC server */
    SG_GRPC_CALL_NO_STATUS, /* the stream ended without grpc-status (cut short, or not gRPC) */
} sg_grpc_call_result_t;

/*
 * Classify a finished call (the stream ended: END_STREAM seen) and write one line about it into err (not for
 * SG_GRPC_CALL_OK), e.g. "grpc-status 5 NOT_FOUND: Request for unknown model 'x'" or
 * "HTTP status 404 with content-type text/html: not a gRPC server".
 */
sg_grpc_call_result_t sg_grpc_meta_result(const sg_grpc_meta_t *m, char *err, size_t errlen);

#endif
