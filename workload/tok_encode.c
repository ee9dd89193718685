/*
 * Encoding: cut added tokens out, normalize, split into pre-tokens with the file's regex, and turn each
 * pre-token into ids: the encoder's cache first, then (tiktoken, ignore_merges) the whole pre-token looked up in
 * the vocabulary, then BPE. BPE merges the lowest-ranked adjacent pair, leftmost on ties, until none is left:
 * a rank scan over a small array for short pre-tokens, a linked list and a binary heap past SCAN_MAX symbols, so a
 * run of 10,000 spaces costs n log n and not n^2.
 */
#include "tok_internal.h"

#include <stdlib.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#define SCAN_MAX 48
#define CACHE_SLOTS 32768 /* power of two; cleared when half full */
#define CACHE_KEY_MAX 256 /* longer pre-tokens are not cached */
#define CACHE_KEYS_CAP (1u << 20)
#define CACHE_IDS_CAP (1u << 18)

typedef struct {
    uint32_t hash; /* 0: empty */
    uint32_t koff;
    uint32_t ioff;
    uint16_t klen;
    uint16_t nids;
} cslot_t;

typedef struct {
    uint64_t key; /* rank << 32 | left position */
    uint32_t left, right, merged;
} hent_t;

struct sg_tok_enc {
    const sg_tokenizer_t *tok;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jstack;
    bool jit;

    uint32_t *ids;
    size_t n_ids, ids_cap;

    /* BPE scratch, sym_cap entries each */
    uint32_t *sym;
    uint32_t *srank, *smerged;
    int32_t *sprev, *snext;
    size_t sym_cap;
    hent_t *heap;
    size_t heap_cap;

    cslot_t *cache;
    uint32_t cache_count;
    char *ckeys;
    uint32_t ckeys_len;
    uint32_t *cids;
    uint32_t cids_len;

    /* normalization scratch */
    char *nbuf;
    size_t ncap;
    UChar *u1, *u2;
    size_t ucap;
};

sg_tok_enc_t *sg_tok_enc_new(const sg_tokenizer_t *tok)
{
    sg_tok_enc_t *enc = calloc(1, sizeof *enc);
    if (!enc)
        return NULL;
    enc->tok = tok;
    enc->cache = calloc(CACHE_SLOTS, sizeof *enc->cache);
    enc->ckeys = malloc(CACHE_KEYS_CAP);
    enc->cids = malloc(CACHE_IDS_CAP * sizeof *enc->cids);
    if (!enc->cache || !enc->ckeys || !enc->cids)
        goto fail;
    if (tok->re) {
        enc->md = pcre2_match_data_create(1, NULL);
        enc->mctx = pcre2_match_context_create(NULL);
        if (!enc->md || !enc->mctx)
            goto fail;
        size_t jsz = 0;
        enc->jit = pcre2_pattern_info(tok->re, PCRE2_INFO_JITSIZE, &jsz) == 0 && jsz > 0;
        if (enc->jit) {
            /* long whitespace runs backtrack through the lookahead: give the JIT room */
            enc->jstack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
            if (!enc->jstack)
                goto fail;
            pcre2_jit_stack_assign(enc->mctx, NULL, enc->jstack);
        }
    }
    return enc;
fail:
    sg_tok_enc_free(enc);
    return NULL;
}

void sg_tok_enc_free(sg_tok_enc_t *enc)
{
    if (!enc)
        return;
    if (enc->md)
        pcre2_match_data_free(enc->md);
    if (enc->mctx)
        pcre2_match_context_free(enc->mctx);
    if (enc->jstack)
        pcre2_jit_stack_free(enc->jstack);
    free(enc->ids);
    free(enc->sym);
    free(enc->srank);
    free(enc->smerged);
    free(enc->sprev);
    free(enc->snext);
    free(enc->heap);
    free(enc->cache);
    free(enc->ckeys);
    free(enc->cids);
    free(enc->nbuf);
    free(enc->u1);
    free(enc->u2);
    free(enc);
}

/* Scratch arrays grow by doubling from a first size and never shrink: an encoder reaches its working size once. */
static size_t grown_cap(size_t cap, size_t first, size_t need)
{
    cap = cap ? cap : first;
    while (cap < need)
        cap *= 2;
    return cap;
}

/* realloc *p to n elements of elem bytes; on failure *p is kept (still valid, old size) and false returned */
static bool resize(void *p, size_t n, size_t elem)
{
    void **pp = p;
    void *q = realloc(*pp, n * elem);
    if (!q)
        return false;
    *pp = q;
    return true;
}

