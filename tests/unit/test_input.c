/*
 * Input files and exact-length text: every format parsed from bytes, format detection (and what its failure
 * says), errors that name the file, line and field, trace sorting, and the text fit in words and (when the
 * test data is there) in cl100k_base tokens.
 */
#define _GNU_SOURCE
#include "test.h"

#include "sg_input.h"
#include "sg_textgen.h"
#include "sg_tokenizer.h"
#include "sg_workload.h"

#include <stdlib.h>
#include <unistd.h>

static char err[512];

static int parse(const char *text, sg_input_format_t f, sg_input_t *in)
{
    err[0] = '\0';
    return sg_input_parse("f.jsonl", text, strlen(text), f, in, err, sizeof err);
}

/* parse must fail with a message holding every one of the given fragments */
static void bad(int line, const char *text, sg_input_format_t f, const char *want1, const char *want2)
{
    sg_input_t in;
    int rc = parse(text, f, &in);
    bool ok = rc < 0 && strstr(err, want1) && (!want2 || strstr(err, want2)) && in.n == 0 && in.e == NULL;
    test_checks++;
    if (!ok) {
        test_failures++;
        fprintf(stderr, "test_input.c:%d: rc %d, message \"%s\"; wanted \"%s\" and \"%s\"\n", line, rc, err, want1,
                want2 ? want2 : "");
    }
    if (rc == 0)
        sg_input_free(&in);
}
#define BAD(text, f, w1, w2) bad(__LINE__, text, f, w1, w2)

