/*
 * OpenAI payloads: the decoder on every shape servers send, the request scanner the mock uses, the JSON
 * string decoder, and the scanner's refusals (every truncation of a valid body, and classic malformations).
 */
#include "json_scan.h"
#include "sg_openai.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>

#define S(lit) lit, sizeof(lit) - 1

static sg_oai_result_t decode_ok(sg_oai_kind_t kind, const char *json, size_t len, int line)
{
    sg_oai_result_t r;
    int rc = sg_oai_decode(kind, json, len, &r);
    test_checks++;
    if (rc != 0) {
        test_failures++;
        fprintf(stderr, "test_openai.c:%d: decode returned %d for %.*s\n", line, rc, (int)len, json);
    }
    return r;
}
#define DECODE(kind, lit) decode_ok((kind), S(lit), __LINE__)

/* The decoded form of a raw slice, NUL-terminated in a static buffer (tests only). */
static const char *unesc(sg_slice_t raw)
{
    static char buf[1024];
    ssize_t n = sg_json_unescape(raw.base, raw.len, buf, sizeof buf - 1);
    CHECK(n >= 0 && n < (ssize_t)sizeof buf);
    if (n < 0 || n >= (ssize_t)sizeof buf)
        return "<bad>";
    buf[n] = '\0';
    return buf;
}

static void test_chat_stream(void)
{
    sg_oai_result_t r =
        DECODE(SG_OAI_CHAT, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
                            "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                            "\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":null}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "Hi");
    CHECK_EQ_INT(r.reasoning.len, 0);
    CHECK(!r.has_finish_reason);
    CHECK(!r.is_error);
    CHECK_EQ_INT(r.completion_tokens, -1);
    CHECK_EQ_INT(r.prompt_tokens, -1);
    CHECK_EQ_INT(r.error_code, -1);

    /* The role-only first chunk, and the last chunk with a finish reason and empty content. */
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(r.content.base != NULL);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"stop\","
                            "\"stop_reason\":null}]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(r.has_finish_reason);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":null},\"finish_reason\":\"length\"}]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(r.has_finish_reason);

    /* The usage chunk (stream_options.include_usage). */
    r = DECODE(SG_OAI_CHAT, "{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,"
                            "\"total_tokens\":12}}");
    CHECK_EQ_INT(r.prompt_tokens, 5);
    CHECK_EQ_INT(r.completion_tokens, 7);
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(!r.has_finish_reason);
    /* vLLM's continuous usage stats ride on content chunks. */
    r = DECODE(SG_OAI_CHAT,
               "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}}],\"usage\":{\"prompt_tokens\":3,"
               "\"total_tokens\":5,\"completion_tokens\":2}}");
    CHECK_EQ_STR(r.content.base, r.content.len, " tok");
    CHECK_EQ_INT(r.completion_tokens, 2);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[],\"usage\":null}");
    CHECK_EQ_INT(r.completion_tokens, -1);

    /* Reasoning deltas, in either name; reasoning_content wins when both come. */
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\",\"content\":null}}]}");
    CHECK_EQ_STR(r.reasoning.base, r.reasoning.len, "hmm");
    CHECK_EQ_INT(r.content.len, 0);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"reasoning\":\"r\"}}]}");
    CHECK_EQ_STR(r.reasoning.base, r.reasoning.len, "r");
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"reasoning\":\"b\",\"reasoning_content\":\"a\"}}]}");
    CHECK_EQ_STR(r.reasoning.base, r.reasoning.len, "a");

    /* Tool calls and logprobs are skipped whole, however nested. */
    r = DECODE(
        SG_OAI_CHAT,
        "{\"choices\":[{\"index\":0,\"logprobs\":{\"content\":[{\"token\":\"x\",\"logprob\":-0.25e-3,\"bytes\":[120],"
        "\"top_logprobs\":[{\"token\":\"y\",\"logprob\":-1.5E+2,\"bytes\":null}]}]},\"delta\":{\"tool_calls\":[{"
        "\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\": [1, {\\\"b\\\": true}]}\"}}],\"content\":\"after\"},"
        "\"finish_reason\":null}],\"system_fingerprint\":null,\"flag\":false,\"n\":-0}");
    CHECK_EQ_STR(r.content.base, r.content.len, "after");

    /* Whitespace anywhere JSON allows it. */
    r = DECODE(SG_OAI_CHAT, " \r\n\t{ \"choices\" : [ { \"delta\" : { \"content\" : \"ws\" } } ] }\n ");
    CHECK_EQ_STR(r.content.base, r.content.len, "ws");
}

static void test_chat_whole_and_completions(void)
{
    sg_oai_result_t r = DECODE(
        SG_OAI_CHAT,
        "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
        "\"content\":\"Hello there\",\"tool_calls\":[]},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":"
        "11,\"completion_tokens\":2,\"total_tokens\":13,\"prompt_tokens_details\":null}}");
    CHECK_EQ_STR(r.content.base, r.content.len, "Hello there");
    CHECK(r.has_finish_reason);
    CHECK_EQ_INT(r.prompt_tokens, 11);
    CHECK_EQ_INT(r.completion_tokens, 2);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"message\":{\"content\":\"m\",\"reasoning_content\":\"think\"}}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "m");
    CHECK_EQ_STR(r.reasoning.base, r.reasoning.len, "think");
    /* delta wins over message when a server sends both. */
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"message\":{\"content\":\"m\"},\"delta\":{\"content\":\"d\"}}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "d");

    static const char comp[] = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"text\":\" world\","
                               "\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}";
    r = DECODE(SG_OAI_COMPLETIONS, comp);
    CHECK_EQ_STR(r.content.base, r.content.len, " world");
    CHECK(!r.has_finish_reason);
    /* Each kind reads its own field. */
    r = DECODE(SG_OAI_CHAT, comp);
    CHECK_EQ_INT(r.content.len, 0);
    r = DECODE(SG_OAI_COMPLETIONS, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}");
    CHECK_EQ_INT(r.content.len, 0);
    r = DECODE(SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\"done\",\"finish_reason\":\"stop\"}],\"usage\":{"
                                   "\"prompt_tokens\":4,\"completion_tokens\":16}}");
    CHECK_EQ_STR(r.content.base, r.content.len, "done");
    CHECK(r.has_finish_reason);
    CHECK_EQ_INT(r.completion_tokens, 16);
}

