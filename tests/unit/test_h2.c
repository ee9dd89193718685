/*
 * proto/h2.c: a client session (sg_h2) against an nghttp2 server session, both in memory, both sans-I/O.
 * Bytes move between them whole or one at a time (split feeding); the server answers as each test scripts.
 */
#include "sg_h1.h"
#include "h2pipe.h"
#include "sg_h2.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>

/* ---------------- the client's view ---------------- */

typedef struct {
    int status;
    bool event_stream;
    int heads;
    char body[1 << 21];
    size_t body_len;
    int closes;
    uint32_t error_code;
    bool complete, retryable;
} cstream_t;

typedef struct {
    int goaways;
    int32_t last_stream_id;
    uint32_t goaway_code;
} cstate_t;

static int c_head(void *ud, void *sud, int status, bool es)
{
    cstream_t *s = sud;
    s->status = status;
    s->event_stream = es;
    s->heads++;
    return 0;
}

static int c_data(void *ud, void *sud, const char *d, size_t n)
{
    cstream_t *s = sud;
    if (s->body_len + n <= sizeof(s->body)) {
        memcpy(s->body + s->body_len, d, n);
        s->body_len += n;
    }
    return 0;
}

static void c_close(void *ud, void *sud, uint32_t code, bool complete, bool retryable)
{
    cstream_t *s = sud;
    s->closes++;
    s->error_code = code;
    s->complete = complete;
    s->retryable = retryable;
}

static void c_goaway(void *ud, int32_t last, uint32_t code)
{
    cstate_t *c = ud;
    c->goaways++;
    c->last_stream_id = last;
    c->goaway_code = code;
}

static const sg_h2_cb_t ccb = {.on_head = c_head, .on_data = c_data, .on_close = c_close, .on_goaway = c_goaway};

/* ---------------- the server ---------------- */

#define MAX_SREQ 16
typedef struct {
    int32_t id;
    char method[16], path[128], authority[64], ctype[64], accept[64];
    bool saw_host, saw_connection;
    char body[1 << 16];
    size_t body_len;
    bool ended; /* END_STREAM from the client */
    uint32_t rst_code;
    bool rst;
} sreq_t;

typedef struct {
    nghttp2_session *ng;
    sreq_t reqs[MAX_SREQ];
    int n;
    const char *resp_body;
    size_t resp_len, resp_off[MAX_SREQ];
} server_t;

static sreq_t *sreq(server_t *s, int32_t id, bool create)
{
    for (int i = 0; i < s->n; i++)
        if (s->reqs[i].id == id)
            return &s->reqs[i];
    if (!create || s->n == MAX_SREQ)
        return NULL;
    sreq_t *r = &s->reqs[s->n++];
    memset(r, 0, sizeof(*r));
    r->id = id;
    return r;
}

static void copy_field(char *dst, size_t cap, const uint8_t *v, size_t n)
{
    n = n < cap - 1 ? n : cap - 1;
    memcpy(dst, v, n);
    dst[n] = 0;
}

static int s_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl, const uint8_t *v,
                    size_t vl, uint8_t flags, void *user)
{
    sreq_t *r = sreq(user, f->hd.stream_id, true);
    if (!r)
        return 0;
    if (nl == 7 && !memcmp(name, ":method", 7))
        copy_field(r->method, sizeof(r->method), v, vl);
    else if (nl == 5 && !memcmp(name, ":path", 5))
        copy_field(r->path, sizeof(r->path), v, vl);
    else if (nl == 10 && !memcmp(name, ":authority", 10))
        copy_field(r->authority, sizeof(r->authority), v, vl);
    else if (nl == 12 && !memcmp(name, "content-type", 12))
        copy_field(r->ctype, sizeof(r->ctype), v, vl);
    else if (nl == 6 && !memcmp(name, "accept", 6))
        copy_field(r->accept, sizeof(r->accept), v, vl);
    else if (nl == 4 && !memcmp(name, "host", 4))
        r->saw_host = true;
    else if (nl == 10 && !memcmp(name, "connection", 10))
        r->saw_connection = true;
    return 0;
}

