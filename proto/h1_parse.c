/* HTTP/1.1 head pieces shared by the response and the request parser (RFC 9110 / 9112). */
#include "h1_parse.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 tchar: the characters a field name (and a method, and a transfer coding) may use. */
static const unsigned char tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1,
    ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1, ['0'] = 1,  ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
    ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1,  ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,
    ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,  ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1,
    ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,  ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1,
    ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1,  ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1,  ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1,
    ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1,  ['z'] = 1,
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Split a comma-separated list element off the front of [*s, end); trims whitespace. False when exhausted. */
static bool next_list_item(const char **s, const char *end, const char **item, size_t *item_len)
{
    const char *p = *s;
    if (p >= end)
        return false;
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    while (p < stop && is_ows(*p))
        p++;
    const char *e = stop;
    while (e > p && is_ows(e[-1]))
        e--;
    *item = p;
    *item_len = (size_t)(e - p);
    *s = comma ? comma + 1 : end;
    return true;
}

static int parse_content_length(const char *v, size_t len, int64_t *content_length)
{
    /* A list of identical values ("5, 5") is what a proxy leaves after merging duplicate fields: RFC 9110
     * 8.6 lets us accept it. Anything else that disagrees is a request-smuggling hazard and is rejected. */
    const char *s = v, *end = v + len;
    const char *item;
    size_t item_len;
    bool any = false;
    while (next_list_item(&s, end, &item, &item_len)) {
        if (item_len == 0)
            return SG_EPROTO;
        int64_t n = 0;
        for (size_t i = 0; i < item_len; i++) {
            unsigned d = (unsigned)(unsigned char)item[i] - '0';
            if (d > 9)
                return SG_EPROTO;
            if (n > (INT64_MAX - (int64_t)d) / 10)
                return SG_EPROTO;
            n = n * 10 + (int64_t)d;
        }
        if (*content_length >= 0 && *content_length != n)
            return SG_EPROTO;
        *content_length = n;
        any = true;
    }
    return any ? 0 : SG_EPROTO;
}

static int parse_transfer_encoding(const char *v, size_t len, uint32_t *flags)
{
    const char *s = v, *end = v + len;
    const char *item;
    size_t item_len;
    *flags |= SG_H1F_TE_SEEN;
    while (next_list_item(&s, end, &item, &item_len)) {
        if (item_len == 0)
            continue; /* the list rule allows empty elements */
        size_t tok = 0;
        while (tok < item_len && tchar[(unsigned char)item[tok]])
            tok++;
        if (tok == 0)
            return SG_EPROTO;
        if (tok == 7 && strncasecmp(item, "chunked", 7) == 0) {
            /* RFC 9112 6.1: a sender MUST NOT apply chunked more than once. */
            if (*flags & SG_H1F_TE_CHUNKED_SEEN)
                return SG_EPROTO;
            *flags |= SG_H1F_TE_CHUNKED_SEEN | SG_H1F_TE_CHUNKED_LAST;
        } else {
            *flags &= ~(uint32_t)SG_H1F_TE_CHUNKED_LAST;
        }
    }
    return 0;
}

static void parse_connection(const char *v, size_t len, uint32_t *flags)
{
    const char *s = v, *end = v + len;
    const char *item;
    size_t item_len;
    while (next_list_item(&s, end, &item, &item_len)) {
        if (name_is(item, item_len, "close"))
            *flags |= SG_H1F_CONN_CLOSE;
        else if (name_is(item, item_len, "keep-alive"))
            *flags |= SG_H1F_CONN_KEEP_ALIVE;
    }
}

/*
 * Keep-Alive: timeout=5, max=100 (parameters in any order and case, values optionally quoted). Each parameter
 * keeps its smallest value across fields; a value that is not a plain decimal number is skipped, and numbers
 * beyond INT32_MAX are taken as INT32_MAX.
 */
