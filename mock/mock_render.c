/*
 * The bytes the mock sends. Everything constant (whole error responses, the per-token JSON fragments, the
 * text of n tokens) is rendered once at start; a request adds only its head (id, created, model) and numbers.
 * Lengths are computed before writing, so a response is written once, front to back, with no scratch copy.
 */
#include "mock_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------- buffers ---------- */

int sg_mock_buf_grow(sg_mock_buf_t *b, size_t n)
{
    size_t need = b->len + n;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return -ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static const char hex_digits[] = "0123456789abcdef";

void sg_mock_buf_json_raw(sg_mock_buf_t *b, sg_slice_t s)
{
    /*
     * The scanner hands strings over still escaped, so they can go back out verbatim; only raw control bytes
     * (which a lenient scanner might have let through) would break the JSON we write.
     */
    size_t run = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.base[i];
        if (SG_LIKELY(ch >= 0x20))
            continue;
        sg_mock_buf_mem(b, s.base + run, i - run);
        char esc[6] = {'\\', 'u', '0', '0', hex_digits[ch >> 4], hex_digits[ch & 15]};
        sg_mock_buf_mem(b, esc, sizeof(esc));
        run = i + 1;
    }
    sg_mock_buf_mem(b, s.base + run, s.len - run);
}

void sg_mock_record_head(sg_mock_buf_t *b, int64_t *first_ns, int64_t now, uint64_t worker, uint64_t conn,
                         sg_slice_t path)
{
    if (b->len == 0)
        *first_ns = now;
    SG_MOCK_BUF_LIT(b, "{\"t_ns\":");
    sg_mock_buf_u64(b, (uint64_t)now);
    SG_MOCK_BUF_LIT(b, ",\"worker\":");
    sg_mock_buf_u64(b, worker);
    SG_MOCK_BUF_LIT(b, ",\"conn\":");
    sg_mock_buf_u64(b, conn);
    SG_MOCK_BUF_LIT(b, ",\"path\":\"");
    sg_mock_buf_json_escape(b, path);
    SG_MOCK_BUF_LIT(b, "\"");
}

void sg_mock_buf_json_escape(sg_mock_buf_t *b, sg_slice_t s)
{
    size_t run = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.base[i];
        if (SG_LIKELY(ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\'))
            continue;
        sg_mock_buf_mem(b, s.base + run, i - run);
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            sg_mock_buf_mem(b, esc, sizeof(esc));
        } else {
            /* control bytes and bytes >= 0x7f (a path need not be UTF-8): keep the output valid JSON */
            char esc[6] = {'\\', 'u', '0', '0', hex_digits[ch >> 4], hex_digits[ch & 15]};
            sg_mock_buf_mem(b, esc, sizeof(esc));
        }
        run = i + 1;
    }
    sg_mock_buf_mem(b, s.base + run, s.len - run);
}

/* ---------- constant parts ---------- */

/*
 * The token vocabulary: common English words that GPT-family BPE tokenizers encode as one token each when
 * preceded by a space, so a client counting tokens with a real tokenizer sees n tokens for n words.
 */
static const char *const words[] = {" the", " of", " and",  " to",  " in", " is", " that", " for",
                                    " it",  " as", " with", " was", " on", " be", " at",   " by"};
#define N_WORDS SG_ARRAY_LEN(words)

static char cycle_text[128]; /* all words once, in order */
static size_t cycle_len;
static size_t prefix_len[N_WORDS + 1]; /* text length of the first i words */

/* One token's choices fragment, per kind, word and whether it is the last token. */
#define FRAG_CAP 112
static char frag[2][N_WORDS][2][FRAG_CAP];
static uint8_t frag_len[2][N_WORDS][2];
/* The same for chat's reasoning tokens (--reasoning-tokens), in the field --reasoning-field names. */
static char reasoning_frag[N_WORDS][2][FRAG_CAP];
static uint8_t reasoning_frag_len[N_WORDS][2];
static const char *reasoning_field = "reasoning_content";

