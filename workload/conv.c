/*
 * Conversations for multi-turn sessions (sg_conv.h): built once before the run, synthetic or from a multi_turn
 * file, and each turn's request rendered with its history when the turn is due (on the worker's thread; only
 * session runs come here, the pre-rendered payload table stays the path of every other run).
 */
#include "sg_conv.h"

#include "sg_h1.h"
#include "sg_input.h"
#include "sg_textgen.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Random streams of their own, apart from the payload table's (payload.c) and the scheduler's. */
#define STREAM_CONV 0x636f6e766572736eULL /* "conversn" */
#define STREAM_TURNS (STREAM_CONV + 1)
#define STREAM_DELAY (STREAM_CONV + 2)
#define STREAM_TISL (STREAM_CONV + 3)
#define STREAM_TOSL (STREAM_CONV + 4)

#define MAX_TURNS 10000 /* a conversation drawn longer is cut here: a sane allocation for any stddev */

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

/* A normal draw, rounded, within [lo, hi]. */
static double draw(sg_rng_t *rng, double mean, double stddev, double lo, double hi)
{
    double v = stddev > 0 ? mean + stddev * sg_rng_normal(rng) : mean;
    v = round(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void sg_conv_free(sg_conv_table_t *t)
{
    for (size_t i = 0; i < t->n_turns; i++)
        free(t->turns[i].text);
    free(t->turns);
    free(t->convs);
    memset(t, 0, sizeof *t);
}

static int64_t delay_ns(double ms, double ratio)
{
    double ns = ms * ratio * 1e6;
    return ns <= 0 ? 0 : ns > 1e18 ? (int64_t)1e18 : (int64_t)llround(ns);
}

/* Synthetic: spec->num conversations, every user turn its own window of the corpus (distinct texts, so a prefix
 * cache is served only by the history a session really shares). */
static int build_synthetic(const sg_conv_spec_t *spec, sg_textgen_t *gen, sg_conv_table_t *t, char *err, size_t errlen)
{
    sg_rng_t turns_rng, delay_rng, isl_rng, osl_rng;
    sg_rng_seed(&turns_rng, spec->seed, STREAM_TURNS);
    sg_rng_seed(&delay_rng, spec->seed, STREAM_DELAY);
    sg_rng_seed(&isl_rng, spec->seed, STREAM_TISL);
    sg_rng_seed(&osl_rng, spec->seed, STREAM_TOSL);
    if (!(t->convs = calloc(spec->num, sizeof *t->convs)))
        return SG_ENOMEM;
    size_t cap = 0;
    size_t L = sg_textgen_corpus_ids(gen);
    for (uint32_t c = 0; c < spec->num; c++) {
        uint32_t n = (uint32_t)draw(&turns_rng, spec->turn_mean, spec->turn_stddev, 1, MAX_TURNS);
        t->convs[c] = (sg_conv_t){.first = (uint32_t)t->n_turns, .n = n};
        t->n_convs++;
        if (t->n_turns + n > cap) {
            size_t ncap = cap ? cap * 2 : 64;
            while (ncap < t->n_turns + n)
                ncap *= 2;
            sg_turn_t *nt = realloc(t->turns, ncap * sizeof *nt);
            if (!nt)
                return SG_ENOMEM;
            t->turns = nt;
            cap = ncap;
        }
        for (uint32_t k = 0; k < n; k++) {
            sg_turn_t *tu = &t->turns[t->n_turns];
            memset(tu, 0, sizeof *tu);
            tu->isl = (uint32_t)draw(&isl_rng, spec->isl_mean, spec->isl_stddev, 1, 16000000);
            if (spec->osl_mean > 0)
                tu->max_tokens = (uint32_t)draw(&osl_rng, spec->osl_mean, spec->osl_stddev, 1, INT32_MAX);
            double ms = draw(&delay_rng, spec->delay_mean_ms, spec->delay_stddev, 0, 1e12);
            tu->delay_ns = k == 0 ? 0 : delay_ns(ms, spec->delay_ratio);
            tu->at_ns = -1;
            /* windows spread over the corpus by a large odd stride: distinct for every turn of the run */
            uint64_t off = (spec->seed * 0x9e3779b97f4a7c15ULL + t->n_turns * 7919ULL) % (L ? L : 1);
            int rc = sg_textgen_fit(gen, "", 0, off, tu->isl, &tu->text, &tu->len);
            if (rc < 0)
                return rc == SG_ENOMEM
                           ? rc
                           : set_err(err, errlen, "cannot make a user turn of %u tokens: %s", tu->isl, sg_strerror(rc));
            t->n_turns++;
        }
    }
    return 0;
}

/* From a multi_turn file: its entries come grouped by session (sg_input.h), one conversation per group. */
static int build_from_file(const sg_conv_spec_t *spec, sg_textgen_t *gen, sg_conv_table_t *t, char *err, size_t errlen)
{
    const sg_input_t *in = spec->input;
    if (!(t->turns = calloc(in->n ? in->n : 1, sizeof *t->turns)) ||
        !(t->convs = calloc(in->n ? in->n : 1, sizeof *t->convs)))
        return SG_ENOMEM;
    sg_rng_t osl_rng;
    sg_rng_seed(&osl_rng, spec->seed, STREAM_TOSL);
    for (size_t i = 0; i < in->n; i++) {
        const sg_input_entry_t *e = &in->e[i];
        bool first = i == 0 || in->e[i - 1].session != e->session;
        if (first)
            t->convs[t->n_convs++] = (sg_conv_t){.first = (uint32_t)i, .n = 0};
        t->convs[t->n_convs - 1].n++;
        sg_turn_t *tu = &t->turns[t->n_turns++];
        if (!(tu->text = malloc(e->prompt_len + 1)))
            return SG_ENOMEM;
        memcpy(tu->text, e->prompt, e->prompt_len);
        tu->text[e->prompt_len] = '\0';
        tu->len = e->prompt_len;
        ssize_t n = sg_textgen_count(gen, tu->text, tu->len);
        if (n < 0)
            return set_err(err, errlen, "line %u: cannot count the turn's text: %s", e->where, sg_strerror((int)n));
        tu->isl = (uint32_t)n;
        if (e->max_tokens > 0)
            tu->max_tokens = (uint32_t)e->max_tokens;
        else if (spec->osl_mean > 0)
            tu->max_tokens = (uint32_t)draw(&osl_rng, spec->osl_mean, spec->osl_stddev, 1, INT32_MAX);
        tu->delay_ns = first || e->delay_ms < 0 ? 0 : delay_ns((double)e->delay_ms, spec->delay_ratio);
        tu->at_ns = e->t_ns;
    }
    return 0;
}

typedef struct {
    int64_t at;  /* the conversation's first timestamp */
    sg_conv_t c; /* c.first: file order among equal timestamps */
} conv_start_t;

static int by_start(const void *a, const void *b)
{
    const conv_start_t *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->c.first < y->c.first ? -1 : x->c.first > y->c.first;
}

int sg_conv_fixed_schedule(sg_conv_table_t *t, int64_t **times)
{
    *times = NULL;
    if (t->n_convs == 0)
        return 0;
    conv_start_t *order = malloc(t->n_convs * sizeof *order);
    if (!order)
        return SG_ENOMEM;
    for (size_t c = 0; c < t->n_convs; c++)
        order[c] = (conv_start_t){.at = t->turns[t->convs[c].first].at_ns, .c = t->convs[c]};
    qsort(order, t->n_convs, sizeof *order, by_start);
    for (size_t c = 0; c < t->n_convs; c++)
        t->convs[c] = order[c].c;
    free(order);
    int64_t t0 = t->turns[t->convs[0].first].at_ns;
    for (size_t i = 0; i < t->n_turns; i++)
        if (t->turns[i].at_ns >= 0)
            t->turns[i].at_ns -= t0; /* a later turn stamped before the first session began: due at once */
    if (!(*times = malloc(t->n_convs * sizeof **times)))
        return SG_ENOMEM;
    for (size_t c = 0; c < t->n_convs; c++)
        (*times)[c] = t->turns[t->convs[c].first].at_ns;
    return 0;
}

int sg_conv_build(const sg_conv_spec_t *spec, sg_conv_table_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!spec->input && (spec->num == 0 || spec->isl_mean == 0))
        return set_err(err, errlen, "sessions need at least one conversation and a prompt length of at least 1");
    if (spec->input && spec->input->n == 0)
        return set_err(err, errlen, "the multi_turn file holds no turn");
    sg_textgen_t *gen = NULL;
    int rc = sg_textgen_new(spec->tok, &gen, err, errlen);
    if (rc == 0)
        rc = spec->input ? build_from_file(spec, gen, out, err, errlen) : build_synthetic(spec, gen, out, err, errlen);
    sg_textgen_free(gen);
    if (rc == SG_ENOMEM && err && errlen)
        set_err(err, errlen, "out of memory building the conversations");
    if (rc < 0)
        sg_conv_free(out);
    return rc < 0 ? rc : 0;
}

/* ---------------- one turn's request ---------------- */

/* The history as role/content messages (chat, responses, messages). */
static json_t *messages(const sg_conv_msg_t *msgs, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *m =
            json_pack("{s:s, s:s%}", "role", i % 2 ? "assistant" : "user", "content", msgs[i].text, msgs[i].len);
        if (!m || json_array_append_new(a, m) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/*
 * The Responses API's input items: a user turn as an input message ({"role": "user", "content": text}), a reply
 * as the output message item the server produced ({"type": "message", "role": "assistant", "content":
 * [{"type": "output_text", "text": ...}]}): the form every implementation takes back (llama.cpp refuses an untyped
 * assistant item: "Cannot determine type of 'item'").
 */
static json_t *responses_input(const sg_conv_msg_t *msgs, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *m = i % 2 ? json_pack("{s:s, s:s, s:[{s:s, s:s%}]}", "type", "message", "role", "assistant", "content",
                                      "type", "output_text", "text", msgs[i].text, msgs[i].len)
                          : json_pack("{s:s, s:s%}", "role", "user", "content", msgs[i].text, msgs[i].len);
        if (!m || json_array_append_new(a, m) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The history as one prompt (completions, generate: APIs without roles): the messages joined by blank lines. */
static json_t *joined(const sg_conv_msg_t *msgs, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += msgs[i].len + 2;
    char *buf = malloc(len + 1);
    if (!buf)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            memcpy(buf + at, "\n\n", 2);
            at += 2;
        }
        memcpy(buf + at, msgs[i].text, msgs[i].len);
        at += msgs[i].len;
    }
    json_t *s = json_stringn(buf, at);
    free(buf);
    return s;
}

static json_t *turn_body(const sg_workload_spec_t *spec, const char *model, const sg_conv_msg_t *msgs, size_t n,
                         uint32_t max_tokens)
{
    int stream = spec->streaming;
    json_t *body = NULL;
    switch (spec->kind) {
    case SG_OAI_CHAT:
        body = json_pack("{s:s, s:o*, s:b}", "model", model, "messages", messages(msgs, n), "stream", stream);
        if (body && max_tokens && json_object_set_new(body, "max_tokens", json_integer(max_tokens)))
            goto fail;
        if (body && stream && json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1)))
            goto fail;
        return body;
    case SG_OAI_COMPLETIONS:
        body = json_pack("{s:s, s:o*, s:b}", "model", model, "prompt", joined(msgs, n), "stream", stream);
        if (body && max_tokens && json_object_set_new(body, "max_tokens", json_integer(max_tokens)))
            goto fail;
        if (body && stream && json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1)))
            goto fail;
        return body;
    case SG_OAI_RESPONSES:
        body = json_pack("{s:s, s:o*, s:b}", "model", model, "input", responses_input(msgs, n), "stream", stream);
        if (body && max_tokens && json_object_set_new(body, "max_output_tokens", json_integer(max_tokens)))
            goto fail;
        return body;
    case SG_OAI_MESSAGES:
        return json_pack("{s:s, s:I, s:o*, s:b}", "model", model, "max_tokens",
                         (json_int_t)(max_tokens ? max_tokens : SG_MESSAGES_MAX_TOKENS), "messages", messages(msgs, n),
                         "stream", stream);
    case SG_OAI_GENERATE: {
        json_t *params = json_pack("{s:b}", "details", 1);
        if (params && max_tokens && json_object_set_new(params, "max_new_tokens", json_integer(max_tokens))) {
            json_decref(params);
            return NULL;
        }
        return json_pack("{s:o*, s:o*}", "inputs", joined(msgs, n), "parameters", params);
    }
    default:
        return NULL;
    }