static int s_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t n, void *user)
{
    sreq_t *r = sreq(user, id, false);
    if (r && r->body_len + n <= sizeof(r->body)) {
        memcpy(r->body + r->body_len, d, n);
        r->body_len += n;
    }
    return 0;
}

static int s_frame(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    sreq_t *r = sreq(user, f->hd.stream_id, false);
    if (r && (f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        r->ended = true;
    if (r && f->hd.type == NGHTTP2_RST_STREAM) {
        r->rst = true;
        r->rst_code = f->rst_stream.error_code;
    }
    return 0;
}

static ssize_t s_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *user)
{
    server_t *s = user;
    size_t *off = &s->resp_off[src->fd];
    size_t n = s->resp_len - *off < len ? s->resp_len - *off : len;
    memcpy(buf, s->resp_body + *off, n);
    *off += n;
    if (*off == s->resp_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void server_init(server_t *s, uint32_t max_streams)
{
    memset(s, 0, sizeof(*s));
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, s_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, s_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, s_frame);
    nghttp2_session_server_new(&s->ng, cb, s);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams}};
    nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, iv, 1);
}

/* Respond on stream id with status, content type and s->resp_body. */
static void server_respond(server_t *s, int32_t id, const char *status, const char *ctype)
{
    int slot = (int)(sreq(s, id, false) - s->reqs);
    s->resp_off[slot] = 0;
    nghttp2_nv nv[] = {
        {(uint8_t *)":status", (uint8_t *)status, 7, strlen(status), 0},
        {(uint8_t *)"content-type", (uint8_t *)ctype, 12, strlen(ctype), 0},
    };
    nghttp2_data_provider prd = {.source.fd = slot, .read_callback = s_read};
    int rv = nghttp2_submit_response(s->ng, id, nv, 2, &prd);
    CHECK_EQ_INT(rv, 0);
}

static int feed_client(void *ctx, const char *p, size_t n)
{
    return sg_h2_feed(ctx, p, n);
}

/* Move bytes both ways until neither side has anything to send; step 0: whole, else pieces of step bytes. */
static void pump(sg_h2_t *c, server_t *s, size_t step)
{
    for (int round = 0; round < 100; round++) {
        char *buf = NULL;
        size_t len = 0, cap = 0;
        CHECK_EQ_INT(sg_h2_drain(c, &buf, &len, &cap), 0);
        CHECK_EQ_INT(h2pipe_split(buf, len, step, h2pipe_to_ng, s->ng), 0);
        free(buf);
        ssize_t back = h2pipe_from_ng(s->ng, step, feed_client, c);
        CHECK(back >= 0);
        if (len == 0 && back <= 0)
            return;
    }
    CHECK(!"pump did not settle");
}

static sg_h2_req_t make_req(char **raw, const char *path, const char *body)
{
    const char *hdrs[] = {"Authorization: Bearer x", "Connection: keep-alive", NULL};
    sg_h1_req_spec_t spec = {.method = "POST",
                             .host = "127.0.0.1:8000",
                             .path = path,
                             .headers = hdrs,
                             .content_type = "application/json",
                             .accept = "text/event-stream",
                             .body = body,
                             .body_len = strlen(body)};
    ssize_t n = sg_h1_write_request(&spec, raw);
    CHECK(n > 0);
    sg_h2_req_t r;
    CHECK_EQ_INT(sg_h2_req_from_h1(*raw, (size_t)n, "http", &r), 0);
    return r;
}

static const char *nv_get(const sg_h2_req_t *r, const char *name)
{
    static char v[256];
    for (size_t i = 0; i < r->n_nv; i++)
        if (r->nv[i].namelen == strlen(name) && !memcmp(r->nv[i].name, name, r->nv[i].namelen)) {
            snprintf(v, sizeof(v), "%.*s", (int)r->nv[i].valuelen, (const char *)r->nv[i].value);
            return v;
        }
    return NULL;
}

