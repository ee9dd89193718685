/*
 * Decoding the APIs beside OpenAI's chat and completions (docs/endpoints.md): embeddings, the three rankings
 * shapes, the Responses API, Anthropic's Messages API and TGI's generate. One function per API; each walks the
 * members it needs with the pull scanner, in whatever order they come, and decides what the text means once the
 * object has been read (an event's "type" may follow its payload).
 *
 * And the table of endpoint types (--endpoint-type): names, default paths, what applies to each.
 */
#include "oai_int.h"

#include <string.h>

static const sg_slice_t empty = {"", 0};

static void result_init(sg_oai_result_t *out)
{
    out->content = empty;
    out->reasoning = empty;
    out->completion_tokens = -1;
    out->prompt_tokens = -1;
    out->reasoning_tokens = -1;
    out->cached_tokens = -1;
    out->items = -1;
    out->recognized = false;
    out->has_finish_reason = false;
    out->is_error = false;
    out->error_message = empty;
    out->error_code = -1;
    out->tool_calls = 0;
    out->tool_index_max = -1;
    out->tool_n_args = 0;
    out->tool_args_json = false;
}

/* One tool call's arguments (a non-empty fragment), kept while there is room. */
static void tool_arg(sg_oai_result_t *out, sg_slice_t args)
{
    if (args.len && out->tool_n_args < SG_OAI_TOOL_ARGS_MAX)
        out->tool_args[out->tool_n_args++] = args;
}

static void set_error(sg_oai_result_t *out, const sg_oai_err_t *e)
{
    out->is_error = true;
    out->error_message = e->message;
    out->error_code = e->code;
}

/* An integer member into *v (-1 when it is not an integer). */
static int read_count(sg_js_t *js, int64_t *v)
{
    bool present;
    int rc = sg_js_read_int(js, v, &present);
    if (!present)
        *v = -1;
    return rc;
}

/* A string member into *v (empty when it is not a string). */
static int read_text(sg_js_t *js, sg_slice_t *v)
{
    bool present;
    int rc = sg_js_read_string(js, v, &present);
    if (!present)
        *v = empty;
    return rc;
}

/* The elements of an array that are objects; *count -1 when the value is not an array. */
static int count_objects(sg_js_t *js, int64_t *count)
{
    *count = -1;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    int64_t objects = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        objects += sg_js_peek(js) == '{';
        rc = sg_js_skip(js);
    }
    *count = objects;
    return rc;
}

/*
 * A usage object under any API's names: prompt_tokens / input_tokens, completion_tokens / output_tokens, and
 * reasoning_tokens in completion_tokens_details / output_tokens_details. Members absent here leave out's alone
 * (Anthropic's message_delta carries output_tokens only, after message_start gave input_tokens).
 */
static int parse_usage_any(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    /* Anthropic counts prompt tokens read from or written to its cache apart from input_tokens */
    int64_t input = -1, cache_read = -1, cache_write = -1, cached = -1;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "prompt_tokens") || SG_JS_KEY(js, key, "input_tokens"))
            rc = read_count(js, &input);
        else if (SG_JS_KEY(js, key, "cache_read_input_tokens"))
            rc = read_count(js, &cache_read);
        else if (SG_JS_KEY(js, key, "cache_creation_input_tokens"))
            rc = read_count(js, &cache_write);
        else if (SG_JS_KEY(js, key, "completion_tokens") || SG_JS_KEY(js, key, "output_tokens"))
            rc = read_count(js, &out->completion_tokens);
        else if (SG_JS_KEY(js, key, "completion_tokens_details") || SG_JS_KEY(js, key, "output_tokens_details"))
            rc = sg_oai_parse_usage_details(js, &out->reasoning_tokens);
        else if (SG_JS_KEY(js, key, "prompt_tokens_details") || SG_JS_KEY(js, key, "input_tokens_details"))
            rc = sg_oai_parse_member_count(js, "cached_tokens", strlen("cached_tokens"), &cached);
        else
            rc = sg_js_skip(js);
    }
    if (input >= 0)
        out->prompt_tokens = input + (cache_read > 0 ? cache_read : 0) + (cache_write > 0 ? cache_write : 0);
    /* Anthropic: the tokens read from its cache; the others: the details' cached_tokens */
    if (cache_read >= 0)
        out->cached_tokens = cache_read;
    else if (cached >= 0)
        out->cached_tokens = cached;
    return rc;
}

