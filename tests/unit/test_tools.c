/*
 * Tool calls: the decoders' tool-call fields for chat, the Responses API and the Messages API (streamed events
 * and whole bodies), whole streams through the SSE parser split at every byte boundary (and every pair of
 * boundaries for the short ones) with the calls and their argument text accumulated as the worker does, every
 * truncation of a tool-call event refused; the request scanners' view of tools (the mock's); the tools file's
 * checks and each API's shape (sg_tools.h).
 */
#include "sg_api_request.h"
#include "sg_openai.h"
#include "sg_sse.h"
#include "sg_tools.h"
#include "test.h"
#include "trace.h"

#include <stdlib.h>
#include <unistd.h>

#define S(lit) (lit), (sizeof(lit) - 1)

static sg_oai_result_t dec(sg_oai_kind_t kind, const char *json, size_t len, int line)
{
    sg_oai_result_t r;
    memset(&r, 0x5a, sizeof r); /* every field must be set by the decoder */
    int rc = sg_oai_decode(kind, json, len, &r);
    if (rc != 0) {
        test_failures++;
        fprintf(stderr, "test_tools.c:%d: decode returned %d for %.*s\n", line, rc, (int)len, json);
    }
    test_checks++;
    return r;
}
#define DEC(kind, lit) dec((kind), S(lit), __LINE__)

/* The arguments of r, decoded and joined with '|' (raw JSON ones as they are). */
static char *args_of(const sg_oai_result_t *r)
{
    static char buf[1024];
    size_t o = 0;
    for (uint32_t i = 0; i < r->tool_n_args; i++) {
        if (i)
            buf[o++] = '|';
        ssize_t n = (ssize_t)r->tool_args[i].len;
        if (r->tool_args_json)
            memcpy(buf + o, r->tool_args[i].base, (size_t)n);
        else
            n = sg_json_unescape(r->tool_args[i].base, r->tool_args[i].len, buf + o, sizeof buf - o - 1);
        CHECK(n >= 0);
        o += n > 0 ? (size_t)n : 0;
    }
    buf[o] = '\0';
    return buf;
}

static void test_chat_events(void)
{
    /* vLLM's and OpenAI's first delta: id, type, name, empty arguments */
    sg_oai_result_t r =
        DEC(SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,"
                         "\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
                         "\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}");
    CHECK_EQ_INT(r.tool_calls, 1);
    CHECK_EQ_INT(r.tool_index_max, 0);
    CHECK_EQ_INT(r.tool_n_args, 0); /* empty fragments are not kept */
    CHECK_EQ_INT(r.content.len, 0);
    /* an argument fragment, escaped */
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                         "\"arguments\":\"{\\\"city\\\": \\\"Par\"}}]},\"finish_reason\":null}]}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.tool_n_args, 1);
    CHECK(!r.tool_args_json);
    CHECK(strcmp(args_of(&r), "{\"city\": \"Par") == 0);
    /* parallel calls in one chunk (index 1 and 2), one with its name and arguments at once (llama.cpp) */
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{"
                         "\"name\":\"f\",\"arguments\":\"{}\"}},{\"index\":2,\"function\":{\"name\":\"g\"}},"
                         "{\"function\":{\"arguments\":\"x\"}}]}}]}");
    CHECK_EQ_INT(r.tool_calls, 2);
    CHECK_EQ_INT(r.tool_index_max, 2);
    CHECK(strcmp(args_of(&r), "{}|x") == 0);
    /* another choice's calls (n > 1) are not the one reported */
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\","
                         "\"function\":{\"name\":\"f\",\"arguments\":\"zz\"}}]}}]}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.tool_n_args, 0);
    CHECK_EQ_INT(r.tool_index_max, -1);
    /* a text chunk has none; null and wrong types count as absent */
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"hi\",\"tool_calls\":null}}]}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.tool_n_args, 0);
    CHECK_EQ_INT(r.tool_index_max, -1);
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"tool_calls\":[1,\"x\",{\"index\":\"0\",\"id\":\"\","
                         "\"function\":{\"name\":null,\"arguments\":5}}]}}]}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.tool_n_args, 0);
    CHECK_EQ_INT(r.tool_index_max, -1);
    /* a whole response: message.tool_calls, two calls */
    r = DEC(SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
                         "\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                         "\"arguments\":\"{\\\"a\\\":1}\"}},{\"id\":\"b\",\"type\":\"function\",\"function\":{"
                         "\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],"
                         "\"usage\":{\"completion_tokens\":9}}");
    CHECK_EQ_INT(r.tool_calls, 2);
    CHECK(strcmp(args_of(&r), "{\"a\":1}|{}") == 0);
    CHECK_EQ_INT(r.completion_tokens, 9);
    CHECK(r.has_finish_reason);
    /* more calls than the fragments kept: all counted */
    char big[4096];
    size_t o = (size_t)snprintf(big, sizeof big, "{\"choices\":[{\"message\":{\"tool_calls\":[");
    for (int i = 0; i < SG_OAI_TOOL_ARGS_MAX + 4; i++)
        o += (size_t)snprintf(big + o, sizeof big - o,
                              "%s{\"id\":\"c%d\",\"function\":{\"name\":\"f\",\"arguments\":"
                              "\"[%d]\"}}",
                              i ? "," : "", i, i);
    o += (size_t)snprintf(big + o, sizeof big - o, "]}}]}");
    r = dec(SG_OAI_CHAT, big, o, __LINE__);
    CHECK_EQ_INT(r.tool_calls, SG_OAI_TOOL_ARGS_MAX + 4);
    CHECK_EQ_INT(r.tool_n_args, SG_OAI_TOOL_ARGS_MAX);
}