fail:
    json_decref(body);
    return NULL;
}

int sg_conv_render(const sg_workload_spec_t *spec, const json_t *extra, const char *model, const sg_conv_msg_t *msgs,
                   size_t n_msgs, uint32_t max_tokens, const char *session_id, sg_payload_t *p, char *err,
                   size_t errlen)
{
    json_t *body = turn_body(spec, model, msgs, n_msgs, max_tokens);
    if (!body)
        return set_err(err, errlen, "cannot build the turn's body (not valid UTF-8, or %s takes no sessions)",
                       sg_endpoint(spec->kind)->name);
    if (extra && json_object_update(body, (json_t *)extra) != 0) {
        json_decref(body);
        return SG_ENOMEM;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return SG_ENOMEM;
    /* spec's headers, then the session's two */
    size_t nh = 0;
    while (spec->headers && spec->headers[nh])
        nh++;
    const char **headers = malloc((nh + 3) * sizeof *headers);
    char sess[96], corr[96];
    snprintf(sess, sizeof sess, "X-Session-ID: %s", session_id);
    snprintf(corr, sizeof corr, "X-Correlation-ID: %s", session_id);
    if (!headers) {
        free(text);
        return SG_ENOMEM;
    }
    for (size_t i = 0; i < nh; i++)
        headers[i] = spec->headers[i];
    headers[nh] = sess;
    headers[nh + 1] = corr;
    headers[nh + 2] = NULL;
    sg_h1_req_spec_t req = {
        .method = "POST",
        .host = spec->host_header,
        .path = spec->path,
        .headers = headers,
        .content_type = "application/json",
        .accept = spec->streaming ? "text/event-stream" : "application/json",
        .body = text,
        .body_len = strlen(text),
    };
    ssize_t n = sg_h1_write_request(&req, &p->bytes);
    free(headers);
    free(text);
    if (n < 0)
        return n == SG_ENOMEM ? SG_ENOMEM : set_err(err, errlen, "cannot render the turn's HTTP request");
    p->len = (size_t)n;
    return 0;
}
