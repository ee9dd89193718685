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

/* ---------- arrays of numbers, 64 bytes at a time ---------- */

/* The classes of a window's bytes that numbers and their separators use, one bit per byte. */
typedef struct {
    uint64_t dig, minus, plus, point, expo, comma, ws;
} num_masks_t;

/* What a block hands the next about its last byte (each 0 or 1). */
typedef struct {
    uint64_t after_comma;    /* the next byte's nearest non-whitespace byte before it is a comma (or the start) */
    uint64_t tok, dig, expo; /* the last byte's class: part of an element, a digit, an exponent mark */
    uint64_t want_dig, want_dig_sign; /* the next byte must be a digit; a digit or sign */
    uint64_t int_start, lead_zero;    /* the next byte starts an integer part; must not be a digit */
    uint64_t after_mark, after_expo;  /* the element goes on past a point or exponent mark; an exponent mark */
} num_carry_t;

/* x << 1 with bit 0 from the block before. */
static inline uint64_t shl1(uint64_t x, uint64_t in)
{
    return (x << 1) | in;
}

/* The bits of t's runs of ones at and after a bit of x (x inside t), a run going on from the block before when in
 * is 1: adding x to t carries from each bit of x to the end of its run, clearing the run as it goes, so the
 * flipped bits and x itself cover it, and later bits of x in the same run only ride the carry. */
static inline uint64_t fill_run(uint64_t t, uint64_t x, uint64_t in)
{
    return (((t + x + in) ^ t) & t) | x;
}

/*
 * RFC 8259's number grammar as conditions on neighbouring bits of a block's classes (bits outside `in` are
 * ignored), with what the block before left in c: an element starts right after a comma (or the start, through
 * whitespace) with a digit or a minus; a minus comes first or right after the exponent mark, a plus only there;
 * signs and points are followed by a digit; points and exponent marks follow a digit; an exponent mark is followed
 * by a digit or a sign; a leading zero is the whole integer part; an element holds at most one point and one
 * exponent mark, the point first. Non-zero when anything is amiss; c is then for the next block.
 */
__attribute__((always_inline)) static inline uint64_t block_bad(num_masks_t m, const char *p, uint64_t in,
                                                                num_carry_t *c)
{
    uint64_t dig = m.dig & in, minus = m.minus & in, plus = m.plus & in, point = m.point & in, expo = m.expo & in;
    uint64_t comma = m.comma & in, ws = m.ws & in;
    uint64_t tok = in & ~(comma | ws);
    uint64_t seed = shl1(comma, c->after_comma);
    uint64_t after_comma = seed | ((ws + (seed & ws)) ^ ws);
    uint64_t starts = tok & ~shl1(tok, c->tok);
    uint64_t bad = comma & after_comma;             /* an empty element */
    bad |= starts & ~after_comma;                   /* two values with no comma between */
    bad |= minus & ~(starts | shl1(expo, c->expo)); /* a minus: first, or after the exponent mark */
    bad |= plus & ~shl1(expo, c->expo);             /* a plus: only after the exponent mark */
    bad |= (point | expo) & ~shl1(dig, c->dig);     /* after a digit */
    uint64_t next_dig = (dig >> 1) | (1ull << 63), next_dig_sign = ((dig | minus | plus) >> 1) | (1ull << 63);
    bad |= ((c->want_dig & ~dig) | (c->want_dig_sign & ~(dig | minus | plus)) | (c->lead_zero & dig)) & 1;
    bad |= (minus | plus | point) & ~next_dig; /* then a digit */
    bad |= expo & ~next_dig_sign;              /* then a digit or sign */
    /* a leading zero: the integer part's first digit, when a digit follows it, is not 0 */
    uint64_t int_start = (starts & dig) | shl1(starts & minus, c->int_start);
    for (uint64_t lead = int_start & (dig >> 1); lead; lead &= lead - 1)
        bad |= p[__builtin_ctzll(lead)] == '0';
    uint64_t from_mark = fill_run(tok, point | expo, c->after_mark), from_expo = fill_run(tok, expo, c->after_expo);
    bad |= point & shl1(from_mark, c->after_mark); /* a point after a point or exponent mark */
    bad |= expo & shl1(from_expo, c->after_expo);  /* a second exponent mark */
    c->after_comma = (comma | (after_comma & ws)) >> 63;
    c->tok = tok >> 63, c->dig = dig >> 63, c->expo = expo >> 63;
    c->want_dig = (minus | plus | point) >> 63, c->want_dig_sign = expo >> 63;
    c->int_start = (starts & minus) >> 63, c->lead_zero = (int_start >> 63) & (p[63] == '0');
    c->after_mark = (from_mark & tok) >> 63, c->after_expo = (from_expo & tok) >> 63;
    return bad;
}

