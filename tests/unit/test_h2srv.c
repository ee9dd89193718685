/*
 * proto/h2srv.c on its own: the mock's server session (sg_h2srv) driven by a plain nghttp2 client session, both
 * in memory, both sans-I/O. Requests split at every byte boundary, many concurrent streams, bodies through
 * on_read (deferred, then resumed), resets both ways, SETTINGS, GOAWAY and garbage from the client.
 */
#include "h2pipe.h"
#include "sg_h2.h"
#include "sg_h2srv.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------- the server's side: what sg_h2srv reported, and the bodies it serves ---------------- */

#define MAX_SSTREAM 256
typedef struct {
    int32_t id;
    int requests, closes;
    uint32_t close_code;
    char method[16], path[64];
    char *body; /* the request body, copied */
    size_t body_len;
    const char *out;                /* the response body on_read hands out */
    size_t out_len, out_off, ready; /* bytes [0, ready) may go out; beyond: -EAGAIN */
    size_t max_chunk;               /* on_read gives at most this per call (0: no limit) */
    int reads;
} sstream_t;

typedef struct {
    sg_h2srv_t *srv;
    sstream_t st[MAX_SSTREAM];
    int n;
    int request_rv;   /* on_request returns this */
    bool no_ud;       /* on_request leaves the stream without user data */
    bool respond_now; /* on_request answers 200 with out/out_len, all ready */
    const char *out;
    size_t out_len;
} server_t;

static int s_request(void *ud, int32_t id, sg_slice_t method, sg_slice_t path, sg_slice_t body)
{
    server_t *s = ud;
    CHECK(s->n < MAX_SSTREAM);
    if (s->n == MAX_SSTREAM)
        return -1;
    sstream_t *st = &s->st[s->n++];
    memset(st, 0, sizeof(*st));
    st->id = id;
    st->requests++;
    snprintf(st->method, sizeof(st->method), "%.*s", (int)method.len, method.base);
    snprintf(st->path, sizeof(st->path), "%.*s", (int)path.len, path.base);
    st->body = malloc(body.len + 1);
    memcpy(st->body, body.base, body.len);
    st->body_len = body.len;
    if (!s->no_ud)
        sg_h2srv_set_stream_ud(s->srv, id, st);
    if (s->respond_now && s->request_rv >= 0) {
        st->out = s->out;
        st->out_len = st->ready = s->out_len;
        CHECK_EQ_INT(sg_h2srv_respond(s->srv, id, 200, "application/json", (int64_t)s->out_len, false, true), 0);
    }
    return s->request_rv;
}

static ssize_t s_read(void *ud, void *sud, uint8_t *buf, size_t len, bool *eof)
{
    (void)ud;
    sstream_t *st = sud;
    st->reads++;
    size_t n = st->ready - st->out_off;
    if (n == 0 && st->ready < st->out_len)
        return -EAGAIN;
    if (n > len)
        n = len;
    if (st->max_chunk && n > st->max_chunk)
        n = st->max_chunk;
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    *eof = st->out_off == st->out_len;
    return (ssize_t)n;
}

static void s_close(void *ud, void *sud, uint32_t code)
{
    (void)ud;
    sstream_t *st = sud;
    st->closes++;
    st->close_code = code;
}

static const sg_h2srv_cb_t scb = {.on_request = s_request, .on_read = s_read, .on_close = s_close};

static sstream_t *sstream(server_t *s, int32_t id)
{
    for (int i = 0; i < s->n; i++)
        if (s->st[i].id == id)
            return &s->st[i];
    return NULL;
}

static void server_free(server_t *s)
{
    sg_h2srv_free(s->srv);
    for (int i = 0; i < s->n; i++)
        free(s->st[i].body);
}

/* ---------------- the client: a plain nghttp2 session ---------------- */

#define MAX_CSTREAM 256
typedef struct {
    int32_t id;
    int status, heads, closes;
    uint32_t close_code;
    char ctype[64], cache_control[64];
    long long content_length;
    char *body;
    size_t body_len;
    bool rst; /* RST_STREAM received */
} cstream_t;