typedef struct {
    char ka[512];
    size_t ka_len;
    size_t ka_head_len; /* ka up to its head's last field line, without the blank line that ends the head */
    char close[512];
    size_t close_len;
    int code;
    const char *body;
} static_resp_t;
static static_resp_t statics[SG_MOCK_ST_COUNT];

static void static_set(sg_mock_static_t id, const char *status, const char *body)
{
    static_resp_t *r = &statics[id];
    size_t blen = strlen(body);
    int n =
        snprintf(r->ka, sizeof(r->ka), "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 status, blen, body);
    r->ka_len = (size_t)n;
    r->ka_head_len = r->ka_len - blen - 2;
    n = snprintf(r->close, sizeof(r->close),
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 status, blen, body);
    r->close_len = (size_t)n;
    r->code = atoi(status);
    r->body = body;
}

void sg_mock_render_init(const sg_mock_opts_t *o)
{
    reasoning_field = o->reasoning_field_short ? "reasoning" : "reasoning_content";
    cycle_len = 0;
    for (size_t i = 0; i < N_WORDS; i++) {
        prefix_len[i] = cycle_len;
        size_t wl = strlen(words[i]);
        memcpy(cycle_text + cycle_len, words[i], wl);
        cycle_len += wl;
    }
    prefix_len[N_WORDS] = cycle_len;

    for (int last = 0; last < 2; last++) {
        const char *fin = last ? "\"length\"" : "null";
        for (size_t i = 0; i < N_WORDS; i++) {
            int n = snprintf(frag[SG_OAI_CHAT][i][last], FRAG_CAP,
                             "{\"index\":0,\"delta\":{\"content\":\"%s\"},\"logprobs\":null,\"finish_reason\":%s}]}",
                             words[i], fin);
            frag_len[SG_OAI_CHAT][i][last] = (uint8_t)n;
            n = snprintf(frag[SG_OAI_COMPLETIONS][i][last], FRAG_CAP,
                         "{\"index\":0,\"text\":\"%s\",\"logprobs\":null,\"finish_reason\":%s}]}", words[i], fin);
            frag_len[SG_OAI_COMPLETIONS][i][last] = (uint8_t)n;
            n = snprintf(reasoning_frag[i][last], FRAG_CAP,
                         "{\"index\":0,\"delta\":{\"%s\":\"%s\"},\"logprobs\":null,\"finish_reason\":%s}]}",
                         reasoning_field, words[i], fin);
            reasoning_frag_len[i][last] = (uint8_t)n;
        }
    }

    static_set(SG_MOCK_ST_HEALTH, "200 OK", "");
    static_set(SG_MOCK_ST_MODELS, "200 OK",
               "{\"object\":\"list\",\"data\":[{\"id\":\"mock-model\",\"object\":\"model\",\"owned_by\":\"surge\"}]}");
    static_set(SG_MOCK_ST_NOT_FOUND, "404 Not Found",
               "{\"error\":{\"message\":\"no route for this path\",\"type\":\"not_found_error\",\"code\":404}}");
    static_set(SG_MOCK_ST_METHOD, "405 Method Not Allowed",
               "{\"error\":{\"message\":\"method not allowed for this path\",\"type\":\"invalid_request_error\","
               "\"code\":405}}");
    static_set(SG_MOCK_ST_BAD_JSON, "400 Bad Request",
               "{\"error\":{\"message\":\"request body is not a valid JSON object\",\"type\":\"invalid_request_error\","
               "\"code\":400}}");
    static_set(SG_MOCK_ST_NO_PROMPT, "400 Bad Request",
               "{\"error\":{\"message\":\"request has no messages (chat) or prompt (completions)\","
               "\"type\":\"invalid_request_error\",\"code\":400}}");
    static_set(SG_MOCK_ST_BAD_HTTP, "400 Bad Request",
               "{\"error\":{\"message\":\"malformed HTTP request\",\"type\":\"invalid_request_error\",\"code\":400}}");
    static_set(SG_MOCK_ST_TOO_BIG, "413 Content Too Large",
               "{\"error\":{\"message\":\"request larger than 8 MiB\",\"type\":\"invalid_request_error\","
               "\"code\":413}}");
    static_set(SG_MOCK_ST_METRICS, "200 OK", ""); /* the status; the body is sg_mock_metrics_text's */
    static_set(SG_MOCK_ST_INJECTED, "500 Internal Server Error",
               "{\"error\":{\"message\":\"injected error (--error-rate)\",\"type\":\"server_error\",\"code\":500}}");
}

/*
 * The connection fields of an HTTP/1.1 head (each line with its CRLF; the head's blank line is the caller's):
 * Connection: close when the connection ends after j and says so, else the Keep-Alive advertisement when j has
 * one, else nothing. d needs room for KA_FIELDS_MAX; returns the bytes written.
 */
#define KA_FIELDS_MAX 64
static size_t put_conn_fields(char *d, const sg_mock_job_t *j)
{
    static const char close[] = "Connection: close\r\n", ka[] = "Keep-Alive: timeout=5, max=";
    char *p = d;
    if (j->close_after && !j->close_silent) {
        memcpy(p, close, sizeof(close) - 1);
        p += sizeof(close) - 1;
    } else if (j->ka_max) {
        memcpy(p, ka, sizeof(ka) - 1);
        p += sizeof(ka) - 1;
        p += sg_mock_u64_fmt(p, j->ka_max);
        *p++ = '\r';
        *p++ = '\n';
    }
    return (size_t)(p - d);
}

void sg_mock_render_static(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    const static_resp_t *r = &statics[j->static_id];
    if (j->close_after && !j->close_silent) {
        sg_mock_buf_mem(b, r->close, r->close_len);
        return;
    }
    if (!j->ka_max) {
        sg_mock_buf_mem(b, r->ka, r->ka_len);
        return;
    }
    char *d = sg_mock_buf_room(b, r->ka_len + KA_FIELDS_MAX);
    if (!d)
        return;
    char *p = d;
    memcpy(p, r->ka, r->ka_head_len);
    p += r->ka_head_len;
    p += put_conn_fields(p, j);
    memcpy(p, r->ka + r->ka_head_len, r->ka_len - r->ka_head_len); /* the blank line and the body */
    p += r->ka_len - r->ka_head_len;
    b->len += (size_t)(p - d);
}

/* ---------- HTTP/1.1 framing around bodies rendered in place ---------- */

#define BODY_HEAD_MAX (128 + KA_FIELDS_MAX) /* status line, Content-Type, Content-Length, connection fields */
#define CHUNK_HEAD_MAX 10                   /* eight hex digits (a chunk under 4 GiB) and CRLF */

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "200 OK";
    case 400:
        return "400 Bad Request";
    case 404:
        return "404 Not Found";
    case 405:
        return "405 Method Not Allowed";
    default:
        return "500 Internal Server Error";
    }
}