static void test_choice_selection(void)
{
    /* Only index 0 counts; with n > 1 other indexes arrive in chunks of their own. */
    sg_oai_result_t r =
        DECODE(SG_OAI_CHAT, "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"},\"finish_reason\":\"stop\"}]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(!r.has_finish_reason);
    r = DECODE(SG_OAI_CHAT,
               "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}},{\"index\":0,\"delta\":{\"content\":"
               "\"A\"}},{\"index\":0,\"delta\":{\"content\":\"C\"}}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "A");
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"index\":null,\"delta\":{\"content\":\"N\"}}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "N");
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"index\":0.0,\"delta\":{\"content\":\"F\"}}]}");
    CHECK_EQ_INT(r.content.len, 0);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[null,7,\"s\",{\"delta\":{\"content\":\"obj\"}}]}");
    CHECK_EQ_STR(r.content.base, r.content.len, "obj");
    /* Wrong types count as absent. */
    r = DECODE(SG_OAI_CHAT, "{\"choices\":{\"delta\":{\"content\":\"x\"}},\"usage\":[1]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK_EQ_INT(r.prompt_tokens, -1);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":42},\"finish_reason\":7}]}");
    CHECK_EQ_INT(r.content.len, 0);
    CHECK(!r.has_finish_reason);
    r = DECODE(SG_OAI_CHAT, "{\"usage\":{\"prompt_tokens\":7.0,\"completion_tokens\":99999999999999999999}}");
    CHECK_EQ_INT(r.prompt_tokens, -1);
    CHECK_EQ_INT(r.completion_tokens, -1);
    r = DECODE(SG_OAI_CHAT, "{\"usage\":{\"prompt_tokens\":9223372036854775807,\"completion_tokens\":-3}}");
    CHECK_EQ_INT(r.prompt_tokens, INT64_MAX);
    CHECK_EQ_INT(r.completion_tokens, -3);
    /* Repeated keys: the last one wins, as jansson has it. */
    r = DECODE(SG_OAI_CHAT, "{\"usage\":{\"prompt_tokens\":1},\"usage\":null}");
    CHECK_EQ_INT(r.prompt_tokens, -1);
    r = DECODE(SG_OAI_CHAT,
               "{\"choices\":[{\"delta\":{\"content\":\"a\",\"content\":\"b\"}}],\"usage\":{\"completion_tokens\":"
               "1,\"completion_tokens\":2}}");
    CHECK_EQ_STR(r.content.base, r.content.len, "b");
    CHECK_EQ_INT(r.completion_tokens, 2);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"choices\":[]}");
    CHECK_EQ_INT(r.content.len, 0);
    /* Keys spelled with escapes are the same keys. */
    r = DECODE(SG_OAI_CHAT, "{\"\\u0063hoices\":[{\"d\\u0065lta\":{\"cont\\u0065nt\":\"k\"}}],\"\\u0075sage\":{"
                            "\"completion_tokens\":3}}");
    CHECK_EQ_STR(r.content.base, r.content.len, "k");
    CHECK_EQ_INT(r.completion_tokens, 3);
}

static void test_errors(void)
{
    sg_oai_result_t r =
        DECODE(SG_OAI_CHAT, "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":500}}");
    CHECK(r.is_error);
    CHECK_EQ_STR(r.error_message.base, r.error_message.len, "boom");
    CHECK_EQ_INT(r.error_code, 500);
    r = DECODE(SG_OAI_CHAT, "{\"error\":\"upstream \\\"x\\\" failed\"}");
    CHECK(r.is_error);
    CHECK_EQ_STR(unesc(r.error_message), strlen(unesc(r.error_message)), "upstream \"x\" failed");
    CHECK_EQ_INT(r.error_code, -1);
    r = DECODE(SG_OAI_CHAT,
               "{\"object\":\"error\",\"message\":\"max_tokens is too large\",\"type\":\"BadRequestError\","
               "\"param\":null,\"code\":400}");
    CHECK(r.is_error);
    CHECK_EQ_STR(r.error_message.base, r.error_message.len, "max_tokens is too large");
    CHECK_EQ_INT(r.error_code, 400);
    r = DECODE(SG_OAI_CHAT, "{\"error\":{\"message\":\"Incorrect API key\",\"code\":\"invalid_api_key\"}}");
    CHECK(r.is_error);
    CHECK_EQ_INT(r.error_code, -1);
    r = DECODE(SG_OAI_CHAT, "{\"error\":{}}");
    CHECK(r.is_error);
    CHECK_EQ_INT(r.error_message.len, 0);
    /* Not errors: a null error, an "object" that is not "error", a message without the error object. */
    r = DECODE(SG_OAI_CHAT, "{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"x\"}}]}");
    CHECK(!r.is_error);
    r = DECODE(SG_OAI_CHAT, "{\"object\":\"chat.completion.chunk\",\"message\":\"m\",\"code\":1}");
    CHECK(!r.is_error);
    r = DECODE(SG_OAI_CHAT, "{\"message\":\"m\"}");
    CHECK(!r.is_error);
    /* The error object wins over vLLM's top-level shape. */
    r = DECODE(SG_OAI_CHAT,
               "{\"object\":\"error\",\"message\":\"top\",\"code\":1,\"error\":{\"message\":\"inner\",\"code\":2}}");
    CHECK(r.is_error);
    CHECK_EQ_STR(r.error_message.base, r.error_message.len, "inner");
    CHECK_EQ_INT(r.error_code, 2);
}

/* Every proper prefix of a valid body is malformed; the body itself and trailing whitespace are fine. */
static void check_truncations(sg_oai_kind_t kind, const char *json, int line)
{
    size_t len = strlen(json);
    sg_oai_result_t r;
    for (size_t n = 0; n < len; n++) {
        char *copy = malloc(n + 1); /* exact size, so ASan sees any read past the end */
        memcpy(copy, json, n);
        int rc = sg_oai_decode(kind, copy, n, &r);
        if (rc != SG_EJSON) {
            CHECK(!"a truncated body decoded");
            fprintf(stderr, "  line %d: prefix %zu -> %d\n", line, n, rc);
        }
        sg_oai_request_t q;
        /* chat's and completions' requests (the other APIs' are test_api_request's) */
        rc = kind > SG_OAI_COMPLETIONS ? SG_EJSON : sg_oai_scan_request(kind, copy, n, &q);
        if (rc != SG_EJSON) {
            CHECK(!"a truncated request scanned");
            fprintf(stderr, "  line %d: request prefix %zu -> %d\n", line, n, rc);
        }
        free(copy);
    }
    CHECK_EQ_INT(sg_oai_decode(kind, json, len, &r), 0);
}

static void test_malformed(void)
{
    static const char *const bad[] = {
        "",
        " ",
        "[]",
        "null",
        "\"s\"",
        "1",
        "{",
        "}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,\"a\":1}",
        "{\"a\" 1}",
        "{\"a\":1 \"b\":2}",
        "{'a':1}",
        "{a:1}",
        "{\"a\":01}",
        "{\"a\":-01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":+1}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":1e+}",
        "{\"a\":0x10}",
        "{\"a\":NaN}",
        "{\"a\":Infinity}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":nul}",
        "{\"a\":True}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"\\u12G4\"}",
        "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\\"}",
        "{\"a\":\"unterminated}",
        "{\"a\":\"raw\ttab\"}",
        "{\"a\":\"raw\nnewline\"}",
        "{\"a\":[1,]}",
        "{\"a\":[,1]}",
        "{\"a\":[1 2]}",
        "{\"a\":{\"b\"}}",
        "{\"a\":{\"b\":1,}}",
        "{\"a\":[}",
        "{\"a\":{]}",
        "{\"a\":1}x",
        "{\"a\":1}{}",
        "{\"a\":1}}",
        "{\"a\":1}\x0b",
        "\xef\xbb\xbf{}",
        "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]",
        "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}]}",
        "{\"a\":\"x\"\"y\"}",
        "{\"a\" : 1 , }",
        "{\"a\":[[[[]]]}",
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++) {
        sg_oai_result_t r;
        int rc = sg_oai_decode(SG_OAI_CHAT, bad[i], strlen(bad[i]), &r);
        if (rc != SG_EJSON) {
            CHECK(!"malformed JSON decoded");
            fprintf(stderr, "  bad[%zu] = %s -> %d\n", i, bad[i], rc);
        }
        sg_oai_request_t q;
        rc = sg_oai_scan_request(SG_OAI_CHAT, bad[i], strlen(bad[i]), &q);
        if (rc != SG_EJSON) {
            CHECK(!"malformed JSON scanned");
            fprintf(stderr, "  bad[%zu] = %s -> %d (request)\n", i, bad[i], rc);
        }
    }
    /* Embedded NUL bytes are not JSON whitespace. */
    sg_oai_result_t r;
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, "{\"a\":1}\0", 8, &r), SG_EJSON);
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, "{\"a\":\"\0\"}", 9, &r), SG_EJSON);
    /* Valid oddities. */
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, S("{}"), &r), 0);
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, S("{\"\":\"\",\"a\":[],\"b\":{},\"c\":-0.0e-0,\"d\":[[],{}]}"), &r), 0);
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, S("{\"a\":\"\\u0000\\/\\b\\f\\n\\r\\t\\\"\\\\\"}"), &r), 0);

    check_truncations(
        SG_OAI_CHAT,
        "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"H\\u00e9\\n\"},\"logprobs\":null,"
        "\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":7e0},\"x\":true,"
        "\"y\":false,\"z\":[1.5,-2]}",
        __LINE__);
    check_truncations(SG_OAI_COMPLETIONS, "{\"error\":{\"message\":\"e\",\"code\":500},\"object\":\"error\"}",
                      __LINE__);
}

