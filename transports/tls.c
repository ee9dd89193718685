/*
 * TLS over memory buffers with wolfSSL (see sg_tls.h). wolfSSL's I/O callbacks read from the bytes the caller fed
 * and append to our output buffers; nothing here touches a socket.
 */
#include "sg_tls.h"

#include <wolfssl/options.h>

#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/random.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IN_MAX (4u << 20)
#define CA_FILE_MAX ((size_t)64 << 20) /* a --cacert file or the system bundle, read whole */
#define OUT_MAX (16u << 20)
#define MAX_SESSIONS 64

typedef struct {
    uint8_t *p;
    size_t off, len, cap; /* live bytes are p[off, len) */
} buf_t;

typedef struct {
    char *target;
    WOLFSSL_SESSION *sess;
} sess_slot_t;

struct sg_tls_ctx {
    WOLFSSL_CTX *wctx;
    bool server;
    bool insecure;
    bool alpn_required;
    char *alpn;     /* comma list, as wolfSSL_UseALPN wants it; NULL when none */
    char note[320]; /* client: trust anchors left out for their dates ("" when none), for the start-up check to say */
    sess_slot_t sessions[MAX_SESSIONS];
    size_t n_sessions;
};

struct sg_tls_conn {
    sg_tls_ctx_t *ctx;
    WOLFSSL *ssl;
    char *host;
    char *target;
    buf_t in;
    buf_t out[2]; /* out[front] is sent first (and may be in flight); new ciphertext goes to the other */
    int front;
    bool eof;
    bool done; /* handshake complete */
    bool session_saved;
    bool failed;
    char alpn[64];
    char err[256];
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void init_wolfssl(void)
{
    init_rc = wolfSSL_Init() == WOLFSSL_SUCCESS ? 0 : -1;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static bool buf_append(buf_t *b, const void *data, size_t n, size_t max)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (b->len + n > b->cap) {
        if (b->off) { /* slide the live bytes down before growing */
            memmove(b->p, b->p + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->len + n > max)
            return false;
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 16384;
            while (cap < b->len + n)
                cap *= 2;
            if (cap > max)
                cap = max;
            uint8_t *p = realloc(b->p, cap);
            if (!p)
                return false;
            b->p = p;
            b->cap = cap;
        }
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return true;
}

/* wolfSSL asks for input: hand it what was fed, or say "would block" (or "closed" after the TCP EOF). */
static int io_recv(WOLFSSL *ssl, char *dst, int sz, void *arg)
{
    (void)ssl;
    sg_tls_conn_t *c = arg;
    size_t avail = c->in.len - c->in.off;
    if (!avail)
        return c->eof ? WOLFSSL_CBIO_ERR_CONN_CLOSE : WOLFSSL_CBIO_ERR_WANT_READ;
    size_t n = avail < (size_t)sz ? avail : (size_t)sz;
    memcpy(dst, c->in.p + c->in.off, n);
    c->in.off += n;
    return (int)n;
}

/* wolfSSL has ciphertext to send: keep it for the caller, behind any region that is in flight. */
static int io_send(WOLFSSL *ssl, char *src, int sz, void *arg)
{
    (void)ssl;
    sg_tls_conn_t *c = arg;
    /* Always behind the front buffer, which may be in flight: order is front, then back. */
    buf_t *b = &c->out[!c->front];
    if (!buf_append(b, src, (size_t)sz, OUT_MAX)) {
        snprintf(c->err, sizeof c->err, "TLS: more than %u bytes of output waiting to be sent", OUT_MAX);
        return WOLFSSL_CBIO_ERR_GENERAL;
    }
    return sz;
}

static int load_key_pair(WOLFSSL_CTX *wctx, const sg_tls_opts_t *o, char *err, size_t errlen)
{
    if (o->cert_pem) {
        if (wolfSSL_CTX_use_certificate_chain_buffer(wctx, (const unsigned char *)o->cert_pem,
                                                     (long)strlen(o->cert_pem)) != WOLFSSL_SUCCESS ||
            wolfSSL_CTX_use_PrivateKey_buffer(wctx, (const unsigned char *)o->key_pem, (long)strlen(o->key_pem),
                                              WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS ||
            wolfSSL_CTX_check_private_key(wctx) != WOLFSSL_SUCCESS) {
            set_err(err, errlen, "cannot use the PEM certificate and key given in memory");
            return SG_EINVAL;
        }
        return 0;
    }
    if (wolfSSL_CTX_use_certificate_chain_file(wctx, o->cert_file) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "cannot load the certificate from %s (PEM expected)", o->cert_file);
        return SG_EINVAL;
    }
    if (wolfSSL_CTX_use_PrivateKey_file(wctx, o->key_file, WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "cannot load the private key from %s (PEM expected)", o->key_file);
        return SG_EINVAL;
    }
    if (wolfSSL_CTX_check_private_key(wctx) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "the private key in %s does not match the certificate in %s", o->key_file, o->cert_file);
        return SG_EINVAL;
    }
    return 0;
}

/* Server ALPN: the first of our protocols the client offers (ours are in preference order); none is no ALPN,
 * not a failure, so clients without ALPN or with other protocols still connect. */
static int alpn_select(WOLFSSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
    (void)ssl;
    const char *ours = ((sg_tls_ctx_t *)arg)->alpn;
    while (*ours) {
        size_t n = strcspn(ours, ",");
        for (unsigned i = 0; i < inlen; i += 1u + in[i])
            if (in[i] == n && i + 1u + n <= inlen && memcmp(in + i + 1, ours, n) == 0) {
                *out = in + i + 1;
                *outlen = (unsigned char)n;
                return 0; /* SSL_TLSEXT_ERR_OK */
            }
        ours += n + (ours[n] == ',');
    }
    return 3; /* SSL_TLSEXT_ERR_NOACK: wolfSSL goes on without ALPN */
}

/* "CN=... expired on 2026-11-27 06:46 UTC" or "... is not valid until ...": why x is not a trust anchor now; false
 * while it is within its dates. */
static bool anchor_out_of_date(WOLFSSL_X509 *x, char *why, size_t cap)
{
    bool expired = wolfSSL_X509_cmp_current_time(wolfSSL_X509_get_notAfter(x)) < 0;
    bool early = !expired && wolfSSL_X509_cmp_current_time(wolfSSL_X509_get_notBefore(x)) > 0;
    if (!expired && !early)
        return false;
    char subject[160] = "";
    if (!wolfSSL_X509_NAME_oneline(wolfSSL_X509_get_subject_name(x), subject, (int)sizeof subject))
        snprintf(subject, sizeof subject, "(no subject)");
    struct tm tm;
    char when[40] = "an unreadable date";
    if (wolfSSL_ASN1_TIME_to_tm(expired ? wolfSSL_X509_get_notAfter(x) : wolfSSL_X509_get_notBefore(x), &tm) ==
        WOLFSSL_SUCCESS)
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(why, cap, "\"%s\" %s %s", subject, expired ? "expired on" : "is not valid until", when);
    return true;
}

/*
 * Trust the PEM certificates in path that are within their dates now. wolfSSL 5.5 loads an expired CA certificate
 * and then trusts a server presenting that very certificate, where curl and OpenSSL refuse it ("certificate has
 * expired"): an out-of-date anchor is left out here, so the server's certificate is then not trusted. strict (a
 * --cacert file): a block that is not a certificate fails, and so does a file with no anchor in date; the system
 * store skips what wolfSSL cannot parse. note: what was left out, for the start-up check. 0 or SG_EINVAL with err.
 */
static int load_anchors(sg_tls_ctx_t *ctx, const char *path, bool strict, char *err, size_t errlen)
{
    static const char begin[] = "-----BEGIN CERTIFICATE-----", end[] = "-----END CERTIFICATE-----";
    /* the whole file, however long (a bundle cut at a buffer's size would drop its last anchors without a word) */
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, errlen, "cannot load CA certificates from %s (%s)", path, strerror(errno));
        return SG_EINVAL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    bool failed = false;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            char *bigger = cap < CA_FILE_MAX ? realloc(text, cap = cap ? cap * 2 : 65536) : NULL;
            if (!bigger) {
                failed = true;
                break;
            }
            text = bigger;
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    failed = failed || ferror(f);
    fclose(f);
    if (failed || len == 0) {
        free(text);
        set_err(err, errlen, "cannot load CA certificates from %s (%s)", path,
                len == 0 && !failed  ? "empty"
                : cap >= CA_FILE_MAX ? "over 64 MiB"
                                     : "not readable");
        return SG_EINVAL;
    }
    text[len] = '\0';
    unsigned loaded = 0, dated = 0, bad = 0;
    char first[256] = "";
    for (char *p = strstr(text, begin); p; p = strstr(p, begin)) {
        char *e = strstr(p, end);
        if (!e)
            break;
        e += sizeof end - 1;
        int n = (int)(e - p);
        WOLFSSL_X509 *x = wolfSSL_X509_load_certificate_buffer((const unsigned char *)p, n, WOLFSSL_FILETYPE_PEM);
        char why[256];
        if (!x) {
            bad++;
        } else if (anchor_out_of_date(x, why, sizeof why)) {
            if (!dated++)
                snprintf(first, sizeof first, "%s", why);
        } else if (wolfSSL_CTX_load_verify_buffer(ctx->wctx, (const unsigned char *)p, n, WOLFSSL_FILETYPE_PEM) ==
                   WOLFSSL_SUCCESS) {
            loaded++;
        } else {
            bad++;
        }
        wolfSSL_X509_free(x);
        p = e;
    }
    free(text);
    if (strict && bad) {
        set_err(err, errlen, "cannot load CA certificates from %s (%u of them not a PEM certificate wolfSSL reads)",
                path, bad);
        return SG_EINVAL;
    }
    if (!loaded) {
        if (dated)
            set_err(err, errlen,
                    "no certificate in %s is valid now: %s%s (curl and OpenSSL refuse it too: renew it, or -k to skip "
                    "verification)",
                    path, first, dated > 1 ? ", and the rest likewise" : "");
        else
            set_err(err, errlen, "cannot load CA certificates from %s (PEM expected)", path);
        return SG_EINVAL;
    }
    if (dated) { /* a long path or subject is cut, the note stays one line */
        int nlen = snprintf(ctx->note, sizeof ctx->note,
                            "%u of the %u CA certificates in %s are out of date and not trusted: %s%s", dated,
                            dated + loaded, path, first, dated > 1 ? ", ..." : "");
        (void)nlen;
    }
    return 0;
}

