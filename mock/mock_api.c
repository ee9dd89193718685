/*
 * The mock's answers for the APIs beside OpenAI chat and completions, each in its own shape (docs/endpoints.md):
 *   embeddings   one --embedding-dim vector per input, after the prefill (TTFT) alone: no output tokens;
 *   rankings     one score per passage: NIM's rankings (sorted, with logits), TEI's bare array, Cohere's and
 *                llama.cpp's results (with usage), after the TTFT;
 *   responses    OpenAI's Responses API: typed SSE events (response.output_text.delta per token) or one body;
 *   messages     Anthropic's Messages API: typed SSE events (content_block_delta per token) or one body;
 *   generate     Hugging Face TGI: data: token events (the last with generated_text and details) or one body.
 * Timing, faults and usage follow chat's (mock_worker.c schedules every job alike). --reasoning-tokens makes the
 * first tokens reasoning: a reasoning output item (responses) or a thinking block (messages) before the text.
 *
 * These are not the mock's hot path, so responses are rendered straight into the output buffer with the buffer's
 * appends; the HTTP/1.1 head or chunk size goes in front afterwards (sg_mock_body_open/_close, _chunk_).
 */
#include "mock_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char def_model[] = "mock-model";

/* ---------- embeddings' vectors, rendered once ---------- */

#define VECTORS 8 /* input i gets vector i % VECTORS: inputs differ, and no vector is formatted per request */
static char *vec_text[VECTORS];
static size_t vec_len[VECTORS];

int sg_mock_api_init(const sg_mock_opts_t *o)
{
    uint32_t dim = o->embedding_dim ? o->embedding_dim : SG_MOCK_DEFAULT_EMBEDDING_DIM;
    for (int v = 0; v < VECTORS; v++) {
        /* a unit vector, as the models' normalized embeddings are: 10 bytes a component at most ("-0.123456,") */
        char *t = malloc((size_t)dim * 10 + 1);
        if (!t) {
            sg_mock_api_free();
            return SG_ENOMEM;
        }
        double norm = 0;
        for (uint32_t k = 0; k < dim; k++) {
            double x = sin(0.7 * (k + 1) * (v + 1) + v);
            norm += x * x;
        }
        norm = sqrt(norm);
        size_t len = 0;
        for (uint32_t k = 0; k < dim; k++) {
            double x = sin(0.7 * (k + 1) * (v + 1) + v) / norm;
            len += (size_t)snprintf(t + len, 12, k ? ",%.6f" : "%.6f", x);
        }
        vec_text[v] = t;
        vec_len[v] = len;
    }
    return 0;
}

void sg_mock_api_free(void)
{
    for (int v = 0; v < VECTORS; v++) {
        free(vec_text[v]);
        vec_text[v] = NULL;
    }
}

/* ---------- pieces ---------- */

int sg_mock_api_head(sg_mock_job_t *j, sg_slice_t model)
{
    if (!model.base || model.len == 0)
        model = (sg_slice_t){def_model, sizeof(def_model) - 1};
    if (model.len > sizeof(j->head_inline)) {
        char *h = malloc(model.len);
        if (!h)
            return SG_ENOMEM;
        j->head = h;
    }
    memcpy(j->head, model.base, model.len);
    j->head_len = (uint32_t)model.len;
    return 0;
}

static void put_str(sg_mock_buf_t *b, const char *s)
{
    sg_mock_buf_mem(b, s, strlen(s));
}

static void put_model(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "\"model\":\"");
    sg_mock_buf_json_raw(b, (sg_slice_t){j->head, j->head_len});
    SG_MOCK_BUF_LIT(b, "\"");
}

/* "<prefix>mock-<serial>": every object of one response shares the number. */
static void put_id(sg_mock_buf_t *b, const char *prefix, const sg_mock_job_t *j)
{
    sg_mock_buf_mem(b, prefix, strlen(prefix));
    SG_MOCK_BUF_LIT(b, "mock-");
    sg_mock_buf_u64(b, j->serial);
}

static void put_i64(sg_mock_buf_t *b, int64_t v)
{
    sg_mock_buf_u64(b, (uint64_t)(v > 0 ? v : 0));
}

