/*
 * SSE parser: exact event sequences for every vector, fed whole, split at every boundary, split at every pair
 * of boundaries (short vectors) and byte by byte; the zero-copy promise; the max_event cap.
 */
#include "sg_sse.h"
#include "test.h"
#include "trace.h"

typedef struct {
    str_t trace;
    int events;
    const char *feed_base; /* the buffer being fed, to tell in-place slices from copies */
    size_t feed_len;
    int in_place;
    int stop_after; /* return SG_EABORT from the n-th event when > 0 */
} rec_t;

static int on_event(void *ud, const sg_sse_event_t *ev)
{
    rec_t *r = ud;
    CHECK(ev->data.base != NULL && ev->event.base != NULL);
    str_add(&r->trace, "[", 1);
    str_add(&r->trace, ev->event.base, ev->event.len);
    str_add(&r->trace, "|", 1);
    str_add(&r->trace, ev->data.base, ev->data.len);
    str_add(&r->trace, "]", 1);
    r->events++;
    if (ev->data.len && r->feed_base && ev->data.base >= r->feed_base && ev->data.base < r->feed_base + r->feed_len)
        r->in_place++;
    if (r->stop_after && r->events == r->stop_after)
        return SG_EABORT;
    return 0;
}

static const sg_sse_cb_t cb = {on_event};

static char *run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    size_t max_event = *(const size_t *)ctx;
    rec_t r = {0};
    sg_sse_t p;
    sg_sse_init(&p, max_event);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        r.feed_base = in + start;
        r.feed_len = end - start;
        int rc = sg_sse_feed(&p, in + start, end - start, &cb, &r);
        if (rc < 0) {
            str_fmt(&r.trace, "[err %d]", rc);
            break;
        }
        start = end;
    }
    if (start == len && sg_sse_pending(&p))
        str_add(&r.trace, "[pending]", 9);
    sg_sse_free(&p);
    return str_take(&r.trace);
}

static void check_ex(const char *in, size_t len, size_t max_event, const char *want, int line)
{
    trace_check_splits(run, &max_event, in, len, 200, want, "events", "test_sse.c", line);
}

#define CHECK_SSE(in, want) check_ex((in), sizeof(in) - 1, 1 << 16, (want), __LINE__)
#define CHECK_SSE_MAX(in, max, want) check_ex((in), sizeof(in) - 1, (max), (want), __LINE__)

static void test_vectors(void)
{
    CHECK_SSE("data: hello\n\n", "[|hello]");
    /* The three line endings, and mixes of them within one event. */
    CHECK_SSE("data: a\r\n\r\ndata: b\r\rdata: c\n\n", "[|a][|b][|c]");
    CHECK_SSE("data: a\r\ndata: b\rdata: c\n\r\n", "[|a\nb\nc]");
    CHECK_SSE("data: x\r\n\n", "[|x]");
    CHECK_SSE("data: x\n\r", "[|x]");
    /* A CRLF pair is one line ending even when a feed ends between CR and LF; CR CR is two. */
    CHECK_SSE("data: 1\r\r\ndata: 2\r\n\r\n", "[|1][|2]");
    /* "data" with and without the space; only one space is stripped; a line with no colon is a field name. */
    CHECK_SSE("data:nospace\n\n", "[|nospace]");
    CHECK_SSE("data:  two\n\n", "[| two]");
    CHECK_SSE("data\n\n", "[|]");
    CHECK_SSE("data:\n\n", "[|]");
    CHECK_SSE("data:\ndata:\n\n", "[|\n]");
    CHECK_SSE("data: a:b: c\n\n", "[|a:b: c]");
    CHECK_SSE("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
              "[|{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}]");
    /* Multi-line data joins with LF. */
    CHECK_SSE("data: first\ndata: second\ndata:third\n\n", "[|first\nsecond\nthird]");
    /* event field: the last one wins, and it does not leak into the next event. */
    CHECK_SSE("event: add\ndata: 1\n\nevent: a\nevent: b\ndata: 2\n\ndata: 3\n\n", "[add|1][b|2][|3]");
    CHECK_SSE("event: lonely\n\ndata: next\n\n", "[|next]");
    CHECK_SSE("event:\ndata: x\n\n", "[|x]");
    /* Comments, id, retry and unknown fields are ignored; field names are case-sensitive. */
    CHECK_SSE(": ping\n\n:\n\n", "");
    CHECK_SSE(": keep-alive\ndata: x\n: mid\ndata: y\n\n", "[|x\ny]");
    CHECK_SSE("id: 7\nretry: 1000\nfoo: bar\nData: no\ndata: yes\n\n", "[|yes]");
    CHECK_SSE("id\nretry\n\n", "");
    /* A BOM is skipped at the start of the stream only; a partial BOM is content. */
    CHECK_SSE("\xEF\xBB\xBF"
              "data: bom\n\n",
              "[|bom]");
    CHECK_SSE("\xEF\xBB\xBF"
              "data: 1\n\n\xEF\xBB\xBF"
              "data: 2\n\n",
              "[|1]");
    CHECK_SSE("\xEF\xBB"
              "data: x\n\ndata: y\n\n",
              "[|y]");
    CHECK_SSE("\xEF"
              "\n\ndata: y\n\n",
              "[|y]");
    CHECK_SSE("\xEF\xBB\xBF", "");
    /* Blank lines alone dispatch nothing; events without a final blank line are pending. */
    CHECK_SSE("\n\n\r\n\r\r", "");
    CHECK_SSE("data: x\n", "[pending]");
    CHECK_SSE("data: x", "[pending]");
    CHECK_SSE("event: e\n", "[pending]");
    CHECK_SSE("\xEF\xBB", "[pending]");
    CHECK_SSE(": comment\n", "");
    CHECK_SSE("data: a\n\ndata: b", "[|a][pending]");
    /* UTF-8 and other bytes pass through untouched. */
    CHECK_SSE("data: h\xC3\xA9llo \xF0\x9F\x98\x80\t\x01\n\n", "[|h\xC3\xA9llo \xF0\x9F\x98\x80\t\x01]");
    /* The OpenAI stream shape end to end. */
    CHECK_SSE("data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n", "[|{\"a\":1}][|{\"a\":2}][|[DONE]]");
}