static void test_depth(void)
{
    /* Nesting up to 64 levels (the top-level object is level 1) is accepted; 65 is refused, and a million is
     * refused quickly without recursion. */
    size_t big = 1000000;
    char *buf = malloc(big * 2 + 16);
    for (int depth = 63; depth <= 66; depth++) {
        size_t n = 0;
        int inner = depth - 1;
        memcpy(buf, "{\"a\":", 5);
        n = 5;
        for (int i = 0; i < inner; i++)
            buf[n++] = '[';
        for (int i = 0; i < inner; i++)
            buf[n++] = ']';
        buf[n++] = '}';
        sg_oai_result_t r;
        int rc = sg_oai_decode(SG_OAI_CHAT, buf, n, &r);
        CHECK_EQ_INT(rc, depth <= 64 ? 0 : SG_EJSON);
        /* The same depth reached through the fields the decoder walks itself. */
        n = 0;
        const char *pre = "{\"choices\":[{\"delta\":{\"x\":";
        memcpy(buf, pre, strlen(pre));
        n = strlen(pre);
        for (int i = 0; i < depth - 4; i++)
            buf[n++] = '[';
        for (int i = 0; i < depth - 4; i++)
            buf[n++] = ']';
        memcpy(buf + n, "}}]}", 4);
        n += 4;
        rc = sg_oai_decode(SG_OAI_CHAT, buf, n, &r);
        CHECK_EQ_INT(rc, depth <= 64 ? 0 : SG_EJSON);
    }
    memset(buf, '[', big);
    buf[0] = '{';
    sg_oai_result_t r;
    CHECK_EQ_INT(sg_oai_decode(SG_OAI_CHAT, buf, big, &r), SG_EJSON);
    free(buf);
}

static void test_is_done(void)
{
    CHECK(sg_oai_is_done(S("[DONE]")));
    CHECK(sg_oai_is_done(S(" [DONE] \r\n")));
    CHECK(sg_oai_is_done(S("\t[DONE]")));
    CHECK(!sg_oai_is_done(S("[DONE]x")));
    CHECK(!sg_oai_is_done(S("[done]")));
    CHECK(!sg_oai_is_done(S("[DONE")));
    CHECK(!sg_oai_is_done(S("")));
    CHECK(!sg_oai_is_done(S("  ")));
    CHECK(!sg_oai_is_done(S("{\"choices\":[]}")));
}

static void check_unescape(const char *raw, const char *want, size_t want_len, int line)
{
    char out[64];
    ssize_t n = sg_json_unescape(raw, strlen(raw), out, sizeof out);
    test_checks++;
    if (n != (ssize_t)want_len || memcmp(out, want, want_len) != 0) {
        test_failures++;
        fprintf(stderr, "test_openai.c:%d: unescape(%s) -> %zd\n", line, raw, n);
    }
}
#define CHECK_UNESC(raw, want) check_unescape((raw), (want), sizeof(want) - 1, __LINE__)

static void test_unescape(void)
{
    CHECK_UNESC("plain text", "plain text");
    CHECK_UNESC("", "");
    CHECK_UNESC("\\n\\t\\\"\\\\\\/\\b\\f\\r", "\n\t\"\\/\b\f\r");
    CHECK_UNESC("caf\\u00e9 \\u00E9", "caf\xc3\xa9 \xc3\xa9");
    CHECK_UNESC("\\u20ac\\u0041\\u0000z", "\xe2\x82\xac"
                                          "A\0z");
    CHECK_UNESC("\\ud83d\\ude00!", "\xf0\x9f\x98\x80!");
    CHECK_UNESC("\\uDBFF\\uDFFF", "\xf4\x8f\xbf\xbf");
    /* Lone surrogates become U+FFFD. */
    CHECK_UNESC("\\ud83d", "\xef\xbf\xbd");
    CHECK_UNESC("\\ud83dx", "\xef\xbf\xbdx");
    CHECK_UNESC("\\ude00", "\xef\xbf\xbd");
    CHECK_UNESC("\\ud83d\\u0041", "\xef\xbf\xbd"
                                  "A");
    CHECK_UNESC("\\ud83d\\ud83d\\ude00", "\xef\xbf\xbd\xf0\x9f\x98\x80");
    CHECK_UNESC("raw \xc3\xa9 \xff bytes", "raw \xc3\xa9 \xff bytes");
    static const char *const bad[] = {"\\", "x\\", "\\x", "\\u", "\\u12", "\\u12g4", "\\U0041", "\\ud83d\\"};
    char out[16];
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++)
        CHECK_EQ_INT(sg_json_unescape(bad[i], strlen(bad[i]), out, sizeof out), SG_EJSON);
    /* Truncation: the full length comes back, at most cap bytes are written. */
    memset(out, '#', sizeof out);
    CHECK_EQ_INT(sg_json_unescape(S("hello"), out, 3), 5);
    CHECK_EQ_STR(out, 4, "hel#");
    CHECK_EQ_INT(sg_json_unescape(S("\\u20ac\\u20ac"), out, 4), 6);
    CHECK_EQ_STR(out, 5, "\xe2\x82\xac\xe2#");
    CHECK_EQ_INT(sg_json_unescape(S("a\\nb"), NULL, 0), 3);
}

static sg_oai_request_t scan_ok(sg_oai_kind_t kind, const char *json, size_t len, int line)
{
    sg_oai_request_t q;
    int rc = sg_oai_scan_request(kind, json, len, &q);
    test_checks++;
    if (rc != 0) {
        test_failures++;
        fprintf(stderr, "test_openai.c:%d: scan_request returned %d\n", line, rc);
    }
    return q;
}
#define SCAN(kind, lit) scan_ok((kind), S(lit), __LINE__)

