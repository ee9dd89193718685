/*
 * The two models besides BPE, each on one pre-token, as HF tokenizers runs them:
 *
 *   - Unigram (SentencePiece unigram: T5, XLM-R, many embedding models): the split of the pre-token into
 *     vocabulary pieces with the highest total score (Viterbi over character boundaries). Start positions are
 *     visited left to right and, from each, pieces shortest first; a later candidate replaces the best path to
 *     its end only when strictly better, which is HF's order and so its choice among equal scores. A character
 *     no piece of its own length covers gets the unknown piece (scored min_score - 10); runs of unknown pieces
 *     fuse into one, which byte_fallback then spells as <0xNN> tokens when every byte has one.
 *   - WordPiece (BERT and its embedding models): greedy longest match first; pieces after the first carry the
 *     continuing prefix ("##"); a word with a part no piece matches, or longer than max_input_chars_per_word
 *     characters, is the unknown token alone.
 */
#include "tok_internal.h"

#include <stdlib.h>

struct sg_tok_uscratch {
    double *best;   /* best score of a path to each byte position */
    uint32_t *from; /* its last piece starts here (SG_TOK_NONE: not reached) */
    uint32_t *id;   /* ... and is this id (SG_TOK_NONE: the unknown piece) */
    size_t cap;
    uint32_t *tmp; /* pieces, collected before they are known to stand */
    size_t tmp_cap;
    char *key; /* WordPiece: prefix + candidate */
    size_t key_cap;
};

sg_tok_uscratch_t *sg_tok_uscratch_new(void)
{
    return calloc(1, sizeof(sg_tok_uscratch_t));
}

void sg_tok_uscratch_free(sg_tok_uscratch_t *us)
{
    if (!us)
        return;
    free(us->best);
    free(us->from);
    free(us->id);
    free(us->tmp);
    free(us->key);
    free(us);
}

static bool grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    void **pp = p;
    void *q = realloc(*pp, c * elem);
    if (!q)
        return false;
    *pp = q;
    *cap = c;
    return true;
}

static int push(uint32_t **ids, size_t *n, size_t *cap, uint32_t id)
{
    if (*n == *cap && !grow(ids, cap, *n + 1, sizeof **ids))
        return SG_ENOMEM;
    (*ids)[(*n)++] = id;
    return 0;
}

/* Bytes of the UTF-8 character at p (1 for a byte that starts none). */
static inline size_t char_len(const unsigned char *p, size_t left)
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

/* The unknown text p[a, b): its bytes' <0xNN> tokens under byte_fallback when all exist, else the unk id. */
static int emit_unknown(const sg_tokenizer_t *tok, const char *p, size_t a, size_t b, uint32_t **ids, size_t *n,
                        size_t *cap)
{
    uint32_t whole = sg_tok_lookup(tok, p + a, b - a);
    if (whole != SG_TOK_NONE)
        return push(ids, n, cap, whole);
    bool bytes = tok->byte_fallback;
    for (size_t i = a; bytes && i < b; i++)
        bytes = tok->byte_id[(unsigned char)p[i]] != SG_TOK_NONE;
    int rc = 0;
    if (bytes) {
        for (size_t i = a; rc == 0 && i < b; i++)
            rc = push(ids, n, cap, tok->byte_id[(unsigned char)p[i]]);
        return rc;
    }
    return tok->unk_id != SG_TOK_NONE ? push(ids, n, cap, tok->unk_id) : 0;
}

