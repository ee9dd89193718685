/*
 * The payload table: every request of the run rendered once, before the first send, into the exact bytes that
 * go on the wire. Bodies are built with jansson (correct escaping of model names and extra inputs matters more
 * than speed here, and this runs once per prompt, not per request).
 */
#include "sg_workload.h"

#include "sg_h1.h"

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

#define MAX_ISL_WORDS 16000000.0 /* a sane allocation even when a large stddev draws far out */

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

static json_t *make_body(const sg_workload_spec_t *spec, const char *model, const char *prompt, uint32_t max_tokens)
{
    json_t *body;
    if (spec->kind == SG_OAI_CHAT)
        body = json_pack("{s:s, s:[{s:s, s:s}], s:b}", "model", model, "messages", "role", "user", "content", prompt,
                         "stream", (int)spec->streaming);
    else
        body = json_pack("{s:s, s:s, s:b}", "model", model, "prompt", prompt, "stream", (int)spec->streaming);
    if (!body)
        return NULL;
    int rc = 0;
    if (max_tokens)
        rc |= json_object_set_new(body, "max_tokens", json_integer(max_tokens));
    /* usage in the last chunk gives the server's token counts (OSL source "usage") */
    if (spec->streaming)
        rc |= json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));
    if (rc) {
        json_decref(body);
        return NULL;
    }
    return body;
}

static int build_one(const sg_workload_spec_t *spec, const json_t *extra, uint32_t index, sg_rng_t *text_rng,
                     sg_payload_t *p, char *err, size_t errlen)
{
    char *prompt = sg_synth_prompt(text_rng, p->isl, index);
    if (!prompt)
        return SG_ENOMEM;
    const char *model = spec->models[p->model];
    json_t *body = make_body(spec, model, prompt, p->max_tokens);
    free(prompt);
    if (!body)
        return set_err(err, errlen, "cannot build the request body for model \"%s\" (not valid UTF-8?)", model);
    /* extra inputs go last so that the user can override anything we set, as with GenAI-Perf */
    if (extra && json_object_update(body, (json_t *)extra) != 0) {
        json_decref(body);
        return SG_ENOMEM;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return SG_ENOMEM;
    sg_h1_req_spec_t req = {
        .method = "POST",
        .host = spec->host_header,
        .path = spec->path,
        .headers = spec->headers,
        .content_type = "application/json",
        .accept = spec->streaming ? "text/event-stream" : "application/json",
        .body = text,
        .body_len = strlen(text),
    };
    ssize_t n = sg_h1_write_request(&req, &p->bytes);
    free(text);
    if (n == SG_ENOMEM)
        return SG_ENOMEM;
    if (n < 0)
        return set_err(err, errlen, "cannot render the HTTP request (path \"%s\" or a header is malformed): %s",
                       spec->path, sg_strerror((int)n));
    p->len = (size_t)n;
    return 0;
}

int sg_workload_build(const sg_workload_spec_t *spec, sg_payload_table_t *out, char *err, size_t errlen)
{
    out->items = NULL;
    out->n = 0;
    if (err && errlen)
        err[0] = '\0';
    if (spec->num_prompts == 0)
        return set_err(err, errlen, "the workload needs at least one prompt");
    if (!spec->models || spec->n_models == 0)
        return set_err(err, errlen, "the workload needs at least one model");
    if (!spec->host_header || !spec->path)
        return set_err(err, errlen, "the workload needs a host and a path");
    if (spec->kind != SG_OAI_CHAT && spec->kind != SG_OAI_COMPLETIONS)
        return set_err(err, errlen, "unknown endpoint kind %d", (int)spec->kind);
    if (spec->isl_mean == 0)
        return set_err(err, errlen, "the mean prompt length must be at least 1");

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

    sg_payload_t *items = calloc(spec->num_prompts, sizeof *items);
    if (!items) {
        json_decref(extra);
        set_err(err, errlen, "out of memory for %" PRIu32 " prompts", spec->num_prompts);
        return SG_ENOMEM;
    }
    sg_rng_t isl_rng, osl_rng, model_rng, text_rng;
    sg_rng_seed(&isl_rng, spec->seed, STREAM_ISL);
    sg_rng_seed(&osl_rng, spec->seed, STREAM_OSL);
    sg_rng_seed(&model_rng, spec->seed, STREAM_MODEL);
    sg_rng_seed(&text_rng, spec->seed, STREAM_TEXT);

    int rc = 0;
    uint32_t built = 0;
    for (; built < spec->num_prompts; built++) {
        sg_payload_t *p = &items[built];
        p->isl = draw_length(&isl_rng, spec->isl_mean, spec->isl_stddev, MAX_ISL_WORDS);
        p->max_tokens = spec->osl_mean < 0 ? 0 : draw_length(&osl_rng, spec->osl_mean, spec->osl_stddev, INT32_MAX);
        if (spec->model_strategy == 1)
            p->model = (uint32_t)(sg_rng_next(&model_rng) % spec->n_models);
        else
            p->model = (uint32_t)(built % spec->n_models);
        rc = build_one(spec, extra, built, &text_rng, p, err, errlen);
        if (rc)
            break;
    }
    json_decref(extra);
    if (rc) {
        if (rc == SG_ENOMEM)
            set_err(err, errlen, "out of memory building prompt %" PRIu32 " of %" PRIu32, built, spec->num_prompts);
        sg_payload_table_t partial = {items, built};
        sg_workload_free(&partial);
        return rc;
    }
    out->items = items;
    out->n = spec->num_prompts;
    return 0;
}

void sg_workload_free(sg_payload_table_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->items[i].bytes);
    free(t->items);
    t->items = NULL;
    t->n = 0;
}
