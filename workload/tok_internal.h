/*
 * Private to the tokenizer files (workload/tok_*.c): the loaded model every loader fills in, and the pieces
 * the loaders share. One model serves both file kinds:
 *
 *   - every id has its decoded bytes (what decode writes for it) in one blob;
 *   - a hash map from a token's bytes to its id (byte-level files: the raw bytes; SentencePiece-style files:
 *     the token's own UTF-8 text, "\u2581" included), used for the first symbols and the direct lookup;
 *   - a hash map from an adjacent pair of ids to (rank, merged id): HF merges in file order, or for tiktoken
 *     every split of a token into two tokens, ranked by the token's own rank. Both algorithms then merge the
 *     lowest-ranked pair first, leftmost on ties.
 */
#ifndef SG_TOK_INTERNAL_H
#define SG_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include "sg_tokenizer.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SG_TOK_NONE UINT32_MAX
#define SG_TOK_MAX_IDS (1u << 24) /* ids past this are refused as malformed */

enum sg_tok_kind {
    SG_TOK_BYTELEVEL, /* tiktoken, HF ByteLevel: initial symbols are bytes */
    SG_TOK_SPM,       /* HF BPE over characters with "\u2581" for spaces and <0xNN> byte fallback */
};

/* A token's key is in the slot itself (where its bytes are, how many): a lookup reads the slot and the bytes, and
 * no per-id array, which matters for loading a 262k vocabulary's half a million merges. */
typedef struct {
    uint32_t hash;
    uint32_t id;
    uint32_t koff, klen;
} sg_tok_vslot_t;

typedef struct {
    uint64_t key; /* left << 32 | right; UINT64_MAX: empty */
    uint32_t rank;
    uint32_t merged;
} sg_tok_pslot_t;

/* An added token (HF added_tokens), cut out of the text before anything else. */
typedef struct {
    uint32_t off, len; /* content bytes in tok->atext */
    uint32_t id;
    bool lstrip, rstrip, single_word, normalized;
} sg_tok_added_t;

enum sg_tok_model {
    SG_TOK_BPE,
    SG_TOK_UNIGRAM,   /* SentencePiece unigram: the best-scoring split (Viterbi) */
    SG_TOK_WORDPIECE, /* BERT: greedy longest match, "##" before a word's later pieces */
};

/* Normalizers (HF normalizers), each a function of the whole piece of text. */
enum sg_tok_norm_type {
    SG_NORM_NFC,
    SG_NORM_NFD,
    SG_NORM_NFKC,
    SG_NORM_NFKD,
    SG_NORM_LOWERCASE,
    SG_NORM_STRIP,
    SG_NORM_STRIP_ACCENTS,
    SG_NORM_REPLACE,
    SG_NORM_PREPEND,
    SG_NORM_PRECOMPILED,
    SG_NORM_BERT,
};

typedef struct {
    enum sg_tok_norm_type type;
    bool left, right;                                   /* Strip */
    bool clean_text, chinese, strip_accents, lowercase; /* BertNormalizer */
    char *pattern, *content;                            /* Replace (String pattern), Prepend (content) */
    size_t pattern_len, content_len;
    pcre2_code *re; /* Replace with a Regex pattern */
    uint32_t *trie; /* Precompiled: darts-clone double array */
    uint32_t trie_units;
    char *blob; /* Precompiled: NUL-terminated replacements the trie's values point into */
    uint32_t blob_len;
} sg_tok_norm_t;

/* How a split keeps what its pattern matched (HF SplitDelimiterBehavior). */
enum sg_tok_behavior {
    SG_SPLIT_REMOVED,
    SG_SPLIT_ISOLATED,
    SG_SPLIT_MERGED_PREV,
    SG_SPLIT_MERGED_NEXT,
    SG_SPLIT_CONTIGUOUS,
};

/* Pre-tokenizers. Digits, Punctuation, Whitespace, WhitespaceSplit and BertPreTokenizer load as Splits. */
enum sg_tok_pre_type {
    SG_PRE_SPLIT,     /* pattern (re, or the literal str) with a behaviour, invert */
    SG_PRE_METASPACE, /* spaces -> replacement, prepend it, split before each */
    SG_PRE_BYTELEVEL, /* prefix space; the byte alphabet itself is the model's */
};

typedef struct {
    enum sg_tok_pre_type type;
    enum sg_tok_behavior behavior;
    bool invert;
    pcre2_code *re; /* NULL: str is the pattern */
    bool jit;
    char *str; /* String pattern (Split), replacement (Metaspace) */
    size_t str_len;
    int prepend;       /* Metaspace: 0 never, 1 always, 2 first (only at the start of the text) */
    bool split;        /* Metaspace */
    bool prefix_space; /* ByteLevel */
} sg_tok_pre_t;