/* The top-level members every API's error bodies use: "error" (object or string), and vLLM's
 * {"object": "error", "message", "code"}. */
typedef struct {
    sg_oai_err_t err;
    bool object_is_error;
    sg_slice_t message;
    int64_t code;
} top_err_t;

static int top_error_member(sg_js_t *js, sg_slice_t key, top_err_t *t, bool *taken)
{
    *taken = true;
    if (SG_JS_KEY(js, key, "error"))
        return sg_oai_parse_error(js, &t->err);
    if (SG_JS_KEY(js, key, "object")) {
        sg_slice_t obj;
        bool present;
        int rc = sg_js_read_string(js, &obj, &present);
        t->object_is_error = present && SG_JS_EQ(obj, "error");
        return rc;
    }
    if (SG_JS_KEY(js, key, "message") && sg_js_peek(js) == '"')
        return read_text(js, &t->message);
    if (SG_JS_KEY(js, key, "code") && sg_js_peek(js) != '{')
        return read_count(js, &t->code);
    *taken = false;
    return 0;
}

static void top_error_apply(const top_err_t *t, sg_oai_result_t *out)
{
    if (t->err.is_error) {
        set_error(out, &t->err);
    } else if (t->object_is_error) {
        sg_oai_err_t e = {true, t->message, t->code};
        set_error(out, &e);
    }
}

static void top_err_init(top_err_t *t)
{
    t->err = (sg_oai_err_t){false, {"", 0}, -1};
    t->object_is_error = false;
    t->message = empty;
    t->code = -1;
}

static int finish(sg_js_t *js, int rc)
{
    return rc < 0 || !sg_js_at_end(js) ? SG_EJSON : 0;
}

/* ---------- embeddings and rankings: one whole body ---------- */

/*
 * {"data": [...], "usage"} (embeddings), {"rankings": [...]} (NIM), {"results": [...], "usage"} (Cohere,
 * llama.cpp), or a bare array (TEI); the array's member name is `items`, NULL for a bare array.
 */
static int decode_list(const char *items, const char *json, size_t len, sg_oai_result_t *out)
{
    sg_js_t js;
    sg_js_init(&js, json, len);
    if (sg_js_peek(&js) == '[') {
        int rc = count_objects(&js, &out->items);
        out->recognized = items == NULL;
        return finish(&js, rc);
    }
    top_err_t te;
    top_err_init(&te);
    int rc = sg_js_obj_begin(&js), n = 0;
    sg_slice_t key;
    bool taken;
    size_t ilen = items ? strlen(items) : 0;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        if (items && sg_js_key_is(&js, key, items, ilen)) {
            rc = count_objects(&js, &out->items);
            out->recognized = out->items >= 0;
        } else if (SG_JS_KEY(&js, key, "usage")) {
            rc = parse_usage_any(&js, out);
        } else {
            rc = top_error_member(&js, key, &te, &taken);
            if (!taken)
                rc = sg_js_skip(&js);
        }
    }
    top_error_apply(&te, out);
    return finish(&js, rc);
}

/* ---------- the Responses API ---------- */

/* An output item's content parts: output_text (answer) or reasoning_text / summary_text (reasoning). The first
 * of each is kept: a whole response's text is for the tokenizer, and usage gives the counts. */