/* x with the given digits after the point */
static void put_fixed(sg_mock_buf_t *b, int digits, double x)
{
    char num[32];
    int n = snprintf(num, sizeof num, "%.*f", digits, x);
    sg_mock_buf_mem(b, num, (size_t)n);
}

/* The tokens' text as a JSON string, quotes included. */
static void put_text(sg_mock_buf_t *b, uint32_t from, uint32_t to)
{
    SG_MOCK_BUF_LIT(b, "\"");
    sg_mock_buf_text(b, from, to);
    SG_MOCK_BUF_LIT(b, "\"");
}

static void put_word(sg_mock_buf_t *b, uint32_t k)
{
    SG_MOCK_BUF_LIT(b, "\"");
    sg_mock_buf_slice(b, sg_mock_word(k));
    SG_MOCK_BUF_LIT(b, "\"");
}

/*
 * One SSE event in its own HTTP/1.1 chunk. Typed APIs (responses, messages) name the type on an event: line and
 * open the data object with it ({"type":"T", and, with seq >= 0, "sequence_number":seq); TGI writes "data:"
 * with no space, as its server does, and the caller writes the whole object. ev_end closes either.
 */
static size_t ev_typed(sg_mock_buf_t *b, const sg_mock_job_t *j, const char *type, int64_t seq)
{
    size_t mark = sg_mock_chunk_open(b, j);
    size_t tl = strlen(type);
    SG_MOCK_BUF_LIT(b, "event: ");
    sg_mock_buf_mem(b, type, tl);
    SG_MOCK_BUF_LIT(b, "\ndata: {\"type\":\"");
    sg_mock_buf_mem(b, type, tl);
    SG_MOCK_BUF_LIT(b, "\"");
    if (seq >= 0) {
        SG_MOCK_BUF_LIT(b, ",\"sequence_number\":");
        sg_mock_buf_u64(b, (uint64_t)seq);
    }
    return mark;
}

static void ev_end(sg_mock_buf_t *b, const sg_mock_job_t *j, size_t mark)
{
    SG_MOCK_BUF_LIT(b, "\n\n");
    sg_mock_chunk_close(b, j, mark);
}

const char *sg_mock_api_name(sg_oai_kind_t kind)
{
    switch (kind) {
    case SG_OAI_EMBEDDINGS:
        return "embeddings";
    case SG_OAI_RANK_NIM:
        return "nim_rankings";
    case SG_OAI_RANK_TEI:
        return "hf_tei_rankings";
    case SG_OAI_RANK_COHERE:
        return "cohere_rankings";
    case SG_OAI_RESPONSES:
        return "responses";
    case SG_OAI_MESSAGES:
        return "messages";
    case SG_OAI_GENERATE:
        return "generate";
    case SG_OAI_IMAGE_RETRIEVAL:
        return "image_retrieval";
    default:
        return "chat";
    }
}

/* ---------- errors, in each API's shape ---------- */

void sg_mock_api_error(sg_mock_job_t *j, sg_oai_kind_t kind, int status, const char *message, int64_t now)
{
    j->type = SG_MOCK_JOB_API_ERROR;
    j->kind = (uint8_t)kind;
    j->status = (uint16_t)status;
    j->err_msg = message;
    j->due_ns = now;
}