static void test_scan_request(void)
{
    sg_oai_request_t q =
        SCAN(SG_OAI_CHAT, "{\"model\":\"llama-3\",\"messages\":[{\"role\":\"system\",\"content\":\"You are "
                          "helpful.\"},{\"role\":\"user\",\"content\":\"Hello  there\\nfriend\"}],"
                          "\"max_tokens\":128,\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    CHECK_EQ_STR(q.model.base, q.model.len, "llama-3");
    CHECK_EQ_INT(q.max_tokens, 128);
    CHECK(q.stream);
    CHECK(q.include_usage);
    CHECK_EQ_STR(q.prompt.base, q.prompt.len, "Hello  there\\nfriend");
    CHECK_EQ_INT(q.prompt_words, 6);

    /* Content parts: text parts count (keys in any order), others do not; the prompt is the first text part. */
    q = SCAN(SG_OAI_CHAT,
             "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one two\"},{\"type\":"
             "\"image_url\",\"image_url\":{\"url\":\"http://x/a b\"},\"text\":\"no\"},{\"text\":\"three\","
             "\"type\":\"text\"}]}]}");
    CHECK_EQ_INT(q.prompt_words, 3);
    CHECK_EQ_STR(q.prompt.base, q.prompt.len, "one two");
    CHECK_EQ_INT(q.max_tokens, -1);
    CHECK(!q.stream);
    CHECK(!q.include_usage);
    CHECK_EQ_INT(q.model.len, 0);

    /* The prompt is the last message's; a last message without text content leaves it empty. */
    q = SCAN(SG_OAI_CHAT,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"},{\"role\":\"assistant\",\"content\":null,"
             "\"tool_calls\":[]}]}");
    CHECK_EQ_INT(q.prompt.len, 0);
    CHECK_EQ_INT(q.prompt_words, 2);

    /* max_completion_tokens wins over max_tokens, in either order; null is absent. */
    q = SCAN(SG_OAI_CHAT, "{\"messages\":[{\"content\":\"a\"}],\"max_tokens\":5,\"max_completion_tokens\":9}");
    CHECK_EQ_INT(q.max_tokens, 9);
    q = SCAN(SG_OAI_CHAT, "{\"max_completion_tokens\":9,\"messages\":[{\"content\":\"a\"}],\"max_tokens\":5}");
    CHECK_EQ_INT(q.max_tokens, 9);
    q = SCAN(SG_OAI_CHAT, "{\"max_completion_tokens\":null,\"messages\":[{\"content\":\"a\"}],\"max_tokens\":5}");
    CHECK_EQ_INT(q.max_tokens, 5);
    q = SCAN(SG_OAI_CHAT,
             "{\"messages\":[{\"content\":\"a\"}],\"stream\":\"yes\",\"stream_options\":{\"include_usage\":1}}");
    CHECK(!q.stream);
    CHECK(!q.include_usage);
    q = SCAN(SG_OAI_CHAT, "{\"messages\":[{\"content\":\"a\"}],\"stream\":false,\"stream_options\":null}");
    CHECK(!q.stream);

    /* Words are judged after decoding escapes; non-ASCII spaces are not separators. */
    q = SCAN(SG_OAI_CHAT, "{\"messages\":[{\"content\":\"a\\tb\\u0020c\\u00a0d\\r\\n\\u000be \\\" \\/\"}]}");
    CHECK_EQ_INT(q.prompt_words, 6);
    q = SCAN(SG_OAI_CHAT, "{\"messages\":[{\"content\":\"\"},{\"content\":\"   \"},{\"content\":\" x \"}]}");
    CHECK_EQ_INT(q.prompt_words, 1);
    /* A repeated key replaces the earlier value, words included (as jansson reads it). */
    q = SCAN(SG_OAI_CHAT, "{\"messages\":[{\"content\":\"a b c\",\"content\":\"d\"}],\"messages\":[{\"content\":\"e "
                          "f\",\"content\":[{\"type\":\"text\",\"text\":\"g\",\"text\":\"h i\"}]}]}");
    CHECK_EQ_INT(q.prompt_words, 2);
    CHECK_EQ_STR(q.prompt.base, q.prompt.len, "h i");

    /* Completions: a string, an array of strings, token ids, arrays of token ids. */
    q = SCAN(SG_OAI_COMPLETIONS,
             "{\"model\":\"m\",\"prompt\":\"The quick brown fox\",\"max_tokens\":16,\"stream\":true}");
    CHECK_EQ_STR(q.prompt.base, q.prompt.len, "The quick brown fox");
    CHECK_EQ_INT(q.prompt_words, 4);
    CHECK_EQ_INT(q.max_tokens, 16);
    q = SCAN(SG_OAI_COMPLETIONS, "{\"prompt\":[\"first one\",\"second two three\"]}");
    CHECK_EQ_STR(q.prompt.base, q.prompt.len, "first one");
    CHECK_EQ_INT(q.prompt_words, 2);
    q = SCAN(SG_OAI_COMPLETIONS, "{\"prompt\":[101, 2023, 2003, 102]}");
    CHECK_EQ_INT(q.prompt.len, 0);
    CHECK_EQ_INT(q.prompt_words, 4);
    q = SCAN(SG_OAI_COMPLETIONS, "{\"prompt\":[[1,2],[3]]}");
    CHECK_EQ_INT(q.prompt_words, 2);
    /* Each kind reads its own field. */
    q = SCAN(SG_OAI_COMPLETIONS, "{\"messages\":[{\"content\":\"ignored words\"}],\"prompt\":\"x\"}");
    CHECK_EQ_INT(q.prompt_words, 1);

    sg_oai_request_t r;
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("{\"model\":\"m\"}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("{\"messages\":[]}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("{\"messages\":\"hi\"}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("{\"prompt\":\"hi\"}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_COMPLETIONS, S("{\"messages\":[{\"content\":\"a\"}]}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_COMPLETIONS, S("{\"prompt\":null}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_COMPLETIONS, S("{\"prompt\":[]}"), &r), SG_EPROTO);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_COMPLETIONS, S("{\"prompt\":\"x\"} x"), &r), SG_EJSON);
    CHECK_EQ_INT(sg_oai_scan_request(SG_OAI_CHAT, S("[{\"messages\":[]}]"), &r), SG_EJSON);
    check_truncations(
        SG_OAI_CHAT,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a b\"}]},"
        "{\"content\":\"c\"}],\"max_tokens\":3,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
        __LINE__);
}

/* Words in a prompt against a reference: the string decoded by sg_json_unescape, then a plain byte loop. Random
 * runs of words, spaces and escapes put every escape and word boundary at every offset of the 16-byte blocks
 * count_words works in. */
static void test_prompt_words_random(void)
{
    static const char *const pieces[] = {"a",
                                         "word",
                                         " ",
                                         "  ",
                                         "\\n",
                                         "\\t",
                                         "\\r",
                                         "\\f",
                                         "\\b",
                                         "\\/",
                                         "\\\"",
                                         "\\\\",
                                         "\\u0020",
                                         "\\u000b",
                                         "\\u00a0",
                                         "\\u00e9",
                                         "\\ud83d\\ude00",
                                         "\xc3\xa9",
                                         "x y",
                                         "\\u0009z"};
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    char prompt[1024], body[1200], dec[1024];
    unsigned mismatches = 0;
    for (int iter = 0; iter < 4000; iter++) {
        size_t len = 0;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        unsigned n = (unsigned)(rng >> 33) % 90;
        for (unsigned i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            const char *pc = pieces[(rng >> 33) % (sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(pc);
            if (len + pl >= sizeof prompt)
                break;
            memcpy(prompt + len, pc, pl);
            len += pl;
        }
        prompt[len] = '\0';
        int bl = snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", prompt);
        ssize_t dl = sg_json_unescape(prompt, len, dec, sizeof dec);
        CHECK(dl >= 0 && (size_t)dl <= sizeof dec);
        if (dl < 0)
            return;
        uint64_t want = 0;
        bool in_word = false;
        for (ssize_t i = 0; i < dl; i++) {
            unsigned char c = (unsigned char)dec[i];
            bool ws = c == ' ' || (c >= 0x09 && c <= 0x0d);
            want += !ws && !in_word;
            in_word = !ws;
        }
        sg_oai_request_t q;
        int rc = sg_oai_scan_request(SG_OAI_CHAT, body, (size_t)bl, &q);
        if (rc != 0 || q.prompt_words != want) {
            if (mismatches++ < 5)
                fprintf(stderr, "test_openai.c: %llu words, want %llu (rc %d) in \"%s\"\n",
                        (unsigned long long)(rc ? 0 : q.prompt_words), (unsigned long long)want, rc, prompt);
        }
    }
    CHECK_EQ_INT(mismatches, 0);
}

#define STR_IS(slice, lit) CHECK_EQ_STR(unesc(slice), strlen(unesc(slice)), lit)

static void test_embeddings_rankings(void)
{
    sg_oai_result_t r =
        DECODE(SG_OAI_EMBEDDINGS, "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                                  "\"embedding\":[0.1,-2e-3]},{\"index\":1,\"embedding\":\"AAAA\"}],"
                                  "\"model\":\"m\",\"usage\":{\"prompt_tokens\":12,\"total_tokens\":12}}");
    CHECK(r.recognized && !r.is_error);
    CHECK_EQ_INT((int)r.items, 2);
    CHECK_EQ_INT((int)r.prompt_tokens, 12);
    CHECK_EQ_INT((int)r.completion_tokens, -1);
    /* a chat completion at the embeddings path: valid JSON, not the shape */
    r = DECODE(SG_OAI_EMBEDDINGS, "{\"choices\":[{\"message\":{\"content\":\"x\"}}]}");
    CHECK(!r.recognized && !r.is_error);
    r = DECODE(SG_OAI_EMBEDDINGS, "{\"error\":{\"message\":\"Pooling type 'none' is not OAI compatible\","
                                  "\"code\":400,\"type\":\"invalid_request_error\"}}");
    CHECK(r.is_error && !r.recognized);
    CHECK_EQ_INT((int)r.error_code, 400);
    STR_IS(r.error_message, "Pooling type 'none' is not OAI compatible");
    r = DECODE(SG_OAI_EMBEDDINGS, "{\"object\":\"error\",\"message\":\"too long\",\"code\":400}"); /* vLLM */
    CHECK(r.is_error);
    STR_IS(r.error_message, "too long");

    r = DECODE(SG_OAI_RANK_NIM, "{\"rankings\":[{\"index\":1,\"logit\":0.5},{\"index\":0,\"logit\":-1.25}]}");
    CHECK(r.recognized && r.items == 2);
    r = DECODE(SG_OAI_RANK_TEI,
               "[{\"index\":1,\"score\":0.48},{\"index\":0,\"score\":-0.19},{\"index\":2,\"score\":0}]");
    CHECK(r.recognized && r.items == 3);
    r = DECODE(SG_OAI_RANK_TEI, "{\"error\":\"Input validation error\",\"error_type\":\"Validation\"}");
    CHECK(r.is_error && !r.recognized);
    STR_IS(r.error_message, "Input validation error");
    r = DECODE(SG_OAI_RANK_COHERE,
               "{\"model\":\"x\",\"object\":\"list\",\"usage\":{\"prompt_tokens\":8,\"total_tokens\""
               ":8},\"results\":[{\"index\":1,\"relevance_score\":0.48}]}");
    CHECK(r.recognized && r.items == 1 && r.prompt_tokens == 8);
    r = DECODE(SG_OAI_RANK_COHERE, "[{\"index\":1,\"score\":0.48}]"); /* TEI's answer to a Cohere request */
    CHECK(!r.recognized);
    r = DECODE(SG_OAI_RANK_NIM, "{\"results\":[]}");
    CHECK(!r.recognized);
    check_truncations(SG_OAI_EMBEDDINGS, "{\"data\":[{\"embedding\":[1]}],\"usage\":{\"prompt_tokens\":1}}", __LINE__);
    check_truncations(SG_OAI_RANK_TEI, "[{\"index\":0,\"score\":1.5}]", __LINE__);
}

static void test_responses(void)
{
    sg_oai_result_t r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\","
                                                 "\"output_index\":0,\"delta\":\"Hel\\\"lo\"}");
    CHECK(r.recognized && !r.is_error);
    STR_IS(r.content, "Hel\"lo");
    CHECK_EQ_INT((int)r.reasoning.len, 0);
    /* the type after the payload */
    r = DECODE(SG_OAI_RESPONSES, "{\"delta\":\"think\",\"type\":\"response.reasoning_text.delta\"}");
    STR_IS(r.reasoning, "think");
    CHECK_EQ_INT((int)r.content.len, 0);
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"sum\"}");
    STR_IS(r.reasoning, "sum");
    /* events that carry no text */
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\","
                                 "\"output\":[]}}");
    CHECK(r.recognized && r.content.len == 0 && r.completion_tokens == -1);
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.output_text.done\",\"text\":\"Hello world\"}");
    CHECK(r.recognized && r.content.len == 0);
    /* completed: usage, and its output (already streamed) is not content again */
    r = DECODE(SG_OAI_RESPONSES,
               "{\"type\":\"response.completed\",\"response\":{\"object\":\"response\",\"status\":\"completed\","
               "\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello\"}]}],"
               "\"usage\":{\"input_tokens\":29,\"output_tokens\":5,\"total_tokens\":34,\"output_tokens_details\":"
               "{\"reasoning_tokens\":3},\"input_tokens_details\":{\"cached_tokens\":0}}}}");
    CHECK(r.recognized && r.content.len == 0);
    CHECK_EQ_INT((int)r.prompt_tokens, 29);
    CHECK_EQ_INT((int)r.completion_tokens, 5);
    CHECK_EQ_INT((int)r.reasoning_tokens, 3);
    CHECK_EQ_INT((int)r.cached_tokens, 0);
    /* incomplete: max_output_tokens reached (what a benchmark asks for), not a failure; its usage counts */
    r = DECODE(SG_OAI_RESPONSES,
               "{\"type\":\"response.incomplete\",\"sequence_number\":40,\"response\":{\"object\":\"response\","
               "\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"error\":null,"
               "\"usage\":{\"input_tokens\":12,\"output_tokens\":16,\"total_tokens\":28}}}");
    CHECK(r.recognized && !r.is_error && r.content.len == 0);
    CHECK(r.prompt_tokens == 12 && r.completion_tokens == 16);
    r = DECODE(SG_OAI_RESPONSES,
               "{\"object\":\"response\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":"
               "\"max_output_tokens\"},\"error\":null,\"output\":[{\"type\":\"message\",\"status\":\"incomplete\","
               "\"content\":[{\"type\":\"output_text\",\"text\":\"cut sh\"}]}],\"usage\":{\"input_tokens\":3,"
               "\"output_tokens\":2}}");
    CHECK(r.recognized && !r.is_error);
    STR_IS(r.content, "cut sh");
    CHECK(r.prompt_tokens == 3 && r.completion_tokens == 2);
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":"
                                 "{\"code\":\"server_error\",\"message\":\"boom\"}}}");
    CHECK(r.is_error);
    STR_IS(r.error_message, "boom");
    /* a failed response whose "response" gives no error: the event's own "error" member is the server's word (the
     * fuzzer's find, tests/fuzz/corpus/fuzz_openai/response-failed-top-error), else its message, else its type;
     * each a slice of the event */
    r = DECODE(SG_OAI_RESPONSES, "{\"object\":\"error\",\"message\":\"bad \\\"req\\\"\",\"type\":\"response.failed\","
                                 "\"code\":400,\"error\":{\"message\":\"bo\x7fm\",\"code\":500}}");
    CHECK(r.is_error && r.recognized);
    STR_IS(r.error_message, "bo\x7fm");
    CHECK_EQ_INT((int)r.error_code, 500);
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"response.failed\",\"message\":\"overloaded\",\"code\":503}");
    CHECK(r.is_error);
    STR_IS(r.error_message, "overloaded");
    CHECK_EQ_INT((int)r.error_code, 503);
    static const char bare[] = "{\"type\":\"response.failed\",\"response\":{\"status\":\"failed\"}}";
    r = decode_ok(SG_OAI_RESPONSES, bare, sizeof bare - 1, __LINE__);
    CHECK(r.is_error);
    STR_IS(r.error_message, "response.failed");
    CHECK(r.error_message.base > bare && r.error_message.base < bare + sizeof bare);
    r = DECODE(SG_OAI_RESPONSES, "{\"type\":\"error\",\"code\":\"ERR\",\"message\":\"bad\",\"param\":null}");
    CHECK(r.is_error && r.recognized);
    STR_IS(r.error_message, "bad");
    /* a whole response */
    r = DECODE(
        SG_OAI_RESPONSES,
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"error\":null,\"output\":[{\"type\":"
        "\"reasoning\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]},{\"type\":"
        "\"message\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"Hi\"}]}],\"usage\":"
        "{\"input_tokens\":4,\"output_tokens\":7}}");
    CHECK(r.recognized && !r.is_error);
    STR_IS(r.content, "Hi");
    STR_IS(r.reasoning, "hmm");
    CHECK(r.prompt_tokens == 4 && r.completion_tokens == 7);
    /* a chat chunk at the responses path */
    r = DECODE(SG_OAI_RESPONSES, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}");
    CHECK(!r.recognized && r.content.len == 0);
    check_truncations(SG_OAI_RESPONSES, "{\"type\":\"response.output_text.delta\",\"delta\":\"a\"}", __LINE__);
}

