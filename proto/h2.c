/*
 * HTTP/2 client sessions over nghttp2's sans-I/O interface (nghttp2_session_mem_recv / _mem_send only).
 * See sg_h2.h.
 */
#define _GNU_SOURCE
#include "sg_h2.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------- requests ---------------- */

static bool name_is(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(p, lit, n) == 0;
}

static bool connection_specific(const char *name, size_t n, const char *value, size_t vn)
{
    if (name_is(name, n, "te"))
        return !(vn == 8 && strncasecmp(value, "trailers", 8) == 0);
    return name_is(name, n, "connection") || name_is(name, n, "keep-alive") || name_is(name, n, "proxy-connection") ||
           name_is(name, n, "transfer-encoding") || name_is(name, n, "upgrade") || name_is(name, n, "host");
}

static nghttp2_nv nv_make(const char *name, size_t n, const char *value, size_t vn)
{
    return (nghttp2_nv){.name = (uint8_t *)(uintptr_t)name,
                        .namelen = n,
                        .value = (uint8_t *)(uintptr_t)value,
                        .valuelen = vn,
                        .flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

int sg_h2_req_from_h1(const char *bytes, size_t len, const char *scheme, sg_h2_req_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *end = bytes + len;
    const char *head_end = memmem(bytes, len, "\r\n\r\n", 4);
    if (!head_end)
        return SG_EINVAL;
    /* request line: METHOD SP target SP HTTP/1.x */
    const char *eol = memmem(bytes, (size_t)(head_end + 2 - bytes), "\r\n", 2);
    const char *sp1 = memchr(bytes, ' ', (size_t)(eol - bytes));
    if (!sp1 || sp1 == bytes)
        return SG_EINVAL;
    const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
    if (!sp2 || sp2 == sp1 + 1)
        return SG_EINVAL;
    size_t lines = 0;
    for (const char *p = eol + 2; p < head_end + 2;
         p = (const char *)memmem(p, (size_t)(head_end + 2 - p), "\r\n", 2) + 2)
        lines++;
    out->nv = calloc(lines + 4, sizeof(*out->nv));
    out->store = malloc((size_t)(head_end - bytes) + 1);
    if (!out->nv || !out->store) {
        sg_h2_req_free(out);
        return SG_ENOMEM;
    }
    size_t n = 0, st = 0;
    out->nv[n++] = nv_make(":method", 7, bytes, (size_t)(sp1 - bytes));
    out->nv[n++] = nv_make(":scheme", 7, scheme, strlen(scheme));
    out->nv[n++] = nv_make(":path", 5, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    size_t authority = n++; /* filled from Host */
    bool have_authority = false;
    for (const char *p = eol + 2; p < head_end + 2;) {
        const char *le = memmem(p, (size_t)(head_end + 2 - p), "\r\n", 2);
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (!colon || colon == p) {
            sg_h2_req_free(out);
            return SG_EINVAL;
        }
        size_t nn = (size_t)(colon - p);
        const char *v = colon + 1;
        while (v < le && (*v == ' ' || *v == '\t'))
            v++;
        const char *ve = le;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (name_is(p, nn, "host")) {
            out->nv[authority] = nv_make(":authority", 10, v, (size_t)(ve - v));
            have_authority = true;
        } else if (!connection_specific(p, nn, v, (size_t)(ve - v))) {
            char *lname = out->store + st;
            for (size_t i = 0; i < nn; i++)
                lname[i] = (char)tolower((unsigned char)p[i]);
            st += nn;
            out->nv[n++] = nv_make(lname, nn, v, (size_t)(ve - v));
        }
        p = le + 2;
    }
    if (!have_authority) {
        sg_h2_req_free(out);
        return SG_EINVAL;
    }
    out->n_nv = n;
    out->body = head_end + 4;
    out->body_len = (size_t)(end - (head_end + 4));
    return 0;
}

void sg_h2_req_free(sg_h2_req_t *r)
{
    free(r->nv);
    free(r->store);
    memset(r, 0, sizeof(*r));
}

/* ---------------- a block pool for nghttp2 ---------------- */

/*
 * nghttp2 mallocs and frees about five small blocks per request (the stream, its outbound items, header copies);
 * with glibc's malloc that was a tenth of the client's CPU per request over h2c (h2load links jemalloc). A client
 * session hands nghttp2 this pool instead: blocks up to POOL_MAX bytes come from per-size-class free lists that
 * live as long as the session, anything larger from malloc. Single-threaded, like the session.
 */
#define POOL_MIN_SHIFT 5 /* 32 bytes */
#define POOL_CLASSES 8   /* up to 4 KiB */
#define POOL_MAX ((size_t)1 << (POOL_MIN_SHIFT + POOL_CLASSES - 1))
#define POOL_HDR 16 /* keeps the 16-byte alignment malloc gives */

typedef struct pool_blk {
    struct pool_blk *next;
} pool_blk_t;

typedef struct {
    pool_blk_t *free[POOL_CLASSES];
} h2_pool_t;

/* The class of a request of n bytes; POOL_CLASSES for what goes to malloc. */
static unsigned pool_class(size_t n)
{
    if (n > POOL_MAX)
        return POOL_CLASSES;
    unsigned c = 0;
    while (((size_t)1 << (POOL_MIN_SHIFT + c)) < n)
        c++;
    return c;
}

static void *pool_malloc(size_t n, void *ud)
{
    h2_pool_t *pool = ud;
    unsigned c = pool_class(n);
    unsigned char *b;
    if (c < POOL_CLASSES && pool->free[c]) {
        b = (unsigned char *)pool->free[c];
        pool->free[c] = pool->free[c]->next;
    } else {
        b = malloc(POOL_HDR + (c < POOL_CLASSES ? (size_t)1 << (POOL_MIN_SHIFT + c) : n));
        if (!b)
            return NULL;
    }
    *(uint32_t *)(void *)b = c;
    return b + POOL_HDR;
}

static void pool_free(void *p, void *ud)
{
    if (!p)
        return;
    h2_pool_t *pool = ud;
    unsigned char *b = (unsigned char *)p - POOL_HDR;
    unsigned c = *(uint32_t *)(void *)b;
    if (c >= POOL_CLASSES) {
        free(b);
        return;
    }
    pool_blk_t *blk = (pool_blk_t *)(void *)b;
    blk->next = pool->free[c];
    pool->free[c] = blk;
}

static void *pool_calloc(size_t nmemb, size_t size, void *ud)
{
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    void *p = pool_malloc(nmemb * size, ud);
    if (p)
        memset(p, 0, nmemb * size);
    return p;
}

static void *pool_realloc(void *p, size_t n, void *ud)
{
    if (!p)
        return pool_malloc(n, ud);
    if (!n) {
        pool_free(p, ud);
        return NULL;
    }
    unsigned char *b = (unsigned char *)p - POOL_HDR;
    unsigned c = *(uint32_t *)(void *)b;
    if (c >= POOL_CLASSES) {
        if (n > POOL_MAX) { /* stays large */
            unsigned char *nb = realloc(b, POOL_HDR + n);
            return nb ? nb + POOL_HDR : NULL;
        }
        void *np = pool_malloc(n, ud);
        if (np) {
            memcpy(np, p, n); /* n < the old size: it was larger than POOL_MAX */
            free(b);
        }
        return np;
    }
    size_t have = (size_t)1 << (POOL_MIN_SHIFT + c);
    if (n <= have)
        return p;
    void *np = pool_malloc(n, ud);
    if (np) {
        memcpy(np, p, have);
        pool_free(p, ud);
    }
    return np;
}

static void pool_destroy(h2_pool_t *pool)
{
    for (unsigned c = 0; c < POOL_CLASSES; c++)
        while (pool->free[c]) {
            pool_blk_t *b = pool->free[c];
            pool->free[c] = b->next;
            free(b);
        }
}

/* ---------------- sessions ---------------- */

typedef struct h2_stream h2_stream_t;
struct h2_stream {
    h2_stream_t *prev, *next; /* open streams, or the free list (next only) */
    void *ud;
    const char *body;
    size_t body_len, body_off;
    size_t patch_off, patch_len; /* body bytes sent from patch instead (sg_h2_submit_patched) */
    char patch[SG_H2_PATCH_MAX];
    int32_t id;
    int status;
    bool event_stream;
    bool head_done;  /* a final (non-1xx) response head was delivered */
    bool end_stream; /* the peer ended its side */
    bool any_recv;   /* a response frame arrived on this stream */
    bool sent;       /* its HEADERS were serialized */
};

struct sg_h2 {
    nghttp2_session *ng;
    sg_h2_cb_t cb;
    void *ud;
    h2_stream_t *open; /* streams submitted and not yet closed */
    h2_stream_t *free_streams;
    h2_pool_t pool; /* nghttp2's allocations; outlives s->ng */
    uint32_t n_open;
    uint32_t n_sent; /* open streams whose HEADERS went out */
    bool goaway;
    bool settings_seen; /* the peer's SETTINGS arrived */
    bool freeing;
    char err[160]; /* nghttp2's text for the last error it found (sg_h2_error_text) */
};

static void stream_unlink(sg_h2_t *s, h2_stream_t *st)
{
    if (st->prev)
        st->prev->next = st->next;
    else
        s->open = st->next;
    if (st->next)
        st->next->prev = st->prev;
    s->n_open--;
    if (st->sent)
        s->n_sent--;
    st->next = s->free_streams;
    s->free_streams = st;
}

static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    h2_stream_t *st = src->ptr;
    size_t n = st->body_len - st->body_off;
    if (n > len)
        n = len;
    memcpy(buf, st->body + st->body_off, n);
    if (st->patch_len) { /* the part of the patch inside [body_off, body_off + n) */
        size_t a = st->body_off > st->patch_off ? st->body_off : st->patch_off;
        size_t b = st->body_off + n < st->patch_off + st->patch_len ? st->body_off + n : st->patch_off + st->patch_len;
        if (a < b)
            memcpy(buf + (a - st->body_off), st->patch + (a - st->patch_off), b - a);
    }
    st->body_off += n;
    if (st->body_off == st->body_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (st && !st->head_done) {
        st->status = 0;
        st->event_stream = false;
    }
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    sg_h2_t *s = user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st || s->freeing)
        return 0;
    bool trailer = st->head_done;
    if (!trailer) {
        st->any_recv = true;
        if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
            int v = 0;
            for (size_t i = 0; i < valuelen && i < 3; i++)
                v = v * 10 + (value[i] - '0'); /* nghttp2 checked it is three digits */
            st->status = v;
        } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
            st->event_stream = valuelen >= 17 && strncasecmp((const char *)value, "text/event-stream", 17) == 0;
        }
    }
    /* fields of the final head (:status comes first, so a 1xx block is known by now) and of the trailers */
    if (s->cb.on_field && (trailer || st->status >= 200) &&
        s->cb.on_field(s->ud, st->ud, (const char *)name, namelen, (const char *)value, valuelen, trailer) < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets this stream */
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    sg_h2_t *s = user;
    if (s->freeing)
        return 0;
    if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK))
        s->settings_seen = true;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        s->goaway = true;
        if (s->cb.on_goaway)
            s->cb.on_goaway(s->ud, f->goaway.last_stream_id, f->goaway.error_code);
        return 0;
    }
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st)
        return 0;
    st->any_recv = true;
    if (f->hd.type == NGHTTP2_HEADERS && !st->head_done && st->status >= 200) {
        st->head_done = true;
        if (s->cb.on_head && s->cb.on_head(s->ud, st->ud, st->status, st->event_stream) < 0)
            nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
    }
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        st->end_stream = true;
    return 0;
}

