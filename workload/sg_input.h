/*
 * Input files (--input-file): prompts, output lengths, request bodies or a timed trace, read before any
 * connection is made. Every error names the file, the line (JSON lines) or the element (JSON documents), and
 * the field, and shows what was there.
 *
 * Formats (--input-format names; detected when not given, see docs/workloads.md):
 *   genai_perf      JSON lines {"text_input": "...", optional "output_length" or "max_tokens": N}; optional media:
 *                   "image" or "images" (paths, http(s) or data URLs), "audio" or "audios" (paths, data URLs)
 *   llm_perf        JSON lines {"input": "...", optional "output": "reference answer" (its length) or N}
 *   sharegpt        a JSON array of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}
 *   perf_analyzer   a JSON document {"data": [{"payload": [{request body}, ...]}, ...]}
 *   raw_payload     JSON lines, each a whole request body
 *   mooncake_trace  JSON lines {"timestamp": ms, "input_length": N, "output_length": N, "hash_ids": [...]}
 *   multi_turn      JSON lines {"session_id": "...", "turns": [{"text": "...", "delay": ms}, ...]} (AIPerf's), or one
 *                   turn a line {"session_id": ..., "text": ...}; lines with the same session_id are one session
 */
#ifndef SG_INPUT_H
#define SG_INPUT_H

#include "sg_common.h"

typedef enum {
    SG_INPUT_AUTO = 0,
    SG_INPUT_GENAI_PERF,
    SG_INPUT_LLM_PERF,
    SG_INPUT_SHAREGPT,
    SG_INPUT_PERF_ANALYZER,
    SG_INPUT_RAW_PAYLOAD,
    SG_INPUT_MOONCAKE,
    SG_INPUT_MULTI_TURN,
} sg_input_format_t;

typedef struct {
    char *prompt; /* the prompt text (raw bodies: their messages' text, or the prompt), NULL for traces */
    size_t prompt_len;
    char *body; /* raw bodies (raw_payload, perf_analyzer): the request body to send, as written */
    size_t body_len;
    char *model; /* raw bodies: their "model", NULL when absent */
    bool stream; /* raw bodies: their "stream" is true (OpenAI's default, absent, is false) */
    char *reply; /* sharegpt, llm_perf: the reference reply, whose length is the output length */
    size_t reply_len;
    int64_t max_tokens; /* the output length the file gives; -1 when it gives none (or a reply to measure) */
    /* genai_perf lines with "texts": a batch of inputs (embeddings) ["a", "b"], or AIPerf's rankings
     * [{"name": "query", "contents": [q]}, {"name": "passages", "contents": [...]}] (prompt is then the query) */
    char **texts;
    size_t *text_lens;
    uint32_t n_texts;
    /* genai_perf lines: images and audio as the file names them (paths or URLs, not yet read): media[i] of
     * media_lens[i] bytes, media_kinds[i] an sg_media_kind_t (0 image, 1 audio); images first, in file order */
    char **media;
    size_t *media_lens;
    uint8_t *media_kinds;
    uint32_t n_media;
    /* mooncake_trace */
    int64_t t_ns; /* timestamp (mooncake_trace); a multi_turn turn's, or -1 when it has none */
    uint32_t input_length;
    uint64_t *hash_ids;
    size_t n_hash_ids;
    /* multi_turn: entries are turns, grouped by session (in the order sessions first appear), turns in file order */
    uint32_t session; /* 0-based index of its session */
    int64_t delay_ms; /* wait after the session's previous turn ended; -1 when the file gives none */
    uint32_t where;   /* 1-based line (JSON lines) or 0-based element index (JSON documents), for messages */
    /* genai_perf lines: their own "tools" (OpenAI chat's shape, checked by sg_tools_check), sent instead of
     * --tools; NULL when the line has none. Owned. */
    struct json_t *tools;
} sg_input_entry_t;

typedef struct sg_input {
    sg_input_format_t format;
    sg_input_entry_t *e;
    size_t n;
    size_t n_sessions; /* multi_turn: distinct session_id values */
    size_t skipped;    /* sharegpt entries without a human turn followed by a reply */
    /* GenAI-Perf's rankings directory (queries.jsonl, passages.jsonl): the passages every query draws from */
    char **pool;
    size_t *pool_lens;
    size_t n_pool;
} sg_input_t;

/*
 * Read and parse path. fmt SG_INPUT_AUTO detects. 0, or negative with one line in err. A directory is GenAI-Perf's
 * rankings input: queries.jsonl (the entries, genai_perf lines) and passages.jsonl (the pool).
 */
SG_WUR int sg_input_load(const char *path, sg_input_format_t fmt, sg_input_t *out, char *err, size_t errlen);
/* The same on bytes in memory; name is used in messages. */
SG_WUR int sg_input_parse(const char *name, const char *data, size_t len, sg_input_format_t fmt, sg_input_t *out,
                          char *err, size_t errlen);
void sg_input_free(sg_input_t *in);

const char *sg_input_format_name(sg_input_format_t f);
/* 0 and *out, or SG_EINVAL for an unknown name. "auto" is accepted. */
int sg_input_format_parse(const char *name, sg_input_format_t *out);
/* "genai_perf, llm_perf, ...": the names for messages and --help. */
const char *sg_input_format_list(void);

/* Mooncake trace entries are sorted by timestamp (stable) and t_ns made relative to the first. */

#endif