static int ids_reserve(sg_tok_enc_t *enc, size_t more)
{
    if (enc->n_ids + more <= enc->ids_cap)
        return 0;
    size_t cap = grown_cap(enc->ids_cap, 1024, enc->n_ids + more);
    if (!resize(&enc->ids, cap, sizeof *enc->ids))
        return SG_ENOMEM;
    enc->ids_cap = cap;
    return 0;
}

static inline int emit(sg_tok_enc_t *enc, uint32_t id)
{
    if (SG_UNLIKELY(enc->n_ids == enc->ids_cap)) {
        int rc = ids_reserve(enc, 1);
        if (rc < 0)
            return rc;
    }
    enc->ids[enc->n_ids++] = id;
    return 0;
}

static int sym_reserve(sg_tok_enc_t *enc, size_t n)
{
    if (n <= enc->sym_cap)
        return 0;
    size_t cap = grown_cap(enc->sym_cap, 256, n);
    /* each array that grew keeps its new size even when a later one fails: sym_cap stays the smallest */
    if (!resize(&enc->sym, cap, sizeof *enc->sym) || !resize(&enc->srank, cap, sizeof *enc->srank) ||
        !resize(&enc->smerged, cap, sizeof *enc->smerged) || !resize(&enc->sprev, cap, sizeof *enc->sprev) ||
        !resize(&enc->snext, cap, sizeof *enc->snext))
        return SG_ENOMEM;
    enc->sym_cap = cap;
    return 0;
}
static inline uint32_t pair_rank(const sg_tokenizer_t *tok, uint32_t left, uint32_t right, uint32_t *merged)
{
    uint64_t key = (uint64_t)left << 32 | right;
    for (uint32_t i = sg_tok_pair_hash(key) & tok->pmap_mask;; i = (i + 1) & tok->pmap_mask) {
        const sg_tok_pslot_t *s = &tok->pmap[i];
        if (s->key == key) {
            *merged = s->merged;
            return s->rank;
        }
        if (s->key == UINT64_MAX)
            return UINT32_MAX;
    }
}

/* BPE over n symbols in enc->sym (short case): merge in place, then emit. */
static int bpe_scan(sg_tok_enc_t *enc, size_t n)
{
    const sg_tokenizer_t *tok = enc->tok;
    uint32_t *id = enc->sym, *rank = enc->srank, *merged = enc->smerged;
    for (size_t i = 0; i + 1 < n; i++)
        rank[i] = pair_rank(tok, id[i], id[i + 1], &merged[i]);
    while (n > 1) {
        uint32_t best = UINT32_MAX;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            if (rank[i] < best) {
                best = rank[i];
                bi = i;
            }
        }
        if (best == UINT32_MAX)
            break;
        id[bi] = merged[bi];
        for (size_t i = bi + 1; i + 1 < n; i++) {
            id[i] = id[i + 1];
            rank[i] = rank[i + 1];
            merged[i] = merged[i + 1];
        }
        n--;
        if (bi > 0)
            rank[bi - 1] = pair_rank(tok, id[bi - 1], id[bi], &merged[bi - 1]);
        if (bi + 1 < n)
            rank[bi] = pair_rank(tok, id[bi], id[bi + 1], &merged[bi]);
    }
    int rc = ids_reserve(enc, n);
    if (rc < 0)
        return rc;
    memcpy(enc->ids + enc->n_ids, id, n * sizeof *id);
    enc->n_ids += n;
    return 0;
}

static inline bool hent_less(const hent_t *a, const hent_t *b)
{
    return a->key < b->key;
}

static int heap_push(sg_tok_enc_t *enc, size_t *len, hent_t e)
{
    if (*len == enc->heap_cap) {
        size_t cap = enc->heap_cap ? enc->heap_cap * 2 : 256;
        hent_t *h = realloc(enc->heap, cap * sizeof *h);
        if (!h)
            return SG_ENOMEM;
        enc->heap = h;
        enc->heap_cap = cap;
    }
    hent_t *h = enc->heap;
    size_t i = (*len)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hent_less(&e, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
    return 0;
}

static hent_t heap_pop(sg_tok_enc_t *enc, size_t *len)
{
    hent_t *h = enc->heap;
    hent_t top = h[0];
    hent_t last = h[--(*len)];
    size_t n = *len, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hent_less(&h[c + 1], &h[c]))
            c++;
        if (!hent_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n)
        h[i] = last;
    return top;
}