static void test_responses_events(void)
{
    sg_oai_result_t r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.output_item.added\",\"sequence_number\":2,"
                                              "\"output_index\":0,\"item\":{\"id\":\"fc_1\",\"type\":"
                                              "\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\","
                                              "\"call_id\":\"call_1\",\"name\":\"f\"}}");
    CHECK(r.recognized);
    CHECK_EQ_INT(r.tool_calls, 1);
    CHECK_EQ_INT(r.tool_n_args, 0);
    /* a message item is no call */
    r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"message\"}}");
    CHECK_EQ_INT(r.tool_calls, 0);
    /* the item's type after the event's type, and the event's type last: order does not matter */
    r = DEC(SG_OAI_RESPONSES, "{\"item\":{\"name\":\"f\",\"type\":\"function_call\"},\"type\":"
                              "\"response.output_item.added\"}");
    CHECK_EQ_INT(r.tool_calls, 1);
    r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":3,"
                              "\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{\\\"q\\\":\"}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK(strcmp(args_of(&r), "{\"q\":") == 0);
    CHECK_EQ_INT(r.content.len, 0);
    /* .done repeats the whole arguments, output_item.done the item: neither is counted again */
    r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.function_call_arguments.done\",\"arguments\":\"{}\","
                              "\"delta\":\"no\"}");
    CHECK_EQ_INT(r.tool_n_args, 0);
    r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\","
                              "\"arguments\":\"{}\"}}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.tool_n_args, 0);
    /* response.completed's output repeats the calls: not counted (its usage is read) */
    r = DEC(SG_OAI_RESPONSES, "{\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":"
                              "\"function_call\",\"arguments\":\"{}\"}],\"usage\":{\"output_tokens\":4}}}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK_EQ_INT(r.completion_tokens, 4);
    /* a whole response: its function_call items, beside a message */
    r = DEC(SG_OAI_RESPONSES, "{\"object\":\"response\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":"
                              "\"output_text\",\"text\":\"ok\"}]},{\"arguments\":\"{\\\"x\\\":[1]}\",\"type\":"
                              "\"function_call\",\"name\":\"f\"},{\"type\":\"function_call\",\"arguments\":\"\"}]}");
    CHECK(r.recognized);
    CHECK_EQ_INT(r.tool_calls, 2);
    CHECK(strcmp(args_of(&r), "{\"x\":[1]}") == 0);
    CHECK_EQ_STR(r.content.base, r.content.len, "ok");
}

