/*
 * HTTP/2 server sessions over nghttp2's sans-I/O interface (nghttp2_session_mem_recv / _mem_send only).
 * See sg_h2srv.h.
 */
#define _GNU_SOURCE
#include "sg_h2srv.h"

#include "sg_h2.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_STREAM_WINDOW (16u << 20)
#define SRV_CONN_WINDOW (1u << 30)

typedef struct srv_stream srv_stream_t;
struct srv_stream {
    srv_stream_t *prev, *next; /* the session's streams */
    void *ud;
    int32_t id;
    bool dispatched; /* on_request was called */
    char *head;      /* :method then :path, copied */
    size_t method_len, path_len;
    char *body;
    size_t body_len, body_cap;
    nghttp2_nv *trailers; /* sg_h2srv_set_trailers: fields and their bytes in one allocation */
    size_t n_trailers;
};

struct sg_h2srv {
    nghttp2_session *ng;
    sg_h2srv_cb_t cb;
    void *ud;
    srv_stream_t *streams;
    size_t max_body;
};

static void stream_drop(sg_h2srv_t *s, srv_stream_t *st)
{
    if (st->prev)
        st->prev->next = st->next;
    else
        s->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    free(st->head);
    free(st->body);
    free(st->trailers);
    free(st);
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    sg_h2srv_t *s = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    srv_stream_t *st = calloc(1, sizeof(*st));
    if (!st)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->id = f->hd.stream_id;
    st->next = s->streams;
    if (s->streams)
        s->streams->prev = st;
    s->streams = st;
    nghttp2_session_set_stream_user_data(ng, st->id, st);
    return 0;
}

/* :method and :path, kept as "<method><path>" in one allocation */
static int keep(srv_stream_t *st, const uint8_t *v, size_t n, bool is_method)
{
    size_t have = st->method_len + st->path_len;
    char *h = realloc(st->head, have + n + 1);
    if (!h)
        return -1;
    st->head = h;
    if (is_method) {
        memmove(h + n, h, have); /* the path, if it came first, moves behind the method */
        memcpy(h, v, n);
        st->method_len = n;
    } else {
        memcpy(h + have, v, n);
        st->path_len = n;
    }
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    (void)flags;
    (void)user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    srv_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st)
        return 0;
    /* nghttp2 has checked that each pseudo-header appears once */
    if (namelen == 7 && memcmp(name, ":method", 7) == 0)
        return keep(st, value, valuelen, true) < 0 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0)
        return keep(st, value, valuelen, false) < 0 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
    (void)flags;
    sg_h2srv_t *s = user;
    srv_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st || st->dispatched)
        return 0;
    if (st->body_len + len > s->max_body) {
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    if (st->body_len + len > st->body_cap) {
        size_t cap = st->body_cap ? st->body_cap : 1024;
        while (cap < st->body_len + len)
            cap *= 2;
        char *b = realloc(st->body, cap);
        if (!b) {
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
            return 0;
        }
        st->body = b;
        st->body_cap = cap;
    }
    memcpy(st->body + st->body_len, data, len);
    st->body_len += len;
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    sg_h2srv_t *s = user;
    if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    srv_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st || st->dispatched)
        return 0;
    st->dispatched = true;
    sg_slice_t method = {st->head ? st->head : "", st->method_len};
    sg_slice_t path = {st->head ? st->head + st->method_len : "", st->path_len};
    sg_slice_t body = {st->body ? st->body : "", st->body_len};
    if (s->cb.on_request(s->ud, st->id, method, path, body) < 0)
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    /* the request is answered from here on: its body is no longer needed */
    free(st->body);
    st->body = NULL;
    st->body_len = st->body_cap = 0;
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error_code, void *user)
{
    sg_h2srv_t *s = user;
    srv_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st)
        return 0;
    nghttp2_session_set_stream_user_data(ng, id, NULL);
    void *ud = st->ud;
    stream_drop(s, st);
    if (ud && s->cb.on_close)
        s->cb.on_close(s->ud, ud, error_code);
    return 0;
}

static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    (void)ng;
    (void)src;
    sg_h2srv_t *s = user;
    srv_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st || !st->ud) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
    }
    /* st stays valid through the call: streams are dropped only in on_stream_close */
    bool eof = false;
    ssize_t n = s->cb.on_read(s->ud, st->ud, buf, len, &eof);
    if (n == -EAGAIN)
        return NGHTTP2_ERR_DEFERRED;
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets this stream only */
    if (eof) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (st->trailers) {
            /* the trailers end the stream; nghttp2 copies them */
            if (nghttp2_submit_trailer(ng, id, st->trailers, st->n_trailers) == 0)
                *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
            free(st->trailers);
            st->trailers = NULL;
        }
    }
    return n;
}

sg_h2srv_t *sg_h2srv_new(const sg_h2srv_cb_t *cb, void *ud, uint32_t max_streams, size_t max_body)
{
    sg_h2srv_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cb = *cb;
    s->ud = ud;
    s->max_body = max_body;
    static const sg_h2_fns_t fns = {on_begin_headers, on_header, on_frame_recv, on_data_chunk,
                                    on_stream_close,  NULL,      NULL};
    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SRV_STREAM_WINDOW},
    };
    if (sg_h2_session_open(&s->ng, true, &fns, s, iv, SG_ARRAY_LEN(iv), SRV_CONN_WINDOW) < 0) {
        free(s);
        return NULL;
    }
    return s;
}