static int ctx_new(const sg_tls_opts_t *o, bool server, sg_tls_ctx_t **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_once(&init_once, init_wolfssl);
    if (init_rc) {
        set_err(err, errlen, "wolfSSL failed to initialise");
        return SG_EINVAL;
    }
    if (!o->cert_file != !o->key_file || !o->cert_pem != !o->key_pem) {
        set_err(err, errlen, "a TLS certificate needs its private key: give both or neither");
        return SG_EINVAL;
    }
    if (server && !o->cert_file && !o->cert_pem) {
        set_err(err, errlen, "a TLS server needs a certificate and a private key");
        return SG_EINVAL;
    }
    sg_tls_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return SG_ENOMEM;
    ctx->server = server;
    ctx->insecure = !server && o->insecure;
    ctx->alpn_required = !server && o->alpn_required;
    int rc = SG_EINVAL;
    WOLFSSL_METHOD *method;
    if (o->tls12_only)
        method = server ? wolfTLSv1_2_server_method() : wolfTLSv1_2_client_method();
    else
        method = server ? wolfSSLv23_server_method() : wolfSSLv23_client_method();
    ctx->wctx = wolfSSL_CTX_new(method);
    if (!ctx->wctx) {
        rc = SG_ENOMEM;
        set_err(err, errlen, "wolfSSL_CTX_new failed");
        goto fail;
    }
    if (wolfSSL_CTX_SetMinVersion(ctx->wctx, WOLFSSL_TLSV1_2) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "wolfSSL refuses TLS 1.2 as the minimum version");
        goto fail;
    }
    const char *ciphers = o->ciphers ? o->ciphers : SG_TLS_DEFAULT_CIPHERS;
    if (wolfSSL_CTX_set_cipher_list(ctx->wctx, ciphers) != WOLFSSL_SUCCESS) {
        set_err(err, errlen, "wolfSSL accepts none of the ciphers \"%s\"", ciphers);
        goto fail;
    }
    if (o->alpn && *o->alpn) {
        if (strlen(o->alpn) > 255) {
            set_err(err, errlen, "ALPN list too long: %s", o->alpn);
            goto fail;
        }
        ctx->alpn = strdup(o->alpn);
        if (!ctx->alpn) {
            rc = SG_ENOMEM;
            goto fail;
        }
    }
    if ((o->cert_file || o->cert_pem) && (rc = load_key_pair(ctx->wctx, o, err, errlen)) != 0)
        goto fail;
    rc = SG_EINVAL;
    if (server) {
        if (ctx->alpn)
            wolfSSL_CTX_set_alpn_select_cb(ctx->wctx, alpn_select, ctx);
        if (o->cafile) {
            if (wolfSSL_CTX_load_verify_locations(ctx->wctx, o->cafile, NULL) != WOLFSSL_SUCCESS) {
                set_err(err, errlen, "cannot load CA certificates from %s (PEM expected)", o->cafile);
                goto fail;
            }
            wolfSSL_CTX_set_verify(ctx->wctx, WOLFSSL_VERIFY_PEER | WOLFSSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        } else {
            wolfSSL_CTX_set_verify(ctx->wctx, WOLFSSL_VERIFY_NONE, NULL);
        }
    } else if (ctx->insecure) {
        wolfSSL_CTX_set_verify(ctx->wctx, WOLFSSL_VERIFY_NONE, NULL);
    } else {
        /* The system bundle may hold a certificate wolfSSL cannot parse: skip those rather than trust nothing. */
        if (o->cafile) {
            if (load_anchors(ctx, o->cafile, true, err, errlen) != 0)
                goto fail;
        } else if (load_anchors(ctx, SG_TLS_SYSTEM_CA_FILE, false, err, errlen) != 0) {
            set_err(err, errlen, "cannot load the system CA certificates from %s (give --cacert FILE or -k)",
                    SG_TLS_SYSTEM_CA_FILE);
            goto fail;
        }
        wolfSSL_CTX_set_verify(ctx->wctx, WOLFSSL_VERIFY_PEER, NULL);
    }
    *out = ctx;
    return 0;
fail:
    sg_tls_ctx_free(ctx);
    return rc;
}

