/*
 * The mock server's pieces, shared between its files only (nothing outside mock/ includes this):
 * options (mock_opts.c), response and record rendering (mock_render.c: chat and completions, and the HTTP
 * framing every API shares), the other APIs' answers (mock_api.c: embeddings, rankings, Responses, Anthropic
 * Messages, TGI generate), the per-thread worker with its connections and timed jobs (mock_worker.c), and the
 * process lifecycle (mock.c).
 */
#ifndef SG_MOCK_INTERNAL_H
#define SG_MOCK_INTERNAL_H

#include "sg_common.h"
#include "sg_h2srv.h"
#include "sg_loop.h"
#include "sg_openai.h"
#include "sg_tcp.h"
#include "sg_tls.h"
#include "sg_tokenizer.h"
#include "sg_workload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---------- options ---------- */

/* --fault KIND[:ARGS][@FRACTION] (mock_fault.c, docs/mock.md#faults) */
typedef enum {
    SG_MOCK_FAULT_NONE = 0,
    /* per request (a completion request draws at most one of these): */
    SG_MOCK_FAULT_RST,         /* HTTP/2: RST_STREAM code at half the tokens; HTTP/1.1: a TCP reset there */
    SG_MOCK_FAULT_STALL_WRITE, /* nothing is written for a ms before token b (default 0) */
    SG_MOCK_FAULT_CUT,         /* the connection is closed after a bytes of the response (SG_MOCK_AT_HEAD: its head) */
    SG_MOCK_FAULT_HALF_CLOSE,  /* shutdown(SHUT_WR) after a bytes of the response; reading goes on */
    /* per connection (a new connection draws at most one of these): */
    SG_MOCK_FAULT_TRICKLE, /* every send is at most a bytes, b ms apart */
    SG_MOCK_FAULT_BWCAP,   /* at most a bytes/s */
    SG_MOCK_FAULT_GOAWAY,  /* after a requests, GOAWAY (b: the error code; 0 = NO_ERROR, graceful) */
    /* at a time, on every connection (no fraction): */
    SG_MOCK_FAULT_CRASH,      /* at a ms, every connection closes and the port stops listening; again after b ms */
    SG_MOCK_FAULT_STALL_READ, /* from a ms for b ms nothing received is read; it is taken at the window's end */
    SG_MOCK_FAULT_KINDS
} sg_mock_fault_kind_t;

#define SG_MOCK_AT_HEAD INT64_MAX /* cut, half-close: at the end of the response head */
#define SG_MOCK_MAX_FAULTS 16

typedef struct {
    uint8_t kind; /* sg_mock_fault_kind_t */
    double fraction;
    int64_t a, b; /* the arguments, as above */
} sg_mock_fault_t;

/* Parse one --fault value into f; NULL, or what is wrong (static text). */
const char *sg_mock_fault_parse(const char *val, sg_mock_fault_t *f);
/* The kind's name as --fault spells it (and --record lines say). */
const char *sg_mock_fault_name(int kind);
/* Does the kind apply per request, per connection, or at a time? */
static inline bool sg_mock_fault_per_request(int kind)
{
    return kind >= SG_MOCK_FAULT_RST && kind <= SG_MOCK_FAULT_HALF_CLOSE;
}
static inline bool sg_mock_fault_per_conn(int kind)
{
    return kind >= SG_MOCK_FAULT_TRICKLE && kind <= SG_MOCK_FAULT_GOAWAY;
}

