/*
 * HTTP/1.1 response parser. The first three input bytes choose how to feed the rest: the options (HEAD request,
 * EOF at the end) and where to cut it. The trace of events (heads, body bytes, completions, the error) must not
 * depend on the cuts, and the callbacks must keep their promises (body only between head and completion,
 * Content-Length bodies exactly that long, consumed bytes never past the buffer).
 */
#include "sg_h1.h"

#include "../unit/trace.h"

typedef struct {
    str_t trace;
    bool in_body;
    bool head_seen;
    bool done;
    bool cl_framed;
    bool no_body;
    bool head_req;
    int64_t content_length;
    uint64_t body_total;
} rec_t;

static int on_head(void *ud, const sg_h1_resp_head_t *h)
{
    rec_t *r = ud;
    if (r->head_seen || r->done || h->status < 200 || h->status > 999 || h->minor_version < 0 || h->minor_version > 9)
        abort();
    if (h->body_until_close && (h->keep_alive || h->chunked))
        abort();
    if (h->chunked && h->content_length >= 0)
        abort(); /* Transfer-Encoding with Content-Length is refused */
    if (h->ka_max < -1 || h->ka_timeout_s < -1)
        abort(); /* a Keep-Alive hint is a count, or -1 when there is none */
    r->head_seen = true;
    r->in_body = false;
    r->content_length = h->content_length;
    r->cl_framed = !h->chunked && !h->body_until_close && h->content_length >= 0;
    r->no_body = r->head_req || h->status == 204 || h->status == 304;
    r->body_total = 0;
    str_fmt(&r->trace, "[head %d 1.%d cl=%lld ch=%d ka=%d es=%d uc=%d max=%d timeout=%d]", h->status, h->minor_version,
            (long long)h->content_length, h->chunked, h->keep_alive, h->event_stream, h->body_until_close,
            (int)h->ka_max, (int)h->ka_timeout_s);
    return 0;
}

static int on_body(void *ud, const char *data, size_t len)
{
    rec_t *r = ud;
    if (!r->head_seen || r->done || len == 0)
        abort();
    if (!r->in_body)
        str_add(&r->trace, "[body ", 6);
    str_add(&r->trace, data, len);
    r->in_body = true;
    r->body_total += len;
    return 0;
}

static int on_complete(void *ud)
{
    rec_t *r = ud;
    if (!r->head_seen || r->done)
        abort();
    /* A Content-Length body is exactly that long; 204/304/HEAD deliver nothing at all. */
    if (r->no_body ? r->body_total != 0 : r->cl_framed && r->body_total != (uint64_t)r->content_length)
        abort();
    r->in_body = false;
    r->done = true;
    str_add(&r->trace, "[done]", 6);
    return 0;
}

static const sg_h1_resp_cb_t cb = {on_head, on_body, on_complete};

typedef struct {
    bool head_req, eof;
} opts_t;

static str_t run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    const opts_t *o = ctx;
    bool head_req = o->head_req, eof = o->eof;
    rec_t r = {0};
    r.head_req = head_req;
    sg_h1_resp_t p;
    sg_h1_resp_init(&p);
    sg_h1_resp_set_head_request(&p, head_req);
    size_t start = 0;
    bool failed = false;
    for (size_t c = 0; c <= ncuts && !failed; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        size_t off = start;
        while (off < end) {
            ssize_t n = sg_h1_resp_feed(&p, in + off, end - off, &cb, &r);
            if (n < 0) {
                str_fmt(&r.trace, "[err %zd]", n);
                failed = true;
                break;
            }
            if (n == 0 || (size_t)n > end - off)
                abort();
            off += (size_t)n;
            if (r.done) {
                if (sg_h1_resp_started(&p))
                    abort();
                sg_h1_resp_reset(&p);
                sg_h1_resp_set_head_request(&p, head_req);
                r.done = r.head_seen = false;
            } else if (off != end) {
                abort(); /* only a completed response may stop short */
            }
        }
        start = end;
    }
    if (eof && !failed) {
        int rc = sg_h1_resp_eof(&p, &cb, &r);
        str_fmt(&r.trace, "[eof %d]", rc);
    }
    sg_h1_resp_free(&p);
    return r.trace;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t mode = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | 1u;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    opts_t o = {mode & 1, mode & 2};

    str_t whole = run(&o, in, len, NULL, 0);
    /* Byte by byte, or up to 16 cuts at pseudo-random places. */
    trace_fuzz_splits(run, &o, in, len, &whole, mode & 4, (size_t)(mode >> 3) % 16 + 1, seed);
    free(whole.s);
    return 0;
}