static void test_messages(void)
{
    sg_oai_result_t r = DECODE(
        SG_OAI_MESSAGES, "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":"
                         "\"assistant\",\"content\":[],\"usage\":{\"cache_read_input_tokens\":28,\"input_tokens\":1,"
                         "\"output_tokens\":0}}}");
    CHECK(r.recognized && r.content.len == 0);
    CHECK_EQ_INT((int)r.prompt_tokens, 29); /* Anthropic counts cache reads apart */
    CHECK_EQ_INT((int)r.cached_tokens, 28);
    CHECK_EQ_INT((int)r.completion_tokens, 0);
    r = DECODE(SG_OAI_MESSAGES,
               "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ugins\"}}");
    STR_IS(r.content, "ugins");
    r = DECODE(
        SG_OAI_MESSAGES,
        "{\"index\":0,\"delta\":{\"thinking\":\"so\",\"type\":\"thinking_delta\"},\"type\":\"content_block_delta\"}");
    STR_IS(r.reasoning, "so");
    CHECK_EQ_INT((int)r.content.len, 0);
    r = DECODE(SG_OAI_MESSAGES, "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"signature_delta\","
                                "\"signature\":\"abc\"}}");
    CHECK(r.recognized && r.content.len == 0 && r.reasoning.len == 0);
    r = DECODE(SG_OAI_MESSAGES, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
                                "\"text\":\"\"}}");
    CHECK(r.recognized && r.content.len == 0);
    r = DECODE(SG_OAI_MESSAGES,
               "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\""
               ":null},\"usage\":{\"output_tokens\":5}}");
    CHECK(r.recognized && r.completion_tokens == 5 && r.prompt_tokens == -1);
    r = DECODE(SG_OAI_MESSAGES, "{\"type\":\"ping\"}");
    CHECK(r.recognized);
    r = DECODE(SG_OAI_MESSAGES,
               "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
    CHECK(r.is_error && r.recognized);
    STR_IS(r.error_message, "Overloaded");
    r = DECODE(
        SG_OAI_MESSAGES,
        "{\"id\":\"msg\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\""
        ":\"let me\",\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"Hi!\"}],\"usage\":{\"input_tokens\":10,"
        "\"output_tokens\":20}}");
    CHECK(r.recognized);
    STR_IS(r.content, "Hi!");
    STR_IS(r.reasoning, "let me");
    CHECK(r.prompt_tokens == 10 && r.completion_tokens == 20);
    r = DECODE(SG_OAI_MESSAGES, "{\"choices\":[]}");
    CHECK(!r.recognized);
    check_truncations(SG_OAI_MESSAGES,
                      "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}",
                      __LINE__);
}

static void test_generate(void)
{
    sg_oai_result_t r = DECODE(SG_OAI_GENERATE, "{\"index\":1,\"token\":{\"id\":42,\"text\":\" the\",\"logprob\":-0.5,"
                                                "\"special\":false},\"generated_text\":null,\"details\":null}");
    CHECK(r.recognized);
    STR_IS(r.content, " the");
    /* the last event: the end token (special: no text) and the whole text again, which is not content */
    r = DECODE(SG_OAI_GENERATE, "{\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":0,\"special\":true},"
                                "\"generated_text\":\"x the\",\"details\":{\"finish_reason\":\"eos_token\","
                                "\"generated_tokens\":3,\"seed\":null}}");
    CHECK(r.recognized && r.content.len == 0 && r.has_finish_reason);
    CHECK_EQ_INT((int)r.completion_tokens, 3);
    /* whole responses, as an object and as TGI's one-element array */
    r = DECODE(SG_OAI_GENERATE, "{\"generated_text\":\"abc\",\"details\":{\"finish_reason\":\"length\","
                                "\"generated_tokens\":9,\"prefill\":[],\"tokens\":[]}}");
    CHECK(r.recognized && r.completion_tokens == 9);
    STR_IS(r.content, "abc");
    r = DECODE(SG_OAI_GENERATE, "[{\"generated_text\":\"q\"}]");
    CHECK(r.recognized);
    STR_IS(r.content, "q");
    r = DECODE(SG_OAI_GENERATE, "{\"error\":\"Request failed during generation\",\"error_type\":\"generation\"}");
    CHECK(r.is_error && !r.recognized);
    STR_IS(r.error_message, "Request failed during generation");
    r = DECODE(SG_OAI_GENERATE, "{\"choices\":[{\"text\":\"x\"}]}");
    CHECK(!r.recognized && r.content.len == 0);
    check_truncations(SG_OAI_GENERATE, "{\"token\":{\"text\":\"a\",\"special\":false},\"details\":null}", __LINE__);
}

/* The endpoint table: names round-trip, aliases land where they should. */
static void test_endpoint_table(void)
{
    for (int k = 0; k < SG_OAI__KINDS; k++) {
        sg_oai_kind_t back;
        CHECK_EQ_INT(sg_endpoint_parse(sg_endpoint((sg_oai_kind_t)k)->name, &back), 0);
        CHECK_EQ_INT((int)back, k);
        CHECK(strstr(sg_endpoint_names(), sg_endpoint((sg_oai_kind_t)k)->name) != NULL);
    }
    sg_oai_kind_t k;
    CHECK(sg_endpoint_parse("rankings", &k) == 0 && k == SG_OAI_RANK_NIM);
    CHECK(sg_endpoint_parse("huggingface_generate", &k) == 0 && k == SG_OAI_GENERATE);
    CHECK(sg_endpoint_parse("kserve", &k) < 0 && sg_endpoint_parse("", &k) < 0);
    CHECK(!sg_endpoint(SG_OAI_EMBEDDINGS)->output && !sg_endpoint(SG_OAI_EMBEDDINGS)->streams);
    CHECK(sg_endpoint(SG_OAI_RANK_TEI)->batch && sg_endpoint(SG_OAI_MESSAGES)->streams);
}

/* ---------- arrays of numbers: the 64-byte window validator against jansson ---------- */

/* 0 when the text is one valid value with nothing after it. */
static int skip_whole(const char *s, size_t len)
{
    sg_js_t js;
    sg_js_init(&js, s, len);
    int rc = sg_js_skip(&js);
    return rc == 0 && !sg_js_at_end(&js) ? SG_EJSON : rc;
}

/* jansson's verdict: 1 valid, 0 invalid, -1 refused only for a number too big for its types (we take those). */
static int jansson_verdict(const char *s, size_t len)
{
    json_error_t e;
    json_t *v = json_loadb(s, len, 0, &e);
    if (v) {
        json_decref(v);
        return 1;
    }
    return strstr(e.text, "too big") || strstr(e.text, "overflow") ? -1 : 0;
}

/* One element: a number as servers print them (mostly), or a random string of number bytes (mostly invalid). */
static size_t random_element(char *out, size_t cap, uint64_t *seed)
{
    uint64_t r = *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)((r >> 11) % 2000001) / 1000000.0 - 1.0;
    int n;
    switch ((r >> 40) % 10) {
    case 0:
        n = snprintf(out, cap, "%.9f", v);
        break;
    case 1:
        n = snprintf(out, cap, "%.17g", v);
        break;
    case 2:
        n = snprintf(out, cap, "%e", v * 1e-3);
        break;
    case 3:
        n = snprintf(out, cap, "%E", v * 1e5);
        break;
    case 4:
        n = snprintf(out, cap, "%d", (int)(v * 1e6));
        break;
    case 5:
    case 6: {
        static const char alphabet[] = "0123456789-+.eE00-.";
        n = (int)(1 + (r >> 20) % 6);
        for (int i = 0; i < n; i++)
            out[i] = alphabet[(r >> (26 + 3 * i)) % (sizeof alphabet - 1)];
        out[n] = '\0';
        break;
    }
    default:
        n = snprintf(out, cap, "%.6f", v);
        break;
    }
    return (size_t)n;
}

