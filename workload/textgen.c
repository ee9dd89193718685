/*
 * Exact-length text: see sg_textgen.h. The fit takes a window of ids from the corpus, decodes it after the
 * head, counts the whole text with the tokenizer and corrects the window length by the difference, a few times;
 * when the count jumps over the target at this offset (a one-id change moves it by two), the next offset is
 * tried. Everything is a function of its arguments, so the same run always produces the same prompts.
 */
#include "sg_textgen.h"

#include "sg_workload.h"

#include <stdlib.h>
#include <string.h>

#define WORD_CORPUS_LEN 8192       /* words in the tokenizer-less corpus */
#define WORD_CORPUS_SEED 0x7e47ULL /* fixed: the word corpus is the same in every run */
#define FIT_STEPS 12               /* length corrections per offset */
#define FIT_OFFSETS 64             /* offsets tried before giving up */
#define OFFSET_STEP 7919           /* between offsets tried: a prime, so retries spread over the corpus */

struct sg_textgen {
    const sg_tokenizer_t *tok; /* NULL: words */
    sg_tok_enc_t *enc;
    uint32_t *ids;      /* tokenizer mode: the corpus as ids */
    const char **words; /* word mode: the corpus as words */
    size_t n;           /* ids or words */
    uint32_t *win;      /* scratch: one window of ids */
    size_t win_cap;
};

int sg_textgen_new(const sg_tokenizer_t *tok, sg_textgen_t **out, char *err, size_t errlen)
{
    *out = NULL;
    sg_textgen_t *g = calloc(1, sizeof *g);
    if (!g)
        goto oom;
    g->tok = tok;
    if (!tok) {
        g->words = malloc(WORD_CORPUS_LEN * sizeof *g->words);
        if (!g->words)
            goto oom;
        sg_rng_t rng;
        sg_rng_seed(&rng, WORD_CORPUS_SEED, 0);
        for (size_t i = 0; i < WORD_CORPUS_LEN; i++)
            g->words[i] = sg_vocab_word(sg_rng_next(&rng) % sg_vocab_size());
        g->n = WORD_CORPUS_LEN;
        *out = g;
        return 0;
    }
    g->enc = sg_tok_enc_new(tok);
    if (!g->enc)
        goto oom;
    size_t len = 0;
    const char *text = sg_corpus_text(&len);
    const uint32_t *ids;
    ssize_t n = sg_tok_encode(g->enc, text, len, &ids);
    if (n < 0) {
        snprintf(err, errlen, "tokenizing the built-in corpus with %s: %s", sg_tok_describe(tok), sg_strerror((int)n));
        sg_textgen_free(g);
        return (int)n;
    }
    if (n == 0) {
        snprintf(err, errlen, "the tokenizer %s gives no ids for the built-in corpus", sg_tok_describe(tok));
        sg_textgen_free(g);
        return SG_EINVAL;
    }
    g->ids = malloc((size_t)n * sizeof *g->ids);
    if (!g->ids)
        goto oom;
    memcpy(g->ids, ids, (size_t)n * sizeof *g->ids);
    g->n = (size_t)n;
    *out = g;
    return 0;
oom:
    snprintf(err, errlen, "out of memory for the prompt corpus");
    sg_textgen_free(g);
    return SG_ENOMEM;
}

void sg_textgen_free(sg_textgen_t *g)
{
    if (!g)
        return;
    sg_tok_enc_free(g->enc);
    free(g->ids);
    free(g->words);
    free(g->win);
    free(g);
}

size_t sg_textgen_corpus_ids(const sg_textgen_t *g)
{
    return g->n;
}