void sg_h2srv_free(sg_h2srv_t *s)
{
    if (!s)
        return;
    while (s->streams) {
        srv_stream_t *st = s->streams;
        void *ud = st->ud;
        nghttp2_session_set_stream_user_data(s->ng, st->id, NULL);
        stream_drop(s, st);
        if (ud && s->cb.on_close)
            s->cb.on_close(s->ud, ud, NGHTTP2_CANCEL);
    }
    nghttp2_session_del(s->ng);
    free(s);
}

void sg_h2srv_set_stream_ud(sg_h2srv_t *s, int32_t id, void *stream_ud)
{
    srv_stream_t *st = nghttp2_session_get_stream_user_data(s->ng, id);
    if (st)
        st->ud = stream_ud;
}

int sg_h2srv_respond(sg_h2srv_t *s, int32_t id, int status, const char *content_type, int64_t content_length,
                     bool no_cache, bool has_body)
{
    char st_buf[3], cl_buf[24];
    unsigned code = (unsigned)status % 1000u;
    st_buf[0] = (char)('0' + code / 100);
    st_buf[1] = (char)('0' + code / 10 % 10);
    st_buf[2] = (char)('0' + code % 10);
    nghttp2_nv nv[4];
    size_t n = 0;
#define NV(nm, v, vl)                                                                                                  \
    nv[n++] = (nghttp2_nv){(uint8_t *)(uintptr_t)(nm), (uint8_t *)(uintptr_t)(v), sizeof(nm) - 1, (vl),                \
                           NGHTTP2_NV_FLAG_NO_COPY_NAME}
    NV(":status", st_buf, 3);
    if (content_type)
        NV("content-type", content_type, strlen(content_type));
    if (content_length >= 0)
        NV("content-length", cl_buf, (size_t)snprintf(cl_buf, sizeof(cl_buf), "%lld", (long long)content_length));
    if (no_cache)
        NV("cache-control", "no-cache", 8);
#undef NV
    nghttp2_data_provider prd = {.source.ptr = NULL, .read_callback = read_body};
    int rv = nghttp2_submit_response(s->ng, id, nv, n, has_body ? &prd : NULL);
    if (rv == 0)
        return 0;
    return rv == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
}

void sg_h2srv_resume(sg_h2srv_t *s, int32_t id)
{
    nghttp2_session_resume_data(s->ng, id);
}

void sg_h2srv_reset(sg_h2srv_t *s, int32_t id, uint32_t error_code)
{
    nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, id, error_code);
}

int sg_h2srv_goaway(sg_h2srv_t *s, uint32_t error_code)
{
    int rv = error_code == NGHTTP2_NO_ERROR
                 ? nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(s->ng),
                                         NGHTTP2_NO_ERROR, NULL, 0)
                 : nghttp2_session_terminate_session(s->ng, error_code);
    if (rv == 0)
        return 0;
    return rv == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
}

int sg_h2srv_feed(sg_h2srv_t *s, const char *data, size_t len)
{
    ssize_t n = nghttp2_session_mem_recv(s->ng, (const uint8_t *)data, len);
    if (n < 0)
        return n == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
    return 0;
}

int sg_h2srv_drain(sg_h2srv_t *s, char **buf, size_t *len, size_t *cap)
{
    return sg_h2_session_drain(s->ng, buf, len, cap);
}

bool sg_h2srv_want_write(const sg_h2srv_t *s)
{
    return nghttp2_session_want_write(s->ng) != 0;
}

bool sg_h2srv_done(const sg_h2srv_t *s)
{
    return !nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng);
}

/* The fields as nghttp2_nv with copies of names and values, in one allocation after the array. */
static nghttp2_nv *nv_copy(const sg_h2srv_field_t *f, size_t n, size_t extra_slots)
{
    size_t bytes = (n + extra_slots) * sizeof(nghttp2_nv);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(f[i].name) + f[i].value_len;
    nghttp2_nv *nv = malloc(bytes ? bytes : 1);
    if (!nv)
        return NULL;
    uint8_t *p = (uint8_t *)(nv + n + extra_slots);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(f[i].name);
        nghttp2_nv *v = &nv[extra_slots + i];
        memcpy(p, f[i].name, nl);
        v->name = p;
        v->namelen = nl;
        p += nl;
        if (f[i].value_len)
            memcpy(p, f[i].value, f[i].value_len);
        v->value = p;
        v->valuelen = f[i].value_len;
        p += f[i].value_len;
        v->flags = NGHTTP2_NV_FLAG_NONE;
    }
    return nv;
}

int sg_h2srv_respond_fields(sg_h2srv_t *s, int32_t id, int status, const sg_h2srv_field_t *f, size_t n, bool has_body)
{
    char st_buf[3];
    unsigned code = (unsigned)status % 1000u;
    st_buf[0] = (char)('0' + code / 100);
    st_buf[1] = (char)('0' + code / 10 % 10);
    st_buf[2] = (char)('0' + code % 10);
    nghttp2_nv *nv = nv_copy(f, n, 1);
    if (!nv)
        return SG_ENOMEM;
    nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)st_buf, 7, 3, NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider prd = {.source.ptr = NULL, .read_callback = read_body};
    int rv = nghttp2_submit_response(s->ng, id, nv, n + 1, has_body ? &prd : NULL); /* copies nv */
    free(nv);
    if (rv == 0)
        return 0;
    return rv == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
}

int sg_h2srv_set_trailers(sg_h2srv_t *s, int32_t id, const sg_h2srv_field_t *f, size_t n)
{
    srv_stream_t *st = nghttp2_session_get_stream_user_data(s->ng, id);
    if (!st)
        return SG_EPROTO;
    nghttp2_nv *nv = nv_copy(f, n, 0);
    if (!nv)
        return SG_ENOMEM;
    free(st->trailers);
    st->trailers = nv;
    st->n_trailers = n;
    return 0;
}