/* Reserve room for a head of up to max bytes; the bytes rendered next go after it. */
static size_t head_reserve(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t max)
{
    size_t mark = b->len;
    if (!j->h2_id && sg_mock_buf_room(b, max))
        b->len += max;
    return mark;
}

/* Put the head (n bytes) at mark, right before what was rendered after the reserved max bytes. */
static void head_place(sg_mock_buf_t *b, size_t mark, size_t max, const char *head, size_t n)
{
    size_t payload = b->len - mark - max;
    memmove(b->p + mark + n, b->p + mark + max, payload);
    memcpy(b->p + mark, head, n);
    b->len = mark + n + payload;
}

size_t sg_mock_body_open(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    return head_reserve(b, j, BODY_HEAD_MAX);
}

void sg_mock_body_close(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t mark, int status)
{
    if (j->h2_id || b->oom)
        return; /* HTTP/2: the caller's HEADERS frame; out of memory: the connection is closed */
    char head[BODY_HEAD_MAX];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n",
                     status_text(status), b->len - mark - BODY_HEAD_MAX);
    size_t hl = (size_t)n;
    hl += put_conn_fields(head + hl, j);
    head[hl++] = '\r';
    head[hl++] = '\n';
    head_place(b, mark, BODY_HEAD_MAX, head, hl);
}