static void test_many_per_feed(void)
{
    /* 1000 events in one buffer: all delivered, in order, in place. */
    str_t in = {0};
    str_t want = {0};
    for (int i = 0; i < 1000; i++) {
        char tmp[64];
        int n = snprintf(tmp, sizeof tmp, "data: {\"i\":%d}\n\n", i);
        str_add(&in, tmp, (size_t)n);
        n = snprintf(tmp, sizeof tmp, "[|{\"i\":%d}]", i);
        str_add(&want, tmp, (size_t)n);
    }
    rec_t r = {0};
    r.feed_base = in.s;
    r.feed_len = in.len;
    sg_sse_t p;
    sg_sse_init(&p, 1024);
    CHECK_EQ_INT(sg_sse_feed(&p, in.s, in.len, &cb, &r), 0);
    CHECK_EQ_INT(r.events, 1000);
    CHECK_EQ_INT(r.in_place, 1000);
    CHECK_EQ_STR(r.trace.s, r.trace.len, want.s);
    /* Zero-copy means nothing was allocated either. */
    CHECK(p.buf == NULL && p.scratch == NULL && p.evbuf == NULL);
    CHECK(!sg_sse_pending(&p));
    sg_sse_free(&p);
    free(r.trace.s);

    /* The same stream in 7-byte pieces still gives the same events. */
    memset(&r, 0, sizeof r);
    sg_sse_init(&p, 1024);
    for (size_t off = 0; off < in.len; off += 7) {
        size_t n = in.len - off < 7 ? in.len - off : 7;
        CHECK_EQ_INT(sg_sse_feed(&p, in.s + off, n, &cb, &r), 0);
    }
    CHECK_EQ_STR(r.trace.s, r.trace.len, want.s);
    sg_sse_free(&p);
    free(r.trace.s);
    free(in.s);
    free(want.s);
}

