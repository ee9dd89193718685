/*
 * Encoding: cut added tokens out, normalize, split into pre-tokens with the file's regex, and turn each
 * pre-token into ids: the encoder's cache first, then (tiktoken, ignore_merges) the whole pre-token looked up in
 * the vocabulary, then BPE. BPE merges the lowest-ranked adjacent pair, leftmost on ties, until none is left:
 * a rank scan over a small array for short pre-tokens, a linked list and a binary heap past SCAN_MAX symbols, so a
 * run of 10,000 spaces costs n log n and not n^2.
 */
#define _GNU_SOURCE /* memmem */
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

/* One pre-tokenizer's pieces of the text it was given, and the text it rewrote (Metaspace, ByteLevel). */
typedef struct {
    uint32_t a, b;
    bool match;
} piece_t;

typedef struct {
    piece_t *r;
    size_t rcap;
    char *text;
    size_t tcap;
} level_t;

struct sg_tok_enc {
    const sg_tokenizer_t *tok;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jstack;

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

    sg_tok_nscratch_t *ns;
    sg_tok_uscratch_t *us;
    level_t lv[SG_TOK_MAX_STAGES];
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
    enc->ns = sg_tok_nscratch_new();
    enc->us = sg_tok_uscratch_new();
    enc->md = pcre2_match_data_create(1, NULL);
    enc->mctx = pcre2_match_context_create(NULL);
    /* long whitespace runs backtrack through the lookahead: give the JIT room */
    enc->jstack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!enc->cache || !enc->ckeys || !enc->cids || !enc->ns || !enc->us || !enc->md || !enc->mctx || !enc->jstack) {
        sg_tok_enc_free(enc);
        return NULL;
    }
    pcre2_jit_stack_assign(enc->mctx, NULL, enc->jstack);
    return enc;
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
    sg_tok_nscratch_free(enc->ns);
    sg_tok_uscratch_free(enc->us);
    for (int i = 0; i < SG_TOK_MAX_STAGES; i++) {
        free(enc->lv[i].r);
        free(enc->lv[i].text);
    }
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
    if (tok->model == SG_TOK_UNIGRAM) {
        rc = sg_tok_unigram(tok, enc->us, p, len, &enc->ids, &enc->n_ids, &enc->ids_cap);
    } else if (tok->model == SG_TOK_WORDPIECE) {
        rc = sg_tok_wordpiece(tok, enc->us, p, len, &enc->ids, &enc->n_ids, &enc->ids_cap);
    } else if (whole != SG_TOK_NONE) {
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

static bool level_text(level_t *lv, size_t n)
{
    if (n <= lv->tcap)
        return true;
    size_t cap = grown_cap(lv->tcap, 4096, n);
    if (!resize(&lv->text, cap, 1))
        return false;
    lv->tcap = cap;
    return true;
}

static inline int add_range(level_t *lv, size_t *n, size_t a, size_t b, bool match)
{
    if (*n == lv->rcap) {
        size_t cap = grown_cap(lv->rcap, 64, *n + 1);
        if (!resize(&lv->r, cap, sizeof *lv->r))
            return SG_ENOMEM;
        lv->rcap = cap;
    }
    lv->r[(*n)++] = (piece_t){(uint32_t)a, (uint32_t)b, match};
    return 0;
}

/* The next match of a Split's pattern in s[pos, len): 1 and [*a, *b), or 0. */
static inline int next_match(sg_tok_enc_t *enc, const sg_tok_pre_t *op, const char *s, size_t len, size_t pos,
                             size_t *a, size_t *b)
{
    if (!op->re) {
        if (op->str_len == 0 || len - pos < op->str_len)
            return 0;
        const char *hit = memmem(s + pos, len - pos, op->str, op->str_len);
        if (!hit)
            return 0;
        *a = (size_t)(hit - s);
        *b = *a + op->str_len;
        return 1;
    }
    int m = op->jit ? pcre2_jit_match(op->re, (PCRE2_SPTR)s, len, pos, PCRE2_NOTEMPTY, enc->md, enc->mctx)
                    : pcre2_match(op->re, (PCRE2_SPTR)s, len, pos, PCRE2_NOTEMPTY, enc->md, enc->mctx);
    if (m == PCRE2_ERROR_NOMATCH)
        return 0;
    if (m < 0)
        return SG_EINVAL;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(enc->md);
    *a = ov[0];
    *b = ov[1];
    return 1;
}

static int pretok(sg_tok_enc_t *enc, uint32_t k, const char *s, size_t len, bool at_start);

/* The model on one pre-token. BPE over characters cuts it first where no merge can cross (see tok_hf.c). */
static int model(sg_tok_enc_t *enc, const char *s, size_t len)
{
    const sg_tokenizer_t *tok = enc->tok;
    if (!tok->spm_cut)
        return encode_piece(enc, s, len);
    int rc;
    size_t start = 0;
    for (size_t i = 1; i + 3 <= len; i++) {
        const char *e = memchr(s + i, 0xE2, len - 2 - i);
        if (!e)
            break;
        i = (size_t)(e - s);
        if (memcmp(s + i, "\xE2\x96\x81", 3) != 0)
            continue;
        unsigned char prev = (unsigned char)s[i - 1];
        bool after_meta = i >= 3 && memcmp(s + i - 3, "\xE2\x96\x81", 3) == 0;
        if (!after_meta && !(tok->spm_keep[prev >> 3] & (1u << (prev & 7)))) {
            if ((rc = encode_piece(enc, s + start, i - start)) < 0)
                return rc;
            start = i;
        }
        i += 2;
    }
    return encode_piece(enc, s + start, len - start);
}

/* Split: pieces and matches of op's pattern, kept as its behaviour says (HF SplitDelimiterBehavior). */
static int split(sg_tok_enc_t *enc, uint32_t k, const char *s, size_t len, bool at_start)
{
    const sg_tok_pre_t *op = &enc->tok->pres[k];
    level_t *lv = &enc->lv[k];
    size_t n = 0, pos = 0, a, b;
    int rc, m;
    if (op->behavior == SG_SPLIT_ISOLATED || op->behavior == SG_SPLIT_REMOVED) {
        /* the common case (tiktoken, Llama 3, GPT-4o): each piece goes on as soon as it is found */
        bool keep_gap = op->behavior == SG_SPLIT_ISOLATED || !op->invert;
        bool keep_match = op->behavior == SG_SPLIT_ISOLATED || op->invert;
        while (pos < len && (m = next_match(enc, op, s, len, pos, &a, &b)) != 0) {
            if (m < 0)
                return m;
            if (a > pos && keep_gap && (rc = pretok(enc, k + 1, s + pos, a - pos, at_start && pos == 0)) < 0)
                return rc;
            if (keep_match && (rc = pretok(enc, k + 1, s + a, b - a, at_start && a == 0)) < 0)
                return rc;
            pos = b;
        }
        return pos < len && keep_gap ? pretok(enc, k + 1, s + pos, len - pos, at_start && pos == 0) : 0;
    }
    while (pos < len && (m = next_match(enc, op, s, len, pos, &a, &b)) != 0) {
        if (m < 0)
            return m;
        if (a > pos && (rc = add_range(lv, &n, pos, a, op->invert)) < 0)
            return rc;
        if ((rc = add_range(lv, &n, a, b, !op->invert)) < 0)
            return rc;
        pos = b;
    }
    if (pos < len && (rc = add_range(lv, &n, pos, len, op->invert)) < 0)
        return rc;
    /* fold in place: w pieces kept so far */
    piece_t *r = lv->r;
    size_t w = 0;
    bool prev = false;
    switch (op->behavior) {
    case SG_SPLIT_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!r[i].match)
                r[w++] = r[i];
        break;
    case SG_SPLIT_ISOLATED:
        w = n;
        break;
    case SG_SPLIT_MERGED_PREV:
        for (size_t i = 0; i < n; i++) {
            bool mt = r[i].match;
            if (mt && !prev && w > 0)
                r[w - 1].b = r[i].b;
            else
                r[w++] = r[i];
            prev = mt;
        }
        break;
    case SG_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            bool mt = r[i].match;
            if (mt == prev && w > 0)
                r[w - 1].b = r[i].b;
            else
                r[w++] = r[i];
            prev = mt;
        }
        break;
    case SG_SPLIT_MERGED_NEXT:
        /* from the end: a match joins the piece after it, unless that piece is a match too */
        for (size_t i = n; i-- > 0;) {
            bool mt = r[i].match;
            if (mt && !prev && w > 0) {
                r[n - w].a = r[i].a;
            } else {
                w++;
                r[n - w] = r[i];
            }
            prev = mt;
        }
        memmove(r, r + n - w, w * sizeof *r);
        break;
    }
    for (size_t i = 0; i < w; i++) {
        piece_t p = lv->r[i]; /* a copy: the levels below may not touch lv, but keep it obvious */
        if (p.b > p.a && (rc = pretok(enc, k + 1, s + p.a, p.b - p.a, at_start && p.a == 0)) < 0)
            return rc;
    }
    return 0;
}