typedef struct {
    const char *host;
    uint16_t port;
    double ttft_ms, itl_ms;
    uint32_t output_tokens; /* 0: honour the request's max_tokens */
    unsigned workers;
    double error_rate, drop_rate;
    double stall_start_ms, stall_ms;
    const char *record_path;         /* NULL: no record */
    const char *send_log_path;       /* --send-log: NULL: none */
    const char *port_file;           /* NULL: none */
    double exit_after_s;             /* 0: run until a signal */
    const char *tokenizer;           /* NULL: usage counts words (prompt) and the one-token words sent (completion) */
    int64_t usage_completion_offset; /* added to usage.completion_tokens (clamped at 0), to test disagreement */
    bool no_usage;                   /* never send usage, even when the request asks for it */
    bool prefix_cache;               /* usage reports prompt_tokens_details.cached_tokens (mock_pcache.c) */
    bool quiet;
    uint32_t max_streams; /* HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS per connection */
    uint32_t backlog;     /* --backlog: each listening socket's accept queue (listen(2)'s backlog) */
    bool reuse_port;      /* --reuse-port: share --port with other mock processes already listening on it */
    bool tls;             /* --tls, or implied by --tls-cert/--tls-key: serve TLS only */
    const char *tls_cert; /* PEM chain; NULL with tls: a self-signed certificate made at start */
    const char *tls_key;
    const char *tls_cert_out; /* write the self-signed certificate here (for clients' --cacert) */
    const char *tls_alpn;     /* NULL: "h2,http/1.1" */
    /* HTTP/1.1 keep-alive faults, as real servers have them (--close-after, --close-notice, --close-delay-ms) */
    uint32_t close_after;   /* close every connection after this many responses; 0: never */
    uint8_t close_notice;   /* sg_mock_notice_t: what the responses say about it */
    int64_t close_delay_ns; /* the FIN follows the last response's last byte this much later */
    /* the server model (mock_batch.c, docs/mock.md) */
    uint32_t max_batch;          /* sequences generated at once; 0: no limit */
    double prefill_ms_per_token; /* added to the TTFT per prompt token */
    int io_backend;              /* sg_io_backend_t asked for (--io-backend, $SURGE_IO_BACKEND) */
    /* the APIs beside chat and completions (mock_api.c, docs/mock.md) */
    uint32_t embedding_dim;     /* floats per embedding (--embedding-dim) */
    double tool_call_rate;      /* --tool-call-rate: requests with tools answered with a tool call (mock_tools.c) */
    uint32_t reasoning_tokens;  /* the first this many output tokens are reasoning (chat, responses, messages) */
    bool reasoning_field_short; /* chat's reasoning goes in "reasoning" (vLLM's newer name), not "reasoning_content" */
    sg_mock_fault_t faults[SG_MOCK_MAX_FAULTS]; /* --fault, in the order given */
    unsigned n_faults;
    bool fault_from_request; /* --fault-origin request: crash and stall-read times count from the first request */
} sg_mock_opts_t;

typedef enum {
    SG_MOCK_NOTICE_CONNECTION = 0, /* the last response carries Connection: close (nginx, cpp-httplib's max count) */
    SG_MOCK_NOTICE_MAX,            /* every response carries Keep-Alive: max=<responses left, this one included> */
    SG_MOCK_NOTICE_NONE, /* every response advertises Keep-Alive: timeout=5, max=100 (llama-server after a stream) */
} sg_mock_notice_t;

#define SG_MOCK_MAX_WORKERS 256
#define SG_MOCK_DEFAULT_STREAMS 128    /* --max-concurrent-streams */
#define SG_MOCK_DEFAULT_TOKENS 16      /* when neither the request nor --output-tokens says */
#define SG_MOCK_MAX_TOKENS (1u << 20)  /* cap on tokens per response, whatever the request asks */
#define SG_MOCK_MAX_REQUEST (8u << 20) /* head + body of one request */
#define SG_MOCK_DEFAULT_EMBEDDING_DIM 16
#define SG_MOCK_MAX_EMBEDDING_DIM 16384
#define SG_MOCK_MAX_ITEMS 65536       /* embeddings' inputs, rankings' passages per request */
#define SG_MOCK_MAX_FLOATS (1u << 22) /* inputs x --embedding-dim per embeddings response */

/* Parse argv (after "mock"). Returns 0 to run, 1 when --help was printed, 2 after printing a bad-flag line. */
int sg_mock_parse_args(int argc, char **argv, sg_mock_opts_t *o);

/* ---------- output buffers ---------- */

/*
 * A growable byte buffer. Appends never fail loudly: on allocation failure oom is set, later appends are
 * dropped, and the owner checks oom once after rendering (the connection is then closed).
 */
typedef struct {
    char *p;
    size_t len;
    size_t cap;
    bool oom;
} sg_mock_buf_t;

/* Make room for n more bytes; slow path of sg_mock_buf_room. 0 or -ENOMEM (and oom set). */
int sg_mock_buf_grow(sg_mock_buf_t *b, size_t n);

