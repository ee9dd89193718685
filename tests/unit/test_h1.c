/*
 * HTTP/1.1: the response parser, the request parser and the request writer. Every parser vector is fed whole,
 * split at every byte boundary, split at every pair of boundaries (short vectors), and byte by byte; each way
 * must give the same trace of events, byte for byte.
 */
#include "sg_h1.h"
#include "test.h"
#include "trace.h"

/* ---------- response parser driver ---------- */

typedef struct {
    str_t trace;
    bool in_body; /* coalesce on_body calls: their boundaries depend on the split */
    bool done;
    int abort_on_head; /* return this from on_head when non-zero */
} resp_rec_t;

static int r_head(void *ud, const sg_h1_resp_head_t *h)
{
    resp_rec_t *r = ud;
    r->in_body = false;
    str_fmt(&r->trace, "[head %d 1.%d cl=%lld ch=%d ka=%d es=%d uc=%d", h->status, h->minor_version,
            (long long)h->content_length, h->chunked, h->keep_alive, h->event_stream, h->body_until_close);
    /* the Keep-Alive hints only when a response gave one, so the vectors without one read as before */
    if (h->ka_max >= 0 || h->ka_timeout_s >= 0)
        str_fmt(&r->trace, " max=%d timeout=%d", (int)h->ka_max, (int)h->ka_timeout_s);
    str_add(&r->trace, "]", 1);
    return r->abort_on_head;
}

static int r_body(void *ud, const char *data, size_t len)
{
    resp_rec_t *r = ud;
    CHECK(len > 0);
    if (!r->in_body)
        str_add(&r->trace, "[body ", 6);
    else
        r->trace.len--; /* reopen the bracket */
    str_add(&r->trace, data, len);
    str_add(&r->trace, "]", 1);
    r->in_body = true;
    return 0;
}

static int r_complete(void *ud)
{
    resp_rec_t *r = ud;
    r->in_body = false;
    r->done = true;
    str_add(&r->trace, "[done]", 6);
    return 0;
}

static const sg_h1_resp_cb_t resp_cb = {r_head, r_body, r_complete};

typedef struct {
    bool eof, head_req;
} resp_opts_t;

/*
 * Feed in[0..len) to a fresh parser, cut at the given offsets (ascending). After each completed response the
 * parser is reset and the rest of the buffer fed again, as a connection would. At the end, optionally signal
 * EOF. Returns the trace (caller frees).
 */
static char *run_resp(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    const resp_opts_t *o = ctx;
    bool eof = o->eof, head_req = o->head_req;
    resp_rec_t r = {0};
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    sg_h1_resp_set_head_request(&p, head_req);
    size_t start = 0;
    bool failed = false;
    for (size_t c = 0; c <= ncuts && !failed; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        size_t off = start;
        while (off < end) {
            ssize_t n = sg_h1_resp_feed(&p, in + off, end - off, &resp_cb, &r);
            if (n < 0) {
                str_fmt(&r.trace, "[err %zd]", n);
                failed = true;
                break;
            }
            CHECK(n > 0);
            if (n == 0)
                break;
            off += (size_t)n;
            if (r.done) {
                CHECK(!sg_h1_resp_started(&p));
                sg_h1_resp_reset(&p);
                sg_h1_resp_set_head_request(&p, head_req);
                r.done = false;
            } else {
                CHECK_EQ_INT(off, end); /* only a completed response stops short */
            }
        }
        start = end;
    }
    if (eof && !failed) {
        int rc = sg_h1_resp_eof(&p, &resp_cb, &r);
        str_fmt(&r.trace, "[eof %d]", rc);
    }
    sg_h1_resp_free(&p);
    return str_take(&r.trace);
}

/* Feed every way and compare to the whole-buffer trace, which must equal want. */
static void check_resp_ex(const char *in, size_t len, bool eof, bool head_req, const char *want, int line)
{
    resp_opts_t o = {eof, head_req};
    trace_check_splits(run_resp, &o, in, len, 160, want, "response trace", "test_h1.c", line);
}

#define CHECK_RESP(in, want) check_resp_ex((in), sizeof(in) - 1, false, false, (want), __LINE__)
#define CHECK_RESP_EOF(in, want) check_resp_ex((in), sizeof(in) - 1, true, false, (want), __LINE__)
#define CHECK_RESP_HEAD(in, want) check_resp_ex((in), sizeof(in) - 1, false, true, (want), __LINE__)