/* Metaspace: spaces become the replacement, which is put in front (per prepend_scheme) and starts each piece. */
static int metaspace(sg_tok_enc_t *enc, uint32_t k, const char *s, size_t len, bool at_start)
{
    const sg_tok_pre_t *op = &enc->tok->pres[k];
    level_t *lv = &enc->lv[k];
    const char *rep = op->str;
    size_t rl = op->str_len;
    if (!level_text(lv, len * (rl > 0 ? rl : 1) + rl))
        return SG_ENOMEM;
    char *out = lv->text;
    size_t w = 0;
    bool pre = op->prepend == 1 || (op->prepend == 2 && at_start);
    if (pre && s[0] != ' ' && !(len >= rl && memcmp(s, rep, rl) == 0)) {
        memcpy(out, rep, rl);
        w = rl;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(out + w, rep, rl);
            w += rl;
        } else {
            out[w++] = s[i];
        }
    }
    if (!op->split || rl == 0)
        return pretok(enc, k + 1, out, w, at_start);
    size_t start = 0;
    int rc;
    for (size_t i = 1; i + rl <= w; i++) {
        if (memcmp(out + i, rep, rl) == 0) {
            if ((rc = pretok(enc, k + 1, out + start, i - start, at_start && start == 0)) < 0)
                return rc;
            start = i;
            i += rl - 1;
        }
    }
    return pretok(enc, k + 1, out + start, w - start, at_start && start == 0);
}