static void test_genai_perf(void)
{
    sg_input_t in;
    const char *t = "{\"text_input\": \"Hello there\"}\n\n  \r\n{\"text_input\": \"a\\u0000b\", \"output_length\": 7}\n"
                    "{\"text_input\": \"x\", \"max_tokens\": 3.0}";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_GENAI_PERF);
    CHECK_EQ_INT(in.n, 3);
    if (in.n == 3) {
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "Hello there");
        CHECK_EQ_INT(in.e[0].max_tokens, -1);
        CHECK_EQ_INT(in.e[0].where, 1);
        CHECK_EQ_INT(in.e[1].prompt_len, 3); /* a NUL inside is kept */
        CHECK_EQ_INT(in.e[1].max_tokens, 7);
        CHECK_EQ_INT(in.e[1].where, 4);
        CHECK_EQ_INT(in.e[2].max_tokens, 3);
    }
    sg_input_free(&in);
    BAD("{\"text_input\": \"a\"}\n{\"text_input\": 5}\n", SG_INPUT_AUTO,
        "f.jsonl line 2: \"text_input\" must be a string", "got 5");
    BAD("{\"text_input\": \"a\"}\n{\"text_input\": \"b\", \"output_length\": \"abc\"}", SG_INPUT_AUTO,
        "f.jsonl line 2: \"output_length\" must be a positive integer", "got \"abc\"");
    BAD("{\"text_input\": \"a\", \"output_length\": 1.5}", SG_INPUT_GENAI_PERF, "line 1: \"output_length\"", "1.5");
    BAD("{\"text_input\": \"a\"}\n{\"text_input\": \"b\"\n", SG_INPUT_AUTO, "f.jsonl line 2: not valid JSON", NULL);
    BAD("{\"input\": \"a\"}", SG_INPUT_GENAI_PERF, "line 1: \"text\" missing", "\"text_input\"");

    /* GenAI-Perf's and AIPerf's current spelling: "text", or AIPerf's "texts" with one prompt; mixed spellings */
    t = "{\"text\": \"first\", \"output_length\": 4}\n{\"texts\": [\"second\"]}\n{\"text_input\": \"third\"}\n";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_GENAI_PERF);
    CHECK_EQ_INT(in.n, 3);
    if (in.n == 3) {
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "first");
        CHECK_EQ_INT(in.e[0].max_tokens, 4);
        CHECK_EQ_STR(in.e[1].prompt, in.e[1].prompt_len, "second");
        CHECK_EQ_STR(in.e[2].prompt, in.e[2].prompt_len, "third");
    }
    sg_input_free(&in);
    CHECK_EQ_INT(parse("{\"texts\": [\"only\"]}", SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_GENAI_PERF);
    sg_input_free(&in);
    BAD("{\"text\": 5}", SG_INPUT_AUTO, "line 1: \"text\" must be a string", "got 5");
    /* a batch (embeddings): the texts, the first also the prompt */
    CHECK_EQ_INT(parse("{\"texts\": [\"a\", \"b c\"]}", SG_INPUT_AUTO, &in), 0);
    if (in.n == 1) {
        CHECK_EQ_INT((int)in.e[0].n_texts, 2);
        CHECK_EQ_STR(in.e[0].texts[1], in.e[0].text_lens[1], "b c");
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "a");
    }
    sg_input_free(&in);
    /* AIPerf's rankings line: the query is the prompt, the passages the texts */
    CHECK_EQ_INT(parse("{\"texts\": [{\"name\": \"passages\", \"contents\": [\"p1\", \"p2\", \"p3\"]}, "
                       "{\"name\": \"query\", \"contents\": [\"q?\"]}]}",
                       SG_INPUT_AUTO, &in),
                 0);
    if (in.n == 1) {
        CHECK_EQ_INT((int)in.e[0].n_texts, 3);
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "q?");
        CHECK_EQ_STR(in.e[0].texts[2], in.e[0].text_lens[2], "p3");
    }
    sg_input_free(&in);
    BAD("{\"texts\": []}", SG_INPUT_AUTO, "\"texts\" expected a non-empty list of strings", NULL);
    BAD("{\"texts\": [\"a\", 5]}", SG_INPUT_AUTO, "\"texts\" element 1 is not a string", "5");
    BAD("{\"texts\": [{\"name\": \"query\", \"contents\": [\"q\"]}]}", SG_INPUT_AUTO, "needs \"passages\"", NULL);
    BAD("{\"texts\": [{\"name\": \"docs\", \"contents\": [\"q\"]}]}", SG_INPUT_AUTO, "named \"docs\"", "query");
    BAD("{\"texts\": [{\"name\": \"query\", \"contents\": [\"a\", \"b\"]}, {\"name\": \"passages\", "
        "\"contents\": [\"p\"]}]}",
        SG_INPUT_AUTO, "\"query\" whose contents hold one string", NULL);
    /* images and audio (GenAI-Perf's "image", AIPerf's lists): kept as named, images first; read by the workload */
    CHECK_EQ_INT(parse("{\"text\": \"a\", \"audio\": \"x.wav\", \"images\": [\"cat.png\", \"https://h/d.jpg\"], "
                       "\"image\": \"b.png\"}\n{\"image\": \"only.png\"}",
                       SG_INPUT_AUTO, &in),
                 0);
    CHECK_EQ_INT(in.format, SG_INPUT_GENAI_PERF);
    CHECK_EQ_INT(in.e[0].n_media, 4);
    if (in.e[0].n_media == 4) {
        CHECK_EQ_STR(in.e[0].media[0], in.e[0].media_lens[0], "b.png");
        CHECK_EQ_STR(in.e[0].media[2], in.e[0].media_lens[2], "https://h/d.jpg");
        CHECK_EQ_STR(in.e[0].media[3], in.e[0].media_lens[3], "x.wav");
        CHECK_EQ_INT(in.e[0].media_kinds[2], 0);
        CHECK_EQ_INT(in.e[0].media_kinds[3], 1);
    }
    CHECK_EQ_INT(in.e[1].n_media, 1); /* an image alone (GenAI-Perf's image_retrieval lines): no text */
    CHECK_EQ_INT(in.e[1].prompt_len, 0);
    sg_input_free(&in);
    BAD("{\"text\": \"a\", \"image\": 5}", SG_INPUT_AUTO, "line 1: \"image\" expected a path or URL", "5");
    BAD("{\"text\": \"a\", \"images\": \"a.png\"}", SG_INPUT_AUTO, "\"images\" expected a list", NULL);
    BAD("{\"text\": \"a\", \"audios\": [\"\"]}", SG_INPUT_AUTO, "\"audios\" expected a path or URL", NULL);
    BAD("{\"text\": \"a\", \"video\": \"v.mp4\"}", SG_INPUT_AUTO, "line 1: \"video\" not supported", "not video");
    BAD("{\"text\": \"a\", \"timestamp\": 5}", SG_INPUT_AUTO, "\"timestamp\" per-line timing", "mooncake_trace");
}