static void test_number_runs_with(int isa)
{
    /* The window validator engages on compact and on pretty-printed vectors, and stops short of the end. */
    static char buf[8192];
    const char *seps[] = {",", ",\n        ", ", "};
    for (size_t s = 0; s < 3; s++) {
        size_t len = 0;
        buf[len++] = '[';
        for (int i = 0; i < 200; i++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? seps[s] : "",
                                    i % 3 ? "-0.012345678" : "0.98765e-05");
        buf[len++] = ']';
        const char *q = sg_js_number_list(buf + 1, buf + len);
        if (isa != SG_JS_NUMBERS_SCALAR)
            CHECK(q > buf + 1 && buf + len - q < 64 + 24);
        else
            CHECK(q == buf + 1);
        CHECK(q <= buf + len);
        CHECK_EQ_INT(skip_whole(buf, len), 0);
    }

    /* Every malformation, at every element of a vector (so at every offset in a window), compact and pretty;
     * numbers that are odd but valid, too. jansson agrees with each verdict. */
    static const char *const bad[] = {"01",   "-01", "00",  "1.",    "-",    ".5",    "1.e5",  "1e",    "1e+",
                                      "1e-",  "+1",  "--1", "1-",    "1+",   "1.2.3", "1e2e3", "1e2.5", "1.2e3.4",
                                      "0x1",  "1f",  "e5",  "-e5",   "1..2", "1ee2",  "1e+-2", "- 1",   "1 2",
                                      "1,,2", "",    "-.5", "1.5.",  "1e5e", "00.5",  "-00",   "1E",    "1,\t,2",
                                      "1\v2", "1/2", "1:2", "1\x01", "1+2",  "1-2",   "1.5+3", "1.5-3", "1e5+3"};
    static const char *const good[] = {"0",         "-0",       "0.0",   "0e05",      "1E+5", "-1.5e-3",
                                       "123456789", "0.000001", "1e0",   "-9.99E-09", "10",   "1 ",
                                       " 1",        "0 , 1",    "\"1\"", "[1]",       "{}",   "null"};
    for (int pretty = 0; pretty < 2; pretty++) {
        for (int set = 0; set < 2; set++) {
            const char *const *toks = set ? good : bad;
            size_t ntoks = set ? sizeof good / sizeof good[0] : sizeof bad / sizeof bad[0];
            for (size_t t = 0; t < ntoks; t++) {
                /* at: the element it replaces; at the 13th, the second element's length shifts it by 0 to 63
                 * bytes, so it meets each offset in a 64-byte block and straddles the blocks' boundary */
                for (int at = 0; at < 24; at++) {
                    for (int shift = 0; shift < (at == 12 ? 64 : 1); shift++) {
                        size_t len = 0;
                        buf[len++] = '[';
                        for (int i = 0; i < 24; i++) {
                            if (i)
                                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", pretty ? ",\n  " : ",");
                            if (i == at) {
                                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", toks[t]);
                            } else if (i == 1) {
                                /* 1 + shift bytes: "5", "55", "0.5", "0.05", ... */
                                if (shift < 2) {
                                    for (int z = 0; z <= shift; z++)
                                        buf[len++] = '5';
                                } else {
                                    buf[len++] = '0';
                                    buf[len++] = '.';
                                    for (int z = 0; z < shift - 2; z++)
                                        buf[len++] = '0';
                                    buf[len++] = '5';
                                }
                            } else {
                                len += (size_t)snprintf(buf + len, sizeof buf - len, "-0.01234567");
                            }
                        }
                        buf[len++] = ']';
                        int rc = skip_whole(buf, len), ref = jansson_verdict(buf, len);
                        test_checks++;
                        if ((rc == 0) != (set == 1) || ref != (set == 1)) {
                            test_failures++;
                            fprintf(stderr,
                                    "test_openai.c: isa %d: '%s' at %d shift %d (pretty %d): rc %d, jansson %d\n", isa,
                                    toks[t], at, shift, pretty, rc, ref);
                        }
                    }
                }
            }
        }
    }

    /* Random vectors with random separators: our verdict is jansson's. */
    uint64_t seed = 42;
    int disagreements = 0, valid = 0, runs = 20000;
    for (int run = 0; run < runs; run++) {
        size_t len = 0;
        buf[len++] = '[';
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int count = 8 + (int)((seed >> 33) % 60);
        bool noisy = (seed >> 50) % 4 == 0; /* a quarter of the runs carry odd elements and separators */
        for (int i = 0; i < count && len < sizeof buf - 64; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            if (i) {
                static const char *const sep[] = {",", ",", ",", ",\n    ", " , ", ",,", " ", ""};
                buf[len] = '\0';
                const char *s = sep[noisy ? (seed >> 20) % 8 : (seed >> 20) % 5];
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", s);
            }
            char el[64];
            size_t n = random_element(el, sizeof el, &seed);
            if (!noisy && (seed >> 40) % 10 >= 5 && (seed >> 40) % 10 <= 6)
                n = (size_t)snprintf(el, sizeof el, "%.8f", (double)(seed >> 44) / 1e6);
            memcpy(buf + len, el, n);
            len += n;
        }
        buf[len++] = ']';
        int ref = jansson_verdict(buf, len);
        if (ref < 0)
            continue;
        int rc = skip_whole(buf, len);
        valid += ref;
        if ((rc == 0) != (ref == 1)) {
            if (disagreements++ < 5)
                fprintf(stderr, "test_openai.c: isa %d: jansson %d, we %d: %.*s\n", isa, ref, rc, (int)len, buf);
        }
    }
    CHECK_EQ_INT(disagreements, 0);
    CHECK(valid > runs / 2 && valid < runs); /* both verdicts were exercised */
}

