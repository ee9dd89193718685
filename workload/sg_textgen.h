/*
 * Text of an exact token count: windows of the built-in corpus (corpus.c), tokenized once with the run's
 * tokenizer, decoded, re-counted and adjusted until the tokenizer counts exactly the length asked for.
 * Without a tokenizer the same interface counts words: the "corpus" is then a fixed sequence of surge's
 * one-token vocabulary words (sg_vocab_word), joined by single spaces.
 *
 * Why adjusting is needed: a window of N ids decodes to text that need not encode back to N ids (a merge can
 * form across the window's edges, or a window can start inside a word). The fit re-encodes the whole text it
 * returns, so the count it promises is the tokenizer's own count of that text, never an estimate.
 */
#ifndef SG_TEXTGEN_H
#define SG_TEXTGEN_H

#include "sg_common.h"
#include "sg_tokenizer.h"

typedef struct sg_textgen sg_textgen_t;

/* Tokenize the corpus with tok (NULL: count words). On failure returns a negative SG_E* code and writes a message into
 * err. */
SG_WUR int sg_textgen_new(const sg_tokenizer_t *tok, sg_textgen_t **out, char *err, size_t errlen);
void sg_textgen_free(sg_textgen_t *g);

/* Corpus length in ids: windows at distinct offsets below it are distinct texts. */
size_t sg_textgen_corpus_ids(const sg_textgen_t *g);

/*
 * head (head_len bytes, may be empty) followed by text cut from the corpus starting at id `offset` (taken modulo
 * the corpus length; windows wrap around), such that the tokenizer counts exactly `target` ids in the whole
 * result. Deterministic for (head, offset, target). The result is malloc'd and NUL-terminated; *out_len gets its
 * length. Returns 0; SG_EINVAL when head alone already counts more than target (or target is 0);
 * SG_EABORT when no fit was found (every fallback is tried first; not seen with the shipped corpus); SG_ENOMEM.
 */
SG_WUR int sg_textgen_fit(sg_textgen_t *g, const char *head, size_t head_len, uint64_t offset, uint32_t target,
                          char **out, size_t *out_len);

/* The tokenizer's count of text (the same count sg_textgen_fit promises); negative SG_E* on error. */
SG_WUR ssize_t sg_textgen_count(sg_textgen_t *g, const char *text, size_t len);

/* The built-in corpus (corpus.c): ASCII prose, static storage. */
const char *sg_corpus_text(size_t *len);

#endif