static void test_llm_perf(void)
{
    sg_input_t in;
    CHECK_EQ_INT(parse("{\"input\": \"p1\", \"output\": \"four words of reply\"}\n{\"input\": \"p2\", \"output\": 12}\n"
                       "{\"input\": \"p3\"}\n",
                       SG_INPUT_AUTO, &in),
                 0);
    CHECK_EQ_INT(in.format, SG_INPUT_LLM_PERF);
    CHECK_EQ_INT(in.n, 3);
    if (in.n == 3) {
        CHECK_EQ_STR(in.e[0].reply, in.e[0].reply_len, "four words of reply");
        CHECK_EQ_INT(in.e[0].max_tokens, -1);
        CHECK_EQ_INT(in.e[1].max_tokens, 12);
        CHECK(in.e[2].reply == NULL && in.e[2].max_tokens == -1);
    }
    sg_input_free(&in);
}

static void test_sharegpt(void)
{
    sg_input_t in;
    const char *t =
        "[{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"Q1\"}, {\"from\": \"gpt\", "
        "\"value\": \"A1 is long\"}, {\"from\": \"human\", \"value\": \"Q2\"}]},\n"
        " {\"conversations\": [{\"from\": \"human\", \"value\": \"lonely\"}]},\n"
        " {\"conversations\": [{\"from\": \"system\", \"value\": \"S\"}, {\"from\": \"human\", \"value\": "
        "\"Q3\"}, {\"from\": \"gpt\", \"value\": \"A3\"}]}]";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_SHAREGPT);
    CHECK_EQ_INT(in.n, 2);
    CHECK_EQ_INT(in.skipped, 1);
    if (in.n == 2) {
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "Q1");
        CHECK_EQ_STR(in.e[0].reply, in.e[0].reply_len, "A1 is long");
        CHECK_EQ_STR(in.e[1].prompt, in.e[1].prompt_len, "Q3");
        CHECK_EQ_INT(in.e[1].where, 2);
    }
    sg_input_free(&in);
    BAD("[{\"conversations\": [{\"from\": \"human\", \"value\": \"Q\"}, {\"from\": \"gpt\", \"value\": \"A\"}]}, "
        "{\"conversations\": {}}]",
        SG_INPUT_AUTO, "element 1: \"conversations\" must be an array", NULL);
    BAD("[{\"conversations\": [{\"from\": \"human\", \"value\": \"Q\"}]}]", SG_INPUT_SHAREGPT,
        "none of its 1 conversations", NULL);
    BAD("[{\"conversations\": [", SG_INPUT_AUTO, "not valid JSON", "ShareGPT");
}

static void test_perf_analyzer_and_raw(void)
{
    sg_input_t in;
    const char *t = "{\n  \"data\": [\n    {\"payload\": [{\"model\": \"mx\", \"messages\": [{\"role\": \"system\", "
                    "\"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": "
                    "\"Hi you\"}]}], \"max_tokens\": 9}]},\n    {\"payload\": [{\"prompt\": \"complete me\", "
                    "\"max_completion_tokens\": 4, \"max_tokens\": 8}]}\n  ]\n}\n";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_PERF_ANALYZER);
    CHECK_EQ_INT(in.n, 2);
    if (in.n == 2) {
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "Be brief.\nHi you");
        CHECK_EQ_STR(in.e[0].model, strlen(in.e[0].model), "mx");
        CHECK_EQ_INT(in.e[0].max_tokens, 9);
        /* the body as written, keys in order */
        CHECK(strncmp(in.e[0].body, "{\"model\":\"mx\",\"messages\":", 25) == 0);
        CHECK_EQ_STR(in.e[1].prompt, in.e[1].prompt_len, "complete me");
        CHECK_EQ_INT(in.e[1].max_tokens, 4); /* max_completion_tokens wins, as in vLLM */
        CHECK(in.e[1].model == NULL);
    }
    sg_input_free(&in);
    BAD("{\"data\": [{\"payload\": []}]}", SG_INPUT_AUTO, "element 0: \"payload\" must be a non-empty array", NULL);
    BAD("{\"data\": [{\"payload\": [{\"model\": \"m\"}]}]}", SG_INPUT_AUTO, "element 0: the request body has neither",
        NULL);

    /* raw lines: sent exactly as written */
    const char *r = "{\"model\": \"a\",  \"messages\": [{\"role\": \"user\", \"content\": \"one two\"}]}\n"
                    "{\"prompt\": \"p\", \"stream\": false}\n";
    CHECK_EQ_INT(parse(r, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_RAW_PAYLOAD);
    CHECK_EQ_INT(in.n, 2);
    if (in.n == 2) {
        CHECK_EQ_STR(in.e[0].body, in.e[0].body_len,
                     "{\"model\": \"a\",  \"messages\": [{\"role\": \"user\", \"content\": \"one two\"}]}");
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "one two");
        CHECK_EQ_STR(in.e[1].body, in.e[1].body_len, "{\"prompt\": \"p\", \"stream\": false}");
    }
    sg_input_free(&in);
    BAD("{\"messages\": []}", SG_INPUT_RAW_PAYLOAD, "line 1: \"messages\" must be a non-empty array", NULL);
    BAD("{\"prompt\": [1, 2]}", SG_INPUT_RAW_PAYLOAD, "line 1: \"prompt\" must be a string", NULL);
}