static void test_resp_vectors(void)
{
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
               "[head 200 1.1 cl=5 ch=0 ka=1 es=0 uc=0][body hello][done]");
    /* Chunked SSE: extensions ignored, hex either case, trailers skipped, media type parameters allowed. */
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\n"
               "\r\n5;ext=1;q=\"a\"\r\nhello\r\nA \r\n, world!!!\r\n0\r\nX-Trailer: a\r\nY: b\r\n\r\n",
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=1 uc=0][body hello, world!!!][done]");
    /* 1xx interim responses vanish; the final one is reported. */
    CHECK_RESP("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
               "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
               "[head 201 1.1 cl=2 ch=0 ka=1 es=0 uc=0][body ok][done]");
    /* HTTP/1.0 without length: read until close; EOF completes. */
    CHECK_RESP_EOF("HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil close",
                   "[head 200 1.0 cl=-1 ch=0 ka=0 es=0 uc=1][body until close][done][eof 0]");
    /* HTTP/1.1 without length or chunked: also until close, and not reusable. */
    CHECK_RESP_EOF("HTTP/1.1 200 OK\r\n\r\nabc", "[head 200 1.1 cl=-1 ch=0 ka=0 es=0 uc=1][body abc][done][eof 0]");
    /* A final coding other than chunked: until close. */
    CHECK_RESP_EOF("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nzz",
                   "[head 200 1.1 cl=-1 ch=0 ka=0 es=0 uc=1][body zz][done][eof 0]");
    CHECK_RESP("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx",
               "[head 200 1.0 cl=1 ch=0 ka=1 es=0 uc=0][body x][done]");
    /* Header names in any case; tokens in Connection lists. */
    CHECK_RESP("HTTP/1.1 200 OK\r\ncontent-LENGTH: 3\r\nCONNECTION: Upgrade, Close\r\n\r\nabc",
               "[head 200 1.1 cl=3 ch=0 ka=0 es=0 uc=0][body abc][done]");
    /* Bare LF line endings, no reason phrase, no space before it. */
    CHECK_RESP("HTTP/1.1 200\nContent-Length: 2\n\nhi", "[head 200 1.1 cl=2 ch=0 ka=1 es=0 uc=0][body hi][done]");
    CHECK_RESP("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0][done]");
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n",
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body abc][done]");
    /* Identical duplicate lengths (or a merged list) are fine. */
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
               "[head 200 1.1 cl=2 ch=0 ka=1 es=0 uc=0][body ab][done]");
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2 , 2\r\n\r\nab",
               "[head 200 1.1 cl=2 ch=0 ka=1 es=0 uc=0][body ab][done]");
    /* No body: 204, 304, HEAD. */
    CHECK_RESP("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "[head 204 1.1 cl=7 ch=0 ka=1 es=0 uc=0][done]");
    CHECK_RESP("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
               "[head 304 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][done]");
    CHECK_RESP_HEAD("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "[head 200 1.1 cl=10 ch=0 ka=1 es=0 uc=0][done]");
    /* Several responses back to back (keep-alive), in every mix of framings. */
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 204 No Content\r\n\r\n"
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
               "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nbad",
               "[head 200 1.1 cl=2 ch=0 ka=1 es=0 uc=0][body ab][done]"
               "[head 204 1.1 cl=-1 ch=0 ka=1 es=0 uc=0][done]"
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body z][done]"
               "[head 500 1.1 cl=3 ch=0 ka=1 es=0 uc=0][body bad][done]");
    /* Leading zeros in a chunk size are just zeros. */
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000000000003\r\nabc\r\n000\r\n\r\n",
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body abc][done]");
    /* Header values: whitespace around is trimmed, obs-text is allowed. */
    CHECK_RESP("HTTP/1.1 200 OK\r\nX-A:\t \xc3\xa9t\xc3\xa9 \t\r\nContent-Length:1\r\n\r\n!",
               "[head 200 1.1 cl=1 ch=0 ka=1 es=0 uc=0][body !][done]");
}

