/*
 * OpenAI-compatible response decoding (per streamed chunk: the client's hot path) and request scanning (the
 * mock server). Both walk the few members they need with the pull scanner and skip the rest.
 *
 * Where a key repeats, the last occurrence wins, as in jansson (which the fuzz target compares us with).
 */
#include "sg_openai.h"
#include "json_scan.h"
#include "oai_int.h"
#include "sg_media_probe.h"

#include <stddef.h>
#include <string.h>

static const sg_slice_t empty = {"", 0};

/* ---------- responses ---------- */

/*
 * A message object (delta or message) and a choice, as they are read. A slice means something only with its bit
 * in have: nothing is zeroed per object. Zeroing two messages per choice and copying the chosen one out was a
 * third of the decoder's time on a non-streamed body.
 */
enum { M_CONTENT = 1, M_REASONING_CONTENT = 2, M_REASONING = 4 };
typedef struct {
    sg_slice_t content, reasoning_content, reasoning;
    unsigned have;
} msg_t;

/* A choice's tool calls (delta.tool_calls or message.tool_calls), copied out only when the choice is the one. */
typedef struct {
    uint32_t calls, n;
    int32_t index_max;
    sg_slice_t args[SG_OAI_TOOL_ARGS_MAX];
} tools_t;

enum { C_DELTA = 1, C_MESSAGE = 2, C_TEXT = 4, C_FINISH_REASON = 8 };
typedef struct {
    msg_t delta, message;
    tools_t tools;
    sg_slice_t text;
    unsigned have;
    bool index_ok; /* "index" absent, null or 0 */
} choice_t;

/* A string member: its slice, and its bit set when it is a string (cleared otherwise: the last key wins). */
static int read_string_bit(sg_js_t *js, sg_slice_t *out, unsigned *have, unsigned bit)
{
    bool present;
    int rc = sg_js_read_string(js, out, &present);
    *have = present ? *have | bit : *have & ~bit;
    return rc;
}

/* function: {"name", "arguments"}; a name (a string) marks the start of a call. */
static int parse_function(sg_js_t *js, sg_slice_t *args, bool *named)
{
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key, v;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "arguments")) {
            rc = sg_js_read_string(js, &v, &present);
            *args = present ? v : empty;
        } else if (SG_JS_KEY(js, key, "name")) {
            rc = sg_js_read_string(js, &v, &present);
            *named = present;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

/*
 * tool_calls: [{"index", "id", "type", "function": {"name", "arguments"}}...]. An entry with an id or a name
 * starts a call (servers send them once, in a call's first delta); its arguments fragment is kept when not empty.
 */
static int parse_tool_calls(sg_js_t *js, tools_t *t)
{
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        sg_slice_t key, args = empty, v;
        bool starts = false, present;
        int64_t idx = -1;
        int m = 0;
        rc = sg_js_obj_begin(js);
        while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
            if (SG_JS_KEY(js, key, "function")) {
                rc = parse_function(js, &args, &starts);
            } else if (SG_JS_KEY(js, key, "id")) {
                rc = sg_js_read_string(js, &v, &present);
                starts |= present && v.len;
            } else if (SG_JS_KEY(js, key, "index")) {
                rc = sg_js_read_int(js, &idx, &present);
                if (!present || idx < 0 || idx > INT32_MAX)
                    idx = -1;
            } else {
                rc = sg_js_skip(js);
            }
        }
        if (rc < 0)
            return rc;
        t->calls += starts;
        if (idx > t->index_max)
            t->index_max = (int32_t)idx;
        if (args.len && t->n < SG_OAI_TOOL_ARGS_MAX)
            t->args[t->n++] = args;
    }
    return rc;
}

