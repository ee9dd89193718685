/*
 * gRPC framing and metadata: frames round-trip fed whole, split at every byte (and every pair of bytes for
 * short streams) and byte by byte; in-place delivery; the size cap, the compressed flag and bad flag bytes;
 * a stream cut inside a message; grpc-timeout, grpc-message percent coding, request headers, and the
 * classification of a finished call.
 */
#include "sg_grpc.h"
#include "test.h"
#include "trace.h"

#include <stdlib.h>

typedef struct {
    str_t trace;
    const char *feed_base;
    size_t feed_len;
    int in_place;
    int stop_after;
    int n;
} rec_t;

static int on_message(void *ud, sg_slice_t msg)
{
    rec_t *r = ud;
    str_fmt(&r->trace, "[%zu:", msg.len);
    for (size_t i = 0; i < msg.len; i++) {
        unsigned char c = (unsigned char)msg.base[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            str_add(&r->trace, &msg.base[i], 1);
        else
            str_fmt(&r->trace, "\\x%02x", c);
    }
    str_add(&r->trace, "]", 1);
    if (msg.len && msg.base >= r->feed_base && msg.base + msg.len <= r->feed_base + r->feed_len)
        r->in_place++;
    if (r->stop_after && ++r->n == r->stop_after)
        return SG_EABORT;
    return 0;
}

static const sg_grpc_dec_cb_t cb = {on_message};

static char *run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    uint32_t max_msg = *(const uint32_t *)ctx;
    rec_t r = {0};
    sg_grpc_dec_t d;
    sg_grpc_dec_init(&d, max_msg);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        r.feed_base = in + start;
        r.feed_len = end - start;
        int rc = sg_grpc_dec_feed(&d, in + start, end - start, &cb, &r);
        if (rc < 0) {
            str_fmt(&r.trace, "[err %d: %s]", rc, d.err);
            break;
        }
        start = end;
    }
    if (start == len && sg_grpc_dec_pending(&d))
        str_add(&r.trace, "[pending]", 9);
    sg_grpc_dec_free(&d);
    return str_take(&r.trace);
}

/* Append a frame of msg to s. */
static void add_frame(str_t *s, const char *msg, size_t len)
{
    uint8_t *f;
    size_t flen;
    CHECK_EQ_INT(sg_grpc_frame(msg, len, &f, &flen), 0);
    CHECK_EQ_INT(flen, len + 5);
    str_add(s, f, flen);
    free(f);
}

