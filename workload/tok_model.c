/* Building the loaded model: per-id bytes, the bytes -> id map, the pair map, added tokens, the regex. */
#define _GNU_SOURCE /* qsort_r */
#include "tok_internal.h"

#include <stdlib.h>

int sg_tok_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *sg_tok_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

sg_tokenizer_t *sg_tok_new(enum sg_tok_kind kind)
{
    sg_tokenizer_t *tok = calloc(1, sizeof *tok);
    if (!tok)
        return NULL;
    tok->kind = kind;
    tok->unk_id = SG_TOK_NONE;
    for (int i = 0; i < 256; i++) {
        tok->byte_id[i] = SG_TOK_NONE;
        tok->aone[i] = SG_TOK_NONE;
    }
    return tok;
}

int sg_tok_reserve_ids(sg_tokenizer_t *tok, uint32_t n)
{
    if (n <= tok->ids_cap)
        return 0;
    uint32_t cap = tok->ids_cap ? tok->ids_cap : 1024;
    while (cap < n)
        cap *= 2;
    uint32_t *off = realloc(tok->off, (size_t)cap * sizeof *off);
    if (off)
        tok->off = off;
    uint32_t *blen = realloc(tok->blen, (size_t)cap * sizeof *blen);
    if (blen)
        tok->blen = blen;
    uint8_t *has = realloc(tok->has, cap);
    if (has)
        tok->has = has;
    if (!off || !blen || !has)
        return SG_ENOMEM;
    memset(has + tok->ids_cap, 0, cap - tok->ids_cap);
    if (tok->kblob || tok->koff) {
        uint32_t *koff = realloc(tok->koff, (size_t)cap * sizeof *koff);
        if (koff)
            tok->koff = koff;
        uint32_t *klen = realloc(tok->klen, (size_t)cap * sizeof *klen);
        if (klen)
            tok->klen = klen;
        if (!koff || !klen)
            return SG_ENOMEM;
    }
    tok->ids_cap = cap;
    return 0;
}

static int blob_append(char **blob, size_t *len, size_t *cap, const char *bytes, size_t n, uint32_t *off)
{
    if (*len + n > UINT32_MAX)
        return SG_ENOMEM;
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 1 << 16;
        while (c < *len + n)
            c *= 2;
        char *b = realloc(*blob, c);
        if (!b)
            return SG_ENOMEM;
        *blob = b;
        *cap = c;
    }
    if (n)
        memcpy(*blob + *len, bytes, n);
    *off = (uint32_t)*len;
    *len += n;
    return 0;
}

int sg_tok_set_bytes(sg_tokenizer_t *tok, uint32_t id, const char *bytes, size_t len)
{
    int rc = sg_tok_reserve_ids(tok, id + 1);
    if (rc < 0)
        return rc;
    if (tok->has[id])
        return SG_EINVAL;
    rc = blob_append(&tok->blob, &tok->blob_len, &tok->blob_cap, bytes, len, &tok->off[id]);
    if (rc < 0)
        return rc;
    tok->blen[id] = (uint32_t)len;
    tok->has[id] = 1;
    if (id >= tok->n_ids)
        tok->n_ids = id + 1;
    return 0;
}

int sg_tok_set_key(sg_tokenizer_t *tok, uint32_t id, const char *key, size_t len)
{
    if (!tok->koff) {
        tok->koff = malloc((size_t)tok->ids_cap * sizeof *tok->koff);
        tok->klen = malloc((size_t)tok->ids_cap * sizeof *tok->klen);
        if (!tok->koff || !tok->klen)
            return SG_ENOMEM;
    }
    int rc = sg_tok_reserve_ids(tok, id + 1);
    if (rc < 0)
        return rc;
    rc = blob_append(&tok->kblob, &tok->kblob_len, &tok->kblob_cap, key, len, &tok->koff[id]);
    if (rc < 0)
        return rc;
    tok->klen[id] = (uint32_t)len;
    return 0;
}