/* A message object; anything else is skipped and the bit for it is cleared. */
static int parse_msg(sg_js_t *js, msg_t *m, unsigned *have, unsigned bit, tools_t *tools)
{
    m->have = 0;
    if (sg_js_peek(js) != '{') {
        *have &= ~bit;
        return sg_js_skip(js);
    }
    *have |= bit;
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "content"))
            rc = read_string_bit(js, &m->content, &m->have, M_CONTENT);
        else if (SG_JS_KEY(js, key, "reasoning_content"))
            rc = read_string_bit(js, &m->reasoning_content, &m->have, M_REASONING_CONTENT);
        else if (SG_JS_KEY(js, key, "reasoning"))
            rc = read_string_bit(js, &m->reasoning, &m->have, M_REASONING);
        else if (SG_JS_KEY(js, key, "tool_calls"))
            rc = parse_tool_calls(js, tools);
        else
            rc = sg_js_skip(js);
    }
    return rc;
}

static int parse_choice(sg_js_t *js, choice_t *ch)
{
    ch->have = 0;
    ch->index_ok = true;
    ch->tools.calls = ch->tools.n = 0;
    ch->tools.index_max = -1;
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "index")) {
            int c = sg_js_peek(js);
            if (c == 'n') {
                ch->index_ok = true;
                rc = sg_js_skip(js);
            } else {
                int64_t idx;
                bool is_int;
                rc = sg_js_read_int(js, &idx, &is_int);
                ch->index_ok = is_int && idx == 0;
            }
        } else if (SG_JS_KEY(js, key, "delta")) {
            rc = parse_msg(js, &ch->delta, &ch->have, C_DELTA, &ch->tools);
        } else if (SG_JS_KEY(js, key, "message")) {
            rc = parse_msg(js, &ch->message, &ch->have, C_MESSAGE, &ch->tools);
        } else if (SG_JS_KEY(js, key, "text")) {
            rc = read_string_bit(js, &ch->text, &ch->have, C_TEXT);
        } else if (SG_JS_KEY(js, key, "finish_reason")) {
            sg_slice_t fr;
            rc = read_string_bit(js, &fr, &ch->have, C_FINISH_REASON);
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

/* choices: the first element that is an object with index 0 (or no index) is the one we report. It is read
 * straight into *chosen; an element that does not qualify is overwritten by the next. */
static int parse_choices(sg_js_t *js, choice_t *chosen, bool *found)
{
    *found = false;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (*found || sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        rc = parse_choice(js, chosen);
        *found = rc == 0 && chosen->index_ok;
    }
    return rc;
}

int sg_oai_parse_usage_details(sg_js_t *js, int64_t *reasoning_tokens)
{
    *reasoning_tokens = -1;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "reasoning_tokens")) {
            rc = sg_js_read_int(js, reasoning_tokens, &present);
            if (!present)
                *reasoning_tokens = -1;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

int sg_oai_parse_member_count(sg_js_t *js, const char *name, size_t name_len, int64_t *v)
{
    *v = -1;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (sg_js_key_is(js, key, name, name_len)) {
            rc = sg_js_read_int(js, v, &present);
            if (!present || *v < 0)
                *v = -1;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

static int parse_usage(sg_js_t *js, sg_oai_result_t *out, int64_t *cached)
{
    out->prompt_tokens = -1;
    out->completion_tokens = -1;
    out->reasoning_tokens = -1;
    *cached = -1;
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "prompt_tokens")) {
            rc = sg_js_read_int(js, &out->prompt_tokens, &present);
            if (!present)
                out->prompt_tokens = -1;
        } else if (SG_JS_KEY(js, key, "completion_tokens")) {
            rc = sg_js_read_int(js, &out->completion_tokens, &present);
            if (!present)
                out->completion_tokens = -1;
        } else if (SG_JS_KEY(js, key, "completion_tokens_details")) {
            rc = sg_oai_parse_usage_details(js, &out->reasoning_tokens);
        } else if (SG_JS_KEY(js, key, "prompt_tokens_details")) {
            rc = sg_oai_parse_member_count(js, "cached_tokens", strlen("cached_tokens"), cached);
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

int sg_oai_parse_error(sg_js_t *js, sg_oai_err_t *e)
{
    e->is_error = false;
    e->message = empty;
    e->code = -1;
    int c = sg_js_peek(js);
    if (c == '"') {
        e->is_error = true;
        return sg_js_string(js, &e->message);
    }
    if (c != '{')
        return sg_js_skip(js);
    e->is_error = true;
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "message")) {
            rc = sg_js_read_string(js, &e->message, &present);
            if (!present)
                e->message = empty;
        } else if (SG_JS_KEY(js, key, "code")) {
            rc = sg_js_read_int(js, &e->code, &present);
            if (!present)
                e->code = -1;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

enum { K_OTHER, K_CHOICES, K_USAGE, K_ERROR, K_OBJECT, K_MESSAGE, K_CODE, K_TIMINGS };

/* Which top-level member a key names; one switch on the length keeps the common case to one memcmp. */
static int top_key(const sg_js_t *js, sg_slice_t key)
{
    char buf[16];
    if (js->key_escaped) {
        ssize_t n = sg_json_unescape(key.base, key.len, buf, sizeof buf);
        if (n < 0 || (size_t)n > sizeof buf)
            return K_OTHER;
        key = (sg_slice_t){buf, (size_t)n};
    }
    switch (key.len) {
    case 4:
        return memcmp(key.base, "code", 4) == 0 ? K_CODE : K_OTHER;
    case 5:
        if (memcmp(key.base, "usage", 5) == 0)
            return K_USAGE;
        return memcmp(key.base, "error", 5) == 0 ? K_ERROR : K_OTHER;
    case 6:
        return memcmp(key.base, "object", 6) == 0 ? K_OBJECT : K_OTHER;
    case 7:
        if (memcmp(key.base, "choices", 7) == 0)
            return K_CHOICES;
        if (memcmp(key.base, "timings", 7) == 0)
            return K_TIMINGS;
        return memcmp(key.base, "message", 7) == 0 ? K_MESSAGE : K_OTHER;
    default:
        return K_OTHER;
    }
}

int sg_oai_decode(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out)
{
    if (kind != SG_OAI_CHAT && kind != SG_OAI_COMPLETIONS)
        return sg_api_decode(kind, json, len, out);
    out->reasoning_tokens = -1;
    out->items = -1;
    out->recognized = true;
    out->content = empty;
    out->reasoning = empty;
    out->completion_tokens = -1;
    out->prompt_tokens = -1;
    out->cached_tokens = -1;
    out->has_finish_reason = false;
    out->is_error = false;
    out->error_message = empty;
    out->error_code = -1;
    out->tool_calls = 0;
    out->tool_index_max = -1;
    out->tool_n_args = 0;
    out->tool_args_json = false;

    choice_t ch;
    bool have_choice = false;
    sg_oai_err_t err = {false, {"", 0}, -1};
    /* vLLM's error shape: {"object":"error","message":...,"code":...} at the top level. */
    bool object_is_error = false;
    sg_slice_t top_message = empty;
    int64_t top_code = -1;
    /* cached prompt tokens: usage's (OpenAI's field) when given, else llama.cpp's timings.cache_n */
    int64_t usage_cached = -1, cache_n = -1;

    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc = sg_js_obj_begin(&js), n = 0;
    sg_slice_t key, obj;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        switch (top_key(&js, key)) {
        case K_CHOICES:
            rc = parse_choices(&js, &ch, &have_choice);
            break;
        case K_USAGE:
            rc = parse_usage(&js, out, &usage_cached);
            break;
        case K_TIMINGS:
            rc = sg_oai_parse_member_count(&js, "cache_n", strlen("cache_n"), &cache_n);
            break;
        case K_ERROR:
            rc = sg_oai_parse_error(&js, &err);
            break;
        case K_OBJECT:
            rc = sg_js_read_string(&js, &obj, &present);
            object_is_error = present && SG_JS_EQ(obj, "error");
            break;
        case K_MESSAGE:
            rc = sg_js_read_string(&js, &top_message, &present);
            if (!present)
                top_message = empty;
            break;
        case K_CODE:
            rc = sg_js_read_int(&js, &top_code, &present);
            if (!present)
                top_code = -1;
            break;
        default:
            rc = sg_js_skip(&js);
            break;
        }
    }
    if (rc < 0 || !sg_js_at_end(&js))
        return SG_EJSON;
    out->cached_tokens = usage_cached >= 0 ? usage_cached : cache_n;

    if (have_choice) {
        out->has_finish_reason = ch.have & C_FINISH_REASON;
        if (kind == SG_OAI_COMPLETIONS) {
            if (ch.have & C_TEXT)
                out->content = ch.text;
        } else {
            /* A streamed chunk has delta, a whole response has message; delta wins if a server sent both. */
            const msg_t *m = (ch.have & C_DELTA) ? &ch.delta : (ch.have & C_MESSAGE) ? &ch.message : NULL;
            if (m) {
                if (m->have & M_CONTENT)
                    out->content = m->content;
                if (m->have & M_REASONING_CONTENT)
                    out->reasoning = m->reasoning_content;
                else if (m->have & M_REASONING)
                    out->reasoning = m->reasoning;
            }
            if (SG_UNLIKELY(ch.tools.calls | ch.tools.n) || ch.tools.index_max >= 0) {
                out->tool_calls = ch.tools.calls;
                out->tool_index_max = ch.tools.index_max;
                out->tool_n_args = ch.tools.n;
                memcpy(out->tool_args, ch.tools.args, ch.tools.n * sizeof *ch.tools.args);
            }
        }
    }
    if (err.is_error) {
        out->is_error = true;
        out->error_message = err.message;
        out->error_code = err.code;
    } else if (object_is_error) {
        out->is_error = true;
        out->error_message = top_message;
        out->error_code = top_code;
    }
    return 0;
}

/* What a result shares with the memo's: everything before the tool fragments (a memo has none). */
#define MEMO_RES_BYTES offsetof(sg_oai_result_t, tool_args)

static void memo_learn(sg_oai_memo_t *m, sg_oai_kind_t kind, const char *json, size_t len, const sg_oai_result_t *r)
{
    m->pre = 0;
    if (r->content.len == 0 || r->reasoning.len || r->is_error || r->tool_calls || r->tool_n_args ||
        r->tool_index_max >= 0 || r->content.base <= json || r->content.base + r->content.len >= json + len)
        return;
    size_t pre = (size_t)(r->content.base - json), suf = len - pre - r->content.len;
    if (pre > SG_OAI_MEMO_PRE || suf > SG_OAI_MEMO_SUF)
        return;
    memcpy(&m->res, r, MEMO_RES_BYTES);
    memcpy(m->bytes, json, pre);
    memcpy(m->bytes + pre, json + len - suf, suf);
    m->suf = (uint16_t)suf;
    m->kind = (uint8_t)kind;
    m->pre = (uint16_t)pre;
}

int sg_oai_decode_memo(sg_oai_memo_t *m, sg_oai_kind_t kind, const char *json, size_t len, sg_oai_result_t *out)
{
    size_t pre = m->pre, suf = m->suf;
    if (pre && m->kind == kind && len >= pre + suf && memcmp(json, m->bytes, pre) == 0 &&
        memcmp(json + len - suf, m->bytes + pre, suf) == 0) {
        /* the string from the prefix's opening quote must end exactly at the suffix's closing one */
        sg_js_t js;
        sg_js_init(&js, json + pre - 1, len - pre - suf + 2);
        sg_slice_t text;
        if (sg_js_string(&js, &text) == 0 && js.p == js.end) {
            memcpy(out, &m->res, MEMO_RES_BYTES);
            out->content = text;
            return 0;
        }
    }
    int rc = sg_oai_decode(kind, json, len, out);
    if (rc == 0 && (kind == SG_OAI_CHAT || kind == SG_OAI_COMPLETIONS))
        memo_learn(m, kind, json, len, out);
    return rc;
}

bool sg_oai_is_done(const char *data, size_t len)
{
    while (len && (data[0] == ' ' || data[0] == '\t' || data[0] == '\r' || data[0] == '\n')) {
        data++;
        len--;
    }
    while (len && (data[len - 1] == ' ' || data[len - 1] == '\t' || data[len - 1] == '\r' || data[len - 1] == '\n'))
        len--;
    return len == 6 && memcmp(data, "[DONE]", 6) == 0;
}

/* ---------- requests ---------- */

static bool ascii_space(uint32_t c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0d);
}

/* The character at *p in a raw JSON string, an escape decoded (only whether it is whitespace matters), *p moved
 * past it. */
static uint32_t raw_char(const char **pp, const char *end)
{
    const char *p = *pp;
    uint32_t c = (unsigned char)*p++;
    if (c == '\\' && p < end) {
        char e = *p++;
        switch (e) {
        case 'n':
            c = '\n';
            break;
        case 't':
            c = '\t';
            break;
        case 'r':
            c = '\r';
            break;
        case 'f':
            c = '\f';
            break;
        case 'u': {
            uint32_t cp = 0;
            for (int i = 0; i < 4 && p < end; i++, p++) {
                char h = *p;
                cp = (cp << 4) | (uint32_t)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            c = cp;
            break;
        }
        default:
            c = (unsigned char)e; /* \" \\ \/ \b: not whitespace */
            break;
        }
    }
    *pp = p;
    return c;
}

/*
 * Words in a raw (escaped, already validated) JSON string, judging whitespace after decoding escapes. The mock
 * counts every prompt with this, so it runs 16 bytes at a time: a word starts at a non-space byte after a space
 * (or at the start), which is a mask and a popcount. A byte loop mispredicted on every word boundary of a prompt
 * the predictor had not learnt, and was 30-40% of the mock's CPU under h2load and surge. Escapes are decoded one
 * at a time.
 */
static uint64_t count_words(sg_slice_t raw)
{
    const char *p = raw.base, *end = raw.base + raw.len;
    uint64_t words = 0;
    bool in_word = false;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), backslash = _mm_set1_epi8('\\'), tab = _mm_set1_epi8(0x09),
                  four = _mm_set1_epi8(4);
    while (end - p >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i t = _mm_sub_epi8(b, tab); /* 0x09..0x0d -> 0..4, unsigned */
        __m128i ws = _mm_or_si128(_mm_cmpeq_epi8(b, space), _mm_cmpeq_epi8(_mm_min_epu8(t, four), t));
        uint32_t m = (uint32_t)_mm_movemask_epi8(ws);
        uint32_t esc = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, backslash));
        unsigned k = esc ? (unsigned)__builtin_ctz(esc) : 16; /* plain bytes before the first escape */
        uint32_t word = ~m & ((1u << k) - 1);
        uint32_t after_space = (m << 1) | (in_word ? 0u : 1u);
        words += (uint64_t)__builtin_popcount(word & after_space);
        if (k)
            in_word = (word >> (k - 1)) & 1;
        p += k;
        if (esc) {
            bool ws1 = ascii_space(raw_char(&p, end));
            words += !ws1 && !in_word;
            in_word = !ws1;
        }
    }
