/*
 * --fault KIND[:ARGS][@FRACTION]: the mock's scripted faults (docs/mock.md#faults). This file only reads the
 * flag's value; mock_worker.c does the faults.
 */
#include "mock_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static const char *const names[SG_MOCK_FAULT_KINDS] = {
    [SG_MOCK_FAULT_NONE] = "none",
    [SG_MOCK_FAULT_RST] = "rst",
    [SG_MOCK_FAULT_STALL_WRITE] = "stall-write",
    [SG_MOCK_FAULT_CUT] = "cut",
    [SG_MOCK_FAULT_HALF_CLOSE] = "half-close",
    [SG_MOCK_FAULT_TRICKLE] = "trickle",
    [SG_MOCK_FAULT_BWCAP] = "bwcap",
    [SG_MOCK_FAULT_GOAWAY] = "goaway",
    [SG_MOCK_FAULT_CRASH] = "crash",
    [SG_MOCK_FAULT_STALL_READ] = "stall-read",
};

const char *sg_mock_fault_name(int kind)
{
    return kind > 0 && kind < SG_MOCK_FAULT_KINDS ? names[kind] : "none";
}

/* HTTP/2 error codes by their RFC 9113 names (lowercase, without _ERROR), or a number. */
static bool parse_code(const char *s, size_t n, int64_t *out)
{
    static const char *const codes[] = {"no",
                                        "protocol",
                                        "internal",
                                        "flow_control",
                                        "settings_timeout",
                                        "stream_closed",
                                        "frame_size",
                                        "refused_stream",
                                        "cancel",
                                        "compression",
                                        "connect",
                                        "enhance_your_calm",
                                        "inadequate_security",
                                        "http_1_1_required"};
    for (size_t i = 0; i < SG_ARRAY_LEN(codes); i++)
        if (strlen(codes[i]) == n && memcmp(codes[i], s, n) == 0) {
            *out = (int64_t)i;
            return true;
        }
    if (n == 0 || n > 9)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* A non-negative number in [s, s+n): milliseconds, bytes, counts. */
static bool parse_num(const char *s, size_t n, double hi, double *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > hi)
        return false;
    *out = v;
    return true;
}

const char *sg_mock_fault_parse(const char *val, sg_mock_fault_t *f)
{
    *f = (sg_mock_fault_t){.fraction = 1};
    const char *at = strchr(val, '@');
    const char *end = at ? at : val + strlen(val);
    const char *colon = memchr(val, ':', (size_t)(end - val));
    const char *kend = colon ? colon : end;
    size_t kn = (size_t)(kend - val);
    for (int k = 1; k < SG_MOCK_FAULT_KINDS; k++)
        if (strlen(names[k]) == kn && memcmp(names[k], val, kn) == 0)
            f->kind = (uint8_t)k;
    if (!f->kind)
        return "unknown fault (expected rst, stall-write, cut, half-close, trickle, bwcap, goaway, crash or "
               "stall-read)";
    if (at) {
        double fr;
        if (!parse_num(at + 1, strlen(at + 1), 1, &fr) || fr <= 0)
            return "@FRACTION: expected a fraction above 0, at most 1";
        if (!sg_mock_fault_per_request(f->kind) && !sg_mock_fault_per_conn(f->kind))
            return "this fault hits every connection at a time: it takes no @FRACTION";
        f->fraction = fr;
    }
    /* the arguments: up to two, comma-separated */
    const char *a = colon ? colon + 1 : NULL, *b = NULL;
    size_t an = 0, bn = 0;
    if (a) {
        const char *comma = memchr(a, ',', (size_t)(end - a));
        an = (size_t)((comma ? comma : end) - a);
        if (comma) {
            b = comma + 1;
            bn = (size_t)(end - b);
        }
        if (an == 0 || (b && bn == 0))
            return "empty argument";
    }
    double x = 0, y = 0;
    switch (f->kind) {
    case SG_MOCK_FAULT_RST:
        f->a = 2; /* INTERNAL_ERROR, as --drop-rate */
        if (b)
            return "rst takes one argument: [:CODE]";
        if (a && (!parse_code(a, an, &f->a) || f->a > UINT32_MAX))
            return "rst:CODE: expected an HTTP/2 error code (a number, or a name: cancel, refused_stream, "
                   "internal, protocol, ...)";
        return NULL;
    case SG_MOCK_FAULT_STALL_WRITE:
        if (!a || !parse_num(a, an, 86400e3, &x) || x <= 0)
            return "stall-write:MS[,TOKEN]: expected milliseconds above 0";
        if (b && (!parse_num(b, bn, SG_MOCK_MAX_TOKENS, &y) || y != floor(y)))
            return "stall-write:MS,TOKEN: expected a token index (0 is the first token)";
        f->a = llround(x * 1e6); /* kept in ns */
        f->b = (int64_t)y;
        return NULL;
    case SG_MOCK_FAULT_CUT:
    case SG_MOCK_FAULT_HALF_CLOSE:
        f->a = SG_MOCK_AT_HEAD;
        if (b)
            return "cut and half-close take one argument: [:BYTES] or [:head]";
        if (a && !(an == 4 && memcmp(a, "head", 4) == 0)) {
            if (!parse_num(a, an, 1e12, &x) || x != floor(x))
                return "expected BYTES (a whole number) or head";
            f->a = (int64_t)x;
        }
        return NULL;
    case SG_MOCK_FAULT_TRICKLE:
        if (!a || !b || !parse_num(a, an, 1e9, &x) || x < 1 || x != floor(x) || !parse_num(b, bn, 60e3, &y))
            return "trickle:BYTES,MS: expected bytes per send (1 or more) and milliseconds between sends";
        f->a = (int64_t)x;
        f->b = llround(y * 1e6);
        return NULL;
    case SG_MOCK_FAULT_BWCAP:
        if (!a || b || !parse_num(a, an, 1e12, &x) || x < 1)
            return "bwcap:BYTES_PER_S: expected bytes per second (1 or more)";
        f->a = llround(x);
        return NULL;
    case SG_MOCK_FAULT_GOAWAY:
        f->a = 1;
        if (a && (!parse_num(a, an, UINT32_MAX, &x) || x < 1 || x != floor(x)))
            return "goaway:N[,CODE]: expected a request count (1 or more)";
        if (a)
            f->a = (int64_t)x;
        if (b && (!parse_code(b, bn, &f->b) || f->b > UINT32_MAX))
            return "goaway:N,CODE: expected an HTTP/2 error code (a number or a name: no, protocol, internal, "
                   "enhance_your_calm, ...)";
        return NULL;
    case SG_MOCK_FAULT_CRASH:
        if (!a || !parse_num(a, an, 86400e3, &x) || (b && !parse_num(b, bn, 86400e3, &y)))
            return "crash:AT_MS[,DOWN_MS]: expected milliseconds from the start, and how long the port stays "
                   "closed";
        f->a = llround(x * 1e6);
        f->b = b ? llround(y * 1e6) : -1; /* -1: never listens again */
        return NULL;
    default: /* SG_MOCK_FAULT_STALL_READ */
        if (!a || !b || !parse_num(a, an, 86400e3, &x) || !parse_num(b, bn, 86400e3, &y) || y <= 0)
            return "stall-read:AT_MS,MS: expected the window's start (ms from the start) and its length (ms)";
        f->a = llround(x * 1e6);
        f->b = llround(y * 1e6);
        return NULL;
    }
}