static void test_req_from_h1(void)
{
    char *raw;
    sg_h2_req_t r = make_req(&raw, "/v1/chat/completions?x=1", "{\"a\":1}");
    CHECK(r.n_nv >= 4);
    CHECK_EQ_STR(r.nv[0].name, r.nv[0].namelen, ":method");
    CHECK(!strcmp(nv_get(&r, ":method"), "POST"));
    CHECK(!strcmp(nv_get(&r, ":scheme"), "http"));
    CHECK(!strcmp(nv_get(&r, ":path"), "/v1/chat/completions?x=1"));
    CHECK(!strcmp(nv_get(&r, ":authority"), "127.0.0.1:8000"));
    CHECK(!strcmp(nv_get(&r, "authorization"), "Bearer x"));
    CHECK(!strcmp(nv_get(&r, "content-type"), "application/json"));
    CHECK(nv_get(&r, "host") == NULL);
    CHECK(nv_get(&r, "connection") == NULL);
    /* pseudo-headers come before every regular field */
    bool regular = false;
    for (size_t i = 0; i < r.n_nv; i++) {
        if (r.nv[i].name[0] == ':')
            CHECK(!regular);
        else
            regular = true;
    }
    CHECK_EQ_STR(r.body, r.body_len, "{\"a\":1}");
    sg_h2_req_free(&r);
    free(raw);

    sg_h2_req_t bad;
    CHECK_EQ_INT(sg_h2_req_from_h1("GET / HTTP/1.1\r\nX: y\r\n\r\n", 24, "http", &bad), SG_EINVAL); /* no Host */
    CHECK_EQ_INT(sg_h2_req_from_h1("GET / HTTP/1.1\r\nHost: a\r\n", 25, "http", &bad), SG_EINVAL);  /* no end */
}

static void test_streams(size_t step)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    server_t s;
    server_init(&s, 100);
    char *raw[3];
    sg_h2_req_t req[3];
    static cstream_t st[3];
    memset(st, 0, sizeof(st));
    const char *bodies[3] = {"{\"n\":0}", "{\"n\":1}", ""};
    for (int i = 0; i < 3; i++) {
        req[i] = make_req(&raw[i], "/v1/completions", bodies[i]);
        CHECK_EQ_INT(sg_h2_submit(c, &req[i], &st[i]), 1 + 2 * i);
    }
    CHECK_EQ_INT(sg_h2_open_streams(c), 3);
    pump(c, &s, step);
    CHECK_EQ_INT(s.n, 3);
    for (int i = 0; i < 3; i++) {
        CHECK(s.reqs[i].ended);
        CHECK(!strcmp(s.reqs[i].method, "POST"));
        CHECK(!strcmp(s.reqs[i].path, "/v1/completions"));
        CHECK(!strcmp(s.reqs[i].authority, "127.0.0.1:8000"));
        CHECK(!strcmp(s.reqs[i].accept, "text/event-stream"));
        CHECK(!s.reqs[i].saw_host && !s.reqs[i].saw_connection);
        CHECK_EQ_STR(s.reqs[i].body, s.reqs[i].body_len, bodies[i]);
    }
    s.resp_body = "data: {\"x\":1}\n\ndata: [DONE]\n\n";
    s.resp_len = strlen(s.resp_body);
    server_respond(&s, 3, "200", "text/event-stream; charset=utf-8");
    server_respond(&s, 1, "503", "application/json");
    pump(c, &s, step);
    CHECK_EQ_INT(st[1].heads, 1);
    CHECK_EQ_INT(st[1].status, 200);
    CHECK(st[1].event_stream);
    CHECK_EQ_STR(st[1].body, st[1].body_len, s.resp_body);
    CHECK_EQ_INT(st[1].closes, 1);
    CHECK(st[1].complete && !st[1].retryable);
    CHECK_EQ_INT(st[1].error_code, 0);
    CHECK_EQ_INT(st[0].status, 503);
    CHECK(!st[0].event_stream && st[0].complete);
    CHECK_EQ_INT(st[2].closes, 0);
    CHECK_EQ_INT(sg_h2_open_streams(c), 1);
    sg_h2_free(c); /* stream 5 still open: closed as cancelled */
    CHECK_EQ_INT(st[2].closes, 1);
    CHECK_EQ_INT(st[2].error_code, NGHTTP2_CANCEL);
    CHECK(!st[2].complete && !st[2].retryable);
    for (int i = 0; i < 3; i++) {
        sg_h2_req_free(&req[i]);
        free(raw[i]);
    }
    nghttp2_session_del(s.ng);
}