#endif
    while (p < end) {
        bool ws = ascii_space(raw_char(&p, end));
        if (!ws && !in_word)
            words++;
        in_word = !ws;
    }
    return words;
}

/* An image_url part's value: {"url": U} or the URL itself. */
static int scan_image_url(sg_js_t *js, sg_slice_t *url, bool *present)
{
    *present = false; /* a repeated member replaces the earlier one */
    if (sg_js_peek(js) == '"')
        return sg_js_read_string(js, url, present);
    if (sg_js_peek(js) != '{')
        return sg_js_skip(js);
    int m = 0, rc = sg_js_obj_begin(js);
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1)
        rc = SG_JS_KEY(js, key, "url") ? sg_js_read_string(js, url, present) : sg_js_skip(js);
    return rc;
}

int sg_oai_scan_part(sg_js_t *js, sg_oai_media_t *media, bool *is_text, sg_slice_t *text, bool *present)
{
    enum { P_OTHER, P_TEXT, P_IMAGE, P_AUDIO } type = P_OTHER;
    sg_slice_t url = empty, nested_url = empty, audio = empty, key;
    bool has_url = false, has_nested = false, has_audio = false;
    *present = false;
    *text = empty;
    int m = 0, rc = sg_js_obj_begin(js);
    while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
        if (SG_JS_KEY(js, key, "type")) {
            sg_slice_t t;
            bool is_str;
            rc = sg_js_read_string(js, &t, &is_str);
            type = !is_str                      ? P_OTHER
                   : SG_JS_EQ(t, "text")        ? P_TEXT
                   : SG_JS_EQ(t, "image_url")   ? P_IMAGE
                   : SG_JS_EQ(t, "input_audio") ? P_AUDIO
                                                : P_OTHER;
        } else if (SG_JS_KEY(js, key, "text")) {
            rc = sg_js_read_string(js, text, present);
        } else if (SG_JS_KEY(js, key, "url")) { /* image_retrieval's inputs */
            rc = sg_js_read_string(js, &url, &has_url);
        } else if (SG_JS_KEY(js, key, "image_url")) {
            rc = scan_image_url(js, &nested_url, &has_nested);
        } else if (SG_JS_KEY(js, key, "input_audio")) {
            has_audio = false;
            if (sg_js_peek(js) != '{') {
                rc = sg_js_skip(js);
                continue;
            }
            int k = 0;
            rc = sg_js_obj_begin(js);
            while (rc == 0 && (rc = sg_js_obj_next(js, &k, &key)) == 1)
                rc = SG_JS_KEY(js, key, "data") ? sg_js_read_string(js, &audio, &has_audio) : sg_js_skip(js);
        } else {
            rc = sg_js_skip(js);
        }
    }
    *is_text = type == P_TEXT;
    if (rc < 0 || !media)
        return rc;
    sg_media_info_t info;
    if (type == P_IMAGE && (has_nested || has_url)) {
        sg_slice_t u = has_nested ? nested_url : url;
        sg_media_probe_image_url(u.base, u.len, &info);
        media->images++;
        media->images_sized += info.known;
        media->bytes += info.bytes;
        media->tokens += info.known ? sg_media_image_tokens(info.w, info.h) : 0;
    } else if (type == P_AUDIO && has_audio) {
        sg_media_probe_audio(audio.base, audio.len, &info);
        media->audios++;
        media->audios_timed += info.known;
        media->bytes += info.bytes;
        media->tokens += info.known ? sg_media_audio_tokens(info.seconds) : 0;
    }
    return rc;
}

