/*
 * The workload: what each request carries. Built once before the run into a read-only payload table that all
 * workers share: every entry is a complete, pre-rendered HTTP/1.1 request (head + body), so sending a request
 * is one send of bytes that already exist.
 */
#ifndef SG_WORKLOAD_H
#define SG_WORKLOAD_H

#include "sg_common.h"
#include "sg_media.h"
#include "sg_openai.h"

#include <stdio.h>

typedef struct {
    char *bytes; /* whole HTTP request, len bytes, not NUL-terminated; owned by the table */
    size_t len;
    uint32_t isl;        /* prompt tokens, client estimate */
    uint32_t max_tokens; /* 0 when not asked */
    uint32_t model;      /* index into the table's model_names */
    uint32_t inputs;     /* embeddings: inputs in the body; rankings: passages; 0 otherwise and for raw bodies */
    bool streaming;      /* the body asks for a stream (--streaming, or a raw body's own "stream": true) */
    /* --cache-bust first_turn_prefix: the slot at the start of the prompt that each request fills with its own
     * words (sg_payload_uniq): bytes [uniq_off, uniq_off + uniq_len) of `bytes`; uniq_len 0 when there is none */
    uint32_t uniq_off;
    uint16_t uniq_len;
    uint8_t uniq_words;      /* words in the slot, each one token: ISL counts them */
    uint16_t images, audios; /* image and audio parts in the body (sg_media.h) */
    uint32_t media_bytes;    /* their text in the body: data URLs, base64, URLs (bytes as sent) */
} sg_payload_t;

/* The most bytes a payload's per-request slot takes (SG_UNIQ_WORDS_MAX words of at most 8 letters, spaces). */
#define SG_UNIQ_WORDS_MAX 8
#define SG_UNIQ_MAX 72

/*
 * The words a per-request slot is spelled with: n words of `width` letters each (words[i * width ...]), every
 * one a single token (with and without a leading space) under the run's tokenizer, or a word without one.
 */
typedef struct {
    char *words;
    uint32_t n;
    uint32_t width;
    uint32_t digits; /* words in a full slot: n ^ digits >= 10^10 (a prompt shorter than that has fewer) */
} sg_uniq_alpha_t;

/*
 * Entries times variants: items[entry * n_variants + variant]. An entry is one prompt (or one request body of an
 * input file); its variants are the same request for each -m model, so that the model can be chosen per request
 * (sg_payload_pick) whatever the number of entries. Raw request bodies carry their own model: one variant.
 */
typedef struct {
    sg_payload_t *items;
    size_t n; /* n_entries * n_variants */
    size_t n_entries;
    uint32_t n_variants;
    /* The names sg_payload_t.model indexes: the -m models in order, then the distinct models that raw request
     * bodies name and -m does not (a raw body is sent as written, so its own model is the one it asks for). */
    char **model_names;
    size_t n_model_names;
    sg_uniq_alpha_t uniq; /* --cache-bust first_turn_prefix: the slot's words; n 0 when the table has no slots */
} sg_payload_table_t;

/*
 * The slot of p for request `counter` (its run-wide id): p->uniq_words words of the table's alphabet spelling
 * counter in base uniq.n, least significant digit first (so consecutive requests differ at their first word),
 * separated by single spaces: exactly p->uniq_len bytes into out (SG_UNIQ_MAX at least). Distinct for counters
 * below uniq.n ^ uniq_words. Nothing allocated: the worker calls it per request.
 */
void sg_payload_uniq(const sg_payload_table_t *t, const sg_payload_t *p, uint64_t counter, char *out);

/*
 * The body of a rendered request: what follows its head (the bytes after the blank line), len bytes in *len.
 * For OpenAI requests the JSON body as sent; for gRPC calls the gRPC frame. NULL when p holds no head.
 */
const char *sg_payload_body(const sg_payload_t *p, size_t *len);

/*
 * The payload of request `id` (0, 1, 2, ... in issue order over all workers): entry id % n_entries, in order;
 * variant (model) id % n_variants with model_strategy 0 (round robin), or a uniform draw that depends only on
 * (seed, id) with 1 (random). *index gets the item's index.
 */