/* Each implementation this CPU has (scalar and SSE2 everywhere on x86-64; AVX2, AVX-512BW and VBMI where present). */
static void test_number_runs(void)
{
    int tried = 0;
    for (int isa = SG_JS_NUMBERS_SCALAR; isa <= SG_JS_NUMBERS_AVX512VBMI; isa++) {
        if (!sg_js_number_list_use(isa))
            continue;
        test_number_runs_with(isa);
        tried++;
    }
    fprintf(stderr, "test_openai: number runs checked with %d implementations\n", tried);
    CHECK(sg_js_number_list_use(-1));
}

/*
 * Cached prompt tokens, under each server's name: OpenAI's usage.prompt_tokens_details.cached_tokens (vLLM,
 * SGLang), llama.cpp's timings.cache_n (the chunk that carries timings; usage's field wins when both are there),
 * absent, null or negative as -1.
 */
static void test_cached_tokens(void)
{
    sg_oai_result_t r = DECODE(SG_OAI_CHAT, "{\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":"
                                            "4,\"prompt_tokens_details\":{\"cached_tokens\":96}}}");
    CHECK_EQ_INT((int)r.prompt_tokens, 100);
    CHECK_EQ_INT((int)r.cached_tokens, 96);
    /* an older llama-server's last streamed chunk: usage without details, timings with cache_n (3.22.1's has both) */
    r = DECODE(SG_OAI_CHAT,
               "{\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"usage\":{"
               "\"completion_tokens\":8,\"prompt_tokens\":37,\"total_tokens\":45},\"timings\":{\"cache_n\":"
               "30,\"prompt_n\":7,\"prompt_ms\":1.5,\"predicted_n\":8}}");
    CHECK_EQ_INT((int)r.cached_tokens, 30);
    r = DECODE(SG_OAI_COMPLETIONS, "{\"timings\":{\"cache_n\":5},\"usage\":{\"prompt_tokens_details\":{"
                                   "\"cached_tokens\":6}}}");
    CHECK_EQ_INT((int)r.cached_tokens, 6);
    r = DECODE(SG_OAI_CHAT, "{\"usage\":{\"prompt_tokens\":3,\"prompt_tokens_details\":null}}");
    CHECK_EQ_INT((int)r.cached_tokens, -1);
    r = DECODE(SG_OAI_CHAT, "{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":-2}},\"timings\":[1]}");
    CHECK_EQ_INT((int)r.cached_tokens, -1);
    r = DECODE(SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]}");
    CHECK_EQ_INT((int)r.cached_tokens, -1);
    r = DECODE(SG_OAI_MESSAGES, "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}");
    CHECK_EQ_INT((int)r.cached_tokens, -1);
}