/*
 * A message's content: a string, or an array of parts of which the {"type":"text","text":...} ones count, and
 * the image_url and input_audio ones add to media.
 */
static int scan_content(sg_js_t *js, uint64_t *words, sg_slice_t *first_text, bool *has_text, sg_oai_media_t *media)
{
    *has_text = false;
    int c = sg_js_peek(js);
    if (c == '"') {
        int rc = sg_js_string(js, first_text);
        if (rc == 0) {
            *has_text = true;
            *words += count_words(*first_text);
        }
        return rc;
    }
    if (c != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        bool is_text = false, present = false;
        sg_slice_t text;
        rc = sg_oai_scan_part(js, media, &is_text, &text, &present);
        if (rc == 0 && is_text && present) {
            *words += count_words(text);
            if (!*has_text) {
                *first_text = text;
                *has_text = true;
            }
        }
    }
    return rc;
}

/* messages: words over every message; the prompt is the last message's content. */
static int scan_messages(sg_js_t *js, sg_oai_request_t *out, bool *found)
{
    out->prompt = empty;
    out->prompt_words = 0;
    memset(&out->media, 0, sizeof out->media);
    *found = false;
    if (sg_js_peek(js) != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        *found = true;
        out->prompt = empty; /* this message is now the last one */
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        int m = 0;
        sg_slice_t key;
        uint64_t words = 0; /* a repeated "content" replaces the earlier one, words and media included */
        sg_oai_media_t media = {0};
        rc = sg_js_obj_begin(js);
        while (rc == 0 && (rc = sg_js_obj_next(js, &m, &key)) == 1) {
            if (SG_JS_KEY(js, key, "content")) {
                sg_slice_t text;
                bool has_text;
                words = 0;
                memset(&media, 0, sizeof media);
                rc = scan_content(js, &words, &text, &has_text, &media);
                out->prompt = has_text ? text : empty;
            } else {
                rc = sg_js_skip(js);
            }
        }
        out->prompt_words += words;
        out->media.images += media.images;
        out->media.audios += media.audios;
        out->media.images_sized += media.images_sized;
        out->media.audios_timed += media.audios_timed;
        out->media.bytes += media.bytes;
        out->media.tokens += media.tokens;
    }
    return rc;
}