typedef struct {
    nghttp2_session *ng;
    cstream_t st[MAX_CSTREAM];
    int n;
    int goaways;
    uint32_t goaway_code;
    int32_t goaway_last;
    const char *req_body; /* the request body the data provider sends */
    size_t req_len, req_off[MAX_CSTREAM];
} client_t;

static cstream_t *cstream(client_t *c, int32_t id)
{
    for (int i = 0; i < c->n; i++)
        if (c->st[i].id == id)
            return &c->st[i];
    return NULL;
}

static int c_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl, const uint8_t *v,
                    size_t vl, uint8_t flags, void *user)
{
    (void)ng;
    (void)flags;
    cstream_t *st = cstream(user, f->hd.stream_id);
    if (!st)
        return 0;
    char val[64];
    snprintf(val, sizeof(val), "%.*s", (int)vl, (const char *)v);
    if (nl == 7 && !memcmp(name, ":status", 7)) {
        st->status = atoi(val);
        st->heads++;
    } else if (nl == 12 && !memcmp(name, "content-type", 12)) {
        snprintf(st->ctype, sizeof(st->ctype), "%s", val);
    } else if (nl == 13 && !memcmp(name, "cache-control", 13)) {
        snprintf(st->cache_control, sizeof(st->cache_control), "%s", val);
    } else if (nl == 14 && !memcmp(name, "content-length", 14)) {
        st->content_length = atoll(val);
    }
    return 0;
}

static int c_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t n, void *user)
{
    (void)ng;
    (void)flags;
    cstream_t *st = cstream(user, id);
    if (st) {
        st->body = realloc(st->body, st->body_len + n);
        memcpy(st->body + st->body_len, d, n);
        st->body_len += n;
    }
    return 0;
}

static int c_frame(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    (void)ng;
    client_t *c = user;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->goaways++;
        c->goaway_code = f->goaway.error_code;
        c->goaway_last = f->goaway.last_stream_id;
    } else if (f->hd.type == NGHTTP2_RST_STREAM) {
        cstream_t *st = cstream(c, f->hd.stream_id);
        if (st)
            st->rst = true;
    }
    return 0;
}

static int c_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    (void)ng;
    cstream_t *st = cstream(user, id);
    if (st) {
        st->closes++;
        st->close_code = code;
    }
    return 0;
}

static ssize_t c_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *user)
{
    (void)ng;
    (void)id;
    client_t *c = user;
    size_t *off = &c->req_off[src->fd];
    size_t n = c->req_len - *off < len ? c->req_len - *off : len;
    memcpy(buf, c->req_body + *off, n);
    *off += n;
    if (*off == c->req_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void client_init(client_t *c)
{
    memset(c, 0, sizeof(*c));
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, c_close);
    CHECK_EQ_INT(nghttp2_session_client_new(&c->ng, cb, c), 0);
    nghttp2_session_callbacks_del(cb);
    CHECK_EQ_INT(nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

static void client_free(client_t *c)
{
    nghttp2_session_del(c->ng);
    for (int i = 0; i < c->n; i++)
        free(c->st[i].body);
}

/* A request with c->req_body as its body (method GET: none, END_STREAM on HEADERS). Its stream id. */
static int32_t client_request(client_t *c, const char *method, const char *path)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"127.0.0.1", 10, 9, 0},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
        {(uint8_t *)"content-type", (uint8_t *)"application/json", 12, 16, 0},
    };
    CHECK(c->n < MAX_CSTREAM);
    int slot = c->n;
    c->req_off[slot] = 0;
    nghttp2_data_provider prd = {.source.fd = slot, .read_callback = c_read};
    bool body = strcmp(method, "GET") != 0;
    int32_t id = nghttp2_submit_request(c->ng, NULL, nv, SG_ARRAY_LEN(nv), body ? &prd : NULL, NULL);
    CHECK(id > 0);
    cstream_t *st = &c->st[c->n++];
    memset(st, 0, sizeof(*st));
    st->id = id;
    st->content_length = -1;
    return id;
}

static int feed_server(void *ctx, const char *p, size_t n)
{
    return sg_h2srv_feed(ctx, p, n);
}

/* Everything the server wants to send, to the client in pieces of step bytes. Bytes moved. */
static size_t server_to_client(server_t *s, client_t *c, size_t step)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    CHECK_EQ_INT(sg_h2srv_drain(s->srv, &buf, &len, &cap), 0);
    CHECK_EQ_INT(h2pipe_split(buf, len, step, h2pipe_to_ng, c->ng), 0);
    free(buf);
    return len;
}