size_t sg_mock_chunk_open(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    return head_reserve(b, j, CHUNK_HEAD_MAX);
}

void sg_mock_chunk_close(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t mark)
{
    if (j->h2_id || b->oom)
        return;
    size_t payload = b->len - mark - CHUNK_HEAD_MAX;
    if (payload == 0) { /* a zero-size chunk would end the response */
        b->len = mark;
        return;
    }
    char head[CHUNK_HEAD_MAX], hex[8];
    size_t hn = 0, n = 0;
    for (size_t v = payload; v; v >>= 4)
        hex[hn++] = hex_digits[v & 15];
    while (hn)
        head[n++] = hex[--hn];
    head[n++] = '\r';
    head[n++] = '\n';
    head_place(b, mark, CHUNK_HEAD_MAX, head, n);
    SG_MOCK_BUF_LIT(b, "\r\n");
}

void sg_mock_render_metrics(sg_mock_buf_t *b, const sg_mock_server_t *s, int64_t now, bool close)
{
    char body[SG_MOCK_METRICS_MAX];
    size_t n = sg_mock_metrics_text(s, now, body, sizeof body);
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                      "Content-Length: %zu\r\n%s\r\n",
                      n, close ? "Connection: close\r\n" : "");
    sg_mock_buf_mem(b, head, (size_t)hl);
    sg_mock_buf_mem(b, body, n);
}

sg_slice_t sg_mock_static_body(sg_mock_static_t id, int *status)
{
    const static_resp_t *r = &statics[id];
    *status = r->code;
    return (sg_slice_t){r->body, strlen(r->body)};
}

/* ---------- per request ---------- */

int sg_mock_render_head(sg_mock_job_t *j, uint64_t id, int64_t created, sg_slice_t model, bool stream)
{
    static const char def_model[] = "mock-model";
    if (!model.base || model.len == 0)
        model = (sg_slice_t){def_model, sizeof(def_model) - 1};
    const char *object;
    if (j->kind == SG_OAI_CHAT)
        object = stream ? "chat.completion.chunk" : "chat.completion";
    else
        object = "text_completion";

    /* Render into a buffer that starts as the inline array; it only leaves it for very long model names. */
    sg_mock_buf_t b = {.p = NULL, .len = 0, .cap = 0};
    char num[20];
    size_t model_out = model.len;
    for (size_t i = 0; i < model.len; i++)
        if ((unsigned char)model.base[i] < 0x20)
            model_out += 5;
    /* fixed text 80 bytes, two numbers of up to 20 digits, the object name, the model as written */
    size_t worst = 80 + 40 + strlen(object) + model_out;
    if (worst <= sizeof(j->head_inline)) {
        b.p = j->head_inline;
        b.cap = sizeof(j->head_inline);
    }
    SG_MOCK_BUF_LIT(&b, "{\"id\":\"mock-");
    sg_mock_buf_mem(&b, num, sg_mock_u64_fmt(num, id));
    SG_MOCK_BUF_LIT(&b, "\",\"object\":\"");
    sg_mock_buf_mem(&b, object, strlen(object));
    SG_MOCK_BUF_LIT(&b, "\",\"created\":");
    sg_mock_buf_mem(&b, num, sg_mock_u64_fmt(num, (uint64_t)(created > 0 ? created : 0)));
    SG_MOCK_BUF_LIT(&b, ",\"model\":\"");
    sg_mock_buf_json_raw(&b, model);
    SG_MOCK_BUF_LIT(&b, "\",\"choices\":[");
    if (b.oom) {
        if (b.p != j->head_inline)
            free(b.p);
        return -ENOMEM;
    }
    j->head = b.p;
    j->head_len = (uint32_t)b.len;
    return 0;
}

