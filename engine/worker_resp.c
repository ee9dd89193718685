/*
 * What a response means, whatever carried it: the HTTP/1.1 parser callbacks (also used per HTTP/2 stream),
 * SSE events, OpenAI bodies decoded into the request record, output text kept for --tokenizer.
 */
#define _GNU_SOURCE
#include "worker_int.h"

#include "sg_openai.h"
#include "sg_sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- events from the parsers ---------------- */

int wk_body_append(resp_t *c, const char *data, size_t len, size_t cap_limit)
{
    if (c->body_len + len > cap_limit)
        return SG_ETOOBIG;
    if (c->body_len + len > c->body_cap) {
        size_t ncap = c->body_cap ? c->body_cap : 1024;
        while (ncap < c->body_len + len)
            ncap *= 2;
        char *nb = realloc(c->body, ncap);
        if (!nb)
            return SG_ENOMEM;
        c->body = nb;
        c->body_cap = ncap;
    }
    memcpy(c->body + c->body_len, data, len);
    c->body_len += len;
    return 0;
}

__thread int64_t wk_t_recv_ns;
__thread uint64_t wk_events_shared;

void wk_apply_decoded(sg_req_t *r, const sg_oai_result_t *res)
{
    if (res->completion_tokens >= 0)
        r->rec.osl_server = (int32_t)res->completion_tokens;
    if (res->prompt_tokens >= 0)
        r->rec.isl_server = (int32_t)res->prompt_tokens;
    if (res->cached_tokens >= 0)
        r->rec.isl_cached = res->cached_tokens > INT32_MAX ? INT32_MAX : (int32_t)res->cached_tokens;
    if (res->reasoning_tokens >= 0) {
        r->rec.reasoning_tokens = res->reasoning_tokens > UINT32_MAX ? UINT32_MAX : (uint32_t)res->reasoning_tokens;
        r->rec.reasoning_from_usage = true;
    }
}

/* The start of a body for a message, printable. */
static void body_sample(char *out, size_t cap, const char *body, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (body[i] >= 32 && body[i] < 127) ? body[i] : ' ';
    out[n] = 0;
}

/*
 * A whole body that is not the endpoint's shape (a server answering another API at this path), or embeddings
 * that do not answer every input: the request failed, and the message says how.
 */
static bool wrong_shape(resp_t *c, sg_req_t *r, const sg_oai_result_t *res)
{
    const sg_config_t *cfg = c->w->cfg;
    const sg_endpoint_t *ep = sg_endpoint(cfg->endpoint_type);
    if (!res->recognized) {
        char sample[64];
        body_sample(sample, sizeof sample, c->body ? c->body : "", c->body_len);
        wk_set_error(r, SG_ERRC_PROTOCOL, "not a %s response (another API answers at this path?): %s", ep->name,
                     sample);
        return true;
    }
    if (cfg->endpoint_type == SG_OAI_EMBEDDINGS && res->items < (int64_t)r->payload->inputs) {
        wk_set_error(r, SG_ERRC_PROTOCOL, "%lld embeddings for %u inputs", (long long)res->items, r->payload->inputs);
        return true;
    }
    return false;
}

/* A content event: its time, and whether it is the first that is not reasoning. */
static int content_event(sg_req_t *r, const sg_oai_result_t *res)
{
    if (SG_UNLIKELY(res->tool_n_args)) {
        /* tool-call arguments are output: they count as a token of OSL (one per event without usage or tokenizer)
         * and for the times to first token and first output, and apart as tool-call tokens */
        r->rec.tool_events++;
        if (r->rec.first_tool_ns == 0)
            r->rec.first_tool_ns = wk_t_recv_ns;
        if (r->rec.first_output_ns == 0)
            r->rec.first_output_ns = wk_t_recv_ns;
    } else if (res->content.len > 0) {
        if (r->rec.first_output_ns == 0)
            r->rec.first_output_ns = wk_t_recv_ns;
    } else {
        r->rec.reasoning_events++;
    }
    return wk_add_content_event(r, wk_t_recv_ns);
}

/* --tokenizer: append a raw (escaped) JSON string's decoded bytes (or plain bytes) to the request's output text. */
static void text_append_as(sg_req_t *r, sg_slice_t raw, bool json)
{
    if (raw.len == 0 || r->text_lost)
        return;
    /* Unescaping never lengthens a JSON string, so raw.len bytes of room always suffice. */
    if (raw.len > SG_RECORD_TEXT_MAX - r->text_len) {
        r->text_lost = true;
        return;
    }
    uint32_t need = r->text_len + (uint32_t)raw.len;
    if (need > r->text_cap) {
        uint32_t ncap = r->text_cap ? r->text_cap : 1024;
        while (ncap < need)
            ncap *= 2;
        char *nt = realloc(r->text, ncap);
        if (!nt) {
            r->text_lost = true;
            return;
        }
        r->text = nt;
        r->text_cap = ncap;
    }
    ssize_t n = (ssize_t)raw.len;
    if (json)
        n = sg_json_unescape(raw.base, raw.len, r->text + r->text_len, raw.len);
    else
        memcpy(r->text + r->text_len, raw.base, raw.len);
    if (n < 0 || (size_t)n > raw.len) {
        r->text_lost = true;
        return;
    }
    r->text_len += (uint32_t)n;
}