static void test_messages_events(void)
{
    sg_oai_result_t r = DEC(SG_OAI_MESSAGES, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
                                             "\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}");
    CHECK(r.recognized);
    CHECK_EQ_INT(r.tool_calls, 1);
    CHECK_EQ_INT(r.tool_n_args, 0); /* the start's empty input is not the arguments */
    r = DEC(SG_OAI_MESSAGES, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
                             "\"text\":\"\"}}");
    CHECK_EQ_INT(r.tool_calls, 0);
    r = DEC(SG_OAI_MESSAGES, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                             "\"input_json_delta\",\"partial_json\":\"{\\\"location\\\": \\\"San\"}}");
    CHECK_EQ_INT(r.tool_calls, 0);
    CHECK(!r.tool_args_json);
    CHECK(strcmp(args_of(&r), "{\"location\": \"San") == 0);
    CHECK_EQ_INT(r.content.len, 0);
    /* partial_json on a text delta is not an argument */
    r = DEC(SG_OAI_MESSAGES, "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\","
                             "\"partial_json\":\"b\"}}");
    CHECK_EQ_INT(r.tool_n_args, 0);
    CHECK_EQ_STR(r.content.base, r.content.len, "a");
    /* a whole message: tool_use blocks, their input objects as raw JSON */
    r = DEC(SG_OAI_MESSAGES, "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"hm\"},{\"type\":"
                             "\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":  {\"a\": [1, \"\\\"\"]} },{"
                             "\"input\":{},\"type\":\"tool_use\"}],\"stop_reason\":\"tool_use\"}");
    CHECK(r.recognized);
    CHECK_EQ_INT(r.tool_calls, 2);
    CHECK(r.tool_args_json);
    CHECK(strcmp(args_of(&r), "{\"a\": [1, \"\\\"\"]}|{}") == 0);
    CHECK_EQ_STR(r.content.base, r.content.len, "hm");
}

/* ---------- whole streams, split anywhere ---------- */

typedef struct {
    sg_oai_kind_t kind;
} stream_ctx_t;

typedef struct {
    const stream_ctx_t *ctx;
    str_t trace; /* what the worker would count: c (a call started), a:<text> (an argument fragment), t:<text> */
    uint32_t calls, idx_n;
} acc_t;

static int on_event(void *ud, const sg_sse_event_t *ev)
{
    acc_t *a = ud;
    if (sg_oai_is_done(ev->data.base, ev->data.len))
        return 0;
    sg_oai_result_t r;
    if (sg_oai_decode(a->ctx->kind, ev->data.base, ev->data.len, &r) < 0) {
        str_add(&a->trace, "[bad]", 5);
        return 0;
    }
    for (uint32_t i = 0; i < r.tool_calls; i++)
        str_add(&a->trace, "c", 1);
    a->calls += r.tool_calls;
    if (r.tool_index_max >= 0 && (uint32_t)r.tool_index_max + 1 > a->idx_n)
        a->idx_n = (uint32_t)r.tool_index_max + 1;
    if (r.content.len) {
        str_add(&a->trace, "t:", 2);
        str_add(&a->trace, r.content.base, r.content.len);
    }
    if (r.tool_n_args) {
        str_add(&a->trace, "a:", 2);
        const char *s = args_of(&r);
        str_add(&a->trace, s, strlen(s));
        str_add(&a->trace, ";", 1);
    }
    return 0;
}

static const sg_sse_cb_t sse_cb = {on_event};

static char *run_stream(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    acc_t a = {.ctx = ctx};
    sg_sse_t p;
    sg_sse_init(&p, 1 << 16);
    size_t start = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        if (sg_sse_feed(&p, in + start, end - start, &sse_cb, &a) < 0) {
            str_add(&a.trace, "[err]", 5);
            break;
        }
        start = end;
    }
    if (sg_sse_pending(&p))
        str_add(&a.trace, "[pending]", 9);
    sg_sse_free(&p);
    str_fmt(&a.trace, " calls=%u idx=%u", a.calls, a.idx_n);
    return str_take(&a.trace);
}

static void check_stream(sg_oai_kind_t kind, const char *in, size_t pair_max, const char *want, int line)
{
    stream_ctx_t ctx = {kind};
    trace_check_splits(run_stream, &ctx, in, strlen(in), pair_max, want, "tool-call stream", "test_tools.c", line);
}