/*
 * One block of 64 bytes at *p, classed in m: false when the run ends here. Blocks go on while they hold nothing
 * but numbers and separators; the block with any other byte is checked up to its last comma before that byte, so
 * each number checked is whole. *good: past the last comma of the blocks found right so far.
 */
__attribute__((always_inline)) static inline bool numbers_block(num_masks_t m, const char **p, const char **good,
                                                                num_carry_t *c)
{
    uint64_t foreign = ~(m.dig | m.minus | m.plus | m.point | m.expo | m.comma | m.ws);
    if (foreign) {
        uint64_t cut = m.comma & ((1ull << __builtin_ctzll(foreign)) - 1);
        int last = 63 - __builtin_clzll(cut | 1);
        if (cut && !block_bad(m, *p, (2ull << last) - 1, c)) /* 2 << 63 wraps to 0, and 0 - 1 is all ones */
            *good = *p + last + 1;
        return false;
    }
    if (block_bad(m, *p, ~0ull, c))
        return false;
    if (m.comma)
        *good = *p + 64 - __builtin_clzll(m.comma);
    *p += 64;
    return true;
}

/* The classing, one per instruction set: SSE2 (every x86-64), AVX2 and AVX-512BW where the CPU has them. Only
 * whitespace is classed lazily: exactly, only where a byte of 0x20 or below is (compact JSON has none). */
#if defined(__SSE2__)
static inline uint64_t bits16(__m128i hit)
{
    return (uint64_t)(uint32_t)_mm_movemask_epi8(hit);
}

static inline void classify16(const char *p, int shift, num_masks_t *m)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i d = _mm_sub_epi8(x, _mm_set1_epi8('0'));
    m->dig |= bits16(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d)) << shift;
    m->minus |= bits16(_mm_cmpeq_epi8(x, _mm_set1_epi8('-'))) << shift;
    m->plus |= bits16(_mm_cmpeq_epi8(x, _mm_set1_epi8('+'))) << shift;
    m->point |= bits16(_mm_cmpeq_epi8(x, _mm_set1_epi8('.'))) << shift;
    m->expo |= bits16(_mm_cmpeq_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)), _mm_set1_epi8('e'))) << shift;
    m->comma |= bits16(_mm_cmpeq_epi8(x, _mm_set1_epi8(','))) << shift;
    if (bits16(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(' ')), x))) {
        __m128i w = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\n')));
        w = _mm_or_si128(w,
                         _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\t'))));
        m->ws |= bits16(w) << shift;
    }
}

static const char *numbers_sse2(const char *p, const char *end)
{
    const char *good = p;
    num_carry_t c = {.after_comma = 1};
    while (end - p >= 64) {
        num_masks_t m = {0, 0, 0, 0, 0, 0, 0};
        classify16(p, 0, &m);
        classify16(p + 16, 16, &m);
        classify16(p + 32, 32, &m);
        classify16(p + 48, 48, &m);
        if (!numbers_block(m, &p, &good, &c))
            break;
    }
    return good;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_JS_NUMBERS_X86 1
#include <immintrin.h>

__attribute__((target("avx2"))) static inline uint64_t bits32(__m256i hit)
{
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(hit);
}

__attribute__((target("avx2"))) static inline void classify32(const char *p, int shift, num_masks_t *m)
{
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8('0'));
    m->dig |= bits32(_mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(9)), d)) << shift;
    m->minus |= bits32(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('-'))) << shift;
    m->plus |= bits32(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('+'))) << shift;
    m->point |= bits32(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('.'))) << shift;
    m->expo |= bits32(_mm256_cmpeq_epi8(_mm256_or_si256(x, _mm256_set1_epi8(0x20)), _mm256_set1_epi8('e'))) << shift;
    m->comma |= bits32(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(','))) << shift;
    if (bits32(_mm256_cmpeq_epi8(_mm256_min_epu8(x, _mm256_set1_epi8(' ')), x))) {
        __m256i w =
            _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(' ')), _mm256_cmpeq_epi8(x, _mm256_set1_epi8('\n')));
        w = _mm256_or_si256(w, _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('\r')),
                                               _mm256_cmpeq_epi8(x, _mm256_set1_epi8('\t'))));
        m->ws |= bits32(w) << shift;
    }
}

