/*
 * gRPC framing and metadata, sans-I/O. See sg_grpc.h.
 */
#include "sg_grpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const status_names[] = {
    "OK",        "CANCELLED",       "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS",  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",    "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED",
};

const char *sg_grpc_status_name(int code)
{
    if (code < 0 || (size_t)code >= SG_ARRAY_LEN(status_names))
        return "UNKNOWN_STATUS";
    return status_names[code];
}

/* ---------- framing ---------- */

void sg_grpc_prefix(uint8_t out[SG_GRPC_PREFIX_LEN], uint32_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

int sg_grpc_frame(const void *msg, size_t len, uint8_t **out, size_t *out_len)
{
    if (len > UINT32_MAX)
        return SG_ETOOBIG;
    uint8_t *b = malloc(SG_GRPC_PREFIX_LEN + len + (len == 0));
    if (!b)
        return SG_ENOMEM;
    sg_grpc_prefix(b, (uint32_t)len);
    if (len)
        memcpy(b + SG_GRPC_PREFIX_LEN, msg, len);
    *out = b;
    *out_len = SG_GRPC_PREFIX_LEN + len;
    return 0;
}

void sg_grpc_dec_init(sg_grpc_dec_t *d, uint32_t max_msg)
{
    memset(d, 0, sizeof(*d));
    d->max_msg = max_msg ? max_msg : SG_GRPC_DEFAULT_MAX_MSG;
}

void sg_grpc_dec_reset(sg_grpc_dec_t *d)
{
    d->prefix_len = 0;
    d->in_msg = false;
    d->msg_len = 0;
    d->len = 0;
    d->err[0] = '\0';
}

void sg_grpc_dec_free(sg_grpc_dec_t *d)
{
    free(d->buf);
    d->buf = NULL;
    d->len = d->cap = 0;
}

bool sg_grpc_dec_pending(const sg_grpc_dec_t *d)
{
    return d->prefix_len > 0 || d->in_msg;
}

/* The prefix is complete in d->prefix: check it and start the message. */
static int start_message(sg_grpc_dec_t *d)
{
    uint8_t flag = d->prefix[0];
    uint32_t n = (uint32_t)d->prefix[1] << 24 | (uint32_t)d->prefix[2] << 16 | (uint32_t)d->prefix[3] << 8 |
                 (uint32_t)d->prefix[4];
    if (flag == 1) {
        snprintf(d->err, sizeof(d->err), "compressed gRPC message (%u bytes), but surge asked for no compression", n);
        return SG_EPROTO;
    }
    if (flag != 0) {
        snprintf(d->err, sizeof(d->err), "bad gRPC message prefix: flag byte 0x%02x (want 0 or 1)", flag);
        return SG_EPROTO;
    }
    if (n > d->max_msg) {
        snprintf(d->err, sizeof(d->err), "gRPC message of %u bytes is over the %u-byte limit", n, d->max_msg);
        return SG_ETOOBIG;
    }
    d->prefix_len = 0;
    d->in_msg = true;
    d->msg_len = n;
    d->len = 0;
    return 0;
}

static int deliver(sg_grpc_dec_t *d, const char *msg, size_t len, const sg_grpc_dec_cb_t *cb, void *ud)
{
    d->in_msg = false;
    d->len = 0;
    d->messages++;
    sg_slice_t s = {msg ? msg : "", len};
    return cb->on_message(ud, s);
}

int sg_grpc_dec_feed(sg_grpc_dec_t *d, const void *data, size_t len, const sg_grpc_dec_cb_t *cb, void *ud)
{
    const char *p = data;
    const char *end = p + len;
    int rc;
    while (p < end) {
        if (!d->in_msg) {
            /* A prefix, whole in place when nothing of it is pending and 5 bytes are here. */
            size_t take = SG_GRPC_PREFIX_LEN - d->prefix_len;
            if ((size_t)(end - p) < take)
                take = (size_t)(end - p);
            memcpy(d->prefix + d->prefix_len, p, take);
            d->prefix_len = (uint8_t)(d->prefix_len + take);
            p += take;
            if (d->prefix_len < SG_GRPC_PREFIX_LEN)
                return 0;
            if ((rc = start_message(d)) < 0)
                return rc;
            if (d->msg_len == 0) {
                if ((rc = deliver(d, NULL, 0, cb, ud)) < 0)
                    return rc;
                continue;
            }
            if (p == end)
                return 0;
        }
        size_t avail = (size_t)(end - p);
        if (d->len == 0 && avail >= d->msg_len) {
            /* The whole message lies in this buffer: no copy. */
            const char *msg = p;
            p += d->msg_len;
            if ((rc = deliver(d, msg, d->msg_len, cb, ud)) < 0)
                return rc;
            continue;
        }
        size_t need = d->msg_len - d->len;
        size_t take = avail < need ? avail : need;
        if (d->cap < d->msg_len) {
            size_t cap = d->cap ? d->cap : 256;
            while (cap < d->msg_len)
                cap *= 2;
            char *nb = realloc(d->buf, cap);
            if (!nb)
                return SG_ENOMEM;
            d->buf = nb;
            d->cap = cap;
        }
        memcpy(d->buf + d->len, p, take);
        d->len += take;
        p += take;
        if (d->len < d->msg_len)
            return 0;
        if ((rc = deliver(d, d->buf, d->msg_len, cb, ud)) < 0)
            return rc;
    }
    return 0;
}

/* ---------- request headers ---------- */

static void hdr(sg_grpc_hdr_t *h, const char *name, const char *value)
{
    h->name = name;
    h->name_len = strlen(name);
    h->value = value;
    h->value_len = strlen(value);
}

size_t sg_grpc_request_headers(sg_grpc_hdr_t out[SG_GRPC_REQ_HDRS_MAX], const char *scheme, const char *authority,
                               const char *path, const char *user_agent, const char *timeout)
{
    size_t n = 0;
    hdr(&out[n++], ":method", "POST");
    hdr(&out[n++], ":scheme", scheme);
    hdr(&out[n++], ":path", path);
    hdr(&out[n++], ":authority", authority);
    hdr(&out[n++], "content-type", "application/grpc");
    hdr(&out[n++], "te", "trailers");
    if (user_agent)
        hdr(&out[n++], "user-agent", user_agent);
    if (timeout)
        hdr(&out[n++], "grpc-timeout", timeout);
    return n;
}

/* ---------- grpc-timeout ---------- */

int sg_grpc_timeout_format(int64_t ns, char out[SG_GRPC_TIMEOUT_MAX])
{
    static const struct {
        int64_t ns;
        char unit;
    } units[] = {
        {1, 'n'}, {1000, 'u'}, {1000000, 'm'}, {1000000000, 'S'}, {60000000000LL, 'M'}, {3600000000000LL, 'H'},
    };
    if (ns <= 0)
        return SG_EINVAL;
    for (size_t i = 0; i < SG_ARRAY_LEN(units); i++) {
        int64_t v = ns / units[i].ns + (ns % units[i].ns != 0);
        if (v <= 99999999 || i + 1 == SG_ARRAY_LEN(units)) {
            if (v > 99999999)
                v = 99999999; /* over 11 years: the largest value there is */
            return snprintf(out, SG_GRPC_TIMEOUT_MAX, "%lld%c", (long long)v, units[i].unit);
        }
    }
    return SG_EINVAL; /* not reached */
}

int sg_grpc_timeout_parse(const char *v, size_t len, int64_t *ns)
{
    if (len < 2 || len > 9)
        return SG_EPROTO;
    int64_t n = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return SG_EPROTO;
        n = n * 10 + (v[i] - '0');
    }
    int64_t mul;
    switch (v[len - 1]) {
    case 'n':
        mul = 1;
        break;
    case 'u':
        mul = 1000;
        break;
    case 'm':
        mul = 1000000;
        break;
    case 'S':
        mul = 1000000000;
        break;
    case 'M':
        mul = 60000000000LL;
        break;
    case 'H':
        mul = 3600000000000LL;
        break;
    default:
        return SG_EPROTO;
    }
    *ns = n > INT64_MAX / mul ? INT64_MAX : n * mul; /* 99999999H does not fit in int64 */
    return 0;
}