static int responses_parts(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        sg_slice_t type = empty, text = empty, key;
        int m = 0;
        rc = sg_js_obj_begin(js);
        while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
            if (SG_JS_KEY(js, key, "type"))
                rc = read_text(js, &type);
            else if (SG_JS_KEY(js, key, "text"))
                rc = read_text(js, &text);
            else
                rc = sg_js_skip(js);
        }
        if (rc < 0)
            return rc;
        if (SG_JS_EQ(type, "output_text") && out->content.len == 0)
            out->content = text;
        else if ((SG_JS_EQ(type, "reasoning_text") || SG_JS_EQ(type, "summary_text")) && out->reasoning.len == 0)
            out->reasoning = text;
    }
    return rc;
}

/* A whole response's "output": items of type message (content) and reasoning (content or summary). */
static int responses_output(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        sg_slice_t key, type = empty, args = empty;
        int m = 0;
        rc = sg_js_obj_begin(js);
        while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
            if (SG_JS_KEY(js, key, "content") || SG_JS_KEY(js, key, "summary"))
                rc = responses_parts(js, out);
            else if (SG_JS_KEY(js, key, "type"))
                rc = read_text(js, &type);
            else if (SG_JS_KEY(js, key, "arguments"))
                rc = read_text(js, &args);
            else
                rc = sg_js_skip(js);
        }
        if (rc == 0 && SG_JS_EQ(type, "function_call")) {
            out->tool_calls++;
            tool_arg(out, args);
        }
    }
    return rc;
}

/* An output item's "type" (response.output_item.added / .done carry the item). */
static int item_type(sg_js_t *js, sg_slice_t *type)
{
    *type = empty;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1)
        rc = SG_JS_KEY(js, key, "type") ? read_text(js, type) : sg_js_skip(js);
    return rc;
}

/* The "response" object of response.completed / .failed / .incomplete: its usage and error only (its output
 * repeats the text the deltas already gave). */
static int responses_inner(sg_js_t *js, sg_oai_result_t *out, sg_oai_err_t *err)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "usage"))
            rc = parse_usage_any(js, out);
        else if (SG_JS_KEY(js, key, "error"))
            rc = sg_oai_parse_error(js, err);
        else
            rc = sg_js_skip(js);
    }
    return rc;
}

static int decode_responses(const char *json, size_t len, sg_oai_result_t *out)
{
    sg_slice_t type = empty, delta = empty, object = empty, itype = empty, key;
    sg_oai_err_t inner_err = {false, {"", 0}, -1};
    top_err_t te;
    top_err_init(&te);
    bool have_output = false;
    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc = sg_js_obj_begin(&js), n = 0;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        if (SG_JS_KEY(&js, key, "type")) {
            rc = read_text(&js, &type);
        } else if (SG_JS_KEY(&js, key, "delta")) {
            rc = read_text(&js, &delta);
        } else if (SG_JS_KEY(&js, key, "response")) {
            rc = responses_inner(&js, out, &inner_err);
        } else if (SG_JS_KEY(&js, key, "item")) {
            rc = item_type(&js, &itype);
        } else if (SG_JS_KEY(&js, key, "output")) {
            have_output = sg_js_peek(&js) == '[';
            rc = responses_output(&js, out);
        } else if (SG_JS_KEY(&js, key, "usage")) {
            rc = parse_usage_any(&js, out);
        } else if (SG_JS_KEY(&js, key, "object") && sg_js_peek(&js) == '"') {
            rc = read_text(&js, &object);
            te.object_is_error = SG_JS_EQ(object, "error");
        } else {
            bool taken;
            rc = top_error_member(&js, key, &te, &taken);
            if (!taken)
                rc = sg_js_skip(&js);
        }
    }
    if (finish(&js, rc) < 0)
        return SG_EJSON;
    if (type.len) {
        /* a stream event */
        if (SG_JS_EQ(type, "response.output_text.delta")) {
            out->content = delta;
        } else if (SG_JS_EQ(type, "response.reasoning_text.delta") ||
                   SG_JS_EQ(type, "response.reasoning_summary_text.delta")) {
            out->reasoning = delta;
        } else if (SG_JS_EQ(type, "response.function_call_arguments.delta")) {
            tool_arg(out, delta);
        } else if (SG_JS_EQ(type, "response.output_item.added") && SG_JS_EQ(itype, "function_call")) {
            /* its arguments are "" here: they come in the deltas (and whole again in .done, not counted) */
            out->tool_calls = 1;
        } else if (SG_JS_EQ(type, "error") || SG_JS_EQ(type, "response.failed")) {
            /* The server's own words, most specific first: the response's error, an "error" member of the event,
             * the event's "message" and "code"; a response.failed that gives none reads as its type. Every
             * message is a slice of the event, as the decoders promise. */
            sg_oai_err_t e = {true, te.message, te.code};
            if (!e.message.len && SG_JS_EQ(type, "response.failed"))
                e.message = type;
            set_error(out, te.err.is_error ? &te.err : &e);
        }
        if (inner_err.is_error)
            set_error(out, &inner_err);
        out->recognized = type.len > 9 && memcmp(type.base, "response.", 9) == 0;
        out->recognized |= SG_JS_EQ(type, "error");
        return 0;
    }
    /* a whole response (or an error body) */
    out->recognized = have_output || SG_JS_EQ(object, "response");
    top_error_apply(&te, out);
    return 0;
}