static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    sg_h2_t *s = user;
    if (f->hd.type != NGHTTP2_HEADERS || s->freeing)
        return 0;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!st || st->sent)
        return 0;
    st->sent = true;
    s->n_sent++;
    if (s->cb.on_sent)
        s->cb.on_sent(s->ud, st->ud);
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
    sg_h2_t *s = user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st || s->freeing)
        return 0;
    st->any_recv = true;
    if (len && s->cb.on_data && s->cb.on_data(s->ud, st->ud, (const char *)data, len) < 0)
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error_code, void *user)
{
    sg_h2_t *s = user;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (!st || s->freeing)
        return 0;
    nghttp2_session_set_stream_user_data(ng, id, NULL);
    bool complete = st->head_done && st->end_stream;
    bool retryable = !st->any_recv && error_code == NGHTTP2_REFUSED_STREAM;
    void *ud = st->ud;
    stream_unlink(s, st);
    if (s->cb.on_close)
        s->cb.on_close(s->ud, ud, error_code, complete, retryable);
    return 0;
}

static int on_error(nghttp2_session *ng, int lib_error_code, const char *msg, size_t len, void *user)
{
    sg_h2_t *s = user;
    /* the first sentence: it says what was wrong, and fits in a request's error message */
    const char *stop = memchr(msg, '.', len);
    if (stop)
        len = (size_t)(stop - msg);
    int n = len < sizeof(s->err) ? (int)len : (int)sizeof(s->err) - 1;
    snprintf(s->err, sizeof(s->err), "%.*s", n, msg);
    return 0;
}

