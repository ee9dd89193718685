/*
 * HTTP/1.1 request parser for the mock server. Requests are parsed whole: in place when one lies entirely in
 * the fed buffer, otherwise from p->buf, which holds at most one partial request (never more than
 * max_request bytes).
 *
 * Every check looks only at the first max_request bytes of a request (and the first SG_H1_MAX_HEAD of its
 * head), so the verdict on a request never depends on how its bytes were split across feeds.
 */
#include "sg_h1.h"
#include "h1_parse.h"

#include <stdlib.h>
#include <string.h>

void sg_h1_req_init(sg_h1_req_t *p, size_t max_request)
{
    memset(p, 0, sizeof *p);
    p->max_request = max_request;
}

void sg_h1_req_free(sg_h1_req_t *p)
{
    free(p->buf);
    p->buf = NULL;
    p->len = p->cap = 0;
    p->scanned = p->need = 0;
}

static int reserve(sg_h1_req_t *p, size_t want)
{
    if (want <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap : 1024;
    while (cap < want)
        cap *= 2;
    char *nb = realloc(p->buf, cap);
    if (!nb)
        return SG_ENOMEM;
    p->buf = nb;
    p->cap = cap;
    return 0;
}

/*
 * Length of the head (through the LF of the blank line) in s[0..len), or 0 when it is not all there yet;
 * *scanned remembers where to resume so a head trickling in byte by byte is not rescanned from the start.
 */
static size_t find_head_end(const char *s, size_t len, size_t *scanned)
{
    size_t i = *scanned;
    for (;;) {
        const char *lf = i < len ? memchr(s + i, '\n', len - i) : NULL;
        if (!lf) {
            *scanned = len;
            return 0;
        }
        size_t at = (size_t)(lf - s);
        if (at + 1 == len) {
            *scanned = at;
            return 0;
        }
        if (s[at + 1] == '\n')
            return at + 2;
        if (s[at + 1] == '\r') {
            if (at + 2 == len) {
                *scanned = at;
                return 0;
            }
            if (s[at + 2] == '\n')
                return at + 3;
        }
        i = at + 1;
    }
}

/* The next line of s[*i..end) (which must contain an LF), without its line ending. */
static sg_slice_t next_line(const char *s, size_t end, size_t *i)
{
    const char *lf = memchr(s + *i, '\n', end - *i);
    size_t n = (size_t)(lf - (s + *i));
    sg_slice_t line = {s + *i, n};
    if (n && line.base[n - 1] == '\r')
        line.len--;
    *i += n + 1;
    return line;
}

static int parse_request_line(sg_slice_t l, sg_h1_request_t *req)
{
    static const char tchar_extra[] = "!#$%&'*+-.^_`|~";
    size_t i = 0;
    while (i < l.len && l.base[i] != ' ') {
        char c = l.base[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c != '\0' && strchr(tchar_extra, c));
        if (!ok)
            return SG_EPROTO;
        i++;
    }
    if (i == 0 || i == l.len)
        return SG_EPROTO;
    req->method = (sg_slice_t){l.base, i};
    size_t t = ++i;
    while (i < l.len && l.base[i] != ' ') {
        unsigned char c = (unsigned char)l.base[i];
        if (c <= 0x20 || c == 0x7f)
            return SG_EPROTO;
        i++;
    }
    if (i == t || i == l.len)
        return SG_EPROTO;
    req->path = (sg_slice_t){l.base + t, i - t};
    i++;
    if (l.len - i != 8)
        return SG_EPROTO;
    int minor = sg_h1_version(l.base + i, 8);
    if (minor < 0)
        return minor;
    req->minor_version = minor;
    return 0;
}

/*
 * Walk chunked framing in s[start..len). Returns the offset just past the trailer section, 0 when more bytes
 * are needed (then *need, if it can tell, is how many bytes s must hold before a new walk can get further), or
 * negative. With dst, chunk data is moved there as it is found (dst may alias s at or before the data, which
 * is how a buffered request is decoded in place).
 */
static ssize_t walk_chunked(const char *s, size_t len, size_t start, char *dst, size_t *body_len, size_t *need)
{
    size_t i = start, out = 0;
    for (;;) {
        size_t avail = len - i;
        const char *lf = avail ? memchr(s + i, '\n', avail) : NULL;
        size_t line_bytes = lf ? (size_t)(lf - (s + i)) + 1 : avail;
        if (line_bytes > SG_H1_MAX_CHUNK_LINE)
            return SG_ETOOBIG;
        if (!lf)
            return 0;
        sg_slice_t l = next_line(s, len, &i);
        uint64_t size;
        int rc = sg_h1_chunk_size(l.base, l.len, &size);
        if (rc < 0)
            return rc;
        if (size == 0)
            break;
        if (size > len - i) {
            /* A big chunk arriving in pieces is not walked again until all of it is here. */
            *need = size > SIZE_MAX - i - 1 ? SIZE_MAX : i + (size_t)size + 1;
            return 0;
        }
        if (dst)
            memmove(dst + out, s + i, (size_t)size);
        out += (size_t)size;
        i += (size_t)size;
        if (i == len)
            return 0;
        if (s[i] == '\r') {
            if (i + 1 == len)
                return 0;
            if (s[i + 1] != '\n')
                return SG_EPROTO;
            i += 2;
        } else if (s[i] == '\n') {
            i++;
        } else {
            return SG_EPROTO;
        }
    }
    size_t trailer_start = i;
    for (;;) {
        size_t avail = len - i;
        const char *lf = avail ? memchr(s + i, '\n', avail) : NULL;
        size_t end = lf ? (size_t)(lf - s) + 1 : len;
        if (end - trailer_start > SG_H1_MAX_HEAD)
            return SG_ETOOBIG;
        if (!lf)
            return 0;
        sg_slice_t l = next_line(s, len, &i);
        if (l.len == 0)
            break;
        int64_t cl = -1;
        uint32_t f = 0;
        int rc = sg_h1_header_line(l.base, l.len, &cl, &f, NULL);
        if (rc < 0)
            return rc;
    }
    *body_len = out;
    return (ssize_t)i;
}

/*
 * Try to take one request from s[0..len). mut is s when the bytes may be rewritten (they are p->buf), else
 * NULL. Returns bytes consumed (> 0: a request was delivered, or empty lines were skipped), 0 when the request
 * is not complete yet, or negative.
 */
static ssize_t parse_one(sg_h1_req_t *p, char *mut, const char *s, size_t len, const sg_h1_req_cb_t *cb, void *ud)
{
    size_t skip = 0;
    while (skip < len && (s[skip] == '\r' || s[skip] == '\n'))
        skip++;
    if (skip)
        return (ssize_t)skip;
    /* Look no further than a legal request could reach; see the comment at the top. */
    size_t lim = len < p->max_request ? len : p->max_request;
    bool at_cap = len >= p->max_request;
    size_t head_window = lim < SG_H1_MAX_HEAD ? lim : SG_H1_MAX_HEAD;
    size_t head_len = find_head_end(s, head_window, &p->scanned);
    if (!head_len) {
        if (head_window == SG_H1_MAX_HEAD || at_cap)
            return SG_ETOOBIG;
        return 0;
    }

    sg_h1_request_t req = {0};
    size_t i = 0;
    int rc = parse_request_line(next_line(s, head_len, &i), &req);
    if (rc < 0)
        return rc;
    int64_t cl = -1;
    uint32_t flags = 0;
    for (;;) {
        sg_slice_t l = next_line(s, head_len, &i);
        if (l.len == 0)
            break;
        rc = sg_h1_header_line(l.base, l.len, &cl, &flags, NULL);
        if (rc < 0)
            return rc;
    }
    if (req.minor_version >= 1)
        req.keep_alive = !(flags & SG_H1F_CONN_CLOSE);
    else
        req.keep_alive = (flags & SG_H1F_CONN_KEEP_ALIVE) && !(flags & SG_H1F_CONN_CLOSE);

    size_t total;
    req.body = (sg_slice_t){s + head_len, 0};
    if (flags & SG_H1F_TE_SEEN) {
        /* RFC 9112 6.3: a request whose final coding is not chunked cannot be framed; with Content-Length too
         * it is a smuggling attempt. Both are errors. */
        if (cl >= 0 || !(flags & SG_H1F_TE_CHUNKED_LAST))
            return SG_EPROTO;
        size_t body_len = 0, need = 0;
        ssize_t end = walk_chunked(s, lim, head_len, NULL, &body_len, &need);
        if (end < 0)
            return end;
        if (end == 0) {
            p->need = need;
            return at_cap ? SG_ETOOBIG : 0;
        }
        char *dst;
        if (mut) {
            dst = mut + head_len;
        } else {
            /* In place: the input is read-only, and p->buf is free (no partial request is buffered). */
            rc = reserve(p, body_len ? body_len : 1);
            if (rc < 0)
                return rc;
            dst = p->buf;
        }
        (void)walk_chunked(s, lim, head_len, dst, &body_len, &need);
        req.body = (sg_slice_t){dst, body_len};
        total = (size_t)end;
    } else {
        uint64_t body_len = cl > 0 ? (uint64_t)cl : 0;
        if (body_len > p->max_request - head_len)
            return SG_ETOOBIG;
        total = head_len + (size_t)body_len;
        if (total > len) {
            p->need = total;
            return 0;
        }
        req.body.len = (size_t)body_len;
    }
    if (cb && cb->on_request) {
        rc = cb->on_request(ud, &req);
        if (rc < 0)
            return rc;
    }
    return (ssize_t)total;
}

static int append(sg_h1_req_t *p, const char *data, size_t n)
{
    int rc = reserve(p, p->len + n);
    if (rc < 0)
        return rc;
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    return 0;
}

static int feed(sg_h1_req_t *p, const char *data, size_t len, const sg_h1_req_cb_t *cb, void *ud)
{
    size_t off = 0;
    while (off < len) {
        if (p->len == 0) {
            p->scanned = p->need = 0;
            ssize_t n = parse_one(p, NULL, data + off, len - off, cb, ud);
            if (n < 0)
                return (int)n;
            if (n > 0) {
                off += (size_t)n;
                continue;
            }
            /* parse_one has checked that what is left is under max_request. */
            return append(p, data + off, len - off);
        }
        size_t room = p->max_request - p->len;
        size_t take = len - off < room ? len - off : room;
        int rc = append(p, data + off, take);
        if (rc < 0)
            return rc;
        off += take;
        if (p->need && p->len < p->need && p->len < p->max_request)
            continue; /* cannot be complete yet; a full buffer is judged below */
        ssize_t n = parse_one(p, p->buf, p->buf, p->len, cb, ud);
        if (n < 0)
            return (int)n;
        if (n == 0) {
            if (off < len)
                return SG_ETOOBIG; /* unreachable: a full buffer is judged by parse_one */
            break;
        }
        /* A buffered request never starts with the empty lines parse_one skips and is never complete on its
         * own, so what it consumed reaches into this feed's bytes: rewind and go on in place. */
        size_t leftover = p->len - (size_t)n;
        if (leftover > take) {
            /* Not expected (see above); keep the bytes rather than trust the reasoning. */
            memmove(p->buf, p->buf + n, leftover);
            p->len = leftover;
            p->scanned = p->need = 0;
            continue;
        }
        off -= leftover;
        p->len = 0;
    }
    return 0;
}

int sg_h1_req_feed(sg_h1_req_t *p, const char *data, size_t len, const sg_h1_req_cb_t *cb, void *ud)
{
    if (p->failed)
        return SG_EPROTO;
    int rc = feed(p, data, len, cb, ud);
    if (rc < 0)
        p->failed = true;
    return rc;
}