static void test_multi_turn(void)
{
    sg_input_t in;
    const char *t =
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"a0\"}, {\"text\": \"a1\", \"delay\": 30}]}\n"
        "{\"session_id\": \"b\", \"text\": \"b0\", \"max_tokens\": 7}\n"
        "{\"session_id\": \"a\", \"turns\": [{\"texts\": [\"x\", \"y\"], \"delay\": 10, \"timestamp\": 5}]}\n"
        "{\"text\": \"alone\"}\n";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_MULTI_TURN);
    CHECK_EQ_INT(in.n, 5);
    CHECK_EQ_INT(in.n_sessions, 3);
    if (in.n == 5) {
        /* grouped by session in the order sessions first appear, turns in file order */
        CHECK_EQ_STR(in.e[0].prompt, in.e[0].prompt_len, "a0");
        CHECK_EQ_INT(in.e[0].delay_ms, -1);
        CHECK_EQ_STR(in.e[1].prompt, in.e[1].prompt_len, "a1");
        CHECK_EQ_INT(in.e[1].delay_ms, 30);
        CHECK_EQ_STR(in.e[2].prompt, in.e[2].prompt_len, "x\ny");
        CHECK_EQ_INT(in.e[2].session, 0);
        CHECK_EQ_INT(in.e[3].session, 1);
        CHECK_EQ_INT(in.e[3].max_tokens, 7);
        CHECK_EQ_STR(in.e[4].prompt, in.e[4].prompt_len, "alone");
        CHECK_EQ_INT(in.e[4].session, 2);
    }
    sg_input_free(&in);
    BAD("{\"session_id\": \"a\", \"turns\": []}", SG_INPUT_AUTO, "line 1: \"turns\" must be a non-empty list", NULL);
    BAD("{\"session_id\": \"a\", \"turns\": [{\"text\": \"a\", \"delay\": -1}]}", SG_INPUT_AUTO,
        "line 1: \"delay\" must be a number of milliseconds", NULL);
    BAD("{\"session_id\": \"a\", \"turns\": [{\"text\": \"a\", \"delay\": 1e300}]}", SG_INPUT_AUTO,
        "line 1: \"delay\" must be a number of milliseconds from 0 to", NULL);
    BAD("{\"session_id\": \"a\", \"turns\": [{\"image\": \"x.png\"}]}", SG_INPUT_AUTO,
        "\"image\" not supported in multi_turn", NULL);
    BAD("{\"session_id\": [1]}", SG_INPUT_AUTO, "\"session_id\" must be a string", NULL);
    sg_input_format_t f;
    CHECK(sg_input_format_parse("multi_turn", &f) == 0 && f == SG_INPUT_MULTI_TURN);
}

