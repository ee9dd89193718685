/*
 * Normalizers (HF tokenizers' normalizers), run on each piece of text between added tokens before it is
 * pre-tokenized: Unicode forms and lower case through ICU, Strip, StripAccents, Replace (a literal or a PCRE2
 * regex), Prepend, BertNormalizer, and Precompiled (SentencePiece's charsmap: a darts-clone double-array trie over
 * UTF-8 bytes whose values point at NUL-terminated replacements, the longest key wins as in SentencePiece's
 * Normalizer::NormalizePrefix).
 *
 * Each stage reads the previous stage's output and writes into one of two buffers that take turns, so a file's
 * Sequence of normalizers costs one copy per stage that changes something; stages that can see at a glance that
 * they change nothing (ASCII under NFC, no match for Replace) hand the text on untouched.
 */
#define _GNU_SOURCE /* memmem */
#include "tok_internal.h"

#include <stdlib.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

struct sg_tok_nscratch {
    char *buf[2];
    size_t cap[2];
    UChar *u1, *u2;
    size_t ucap;
    pcre2_match_data *md;
};

sg_tok_nscratch_t *sg_tok_nscratch_new(void)
{
    sg_tok_nscratch_t *ns = calloc(1, sizeof *ns);
    if (ns && !(ns->md = pcre2_match_data_create(1, NULL))) {
        free(ns);
        return NULL;
    }
    return ns;
}

void sg_tok_nscratch_free(sg_tok_nscratch_t *ns)
{
    if (!ns)
        return;
    free(ns->buf[0]);
    free(ns->buf[1]);
    free(ns->u1);
    free(ns->u2);
    if (ns->md)
        pcre2_match_data_free(ns->md);
    free(ns);
}

/* The output buffer for a stage reading s: whichever of the two s is not in, with room for n bytes. */
static char *out_buf(sg_tok_nscratch_t *ns, const char *s, size_t n)
{
    int k = ns->buf[0] && s >= ns->buf[0] && s < ns->buf[0] + ns->cap[0] ? 1 : 0;
    if (n > ns->cap[k]) {
        size_t cap = ns->cap[k] ? ns->cap[k] : 4096;
        while (cap < n)
            cap *= 2;
        char *b = realloc(ns->buf[k], cap);
        if (!b)
            return NULL;
        ns->buf[k] = b;
        ns->cap[k] = cap;
    }
    return ns->buf[k];
}

static int ubuf(sg_tok_nscratch_t *ns, size_t n)
{
    if (n <= ns->ucap)
        return 0;
    size_t cap = ns->ucap ? ns->ucap : 4096;
    while (cap < n)
        cap *= 2;
    UChar *a = realloc(ns->u1, cap * sizeof *a);
    if (!a)
        return SG_ENOMEM;
    ns->u1 = a;
    UChar *b = realloc(ns->u2, cap * sizeof *b);
    if (!b)
        return SG_ENOMEM;
    ns->u2 = b;
    ns->ucap = cap;
    return 0;
}

static bool all_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

/* u2 (ulen units) back to UTF-8 as the stage's output. */
static int from_u16(sg_tok_nscratch_t *ns, const char **s, size_t *len, const UChar *u, int32_t ulen)
{
    char *out = out_buf(ns, *s, (size_t)ulen * 3 + 1);
    if (!out)
        return SG_ENOMEM;
    UErrorCode st = U_ZERO_ERROR;
    int32_t blen = 0;
    u_strToUTF8(out, (int32_t)((size_t)ulen * 3 + 1), &blen, u, ulen, &st);
    if (U_FAILURE(st))
        return 0;
    *s = out;
    *len = (size_t)blen;
    return 0;
}

/* *s into ns->u1; false when it is not valid UTF-8 (the stage then leaves the text alone). */
static int to_u16(sg_tok_nscratch_t *ns, const char *s, size_t len, int32_t *ulen)
{
    if (len > INT32_MAX / 8)
        return 0;
    int rc = ubuf(ns, len + 1);
    if (rc < 0)
        return rc;
    UErrorCode st = U_ZERO_ERROR;
    u_strFromUTF8(ns->u1, (int32_t)ns->ucap, ulen, s, (int32_t)len, &st);
    return U_FAILURE(st) ? 0 : 1;
}

