/*
 * The mock's tool calls (docs/mock.md, *Tool calls*): a request that carries tools (and a tool_choice other than
 * none) is answered, at --tool-call-rate, with one call of the tool its tool_choice names, else of its first tool,
 * in its API's shape, streamed or whole. The call's arguments are the job's n tokens: argument fragment k is token
 * k's word, the first after {"text":", the last before "}, so the arguments are the JSON object
 * {"text":" the of and ..."} and a stream carries exactly n argument deltas (usage's completion_tokens is n).
 *   chat       a first delta with the call's id, type and function name (arguments ""), then one
 *              delta.tool_calls[0].function.arguments fragment per token; finish_reason "tool_calls"
 *   responses  response.output_item.added (a function_call item), one response.function_call_arguments.delta per
 *              token, .done with the whole arguments, output_item.done, response.completed
 *   messages   content_block_start (a tool_use block), one input_json_delta per token, content_block_stop,
 *              message_delta with stop_reason "tool_use"
 * Whole responses carry the same call in message.tool_calls, a function_call output item, a tool_use block (its
 * input an object). Not the hot path: rendered with the buffer's appends, as mock_api.c does.
 */
#include "mock_internal.h"

static void put_str(sg_mock_buf_t *b, const char *s)
{
    sg_mock_buf_mem(b, s, strlen(s));
}

static void put_name(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    sg_mock_buf_mem(b, j->tool_name, j->tool_name_len);
}

static void put_id(sg_mock_buf_t *b, const char *prefix, const sg_mock_job_t *j)
{
    put_str(b, prefix);
    SG_MOCK_BUF_LIT(b, "mock-");
    sg_mock_buf_u64(b, j->serial);
}

/* Argument fragment k of n, as it goes inside a JSON string. */
static void put_frag(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    if (k == 0)
        SG_MOCK_BUF_LIT(b, "{\\\"text\\\":\\\"");
    sg_mock_buf_slice(b, sg_mock_word(k));
    if (k + 1 == j->n)
        SG_MOCK_BUF_LIT(b, "\\\"}");
}

/* The whole arguments: as a JSON string's content (escaped), or as the JSON object itself (raw). */
static void put_args(sg_mock_buf_t *b, const sg_mock_job_t *j, bool escaped)
{
    if (j->n == 0) {
        SG_MOCK_BUF_LIT(b, "{}");
        return;
    }
    put_str(b, escaped ? "{\\\"text\\\":\\\"" : "{\"text\":\"");
    sg_mock_buf_text(b, 0, j->n);
    put_str(b, escaped ? "\\\"}" : "\"}");
}

static void put_model(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "\"model\":\"");
    sg_mock_buf_json_raw(b, (sg_slice_t){j->head, j->head_len});
    SG_MOCK_BUF_LIT(b, "\"");
}

