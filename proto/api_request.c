/*
 * Request scanning for embeddings, rankings, Responses, Anthropic Messages and TGI generate (sg_api_request.h).
 * One pass over the body with the pull scanner; every member not needed is skipped (and so validated).
 *
 * Not the mock's hot path (that is chat and completions, proto/openai.c), so words are counted with a plain
 * byte loop.
 */
#include "sg_api_request.h"
#include "json_scan.h"
#include "oai_int.h"

static const sg_slice_t empty = {"", 0};

/* Typed reads: a value of another type is skipped and reads as absent. */
static int rd_string(sg_js_t *js, sg_slice_t *out, bool *present)
{
    *present = false;
    if (sg_js_peek(js) != '"')
        return sg_js_skip(js);
    int rc = sg_js_string(js, out);
    *present = rc == 0;
    return rc;
}

static int rd_int(sg_js_t *js, int64_t *out)
{
    int c = sg_js_peek(js);
    *out = -1;
    if (c != '-' && (c < '0' || c > '9'))
        return sg_js_skip(js);
    bool is_int = false;
    int64_t v = 0;
    int rc = sg_js_number(js, &v, &is_int);
    if (rc == 0 && is_int && v >= 0)
        *out = v;
    return rc;
}

static int rd_true(sg_js_t *js, bool *out)
{
    *out = sg_js_peek(js) == 't';
    return sg_js_skip(js);
}

static bool is_space(unsigned c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0d);
}

static int hexval(char h)
{
    if (h >= '0' && h <= '9')
        return h - '0';
    h = (char)(h | 0x20);
    return h >= 'a' && h <= 'f' ? h - 'a' + 10 : 0;
}

/* Words in a raw JSON string (escapes already checked by the scanner), whitespace judged after decoding. */
static uint64_t raw_words(sg_slice_t raw)
{
    const char *p = raw.base, *end = raw.base + raw.len;
    uint64_t words = 0;
    bool in_word = false;
    while (p < end) {
        unsigned c = (unsigned char)*p++;
        if (c == '\\' && p < end) {
            char e = *p++;
            if (e == 'n' || e == 't' || e == 'r' || e == 'f')
                c = ' ';
            else if (e == 'u' && end - p >= 4) {
                c = (unsigned)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
                p += 4;
            } else
                c = (unsigned char)e;
        }
        bool ws = is_space(c);
        words += !ws && !in_word;
        in_word = !ws;
    }
    return words;
}

/* A string: its words added, the first one seen kept as *first. */
static int text_value(sg_js_t *js, uint64_t *words, sg_slice_t *first, bool *have)
{
    sg_slice_t s;
    bool present;
    int rc = rd_string(js, &s, &present);
    if (rc == 0 && present) {
        *words += raw_words(s);
        if (!*have) {
            *first = s;
            *have = true;
        }
    }
    return rc;
}

/*
 * An object's "text" member counted, when its "type" (if it has one) is one of the accepted (NULL: any type).
 * Used for content parts and blocks ({"type":"text","text":...}), NIM passages and Cohere documents ({"text"}).
 */
static int text_object(sg_js_t *js, const char *const *types, uint64_t *words, sg_slice_t *first, bool *have)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    bool type_ok = types == NULL, has_text = false;
    sg_slice_t text = empty, key;
    int rc = sg_js_obj_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "type") && types) {
            sg_slice_t t;
            bool present;
            rc = rd_string(js, &t, &present);
            type_ok = false;
            for (const char *const *ty = types; present && *ty; ty++)
                type_ok |= sg_js_raw_eq(t, *ty, strlen(*ty));
        } else if (SG_JS_KEY(js, key, "text")) {
            rc = rd_string(js, &text, &has_text);
        } else {
            rc = sg_js_skip(js);
        }
    }
    if (rc == 0 && type_ok && has_text) {
        *words += raw_words(text);
        if (!*have) {
            *first = text;
            *have = true;
        }
    }
    return rc;
}

/* A content value: a string, or an array of parts of the accepted types. */
static int content_value(sg_js_t *js, const char *const *types, uint64_t *words, sg_slice_t *first, bool *have)
{
    int c = sg_js_peek(js);
    if (c == '"')
        return text_value(js, words, first, have);
    if (c != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1)
        rc = text_object(js, types, words, first, have);
    return rc;
}

/*
 * A list of messages (chat's, Anthropic's) or Responses items: every one's content counts; the prompt is the
 * last one's first text. *count: the elements.
 */
static int message_list(sg_js_t *js, const char *const *types, uint64_t *words, sg_slice_t *prompt, uint32_t *count)
{
    *count = 0;
    *words = 0;
    *prompt = empty;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        (*count)++;
        *prompt = empty; /* this one is now the last */
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        uint64_t mw = 0; /* a repeated "content" replaces the earlier one, words included */
        int m = 0;
        sg_slice_t key;
        rc = sg_js_obj_begin(js);
        while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
            if (SG_JS_KEY(js, key, "content")) {
                bool have = false;
                mw = 0;
                *prompt = empty;
                rc = content_value(js, types, &mw, prompt, &have);
            } else {
                rc = sg_js_skip(js);
            }
        }
        *words += mw;
    }
    return rc;
}