void sg_mock_api_render_error(sg_mock_buf_t *b, const sg_mock_job_t *j, int *status)
{
    size_t mark = sg_mock_body_open(b, j);
    sg_slice_t msg = {j->err_msg, strlen(j->err_msg)};
    bool server = j->status >= 500;
    switch (j->kind) {
    case SG_OAI_MESSAGES: /* Anthropic */
        SG_MOCK_BUF_LIT(b, "{\"type\":\"error\",\"error\":{\"type\":\"");
        if (server)
            SG_MOCK_BUF_LIT(b, "api_error");
        else
            SG_MOCK_BUF_LIT(b, "invalid_request_error");
        SG_MOCK_BUF_LIT(b, "\",\"message\":\"");
        sg_mock_buf_json_escape(b, msg);
        SG_MOCK_BUF_LIT(b, "\"}}");
        break;
    case SG_OAI_GENERATE: /* Hugging Face's servers: TGI, and TEI's rerank */
    case SG_OAI_RANK_TEI:
        SG_MOCK_BUF_LIT(b, "{\"error\":\"");
        sg_mock_buf_json_escape(b, msg);
        if (server)
            SG_MOCK_BUF_LIT(b, "\",\"error_type\":\"generation\"}");
        else
            SG_MOCK_BUF_LIT(b, "\",\"error_type\":\"validation\"}");
        break;
    default: /* OpenAI's, which llama.cpp and NIM answer too */
        SG_MOCK_BUF_LIT(b, "{\"error\":{\"message\":\"");
        sg_mock_buf_json_escape(b, msg);
        if (server)
            SG_MOCK_BUF_LIT(b, "\",\"type\":\"server_error\",\"code\":");
        else
            SG_MOCK_BUF_LIT(b, "\",\"type\":\"invalid_request_error\",\"code\":");
        sg_mock_buf_u64(b, j->status);
        SG_MOCK_BUF_LIT(b, "}}");
        break;
    }
    sg_mock_body_close(b, j, mark, j->status);
    *status = j->status;
}

/* ---------- embeddings and rankings ---------- */

static void render_embeddings(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "{\"object\":\"list\",\"data\":[");
    for (uint32_t i = 0; i < j->items; i++) {
        if (i)
            SG_MOCK_BUF_LIT(b, ",");
        SG_MOCK_BUF_LIT(b, "{\"object\":\"embedding\",\"index\":");
        sg_mock_buf_u64(b, i);
        SG_MOCK_BUF_LIT(b, ",\"embedding\":[");
        sg_mock_buf_mem(b, vec_text[i % VECTORS], vec_len[i % VECTORS]);
        SG_MOCK_BUF_LIT(b, "]}");
    }
    SG_MOCK_BUF_LIT(b, "],");
    put_model(b, j);
    if (j->send_usage) {
        SG_MOCK_BUF_LIT(b, ",\"usage\":{\"prompt_tokens\":");
        sg_mock_buf_u64(b, j->usage_prompt);
        SG_MOCK_BUF_LIT(b, ",\"total_tokens\":");
        sg_mock_buf_u64(b, j->usage_prompt);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "}");
}

/*
 * The passage ranked r-th (0: the most relevant): a fixed shuffle, index = (r * stride + items / 3) mod items
 * with a stride prime to items, so the answer is sorted by score without sorting, and every index appears once.
 */
static uint32_t rank_index(uint32_t r, uint32_t items, uint32_t stride)
{
    return (uint32_t)(((uint64_t)r * stride + items / 3) % items);
}

static uint32_t rank_stride(uint32_t items)
{
    static const uint32_t primes[] = {7, 11, 13, 17, 19, 23, 29, 31};
    for (size_t i = 0; i < SG_ARRAY_LEN(primes); i++)
        if (items % primes[i])
            return primes[i];
    return 37; /* items is a multiple of every prime above: not of 37 too, below SG_MOCK_MAX_ITEMS */
}

static void render_rankings(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    uint32_t stride = rank_stride(j->items);
    double step = 1.0 / j->items;
    if (j->kind == SG_OAI_RANK_NIM)
        SG_MOCK_BUF_LIT(b, "{\"rankings\":[");
    else if (j->kind == SG_OAI_RANK_TEI)
        SG_MOCK_BUF_LIT(b, "[");
    else
        SG_MOCK_BUF_LIT(b, "{\"object\":\"list\",\"results\":[");
    for (uint32_t r = 0; r < j->shown; r++) {
        put_str(b, r ? ",{\"index\":" : "{\"index\":");
        sg_mock_buf_u64(b, rank_index(r, j->items, stride));
        if (j->kind == SG_OAI_RANK_NIM) {
            SG_MOCK_BUF_LIT(b, ",\"logit\":");
            put_fixed(b, 4, 8.0 - 16.0 * r * step); /* logits fall from 8 */
        } else {
            put_str(b, j->kind == SG_OAI_RANK_TEI ? ",\"score\":" : ",\"relevance_score\":");
            put_fixed(b, 6, 0.99 * (1.0 - r * step) + 0.001); /* in (0, 1), falling */
        }
        SG_MOCK_BUF_LIT(b, "}");
    }
    if (j->kind == SG_OAI_RANK_NIM) {
        SG_MOCK_BUF_LIT(b, "]}");
    } else if (j->kind == SG_OAI_RANK_TEI) {
        SG_MOCK_BUF_LIT(b, "]");
    } else {
        SG_MOCK_BUF_LIT(b, "],");
        put_model(b, j);
        if (j->send_usage) {
            SG_MOCK_BUF_LIT(b, ",\"usage\":{\"prompt_tokens\":");
            sg_mock_buf_u64(b, j->usage_prompt);
            SG_MOCK_BUF_LIT(b, ",\"total_tokens\":");
            sg_mock_buf_u64(b, j->usage_prompt);
            SG_MOCK_BUF_LIT(b, "}");
        }
        SG_MOCK_BUF_LIT(b, "}");
    }
}