static void test_mooncake(void)
{
    sg_input_t in;
    const char *t = "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
                    "{\"timestamp\": 500.5, \"input_length\": 7, \"output_length\": 2}\n"
                    "{\"timestamp\": 1000, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [9]}\n";
    CHECK_EQ_INT(parse(t, SG_INPUT_AUTO, &in), 0);
    CHECK_EQ_INT(in.format, SG_INPUT_MOONCAKE);
    CHECK_EQ_INT(in.n, 3);
    if (in.n == 3) {
        /* sorted by time, stable for equal times, relative to the first */
        CHECK_EQ_INT(in.e[0].where, 2);
        CHECK_EQ_INT(in.e[0].t_ns, 0);
        CHECK_EQ_INT(in.e[1].where, 1);
        CHECK_EQ_INT(in.e[1].t_ns, 499500000);
        CHECK_EQ_INT(in.e[2].where, 3);
        CHECK_EQ_INT(in.e[1].n_hash_ids, 2);
        CHECK_EQ_INT(in.e[1].hash_ids[1], 1);
        CHECK_EQ_INT(in.e[1].input_length, 10);
        CHECK_EQ_INT(in.e[1].max_tokens, 5);
    }
    sg_input_free(&in);
    const char *head = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s", head, "{\"timestamp\": 1, \"input_length\": \"abc\", \"output_length\": 1}\n");
    BAD(buf, SG_INPUT_AUTO, "f.jsonl line 2: \"input_length\" must be a positive integer", "got \"abc\"");
    snprintf(buf, sizeof buf, "%s%s", head, "{\"timestamp\": -5, \"input_length\": 1}\n");
    BAD(buf, SG_INPUT_AUTO, "f.jsonl line 2: \"timestamp\" must be a number of milliseconds from 0 to", "-5");
    /* past what int64 nanoseconds hold (the fuzzer's find: the rebase to the first entry overflowed) */
    snprintf(buf, sizeof buf, "%s%s", head, "{\"timestamp\": 555555555555553.5, \"input_length\": 7}\n");
    BAD(buf, SG_INPUT_AUTO, "f.jsonl line 2: \"timestamp\" must be a number of milliseconds from 0 to 9000000000000",
        "555555555555553.5");
    /* epoch milliseconds, as traces taken from a server's log have them, are fine */
    CHECK_EQ_INT(parse("{\"timestamp\": 1764400000000, \"input_length\": 1}\n"
                       "{\"timestamp\": 1764400000250.5, \"input_length\": 1}\n",
                       SG_INPUT_AUTO, &in),
                 0);
    CHECK_EQ_INT(in.n, 2);
    if (in.n == 2)
        CHECK_EQ_INT(in.e[1].t_ns, 250500000);
    sg_input_free(&in);
    snprintf(buf, sizeof buf, "%s%s", head, "{\"timestamp\": 1, \"input_length\": 0}\n");
    BAD(buf, SG_INPUT_MOONCAKE, "line 2: \"input_length\" must be a positive integer", "got 0");
    snprintf(buf, sizeof buf, "%s%s", head, "{\"timestamp\": 1, \"input_length\": 4, \"hash_ids\": [1, \"x\"]}\n");
    BAD(buf, SG_INPUT_MOONCAKE, "line 2: \"hash_ids\" must hold whole numbers", "element 1 is \"x\"");
    snprintf(buf, sizeof buf, "%s%s", head, "{\"input_length\": 4}\n");
    BAD(buf, SG_INPUT_MOONCAKE, "line 2: \"timestamp\"", "missing");
}