static inline char *sg_mock_buf_room(sg_mock_buf_t *b, size_t n)
{
    if (SG_UNLIKELY(b->oom))
        return NULL;
    if (SG_UNLIKELY(b->cap - b->len < n) && sg_mock_buf_grow(b, n) < 0)
        return NULL;
    return b->p + b->len;
}

static inline void sg_mock_buf_mem(sg_mock_buf_t *b, const void *p, size_t n)
{
    char *d = sg_mock_buf_room(b, n);
    if (d) {
        memcpy(d, p, n);
        b->len += n;
    }
}

/* lit must be a string literal (the "" makes anything else, such as a ?: of two, fail to compile) */
#define SG_MOCK_BUF_LIT(b, lit) sg_mock_buf_mem((b), "" lit, sizeof(lit) - 1)

static inline void sg_mock_buf_slice(sg_mock_buf_t *b, sg_slice_t s)
{
    sg_mock_buf_mem(b, s.base, s.len);
}

/* Decimal digits of v written at d (room for 20); returns the count. */
static inline size_t sg_mock_u64_fmt(char *d, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(d, tmp + i, sizeof(tmp) - i);
    return sizeof(tmp) - i;
}

static inline void sg_mock_buf_u64(sg_mock_buf_t *b, uint64_t v)
{
    char *d = sg_mock_buf_room(b, 20);
    if (d)
        b->len += sg_mock_u64_fmt(d, v);
}

/* ---------- jobs: one per request, from arrival until its last byte is rendered ---------- */

typedef enum {
    SG_MOCK_JOB_STATIC = 0, /* a constant response (health, models, errors) */
    SG_MOCK_JOB_FULL = 1,   /* non-streamed completion, rendered whole at its due time */
    SG_MOCK_JOB_STREAM = 2, /* SSE completion: head and role chunk at start, then one event per token */
    /* KServe v2 gRPC over HTTP/2 (mock_grpc.c) */
    SG_MOCK_JOB_GRPC_STATUS = 3, /* a Trailers-Only answer: grpc-status static_id, no message */
    SG_MOCK_JOB_GRPC_CONST = 4,  /* one constant message (ServerLive, ServerReady, ModelReady: true), status 0 */
    SG_MOCK_JOB_GRPC_UNARY = 5,  /* ModelInfer: the whole text_output at its due time */
    SG_MOCK_JOB_GRPC_STREAM = 6, /* ModelStreamInfer (decoupled): one response per token, on the SSE timing */
    SG_MOCK_JOB_CLOSE = 7,       /* HTTP/1.1, --close-delay-ms: nothing to send; at due_ns the connection closes */
    SG_MOCK_JOB_API_ERROR = 8,   /* an error in the API's own shape (mock_api.c): status, err_msg, kind */
} sg_mock_job_type_t;

typedef enum {
    SG_MOCK_ST_HEALTH = 0,
    SG_MOCK_ST_MODELS,
    SG_MOCK_ST_NOT_FOUND,
    SG_MOCK_ST_METHOD,
    SG_MOCK_ST_BAD_JSON,
    SG_MOCK_ST_NO_PROMPT,
    SG_MOCK_ST_BAD_HTTP,
    SG_MOCK_ST_TOO_BIG,
    SG_MOCK_ST_INJECTED,
    SG_MOCK_ST_METRICS, /* GET /metrics: not constant, rendered per scrape (mock_metrics.c) */
    SG_MOCK_ST_COUNT
} sg_mock_static_t;

#define SG_MOCK_NOT_IN_HEAP UINT32_MAX
#define SG_MOCK_NO_DROP UINT32_MAX
#define SG_MOCK_HEAD_INLINE 176