/* Pre-tokenizer k on one piece, then those after it on each piece it makes, then the model. at_start: the piece
 * begins the text (Metaspace's prepend_scheme "first"). */
static int pretok(sg_tok_enc_t *enc, uint32_t k, const char *s, size_t len, bool at_start)
{
    const sg_tokenizer_t *tok = enc->tok;
    if (len == 0)
        return 0;
    if (k == tok->n_pres)
        return model(enc, s, len);
    const sg_tok_pre_t *op = &tok->pres[k];
    switch (op->type) {
    case SG_PRE_SPLIT:
        return split(enc, k, s, len, at_start);
    case SG_PRE_METASPACE:
        return metaspace(enc, k, s, len, at_start);
    case SG_PRE_BYTELEVEL:
        if (op->prefix_space && s[0] != ' ') {
            level_t *lv = &enc->lv[k];
            if (!level_text(lv, len + 1))
                return SG_ENOMEM;
            lv->text[0] = ' ';
            memcpy(lv->text + 1, s, len);
            return pretok(enc, k + 1, lv->text, len + 1, at_start);
        }
        return pretok(enc, k + 1, s, len, at_start);
    }
    return 0;
}

/* A piece of text between added tokens. first: it starts the text. */
static int encode_segment(sg_tok_enc_t *enc, const char *s, size_t len, bool first)
{
    if (len == 0)
        return 0;
    int rc = sg_tok_normalize(enc->tok, enc->ns, &s, &len);
    if (rc < 0)
        return rc;
    return pretok(enc, 0, s, len, first);
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
