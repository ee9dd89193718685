/*
 * sg_api_scan_request against jansson, for every API kind it scans. For every input:
 *  - when jansson parses it as an object nested at most 64 deep, we must accept it too (0 or SG_EPROTO, never
 *    SG_EJSON), refuse it with SG_EPROTO exactly when the API's required member is missing, and report the
 *    model, stream, max tokens, input count and (where the rule is simple) prompt words that the documented
 *    rules give on jansson's tree;
 *  - when jansson refuses it, we may accept it only for the reasons fuzz_openai.c lists (no UTF-8 validation,
 *    \u0000, numbers too big to hold), and never a non-object;
 *  - every slice we return lies inside the input.
 */
#include "sg_api_request.h"

#include "jansson_ref.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t words_of(const json_t *s)
{
    if (!json_is_string(s))
        return 0;
    const char *p = json_string_value(s);
    size_t n = json_string_length(s);
    uint64_t w = 0;
    bool in = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        bool ws = c == ' ' || (c >= 0x09 && c <= 0x0d);
        w += !ws && !in;
        in = !ws;
    }
    return w;
}

static bool nonempty_array(const json_t *v)
{
    return json_is_array(v) && json_array_size(v) > 0;
}

static int64_t count_of(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

static void in_bounds(const char *what, sg_slice_t s, const char *json, size_t size)
{
    if (s.len && (s.base < json || s.base + s.len > json + size))
        FAIL("%s slice outside the input", what);
}

static void check(sg_oai_kind_t kind, const json_t *root, int rc, const sg_api_request_t *q)
{
    const json_t *model = json_object_get(root, "model");
    /* an escaped model name differs raw from decoded: compared only when plain */
    if (json_is_string(model) && !memchr(q->model.base, '\\', q->model.len) &&
        (q->model.len != json_string_length(model) || memcmp(q->model.base, json_string_value(model), q->model.len)))
        FAIL("model");
    if (!json_is_string(model) && q->model.len)
        FAIL("model when absent");
    if (q->stream != json_is_true(json_object_get(root, "stream")))
        FAIL("stream");

    bool want_ok = false;
    int64_t max_tokens = -1;
    switch (kind) {
    case SG_OAI_EMBEDDINGS: {
        const json_t *in = json_object_get(root, "input");
        uint64_t inputs = 0, words = 0;
        if (json_is_string(in)) {
            inputs = 1;
            words = words_of(in);
        } else if (nonempty_array(in)) {
            const json_t *first = json_array_get(in, 0);
            size_t n = json_array_size(in);
            if (json_is_string(first) || json_is_array(first)) {
                inputs = n;
                for (size_t i = 0; i < n; i++) {
                    const json_t *e = json_array_get(in, i);
                    if (json_is_string(first))
                        words += words_of(e);
                    else if (json_is_array(e))
                        words += json_array_size(e);
                }
            } else {
                inputs = 1;
                words = n;
            }
        }
        want_ok = inputs > 0;
        if (want_ok && (q->inputs != inputs || q->prompt_words != words))
            FAIL("embeddings: inputs %u words %llu, want %llu %llu", q->inputs, (unsigned long long)q->prompt_words,
                 (unsigned long long)inputs, (unsigned long long)words);
        break;
    }
    case SG_OAI_RANK_NIM: {
        const json_t *qy = json_object_get(root, "query"), *ps = json_object_get(root, "passages");
        want_ok = json_is_string(json_object_get(qy, "text")) && nonempty_array(ps);
        if (want_ok && q->inputs != json_array_size(ps))
            FAIL("NIM: passages");
        break;
    }
    case SG_OAI_RANK_TEI:
    case SG_OAI_RANK_COHERE: {
        const json_t *texts = json_object_get(root, "texts"), *docs = json_object_get(root, "documents");
        if (texts && docs)
            return; /* which one is last is the text's order, not the tree's */
        const json_t *ps = texts ? texts : docs;
        want_ok = json_is_string(json_object_get(root, "query")) && nonempty_array(ps);
        if (want_ok) {
            if (q->kind != (texts ? SG_OAI_RANK_TEI : SG_OAI_RANK_COHERE))
                FAIL("rerank: kind %d", q->kind);
            if (q->inputs != json_array_size(ps))
                FAIL("rerank: passages");
            uint64_t words = words_of(json_object_get(root, "query"));
            for (size_t i = 0; i < json_array_size(ps); i++) {
                const json_t *e = json_array_get(ps, i);
                words += json_is_object(e) ? words_of(json_object_get(e, "text")) : words_of(e);
            }
            if (q->prompt_words != words)
                FAIL("rerank: words %llu want %llu", (unsigned long long)q->prompt_words, (unsigned long long)words);
            if (q->top_n != count_of(json_object_get(root, "top_n")))
                FAIL("rerank: top_n");
        }
        break;
    }
    case SG_OAI_RESPONSES: {
        const json_t *in = json_object_get(root, "input");
        want_ok = json_is_string(in) || nonempty_array(in);
        max_tokens = count_of(json_object_get(root, "max_output_tokens"));
        if (json_is_string(in) && want_ok &&
            q->prompt_words != words_of(in) + words_of(json_object_get(root, "instructions")))
            FAIL("responses: words");
        break;
    }
    case SG_OAI_MESSAGES:
        want_ok = nonempty_array(json_object_get(root, "messages"));
        max_tokens = count_of(json_object_get(root, "max_tokens"));
        break;
    case SG_OAI_IMAGE_RETRIEVAL: {
        /* each {"type": "image_url"} element with a URL (its "url", or "image_url" as a string or {"url"}) */
        const json_t *in = json_object_get(root, "input");
        uint32_t images = 0;
        for (size_t i = 0; json_is_array(in) && i < json_array_size(in); i++) {
            const json_t *e = json_array_get(in, i), *type = json_object_get(e, "type");
            const json_t *iu = json_object_get(e, "image_url");
            images += json_is_string(type) && json_string_length(type) == 9 &&
                      memcmp(json_string_value(type), "image_url", 9) == 0 &&
                      (json_is_string(json_object_get(e, "url")) || json_is_string(iu) ||
                       json_is_string(json_object_get(iu, "url")));
        }
        want_ok = images > 0;
        if (want_ok && q->inputs != images)
            FAIL("image_retrieval: inputs %u want %u", q->inputs, images);
        break;
    }
    default: {
        const json_t *in = json_object_get(root, "inputs"), *params = json_object_get(root, "parameters");
        want_ok = json_is_string(in);
        max_tokens = count_of(json_object_get(params, "max_new_tokens"));
        if (q->details != json_is_true(json_object_get(params, "details")))
            FAIL("generate: details");
        if (want_ok && q->prompt_words != words_of(in))
            FAIL("generate: words");
        break;
    }
    }
    if ((rc == 0) != want_ok)
        FAIL("kind %d: rc %d, want %s", kind, rc, want_ok ? "0" : "SG_EPROTO");
    if (rc == SG_EPROTO && !q->err)
        FAIL("a refusal without its reason");
    if (kind >= SG_OAI_RESPONSES && q->max_tokens != max_tokens)
        FAIL("kind %d: max_tokens %lld want %lld", kind, (long long)q->max_tokens, (long long)max_tokens);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *json = (const char *)data;
    json_error_t jerr;
    json_t *root = json_loadb(json, size, 0, &jerr);
    bool is_obj = json_is_object(root);
    bool deep = root && depth_of(root) > 64;
    for (int k = SG_OAI_EMBEDDINGS; k < SG_OAI__KINDS; k++) {
        sg_oai_kind_t kind = (sg_oai_kind_t)k;
        sg_api_request_t q;
        int rc = sg_api_scan_request(kind, json, size, &q);
        if (rc != 0 && rc != SG_EJSON && rc != SG_EPROTO)
            FAIL("rc %d", rc);
        in_bounds("model", q.model, json, size);
        in_bounds("prompt", q.prompt, json, size);
        if (root && !is_obj && rc != SG_EJSON)
            FAIL("accepted a non-object");
        if (!root && rc != SG_EJSON && !tolerated(jerr.text))
            FAIL("accepted what jansson refuses: %s", jerr.text);
        if (is_obj && deep && rc != SG_EJSON)
            FAIL("accepted nesting deeper than 64");
        if (is_obj && !deep) {
            if (rc == SG_EJSON) {
                if (memchr(json, '\0', size))
                    continue; /* jansson 2.14 swallows a NUL byte after a number or literal: its laxity */
                FAIL("refused an object jansson parses");
            }
            check(kind, root, rc, &q);
        }
    }
    json_decref(root);
    return 0;
}
