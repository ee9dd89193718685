/*
 * OpenAI-compatible payloads, sans-I/O: decoders for streamed chunks and whole responses (the client's hot
 * path: a hand-written scanner, no allocation), and a request-body scanner for the mock server.
 *
 * Strings are returned raw: the bytes between the quotes, still JSON-escaped. sg_json_unescape() decodes.
 */
#ifndef SG_OPENAI_H
#define SG_OPENAI_H

#include "sg_common.h"

#include <sys/types.h>

/*
 * The HTTP APIs surge speaks (--endpoint-type). Not all are OpenAI's; the name stays because OpenAI's shapes came
 * first and the others are decoded beside them. docs/endpoints.md gives each one's request and response shapes.
 */
typedef enum {
    SG_OAI_CHAT = 0,        /* /v1/chat/completions: choices[0].delta.content or choices[0].message.content */
    SG_OAI_COMPLETIONS = 1, /* /v1/completions: choices[0].text */
    SG_OAI_EMBEDDINGS,      /* /v1/embeddings: {"input":[...]} -> {"data":[{"embedding":[...]}...],"usage"} */
    SG_OAI_RANK_NIM,        /* /v1/ranking (NIM): {"query":{"text"},"passages":[{"text"}]} -> {"rankings":[...]} */
    SG_OAI_RANK_TEI,        /* /rerank (TEI): {"query","texts":[...]} -> [{"index","score"}...] */
    SG_OAI_RANK_COHERE,     /* /v1/rerank (Cohere, llama.cpp): {"query","documents":[...]} -> {"results":[...]} */
    SG_OAI_RESPONSES,       /* /v1/responses (OpenAI Responses API): response.output_text.delta events */
    SG_OAI_MESSAGES,        /* /v1/messages (Anthropic Messages API): content_block_delta events */
    SG_OAI_GENERATE,        /* /generate and /generate_stream (Hugging Face TGI): token.text events */
    SG_OAI_IMAGE_RETRIEVAL, /* /v1/infer (GenAI-Perf's image_retrieval, NIM): {"input":[{"type":"image_url","url"}]}
                             * -> {"data":[...]} */
    SG_OAI__KINDS
} sg_oai_kind_t;

/* The most tool-call argument fragments one result holds (a whole response's calls past it are counted, not kept). */
#define SG_OAI_TOOL_ARGS_MAX 16

typedef struct {
    sg_slice_t content;        /* raw (escaped) first-choice text; len 0 when absent, null or "" */
    sg_slice_t reasoning;      /* raw reasoning_content / reasoning (chat), when a server sends it */
    int64_t completion_tokens; /* usage.completion_tokens, -1 when absent */
    int64_t prompt_tokens;     /* usage.prompt_tokens, -1 when absent */
    int64_t reasoning_tokens; /* usage's reasoning_tokens (completion_tokens_details or output_tokens_details), or -1 */
    int64_t cached_tokens;    /* prompt tokens the server took from its cache, or -1: usage.prompt_tokens_details.
                               * cached_tokens (OpenAI, vLLM, SGLang; input_tokens_details for the Responses API),
                               * Anthropic's usage.cache_read_input_tokens, else llama.cpp's timings.cache_n */
    int64_t items;            /* embeddings: data entries; rankings: scores; -1 when the shape's array is absent */
    bool recognized;          /* the text is the kind's shape (sg_api_decode; always true for chat and completions) */
    bool has_finish_reason;   /* choices[0].finish_reason is a non-null string */
    bool is_error;            /* top-level "error" object or string present */
    sg_slice_t error_message; /* raw error.message (or the error string) when is_error */
    int64_t error_code;       /* numeric error.code when present, else -1 */
    /*
     * Tool calls (docs/endpoints.md, *Tool calls*). A stream event: the calls it starts (chat: tool_calls entries
     * with an id or a function name; responses: response.output_item.added of a function_call item; messages:
     * content_block_start of a tool_use block) and its argument fragments (chat: function.arguments; responses:
     * response.function_call_arguments.delta; messages: input_json_delta's partial_json). A whole response: its
     * calls and each one's arguments. Fragments are raw JSON strings, except Anthropic's whole "input" objects
     * (tool_args_json). Empty fragments are not kept.
     */
    uint32_t tool_calls;
    int32_t tool_index_max; /* chat: the highest tool_calls[].index seen, -1 when none */
    uint32_t tool_n_args;   /* fragments in tool_args (at most SG_OAI_TOOL_ARGS_MAX) */
    bool tool_args_json;    /* tool_args are raw JSON values to count as they are, not strings to unescape */
    sg_slice_t tool_args[SG_OAI_TOOL_ARGS_MAX];
} sg_oai_result_t;

