/*
 * A pull scanner over one JSON text for the hot path (proto/'s decoders; also the tokenizer loader and the
 * report's record reader). It never allocates and never recurses; nesting is capped at SG_JSON_MAX_DEPTH. The
 * caller walks the objects it cares about with obj_next/arr_next and hands every value it does not want to
 * sg_js_skip, which validates it (RFC 8259 grammar) while skipping.
 *
 * Strings come back raw (between the quotes, escapes intact and checked for form); UTF-8 is not validated.
 * All functions return 0 (or the documented positive values) or SG_EJSON, and leave js->p after what they read.
 */
#ifndef SG_JSON_SCAN_H
#define SG_JSON_SCAN_H

#include "sg_common.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SG_JSON_MAX_DEPTH 64

/* The scanner's hot functions are forced inline: a decoder walking a body compiles them into its own loops
 * (GCC's size heuristics otherwise leave calls at the many call sites). */
#if defined(__GNUC__) && !defined(__OPTIMIZE_SIZE__)
#define SG_JS_INLINE inline
#else
#define SG_JS_INLINE inline
#endif

typedef struct {
    const char *p;
    const char *end;
    int depth;        /* containers open around p */
    bool escaped;     /* the last string scanned had a backslash in it */
    bool key_escaped; /* the same for the last key from sg_js_obj_next */
} sg_js_t;

static SG_JS_INLINE void sg_js_init(sg_js_t *js, const char *s, size_t len)
{
    js->p = s;
    js->end = s + len;
    js->depth = 0;
    js->escaped = false;
    js->key_escaped = false;
}

static SG_JS_INLINE void sg_js_ws(sg_js_t *js)
{
    /* Compact JSON has none: one compare says so for every byte that is not space or a control character. */
    if (js->p < js->end && (unsigned char)*js->p > ' ')
        return;
    while (js->p < js->end && (*js->p == ' ' || *js->p == '\n' || *js->p == '\r' || *js->p == '\t'))
        js->p++;
}

/* The first byte of the next value (after whitespace), or -1 at the end of input. Consumes the whitespace. */
static SG_JS_INLINE int sg_js_peek(sg_js_t *js)
{
    sg_js_ws(js);
    return js->p < js->end ? (unsigned char)*js->p : -1;
}

/* True when only whitespace is left. */
static SG_JS_INLINE bool sg_js_at_end(sg_js_t *js)
{
    return sg_js_peek(js) < 0;
}

/* Out of line, in json_scan.c: the cold parts the inline functions below call. */
/* Bytes that end a run of plain string content: the quote, the backslash, and raw control characters. */
extern const unsigned char sg_js_str_stop[256];
/* p is at a backslash inside a string: the byte after a well-formed escape, or NULL. */
const char *sg_js_escape_end(const char *p, const char *end);
/* Any value, containers included (sg_js_skip's general case). */
int sg_js_skip_any(sg_js_t *js);
/*
 * p is at an element of an array of numbers (an embedding vector): past as many whole numbers as the grammar
 * allows, each with the comma after it, validated 64 bytes at a time; p itself where the next 64 bytes hold no
 * such run or anything is amiss in them (the caller's exact path then reads on, and finds any error). It uses the
 * widest vector instructions the CPU has; sg_js_number_list_use(isa) picks one instead (tests try each), false
 * when the CPU lacks it, and -1 goes back to the best.
 */
enum { SG_JS_NUMBERS_SCALAR, SG_JS_NUMBERS_SSE2, SG_JS_NUMBERS_AVX2, SG_JS_NUMBERS_AVX512, SG_JS_NUMBERS_AVX512VBMI };
const char *sg_js_number_list(const char *p, const char *end);
bool sg_js_number_list_use(int isa);

/*
 * The hot functions are inline, so the decoder that walks a body compiles them into its own loops.
 */

/* The first quote, backslash or control character at or after p, or end. */
static inline const char *sg_js_str_stop_at(const char *p, const char *end)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* max(v, 0x1f) == 0x1f exactly for the bytes 0x00..0x1f (unsigned) */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask)
            return p + __builtin_ctz(mask);
        p += 16;
    }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Eight bytes at a time (SWAR): a byte can be flagged wrongly only above one that truly matches, so the
     * lowest flag is exact. */
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
        uint64_t q = w ^ 0x2222222222222222ull, b = w ^ 0x5c5c5c5c5c5c5c5cull;
        uint64_t m = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs) | ((w - ones * 0x20) & ~w & highs);
        if (m)
            return p + ((unsigned)__builtin_ctzll(m) >> 3);
        p += 8;
    }
#endif
    while (p < end && !sg_js_str_stop[(unsigned char)*p])
        p++;
    return p;
}