static inline const char *key_of(const sg_tokenizer_t *tok, uint32_t id, uint32_t *len)
{
    if (tok->kblob) {
        *len = tok->klen[id];
        return tok->kblob + tok->koff[id];
    }
    *len = tok->blen[id];
    return tok->blob + tok->off[id];
}

void sg_tok_prefetch_pair(const sg_tokenizer_t *tok, uint32_t left, uint32_t right)
{
    __builtin_prefetch(&tok->pmap[sg_tok_pair_hash((uint64_t)left << 32 | right) & tok->pmap_mask]);
}

int sg_tok_build_vmap(sg_tokenizer_t *tok, uint32_t n_keyed, uint32_t *dup)
{
    *dup = SG_TOK_NONE;
    uint32_t cap = 1024;
    while (cap < (uint64_t)n_keyed * 2)
        cap *= 2;
    free(tok->vmap);
    tok->vmap = calloc(cap, sizeof *tok->vmap);
    if (!tok->vmap)
        return SG_ENOMEM;
    tok->vmap_mask = cap - 1;
    for (uint32_t id = 0; id < n_keyed; id++) {
        if (!tok->has[id])
            continue;
        uint32_t kl;
        const char *k = key_of(tok, id, &kl);
        uint64_t h64 = sg_tok_hash(k, kl);
        uint32_t h = (uint32_t)(h64 >> 32) | 1;
        uint32_t i = (uint32_t)h64 & tok->vmap_mask;
        for (;; i = (i + 1) & tok->vmap_mask) {
            sg_tok_vslot_t *s = &tok->vmap[i];
            if (s->hash == 0) {
                s->hash = h;
                s->id = id;
                s->koff = (uint32_t)(k - (tok->kblob ? tok->kblob : tok->blob));
                s->klen = kl;
                break;
            }
            if (s->hash == h) {
                uint32_t ol;
                const char *o = key_of(tok, s->id, &ol);
                if (ol == kl && memcmp(o, k, kl) == 0) {
                    if (*dup == SG_TOK_NONE)
                        *dup = id;
                    break;
                }
            }
        }
    }
    return 0;
}

int sg_tok_pairs_init(sg_tokenizer_t *tok, size_t expected)
{
    uint32_t cap = 1024;
    while (cap < expected * 2 + 16)
        cap *= 2;
    free(tok->pmap);
    tok->pmap = malloc((size_t)cap * sizeof *tok->pmap);
    if (!tok->pmap)
        return SG_ENOMEM;
    for (uint32_t i = 0; i < cap; i++)
        tok->pmap[i].key = UINT64_MAX;
    tok->pmap_mask = cap - 1;
    tok->pmap_count = 0;
    return 0;
}

static int pairs_grow(sg_tokenizer_t *tok)
{
    uint32_t old_cap = tok->pmap_mask + 1;
    sg_tok_pslot_t *old = tok->pmap;
    uint32_t cap = old_cap * 2;
    sg_tok_pslot_t *n = malloc((size_t)cap * sizeof *n);
    if (!n)
        return SG_ENOMEM;
    for (uint32_t i = 0; i < cap; i++)
        n[i].key = UINT64_MAX;
    uint32_t mask = cap - 1;
    for (uint32_t i = 0; i < old_cap; i++) {
        if (old[i].key == UINT64_MAX)
            continue;
        uint32_t j = sg_tok_pair_hash(old[i].key) & mask;
        while (n[j].key != UINT64_MAX)
            j = (j + 1) & mask;
        n[j] = old[i];
    }
    free(old);
    tok->pmap = n;
    tok->pmap_mask = mask;
    return 0;
}