static void parse_keep_alive(const char *v, size_t len, sg_h1_keep_alive_t *ka)
{
    const char *s = v, *end = v + len;
    const char *item;
    size_t item_len;
    while (next_list_item(&s, end, &item, &item_len)) {
        const char *eq = memchr(item, '=', item_len);
        if (!eq)
            continue;
        size_t name_len = (size_t)(eq - item);
        while (name_len && is_ows(item[name_len - 1]))
            name_len--;
        const char *val = eq + 1, *val_end = item + item_len;
        while (val < val_end && is_ows(*val))
            val++;
        if (val_end - val >= 2 && *val == '"' && val_end[-1] == '"') {
            val++;
            val_end--;
        }
        if (val == val_end)
            continue;
        int64_t n = 0;
        const char *p = val;
        for (; p < val_end && *p >= '0' && *p <= '9'; p++)
            n = n < INT32_MAX ? n * 10 + (*p - '0') : INT32_MAX;
        if (p != val_end)
            continue;
        int32_t n32 = n > INT32_MAX ? INT32_MAX : (int32_t)n;
        int32_t *slot = NULL;
        if (name_is(item, name_len, "max"))
            slot = &ka->max;
        else if (name_is(item, name_len, "timeout"))
            slot = &ka->timeout_s;
        if (slot && (*slot < 0 || n32 < *slot))
            *slot = n32;
    }
}

static bool is_event_stream(const char *v, size_t len)
{
    /* The media type ends at ';' (parameters) or whitespace before it. */
    size_t n = 0;
    while (n < len && v[n] != ';' && !is_ows(v[n]))
        n++;
    return name_is(v, n, "text/event-stream");
}

int sg_h1_header_line(const char *line, size_t len, int64_t *content_length, uint32_t *flags, sg_h1_keep_alive_t *ka)
{
    /* obs-fold (a line starting with whitespace) is deprecated; RFC 9112 5.2 lets a recipient reject it. */
    if (len == 0 || is_ows(line[0]))
        return SG_EPROTO;
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return SG_EPROTO;
    size_t name_len = (size_t)(colon - line);
    for (size_t i = 0; i < name_len; i++)
        if (!tchar[(unsigned char)line[i]])
            return SG_EPROTO; /* includes whitespace before the colon (RFC 9112 5.1: must reject) */
    const char *v = colon + 1, *end = line + len;
    while (v < end && is_ows(*v))
        v++;
    while (end > v && is_ows(end[-1]))
        end--;
    size_t vlen = (size_t)(end - v);
    for (size_t i = 0; i < vlen; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return SG_EPROTO; /* CR, LF, NUL inside a value would let a peer smuggle lines */
    }
    switch (name_len) {
    case 14:
        if (name_is(line, name_len, "content-length"))
            return parse_content_length(v, vlen, content_length);
        break;
    case 17:
        if (name_is(line, name_len, "transfer-encoding"))
            return parse_transfer_encoding(v, vlen, flags);
        break;
    case 10:
        if (name_is(line, name_len, "connection"))
            parse_connection(v, vlen, flags);
        else if (ka && name_is(line, name_len, "keep-alive"))
            parse_keep_alive(v, vlen, ka);
        break;
    case 12:
        if (name_is(line, name_len, "content-type")) {
            if (is_event_stream(v, vlen))
                *flags |= SG_H1F_EVENT_STREAM;
            else
                *flags &= ~(uint32_t)SG_H1F_EVENT_STREAM;
        }
        break;
    default:
        break;
    }
    return 0;
}

int sg_h1_version(const char *s, size_t len)
{
    if (len < 8 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9')
        return SG_EPROTO;
    return s[7] - '0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int sg_h1_chunk_size(const char *line, size_t len, uint64_t *size)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len; i++) {
        int d = hex_value(line[i]);
        if (d < 0)
            break;
        if (v > (UINT64_MAX >> 4))
            return SG_EPROTO;
        v = (v << 4) | (uint64_t)d;
    }
    if (i == 0)
        return SG_EPROTO;
    while (i < len && is_ows(line[i]))
        i++;
    if (i < len && line[i] != ';')
        return SG_EPROTO;
    /* Extensions carry nothing we use; only refuse bytes that could never appear in one. */
    for (; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return SG_EPROTO;
    }
    *size = v;
    return 0;
}