const char *sg_tls_ctx_note(const sg_tls_ctx_t *ctx)
{
    return ctx->note;
}

int sg_tls_client_ctx_new(const sg_tls_opts_t *opts, sg_tls_ctx_t **out, char *err, size_t errlen)
{
    return ctx_new(opts, false, out, err, errlen);
}

int sg_tls_server_ctx_new(const sg_tls_opts_t *opts, sg_tls_ctx_t **out, char *err, size_t errlen)
{
    return ctx_new(opts, true, out, err, errlen);
}

void sg_tls_thread_done(void)
{
#ifdef FP_ECC
    wc_ecc_fp_free();
#endif
}

void sg_tls_ctx_forget_sessions(sg_tls_ctx_t *ctx)
{
    for (size_t i = 0; i < ctx->n_sessions; i++) {
        free(ctx->sessions[i].target);
        wolfSSL_SESSION_free(ctx->sessions[i].sess);
    }
    ctx->n_sessions = 0;
}

void sg_tls_ctx_free(sg_tls_ctx_t *ctx)
{
    if (!ctx)
        return;
    sg_tls_ctx_forget_sessions(ctx);
    if (ctx->wctx)
        wolfSSL_CTX_free(ctx->wctx);
    free(ctx->alpn);
    free(ctx);
}