/* ---------- grpc-message ---------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t sg_grpc_message_decode(const char *in, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        int hi, lo;
        if (c == '%' && i + 2 < len && (hi = hexval(in[i + 1])) >= 0 && (lo = hexval(in[i + 2])) >= 0) {
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (n + 1 < cap)
            out[n] = c;
        n++;
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

size_t sg_grpc_message_encode(const char *in, size_t len, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        char e[3];
        size_t k = 1;
        e[0] = (char)c;
        if (c < 0x20 || c > 0x7E || c == '%') {
            e[0] = '%';
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            k = 3;
        }
        for (size_t j = 0; j < k; j++, n++)
            if (n + 1 < cap)
                out[n] = e[j];
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

/* ---------- response metadata ---------- */

void sg_grpc_meta_init(sg_grpc_meta_t *m)
{
    memset(m, 0, sizeof(*m));
    m->grpc_status = -1;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* A decimal number of 1..digits digits, no sign or spaces. */
static int parse_uint(const char *v, size_t len, size_t digits, int *out)
{
    if (len == 0 || len > digits)
        return SG_EPROTO;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return SG_EPROTO;
        n = n * 10 + (v[i] - '0');
    }
    *out = n;
    return 0;
}

int sg_grpc_meta_header(sg_grpc_meta_t *m, const char *name, size_t name_len, const char *value, size_t value_len)
{
    if (name_is(name, name_len, ":status"))
        return parse_uint(value, value_len, 3, &m->http_status);
    if (name_is(name, name_len, "grpc-status"))
        return parse_uint(value, value_len, 9, &m->grpc_status);
    if (name_is(name, name_len, "grpc-message")) {
        m->message_len = sg_grpc_message_decode(value, value_len, m->message, sizeof(m->message));
        return 0;
    }
    if (name_is(name, name_len, "content-type")) {
        static const char ct[] = "application/grpc";
        size_t n = sizeof(ct) - 1;
        m->content_type_seen = true;
        m->content_type_grpc =
            value_len >= n && strncasecmp(value, ct, n) == 0 && (value_len == n || value[n] == '+' || value[n] == ';');
        size_t k = value_len < sizeof(m->content_type) - 1 ? value_len : sizeof(m->content_type) - 1;
        memcpy(m->content_type, value, k);
        m->content_type[k] = '\0';
        return 0;
    }
    return 0;
}