ssize_t sg_textgen_count(sg_textgen_t *g, const char *text, size_t len)
{
    if (!g->tok)
        return (ssize_t)sg_count_words(text, len);
    return sg_tok_count(g->enc, text, len);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* head + (separator) + window(off, m), malloc'd and NUL-terminated. */
static int render(sg_textgen_t *g, const char *head, size_t head_len, size_t off, size_t m, char **out, size_t *out_len)
{
    *out = NULL;
    if (!g->tok) {
        size_t len = head_len + 1;
        for (size_t i = 0; i < m; i++)
            len += strlen(g->words[(off + i) % g->n]) + 1;
        char *s = malloc(len + 1);
        if (!s)
            return SG_ENOMEM;
        memcpy(s, head, head_len);
        size_t k = head_len;
        for (size_t i = 0; i < m; i++) {
            if (k > 0 && !is_space(s[k - 1]))
                s[k++] = ' ';
            const char *w = g->words[(off + i) % g->n];
            size_t wl = strlen(w);
            memcpy(s + k, w, wl);
            k += wl;
        }
        s[k] = '\0';
        *out = s;
        *out_len = k;
        return 0;
    }
    if (m > g->win_cap) {
        uint32_t *w = realloc(g->win, m * sizeof *w);
        if (!w)
            return SG_ENOMEM;
        g->win = w;
        g->win_cap = m;
    }
    for (size_t i = 0; i < m; i++)
        g->win[i] = g->ids[(off + i) % g->n];
    ssize_t dl = sg_tok_decode(g->tok, g->win, m, NULL, 0);
    if (dl < 0)
        return (int)dl;
    char *s = malloc(head_len + 1 + (size_t)dl + 1);
    if (!s)
        return SG_ENOMEM;
    memcpy(s, head, head_len);
    size_t k = head_len;
    ssize_t got = sg_tok_decode(g->tok, g->win, m, s + k + 1, (size_t)dl);
    if (got != dl) {
        free(s);
        return got < 0 ? (int)got : SG_EINVAL;
    }
    /* keep words apart where the decoder dropped the window's leading space (SentencePiece style) */
    bool sep = head_len > 0 && dl > 0 && !is_space(head[head_len - 1]) && !is_space(s[k + 1]);
    if (sep)
        s[k++] = ' ';
    else
        memmove(s + k, s + k + 1, (size_t)dl);
    k += (size_t)dl;
    s[k] = '\0';
    *out = s;
    *out_len = k;
    return 0;
}

int sg_textgen_fit(sg_textgen_t *g, const char *head, size_t head_len, uint64_t offset, uint32_t target, char **out,
                   size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!head)
        head_len = 0;
    ssize_t hc = head_len ? sg_textgen_count(g, head, head_len) : 0;
    if (hc < 0)
        return (int)hc;
    if (target == 0 || (uint64_t)hc > target)
        return SG_EINVAL;
    if ((uint64_t)hc == target) {
        char *s = malloc(head_len + 1);
        if (!s)
            return SG_ENOMEM;
        memcpy(s, head, head_len);
        s[head_len] = '\0';
        *out = s;
        *out_len = head_len;
        return 0;
    }
    for (uint32_t attempt = 0; attempt < FIT_OFFSETS; attempt++) {
        size_t off = (size_t)((offset + (uint64_t)attempt * OFFSET_STEP) % g->n);
        int64_t m = (int64_t)target - hc;
        int64_t tried[FIT_STEPS];
        for (int step = 0; step < FIT_STEPS; step++) {
            bool seen = false;
            for (int j = 0; j < step; j++)
                seen |= tried[j] == m;
            if (seen)
                break; /* oscillating around the target: no window length fits at this offset */
            tried[step] = m;
            char *s = NULL;
            size_t len = 0;
            int rc = render(g, head, head_len, off, (size_t)m, &s, &len);
            if (rc < 0)
                return rc;
            ssize_t c = sg_textgen_count(g, s, len);
            if (c < 0) {
                free(s);
                return (int)c;
            }
            if ((uint64_t)c == target) {
                *out = s;
                *out_len = len;
                return 0;
            }
            free(s);
            m += (int64_t)target - c;
            if (m < 1)
                m = 1;
        }
    }
    return SG_EABORT;
}