/* Keep-Alive: timeout=T, max=N. A hint: what does not parse is ignored, never an error. */
static void test_resp_keep_alive(void)
{
    /* llama-server's (cpp-httplib's) exact head */
    CHECK_RESP("HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nContent-Type: text/event-stream\r\n"
               "Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n0\r\n\r\n",
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=1 uc=0 max=100 timeout=5][done]");
    /* any order and case, quoted values, other parameters and junk skipped */
    CHECK_RESP("HTTP/1.1 200 OK\r\nkeep-alive: MAX=\"7\" ,foo, bar=1,TimeOut = 30\r\nContent-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=7 timeout=30][done]");
    /* only one of them */
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2\r\nContent-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=-1 timeout=2][done]");
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: max=0\r\nContent-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=0 timeout=-1][done]");
    /* values that are not plain numbers are skipped; an empty or nameless one too */
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: max=-1, timeout=5s, max=, =3, max=1e3, timeout\r\n"
               "Content-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0][done]");
    /* several fields (or repeats): the smallest of each wins */
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: max=50, timeout=9\r\nKeep-Alive: max=80, timeout=3, max=60\r\n"
               "Content-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=50 timeout=3][done]");
    /* huge numbers saturate rather than wrap */
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: max=99999999999999999999999, timeout=2147483648\r\n"
               "Content-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=2147483647 timeout=2147483647][done]");
    /* Connection: close still closes, whatever Keep-Alive says; a HTTP/1.0 keep-alive carries its hints */
    CHECK_RESP("HTTP/1.1 200 OK\r\nConnection: close\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=0 ch=0 ka=0 es=0 uc=0 max=100 timeout=5][done]");
    CHECK_RESP(
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=15, max=99\r\nContent-Length: 0\r\n\r\n",
        "[head 200 1.0 cl=0 ch=0 ka=1 es=0 uc=0 max=99 timeout=15][done]");
    /* each response of a kept-alive connection has its own hints (Apache counts max down); an interim 1xx's and
     * a trailer's do not count */
    CHECK_RESP("HTTP/1.1 100 Continue\r\nKeep-Alive: max=1\r\n\r\n"
               "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=3\r\nTransfer-Encoding: chunked\r\n\r\n"
               "0\r\nKeep-Alive: max=0\r\n\r\n"
               "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=2\r\nContent-Length: 0\r\n\r\n"
               "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
               "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0 max=3 timeout=5][done]"
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0 max=2 timeout=5][done]"
               "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0][done]");
    /* control bytes in its value are refused as in any field */
    char want[64];
    snprintf(want, sizeof want, "[err %d]", SG_EPROTO);
    CHECK_RESP("HTTP/1.1 200 OK\r\nKeep-Alive: max=1\x01\r\n\r\n", want);
}

static void test_resp_errors(void)
{
    char want[64];
    snprintf(want, sizeof want, "[err %d]", SG_EPROTO);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nab", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\n\r\n", want); /* obs-fold */
    CHECK_RESP("HTTP/1.1 200 OK\r\nBad Name: a\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nSpace-Before : a\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nNo-Colon\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\n: empty-name\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", want);
    CHECK_RESP("HTTP/2 200 OK\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 20 OK\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 2000 OK\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 099 Low\r\n\r\n", want);
    CHECK_RESP("ICY 200 OK\r\n\r\n", want);
    CHECK_RESP("\r\nHTTP/1.1 200 OK\r\n\r\n", want);
    CHECK_RESP("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", want);
    /* Chunk framing: the head is out before the bad chunk line is seen. */
    char want_chunk_err[128];
    snprintf(want_chunk_err, sizeof want_chunk_err, "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][err %d]", SG_EPROTO);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
               want_chunk_err); /* 2^64: overflow */
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n", want_chunk_err);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", want_chunk_err);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", want_chunk_err);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n", want_chunk_err);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n", want_chunk_err);
    char want_body_err[128];
    snprintf(want_body_err, sizeof want_body_err, "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body abc][err %d]",
             SG_EPROTO);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", want_body_err);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\r\n0\r\n\r\n", want_body_err);
    snprintf(want_body_err, sizeof want_body_err, "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body abc][err %d]",
             SG_EPROTO);
    CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nbad trailer\r\n\r\n",
               want_body_err);

    /* Truncation, seen at EOF. */
    snprintf(want, sizeof want, "[eof %d]", SG_EINCOMPLETE);
    CHECK_RESP_EOF("HTTP/1.1 200 OK\r\nContent-Le", want);
    CHECK_RESP_EOF("H", want);
    CHECK_RESP_EOF("HTTP/1.1 100 Continue\r\n\r\n", want);
    snprintf(want, sizeof want, "[head 200 1.1 cl=5 ch=0 ka=1 es=0 uc=0][body hel][eof %d]", SG_EINCOMPLETE);
    CHECK_RESP_EOF("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", want);
    snprintf(want, sizeof want, "[head 200 1.1 cl=-1 ch=1 ka=1 es=0 uc=0][body abc][eof %d]", SG_EINCOMPLETE);
    CHECK_RESP_EOF("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n", want);
    CHECK_RESP_EOF("", "[eof 0]");
}