#define SPLITS(max, in, len, want)                                                                                     \
    do {                                                                                                               \
        uint32_t m_ = (max);                                                                                           \
        trace_check_splits(run, &m_, (in), (len), 40, (want), #in, __FILE__, __LINE__);                                \
    } while (0)

static void test_prefix(void)
{
    uint8_t p[5];
    sg_grpc_prefix(p, 0x01020304);
    CHECK(p[0] == 0 && p[1] == 1 && p[2] == 2 && p[3] == 3 && p[4] == 4);
    sg_grpc_prefix(p, 0);
    CHECK(p[0] == 0 && p[1] == 0 && p[4] == 0);
    uint8_t *f;
    size_t flen;
    CHECK_EQ_INT(sg_grpc_frame("", 0, &f, &flen), 0);
    CHECK_EQ_INT(flen, 5);
    CHECK(memcmp(f, "\0\0\0\0\0", 5) == 0);
    free(f);
}

static void test_round_trip(void)
{
    str_t s = {0};
    add_frame(&s, "hello", 5);
    add_frame(&s, "", 0);
    add_frame(&s, "x", 1);
    add_frame(&s, "\0\1\0", 3);
    SPLITS(0, s.s, s.len, "[5:hello][0:][1:x][3:\\x00\\x01\\x00]");
    s.len = 0;

    /* A message of 300 bytes (two-byte length) and one of 70000 (three-byte length). */
    char *big = malloc(70000);
    for (size_t i = 0; i < 70000; i++)
        big[i] = (char)('a' + i % 26);
    add_frame(&s, big, 300);
    add_frame(&s, big, 70000);
    str_t want = {0};
    str_fmt(&want, "[300:");
    str_add(&want, big, 300);
    str_fmt(&want, "][70000:");
    str_add(&want, big, 70000);
    str_add(&want, "]", 1);
    uint32_t m = 0;
    char *whole = run(&m, s.s, s.len, NULL, 0);
    CHECK(strcmp(whole, want.s) == 0);
    /* A few hundred cuts, not all 70k: each position near the prefixes and a stride through the body. */
    for (size_t i = 1; i < s.len; i += (i < 320 || i > s.len - 10) ? 1 : 997) {
        char *t2 = run(&m, s.s, s.len, &i, 1);
        if (strcmp(t2, whole) != 0) {
            CHECK(!"split at i changes the trace");
            fprintf(stderr, "  split at %zu\n", i);
        }
        free(t2);
    }
    free(whole);
    free(want.s);
    free(big);
    free(s.s);
}

static void test_in_place(void)
{
    str_t s = {0};
    add_frame(&s, "abc", 3);
    add_frame(&s, "defg", 4);
    rec_t r = {0};
    sg_grpc_dec_t d;
    sg_grpc_dec_init(&d, 0);
    r.feed_base = s.s;
    r.feed_len = s.len;
    CHECK_EQ_INT(sg_grpc_dec_feed(&d, s.s, s.len, &cb, &r), 0);
    CHECK_EQ_INT(r.in_place, 2);
    CHECK(d.buf == NULL); /* nothing was copied */
    CHECK_EQ_INT(d.messages, 2);
    CHECK(!sg_grpc_dec_pending(&d));
    sg_grpc_dec_free(&d);
    free(r.trace.s);
    free(s.s);
}

static void test_errors(void)
{
    /* Over the cap: 11 bytes against a cap of 10, and exactly the cap. */
    str_t s = {0};
    add_frame(&s, "0123456789", 10);
    SPLITS(10, s.s, s.len, "[10:0123456789]");
    s.len = 0;
    add_frame(&s, "0123456789A", 11);
    SPLITS(10, s.s, s.len, "[err -10001: gRPC message of 11 bytes is over the 10-byte limit]");
    /* The cap is checked on the prefix alone: no need for the body to arrive. */
    SPLITS(10, s.s, 5, "[err -10001: gRPC message of 11 bytes is over the 10-byte limit]");
    /* 4 GiB - 1 against the default cap. */
    SPLITS(0, "\0\xff\xff\xff\xff", 5, "[err -10001: gRPC message of 4294967295 bytes is over the 4194304-byte limit]");

    /* Compressed: refused with a message that says so; after a good message it still comes out first. */
    s.len = 0;
    add_frame(&s, "ok", 2);
    str_add(&s, "\1\0\0\0\3abc", 8);
    SPLITS(0, s.s, s.len, "[2:ok][err -10000: compressed gRPC message (3 bytes), but surge asked for no compression]");
    SPLITS(0, "\2\0\0\0\0", 5, "[err -10000: bad gRPC message prefix: flag byte 0x02 (want 0 or 1)]");
    SPLITS(0, "\x80\0\0\0\0", 5, "[err -10000: bad gRPC message prefix: flag byte 0x80 (want 0 or 1)]");

    /* Cut inside a prefix and inside a body: pending. */
    SPLITS(0, "\0\0\0", 3, "[pending]");
    SPLITS(0, "\0\0\0\0\4ab", 7, "[pending]");
    SPLITS(0, "", 0, "");

    /* A callback's stop comes back, and a reset decoder starts afresh. */
    s.len = 0;
    add_frame(&s, "a", 1);
    add_frame(&s, "b", 1);
    rec_t r = {0};
    r.stop_after = 1;
    sg_grpc_dec_t d;
    sg_grpc_dec_init(&d, 0);
    CHECK_EQ_INT(sg_grpc_dec_feed(&d, s.s, s.len, &cb, &r), SG_EABORT);
    sg_grpc_dec_reset(&d);
    CHECK(!sg_grpc_dec_pending(&d));
    r.stop_after = 0;
    CHECK_EQ_INT(sg_grpc_dec_feed(&d, s.s + 3, 2, &cb, &r), 0); /* half a prefix */
    CHECK(sg_grpc_dec_pending(&d));
    sg_grpc_dec_reset(&d);
    CHECK_EQ_INT(sg_grpc_dec_feed(&d, s.s + 6, s.len - 6, &cb, &r), 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[1:a][1:b]");
    sg_grpc_dec_free(&d);
    free(r.trace.s);
    free(s.s);
}

static void test_timeout(void)
{
    char v[SG_GRPC_TIMEOUT_MAX];
    struct {
        int64_t ns;
        const char *want;
    } cases[] = {
        {1, "1n"},
        {99999999, "99999999n"},
        {100000000, "100000u"},
        {100000001, "100001u"}, /* rounded up */
        {1500000000, "1500000u"},
        {30000000000LL, "30000000u"},
        {300000000000LL, "300000m"},
        {99999999000000LL, "99999999m"},
        {99999999000001LL, "100000S"},
        {99999999LL * 1000000000, "99999999S"},
        {100000000LL * 1000000000, "1666667M"},
        {INT64_MAX, "2562048H"},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(cases); i++) {
        int n = sg_grpc_timeout_format(cases[i].ns, v);
        CHECK_EQ_INT(n, strlen(cases[i].want));
        CHECK_EQ_STR(v, strlen(v), cases[i].want);
        int64_t back;
        CHECK_EQ_INT(sg_grpc_timeout_parse(v, strlen(v), &back), 0);
        CHECK(back >= cases[i].ns); /* never shorter than asked */
    }
    CHECK_EQ_INT(sg_grpc_timeout_format(0, v), SG_EINVAL);
    CHECK_EQ_INT(sg_grpc_timeout_format(-5, v), SG_EINVAL);
    int64_t ns;
    CHECK_EQ_INT(sg_grpc_timeout_parse("250m", 4, &ns), 0);
    CHECK_EQ_INT(ns, 250000000);
    CHECK_EQ_INT(sg_grpc_timeout_parse("2H", 2, &ns), 0);
    CHECK_EQ_INT(ns, 7200000000000LL);
    CHECK_EQ_INT(sg_grpc_timeout_parse("99999999H", 9, &ns), 0);
    CHECK_EQ_INT(ns, INT64_MAX);
    CHECK_EQ_INT(sg_grpc_timeout_parse("m", 1, &ns), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_timeout_parse("123456789m", 10, &ns), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_timeout_parse("12x", 3, &ns), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_timeout_parse("-1S", 3, &ns), SG_EPROTO);
}

static void test_message_coding(void)
{
    char out[64];
    const char *in = "Model 'x' 100% \xe2\x9c\x93\n";
    size_t n = sg_grpc_message_encode(in, strlen(in), out, sizeof(out));
    CHECK_EQ_STR(out, n, "Model 'x' 100%25 %E2%9C%93%0A");
    char back[64];
    size_t m = sg_grpc_message_decode(out, n, back, sizeof(back));
    CHECK_EQ_STR(back, m, in);
    /* Lower-case hex decodes too; a broken escape is kept as it is. */
    m = sg_grpc_message_decode("a%2fb%zz%4", 10, back, sizeof(back));
    CHECK_EQ_STR(back, m, "a/b%zz%4");
    m = sg_grpc_message_decode("%", 1, back, sizeof(back));
    CHECK_EQ_STR(back, m, "%");
    /* Cut to the buffer, full length returned, always NUL-terminated. */
    m = sg_grpc_message_decode("abcdef", 6, back, 4);
    CHECK_EQ_INT(m, 6);
    CHECK_EQ_STR(back, strlen(back), "abc");
    n = sg_grpc_message_encode("%%%", 3, out, 5);
    CHECK_EQ_INT(n, 9);
    CHECK_EQ_STR(out, strlen(out), "%25%");
}

static void test_request_headers(void)
{
    sg_grpc_hdr_t h[SG_GRPC_REQ_HDRS_MAX];
    char to[SG_GRPC_TIMEOUT_MAX];
    CHECK(sg_grpc_timeout_format(5000000000LL, to) > 0);
    size_t n = sg_grpc_request_headers(h, "http", "127.0.0.1:8001", "/inference.GRPCInferenceService/ModelInfer",
                                       "surge/0.1", to);
    CHECK_EQ_INT(n, 8);
    const char *want[][2] = {
        {":method", "POST"},
        {":scheme", "http"},
        {":path", "/inference.GRPCInferenceService/ModelInfer"},
        {":authority", "127.0.0.1:8001"},
        {"content-type", "application/grpc"},
        {"te", "trailers"},
        {"user-agent", "surge/0.1"},
        {"grpc-timeout", "5000000u"},
    };
    for (size_t i = 0; i < n && i < SG_ARRAY_LEN(want); i++) {
        CHECK_EQ_STR(h[i].name, h[i].name_len, want[i][0]);
        CHECK_EQ_STR(h[i].value, h[i].value_len, want[i][1]);
    }
    CHECK_EQ_INT(sg_grpc_request_headers(h, "https", "a", "/p", NULL, NULL), 6);
}

static sg_grpc_call_result_t meta(const char *const *fields, char *err, size_t errlen)
{
    sg_grpc_meta_t m;
    sg_grpc_meta_init(&m);
    for (size_t i = 0; fields[i]; i += 2)
        CHECK_EQ_INT(sg_grpc_meta_header(&m, fields[i], strlen(fields[i]), fields[i + 1], strlen(fields[i + 1])), 0);
    return sg_grpc_meta_result(&m, err, errlen);
}

static void test_meta(void)
{
    char err[256];
    const char *ok[] = {":status", "200", "content-type", "application/grpc", "grpc-status", "0", NULL};
    CHECK_EQ_INT(meta(ok, err, sizeof(err)), SG_GRPC_CALL_OK);
    const char *proto_ct[] = {":status", "200", "content-type", "application/grpc+proto", "grpc-status", "0", NULL};
    CHECK_EQ_INT(meta(proto_ct, err, sizeof(err)), SG_GRPC_CALL_OK);
    const char *status[] = {":status",     "200", "content-type", "application/grpc",
                            "grpc-status", "5",   "grpc-message", "Request for unknown model: 'm%C3%A9' is not found",
                            NULL};
    CHECK_EQ_INT(meta(status, err, sizeof(err)), SG_GRPC_CALL_STATUS);
    CHECK_EQ_STR(err, strlen(err), "grpc-status 5 NOT_FOUND: Request for unknown model: 'm\xc3\xa9' is not found");
    const char *bare[] = {":status", "200", "content-type", "application/grpc", "grpc-status", "14", NULL};
    CHECK_EQ_INT(meta(bare, err, sizeof(err)), SG_GRPC_CALL_STATUS);
    CHECK_EQ_STR(err, strlen(err), "grpc-status 14 UNAVAILABLE");
    const char *html[] = {":status", "404", "content-type", "text/html", NULL};
    CHECK_EQ_INT(meta(html, err, sizeof(err)), SG_GRPC_CALL_NOT_GRPC);
    CHECK_EQ_STR(err, strlen(err), "HTTP status 404 with content-type text/html: not a gRPC server");
    const char *json200[] = {":status", "200", "content-type", "application/json", NULL};
    CHECK_EQ_INT(meta(json200, err, sizeof(err)), SG_GRPC_CALL_NOT_GRPC);
    const char *grpcweb[] = {":status", "200", "content-type", "application/grpcweb", "grpc-status", "0", NULL};
    CHECK_EQ_INT(meta(grpcweb, err, sizeof(err)), SG_GRPC_CALL_NOT_GRPC);
    const char *none[] = {":status", "200", NULL};
    CHECK_EQ_INT(meta(none, err, sizeof(err)), SG_GRPC_CALL_NOT_GRPC);
    const char *cut[] = {":status", "200", "content-type", "application/grpc", NULL};
    CHECK_EQ_INT(meta(cut, err, sizeof(err)), SG_GRPC_CALL_NO_STATUS);
    CHECK_EQ_STR(err, strlen(err), "the call ended without grpc-status");

    sg_grpc_meta_t m;
    sg_grpc_meta_init(&m);
    CHECK_EQ_INT(sg_grpc_meta_header(&m, "grpc-status", 11, "x", 1), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_meta_header(&m, "grpc-status", 11, "", 0), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_meta_header(&m, ":status", 7, "2000", 4), SG_EPROTO);
    CHECK_EQ_INT(sg_grpc_meta_header(&m, "x-other", 7, "whatever", 8), 0);

    /* A grpc-message longer than the buffer is cut and marked. */
    char longmsg[2000];
    memset(longmsg, 'e', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    const char *lng[] = {":status", "200", "content-type", "application/grpc", "grpc-status", "13", "grpc-message",
                         longmsg,   NULL};
    char big[4096];
    CHECK_EQ_INT(meta(lng, big, sizeof(big)), SG_GRPC_CALL_STATUS);
    CHECK(strlen(big) == strlen("grpc-status 13 INTERNAL: ") + SG_GRPC_MESSAGE_MAX - 1 + 3);
    CHECK(strcmp(big + strlen(big) - 4, "e...") == 0);

    CHECK(strcmp(sg_grpc_status_name(16), "UNAUTHENTICATED") == 0);
    CHECK(strcmp(sg_grpc_status_name(17), "UNKNOWN_STATUS") == 0);
    CHECK(strcmp(sg_grpc_status_name(-1), "UNKNOWN_STATUS") == 0);
}

int main(void)
{
    test_prefix();
    test_round_trip();
    test_in_place();
    test_errors();
    test_timeout();
    test_message_coding();
    test_request_headers();
    test_meta();
    return test_finish("test_grpc");
}
