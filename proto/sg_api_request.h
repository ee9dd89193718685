/*
 * Request bodies of the APIs beside OpenAI chat and completions (embeddings, the three rankings, Responses,
 * Anthropic Messages, TGI generate; docs/endpoints.md), scanned for what a server needs to answer them: the
 * model, how many inputs and prompt words, the output length asked for, and whether to stream. Sans-I/O, one
 * pass with the pull scanner (json_scan.h), no allocation. The mock server is its user; chat and completions
 * have sg_oai_scan_request (sg_openai.h).
 */
#ifndef SG_API_REQUEST_H
#define SG_API_REQUEST_H

#include "sg_common.h"
#include "sg_openai.h"

typedef struct {
    /*
     * The API the body is: the kind asked for, except that the two rerank kinds (one path, /rerank, serves both
     * shapes) follow the body: SG_OAI_RANK_TEI when it has "texts", SG_OAI_RANK_COHERE when it has "documents".
     */
    sg_oai_kind_t kind;
    sg_slice_t model;         /* raw (escaped); empty when absent */
    sg_slice_t prompt;        /* raw text the prompt ends with (the last message's, the query, the first input) */
    int64_t max_tokens;       /* max_output_tokens / max_tokens / parameters.max_new_tokens; -1 when absent */
    int64_t top_n;            /* Cohere rerank's top_n; -1 when absent */
    uint64_t prompt_words;    /* words (runs of non-whitespace) over every input the API counts; token ids count 1 */
    uint32_t inputs;          /* embeddings: inputs; rankings: passages (texts, documents); 1 for the others */
    bool stream;              /* "stream" is literally true */
    bool details;             /* TGI: parameters.details is literally true */
    sg_oai_tools_req_t tools; /* responses and messages: "tools" and "tool_choice" (sg_oai_scan_tools) */
    sg_oai_media_t media;     /* image_retrieval: its images (inputs counts them) */
    const char *err;          /* on failure: what is wrong, for the error response (static text) */
} sg_api_request_t;

/*
 * Scan one request body for kind (SG_OAI_EMBEDDINGS and after; chat and completions are refused with
 * SG_EINVAL). Returns 0, SG_EJSON (not one JSON object), or SG_EPROTO (the object lacks what the API needs);
 * out->err says which, in words. Slices point into json. Never allocates.
 *
 * What each API needs and counts (a member of the wrong type counts as absent; a repeated key: the last wins):
 *  - embeddings: "input": a string (one input), or a non-empty array whose first element decides: strings
 *    (each an input), token ids (one input; each id a word), or arrays of token ids (each an input).
 *  - NIM rankings: "query": {"text": Q} and a non-empty "passages": [{"text": P}, ...].
 *  - TEI / Cohere rerank: "query": Q and a non-empty "texts": [P, ...] or "documents": [P or {"text": P}, ...].
 *    Words: the query's and every passage's.
 *  - responses: "input": a string, or a non-empty array of items whose "content" is a string or an array of
 *    parts; parts of type input_text, output_text or text count their "text". "instructions" counts too.
 *  - messages: a non-empty "messages" array as chat's (content a string or blocks of type text), and "system"
 *    (a string or text blocks) counts too.
 *  - generate (TGI): "inputs": a string; "parameters": {"max_new_tokens": n, "details": bool}.
 *  - image_retrieval: "input": a non-empty array of {"type": "image_url", "url": U}; inputs counts the images,
 *    media their bytes and tokens (sg_media_probe.h).
 * The prompt is the last message's (or item's) first text, the query for rankings, the first string input for
 * embeddings, the inputs for generate.
 */
SG_WUR int sg_api_scan_request(sg_oai_kind_t kind, const char *json, size_t len, sg_api_request_t *out);

#endif
