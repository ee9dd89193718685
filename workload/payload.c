/*
 * The payload table: every request of the run rendered once, before the first send, into the exact bytes that
 * go on the wire. Bodies are built with jansson (correct escaping of model names and extra inputs matters more
 * than speed here, and this runs once per prompt, not per request).
 */
#define _GNU_SOURCE /* memmem */
#include "sg_workload.h"

#include "sg_h1.h"
#include "sg_input.h"
#include "sg_textgen.h"
#include "sg_tools.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * One random stream per purpose, so that changing one knob (say --output-tokens-stddev) leaves the other draws,
 * and so the prompt texts, as they were. The constants keep these streams apart from the scheduler's, which
 * are numbered by worker.
 */
#define STREAM_BASE 0x776f726b6c6f6164ULL /* "workload" */
#define STREAM_ISL (STREAM_BASE + 1)
#define STREAM_OSL (STREAM_BASE + 2)
#define STREAM_MODEL (STREAM_BASE + 3)
#define STREAM_TEXT (STREAM_BASE + 4)
#define STREAM_PREFIX (STREAM_BASE + 5)
#define STREAM_RANKINGS (STREAM_BASE + 6)
#define STREAM_MEDIA (STREAM_BASE + 7)

#define MAX_ISL_WORDS 16000000.0 /* a sane allocation even when a large stddev draws far out */
#define MAX_BATCH_TEXTS 65536.0  /* passages in one synthetic rankings request (--batch-size's cap too) */

__attribute__((format(printf, 3, 4))) static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return SG_EINVAL;
}

/* max(1, round(N(mean, stddev))), capped */
static uint32_t draw_length(sg_rng_t *rng, double mean, double stddev, double cap)
{
    double v = round(mean + stddev * sg_rng_normal(rng));
    if (!(v >= 1.0))
        return 1;
    if (v > cap)
        v = cap;
    return (uint32_t)v;
}

/* One text of a request: a prompt, an input, a query or a passage. */
typedef struct {
    const char *s;
    size_t len;
} text_t;

/* A JSON array of texts as strings (json_stringn: prompts from files may hold any character, NUL included), or
 * of {"text": ...} objects. */