/* One of ICU's four normalization forms. */
static int unicode_form(sg_tok_nscratch_t *ns, enum sg_tok_norm_type type, const char **s, size_t *len)
{
    if (all_ascii(*s, *len))
        return 0; /* ASCII is stable under all four forms */
    int32_t ulen;
    int rc = to_u16(ns, *s, *len, &ulen);
    if (rc <= 0)
        return rc;
    UErrorCode st = U_ZERO_ERROR;
    const UNormalizer2 *norm = type == SG_NORM_NFC    ? unorm2_getNFCInstance(&st)
                               : type == SG_NORM_NFD  ? unorm2_getNFDInstance(&st)
                               : type == SG_NORM_NFKC ? unorm2_getNFKCInstance(&st)
                                                      : unorm2_getNFKDInstance(&st);
    if (U_FAILURE(st))
        return 0;
    if (unorm2_spanQuickCheckYes(norm, ns->u1, ulen, &st) == ulen && U_SUCCESS(st))
        return 0;
    for (;;) {
        st = U_ZERO_ERROR;
        int32_t olen = unorm2_normalize(norm, ns->u1, ulen, ns->u2, (int32_t)ns->ucap, &st);
        if (st == U_BUFFER_OVERFLOW_ERROR) {
            /* u1 must survive the grow: realloc keeps contents */
            if ((rc = ubuf(ns, (size_t)olen + 1)) < 0)
                return rc;
            continue;
        }
        if (U_FAILURE(st))
            return 0;
        return from_u16(ns, s, len, ns->u2, olen);
    }
}

static int lowercase(sg_tok_nscratch_t *ns, const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    if (all_ascii(p, n)) {
        size_t i = 0;
        while (i < n && !(p[i] >= 'A' && p[i] <= 'Z'))
            i++;
        if (i == n)
            return 0;
        char *out = out_buf(ns, p, n);
        if (!out)
            return SG_ENOMEM;
        for (i = 0; i < n; i++)
            out[i] = p[i] >= 'A' && p[i] <= 'Z' ? (char)(p[i] | 0x20) : p[i];
        *s = out;
        return 0;
    }
    int32_t ulen;
    int rc = to_u16(ns, p, n, &ulen);
    if (rc <= 0)
        return rc;
    for (;;) {
        UErrorCode st = U_ZERO_ERROR;
        int32_t olen = u_strToLower(ns->u2, (int32_t)ns->ucap, ns->u1, ulen, "", &st);
        if (st == U_BUFFER_OVERFLOW_ERROR) {
            if ((rc = ubuf(ns, (size_t)olen + 1)) < 0)
                return rc;
            continue;
        }
        if (U_FAILURE(st))
            return 0;
        return from_u16(ns, s, len, ns->u2, olen);
    }
}

/* The code point at p[*i] (advancing *i), or a negative value for a byte that starts no valid sequence. */
static inline UChar32 next_cp(const char *p, size_t *i, size_t n)
{
    UChar32 c;
    int32_t k = (int32_t)*i;
    U8_NEXT((const uint8_t *)p, k, (int32_t)n, c);
    *i = (size_t)k;
    return c;
}

static int strip(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    const char *p = *s;
    size_t a = 0, b = *len;
    if (b > INT32_MAX)
        return 0;
    if (nm->left) {
        while (a < b) {
            size_t j = a;
            UChar32 c = next_cp(p, &j, b);
            if (c < 0 || !u_isUWhiteSpace(c))
                break;
            a = j;
        }
    }
    if (nm->right) {
        while (b > a) {
            int32_t k = (int32_t)b;
            UChar32 c;
            U8_PREV((const uint8_t *)p, (int32_t)a, k, c);
            if (c < 0 || !u_isUWhiteSpace(c))
                break;
            b = (size_t)k;
        }
    }
    (void)ns;
    *s = p + a;
    *len = b - a;
    return 0;
}

/* Drop the code points in the categories of mask (invalid bytes are kept). */
static int drop_category(sg_tok_nscratch_t *ns, uint32_t mask, const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    if (all_ascii(p, n) || n > INT32_MAX)
        return 0;
    char *out = out_buf(ns, p, n);
    if (!out)
        return SG_ENOMEM;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t at = i;
        UChar32 c = next_cp(p, &i, n);
        if (c >= 0 && (U_GET_GC_MASK(c) & mask))
            continue;
        memcpy(out + w, p + at, i - at);
        w += i - at;
    }
    *s = out;
    *len = w;
    return 0;
}

