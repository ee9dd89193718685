/*
 * TLS as a sans-socket filter over wolfSSL: ciphertext in and out through memory buffers, never a socket.
 *
 * The ring does every recv and send. For each connection the caller:
 *   - feeds the bytes it received:            sg_tls_feed(conn, bytes, n)  (sg_tls_feed_eof() on a 0-byte recv)
 *   - drives the handshake:                   sg_tls_handshake(conn)       1 = in progress, 0 = done, <0 = failed
 *   - encrypts what it wants to send:         sg_tls_write(conn, plain, n)
 *   - decrypts what arrived:                  sg_tls_read(conn, buf, cap) until it returns 0
 *   - sends whatever ciphertext is pending:   sg_tls_out_peek(conn, &p, &n) ... send ... sg_tls_out_consume(conn, sent)
 * after every call that may produce output (handshake, write, read, close). sg_tls_out_peek() hands out a region
 * that stays valid and unchanged until the matching sg_tls_out_consume(), whatever else is called meanwhile, so
 * one send may be in flight on the ring while the connection keeps reading and writing.
 *
 * A context is owned by one thread (one per worker): it keeps the last resumable session per target and sets it
 * on new connections to that target, so reconnects resume instead of running a full handshake.
 *
 * Errors: SG_ETLS with one clear line from sg_tls_error(conn) (untrusted certificate, host-name mismatch, no ALPN
 * match, alerts, ...); SG_ETLS_CLOSED when the peer closed cleanly with close_notify.
 */
#ifndef SG_TLS_H
#define SG_TLS_H

#include "sg_common.h"

enum {
    SG_ETLS = -10100,        /* TLS failed on this connection: sg_tls_error() says why */
    SG_ETLS_CLOSED = -10101, /* the peer sent close_notify: no more plaintext will come */
};

/* ChaCha20-Poly1305 first: Debian's wolfSSL is built without AES-NI, where AES-GCM is several times slower. */
#define SG_TLS_DEFAULT_CIPHERS                                                                                         \
    "TLS13-CHACHA20-POLY1305-SHA256:TLS13-AES128-GCM-SHA256:TLS13-AES256-GCM-SHA384:"                                  \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:"                         \
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
#define SG_TLS_SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

typedef struct sg_tls_ctx sg_tls_ctx_t;
typedef struct sg_tls_conn sg_tls_conn_t;

/* What a context is made from. Strings are only read during sg_tls_*_ctx_new(); every field may be 0/NULL. */
typedef struct {
    /* client: CA certificates (PEM) to verify the server against; NULL = the system store (SG_TLS_SYSTEM_CA_FILE).
     * server: when set, clients must present a certificate signed by one of these. */
    const char *cafile;
    bool insecure;         /* client: no certificate or host-name verification at all (-k) */
    const char *cert_file; /* PEM chain: the client certificate (optional), or the server's (required) */
    const char *key_file;  /* PEM private key for cert_file; both or neither */
    const char *cert_pem;  /* instead of the files: the certificate chain and its key as PEM text (both or neither) */
    const char *key_pem;
    /* Comma-separated ALPN protocols, preferred first ("h2,http/1.1"). Client: offered. Server: accepted, the
     * server's order wins; a client offering none of them still connects, with no ALPN. */
    const char *alpn;
    bool alpn_required;  /* client: fail the handshake when the server selects none of alpn */
    const char *ciphers; /* wolfSSL cipher list; NULL = SG_TLS_DEFAULT_CIPHERS */
    bool tls12_only;     /* speak TLS 1.2 only (tests and benchmarks); otherwise TLS 1.3, or 1.2 if the peer must */
} sg_tls_opts_t;

/*
 * A self-signed certificate for a test server, made here with wolfCrypt (ECDSA P-256, SHA-256): CN=localhost,
 * subjectAltName DNS:localhost and IP:127.0.0.1, valid from a day ago for a year. *cert_pem and *key_pem are
 * malloc'd PEM text for sg_tls_opts_t's cert_pem/key_pem (the caller frees them). 0, or SG_EINVAL with a line in err.
 */
SG_WUR int sg_tls_self_signed(char **cert_pem, char **key_pem, char *err, size_t errlen);

