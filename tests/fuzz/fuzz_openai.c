/*
 * OpenAI decoders against jansson. For every input (both kinds, both the response decoder and the request
 * scanner):
 *  - when jansson parses it as an object nested at most 64 deep, we must accept it too, and every field we
 *    extract must equal what the documented rules give on jansson's tree (strings compared after
 *    sg_json_unescape);
 *  - when jansson refuses it, we may accept it only for the reasons we document (no UTF-8 validation, \u0000,
 *    lone surrogates, integers or reals too big to hold);
 *  - when jansson parses something that is not an object, we refuse it.
 * jansson's own laxity is allowed for: it swallows a NUL byte after a number or literal, which we refuse.
 */
#include "sg_openai.h"

#include "jansson_ref.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Our raw slice, decoded, must equal want (NULL: must be empty). */
static void same_string(const char *what, sg_slice_t raw, const json_t *want)
{
    char *buf = malloc(raw.len + 8);
    ssize_t n = sg_json_unescape(raw.base, raw.len, buf, raw.len + 8);
    if (n < 0 || (size_t)n > raw.len + 8)
        FAIL("%s: unescape failed (%zd)", what, n);
    const char *w = want ? json_string_value(want) : "";
    size_t wl = want ? json_string_length(want) : 0;
    if ((size_t)n != wl || memcmp(buf, w, wl) != 0)
        FAIL("%s: got \"%.*s\" want \"%.*s\"", what, (int)n, buf, (int)wl, w);
    free(buf);
}

static const json_t *get_string(const json_t *obj, const char *key)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? v : NULL;
}

static int64_t get_int(const json_t *obj, const char *key)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static bool streq(const json_t *s, const char *lit)
{
    return s && json_string_length(s) == strlen(lit) && memcmp(json_string_value(s), lit, strlen(lit)) == 0;
}

static void check_decode(sg_oai_kind_t kind, const json_t *root, const sg_oai_result_t *r)
{
    const json_t *chosen = NULL;
    const json_t *choices = json_object_get(root, "choices");
    if (json_is_array(choices)) {
        size_t i;
        json_t *el;
        json_array_foreach(choices, i, el)
        {
            if (!json_is_object(el))
                continue;
            const json_t *idx = json_object_get(el, "index");
            if (!idx || json_is_null(idx) || (json_is_integer(idx) && json_integer_value(idx) == 0)) {
                chosen = el;
                break;
            }
        }
    }
    const json_t *content = NULL, *reasoning = NULL;
    bool finish = false;
    if (chosen) {
        finish = get_string(chosen, "finish_reason") != NULL;
        if (kind == SG_OAI_COMPLETIONS) {
            content = get_string(chosen, "text");
        } else {
            const json_t *m = json_object_get(chosen, "delta");
            if (!json_is_object(m))
                m = json_object_get(chosen, "message");
            if (json_is_object(m)) {
                content = get_string(m, "content");
                reasoning = get_string(m, "reasoning_content");
                if (!reasoning)
                    reasoning = get_string(m, "reasoning");
            }
        }
    }
    same_string("content", r->content, content);
    same_string("reasoning", r->reasoning, reasoning);
    if (r->has_finish_reason != finish)
        FAIL("has_finish_reason %d want %d", r->has_finish_reason, finish);
    const json_t *usage = json_object_get(root, "usage");
    if (r->prompt_tokens != get_int(usage, "prompt_tokens") ||
        r->completion_tokens != get_int(usage, "completion_tokens"))
        FAIL("usage %lld/%lld want %lld/%lld", (long long)r->prompt_tokens, (long long)r->completion_tokens,
             (long long)get_int(usage, "prompt_tokens"), (long long)get_int(usage, "completion_tokens"));
    /* cached prompt tokens: usage.prompt_tokens_details.cached_tokens when a non-negative integer, else
     * timings.cache_n (llama.cpp) when one, else -1 */
    int64_t cached = get_int(json_object_get(usage, "prompt_tokens_details"), "cached_tokens");
    if (cached < 0)
        cached = get_int(json_object_get(root, "timings"), "cache_n");
    if (cached < 0)
        cached = -1;
    if (r->cached_tokens != cached)
        FAIL("cached_tokens %lld want %lld", (long long)r->cached_tokens, (long long)cached);

    const json_t *err = json_object_get(root, "error");
    bool is_error = false;
    const json_t *msg = NULL;
    int64_t code = -1;
    if (json_is_string(err)) {
        is_error = true;
        msg = err;
    } else if (json_is_object(err)) {
        is_error = true;
        msg = get_string(err, "message");
        code = get_int(err, "code");
    } else if (streq(get_string(root, "object"), "error")) {
        is_error = true;
        msg = get_string(root, "message");
        code = get_int(root, "code");
    }
    if (r->is_error != is_error)
        FAIL("is_error %d want %d", r->is_error, is_error);
    same_string("error_message", r->error_message, is_error ? msg : NULL);
    if (r->error_code != code)
        FAIL("error_code %lld want %lld", (long long)r->error_code, (long long)code);
}