static int replace_str(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len, pl = nm->pattern_len, cl = nm->content_len;
    if (pl == 0 || n < pl)
        return 0;
    const char *hit = memmem(p, n, nm->pattern, pl);
    if (!hit)
        return 0;
    size_t cap = cl <= pl ? n : n + (n / pl + 1) * (cl - pl);
    char *out = out_buf(ns, p, cap + 1);
    if (!out)
        return SG_ENOMEM;
    size_t w = 0, i = 0;
    if (pl == 1) { /* " " -> "\u2581" (Llama 2, Gemma): one pass, no search per space */
        char c = nm->pattern[0];
        size_t from = (size_t)(hit - p);
        memcpy(out, p, from);
        w = from;
        for (i = from; i < n; i++) {
            if (p[i] == c) {
                memcpy(out + w, nm->content, cl);
                w += cl;
            } else {
                out[w++] = p[i];
            }
        }
        *s = out;
        *len = w;
        return 0;
    }
    while (hit) {
        size_t at = (size_t)(hit - p);
        memcpy(out + w, p + i, at - i);
        w += at - i;
        memcpy(out + w, nm->content, cl);
        w += cl;
        i = at + pl;
        hit = i + pl <= n ? memmem(p + i, n - i, nm->pattern, pl) : NULL;
    }
    memcpy(out + w, p + i, n - i);
    w += n - i;
    *s = out;
    *len = w;
    return 0;
}