static void test_streams_split(void)
{
    /* OpenAI chat (as vLLM sends it): a text chunk, a call started, its arguments in three fragments, a second
     * call whose first delta carries no id (numbered by index only), usage, [DONE] */
    check_stream(SG_OAI_CHAT,
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me\"}}]}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
                 "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                 "\"arguments\":\"{\\\"ci\"}}]}}]}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                 "\"arguments\":\"ty\\\": \\\"Paris\"}}]}}]}\r\n\r\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{"
                 "\"arguments\":\"\\\"}\"}}]}}]}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{"
                 "\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
                 "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":12}}\n\n"
                 "data: [DONE]\n\n",
                 0, "t:Let meca:{\"ci;a:ty\": \"Paris;a:\"};a:{}; calls=1 idx=2", __LINE__);
    /* the Responses API */
    check_stream(SG_OAI_RESPONSES,
                 "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
                 "\"response\":{\"id\":\"r\",\"object\":\"response\",\"output\":[],\"usage\":null}}\n\n"
                 "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                 "\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"fc\",\"type\":\"function_call\","
                 "\"arguments\":\"\",\"call_id\":\"c\",\"name\":\"f\"}}\n\n"
                 "event: response.function_call_arguments.delta\ndata: {\"type\":"
                 "\"response.function_call_arguments.delta\",\"sequence_number\":2,\"item_id\":\"fc\","
                 "\"output_index\":0,\"delta\":\"{\\\"a\\\":\"}\n\n"
                 "event: response.function_call_arguments.delta\ndata: {\"type\":"
                 "\"response.function_call_arguments.delta\",\"sequence_number\":3,\"item_id\":\"fc\","
                 "\"output_index\":0,\"delta\":\" 1}\"}\n\n"
                 "event: response.function_call_arguments.done\ndata: {\"type\":"
                 "\"response.function_call_arguments.done\",\"sequence_number\":4,\"arguments\":\"{\\\"a\\\": "
                 "1}\"}\n\n"
                 "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                 "\"sequence_number\":5,\"item\":{\"type\":\"function_call\",\"arguments\":\"{\\\"a\\\": 1}\"}}\n\n"
                 "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":6,"
                 "\"response\":{\"output\":[{\"type\":\"function_call\",\"arguments\":\"{}\"}],\"usage\":{"
                 "\"input_tokens\":3,\"output_tokens\":5}}}\n\n",
                 0, "ca:{\"a\":;a: 1}; calls=1 idx=0", __LINE__);
    /* Anthropic's Messages API: a text block, then a tool_use block */
    check_stream(SG_OAI_MESSAGES,
                 "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],"
                 "\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"
                 "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                 "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
                 "\"type\":\"text_delta\",\"text\":\"Okay\"}}\n\n"
                 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                 "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
                 "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\","
                 "\"input\":{}}}\n\n"
                 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{"
                 "\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
                 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{"
                 "\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"location\\\":\"}}\n\n"
                 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{"
                 "\"type\":\"input_json_delta\",\"partial_json\":\" \\\"SF\\\"}\"}}\n\n"
                 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
                 "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
                 "\"usage\":{\"output_tokens\":20}}\n\n"
                 "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                 0, "t:Okayca:{\"location\":;a: \"SF\"}; calls=1 idx=0", __LINE__);
    /* short ones: every pair of cuts too */
    check_stream(SG_OAI_CHAT,
                 "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":"
                 "\"f\",\"arguments\":\"{}\"}}]}}]}\n\n",
                 400, "ca:{}; calls=1 idx=1", __LINE__);
    check_stream(SG_OAI_MESSAGES,
                 "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
                 "\"partial_json\":\"[1]\"}}\n\n",
                 400, "a:[1]; calls=0 idx=0", __LINE__);
}

/* Every proper prefix of a tool-call event is refused (the decoder never reads past a truncated body). */
static void test_truncations(void)
{
    static const struct {
        sg_oai_kind_t kind;
        const char *json;
    } v[] = {
        {SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{"
                      "\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}"},
        {SG_OAI_RESPONSES, "{\"type\":\"response.output_item.added\",\"item\":{\"type\":\"function_call\"}}"},
        {SG_OAI_MESSAGES, "{\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"input\":{\"a\":[1,{}]}}]}"},
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(v); i++) {
        size_t len = strlen(v[i].json);
        sg_oai_result_t r;
        CHECK_EQ_INT(sg_oai_decode(v[i].kind, v[i].json, len, &r), 0);
        for (size_t n = 0; n < len; n++) {
            char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan catches a read past them */
            memcpy(copy, v[i].json, n);
            int rc = sg_oai_decode(v[i].kind, copy, n, &r);
            if (rc != SG_EJSON) {
                CHECK(!"a truncated tool-call event decoded");
                fprintf(stderr, "  kind %d, %zu of %zu bytes\n", (int)v[i].kind, n, len);
            }
            free(copy);
        }
    }
}

/* ---------- requests: what the mock reads ---------- */

static void test_scan_requests(void)
{
    sg_oai_request_t q;
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT,
                                     S("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
                                       "\"get_weather\",\"parameters\":{\"name\":\"no\"}}},{\"type\":"
                                       "\"function\",\"function\":{\"name\":\"g\"}}]}"),
                                     &q),
                 0);
    CHECK_EQ_INT(q.tools.n, 2);
    CHECK_EQ_STR(q.tools.first.base, q.tools.first.len, "get_weather");
    CHECK_EQ_INT(q.tools.named.len, 0);
    CHECK(!q.tools.none);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT,
                                     S("{\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":"
                                       "\"g\"}},\"messages\":[{\"content\":\"hi\"}],\"tools\":[{"
                                       "\"function\":{\"name\":\"f\"}}]}"),
                                     &q),
                 0);
    CHECK_EQ_STR(q.tools.named.base, q.tools.named.len, "g");
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT,
                                     S("{\"messages\":[{\"content\":\"hi\"}],\"tool_choice\":\"none\","
                                       "\"tools\":[{}]}"),
                                     &q),
                 0);
    CHECK(q.tools.none);
    CHECK_EQ_INT(q.tools.n, 1);
    CHECK_EQ_INT(q.tools.first.len, 0);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("{\"messages\":[{\"content\":\"hi\"}]}"), &q), 0);
    CHECK_EQ_INT(q.tools.n, 0);

    sg_api_request_t a;
    CHECK_EQ_INT(sg_api_scan_request(SG_OAI_RESPONSES,
                                     S("{\"input\":\"hi\",\"tools\":[{\"type\":\"function\","
                                       "\"name\":\"f\",\"parameters\":{}}],\"tool_choice\":{"
                                       "\"type\":\"function\",\"name\":\"f\"}}"),
                                     &a),
                 0);
    CHECK_EQ_INT(a.tools.n, 1);
    CHECK_EQ_STR(a.tools.first.base, a.tools.first.len, "f");
    CHECK_EQ_STR(a.tools.named.base, a.tools.named.len, "f");
    CHECK_EQ_INT(sg_api_scan_request(SG_OAI_MESSAGES,
                                     S("{\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
                                       "\"content\":\"hi\"}],\"tools\":[{\"name\":\"t1\","
                                       "\"input_schema\":{}},{\"name\":\"t2\"}],\"tool_choice\":{"
                                       "\"type\":\"none\"}}"),
                                     &a),
                 0);
    CHECK_EQ_INT(a.tools.n, 2);
    CHECK_EQ_STR(a.tools.first.base, a.tools.first.len, "t1");
    CHECK(a.tools.none);
    /* TGI has no tools: the member is skipped */
    CHECK_EQ_INT(sg_api_scan_request(SG_OAI_GENERATE, S("{\"inputs\":\"hi\",\"tools\":[{\"name\":\"x\"}]}"), &a), 0);
    CHECK_EQ_INT(a.tools.n, 0);
}