static int push_pair(sg_tok_enc_t *enc, size_t *hlen, int32_t pos)
{
    int32_t q = enc->snext[pos];
    if (q < 0)
        return 0;
    uint32_t merged;
    uint32_t r = pair_rank(enc->tok, enc->sym[pos], enc->sym[q], &merged);
    if (r == UINT32_MAX)
        return 0;
    hent_t e = {(uint64_t)r << 32 | (uint32_t)pos, enc->sym[pos], enc->sym[q], merged};
    return heap_push(enc, hlen, e);
}

/* BPE over n symbols in enc->sym (long case). */
static int bpe_heap(sg_tok_enc_t *enc, size_t n)
{
    uint32_t *id = enc->sym;
    int32_t *prev = enc->sprev, *next = enc->snext;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    size_t hlen = 0;
    int rc;
    for (size_t i = 0; i + 1 < n; i++)
        if ((rc = push_pair(enc, &hlen, (int32_t)i)) < 0)
            return rc;
    while (hlen) {
        hent_t e = heap_pop(enc, &hlen);
        int32_t pos = (int32_t)(uint32_t)e.key;
        int32_t q = next[pos];
        if (id[pos] != e.left || q < 0 || id[q] != e.right)
            continue; /* stale: one side merged since */
        id[pos] = e.merged;
        id[q] = SG_TOK_NONE;
        next[pos] = next[q];
        if (next[q] >= 0)
            prev[next[q]] = pos;
        if (prev[pos] >= 0 && (rc = push_pair(enc, &hlen, prev[pos])) < 0)
            return rc;
        if ((rc = push_pair(enc, &hlen, pos)) < 0)
            return rc;
    }
    for (int32_t i = 0; i >= 0; i = next[i])
        if ((rc = emit(enc, id[i])) < 0)
            return rc;
    return 0;
}

static int bpe(sg_tok_enc_t *enc, size_t n)
{
    if (n == 0)
        return 0;
    if (n == 1)
        return emit(enc, enc->sym[0]);
    return n <= SCAN_MAX ? bpe_scan(enc, n) : bpe_heap(enc, n);
}

/* UTF-8 sequence length from its first byte, 1 for a byte that cannot start one; clipped to what is left. */
static inline size_t utf8_len(const unsigned char *p, size_t left)
{
    unsigned c = p[0];
    size_t l = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1;
    if (l > left)
        return 1;
    for (size_t i = 1; i < l; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 1;
    return l;
}

/* SentencePiece-style initial symbols: each character's own token, else its bytes' <0xNN>, else unk. */
static int spm_symbols(sg_tok_enc_t *enc, const unsigned char *p, size_t len, size_t *n_out)
{
    const sg_tokenizer_t *tok = enc->tok;
    int rc = sym_reserve(enc, len);
    if (rc < 0)
        return rc;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t l = utf8_len(p + i, len - i);
        uint32_t id = sg_tok_lookup(tok, (const char *)p + i, l);
        if (id != SG_TOK_NONE) {
            enc->sym[n++] = id;
        } else {
            bool bytes_ok = tok->byte_fallback;
            for (size_t k = 0; bytes_ok && k < l; k++)
                bytes_ok = tok->byte_id[p[i + k]] != SG_TOK_NONE;
            if (bytes_ok) {
                for (size_t k = 0; k < l; k++)
                    enc->sym[n++] = tok->byte_id[p[i + k]];
            } else if (tok->unk_id != SG_TOK_NONE) {
                if (!(tok->fuse_unk && n > 0 && enc->sym[n - 1] == tok->unk_id))
                    enc->sym[n++] = tok->unk_id;
            }
            /* no unk token and no byte fallback: the character is dropped, as the reference does */
        }
        i += l;
    }
    *n_out = n;
    return 0;
}

static int cache_clear(sg_tok_enc_t *enc)
{
    memset(enc->cache, 0, CACHE_SLOTS * sizeof *enc->cache);
    enc->cache_count = 0;
    enc->ckeys_len = 0;
    enc->cids_len = 0;
    return 0;
}