/*
 * prompt: a string; or an array whose first element decides: strings (the first is the prompt), token ids
 * (each one counts as a word), or arrays of token ids (the first array's ids count).
 */
static int scan_prompt(sg_js_t *js, sg_oai_request_t *out, bool *found)
{
    out->prompt = empty;
    out->prompt_words = 0;
    *found = false;
    int c = sg_js_peek(js);
    if (c == '"') {
        int rc = sg_js_string(js, &out->prompt);
        *found = rc == 0;
        out->prompt_words = count_words(out->prompt);
        return rc;
    }
    if (c != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    int first = -1;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        c = sg_js_peek(js);
        if (first < 0) {
            first = c;
            *found = true;
            if (c == '"') {
                rc = sg_js_string(js, &out->prompt);
                out->prompt_words = count_words(out->prompt);
                continue;
            }
            if (c == '[') {
                int m = 0;
                rc = sg_js_arr_begin(js);
                while (rc == 0 && (rc = sg_js_arr_next(js, &m)) == 1) {
                    out->prompt_words++;
                    rc = sg_js_skip(js);
                }
                continue;
            }
        }
        if (first == '-' || (first >= '0' && first <= '9'))
            out->prompt_words++; /* a token id */
        rc = sg_js_skip(js);
    }
    return rc;
}