static int session_open(nghttp2_session **ng, bool server, const sg_h2_fns_t *fns, void *ud,
                        const nghttp2_settings_entry *iv, size_t niv, int32_t conn_window, nghttp2_mem *mem)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return SG_ENOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, fns->begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, fns->header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, fns->frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, fns->data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, fns->stream_close);
    if (fns->frame_send)
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, fns->frame_send);
    if (fns->error)
        nghttp2_session_callbacks_set_error_callback2(cbs, fns->error);
    int rv = server ? nghttp2_session_server_new3(ng, cbs, ud, NULL, mem)
                    : nghttp2_session_client_new3(ng, cbs, ud, NULL, mem);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return SG_ENOMEM;
    if (nghttp2_submit_settings(*ng, NGHTTP2_FLAG_NONE, iv, niv) != 0 ||
        nghttp2_session_set_local_window_size(*ng, NGHTTP2_FLAG_NONE, 0, conn_window) != 0) {
        nghttp2_session_del(*ng);
        *ng = NULL;
        return SG_ENOMEM;
    }
    return 0;
}

int sg_h2_session_open(nghttp2_session **ng, bool server, const sg_h2_fns_t *fns, void *ud,
                       const nghttp2_settings_entry *iv, size_t niv, int32_t conn_window)
{
    return session_open(ng, server, fns, ud, iv, niv, conn_window, NULL);
}