static void test_resp_caps(void)
{
    /* A head of exactly SG_H1_MAX_HEAD bytes passes; one byte more does not. */
    const char *pre = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: ";
    size_t fixed = strlen(pre) + strlen("\r\n\r\n");
    size_t pad = SG_H1_MAX_HEAD - fixed;
    char *buf = malloc(SG_H1_MAX_HEAD + 2);
    for (int extra = 0; extra <= 1; extra++) {
        size_t n = 0;
        memcpy(buf, pre, strlen(pre));
        n += strlen(pre);
        memset(buf + n, 'a', pad + (size_t)extra);
        n += pad + (size_t)extra;
        memcpy(buf + n, "\r\n\r\n", 4);
        n += 4;
        CHECK_EQ_INT(n, SG_H1_MAX_HEAD + (size_t)extra);
        size_t cuts[3] = {1, n / 2, n - 1};
        for (size_t k = 0; k <= 3; k++) {
            char *t = run_resp(&(resp_opts_t){false, false}, buf, n, cuts, k);
            if (extra == 0) {
                CHECK_EQ_STR(t, strlen(t), "[head 200 1.1 cl=0 ch=0 ka=1 es=0 uc=0][done]");
            } else {
                char want[32];
                snprintf(want, sizeof want, "[err %d]", SG_ETOOBIG);
                CHECK_EQ_STR(t, strlen(t), want);
            }
            free(t);
        }
    }
    free(buf);

    /* A head that never ends is refused once it passes the cap, not buffered forever. */
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    char junk[1024];
    memset(junk, 'x', sizeof junk);
    ssize_t rc = sg_h1_resp_feed(&p, "HTTP/1.1 200 OK\r\nX: ", 20, &resp_cb, NULL);
    CHECK_EQ_INT(rc, 20);
    for (int i = 0; i < 64 && rc > 0; i++)
        rc = sg_h1_resp_feed(&p, junk, sizeof junk, &resp_cb, NULL);
    CHECK_EQ_INT(rc, SG_ETOOBIG);
    sg_h1_resp_free(&p);

    /* A chunk-size line with an extension too long to keep. */
    static const char head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;e=";
    resp_rec_t r = {0};
    sg_h1_resp_init(&p);
    rc = sg_h1_resp_feed(&p, head, sizeof head - 1, &resp_cb, &r);
    CHECK_EQ_INT(rc, (ssize_t)sizeof head - 1);
    for (int i = 0; i < 8 && rc > 0; i++)
        rc = sg_h1_resp_feed(&p, junk, sizeof junk, &resp_cb, &r);
    CHECK_EQ_INT(rc, SG_ETOOBIG);
    sg_h1_resp_free(&p);
    free(r.trace.s);

    /* Trailers get their own cap. */
    sg_h1_resp_init(&p);
    memset(&r, 0, sizeof r);
    static const char chunked0[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ";
    rc = sg_h1_resp_feed(&p, chunked0, sizeof chunked0 - 1, &resp_cb, &r);
    CHECK_EQ_INT(rc, (ssize_t)sizeof chunked0 - 1);
    for (int i = 0; i < 64 && rc > 0; i++)
        rc = sg_h1_resp_feed(&p, junk, sizeof junk, &resp_cb, &r);
    CHECK_EQ_INT(rc, SG_ETOOBIG);
    sg_h1_resp_free(&p);
    free(r.trace.s);
}

static void test_resp_api(void)
{
    /* Consumed bytes: exactly up to the end of the response; the rest is the caller's. */
    static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No Content\r\n\r\n";
    resp_rec_t r = {0};
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    CHECK(!sg_h1_resp_started(&p));
    ssize_t n = sg_h1_resp_feed(&p, two, sizeof two - 1, &resp_cb, &r);
    CHECK_EQ_INT(n, 40);
    CHECK(r.done);
    /* Fed again without a reset: a caller bug, reported as SG_EPROTO; zero bytes are harmless. */
    CHECK_EQ_INT(sg_h1_resp_feed(&p, two + n, 1, &resp_cb, &r), SG_EPROTO);
    sg_h1_resp_t q;
    sg_h1_resp_init(&q);
    n = sg_h1_resp_feed(&q, two, sizeof two - 1, NULL, NULL); /* no callbacks at all */
    CHECK_EQ_INT(n, 40);
    CHECK_EQ_INT(sg_h1_resp_feed(&q, two, 0, NULL, NULL), 0);
    CHECK_EQ_INT(sg_h1_resp_eof(&q, NULL, NULL), 0);
    sg_h1_resp_reset(&q);
    n = sg_h1_resp_feed(&q, two + 40, sizeof two - 1 - 40, NULL, NULL);
    CHECK_EQ_INT(n, (ssize_t)sizeof two - 1 - 40);
    sg_h1_resp_free(&q);
    sg_h1_resp_free(&p);
    free(r.trace.s);

    /* started: false before any byte and after completion, true in between (1xx included). */
    sg_h1_resp_init(&p);
    CHECK_EQ_INT(sg_h1_resp_feed(&p, "H", 1, NULL, NULL), 1);
    CHECK(sg_h1_resp_started(&p));
    CHECK_EQ_INT(sg_h1_resp_eof(&p, NULL, NULL), SG_EINCOMPLETE);
    sg_h1_resp_reset(&p);
    CHECK(!sg_h1_resp_started(&p));
    CHECK_EQ_INT(sg_h1_resp_eof(&p, NULL, NULL), 0);
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    CHECK_EQ_INT(sg_h1_resp_feed(&p, cont, sizeof cont - 1, NULL, NULL), (ssize_t)sizeof cont - 1);
    CHECK(sg_h1_resp_started(&p));
    sg_h1_resp_free(&p);

    /* A callback's negative value stops the parser and sticks until reset. */
    memset(&r, 0, sizeof r);
    r.abort_on_head = SG_EABORT;
    sg_h1_resp_init(&p);
    n = sg_h1_resp_feed(&p, two, sizeof two - 1, &resp_cb, &r);
    CHECK_EQ_INT(n, SG_EABORT);
    CHECK_EQ_INT(sg_h1_resp_feed(&p, two, sizeof two - 1, &resp_cb, &r), SG_EPROTO);
    CHECK_EQ_INT(sg_h1_resp_eof(&p, &resp_cb, &r), SG_EPROTO);
    sg_h1_resp_reset(&p);
    r.abort_on_head = 0;
    n = sg_h1_resp_feed(&p, two, sizeof two - 1, &resp_cb, &r);
    CHECK_EQ_INT(n, 40);
    sg_h1_resp_free(&p);
    free(r.trace.s);

    /* A big Content-Length body streams through without being held. */
    sg_h1_resp_init(&p);
    static const char bighead[] = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n";
    n = sg_h1_resp_feed(&p, bighead, sizeof bighead - 1, NULL, NULL);
    CHECK_EQ_INT(n, (ssize_t)sizeof bighead - 1);
    char *chunk = calloc(1, 65536);
    size_t total = 0;
    while (total < 10000000) {
        size_t want = 10000000 - total < 65536 ? 10000000 - total : 65536;
        n = sg_h1_resp_feed(&p, chunk, want, NULL, NULL);
        CHECK_EQ_INT(n, (ssize_t)want);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
    CHECK(!sg_h1_resp_started(&p)); /* completed */
    CHECK(p.line_cap <= 1024);
    free(chunk);
    sg_h1_resp_free(&p);
}

typedef struct {
    const char *base;
    size_t len;
    const char *got;
    size_t got_len;
} inplace_t;

static int inplace_body(void *ud, const char *data, size_t len)
{
    inplace_t *ip = ud;
    ip->got = data;
    ip->got_len = len;
    return 0;
}

static void test_resp_in_place(void)
{
    static const char one[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n";
    inplace_t ip = {one, sizeof one - 1, NULL, 0};
    sg_h1_resp_cb_t cb = {NULL, inplace_body, NULL};
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    ssize_t n = sg_h1_resp_feed(&p, one, sizeof one - 1, &cb, &ip);
    CHECK_EQ_INT(n, (ssize_t)sizeof one - 1);
    CHECK(ip.got == one + 50);
    CHECK_EQ_STR(ip.got, ip.got_len, "xyz");
    sg_h1_resp_free(&p);
}

/* ---------- request parser driver ---------- */

typedef struct {
    str_t trace;
} req_rec_t;

static int q_request(void *ud, const sg_h1_request_t *req)
{
    req_rec_t *r = ud;
    str_fmt(&r->trace, "[%.*s %.*s 1.%d ka=%d body=", (int)req->method.len, req->method.base, (int)req->path.len,
            req->path.base, req->minor_version, req->keep_alive);
    CHECK(req->body.base != NULL);
    str_add(&r->trace, req->body.base, req->body.len);
    str_add(&r->trace, "]", 1);
    return 0;
}

static const sg_h1_req_cb_t req_cb = {q_request};

static char *run_req(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    size_t max_request = *(const size_t *)ctx;
    req_rec_t r = {0};
    sg_h1_req_t p;
    sg_h1_req_init(&p, max_request);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        int rc = sg_h1_req_feed(&p, in + start, end - start, &req_cb, &r);
        if (rc < 0) {
            str_fmt(&r.trace, "[err %d]", rc);
            break;
        }
        start = end;
    }
    if (start == len && p.len)
        str_add(&r.trace, "[partial]", 9);
    sg_h1_req_free(&p);
    return str_take(&r.trace);
}

static void check_req_ex(const char *in, size_t len, size_t max_request, const char *want, int line)
{
    trace_check_splits(run_req, &max_request, in, len, 160, want, "request trace", "test_h1.c", line);
}

#define CHECK_REQ(in, want) check_req_ex((in), sizeof(in) - 1, 1 << 20, (want), __LINE__)
#define CHECK_REQ_MAX(in, max, want) check_req_ex((in), sizeof(in) - 1, (max), (want), __LINE__)

static void test_req_vectors(void)
{
    CHECK_REQ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
              "[POST /v1/chat/completions 1.1 ka=1 body={\"a\":1}]");
    CHECK_REQ("GET /health?x=1 HTTP/1.0\r\n\r\n", "[GET /health?x=1 1.0 ka=0 body=]");
    CHECK_REQ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "[GET / 1.0 ka=1 body=]");
    CHECK_REQ("GET / HTTP/1.1\r\nconnection: CLOSE\r\n\r\n", "[GET / 1.1 ka=0 body=]");
    CHECK_REQ("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nab\r\n\r\n3\r\ncde\r\n0\r\nT: 1\r\n\r\n",
              "[POST /c 1.1 ka=1 body=ab\r\ncde]");
    CHECK_REQ("POST /c HTTP/1.1\nTransfer-Encoding: chunked\n\n2\nhi\n0\n\n", "[POST /c 1.1 ka=1 body=hi]");
    /* Empty lines before a request are skipped; pipelining in every framing. */
    CHECK_REQ("\r\n\r\nGET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nxy"
              "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n\r\nGET /d HTTP/1.1\r\n\r\n",
              "[GET /a 1.1 ka=1 body=][POST /b 1.1 ka=1 body=xy][POST /c 1.1 ka=1 body=z][GET /d 1.1 ka=1 body=]");
    /* An unfinished request stays buffered. */
    CHECK_REQ("GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 5\r\n\r\nxy",
              "[GET /a 1.1 ka=1 body=][partial]");
    CHECK_REQ("POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "[partial]");
}

static void test_req_errors(void)
{
    char want[64];
    snprintf(want, sizeof want, "[err %d]", SG_EPROTO);
    CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want);
    CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", want);
    CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", want);
    CHECK_REQ("POST / HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n", want);
    CHECK_REQ("GET  / HTTP/1.1\r\n\r\n", want);
    CHECK_REQ("GET / HTTP/1.1 \r\n\r\n", want);
    CHECK_REQ("GET /\x01 HTTP/1.1\r\n\r\n", want);
    CHECK_REQ("G(T / HTTP/1.1\r\n\r\n", want);
    CHECK_REQ("GET / HTTP/2.0\r\n\r\n", want);
    CHECK_REQ("GET /\r\n\r\n", want);
    CHECK_REQ("GET / HTTP/1.1\r\nBad : x\r\n\r\n", want);
    CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", want);
    CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", want);
    /* A good request before a bad one is still delivered. */
    snprintf(want, sizeof want, "[GET /ok 1.1 ka=1 body=][err %d]", SG_EPROTO);
    CHECK_REQ("GET /ok HTTP/1.1\r\n\r\nBAD\r\n\r\n", want);

    /* max_request counts head and body as sent. */
    static const char req[] = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789"; /* 49 bytes */
    CHECK_EQ_INT(sizeof req - 1, 49);
    CHECK_REQ_MAX(req, 49, "[POST / 1.1 ka=1 body=0123456789]");
    snprintf(want, sizeof want, "[err %d]", SG_ETOOBIG);
    CHECK_REQ_MAX(req, 48, want);
    CHECK_REQ_MAX(req, 20, want);
    static const char creq[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"; /* 62 */
    CHECK_EQ_INT(sizeof creq - 1, 62);
    CHECK_REQ_MAX(creq, 62, "[POST / 1.1 ka=1 body=hello]");
    CHECK_REQ_MAX(creq, 61, want);
    CHECK_REQ_MAX(creq, 50, want);

    /* Heads over SG_H1_MAX_HEAD. */
    size_t n = SG_H1_MAX_HEAD + 64;
    char *big = malloc(n);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    memset(big + 19, 'a', n - 19);
    size_t cuts[2] = {100, 10000};
    for (size_t k = 0; k <= 2; k++) {
        char *t = run_req(&(size_t){1 << 20}, big, n, cuts, k);
        CHECK_EQ_STR(t, strlen(t), want);
        free(t);
    }
    free(big);
}

static int stop_request(void *ud, const sg_h1_request_t *req)
{
    (*(int *)ud)++;
    return SG_EABORT;
}

static void test_req_api(void)
{
    /* In place: slices point into the fed buffer when the request lies whole in it. */
    static const char two[] = "POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /y HTTP/1.1\r\n\r\n";
    int calls = 0;
    sg_h1_req_cb_t stop = {stop_request};
    sg_h1_req_t p;
    sg_h1_req_init(&p, 1024);
    CHECK_EQ_INT(sg_h1_req_feed(&p, two, sizeof two - 1, &stop, &calls), SG_EABORT);
    CHECK_EQ_INT(calls, 1);
    CHECK_EQ_INT(sg_h1_req_feed(&p, two, sizeof two - 1, &stop, &calls), SG_EPROTO);
    CHECK_EQ_INT(calls, 1);
    sg_h1_req_free(&p);
    CHECK(p.buf == NULL);

    /* Nothing is buffered for requests that arrive whole. */
    sg_h1_req_init(&p, 1024);
    CHECK_EQ_INT(sg_h1_req_feed(&p, two, sizeof two - 1, NULL, NULL), 0);
    CHECK(p.buf == NULL && p.len == 0);
    sg_h1_req_free(&p);
}

static int count_request(void *ud, const sg_h1_request_t *req)
{
    size_t *body_len = ud;
    *body_len = req->body.len;
    for (size_t i = 0; i < req->body.len; i++)
        if (req->body.base[i] != (char)('a' + i % 26))
            return SG_EPROTO;
    return 0;
}

static void test_req_big(void)
{
    /* Big bodies trickling in 1 KiB pieces are delivered whole and intact, and the buffer is empty after. */
    size_t body = 4u << 20;
    char *buf = malloc(body + 256);
    for (int chunked = 0; chunked <= 1; chunked++) {
        size_t n = (size_t)sprintf(buf,
                                   chunked ? "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n"
                                           : "POST / HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
                                   body);
        for (size_t i = 0; i < body; i++)
            buf[n++] = (char)('a' + i % 26);
        if (chunked) {
            memcpy(buf + n, "\r\n0\r\n\r\n", 7);
            n += 7;
        }
        size_t got = 0;
        sg_h1_req_t p;
        sg_h1_req_init(&p, 8u << 20);
        sg_h1_req_cb_t cb = {count_request};
        int rc = 0;
        for (size_t off = 0; off < n && rc == 0; off += 1024)
            rc = sg_h1_req_feed(&p, buf + off, n - off < 1024 ? n - off : 1024, &cb, &got);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(got, body);
        CHECK_EQ_INT(p.len, 0);
        sg_h1_req_free(&p);
    }
    free(buf);
}

/* ---------- request writer ---------- */

static int roundtrip_request(void *ud, const sg_h1_request_t *req)
{
    str_t *t = ud;
    str_fmt(t, "%.*s %.*s ka=%d ", (int)req->method.len, req->method.base, (int)req->path.len, req->path.base,
            req->keep_alive);
    str_add(t, req->body.base, req->body.len);
    return 0;
}

static void test_writer(void)
{
    const char *hdrs[] = {"Authorization: Bearer k", "X-Trace: 1", NULL};
    sg_h1_req_spec_t spec = {
        .method = "POST",
        .host = "127.0.0.1:8000",
        .path = "/v1/chat/completions",
        .headers = hdrs,
        .content_type = "application/json",
        .accept = "text/event-stream",
        .body = "{\"x\":1}",
        .body_len = 7,
    };
    char *out;
    ssize_t n = sg_h1_write_request(&spec, &out);
    static const char want[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
                               "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                               "Authorization: Bearer k\r\nX-Trace: 1\r\nContent-Length: 7\r\n\r\n{\"x\":1}";
    CHECK_EQ_INT(n, (ssize_t)sizeof want - 1);
    if (n > 0) {
        CHECK_EQ_STR(out, (size_t)n, want);
        /* What we write, our own request parser reads back. */
        str_t t = {0};
        sg_h1_req_t p;
        sg_h1_req_init(&p, 1 << 20);
        sg_h1_req_cb_t cb = {roundtrip_request};
        CHECK_EQ_INT(sg_h1_req_feed(&p, out, (size_t)n, &cb, &t), 0);
        CHECK_EQ_STR(t.s, t.len, "POST /v1/chat/completions ka=1 {\"x\":1}");
        sg_h1_req_free(&p);
        free(t.s);
    }
    free(out);

    /* Caller headers replace the defaults of the same name (any case); no body, no Content-Length. */
    const char *own[] = {"host: example.com", "content-type: text/plain", "ACCEPT: */*", NULL};
    sg_h1_req_spec_t get = {.method = "GET",
                            .host = "ignored",
                            .path = "/v1/models",
                            .headers = own,
                            .content_type = "application/json",
                            .accept = "text/event-stream"};
    n = sg_h1_write_request(&get, &out);
    static const char want_get[] =
        "GET /v1/models HTTP/1.1\r\nhost: example.com\r\ncontent-type: text/plain\r\nACCEPT: */*\r\n\r\n";
    CHECK_EQ_INT(n, (ssize_t)sizeof want_get - 1);
    if (n > 0)
        CHECK_EQ_STR(out, (size_t)n, want_get);
    free(out);

    /* An empty body that is present still says Content-Length: 0. */
    sg_h1_req_spec_t empty_body = {.method = "POST", .host = "h", .path = "/", .body = "", .body_len = 0};
    n = sg_h1_write_request(&empty_body, &out);
    static const char want_empty[] = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n";
    CHECK_EQ_INT(n, (ssize_t)sizeof want_empty - 1);
    if (n > 0)
        CHECK_EQ_STR(out, (size_t)n, want_empty);
    free(out);

    /* Refusals: header injection, malformed header lines, a path that is not origin-form. */
    const char *crlf[] = {"X-A: b\r\nX-Injected: 1", NULL};
    const char *nocolon[] = {"NoColon", NULL};
    const char *badname[] = {"Bad Name: v", NULL};
    const char *emptyname[] = {": v", NULL};
    const char *const *bad[] = {crlf, nocolon, badname, emptyname};
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++) {
        sg_h1_req_spec_t s = {.method = "GET", .host = "h", .path = "/", .headers = bad[i]};
        out = (char *)1;
        CHECK_EQ_INT(sg_h1_write_request(&s, &out), SG_EINVAL);
        CHECK(out == NULL);
    }
    sg_h1_req_spec_t nopath = {.method = "GET", .host = "h", .path = "v1/models"};
    CHECK_EQ_INT(sg_h1_write_request(&nopath, &out), SG_EINVAL);
    sg_h1_req_spec_t nohost = {.method = "GET", .path = "/"};
    CHECK_EQ_INT(sg_h1_write_request(&nohost, &out), SG_EINVAL);
}

int main(void)
{
    test_resp_vectors();
    test_resp_keep_alive();
    test_resp_errors();
    test_resp_caps();
    test_resp_api();
    test_resp_in_place();
    test_req_vectors();
    test_req_errors();
    test_req_api();
    test_req_big();
    test_writer();
    return test_finish("test_h1");
}