__attribute__((target("avx2"))) static const char *numbers_avx2(const char *p, const char *end)
{
    const char *good = p;
    num_carry_t c = {.after_comma = 1};
    while (end - p >= 64) {
        num_masks_t m = {0, 0, 0, 0, 0, 0, 0};
        classify32(p, 0, &m);
        classify32(p + 32, 32, &m);
        if (!numbers_block(m, &p, &good, &c))
            break;
    }
    return good;
}

__attribute__((target("avx512bw"))) static const char *numbers_avx512(const char *p, const char *end)
{
    const char *good = p;
    num_carry_t c = {.after_comma = 1};
    while (end - p >= 64) {
        __m512i x = _mm512_loadu_si512((const void *)p);
        num_masks_t m;
        m.dig = _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, _mm512_set1_epi8('0')), _mm512_set1_epi8(9));
        m.minus = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('-'));
        m.plus = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('+'));
        m.point = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('.'));
        m.expo = _mm512_cmpeq_epi8_mask(_mm512_or_si512(x, _mm512_set1_epi8(0x20)), _mm512_set1_epi8('e'));
        m.comma = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(','));
        m.ws = 0;
        if (_mm512_cmple_epu8_mask(x, _mm512_set1_epi8(' ')))
            m.ws =
                _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(' ')) | _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\n')) |
                _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\r')) | _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8('\t'));
        if (!numbers_block(m, &p, &good, &c))
            break;
    }
    return good;
}
#endif

/*
 * With AVX-512 VBMI most of the grammar is checked on bytes, not bits. Each byte indexes 64-entry tables by its low
 * six bits (which tell the number alphabet's bytes apart): its class as one bit, and the byte itself, to tell it from
 * the three other bytes with those six bits. The byte before it indexes the classes allowed to follow it; a byte
 * whose class is not among them breaks the grammar. The two bytes before that tell a zero that starts an integer
 * part (after a comma, or after a minus that is after a comma): no digit may follow it. What is left is an element's
 * marks (at most one point, then at most one exponent mark), bit conditions on three masks as above. Few masks
 * matter: moving masks out of the mask registers is what limits this loop (three times as fast as the general check
 * on a compact vector). A block with whitespace hands the rest of the run to the general check (compact JSON has
 * none; a pretty-printed vector has some in every block).
 */
#if defined(SG_JS_NUMBERS_X86)
enum { NB_ZERO = 1, NB_DIGIT = 2, NB_MINUS = 4, NB_PLUS = 8, NB_POINT = 16, NB_EXPO = 32, NB_COMMA = 64 };
#define NB_AFTER_DIGIT (NB_ZERO | NB_DIGIT | NB_POINT | NB_EXPO | NB_COMMA)

/* The tables, by a byte's low six bits. Entries for bytes outside the alphabet are 0: no class, nothing may follow. */
#define NB_ENTRY(c, v) [(c)&63] = (v)
#define NB_DIGITS(v)                                                                                                   \
    NB_ENTRY('0', v), NB_ENTRY('1', v), NB_ENTRY('2', v), NB_ENTRY('3', v), NB_ENTRY('4', v), NB_ENTRY('5', v),        \
        NB_ENTRY('6', v), NB_ENTRY('7', v), NB_ENTRY('8', v), NB_ENTRY('9', v)
static const uint8_t nb_class[64] __attribute__((aligned(64))) = {
    NB_ENTRY('0', NB_ZERO),  NB_ENTRY('1', NB_DIGIT), NB_ENTRY('2', NB_DIGIT), NB_ENTRY('3', NB_DIGIT),
    NB_ENTRY('4', NB_DIGIT), NB_ENTRY('5', NB_DIGIT), NB_ENTRY('6', NB_DIGIT), NB_ENTRY('7', NB_DIGIT),
    NB_ENTRY('8', NB_DIGIT), NB_ENTRY('9', NB_DIGIT), NB_ENTRY('-', NB_MINUS), NB_ENTRY('+', NB_PLUS),
    NB_ENTRY('.', NB_POINT), NB_ENTRY('e', NB_EXPO),  NB_ENTRY('E', NB_EXPO),  NB_ENTRY(',', NB_COMMA)};
