/*
 * Server-sent events parser. This runs once per token on the client's hot path, so the common case (a whole
 * "data: ...\n\n" event inside one fed buffer) is found with two memchr passes per line and delivered as a
 * slice of the caller's buffer. Copies happen only for what must outlive a feed (a partial line, the fields
 * of an event not yet ended) and for events with several data lines, which must be joined.
 */
#include "sg_sse.h"

#include <stdlib.h>
#include <string.h>

static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};

void sg_sse_init(sg_sse_t *p, size_t max_event)
{
    memset(p, 0, sizeof *p);
    p->max_event = max_event;
}

static void clear_event(sg_sse_t *p)
{
    p->has_data = false;
    p->data_owned = false;
    p->data = (sg_slice_t){NULL, 0};
    p->scratch_len = 0;
    p->event = (sg_slice_t){NULL, 0};
    p->event_owned = false;
    p->ev_len = 0;
}

void sg_sse_reset(sg_sse_t *p)
{
    p->state = 0;
    p->bom_checked = false;
    p->last_was_cr = false;
    p->len = 0;
    clear_event(p);
}

void sg_sse_free(sg_sse_t *p)
{
    free(p->buf);
    free(p->scratch);
    free(p->evbuf);
    size_t max_event = p->max_event;
    memset(p, 0, sizeof *p);
    p->max_event = max_event;
}

bool sg_sse_pending(const sg_sse_t *p)
{
    return p->len > 0 || p->has_data || p->ev_len > 0 || p->event.len > 0 || (!p->bom_checked && p->state > 0);
}

static int grow(char **buf, size_t *cap, size_t want)
{
    if (want <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < want)
        c *= 2;
    char *nb = realloc(*buf, c);
    if (!nb)
        return SG_ENOMEM;
    *buf = nb;
    *cap = c;
    return 0;
}