/*
 * Decode one SSE data payload (not "[DONE]") or one whole non-streamed body; both shapes are accepted by both
 * kinds (delta or message for chat). Returns 0, or SG_EJSON when the text is not a JSON object.
 * Unknown fields are skipped. Never allocates.
 *
 * Exactly: the whole text must be one valid JSON object (RFC 8259; whitespace around it allowed, nesting at most
 * 64 deep, UTF-8 not validated). "choices[0]" is the first element of "choices" that is an object whose "index"
 * is 0, null or absent (with n > 1 a server streams other indexes in chunks of their own: those report no
 * content). Chat reads delta, or message when there is no delta object; content and reasoning must be strings
 * (reasoning_content wins over reasoning). Completions reads text. A member of the wrong type counts as absent;
 * where a key repeats, the last one wins (as in jansson). is_error: "error" is an object (message and code from
 * it) or a string (the message), or "object" is "error" (vLLM: message and code at the top level).
 * Slices point into json; absent ones are an empty non-NULL slice.
 */
SG_WUR int sg_oai_decode(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out);

/*
 * A stream's events differ only in their text: {"id":"x","object":"chat.completion.chunk","created":T,"model":"m",
 * "choices":[{"index":0,"delta":{"content":"..."},...}]} again and again. The memo keeps the last decoded event's
 * bytes before and after its content string, and what it decoded to. An event with those same bytes around a valid
 * JSON string is that same document but for the string, so it decodes to the same result with that content: two
 * compares and one string scan instead of a parse (most of a bursting stream's client CPU). Anything else is
 * decoded in full and becomes the memo. Only chat and completions events with content and nothing else that
 * points into the text (no reasoning, no error, no tool call) are kept. One per worker: the events of one stream
 * come one after another in a read.
 */
#define SG_OAI_MEMO_PRE 384 /* most bytes kept before the content string (its opening quote included) */
#define SG_OAI_MEMO_SUF 128 /* and after it (its closing quote included) */
typedef struct {
    sg_oai_result_t res; /* the memo's result (its content and the tool fragments left out) */
    uint16_t pre, suf;   /* bytes before and after; pre 0: empty */
    uint8_t kind;
    char bytes[SG_OAI_MEMO_PRE + SG_OAI_MEMO_SUF]; /* the pre bytes, then the suf bytes */
} sg_oai_memo_t;

/* sg_oai_decode, through the memo (zeroed to start): the same return and result, always. */
SG_WUR int sg_oai_decode_memo(sg_oai_memo_t *m, sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out);

/*
 * The other APIs' bodies and stream events (embeddings, rankings, responses, messages, generate; see
 * docs/endpoints.md), into the same result: content and reasoning text of one event or of a whole response,
 * usage (prompt/completion tokens under each API's names), items (embeddings, rankings), errors in each API's
 * error shape. recognized is false when the text is valid JSON but not that API's shape (no "data" array for
 * embeddings, no known event "type" for responses or messages, ...): the server answers another API. Returns
 * 0, or SG_EJSON when the text is not JSON. sg_oai_decode calls it for these kinds. Never allocates.
 */
SG_WUR int sg_api_decode(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out);

/* The endpoint types of --endpoint-type, and what the engine needs to know of each. */
typedef struct {
    const char *name;        /* the type's name as surge prints it: chat, embeddings, hf_tei_rankings, ... */
    const char *path;        /* default path, without a leading slash and before any /v1 base adjustment */
    const char *stream_path; /* the path when streamed, if another (TGI's generate_stream), else NULL */
    bool output;             /* responses carry generated tokens (not embeddings, not rankings) */
    bool streams;            /* --streaming applies */
    bool batch;              /* --batch-size applies: inputs (embeddings) or passages (rankings) per request */
    bool typed_stream;       /* a stream with no event in the API's shape is another API's (not chat's and
                                completions', whose streams may hold no chunk but [DONE]) */
} sg_endpoint_t;