/* One SSE event in its own HTTP/1.1 chunk: "event: T" and data opening {"type":"T" (and "sequence_number"). */
static size_t ev_typed(sg_mock_buf_t *b, const sg_mock_job_t *j, const char *type, int64_t seq)
{
    size_t mark = sg_mock_chunk_open(b, j);
    SG_MOCK_BUF_LIT(b, "event: ");
    put_str(b, type);
    SG_MOCK_BUF_LIT(b, "\ndata: {\"type\":\"");
    put_str(b, type);
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

/* ---------- chat ---------- */

/* A chat chunk: data: head (the job's {"id",...,"choices":[) then the choice and the rest. */
static size_t chat_open(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t mark = sg_mock_chunk_open(b, j);
    SG_MOCK_BUF_LIT(b, "data: ");
    sg_mock_buf_mem(b, j->head, j->head_len);
    return mark;
}

static void chat_usage(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, ",\"usage\":{\"prompt_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt);
    SG_MOCK_BUF_LIT(b, ",\"completion_tokens\":");
    sg_mock_buf_u64(b, j->usage_completion);
    SG_MOCK_BUF_LIT(b, ",\"total_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt + j->usage_completion);
    if (j->usage_cached >= 0) {
        SG_MOCK_BUF_LIT(b, ",\"prompt_tokens_details\":{\"cached_tokens\":");
        sg_mock_buf_u64(b, (uint64_t)j->usage_cached);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "}");
}

/* A call's members up to its arguments' opening quote (the caller opens the object). */
static void chat_call_open(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, "\"id\":\"");
    put_id(b, "call_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"function\",\"function\":{\"name\":\"");
    put_name(b, j);
    SG_MOCK_BUF_LIT(b, "\",\"arguments\":\"");
}

static void chat_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = chat_open(b, j);
    SG_MOCK_BUF_LIT(b, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,");
    chat_call_open(b, j);
    SG_MOCK_BUF_LIT(b, "\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    sg_mock_chunk_close(b, j, m);
}

static void chat_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    size_t m = chat_open(b, j);
    SG_MOCK_BUF_LIT(b, "{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"");
    put_frag(b, j, k);
    if (k + 1 == j->n)
        SG_MOCK_BUF_LIT(b, "\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}\n\n");
    else
        SG_MOCK_BUF_LIT(b, "\"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    sg_mock_chunk_close(b, j, m);
}

static void chat_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (j->include_usage) {
        size_t m = chat_open(b, j);
        SG_MOCK_BUF_LIT(b, "]");
        chat_usage(b, j);
        SG_MOCK_BUF_LIT(b, "}\n\n");
        sg_mock_chunk_close(b, j, m);
    }
    size_t m = sg_mock_chunk_open(b, j);
    SG_MOCK_BUF_LIT(b, "data: [DONE]\n\n");
    sg_mock_chunk_close(b, j, m);
}

static void chat_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    sg_mock_buf_mem(b, j->head, j->head_len);
    SG_MOCK_BUF_LIT(b, "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{");
    chat_call_open(b, j);
    put_args(b, j, true);
    SG_MOCK_BUF_LIT(b, "\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]");
    if (j->send_usage)
        chat_usage(b, j);
    SG_MOCK_BUF_LIT(b, "}");
}

/* ---------- responses ---------- */

/*
 * Sequence numbers: 0 response.created, 1 response.in_progress, 2 output_item.added, 3 + k the delta of token k,
 * 3 + n function_call_arguments.done, 4 + n output_item.done, 5 + n response.completed.
 */
static void resp_item(sg_mock_buf_t *b, const sg_mock_job_t *j, bool done)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "fc_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"function_call\",\"status\":\"");
    put_str(b, done ? "completed" : "in_progress");
    SG_MOCK_BUF_LIT(b, "\",\"arguments\":\"");
    if (done)
        put_args(b, j, true);
    SG_MOCK_BUF_LIT(b, "\",\"call_id\":\"");
    put_id(b, "call_", j);
    SG_MOCK_BUF_LIT(b, "\",\"name\":\"");
    put_name(b, j);
    SG_MOCK_BUF_LIT(b, "\"}");
}

static void resp_object(sg_mock_buf_t *b, const sg_mock_job_t *j, bool done)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "resp_", j);
    SG_MOCK_BUF_LIT(b, "\",\"object\":\"response\",\"created_at\":");
    sg_mock_buf_u64(b, (uint64_t)(j->created > 0 ? j->created : 0));
    put_str(b, done ? ",\"status\":\"completed\"," : ",\"status\":\"in_progress\",");
    put_model(b, j);
    SG_MOCK_BUF_LIT(b, ",\"output\":[");
    if (done)
        resp_item(b, j, true);
    SG_MOCK_BUF_LIT(b, "],\"usage\":");
    if (!done || !j->send_usage) {
        SG_MOCK_BUF_LIT(b, "null}");
        return;
    }
    SG_MOCK_BUF_LIT(b, "{\"input_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt);
    SG_MOCK_BUF_LIT(b, ",\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":");
    sg_mock_buf_u64(b, j->usage_completion);
    SG_MOCK_BUF_LIT(b, ",\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":");
    sg_mock_buf_u64(b, j->usage_prompt + j->usage_completion);
    SG_MOCK_BUF_LIT(b, "}}");
}

static void resp_where(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    SG_MOCK_BUF_LIT(b, ",\"item_id\":\"");
    put_id(b, "fc_", j);
    SG_MOCK_BUF_LIT(b, "\",\"output_index\":0");
}

static void resp_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    static const char *const types[] = {"response.created", "response.in_progress"};
    for (int i = 0; i < 2; i++) {
        size_t m = ev_typed(b, j, types[i], i);
        SG_MOCK_BUF_LIT(b, ",\"response\":");
        resp_object(b, j, false);
        SG_MOCK_BUF_LIT(b, "}");
        ev_end(b, j, m);
    }
    size_t m = ev_typed(b, j, "response.output_item.added", 2);
    SG_MOCK_BUF_LIT(b, ",\"output_index\":0,\"item\":");
    resp_item(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void resp_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    size_t m = ev_typed(b, j, "response.function_call_arguments.delta", 3 + (int64_t)k);
    resp_where(b, j);
    SG_MOCK_BUF_LIT(b, ",\"delta\":\"");
    put_frag(b, j, k);
    SG_MOCK_BUF_LIT(b, "\"}");
    ev_end(b, j, m);
}

static void resp_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    int64_t seq = 3 + (int64_t)j->n;
    size_t m = ev_typed(b, j, "response.function_call_arguments.done", seq);
    resp_where(b, j);
    SG_MOCK_BUF_LIT(b, ",\"arguments\":\"");
    put_args(b, j, true);
    SG_MOCK_BUF_LIT(b, "\"}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.output_item.done", seq + 1);
    SG_MOCK_BUF_LIT(b, ",\"output_index\":0,\"item\":");
    resp_item(b, j, true);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "response.completed", seq + 2);
    SG_MOCK_BUF_LIT(b, ",\"response\":");
    resp_object(b, j, true);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

/* ---------- messages ---------- */

static void msg_block(sg_mock_buf_t *b, const sg_mock_job_t *j, bool whole)
{
    SG_MOCK_BUF_LIT(b, "{\"type\":\"tool_use\",\"id\":\"");
    put_id(b, "toolu_", j);
    SG_MOCK_BUF_LIT(b, "\",\"name\":\"");
    put_name(b, j);
    SG_MOCK_BUF_LIT(b, "\",\"input\":");
    if (whole)
        put_args(b, j, false);
    else
        SG_MOCK_BUF_LIT(b, "{}");
    SG_MOCK_BUF_LIT(b, "}");
}

static void msg_message(sg_mock_buf_t *b, const sg_mock_job_t *j, bool whole)
{
    SG_MOCK_BUF_LIT(b, "{\"id\":\"");
    put_id(b, "msg_", j);
    SG_MOCK_BUF_LIT(b, "\",\"type\":\"message\",\"role\":\"assistant\",");
    put_model(b, j);
    SG_MOCK_BUF_LIT(b, ",\"content\":[");
    if (whole)
        msg_block(b, j, true);
    put_str(b, whole ? "],\"stop_reason\":\"tool_use\",\"stop_sequence\":null"
                     : "],\"stop_reason\":null,"
                       "\"stop_sequence\":null");
    if (j->send_usage) {
        SG_MOCK_BUF_LIT(b, ",\"usage\":{\"input_tokens\":");
        sg_mock_buf_u64(b, j->usage_prompt);
        SG_MOCK_BUF_LIT(b, ",\"output_tokens\":");
        sg_mock_buf_u64(b, whole ? j->usage_completion : 0);
        SG_MOCK_BUF_LIT(b, "}");
    }
    SG_MOCK_BUF_LIT(b, "}");
}

static void msg_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = ev_typed(b, j, "message_start", -1);
    SG_MOCK_BUF_LIT(b, ",\"message\":");
    msg_message(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "content_block_start", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":0,\"content_block\":");
    msg_block(b, j, false);
    SG_MOCK_BUF_LIT(b, "}");
    ev_end(b, j, m);
}