/* ---------- responses (OpenAI Responses API) ---------- */

/*
 * Output items: a reasoning item (output_index 0) when the job has reasoning tokens, then a message item when it
 * has text tokens. Their events' sequence numbers follow from the token counts, so nothing is kept per job:
 *   0 response.created, 1 response.in_progress;
 *   reasoning: 2 output_item.added, 3 content_part.added, 4.. one reasoning_text.delta per reasoning token,
 *              then reasoning_text.done, content_part.done, output_item.done;
 *   message:   output_item.added, content_part.added, one output_text.delta per text token, output_text.done,
 *              content_part.done, output_item.done;
 *   response.completed.
 */
static int64_t resp_msg_seq(const sg_mock_job_t *j)
{
    return j->reasoning ? 7 + (int64_t)j->reasoning : 2;
}

static void resp_reasoning_item(sg_mock_buf_t *b, const sg_mock_job_t *j, bool done)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "rs_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"reasoning\",\"summary\":[],\"content\":[");
    if (done) {
        SG_MOCK_BUF_LIT(b, "{\"type\":\"reasoning_text\",\"text\":");
        put_text(b, 0, j->reasoning);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "]}");
}

static void resp_message_item(sg_mock_buf_t *b, const sg_mock_job_t *j, bool done)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "msg_", j);
    if (done)
        SG_MOCK_BUF_LIT(b, "\",\"type\":\"message\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[");
    else
        SG_MOCK_BUF_LIT(b, "\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[");
    if (done) {
        SG_MOCK_BUF_LIT(b, "{\"type\":\"output_text\",\"text\":");
        put_text(b, j->reasoning, j->n);
        SG_MOCK_BUF_LIT(b, ",\"annotations\":[]}");
    }
    SG_MOCK_BUF_LIT(b, "]}");
}