sg_h2_t *sg_h2_client_new(const sg_h2_cb_t *cb, void *ud)
{
    sg_h2_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cb = *cb;
    s->ud = ud;
    static const sg_h2_fns_t fns = {on_begin_headers, on_header,     on_frame_recv, on_data_chunk,
                                    on_stream_close,  on_frame_send, on_error};
    const nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SG_H2_LOCAL_STREAM_WINDOW},
    };
    nghttp2_mem mem = {&s->pool, pool_malloc, pool_free, pool_calloc, pool_realloc}; /* nghttp2 keeps a copy */
    nghttp2_mem *use = &mem;
#if defined(__SANITIZE_ADDRESS__)
    use = NULL; /* recycled blocks would hide a use after free from ASan: plain malloc in sanitizer builds */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    use = NULL;
#endif
#endif
    if (session_open(&s->ng, false, &fns, s, iv, SG_ARRAY_LEN(iv), SG_H2_LOCAL_CONN_WINDOW, use) < 0) {
        pool_destroy(&s->pool);
        free(s);
        return NULL;
    }
    return s;
}

void sg_h2_free(sg_h2_t *s)
{
    if (!s)
        return;
    s->freeing = true;
    while (s->open) {
        h2_stream_t *st = s->open;
        void *ud = st->ud;
        stream_unlink(s, st);
        if (s->cb.on_close)
            s->cb.on_close(s->ud, ud, NGHTTP2_CANCEL, false, false);
    }
    nghttp2_session_del(s->ng);
    pool_destroy(&s->pool);
    while (s->free_streams) {
        h2_stream_t *st = s->free_streams;
        s->free_streams = st->next;
        free(st);
    }
    free(s);
}

int32_t sg_h2_submit(sg_h2_t *s, const sg_h2_req_t *req, void *stream_ud)
{
    return sg_h2_submit_patched(s, req, stream_ud, 0, NULL, 0);
}