/* Embeddings' "input": a string, or an array whose first element decides what it holds. */
static int embed_input(sg_js_t *js, sg_api_request_t *out, bool *found)
{
    out->inputs = 0;
    out->prompt_words = 0;
    out->prompt = empty;
    *found = false;
    int c = sg_js_peek(js);
    if (c == '"') {
        bool have = false;
        int rc = text_value(js, &out->prompt_words, &out->prompt, &have);
        out->inputs = 1;
        *found = rc == 0;
        return rc;
    }
    if (c != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0, first = -1;
    bool have = false;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        c = sg_js_peek(js);
        if (first < 0)
            first = c;
        if (first == '"') {
            out->inputs++;
            rc = text_value(js, &out->prompt_words, &out->prompt, &have);
        } else if (first == '[') {
            out->inputs++;
            if (c != '[') {
                rc = sg_js_skip(js);
                continue;
            }
            int m = 0;
            rc = sg_js_arr_begin(js);
            while (rc == 0 && (rc = sg_js_arr_next(js, &m)) == 1) {
                out->prompt_words++; /* a token id */
                rc = sg_js_skip(js);
            }
        } else {
            out->inputs = 1; /* token ids: one input */
            out->prompt_words++;
            rc = sg_js_skip(js);
        }
    }
    *found = rc == 0 && out->inputs > 0;
    return rc;
}

/* A list of passages: strings, or objects with a "text" (NIM's, Cohere's older shape). */
static int passages(sg_js_t *js, sg_api_request_t *out, uint64_t *words, bool *found)
{
    out->inputs = 0;
    *words = 0;
    *found = false;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    sg_slice_t first;
    bool have = false;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        out->inputs++;
        if (sg_js_peek(js) == '"')
            rc = text_value(js, words, &first, &have);
        else
            rc = text_object(js, NULL, words, &first, &have);
    }
    *found = rc == 0 && out->inputs > 0;
    return rc;
}

/* TGI's "parameters": max_new_tokens and details. */
static int tgi_parameters(sg_js_t *js, sg_api_request_t *out)
{
    out->max_tokens = -1;
    out->details = false;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "max_new_tokens"))
            rc = rd_int(js, &out->max_tokens);
        else if (SG_JS_KEY(js, key, "details"))
            rc = rd_true(js, &out->details);
        else
            rc = sg_js_skip(js);
    }
    return rc;
}

/* NIM's query: {"text": Q}. */
static int nim_query(sg_js_t *js, uint64_t *words, sg_slice_t *q, bool *found)
{
    *words = 0;
    *q = empty;
    *found = false;
    return text_object(js, NULL, words, q, found);
}

/* image_retrieval's "input": a non-empty array of {"type": "image_url", "url": U} (each an input). */
static int image_inputs(sg_js_t *js, sg_api_request_t *out, bool *found)
{
    out->inputs = 0;
    memset(&out->media, 0, sizeof out->media);
    *found = false;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        bool is_text, present;
        sg_slice_t text;
        rc = sg_oai_scan_part(js, &out->media, &is_text, &text, &present);
    }
    out->inputs = out->media.images;
    *found = rc == 0 && out->inputs > 0;
    return rc;
}

static const char *const part_types[] = {"text", "input_text", "output_text", NULL};
static const char *const block_types[] = {"text", NULL};