/* The response object: in progress (no output yet) or completed (every item, and usage). */
static void resp_object(sg_mock_buf_t *b, const sg_mock_job_t *j, bool done)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "resp_", j);
    SG_MOCK_BUF_LIT(b, "\",\"object\":\"response\",\"created_at\":");
    put_i64(b, j->created);
    if (done)
        SG_MOCK_BUF_LIT(b, ",\"status\":\"completed\",");
    else
        SG_MOCK_BUF_LIT(b, ",\"status\":\"in_progress\",");
    put_model(b, j);
    SG_MOCK_BUF_LIT(b, ",\"output\":[");
    if (done) {
        if (j->reasoning)
            resp_reasoning_item(b, j, true);
        if (j->reasoning && j->reasoning < j->n)
            SG_MOCK_BUF_LIT(b, ",");
        if (j->reasoning < j->n)
            resp_message_item(b, j, true);
    }
    SG_MOCK_BUF_LIT(b, "],\"usage\":");
    if (!done || !j->send_usage) {
        SG_MOCK_BUF_LIT(b, "null}");
        return;
    }
    SG_MOCK_BUF_LIT(b, "{\"input_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt);
    SG_MOCK_BUF_LIT(b, ",\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":");
    sg_mock_buf_u64(b, j->usage_completion);
    SG_MOCK_BUF_LIT(b, ",\"output_tokens_details\":{\"reasoning_tokens\":");
    sg_mock_buf_u64(b, j->reasoning);
    SG_MOCK_BUF_LIT(b, "},\"total_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt + j->usage_completion);
    SG_MOCK_BUF_LIT(b, "}}");
}

/* "item_id":"..","output_index":i,"content_index":0 of an item's events */
static void resp_where(sg_mock_buf_t *b, const sg_mock_job_t *j, bool reasoning)
{
    SG_MOCK_BUF_LIT(b, ",\"item_id\":\"");
    put_id(b, reasoning ? "rs_" : "msg_", j);
    SG_MOCK_BUF_LIT(b, "\",\"output_index\":");
    sg_mock_buf_u64(b, !reasoning && j->reasoning ? 1 : 0);
    SG_MOCK_BUF_LIT(b, ",\"content_index\":0");
}

/* output_item.added and content_part.added of an item, from sequence number seq. */
static void resp_item_open(sg_mock_buf_t *b, const sg_mock_job_t *j, bool reasoning, int64_t seq)
{
    size_t m = ev_typed(b, j, "response.output_item.added", seq);
    SG_MOCK_BUF_LIT(b, ",\"output_index\":");
    sg_mock_buf_u64(b, !reasoning && j->reasoning ? 1 : 0);
    SG_MOCK_BUF_LIT(b, ",\"item\":");
    if (reasoning)
        resp_reasoning_item(b, j, false);
    else
        resp_message_item(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.content_part.added", seq + 1);
    resp_where(b, j, reasoning);
    if (reasoning)
        SG_MOCK_BUF_LIT(b, ",\"part\":{\"type\":\"reasoning_text\",\"text\":\"\"}}");
    else
        SG_MOCK_BUF_LIT(b, ",\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}");
    ev_end(b, j, m);
}

/* The text's .done, content_part.done and output_item.done of an item, from sequence number seq. */
static void resp_item_close(sg_mock_buf_t *b, const sg_mock_job_t *j, bool reasoning, int64_t seq)
{
    uint32_t from = reasoning ? 0 : j->reasoning, to = reasoning ? j->reasoning : j->n;
    size_t m = ev_typed(b, j, reasoning ? "response.reasoning_text.done" : "response.output_text.done", seq);
    resp_where(b, j, reasoning);
    SG_MOCK_BUF_LIT(b, ",\"text\":");
    put_text(b, from, to);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.content_part.done", seq + 1);
    resp_where(b, j, reasoning);
    put_str(b, reasoning ? ",\"part\":{\"type\":\"reasoning_text\",\"text\":"
                         : ",\"part\":{\"type\":\"output_text\",\"text\":");
    put_text(b, from, to);
    put_str(b, reasoning ? "}}" : ",\"annotations\":[]}}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.output_item.done", seq + 2);
    SG_MOCK_BUF_LIT(b, ",\"output_index\":");
    sg_mock_buf_u64(b, !reasoning && j->reasoning ? 1 : 0);
    SG_MOCK_BUF_LIT(b, ",\"item\":");
    if (reasoning)
        resp_reasoning_item(b, j, true);
    else
        resp_message_item(b, j, true);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void resp_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = ev_typed(b, j, "response.created", 0);
    SG_MOCK_BUF_LIT(b, ",\"response\":");
    resp_object(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.in_progress", 1);
    SG_MOCK_BUF_LIT(b, ",\"response\":");
    resp_object(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void resp_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    bool reasoning = k < j->reasoning;
    int64_t seq;
    if (reasoning) {
        if (k == 0)
            resp_item_open(b, j, true, 2);
        seq = 4 + (int64_t)k;
    } else {
        if (k == j->reasoning) {
            if (j->reasoning)
                resp_item_close(b, j, true, 4 + (int64_t)j->reasoning);
            resp_item_open(b, j, false, resp_msg_seq(j));
        }
        seq = resp_msg_seq(j) + 2 + (k - j->reasoning);
    }
    size_t m = ev_typed(b, j, reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", seq);
    resp_where(b, j, reasoning);
    SG_MOCK_BUF_LIT(b, ",\"delta\":");
    put_word(b, k);
    put_str(b, reasoning ? "}" : ",\"logprobs\":[]}");
    ev_end(b, j, m);
}

static void resp_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    int64_t seq;
    if (j->reasoning == j->n) { /* every token was reasoning: only that item, closed here */
        resp_item_close(b, j, true, 4 + (int64_t)j->reasoning);
        seq = 7 + (int64_t)j->reasoning;
    } else {
        seq = resp_msg_seq(j) + 2 + (j->n - j->reasoning);
        resp_item_close(b, j, false, seq);
        seq += 3;
    }
    size_t m = ev_typed(b, j, "response.completed", seq);
    SG_MOCK_BUF_LIT(b, ",\"response\":");
    resp_object(b, j, true);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

/* ---------- messages (Anthropic Messages API) ---------- */

#define PING_EVERY 50 /* a ping after message_start, then one before every 50th token, as keep-alives go */

static void msg_usage_out(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (!j->send_usage)
        return;
    SG_MOCK_BUF_LIT(b, ",\"usage\":{\"input_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt);
    SG_MOCK_BUF_LIT(b, ",\"output_tokens\":");
    sg_mock_buf_u64(b, j->usage_completion);
    SG_MOCK_BUF_LIT(b, "}");
}

static void msg_ping(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = ev_typed(b, j, "ping", -1);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

/* content_block_start of block index (the thinking block, or the text block) */
static void msg_block_start(sg_mock_buf_t *b, const sg_mock_job_t *j, bool thinking)
{
    size_t m = ev_typed(b, j, "content_block_start", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":");
    sg_mock_buf_u64(b, !thinking && j->reasoning ? 1 : 0);
    if (thinking)
        SG_MOCK_BUF_LIT(b, ",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}");
    else
        SG_MOCK_BUF_LIT(b, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
    ev_end(b, j, m);
}

/* The thinking block's signature (Anthropic sends one before the block stops), and content_block_stop. */
static void msg_block_stop(sg_mock_buf_t *b, const sg_mock_job_t *j, bool thinking)
{
    size_t m;
    if (thinking) {
        m = ev_typed(b, j, "content_block_delta", -1);
        SG_MOCK_BUF_LIT(b, ",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"mock\"}}");
        ev_end(b, j, m);
    }
    m = ev_typed(b, j, "content_block_stop", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":");
    sg_mock_buf_u64(b, !thinking && j->reasoning ? 1 : 0);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void msg_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = ev_typed(b, j, "message_start", -1);
    SG_MOCK_BUF_LIT(b, ",\"message\":{\"id\":\"");
    put_id(b, "msg_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"message\",\"role\":\"assistant\",");
    put_model(b, j);
    SG_MOCK_BUF_LIT(b, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null");
    if (j->send_usage) {
        SG_MOCK_BUF_LIT(b, ",\"usage\":{\"input_tokens\":");
        sg_mock_buf_u64(b, j->usage_prompt);
        SG_MOCK_BUF_LIT(b, ",\"output_tokens\":0}");
    }
    SG_MOCK_BUF_LIT(b, "}}");
    ev_end(b, j, m);
    msg_ping(b, j);
}

static void msg_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    bool thinking = k < j->reasoning;
    if (k && k % PING_EVERY == 0)
        msg_ping(b, j);
    if (k == 0 && thinking)
        msg_block_start(b, j, true);
    if (k == j->reasoning) {
        if (j->reasoning)
            msg_block_stop(b, j, true);
        msg_block_start(b, j, false);
    }
    size_t m = ev_typed(b, j, "content_block_delta", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":");
    sg_mock_buf_u64(b, !thinking && j->reasoning ? 1 : 0);
    if (thinking)
        SG_MOCK_BUF_LIT(b, ",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":");
    else
        SG_MOCK_BUF_LIT(b, ",\"delta\":{\"type\":\"text_delta\",\"text\":");
    put_word(b, k);
    SG_MOCK_BUF_LIT(b, "}}");
    ev_end(b, j, m);
}

static void msg_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    msg_block_stop(b, j, j->reasoning == j->n);
    size_t m = ev_typed(b, j, "message_delta", -1);
    SG_MOCK_BUF_LIT(b, ",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null}");
    if (j->send_usage) {
        SG_MOCK_BUF_LIT(b, ",\"usage\":{\"output_tokens\":");
        sg_mock_buf_u64(b, j->usage_completion);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "message_stop", -1);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void msg_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "msg_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"message\",\"role\":\"assistant\",");
    put_model(b, j);
    SG_MOCK_BUF_LIT(b, ",\"content\":[");
    if (j->reasoning) {
        SG_MOCK_BUF_LIT(b, "{\"type\":\"thinking\",\"thinking\":");
        put_text(b, 0, j->reasoning);
        SG_MOCK_BUF_LIT(b, ",\"signature\":\"mock\"}");
    }
    if (j->reasoning < j->n) {
        put_str(b, j->reasoning ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        put_text(b, j->reasoning, j->n);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "],\"stop_reason\":\"max_tokens\",\"stop_sequence\":null");
    msg_usage_out(b, j);
    SG_MOCK_BUF_LIT(b, "}");
}

/* ---------- generate (Hugging Face TGI) ---------- */

static void tgi_details(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "{\"finish_reason\":\"length\",\"generated_tokens\":");
    sg_mock_buf_u64(b, j->usage_completion);
    SG_MOCK_BUF_LIT(b, ",\"seed\":null}");
}

static void tgi_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "{\"generated_text\":");
    put_text(b, 0, j->n);
    if (j->details) { /* TGI answers details only when asked */
        SG_MOCK_BUF_LIT(b, ",\"details\":");
        tgi_details(b, j);
    }
    SG_MOCK_BUF_LIT(b, "}");
}

static void tgi_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    bool last = k + 1 == j->n;
    size_t m = sg_mock_chunk_open(b, j);
    SG_MOCK_BUF_LIT(b, "data:{\"index\":");
    sg_mock_buf_u64(b, k);
    SG_MOCK_BUF_LIT(b, ",\"token\":{\"id\":");
    sg_mock_buf_u64(b, 1000 + k % 16); /* one id per word of the mock's vocabulary */
    SG_MOCK_BUF_LIT(b, ",\"text\":");
    put_word(b, k);
    SG_MOCK_BUF_LIT(b, ",\"logprob\":-0.25,\"special\":false},\"generated_text\":");
    if (last) {
        put_text(b, 0, j->n);
        SG_MOCK_BUF_LIT(b, ",\"details\":");
        if (j->details)
            tgi_details(b, j);
        else
            SG_MOCK_BUF_LIT(b, "null");
    } else {
        SG_MOCK_BUF_LIT(b, "null,\"details\":null");
    }
    SG_MOCK_BUF_LIT(b, "}\n\n");
    sg_mock_chunk_close(b, j, m);
}

/* ---------- dispatch by API ---------- */

void sg_mock_api_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t mark = sg_mock_body_open(b, j);
    switch (j->kind) {
    case SG_OAI_EMBEDDINGS:
    case SG_OAI_IMAGE_RETRIEVAL: /* NIM's answer: one embedding per image */
        render_embeddings(b, j);
        break;
    case SG_OAI_RANK_NIM:
    case SG_OAI_RANK_TEI:
    case SG_OAI_RANK_COHERE:
        render_rankings(b, j);
        break;
    case SG_OAI_RESPONSES:
        resp_object(b, j, true);
        break;
    case SG_OAI_MESSAGES:
        msg_full(b, j);
        break;
    default:
        tgi_full(b, j);
        break;
    }
    sg_mock_body_close(b, j, mark, 200);
}

void sg_mock_api_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    sg_mock_render_sse_head(b, j);
    if (j->kind == SG_OAI_RESPONSES)
        resp_stream_start(b, j);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_stream_start(b, j);
    /* TGI sends nothing before its first token */
}

void sg_mock_api_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    if (j->kind == SG_OAI_RESPONSES)
        resp_token(b, j, k);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_token(b, j, k);
    else
        tgi_token(b, j, k);
}

void sg_mock_api_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (j->kind == SG_OAI_RESPONSES)
        resp_stream_end(b, j);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_stream_end(b, j);
    sg_mock_render_sse_end(b, j); /* TGI: its last token event was the end; no [DONE] */
}