static sess_slot_t *find_session(sg_tls_ctx_t *ctx, const char *target)
{
    for (size_t i = 0; i < ctx->n_sessions; i++)
        if (strcmp(ctx->sessions[i].target, target) == 0)
            return &ctx->sessions[i];
    return NULL;
}

/*
 * Keep conn's session for its target once it can resume. TLS 1.3: only once application data was read, so the
 * server's NewSessionTicket (sent before it) was too. Between a resumed handshake's end and the new ticket, the
 * session pairs the old ticket with the new resumption secret: a connection resuming from that fails its PSK
 * binder (OpenSSL: "binder does not verify", alert illegal_parameter).
 */
static void save_session(sg_tls_conn_t *c, bool after_data)
{
    if (c->ctx->server || c->session_saved || !c->done || c->failed)
        return;
    if (!after_data && wolfSSL_version(c->ssl) == TLS1_3_VERSION)
        return;
    WOLFSSL_SESSION *s = wolfSSL_get1_session(c->ssl);
    if (!s)
        return;
    if (!wolfSSL_SESSION_is_resumable(s)) {
        wolfSSL_SESSION_free(s);
        return;
    }
    sg_tls_ctx_t *ctx = c->ctx;
    sess_slot_t *slot = find_session(ctx, c->target);
    if (slot) {
        wolfSSL_SESSION_free(slot->sess);
        slot->sess = s;
    } else {
        char *t = ctx->n_sessions < MAX_SESSIONS ? strdup(c->target) : NULL;
        if (!t) {
            wolfSSL_SESSION_free(s);
            return;
        }
        ctx->sessions[ctx->n_sessions++] = (sess_slot_t){.target = t, .sess = s};
    }
    c->session_saved = true;
}