/* One pre-token to ids. */
static int encode_piece(sg_tok_enc_t *enc, const char *p, size_t len)
{
    const sg_tokenizer_t *tok = enc->tok;
    if (len == 0)
        return 0;
    if (len == 1 && tok->kind == SG_TOK_BYTELEVEL)
        return emit(enc, tok->byte_id[(unsigned char)*p]);

    cslot_t *slot = NULL;
    uint32_t h = 0;
    if (len <= CACHE_KEY_MAX) {
        uint64_t h64 = sg_tok_hash(p, len);
        h = (uint32_t)(h64 >> 32) | 1;
        for (uint32_t i = (uint32_t)h64 & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
            cslot_t *s = &enc->cache[i];
            if (s->hash == 0) {
                slot = s;
                break;
            }
            if (s->hash == h && s->klen == len && memcmp(enc->ckeys + s->koff, p, len) == 0) {
                int rc = ids_reserve(enc, s->nids);
                if (rc < 0)
                    return rc;
                memcpy(enc->ids + enc->n_ids, enc->cids + s->ioff, s->nids * sizeof(uint32_t));
                enc->n_ids += s->nids;
                return 0;
            }
        }
    }

    size_t first = enc->n_ids;
    int rc;
    uint32_t whole = tok->direct ? sg_tok_lookup(tok, p, len) : SG_TOK_NONE;
    if (whole != SG_TOK_NONE) {
        rc = emit(enc, whole);
    } else if (tok->kind == SG_TOK_BYTELEVEL) {
        if ((rc = sym_reserve(enc, len)) < 0)
            return rc;
        for (size_t i = 0; i < len; i++)
            enc->sym[i] = tok->byte_id[(unsigned char)p[i]];
        rc = bpe(enc, len);
    } else {
        size_t n;
        if ((rc = spm_symbols(enc, (const unsigned char *)p, len, &n)) < 0)
            return rc;
        rc = bpe(enc, n);
    }
    if (rc < 0)
        return rc;

    if (slot) {
        size_t nids = enc->n_ids - first;
        if (nids > UINT16_MAX)
            return 0;
        if (enc->cache_count * 2 >= CACHE_SLOTS || enc->ckeys_len + len > CACHE_KEYS_CAP ||
            enc->cids_len + nids > CACHE_IDS_CAP) {
            cache_clear(enc);
            uint64_t h64 = sg_tok_hash(p, len);
            uint32_t i = (uint32_t)h64 & (CACHE_SLOTS - 1);
            slot = &enc->cache[i];
        }
        slot->hash = h;
        slot->klen = (uint16_t)len;
        slot->koff = enc->ckeys_len;
        memcpy(enc->ckeys + enc->ckeys_len, p, len);
        enc->ckeys_len += (uint32_t)len;
        slot->nids = (uint16_t)nids;
        slot->ioff = enc->cids_len;
        memcpy(enc->cids + enc->cids_len, enc->ids + first, nids * sizeof(uint32_t));
        enc->cids_len += (uint32_t)nids;
        enc->cache_count++;
    }
    return 0;
}

static int nbuf_reserve(sg_tok_enc_t *enc, size_t n)
{
    if (n <= enc->ncap)
        return 0;
    size_t cap = grown_cap(enc->ncap, 4096, n);
    if (!resize(&enc->nbuf, cap, 1))
        return SG_ENOMEM;
    enc->ncap = cap;
    return 0;
}
static int ubuf_reserve(sg_tok_enc_t *enc, size_t n)
{
    if (n <= enc->ucap)
        return 0;
    size_t cap = grown_cap(enc->ucap, 4096, n);
    if (!resize(&enc->u1, cap, sizeof *enc->u1) || !resize(&enc->u2, cap, sizeof *enc->u2))
        return SG_ENOMEM;
    enc->ucap = cap;
    return 0;
}
/*
 * NFC of s into enc->nbuf, or s itself when it is already in NFC. Text that is not valid UTF-8 is left as it
 * is (the references only take valid text).
 */