static const uint8_t nb_byte[64]
    __attribute__((aligned(64))) = {NB_ENTRY('0', '0'), NB_ENTRY('1', '1'), NB_ENTRY('2', '2'), NB_ENTRY('3', '3'),
                                    NB_ENTRY('4', '4'), NB_ENTRY('5', '5'), NB_ENTRY('6', '6'), NB_ENTRY('7', '7'),
                                    NB_ENTRY('8', '8'), NB_ENTRY('9', '9'), NB_ENTRY('-', '-'), NB_ENTRY('+', '+'),
                                    NB_ENTRY('.', '.'), NB_ENTRY('e', 'e'), NB_ENTRY('E', 'E'), NB_ENTRY(',', ',')};
/* the classes allowed right after the byte */
static const uint8_t nb_next[64] __attribute__((aligned(64))) = {NB_DIGITS(NB_AFTER_DIGIT),
                                                                 NB_ENTRY('-', NB_ZERO | NB_DIGIT),
                                                                 NB_ENTRY('+', NB_ZERO | NB_DIGIT),
                                                                 NB_ENTRY('.', NB_ZERO | NB_DIGIT),
                                                                 NB_ENTRY('e', NB_ZERO | NB_DIGIT | NB_MINUS | NB_PLUS),
                                                                 NB_ENTRY('E', NB_ZERO | NB_DIGIT | NB_MINUS | NB_PLUS),
                                                                 NB_ENTRY(',', NB_ZERO | NB_DIGIT | NB_MINUS)};
/* a zero starts an integer part when the byte before it is a comma, or a minus after a comma: its digit classes,
 * to take out of those allowed after it, and which bytes are commas and minuses (as digit classes too) */
static const uint8_t nb_zero[64] __attribute__((aligned(64))) = {NB_ENTRY('0', NB_ZERO | NB_DIGIT)};
static const uint8_t nb_comma[64] __attribute__((aligned(64))) = {NB_ENTRY(',', NB_ZERO | NB_DIGIT)};
static const uint8_t nb_minus[64] __attribute__((aligned(64))) = {NB_ENTRY('-', NB_ZERO | NB_DIGIT)};

/* The block x with its bytes moved k places up, the last k bytes of `before` below them. */
__attribute__((target("avx512bw,avx512vbmi"))) static inline __m512i nb_shift(__m512i before, __m512i x, int k)
{
    __m512i up = _mm512_add_epi8(_mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46,
                                                 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28,
                                                 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10,
                                                 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                 _mm512_set1_epi8((char)(64 - k)));
    return _mm512_permutex2var_epi8(before, up, x);
}