/*
 * sg_h2_submit_patched (--cache-bust's per-request words): the body goes out with the patch's bytes in place of the
 * request's, wherever DATA frames cut it. A 40,000-byte body takes three frames of at most 16,384: patches at its
 * start, across the first frame's end and at its very end; one that does not fit is refused; the request's own
 * bytes are never written.
 */
static void test_patched(size_t step)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    static server_t s;
    server_init(&s, 100);
    size_t len = 40000;
    char *body = malloc(len + 1);
    for (size_t i = 0; i < len; i++)
        body[i] = (char)('a' + i % 26);
    body[len] = '\0';
    char *raw;
    sg_h2_req_t req = make_req(&raw, "/v1/completions", body);
    static cstream_t st[4];
    memset(st, 0, sizeof(st));
    const struct {
        size_t off;
        const char *patch;
    } cases[] = {{0, "HELLO"}, {16380, "0123456789"}, {39997, "XYZ"}};
    for (int i = 0; i < 3; i++)
        CHECK(sg_h2_submit_patched(c, &req, &st[i], cases[i].off, cases[i].patch, strlen(cases[i].patch)) > 0);
    CHECK_EQ_INT(sg_h2_submit_patched(c, &req, &st[3], len - 2, "XYZ", 3), SG_EINVAL);
    pump(c, &s, step);
    CHECK_EQ_INT(s.n, 3);
    char *want = malloc(len);
    for (int i = 0; i < 3 && i < s.n; i++) {
        memcpy(want, body, len);
        memcpy(want + cases[i].off, cases[i].patch, strlen(cases[i].patch));
        CHECK(s.reqs[i].ended);
        CHECK(s.reqs[i].body_len == len && memcmp(s.reqs[i].body, want, len) == 0);
    }
    CHECK(req.body_len == len && memcmp(req.body, body, len) == 0);
    free(want);
    sg_h2_free(c);
    sg_h2_req_free(&req);
    free(raw);
    free(body);
    nghttp2_session_del(s.ng);
}

static void test_rst_and_refused(void)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    server_t s;
    server_init(&s, 100);
    char *raw;
    sg_h2_req_t req = make_req(&raw, "/v1/completions", "{}");
    static cstream_t st[3];
    memset(st, 0, sizeof(st));
    for (int i = 0; i < 3; i++)
        CHECK(sg_h2_submit(c, &req, &st[i]) > 0);
    pump(c, &s, 0);
    /* 1: head then reset (not retryable: the server processed it); 3: refused before anything (retryable) */
    nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0}};
    CHECK_EQ_INT(nghttp2_submit_headers(s.ng, NGHTTP2_FLAG_NONE, 1, NULL, nv, 1, NULL), 0);
    pump(c, &s, 1);
    CHECK_EQ_INT(nghttp2_submit_rst_stream(s.ng, NGHTTP2_FLAG_NONE, 1, NGHTTP2_INTERNAL_ERROR), 0);
    CHECK_EQ_INT(nghttp2_submit_rst_stream(s.ng, NGHTTP2_FLAG_NONE, 3, NGHTTP2_REFUSED_STREAM), 0);
    pump(c, &s, 1);
    CHECK_EQ_INT(st[0].heads, 1);
    CHECK_EQ_INT(st[0].closes, 1);
    CHECK_EQ_INT(st[0].error_code, NGHTTP2_INTERNAL_ERROR);
    CHECK(!st[0].complete && !st[0].retryable);
    CHECK_EQ_INT(st[1].closes, 1);
    CHECK_EQ_INT(st[1].error_code, NGHTTP2_REFUSED_STREAM);
    CHECK(st[1].retryable && !st[1].complete);
    /* 5: the client gives up (a timeout): the server sees RST_STREAM CANCEL */
    sg_h2_cancel(c, 5);
    pump(c, &s, 0);
    CHECK_EQ_INT(st[2].closes, 1);
    CHECK_EQ_INT(st[2].error_code, NGHTTP2_CANCEL);
    CHECK(sreq(&s, 5, false) && sreq(&s, 5, false)->rst);
    CHECK_EQ_INT(sreq(&s, 5, false)->rst_code, NGHTTP2_CANCEL);
    CHECK_EQ_INT(sg_h2_open_streams(c), 0);
    CHECK(sg_h2_can_submit(c));
    CHECK(!strcmp(sg_h2_error_name(NGHTTP2_REFUSED_STREAM), "REFUSED_STREAM"));
    sg_h2_free(c);
    sg_h2_req_free(&req);
    free(raw);
    nghttp2_session_del(s.ng);
}