static json_t *text_array(const text_t *t, size_t n, bool objects)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *v = json_stringn(t[i].s, t[i].len);
        if (v && objects)
            v = json_pack("{s:o}", "text", v);
        if (!v || json_array_append_new(a, v) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/*
 * Media text goes into the body after it is dumped: base64 (plain items) needs no JSON escape, and jansson's
 * UTF-8 check and escape scan of megabytes of it took half the time to build a table of images. The body holds
 * a placeholder per item, which must then occur exactly once (else the body is built again with the text in it).
 */
#define MEDIA_MARK "@@surge-media-%u@@"

static json_t *media_string(const sg_media_item_t *it, uint32_t k, bool marks)
{
    if (!marks || !it->plain)
        return json_stringn(it->text, it->len);
    char mark[40];
    snprintf(mark, sizeof mark, MEDIA_MARK, k);
    return json_string(mark);
}

/*
 * A chat message's content with images and audio: the text part first (so the prompt, and a --cache-bust slot,
 * come before any base64), then the images as image_url parts (data URLs, or URLs), then the clips as
 * input_audio parts. Takes text.
 */
static json_t *media_content(json_t *text, const sg_media_item_t *media, uint32_t n_media, bool marks)
{
    json_t *a = json_pack("[{s:s, s:o}]", "type", "text", "text", text);
    for (int kind = SG_MEDIA_IMAGE; a && kind <= SG_MEDIA_AUDIO; kind++)
        for (uint32_t i = 0; a && i < n_media; i++) {
            const sg_media_item_t *it = &media[i];
            if (it->kind != kind)
                continue;
            json_t *v = media_string(it, i, marks);
            json_t *part = kind == SG_MEDIA_IMAGE
                               ? json_pack("{s:s, s:{s:o*}}", "type", "image_url", "image_url", "url", v)
                               : json_pack("{s:s, s:{s:o*, s:s}}", "type", "input_audio", "input_audio", "data", v,
                                           "format", it->fmt);
            if (!part || json_array_append_new(a, part) != 0) {
                json_decref(a);
                a = NULL;
            }
        }
    return a;
}

/* image_retrieval's inputs (GenAI-Perf's shape): {"type": "image_url", "url": U} per image. */
static json_t *image_inputs(const sg_media_item_t *media, uint32_t n_media, bool marks)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n_media; i++) {
        if (media[i].kind != SG_MEDIA_IMAGE)
            continue;
        json_t *v = json_pack("{s:s, s:o*}", "type", "image_url", "url", media_string(&media[i], i, marks));
        if (!v || json_array_append_new(a, v) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/*
 * The body of one request in the endpoint type's shape (docs/endpoints.md). texts[0] is the prompt, the
 * embeddings' first input or the rankings' query; embeddings take every text as an input, rankings texts[1..]
 * as passages. Chat carries media (images, clips) as content parts; image_retrieval carries only its images.
 */
static json_t *make_body(const sg_workload_spec_t *spec, const char *model, const text_t *texts, size_t n_texts,
                         uint32_t max_tokens, const sg_media_item_t *media, uint32_t n_media, bool marks)
{
    if (spec->kind == SG_OAI_IMAGE_RETRIEVAL) /* GenAI-Perf sends no model, no text: the images */
        return json_pack("{s:o*}", "input", image_inputs(media, n_media, marks));
    json_t *text = json_stringn(texts[0].s, texts[0].len);
    if (!text)
        return NULL;
    json_t *body = NULL;
    bool stream = spec->streaming;
    switch (spec->kind) {
    case SG_OAI_CHAT:
        if (n_media) {
            json_t *content = media_content(text, media, n_media, marks);
            body = json_pack("{s:s, s:[{s:s, s:o*}], s:b}", "model", model, "messages", "role", "user", "content",
                             content, "stream", (int)stream);
            break;
        }
        body = json_pack("{s:s, s:[{s:s, s:o}], s:b}", "model", model, "messages", "role", "user", "content", text,
                         "stream", (int)stream);
        break;
    case SG_OAI_COMPLETIONS:
        body = json_pack("{s:s, s:o, s:b}", "model", model, "prompt", text, "stream", (int)stream);
        break;
    case SG_OAI_EMBEDDINGS:
        json_decref(text);
        return json_pack("{s:s, s:o*}", "model", model, "input", text_array(texts, n_texts, false));
    case SG_OAI_RANK_NIM:
        return json_pack("{s:s, s:{s:o}, s:o*}", "model", model, "query", "text", text, "passages",
                         text_array(texts + 1, n_texts - 1, true));
    case SG_OAI_RANK_TEI:
        /* TEI serves one model and takes no model member */
        return json_pack("{s:o, s:o*}", "query", text, "texts", text_array(texts + 1, n_texts - 1, false));
    case SG_OAI_RANK_COHERE:
        return json_pack("{s:s, s:o, s:o*}", "model", model, "query", text, "documents",
                         text_array(texts + 1, n_texts - 1, false));
    case SG_OAI_RESPONSES:
        body = json_pack("{s:s, s:[{s:s, s:o}], s:b}", "model", model, "input", "role", "user", "content", text,
                         "stream", (int)stream);
        if (body && max_tokens && json_object_set_new(body, "max_output_tokens", json_integer(max_tokens)) != 0) {
            json_decref(body);
            return NULL;
        }
        return body;
    case SG_OAI_MESSAGES:
        /* max_tokens is required by the Messages API */
        return json_pack("{s:s, s:I, s:[{s:s, s:o}], s:b}", "model", model, "max_tokens",
                         (json_int_t)(max_tokens ? max_tokens : SG_MESSAGES_MAX_TOKENS), "messages", "role", "user",
                         "content", text, "stream", (int)stream);
    case SG_OAI_GENERATE: {
        /* details: generated_tokens, the output length (TGI's usage) */
        json_t *params = json_pack("{s:b}", "details", 1);
        if (params && max_tokens && json_object_set_new(params, "max_new_tokens", json_integer(max_tokens)) != 0) {
            json_decref(params);
            params = NULL;
        }
        return json_pack("{s:o, s:o*}", "inputs", text, "parameters", params);
    }
    default:
        json_decref(text);
        return NULL;
    }
    if (!body)
        return NULL;
    int rc = 0;
    if (max_tokens)
        rc |= json_object_set_new(body, "max_tokens", json_integer(max_tokens));
    /* usage in the last chunk gives the server's token counts (OSL source "usage") */
    if (stream)
        rc |= json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
    if (rc) {
        json_decref(body);
        return NULL;
    }
    return body;
}

static int render_http(const sg_workload_spec_t *spec, const char *body, size_t body_len, sg_payload_t *p, char *err,
                       size_t errlen)
{
    sg_h1_req_spec_t req = {
        .method = "POST",
        .host = spec->host_header,
        .path = spec->path,
        .headers = spec->headers,
        .content_type = "application/json",
        .accept = spec->streaming ? "text/event-stream" : "application/json",
        .body = body,
        .body_len = body_len,
    };
    ssize_t n = sg_h1_write_request(&req, &p->bytes);
    if (n == SG_ENOMEM)
        return SG_ENOMEM;
    if (n < 0)
        return set_err(err, errlen, "cannot render the HTTP request (path \"%s\" or a header is malformed): %s",
                       spec->path, sg_strerror((int)n));
    p->len = (size_t)n;
    return 0;
}

/*
 * The dumped body with each plain item's placeholder replaced by its text (malloc'd, *len), or NULL with *len 0
 * when a placeholder does not occur exactly once (a prompt or --extra-inputs spelling one: the caller builds the
 * body again with the text in it), or NULL with *len 1 when memory ran out.
 */
static char *media_splice(const char *text, const sg_media_item_t *media, uint32_t n_media, size_t *len)
{
    size_t tl = strlen(text), out_len = tl;
    const char **at = calloc(n_media, sizeof *at);
    size_t *ml = calloc(n_media, sizeof *ml);
    char *out = NULL;
    *len = 1;
    if (!at || !ml)
        goto done;
    *len = 0;
    for (uint32_t k = 0; k < n_media; k++) {
        if (!media[k].plain)
            continue;
        char mark[40];
        ml[k] = (size_t)snprintf(mark, sizeof mark, MEDIA_MARK, k);
        at[k] = strstr(text, mark);
        if (!at[k] || strstr(at[k] + 1, mark))
            goto done;
        out_len += media[k].len - ml[k];
    }
    if (!(out = malloc(out_len + 1))) {
        *len = 1;
        goto done;
    }
    /* copy in text order: the placeholders, sorted by where they are */
    size_t o = 0;
    const char *from = text;
    for (;;) {
        uint32_t next = n_media;
        for (uint32_t k = 0; k < n_media; k++)
            if (at[k] && at[k] >= from && (next == n_media || at[k] < at[next]))
                next = k;
        if (next == n_media)
            break;
        memcpy(out + o, from, (size_t)(at[next] - from));
        o += (size_t)(at[next] - from);
        memcpy(out + o, media[next].text, media[next].len);
        o += media[next].len;
        from = at[next] + ml[next];
    }
    memcpy(out + o, from, tl - (size_t)(from - text));
    o += tl - (size_t)(from - text);
    out[o] = '\0';
    *len = o;
done:
    free(at);
    free(ml);
    return out;
}

/* One request with our body around its texts (and media), for model p->model; tools (an input line's, else
 * --tools) or NULL. */
static int build_one(const sg_workload_spec_t *spec, const json_t *extra, const json_t *tools, const text_t *texts,
                     size_t n_texts, const sg_media_item_t *media, uint32_t n_media, sg_payload_t *p, char *err,
                     size_t errlen)
{
    if (spec->grpc)
        return sg_payload_render_grpc(spec, extra, texts[0].s, texts[0].len, p, err, errlen);
    const char *model = spec->models[p->model];
    bool marks = false;
    for (uint32_t k = 0; k < n_media; k++)
        marks |= media[k].plain;
    for (;;) {
        json_t *body = make_body(spec, model, texts, n_texts, p->max_tokens, media, n_media, marks);
        if (!body)
            return set_err(err, errlen, "cannot build the request body for model \"%s\" (not valid UTF-8?)", model);
        if (tools && sg_tools_apply(body, spec->kind, tools, spec->tool_choice) != 0) {
            json_decref(body);
            return set_err(err, errlen, "tools apply to the chat, responses and messages endpoint types, not %s",
                           sg_endpoint(spec->kind)->name);
        }
        /* extra inputs go last so that the user can override anything we set, as with GenAI-Perf */
        if (extra && json_object_update(body, (json_t *)extra) != 0) {
            json_decref(body);
            return SG_ENOMEM;
        }
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text)
            return SG_ENOMEM;
        size_t len = strlen(text);
        if (marks) {
            char *spliced = media_splice(text, media, n_media, &len);
            free(text);
            if (!spliced && len)
                return SG_ENOMEM;
            if (!spliced) { /* a placeholder spelled elsewhere too: the slow way, the text in the JSON */
                marks = false;
                continue;
            }
            text = spliced;
        }
        int rc = render_http(spec, text, len, p, err, errlen);
        free(text);
        return rc;
    }
}

const char *sg_payload_body(const sg_payload_t *p, size_t *len)
{
    /* Our heads hold no blank line before their end (sg_h1_write_request refuses CR and LF in values). */
    const char *end = memmem(p->bytes, p->len, "\r\n\r\n", 4);
    if (!end) {
        *len = 0;
        return NULL;
    }
    end += 4;
    *len = p->len - (size_t)(end - p->bytes);
    return end;
}

const sg_payload_t *sg_payload_pick(const sg_payload_table_t *t, uint64_t id, int model_strategy, uint64_t seed,
                                    uint32_t *index)
{
    uint64_t entry = id % t->n_entries;
    uint64_t variant;
    if (t->n_variants <= 1) {
        variant = 0;
    } else if (model_strategy == 1) {
        sg_rng_t r;
        sg_rng_seed(&r, seed ^ id, STREAM_MODEL);
        variant = sg_rng_next(&r) % t->n_variants;
    } else {
        variant = id % t->n_variants;
    }
    uint64_t i = entry * t->n_variants + variant;
    if (index)
        *index = (uint32_t)i;
    return &t->items[i];
}

/* ---------- text sources ---------- */

/* Distinct starting offsets for prompts: a stride coprime with the corpus length visits every offset once. */
static uint64_t pick_stride(uint64_t n)
{
    uint64_t s = n * 5 / 8 + 1;
    for (;; s++) {
        uint64_t a = s, b = n;
        while (b) {
            uint64_t t = a % b;
            a = b;
            b = t;
        }
        if (a == 1)
            return s;
    }
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* a + (space when neither side has one) + b, malloc'd */
static char *join(const char *a, size_t al, const char *b, size_t bl, size_t *out_len)
{
    bool sep = al && bl && !isspace((unsigned char)a[al - 1]) && !isspace((unsigned char)b[0]);
    char *s = malloc(al + bl + 2);
    if (!s)
        return NULL;
    memcpy(s, a, al);
    if (sep)
        s[al] = ' ';
    memcpy(s + al + sep, b, bl);
    *out_len = al + bl + sep;
    s[*out_len] = '\0';
    return s;
}

static int fit_err(int rc, char *err, size_t errlen, const char *what, uint32_t target)
{
    if (rc == SG_ENOMEM)
        return set_err(err, errlen, "out of memory building %s", what), SG_ENOMEM;
    return set_err(err, errlen, "cannot build %s of exactly %" PRIu32 " tokens: %s", what, target,
                   rc == SG_EABORT ? "no window of the built-in text re-encodes to that count" : sg_strerror(rc));
}

/* An entry before it is rendered once per model. */
typedef struct {
    char *text; /* the prompt (owned), or NULL with raw */
    size_t len;
    const char *raw; /* a request body sent as written (not owned) */
    size_t raw_len;
    uint32_t isl;
    uint32_t max_tokens;
    int32_t model;       /* raw bodies: the model index, fixed; -1: one variant per model */
    bool stream;         /* raw bodies: their own "stream"; else --streaming */
    text_t *batch;       /* embeddings and rankings: every text of the request (owned), text unused; NULL otherwise */
    const json_t *tools; /* an input line's own tools (not owned), or NULL: --tools */
    uint32_t n_batch;
    uint8_t uniq_words;     /* --cache-bust: the words of the per-request slot the text starts with; 0 for none */
    sg_media_item_t *media; /* images and clips (owned), n_media of them */
    uint32_t n_media;
} entry_t;

static void entry_free(entry_t *e)
{
    for (uint32_t k = 0; k < e->n_media; k++)
        sg_media_item_free(&e->media[k]);
    free(e->media);
    free(e->text);
    for (uint32_t k = 0; k < e->n_batch; k++)
        free((char *)e->batch[k].s);
    free(e->batch);
}

/*
 * The table's model names: -m's, then each distinct model a raw body names, found through a jansson object used
 * as a hash map (name -> index), so a file of a million bodies and thousands of models stays linear.
 */
typedef struct {
    char **v;
    size_t n, cap;
    json_t *index;
} names_t;

static void names_free(names_t *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->v[i]);
    free(nm->v);
    json_decref(nm->index);
    memset(nm, 0, sizeof *nm);
}

/* Append name (-m's are kept in order, a repeated one too); the first of a name is the one a lookup finds. */
static int names_push(names_t *nm, const char *name)
{
    if (nm->n == nm->cap) {
        size_t ncap = nm->cap ? nm->cap * 2 : 8;
        char **nv = realloc(nm->v, ncap * sizeof *nv);
        if (!nv)
            return SG_ENOMEM;
        nm->v = nv;
        nm->cap = ncap;
    }
    if (!(nm->v[nm->n] = strdup(name)))
        return SG_ENOMEM;
    /* jansson refuses a key that is not UTF-8: such a name is kept, only not found by a body */
    if (!json_object_get(nm->index, name))
        json_object_set_new(nm->index, name, json_integer((json_int_t)nm->n));
    nm->n++;
    return 0;
}

/* The index of name, added when new; -1 on OOM. */
static int64_t names_index(names_t *nm, const char *name)
{
    const json_t *hit = json_object_get(nm->index, name);
    if (hit)
        return json_integer_value(hit);
    return names_push(nm, name) == 0 ? (int64_t)nm->n - 1 : -1;
}

typedef struct {
    const sg_workload_spec_t *spec;
    sg_textgen_t *gen;
    uint64_t stride, base;
    char **prefixes;
    size_t *prefix_lens;
    sg_rng_t isl_rng, osl_rng, prefix_rng, text_rng;
    sg_rng_t rank_rng;   /* synthetic rankings' lengths, part by part */
    uint64_t rank_texts; /* synthetic rankings' texts made so far: each its own corpus offset */
    /* trace blocks: hash id -> text of block_size tokens, open addressing */
    uint64_t *bkeys;
    char **btext;
    size_t *blen;
    size_t bcap, bn;
    /* --cache-bust: the slot's alphabet and its width (owned until handed to the table) */
    sg_uniq_alpha_t uniq;
    sg_rng_t media_rng; /* synthetic images and clips: sizes, lengths, formats, pixels and samples */
} gen_t;

/* Requests a slot of full width keeps apart (uniq.n ^ digits at least this): days at any rate we know of. */
#define UNIQ_SPAN 1e10

/* The slot text of `words` words for counter c (the template the table holds is counter 0). */
static size_t uniq_fill(const sg_uniq_alpha_t *a, uint32_t words, uint64_t c, char *out)
{
    size_t o = 0;
    for (uint32_t k = 0; k < words; k++) {
        if (k)
            out[o++] = ' ';
        memcpy(out + o, a->words + (size_t)(c % a->n) * a->width, a->width);
        o += a->width;
        c /= a->n;
    }
    return o;
}

void sg_payload_uniq(const sg_payload_table_t *t, const sg_payload_t *p, uint64_t counter, char *out)
{
    uniq_fill(&t->uniq, p->uniq_words, counter, out);
}

/*
 * The slot's alphabet: the built-in words of one length (the length with the most usable words), each a single
 * token alone and after a space under the tokenizer (any word without one: then words are what ISL counts). A
 * fixed width keeps every request's bytes, and Content-Length, those of the table's template.
 */
static int uniq_alphabet(gen_t *G, char *err, size_t errlen)
{
    size_t nv = sg_vocab_size();
    bool *ok = calloc(nv, sizeof *ok);
    if (!ok)
        return SG_ENOMEM;
    uint32_t per_len[16] = {0};
    for (size_t i = 0; i < nv; i++) {
        const char *w = sg_vocab_word(i);
        size_t wl = strlen(w);
        if (wl < 2 || wl > 8)
            continue;
        bool good = true;
        if (G->spec->tok) {
            char two[32];
            int tl = snprintf(two, sizeof two, "%s %s", w, w);
            good = sg_textgen_count(G->gen, w, wl) == 1 && sg_textgen_count(G->gen, two, (size_t)tl) == 2;
        }
        ok[i] = good;
        per_len[wl] += good;
    }
    uint32_t width = 0;
    for (uint32_t l = 2; l <= 8; l++)
        if (per_len[l] > per_len[width])
            width = l;
    if (per_len[width] < 16) {
        free(ok);
        return set_err(err, errlen,
                       "--cache-bust first_turn_prefix: the tokenizer encodes too few of surge's words as one token "
                       "(%" PRIu32 " of one length) to spell a per-request prefix of exact length; use --cache-bust "
                       "none",
                       per_len[width]);
    }
    G->uniq.width = width;
    G->uniq.words = malloc((size_t)per_len[width] * width);
    if (!G->uniq.words) {
        free(ok);
        return SG_ENOMEM;
    }
    for (size_t i = 0; i < nv; i++)
        if (ok[i] && strlen(sg_vocab_word(i)) == width)
            memcpy(G->uniq.words + (size_t)G->uniq.n++ * width, sg_vocab_word(i), width);
    free(ok);
    double span = 1;
    G->uniq.digits = 0;
    while (span < UNIQ_SPAN && G->uniq.digits < SG_UNIQ_WORDS_MAX) {
        span *= G->uniq.n;
        G->uniq.digits++;
    }
    return 0;
}

/*
 * With a tokenizer the fit counted the template (counter 0); the count of other fillings rests on every slot word
 * being one token that merges with nothing around it. Two other fillings (every digit the last word; digits that
 * vary) are counted again so a tokenizer that breaks that fails here, before the run, not in the ISL.
 */
static int uniq_check(gen_t *G, const entry_t *e, uint32_t target, char *err, size_t errlen)
{
    if (!G->spec->tok || !e->uniq_words)
        return 0;
    char *t = malloc(e->len + 1);
    if (!t)
        return SG_ENOMEM;
    memcpy(t, e->text, e->len);
    uint64_t all_last = 0; /* every digit n - 1 */
    for (uint32_t d = 0; d < e->uniq_words; d++)
        all_last = all_last * G->uniq.n + (G->uniq.n - 1);
    const uint64_t patterns[2] = {all_last, 0x9e3779b97f4a7c15ULL};
    for (int k = 0; k < 2; k++) {
        uniq_fill(&G->uniq, e->uniq_words, patterns[k], t);
        ssize_t n = sg_textgen_count(G->gen, t, e->len);
        if (n != (ssize_t)target) {
            free(t);
            return set_err(err, errlen,
                           "--cache-bust first_turn_prefix: a prompt of %" PRIu32 " tokens counts %zd with another "
                           "per-request prefix under this tokenizer, so ISL would not stay exact; use --cache-bust "
                           "none",
                           target, n);
        }
    }
    free(t);
    return 0;
}

static uint32_t draw_osl(gen_t *G)
{
    const sg_workload_spec_t *spec = G->spec;
    return spec->osl_mean < 0 ? 0 : draw_length(&G->osl_rng, spec->osl_mean, spec->osl_stddev, INT32_MAX);
}

/* Prompt i's text of e->isl tokens (words without a tokenizer), after a shared prefix when there are some. */
static int synthetic_text(gen_t *G, uint32_t i, entry_t *e, char *err, size_t errlen)
{
    const sg_workload_spec_t *spec = G->spec;
    e->model = -1;
    const char *head = "";
    size_t head_len = 0;
    uint32_t pre = 0;
    if (spec->num_prefix) {
        uint64_t j = sg_rng_next(&G->prefix_rng) % spec->num_prefix; /* as AIPerf: a random prefix per prompt */
        head = G->prefixes[j];
        head_len = G->prefix_lens[j];
        pre = spec->prefix_len;
    }
    /* --cache-bust: the prompt starts with the slot (here its template, counter 0), inside the ISL */
    char slot[SG_UNIQ_MAX + 1];
    if (G->uniq.n) {
        e->uniq_words = (uint8_t)(e->isl < G->uniq.digits ? e->isl : G->uniq.digits);
        size_t sl = uniq_fill(&G->uniq, e->uniq_words, 0, slot);
        slot[sl] = '\0';
        head = slot;
        head_len = sl;
    }
    if (!spec->tok) {
        /* words: today's vocabulary prompts, after the prefix (or the slot) */
        char *body = e->isl > e->uniq_words ? sg_synth_prompt(&G->text_rng, e->isl - e->uniq_words, i) : strdup("");
        if (!body)
            return SG_ENOMEM;
        e->text = join(head, head_len, body, strlen(body), &e->len);
        free(body);
        e->isl += pre;
        return e->text ? 0 : SG_ENOMEM;
    }
    /* tokens: a window of the corpus at this prompt's own offset; past one prompt per corpus id the offsets
     * repeat, and a leading number keeps the prompts apart */
    size_t L = sg_textgen_corpus_ids(G->gen);
    uint64_t off = (G->base + (uint64_t)i * G->stride) % L;
    char *marked = NULL;
    if (i >= L && e->isl > 8) {
        size_t ml;
        char num[32];
        int nl = snprintf(num, sizeof num, "%" PRIu32 ".", i);
        marked = join(head, head_len, num, (size_t)nl, &ml);
        if (!marked)
            return SG_ENOMEM;
        head = marked;
        head_len = ml;
    }
    uint32_t target = pre + e->isl;
    int rc = sg_textgen_fit(G->gen, head, head_len, off, target, &e->text, &e->len);
    free(marked);
    if (rc < 0)
        return fit_err(rc, err, errlen, "a prompt", target);
    e->isl = target;
    return uniq_check(G, e, target, err, errlen);
}

/*
 * Where the rendered request p holds e's slot: the first place its body holds the template (the prompt is the
 * first text of the body, and nothing before it spells the template's run of identical words). A body whose
 * prompt was replaced (--extra-inputs naming the prompt's member) has none: an error, since the request would
 * repeat.
 */
static int uniq_locate(const sg_uniq_alpha_t *a, const entry_t *e, sg_payload_t *p, char *err, size_t errlen)
{
    char slot[SG_UNIQ_MAX];
    size_t sl = uniq_fill(a, e->uniq_words, 0, slot);
    size_t bl;
    const char *body = sg_payload_body(p, &bl);
    const char *at = body ? memmem(body, bl, slot, sl) : NULL;
    if (!at)
        return set_err(err, errlen,
                       "--cache-bust first_turn_prefix: the request body does not carry the prompt "
                       "(--extra-inputs replaced it?); use --cache-bust none");
    p->uniq_off = (uint32_t)(at - p->bytes);
    p->uniq_len = (uint16_t)sl;
    p->uniq_words = e->uniq_words;
    return 0;
}

static int synthetic_entry(gen_t *G, uint32_t i, entry_t *e, char *err, size_t errlen)
{
    const sg_workload_spec_t *spec = G->spec;
    e->isl = draw_length(&G->isl_rng, spec->isl_mean, spec->isl_stddev, MAX_ISL_WORDS);
    e->max_tokens = draw_osl(G);
    return synthetic_text(G, i, e, err, errlen);
}

static int block_text(gen_t *G, uint64_t h, const char **text, size_t *len, char *err, size_t errlen)
{
    if (G->bn * 2 >= G->bcap) {
        size_t ncap = G->bcap ? G->bcap * 2 : 1024;
        uint64_t *k = calloc(ncap, sizeof *k);
        char **t = calloc(ncap, sizeof *t);
        size_t *l = calloc(ncap, sizeof *l);
        if (!k || !t || !l) {
            free(k);
            free(t);
            free(l);
            return SG_ENOMEM;
        }
        for (size_t i = 0; i < G->bcap; i++) {
            if (!G->btext[i])
                continue;
            size_t j = mix64(G->bkeys[i]) & (ncap - 1);
            while (t[j])
                j = (j + 1) & (ncap - 1);
            k[j] = G->bkeys[i];
            t[j] = G->btext[i];
            l[j] = G->blen[i];
        }
        free(G->bkeys);
        free(G->btext);
        free(G->blen);
        G->bkeys = k;
        G->btext = t;
        G->blen = l;
        G->bcap = ncap;
    }
    size_t j = mix64(h) & (G->bcap - 1);
    while (G->btext[j] && G->bkeys[j] != h)
        j = (j + 1) & (G->bcap - 1);
    if (!G->btext[j]) {
        uint64_t off = mix64(h ^ G->spec->seed) % sg_textgen_corpus_ids(G->gen);
        int rc = sg_textgen_fit(G->gen, "", 0, off, G->spec->block_size, &G->btext[j], &G->blen[j]);
        if (rc < 0)
            return fit_err(rc, err, errlen, "a hash_ids block", G->spec->block_size);
        G->bkeys[j] = h;
        G->bn++;
    }
    *text = G->btext[j];
    *len = G->blen[j];
    return 0;
}

/*
 * A trace entry: the blocks named by hash_ids, in order, each the same text wherever its id appears, then the
 * last block's text (or fresh text past the named blocks) cut to make exactly input_length in all.
 */
static int trace_entry(gen_t *G, const sg_input_entry_t *in, uint32_t i, entry_t *e, char *err, size_t errlen)
{
    uint32_t bs = G->spec->block_size;
    uint32_t il = in->input_length;
    size_t blocks = (il + (size_t)bs - 1) / bs;
    size_t named = in->n_hash_ids < blocks ? in->n_hash_ids : blocks;
    size_t full = named == blocks ? blocks - 1 : named; /* blocks taken whole; the rest is fitted */
    char *head = NULL;
    size_t head_len = 0;
    for (size_t b = 0; b < full; b++) {
        const char *t = NULL;
        size_t tl = 0;
        int rc = block_text(G, in->hash_ids[b], &t, &tl, err, errlen);
        if (rc < 0) {
            free(head);
            return rc;
        }
        size_t nl;
        char *n = join(head ? head : "", head_len, t, tl, &nl);
        free(head);
        if (!n)
            return SG_ENOMEM;
        head = n;
        head_len = nl;
    }
    size_t L = sg_textgen_corpus_ids(G->gen);
    uint64_t off = named == blocks ? mix64(in->hash_ids[blocks - 1] ^ G->spec->seed) % L
                                   : mix64((uint64_t)i ^ 0x7472616365ULL ^ G->spec->seed) % L;
    int rc = sg_textgen_fit(G->gen, head ? head : "", head_len, off, il, &e->text, &e->len);
    if (rc == SG_EINVAL) /* the named blocks alone count more than input_length: boundary merges went the other way */
        rc = sg_textgen_fit(G->gen, "", 0, off, il, &e->text, &e->len);
    free(head);
    if (rc < 0)
        return fit_err(rc, err, errlen, "a trace prompt", il);
    e->isl = il;
    e->max_tokens = in->max_tokens > 0 ? (uint32_t)in->max_tokens : draw_osl(G);
    e->model = -1;
    return 0;
}

static uint32_t count_text(gen_t *G, const char *s, size_t len)
{
    ssize_t n = sg_textgen_count(G->gen, s, len);
    return n < 0 ? 0 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static int file_entry(gen_t *G, names_t *names, const sg_input_entry_t *in, uint32_t i, entry_t *e, char *err,
                      size_t errlen)
{
    const sg_workload_spec_t *spec = G->spec;
    const sg_input_t *input = spec->input;
    if (input->format == SG_INPUT_MOONCAKE)
        return trace_entry(G, in, i, e, err, errlen);
    e->isl = count_text(G, in->prompt, in->prompt_len);
    if (in->body) {
        e->raw = in->body;
        e->raw_len = in->body_len;
        e->max_tokens = in->max_tokens > 0 ? (uint32_t)in->max_tokens : 0;
        e->stream = in->stream;
        /* a body is sent as written: the model it names is the one it asks for (none: the first -m) */
        int64_t m = in->model ? names_index(names, in->model) : 0;
        if (m < 0 || m > INT32_MAX)
            return set_err(err, errlen, "cannot keep the model name \"%.80s\"", in->model);
        e->model = (int32_t)m;
        return 0;
    }
    e->model = -1;
    e->stream = spec->streaming;
    e->tools = in->tools;
    if (in->max_tokens > 0)
        e->max_tokens = (uint32_t)in->max_tokens;
    else if (in->reply) {
        uint32_t n = count_text(G, in->reply, in->reply_len);
        e->max_tokens = n ? n : 1;
    } else
        e->max_tokens = draw_osl(G);
    e->text = malloc(in->prompt_len + 1);
    if (!e->text)
        return SG_ENOMEM;
    memcpy(e->text, in->prompt, in->prompt_len);
    e->text[in->prompt_len] = '\0';
    e->len = in->prompt_len;
    return 0;
}

static int batch_text(gen_t *G, entry_t *e, const char *s, size_t len)
{
    char *t = malloc(len + 1);
    if (!t)
        return SG_ENOMEM;
    memcpy(t, s, len);
    t[len] = '\0';
    e->batch[e->n_batch++] = (text_t){t, len};
    uint32_t n = count_text(G, s, len);
    e->isl = e->isl + n < e->isl ? UINT32_MAX : e->isl + n;
    return 0;
}

/*
 * The texts an input file gives entry i itself: a line's "texts" batch (embeddings), its query and passages
 * (AIPerf's rankings lines), or its query and --batch-size passages from a GenAI-Perf rankings directory's pool,
 * round robin. 1 when the file gives none of those (then entries are taken in turn, as prompts).
 */
static int file_batch(gen_t *G, uint32_t i, entry_t *e)
{
    const sg_workload_spec_t *spec = G->spec;
    const sg_input_t *in = spec->input;
    const sg_input_entry_t *f = &in->e[i % in->n];
    bool rankings = spec->kind != SG_OAI_EMBEDDINGS;
    uint32_t nb = spec->batch_size ? spec->batch_size : 1;
    size_t from_pool = rankings && in->n_pool ? nb : 0;
    if (!f->n_texts && !from_pool)
        return 1;
    size_t want = (f->n_texts ? f->n_texts : from_pool) + 1;
    text_t *b = realloc(e->batch, want * sizeof *b);
    if (!b)
        return SG_ENOMEM;
    e->batch = b;
    int rc = 0;
    if (rankings) /* the query first */
        rc = batch_text(G, e, f->prompt ? f->prompt : "", f->prompt ? f->prompt_len : 0);
    for (uint32_t k = 0; rc == 0 && k < f->n_texts; k++)
        rc = batch_text(G, e, f->texts[k], f->text_lens[k]);
    for (size_t k = 0; rc == 0 && !f->n_texts && k < from_pool; k++) {
        size_t j = ((size_t)i * from_pool + k) % in->n_pool;
        rc = batch_text(G, e, in->pool[j], in->pool_lens[j]);
    }
    return rc;
}

/* e's batch takes sub's text (the buffer itself) and adds its ISL, saturating. */
static void batch_take(entry_t *e, const entry_t *sub)
{
    e->batch[e->n_batch++] = (text_t){sub->text, sub->len};
    e->isl = e->isl + sub->isl < e->isl ? UINT32_MAX : e->isl + sub->isl;
}

/*
 * A synthetic rankings request drawn part by part (AIPerf's --rankings-*): a number of passages, then the query's
 * tokens and each passage's, every text at its own place in the corpus.
 */
static int rankings_entry(gen_t *G, entry_t *e, char *err, size_t errlen)
{
    const sg_rankings_synth_t *r = &G->spec->rankings;
    uint32_t passages = draw_length(&G->rank_rng, r->passages_mean, r->passages_stddev, MAX_BATCH_TEXTS);
    text_t *b = realloc(e->batch, ((size_t)passages + 1) * sizeof *b);
    if (!b)
        return SG_ENOMEM;
    e->batch = b;
    for (uint32_t k = 0; k <= passages; k++) {
        entry_t sub = {0};
        sub.isl = k == 0 ? draw_length(&G->rank_rng, r->query_mean, r->query_stddev, MAX_ISL_WORDS)
                         : draw_length(&G->rank_rng, r->passage_mean, r->passage_stddev, MAX_ISL_WORDS);
        uint64_t seq = G->rank_texts++;
        int rc = synthetic_text(G, (uint32_t)(seq % UINT32_MAX), &sub, err, errlen);
        if (rc < 0) {
            entry_free(&sub);
            return rc;
        }
        batch_take(e, &sub);
    }
    return 0;
}

/*
 * An embeddings or rankings request: --batch-size inputs, or a query and --batch-size passages, each made as a
 * prompt would be (synthetic, or the next entries of the input file, wrapping). ISL counts them all.
 */
static int batch_entry(gen_t *G, names_t *names, uint32_t i, entry_t *e, char *err, size_t errlen)
{
    const sg_workload_spec_t *spec = G->spec;
    uint32_t nb = spec->batch_size ? spec->batch_size : 1;
    uint32_t need = spec->kind == SG_OAI_EMBEDDINGS ? nb : nb + 1;
    e->batch = calloc(need, sizeof *e->batch);
    if (!e->batch)
        return SG_ENOMEM;
    e->model = -1;
    e->stream = false;
    if (spec->input) {
        int rc = file_batch(G, i, e);
        if (rc <= 0)
            return rc; /* the file's own batch, its passages, or the directory's pool; 1: none of those */
    }
    if (!spec->input && spec->rankings.on)
        return rankings_entry(G, e, err, errlen);
    for (uint32_t k = 0; k < need; k++) {
        entry_t sub = {0};
        uint64_t idx = (uint64_t)i * need + k;
        int rc;
        if (spec->input) {
            const sg_input_t *in = spec->input;
            rc = file_entry(G, names, &in->e[idx % in->n], (uint32_t)(idx % in->n), &sub, err, errlen);
            if (rc == 0 && sub.raw)
                rc = set_err(err, errlen, "a whole request body cannot be one of the texts of an %s request",
                             spec->kind == SG_OAI_EMBEDDINGS ? "embeddings" : "rankings");
        } else {
            rc = synthetic_entry(G, (uint32_t)(idx > UINT32_MAX ? idx % UINT32_MAX : idx), &sub, err, errlen);
        }
        if (rc < 0) {
            entry_free(&sub);
            return rc;
        }
        batch_take(e, &sub);
    }
    return 0;
}

/*
 * The images and clips of entry e: synthetic ones drawn for it (--image-*, --audio-*), or those its input file
 * line names (read and encoded now). Each synthetic one is drawn from the media stream, so no two entries share
 * one.
 */
static int entry_media(gen_t *G, const sg_input_entry_t *in, entry_t *e, char *err, size_t errlen)
{
    const sg_media_spec_t *m = G->spec->media;
    uint32_t ni = m && sg_media_images(m) ? m->image_batch : 0, na = m && sg_media_audio(m) ? m->audio_batch : 0;
    uint32_t n = in ? in->n_media : ni + na;
    if (!n)
        return 0;
    e->media = calloc(n, sizeof *e->media);
    if (!e->media)
        return SG_ENOMEM;
    for (uint32_t k = 0; k < n; k++) {
        int rc;
        if (in)
            rc = sg_media_from_ref(in->media[k], in->media_lens[k], (sg_media_kind_t)in->media_kinds[k], &e->media[k],
                                   err, errlen);
        else if (k < ni)
            rc = sg_media_synth_image(m, &G->media_rng, &e->media[k], err, errlen);
        else
            rc = sg_media_synth_audio(m, &G->media_rng, &e->media[k], err, errlen);
        if (rc < 0)
            return rc;
        e->n_media = k + 1;
    }
    return 0;
}

/* Media text one synthetic entry is expected to carry (for sizing the table before drawing). */
static double media_estimate(const sg_media_spec_t *m)
{
    double b = 0;
    if (sg_media_images(m)) /* noise does not compress: about its pixels' bytes, base64's 4/3 on top */
        b += m->image_batch * (m->image_w_mean * m->image_h_mean * 3 + 200) * 4 / 3;
    if (sg_media_audio(m)) {
        double rate = 0, depth = 0;
        for (uint32_t i = 0; i < m->n_rates; i++)
            rate = rate > m->audio_rates[i] ? rate : m->audio_rates[i];
        for (uint32_t i = 0; i < m->n_depths; i++)
            depth = depth > m->audio_depths[i] ? depth : m->audio_depths[i];
        b += m->audio_batch * (m->audio_len_mean * rate * depth / 8 * m->audio_channels + 44) * 4 / 3;
    }
    return b;
}

static void gen_free(gen_t *G)
{
    if (G->prefixes)
        for (uint32_t j = 0; j < G->spec->num_prefix; j++)
            free(G->prefixes[j]);
    free(G->prefixes);
    free(G->prefix_lens);
    for (size_t i = 0; i < G->bcap; i++)
        free(G->btext[i]);
    free(G->bkeys);
    free(G->btext);
    free(G->blen);
    free(G->uniq.words);
    sg_textgen_free(G->gen);
}

static int gen_init(gen_t *G, const sg_workload_spec_t *spec, char *err, size_t errlen)
{
    memset(G, 0, sizeof *G);
    G->spec = spec;
    sg_rng_seed(&G->isl_rng, spec->seed, STREAM_ISL);
    sg_rng_seed(&G->osl_rng, spec->seed, STREAM_OSL);
    sg_rng_seed(&G->prefix_rng, spec->seed, STREAM_PREFIX);
    sg_rng_seed(&G->text_rng, spec->seed, STREAM_TEXT);
    sg_rng_seed(&G->rank_rng, spec->seed, STREAM_RANKINGS);
    sg_rng_seed(&G->media_rng, spec->seed, STREAM_MEDIA);
    int rc = sg_textgen_new(spec->tok, &G->gen, err, errlen);
    if (rc < 0)
        return rc;
    size_t L = sg_textgen_corpus_ids(G->gen);
    G->stride = pick_stride(L);
    G->base = mix64(spec->seed) % L;
    if (spec->cache_bust && (rc = uniq_alphabet(G, err, errlen)) < 0)
        return rc;
    if (spec->num_prefix && !spec->input) {
        G->prefixes = calloc(spec->num_prefix, sizeof *G->prefixes);
        G->prefix_lens = calloc(spec->num_prefix, sizeof *G->prefix_lens);
        if (!G->prefixes || !G->prefix_lens)
            return SG_ENOMEM;
        /* prefixes start in the half of the corpus the first prompts do not, and each at its own offset */
        for (uint32_t j = 0; j < spec->num_prefix; j++) {
            uint64_t off = (G->base + L / 2 + (uint64_t)j * G->stride) % L;
            rc = sg_textgen_fit(G->gen, "", 0, off, spec->prefix_len, &G->prefixes[j], &G->prefix_lens[j]);
            if (rc < 0)
                return fit_err(rc, err, errlen, "a prefix prompt", spec->prefix_len);
        }
    }
    return 0;
}

int sg_workload_build(const sg_workload_spec_t *spec, sg_payload_table_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    const sg_input_t *input = spec->input;
    size_t n_entries = input ? input->n : spec->num_prompts;
    if (n_entries == 0)
        return set_err(err, errlen, "the workload needs at least one prompt");
    if (!spec->models || spec->n_models == 0)
        return set_err(err, errlen, "the workload needs at least one model");
    if (!spec->host_header || !spec->path)
        return set_err(err, errlen, "the workload needs a host and a path");
    if (!spec->grpc && (unsigned)spec->kind >= SG_OAI__KINDS)
        return set_err(err, errlen, "unknown endpoint kind %d", (int)spec->kind);
    bool batched = !spec->grpc && sg_endpoint(spec->kind)->batch;
    if (!input && spec->isl_mean == 0)
        return set_err(err, errlen, "the mean prompt length must be at least 1");
    if (!input && spec->num_prefix && spec->prefix_len == 0)
        return set_err(err, errlen, "prefix prompts need a length of at least 1");
    if (input && input->format == SG_INPUT_MOONCAKE && spec->block_size == 0)
        return set_err(err, errlen, "the hash_ids block size must be at least 1");
    if (spec->cache_bust && (input || spec->num_prefix || batched))
        return set_err(err, errlen,
                       "--cache-bust first_turn_prefix applies to synthetic prompts of one text a "
                       "request, without shared prefixes (not to %s)",
                       input              ? "an input file"
                       : spec->num_prefix ? "--num-prefix-prompts"
                                          : "embeddings or rankings");

    bool synth_media = spec->media && (sg_media_images(spec->media) || sg_media_audio(spec->media));
    bool file_media = false;
    for (size_t i = 0; input && i < input->n && !file_media; i++)
        file_media = input->e[i].n_media > 0;
    bool images_only = spec->kind == SG_OAI_IMAGE_RETRIEVAL && !spec->grpc;
    if ((synth_media || file_media) && (spec->grpc || (spec->kind != SG_OAI_CHAT && !images_only)))
        return set_err(err, errlen,
                       "images and audio go in chat requests (--endpoint-type chat) or, images only, "
                       "image_retrieval; not in %s%s",
                       spec->grpc ? "KServe gRPC calls" : sg_endpoint(spec->kind)->name,
                       file_media ? " (the input file names some)" : "");
    if (images_only && !(synth_media && sg_media_images(spec->media)) && !file_media)
        return set_err(err, errlen,
                       "image_retrieval sends images: give --image-width-mean and --image-height-mean (synthetic "
                       "images), or an --input-file whose lines name \"image\" or \"images\"");
    if (images_only && synth_media && sg_media_audio(spec->media))
        return set_err(err, errlen, "image_retrieval takes images only, not audio (--audio-length-mean)");
    if (synth_media && !input && !spec->num_prompts_given) {
        /* grow the table towards one entry per request, within the pool's bytes, so media repeat as little as
         * memory allows */
        double text = (double)spec->isl_mean * 8 + 512; /* a prompt's bytes and the request head, roughly */
        double per = (media_estimate(spec->media) + text) * (double)spec->n_models;
        double fit = floor((double)SG_MEDIA_POOL_BYTES / per);
        double want = spec->media_requests ? (double)spec->media_requests : fit;
        double n = want < fit ? want : fit;
        if (n > (double)n_entries)
            n_entries = n > SG_MEDIA_POOL_ENTRIES ? SG_MEDIA_POOL_ENTRIES : (size_t)n;
    }

    json_t *extra = NULL;
    if (spec->extra_inputs_json && spec->extra_inputs_json[0]) {
        json_error_t je;
        extra = json_loads(spec->extra_inputs_json, 0, &je);
        if (!extra || !json_is_object(extra)) {
            json_decref(extra);
            return set_err(err, errlen, "extra inputs are not a JSON object: %s",
                           extra ? spec->extra_inputs_json : je.text);
        }
    }
    bool raw = input && (input->format == SG_INPUT_RAW_PAYLOAD || input->format == SG_INPUT_PERF_ANALYZER);
    if (raw && spec->grpc) {
        json_decref(extra);
        return set_err(err, errlen,
                       "%s holds whole OpenAI request bodies (%s); --service-kind triton builds its own "
                       "KServe requests from prompts (use genai_perf text_input lines)",
                       spec->input_name ? spec->input_name : "the input file", sg_input_format_name(input->format));
    }
    uint32_t variants = raw ? 1 : (uint32_t)spec->n_models;
    if (n_entries > SIZE_MAX / sizeof(sg_payload_t) / variants || n_entries * variants > UINT32_MAX) {
        json_decref(extra);
        return set_err(err, errlen, "%zu entries times %" PRIu32 " models is too many requests to pre-render",
                       n_entries, variants);
    }
    sg_payload_t *items = calloc(n_entries * variants, sizeof *items);
    names_t names = {.index = json_object()};
    int rc = names.index ? 0 : SG_ENOMEM;
    for (size_t m = 0; rc == 0 && m < spec->n_models; m++)
        rc = names_push(&names, spec->models[m]);
    gen_t G;
    bool gen_ok = false;
    if (rc == 0 && items) {
        rc = gen_init(&G, spec, err, errlen);
        gen_ok = rc == 0;
        if (!gen_ok)
            gen_free(&G); /* what gen_init made before it failed (it clears G first) */
    } else if (rc == 0) {
        rc = SG_ENOMEM;
    }
    size_t built = 0;
    uint64_t media_total = 0;
    for (size_t i = 0; rc == 0 && i < n_entries; i++) {
        entry_t e = {0};
        if (!batched && input && input->e[i].n_texts > 1)
            rc = set_err(err, errlen,
                         "holds %" PRIu32 " texts: a batch, which only embeddings and rankings take (one prompt a "
                         "request here)",
                         input->e[i].n_texts);
        else if (batched && !raw)
            rc = batch_entry(&G, &names, (uint32_t)i, &e, err, errlen);
        else if (input)
            rc = file_entry(&G, &names, &input->e[i], (uint32_t)i, &e, err, errlen);
        else
            rc = synthetic_entry(&G, (uint32_t)i, &e, err, errlen);
        if (rc == 0 && (synth_media || file_media))
            rc = entry_media(&G, input ? &input->e[i] : NULL, &e, err, errlen);
        if (rc == 0 && images_only)
            e.isl = 0; /* image_retrieval sends no text */
        uint64_t media_bytes = 0;
        uint32_t images = 0, audios = 0;
        for (uint32_t k = 0; k < e.n_media; k++) {
            media_bytes += e.media[k].len;
            images += e.media[k].kind == SG_MEDIA_IMAGE;
            audios += e.media[k].kind == SG_MEDIA_AUDIO;
        }
        media_total += media_bytes * variants;
        if (rc == 0 && media_total > SG_MEDIA_TABLE_MAX)
            rc = set_err(err, errlen,
                         "the requests' images and audio come to over %llu GiB before request %zu of %zu: fewer "
                         "--num-prompts, smaller or fewer images, or shorter clips",
                         SG_MEDIA_TABLE_MAX >> 30, i + 1, n_entries);
        if (rc == 0 && images_only && images == 0)
            rc = set_err(err, errlen, "an image_retrieval request needs at least one image (this line names none)");
        for (uint32_t v = 0; rc == 0 && v < variants; v++) {
            sg_payload_t *p = &items[i * variants + v];
            p->isl = e.isl;
            p->max_tokens = e.max_tokens;
            p->model = e.model >= 0 ? (uint32_t)e.model : v;
            p->streaming = e.raw ? e.stream : spec->streaming;
            p->inputs = e.batch ? e.n_batch - (spec->kind == SG_OAI_EMBEDDINGS ? 0 : 1) : images_only ? images : 0;
            p->images = (uint16_t)images;
            p->audios = (uint16_t)audios;
            p->media_bytes = media_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)media_bytes;
            text_t one = {e.text, e.len};
            const json_t *tools = e.tools ? e.tools : spec->tools;
            rc = e.raw     ? render_http(spec, e.raw, e.raw_len, p, err, errlen)
                 : e.batch ? build_one(spec, extra, tools, e.batch, e.n_batch, NULL, 0, p, err, errlen)
                           : build_one(spec, extra, tools, &one, 1, e.media, e.n_media, p, err, errlen);
            if (rc == 0)
                built = i * variants + v + 1;
            if (rc == 0 && e.uniq_words)
                rc = uniq_locate(&G.uniq, &e, p, err, errlen);
        }
        entry_free(&e);
        if (rc && input && err && errlen) {
            /* name the entry: by its line for JSON lines, by its element index for JSON documents */
            const char *name = spec->input_name ? spec->input_name : "the input file";
            bool lines = input->format != SG_INPUT_SHAREGPT && input->format != SG_INPUT_PERF_ANALYZER;
            char tmp[512];
            snprintf(tmp, sizeof tmp, "%s", err);
            set_err(err, errlen, "%s %s %" PRIu32 ": %s", name, lines ? "line" : "element", input->e[i].where, tmp);
        }
    }
    sg_uniq_alpha_t uniq = {0};
    if (gen_ok && rc == 0) {
        uniq = G.uniq; /* the table keeps the slot's words */
        G.uniq.words = NULL;
    }
    if (gen_ok)
        gen_free(&G);
    json_decref(extra);
    if (rc) {
        names_free(&names);
        if (rc == SG_ENOMEM && (!err || !err[0]))
            set_err(err, errlen, "out of memory building request %zu of %zu", built, n_entries * variants);
        sg_payload_table_t partial = {.items = items, .n = built};
        sg_workload_free(&partial);
        return rc;
    }
    out->items = items;
    out->n = n_entries * variants;
    out->n_entries = n_entries;
    out->n_variants = variants;
    out->model_names = names.v;
    out->n_model_names = names.n;
    out->uniq = uniq;
    json_decref(names.index);
    return 0;
}

void sg_workload_free(sg_payload_table_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->items[i].bytes);
    free(t->items);
    for (size_t i = 0; i < t->n_model_names; i++)
        free(t->model_names[i]);
    free(t->model_names);
    free(t->uniq.words);
    memset(t, 0, sizeof *t);
}