/* A client (or server) context. On failure returns SG_EINVAL (or SG_ENOMEM) with one line in err; *out is NULL.
 * The caller frees it with sg_tls_ctx_free() after every connection made from it. */
SG_WUR int sg_tls_client_ctx_new(const sg_tls_opts_t *opts, sg_tls_ctx_t **out, char *err, size_t errlen);
SG_WUR int sg_tls_server_ctx_new(const sg_tls_opts_t *opts, sg_tls_ctx_t **out, char *err, size_t errlen);
void sg_tls_ctx_free(sg_tls_ctx_t *ctx);
/* A client context's note for the user: the CA certificates left out because they are out of date ("" when none). */
const char *sg_tls_ctx_note(const sg_tls_ctx_t *ctx);
/* Free what wolfCrypt keeps per thread (Debian builds it with FP_ECC: a fixed-point ECC cache in thread-local
 * storage, leaked at thread exit otherwise). Call at the end of every thread that ran TLS; harmless otherwise. */
void sg_tls_thread_done(void);
/* Forget the stored sessions (the next connection to every target runs a full handshake). */
void sg_tls_ctx_forget_sessions(sg_tls_ctx_t *ctx);

/*
 * A connection. Client: host is the server's name or IP literal, sent as SNI (names only) and checked against the
 * certificate unless insecure; target names the session slot ("host:port"; NULL = host): a stored session for the
 * target is offered for resumption. Server: host and target are ignored (NULL). Returns 0 or SG_ENOMEM/SG_EINVAL.
 * Free with sg_tls_conn_free(), which also stores the connection's session for its target when resumable.
 */
SG_WUR int sg_tls_conn_new(sg_tls_ctx_t *ctx, const char *host, const char *target, sg_tls_conn_t **out);
void sg_tls_conn_free(sg_tls_conn_t *conn);

/* Ciphertext received from the peer (copied). 0, or SG_ETOOBIG past 4 MiB not yet consumed. */
SG_WUR int sg_tls_feed(sg_tls_conn_t *conn, const void *cipher, size_t len);
/* The peer closed the TCP connection: once the fed bytes are used up, TLS calls fail instead of waiting. */
void sg_tls_feed_eof(sg_tls_conn_t *conn);

/* Ciphertext to send: *ptr and *len (len 0 when nothing is pending). The region stays valid until consume. */
void sg_tls_out_peek(sg_tls_conn_t *conn, const uint8_t **ptr, size_t *len);
/* n bytes of the peeked region were sent (n <= len); the rest comes first at the next peek. */
void sg_tls_out_consume(sg_tls_conn_t *conn, size_t n);
/* Bytes of ciphertext waiting to be sent (peeked or not). */
size_t sg_tls_out_pending(const sg_tls_conn_t *conn);

/* One handshake step over what was fed: 1 = needs more input (send what is pending, feed, call again), 0 = done
 * (also on every later call), SG_ETLS = failed (sg_tls_error()). */
SG_WUR int sg_tls_handshake(sg_tls_conn_t *conn);
/* Encrypt len bytes into the output (all of them, after the handshake). len, or SG_ETLS / SG_ETOOBIG past 16 MiB
 * of unsent output. */
SG_WUR int sg_tls_write(sg_tls_conn_t *conn, const void *plain, size_t len);
/* Decrypt into buf: bytes (> 0), 0 when the fed input holds no complete record (feed more), SG_ETLS_CLOSED after
 * close_notify, SG_ETLS on failure (including a TCP close without close_notify). Call until it returns <= 0. */
SG_WUR int sg_tls_read(sg_tls_conn_t *conn, void *buf, size_t cap);
/* Queue our close_notify in the output. 0 or SG_ETLS. */
SG_WUR int sg_tls_close(sg_tls_conn_t *conn);

/* The last failure, one line ("" when none). Valid until the connection is freed. */
const char *sg_tls_error(const sg_tls_conn_t *conn);
/* After the handshake: the protocol the server selected ("" when none), whether the session was resumed, the
 * cipher suite and the protocol version names. */
const char *sg_tls_alpn(const sg_tls_conn_t *conn);
bool sg_tls_resumed(const sg_tls_conn_t *conn);
const char *sg_tls_cipher(const sg_tls_conn_t *conn);
const char *sg_tls_version(const sg_tls_conn_t *conn);

#endif
