/*
 * Input files: see sg_input.h. Parsed with jansson once, before the run; entries keep their own copies of the
 * strings they need so the JSON trees are freed as soon as each line or element is read.
 */
#include "sg_input.h"
#include "sg_tools.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_INPUT_LENGTH 16000000u /* tokens (or words) one trace entry may ask for */
#define MAX_TIMESTAMP_MS 9e12 /* ms; in nanoseconds it still fits an int64 (epoch times included, to the year 2255) */
#define MAX_FILE_BYTES (4ULL << 30)

static const char *const format_names[] = {
    [SG_INPUT_AUTO] = "auto",
    [SG_INPUT_GENAI_PERF] = "genai_perf",
    [SG_INPUT_LLM_PERF] = "llm_perf",
    [SG_INPUT_SHAREGPT] = "sharegpt",
    [SG_INPUT_PERF_ANALYZER] = "perf_analyzer",
    [SG_INPUT_RAW_PAYLOAD] = "raw_payload",
    [SG_INPUT_MOONCAKE] = "mooncake_trace",
    [SG_INPUT_MULTI_TURN] = "multi_turn",
};

const char *sg_input_format_name(sg_input_format_t f)
{
    return (unsigned)f < SG_ARRAY_LEN(format_names) ? format_names[f] : "?";
}

const char *sg_input_format_list(void)
{
    return "genai_perf, llm_perf, sharegpt, perf_analyzer, raw_payload, mooncake_trace, multi_turn";
}

int sg_input_format_parse(const char *name, sg_input_format_t *out)
{
    for (size_t i = 0; i < SG_ARRAY_LEN(format_names); i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (sg_input_format_t)i;
            return 0;
        }
    /* spellings users bring from elsewhere */
    if (strcmp(name, "mooncake") == 0 || strcmp(name, "trace") == 0) {
        *out = SG_INPUT_MOONCAKE;
        return 0;
    }
    if (strcmp(name, "payload") == 0 || strcmp(name, "raw") == 0) {
        *out = SG_INPUT_RAW_PAYLOAD;
        return 0;
    }
    return SG_EINVAL;
}

/* ---------- messages ---------- */

typedef struct {
    const char *name;
    char *err;
    size_t errlen;
    bool jsonl; /* where is a line; else an element index */
} ctx_t;

__attribute__((format(printf, 4, 5))) static int fail_at(const ctx_t *c, uint32_t where, const char *field,
                                                         const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char loc[64];
    if (c->jsonl)
        snprintf(loc, sizeof loc, " line %" PRIu32, where);
    else
        snprintf(loc, sizeof loc, " element %" PRIu32, where);
    if (field)
        snprintf(c->err, c->errlen, "%s%s: \"%s\" %s", c->name, loc, field, msg);
    else
        snprintf(c->err, c->errlen, "%s%s: %s", c->name, loc, msg);
    return SG_EINVAL;
}

/* jansson's error text quotes the input near the error ("... near '\"x\\<newline>'"): control bytes become '?'
 * so the message stays one line. */
static const char *one_line(char *s)
{
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return s;
}

/* A short rendering of a JSON value for "got ..." */
static void show(const json_t *v, char *buf, size_t len)
{
    if (!v) {
        snprintf(buf, len, "nothing (the field is missing)");
        return;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(buf, len, "?");
        return;
    }
    if (strlen(s) > 60)
        snprintf(buf, len, "%.57s...", s);
    else
        snprintf(buf, len, "%s", s);
    free(s);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int oom(const ctx_t *c)
{
    snprintf(c->err, c->errlen, "%s: out of memory", c->name);
    return SG_ENOMEM;
}

/* ---------- field readers ---------- */

static int get_string(const ctx_t *c, uint32_t where, const json_t *o, const char *key, bool required, char **out,
                      size_t *len)
{
    *out = NULL;
    *len = 0;
    const json_t *v = json_object_get(o, key);
    if (!v && !required)
        return 0;
    if (!json_is_string(v)) {
        char got[96];
        show(v, got, sizeof got);
        return fail_at(c, where, key, "must be a string, got %s", got);
    }
    if (!(*out = dup_n(json_string_value(v), json_string_length(v))))
        return oom(c);
    *len = json_string_length(v);
    return 0;
}

/* A whole number in [min, max]; 1.0 counts as 1 (JSON writers differ), 1.5 does not. */
static int get_uint(const ctx_t *c, uint32_t where, const json_t *o, const char *key, bool required, uint64_t min,
                    uint64_t max, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v && !required)
        return 0;
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : NAN;
    if (!(d >= (double)min && d <= (double)max && d == floor(d))) {
        char got[96];
        show(v, got, sizeof got);
        if (min == 1 && !(d > (double)max))
            return fail_at(c, where, key, "must be a positive integer, got %s", got);
        return fail_at(c, where, key, "must be a whole number from %" PRIu64 " to %" PRIu64 ", got %s", min, max, got);
    }
    *out = (int64_t)d;
    return 0;
}

/* ---------- entries ---------- */

static int push(sg_input_t *in, size_t *cap, sg_input_entry_t **e)
{
    if (in->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        sg_input_entry_t *ne = realloc(in->e, ncap * sizeof *ne);
        if (!ne)
            return SG_ENOMEM;
        in->e = ne;
        *cap = ncap;
    }
    *e = &in->e[in->n++];
    memset(*e, 0, sizeof **e);
    (*e)->max_tokens = -1;
    return 0;
}