static void test_in_place(void)
{
    /* A whole event with an event name inside one feed: both slices point into the fed buffer. */
    static const char ev[] = "event: delta\ndata: {\"x\":1}\n\n";
    rec_t r = {0};
    r.feed_base = ev;
    r.feed_len = sizeof ev - 1;
    sg_sse_t p;
    sg_sse_init(&p, 1024);
    CHECK_EQ_INT(sg_sse_feed(&p, ev, sizeof ev - 1, &cb, &r), 0);
    CHECK_EQ_INT(r.in_place, 1);
    sg_sse_free(&p);
    free(r.trace.s);

    /* Multi-line data must be joined: a copy, but the right one. */
    static const char ml[] = "data: a\ndata: b\n\n";
    memset(&r, 0, sizeof r);
    r.feed_base = ml;
    r.feed_len = sizeof ml - 1;
    sg_sse_init(&p, 1024);
    CHECK_EQ_INT(sg_sse_feed(&p, ml, sizeof ml - 1, &cb, &r), 0);
    CHECK_EQ_INT(r.in_place, 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[|a\nb]");
    sg_sse_free(&p);
    free(r.trace.s);

    /* An event split across feeds is delivered from the parser's own memory, which the caller may reuse. */
    char buf[32];
    memset(&r, 0, sizeof r);
    sg_sse_init(&p, 1024);
    memcpy(buf, "event: e\ndata: part", 19);
    CHECK_EQ_INT(sg_sse_feed(&p, buf, 19, &cb, &r), 0);
    CHECK(sg_sse_pending(&p));
    memset(buf, '#', sizeof buf); /* the caller's buffer is recycled between feeds */
    memcpy(buf, "ial\n\n", 5);
    CHECK_EQ_INT(sg_sse_feed(&p, buf, 5, &cb, &r), 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[e|partial]");
    CHECK(!sg_sse_pending(&p));
    sg_sse_free(&p);
    free(r.trace.s);

    /* Same when the whole data line came in the first feed and only the blank line in the second. */
    memset(&r, 0, sizeof r);
    sg_sse_init(&p, 1024);
    memcpy(buf, "event: e\ndata: whole\n", 21);
    CHECK_EQ_INT(sg_sse_feed(&p, buf, 21, &cb, &r), 0);
    memset(buf, '#', sizeof buf);
    CHECK_EQ_INT(sg_sse_feed(&p, "\n", 1, &cb, &r), 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[e|whole]");
    sg_sse_free(&p);
    free(r.trace.s);
}

static void test_caps(void)
{
    char want[64];
    snprintf(want, sizeof want, "[err %d]", SG_ETOOBIG);
    /* max_event bounds every line, and the joined data plus the event name; exactly at the cap is fine. */
    CHECK_SSE_MAX("data: 0123456789\n\n", 16, "[|0123456789]");
    CHECK_SSE_MAX("data: 0123456789A\n\n", 16, want);
    CHECK_SSE_MAX("event: abcdef\ndata: 0123456789\n\n", 16, "[abcdef|0123456789]");
    CHECK_SSE_MAX("event: abcdefg\ndata: 0123456789\n\n", 16, want);
    /* Joined lines count their separators. */
    CHECK_SSE_MAX("data: 0123456\ndata: 01234567\n\n", 16, "[|0123456\n01234567]");
    CHECK_SSE_MAX("data: 01234567\ndata: 01234567\n\n", 16, want);
    CHECK_SSE_MAX("data: 01234567\ndata: 01234567\n", 16, want);
    /* Comments too, so nothing is buffered without bound. */
    CHECK_SSE_MAX(": 0123456789ABCD\n\n", 16, "");
    CHECK_SSE_MAX(": 0123456789ABCDE\n\n", 16, want);
    CHECK_SSE_MAX(": 0123456789ABCDE", 16, want);
    /* Events before the oversized one are delivered. */
    snprintf(want, sizeof want, "[|ok][err %d]", SG_ETOOBIG);
    CHECK_SSE_MAX("data: ok\n\ndata: 0123456789ABCDEF\n\n", 16, want);
    CHECK_SSE_MAX("data: ok\n\n: 0123456789ABCDEFGHIJ", 16, want);

    /* A stream that never ends a line is stopped at the cap. */
    sg_sse_t p;
    sg_sse_init(&p, 4096);
    char junk[1000];
    memset(junk, 'x', sizeof junk);
    int rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++)
        rc = sg_sse_feed(&p, junk, sizeof junk, &cb, NULL);
    CHECK_EQ_INT(rc, SG_ETOOBIG);
    CHECK(p.cap <= 8192);
    sg_sse_free(&p);
}

static void test_api(void)
{
    /* A callback's stop is returned, and the events before it were delivered once. */
    static const char three[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    rec_t r = {0};
    r.stop_after = 2;
    sg_sse_t p;
    sg_sse_init(&p, 1024);
    CHECK_EQ_INT(sg_sse_feed(&p, three, sizeof three - 1, &cb, &r), SG_EABORT);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[|1][|2]");
    /* Reset: the partial event is forgotten and a BOM is expected again. */
    CHECK_EQ_INT(sg_sse_feed(&p, "data: lost", 10, &cb, &r), 0);
    CHECK(sg_sse_pending(&p));
    sg_sse_reset(&p);
    CHECK(!sg_sse_pending(&p));
    r.stop_after = 0;
    CHECK_EQ_INT(sg_sse_feed(&p, "\xEF\xBB\xBF\n\ndata: new\n\n", 17, &cb, &r), 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[|1][|2][|new]");
    /* A CR at the end of the last feed does not swallow the LF of the next stream after a reset. */
    CHECK_EQ_INT(sg_sse_feed(&p, "data: a\r", 8, &cb, &r), 0);
    sg_sse_reset(&p);
    CHECK_EQ_INT(sg_sse_feed(&p, "\ndata: b\n\n", 10, &cb, &r), 0);
    CHECK_EQ_STR(r.trace.s, r.trace.len, "[|1][|2][|new][|b]");
    /* NULL callbacks parse and drop; empty feeds change nothing. */
    CHECK_EQ_INT(sg_sse_feed(&p, three, sizeof three - 1, NULL, NULL), 0);
    CHECK_EQ_INT(sg_sse_feed(&p, "", 0, &cb, &r), 0);
    sg_sse_free(&p);
    sg_sse_free(&p); /* idempotent */
    free(r.trace.s);
}

int main(void)
{
    test_vectors();
    test_many_per_feed();
    test_in_place();
    test_caps();
    test_api();
    return test_finish("test_sse");
}