/* ---------- the tools file and each API's shape ---------- */

static json_t *J(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    CHECK(v != NULL);
    return v;
}

static void check_refused(const char *tools, const char *want_in_why, int line)
{
    json_t *t = json_loads(tools, JSON_DECODE_ANY, NULL);
    char why[200] = "";
    int rc = sg_tools_check(t, why, sizeof why);
    test_checks++;
    if (rc == 0 || !strstr(why, want_in_why)) {
        test_failures++;
        fprintf(stderr, "test_tools.c:%d: %s: rc %d, why \"%s\", want \"%s\"\n", line, tools, rc, why, want_in_why);
    }
    json_decref(t);
}

static void test_check(void)
{
    json_t *t = J("[{\"type\":\"function\",\"function\":{\"name\":\"a-b_9\",\"description\":\"d\",\"parameters\":{}}},"
                  "{\"name\":\"bare\"}]");
    CHECK_EQ_INT(sg_tools_check(t, NULL, 0), 0);
    json_decref(t);
    check_refused("[]", "non-empty", __LINE__);
    check_refused("{\"name\":\"x\"}", "non-empty JSON array", __LINE__);
    check_refused("[1]", "tool 0 is not an object", __LINE__);
    check_refused("[{\"type\":\"retrieval\"}]", "must be \"function\"", __LINE__);
    check_refused("[{\"type\":\"function\"}]", "\"function\" is missing", __LINE__);
    check_refused("[{\"type\":\"function\",\"function\":[]}]", "not an object", __LINE__);
    check_refused("[{\"function\":{\"description\":\"x\"}}]", "no \"name\"", __LINE__);
    check_refused("[{\"name\":\"has space\"}]", "not 1 to 64", __LINE__);
    check_refused("[{\"name\":\"\"}]", "not 1 to 64", __LINE__);
    check_refused("[{\"name\":\"a\",\"parameters\":\"{}\"}]", "not a JSON Schema object", __LINE__);
    check_refused("[{\"name\":\"a\",\"description\":3}]", "description", __LINE__);
    check_refused("[{\"name\":\"a\"},{\"function\":{\"name\":\"a\"}}]", "both named \"a\"", __LINE__);

    /* the file: missing, not JSON, wrong shape, good (an object with "tools" too) */
    char err[512];
    char path[] = "/tmp/test_tools_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char bad[] = "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}},]";
    CHECK(write(fd, bad, sizeof bad - 1) == (ssize_t)(sizeof bad - 1));
    close(fd);
    CHECK(sg_tools_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "--tools ") && strstr(err, path) && strstr(err, "line 1"));
    char *js = NULL;
    CHECK_EQ_INT(sg_tools_config(path, NULL, SG_OAI_CHAT, &js, err, sizeof err), -1);
    CHECK(js == NULL);
    FILE *f = fopen(path, "w");
    fputs("{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}", f);
    fclose(f);
    CHECK_EQ_INT(sg_tools_config(path, "f", SG_OAI_RESPONSES, &js, err, sizeof err), 0);
    CHECK(js && strcmp(js, "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]") == 0);
    free(js);
    CHECK_EQ_INT(sg_tools_config(path, "g", SG_OAI_CHAT, &js, err, sizeof err), -1);
    CHECK(strstr(err, "--tool-choice g") != NULL);
    CHECK_EQ_INT(sg_tools_config(path, NULL, SG_OAI_COMPLETIONS, &js, err, sizeof err), -1);
    CHECK(strstr(err, "not completions") != NULL);
    CHECK_EQ_INT(sg_tools_config(path, NULL, -1, &js, err, sizeof err), -1);
    CHECK(strstr(err, "triton") != NULL);
    CHECK_EQ_INT(sg_tools_config(NULL, "required", SG_OAI_MESSAGES, &js, err, sizeof err), 0);
    CHECK_EQ_INT(sg_tools_config(NULL, "f", SG_OAI_CHAT, &js, err, sizeof err), -1);
    CHECK(strstr(err, "needs --tools") != NULL);
    f = fopen(path, "w");
    fputs("{\"tool\":[]}", f);
    fclose(f);
    CHECK(sg_tools_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "no \"tools\" array") != NULL);
    unlink(path);
    CHECK(sg_tools_load("/nonexistent/tools.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "/nonexistent/tools.json") != NULL);
}

static void check_apply(sg_oai_kind_t kind, const char *choice, const char *want, int line)
{
    json_t *tools = J("[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{"
                      "\"type\":\"object\"}}},{\"name\":\"g\"}]");
    json_t *body = json_object();
    CHECK_EQ_INT(sg_tools_apply(body, kind, tools, choice), 0);
    char *got = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    test_checks++;
    if (strcmp(got, want) != 0) {
        test_failures++;
        fprintf(stderr, "test_tools.c:%d:\n  got  %s\n  want %s\n", line, got, want);
    }
    free(got);
    json_decref(body);
    json_decref(tools);
}

static void test_apply(void)
{
    check_apply(SG_OAI_CHAT, "auto",
                "{\"tool_choice\":\"auto\",\"tools\":[{\"function\":{\"description\":\"d\",\"name\":\"f\","
                "\"parameters\":{\"type\":\"object\"}},\"type\":\"function\"},{\"function\":{\"name\":\"g\"},"
                "\"type\":\"function\"}]}",
                __LINE__);
    check_apply(SG_OAI_CHAT, "g",
                "{\"tool_choice\":{\"function\":{\"name\":\"g\"},\"type\":\"function\"},\"tools\":[{\"function\":{"
                "\"description\":\"d\",\"name\":\"f\",\"parameters\":{\"type\":\"object\"}},\"type\":\"function\"},"
                "{\"function\":{\"name\":\"g\"},\"type\":\"function\"}]}",
                __LINE__);
    check_apply(SG_OAI_RESPONSES, "required",
                "{\"tool_choice\":\"required\",\"tools\":[{\"description\":\"d\",\"name\":\"f\",\"parameters\":{"
                "\"type\":\"object\"},\"type\":\"function\"},{\"name\":\"g\",\"type\":\"function\"}]}",
                __LINE__);
    check_apply(SG_OAI_RESPONSES, "f",
                "{\"tool_choice\":{\"name\":\"f\",\"type\":\"function\"},\"tools\":[{\"description\":\"d\",\"name\":"
                "\"f\",\"parameters\":{\"type\":\"object\"},\"type\":\"function\"},{\"name\":\"g\",\"type\":"
                "\"function\"}]}",
                __LINE__);
    check_apply(SG_OAI_MESSAGES, "required",
                "{\"tool_choice\":{\"type\":\"any\"},\"tools\":[{\"description\":\"d\",\"input_schema\":{\"type\":"
                "\"object\"},\"name\":\"f\"},{\"input_schema\":{\"properties\":{},\"type\":\"object\"},\"name\":"
                "\"g\"}]}",
                __LINE__);
    check_apply(SG_OAI_MESSAGES, "none",
                "{\"tool_choice\":{\"type\":\"none\"},\"tools\":[{\"description\":\"d\",\"input_schema\":{\"type\":"
                "\"object\"},\"name\":\"f\"},{\"input_schema\":{\"properties\":{},\"type\":\"object\"},\"name\":"
                "\"g\"}]}",
                __LINE__);
    check_apply(SG_OAI_MESSAGES, "g",
                "{\"tool_choice\":{\"name\":\"g\",\"type\":\"tool\"},\"tools\":[{\"description\":\"d\","
                "\"input_schema\":{\"type\":\"object\"},\"name\":\"f\"},{\"input_schema\":{\"properties\":{},"
                "\"type\":\"object\"},\"name\":\"g\"}]}",
                __LINE__);
    check_apply(SG_OAI_CHAT, NULL,
                "{\"tools\":[{\"function\":{\"description\":\"d\",\"name\":\"f\",\"parameters\":{\"type\":"
                "\"object\"}},\"type\":\"function\"},{\"function\":{\"name\":\"g\"},\"type\":\"function\"}]}",
                __LINE__);
    json_t *tools = J("[{\"name\":\"g\"}]"), *body = json_object();
    CHECK_EQ_INT(sg_tools_apply(body, SG_OAI_EMBEDDINGS, tools, NULL), SG_EINVAL);
    json_decref(body);
    json_decref(tools);
}

int main(void)
{
    test_chat_events();
    test_responses_events();
    test_messages_events();
    test_streams_split();
    test_truncations();
    test_scan_requests();
    test_check();
    test_apply();
    return test_finish("test_tools");
}