/* Move bytes both ways until neither side has anything to send. */
static void pump(client_t *c, server_t *s, size_t step)
{
    for (int round = 0; round < 1000; round++) {
        ssize_t up = h2pipe_from_ng(c->ng, step, feed_server, s->srv);
        CHECK(up >= 0);
        size_t down = server_to_client(s, c, step);
        if (up <= 0 && down == 0)
            return;
    }
    CHECK(!"pump did not settle");
}

static void server_init(server_t *s, uint32_t max_streams, size_t max_body)
{
    memset(s, 0, sizeof(*s));
    s->srv = sg_h2srv_new(&scb, s, max_streams, max_body);
    CHECK(s->srv != NULL);
}

/* ---------------- tests ---------------- */

/*
 * A POST with a body and a GET without one, everything the client sends cut in two at every byte boundary (and
 * fed one byte at a time): each request comes out once, whole, and its answer goes back intact.
 */
static void test_split_requests(void)
{
    static const char req_body[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    /* the client's bytes, once: preface, SETTINGS, two requests */
    client_t c0;
    client_init(&c0);
    c0.req_body = req_body;
    c0.req_len = strlen(req_body);
    client_request(&c0, "POST", "/v1/chat/completions");
    client_request(&c0, "GET", "/v1/models");
    char *wire = NULL;
    size_t wire_len = 0, cap = 0;
    CHECK_EQ_INT(sg_h2_session_drain(c0.ng, &wire, &wire_len, &cap), 0);
    CHECK(wire_len > SG_H2SRV_PREFACE_LEN + strlen(req_body));
    CHECK(memcmp(wire, SG_H2SRV_PREFACE, SG_H2SRV_PREFACE_LEN) == 0);

    int bad = 0;
    for (size_t cut = 0; cut <= wire_len + 1; cut++) {
        server_t s;
        server_init(&s, 100, 1 << 20);
        if (cut <= wire_len) {
            CHECK_EQ_INT(sg_h2srv_feed(s.srv, wire, cut), 0);
            /* a request is handed over only once its END_STREAM is in: not both before the last byte */
            if (cut < wire_len && s.n == 2 && bad++ < 3)
                fprintf(stderr, "cut at %zu of %zu: both requests before the end\n", cut, wire_len);
            CHECK_EQ_INT(sg_h2srv_feed(s.srv, wire + cut, wire_len - cut), 0);
        } else {
            CHECK_EQ_INT(h2pipe_split(wire, wire_len, 1, feed_server, s.srv), 0);
        }
        /* the GET (END_STREAM on its HEADERS) may come out before the POST's DATA is in */
        sstream_t *p = sstream(&s, 1), *g = sstream(&s, 3);
        bool ok = s.n == 2 && p && g && p->requests == 1 && g->requests == 1 && !strcmp(p->method, "POST") &&
                  !strcmp(p->path, "/v1/chat/completions") && p->body_len == strlen(req_body) &&
                  !memcmp(p->body, req_body, p->body_len) && !strcmp(g->method, "GET") &&
                  !strcmp(g->path, "/v1/models") && g->body_len == 0;
        if (!ok && bad++ < 3)
            fprintf(stderr, "cut at %zu of %zu: %d requests\n", cut, wire_len, s.n);
        server_free(&s);
    }
    CHECK_EQ_INT(bad, 0);
    free(wire);
    client_free(&c0);

    /* the same, live and one byte at a time both ways, with the answers */
    client_t c;
    client_init(&c);
    c.req_body = req_body;
    c.req_len = strlen(req_body);
    server_t s;
    server_init(&s, 100, 1 << 20);
    s.respond_now = true;
    s.out = "{\"ok\":true}";
    s.out_len = strlen(s.out);
    client_request(&c, "POST", "/v1/chat/completions");
    client_request(&c, "GET", "/v1/models");
    pump(&c, &s, 1);
    CHECK_EQ_INT(s.n, 2);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(c.st[i].status, 200);
        CHECK_EQ_INT(c.st[i].heads, 1);
        CHECK(!strcmp(c.st[i].ctype, "application/json"));
        CHECK_EQ_INT(c.st[i].content_length, (long long)s.out_len);
        CHECK(!c.st[i].cache_control[0]);
        CHECK_EQ_STR(c.st[i].body, c.st[i].body_len, s.out);
        CHECK_EQ_INT(c.st[i].closes, 1);
        CHECK_EQ_INT(c.st[i].close_code, NGHTTP2_NO_ERROR);
        CHECK_EQ_INT(s.st[i].closes, 1);
        CHECK_EQ_INT(s.st[i].close_code, NGHTTP2_NO_ERROR);
    }
    client_free(&c);
    server_free(&s);
}