static uint64_t words_in(const json_t *s)
{
    const char *p = json_string_value(s);
    size_t n = json_string_length(s);
    uint64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        bool ws = c == ' ' || (c >= 0x09 && c <= 0x0d);
        if (!ws && !in_word)
            words++;
        in_word = !ws;
    }
    return words;
}

static void check_request(sg_oai_kind_t kind, const json_t *root, int rc, const sg_oai_request_t *q)
{
    bool found = false;
    const json_t *prompt = NULL;
    uint64_t words = 0;
    if (kind == SG_OAI_CHAT) {
        const json_t *msgs = json_object_get(root, "messages");
        if (json_is_array(msgs) && json_array_size(msgs) > 0) {
            found = true;
            size_t i;
            json_t *m;
            json_array_foreach(msgs, i, m)
            {
                prompt = NULL;
                const json_t *c = json_is_object(m) ? json_object_get(m, "content") : NULL;
                if (json_is_string(c)) {
                    words += words_in(c);
                    prompt = c;
                } else if (json_is_array(c)) {
                    size_t k;
                    json_t *part;
                    json_array_foreach(c, k, part)
                    {
                        const json_t *text = get_string(part, "text");
                        if (streq(get_string(part, "type"), "text") && text) {
                            words += words_in(text);
                            if (!prompt)
                                prompt = text;
                        }
                    }
                }
            }
        }
    } else {
        const json_t *p = json_object_get(root, "prompt");
        if (json_is_string(p)) {
            found = true;
            prompt = p;
            words = words_in(p);
        } else if (json_is_array(p) && json_array_size(p) > 0) {
            found = true;
            const json_t *first = json_array_get(p, 0);
            if (json_is_string(first)) {
                prompt = first;
                words = words_in(first);
            } else if (json_is_number(first)) {
                words = json_array_size(p);
            } else if (json_is_array(first)) {
                words = json_array_size(first);
            }
        }
    }
    if (rc != (found ? 0 : SG_EPROTO))
        FAIL("scan_request rc %d, found %d", rc, found);
    same_string("model", q->model, get_string(root, "model"));
    int64_t mct = get_int(root, "max_completion_tokens"), mt = get_int(root, "max_tokens");
    int64_t max_tokens = json_is_integer(json_object_get(root, "max_completion_tokens")) ? mct : mt;
    if (q->max_tokens != max_tokens)
        FAIL("max_tokens %lld want %lld", (long long)q->max_tokens, (long long)max_tokens);
    if (q->stream != json_is_true(json_object_get(root, "stream")))
        FAIL("stream");
    const json_t *so = json_object_get(root, "stream_options");
    bool include_usage = json_is_object(so) && json_is_true(json_object_get(so, "include_usage"));
    if (q->include_usage != include_usage)
        FAIL("include_usage");
    if (rc == 0) {
        same_string("prompt", q->prompt, prompt);
        if (q->prompt_words != words)
            FAIL("prompt_words %llu want %llu", (unsigned long long)q->prompt_words, (unsigned long long)words);
    }
}

