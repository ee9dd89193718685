/*
 * HTTP/1.1 response parser (client side). Works a line at a time for the head, chunk-size lines and trailers,
 * and hands body bytes over where they lie. A line that is whole inside the fed buffer is parsed in place;
 * only a line cut by the end of a feed is copied (into p->line) so it can be finished by the next feed.
 */
#include "sg_h1.h"
#include "h1_parse.h"

#include <stdlib.h>
#include <string.h>

enum {
    ST_STATUS = 0, /* waiting for (the rest of) a status line */
    ST_HEADER,     /* header lines until the blank line */
    ST_BODY_LEN,   /* Content-Length body: remaining bytes */
    ST_BODY_CLOSE, /* body until the peer closes */
    ST_CHUNK_SIZE, /* a chunk-size line */
    ST_CHUNK_DATA, /* remaining bytes of a chunk */
    ST_CHUNK_END,  /* the empty line after a chunk's data */
    ST_TRAILER,    /* trailer lines after the last chunk, until the blank line */
    ST_DONE,       /* on_complete was called; only a reset brings the parser back */
    ST_FAILED,     /* a negative return happened */
};

static void clear_head(sg_h1_resp_t *p)
{
    memset(&p->head, 0, sizeof p->head);
    p->head.content_length = -1;
    p->head.ka_max = -1;
    p->head.ka_timeout_s = -1;
    p->hflags = 0;
}

void sg_h1_resp_init(sg_h1_resp_t *p)
{
    memset(p, 0, sizeof *p);
    sg_h1_resp_reset(p);
}

void sg_h1_resp_reset(sg_h1_resp_t *p)
{
    p->state = ST_STATUS;
    clear_head(p);
    p->remaining = 0;
    p->line_len = 0;
    p->head_bytes = 0;
    p->is_head_request = false;
}

void sg_h1_resp_free(sg_h1_resp_t *p)
{
    free(p->line);
    p->line = NULL;
    p->line_len = p->line_cap = 0;
}

void sg_h1_resp_set_head_request(sg_h1_resp_t *p, bool is_head)
{
    p->is_head_request = is_head;
}

bool sg_h1_resp_started(const sg_h1_resp_t *p)
{
    if (p->state == ST_DONE)
        return false;
    return p->state != ST_STATUS || p->head_bytes > 0;
}

static int keep_partial(sg_h1_resp_t *p, const char *s, size_t n)
{
    if (p->line_len + n > p->line_cap) {
        size_t cap = p->line_cap ? p->line_cap : 256;
        while (cap < p->line_len + n)
            cap *= 2;
        char *nl = realloc(p->line, cap);
        if (!nl)
            return SG_ENOMEM;
        p->line = nl;
        p->line_cap = cap;
    }
    memcpy(p->line + p->line_len, s, n);
    p->line_len += n;
    return 0;
}

/*
 * Take the next line from data[*off..len). Returns 1 with *line and *line_len (terminator stripped; the pointer is
 * valid until the next call) when a whole line is available, 0 when the data ran out first (the partial line
 * was kept), or negative. max bounds the line, terminator included; *budget (if not NULL) is a running byte
 * count that must not pass SG_H1_MAX_HEAD.
 */
static int take_line(sg_h1_resp_t *p, const char *data, size_t len, size_t *off, const char **line, size_t *line_len,
                     size_t max, size_t *budget)
{
    const char *start = data + *off;
    size_t avail = len - *off;
    const char *lf = memchr(start, '\n', avail);
    size_t take = lf ? (size_t)(lf - start) + 1 : avail;
    if (p->line_len + take > max)
        return SG_ETOOBIG;
    if (budget) {
        if (*budget + take > SG_H1_MAX_HEAD)
            return SG_ETOOBIG;
        *budget += take;
    }
    *off += take;
    const char *l;
    size_t n;
    if (!lf) {
        int rc = keep_partial(p, start, take);
        return rc < 0 ? rc : 0;
    }
    if (p->line_len == 0) {
        l = start;
        n = take - 1;
    } else {
        int rc = keep_partial(p, start, take - 1);
        if (rc < 0)
            return rc;
        l = p->line;
        n = p->line_len;
        p->line_len = 0; /* the bytes stay valid until the next keep_partial */
    }
    if (n > 0 && l[n - 1] == '\r')
        n--;
    *line = l;
    *line_len = n;
    return 1;
}