static void test_goaway(void)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    server_t s;
    server_init(&s, 100);
    char *raw;
    sg_h2_req_t req = make_req(&raw, "/v1/completions", "{}");
    static cstream_t st[3];
    memset(st, 0, sizeof(st));
    for (int i = 0; i < 3; i++)
        CHECK(sg_h2_submit(c, &req, &st[i]) > 0);
    pump(c, &s, 0);
    /* the server will finish stream 1 and refuses 3 and 5 */
    CHECK_EQ_INT(nghttp2_submit_goaway(s.ng, NGHTTP2_FLAG_NONE, 1, NGHTTP2_NO_ERROR, NULL, 0), 0);
    pump(c, &s, 3);
    CHECK_EQ_INT(cs.goaways, 1);
    CHECK_EQ_INT(cs.last_stream_id, 1);
    CHECK(!sg_h2_can_submit(c));
    CHECK(sg_h2_going_away(c));
    CHECK_EQ_INT(sg_h2_submit(c, &req, &st[0]), -EAGAIN);
    CHECK_EQ_INT(st[0].closes, 0);
    for (int i = 1; i < 3; i++) {
        CHECK_EQ_INT(st[i].closes, 1);
        CHECK(st[i].retryable);
    }
    s.resp_body = "{\"ok\":true}";
    s.resp_len = strlen(s.resp_body);
    server_respond(&s, 1, "200", "application/json");
    pump(c, &s, 0);
    CHECK_EQ_INT(st[0].closes, 1);
    CHECK(st[0].complete);
    CHECK_EQ_STR(st[0].body, st[0].body_len, "{\"ok\":true}");
    sg_h2_free(c);
    sg_h2_req_free(&req);
    free(raw);
    nghttp2_session_del(s.ng);
}

static void test_limits_and_windows(void)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    server_t s;
    server_init(&s, 2);
    char *raw;
    sg_h2_req_t req = make_req(&raw, "/v1/completions", "{}");
    static cstream_t st[3];
    memset(st, 0, sizeof(st));
    pump(c, &s, 0); /* SETTINGS both ways */
    CHECK_EQ_INT(sg_h2_peer_max_streams(c), 2);
    CHECK(sg_h2_submit(c, &req, &st[0]) > 0);
    CHECK(sg_h2_submit(c, &req, &st[1]) > 0);
    CHECK(!sg_h2_can_submit(c));
    CHECK_EQ_INT(sg_h2_submit(c, &req, &st[2]), -EAGAIN);
    pump(c, &s, 0);
    /* the server sees our windows: 16 MiB per stream, 1 GiB for the connection */
    CHECK_EQ_INT(nghttp2_session_get_remote_settings(s.ng, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
                 SG_H2_LOCAL_STREAM_WINDOW);
    CHECK(nghttp2_session_get_remote_window_size(s.ng) >= (int32_t)SG_H2_LOCAL_CONN_WINDOW - 65536);
    /* a 1 MiB response goes out in one go, with no WINDOW_UPDATE needed on the way */
    size_t big = 1u << 20;
    char *body = malloc(big);
    for (size_t i = 0; i < big; i++)
        body[i] = (char)('a' + i % 26);
    s.resp_body = body;
    s.resp_len = big;
    server_respond(&s, 1, "200", "application/json");
    const uint8_t *p;
    ssize_t n;
    size_t sent = 0;
    while ((n = nghttp2_session_mem_send(s.ng, &p)) > 0) {
        CHECK_EQ_INT(sg_h2_feed(c, (const char *)p, (size_t)n), 0);
        sent += (size_t)n;
    }
    CHECK(sent > big);
    CHECK_EQ_INT(st[0].closes, 1);
    CHECK(st[0].complete);
    CHECK_EQ_INT(st[0].body_len, big);
    CHECK(st[0].body_len == big && memcmp(st[0].body, body, big) == 0);
    CHECK(sg_h2_can_submit(c));
    CHECK(sg_h2_submit(c, &req, &st[2]) > 0);
    free(body);
    sg_h2_free(c);
    sg_h2_req_free(&req);
    free(raw);
    nghttp2_session_del(s.ng);
}