sg_grpc_call_result_t sg_grpc_meta_result(const sg_grpc_meta_t *m, char *err, size_t errlen)
{
    const char *ct = m->content_type_seen ? m->content_type : "(none)";
    if ((m->http_status != 200 && m->grpc_status < 0) || (m->content_type_seen && !m->content_type_grpc)) {
        snprintf(err, errlen, "HTTP status %d with content-type %s: not a gRPC server", m->http_status, ct);
        return SG_GRPC_CALL_NOT_GRPC;
    }
    if (m->grpc_status < 0) {
        if (!m->content_type_seen) {
            snprintf(err, errlen, "HTTP status %d without content-type or grpc-status: not a gRPC server",
                     m->http_status);
            return SG_GRPC_CALL_NOT_GRPC;
        }
        snprintf(err, errlen, "the call ended without grpc-status");
        return SG_GRPC_CALL_NO_STATUS;
    }
    if (m->grpc_status != SG_GRPC_OK) {
        bool cut = m->message_len >= sizeof(m->message);
        if (m->message_len)
            snprintf(err, errlen, "grpc-status %d %s: %s%s", m->grpc_status, sg_grpc_status_name(m->grpc_status),
                     m->message, cut ? "..." : "");
        else
            snprintf(err, errlen, "grpc-status %d %s", m->grpc_status, sg_grpc_status_name(m->grpc_status));
        return SG_GRPC_CALL_STATUS;
    }
    return SG_GRPC_CALL_OK;
}