struct sg_mock_conn;
typedef struct sg_mock_job sg_mock_job_t;
struct sg_mock_job {
    sg_mock_job_t *next; /* connection's response queue, or the worker's free list */
    struct sg_mock_conn *conn;
    int64_t arrival_ns;
    int64_t start_ns; /* generation starts (arrival, or later when it waited for a batch slot) */
    int64_t ttft_ns;  /* its first token is due this long after start_ns (--ttft-ms plus the prefill) */
    int64_t due_ns;   /* when the next thing is to be rendered */
    uint32_t heap_idx;
    uint32_t n;         /* completion tokens */
    uint32_t k;         /* next token to render (streams) */
    uint32_t drop_at;   /* streams: token index at which the connection is cut; SG_MOCK_NO_DROP: never */
    uint8_t fault;      /* sg_mock_fault_kind_t drawn for this request (--fault); NONE */
    uint8_t fault_idx;  /* its --fault entry */
    uint32_t stall_at;  /* --fault stall-write: the token (0: the first) that waits stall_ns more, and the rest */
    int64_t stall_ns;   /* 0: no write stall */
    int64_t cut_at;     /* --fault cut / half-close: response bytes before the cut (SG_MOCK_AT_HEAD); -1: none */
    int64_t resp_bytes; /* bytes of this response rendered so far (only counted while cut_at >= 0) */
    uint64_t prompt_words;
    uint64_t usage_prompt;     /* what usage reports: prompt_tokens */
    int64_t usage_cached;      /* --prefix-cache: prompt_tokens_details.cached_tokens; -1: not reported */
    uint64_t usage_completion; /* and completion_tokens */
    uint8_t type;              /* sg_mock_job_type_t */
    uint8_t kind;              /* sg_oai_kind_t */
    uint8_t static_id;
    bool include_usage; /* streams: the request asked for usage (and --no-usage is off) */
    bool send_usage;    /* non-streamed: usage goes in the body */
    bool drop_full;     /* non-streamed: close instead of answering */
    bool close_after;   /* the connection closes after this response; its head says Connection: close unless... */
    bool close_silent;  /* ...this is set (--close-notice max or none) */
    bool close_linger;  /* --close-delay-ms: the close comes that long after the last byte */
    uint32_t ka_max;    /* HTTP/1.1: advertise Keep-Alive: timeout=5, max=ka_max; 0: no such header */
    /* the other APIs (mock_api.c); chat uses reasoning too */
    uint32_t reasoning;  /* the first this many of the n tokens are reasoning */
    uint32_t items;      /* embeddings: inputs; rankings: passages scored */
    uint32_t shown;      /* rankings: results listed (Cohere's top_n), at most items */
    uint16_t status;     /* SG_MOCK_JOB_API_ERROR: the HTTP status */
    bool details;        /* TGI: the request asked for details */
    uint64_t serial;     /* the response's id number */
    int64_t created;     /* its creation time (Unix seconds) */
    const char *err_msg; /* SG_MOCK_JOB_API_ERROR: the message (static text) */
    /* a tool call (mock_tools.c): the answer is one call of tool_name whose arguments are the n tokens */
    bool tool;
    uint8_t tool_name_len;
    char tool_name[64];
    bool started;
    bool blocked; /* waiting for the connection's output to drain */
    /* HTTP/2: the stream (0 on HTTP/1.1) and its rendered, not yet framed response body */
    bool h2_eof; /* h2_body holds the last byte */
    int32_t h2_id;
    uint32_t h2_off;
    sg_mock_buf_t h2_body;
    /*
     * The JSON object's opening, rendered once per request: {"id":..,"object":..,"created":..,"model":..,
     * "choices":[ ; every chunk and the whole response start with it.
     */
    char *head;
    uint32_t head_len;
    char head_inline[SG_MOCK_HEAD_INLINE];
};

/* ---------- rendering (mock_render.c) ---------- */

/* Build the constant responses and token fragments once, before any worker starts (o: the reasoning field). */
void sg_mock_render_init(const sg_mock_opts_t *o);

/* The HTTP/1.1 bytes of j's constant response (j->static_id), with its connection fields (close, Keep-Alive). */
void sg_mock_render_static(sg_mock_buf_t *b, const sg_mock_job_t *j);
/* The status code and JSON body of a constant response (HTTP/2 sends them as HEADERS and DATA). */
sg_slice_t sg_mock_static_body(sg_mock_static_t id, int *status);

/*
 * Render j->head for a completion: id, object (by kind and streaming), created, model (raw, echoed; empty or
 * absent: "mock-model"). Uses head_inline when it fits, else mallocs. 0 or -ENOMEM.
 */
SG_WUR int sg_mock_render_head(sg_mock_job_t *j, uint64_t id, int64_t created, sg_slice_t model, bool stream);