static void entry_free(sg_input_entry_t *e)
{
    for (uint32_t i = 0; i < e->n_texts; i++)
        free(e->texts[i]);
    free(e->texts);
    free(e->text_lens);
    free(e->prompt);
    free(e->body);
    free(e->model);
    free(e->reply);
    free(e->hash_ids);
    json_decref(e->tools);
    for (uint32_t i = 0; i < e->n_media; i++)
        free(e->media[i]);
    free(e->media);
    free(e->media_lens);
    free(e->media_kinds);
}

void sg_input_free(sg_input_t *in)
{
    for (size_t i = 0; i < in->n; i++)
        entry_free(&in->e[i]);
    free(in->e);
    for (size_t i = 0; i < in->n_pool; i++)
        free(in->pool[i]);
    free(in->pool);
    free(in->pool_lens);
    memset(in, 0, sizeof *in);
}

/* Append text to a growing buffer (the messages' text of a raw body). */
static bool append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 2 > *cap) {
        size_t ncap = (*len + n + 2) * 2;
        char *b = realloc(*buf, ncap);
        if (!b)
            return false;
        *buf = b;
        *cap = ncap;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return true;
}

/* The text of a message content: a string, or an array of parts whose "text" parts count. */
static bool content_text(const json_t *content, char **buf, size_t *len, size_t *cap)
{
    if (json_is_string(content)) {
        if (*len && !append(buf, len, cap, "\n", 1))
            return false;
        return append(buf, len, cap, json_string_value(content), json_string_length(content));
    }
    if (json_is_array(content)) {
        size_t i;
        const json_t *part;
        json_array_foreach(content, i, part)
        {
            const json_t *t = json_object_get(part, "text");
            if (json_is_string(t)) {
                if (*len && !append(buf, len, cap, "\n", 1))
                    return false;
                if (!append(buf, len, cap, json_string_value(t), json_string_length(t)))
                    return false;
            }
        }
    }
    return true;
}

/* A request body sent as written: its prompt text (for ISL), model and max_tokens are read from it. */
static int raw_body(const ctx_t *c, uint32_t where, const json_t *body, const char *text, size_t text_len,
                    sg_input_entry_t *e)
{
    if (!json_is_object(body)) {
        char got[96];
        show(body, got, sizeof got);
        return fail_at(c, where, NULL, "a request body must be a JSON object, got %s", got);
    }
    const json_t *messages = json_object_get(body, "messages");
    const json_t *prompt = json_object_get(body, "prompt");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (json_is_array(messages) && json_array_size(messages) > 0) {
        size_t i;
        const json_t *m;
        json_array_foreach(messages, i, m)
        {
            if (!json_is_object(m)) {
                free(buf);
                return fail_at(c, where, "messages", "must hold message objects, element %zu is not one", i);
            }
            if (!content_text(json_object_get(m, "content"), &buf, &len, &cap)) {
                free(buf);
                return oom(c);
            }
        }
    } else if (json_is_string(prompt)) {
        if (!append(&buf, &len, &cap, json_string_value(prompt), json_string_length(prompt)))
            return oom(c);
    } else if (messages) {
        return fail_at(c, where, "messages", "must be a non-empty array of messages");
    } else if (prompt) {
        return fail_at(c, where, "prompt", "must be a string (token-id prompts cannot be counted)");
    } else {
        return fail_at(c, where, NULL, "the request body has neither \"messages\" (chat) nor \"prompt\" (completions)");
    }
    e->prompt = buf ? buf : dup_n("", 0);
    e->prompt_len = len;
    if (!e->prompt)
        return oom(c);
    const json_t *model = json_object_get(body, "model");
    if (json_is_string(model) && !(e->model = dup_n(json_string_value(model), json_string_length(model))))
        return oom(c);
    const json_t *stream = json_object_get(body, "stream");
    if (stream && !json_is_boolean(stream)) {
        char got[96];
        show(stream, got, sizeof got);
        return fail_at(c, where, "stream", "must be true or false, got %s", got);
    }
    e->stream = json_is_true(stream);
    int rc = get_uint(c, where, body, "max_completion_tokens", false, 1, INT32_MAX, &e->max_tokens);
    if (rc == 0 && e->max_tokens < 0)
        rc = get_uint(c, where, body, "max_tokens", false, 1, INT32_MAX, &e->max_tokens);
    if (rc)
        return rc;
    if (text) {
        e->body = dup_n(text, text_len);
        e->body_len = text_len;
    } else {
        e->body = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
        e->body_len = e->body ? strlen(e->body) : 0;
    }
    return e->body ? 0 : oom(c);
}

/* A trace's milliseconds (0 to MAX_TIMESTAMP_MS) in nanoseconds, whole and fraction apart: ms * 1e6 as a double
 * would round an epoch time to 256 ns before the rebase to the first entry. */
static int64_t ms_to_ns(double ms)
{
    double whole = floor(ms);
    return (int64_t)whole * 1000000 + (int64_t)llround((ms - whole) * 1e6);
}