const sg_payload_t *sg_payload_pick(const sg_payload_table_t *t, uint64_t id, int model_strategy, uint64_t seed,
                                    uint32_t *index);

/* The Messages API requires max_tokens: without --output-tokens-mean surge asks for this many. */
#define SG_MESSAGES_MAX_TOKENS 4096

/* Synthetic rankings drawn part by part (AIPerf's --rankings-*): passages per query, and the tokens (words
 * without a tokenizer) of the query and of each passage, each normal around its mean, at least 1. */
typedef struct {
    bool on;
    uint32_t passages_mean, passages_stddev;
    uint32_t query_mean, query_stddev;
    uint32_t passage_mean, passage_stddev;
    bool passages_stddev_given, query_stddev_given, passage_stddev_given; /* (the command line's) */
} sg_rankings_synth_t;

typedef struct {
    /* request target */
    const char *host_header;
    const char *path;
    const char *const *headers; /* NULL-terminated, may be NULL */
    /* body */
    sg_oai_kind_t kind;
    uint32_t batch_size;          /* embeddings: inputs per request; rankings: passages per query (0 or 1: one) */
    sg_rankings_synth_t rankings; /* rankings without an input file: drawn part by part when on */
    const char *const *models;
    size_t n_models;
    int model_strategy; /* 0 round robin, 1 random */
    bool streaming;
    const char *extra_inputs_json; /* JSON object text, merged last (overrides ours) */
    /* --tools (OpenAI chat's shape, checked: sg_tools.h), or NULL; an input line's own tools replace them */
    const struct json_t *tools;
    const char *tool_choice; /* --tool-choice, or NULL: none sent (the server's default, auto) */
    /* prompts */
    uint32_t num_prompts;
    uint32_t isl_mean, isl_stddev;
    int32_t osl_mean; /* -1: no max_tokens */
    uint32_t osl_stddev;
    uint64_t seed;
    const struct sg_tokenizer *tok; /* --tokenizer, or NULL: prompts are then counted in words */
    /* shared prefixes (synthetic prompts): num_prefix distinct prefixes of prefix_len tokens, 0 for none */
    uint32_t prefix_len, num_prefix;
    /* --input-file, or NULL for synthetic prompts */
    const struct sg_input *input;
    const char *input_name;
    uint32_t block_size; /* tokens per hash_ids block of a trace */
    /* --service-kind triton: KServe v2 gRPC calls instead of OpenAI bodies (kind and path are then unused) */
    bool grpc;
    int backend;              /* sg_kserve_backend_t */
    bool deterministic;       /* --output-tokens-mean-deterministic */
    const char *grpc_timeout; /* grpc-timeout value (sg_grpc_timeout_format), NULL for none */
    /* --cache-bust first_turn_prefix: every synthetic prompt starts with a slot of words that each request
     * fills with its own (sg_payload_uniq), inside its ISL. Only for synthetic single-prompt requests without
     * shared prefixes (sg_workload_build refuses the rest). */
    bool cache_bust;
    /* images and audio (sg_media.h): synthetic ones with this spec, NULL or nothing asked for: none (an input file
     * names its own). media_requests: requests the run will send (0: not known); with synthetic media and
     * num_prompts_given false the table grows past num_prompts towards it, within SG_MEDIA_POOL_BYTES, so that
     * media repeat as little as memory allows (docs/workloads.md) */
    const sg_media_spec_t *media;
    uint64_t media_requests;
    bool num_prompts_given;
} sg_workload_spec_t;

/* The most bytes a synthetic table with media is grown to hold (its media and prompts, estimated before drawing)
 * and the most entries, and the most media any table may hold once built. */
#define SG_MEDIA_POOL_BYTES (256ull << 20)
#define SG_MEDIA_POOL_ENTRIES 20000
#define SG_MEDIA_TABLE_MAX (4ull << 30)

