/*
 * Header fields and trailers across our own client and server sessions (sg_h2 <-> sg_h2srv, bytes shuttled in
 * memory): the client's on_field sees the final head's fields (trailer false) and the trailers after the body
 * (trailer true), a Trailers-Only answer as one head block that ends the stream, and the fields feed
 * sg_grpc_meta to the right gRPC verdict. Also split delivery (one byte at a time).
 */
#include "test.h"

#include "sg_grpc.h"
#include "sg_h2.h"
#include "sg_h2srv.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    sg_grpc_meta_t meta;
    int fields_head, fields_trailer;
    int status;
    char body[64];
    size_t body_len;
    bool closed, complete;
    uint32_t code;
} cstream_t;

static int c_field(void *ud, void *sud, const char *n, size_t nl, const char *v, size_t vl, bool trailer)
{
    (void)ud;
    cstream_t *st = sud;
    if (trailer)
        st->fields_trailer++;
    else
        st->fields_head++;
    CHECK(sg_grpc_meta_header(&st->meta, n, nl, v, vl) == 0);
    return 0;
}

static int c_head(void *ud, void *sud, int status, bool es)
{
    (void)ud;
    (void)es;
    cstream_t *st = sud;
    st->status = status;
    return 0;
}

static int c_data(void *ud, void *sud, const char *d, size_t n)
{
    (void)ud;
    cstream_t *st = sud;
    if (st->body_len + n <= sizeof(st->body)) {
        memcpy(st->body + st->body_len, d, n);
        st->body_len += n;
    }
    return 0;
}

static void c_close(void *ud, void *sud, uint32_t code, bool complete, bool retryable)
{
    (void)ud;
    (void)retryable;
    cstream_t *st = sud;
    st->closed = true;
    st->complete = complete;
    st->code = code;
}

static const sg_h2_cb_t ccb = {.on_head = c_head, .on_data = c_data, .on_close = c_close, .on_field = c_field};

/* the server: path "/ok" answers a body and trailers; "/status" a Trailers-Only grpc-status 12; "/html" 404 */
typedef struct {
    sg_h2srv_t *s;
    int dummy;
} srv_t;

typedef struct {
    const char *body;
    size_t len, off;
} sstream_t;

static sstream_t sstreams[8];
static int n_sstreams;

static int s_request(void *ud, int32_t id, sg_slice_t method, sg_slice_t path, sg_slice_t body)
{
    (void)method;
    (void)body;
    srv_t *sv = ud;
    sstream_t *ss = &sstreams[n_sstreams++];
    sg_h2srv_set_stream_ud(sv->s, id, ss);
    if (path.len == 3 && memcmp(path.base, "/ok", 3) == 0) {
        sg_h2srv_field_t f[] = {{"content-type", "application/grpc", 16}};
        CHECK(sg_h2srv_respond_fields(sv->s, id, 200, f, 1, true) == 0);
        ss->body = "\0\0\0\0\3abc";
        ss->len = 8;
        sg_h2srv_field_t t[] = {{"grpc-status", "0", 1}, {"grpc-message", "fine%20thanks", 13}};
        CHECK(sg_h2srv_set_trailers(sv->s, id, t, 2) == 0);
    } else if (path.len == 7 && memcmp(path.base, "/status", 7) == 0) {
        sg_h2srv_field_t f[] = {
            {"content-type", "application/grpc", 16}, {"grpc-status", "12", 2}, {"grpc-message", "no such method", 14}};
        CHECK(sg_h2srv_respond_fields(sv->s, id, 200, f, 3, false) == 0);
    } else {
        sg_h2srv_field_t f[] = {{"content-type", "text/html", 9}};
        CHECK(sg_h2srv_respond_fields(sv->s, id, 404, f, 1, true) == 0);
        ss->body = "<html>";
        ss->len = 6;
    }
    return 0;
}

static ssize_t s_read(void *ud, void *sud, uint8_t *buf, size_t len, bool *eof)
{
    (void)ud;
    sstream_t *ss = sud;
    size_t n = ss->len - ss->off < len ? ss->len - ss->off : len;
    memcpy(buf, ss->body + ss->off, n);
    ss->off += n;
    *eof = ss->off == ss->len;
    return (ssize_t)n;
}

static void s_close(void *ud, void *sud, uint32_t code)
{
    (void)ud;
    (void)sud;
    (void)code;
}

