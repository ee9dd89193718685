/*
 * --service-kind triton: what a KServe v2 gRPC call's HTTP/2 stream means (worker_h2.c hands its head, fields,
 * DATA and end here instead of to the OpenAI path).
 *
 * The head's fields and the trailers go to sg_grpc_meta (HTTP status, content-type, grpc-status, grpc-message).
 * DATA of a gRPC response (HTTP 200, content-type application/grpc...) goes through the message deframer, each
 * message through the KServe decoder:
 *   - ModelStreamInfer (--streaming): every response message whose text_output is not empty is one content event
 *     at the receive time of the read that completed it (wk_t_recv_ns), as an SSE event is: TTFT, ITL and the
 *     event count come from these; a message with error_message fails the request (class server);
 *   - ModelInfer: the one response; its text_output makes content_events 1, as a non-streamed OpenAI body does.
 * text_output is kept for --tokenizer (the post-run OSL pass). When the stream ends, the call is judged by
 * sg_grpc_meta_result: grpc-status other than 0 is class grpc ("grpc-status 14 UNAVAILABLE: ..."); a response
 * that is not gRPC at all (another status, another content type) is class protocol, "... not a gRPC server".
 */
#define _GNU_SOURCE
#include "worker_int.h"

#include "sg_grpc.h"
#include "sg_kserve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wk_grpc_resp_reset(resp_t *rs)
{
    if (rs->g->dec.max_msg == 0)
        sg_grpc_dec_init(&rs->g->dec, 0);
    else
        sg_grpc_dec_reset(&rs->g->dec);
    sg_grpc_meta_init(&rs->g->meta);
    rs->grpc_body = false;
    rs->grpc_stop = false;
    rs->grpc_msgs = 0;
}

void wk_grpc_resp_free(resp_t *rs)
{
    if (rs->g && rs->g->dec.max_msg)
        sg_grpc_dec_free(&rs->g->dec);
}

void wk_grpc_free_all(sg_worker_t *w)
{
    sg_kserve_dec_free(w->kdec);
    w->kdec = NULL;
}

int wk_grpc_on_field(void *ud, void *stream_ud, const char *name, size_t name_len, const char *value, size_t value_len,
                     bool trailer)
{
    (void)ud;
    (void)trailer;
    resp_t *rs = stream_ud;
    if (!rs->req)
        return 0; /* abandoned: on_head resets it */
    if (sg_grpc_meta_header(&rs->g->meta, name, name_len, value, value_len) < 0)
        wk_set_error(rs->req, SG_ERRC_PROTOCOL, "malformed %.*s: \"%.*s\"", (int)name_len, name,
                     (int)(value_len > 40 ? 40 : value_len), value);
    return 0;
}

int wk_grpc_on_head(resp_t *rs, int status)
{
    sg_req_t *r = rs->req;
    r->rec.http_status = status;
    rs->grpc_body = status == 200 && rs->g->meta.content_type_grpc;
    return 0;
}

static int on_message(void *ud, sg_slice_t msg)
{
    resp_t *rs = ud;
    sg_req_t *r = rs->req;
    sg_worker_t *w = rs->w;
    if (!w->kdec && !(w->kdec = sg_kserve_dec_new())) {
        wk_set_error(r, SG_ERRC_PROTOCOL, "out of memory decoding a KServe response");
        return SG_ENOMEM;
    }
    rs->grpc_msgs++;
    sg_kserve_resp_t res;
    bool stream = w->cfg->streaming;
    int err = stream ? sg_kserve_dec_stream(w->kdec, msg.base, msg.len, &res)
                     : sg_kserve_dec_infer(w->kdec, msg.base, msg.len, &res);
    if (err < 0) {
        wk_set_error(r, SG_ERRC_PROTOCOL, "%s response: %s", stream ? "ModelStreamInfer" : "ModelInfer",
                     sg_kserve_dec_error(w->kdec));
        return err;
    }
    if (res.has_error) {
        wk_set_error(r, SG_ERRC_SERVER, "error in the ModelStreamInfer stream: %.*s",
                     (int)(res.error.len > 90 ? 90 : res.error.len), res.error.base);
        return 0;
    }
    if (!res.has_text || res.text.len == 0)
        return 0; /* e.g. an empty final response (triton_final_response) */
    wk_capture_bytes(w, r, res.text);
    if (stream)
        return wk_add_content_event(r, wk_t_recv_ns);
    r->rec.content_events = 1;
    return 0;
}

static const sg_grpc_dec_cb_t dec_cb = {.on_message = on_message};

int wk_grpc_on_data(resp_t *rs, const char *data, size_t len)
{
    sg_req_t *r = rs->req;
    r->rec.response_bytes += len;
    if (!rs->grpc_body) {
        /* not a gRPC response: keep its start for the message */
        if (rs->body_len < ERR_BODY_SAMPLE)
            return wk_body_append(rs, data, len < ERR_BODY_SAMPLE - rs->body_len ? len : ERR_BODY_SAMPLE - rs->body_len,
                                  ERR_BODY_SAMPLE);
        return 0;
    }
    if (rs->grpc_stop)
        return 0;
    int err = sg_grpc_dec_feed(&rs->g->dec, data, len, &dec_cb, rs);
    if (err < 0) {
        /* the request has failed; read on to the end of the stream so the session stays in step */
        if (err == SG_EPROTO || err == SG_ETOOBIG)
            wk_set_error(r, SG_ERRC_PROTOCOL, "gRPC framing: %s", rs->g->dec.err);
        else
            wk_set_error(r, SG_ERRC_PROTOCOL, "gRPC response: %s", sg_strerror(err));
        rs->grpc_stop = true;
    }
    return 0;
}

void wk_grpc_on_complete(resp_t *rs)
{
    sg_req_t *r = rs->req;
    sg_record_t *rec = &r->rec;
    char msg[SG_RECORD_MSG];
    switch (sg_grpc_meta_result(&rs->g->meta, msg, sizeof(msg))) {
    case SG_GRPC_CALL_OK:
        if (rs->grpc_stop)
            break;
        if (sg_grpc_dec_pending(&rs->g->dec))
            wk_set_error(r, SG_ERRC_PROTOCOL, "the call ended inside a gRPC message");
        else if (!rs->w->cfg->streaming && rs->grpc_msgs == 0)
            wk_set_error(r, SG_ERRC_PROTOCOL, "ModelInfer ended with grpc-status 0 but no response message");
        break;
    case SG_GRPC_CALL_STATUS:
        wk_set_error(r, SG_ERRC_GRPC, "%s", msg);
        break;
    case SG_GRPC_CALL_NOT_GRPC: {
        /* say what came instead: the start of the body, printable */
        char sample[48];
        size_t n = rs->body_len < sizeof(sample) - 1 ? rs->body_len : sizeof(sample) - 1;
        for (size_t i = 0; i < n; i++)
            sample[i] = (rs->body[i] >= 32 && rs->body[i] < 127) ? rs->body[i] : ' ';
        sample[n] = 0;
        if (n)
            wk_set_error(r, SG_ERRC_PROTOCOL, "%s (body: %s)", msg, sample);
        else
            wk_set_error(r, SG_ERRC_PROTOCOL, "%s", msg);
        break;
    }
    case SG_GRPC_CALL_NO_STATUS:
        wk_set_error(r, SG_ERRC_PROTOCOL, "%s", msg);
        break;
    }
    rec->end_ns = wk_t_recv_ns;
    rs->complete = true;
}
