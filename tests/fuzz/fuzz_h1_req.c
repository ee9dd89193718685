/*
 * HTTP/1.1 request parser (the mock server's). The first three input bytes choose max_request and where to cut
 * the rest; the requests delivered and the final verdict must not depend on the cuts, and every request
 * delivered must look like one (a method and a target, a body within max_request).
 */
#include "sg_h1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *s;
    size_t len, cap;
} str_t;

static void str_add(str_t *t, const void *s, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        while (cap < t->len + n)
            cap *= 2;
        t->s = realloc(t->s, cap);
        if (!t->s)
            abort();
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
}

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
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "[req 1.%d ka=%d m=%zu p=%zu b=%zu ", req->minor_version, req->keep_alive,
                     req->method.len, req->path.len, req->body.len);
    str_add(&r->trace, tmp, (size_t)n);
    str_add(&r->trace, req->method.base, req->method.len);
    str_add(&r->trace, req->path.base, req->path.len);
    str_add(&r->trace, req->body.base, req->body.len);
    str_add(&r->trace, "]", 1);
    return 0;
}

static const sg_h1_req_cb_t cb = {on_request};

static str_t run(const char *in, size_t len, const size_t *cuts, size_t ncuts, size_t max_request)
{
    rec_t r = {{0}, max_request};
    sg_h1_req_t p;
    sg_h1_req_init(&p, max_request);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        int rc = sg_h1_req_feed(&p, in + start, end - start, &cb, &r);
        if (rc < 0) {
            char tmp[32];
            int k = snprintf(tmp, sizeof tmp, "[err %d]", rc);
            str_add(&r.trace, tmp, (size_t)k);
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

    str_t whole = run(in, len, NULL, 0, max_request);

    size_t ncuts = 0;
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    if (mode & 8) {
        for (size_t i = 1; i < len; i++)
            cuts[ncuts++] = i;
    } else if (len > 1) {
        size_t want = (size_t)(mode >> 4) % 16 + 1, pos = 0;
        for (size_t i = 0; i < want; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            size_t left = len - 1 - pos;
            if (left == 0)
                break;
            pos += 1 + seed % (left < 64 ? left : (i % 2 ? 64 : left));
            if (pos >= len)
                break;
            cuts[ncuts++] = pos;
        }
    }
    str_t split = run(in, len, cuts, ncuts, max_request);
    if (whole.len != split.len || (whole.len && memcmp(whole.s, split.s, whole.len) != 0)) {
        fprintf(stderr, "split feeding differs (%zu cuts)\nwhole: %.*s\nsplit: %.*s\n", ncuts, (int)whole.len, whole.s,
                (int)split.len, split.s);
        abort();
    }
    free(cuts);
    free(whole.s);
    free(split.s);
    return 0;
}