#define SG_TOK_MAX_STAGES 16 /* normalizers or pre-tokenizers, Sequences flattened */

struct sg_tokenizer {
    char *desc;
    enum sg_tok_kind kind;
    uint32_t n_ids;

    /* decode: id -> bytes (blen[id] bytes at blob + off[id]); has[id] false for ids no token uses */
    char *blob;
    size_t blob_len, blob_cap;
    uint32_t *off, *blen;
    uint8_t *has;
    uint32_t ids_cap;

    /* encode lookups: token bytes -> id; the key bytes of id live in kblob (for byte-level files the decoded
     * bytes, so kblob == blob) */
    char *kblob; /* NULL: the keys are the decoded bytes */
    size_t kblob_len, kblob_cap;
    uint32_t *koff, *klen;
    sg_tok_vslot_t *vmap;
    uint32_t vmap_mask;
    sg_tok_pslot_t *pmap;
    uint32_t pmap_mask, pmap_count;
    uint32_t byte_id[256]; /* byte-level: the id of each single byte; SPM: the id of <0xNN> (or NONE) */

    bool direct; /* a pre-token found whole in the vocabulary is one id (tiktoken, ignore_merges) */
    enum sg_tok_model model;
    sg_tok_norm_t *norms; /* normalizers, applied in order to each piece of text between added tokens */
    uint32_t n_norms;
    sg_tok_pre_t *pres; /* pre-tokenizers, each splitting every piece the one before made */
    uint32_t n_pres;
    bool spm_cut;              /* BPE over characters: cut pieces before a "\u2581" (see spm_keep) */
    uint8_t spm_keep[256 / 8]; /* ...unless the byte before it ends "X" of a token holding "X\u2581" */
    bool byte_fallback;
    bool fuse_unk;
    uint32_t unk_id; /* SG_TOK_NONE when the file has none */

    /* Unigram: the score of each id; unk_score for a character no token covers */
    double *scores;
    double unk_score;
    uint32_t max_key_len; /* Unigram, WordPiece: the longest token, in bytes */
    /* WordPiece */
    char *wp_prefix; /* "##" */
    size_t wp_prefix_len;
    uint32_t wp_max_chars;

    sg_tok_added_t *added;
    uint32_t n_added;
    char *atext;
    uint32_t *abucket;       /* 65536 heads by the first two bytes (index into aorder), SG_TOK_NONE: none */
    uint32_t *anext;         /* chain, longest first */
    uint32_t aone[256];      /* one-byte added tokens */
    uint8_t afirst[256 / 8]; /* bytes an added token may start with (after any lstrip whitespace) */
    bool any_lstrip;
};

/* Bytes hash used by both maps and the encoder's cache. */
static inline uint64_t sg_tok_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (len * 0xFF51AFD7ED558CCDULL);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xC2B2AE3D27D4EB4FULL;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, len);
    h = (h ^ w ^ ((uint64_t)len << 56)) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 32;
    return h;
}

static inline uint32_t sg_tok_pair_hash(uint64_t key)
{
    key *= 0x9E3779B97F4A7C15ULL;
    return (uint32_t)(key >> 32);
}

/* Building a model (tok_model.c). All return 0 or SG_ENOMEM. */
sg_tokenizer_t *sg_tok_new(enum sg_tok_kind kind);
/* Make room for ids [0, n). */
int sg_tok_reserve_ids(sg_tokenizer_t *tok, uint32_t n);
/* Decoded bytes of id (kept for decode). Returns SG_EINVAL when id already has some. */
int sg_tok_set_bytes(sg_tokenizer_t *tok, uint32_t id, const char *bytes, size_t len);
/* SPM files: the lookup key of id differs from its decoded bytes. */
int sg_tok_set_key(sg_tokenizer_t *tok, uint32_t id, const char *key, size_t len);
/* After all ids are set: build the bytes -> id map from the ids in [0, n_keyed). Duplicate keys keep the lowest
 * id and are reported through *dup (the id left out), SG_TOK_NONE when there were none. */
int sg_tok_build_vmap(sg_tokenizer_t *tok, uint32_t n_keyed, uint32_t *dup);
/* The id of the token whose key is key (SG_TOK_NONE: none); h64 is sg_tok_hash(key, len). Inline: the encoder's
 * hot path. */
