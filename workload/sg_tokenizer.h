/*
 * Tokenizers: exact token ids for the model families users serve, written in C.
 *
 * Two file kinds load into one model:
 *   - Hugging Face tokenizer.json: its whole pipeline as HF tokenizers runs it (normalizers, pre-tokenizers,
 *     then a BPE, Unigram or WordPiece model): byte-level BPE (GPT-2, Llama 3, Qwen, GPT-4o, DeepSeek V3, Claude),
 *     SentencePiece-style BPE with byte fallback (Llama 2, Gemma), Unigram (T5, XLM-R), WordPiece (BERT and its
 *     embedding models); added and special tokens are cut out of the text first, as the reference does. A
 *     component it does not know is refused at load with its path in the JSON.
 *   - tiktoken rank files (*.tiktoken): the regex and special tokens follow from the encoding name in the file
 *     name (r50k_base, p50k_base, cl100k_base, o200k_base).
 *
 * A loaded sg_tokenizer_t is read-only and may be shared by any number of threads. Encoding needs scratch space
 * and a cache, which live in an sg_tok_enc_t: one per thread.
 */
#ifndef SG_TOKENIZER_H
#define SG_TOKENIZER_H

#include "sg_common.h"

#include <sys/types.h>

typedef struct sg_tokenizer sg_tokenizer_t;
typedef struct sg_tok_enc sg_tok_enc_t;

/*
 * Load a tokenizer from spec, which is one of:
 *   - a file: tokenizer.json (any name ending in .json) or a tiktoken rank file (name ending in .tiktoken; the
 *     encoding is named by the file's base name, e.g. cl100k_base.tiktoken);
 *   - a directory holding tokenizer.json;
 *   - a Hugging Face model id ("ORG/NAME") found in the local Hugging Face cache:
 *     $HF_HOME/hub (default ~/.cache/huggingface/hub)/models--ORG--NAME/snapshots/<any>/tokenizer.json.
 * On failure returns a negative SG_E* code and writes one line into err naming the file and, where it applies,
 * the field or line that is wrong. Never prints.
 */
SG_WUR int sg_tok_load(const char *spec, sg_tokenizer_t **out, char *err, size_t errlen);
void sg_tok_free(sg_tokenizer_t *tok);

/* One line for humans and the run summary, e.g. "cl100k_base (tiktoken, /path/cl100k_base.tiktoken)". */
const char *sg_tok_describe(const sg_tokenizer_t *tok);
/* Number of ids (highest id + 1), special and added tokens included. */
uint32_t sg_tok_vocab_size(const sg_tokenizer_t *tok);

/* Per-thread encoder state. NULL on OOM. */
SG_WUR sg_tok_enc_t *sg_tok_enc_new(const sg_tokenizer_t *tok);
void sg_tok_enc_free(sg_tok_enc_t *enc);

/*
 * Encode len bytes of text (need not be NUL-terminated) as the reference does with no special tokens added
 * (no BOS/EOS; HF: add_special_tokens=False, so added tokens written in the text still match; tiktoken: special
 * tokens in the text are encoded as ordinary text). *ids points into enc and stays valid until enc's next call.
 * Returns the number of ids, or a negative SG_E* code (SG_ENOMEM).
 */
SG_WUR ssize_t sg_tok_encode(sg_tok_enc_t *enc, const char *text, size_t len, const uint32_t **ids);
/* The number of ids sg_tok_encode would return; may be faster (no id buffer). */
SG_WUR ssize_t sg_tok_count(sg_tok_enc_t *enc, const char *text, size_t len);

/*
 * Decode ids as the reference does with special tokens kept and no clean-up: byte-level files give the raw
 * bytes; SentencePiece-style files turn "\u2581" into a space and <0xNN> into the byte, and drop one leading
 * space, as their Metaspace or Strip decoder does (Unigram files alike); WordPiece files join a "##" piece to
 * the one before and put a space before the others, dropping the first. Writes at most cap bytes and returns the full
 * length, which may exceed cap (call with cap 0 to measure); SG_EINVAL for an id out of range or one that no token uses
 * (a gap in the ids, e.g. cl100k_base's 100256).
 */
SG_WUR ssize_t sg_tok_decode(const sg_tokenizer_t *tok, const uint32_t *ids, size_t n, char *out, size_t cap);

/* `surge tokenize ...`: returns the process exit status. */
int sg_tokenize_main(int argc, char **argv);

#endif