int sg_tok_add_pair(sg_tokenizer_t *tok, uint32_t left, uint32_t right, uint32_t rank, uint32_t merged)
{
    if ((tok->pmap_count + 1) * 2 > tok->pmap_mask + 1) {
        int rc = pairs_grow(tok);
        if (rc < 0)
            return rc;
    }
    uint64_t key = (uint64_t)left << 32 | right;
    uint32_t i = sg_tok_pair_hash(key) & tok->pmap_mask;
    for (;; i = (i + 1) & tok->pmap_mask) {
        sg_tok_pslot_t *s = &tok->pmap[i];
        if (s->key == key)
            return 0; /* the first (lowest) rank stays */
        if (s->key == UINT64_MAX) {
            s->key = key;
            s->rank = rank;
            s->merged = merged;
            tok->pmap_count++;
            return 0;
        }
    }
}

int sg_tok_pairs_from_ranks(sg_tokenizer_t *tok, uint32_t n_keyed)
{
    int rc = sg_tok_pairs_init(tok, n_keyed);
    if (rc < 0)
        return rc;
    for (uint32_t id = 0; id < n_keyed; id++) {
        if (!tok->has[id])
            continue;
        uint32_t kl;
        const char *k = key_of(tok, id, &kl);
        for (uint32_t i = 1; i < kl; i++) {
            uint32_t a = sg_tok_lookup(tok, k, i);
            if (a == SG_TOK_NONE)
                continue;
            uint32_t b = sg_tok_lookup(tok, k + i, kl - i);
            if (b == SG_TOK_NONE)
                continue;
            rc = sg_tok_add_pair(tok, a, b, id, id);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static inline bool afirst_has(const sg_tokenizer_t *tok, unsigned char c)
{
    return tok->afirst[c >> 3] & (1u << (c & 7));
}

static int cmp_added_len(const void *a, const void *b, void *ctx)
{
    const sg_tok_added_t *added = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (added[x].len != added[y].len)
        return added[x].len < added[y].len ? -1 : 1;
    return x < y ? -1 : x > y;
}

int sg_tok_set_added(sg_tokenizer_t *tok, const sg_tok_added_t *added, uint32_t n, const char *text)
{
    if (n == 0)
        return 0;
    size_t tlen = 0;
    for (uint32_t i = 0; i < n; i++)
        tlen += added[i].len;
    tok->added = malloc(n * sizeof *tok->added);
    tok->atext = malloc(tlen + 1);
    tok->abucket = malloc(65536 * sizeof *tok->abucket);
    tok->anext = malloc(n * sizeof *tok->anext);
    uint32_t *order = malloc(n * sizeof *order);
    if (!tok->added || !tok->atext || !tok->abucket || !tok->anext || !order) {
        free(order);
        return SG_ENOMEM;
    }
    size_t o = 0;
    for (uint32_t i = 0; i < n; i++) {
        tok->added[i] = added[i];
        memcpy(tok->atext + o, text + added[i].off, added[i].len);
        tok->added[i].off = (uint32_t)o;
        o += added[i].len;
        order[i] = i;
        if (added[i].lstrip)
            tok->any_lstrip = true;
    }
    tok->n_added = n;
    for (uint32_t i = 0; i < 65536; i++)
        tok->abucket[i] = SG_TOK_NONE;
    qsort_r(order, n, sizeof *order, cmp_added_len, tok->added);
    /* shortest first onto the heads: each chain ends up longest first */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        const sg_tok_added_t *a = &tok->added[i];
        if (a->len == 0)
            continue;
        const unsigned char *c = (const unsigned char *)tok->atext + a->off;
        tok->afirst[c[0] >> 3] |= (uint8_t)(1u << (c[0] & 7));
        if (a->len == 1) {
            tok->aone[c[0]] = i;
            continue;
        }
        uint32_t b = (uint32_t)c[0] << 8 | c[1];
        tok->anext[i] = tok->abucket[b];
        tok->abucket[b] = i;
    }
    free(order);
    (void)afirst_has;
    return 0;
}

int sg_tok_compile(const char *pattern, size_t len, pcre2_code **out, char *err, size_t errlen)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY,
                      &ec, &eo, NULL);
    if (!re) {
        char msg[160];
        pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof msg);
        return sg_tok_fail(err, errlen, SG_EINVAL, "regex at offset %zu: %s", (size_t)eo, msg);
    }
    /* JIT is a speed-up only: without it (a platform PCRE2 lacks it for), matching falls back to the interpreter */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return 0;
}