/* A tool's name: function.name, or the object's own name; type: the object's "type". */
static int tool_object(sg_js_t *js, sg_slice_t *name, sg_slice_t *type)
{
    int rc = sg_js_obj_begin(js), n = 0;
    sg_slice_t key, v;
    bool present;
    while (rc == 0 && (rc = sg_js_obj_next(js, &n, &key)) == 1) {
        if (SG_JS_KEY(js, key, "function") && sg_js_peek(js) == '{') {
            sg_slice_t t;
            rc = tool_object(js, name, &t);
        } else if (SG_JS_KEY(js, key, "name")) {
            rc = sg_js_read_string(js, &v, &present);
            if (present)
                *name = v;
        } else if (type && SG_JS_KEY(js, key, "type")) {
            rc = sg_js_read_string(js, &v, &present);
            if (present)
                *type = v;
        } else {
            rc = sg_js_skip(js);
        }
    }
    return rc;
}

int sg_oai_scan_tools(void *scanner, bool choice, sg_oai_tools_req_t *t)
{
    sg_js_t *js = scanner;
    int c = sg_js_peek(js);
    if (choice) {
        t->none = false;
        t->named = empty;
        if (c == '"') {
            sg_slice_t v = empty;
            int rc = sg_js_string(js, &v);
            t->none = rc == 0 && SG_JS_EQ(v, "none");
            return rc;
        }
        if (c != '{')
            return sg_js_skip(js);
        sg_slice_t type = empty;
        int rc = tool_object(js, &t->named, &type);
        t->none = SG_JS_EQ(type, "none");
        return rc;
    }
    t->n = 0;
    t->first = empty;
    if (c != '[')
        return sg_js_skip(js);
    int rc = sg_js_arr_begin(js), n = 0;
    while (rc == 0 && (rc = sg_js_arr_next(js, &n)) == 1) {
        if (sg_js_peek(js) != '{') {
            rc = sg_js_skip(js);
            continue;
        }
        sg_slice_t name = empty;
        rc = tool_object(js, &name, NULL);
        if (t->n++ == 0)
            t->first = name;
    }
    return rc;
}