int32_t sg_h2_submit_patched(sg_h2_t *s, const sg_h2_req_t *req, void *stream_ud, size_t patch_off, const void *patch,
                             size_t patch_len)
{
    if (patch_len > SG_H2_PATCH_MAX || patch_off > req->body_len || patch_len > req->body_len - patch_off)
        return SG_EINVAL;
    if (!sg_h2_can_submit(s))
        return -EAGAIN;
    h2_stream_t *st = s->free_streams;
    if (st)
        s->free_streams = st->next;
    else if (!(st = malloc(sizeof(*st))))
        return SG_ENOMEM;
    memset(st, 0, sizeof(*st));
    st->ud = stream_ud;
    st->body = req->body;
    st->body_len = req->body_len;
    st->patch_off = patch_off;
    st->patch_len = patch_len;
    if (patch_len)
        memcpy(st->patch, patch, patch_len);
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
    int32_t id = nghttp2_submit_request(s->ng, NULL, req->nv, req->n_nv, req->body_len ? &prd : NULL, st);
    if (id < 0) {
        st->next = s->free_streams;
        s->free_streams = st;
        if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
            s->goaway = true; /* ids ran out: this connection is done */
            return -EAGAIN;
        }
        return id == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
    }
    st->id = id;
    st->prev = NULL;
    st->next = s->open;
    if (s->open)
        s->open->prev = st;
    s->open = st;
    s->n_open++;
    return id;
}

void sg_h2_cancel(sg_h2_t *s, int32_t stream_id)
{
    if (nghttp2_session_get_stream_user_data(s->ng, stream_id))
        nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
}

int sg_h2_feed(sg_h2_t *s, const char *data, size_t len)
{
    ssize_t n = nghttp2_session_mem_recv(s->ng, (const uint8_t *)data, len);
    if (n < 0) {
        s->goaway = true;
        return n == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
    }
    return 0;
}

int sg_h2_session_drain(nghttp2_session *ng, char **buf, size_t *len, size_t *cap)
{
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(ng, &p);
        if (n < 0)
            return n == NGHTTP2_ERR_NOMEM ? SG_ENOMEM : SG_EPROTO;
        if (n == 0)
            return 0;
        if (*len + (size_t)n > *cap) {
            size_t ncap = *cap ? *cap : 4096;
            while (ncap < *len + (size_t)n)
                ncap *= 2;
            char *nb = realloc(*buf, ncap);
            if (!nb)
                return SG_ENOMEM;
            *buf = nb;
            *cap = ncap;
        }
        memcpy(*buf + *len, p, (size_t)n);
        *len += (size_t)n;
    }
}

int sg_h2_drain(sg_h2_t *s, char **buf, size_t *len, size_t *cap)
{
    return sg_h2_session_drain(s->ng, buf, len, cap);
}

bool sg_h2_want_write(const sg_h2_t *s)
{
    return nghttp2_session_want_write(s->ng) != 0;
}

bool sg_h2_going_away(const sg_h2_t *s)
{
    return s->goaway || (!nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng));
}

bool sg_h2_closed(const sg_h2_t *s)
{
    return !nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng);
}

const char *sg_h2_error_text(const sg_h2_t *s)
{
    return s->err;
}