/* r and want agree on everything the worker reads (the slices by their bytes). */
static bool same_result(const sg_oai_result_t *r, const sg_oai_result_t *want)
{
    return r->content.len == want->content.len && memcmp(r->content.base, want->content.base, r->content.len) == 0 &&
           r->reasoning.len == want->reasoning.len &&
           memcmp(r->reasoning.base, want->reasoning.base, r->reasoning.len) == 0 &&
           r->completion_tokens == want->completion_tokens && r->prompt_tokens == want->prompt_tokens &&
           r->reasoning_tokens == want->reasoning_tokens && r->cached_tokens == want->cached_tokens &&
           r->items == want->items && r->recognized == want->recognized &&
           r->has_finish_reason == want->has_finish_reason && r->is_error == want->is_error &&
           r->error_message.len == want->error_message.len &&
           memcmp(r->error_message.base, want->error_message.base, r->error_message.len) == 0 &&
           r->error_code == want->error_code && r->tool_calls == want->tool_calls &&
           r->tool_index_max == want->tool_index_max && r->tool_n_args == want->tool_n_args;
}

/*
 * The memo (sg_oai_decode_memo) against the full decoder on a run of events: the same return and result for every
 * one, whether the memo served it (same bytes around a valid string) or not (a quote, a control character or a
 * second content key in the middle, another shape, another kind, usage or reasoning at the end of a stream).
 */
static void test_decode_memo(void)
{
    static const struct {
        sg_oai_kind_t kind;
        const char *json;
        bool memo; /* served by the memo */
    } evs[] = {
#define CHUNK(text, fin)                                                                                               \
    "{\"id\":\"c-1\",\"object\":\"chat.completion.chunk\",\"created\":17,\"model\":\"m\",\"choices\":[{\"index\":0,"   \
    "\"delta\":{\"content\":\"" text "\"},\"finish_reason\":" fin "}]}"
        {SG_OAI_CHAT, CHUNK(" the", "null"), false},
        {SG_OAI_CHAT, CHUNK(" of", "null"), true},
        {SG_OAI_CHAT, CHUNK("", "null"), true},
        {SG_OAI_CHAT, CHUNK("a \\\"quoted\\\" \\u00e9 word\\n", "null"), true},
        /* an unescaped quote: the middle is not one string; the last content wins */
        {SG_OAI_CHAT, CHUNK("x\",\"content\":\"y", "null"), false},
        {SG_OAI_CHAT, CHUNK(" back", "null"), false}, /* the memo is now the two-key event's */
        {SG_OAI_CHAT, CHUNK(" again", "null"), true},
        {SG_OAI_CHAT, CHUNK("bad \\x escape", "null"), false}, /* SG_EJSON both ways */
        {SG_OAI_CHAT, CHUNK("raw \x01 control", "null"), false},
        {SG_OAI_CHAT, CHUNK("tail", "null") " ", false}, /* other bytes after */
        {SG_OAI_CHAT, CHUNK("x", "\"stop\""), false},
        {SG_OAI_COMPLETIONS, CHUNK("kind", "null"), false},
        {SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"r\",\"reasoning_content\":\"think\"}}]}", false},
        {SG_OAI_CHAT, "{\"choices\":[{\"delta\":{\"content\":\"r\",\"reasoning_content\":\"think\"}}]}", false},
        {SG_OAI_CHAT,
         "{\"choices\":[{\"delta\":{\"content\":\"u\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}",
         false},
        {SG_OAI_CHAT,
         "{\"choices\":[{\"delta\":{\"content\":\"w\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9}}",
         true},
        {SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\" a\",\"index\":0}]}", false},
        {SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\" bb\",\"index\":0}]}", true},
        {SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\"\",\"index\":0}]}", true},
        {SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\" a\"\"x\",\"index\":0}]}", false},
        {SG_OAI_COMPLETIONS, "{\"choices\":[{\"text\":\" a\"", false}, /* shorter than the memo */
#undef CHUNK
    };
    sg_oai_memo_t memo;
    memset(&memo, 0, sizeof memo);
    for (size_t i = 0; i < sizeof evs / sizeof *evs; i++) {
        size_t len = strlen(evs[i].json);
        sg_oai_result_t want, got;
        int want_rc = sg_oai_decode(evs[i].kind, evs[i].json, len, &want);
        sg_oai_memo_t before = memo;
        int rc = sg_oai_decode_memo(&memo, evs[i].kind, evs[i].json, len, &got);
        CHECK_EQ_INT(rc, want_rc);
        if (rc == 0 && !same_result(&got, &want)) {
            test_failures++;
            fprintf(stderr, "test_openai.c: memo event %zu (%s): the result differs from the full decoder's\n", i,
                    evs[i].json);
        }
        test_checks++;
        /* served by the memo: it was there and is left as it was (a full decode learns the event, its content's
         * address with it) */
        bool served = rc == 0 && before.pre && memcmp(&before, &memo, sizeof memo) == 0;
        if (served != evs[i].memo) {
            test_failures++;
            fprintf(stderr, "test_openai.c: memo event %zu (%s): served %d, want %d\n", i, evs[i].json, served,
                    evs[i].memo);
        }
    }
}

int main(void)
{
    test_decode_memo();
    test_cached_tokens();
    test_number_runs();
    test_embeddings_rankings();
    test_responses();
    test_messages();
    test_generate();
    test_endpoint_table();
    test_chat_stream();
    test_chat_whole_and_completions();
    test_choice_selection();
    test_errors();
    test_malformed();
    test_depth();
    test_is_done();
    test_unescape();
    test_scan_request();
    test_prompt_words_random();
    return test_finish("test_openai");
}