/* A string value: *raw gets the bytes between the quotes. */
static SG_JS_INLINE int sg_js_string(sg_js_t *js, sg_slice_t *raw)
{
    const char *p = js->p, *end = js->end;
    if (p >= end || *p != '"')
        return SG_EJSON;
    const char *start = ++p;
    bool escaped = false;
    for (;;) {
        p = sg_js_str_stop_at(p, end);
        if (p >= end)
            return SG_EJSON;
        if (*p == '"')
            break;
        if (*p != '\\')
            return SG_EJSON; /* a raw control character */
        escaped = true;
        if (!(p = sg_js_escape_end(p, end)))
            return SG_EJSON;
    }
    raw->base = start;
    raw->len = (size_t)(p - start);
    js->p = p + 1;
    js->escaped = escaped;
    return 0;
}

static SG_JS_INLINE bool sg_js_is_digit(char c)
{
    return (unsigned char)(c - '0') <= 9;
}

/*
 * Past a run of ASCII digits. Eight bytes at a time where eight remain (an embedding vector is mostly digits):
 * a byte is a digit when its high nibble is 3 and its low nibble plus 6 stays below 16; neither test carries
 * into the next byte, so the first non-digit byte is exactly the first non-zero byte of their union.
 */
static SG_JS_INLINE const char *sg_js_digits(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101ull;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t bad = ((x & (0xF0 * ones)) ^ (0x30 * ones)) | (((x & (0x0F * ones)) + 0x06 * ones) & (0x10 * ones));
        if (bad) {
            uint64_t nz = (((bad & (0x7F * ones)) + 0x7F * ones) | bad) & (0x80 * ones);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (__builtin_ctzll(nz) >> 3);
#else
            return p + (__builtin_clzll(nz) >> 3);
#endif
        }
        p += 8;
    }
    while (p < end && sg_js_is_digit(*p))
        p++;
    return p;
}

/* A number's grammar, one pass; when want, its value too (a non-integral or too big one: *is_int false). */
static SG_JS_INLINE int sg_js_number_(sg_js_t *js, int64_t *value, bool *is_int, bool want)
{
    const char *p = js->p, *end = js->end;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= end)
        return SG_EJSON;
    uint64_t mag = 0;
    bool fits = true;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        const char *digits = p;
        if (!want)
            p = sg_js_digits(p, end);
        while (p < end && sg_js_is_digit(*p)) {
            mag = mag * 10 + (uint64_t)(*p - '0');
            p++;
        }
        if (want && p - digits > 18) {
            /* 19 digits or more may not fit: redo the magnitude with the overflow check */
            uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
            mag = 0;
            for (const char *d = digits; d < p; d++) {
                uint64_t dv = (uint64_t)(*d - '0');
                if (mag > (limit - dv) / 10) {
                    fits = false;
                    break;
                }
                mag = mag * 10 + dv;
            }
        }
    } else {
        return SG_EJSON;
    }
    bool integral = true;
    if (p < end && *p == '.') {
        integral = false;
        p++;
        if (p >= end || !sg_js_is_digit(*p))
            return SG_EJSON;
        p = sg_js_digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integral = false;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !sg_js_is_digit(*p))
            return SG_EJSON;
        p = sg_js_digits(p, end);
    }
    js->p = p;
    if (want) {
        *is_int = integral && fits;
        *value = *is_int ? (neg ? (int64_t)(0 - mag) : (int64_t)mag) : 0;
    }
    return 0;
}

/* A number value. *is_int: no fraction, no exponent, and fits int64 (then *value holds it). */
static SG_JS_INLINE int sg_js_number(sg_js_t *js, int64_t *value, bool *is_int)
{
    return sg_js_number_(js, value, is_int, true);
}

/* A number value as a double: integers exactly (up to 2^53), others through strtod on the number's text. Out of
 * line (json_scan.c): for readers of whole files, not hot decoders. */
int sg_js_double(sg_js_t *js, double *out);