static void msg_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    size_t m = ev_typed(b, j, "content_block_delta", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"");
    put_frag(b, j, k);
    SG_MOCK_BUF_LIT(b, "\"}}");
    ev_end(b, j, m);
}

static void msg_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t m = ev_typed(b, j, "content_block_stop", -1);
    SG_MOCK_BUF_LIT(b, ",\"index\":0}");
    ev_end(b, j, m);
    m = ev_typed(b, j, "message_delta", -1);
    SG_MOCK_BUF_LIT(b, ",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null}");
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

/* ---------- dispatch ---------- */

void sg_mock_tool_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t mark = sg_mock_body_open(b, j);
    if (j->kind == SG_OAI_RESPONSES)
        resp_object(b, j, true);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_message(b, j, true);
    else
        chat_full(b, j);
    sg_mock_body_close(b, j, mark, 200);
}

void sg_mock_tool_render_stream_start(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    sg_mock_render_sse_head(b, j);
    if (j->kind == SG_OAI_RESPONSES)
        resp_stream_start(b, j);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_stream_start(b, j);
    else
        chat_stream_start(b, j);
}

void sg_mock_tool_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    if (j->kind == SG_OAI_RESPONSES)
        resp_token(b, j, k);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_token(b, j, k);
    else
        chat_token(b, j, k);
}

void sg_mock_tool_render_stream_end(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    if (j->kind == SG_OAI_RESPONSES)
        resp_stream_end(b, j);
    else if (j->kind == SG_OAI_MESSAGES)
        msg_stream_end(b, j);
    else
        chat_stream_end(b, j);
    sg_mock_render_sse_end(b, j);
}

bool sg_mock_tool_pick(sg_mock_job_t *j, const sg_oai_tools_req_t *t)
{
    if (t->n == 0 || t->none)
        return false;
    /* the tool tool_choice names, else the first; a name that needs escaping, or none, becomes mock_tool */
    sg_slice_t name = t->named.len ? t->named : t->first;
    bool plain = name.len > 0 && name.len <= sizeof j->tool_name;
    for (size_t i = 0; plain && i < name.len; i++)
        plain = name.base[i] != '\\' && (unsigned char)name.base[i] >= 0x20;
    if (!plain)
        name = (sg_slice_t){"mock_tool", 9};
    memcpy(j->tool_name, name.base, name.len);
    j->tool_name_len = (uint8_t)name.len;
    return true;
}