uint32_t sg_h2_peer_max_streams(const sg_h2_t *s)
{
    return nghttp2_session_get_remote_settings(s->ng, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

bool sg_h2_peer_settings_seen(const sg_h2_t *s)
{
    return s->settings_seen;
}

uint32_t sg_h2_open_streams(const sg_h2_t *s)
{
    return s->n_open;
}

uint32_t sg_h2_sent_streams(const sg_h2_t *s)
{
    return s->n_sent;
}

bool sg_h2_can_submit(const sg_h2_t *s)
{
    return !sg_h2_going_away(s) && s->n_open < sg_h2_peer_max_streams(s) &&
           nghttp2_session_get_next_stream_id(s->ng) <= INT32_MAX;
}

const char *sg_h2_error_name(uint32_t code)
{
    static const char *const names[] = {"NO_ERROR",
                                        "PROTOCOL_ERROR",
                                        "INTERNAL_ERROR",
                                        "FLOW_CONTROL_ERROR",
                                        "SETTINGS_TIMEOUT",
                                        "STREAM_CLOSED",
                                        "FRAME_SIZE_ERROR",
                                        "REFUSED_STREAM",
                                        "CANCEL",
                                        "COMPRESSION_ERROR",
                                        "CONNECT_ERROR",
                                        "ENHANCE_YOUR_CALM",
                                        "INADEQUATE_SECURITY",
                                        "HTTP_1_1_REQUIRED"};
    return code < sizeof(names) / sizeof(names[0]) ? names[code] : "UNKNOWN_ERROR";
}

/* ---------------- the start-up check ---------------- */

/* p[0..n) quoted for a message: printable ASCII as it is, \n \r \t, anything else as \xNN; cut after max bytes. */
static void quote(const uint8_t *p, size_t n, size_t max, char *out, size_t out_len)
{
    size_t o = 0;
    if (out_len < 8) {
        if (out_len)
            out[0] = 0;
        return;
    }
    out[o++] = '"';
    for (size_t i = 0; i < n && i < max && o + 8 < out_len; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
            out[o++] = (char)p[i];
        else if (p[i] == '\n' || p[i] == '\r' || p[i] == '\t')
            o += (size_t)snprintf(out + o, out_len - o, "\\%c", p[i] == '\n' ? 'n' : p[i] == '\r' ? 'r' : 't');
        else
            o += (size_t)snprintf(out + o, out_len - o, "\\x%02x", p[i]);
    }
    if (n > max && o + 4 < out_len)
        o += (size_t)snprintf(out + o, out_len - o, "...");
    out[o++] = '"';
    out[o] = 0;
}

static const char *frame_type_name(uint8_t t)
{
    static const char *const names[] = {"DATA",         "HEADERS", "PRIORITY", "RST_STREAM",    "SETTINGS",
                                        "PUSH_PROMISE", "PING",    "GOAWAY",   "WINDOW_UPDATE", "CONTINUATION"};
    return t < SG_ARRAY_LEN(names) ? names[t] : NULL;
}

sg_h2_reply_t sg_h2_classify_reply(const uint8_t *p, size_t n, bool final, char *what, size_t what_len)
{
    static const char http[] = "HTTP/";
    size_t hn = n < sizeof(http) - 1 ? n : sizeof(http) - 1;
    bool http1 = n > 0 && memcmp(p, http, hn) == 0;
    /* a frame header is 9 bytes: length (24 bits), type, flags, stream id (31 bits); SETTINGS is type 4 on stream
     * 0, without ACK, a whole number of 6-byte parameters, within the default 16 KiB frame size */
    bool settings = true;
    for (size_t i = 0; i < n && i < 9 && settings; i++) {
        if (i == 3)
            settings = p[i] == NGHTTP2_SETTINGS;
        else if (i == 4)
            settings = (p[i] & NGHTTP2_FLAG_ACK) == 0;
        else if (i >= 5)
            settings = (p[i] & (i == 5 ? 0x7f : 0xff)) == 0;
    }
    if (settings && n >= 9) {
        uint32_t len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        if (len % 6 == 0 && len <= 16384) {
            snprintf(what, what_len, "an HTTP/2 SETTINGS frame");
            return SG_H2_REPLY_H2;
        }
        settings = false;
    }
    if (!final && ((settings && n < 9) || (http1 && n < 256 && !memchr(p, '\n', n))))
        return SG_H2_REPLY_MORE;

    char q[160];
    if (n == 0) {
        snprintf(what, what_len, "nothing");
    } else if (http1 && n >= sizeof(http) - 1) {
        const uint8_t *eol = memchr(p, '\r', n);
        const uint8_t *lf = memchr(p, '\n', n);
        if (!eol || (lf && lf < eol))
            eol = lf;
        quote(p, eol ? (size_t)(eol - p) : n, 100, q, sizeof q);
        snprintf(what, what_len, "an HTTP/1.x response, %s", q);
    } else if (n >= 3 && p[0] >= 0x14 && p[0] <= 0x17 && p[1] == 0x03) {
        snprintf(what, what_len, "a TLS record (the port speaks TLS: use https://)");
    } else if (p[0] == '<') {
        quote(p, n, 48, q, sizeof q);
        snprintf(what, what_len, "an HTML page, %s", q);
    } else if (n >= 9 && frame_type_name(p[3]) && (p[5] & 0x80) == 0) {
        quote(p, n, 24, q, sizeof q);
        if (p[3] == NGHTTP2_SETTINGS)
            snprintf(what, what_len, "a malformed HTTP/2 SETTINGS frame (%s)", q);
        else
            snprintf(what, what_len, "an HTTP/2 %s frame where the server's SETTINGS must come first (%s)",
                     frame_type_name(p[3]), q);
    } else {
        quote(p, n, 48, q, sizeof q);
        snprintf(what, what_len, "bytes that are not HTTP/2: %s", q);
    }
    return SG_H2_REPLY_NOT_H2;
}