/*
 * Build the table. Synthetic: num_prompts distinct prompts, each with its own ISL (normal around the mean, at
 * least 1) and max_tokens (normal around osl_mean, at least 1); with a tokenizer each prompt holds exactly its
 * ISL in tokens (text cut from the built-in corpus, see sg_textgen.h), without one ISL words of the built-in
 * vocabulary. With an input file: one entry per file entry, in file order (see sg_input.h). Deterministic for
 * a seed. On error writes a message into err (size errlen) and returns negative.
 */
SG_WUR int sg_workload_build(const sg_workload_spec_t *spec, sg_payload_table_t *out, char *err, size_t errlen);
/*
 * payload_grpc.c: one gRPC call for prompt (model p->model, p->max_tokens, 0 for none) rendered into p->bytes
 * in HTTP/1.1 form, for sg_h2_req_from_h1: "POST <method path> HTTP/1.1", Host, content-type application/grpc,
 * te: trailers, grpc-timeout, the -H headers (gRPC metadata), then the gRPC frame of a ModelInferRequest built
 * as GenAI-Perf builds it for spec->backend. extra is the --extra-inputs object (scalars only), or NULL.
 * Sets p->max_tokens to what the request asks (tensorrtllm's default when none was given).
 */
struct json_t;
SG_WUR int sg_payload_render_grpc(const sg_workload_spec_t *spec, const struct json_t *extra, const char *prompt,
                                  size_t prompt_len, sg_payload_t *p, char *err, size_t errlen);
void sg_workload_free(sg_payload_table_t *t);

/*
 * The summary's "media" object (JSON text, malloc'd) for a run that sent `sent` requests of table t (ids 0 ..
 * sent-1 take entries id % n_entries in turn, so the totals are exact): images, audios, media_bytes (totals),
 * images_per_request, audios_per_request, media_bytes_per_request (means), media_bytes_per_request_min/_max (over
 * the entries), media_share_of_request_bytes, distinct_media_sets (entries with media sent at least once),
 * sends_per_media_set, table_entries (entries with media). NULL when no entry carries media (or on OOM).
 */
char *sg_media_summary(const sg_payload_table_t *t, uint64_t sent);

/*
 * Synthetic text of exactly n words drawn from surge's built-in vocabulary: every word is a common lowercase
 * English word that BPE tokenizers of the GPT family encode as one token when preceded by a space, so n words
 * approximate n tokens (the ISL estimate until a real tokenizer is configured). Writes into a malloc'd string.
 */
struct sg_rng;
SG_WUR char *sg_synth_text(struct sg_rng *rng, uint32_t n_words);

/*
 * Prompt number `index` of a workload: n_words words like sg_synth_text, but the first ones (3, more only past
 * vocabulary^3 prompts; fewer when n_words is smaller) spell index in base sg_vocab_size(), least significant
 * digit first, so no two prompts of a table share even their first word group and a server's prefix cache
 * cannot shortcut them. The rest are random draws from rng. malloc'd; NULL on OOM.
 */
SG_WUR char *sg_synth_prompt(struct sg_rng *rng, uint32_t n_words, uint64_t index);

/* The built-in vocabulary: distinct lowercase ASCII words, static storage. */
size_t sg_vocab_size(void);
const char *sg_vocab_word(size_t i);

/* Count whitespace-separated words: the same estimate the mock server uses for usage.prompt_tokens. */
uint64_t sg_count_words(const char *s, size_t len);

/* Random numbers shared by the scheduler and the workload: splitmix64 seeding, xoshiro256** stream. */
typedef struct sg_rng {
    uint64_t s[4];
} sg_rng_t;
void sg_rng_seed(sg_rng_t *r, uint64_t seed, uint64_t stream);
uint64_t sg_rng_next(sg_rng_t *r);
double sg_rng_uniform(sg_rng_t *r);          /* (0, 1] never 0 */
double sg_rng_normal(sg_rng_t *r);           /* standard normal */
double sg_rng_exp(sg_rng_t *r, double rate); /* exponential with the given rate */

#endif