static const sg_h2srv_cb_t scb = {.on_request = s_request, .on_read = s_read, .on_close = s_close};

/* Move bytes both ways until neither side has more; step 0 feeds whole buffers, else step bytes at a time. */
static void pump(sg_h2_t *c, srv_t *sv, size_t step)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (int round = 0; round < 100; round++) {
        len = 0;
        CHECK(sg_h2_drain(c, &buf, &len, &cap) == 0);
        size_t moved = len;
        for (size_t o = 0; o < len; o += step ? step : len)
            CHECK(sg_h2srv_feed(sv->s, buf + o, step && len - o > step ? step : len - o) == 0);
        len = 0;
        CHECK(sg_h2srv_drain(sv->s, &buf, &len, &cap) == 0);
        moved += len;
        for (size_t o = 0; o < len; o += step ? step : len)
            CHECK(sg_h2_feed(c, buf + o, step && len - o > step ? step : len - o) == 0);
        if (moved == 0)
            break;
    }
    free(buf);
}

static sg_h2_req_t req_for(char **raw, const char *path)
{
    static const char fmt[] = "POST %s HTTP/1.1\r\nHost: x\r\ncontent-type: application/grpc\r\nte: trailers\r\n\r\n";
    size_t n = strlen(path) + sizeof(fmt) + 8;
    *raw = malloc(n);
    int k = snprintf(*raw, n, fmt, path);
    memcpy(*raw + k, "\0\0\0\0\0", 5); /* an empty gRPC message as the body */
    sg_h2_req_t r;
    CHECK(sg_h2_req_from_h1(*raw, (size_t)k + 5, "http", &r) == 0);
    return r;
}

static void run(size_t step)
{
    n_sstreams = 0;
    memset(sstreams, 0, sizeof(sstreams));
    srv_t sv = {0};
    sv.s = sg_h2srv_new(&scb, &sv, 16, 1 << 20);
    sg_h2_t *c = sg_h2_client_new(&ccb, NULL);
    CHECK(sv.s && c);
    static cstream_t st[3];
    memset(st, 0, sizeof(st));
    const char *paths[3] = {"/ok", "/status", "/html"};
    char *raw[3];
    sg_h2_req_t req[3];
    for (int i = 0; i < 3; i++) {
        sg_grpc_meta_init(&st[i].meta);
        req[i] = req_for(&raw[i], paths[i]);
        CHECK(sg_h2_submit(c, &req[i], &st[i]) > 0);
    }
    pump(c, &sv, step);
    char err[160];

    /* a body, then trailers */
    CHECK(st[0].closed && st[0].complete && st[0].code == 0);
    CHECK_EQ_INT(st[0].status, 200);
    CHECK_EQ_INT(st[0].fields_head, 2);    /* :status, content-type */
    CHECK_EQ_INT(st[0].fields_trailer, 2); /* grpc-status, grpc-message */
    CHECK(st[0].body_len == 8 && memcmp(st[0].body + 5, "abc", 3) == 0);
    CHECK_EQ_INT(sg_grpc_meta_result(&st[0].meta, err, sizeof(err)), SG_GRPC_CALL_OK);
    CHECK_EQ_STR(st[0].meta.message, strlen(st[0].meta.message), "fine thanks");

    /* Trailers-Only: one head block with grpc-status, ending the stream */
    CHECK(st[1].closed && st[1].complete);
    CHECK_EQ_INT(st[1].fields_head, 4);
    CHECK_EQ_INT(st[1].fields_trailer, 0);
    CHECK_EQ_INT(sg_grpc_meta_result(&st[1].meta, err, sizeof(err)), SG_GRPC_CALL_STATUS);
    CHECK(strstr(err, "grpc-status 12 UNIMPLEMENTED: no such method") != NULL);

    /* not gRPC */
    CHECK(st[2].closed && st[2].complete);
    CHECK_EQ_INT(sg_grpc_meta_result(&st[2].meta, err, sizeof(err)), SG_GRPC_CALL_NOT_GRPC);
    CHECK(strstr(err, "not a gRPC server") != NULL);

    sg_h2_free(c);
    sg_h2srv_free(sv.s);
    for (int i = 0; i < 3; i++) {
        sg_h2_req_free(&req[i]);
        free(raw[i]);
    }
}

int main(void)
{
    run(0);
    run(1);
    run(7);
    return test_finish("test_h2_trailers");
}
