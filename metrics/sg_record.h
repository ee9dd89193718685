/*
 * One request's timeline, as the engine saw it. Filled by the worker that ran the request, handed to
 * sg_metrics_add() and sg_reclog_append() at completion, then reused. Times are absolute CLOCK_MONOTONIC ns;
 * 0 means "did not happen".
 */
#ifndef SG_RECORD_H
#define SG_RECORD_H

#include "sg_common.h"

typedef enum {
    SG_ERRC_NONE = 0,
    SG_ERRC_CONNECT,      /* could not connect (refused, unreachable, reset before any response) */
    SG_ERRC_TLS,          /* TLS handshake or record failure */
    SG_ERRC_HTTP,         /* a response with a non-2xx status */
    SG_ERRC_PROTOCOL,     /* malformed HTTP, SSE or JSON from the server */
    SG_ERRC_DISCONNECT,   /* the connection closed or reset in the middle of the response */
    SG_ERRC_TIMEOUT,      /* --request-timeout passed */
    SG_ERRC_CANCELLED,    /* the run was interrupted (SIGINT) or drained while this request was in flight */
    SG_ERRC_SERVER,       /* a 2xx response that carried an error object (e.g. in the SSE stream) */
    SG_ERRC_STREAM_RESET, /* HTTP/2: the server reset the stream (RST_STREAM), or refused it twice */
    SG_ERRC_GRPC,         /* --service-kind triton: the call ended with a grpc-status other than 0 (OK) */
    SG_ERRC_SESSION,      /* a session's turn not sent because an earlier turn of its session failed */
    SG_ERRC_CANCEL_TEST,  /* cancelled on purpose by --request-cancellation-rate: neither ok nor failed */
    SG_ERRC__COUNT
} sg_err_class_t;

/* Stable lower-case names: "connect", "tls", "http", "protocol", "disconnect", "timeout", "cancelled", "server". */
const char *sg_err_class_name(sg_err_class_t c);

typedef enum {
    SG_OSL_USAGE = 0,     /* server's usage.completion_tokens */
    SG_OSL_TOKENIZER = 1, /* client tokenizer on the output text */
    SG_OSL_EVENTS = 2,    /* number of content events (stream) or 1 per response (no tokenizer, no usage) */
    /* With a tokenizer, a record that lost its text (over SG_RECORD_TEXT_MAX, a bad escape) and has no usage
     * falls back to events too. */
} sg_osl_source_t;

const char *sg_osl_source_name(sg_osl_source_t s); /* "usage", "tokenizer", "events" */

#define SG_RECORD_MSG 120
/* Most output text kept per request for the tokenizer (--tokenizer only); past it the text is dropped. */
#define SG_RECORD_TEXT_MAX (16u << 20)