static int scratch_append(sg_sse_t *p, const char *s, size_t n)
{
    int rc = grow(&p->scratch, &p->scratch_cap, p->scratch_len + n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(p->scratch + p->scratch_len, s, n);
    p->scratch_len += n;
    return 0;
}

/* Move the data slice (which points into the caller's buffer) into scratch. */
static int own_data(sg_sse_t *p)
{
    if (!p->has_data || p->data_owned)
        return 0;
    p->scratch_len = 0;
    p->data_owned = true;
    return scratch_append(p, p->data.base, p->data.len);
}

static int own_event(sg_sse_t *p)
{
    if (p->event_owned)
        return 0;
    if (p->event.len == 0) {
        p->event = (sg_slice_t){NULL, 0};
        return 0;
    }
    int rc = grow(&p->evbuf, &p->ev_cap, p->event.len);
    if (rc < 0)
        return rc;
    memcpy(p->evbuf, p->event.base, p->event.len);
    p->ev_len = p->event.len;
    p->event = (sg_slice_t){NULL, 0};
    p->event_owned = true;
    return 0;
}

static size_t data_len(const sg_sse_t *p)
{
    return p->data_owned ? p->scratch_len : p->data.len;
}

static size_t event_len(const sg_sse_t *p)
{
    return p->event_owned ? p->ev_len : p->event.len;
}

static int add_data(sg_sse_t *p, const char *v, size_t n, bool in_place)
{
    if (!p->has_data) {
        p->has_data = true;
        if (in_place) {
            p->data = (sg_slice_t){v, n};
            p->data_owned = false;
            return 0;
        }
        p->data_owned = true;
        p->scratch_len = 0;
        return scratch_append(p, v, n);
    }
    int rc = own_data(p);
    if (rc == 0)
        rc = scratch_append(p, "\n", 1);
    if (rc == 0)
        rc = scratch_append(p, v, n);
    return rc;
}

static int set_event(sg_sse_t *p, const char *v, size_t n, bool in_place)
{
    if (in_place) {
        p->event = (sg_slice_t){v, n};
        p->event_owned = false;
        p->ev_len = 0;
        return 0;
    }
    int rc = grow(&p->evbuf, &p->ev_cap, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(p->evbuf, v, n);
    p->ev_len = n;
    p->event = (sg_slice_t){NULL, 0};
    p->event_owned = true;
    return 0;
}

static int dispatch(sg_sse_t *p, const sg_sse_cb_t *cb, void *ud)
{
    if (!p->has_data) {
        clear_event(p);
        return 0;
    }
    sg_sse_event_t ev;
    ev.data = p->data_owned ? (sg_slice_t){p->scratch, p->scratch_len} : p->data;
    ev.event = p->event_owned ? (sg_slice_t){p->evbuf, p->ev_len} : p->event;
    /* Never hand out NULL bases: callers memcmp these. */
    if (!ev.data.base)
        ev.data.base = "";
    if (!ev.event.base)
        ev.event.base = "";
    /* The buffers behind ev stay untouched until the next line is processed, so clearing first is safe and
     * leaves the parser consistent if the callback stops us. */
    clear_event(p);
    if (cb && cb->on_event)
        return cb->on_event(ud, &ev);
    return 0;
}

/* One complete line without its ending. in_place: line points into the caller's buffer for this feed. */
static int process_line(sg_sse_t *p, const char *line, size_t n, bool in_place, const sg_sse_cb_t *cb, void *ud)
{
    if (n == 0)
        return dispatch(p, cb, ud);
    if (n > p->max_event)
        return SG_ETOOBIG;
    if (line[0] == ':')
        return 0; /* comment */
    const char *colon = memchr(line, ':', n);
    size_t field_len = colon ? (size_t)(colon - line) : n;
    const char *v = colon ? colon + 1 : line + n;
    size_t vlen = (size_t)(line + n - v);
    if (vlen && *v == ' ') {
        v++;
        vlen--;
    }
    int rc = 0;
    if (field_len == 4 && memcmp(line, "data", 4) == 0)
        rc = add_data(p, v, vlen, in_place);
    else if (field_len == 5 && memcmp(line, "event", 5) == 0)
        rc = set_event(p, v, vlen, in_place);
    else
        return 0; /* id, retry and unknown fields: nothing we use */
    if (rc < 0)
        return rc;
    if (data_len(p) + event_len(p) > p->max_event)
        return SG_ETOOBIG;
    return 0;
}

static int keep_partial(sg_sse_t *p, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (p->len + n > p->max_event)
        return SG_ETOOBIG;
    int rc = grow(&p->buf, &p->cap, p->len + n);
    if (rc < 0)
        return rc;
    memcpy(p->buf + p->len, s, n);
    p->len += n;
    return 0;
}

static int feed_lines(sg_sse_t *p, const char *data, size_t len, const sg_sse_cb_t *cb, void *ud)
{
    size_t off = 0;
    while (!p->bom_checked && off < len) {
        if ((unsigned char)data[off] == bom[p->state]) {
            off++;
            if (++p->state == 3) {
                p->bom_checked = true;
                p->state = 0;
            }
            continue;
        }
        /* Not a BOM after all: the bytes matched so far start the first line. */
        p->bom_checked = true;
        int rc = keep_partial(p, (const char *)bom, (size_t)p->state);
        p->state = 0;
        if (rc < 0)
            return rc;
    }
    if (p->last_was_cr && off < len) {
        p->last_was_cr = false;
        if (data[off] == '\n')
            off++;
    }
    while (off < len) {
        const char *s = data + off;
        size_t avail = len - off;
        const char *lf = memchr(s, '\n', avail);
        size_t upto = lf ? (size_t)(lf - s) : avail;
        const char *cr = memchr(s, '\r', upto);
        size_t n, term;
        if (cr) {
            n = (size_t)(cr - s);
            if (n + 1 < avail) {
                term = s[n + 1] == '\n' ? 2 : 1;
            } else {
                term = 1;
                p->last_was_cr = true; /* an LF opening the next feed completes this CRLF */
            }
        } else if (lf) {
            n = upto;
            term = 1;
        } else {
            return keep_partial(p, s, avail);
        }
        int rc;
        if (p->len) {
            rc = keep_partial(p, s, n);
            if (rc == 0) {
                size_t full = p->len;
                p->len = 0; /* processed now; the bytes stay valid until the next keep_partial */
                rc = process_line(p, p->buf, full, false, cb, ud);
            }
        } else {
            rc = process_line(p, s, n, true, cb, ud);
        }
        if (rc < 0)
            return rc;
        off += n + term;
    }
    return 0;
}

int sg_sse_feed(sg_sse_t *p, const char *data, size_t len, const sg_sse_cb_t *cb, void *ud)
{
    int rc = feed_lines(p, data, len, cb, ud);
    if (rc < 0)
        return rc;
    /* Slices into data die with this call: copy what an unfinished event still needs. */
    rc = own_data(p);
    if (rc == 0)
        rc = own_event(p);
    return rc;
}
