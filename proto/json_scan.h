/*
 * Private to proto/: a pull scanner over one JSON text for the hot path. It never allocates and never recurses;
 * nesting is capped at SG_JSON_MAX_DEPTH. The caller walks the objects it cares about with obj_next/arr_next and
 * hands every value it does not want to sg_js_skip, which validates it (RFC 8259 grammar) while skipping.
 *
 * Strings come back raw (between the quotes, escapes intact and checked for form); UTF-8 is not validated.
 * All functions return 0 (or the documented positive values) or SG_EJSON, and leave js->p after what they read.
 */
#ifndef SG_JSON_SCAN_H
#define SG_JSON_SCAN_H

#include "sg_common.h"

#include <string.h>

#define SG_JSON_MAX_DEPTH 64

typedef struct {
    const char *p;
    const char *end;
    int depth;        /* containers open around p */
    bool escaped;     /* the last string scanned had a backslash in it */
    bool key_escaped; /* the same for the last key from sg_js_obj_next */
} sg_js_t;

static inline void sg_js_init(sg_js_t *js, const char *s, size_t len)
{
    js->p = s;
    js->end = s + len;
    js->depth = 0;
    js->escaped = false;
    js->key_escaped = false;
}

static inline void sg_js_ws(sg_js_t *js)
{
    while (js->p < js->end && (*js->p == ' ' || *js->p == '\n' || *js->p == '\r' || *js->p == '\t'))
        js->p++;
}

/* The first byte of the next value (after whitespace), or -1 at the end of input. Consumes the whitespace. */
static inline int sg_js_peek(sg_js_t *js)
{
    sg_js_ws(js);
    return js->p < js->end ? (unsigned char)*js->p : -1;
}

/* True when only whitespace is left. */
static inline bool sg_js_at_end(sg_js_t *js)
{
    return sg_js_peek(js) < 0;
}

/* A string value: *raw gets the bytes between the quotes. */
int sg_js_string(sg_js_t *js, sg_slice_t *raw);
/* A number value. *is_int: no fraction, no exponent, and fits int64 (then *value holds it). */
int sg_js_number(sg_js_t *js, int64_t *value, bool *is_int);
/* Any value, nested containers included. */
int sg_js_skip(sg_js_t *js);

/* '{' then members: sg_js_obj_next returns 1 with the raw key, the scanner placed before the value (which the
 * caller must consume), 0 after the closing '}', or SG_EJSON. *count starts at 0 and is kept by the callee. */
int sg_js_obj_begin(sg_js_t *js);
int sg_js_obj_next(sg_js_t *js, int *count, sg_slice_t *key);
/* '[' then elements: sg_js_arr_next returns 1 before an element, 0 after the closing ']', or SG_EJSON. */
int sg_js_arr_begin(sg_js_t *js);
int sg_js_arr_next(sg_js_t *js, int *count);

/* A raw key or string equals lit once decoded (escaped spellings of the same text match too). */
bool sg_js_raw_eq(sg_slice_t raw, const char *lit, size_t lit_len);

/*
 * The same, for a lit without backslashes, with the common cases inline: an escape only ever makes the raw
 * form longer than the text, so a raw string of lit's length is equal exactly when its bytes are, and a
 * shorter one never is.
 */
static inline bool sg_js_raw_eq_lit(sg_slice_t raw, const char *lit, size_t lit_len)
{
    if (raw.len == lit_len)
        return memcmp(raw.base, lit, lit_len) == 0;
    if (raw.len < lit_len)
        return false;
    return sg_js_raw_eq(raw, lit, lit_len);
}
#define SG_JS_EQ(raw, lit) sg_js_raw_eq_lit((raw), (lit), sizeof(lit) - 1)

/* The key sg_js_obj_next just returned equals lit (no backslashes in lit): one memcmp unless it had escapes. */
static inline bool sg_js_key_is(const sg_js_t *js, sg_slice_t key, const char *lit, size_t lit_len)
{
    if (!js->key_escaped)
        return key.len == lit_len && memcmp(key.base, lit, lit_len) == 0;
    return sg_js_raw_eq(key, lit, lit_len);
}
#define SG_JS_KEY(js, key, lit) sg_js_key_is((js), (key), (lit), sizeof(lit) - 1)

#endif