/*
 * The renderers below write HTTP/1.1 bytes (status line, headers, chunked framing) for HTTP/1.1 jobs, and only
 * the body (JSON, SSE events) for HTTP/2 jobs (h2_id != 0), whose head goes out as a HEADERS frame.
 */
/* Whole non-streamed HTTP response for j (n tokens). */
void sg_mock_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j);
/* Streamed response: HTTP head plus, for chat, the role-only chunk. */
void sg_mock_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j);
/* One content event for token k (the last carries finish_reason). */
void sg_mock_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k);
/* Usage chunk (when asked), [DONE] and the terminating zero-size chunk. */
void sg_mock_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j);

/* The text of n tokens, exactly as the responses carry it (unescaped: it needs no escaping). */
size_t sg_mock_text_len(uint32_t n);
void sg_mock_text(char *d, uint32_t n);

/* Raw JSON string content copied into a JSON string: control bytes escaped, everything else verbatim. */
void sg_mock_buf_json_raw(sg_mock_buf_t *b, sg_slice_t s);
/* Arbitrary bytes escaped into a JSON string body. */
void sg_mock_buf_json_escape(sg_mock_buf_t *b, sg_slice_t s);
/* The start of a --record line, common to every kind of request: {"t_ns":…,"worker":…,"conn":…,"path":"…" (the
 * caller adds the rest and the closing brace). *first_ns takes now when b is empty. */
void sg_mock_record_head(sg_mock_buf_t *b, int64_t *first_ns, int64_t now, uint64_t worker, uint64_t conn,
                         sg_slice_t path);

/* One token's text (a word with its leading space), as sg_mock_text strings them together. */
sg_slice_t sg_mock_word(uint32_t k);
/* The text of tokens [from, to), as in sg_mock_text's string of to tokens. */
size_t sg_mock_text_range_len(uint32_t from, uint32_t to);
void sg_mock_buf_text(sg_mock_buf_t *b, uint32_t from, uint32_t to);

/*
 * HTTP/1.1 framing around a body rendered in place (mock_api.c's answers, chat's with reasoning), so no scratch
 * copy is made: *_open reserves room for the head and returns a mark, *_close writes the head before the bytes
 * rendered since and closes the gap. HTTP/2 jobs (h2_id != 0) get neither: their head is a HEADERS frame.
 */
/* A whole response: status line (status: 200, 400, 500), Content-Type: application/json, Content-Length and the
 * connection fields. */
size_t sg_mock_body_open(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_body_close(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t mark, int status);
/* One chunk of a chunked (streamed) response: nothing is written when nothing was rendered. */
size_t sg_mock_chunk_open(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_chunk_close(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t mark);
/* The head of a streamed response (text/event-stream, chunked, the connection fields); nothing over HTTP/2. */
void sg_mock_render_sse_head(sg_mock_buf_t *b, const sg_mock_job_t *j);
/* The zero-size chunk that ends a streamed HTTP/1.1 response; nothing over HTTP/2. */
void sg_mock_render_sse_end(sg_mock_buf_t *b, const sg_mock_job_t *j);

/* ---------- the other APIs (mock_api.c) ---------- */

/* The embedding vectors' text, rendered once for --embedding-dim before any worker starts. 0 or SG_ENOMEM. */
SG_WUR int sg_mock_api_init(const sg_mock_opts_t *o);
void sg_mock_api_free(void);
/* The API's name in --record lines (surge's --endpoint-type names: embeddings, nim_rankings, ...). Static. */
const char *sg_mock_api_name(sg_oai_kind_t kind);
/* j answers with an error in kind's API shape: status, and message (static text). */
void sg_mock_api_error(sg_mock_job_t *j, sg_oai_kind_t kind, int status, const char *message, int64_t now);
/* Keep the model name (raw, echoed in the answers; empty: "mock-model") in j's head. 0 or SG_ENOMEM. */
SG_WUR int sg_mock_api_head(sg_mock_job_t *j, sg_slice_t model);
/* The renderers of sg_mock_render_full/_stream_start/_token/_stream_end for the other APIs' jobs (they call
 * these for a kind after SG_OAI_COMPLETIONS). */
void sg_mock_api_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_api_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_api_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k);
void sg_mock_api_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j);
/* An SG_MOCK_JOB_API_ERROR job's whole response (its body only over HTTP/2; *status gets the code). */
void sg_mock_api_render_error(sg_mock_buf_t *b, const sg_mock_job_t *j, int *status);