int sg_tok_unigram(const sg_tokenizer_t *tok, sg_tok_uscratch_t *us, const char *text, size_t len, uint32_t **ids,
                   size_t *n, size_t *cap)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t c1 = us->cap, c2 = us->cap, c3 = us->cap;
    if (!grow(&us->best, &c1, len + 1, sizeof *us->best) || !grow(&us->from, &c2, len + 1, sizeof *us->from) ||
        !grow(&us->id, &c3, len + 1, sizeof *us->id))
        return SG_ENOMEM;
    us->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    for (size_t i = 0; i <= len; i++)
        us->from[i] = SG_TOK_NONE;
    us->best[0] = 0;
    us->from[0] = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = char_len(p + i, len - i);
        if (us->from[i] == SG_TOK_NONE && i > 0) {
            i += cl;
            continue;
        }
        double base = us->best[i];
        bool single = false;
        for (size_t j = i + cl; j <= len && j - i <= tok->max_key_len;) {
            uint32_t id = sg_tok_lookup(tok, text + i, j - i);
            if (id != SG_TOK_NONE && id < tok->n_ids) {
                double cand = base + tok->scores[id];
                if (us->from[j] == SG_TOK_NONE || cand > us->best[j]) {
                    us->best[j] = cand;
                    us->from[j] = (uint32_t)i;
                    us->id[j] = id;
                }
                single |= j == i + cl;
            }
            if (j == len)
                break;
            j += char_len(p + j, len - j);
        }
        if (!single) {
            size_t j = i + cl;
            double cand = base + tok->unk_score;
            if (us->from[j] == SG_TOK_NONE || cand > us->best[j]) {
                us->best[j] = cand;
                us->from[j] = (uint32_t)i;
                us->id[j] = SG_TOK_NONE;
            }
        }
        i += cl;
    }
    /* back from the end: pieces in reverse into tmp as end positions */
    size_t k = 0;
    for (size_t j = len; j > 0; j = us->from[j]) {
        if (!grow(&us->tmp, &us->tmp_cap, k + 1, sizeof *us->tmp))
            return SG_ENOMEM;
        us->tmp[k++] = (uint32_t)j;
    }
    int rc = 0;
    for (size_t q = k; rc == 0 && q-- > 0;) {
        size_t end = us->tmp[q], start = us->from[end];
        if (us->id[end] != SG_TOK_NONE) {
            rc = push(ids, n, cap, us->id[end]);
            continue;
        }
        while (q > 0 && us->id[us->tmp[q - 1]] == SG_TOK_NONE) /* fuse a run of unknown pieces */
            end = us->tmp[--q];
        rc = emit_unknown(tok, text, start, end, ids, n, cap);
    }
    return rc;
}

int sg_tok_wordpiece(const sg_tokenizer_t *tok, sg_tok_uscratch_t *us, const char *text, size_t len, uint32_t **ids,
                     size_t *n, size_t *cap)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t chars = 0;
    for (size_t i = 0; i < len; i += char_len(p + i, len - i))
        chars++;
    if (chars > tok->wp_max_chars)
        return push(ids, n, cap, tok->unk_id);
    size_t pl = tok->wp_prefix_len;
    if (!grow(&us->key, &us->key_cap, len + pl, 1))
        return SG_ENOMEM;
    memcpy(us->key, tok->wp_prefix, pl);
    size_t k = 0;
    for (size_t start = 0; start < len;) {
        uint32_t found = SG_TOK_NONE;
        size_t end = len;
        while (end > start) {
            if (end - start <= tok->max_key_len) {
                if (start == 0) {
                    found = sg_tok_lookup(tok, text, end);
                } else {
                    memcpy(us->key + pl, text + start, end - start);
                    found = sg_tok_lookup(tok, us->key, pl + end - start);
                }
                if (found != SG_TOK_NONE)
                    break;
            }
            /* back one character */
            size_t e = end - 1;
            while (e > start && (p[e] & 0xC0) == 0x80 && end - e < 4)
                e--;
            if (char_len(p + e, len - e) != end - e)
                e = end - 1;
            end = e;
        }
        if (found == SG_TOK_NONE)
            return push(ids, n, cap, tok->unk_id);
        if (!grow(&us->tmp, &us->tmp_cap, k + 1, sizeof *us->tmp))
            return SG_ENOMEM;
        us->tmp[k++] = found;
        start = end;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < k; i++)
        rc = push(ids, n, cap, us->tmp[i]);
    return rc;
}