static int mooncake(const ctx_t *c, uint32_t where, const json_t *o, sg_input_entry_t *e)
{
    const json_t *ts = json_object_get(o, "timestamp");
    double ms = json_is_number(ts) ? json_number_value(ts) : NAN;
    if (!(ms >= 0 && ms <= MAX_TIMESTAMP_MS)) {
        char got[96];
        show(ts, got, sizeof got);
        return fail_at(c, where, "timestamp", "must be a number of milliseconds from 0 to %.0f, got %s",
                       MAX_TIMESTAMP_MS, got);
    }
    e->t_ns = ms_to_ns(ms);
    int64_t v = 0;
    int rc = get_uint(c, where, o, "input_length", true, 1, MAX_INPUT_LENGTH, &v);
    if (rc)
        return rc;
    e->input_length = (uint32_t)v;
    rc = get_uint(c, where, o, "output_length", false, 1, INT32_MAX, &e->max_tokens);
    if (rc)
        return rc;
    const json_t *h = json_object_get(o, "hash_ids");
    if (h && !json_is_null(h)) {
        if (!json_is_array(h)) {
            char got[96];
            show(h, got, sizeof got);
            return fail_at(c, where, "hash_ids", "must be an array of whole numbers >= 0, got %s", got);
        }
        size_t n = json_array_size(h);
        if (n && !(e->hash_ids = malloc(n * sizeof *e->hash_ids)))
            return oom(c);
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(h, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0) {
                char got[96];
                show(x, got, sizeof got);
                return fail_at(c, where, "hash_ids", "must hold whole numbers >= 0; element %zu is %s", i, got);
            }
            e->hash_ids[i] = (uint64_t)json_integer_value(x);
        }
        e->n_hash_ids = n;
    }
    return 0;
}

/*
 * A genai_perf line's prompt: GenAI-Perf's older "text_input", or "text" as GenAI-Perf and AIPerf (single_turn)
 * write their prompt files now, or AIPerf's "texts" holding one prompt. The fields those files may carry that
 * surge does not send are refused rather than dropped, so a run never measures something other than the file says.
 */
/* A list of strings into e->texts (appended). */
static int take_strings(const ctx_t *c, uint32_t line, const char *field, const json_t *list, sg_input_entry_t *e)
{
    size_t n = json_array_size(list);
    if (n > UINT32_MAX - e->n_texts)
        return fail_at(c, line, field, "too many texts");
    char **t = realloc(e->texts, (e->n_texts + n) * sizeof *t);
    if (!t)
        return oom(c);
    e->texts = t;
    size_t *l = realloc(e->text_lens, (e->n_texts + n) * sizeof *l);
    if (!l)
        return oom(c);
    e->text_lens = l;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(list, i);
        if (!json_is_string(v)) {
            char got[96];
            show(v, got, sizeof got);
            return fail_at(c, line, field, "element %zu is not a string: %s", i, got);
        }
        if (!(e->texts[e->n_texts] = dup_n(json_string_value(v), json_string_length(v))))
            return oom(c);
        e->text_lens[e->n_texts++] = json_string_length(v);
    }
    return 0;
}

/* AIPerf's rankings line: "texts": [{"name": "query", "contents": [q]}, {"name": "passages", "contents": [...]}]. */
static int named_texts(const ctx_t *c, uint32_t line, const json_t *texts, sg_input_entry_t *e)
{
    const json_t *query = NULL, *passages = NULL;
    size_t i;
    const json_t *t;
    json_array_foreach(texts, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const json_t *contents = json_object_get(t, "contents");
        if (!json_is_object(t) || !name || !json_is_array(contents)) {
            char got[96];
            show(t, got, sizeof got);
            return fail_at(c, line, "texts", "element %zu: expected {\"name\": ..., \"contents\": [...]}, got %s", i,
                           got);
        }
        if (strcmp(name, "query") == 0)
            query = contents;
        else if (strcmp(name, "passages") == 0)
            passages = contents;
        else
            return fail_at(c, line, "texts", "element %zu is named \"%s\": rankings take \"query\" and \"passages\"", i,
                           name);
    }
    if (!query || json_array_size(query) != 1 || !json_is_string(json_array_get(query, 0)))
        return fail_at(c, line, "texts", "needs a \"query\" whose contents hold one string");
    if (!passages || json_array_size(passages) == 0)
        return fail_at(c, line, "texts", "needs \"passages\" with at least one string in contents");
    const json_t *q = json_array_get(query, 0);
    if (!(e->prompt = dup_n(json_string_value(q), json_string_length(q))))
        return oom(c);
    e->prompt_len = json_string_length(q);
    return take_strings(c, line, "passages", passages, e);
}

/* One image or clip reference (a non-empty string) added to e's media. */
static int take_media(const ctx_t *c, uint32_t line, const char *field, const json_t *v, uint8_t kind,
                      sg_input_entry_t *e)
{
    if (!json_is_string(v) || json_string_length(v) == 0) {
        char got[96];
        show(v, got, sizeof got);
        return fail_at(c, line, field, "expected a path or URL (a non-empty string), got %s", got);
    }
    char **m = realloc(e->media, (e->n_media + 1) * sizeof *m);
    if (!m)
        return oom(c);
    e->media = m;
    size_t *l = realloc(e->media_lens, (e->n_media + 1) * sizeof *l);
    if (!l)
        return oom(c);
    e->media_lens = l;
    uint8_t *k = realloc(e->media_kinds, e->n_media + 1);
    if (!k)
        return oom(c);
    e->media_kinds = k;
    if (!(e->media[e->n_media] = dup_n(json_string_value(v), json_string_length(v))))
        return oom(c);
    e->media_lens[e->n_media] = json_string_length(v);
    e->media_kinds[e->n_media++] = kind;
    return 0;
}