static int nfc(sg_tok_enc_t *enc, const char **s, size_t *len)
{
    const unsigned char *p = (const unsigned char *)*s;
    size_t n = *len, i = 0;
    while (i < n && p[i] < 0x80)
        i++;
    if (i == n || n > INT32_MAX / 4)
        return 0;
    int rc = ubuf_reserve(enc, n + 1);
    if (rc < 0)
        return rc;
    UErrorCode st = U_ZERO_ERROR;
    int32_t ulen = 0;
    u_strFromUTF8(enc->u1, (int32_t)enc->ucap, &ulen, *s, (int32_t)n, &st);
    if (U_FAILURE(st))
        return 0;
    const UNormalizer2 *norm = unorm2_getNFCInstance(&st);
    if (U_FAILURE(st))
        return 0;
    int32_t yes = unorm2_spanQuickCheckYes(norm, enc->u1, ulen, &st);
    if (U_FAILURE(st) || yes == ulen)
        return 0;
    int32_t olen;
    for (;;) {
        st = U_ZERO_ERROR;
        olen = unorm2_normalize(norm, enc->u1, ulen, enc->u2, (int32_t)enc->ucap, &st);
        if (st == U_BUFFER_OVERFLOW_ERROR) {
            UChar *keep = enc->u1;
            size_t need = (size_t)olen + 1;
            /* keep u1's contents across the grow */
            UChar *copy = malloc((size_t)ulen * sizeof *copy);
            if (!copy)
                return SG_ENOMEM;
            memcpy(copy, keep, (size_t)ulen * sizeof *copy);
            if ((rc = ubuf_reserve(enc, need)) < 0) {
                free(copy);
                return rc;
            }
            memcpy(enc->u1, copy, (size_t)ulen * sizeof *copy);
            free(copy);
            continue;
        }
        if (U_FAILURE(st))
            return 0;
        break;
    }
    if ((rc = nbuf_reserve(enc, (size_t)olen * 3 + 1)) < 0)
        return rc;
    int32_t blen = 0;
    st = U_ZERO_ERROR;
    u_strToUTF8(enc->nbuf, (int32_t)enc->ncap, &blen, enc->u2, olen, &st);
    if (U_FAILURE(st))
        return 0;
    *s = enc->nbuf;
    *len = (size_t)blen;
    return 0;
}

/*
 * What the normalizer and pre-tokenizer add around a segment: SentencePiece-style "\u2581" for spaces and in
 * front, or ByteLevel's prefix space. first: the segment starts the text.
 */
static int decorate(sg_tok_enc_t *enc, const char **s, size_t *len, bool first)
{
    const sg_tokenizer_t *tok = enc->tok;
    const char *p = *s;
    size_t n = *len;
    bool prepend = false;
    if (tok->kind == SG_TOK_SPM) {
        prepend = tok->spm_prepend && (first || !tok->spm_prepend_first);
        if (prepend && tok->spm_meta && (p[0] == ' ' || (n >= 3 && memcmp(p, "\xE2\x96\x81", 3) == 0)))
            prepend = false; /* Metaspace adds none where the text already starts with one */
        if (!prepend && (!tok->spm_replace || !memchr(p, ' ', n)))
            return 0;
    } else if (!tok->prefix_space || p[0] == ' ') {
        return 0;
    }
    /* *s may point into nbuf (after NFC): copy it aside first */
    char *tmp = NULL;
    if (enc->nbuf && p >= enc->nbuf && p < enc->nbuf + enc->ncap) {
        tmp = malloc(n);
        if (!tmp)
            return SG_ENOMEM;
        memcpy(tmp, p, n);
        p = tmp;
    }
    int rc = nbuf_reserve(enc, n * 3 + 3);
    if (rc < 0) {
        free(tmp);
        return rc;
    }
    char *out = enc->nbuf;
    size_t w = 0;
    if (tok->kind == SG_TOK_BYTELEVEL) {
        out[w++] = ' ';
        memcpy(out + w, p, n);
        w += n;
    } else {
        if (prepend) {
            memcpy(out, "\xE2\x96\x81", 3);
            w = 3;
        }
        for (size_t i = 0; i < n; i++) {
            if (p[i] == ' ' && tok->spm_replace) {
                memcpy(out + w, "\xE2\x96\x81", 3);
                w += 3;
            } else {
                out[w++] = p[i];
            }
        }
    }
    free(tmp);
    *s = out;
    *len = w;
    return 0;
}