static void test_detection(void)
{
    BAD("", SG_INPUT_AUTO, "f.jsonl: the file is empty", NULL);
    BAD("text_input,output\n", SG_INPUT_AUTO, "cannot tell the format of f.jsonl", "starts with 't'");
    BAD("{\"question\": \"q\", \"answer\": \"a\"}\n", SG_INPUT_AUTO, "cannot tell the format of f.jsonl",
        "keys \"question\", \"answer\"");
    BAD("{\"data\": 5}", SG_INPUT_AUTO, "\"data\" must be an array", NULL);
    /* a bad message after a good one: the text gathered so far is freed (a leak the sanitizer build sees) */
    BAD("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, 1]}\n", SG_INPUT_RAW_PAYLOAD,
        "f.jsonl line 1: \"messages\" must hold message objects, element 1 is not one", NULL);
    /* a key holding a newline (found by fuzz_input): the message stays one line */
    BAD("{\"ques\\ntion\\u0001\": \"q\"}\n", SG_INPUT_AUTO, "keys \"ques?tion?\"", NULL);
    CHECK(strchr(err, '\n') == NULL);
    /* jansson quotes the bad input, newline included (found by fuzz_input): shown as '?' */
    BAD("{\" \\\n", SG_INPUT_SHAREGPT, "f.jsonl: not valid JSON: ", NULL);
    CHECK(strchr(err, '\n') == NULL);
    BAD("[\"\\\r\n", SG_INPUT_AUTO, "f.jsonl: starts with '['", NULL);
    CHECK(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
    sg_input_format_t f;
    CHECK(sg_input_format_parse("mooncake_trace", &f) == 0 && f == SG_INPUT_MOONCAKE);
    CHECK(sg_input_format_parse("genai_perf", &f) == 0 && f == SG_INPUT_GENAI_PERF);
    CHECK(sg_input_format_parse("csv", &f) < 0);
    /* a missing file names itself */
    sg_input_t in;
    CHECK(sg_input_load("/nonexistent/trace.jsonl", SG_INPUT_AUTO, &in, err, sizeof err) < 0);
    CHECK(strstr(err, "/nonexistent/trace.jsonl") != NULL);
}

/* The fit: exact counts, the head kept, deterministic. */
static void check_fit(sg_textgen_t *g, const char *what)
{
    bool exact = true, det = true, headed = true;
    const char *head = "Shared opening words of a prefix.";
    for (uint32_t target = 1; target < 400; target += 7) {
        for (uint64_t off = 0; off < 3; off++) {
            char *s, *s2;
            size_t len, len2;
            uint32_t hc = (uint32_t)sg_textgen_count(g, head, strlen(head));
            bool with_head = off == 2 && target > hc;
            int rc = sg_textgen_fit(g, with_head ? head : "", with_head ? strlen(head) : 0, off * 1000 + target, target,
                                    &s, &len);
            if (rc != 0) {
                exact = false;
                continue;
            }
            exact &= sg_textgen_count(g, s, len) == (ssize_t)target && strlen(s) == len;
            headed &= !with_head || strncmp(s, head, strlen(head)) == 0;
            CHECK_EQ_INT(sg_textgen_fit(g, with_head ? head : "", with_head ? strlen(head) : 0, off * 1000 + target,
                                        target, &s2, &len2),
                         0);
            det &= len == len2 && memcmp(s, s2, len) == 0;
            free(s);
            free(s2);
        }
    }
    if (!exact || !det || !headed)
        fprintf(stderr, "fit with %s: exact %d deterministic %d head kept %d\n", what, exact, det, headed);
    CHECK(exact);
    CHECK(det);
    CHECK(headed);
    char *s;
    size_t len;
    CHECK_EQ_INT(sg_textgen_fit(g, "a b c", 5, 0, 2, &s, &len), SG_EINVAL); /* the head is longer already */
    CHECK_EQ_INT(sg_textgen_fit(g, "", 0, 0, 0, &s, &len), SG_EINVAL);
}

static void test_textgen(void)
{
    sg_textgen_t *g;
    CHECK_EQ_INT(sg_textgen_new(NULL, &g, err, sizeof err), 0);
    check_fit(g, "words");
    sg_textgen_free(g);

    const char *dir = getenv("SURGE_TESTDATA");
    char path[1024];
    if (dir)
        snprintf(path, sizeof path, "%s/gpt-tokenizer-4.0.0/data/cl100k_base.tiktoken", dir);
    else
        snprintf(path, sizeof path, "%s/.cache/surge-testdata/gpt-tokenizer-4.0.0/data/cl100k_base.tiktoken",
                 getenv("HOME") ? getenv("HOME") : "");
    if (access(path, R_OK) != 0) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0) {
            fprintf(stderr, "test data missing under CI: %s\n", path);
            CHECK(false);
        } else {
            fprintf(stderr, "skipping the token-count checks: %s not found\n", path);
        }
        return;
    }
    sg_tokenizer_t *tok;
    CHECK_EQ_INT(sg_tok_load(path, &tok, err, sizeof err), 0);
    CHECK_EQ_INT(sg_textgen_new(tok, &g, err, sizeof err), 0);
    CHECK(sg_textgen_corpus_ids(g) > 5000);
    check_fit(g, "cl100k_base");
    sg_textgen_free(g);
    sg_tok_free(tok);
}

int main(void)
{
    test_genai_perf();
    test_llm_perf();
    test_sharegpt();
    test_perf_analyzer_and_raw();
    test_mooncake();
    test_multi_turn();
    test_detection();
    test_textgen();
    return test_finish("test_input");
}