static inline uint32_t sg_tok_lookup_hashed(const sg_tokenizer_t *tok, const char *key, size_t len, uint64_t h64)
{
    if (!tok->vmap)
        return SG_TOK_NONE;
    uint32_t h = (uint32_t)(h64 >> 32) | 1;
    const char *keys = tok->kblob ? tok->kblob : tok->blob;
    for (uint32_t i = (uint32_t)h64 & tok->vmap_mask;; i = (i + 1) & tok->vmap_mask) {
        const sg_tok_vslot_t *s = &tok->vmap[i];
        if (s->hash == 0)
            return SG_TOK_NONE;
        if (s->hash == h && s->klen == len && memcmp(keys + s->koff, key, len) == 0)
            return s->id;
    }
}

static inline uint32_t sg_tok_lookup(const sg_tokenizer_t *tok, const char *key, size_t len)
{
    return sg_tok_lookup_hashed(tok, key, len, sg_tok_hash(key, len));
}
/* Touch the pair map's slot for (left, right) ahead of an insert or lookup. */
void sg_tok_prefetch_pair(const sg_tokenizer_t *tok, uint32_t left, uint32_t right);
/* Pair map; sg_tok_add_pair keeps the first (lowest) rank of a pair given twice. */
int sg_tok_pairs_init(sg_tokenizer_t *tok, size_t expected);
int sg_tok_add_pair(sg_tokenizer_t *tok, uint32_t left, uint32_t right, uint32_t rank, uint32_t merged);
/* tiktoken: every split of every keyed token into two keyed tokens, ranked by the token's id. */
int sg_tok_pairs_from_ranks(sg_tokenizer_t *tok, uint32_t n_keyed);
/* Added tokens: copy the list in and build the matcher. */
int sg_tok_set_added(sg_tokenizer_t *tok, const sg_tok_added_t *added, uint32_t n, const char *text);
/* Compile a regex (PCRE2, UTF + UCP, JIT). Writes a message into err on failure. */
int sg_tok_compile(const char *pattern, size_t len, pcre2_code **out, char *err, size_t errlen);
/* Append a pre-tokenizer: a Split of pattern with behaviour Isolated (tiktoken's regex). */
int sg_tok_set_regex(sg_tokenizer_t *tok, const char *pattern, char *err, size_t errlen);
/* A stage's owned memory. */
void sg_tok_norm_free(sg_tok_norm_t *n);
void sg_tok_pre_free(sg_tok_pre_t *p);

/* Normalizing (tok_norm.c): scratch one encoder owns. */
typedef struct sg_tok_nscratch sg_tok_nscratch_t;
sg_tok_nscratch_t *sg_tok_nscratch_new(void);
void sg_tok_nscratch_free(sg_tok_nscratch_t *ns);
/* Run tok's normalizers over *s (len bytes); the result may point into ns, valid until its next call. Text that
 * is not valid UTF-8 goes through the byte-wise normalizers only (the references take valid text only). */
int sg_tok_normalize(const sg_tokenizer_t *tok, sg_tok_nscratch_t *ns, const char **s, size_t *len);
/* Precompiled: the longest key of the charsmap at the start of p; repl and rlen get its replacement. 0: none. */
size_t sg_tok_charsmap_match(const sg_tok_norm_t *n, const unsigned char *p, size_t len, const char **repl,
                             size_t *rlen);

/* The Unigram and WordPiece models (tok_unigram.c), on one pre-token; ids are appended to *ids (n used, cap
 * allocated, grown with realloc). */
typedef struct sg_tok_uscratch sg_tok_uscratch_t;
sg_tok_uscratch_t *sg_tok_uscratch_new(void);
void sg_tok_uscratch_free(sg_tok_uscratch_t *us);
int sg_tok_unigram(const sg_tokenizer_t *tok, sg_tok_uscratch_t *us, const char *p, size_t len, uint32_t **ids,
                   size_t *n, size_t *cap);
int sg_tok_wordpiece(const sg_tokenizer_t *tok, sg_tok_uscratch_t *us, const char *p, size_t len, uint32_t **ids,
                     size_t *n, size_t *cap);

/* Loaders: path is the file; name is what errors call it. */
int sg_tok_load_tiktoken(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err,
                         size_t errlen);
int sg_tok_load_hf(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err, size_t errlen);

/* Write "fmt" into err and return code (one line). */
__attribute__((format(printf, 4, 5))) int sg_tok_fail(char *err, size_t errlen, int code, const char *fmt, ...);

/* Standard base64 with padding into out (cap bytes); returns the decoded length or -1. */
ssize_t sg_tok_b64decode(const char *s, size_t n, unsigned char *out, size_t cap);

/* The file name part of path. */
const char *sg_tok_basename(const char *path);

#endif