/* ---------- Anthropic's Messages API ---------- */

typedef struct {
    sg_slice_t type, text, thinking, partial_json, input;
} block_t;

/* delta or content_block: {"type", "text" | "thinking" | "partial_json" | "input", ...}; input (a tool_use
 * block's arguments, a JSON object) is kept as its raw bytes. */
static int parse_block(sg_js_t *js, block_t *b)
{
    b->type = b->text = b->thinking = b->partial_json = b->input = empty;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "type"))
            rc = read_text(js, &b->type);
        else if (SG_JS_KEY(js, key, "text"))
            rc = read_text(js, &b->text);
        else if (SG_JS_KEY(js, key, "thinking"))
            rc = read_text(js, &b->thinking);
        else if (SG_JS_KEY(js, key, "partial_json"))
            rc = read_text(js, &b->partial_json);
        else if (SG_JS_KEY(js, key, "input")) {
            sg_js_peek(js);
            const char *from = js->p;
            rc = sg_js_skip(js);
            b->input = (sg_slice_t){from, (size_t)(js->p - from)};
        } else
            rc = sg_js_skip(js);
    }
    return rc;
}

/* message_start's "message": its usage (input_tokens, and the first output_tokens). */
static int messages_inner(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1)
        rc = SG_JS_KEY(js, key, "usage") ? parse_usage_any(js, out) : sg_js_skip(js);
    return rc;
}

/* A whole message's "content": text and thinking blocks; the first of each is kept. */
static int messages_content(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        block_t b;
        rc = parse_block(js, &b);
        if (SG_JS_EQ(b.type, "text") && out->content.len == 0)
            out->content = b.text;
        else if (SG_JS_EQ(b.type, "thinking") && out->reasoning.len == 0)
            out->reasoning = b.thinking;
        else if (SG_JS_EQ(b.type, "tool_use")) {
            out->tool_calls++;
            out->tool_args_json = true;
            tool_arg(out, b.input);
        }
    }
    return rc;
}