int sg_api_scan_request(sg_oai_kind_t kind, const char *json, size_t len, sg_api_request_t *out)
{
    *out =
        (sg_api_request_t){.kind = kind, .model = empty, .prompt = empty, .max_tokens = -1, .top_n = -1, .inputs = 1};
    out->tools = (sg_oai_tools_req_t){0, empty, empty, false};
    if (kind <= SG_OAI_COMPLETIONS || kind >= SG_OAI__KINDS) {
        out->err = "not an API this scanner knows";
        return SG_EINVAL;
    }
    bool rerank = kind == SG_OAI_RANK_TEI || kind == SG_OAI_RANK_COHERE;
    /* what the body held, each part's words apart: a repeated member replaces its words */
    bool found = false, have_query = false;
    uint64_t words = 0, query_words = 0, extra_words = 0;
    sg_slice_t query = empty;
    uint32_t count = 0;

    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc = sg_js_obj_begin(&js), n = 0;
    sg_slice_t key;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        if (SG_JS_KEY(&js, key, "model")) {
            rc = rd_string(&js, &out->model, &present);
            if (!present)
                out->model = empty;
        } else if (SG_JS_KEY(&js, key, "stream")) {
            rc = rd_true(&js, &out->stream);
        } else if (kind == SG_OAI_EMBEDDINGS && SG_JS_KEY(&js, key, "input")) {
            rc = embed_input(&js, out, &found);
            words = out->prompt_words;
        } else if (kind == SG_OAI_RANK_NIM && SG_JS_KEY(&js, key, "query")) {
            rc = nim_query(&js, &query_words, &query, &have_query);
        } else if (rerank && SG_JS_KEY(&js, key, "query")) {
            query_words = 0;
            have_query = false;
            rc = text_value(&js, &query_words, &query, &have_query);
        } else if ((kind == SG_OAI_RANK_NIM && SG_JS_KEY(&js, key, "passages")) ||
                   (rerank && (SG_JS_KEY(&js, key, "texts") || SG_JS_KEY(&js, key, "documents")))) {
            if (rerank)
                out->kind = SG_JS_KEY(&js, key, "texts") ? SG_OAI_RANK_TEI : SG_OAI_RANK_COHERE;
            rc = passages(&js, out, &words, &found);
        } else if (rerank && SG_JS_KEY(&js, key, "top_n")) {
            rc = rd_int(&js, &out->top_n);
        } else if (kind == SG_OAI_RESPONSES && SG_JS_KEY(&js, key, "input")) {
            if (sg_js_peek(&js) == '"') {
                bool have = false;
                words = 0;
                rc = text_value(&js, &words, &out->prompt, &have);
                found = rc == 0;
            } else {
                rc = message_list(&js, part_types, &words, &out->prompt, &count);
                found = rc == 0 && count > 0;
            }
        } else if (kind == SG_OAI_RESPONSES && SG_JS_KEY(&js, key, "instructions")) {
            bool have = false;
            extra_words = 0;
            rc = text_value(&js, &extra_words, &query, &have);
        } else if ((kind == SG_OAI_RESPONSES || kind == SG_OAI_MESSAGES) && SG_JS_KEY(&js, key, "tools")) {
            rc = sg_oai_scan_tools(&js, false, &out->tools);
        } else if ((kind == SG_OAI_RESPONSES || kind == SG_OAI_MESSAGES) && SG_JS_KEY(&js, key, "tool_choice")) {
            rc = sg_oai_scan_tools(&js, true, &out->tools);
        } else if (kind == SG_OAI_RESPONSES && SG_JS_KEY(&js, key, "max_output_tokens")) {
            rc = rd_int(&js, &out->max_tokens);
        } else if (kind == SG_OAI_MESSAGES && SG_JS_KEY(&js, key, "messages")) {
            rc = message_list(&js, block_types, &words, &out->prompt, &count);
            found = rc == 0 && count > 0;
        } else if (kind == SG_OAI_MESSAGES && SG_JS_KEY(&js, key, "system")) {
            bool have = false;
            extra_words = 0;
            rc = content_value(&js, block_types, &extra_words, &query, &have);
        } else if (kind == SG_OAI_MESSAGES && SG_JS_KEY(&js, key, "max_tokens")) {
            rc = rd_int(&js, &out->max_tokens);
        } else if (kind == SG_OAI_GENERATE && SG_JS_KEY(&js, key, "inputs")) {
            words = 0;
            found = false;
            out->prompt = empty;
            rc = text_value(&js, &words, &out->prompt, &found);
        } else if (kind == SG_OAI_GENERATE && SG_JS_KEY(&js, key, "parameters")) {
            rc = tgi_parameters(&js, out);
        } else if (kind == SG_OAI_IMAGE_RETRIEVAL && SG_JS_KEY(&js, key, "input")) {
            rc = image_inputs(&js, out, &found);
        } else {
            rc = sg_js_skip(&js);
        }
    }
    if (rc < 0 || !sg_js_at_end(&js)) {
        out->err = "request body is not a valid JSON object";
        return SG_EJSON;
    }
    bool ranking = kind == SG_OAI_RANK_NIM || rerank;
    if (ranking) {
        out->prompt = query;
        out->prompt_words = query_words + words;
        if (!have_query) {
            out->err = kind == SG_OAI_RANK_NIM ? "request has no \"query\": {\"text\": ...}"
                                               : "request has no \"query\" string";
            return SG_EPROTO;
        }
    } else {
        out->prompt_words = words + extra_words;
        out->inputs = kind == SG_OAI_EMBEDDINGS || kind == SG_OAI_IMAGE_RETRIEVAL ? out->inputs : 1;
    }
    if (found)
        return 0;
    switch (kind) {
    case SG_OAI_EMBEDDINGS:
        out->err = "request has no \"input\" (a string, or a non-empty array of strings or token ids)";
        break;
    case SG_OAI_RANK_NIM:
        out->err = "request has no \"passages\" (a non-empty array of {\"text\": ...})";
        break;
    case SG_OAI_RANK_TEI:
    case SG_OAI_RANK_COHERE:
        out->err = "request has no \"texts\" (TEI) or \"documents\" (Cohere) to rank";
        break;
    case SG_OAI_RESPONSES:
        out->err = "request has no \"input\" (a string or a non-empty array of items)";
        break;
    case SG_OAI_MESSAGES:
        out->err = "request has no \"messages\" (a non-empty array)";
        break;
    case SG_OAI_IMAGE_RETRIEVAL:
        out->err = "request has no \"input\" (a non-empty array of {\"type\": \"image_url\", \"url\": ...})";
        break;
    default:
        out->err = "request has no \"inputs\" string";
        break;
    }
    return SG_EPROTO;
}