int sg_tok_set_regex(sg_tokenizer_t *tok, const char *pattern, char *err, size_t errlen)
{
    if (tok->n_pres == SG_TOK_MAX_STAGES)
        return sg_tok_fail(err, errlen, SG_EINVAL, "more than %d pre-tokenizers", SG_TOK_MAX_STAGES);
    if (!tok->pres && !(tok->pres = calloc(SG_TOK_MAX_STAGES, sizeof *tok->pres)))
        return SG_ENOMEM;
    sg_tok_pre_t *pre = &tok->pres[tok->n_pres];
    memset(pre, 0, sizeof *pre);
    int rc = sg_tok_compile(pattern, PCRE2_ZERO_TERMINATED, &pre->re, err, errlen);
    if (rc < 0)
        return rc;
    size_t jsz = 0;
    pre->jit = pcre2_pattern_info(pre->re, PCRE2_INFO_JITSIZE, &jsz) == 0 && jsz > 0;
    pre->type = SG_PRE_SPLIT;
    pre->behavior = SG_SPLIT_ISOLATED;
    tok->n_pres++;
    return 0;
}

void sg_tok_norm_free(sg_tok_norm_t *n)
{
    free(n->pattern);
    free(n->content);
    if (n->re)
        pcre2_code_free(n->re);
    free(n->trie);
    free(n->blob);
    memset(n, 0, sizeof *n);
}

void sg_tok_pre_free(sg_tok_pre_t *p)
{
    if (p->re)
        pcre2_code_free(p->re);
    free(p->str);
    memset(p, 0, sizeof *p);
}

void sg_tok_free(sg_tokenizer_t *tok)
{
    if (!tok)
        return;
    free(tok->desc);
    free(tok->blob);
    free(tok->off);
    free(tok->blen);
    free(tok->has);
    free(tok->kblob);
    free(tok->koff);
    free(tok->klen);
    free(tok->vmap);
    free(tok->pmap);
    for (uint32_t i = 0; i < tok->n_norms; i++)
        sg_tok_norm_free(&tok->norms[i]);
    free(tok->norms);
    for (uint32_t i = 0; i < tok->n_pres; i++)
        sg_tok_pre_free(&tok->pres[i]);
    free(tok->pres);
    free(tok->scores);
    free(tok->wp_prefix);
    free(tok->added);
    free(tok->atext);
    free(tok->abucket);
    free(tok->anext);
    free(tok);
}

const char *sg_tok_describe(const sg_tokenizer_t *tok)
{
    return tok->desc ? tok->desc : "tokenizer";
}

uint32_t sg_tok_vocab_size(const sg_tokenizer_t *tok)
{
    return tok->n_ids;
}

ssize_t sg_tok_decode(const sg_tokenizer_t *tok, const uint32_t *ids, size_t n, char *out, size_t cap)
{
    size_t w = 0;
    bool strip = tok->kind == SG_TOK_SPM;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= tok->n_ids || !tok->has[id])
            return SG_EINVAL;
        const char *b = tok->blob + tok->off[id];
        size_t bl = tok->blen[id];
        if (strip && bl > 0) { /* the Strip decoder: one leading space of the whole text */
            strip = false;
            if (b[0] == ' ') {
                b++;
                bl--;
            }
        }
        if (w < cap)
            memcpy(out + w, b, bl < cap - w ? bl : cap - w);
        w += bl;
    }
    return (ssize_t)w;
}