static void test_garbage(void)
{
    cstate_t cs = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    /* an HTTP/1.1 server answering our preface */
    const char *h1 = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    int rv = sg_h2_feed(c, h1, strlen(h1));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int d = sg_h2_drain(c, &buf, &len, &cap);
    CHECK(rv < 0 || d < 0 || sg_h2_going_away(c));
    CHECK(!sg_h2_can_submit(c));
    free(buf);
    sg_h2_free(c);
}

/* The session nghttp2 ends on an HTTP/1.1 answer reads nothing more, and says why: a stream on it can never end. */
static void test_closed_by_garbage(void)
{
    cstate_t cs = {0};
    cstream_t st = {0};
    sg_h2_t *c = sg_h2_client_new(&ccb, &cs);
    sg_h2_req_t req;
    const char *h1req = "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}";
    CHECK_EQ_INT(sg_h2_req_from_h1(h1req, strlen(h1req), "http", &req), 0);
    CHECK(sg_h2_submit(c, &req, &st) > 0);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    CHECK_EQ_INT(sg_h2_drain(c, &buf, &len, &cap), 0);
    CHECK(!sg_h2_closed(c));
    CHECK_EQ_INT(strlen(sg_h2_error_text(c)), 0);
    const char *h1 = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    CHECK_EQ_INT(sg_h2_feed(c, h1, strlen(h1)), 0); /* nghttp2 takes it without an error ... */
    len = 0;
    CHECK_EQ_INT(sg_h2_drain(c, &buf, &len, &cap), 0); /* ... and queues its GOAWAY */
    CHECK(len > 0);
    CHECK(sg_h2_closed(c));
    CHECK_EQ_INT(sg_h2_open_streams(c), 1); /* the stream is still open: nothing will ever end it */
    /* nghttp2's first sentence ("Remote peer returned unexpected data while we expected SETTINGS frame") */
    CHECK(strstr(sg_h2_error_text(c), "SETTINGS") != NULL && strchr(sg_h2_error_text(c), '.') == NULL);
    CHECK_EQ_INT(st.closes, 0);
    sg_h2_free(c);
    CHECK_EQ_INT(st.closes, 1);
    free(buf);
    sg_h2_req_free(&req);
}

static sg_h2_reply_t classify(const char *p, size_t n, bool final, char *what)
{
    return sg_h2_classify_reply((const uint8_t *)p, n, final, what, 200);
}

