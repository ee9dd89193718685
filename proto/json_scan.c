/* The JSON pull scanner behind the OpenAI decoders (see json_scan.h), and sg_json_unescape. */
#include "json_scan.h"
#include "sg_openai.h"

#include <stdlib.h>
#include <string.h>

/* Bytes that end a run of plain string content: the quote, the backslash, and raw control characters. */
const unsigned char sg_js_str_stop[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1, [0x08] = 1,
    [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1,
    [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1,
    [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, ['"'] = 1,  ['\\'] = 1,
};

static int hex4(const char *s, const char *end, uint32_t *out)
{
    if (end - s < 4)
        return SG_EJSON;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return SG_EJSON;
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}

const char *sg_js_escape_end(const char *p, const char *end)
{
    if (++p >= end)
        return NULL;
    switch (*p) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return p + 1;
    case 'u': {
        uint32_t cp;
        if (hex4(p + 1, end, &cp) < 0)
            return NULL;
        return p + 5;
    }
    default:
        return NULL;
    }
}

static int literal(sg_js_t *js, const char *lit, size_t n)
{
    if ((size_t)(js->end - js->p) < n || memcmp(js->p, lit, n) != 0)
        return SG_EJSON;
    js->p += n;
    return 0;
}

/* A scalar value (string, number, literal); containers are the caller's business. */
static int scalar(sg_js_t *js, int c)
{
    sg_slice_t raw;
    int64_t v;
    bool is_int;
    switch (c) {
    case '"':
        return sg_js_string(js, &raw);
    case 't':
        return literal(js, "true", 4);
    case 'f':
        return literal(js, "false", 5);
    case 'n':
        return literal(js, "null", 4);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return sg_js_number(js, &v, &is_int);
        return SG_EJSON;
    }
}

int sg_js_double(sg_js_t *js, double *out)
{
    sg_js_ws(js);
    const char *start = js->p;
    int64_t v;
    bool is_int;
    if (sg_js_number(js, &v, &is_int) < 0)
        return SG_EJSON;
    if (is_int) {
        *out = (double)v;
        return 0;
    }
    char tmp[64];
    size_t len = (size_t)(js->p - start);
    if (len >= sizeof tmp)
        return SG_EJSON;
    memcpy(tmp, start, len);
    tmp[len] = '\0';
    *out = strtod(tmp, NULL);
    return 0;
}

int sg_js_skip_any(sg_js_t *js)
{
    /* Iterative, so hostile nesting costs a bit per level instead of a stack frame. Bit i of is_obj tells
     * whether the container opened at level i+1 of this walk is an object. */
    uint64_t is_obj = 0;
    int level = 0;
    sg_slice_t key;
    for (;;) {
        int c = sg_js_peek(js);
        int rc;
        bool value_done = true;
        if (c == '{' || c == '[') {
            if (js->depth + level + 1 > SG_JSON_MAX_DEPTH)
                return SG_EJSON;
            js->p++;
            bool obj = c == '{';
            if (obj)
                is_obj |= 1ull << level;
            else
                is_obj &= ~(1ull << level);
            level++;
            if (sg_js_peek(js) == (obj ? '}' : ']')) {
                js->p++;
                level--;
            } else {
                value_done = false;
                if (obj && (rc = sg_js_member_key(js, &key)) < 0)
                    return rc;
            }
        } else if ((rc = scalar(js, c)) < 0) {
            return rc;
        }
        /* After a value: close containers until one continues with a comma (then read the next value). */
        while (value_done) {
            if (level == 0)
                return 0;
            bool obj = (is_obj >> (level - 1)) & 1;
            c = sg_js_peek(js);
            if (c == ',') {
                js->p++;
                if (obj) {
                    if ((rc = sg_js_member_key(js, &key)) < 0)
                        return rc;
                    break;
                }
                /* A run of numbers with nothing between them but commas (an embedding vector: most of its
                 * body) in one tight loop; anything else goes the general way. */
                bool number_ended = false;
                while (js->p < js->end && (sg_js_is_digit(*js->p) || *js->p == '-')) {
                    if ((rc = sg_js_number_(js, NULL, NULL, false)) < 0)
                        return rc;
                    if (js->p < js->end && *js->p == ',') {
                        js->p++;
                        continue;
                    }
                    number_ended = true;
                    break;
                }
                if (number_ended)
                    continue; /* a value ended: close or go on */
                break;
            }
            if (c != (obj ? '}' : ']'))
                return SG_EJSON;
            js->p++;
            level--;
        }
    }
}

bool sg_js_raw_eq(sg_slice_t raw, const char *lit, size_t lit_len)
{
    if (!memchr(raw.base, '\\', raw.len))
        return raw.len == lit_len && memcmp(raw.base, lit, lit_len) == 0;
    char buf[64];
    if (lit_len > sizeof buf)
        return false;
    ssize_t n = sg_json_unescape(raw.base, raw.len, buf, sizeof buf);
    return n == (ssize_t)lit_len && memcmp(buf, lit, lit_len) == 0;
}

static size_t put_utf8(uint32_t cp, char *out, size_t o, size_t cap)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    for (size_t i = 0; i < n; i++)
        if (o + i < cap)
            out[o + i] = (char)b[i];
    return n;
}

ssize_t sg_json_unescape(const char *raw, size_t len, char *out, size_t cap)
{
    const char *p = raw, *end = raw + len;
    size_t o = 0;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = (size_t)((bs ? bs : end) - p);
        if (o < cap)
            memcpy(out + o, p, run < cap - o ? run : cap - o);
        o += run;
        p += run;
        if (!bs)
            break;
        if (++p >= end)
            return SG_EJSON;
        char c = *p++;
        char simple;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            simple = c;
            break;
        case 'b':
            simple = '\b';
            break;
        case 'f':
            simple = '\f';
            break;
        case 'n':
            simple = '\n';
            break;
        case 'r':
            simple = '\r';
            break;
        case 't':
            simple = '\t';
            break;
        case 'u': {
            uint32_t cp;
            if (hex4(p, end, &cp) < 0)
                return SG_EJSON;
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, end, &lo) == 0 && lo >= 0xDC00 &&
                    lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                } else {
                    cp = 0xFFFD; /* a lone high surrogate (a server split a pair): keep going, mark it */
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            o += put_utf8(cp, out, o, cap);
            continue;
        }
        default:
            return SG_EJSON;
        }
        if (o < cap)
            out[o] = simple;
        o++;
    }
    return (ssize_t)o;
}
