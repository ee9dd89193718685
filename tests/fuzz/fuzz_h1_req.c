/*
 * HTTP/1.1 request parser (the mock server's). The first three input bytes choose max_request and where to cut
 * the rest; the requests delivered and the final verdict must not depend on the cuts, and every request
 * delivered must look like one (a method and a target, a body within max_request).
 */
#include "sg_h1.h"

#include "../unit/trace.h"

typedef struct {
    str_t trace;
    size_t max_request;
} rec_t;

static int on_request(void *ud, const sg_h1_request_t *req)
{
    rec_t *r = ud;
    if (req->method.len == 0 || req->path.len == 0 || !req->body.base || req->body.len > r->max_request)
        abort();
    if (memchr(req->path.base, ' ', req->path.len) || memchr(req->method.base, ' ', req->method.len))
        abort();
    str_fmt(&r->trace, "[req 1.%d ka=%d m=%zu p=%zu b=%zu ", req->minor_version, req->keep_alive, req->method.len,
            req->path.len, req->body.len);
    str_add(&r->trace, req->method.base, req->method.len);
    str_add(&r->trace, req->path.base, req->path.len);
    str_add(&r->trace, req->body.base, req->body.len);
    str_add(&r->trace, "]", 1);
    return 0;
}

static const sg_h1_req_cb_t cb = {on_request};

static str_t run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    size_t max_request = *(const size_t *)ctx;
    rec_t r = {{0}, max_request};
    sg_h1_req_t p;
    sg_h1_req_init(&p, max_request);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        int rc = sg_h1_req_feed(&p, in + start, end - start, &cb, &r);
        if (rc < 0) {
            str_fmt(&r.trace, "[err %d]", rc);
            break;
        }
        if (rc != 0 || p.len > max_request)
            abort();
        start = end;
    }
    if (start == len && p.len)
        str_add(&r.trace, "[partial]", 9);
    sg_h1_req_free(&p);
    return r.trace;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const size_t max_requests[] = {16, 64, 100, 256, 1024, 4096, 1 << 20, 8 << 20};
    uint8_t mode = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | 1u;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    size_t max_request = max_requests[mode & 7];

    str_t whole = run(&max_request, in, len, NULL, 0);
    trace_fuzz_splits(run, &max_request, in, len, &whole, mode & 8, (size_t)(mode >> 4) % 16 + 1, seed);
    free(whole.s);
    return 0;
}