sg_slice_t sg_mock_word(uint32_t k)
{
    const char *w = words[k % N_WORDS];
    return (sg_slice_t){w, strlen(w)};
}

size_t sg_mock_text_len(uint32_t n)
{
    return (size_t)(n / N_WORDS) * cycle_len + prefix_len[n % N_WORDS];
}

void sg_mock_text(char *d, uint32_t n)
{
    for (uint32_t c = 0; c < n / N_WORDS; c++) {
        memcpy(d, cycle_text, cycle_len);
        d += cycle_len;
    }
    memcpy(d, cycle_text, prefix_len[n % N_WORDS]);
}

size_t sg_mock_text_range_len(uint32_t from, uint32_t to)
{
    return sg_mock_text_len(to) - sg_mock_text_len(from);
}

void sg_mock_buf_text(sg_mock_buf_t *b, uint32_t from, uint32_t to)
{
    if (from >= to)
        return;
    char *d = sg_mock_buf_room(b, sg_mock_text_range_len(from, to));
    if (!d)
        return;
    char *p = d;
    uint32_t k = from;
    for (; k < to && k % N_WORDS; k++) { /* up to a cycle's start */
        size_t wl = prefix_len[k % N_WORDS + 1] - prefix_len[k % N_WORDS];
        memcpy(p, cycle_text + prefix_len[k % N_WORDS], wl);
        p += wl;
    }
    for (; to - k >= N_WORDS; k += N_WORDS) {
        memcpy(p, cycle_text, cycle_len);
        p += cycle_len;
    }
    memcpy(p, cycle_text, prefix_len[to - k]);
    p += prefix_len[to - k];
    b->len += (size_t)(p - d);
}

static size_t text_len(uint32_t n)
{
    return (size_t)(n / N_WORDS) * cycle_len + prefix_len[n % N_WORDS];
}

static void put_text(char *d, uint32_t n)
{
    for (uint32_t c = 0; c < n / N_WORDS; c++) {
        memcpy(d, cycle_text, cycle_len);
        d += cycle_len;
    }
    memcpy(d, cycle_text, prefix_len[n % N_WORDS]);
}

/* {"prompt_tokens":W,"completion_tokens":n,"total_tokens":T} into d (room for USAGE_MAX), with the reasoning
 * tokens' details when the job has any; returns the length. */
#define USAGE_MAX 200
static size_t put_usage(char *d, const sg_mock_job_t *j)
{
    static const char a[] = "{\"prompt_tokens\":", b[] = ",\"completion_tokens\":", c[] = ",\"total_tokens\":";
    char *p = d;
    memcpy(p, a, sizeof(a) - 1);
    p += sizeof(a) - 1;
    p += sg_mock_u64_fmt(p, j->usage_prompt);
    memcpy(p, b, sizeof(b) - 1);
    p += sizeof(b) - 1;
    p += sg_mock_u64_fmt(p, j->usage_completion);
    memcpy(p, c, sizeof(c) - 1);
    p += sizeof(c) - 1;
    p += sg_mock_u64_fmt(p, j->usage_prompt + j->usage_completion);
    if (j->usage_cached >= 0) {
        static const char k[] = ",\"prompt_tokens_details\":{\"cached_tokens\":";
        memcpy(p, k, sizeof(k) - 1);
        p += sizeof(k) - 1;
        p += sg_mock_u64_fmt(p, (uint64_t)j->usage_cached);
        *p++ = '}';
    }
    if (j->reasoning) {
        static const char r[] = ",\"completion_tokens_details\":{\"reasoning_tokens\":";
        memcpy(p, r, sizeof(r) - 1);
        p += sizeof(r) - 1;
        p += sg_mock_u64_fmt(p, j->reasoning);
        *p++ = '}';
    }
    *p++ = '}';
    return (size_t)(p - d);
}

/* Chat with --reasoning-tokens: the message has the reasoning text beside the content (null when every token was
 * reasoning). Rendered in place, off the fast path above. */