__attribute__((target("avx512bw,avx512vbmi"))) static const char *numbers_vbmi(const char *p, const char *end)
{
    const char *good = p;
    const __m512i cls_t = _mm512_load_si512((const void *)nb_class), byte_t = _mm512_load_si512((const void *)nb_byte);
    const __m512i next_t = _mm512_load_si512((const void *)nb_next), zero_t = _mm512_load_si512((const void *)nb_zero);
    const __m512i comma_t = _mm512_load_si512((const void *)nb_comma);
    const __m512i minus_t = _mm512_load_si512((const void *)nb_minus);
    __m512i before = _mm512_set1_epi8(','); /* the run starts as if after a comma */
    uint64_t c_mark = 0, c_expo = 0;
    while (end - p >= 64) {
        __m512i x = _mm512_loadu_si512((const void *)p);
        __m512i x1 = nb_shift(before, x, 1), x2 = nb_shift(before, x, 2), x3 = nb_shift(before, x, 3);
        __m512i cls = _mm512_permutexvar_epi8(x, cls_t);
        /* allowed after x1, less the digits when x1 is a zero that starts an integer part */
        __m512i lead =
            _mm512_ternarylogic_epi32(_mm512_permutexvar_epi8(x2, comma_t), _mm512_permutexvar_epi8(x2, minus_t),
                                      _mm512_permutexvar_epi8(x3, comma_t), 0xF8); /* a | (b & c) */
        __m512i allowed = _mm512_ternarylogic_epi32(_mm512_permutexvar_epi8(x1, next_t),
                                                    _mm512_permutexvar_epi8(x1, zero_t), lead, 0x70); /* a & ~(b & c) */
        /* a byte outside the alphabet, or one its neighbours rule out */
        uint64_t stop =
            ~_mm512_cmpeq_epi8_mask(_mm512_permutexvar_epi8(x, byte_t), x) | _mm512_testn_epi8_mask(allowed, cls);
        uint64_t comma = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(NB_COMMA));
        uint64_t mark = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(NB_POINT | NB_EXPO));
        uint64_t expo = _mm512_test_epi8_mask(cls, _mm512_set1_epi8(NB_EXPO));
        uint64_t point = mark & ~expo, tok = ~comma;
        uint64_t from_mark = fill_run(tok, mark, c_mark), from_expo = fill_run(tok, expo, c_expo);
        stop |= point & shl1(from_mark, c_mark); /* a point after a point or exponent mark */
        stop |= expo & shl1(from_expo, c_expo);  /* a second exponent mark */
        if (stop) {
            /* Every fault of an element shows at or before its comma: the elements ended by the commas before the
             * first stop are right. The run ends there; on whitespace, the general check reads on from there. */
            int first = __builtin_ctzll(stop);
            uint64_t cut = comma & ((1ull << first) - 1);
            if (cut)
                good = p + 64 - __builtin_clzll(cut);
            return (unsigned char)p[first] <= ' ' ? numbers_avx512(good, end) : good;
        }
        if (comma)
            good = p + 64 - __builtin_clzll(comma);
        c_mark = (from_mark & tok) >> 63, c_expo = (from_expo & tok) >> 63;
        before = x;
        p += 64;
    }
    return good;
}
#endif

/* The instruction set in use: SG_JS_NUMBERS_*, or -1 until the first call picks the best the CPU has. */
static int numbers_isa = -1;

static bool isa_available(int isa)
{
    switch (isa) {
    case SG_JS_NUMBERS_SCALAR:
        return true;
#if defined(__SSE2__)
    case SG_JS_NUMBERS_SSE2:
        return true;
#endif
#if defined(SG_JS_NUMBERS_X86)
    case SG_JS_NUMBERS_AVX2:
        return __builtin_cpu_supports("avx2");
    case SG_JS_NUMBERS_AVX512:
        return __builtin_cpu_supports("avx512bw");
    case SG_JS_NUMBERS_AVX512VBMI:
        return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
#endif
    default:
        return false;
    }
}

bool sg_js_number_list_use(int isa)
{
    if (isa < 0) {
        isa = SG_JS_NUMBERS_AVX512VBMI;
        while (!isa_available(isa))
            isa--;
    } else if (!isa_available(isa)) {
        return false;
    }
    __atomic_store_n(&numbers_isa, isa, __ATOMIC_RELAXED);
    return true;
}

const char *sg_js_number_list(const char *p, const char *end)
{
    int isa = __atomic_load_n(&numbers_isa, __ATOMIC_RELAXED);
    if (isa < 0) {
        sg_js_number_list_use(-1);
        isa = __atomic_load_n(&numbers_isa, __ATOMIC_RELAXED);
    }
    switch (isa) {
#if defined(SG_JS_NUMBERS_X86)
    case SG_JS_NUMBERS_AVX512VBMI:
        return numbers_vbmi(p, end);
    case SG_JS_NUMBERS_AVX512:
        return numbers_avx512(p, end);
    case SG_JS_NUMBERS_AVX2:
        return numbers_avx2(p, end);
#endif
#if defined(__SSE2__)
    case SG_JS_NUMBERS_SSE2:
        return numbers_sse2(p, end);
#endif
    default:
        return p; /* the caller's one-number-at-a-time path reads it all */
    }
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
                /* A run of numbers with nothing between them but commas and whitespace (an embedding vector:
                 * most of its body): whole windows of it at once, then one number at a time in a tight loop;
                 * anything else goes the general way. */
                bool number_ended = false;
                sg_js_ws(js);
                if (js->p < js->end && (sg_js_is_digit(*js->p) || *js->p == '-'))
                    js->p = sg_js_number_list(js->p, js->end);
                for (;;) {
                    sg_js_ws(js);
                    if (js->p >= js->end || !(sg_js_is_digit(*js->p) || *js->p == '-'))
                        break;
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