/* ---------- tool calls (mock_tools.c) ---------- */

/* Whether a request's tools make j a tool call (tools given, tool_choice not none); sets j's tool name. The rate
 * is the caller's draw. */
bool sg_mock_tool_pick(sg_mock_job_t *j, const sg_oai_tools_req_t *t);
/* The renderers of sg_mock_render_* for a tool-call job (j->tool) of chat, responses or messages. */
void sg_mock_tool_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_tool_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_tool_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k);
void sg_mock_tool_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j);

/* ---------- server and workers ---------- */

typedef struct {
    uint64_t requests;                    /* HTTP requests parsed */
    uint64_t completions;                 /* completion requests (any outcome after the body was scanned) */
    uint64_t images, audios, media_bytes; /* image and audio parts in them, and their decoded bytes */
    uint64_t streamed;
    uint64_t errors;                      /* injected 500s */
    uint64_t drops;                       /* connections cut on purpose */
    uint64_t faults[SG_MOCK_FAULT_KINDS]; /* --fault: requests (per-request kinds), connections, or events hit */
    uint64_t crash_conns, crash_lost;     /* --fault crash: connections closed, requests left unanswered */
    uint64_t client_aborts; /* responses the client gave up mid-way: HTTP/1.1 closed with them pending, or HTTP/2
                               RST_STREAM CANCEL before their end (a client's cancellation, as a server sees it) */
    uint64_t tool_requests; /* completion requests that carried tools */
    uint64_t tool_calls;    /* answered with a tool call */
} sg_mock_stats_t;

typedef struct sg_mock_worker sg_mock_worker_t;

/* --max-batch: the batch slots and their FIFO, shared by every worker (mock_batch.c). */
typedef struct sg_mock_batch sg_mock_batch_t;
/* GET /metrics: each worker's admitted completions (mock_metrics.c), one per worker. */
typedef struct sg_mock_load sg_mock_load_t;

/* Shared by all workers; read-only after start except the atomics and the batch (its own lock). */
typedef struct sg_mock_server {
    sg_mock_opts_t opts;
    int io_backend; /* sg_io_backend_t the workers use (sg_loop_pick) */
    int64_t start_ns;
    /* what --fault's crash and stall-read times count from: start_ns, or (--fault-origin request) the arrival of
     * the first request any worker takes; 0 until then */
    _Atomic int64_t fault_origin_ns;
    int64_t ttft_ns, itl_ns;
    sg_addr_t listen_addr;                /* where the workers listen (again, after --fault crash) */
    double req_fault_sum, conn_fault_sum; /* --fault: the fractions of the per-request and per-connection kinds */
    int record_fd;                        /* -1: no record */
    int send_log_fd;                      /* --send-log; -1: none */
    sg_tokenizer_t *tok;                  /* --tokenizer, NULL without; each worker has its own encoder */
    sg_tls_opts_t tls_opts;               /* --tls: each worker makes its own server context from these */
    uint64_t max_conns;
    atomic_uint_fast64_t conns_open;
    atomic_uint_fast64_t conn_serial;
    atomic_bool stop;
    sg_mock_batch_t *batch;        /* --max-batch; NULL without */
    struct sg_mock_pcache *pcache; /* --prefix-cache; NULL without */
    sg_mock_load_t *load;          /* one per worker: what GET /metrics counts */
    /* start-up hand-shake: each worker reports once its ring is up and accepting */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned reported;
} sg_mock_server_t;

/* --prefix-cache (mock_pcache.c): the words of the longest prefix of the prompt p (whole words) that an earlier
 * prompt had; the prompt's prefixes are remembered for the next. Thread-safe. */
typedef struct sg_mock_pcache sg_mock_pcache_t;
sg_mock_pcache_t *sg_mock_pcache_new(void);
void sg_mock_pcache_free(sg_mock_pcache_t *c);
uint64_t sg_mock_pcache_lookup(sg_mock_pcache_t *c, const char *p, size_t len);

sg_mock_batch_t *sg_mock_batch_new(uint32_t slots);
void sg_mock_batch_free(sg_mock_batch_t *b);
/* When j's generation starts and how long its first token takes (set j->start_ns, j->ttft_ns): at once, or, with
 * --max-batch, when a slot frees. j->n and j->usage_prompt must be set. */