static bool is_ip_literal(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

int sg_tls_conn_new(sg_tls_ctx_t *ctx, const char *host, const char *target, sg_tls_conn_t **out)
{
    *out = NULL;
    if (!ctx->server && (!host || !*host))
        return SG_EINVAL;
    sg_tls_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return SG_ENOMEM;
    c->ctx = ctx;
    int rc = SG_ENOMEM;
    c->ssl = wolfSSL_new(ctx->wctx);
    if (!c->ssl)
        goto fail;
    wolfSSL_SSLSetIORecv(c->ssl, io_recv);
    wolfSSL_SSLSetIOSend(c->ssl, io_send);
    wolfSSL_SetIOReadCtx(c->ssl, c);
    wolfSSL_SetIOWriteCtx(c->ssl, c);
    rc = SG_EINVAL;
    if (ctx->alpn && !ctx->server) {
        /* A client that requires ALPN checks after the handshake, where it can say which protocol was missing. */
        if (wolfSSL_UseALPN(c->ssl, ctx->alpn, (unsigned)strlen(ctx->alpn), WOLFSSL_ALPN_CONTINUE_ON_MISMATCH) !=
            WOLFSSL_SUCCESS)
            goto fail;
    }
    if (!ctx->server) {
        rc = SG_ENOMEM;
        c->host = strdup(host);
        c->target = strdup(target ? target : host);
        if (!c->host || !c->target)
            goto fail;
        rc = SG_EINVAL;
        bool ip = is_ip_literal(host);
        /* SNI carries names only (RFC 6066); an IP literal is still checked against the certificate. */
        if (!ip && wolfSSL_UseSNI(c->ssl, WOLFSSL_SNI_HOST_NAME, host, (unsigned short)strlen(host)) != WOLFSSL_SUCCESS)
            goto fail;
        if (!ctx->insecure && wolfSSL_check_domain_name(c->ssl, host) != WOLFSSL_SUCCESS)
            goto fail;
        sess_slot_t *slot = find_session(ctx, c->target);
        if (slot)
            (void)wolfSSL_set_session(c->ssl, slot->sess); /* a refused session just means a full handshake */
    }
    *out = c;
    return 0;
fail:
    sg_tls_conn_free(c);
    return rc;
}

void sg_tls_conn_free(sg_tls_conn_t *c)
{
    if (!c)
        return;
    if (c->ssl) {
        save_session(c, false);
        wolfSSL_free(c->ssl);
    }
    free(c->host);
    free(c->target);
    free(c->in.p);
    free(c->out[0].p);
    free(c->out[1].p);
    free(c);
}

int sg_tls_feed(sg_tls_conn_t *c, const void *cipher, size_t len)
{
    if (!len)
        return 0;
    return buf_append(&c->in, cipher, len, IN_MAX) ? 0 : SG_ETOOBIG;
}

void sg_tls_feed_eof(sg_tls_conn_t *c)
{
    c->eof = true;
}

void sg_tls_out_peek(sg_tls_conn_t *c, const uint8_t **ptr, size_t *len)
{
    buf_t *f = &c->out[c->front];
    if (f->off == f->len) { /* nothing in flight: what accumulated behind becomes the front */
        f->off = f->len = 0;
        c->front = !c->front;
        f = &c->out[c->front];
    }
    *ptr = f->p ? f->p + f->off : NULL; /* no buffer yet: nothing to send */
    *len = f->len - f->off;
}

void sg_tls_out_consume(sg_tls_conn_t *c, size_t n)
{
    buf_t *f = &c->out[c->front];
    size_t avail = f->len - f->off;
    f->off += n < avail ? n : avail;
}

size_t sg_tls_out_pending(const sg_tls_conn_t *c)
{
    return (c->out[0].len - c->out[0].off) + (c->out[1].len - c->out[1].off);
}

static const char *alert_name(int code)
{
    switch (code) {
    case 0:
        return "close_notify";
    case 10:
        return "unexpected_message";
    case 20:
        return "bad_record_mac";
    case 22:
        return "record_overflow";
    case 40:
        return "handshake_failure";
    case 42:
        return "bad_certificate";
    case 43:
        return "unsupported_certificate";
    case 44:
        return "certificate_revoked";
    case 45:
        return "certificate_expired";
    case 46:
        return "certificate_unknown";
    case 47:
        return "illegal_parameter";
    case 48:
        return "unknown_ca";
    case 49:
        return "access_denied";
    case 50:
        return "decode_error";
    case 51:
        return "decrypt_error";
    case 70:
        return "protocol_version";
    case 71:
        return "insufficient_security";
    case 80:
        return "internal_error";
    case 90:
        return "user_canceled";
    case 109:
        return "missing_extension";
    case 110:
        return "unsupported_extension";
    case 112:
        return "unrecognized_name";
    case 116:
        return "certificate_required";
    case 120:
        return "no_application_protocol";
    default:
        return "unknown alert";
    }
}

/* Turn wolfSSL's error for the last call into one line a user can act on; returns SG_ETLS. */
static int fail(sg_tls_conn_t *c, int werr, const char *during)
{
    c->failed = true;
    if (c->err[0]) /* io_send already said what went wrong */
        return SG_ETLS;
    const char *who = c->ctx->server ? "client" : "server";
    switch (werr) {
    case ASN_NO_SIGNER_E:
        snprintf(c->err, sizeof c->err,
                 "TLS: the %s certificate is not trusted: no known CA signed it (give --cacert FILE, or -k to skip "
                 "verification)",
                 who);
        break;
    case ASN_SELF_SIGNED_E:
        snprintf(c->err, sizeof c->err,
                 "TLS: the %s certificate is self-signed and not trusted (give --cacert FILE, or -k to skip "
                 "verification)",
                 who);
        break;
    case ASN_AFTER_DATE_E:
        snprintf(c->err, sizeof c->err, "TLS: the %s certificate has expired", who);
        break;
    case ASN_BEFORE_DATE_E:
        snprintf(c->err, sizeof c->err, "TLS: the %s certificate is not valid yet", who);
        break;
    case DOMAIN_NAME_MISMATCH:
    case IPADDR_MISMATCH:
        snprintf(c->err, sizeof c->err, "TLS: the server certificate does not match the host name \"%s\"",
                 c->host ? c->host : "");
        break;
    case FATAL_ERROR: {
        WOLFSSL_ALERT_HISTORY h;
        memset(&h, 0, sizeof h);
        (void)wolfSSL_get_alert_history(c->ssl, &h);
        snprintf(c->err, sizeof c->err, "TLS: the %s sent the fatal alert %s (%d) %s", who, alert_name(h.last_rx.code),
                 h.last_rx.code, during);
        break;
    }
    case WOLFSSL_ERROR_SYSCALL:
    case SOCKET_PEER_CLOSED_E:
    case SOCKET_ERROR_E:
        snprintf(c->err, sizeof c->err, "TLS: the %s closed the connection %s%s", who, during,
                 c->done ? " without close_notify" : "");
        break;
    default: {
        char msg[WOLFSSL_MAX_ERROR_SZ];
        wolfSSL_ERR_error_string_n((unsigned long)werr, msg, sizeof msg);
        snprintf(c->err, sizeof c->err, "TLS: %s %s (wolfSSL error %d)", msg, during, werr);
        break;
    }
    }
    return SG_ETLS;
}

int sg_tls_handshake(sg_tls_conn_t *c)
{
    if (c->done)
        return 0;
    if (c->failed)
        return SG_ETLS;
    int ret = c->ctx->server ? wolfSSL_accept(c->ssl) : wolfSSL_connect(c->ssl);
    if (ret != WOLFSSL_SUCCESS) {
        int werr = wolfSSL_get_error(c->ssl, ret);
        if (werr == WOLFSSL_ERROR_WANT_READ || werr == WOLFSSL_ERROR_WANT_WRITE)
            return c->eof && c->in.off == c->in.len ? fail(c, SOCKET_PEER_CLOSED_E, "during the handshake") : 1;
        return fail(c, werr, "during the handshake");
    }
    c->done = true;
    char *name = NULL;
    unsigned short size = 0;
    if (wolfSSL_ALPN_GetProtocol(c->ssl, &name, &size) == WOLFSSL_SUCCESS && name && size < sizeof c->alpn) {
        memcpy(c->alpn, name, size);
        c->alpn[size] = '\0';
    }
    if (c->ctx->alpn_required && !c->alpn[0]) {
        c->failed = true;
        snprintf(c->err, sizeof c->err, "TLS: the server selected none of the ALPN protocols \"%s\"", c->ctx->alpn);
        return SG_ETLS;
    }
    save_session(c, false);
    return 0;
}

int sg_tls_write(sg_tls_conn_t *c, const void *plain, size_t len)
{
    if (c->failed || !c->done)
        return c->failed ? SG_ETLS : SG_EINVAL;
    if (len > INT32_MAX)
        return SG_ETOOBIG;
    if (!len)
        return 0;
    int ret = wolfSSL_write(c->ssl, plain, (int)len);
    if (ret <= 0) {
        int werr = wolfSSL_get_error(c->ssl, ret);
        if (c->err[0] && strstr(c->err, "waiting to be sent")) {
            c->failed = true;
            return SG_ETOOBIG;
        }
        return fail(c, werr, "while writing");
    }
    return ret;
}

int sg_tls_read(sg_tls_conn_t *c, void *buf, size_t cap)
{
    if (c->failed || !c->done)
        return c->failed ? SG_ETLS : SG_EINVAL;
    if (!cap)
        return 0;
    int ret = wolfSSL_read(c->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
    save_session(c, ret > 0); /* a TLS 1.3 ticket arrives after the handshake, read here */
    if (ret > 0)
        return ret;
    int werr = wolfSSL_get_error(c->ssl, ret);
    if (werr == WOLFSSL_ERROR_ZERO_RETURN)
        return SG_ETLS_CLOSED;
    if (werr == WOLFSSL_ERROR_WANT_READ || werr == WOLFSSL_ERROR_WANT_WRITE)
        return c->eof && c->in.off == c->in.len ? fail(c, SOCKET_PEER_CLOSED_E, "while reading") : 0;
    return fail(c, werr, "while reading");
}

int sg_tls_close(sg_tls_conn_t *c)
{
    if (c->failed || !c->done)
        return c->failed ? SG_ETLS : 0;
    save_session(c, false);
    int ret = wolfSSL_shutdown(c->ssl);
    if (ret == WOLFSSL_SUCCESS || ret == WOLFSSL_SHUTDOWN_NOT_DONE)
        return 0;
    int werr = wolfSSL_get_error(c->ssl, ret);
    if (werr == WOLFSSL_ERROR_WANT_READ || werr == WOLFSSL_ERROR_WANT_WRITE)
        return 0;
    return fail(c, werr, "while closing");
}

const char *sg_tls_error(const sg_tls_conn_t *c)
{
    return c->err;
}

const char *sg_tls_alpn(const sg_tls_conn_t *c)
{
    return c->alpn;
}

bool sg_tls_resumed(const sg_tls_conn_t *c)
{
    return c->done && wolfSSL_session_reused(c->ssl) == 1;
}

const char *sg_tls_cipher(const sg_tls_conn_t *c)
{
    const char *n = c->done ? wolfSSL_get_cipher_name(c->ssl) : NULL;
    return n ? n : "";
}

const char *sg_tls_version(const sg_tls_conn_t *c)
{
    const char *v = c->done ? wolfSSL_get_version(c->ssl) : NULL;
    return v ? v : "";
}

/* DER of: SEQUENCE { [2] "localhost", [7] 127.0.0.1 } (GeneralNames for subjectAltName) */
static const unsigned char alt_names_der[] = {0x30, 0x11, 0x82, 0x09, 'l',  'o',  'c',  'a',  'l', 'h',
                                              'o',  's',  't',  0x87, 0x04, 0x7f, 0x00, 0x00, 0x01};

static char *der_to_pem(const unsigned char *der, int der_len, int type)
{
    int n = wc_DerToPem(der, (word32)der_len, NULL, 0, type); /* the size it needs */
    if (n <= 0)
        return NULL;
    char *pem = malloc((size_t)n + 1);
    if (!pem)
        return NULL;
    n = wc_DerToPem(der, (word32)der_len, (byte *)pem, (word32)n, type);
    if (n <= 0) {
        free(pem);
        return NULL;
    }
    pem[n] = '\0';
    return pem;
}

int sg_tls_self_signed(char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    *cert_pem = *key_pem = NULL;
    pthread_once(&init_once, init_wolfssl);
    WC_RNG rng;
    ecc_key key;
    Cert *cert = calloc(1, sizeof *cert);
    unsigned char *der = malloc(4096);
    int rc = SG_EINVAL;
    bool rng_ok = false, key_ok = false;
    const char *step = "out of memory";
    if (!cert || !der)
        goto out;
    step = "random number generator";
    if (wc_InitRng(&rng) != 0)
        goto out;
    rng_ok = true;
    step = "ECC key generation";
    if (wc_ecc_init(&key) != 0)
        goto out;
    key_ok = true;
    if (wc_ecc_make_key(&rng, 32, &key) != 0)
        goto out;
    step = "certificate";
    if (wc_InitCert(cert) != 0)
        goto out;
    snprintf(cert->subject.commonName, CTC_NAME_SIZE, "localhost");
    snprintf(cert->subject.org, CTC_NAME_SIZE, "surge mock (self-signed)");
    cert->sigType = CTC_SHA256wECDSA;
    cert->daysValid = 365;
    cert->isCA = 0;
    memcpy(cert->altNames, alt_names_der, sizeof alt_names_der);
    cert->altNamesSz = (int)sizeof alt_names_der;
    int n = wc_MakeCert_ex(cert, der, 4096, ECC_TYPE, &key, &rng);
    if (n <= 0)
        goto out;
    n = wc_SignCert_ex(cert->bodySz, cert->sigType, der, 4096, ECC_TYPE, &key, &rng);
    if (n <= 0)
        goto out;
    *cert_pem = der_to_pem(der, n, CERT_TYPE);
    step = "private key encoding";
    n = wc_EccKeyToDer(&key, der, 4096);
    if (n <= 0 || !*cert_pem)
        goto out;
    *key_pem = der_to_pem(der, n, ECC_PRIVATEKEY_TYPE);
    if (*key_pem)
        rc = 0;
out:
    if (rc) {
        set_err(err, errlen, "cannot make a self-signed certificate: %s failed", step);
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
    }
    if (key_ok)
        wc_ecc_free(&key);
    if (rng_ok)
        wc_FreeRng(&rng);
    free(cert);
    free(der);
    return rc;
}