int sg_oai_scan_request(sg_oai_kind_t kind, const char *json, size_t len, sg_oai_request_t *out)
{
    out->tools = (sg_oai_tools_req_t){0, empty, empty, false};
    out->model = empty;
    out->max_tokens = -1;
    out->stream = false;
    out->include_usage = false;
    out->prompt = empty;
    out->prompt_words = 0;
    memset(&out->media, 0, sizeof out->media);

    int64_t max_tokens = -1, max_completion_tokens = -1;
    bool found = false, present;
    sg_js_t js;
    sg_js_init(&js, json, len);
    int rc = sg_js_obj_begin(&js), n = 0;
    sg_slice_t key;
    while (rc == 0 && (rc = sg_js_obj_next(&js, &n, &key)) == 1) {
        if (SG_JS_KEY(&js, key, "model")) {
            rc = sg_js_read_string(&js, &out->model, &present);
            if (!present)
                out->model = empty;
        } else if (SG_JS_KEY(&js, key, "max_tokens")) {
            rc = sg_js_read_int(&js, &max_tokens, &present);
            if (!present)
                max_tokens = -1;
        } else if (SG_JS_KEY(&js, key, "max_completion_tokens")) {
            rc = sg_js_read_int(&js, &max_completion_tokens, &present);
            if (!present)
                max_completion_tokens = -1;
        } else if (SG_JS_KEY(&js, key, "stream")) {
            rc = sg_js_read_bool(&js, &out->stream);
        } else if (SG_JS_KEY(&js, key, "stream_options")) {
            out->include_usage = false;
            if (sg_js_peek(&js) != '{') {
                rc = sg_js_skip(&js);
                continue;
            }
            int m = 0;
            rc = sg_js_obj_begin(&js);
            while (rc == 0 && (rc = sg_js_obj_next(&js, &m, &key)) == 1) {
                if (SG_JS_KEY(&js, key, "include_usage"))
                    rc = sg_js_read_bool(&js, &out->include_usage);
                else
                    rc = sg_js_skip(&js);
            }
        } else if (kind == SG_OAI_CHAT && SG_JS_KEY(&js, key, "tools")) {
            rc = sg_oai_scan_tools(&js, false, &out->tools);
        } else if (kind == SG_OAI_CHAT && SG_JS_KEY(&js, key, "tool_choice")) {
            rc = sg_oai_scan_tools(&js, true, &out->tools);
        } else if (kind == SG_OAI_CHAT && SG_JS_KEY(&js, key, "messages")) {
            rc = scan_messages(&js, out, &found);
        } else if (kind == SG_OAI_COMPLETIONS && SG_JS_KEY(&js, key, "prompt")) {
            rc = scan_prompt(&js, out, &found);
        } else {
            rc = sg_js_skip(&js);
        }
    }
    if (rc < 0 || !sg_js_at_end(&js))
        return SG_EJSON;
    /* The newer name wins, as in vLLM. */
    out->max_tokens = max_completion_tokens >= 0 ? max_completion_tokens : max_tokens;
    return found ? 0 : SG_EPROTO;
}