static void render_full_reasoning(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t mark = sg_mock_body_open(b, j);
    sg_mock_buf_mem(b, j->head, j->head_len);
    SG_MOCK_BUF_LIT(b, "{\"index\":0,\"message\":{\"role\":\"assistant\",\"");
    sg_mock_buf_mem(b, reasoning_field, strlen(reasoning_field));
    SG_MOCK_BUF_LIT(b, "\":\"");
    sg_mock_buf_text(b, 0, j->reasoning);
    if (j->reasoning < j->n) {
        SG_MOCK_BUF_LIT(b, "\",\"content\":\"");
        sg_mock_buf_text(b, j->reasoning, j->n);
        SG_MOCK_BUF_LIT(b, "\"},\"logprobs\":null,\"finish_reason\":\"length\"}]");
    } else {
        SG_MOCK_BUF_LIT(b, "\",\"content\":null},\"logprobs\":null,\"finish_reason\":\"length\"}]");
    }
    if (j->send_usage) {
        char *d = sg_mock_buf_room(b, 9 + USAGE_MAX);
        if (d) {
            memcpy(d, ",\"usage\":", 9);
            b->len += 9 + put_usage(d + 9, j);
        }
    }
    SG_MOCK_BUF_LIT(b, "}");
    sg_mock_body_close(b, j, mark, 200);
}

void sg_mock_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    static const char chat_open[] = "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"";
    static const char chat_close[] = "\"},\"logprobs\":null,\"finish_reason\":\"length\"}]";
    static const char cmpl_open[] = "{\"index\":0,\"text\":\"";
    static const char cmpl_close[] = "\",\"logprobs\":null,\"finish_reason\":\"length\"}]";
    if (SG_UNLIKELY(j->tool)) {
        sg_mock_tool_render_full(b, j);
        return;
    }
    if (SG_UNLIKELY(j->kind > SG_OAI_COMPLETIONS)) {
        sg_mock_api_render_full(b, j);
        return;
    }
    if (SG_UNLIKELY(j->reasoning)) {
        render_full_reasoning(b, j);
        return;
    }
    bool chat = j->kind == SG_OAI_CHAT;
    char usage[USAGE_MAX + 16];
    size_t usage_len = 0;
    if (j->send_usage) {
        static const char key[] = ",\"usage\":";
        memcpy(usage, key, sizeof(key) - 1);
        usage_len = sizeof(key) - 1;
        usage_len += put_usage(usage + usage_len, j);
    }
    size_t tl = text_len(j->n);
    size_t body = j->head_len +
                  (chat ? sizeof(chat_open) + sizeof(chat_close) : sizeof(cmpl_open) + sizeof(cmpl_close)) - 2 + tl +
                  usage_len + 1;

    static const char h1[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ";
    char *d = sg_mock_buf_room(b, sizeof(h1) + 20 + 4 + KA_FIELDS_MAX + body);
    if (!d)
        return;
    char *p = d;
    if (!j->h2_id) { /* HTTP/2 sends the body only: its head is a HEADERS frame */
        memcpy(p, h1, sizeof(h1) - 1);
        p += sizeof(h1) - 1;
        p += sg_mock_u64_fmt(p, body);
        *p++ = '\r';
        *p++ = '\n';
        p += put_conn_fields(p, j);
        *p++ = '\r';
        *p++ = '\n';
    }
    memcpy(p, j->head, j->head_len);
    p += j->head_len;
    if (chat) {
        memcpy(p, chat_open, sizeof(chat_open) - 1);
        p += sizeof(chat_open) - 1;
    } else {
        memcpy(p, cmpl_open, sizeof(cmpl_open) - 1);
        p += sizeof(cmpl_open) - 1;
    }
    put_text(p, j->n);
    p += tl;
    if (chat) {
        memcpy(p, chat_close, sizeof(chat_close) - 1);
        p += sizeof(chat_close) - 1;
    } else {
        memcpy(p, cmpl_close, sizeof(cmpl_close) - 1);
        p += sizeof(cmpl_close) - 1;
    }
    memcpy(p, usage, usage_len);
    p += usage_len;
    *p++ = '}';
    b->len += (size_t)(p - d);
}