/* 200 streams at once against MAX_CONCURRENT_STREAMS 200, bodies of different sizes (several DATA frames). */
static void test_many_streams(void)
{
    enum { N = 200 };
    client_t *c = malloc(sizeof(*c));
    server_t *s = malloc(sizeof(*s));
    client_init(c);
    server_init(s, N, 1 << 20);
    c->req_body = "{}";
    c->req_len = 2;
    pump(c, s, 0); /* SETTINGS both ways */
    CHECK_EQ_INT(nghttp2_session_get_remote_settings(c->ng, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), N);
    /* the server's windows: request bodies never wait for WINDOW_UPDATE */
    CHECK_EQ_INT(nghttp2_session_get_remote_settings(c->ng, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE), 16u << 20);
    CHECK(nghttp2_session_get_remote_window_size(c->ng) >= (1 << 30) - 65536);
    for (int i = 0; i < N; i++)
        client_request(c, "POST", "/v1/completions");
    pump(c, s, 0);
    CHECK_EQ_INT(s->n, N);
    size_t big = 200000;
    char *out = malloc(big);
    for (size_t i = 0; i < big; i++)
        out[i] = (char)('a' + i % 26);
    /* answer in reverse order, each body a different length, some served a few bytes per on_read */
    for (int i = N - 1; i >= 0; i--) {
        sstream_t *st = &s->st[i];
        st->out = out;
        st->out_len = st->ready = (size_t)i * 499 + (i % 3 == 0 ? 40000 : 0);
        st->max_chunk = i % 5 == 0 ? 1000 : 0;
        CHECK_EQ_INT(sg_h2srv_respond(s->srv, st->id, 200, "text/plain", -1, true, st->out_len > 0), 0);
    }
    pump(c, s, 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        cstream_t *cs = cstream(c, s->st[i].id);
        size_t want = s->st[i].out_len;
        bool ok = cs && cs->status == 200 && cs->closes == 1 && cs->close_code == 0 && cs->content_length == -1 &&
                  cs->body_len == want && (want == 0 || !memcmp(cs->body, out, want)) && s->st[i].closes == 1 &&
                  s->st[i].close_code == 0;
        if (!ok && bad++ < 3)
            fprintf(stderr, "stream %d: %zu of %zu bytes\n", s->st[i].id, cs ? cs->body_len : 0, want);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(s->st[0].reads >= 40); /* 40000 bytes at most 1000 per on_read */
    free(out);
    client_free(c);
    server_free(s);
    free(c);
    free(s);
}

/* on_read says "nothing yet": no DATA until sg_h2srv_resume, then the rest; END_STREAM only with eof. */
static void test_deferred(void)
{
    client_t c;
    client_init(&c);
    server_t s;
    server_init(&s, 100, 1 << 20);
    c.req_body = "{}";
    c.req_len = 2;
    int32_t id = client_request(&c, "POST", "/v1/completions");
    pump(&c, &s, 0);
    CHECK_EQ_INT(s.n, 1);
    sstream_t *st = sstream(&s, id);
    const char *sse = "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n";
    st->out = sse;
    st->out_len = strlen(sse);
    st->ready = 0;
    CHECK_EQ_INT(sg_h2srv_respond(s.srv, id, 200, "text/event-stream", -1, true, true), 0);
    pump(&c, &s, 0);
    cstream_t *cs = cstream(&c, id);
    CHECK_EQ_INT(cs->heads, 1);
    CHECK_EQ_INT(cs->body_len, 0);
    CHECK_EQ_INT(cs->closes, 0);
    int reads = st->reads;
    CHECK(reads >= 1);
    /* deferred: draining again does not ask on_read until resumed */
    pump(&c, &s, 0);
    CHECK_EQ_INT(st->reads, reads);
    st->ready = 15; /* the first event */
    pump(&c, &s, 0);
    CHECK_EQ_INT(st->reads, reads); /* not resumed yet */
    CHECK_EQ_INT(cs->body_len, 0);
    sg_h2srv_resume(s.srv, id);
    CHECK(sg_h2srv_want_write(s.srv));
    pump(&c, &s, 0);
    CHECK_EQ_STR(cs->body, cs->body_len, "data: {\"a\":1}\n\n");
    CHECK_EQ_INT(cs->closes, 0);
    st->ready = st->out_len;
    sg_h2srv_resume(s.srv, id);
    pump(&c, &s, 3);
    CHECK_EQ_STR(cs->body, cs->body_len, sse);
    CHECK_EQ_INT(cs->closes, 1);
    CHECK_EQ_INT(cs->close_code, 0);
    CHECK(!strcmp(cs->ctype, "text/event-stream"));
    CHECK(!strcmp(cs->cache_control, "no-cache"));
    CHECK_EQ_INT(st->closes, 1);
    client_free(&c);
    server_free(&s);
}

/* RST_STREAM both ways, on_request failing, an oversized body, streams without user data, free with streams open. */
static void test_resets(void)
{
    client_t c;
    client_init(&c);
    server_t s;
    server_init(&s, 100, 64);
    c.req_body = "{}";
    c.req_len = 2;
    int32_t a = client_request(&c, "POST", "/a"), b = client_request(&c, "POST", "/b");
    pump(&c, &s, 0);
    sstream_t *sa = sstream(&s, a), *sb = sstream(&s, b);
    sa->out = sb->out = "xyz";
    sa->out_len = sb->out_len = 3; /* ready 0: deferred */
    CHECK_EQ_INT(sg_h2srv_respond(s.srv, a, 200, NULL, -1, false, true), 0);
    CHECK_EQ_INT(sg_h2srv_respond(s.srv, b, 200, NULL, -1, false, true), 0);
    pump(&c, &s, 0);
    /* the client gives up on a: on_close with its code, once */
    CHECK_EQ_INT(nghttp2_submit_rst_stream(c.ng, NGHTTP2_FLAG_NONE, a, NGHTTP2_CANCEL), 0);
    pump(&c, &s, 1);
    CHECK_EQ_INT(sa->closes, 1);
    CHECK_EQ_INT(sa->close_code, NGHTTP2_CANCEL);
    CHECK_EQ_INT(sb->closes, 0);
    /* the server resets b */
    sg_h2srv_reset(s.srv, b, NGHTTP2_INTERNAL_ERROR);
    pump(&c, &s, 0);
    CHECK_EQ_INT(sb->closes, 1);
    CHECK_EQ_INT(sb->close_code, NGHTTP2_INTERNAL_ERROR);
    cstream_t *cb = cstream(&c, b);
    CHECK(cb->rst);
    CHECK_EQ_INT(cb->close_code, NGHTTP2_INTERNAL_ERROR);
    CHECK_EQ_INT(sa->closes, 1);

    /* on_request fails: the client sees RST_STREAM INTERNAL_ERROR */
    s.request_rv = -1;
    int32_t f = client_request(&c, "POST", "/fail");
    pump(&c, &s, 0);
    s.request_rv = 0;
    CHECK(cstream(&c, f)->rst);
    CHECK_EQ_INT(cstream(&c, f)->close_code, NGHTTP2_INTERNAL_ERROR);
    CHECK_EQ_INT(sstream(&s, f)->closes, 1);

    /* a body over max_body (64): refused, on_request never called */
    static char big[100];
    memset(big, 'x', sizeof(big));
    c.req_body = big;
    c.req_len = sizeof(big);
    int n_before = s.n;
    int32_t r = client_request(&c, "POST", "/big");
    pump(&c, &s, 0);
    CHECK_EQ_INT(s.n, n_before);
    CHECK_EQ_INT(cstream(&c, r)->close_code, NGHTTP2_REFUSED_STREAM);
    c.req_body = "{}";
    c.req_len = 2;

    /* a stream without user data closes without on_close */
    s.no_ud = true;
    int32_t u = client_request(&c, "POST", "/noud");
    pump(&c, &s, 0);
    s.no_ud = false;
    CHECK_EQ_INT(sg_h2srv_respond(s.srv, u, 204, NULL, -1, false, false), 0);
    pump(&c, &s, 0);
    CHECK_EQ_INT(cstream(&c, u)->status, 204);
    CHECK_EQ_INT(cstream(&c, u)->closes, 1);
    CHECK_EQ_INT(sstream(&s, u)->closes, 0);

    /* freeing the session closes what is still open as CANCEL */
    int32_t o = client_request(&c, "POST", "/open");
    pump(&c, &s, 0);
    sstream_t *so = sstream(&s, o);
    CHECK_EQ_INT(so->closes, 0);
    sg_h2srv_free(s.srv);
    s.srv = NULL;
    CHECK_EQ_INT(so->closes, 1);
    CHECK_EQ_INT(so->close_code, NGHTTP2_CANCEL);
    CHECK_EQ_INT(sa->closes + sb->closes, 2); /* nothing closed twice */
    client_free(&c);
    server_free(&s);
}

/* The client's GOAWAY ends the session once open streams finish; sg_h2srv_done says when. */
static void test_goaway(void)
{
    client_t c;
    client_init(&c);
    server_t s;
    server_init(&s, 100, 1 << 20);
    c.req_body = "{}";
    c.req_len = 2;
    int32_t id = client_request(&c, "POST", "/v1/completions");
    pump(&c, &s, 0);
    CHECK(!sg_h2srv_done(s.srv));
    CHECK_EQ_INT(nghttp2_submit_goaway(c.ng, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0), 0);
    pump(&c, &s, 0);
    CHECK(!sg_h2srv_done(s.srv)); /* stream 1 is still to be answered */
    sstream_t *st = sstream(&s, id);
    st->out = "{}";
    st->out_len = st->ready = 2;
    CHECK_EQ_INT(sg_h2srv_respond(s.srv, id, 200, "application/json", 2, false, true), 0);
    pump(&c, &s, 0);
    CHECK_EQ_STR(cstream(&c, id)->body, cstream(&c, id)->body_len, "{}");
    CHECK_EQ_INT(st->closes, 1);
    CHECK(sg_h2srv_done(s.srv));
    client_free(&c);
    server_free(&s);
}

/* Bytes that are not HTTP/2 from a client: SG_EPROTO, a GOAWAY to drain, then done. */
static void test_garbage(void)
{
    /* HTTP/1.1 instead of the preface */
    server_t s;
    server_init(&s, 100, 1 << 20);
    const char *h1 = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_EQ_INT(sg_h2srv_feed(s.srv, h1, strlen(h1)), SG_EPROTO);
    CHECK_EQ_INT(s.n, 0);
    server_free(&s);

    /* a valid preface, then DATA on stream 0: a connection error, answered with GOAWAY PROTOCOL_ERROR */
    client_t c;
    client_init(&c);
    server_init(&s, 100, 1 << 20);
    pump(&c, &s, 0);
    CHECK(!sg_h2srv_done(s.srv));
    static const char data0[] = {0, 0, 2, 0 /* DATA */, 0, 0, 0, 0, 0 /* stream 0 */, 'h', 'i'};
    int rv = sg_h2srv_feed(s.srv, data0, sizeof(data0));
    (void)rv; /* nghttp2 may take the bytes and answer with GOAWAY; what must follow is below */
    CHECK(sg_h2srv_want_write(s.srv));
    server_to_client(&s, &c, 0);
    CHECK_EQ_INT(c.goaways, 1);
    CHECK_EQ_INT(c.goaway_code, NGHTTP2_PROTOCOL_ERROR);
    CHECK(sg_h2srv_done(s.srv));
    client_free(&c);
    server_free(&s);
}

int main(void)
{
    alarm(60); /* a session that never settles fails here rather than at ctest's timeout */
    test_split_requests();
    test_many_streams();
    test_deferred();
    test_resets();
    test_goaway();
    test_garbage();
    return test_finish("test_h2srv");
}
