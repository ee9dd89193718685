/*
 * sg_api_scan_request: what the mock reads from each API's request (docs/endpoints.md's shapes and their usual
 * variants), the refusals with their reasons, the rerank path's choice between TEI and Cohere, and every
 * truncation of a valid body refused as malformed.
 */
#include "sg_api_request.h"
#include "test.h"

#include <stdlib.h>

#define S(lit) lit, sizeof(lit) - 1

static sg_api_request_t scan_ok(sg_oai_kind_t kind, const char *json, size_t len, int line)
{
    sg_api_request_t r;
    int rc = sg_api_scan_request(kind, json, len, &r);
    test_checks++;
    if (rc != 0) {
        test_failures++;
        fprintf(stderr, "test_api_request.c:%d: scan returned %d (%s) for %.*s\n", line, rc, r.err ? r.err : "",
                (int)len, json);
    }
    return r;
}
#define SCAN(kind, lit) scan_ok((kind), S(lit), __LINE__)

static int scan_rc(sg_oai_kind_t kind, const char *json, size_t len, const char **err)
{
    sg_api_request_t r;
    int rc = sg_api_scan_request(kind, json, len, &r);
    *err = r.err;
    return rc;
}

/* Every proper prefix of a valid body is malformed; the body itself scans. */
static void check_truncations(sg_oai_kind_t kind, const char *json)
{
    size_t len = strlen(json);
    sg_api_request_t r;
    for (size_t n = 0; n < len; n++) {
        char *copy = malloc(n + 1); /* exact size, so ASan sees any read past the end */
        memcpy(copy, json, n);
        int rc = sg_api_scan_request(kind, copy, n, &r);
        if (rc != SG_EJSON) {
            CHECK(!"a truncated request scanned");
            fprintf(stderr, "  kind %d: prefix %zu of %s -> %d\n", kind, n, json, rc);
        }
        free(copy);
    }
    CHECK_EQ_INT(sg_api_scan_request(kind, json, len, &r), 0);
}