const sg_endpoint_t *sg_endpoint(sg_oai_kind_t kind);
/* --endpoint-type NAME, GenAI-Perf's and AIPerf's names ("kserve" is not one of these: the caller's). 0 or -1. */
int sg_endpoint_parse(const char *name, sg_oai_kind_t *kind);
/* "chat, completions, embeddings, ...": the names sg_endpoint_parse takes, for messages. Static. */
const char *sg_endpoint_names(void);

/* True when an SSE data payload is the OpenAI end marker "[DONE]" (surrounding whitespace allowed). */
bool sg_oai_is_done(const char *data, size_t len);

/*
 * A request's tools, as the mock reads them (chat's, the Responses API's and the Messages API's shapes alike):
 * "tools": how many entries are objects and the first one's name (function.name, or name); "tool_choice": "none"
 * (a string, or {"type": "none"}) or the tool it names ({"type": "function", "function": {"name"}}, {"type":
 * "function" | "tool", "name"}).
 */
typedef struct {
    uint32_t n;       /* tools given; 0 when none */
    sg_slice_t first; /* raw name of the first tool (empty when it has none) */
    sg_slice_t named; /* raw name tool_choice asks for, empty when it names none */
    bool none;        /* tool_choice says none */
} sg_oai_tools_req_t;

/*
 * Images and audio in a request body, as the mock counts them (sg_media_probe.h): chat's content parts of type
 * image_url ({"image_url": {"url": U}} or {"image_url": U}) and input_audio ({"input_audio": {"data": B64}}),
 * image_retrieval's {"type": "image_url", "url": U} inputs.
 */
typedef struct {
    uint32_t images, audios;
    uint32_t images_sized; /* images whose PNG or JPEG header gave their size (data URLs) */
    uint32_t audios_timed; /* clips whose WAV header gave their length */
    uint64_t bytes;        /* decoded bytes of the base64 media (URLs count 0) */
    uint64_t tokens;       /* the mock's token count for them (sg_media_image_tokens, sg_media_audio_tokens) */
} sg_oai_media_t;

/* What the mock server needs from a request body. */
typedef struct {
    sg_slice_t model;   /* raw */
    int64_t max_tokens; /* max_tokens or max_completion_tokens; -1 when absent */
    bool stream;
    bool include_usage;    /* stream_options.include_usage */
    sg_slice_t prompt;     /* completions: raw "prompt" string; chat: raw content of the last message */
    uint64_t prompt_words; /* whitespace-separated words across all message contents / the prompt */
    sg_oai_tools_req_t tools;
    sg_oai_media_t media; /* chat: image and audio parts over every message */
} sg_oai_request_t;

/*
 * Returns 0, SG_EJSON (not a JSON object), or SG_EPROTO (no messages/prompt for the kind).
 *
 * Chat: "messages" must be a non-empty array. Each message's "content" counts: a string, or an array of parts
 * where those with "type":"text" add their "text"; prompt is the last message's content (its first text part).
 * Parts of type image_url and input_audio add to media.
 * Completions: "prompt" is a string, or a non-empty array whose first element decides: strings (the first is
 * the prompt), token ids (each id counts as a word, prompt empty), or arrays of ids (the first one's ids count).
 * max_tokens: max_completion_tokens when present (as vLLM does), else max_tokens. stream and include_usage are
 * true only for a literal true. Words are runs of non-whitespace (ASCII space, \t \n \v \f \r, escaped or not).
 */
SG_WUR int sg_oai_scan_request(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_request_t *out);

/* The scanner at a request's "tools" or "tool_choice" value (sg_oai_tools_req_t), for sg_api_scan_request too.
 * 0 or SG_EJSON; consumes the value. */
SG_WUR int sg_oai_scan_tools(void *js, bool choice, sg_oai_tools_req_t *t);

/*
 * Decode a raw JSON string body (escapes included) into UTF-8. Writes at most cap bytes; returns the decoded
 * length (which may exceed cap: then the output is truncated) or SG_EJSON for a bad escape.
 * Surrogate pairs combine; a lone surrogate (a server that split a pair) becomes U+FFFD rather than an error.
 * Other bytes are copied as they are (no UTF-8 validation). out may be NULL when cap is 0 (to measure).
 */
SG_WUR ssize_t sg_json_unescape(const char *raw, size_t len, char *out, size_t cap);

#endif