/* One HTTP chunk holding one SSE event: "data: " head frag "\n\n". */
static void put_event(sg_mock_buf_t *b, const sg_mock_job_t *j, const char *frag_p, size_t frag_n)
{
    size_t payload = 6 + j->head_len + frag_n + 2;
    char *d = sg_mock_buf_room(b, 8 + 2 + payload + 2);
    if (!d)
        return;
    char *p = d;
    if (j->h2_id) {
        memcpy(p, "data: ", 6); /* HTTP/2: DATA frames carry the events, no chunk framing */
        p += 6;
    } else {
        char hex[8];
        size_t hn = 0;
        for (size_t v = payload; v; v >>= 4)
            hex[hn++] = hex_digits[v & 15];
        while (hn)
            *p++ = hex[--hn];
        memcpy(p, "\r\ndata: ", 8);
        p += 8;
    }
    memcpy(p, j->head, j->head_len);
    p += j->head_len;
    memcpy(p, frag_p, frag_n);
    p += frag_n;
    memcpy(p, "\n\n\r\n", 4);
    p += j->h2_id ? 2 : 4;
    b->len += (size_t)(p - d);
}

void sg_mock_render_sse_head(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (!j->h2_id) { /* HTTP/2: the head is a HEADERS frame */
        SG_MOCK_BUF_LIT(b, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                           "Transfer-Encoding: chunked\r\n");
        char *d = sg_mock_buf_room(b, KA_FIELDS_MAX + 2);
        if (d) {
            size_t n = put_conn_fields(d, j);
            d[n++] = '\r';
            d[n++] = '\n';
            b->len += n;
        }
    }
}

void sg_mock_render_sse_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (!j->h2_id)
        SG_MOCK_BUF_LIT(b, "0\r\n\r\n");
}

void sg_mock_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (SG_UNLIKELY(j->tool)) {
        sg_mock_tool_render_stream_start(b, j);
        return;
    }
    if (SG_UNLIKELY(j->kind > SG_OAI_COMPLETIONS)) {
        sg_mock_api_render_stream_start(b, j);
        return;
    }
    sg_mock_render_sse_head(b, j);
    if (j->kind == SG_OAI_CHAT) {
        static const char role[] = "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                                   "\"finish_reason\":null}]}";
        put_event(b, j, role, sizeof(role) - 1);
    }
}

void sg_mock_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    if (SG_UNLIKELY(j->tool)) {
        sg_mock_tool_render_token(b, j, k);
        return;
    }
    if (SG_UNLIKELY(j->kind > SG_OAI_COMPLETIONS)) {
        sg_mock_api_render_token(b, j, k);
        return;
    }
    int last = k + 1 == j->n;
    size_t w = k % N_WORDS;
    if (SG_UNLIKELY(k < j->reasoning))
        put_event(b, j, reasoning_frag[w][last], reasoning_frag_len[w][last]);
    else
        put_event(b, j, frag[j->kind][w][last], frag_len[j->kind][w][last]);
}

void sg_mock_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (SG_UNLIKELY(j->tool)) {
        sg_mock_tool_render_stream_end(b, j);
        return;
    }
    if (SG_UNLIKELY(j->kind > SG_OAI_COMPLETIONS)) {
        sg_mock_api_render_stream_end(b, j);
        return;
    }
    if (j->include_usage) {
        char u[USAGE_MAX + 16];
        static const char open[] = "],\"usage\":";
        memcpy(u, open, sizeof(open) - 1);
        size_t n = sizeof(open) - 1;
        n += put_usage(u + n, j);
        u[n++] = '}';
        put_event(b, j, u, n);
    }
    if (j->h2_id)
        SG_MOCK_BUF_LIT(b, "data: [DONE]\n\n");
    else
        SG_MOCK_BUF_LIT(b, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
}