static int replace_re(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len, w = 0, i = 0, cap = 0;
    char *out = NULL;
    for (size_t pos = 0; pos <= n;) {
        int m = pcre2_match(nm->re, (PCRE2_SPTR)p, n, pos, PCRE2_NOTEMPTY, ns->md, NULL);
        if (m < 0) {
            if (m != PCRE2_ERROR_NOMATCH)
                return SG_EINVAL;
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(ns->md);
        size_t a = ov[0], b = ov[1];
        size_t need = w + (a - i) + nm->content_len + (n - b) + 1;
        if (!out || need > cap) {
            cap = need * 2;
            if (!(out = out_buf(ns, p, cap)))
                return SG_ENOMEM;
        }
        memcpy(out + w, p + i, a - i);
        w += a - i;
        memcpy(out + w, nm->content, nm->content_len);
        w += nm->content_len;
        i = b;
        pos = b > a ? b : b + 1;
    }
    if (!out)
        return 0;
    memcpy(out + w, p + i, n - i);
    *s = out;
    *len = w + n - i;
    return 0;
}

static int prepend(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    if (*len == 0)
        return 0;
    char *out = out_buf(ns, *s, *len + nm->content_len);
    if (!out)
        return SG_ENOMEM;
    memcpy(out, nm->content, nm->content_len);
    memcpy(out + nm->content_len, *s, *len);
    *s = out;
    *len += nm->content_len;
    return 0;
}

/* darts-clone's unit fields */
static inline bool unit_has_leaf(uint32_t u)
{
    return (u >> 8) & 1;
}
static inline uint32_t unit_value(uint32_t u)
{
    return u & 0x7FFFFFFFu;
}
static inline uint32_t unit_label(uint32_t u)
{
    return u & (0x80000000u | 0xFFu);
}
static inline uint32_t unit_offset(uint32_t u)
{
    return (u >> 10) << ((u & (1u << 9)) >> 6);
}

size_t sg_tok_charsmap_match(const sg_tok_norm_t *nm, const unsigned char *p, size_t len, const char **repl,
                             size_t *rlen)
{
    const uint32_t *t = nm->trie;
    uint32_t n = nm->trie_units;
    if (n == 0)
        return 0;
    uint32_t pos = unit_offset(t[0]);
    size_t best = 0;
    for (size_t i = 0; i < len; i++) {
        pos ^= p[i];
        if (pos >= n)
            break;
        uint32_t u = t[pos];
        if (unit_label(u) != p[i])
            break;
        pos ^= unit_offset(u);
        if (pos >= n)
            break;
        if (unit_has_leaf(u)) {
            uint32_t v = unit_value(t[pos]);
            if (v < nm->blob_len) {
                best = i + 1;
                *repl = nm->blob + v;
                *rlen = strnlen(nm->blob + v, nm->blob_len - v);
            }
        }
    }
    return best;
}

static int precompiled(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    const unsigned char *p = (const unsigned char *)*s;
    size_t n = *len, w = 0, cap = n * 2 + 16;
    char *out = out_buf(ns, *s, cap);
    if (!out)
        return SG_ENOMEM;
    for (size_t i = 0; i < n;) {
        const char *r = NULL;
        size_t rl = 0;
        size_t m = sg_tok_charsmap_match(nm, p + i, n - i, &r, &rl);
        size_t at = i;
        if (m == 0) {
            UChar32 c = next_cp((const char *)p, &i, n);
            if (c < 0) { /* as SentencePiece: a byte that starts no character becomes U+FFFD */
                r = "\xEF\xBF\xBD";
                rl = 3;
                i = at + 1;
            } else {
                r = (const char *)p + at;
                rl = i - at;
            }
        } else {
            i += m;
        }
        if (w + rl > cap) {
            cap = (w + rl) * 2;
            const char *keep = *s;
            if (!(out = out_buf(ns, keep, cap)))
                return SG_ENOMEM;
        }
        memcpy(out + w, r, rl);
        w += rl;
    }
    *s = out;
    *len = w;
    return 0;
}

static bool is_cjk(UChar32 c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* BertNormalizer: clean_text (controls dropped, whitespace -> ' '), CJK ideographs padded with spaces, then
 * accents (NFD, nonspacing marks dropped) and lower case. */
static int bert(sg_tok_nscratch_t *ns, const sg_tok_norm_t *nm, const char **s, size_t *len)
{
    int rc;
    if (nm->clean_text || nm->chinese) {
        const char *p = *s;
        size_t n = *len;
        char *out = out_buf(ns, p, n * 3 + 1);
        if (!out)
            return SG_ENOMEM;
        size_t w = 0;
        for (size_t i = 0; i < n;) {
            size_t at = i;
            UChar32 c = next_cp(p, &i, n);
            if (c >= 0 && nm->clean_text) {
                bool ws = c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(c);
                if (!ws && (c == 0 || c == 0xFFFD || (U_GET_GC_MASK(c) & U_GC_C_MASK)))
                    continue;
                if (ws) {
                    out[w++] = ' ';
                    continue;
                }
            }
            bool pad = c >= 0 && nm->chinese && is_cjk(c);
            if (pad)
                out[w++] = ' ';
            memcpy(out + w, p + at, i - at);
            w += i - at;
            if (pad)
                out[w++] = ' ';
        }
        *s = out;
        *len = w;
    }
    if (nm->strip_accents) {
        if ((rc = unicode_form(ns, SG_NORM_NFD, s, len)) < 0)
            return rc;
        if ((rc = drop_category(ns, U_GC_MN_MASK, s, len)) < 0)
            return rc;
    }
    if (nm->lowercase && (rc = lowercase(ns, s, len)) < 0)
        return rc;
    return 0;
}

int sg_tok_normalize(const sg_tokenizer_t *tok, sg_tok_nscratch_t *ns, const char **s, size_t *len)
{
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k<tok->n_norms && * len> 0; k++) {
        const sg_tok_norm_t *nm = &tok->norms[k];
        switch (nm->type) {
        case SG_NORM_NFC:
        case SG_NORM_NFD:
        case SG_NORM_NFKC:
        case SG_NORM_NFKD:
            rc = unicode_form(ns, nm->type, s, len);
            break;
        case SG_NORM_LOWERCASE:
            rc = lowercase(ns, s, len);
            break;
        case SG_NORM_STRIP:
            rc = strip(ns, nm, s, len);
            break;
        case SG_NORM_STRIP_ACCENTS:
            rc = drop_category(ns, U_GC_M_MASK, s, len);
            break;
        case SG_NORM_REPLACE:
            rc = nm->re ? replace_re(ns, nm, s, len) : replace_str(ns, nm, s, len);
            break;
        case SG_NORM_PREPEND:
            rc = prepend(ns, nm, s, len);
            break;
        case SG_NORM_PRECOMPILED:
            rc = precompiled(ns, nm, s, len);
            break;
        case SG_NORM_BERT:
            rc = bert(ns, nm, s, len);
            break;
        }
    }
    return rc;
}