static bool messages_event(sg_slice_t type)
{
    static const char *const known[] = {
        "message_start",       "message_delta",      "message_stop", "content_block_start",
        "content_block_delta", "content_block_stop", "ping",         "error"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (sg_js_raw_eq(type, known[i], strlen(known[i])))
            return true;
    return false;
}

static int decode_messages(const char *json, size_t len, sg_oai_result_t *out)
{
    sg_slice_t type = empty, key;
    block_t delta = {empty, empty, empty, empty, empty}, cblock = {empty, empty, empty, empty, empty};
    top_err_t te;
    top_err_init(&te);
    bool have_content = false;
    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc = sg_js_obj_begin(&js), n = 0;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        if (SG_JS_KEY(&js, key, "type")) {
            rc = read_text(&js, &type);
        } else if (SG_JS_KEY(&js, key, "delta")) {
            rc = parse_block(&js, &delta);
        } else if (SG_JS_KEY(&js, key, "content_block")) {
            rc = parse_block(&js, &cblock);
        } else if (SG_JS_KEY(&js, key, "message") && sg_js_peek(&js) == '{') {
            rc = messages_inner(&js, out);
        } else if (SG_JS_KEY(&js, key, "usage")) {
            rc = parse_usage_any(&js, out);
        } else if (SG_JS_KEY(&js, key, "content")) {
            have_content = sg_js_peek(&js) == '[';
            rc = messages_content(&js, out);
        } else {
            bool taken;
            rc = top_error_member(&js, key, &te, &taken);
            if (!taken)
                rc = sg_js_skip(&js);
        }
    }
    if (finish(&js, rc) < 0)
        return SG_EJSON;
    if (SG_JS_EQ(type, "content_block_delta")) {
        if (SG_JS_EQ(delta.type, "text_delta"))
            out->content = delta.text;
        else if (SG_JS_EQ(delta.type, "thinking_delta"))
            out->reasoning = delta.thinking;
        else if (SG_JS_EQ(delta.type, "input_json_delta"))
            tool_arg(out, delta.partial_json);
    } else if (SG_JS_EQ(type, "content_block_start") && SG_JS_EQ(cblock.type, "tool_use")) {
        out->tool_calls = 1;
    }
    out->recognized = messages_event(type) || (SG_JS_EQ(type, "message") && have_content);
    top_error_apply(&te, out);
    return 0;
}

/* ---------- TGI generate ---------- */

/* details: generated_tokens (the output length) and finish_reason. */
static int tgi_details(sg_js_t *js, sg_oai_result_t *out)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "generated_tokens")) {
            rc = read_count(js, &out->completion_tokens);
        } else if (SG_JS_KEY(js, key, "finish_reason")) {
            sg_slice_t fr;
            bool present;
            rc = sg_js_read_string(js, &fr, &present);
            out->has_finish_reason = present;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

/* token: {"id", "text", "logprob", "special"}; a special token (end of sequence) is no text. */
static int tgi_token(sg_js_t *js, sg_oai_result_t *out, bool *have)
{
    *have = false;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    *have = true;
    sg_slice_t text = empty, key;
    bool special = false;
    int rc = sg_js_obj_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "text"))
            rc = read_text(js, &text);
        else if (SG_JS_KEY(js, key, "special"))
            rc = sg_js_read_bool(js, &special);
        else
            rc = sg_js_skip(js);
    }
    if (!special)
        out->content = text;
    return rc;
}

static int tgi_object(sg_js_t *js, sg_oai_result_t *out, sg_slice_t *generated, bool *have_token, top_err_t *te)
{
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "token")) {
            rc = tgi_token(js, out, have_token);
        } else if (SG_JS_KEY(js, key, "generated_text")) {
            bool present;
            rc = sg_js_read_string(js, generated, &present);
            if (!present)
                generated->base = NULL;
        } else if (SG_JS_KEY(js, key, "details")) {
            rc = tgi_details(js, out);
        } else {
            bool taken;
            rc = top_error_member(js, key, te, &taken);
            if (!taken)
                rc = sg_js_skip(js);
        }
    }
    return rc;
}

static int decode_generate(const char *json, size_t len, sg_oai_result_t *out)
{
    sg_slice_t generated = {NULL, 0};
    bool have_token = false;
    top_err_t te;
    top_err_init(&te);
    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc;
    if (sg_js_peek(&js) == '[') {
        /* a whole response as TGI's / route gives it: a one-element array */
        int n = 0;
        rc = sg_js_arr_begin(&js);
        while (rc == 0 && (rc = sg_js_arr_next(&js, &n)) == 1)
            rc =
                n == 1 && sg_js_peek(&js) == '{' ? tgi_object(&js, out, &generated, &have_token, &te) : sg_js_skip(&js);
    } else {
        rc = tgi_object(&js, out, &generated, &have_token, &te);
    }
    if (finish(&js, rc) < 0)
        return SG_EJSON;
    /* A stream's last event repeats the whole text in generated_text: the tokens gave it already. */
    if (!have_token && generated.base)
        out->content = generated;
    out->recognized = have_token || generated.base != NULL;
    top_error_apply(&te, out);
    return 0;
}