/* Any value, nested containers included; strings and numbers (the common skipped values) stay inline. */
static SG_JS_INLINE int sg_js_skip(sg_js_t *js)
{
    int c = sg_js_peek(js);
    if (c == '"') {
        sg_slice_t raw;
        return sg_js_string(js, &raw);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return sg_js_number_(js, NULL, NULL, false);
    return sg_js_skip_any(js);
}

/* A member's key and its colon, leaving the scanner before the value. */
static SG_JS_INLINE int sg_js_member_key(sg_js_t *js, sg_slice_t *key)
{
    if (sg_js_peek(js) != '"')
        return SG_EJSON;
    int rc = sg_js_string(js, key);
    if (rc < 0)
        return rc;
    js->key_escaped = js->escaped;
    if (sg_js_peek(js) != ':')
        return SG_EJSON;
    js->p++;
    return 0;
}

/* Between members or elements: 0 at the closing bracket (consumed), 1 when another follows (its comma consumed). */
static SG_JS_INLINE int sg_js_list_next(sg_js_t *js, int count, char close)
{
    int c = sg_js_peek(js);
    if (c == close) {
        js->p++;
        js->depth--;
        return 0;
    }
    if (count > 0) {
        if (c != ',')
            return SG_EJSON;
        js->p++;
    }
    return 1;
}

/* '{' then members: sg_js_obj_next returns 1 with the raw key, the scanner placed before the value (which the
 * caller must consume), 0 after the closing '}', or SG_EJSON. *count starts at 0 and is kept by the callee. */
static SG_JS_INLINE int sg_js_obj_begin(sg_js_t *js)
{
    if (sg_js_peek(js) != '{' || js->depth + 1 > SG_JSON_MAX_DEPTH)
        return SG_EJSON;
    js->p++;
    js->depth++;
    return 0;
}

static SG_JS_INLINE int sg_js_obj_next(sg_js_t *js, int *count, sg_slice_t *key)
{
    int rc = sg_js_list_next(js, *count, '}');
    if (rc <= 0)
        return rc;
    rc = sg_js_member_key(js, key);
    if (rc < 0)
        return rc;
    (*count)++;
    return 1;
}

/* '[' then elements: sg_js_arr_next returns 1 before an element, 0 after the closing ']', or SG_EJSON. */
static SG_JS_INLINE int sg_js_arr_begin(sg_js_t *js)
{
    if (sg_js_peek(js) != '[' || js->depth + 1 > SG_JSON_MAX_DEPTH)
        return SG_EJSON;
    js->p++;
    js->depth++;
    return 0;
}

static SG_JS_INLINE int sg_js_arr_next(sg_js_t *js, int *count)
{
    int rc = sg_js_list_next(js, *count, ']');
    if (rc <= 0)
        return rc;
    if (sg_js_peek(js) < 0)
        return SG_EJSON;
    (*count)++;
    return 1;
}

/* A raw key or string equals lit once decoded (escaped spellings of the same text match too). */
bool sg_js_raw_eq(sg_slice_t raw, const char *lit, size_t lit_len);

/*
 * The same, for a lit without backslashes, with the common cases inline: an escape only ever makes the raw
 * form longer than the text, so a raw string of lit's length is equal exactly when its bytes are, and a
 * shorter one never is.
 */
static SG_JS_INLINE bool sg_js_raw_eq_lit(sg_slice_t raw, const char *lit, size_t lit_len)
{
    if (raw.len == lit_len)
        return memcmp(raw.base, lit, lit_len) == 0;
    if (raw.len < lit_len)
        return false;
    return sg_js_raw_eq(raw, lit, lit_len);
}
#define SG_JS_EQ(raw, lit) sg_js_raw_eq_lit((raw), (lit), sizeof(lit) - 1)

/* The key sg_js_obj_next just returned equals lit (no backslashes in lit): one memcmp unless it had escapes. */
static SG_JS_INLINE bool sg_js_key_is(const sg_js_t *js, sg_slice_t key, const char *lit, size_t lit_len)
{
    if (!js->key_escaped)
        return key.len == lit_len && memcmp(key.base, lit, lit_len) == 0;
    return sg_js_raw_eq(key, lit, lit_len);
}
#define SG_JS_KEY(js, key, lit) sg_js_key_is((js), (key), (lit), sizeof(lit) - 1)

/* Typed reads: a value of another type is skipped and reported absent (*present false). */
static SG_JS_INLINE int sg_js_read_string(sg_js_t *js, sg_slice_t *out, bool *present)
{
    *present = false;
    if (sg_js_peek(js) != '"')
        return sg_js_skip(js);
    int rc = sg_js_string(js, out);
    *present = rc == 0;
    return rc;
}

/* An integer; a fraction, an exponent or another type reads as absent. */
static SG_JS_INLINE int sg_js_read_int(sg_js_t *js, int64_t *out, bool *present)
{
    int c = sg_js_peek(js);
    *present = false;
    if (c != '-' && (c < '0' || c > '9'))
        return sg_js_skip(js);
    bool is_int = false;
    int rc = sg_js_number(js, out, &is_int);
    *present = is_int;
    return rc;
}

/* true/false; anything else (null included) reads as false. */
static SG_JS_INLINE int sg_js_read_bool(sg_js_t *js, bool *out)
{
    int c = sg_js_peek(js);
    *out = c == 't';
    return sg_js_skip(js);
}

#endif