static void text_append(sg_req_t *r, sg_slice_t raw)
{
    text_append_as(r, raw, true);
}

void wk_capture_bytes(sg_worker_t *w, sg_req_t *r, sg_slice_t text)
{
    if ((w->keep_text && !r->rec.warmup) || SG_UNLIKELY(r->sess))
        text_append_as(r, text, false);
}

void wk_capture_text(sg_worker_t *w, sg_req_t *r, const sg_oai_result_t *res)
{
    /* a session's turn keeps its reply for the next turn's history, tokenizer or not */
    if ((!w->keep_text || r->rec.warmup) && !SG_UNLIKELY(r->sess))
        return;
    if (res->reasoning.len) {
        /* a server that sends both in one chunk thought before it answered; reasoning after answer text can no
         * longer be told apart in the buffer */
        r->reasoning_mixed |= r->text_len != r->reasoning_len;
        text_append(r, res->reasoning);
        if (!r->reasoning_mixed)
            r->reasoning_len = r->text_len;
    }
    r->tool_mixed |= r->tool_text && (res->content.len || res->reasoning.len);
    text_append(r, res->content);
    if (SG_UNLIKELY(res->tool_n_args)) {
        if (!r->tool_text)
            r->tool_text_at = r->text_len;
        r->tool_text = true;
        for (uint32_t i = 0; i < res->tool_n_args; i++)
            text_append_as(r, res->tool_args[i], !res->tool_args_json);
    }
}

/* The tool calls an event starts or a whole response holds (counted whether or not they carry arguments). */
static void tool_calls_seen(sg_req_t *r, const sg_oai_result_t *res)
{
    r->rec.tool_calls += res->tool_calls;
    if (res->tool_index_max >= 0 && (uint32_t)res->tool_index_max + 1 > r->tool_index_n)
        r->tool_index_n = (uint32_t)res->tool_index_max + 1;
    /* a server that sends no id or name in a call's first delta still numbers its calls */
    if (r->tool_index_n > r->rec.tool_calls)
        r->rec.tool_calls = r->tool_index_n;
}

int wk_add_content_event(sg_req_t *r, int64_t t)
{
    sg_record_t *rec = &r->rec;
    if (rec->first_token_ns == 0)
        rec->first_token_ns = t;
    else if (rec->second_token_ns == 0)
        rec->second_token_ns = t;
    if (rec->n_events == r->events_cap) {
        uint32_t ncap = r->events_cap ? r->events_cap * 2 : 16;
        uint32_t *ne = realloc(r->events, ncap * sizeof(*ne));
        if (!ne)
            return SG_ENOMEM;
        r->events = ne;
        r->events_cap = ncap;
    }
    int64_t off_us = (t - rec->first_token_ns) / 1000;
    uint32_t us = off_us > UINT32_MAX ? UINT32_MAX : (uint32_t)off_us;
    if (rec->n_events && r->events[rec->n_events - 1] == us)
        wk_events_shared++; /* came in the same read as the one before (or within the same microsecond) */
    r->events[rec->n_events++] = us;
    rec->content_events++;
    return 0;
}

static int on_sse_event(void *ud, const sg_sse_event_t *ev)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    if (!r)
        return SG_EPROTO;
    if (sg_oai_is_done(ev->data.base, ev->data.len))
        return 0; /* the end of the response is taken when the HTTP body ends, in the same read */
    sg_oai_result_t res;
    if (sg_oai_decode_memo(&c->w->oai_memo, c->w->cfg->endpoint_type, ev->data.base, ev->data.len, &res) < 0) {
        wk_set_error(r, SG_ERRC_PROTOCOL, "malformed JSON in SSE event: %.*s",
                     (int)(ev->data.len > 60 ? 60 : ev->data.len), ev->data.base);
        return 0; /* keep reading so the connection stays in step; the request is failed */
    }
    if (res.is_error) {
        wk_set_error(r, SG_ERRC_SERVER, "server error in stream: %.*s",
                     (int)(res.error_message.len > 90 ? 90 : res.error_message.len),
                     res.error_message.base ? res.error_message.base : "");
        return 0;
    }
    r->shape_seen |= res.recognized;
    wk_apply_decoded(r, &res);
    if (SG_UNLIKELY(res.tool_calls || res.tool_index_max >= 0))
        tool_calls_seen(r, &res);
    if (res.content.len > 0 || res.reasoning.len > 0 || res.tool_n_args > 0) {
        wk_capture_text(c->w, r, &res);
        return content_event(r, &res);
    }
    return 0;
}