typedef struct {
    uint64_t id; /* run-wide request index (unique across workers) */
    uint32_t worker;
    uint32_t payload; /* index into the payload table */
    uint32_t model;   /* index into the model list */
    bool streaming;
    bool warmup; /* warmup requests are logged by no exporter and counted in no metric */
    bool ramp;   /* intended inside a ramp (--ramp-up-*, --*-ramp-duration): measured, and marked */
    bool resent; /* sent again after its first attempt got no response (a closed kept-alive connection, a refused
                    HTTP/2 stream); its times are the last attempt's, intended_ns the same */

    int64_t intended_ns;     /* when the schedule said it should start */
    int64_t sent_ns;         /* first byte handed to the kernel */
    int64_t first_byte_ns;   /* first response byte reaped */
    int64_t first_token_ns;  /* first non-empty content event (streaming only) */
    int64_t second_token_ns; /* second content event (streaming only) */
    int64_t end_ns;          /* end of response ([DONE] or last byte), or when the error was detected */
    int64_t first_output_ns; /* first content event that was not reasoning (streaming only) */
    /* HTTP trace (docs/metrics.md, "HTTP trace"): the request's first byte handed to the kernel (sent_ns is when
     * its last byte went), and when the response head (status line and headers) was read */
    int64_t send_start_ns;
    int64_t head_ns;
    /* The set-up of the connection it went on, when it was the first request that connection carried (HTTP/2: the
     * first stream of the session): TCP connect and TLS handshake durations in ns (tls 0 over http://). Both 0 and
     * conn_reused set when the connection had carried a request before (a kept-alive one). */
    int64_t conn_connect_ns;
    int64_t conn_tls_ns;
    bool conn_reused;
    bool tls; /* sent over TLS (https://) */

    /* several URLs (-u given more than once): the index of the one it was sent to (the last attempt's), counted in
     * that URL's metrics too (sg_metrics_url); multi_url false: one URL, url 0 */
    bool multi_url;
    uint8_t url;

    int32_t http_status;       /* 0 when no response head arrived */
    uint8_t err_class;         /* sg_err_class_t */
    uint8_t osl_source;        /* sg_osl_source_t */
    uint32_t isl;              /* client-side prompt tokens */
    int32_t isl_server;        /* usage.prompt_tokens, -1 when absent */
    int32_t isl_cached;        /* prompt tokens the server took from its cache (sg_oai_result_t.cached_tokens), -1
                                  when it did not say */
    uint32_t osl;              /* output tokens by osl_source */
    int32_t osl_server;        /* usage.completion_tokens, -1 when absent */
    int32_t osl_tokenizer;     /* client tokenizer count of the output text, -1 when not counted */
    uint32_t max_tokens;       /* asked of the server, 0 when not asked */
    uint32_t content_events;   /* SSE events that carried content (reasoning included) */
    uint32_t reasoning_events; /* of those, the ones that carried reasoning text only */
    uint32_t reasoning_tokens; /* usage's reasoning_tokens, else (--tokenizer) the count of the reasoning text, else
                                * the reasoning events; 0: none (or not said) */
    bool reasoning_from_usage; /* the server's usage gave reasoning_tokens */
    /* tool calls (docs/metrics.md, *Tool calls*): the calls the response made; the content events that carried
     * their arguments (a stream's fragments: counted in content_events too, so in OSL); the argument tokens
     * (--tokenizer: the count of the arguments text, else tool_events); when the first fragment came */
    uint32_t tool_calls;
    uint32_t tool_events;
    uint32_t tool_tokens;
    int64_t first_tool_ns;
    /* images and audio clips the request carried, and their bytes in its body (sg_payload_t's; docs/files.md):
     * 0 for a request without media */
    uint16_t images, audios;
    uint32_t media_bytes;
    bool no_output;          /* the endpoint generates nothing (embeddings, rankings): no OSL, no output metrics */
    uint64_t response_bytes; /* body bytes received */

    /* Content-event times as microsecond offsets from first_token_ns (event 0 is 0). Owned by the worker. */
    const uint32_t *event_us;
    uint32_t n_events;

    /* --tokenizer only: the output text (content and reasoning, unescaped, in arrival order), written to the
     * record log and counted after the run. has_text is false when nothing was kept (no tokenizer, warmup, an
     * error, or the text was lost). Owned by the worker. */
    const char *text;
    uint32_t text_len;
    bool has_text;
    uint32_t reasoning_text_len; /* the text's first bytes that are reasoning; 0 when none, or when answer text
                                  * came between reasoning (then the reasoning events count) */
    uint32_t tool_text_len;      /* the text's last bytes that are tool-call arguments; 0 when none, or when other
                                  * text came after them (then the tool events count) */

    /* multi-turn sessions (docs/sessions.md): the session's run-wide id and this turn's index from 0 */
    bool in_session;
    uint32_t turn;
    uint64_t session;

    char err_msg[SG_RECORD_MSG]; /* NUL-terminated; empty when ok */
} sg_record_t;

/*
 * Settle osl and osl_source of a successful record from what it holds: usage.completion_tokens when the server
 * sent it, else the tokenizer count when there is one, else the content events (streaming: one per event;
 * not streaming: 1 when there was any content). Failed records are left as they are.
 */
void sg_record_settle_osl(sg_record_t *r);

#endif