int sg_api_decode(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out)
{
    result_init(out);
    switch (kind) {
    case SG_OAI_EMBEDDINGS:
        return decode_list("data", json, len, out);
    case SG_OAI_RANK_NIM:
        return decode_list("rankings", json, len, out);
    case SG_OAI_RANK_TEI:
        return decode_list(NULL, json, len, out);
    case SG_OAI_RANK_COHERE:
        return decode_list("results", json, len, out);
    case SG_OAI_RESPONSES:
        return decode_responses(json, len, out);
    case SG_OAI_MESSAGES:
        return decode_messages(json, len, out);
    case SG_OAI_GENERATE:
        return decode_generate(json, len, out);
    case SG_OAI_IMAGE_RETRIEVAL:
        return decode_list("data", json, len, out);
    default:
        return sg_oai_decode(kind, json, len, out);
    }
}

/* ---------- the endpoint types ---------- */

static const sg_endpoint_t endpoints[SG_OAI__KINDS] = {
    [SG_OAI_CHAT] = {"chat", "v1/chat/completions", NULL, true, true, false, false},
    [SG_OAI_COMPLETIONS] = {"completions", "v1/completions", NULL, true, true, false, false},
    [SG_OAI_EMBEDDINGS] = {"embeddings", "v1/embeddings", NULL, false, false, true, true},
    [SG_OAI_RANK_NIM] = {"nim_rankings", "v1/ranking", NULL, false, false, true, true},
    [SG_OAI_RANK_TEI] = {"hf_tei_rankings", "rerank", NULL, false, false, true, true},
    [SG_OAI_RANK_COHERE] = {"cohere_rankings", "v1/rerank", NULL, false, false, true, true},
    [SG_OAI_RESPONSES] = {"responses", "v1/responses", NULL, true, true, false, true},
    [SG_OAI_MESSAGES] = {"messages", "v1/messages", NULL, true, true, false, true},
    [SG_OAI_GENERATE] = {"generate", "generate", "generate_stream", true, true, false, true},
    [SG_OAI_IMAGE_RETRIEVAL] = {"image_retrieval", "v1/infer", NULL, false, false, false, true},
};

const sg_endpoint_t *sg_endpoint(sg_oai_kind_t kind)
{
    return (unsigned)kind < SG_OAI__KINDS ? &endpoints[kind] : &endpoints[SG_OAI_CHAT];
}

static const struct {
    const char *name;
    sg_oai_kind_t kind;
} aliases[] = {
    {"rankings", SG_OAI_RANK_NIM},             /* GenAI-Perf's (NIM's shape; --extra-inputs rankings:tei for TEI) */
    {"huggingface_generate", SG_OAI_GENERATE}, /* AIPerf's */
    {"anthropic_messages", SG_OAI_MESSAGES},   /* spelled as the others' provider-first names */
    {"openai_responses", SG_OAI_RESPONSES},
};

int sg_endpoint_parse(const char *name, sg_oai_kind_t *kind)
{
    for (int k = 0; k < SG_OAI__KINDS; k++)
        if (strcmp(name, endpoints[k].name) == 0) {
            *kind = (sg_oai_kind_t)k;
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (strcmp(name, aliases[i].name) == 0) {
            *kind = aliases[i].kind;
            return 0;
        }
    return -1;
}

const char *sg_endpoint_names(void)
{
    return "chat, completions, embeddings, rankings (nim_rankings), hf_tei_rankings, cohere_rankings, responses, "
           "messages, generate (huggingface_generate), image_retrieval";
}