static void test_classify_reply(void)
{
    char what[200];
    /* a real server's first bytes: its SETTINGS, whole or in pieces */
    nghttp2_session *srv;
    nghttp2_session_callbacks *cbs;
    CHECK_EQ_INT(nghttp2_session_callbacks_new(&cbs), 0);
    CHECK_EQ_INT(nghttp2_session_server_new(&srv, cbs, NULL), 0);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 8}};
    CHECK_EQ_INT(nghttp2_submit_settings(srv, NGHTTP2_FLAG_NONE, iv, 1), 0);
    const uint8_t *out;
    ssize_t n = nghttp2_session_mem_send(srv, &out);
    CHECK(n >= 15);
    for (size_t k = 0; k < 9; k++)
        CHECK_EQ_INT(sg_h2_classify_reply(out, k, false, what, sizeof what), SG_H2_REPLY_MORE);
    CHECK_EQ_INT(sg_h2_classify_reply(out, 9, false, what, sizeof what), SG_H2_REPLY_H2);
    CHECK_EQ_INT(sg_h2_classify_reply(out, (size_t)n, true, what, sizeof what), SG_H2_REPLY_H2);
    /* cut short: the peer closed after 5 bytes of it */
    CHECK_EQ_INT(sg_h2_classify_reply(out, 5, true, what, sizeof what), SG_H2_REPLY_NOT_H2);
    /* an empty SETTINGS is a SETTINGS; a SETTINGS ACK first, a 7-byte SETTINGS or one on a stream are not */
    CHECK_EQ_INT(classify("\0\0\0\4\0\0\0\0\0", 9, false, what), SG_H2_REPLY_H2);
    CHECK_EQ_INT(classify("\0\0\0\4\1\0\0\0\0", 9, false, what), SG_H2_REPLY_NOT_H2);
    CHECK_EQ_INT(classify("\0\0\7\4\0\0\0\0\0", 9, false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strstr(what, "malformed HTTP/2 SETTINGS") != NULL);
    CHECK_EQ_INT(classify("\0\0\0\4\0\0\0\0\1", 9, false, what), SG_H2_REPLY_NOT_H2);
    /* GOAWAY first */
    CHECK_EQ_INT(classify("\0\0\x08\7\0\0\0\0\0\0\0\0\0\0\0\0\1", 17, true, what), SG_H2_REPLY_NOT_H2);
    CHECK(strstr(what, "GOAWAY") != NULL);
    nghttp2_session_del(srv);
    nghttp2_session_callbacks_del(cbs);

    /* HTTP/1.x: more is wanted until the status line is whole, then it is quoted */
    const char *h1 = "HTTP/1.1 400 Bad Request\r\nServer: llama.cpp\r\n\r\n";
    for (size_t k = 1; k < 26; k++)
        CHECK_EQ_INT(classify(h1, k, false, what), SG_H2_REPLY_MORE);
    CHECK_EQ_INT(classify(h1, 26, false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "an HTTP/1.x response, \"HTTP/1.1 400 Bad Request\"") == 0);
    CHECK_EQ_INT(classify(h1, strlen(h1), false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "an HTTP/1.x response, \"HTTP/1.1 400 Bad Request\"") == 0);
    CHECK_EQ_INT(classify("HTTP/1.0 400", 12, true, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "an HTTP/1.x response, \"HTTP/1.0 400\"") == 0);
    CHECK_EQ_INT(classify("HTT", 3, true, what), SG_H2_REPLY_NOT_H2);

    /* HTML, a TLS alert, binary, nothing */
    const char *html = "<!DOCTYPE html><html><body>It works</body></html>";
    CHECK_EQ_INT(classify(html, strlen(html), false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strstr(what, "an HTML page, \"<!DOCTYPE html>") != NULL);
    CHECK_EQ_INT(classify("<x>\r\n\t", 6, true, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "an HTML page, \"<x>\\r\\n\\t\"") == 0);
    CHECK_EQ_INT(classify("\x15\x03\x01\x00\x02\x02\x46", 7, false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strstr(what, "TLS") != NULL && strstr(what, "https://") != NULL);
    CHECK_EQ_INT(classify("\xff\x00\\\"ok", 6, false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "bytes that are not HTTP/2: \"\\xff\\x00\\x5c\\x22ok\"") == 0);
    CHECK_EQ_INT(classify("", 0, true, what), SG_H2_REPLY_NOT_H2);
    CHECK(strcmp(what, "nothing") == 0);
    /* a long first line is cut, and a small buffer is never overrun */
    char big[600];
    memset(big, 'a', sizeof big);
    CHECK_EQ_INT(classify(big, sizeof big, false, what), SG_H2_REPLY_NOT_H2);
    CHECK(strlen(what) < 120 && strstr(what, "...") != NULL);
    char tiny[12];
    CHECK_EQ_INT(sg_h2_classify_reply((const uint8_t *)big, sizeof big, true, tiny, sizeof tiny), SG_H2_REPLY_NOT_H2);
    CHECK(strlen(tiny) < sizeof tiny);
}

int main(void)
{
    test_req_from_h1();
    test_streams(0);
    test_streams(1);
    test_streams(7);
    test_patched(0);
    test_patched(1000);
    test_rst_and_refused();
    test_goaway();
    test_limits_and_windows();
    test_garbage();
    test_closed_by_garbage();
    test_classify_reply();
    return test_finish("test_h2");
}