static void test_embeddings(void)
{
    sg_api_request_t r =
        SCAN(SG_OAI_EMBEDDINGS, "{\"model\":\"e5\",\"input\":[\"one two\",\"three\",\"four  five\\tsix\"],"
                                "\"encoding_format\":\"float\"}");
    CHECK_EQ_INT(r.kind, SG_OAI_EMBEDDINGS);
    CHECK_EQ_STR(r.model.base, r.model.len, "e5");
    CHECK_EQ_INT(r.inputs, 3);
    CHECK_EQ_INT(r.prompt_words, 6);
    CHECK_EQ_STR(r.prompt.base, r.prompt.len, "one two");
    CHECK_EQ_INT(r.max_tokens, -1);
    CHECK(!r.stream);

    r = SCAN(SG_OAI_EMBEDDINGS, "{\"input\":\"a single\\ninput\",\"stream\":true}");
    CHECK_EQ_INT(r.inputs, 1);
    CHECK_EQ_INT(r.prompt_words, 3); /* an escaped newline separates words */
    CHECK_EQ_INT(r.model.len, 0);
    CHECK(r.stream);

    r = SCAN(SG_OAI_EMBEDDINGS, "{\"input\":[[1,2,3],[4,5],[]]}");
    CHECK_EQ_INT(r.inputs, 3);
    CHECK_EQ_INT(r.prompt_words, 5);
    r = SCAN(SG_OAI_EMBEDDINGS, "{\"input\":[101,102,103,104]}");
    CHECK_EQ_INT(r.inputs, 1);
    CHECK_EQ_INT(r.prompt_words, 4);
    /* a repeated key: the last one wins */
    r = SCAN(SG_OAI_EMBEDDINGS, "{\"input\":[\"a\",\"b\"],\"input\":\"c d e\"}");
    CHECK_EQ_INT(r.inputs, 1);
    CHECK_EQ_INT(r.prompt_words, 3);

    const char *err;
    CHECK_EQ_INT(scan_rc(SG_OAI_EMBEDDINGS, S("{\"model\":\"e\"}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "\"input\""));
    CHECK_EQ_INT(scan_rc(SG_OAI_EMBEDDINGS, S("{\"input\":[]}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_EMBEDDINGS, S("{\"input\":7}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_EMBEDDINGS, S("{\"input\":[\"a\",]}"), &err), SG_EJSON);
    CHECK(err && strstr(err, "JSON"));
    check_truncations(SG_OAI_EMBEDDINGS, "{\"model\":\"m\",\"input\":[\"a b\",\"c\"]}");
    check_truncations(SG_OAI_EMBEDDINGS, "{\"input\":[[1,2],[3]]}");
}

static void test_rankings(void)
{
    sg_api_request_t r =
        SCAN(SG_OAI_RANK_NIM, "{\"model\":\"nv-rerank\",\"query\":{\"text\":\"which is it\"},\"passages\":[{\"text\":"
                              "\"alpha beta\"},{\"text\":\"gamma\"},{\"text\":\"delta\"}],\"truncate\":\"END\"}");
    CHECK_EQ_INT(r.kind, SG_OAI_RANK_NIM);
    CHECK_EQ_INT(r.inputs, 3);
    CHECK_EQ_INT(r.prompt_words, 3 + 4);
    CHECK_EQ_STR(r.prompt.base, r.prompt.len, "which is it");
    CHECK_EQ_STR(r.model.base, r.model.len, "nv-rerank");

    /* one path, two shapes: the body decides */
    r = SCAN(SG_OAI_RANK_COHERE, "{\"query\":\"q w\",\"texts\":[\"a\",\"b c\"],\"raw_scores\":false}");
    CHECK_EQ_INT(r.kind, SG_OAI_RANK_TEI);
    CHECK_EQ_INT(r.inputs, 2);
    CHECK_EQ_INT(r.prompt_words, 5);
    r = SCAN(SG_OAI_RANK_TEI, "{\"model\":\"rr\",\"query\":\"q\",\"documents\":[\"a\",{\"text\":\"b c\"},\"d\"],"
                              "\"top_n\":2}");
    CHECK_EQ_INT(r.kind, SG_OAI_RANK_COHERE);
    CHECK_EQ_INT(r.inputs, 3);
    CHECK_EQ_INT(r.prompt_words, 5);
    CHECK_EQ_INT(r.top_n, 2);
    r = SCAN(SG_OAI_RANK_COHERE, "{\"query\":\"q\",\"documents\":[\"a\"]}");
    CHECK_EQ_INT(r.top_n, -1);

    const char *err;
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_NIM, S("{\"passages\":[{\"text\":\"a\"}]}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "query"));
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_NIM, S("{\"query\":\"q\",\"passages\":[{\"text\":\"a\"}]}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_NIM, S("{\"query\":{\"text\":\"q\"},\"passages\":[]}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "passages"));
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_COHERE, S("{\"query\":\"q\"}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "documents"));
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_COHERE, S("{\"documents\":[\"a\"]}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_RANK_TEI, S("{\"query\":{\"text\":\"q\"},\"texts\":[\"a\"]}"), &err), SG_EPROTO);
    check_truncations(SG_OAI_RANK_NIM, "{\"query\":{\"text\":\"q\"},\"passages\":[{\"text\":\"a\"}]}");
    check_truncations(SG_OAI_RANK_COHERE, "{\"query\":\"q\",\"documents\":[\"a\",{\"text\":\"b\"}],\"top_n\":1}");
}

static void test_responses(void)
{
    sg_api_request_t r =
        SCAN(SG_OAI_RESPONSES, "{\"model\":\"gpt\",\"instructions\":\"be brief\",\"input\":[{\"role\":\"user\","
                               "\"content\":[{\"type\":\"input_text\",\"text\":\"one two\"},{\"type\":\"input_image\","
                               "\"image_url\":\"x y z\"}]},{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
                               "[{\"type\":\"output_text\",\"text\":\"three\"}]},{\"role\":\"user\",\"content\":"
                               "\"four five six\"}],\"max_output_tokens\":64,\"stream\":true}");
    CHECK_EQ_INT(r.kind, SG_OAI_RESPONSES);
    CHECK_EQ_INT(r.prompt_words, 2 + 2 + 1 + 3);
    CHECK_EQ_STR(r.prompt.base, r.prompt.len, "four five six");
    CHECK_EQ_INT(r.max_tokens, 64);
    CHECK(r.stream);
    CHECK_EQ_INT(r.inputs, 1);

    r = SCAN(SG_OAI_RESPONSES, "{\"input\":\"just a string\",\"max_tokens\":9,\"stream\":false}");
    CHECK_EQ_INT(r.prompt_words, 3);
    CHECK_EQ_INT(r.max_tokens, -1); /* Responses names it max_output_tokens */
    CHECK(!r.stream);
    /* items without content (a function call's output) count nothing but are items */
    r = SCAN(SG_OAI_RESPONSES, "{\"input\":[{\"type\":\"function_call_output\",\"output\":\"a b\"}]}");
    CHECK_EQ_INT(r.prompt_words, 0);

    const char *err;
    CHECK_EQ_INT(scan_rc(SG_OAI_RESPONSES, S("{\"input\":[]}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_RESPONSES, S("{\"messages\":[{\"content\":\"a\"}]}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "\"input\""));
    check_truncations(SG_OAI_RESPONSES, "{\"input\":[{\"role\":\"user\",\"content\":\"a\"}],\"max_output_tokens\":4}");
}

static void test_messages(void)
{
    sg_api_request_t r =
        SCAN(SG_OAI_MESSAGES, "{\"model\":\"claude\",\"max_tokens\":128,\"system\":[{\"type\":\"text\",\"text\":"
                              "\"be brief\"}],\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"},{\"role\":"
                              "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"tool_use\","
                              "\"input\":{\"text\":\"not counted\"}}]},{\"role\":\"user\",\"content\":\"how are "
                              "you\"}],\"stream\":true}");
    CHECK_EQ_INT(r.kind, SG_OAI_MESSAGES);
    CHECK_EQ_INT(r.prompt_words, 2 + 2 + 1 + 3);
    CHECK_EQ_STR(r.prompt.base, r.prompt.len, "how are you");
    CHECK_EQ_INT(r.max_tokens, 128);
    CHECK(r.stream);
    CHECK_EQ_STR(r.model.base, r.model.len, "claude");

    r = SCAN(SG_OAI_MESSAGES, "{\"system\":\"a b c\",\"messages\":[{\"role\":\"user\",\"content\":\"d\"}]}");
    CHECK_EQ_INT(r.prompt_words, 4);
    CHECK_EQ_INT(r.max_tokens, -1);

    const char *err;
    CHECK_EQ_INT(scan_rc(SG_OAI_MESSAGES, S("{\"max_tokens\":3}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "messages"));
    CHECK_EQ_INT(scan_rc(SG_OAI_MESSAGES, S("{\"messages\":[]}"), &err), SG_EPROTO);
    CHECK_EQ_INT(scan_rc(SG_OAI_MESSAGES, S("{\"messages\":[}"), &err), SG_EJSON);
    check_truncations(SG_OAI_MESSAGES, "{\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                                       "\"text\",\"text\":\"a\"}]}],\"max_tokens\":2}");
}

static void test_generate(void)
{
    sg_api_request_t r = SCAN(SG_OAI_GENERATE, "{\"inputs\":\"tell me a story\",\"parameters\":{\"max_new_tokens\":20,"
                                               "\"details\":true,\"temperature\":0.5}}");
    CHECK_EQ_INT(r.kind, SG_OAI_GENERATE);
    CHECK_EQ_INT(r.prompt_words, 4);
    CHECK_EQ_STR(r.prompt.base, r.prompt.len, "tell me a story");
    CHECK_EQ_INT(r.max_tokens, 20);
    CHECK(r.details);
    CHECK(!r.stream);
    r = SCAN(SG_OAI_GENERATE, "{\"inputs\":\"x\",\"parameters\":{\"details\":false},\"stream\":true}");
    CHECK(!r.details);
    CHECK(r.stream);
    CHECK_EQ_INT(r.max_tokens, -1);
    r = SCAN(SG_OAI_GENERATE, "{\"inputs\":\"x\",\"parameters\":{\"max_new_tokens\":-3}}");
    CHECK_EQ_INT(r.max_tokens, -1); /* a negative count is no count */

    const char *err;
    CHECK_EQ_INT(scan_rc(SG_OAI_GENERATE, S("{\"parameters\":{}}"), &err), SG_EPROTO);
    CHECK(err && strstr(err, "inputs"));
    CHECK_EQ_INT(scan_rc(SG_OAI_GENERATE, S("{\"inputs\":[\"a\"]}"), &err), SG_EPROTO);
    check_truncations(SG_OAI_GENERATE, "{\"inputs\":\"a b\",\"parameters\":{\"max_new_tokens\":3,\"details\":true}}");
}

static void test_refusals(void)
{
    const char *err;
    /* chat and completions are sg_oai_scan_request's */
    CHECK_EQ_INT(scan_rc(SG_OAI_CHAT, S("{\"messages\":[{\"content\":\"a\"}]}"), &err), SG_EINVAL);
    CHECK_EQ_INT(scan_rc(SG_OAI__KINDS, S("{}"), &err), SG_EINVAL);
    static const char *const bad[] = {"",
                                      "[]",
                                      "\"input\"",
                                      "{\"input\":\"a\"} x",
                                      "{\"input\":\"a\",}",
                                      "{\"input\":\"\\q\"}",
                                      "{\"input\":\"a\nb\"}"};
    for (size_t i = 0; i < SG_ARRAY_LEN(bad); i++)
        for (int k = SG_OAI_EMBEDDINGS; k < SG_OAI__KINDS; k++)
            CHECK_EQ_INT(scan_rc((sg_oai_kind_t)k, bad[i], strlen(bad[i]), &err), SG_EJSON);
    /* nesting past the scanner's cap is refused, not recursed into */
    char deep[200];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"input\":");
    for (int i = 0; i < 70; i++)
        deep[n++] = '[';
    CHECK_EQ_INT(scan_rc(SG_OAI_EMBEDDINGS, deep, n, &err), SG_EJSON);
}

int main(void)
{
    test_embeddings();
    test_rankings();
    test_responses();
    test_messages();
    test_generate();
    test_refusals();
    return test_finish("test_api_request");
}