static int parse_status_line(sg_h1_resp_t *p, const char *l, size_t n)
{
    /* HTTP/1.x SP 3DIGIT [SP reason]; some servers omit the space when the reason is empty. */
    int minor = sg_h1_version(l, n);
    if (minor < 0)
        return minor;
    if (n < 12 || l[8] != ' ')
        return SG_EPROTO;
    int status = 0;
    for (int i = 9; i < 12; i++) {
        if (l[i] < '0' || l[i] > '9')
            return SG_EPROTO;
        status = status * 10 + (l[i] - '0');
    }
    if (status < 100)
        return SG_EPROTO;
    if (n > 12 && l[12] != ' ')
        return SG_EPROTO;
    for (size_t i = 13; i < n; i++) {
        unsigned char c = (unsigned char)l[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return SG_EPROTO;
    }
    p->head.status = status;
    p->head.minor_version = minor;
    return 0;
}

static int complete(sg_h1_resp_t *p, const sg_h1_resp_cb_t *cb, void *ud)
{
    p->state = ST_DONE;
    if (cb && cb->on_complete)
        return cb->on_complete(ud);
    return 0;
}

/* The blank line after the headers: settle framing, tell the caller, pick the body state. 1: response done. */
static int end_of_head(sg_h1_resp_t *p, const sg_h1_resp_cb_t *cb, void *ud)
{
    sg_h1_resp_head_t *h = &p->head;
    uint32_t f = p->hflags;
    if (h->status < 200) {
        if (h->status == 101)
            return SG_EPROTO;
        /* Interim response: its head is dropped, the final one follows. head_bytes keeps counting so a peer
         * cannot stream 100 Continue forever under the cap. */
        clear_head(p);
        p->state = ST_STATUS;
        return 0;
    }
    if ((f & SG_H1F_TE_SEEN) && h->content_length >= 0)
        return SG_EPROTO; /* RFC 9112 6.3: a smuggling signal; refuse rather than guess */
    if (h->minor_version >= 1)
        h->keep_alive = !(f & SG_H1F_CONN_CLOSE);
    else
        h->keep_alive = (f & SG_H1F_CONN_KEEP_ALIVE) && !(f & SG_H1F_CONN_CLOSE);
    h->event_stream = (f & SG_H1F_EVENT_STREAM) != 0;
    h->chunked = (f & SG_H1F_TE_CHUNKED_LAST) != 0;
    bool no_body = p->is_head_request || h->status == 204 || h->status == 304;
    int next;
    if (no_body) {
        next = ST_DONE;
    } else if (f & SG_H1F_TE_SEEN) {
        next = h->chunked ? ST_CHUNK_SIZE : ST_BODY_CLOSE;
    } else if (h->content_length >= 0) {
        next = h->content_length > 0 ? ST_BODY_LEN : ST_DONE;
        p->remaining = (uint64_t)h->content_length;
    } else {
        next = ST_BODY_CLOSE;
    }
    if (next == ST_BODY_CLOSE) {
        h->body_until_close = true;
        h->keep_alive = false;
    }
    p->state = next;
    if (cb && cb->on_head) {
        int rc = cb->on_head(ud, h);
        if (rc < 0)
            return rc;
    }
    if (next == ST_DONE) {
        int rc = complete(p, cb, ud);
        return rc < 0 ? rc : 1;
    }
    return 0;
}

static int deliver(const sg_h1_resp_cb_t *cb, void *ud, const char *s, size_t n)
{
    if (n && cb && cb->on_body)
        return cb->on_body(ud, s, n);
    return 0;
}

/* Deliver what is left of a counted span (Content-Length body or chunk data) that lies in this buffer. */
static int deliver_counted(sg_h1_resp_t *p, const char *data, size_t len, size_t *off, const sg_h1_resp_cb_t *cb,
                           void *ud)
{
    size_t avail = len - *off;
    size_t take = p->remaining < avail ? (size_t)p->remaining : avail;
    int rc = deliver(cb, ud, data + *off, take);
    *off += take;
    p->remaining -= take;
    return rc;
}

/* One step of the state machine at data[*off]; 1 when the response completed. */
static int step(sg_h1_resp_t *p, const char *data, size_t len, size_t *off, const sg_h1_resp_cb_t *cb, void *ud)
{
    const char *l;
    size_t n;
    int rc;
    switch (p->state) {
    case ST_STATUS:
        rc = take_line(p, data, len, off, &l, &n, SG_H1_MAX_HEAD, &p->head_bytes);
        if (rc <= 0)
            return rc;
        rc = parse_status_line(p, l, n);
        if (rc < 0)
            return rc;
        p->state = ST_HEADER;
        return 0;
    case ST_HEADER:
        rc = take_line(p, data, len, off, &l, &n, SG_H1_MAX_HEAD, &p->head_bytes);
        if (rc <= 0)
            return rc;
        if (n == 0)
            return end_of_head(p, cb, ud);
        {
            sg_h1_keep_alive_t ka = {p->head.ka_max, p->head.ka_timeout_s};
            rc = sg_h1_header_line(l, n, &p->head.content_length, &p->hflags, &ka);
            p->head.ka_max = ka.max;
            p->head.ka_timeout_s = ka.timeout_s;
            return rc;
        }
    case ST_BODY_LEN: {
        rc = deliver_counted(p, data, len, off, cb, ud);
        if (rc < 0)
            return rc;
        if (p->remaining == 0) {
            rc = complete(p, cb, ud);
            return rc < 0 ? rc : 1;
        }
        return 0;
    }
    case ST_BODY_CLOSE:
        rc = deliver(cb, ud, data + *off, len - *off);
        *off = len;
        return rc;
    case ST_CHUNK_SIZE:
        rc = take_line(p, data, len, off, &l, &n, SG_H1_MAX_CHUNK_LINE, NULL);
        if (rc <= 0)
            return rc;
        rc = sg_h1_chunk_size(l, n, &p->remaining);
        if (rc < 0)
            return rc;
        if (p->remaining == 0) {
            p->head_bytes = 0; /* the trailer section gets its own SG_H1_MAX_HEAD */
            p->state = ST_TRAILER;
        } else {
            p->state = ST_CHUNK_DATA;
        }
        return 0;
    case ST_CHUNK_DATA: {
        rc = deliver_counted(p, data, len, off, cb, ud);
        if (rc < 0)
            return rc;
        if (p->remaining == 0)
            p->state = ST_CHUNK_END;
        return 0;
    }
    case ST_CHUNK_END:
        /* Only CRLF or LF may follow chunk data; bound the line tightly so junk fails fast. */
        rc = take_line(p, data, len, off, &l, &n, 2, NULL);
        if (rc == SG_ETOOBIG)
            return SG_EPROTO;
        if (rc <= 0)
            return rc;
        if (n != 0)
            return SG_EPROTO;
        p->state = ST_CHUNK_SIZE;
        return 0;
    case ST_TRAILER:
        rc = take_line(p, data, len, off, &l, &n, SG_H1_MAX_HEAD, &p->head_bytes);
        if (rc <= 0)
            return rc;
        if (n == 0) {
            rc = complete(p, cb, ud);
            return rc < 0 ? rc : 1;
        }
        /* Trailer fields are not used, but they must still look like fields. Framing fields in a trailer
         * mean nothing (RFC 9110 6.5.1), so a scratch copy of the state takes what they say. */
        {
            int64_t cl = -1;
            uint32_t f = 0;
            return sg_h1_header_line(l, n, &cl, &f, NULL);
        }
    default:
        return SG_EPROTO;
    }
}

ssize_t sg_h1_resp_feed(sg_h1_resp_t *p, const char *data, size_t len, const sg_h1_resp_cb_t *cb, void *ud)
{
    if (p->state == ST_FAILED)
        return SG_EPROTO;
    if (p->state == ST_DONE)
        return len ? SG_EPROTO : 0;
    size_t off = 0;
    while (off < len) {
        int rc = step(p, data, len, &off, cb, ud);
        if (rc < 0) {
            p->state = ST_FAILED;
            return rc;
        }
        if (rc > 0)
            break;
    }
    return (ssize_t)off;
}

int sg_h1_resp_eof(sg_h1_resp_t *p, const sg_h1_resp_cb_t *cb, void *ud)
{
    switch (p->state) {
    case ST_DONE:
        return 0;
    case ST_FAILED:
        return SG_EPROTO;
    case ST_BODY_CLOSE: {
        int rc = complete(p, cb, ud);
        if (rc < 0)
            p->state = ST_FAILED;
        return rc < 0 ? rc : 0;
    }
    case ST_STATUS:
        if (p->head_bytes == 0)
            return 0;
        return SG_EINCOMPLETE;
    default:
        return SG_EINCOMPLETE;
    }
}