static bool same_slice(sg_slice_t a, sg_slice_t b)
{
    return a.len == b.len && memcmp(a.base, b.base, a.len) == 0;
}

/*
 * The memo (sg_oai_decode_memo) against the full decoder: learnt from the input, then given the input's bytes
 * around its content with other middles (the input itself, its content reversed, quotes, escapes, control
 * characters): the same return and result every time.
 */
static void check_memo(sg_oai_kind_t kind, const char *json, size_t size)
{
    sg_oai_memo_t memo;
    memset(&memo, 0, sizeof memo);
    sg_oai_result_t r;
    if (sg_oai_decode_memo(&memo, kind, json, size, &r) != 0 || !memo.pre)
        return;
    size_t pre = memo.pre, suf = memo.suf, clen = size - pre - suf;
    char *rev = malloc(clen + 1);
    for (size_t i = 0; i < clen; i++)
        rev[i] = json[pre + clen - 1 - i];
    const struct {
        const char *p;
        size_t n;
    } mids[] = {{json, size}, {rev, clen},       {"", 0},
                {"\\\"", 2},  {"\"", 1},         {"\\", 1},
                {"a\x1f", 2}, {"\\u00e9\\n", 8}, {json + pre, clen > 0 ? clen - 1 : 0}};
    for (size_t k = 0; k < sizeof mids / sizeof *mids; k++) {
        size_t n = pre + mids[k].n + suf;
        char *y = malloc(n);
        memcpy(y, json, pre);
        memcpy(y + pre, mids[k].p, mids[k].n);
        memcpy(y + pre + mids[k].n, json + size - suf, suf);
        sg_oai_result_t want, got;
        int want_rc = sg_oai_decode(kind, y, n, &want);
        sg_oai_memo_t m = memo;
        int rc = sg_oai_decode_memo(&m, kind, y, n, &got);
        if (rc != want_rc)
            FAIL("memo: return %d, the full decoder's %d (middle %zu)", rc, want_rc, k);
        if (rc == 0 &&
            (!same_slice(got.content, want.content) || !same_slice(got.reasoning, want.reasoning) ||
             !same_slice(got.error_message, want.error_message) || got.is_error != want.is_error ||
             got.has_finish_reason != want.has_finish_reason || got.completion_tokens != want.completion_tokens ||
             got.prompt_tokens != want.prompt_tokens || got.cached_tokens != want.cached_tokens ||
             got.reasoning_tokens != want.reasoning_tokens || got.error_code != want.error_code ||
             got.tool_calls != want.tool_calls || got.tool_n_args != want.tool_n_args ||
             got.tool_index_max != want.tool_index_max || got.recognized != want.recognized))
            FAIL("memo: the result differs from the full decoder's (middle %zu)", k);
        free(y);
    }
    free(rev);
}