/* GenAI-Perf's "image" (one), AIPerf's "images" (a list), and "audio" / "audios" the same way. */
static int genai_perf_media(const ctx_t *c, uint32_t line, const json_t *o, sg_input_entry_t *e)
{
    static const char *const video[] = {"video", "videos"};
    for (size_t i = 0; i < SG_ARRAY_LEN(video); i++)
        if (json_object_get(o, video[i]))
            return fail_at(c, line, video[i], "not supported: surge sends text, images and audio, not video");
    static const struct {
        const char *one, *many;
        uint8_t kind;
    } f[] = {{"image", "images", 0}, {"audio", "audios", 1}};
    for (size_t k = 0; k < SG_ARRAY_LEN(f); k++) {
        const json_t *one = json_object_get(o, f[k].one), *many = json_object_get(o, f[k].many);
        int rc = 0;
        if (one && !json_is_null(one))
            rc = take_media(c, line, f[k].one, one, f[k].kind, e);
        if (many && !json_is_null(many)) {
            if (!json_is_array(many))
                return fail_at(c, line, f[k].many, "expected a list of paths or URLs");
            size_t i;
            const json_t *v;
            json_array_foreach(many, i, v)
            {
                if (rc == 0)
                    rc = take_media(c, line, f[k].many, v, f[k].kind, e);
            }
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int genai_perf_prompt(const ctx_t *c, uint32_t line, const json_t *o, sg_input_entry_t *e)
{
    int mrc = genai_perf_media(c, line, o, e);
    if (mrc)
        return mrc;
    if (json_object_get(o, "timestamp") || json_object_get(o, "delay"))
        return fail_at(c, line, json_object_get(o, "timestamp") ? "timestamp" : "delay",
                       "per-line timing is not supported here: to replay traffic at its times, give a mooncake_trace "
                       "with --fixed-schedule");
    const char *key = json_object_get(o, "text_input") ? "text_input" : json_object_get(o, "text") ? "text" : NULL;
    if (key)
        return get_string(c, line, o, key, true, &e->prompt, &e->prompt_len);
    const json_t *texts = json_object_get(o, "texts");
    if (!texts && e->n_media) { /* images or audio alone (GenAI-Perf's image_retrieval lines): no text */
        e->prompt = dup_n("", 0);
        return e->prompt ? 0 : oom(c);
    }
    if (!texts)
        return fail_at(c, line, "text", "missing: each line needs the prompt as \"text\" (or \"text_input\")");
    if (json_is_array(texts) && json_array_size(texts) && json_is_object(json_array_get(texts, 0)))
        return named_texts(c, line, texts, e);
    char got[96];
    show(texts, got, sizeof got);
    if (!json_is_array(texts) || json_array_size(texts) == 0)
        return fail_at(c, line, "texts", "expected a non-empty list of strings (a batch), got %s", got);
    int rc = take_strings(c, line, "texts", texts, e);
    if (rc)
        return rc;
    /* the first is the prompt (one text: an ordinary prompt); a batch is for embeddings (sg_workload_build) */
    if (!(e->prompt = dup_n(e->texts[0], e->text_lens[0])))
        return oom(c);
    e->prompt_len = e->text_lens[0];
    if (e->n_texts == 1) {
        free(e->texts[0]);
        free(e->texts);
        free(e->text_lens);
        e->texts = NULL;
        e->text_lens = NULL;
        e->n_texts = 0;
    }
    return 0;
}

/* One line of a JSON-lines format. */
static int jsonl_entry(const ctx_t *c, sg_input_format_t f, uint32_t line, const json_t *o, const char *text,
                       size_t text_len, sg_input_entry_t *e)
{
    if (f == SG_INPUT_RAW_PAYLOAD)
        return raw_body(c, line, o, text, text_len, e);
    if (!json_is_object(o)) {
        char got[96];
        show(o, got, sizeof got);
        return fail_at(c, line, NULL, "expected a JSON object, got %s", got);
    }
    int rc;
    switch (f) {
    case SG_INPUT_GENAI_PERF:
        rc = genai_perf_prompt(c, line, o, e);
        if (rc == 0 && json_object_get(o, "tools")) {
            /* the line's own tools (OpenAI chat's shape), sent in its API's shape instead of --tools */
            char why[160];
            if (sg_tools_check(json_object_get(o, "tools"), why, sizeof why) < 0)
                return fail_at(c, line, "tools", "%s", why);
            e->tools = json_incref(json_object_get(o, "tools"));
        }
        if (rc == 0)
            rc = get_uint(c, line, o, "output_length", false, 1, INT32_MAX, &e->max_tokens);
        if (rc == 0 && e->max_tokens < 0)
            rc = get_uint(c, line, o, "max_tokens", false, 1, INT32_MAX, &e->max_tokens);
        return rc;
    case SG_INPUT_LLM_PERF: {
        rc = get_string(c, line, o, "input", true, &e->prompt, &e->prompt_len);
        const json_t *out = json_object_get(o, "output");
        if (rc == 0 && json_is_number(out))
            rc = get_uint(c, line, o, "output", false, 1, INT32_MAX, &e->max_tokens);
        else if (rc == 0 && out && !json_is_null(out))
            rc = get_string(c, line, o, "output", true, &e->reply, &e->reply_len);
        return rc;
    }
    case SG_INPUT_MOONCAKE:
        return mooncake(c, line, o, e);
    default:
        return fail_at(c, line, NULL, "%s is not a JSON-lines format", sg_input_format_name(f));
    }
}

static int sharegpt(const ctx_t *c, const json_t *doc, sg_input_t *in)
{
    if (!json_is_array(doc))
        return fail_at(c, 0, NULL, "a ShareGPT file is a JSON array of {\"conversations\": [...]} objects");
    size_t cap = 0, i;
    const json_t *item;
    json_array_foreach(doc, i, item)
    {
        const json_t *conv = json_object_get(item, "conversations");
        if (!json_is_array(conv)) {
            char got[96];
            show(conv, got, sizeof got);
            return fail_at(c, (uint32_t)i, "conversations", "must be an array of turns, got %s", got);
        }
        const json_t *human = NULL, *reply = NULL;
        size_t k;
        const json_t *turn;
        json_array_foreach(conv, k, turn)
        {
            const json_t *from = json_object_get(turn, "from");
            const json_t *value = json_object_get(turn, "value");
            if (!json_is_string(from) || !json_is_string(value))
                return fail_at(c, (uint32_t)i, "conversations",
                               "turn %zu must be an object with string \"from\" and \"value\"", k);
            if (!human) {
                if (strcmp(json_string_value(from), "human") == 0 || strcmp(json_string_value(from), "user") == 0)
                    human = value;
            } else {
                reply = value;
                break;
            }
        }
        if (!human || !reply) {
            in->skipped++;
            continue;
        }
        sg_input_entry_t *e;
        if (push(in, &cap, &e))
            return oom(c);
        e->where = (uint32_t)i;
        e->prompt = dup_n(json_string_value(human), json_string_length(human));
        e->prompt_len = json_string_length(human);
        e->reply = dup_n(json_string_value(reply), json_string_length(reply));
        e->reply_len = json_string_length(reply);
        if (!e->prompt || !e->reply)
            return oom(c);
    }
    return 0;
}

static int perf_analyzer(const ctx_t *c, const json_t *doc, sg_input_t *in)
{
    const json_t *data = json_object_get(doc, "data");
    if (!json_is_array(data)) {
        char got[96];
        show(data, got, sizeof got);
        snprintf(c->err, c->errlen, "%s: \"data\" must be an array of {\"payload\": [...]} objects, got %s", c->name,
                 got);
        return SG_EINVAL;
    }
    size_t cap = 0, i;
    const json_t *item;
    json_array_foreach(data, i, item)
    {
        const json_t *payload = json_object_get(item, "payload");
        if (!json_is_array(payload) || json_array_size(payload) == 0) {
            char got[96];
            show(payload, got, sizeof got);
            return fail_at(c, (uint32_t)i, "payload", "must be a non-empty array of request bodies, got %s", got);
        }
        size_t k;
        const json_t *body;
        json_array_foreach(payload, k, body)
        {
            sg_input_entry_t *e;
            if (push(in, &cap, &e))
                return oom(c);
            e->where = (uint32_t)i;
            int rc = raw_body(c, (uint32_t)i, body, NULL, 0, e);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---------- detection ---------- */

static void list_keys(const json_t *o, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    const char *key;
    const json_t *v;
    int n = 0;
    json_object_foreach((json_t *)o, key, v)
    {
        if (off + 8 >= len)
            break;
        if (n++ == 6) {
            off += (size_t)snprintf(buf + off, len - off, ", ...");
            break;
        }
        /* at most 24 bytes of the key, control bytes shown as '?': a key holding "\n" must not break the
         * message's one line */
        char k[25];
        size_t kl = 0;
        for (; key[kl] && kl < 24; kl++)
            k[kl] = (unsigned char)key[kl] < 0x20 || key[kl] == 0x7f ? '?' : key[kl];
        k[kl] = '\0';
        off += (size_t)snprintf(buf + off, len - off, "%s\"%s\"", n > 1 ? ", " : "", k);
        if (off >= len)
            break;
    }
    if (n == 0)
        snprintf(buf, len, "none");
}

static int detect_line(const ctx_t *c, const json_t *o, sg_input_format_t *f)
{
    if (json_object_get(o, "session_id") || json_object_get(o, "turns"))
        *f = SG_INPUT_MULTI_TURN;
    else if (json_object_get(o, "text_input") || json_object_get(o, "text") || json_object_get(o, "texts") ||
             json_object_get(o, "image") || json_object_get(o, "images") || json_object_get(o, "audio") ||
             json_object_get(o, "audios"))
        *f = SG_INPUT_GENAI_PERF;
    else if (json_object_get(o, "input_length") || json_object_get(o, "hash_ids"))
        *f = SG_INPUT_MOONCAKE;
    else if (json_object_get(o, "input"))
        *f = SG_INPUT_LLM_PERF;
    else if (json_object_get(o, "messages") || json_object_get(o, "prompt"))
        *f = SG_INPUT_RAW_PAYLOAD;
    else {
        char keys[256];
        list_keys(o, keys, sizeof keys);
        snprintf(c->err, c->errlen,
                 "cannot tell the format of %s: its first line is a JSON object with keys %s; expected \"text\" or "
                 "\"text_input\" (genai_perf), \"input\" (llm_perf), \"input_length\" (mooncake_trace) or "
                 "\"messages\"/\"prompt\" "
                 "(raw_payload); name it with --input-format {%s}",
                 c->name, keys, sg_input_format_list());
        return SG_EINVAL;
    }
    return 0;
}

static bool jsonl_format(sg_input_format_t f)
{
    return f == SG_INPUT_GENAI_PERF || f == SG_INPUT_LLM_PERF || f == SG_INPUT_RAW_PAYLOAD || f == SG_INPUT_MOONCAKE ||
           f == SG_INPUT_MULTI_TURN;
}

static int cmp_ts(const void *a, const void *b)
{
    const sg_input_entry_t *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return x->where < y->where ? -1 : x->where > y->where; /* stable: file order for equal times */
}

/* ---------- multi_turn (AIPerf's) ---------- */

/* A turn's text: "text", or "texts" (strings joined by newlines). */
static int turn_text(const ctx_t *c, uint32_t line, const json_t *t, sg_input_entry_t *e)
{
    static const char *const media[] = {"image", "images", "audio", "audios", "video", "videos"};
    for (size_t i = 0; i < SG_ARRAY_LEN(media); i++)
        if (json_object_get(t, media[i]))
            return fail_at(c, line, media[i],
                           "not supported in multi_turn sessions: images and audio go in single-turn genai_perf "
                           "lines");
    if (json_object_get(t, "text"))
        return get_string(c, line, t, "text", true, &e->prompt, &e->prompt_len);
    const json_t *texts = json_object_get(t, "texts");
    if (!json_is_array(texts) || json_array_size(texts) == 0)
        return fail_at(c, line, "text", "missing: each turn needs its message as \"text\" (or a \"texts\" list)");
    size_t len = 0, i;
    const json_t *v;
    json_array_foreach(texts, i, v)
    {
        if (!json_is_string(v))
            return fail_at(c, line, "texts", "must hold strings only");
        len += json_string_length(v) + 1;
    }
    if (!(e->prompt = malloc(len)))
        return oom(c);
    json_array_foreach(texts, i, v)
    {
        if (i)
            e->prompt[e->prompt_len++] = '\n';
        memcpy(e->prompt + e->prompt_len, json_string_value(v), json_string_length(v));
        e->prompt_len += json_string_length(v);
    }
    e->prompt[e->prompt_len] = '\0';
    return 0;
}

/* One turn object (or a whole line of one turn): text, optional "delay" (ms), "timestamp" (ms; replayed with
 * --fixed-schedule), "max_tokens"/"output_length". */
static int turn_entry(const ctx_t *c, uint32_t line, const json_t *t, uint32_t session, sg_input_entry_t *e)
{
    if (!json_is_object(t)) {
        char got[96];
        show(t, got, sizeof got);
        return fail_at(c, line, "turns", "must hold objects {\"text\": ..., \"delay\": ms}, got %s", got);
    }
    e->where = line;
    e->session = session;
    e->delay_ms = -1;
    e->t_ns = -1;
    int rc = turn_text(c, line, t, e);
    const json_t *d = json_object_get(t, "delay");
    if (rc == 0 && d && !json_is_null(d)) {
        if (!json_is_number(d) || !(json_number_value(d) >= 0 && json_number_value(d) <= MAX_TIMESTAMP_MS))
            return fail_at(c, line, "delay", "must be a number of milliseconds from 0 to %.0f", MAX_TIMESTAMP_MS);
        e->delay_ms = (int64_t)json_number_value(d);
    }
    const json_t *ts = json_object_get(t, "timestamp");
    if (rc == 0 && ts && !json_is_null(ts)) {
        double ms = json_is_number(ts) ? json_number_value(ts) : NAN;
        if (!(ms >= 0 && ms <= MAX_TIMESTAMP_MS))
            return fail_at(c, line, "timestamp", "must be a number of milliseconds from 0 to %.0f", MAX_TIMESTAMP_MS);
        e->t_ns = ms_to_ns(ms);
    }
    if (rc == 0)
        rc = get_uint(c, line, t, "max_tokens", false, 1, INT32_MAX, &e->max_tokens);
    if (rc == 0 && e->max_tokens < 0)
        rc = get_uint(c, line, t, "output_length", false, 1, INT32_MAX, &e->max_tokens);
    return rc;
}

/* A multi_turn line: its session (ids: session_id -> index, in the order they first appear) and its turns. */
static int multi_turn_line(const ctx_t *c, uint32_t line, const json_t *o, sg_input_t *in, size_t *cap, json_t *ids)
{
    if (!json_is_object(o))
        return fail_at(c, line, NULL, "expected a JSON object");
    const json_t *sid = json_object_get(o, "session_id");
    char key[32];
    const char *k = key;
    if (json_is_string(sid))
        k = json_string_value(sid);
    else if (json_is_integer(sid))
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(sid));
    else if (!sid) /* no id: a session of its own */
        snprintf(key, sizeof key, "\x01line %u", line);
    else
        return fail_at(c, line, "session_id", "must be a string");
    json_t *idx = json_object_get(ids, k);
    if (!idx) {
        if (json_object_set_new(ids, k, json_integer((json_int_t)in->n_sessions)) != 0)
            return oom(c);
        idx = json_object_get(ids, k);
        in->n_sessions++;
    }
    uint32_t session = (uint32_t)json_integer_value(idx);
    const json_t *turns = json_object_get(o, "turns");
    if (!turns) {
        sg_input_entry_t *e;
        return push(in, cap, &e) ? oom(c) : turn_entry(c, line, o, session, e);
    }
    if (!json_is_array(turns) || json_array_size(turns) == 0)
        return fail_at(c, line, "turns", "must be a non-empty list of {\"text\": ..., \"delay\": ms} objects");
    size_t i;
    const json_t *t;
    json_array_foreach(turns, i, t)
    {
        sg_input_entry_t *e;
        if (push(in, cap, &e))
            return oom(c);
        int rc = turn_entry(c, line, t, session, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* Group the turns by session, keeping file order within each (a counting sort: stable). */
static int group_sessions(const ctx_t *c, sg_input_t *in)
{
    size_t *start = calloc(in->n_sessions + 1, sizeof *start);
    sg_input_entry_t *out = malloc((in->n ? in->n : 1) * sizeof *out);
    if (!start || !out) {
        free(start);
        free(out);
        return oom(c);
    }
    for (size_t i = 0; i < in->n; i++)
        start[in->e[i].session + 1]++;
    for (size_t s = 0; s < in->n_sessions; s++)
        start[s + 1] += start[s];
    for (size_t i = 0; i < in->n; i++)
        out[start[in->e[i].session]++] = in->e[i];
    free(start);
    free(in->e);
    in->e = out;
    return 0;
}

static int parse_jsonl(const ctx_t *c, const char *data, size_t len, sg_input_format_t f, sg_input_t *in)
{
    size_t cap = 0;
    uint32_t line = 0;
    size_t pos = 0;
    json_t *ids = NULL; /* multi_turn: session_id -> session index */
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        line++;
        const char *s = data + pos;
        size_t n = end - pos;
        pos = end + 1;
        if (line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
            s += 3;
            n -= 3;
        }
        while (n && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r')) {
            s++;
            n--;
        }
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        json_error_t je;
        json_t *o = json_loadb(s, n, JSON_DECODE_ANY | JSON_PRESERVE_ORDER | JSON_ALLOW_NUL, &je);
        if (!o) {
            json_decref(ids);
            return fail_at(c, line, NULL, "not valid JSON: %s (column %d)", one_line(je.text), je.column);
        }
        if (f == SG_INPUT_AUTO) {
            int rc = json_is_object(o) ? detect_line(c, o, &f) : fail_at(c, line, NULL, "expected a JSON object");
            if (rc) {
                json_decref(o);
                return rc;
            }
            in->format = f;
        }
        if (f == SG_INPUT_MULTI_TURN) {
            int rc = ids || (ids = json_object()) ? multi_turn_line(c, line, o, in, &cap, ids) : oom(c);
            json_decref(o);
            if (rc) {
                json_decref(ids);
                return rc;
            }
            continue;
        }
        sg_input_entry_t *e;
        if (push(in, &cap, &e)) {
            json_decref(o);
            return oom(c);
        }
        e->where = line;
        int rc = jsonl_entry(c, f, line, o, s, n, e);
        json_decref(o);
        if (rc)
            return rc;
    }
    json_decref(ids);
    if (in->format == SG_INPUT_MULTI_TURN && in->n) {
        int rc = group_sessions(c, in);
        if (rc)
            return rc;
    }
    if (in->format == SG_INPUT_MOONCAKE && in->n) {
        qsort(in->e, in->n, sizeof *in->e, cmp_ts);
        int64_t t0 = in->e[0].t_ns;
        for (size_t i = 0; i < in->n; i++)
            in->e[i].t_ns -= t0;
    }
    return 0;
}

int sg_input_parse(const char *name, const char *data, size_t len, sg_input_format_t fmt, sg_input_t *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    ctx_t c = {.name = name, .err = err, .errlen = errlen, .jsonl = true};
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len) {
        snprintf(err, errlen, "%s: the file is empty", name);
        return SG_EINVAL;
    }
    int rc;
    json_t *doc = NULL;
    if (fmt == SG_INPUT_AUTO && data[i] != '{' && data[i] != '[') {
        snprintf(err, errlen,
                 "cannot tell the format of %s: it starts with '%c', not with '{' (JSON lines, or a perf_analyzer "
                 "document) or '[' (ShareGPT)",
                 name, data[i] >= 0x20 && data[i] < 0x7f ? data[i] : '?');
        return SG_EINVAL;
    }
    if (fmt == SG_INPUT_AUTO || !jsonl_format(fmt)) {
        /* a whole JSON document: ShareGPT, perf_analyzer (or one JSON line, which is detected below) */
        json_error_t je;
        doc = json_loadb(data, len, JSON_PRESERVE_ORDER | JSON_ALLOW_NUL, &je);
        if (fmt == SG_INPUT_AUTO && doc) {
            if (json_is_array(doc))
                fmt = SG_INPUT_SHAREGPT;
            else if (json_object_get(doc, "data"))
                fmt = SG_INPUT_PERF_ANALYZER;
        }
        if (fmt == SG_INPUT_AUTO && data[i] == '[') {
            snprintf(err, errlen, "%s: starts with '[' (a ShareGPT JSON array) but is not valid JSON: %s (line %d)",
                     name, one_line(je.text), je.line);
            json_decref(doc);
            return SG_EINVAL;
        }
        if (!jsonl_format(fmt) && fmt != SG_INPUT_AUTO && !doc) {
            snprintf(err, errlen, "%s: not valid JSON: %s (line %d, column %d)", name, one_line(je.text), je.line,
                     je.column);
            return SG_EINVAL;
        }
    }
    out->format = fmt;
    c.jsonl = false;
    if (fmt == SG_INPUT_SHAREGPT)
        rc = sharegpt(&c, doc, out);
    else if (fmt == SG_INPUT_PERF_ANALYZER)
        rc = json_is_object(doc) ? perf_analyzer(&c, doc, out)
                                 : (snprintf(err, errlen,
                                             "%s: a perf_analyzer input file is a JSON object "
                                             "{\"data\": [...]}",
                                             name),
                                    SG_EINVAL);
    else {
        c.jsonl = true;
        rc = parse_jsonl(&c, data, len, fmt, out);
    }
    json_decref(doc);
    if (rc == 0 && out->n == 0) {
        if (out->skipped)
            snprintf(err, errlen, "%s: none of its %zu conversations has a human turn followed by a reply", name,
                     out->skipped);
        else
            snprintf(err, errlen, "%s: holds no entries", name);
        rc = SG_EINVAL;
    }
    if (rc)
        sg_input_free(out);
    return rc;
}

static int load_file(const char *path, sg_input_format_t fmt, sg_input_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return SG_EINVAL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 1 << 16;
            if (ncap > MAX_FILE_BYTES) {
                snprintf(err, errlen, "%s: larger than %llu bytes", path, (unsigned long long)MAX_FILE_BYTES);
                free(buf);
                fclose(f);
                return SG_EINVAL;
            }
            char *b = realloc(buf, ncap);
            if (!b) {
                snprintf(err, errlen, "%s: out of memory reading it", path);
                free(buf);
                fclose(f);
                return SG_ENOMEM;
            }
            buf = b;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    bool bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "reading %s: %s", path, strerror(e));
        free(buf);
        return SG_EINVAL;
    }
    int rc = sg_input_parse(path, buf ? buf : "", len, fmt, out, err, errlen);
    free(buf);
    return rc;
}

/* GenAI-Perf's rankings directory: queries.jsonl are the entries, passages.jsonl the pool they draw from. */
static int load_rankings_dir(const char *dir, sg_input_t *out, char *err, size_t errlen)
{
    char qpath[4096], ppath[4096];
    snprintf(qpath, sizeof qpath, "%s/queries.jsonl", dir);
    snprintf(ppath, sizeof ppath, "%s/passages.jsonl", dir);
    if (access(qpath, R_OK) != 0 || access(ppath, R_OK) != 0) {
        snprintf(err, errlen,
                 "%s is a directory: as rankings input it holds queries.jsonl and passages.jsonl (GenAI-Perf's "
                 "layout), one {\"text\": ...} a line; %s is missing",
                 dir, access(qpath, R_OK) != 0 ? "queries.jsonl" : "passages.jsonl");
        return SG_EINVAL;
    }
    int rc = load_file(qpath, SG_INPUT_GENAI_PERF, out, err, errlen);
    if (rc)
        return rc;
    sg_input_t passages;
    rc = load_file(ppath, SG_INPUT_GENAI_PERF, &passages, err, errlen);
    if (rc) {
        sg_input_free(out);
        return rc;
    }
    out->pool = calloc(passages.n, sizeof *out->pool);
    out->pool_lens = calloc(passages.n, sizeof *out->pool_lens);
    if (!out->pool || !out->pool_lens) {
        sg_input_free(&passages);
        sg_input_free(out);
        snprintf(err, errlen, "%s: out of memory", ppath);
        return SG_ENOMEM;
    }
    for (size_t i = 0; i < passages.n; i++) {
        out->pool[i] = passages.e[i].prompt; /* moved */
        out->pool_lens[i] = passages.e[i].prompt_len;
        passages.e[i].prompt = NULL;
    }
    out->n_pool = passages.n;
    sg_input_free(&passages);
    return 0;
}

int sg_input_load(const char *path, sg_input_format_t fmt, sg_input_t *out, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        memset(out, 0, sizeof *out);
        if (fmt != SG_INPUT_AUTO && fmt != SG_INPUT_GENAI_PERF) {
            snprintf(err, errlen,
                     "%s is a directory: only GenAI-Perf's rankings layout (queries.jsonl, passages.jsonl) "
                     "is read from one, not %s",
                     path, sg_input_format_name(fmt));
            return SG_EINVAL;
        }
        return load_rankings_dir(path, out, err, errlen);
    }
    return load_file(path, fmt, out, err, errlen);
}