/* A piece of text between added tokens. first: it starts the text. */
static int encode_segment(sg_tok_enc_t *enc, const char *s, size_t len, bool first)
{
    const sg_tokenizer_t *tok = enc->tok;
    int rc;
    if (len == 0)
        return 0;
    if (tok->nfc && (rc = nfc(enc, &s, &len)) < 0)
        return rc;
    if ((rc = decorate(enc, &s, &len, first)) < 0)
        return rc;
    if (tok->spm_split) { /* Metaspace split: "\u2581" begins each pre-token */
        size_t start = 0;
        for (size_t i = 1; i + 3 <= len; i++) {
            if (memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                if ((rc = encode_piece(enc, s + start, i - start)) < 0)
                    return rc;
                start = i;
                i += 2;
            }
        }
        return encode_piece(enc, s + start, len - start);
    }
    if (tok->spm_cut) { /* cut before each "\u2581" that follows another character (see tok_hf.c) */
        size_t start = 0;
        for (size_t i = 1; i + 3 <= len; i++) {
            if (memcmp(s + i, "\xE2\x96\x81", 3) != 0)
                continue;
            if (i < 3 || memcmp(s + i - 3, "\xE2\x96\x81", 3) != 0) {
                if ((rc = encode_piece(enc, s + start, i - start)) < 0)
                    return rc;
                start = i;
            }
            i += 2;
        }
        return encode_piece(enc, s + start, len - start);
    }
    if (!tok->re)
        return encode_piece(enc, s, len);
    size_t pos = 0;
    while (pos < len) {
        int m = enc->jit ? pcre2_jit_match(tok->re, (PCRE2_SPTR)s, len, pos, PCRE2_NOTEMPTY, enc->md, enc->mctx)
                         : pcre2_match(tok->re, (PCRE2_SPTR)s, len, pos, PCRE2_NOTEMPTY, enc->md, enc->mctx);
        size_t a, b;
        if (m < 0) {
            if (m != PCRE2_ERROR_NOMATCH)
                return SG_EINVAL;
            a = b = len;
        } else {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(enc->md);
            a = ov[0];
            b = ov[1];
        }
        /* text no alternative matched: a pre-token of its own, or dropped (Split Removed + invert) */
        if (a > pos && !tok->drop_gaps && (rc = encode_piece(enc, s + pos, a - pos)) < 0)
            return rc;
        if (b > a && (rc = encode_piece(enc, s + a, b - a)) < 0)
            return rc;
        pos = b > pos ? b : len;
    }
    return 0;
}

static inline bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline bool is_word(unsigned char c)
{
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The longest added token starting at p, or SG_TOK_NONE. */
static inline uint32_t added_at(const sg_tokenizer_t *tok, const char *p, size_t left)
{
    if (left >= 2) {
        uint32_t b = (uint32_t)(unsigned char)p[0] << 8 | (unsigned char)p[1];
        for (uint32_t i = tok->abucket[b]; i != SG_TOK_NONE; i = tok->anext[i]) {
            const sg_tok_added_t *a = &tok->added[i];
            if (a->len <= left && memcmp(tok->atext + a->off, p, a->len) == 0)
                return i;
        }
    }
    return tok->aone[(unsigned char)p[0]];
}

ssize_t sg_tok_encode(sg_tok_enc_t *enc, const char *text, size_t len, const uint32_t **ids)
{
    const sg_tokenizer_t *tok = enc->tok;
    enc->n_ids = 0;
    int rc = 0;
    if (tok->n_added == 0) {
        rc = encode_segment(enc, text, len, true);
    } else {
        size_t seg = 0; /* start of the text not yet encoded */
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)text[i];
            if (!(tok->afirst[c >> 3] & (1u << (c & 7))))
                continue;
            uint32_t k = added_at(tok, text + i, len - i);
            if (k == SG_TOK_NONE)
                continue;
            const sg_tok_added_t *a = &tok->added[k];
            size_t start = i, end = i + a->len;
            if (a->single_word && ((start > seg && is_word((unsigned char)text[start - 1])) ||
                                   (end < len && is_word((unsigned char)text[end]))))
                continue;
            if (a->lstrip)
                while (start > seg && is_ws((unsigned char)text[start - 1]))
                    start--;
            if (a->rstrip)
                while (end < len && is_ws((unsigned char)text[end]))
                    end++;
            if ((rc = encode_segment(enc, text + seg, start - seg, seg == 0)) < 0)
                break;
            if ((rc = emit(enc, a->id)) < 0)
                break;
            seg = end;
            i = end - 1;
        }
        if (rc == 0)
            rc = encode_segment(enc, text + seg, len - seg, seg == 0);
    }
    if (rc < 0)
        return rc;
    *ids = enc->ids;
    return (ssize_t)enc->n_ids;
}

ssize_t sg_tok_count(sg_tok_enc_t *enc, const char *text, size_t len)
{
    const uint32_t *ids;
    return sg_tok_encode(enc, text, len, &ids);
}