static const sg_sse_cb_t sse_cb = {.on_event = on_sse_event};

int wk_on_head(void *ud, const sg_h1_resp_head_t *head)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    if (!r)
        return SG_EPROTO; /* a response nobody asked for */
    r->rec.http_status = head->status;
    if (r->rec.head_ns == 0)
        r->rec.head_ns = wk_t_recv_ns;
    c->event_stream = head->event_stream;
    /* measured by what it is: a body that asked for a stream (or not) without --streaming saying so, or a server
     * that answers otherwise than asked, still gets the metrics of what came */
    if (head->status >= 200 && head->status <= 299)
        r->rec.streaming = head->event_stream;
    if (head->status < 200 || head->status > 299)
        wk_set_error(r, SG_ERRC_HTTP, "HTTP %d", head->status);
    return 0;
}

int wk_on_body(void *ud, const char *data, size_t len)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    r->rec.response_bytes += len;
    if (r->rec.err_class == SG_ERRC_HTTP) {
        /* keep the start of an error body for the message sample */
        if (c->body_len < ERR_BODY_SAMPLE)
            return wk_body_append(c, data, len < ERR_BODY_SAMPLE - c->body_len ? len : ERR_BODY_SAMPLE - c->body_len,
                                  ERR_BODY_SAMPLE);
        return 0;
    }
    if (c->event_stream) {
        int err = sg_sse_feed(&c->sse, data, len, &sse_cb, c);
        if (err < 0) {
            wk_set_error(r, SG_ERRC_PROTOCOL, "SSE: %s", sg_strerror(err));
            return err;
        }
        return 0;
    }
    int err = wk_body_append(c, data, len, MAX_BODY_BYTES);
    if (err < 0)
        wk_set_error(r, SG_ERRC_PROTOCOL, "response body: %s", sg_strerror(err));
    return err;
}

static void finish_error_body(resp_t *c, sg_req_t *r)
{
    /* Prefer the server's own error message over "HTTP 500". */
    sg_oai_result_t res;
    if (c->body_len && sg_oai_decode(c->w->cfg->endpoint_type, c->body, c->body_len, &res) == 0 && res.is_error &&
        res.error_message.len) {
        snprintf(r->rec.err_msg, sizeof(r->rec.err_msg), "HTTP %d: %.*s", r->rec.http_status,
                 (int)(res.error_message.len > 100 ? 100 : res.error_message.len), res.error_message.base);
    } else if (c->body_len) {
        char sample[80];
        body_sample(sample, sizeof sample, c->body, c->body_len);
        snprintf(r->rec.err_msg, sizeof(r->rec.err_msg), "HTTP %d: %s", r->rec.http_status, sample);
    }
}

int wk_on_complete(void *ud)
{
    resp_t *c = ud;
    sg_req_t *r = c->req;
    sg_record_t *rec = &r->rec;
    if (rec->err_class == SG_ERRC_HTTP) {
        finish_error_body(c, r);
    } else if (rec->err_class == SG_ERRC_NONE) {
        if (c->event_stream) {
            if (sg_sse_pending(&c->sse))
                wk_set_error(r, SG_ERRC_PROTOCOL, "stream ended inside an SSE event");
            else if (!r->shape_seen && sg_endpoint(c->w->cfg->endpoint_type)->typed_stream)
                wk_set_error(r, SG_ERRC_PROTOCOL, "no event of a %s stream came (another API answers at this path?)",
                             sg_endpoint(c->w->cfg->endpoint_type)->name);
        } else {
            sg_oai_result_t res;
            if (sg_oai_decode(c->w->cfg->endpoint_type, c->body ? c->body : "", c->body_len, &res) < 0) {
                wk_set_error(r, SG_ERRC_PROTOCOL, "malformed JSON response body");
            } else if (res.is_error) {
                wk_set_error(r, SG_ERRC_SERVER, "server error: %.*s",
                             (int)(res.error_message.len > 100 ? 100 : res.error_message.len),
                             res.error_message.base ? res.error_message.base : "");
            } else if (!wrong_shape(c, r, &res)) {
                wk_apply_decoded(r, &res);
                if (res.tool_calls) {
                    tool_calls_seen(r, &res);
                    r->tool_only = res.content.len == 0 && res.reasoning.len == 0;
                }
                if (res.content.len > 0 || res.reasoning.len > 0 || res.tool_n_args > 0) {
                    rec->content_events = 1;
                    wk_capture_text(c->w, r, &res);
                }
            }
        }
    }
    rec->end_ns = wk_t_recv_ns;
    c->complete = true;
    return 0;
}

const sg_h1_resp_cb_t wk_h1_cb = {.on_head = wk_on_head, .on_body = wk_on_body, .on_complete = wk_on_complete};
