/*
 * tiktoken rank files: one "base64-of-bytes rank" line per token. The file does not say which regex and which
 * special tokens go with it; the encoding's name does, so it is taken from the file name (cl100k_base.tiktoken).
 */
#include "tok_internal.h"

#include <stdlib.h>

typedef struct {
    const char *text;
    uint32_t id;
} special_t;

static const special_t r50k_special[] = {{"<|endoftext|>", 50256}};
static const special_t p50k_special[] = {{"<|endoftext|>", 50256}};
static const special_t cl100k_special[] = {
    {"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258}, {"<|fim_middle|>", 100259}, {"<|fim_suffix|>", 100260},
    {"<|im_start|>", 100264},  {"<|im_end|>", 100265},     {"<|im_sep|>", 100266},     {"<|endofprompt|>", 100276},
};
static const special_t o200k_special[] = {
    {"<|endoftext|>", 199999}, {"<|fim_prefix|>", 200000}, {"<|fim_middle|>", 200001}, {"<|fim_suffix|>", 200002},
    {"<|im_start|>", 200003},  {"<|im_end|>", 200004},     {"<|im_sep|>", 200005},     {"<|endofprompt|>", 200006},
};

/* The regexes tiktoken ships for these encodings (possessive quantifiers as in its own patterns). */
#define R50K_PAT "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s"
#define CL100K_PAT                                                                                                     \
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|"      \
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s"
#define O200K_PAT                                                                                                      \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'"  \
    "ll|'d)?"                                                                                                          \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'" \
    "ll|'d)?"                                                                                                          \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct {
    const char *name;
    const char *pattern;
    const special_t *special;
    size_t n_special;
    uint32_t n_ranks; /* the ranks the published file holds */
} encoding_t;

static const encoding_t encodings[] = {
    {"r50k_base", R50K_PAT, r50k_special, SG_ARRAY_LEN(r50k_special), 50256},
    {"p50k_base", R50K_PAT, p50k_special, SG_ARRAY_LEN(p50k_special), 50280},
    {"cl100k_base", CL100K_PAT, cl100k_special, SG_ARRAY_LEN(cl100k_special), 100256},
    {"o200k_base", O200K_PAT, o200k_special, SG_ARRAY_LEN(o200k_special), 199998},
};

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with padding; returns the decoded length or -1. */
ssize_t sg_tok_b64decode(const char *s, size_t n, unsigned char *out, size_t cap)
{
    if (n == 0 || n % 4 != 0)
        return -1;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = b64val(c)) < 0) {
                return -1;
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        unsigned char b[3] = {(unsigned char)(x >> 16), (unsigned char)(x >> 8), (unsigned char)x};
        for (int k = 0; k < 3 - pad; k++) {
            if (w == cap)
                return -1;
            out[w++] = b[k];
        }
    }
    return (ssize_t)w;
}

int sg_tok_load_tiktoken(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err, size_t errlen)
{
    const char *file = sg_tok_basename(path);
    const encoding_t *enc = NULL;
    for (size_t i = 0; i < SG_ARRAY_LEN(encodings); i++) {
        size_t nl = strlen(encodings[i].name);
        if (strncmp(file, encodings[i].name, nl) == 0 && strcmp(file + nl, ".tiktoken") == 0)
            enc = &encodings[i];
    }
    if (!enc)
        return sg_tok_fail(err, errlen, SG_EINVAL,
                           "%s: unknown tiktoken encoding (the file name says which: r50k_base.tiktoken, "
                           "p50k_base.tiktoken, cl100k_base.tiktoken or o200k_base.tiktoken)",
                           file);

    sg_tokenizer_t *tok = sg_tok_new(SG_TOK_BYTELEVEL);
    if (!tok)
        return SG_ENOMEM;
    int rc = sg_tok_reserve_ids(tok, enc->n_ranks);
    uint32_t max_rank = 0;
    size_t lineno = 0;
    const char *p = data, *end = data + len;
    unsigned char buf[1024];
    while (rc == 0 && p < end) {
        lineno++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        if (le == p) { /* blank line */
            p = next;
            continue;
        }
        const char *sp = memchr(p, ' ', (size_t)(le - p));
        if (!sp) {
            rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s line %zu: expected \"BASE64 RANK\"", file, lineno);
            break;
        }
        ssize_t bl = sg_tok_b64decode(p, (size_t)(sp - p), buf, sizeof buf);
        if (bl < 0) {
            rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s line %zu: bad base64", file, lineno);
            break;
        }
        uint64_t rank = 0;
        const char *q = sp + 1;
        if (q == le)
            rc = SG_EINVAL;
        for (; q < le && rc == 0; q++) {
            if (*q < '0' || *q > '9' || rank > UINT32_MAX / 16)
                rc = SG_EINVAL;
            else
                rank = rank * 10 + (uint64_t)(*q - '0');
        }
        if (rc < 0 || rank >= SG_TOK_MAX_IDS) {
            rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s line %zu: bad rank", file, lineno);
            break;
        }
        rc = sg_tok_set_bytes(tok, (uint32_t)rank, (const char *)buf, (size_t)bl);
        if (rc == SG_EINVAL) {
            rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s line %zu: rank %llu given twice", file, lineno,
                             (unsigned long long)rank);
            break;
        }
        if (rank > max_rank)
            max_rank = (uint32_t)rank;
        p = next;
    }
    if (rc == 0 && lineno == 0)
        rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s: empty file", file);
    uint32_t n_keyed = max_rank + 1;
    uint32_t dup = SG_TOK_NONE;
    if (rc == 0)
        rc = sg_tok_build_vmap(tok, n_keyed, &dup);
    if (rc == 0 && dup != SG_TOK_NONE)
        rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s: rank %u has the same bytes as a lower rank", file, dup);
    for (int b = 0; rc == 0 && b < 256; b++) {
        char c = (char)b;
        tok->byte_id[b] = sg_tok_lookup(tok, &c, 1);
        if (tok->byte_id[b] == SG_TOK_NONE)
            rc = sg_tok_fail(err, errlen, SG_EINVAL, "%s: no rank for the single byte 0x%02X", file, b);
    }
    if (rc == 0)
        rc = sg_tok_pairs_from_ranks(tok, n_keyed);
    for (size_t i = 0; rc == 0 && i < enc->n_special; i++) {
        const special_t *s = &enc->special[i];
        if (s->id < tok->n_ids && tok->has[s->id])
            continue; /* a rank file that already holds it */
        rc = sg_tok_set_bytes(tok, s->id, s->text, strlen(s->text));
    }
    if (rc == 0)
        rc = sg_tok_set_regex(tok, enc->pattern, err, errlen);
    if (rc == 0) {
        tok->direct = true;
        size_t dl = strlen(enc->name) + strlen(path) + 32;
        tok->desc = malloc(dl);
        if (!tok->desc)
            rc = SG_ENOMEM;
        else
            snprintf(tok->desc, dl, "%s (tiktoken, %s)", enc->name, path);
    }
    if (rc < 0) {
        if (rc == SG_ENOMEM)
            sg_tok_fail(err, errlen, rc, "%s: out of memory", file);
        sg_tok_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}