void sg_mock_job_schedule(const struct sg_mock_server *s, sg_mock_job_t *j, int64_t now, unsigned worker);

/* GET /metrics (mock_metrics.c): what the workers admitted, counted at a scrape. */
sg_mock_load_t *sg_mock_load_new(unsigned workers);
void sg_mock_load_free(sg_mock_load_t *l, unsigned workers);
void sg_mock_load_add(sg_mock_load_t *loads, unsigned worker, const sg_mock_job_t *j, int64_t itl_ns, int64_t now);
/* Images and audio a request brought (counted at arrival, for /metrics' surge_mock_* counters). */
void sg_mock_load_media(sg_mock_load_t *loads, unsigned worker, const sg_oai_media_t *m);
/* The body of a scrape at now (Prometheus text, vLLM's names) into buf; its length. */
size_t sg_mock_metrics_text(const struct sg_mock_server *s, int64_t now, char *buf, size_t cap);
#define SG_MOCK_METRICS_MAX 2048
/* The whole HTTP/1.1 response of a scrape at now (Connection: close when close). */
void sg_mock_render_metrics(sg_mock_buf_t *b, const struct sg_mock_server *s, int64_t now, bool close);
void sg_mock_batch_stats(sg_mock_batch_t *b, uint64_t *admitted, uint64_t *waited, double *mean_wait_ms,
                         double *max_wait_ms);

/* ---------- KServe v2 gRPC (mock_grpc.c) ---------- */

struct sg_kserve_dec;

/* What a gRPC call's job needs from its worker. */
typedef struct {
    const sg_mock_server_t *srv;
    sg_rng_t *rng;              /* --error-rate / --drop-rate draws */
    struct sg_kserve_dec *kdec; /* request decoder of the worker */
    sg_mock_buf_t *rec;         /* --record: the worker's record buffer; NULL without */
    int64_t *rec_first_ns;      /* when the buffer's first line was added */
    sg_mock_stats_t *st;
    unsigned worker;
    uint64_t conn;
} sg_mock_grpc_ctx_t;

/* The path is a method of inference.GRPCInferenceService (a gRPC call to serve). */
bool sg_mock_grpc_path(sg_slice_t path);
/*
 * Turn j into the answer to a gRPC call on path with request body (a gRPC frame): ModelInfer, ModelStreamInfer
 * (timing, tokens, error and drop draws as for completions), ServerLive/ServerReady/ModelReady (true); anything
 * else UNIMPLEMENTED, a request without a text_input INVALID_ARGUMENT. 0, or SG_ENOMEM.
 */
SG_WUR int sg_mock_grpc_build(const sg_mock_grpc_ctx_t *x, sg_mock_job_t *j, sg_slice_t path, sg_slice_t body,
                              int64_t now);
/* The response messages (gRPC frames): token k of a ModelStreamInfer job; the whole ModelInfer response; the
 * constant message. */
void sg_mock_grpc_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k);
void sg_mock_grpc_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j);
void sg_mock_grpc_render_const(sg_mock_buf_t *b);
/* grpc-status (and grpc-message when not OK) fields of a status: f needs room for 2; returns the count. buf holds
 * the status digits and must outlive f. */
size_t sg_mock_grpc_status_fields(int code, sg_h2srv_field_t *f, char buf[4]);

/* A worker for listen_fd (owned by the worker from now on). NULL on allocation failure. Main thread. */
sg_mock_worker_t *sg_mock_worker_new(sg_mock_server_t *srv, unsigned idx, int listen_fd);
/* Start its thread. 0 or -errno. */
SG_WUR int sg_mock_worker_start(sg_mock_worker_t *w);
/* After the worker reported: 0 when it runs, else the -errno that stopped it, with a message in err. */
int sg_mock_worker_init_error(const sg_mock_worker_t *w, const char **what);
/* Make a running worker look at srv->stop now. Any thread. */
void sg_mock_worker_wake(sg_mock_worker_t *w);
/* Join the thread, release everything, add its counters into st. Main thread. */
void sg_mock_worker_finish(sg_mock_worker_t *w, sg_mock_stats_t *st);

#endif