/* Refusals by jansson that we knowingly do not make. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *json = (const char *)data;
    json_error_t jerr;
    json_t *root = json_loadb(json, size, 0, &jerr);
    bool is_obj = json_is_object(root);
    bool deep = root && depth_of(root) > 64;
    for (int k = 0; k < 2; k++) {
        sg_oai_kind_t kind = k ? SG_OAI_COMPLETIONS : SG_OAI_CHAT;
        sg_oai_result_t r;
        int rc = sg_oai_decode(kind, json, size, &r);
        sg_oai_request_t q;
        int qrc = sg_oai_scan_request(kind, json, size, &q);
        if (rc != 0 && rc != SG_EJSON)
            FAIL("decode rc %d", rc);
        if (qrc != 0 && qrc != SG_EJSON && qrc != SG_EPROTO)
            FAIL("scan_request rc %d", qrc);
        if ((rc == SG_EJSON) != (qrc == SG_EJSON))
            FAIL("decode and scan_request disagree on validity: %d vs %d", rc, qrc);
        if (root && !is_obj && rc != SG_EJSON)
            FAIL("accepted a non-object");
        if (!root && rc == 0 && !tolerated(jerr.text))
            FAIL("accepted what jansson refuses: %s (line %d col %d)", jerr.text, jerr.line, jerr.column);
        if (is_obj && deep && rc != SG_EJSON)
            FAIL("accepted nesting deeper than 64");
        if (is_obj && !deep) {
            if (rc != 0) {
                /* jansson 2.14 swallows a NUL byte right after a number or literal ({"a":1\0}): its laxity. */
                if (memchr(json, '\0', size))
                    continue;
                FAIL("refused an object jansson parses (rc %d)", rc);
            }
            check_decode(kind, root, &r);
            check_request(kind, root, qrc, &q);
        }
    }
    /* The other APIs' decoders: the same validity as chat's (TEI's rankings take a bare array too), every slice
     * inside the input. */
    sg_oai_result_t chat;
    int chat_rc = sg_oai_decode(SG_OAI_CHAT, json, size, &chat);
    for (int k = SG_OAI_EMBEDDINGS; k < SG_OAI__KINDS; k++) {
        sg_oai_result_t r;
        int rc = sg_oai_decode((sg_oai_kind_t)k, json, size, &r);
        /* a bare array: TEI's rankings, TGI's whole response; the list decoders take it and find no shape */
        bool takes_array = k != SG_OAI_RESPONSES && k != SG_OAI_MESSAGES;
        size_t lead = 0;
        while (lead < size && (json[lead] == ' ' || json[lead] == '\t' || json[lead] == '\r' || json[lead] == '\n'))
            lead++;
        bool bracket = lead < size && json[lead] == '[';
        if (takes_array && bracket && !root) {
            if (rc == 0 && !tolerated(jerr.text))
                FAIL("kind %d: accepted what jansson refuses: %s", k, jerr.text);
        } else if (takes_array && json_is_array(root) && !deep) {
            if (rc != 0 && !memchr(json, '\0', size))
                FAIL("kind %d: refused an array jansson parses", k);
            if (rc == 0 && r.recognized && k != SG_OAI_RANK_TEI && k != SG_OAI_GENERATE)
                FAIL("kind %d: a bare array taken for the shape", k);
        } else if (rc != chat_rc) {
            FAIL("kind %d: validity %d differs from chat's %d", k, rc, chat_rc);
        }
        if (rc != 0)
            continue;
        const sg_slice_t sl[] = {r.content, r.reasoning, r.error_message};
        for (size_t i = 0; i < sizeof sl / sizeof *sl; i++)
            if (sl[i].len && (sl[i].base < json || sl[i].base + sl[i].len > json + size))
                FAIL("kind %d: slice %zu outside the input", k, i);
        /* tool-call argument fragments: at most the room, each a non-empty slice of the input */
        if (r.tool_n_args > SG_OAI_TOOL_ARGS_MAX || (r.tool_n_args && r.tool_calls == 0 && r.tool_args_json))
            FAIL("kind %d: %u tool fragments for %u calls", k, r.tool_n_args, r.tool_calls);
        for (uint32_t i = 0; i < r.tool_n_args && i < SG_OAI_TOOL_ARGS_MAX; i++)
            if (!r.tool_args[i].len || r.tool_args[i].base < json ||
                r.tool_args[i].base + r.tool_args[i].len > json + size)
                FAIL("kind %d: tool fragment %u outside the input", k, i);
    }
    /* Unescape must agree with itself on length whatever the cap. */
    if (size > 0 && size < 4096) {
        char small[7], *big = malloc(size * 3 + 8);
        ssize_t a = sg_json_unescape(json, size, small, sizeof small);
        ssize_t b = sg_json_unescape(json, size, big, size * 3 + 8);
        if (a != b || (a > 0 && memcmp(small, big, (size_t)a < sizeof small ? (size_t)a : sizeof small) != 0))
            FAIL("unescape depends on cap: %zd vs %zd", a, b);
        free(big);
    }
    check_memo(SG_OAI_CHAT, json, size);
    check_memo(SG_OAI_COMPLETIONS, json, size);
    sg_oai_is_done(json, size);
    json_decref(root);
    return 0;
}
