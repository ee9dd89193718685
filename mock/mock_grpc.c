/*
 * surge mock's KServe v2 gRPC service (inference.GRPCInferenceService over h2c), as Triton serves an LLM:
 *   ModelInfer        one ModelInferResponse with text_output = the n tokens' text, due at
 *                     arrival + TTFT + (n - 1) * ITL (the non-streamed completion's timing);
 *   ModelStreamInfer  decoupled: one ModelStreamInferResponse per token, token k due at arrival + TTFT + k * ITL;
 *   ServerLive, ServerReady, ModelReady: true; any other method: UNIMPLEMENTED.
 * n is --output-tokens, else the request's max_tokens (INT32/INT64 tensor, or vLLM's sampling_parameters JSON
 * {"max_tokens": N}), else SG_MOCK_DEFAULT_TOKENS. --error-rate answers INTERNAL (Trailers-Only), --drop-rate
 * resets the stream (half way through a streamed one), as the OpenAI endpoints do. --record gets a line per
 * call with every input tensor (name, datatype, shape, value), so tests can check what a client sent.
 */
#define _GNU_SOURCE
#include "mock_internal.h"

#include "sg_grpc.h"
#include "sg_kserve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE "/inference.GRPCInferenceService/"

bool sg_mock_grpc_path(sg_slice_t path)
{
    return path.len >= sizeof(SERVICE) - 1 && memcmp(path.base, SERVICE, sizeof(SERVICE) - 1) == 0;
}

static bool method_is(sg_slice_t path, const char *full)
{
    size_t n = strlen(full);
    return path.len == n && memcmp(path.base, full, n) == 0;
}

size_t sg_mock_grpc_status_fields(int code, sg_h2srv_field_t *f, char buf[4])
{
    int n = snprintf(buf, 4, "%d", code);
    f[0] = (sg_h2srv_field_t){"grpc-status", buf, (size_t)n};
    if (code == SG_GRPC_OK)
        return 1;
    const char *m = code == SG_GRPC_UNIMPLEMENTED      ? "mock: unknown method"
                    : code == SG_GRPC_INVALID_ARGUMENT ? "mock: the request has no text_input BYTES input"
                    : code == SG_GRPC_INTERNAL         ? "mock: injected error"
                                                       : "mock: error";
    f[1] = (sg_h2srv_field_t){"grpc-message", m, strlen(m)};
    return 2;
}

static void status_job(sg_mock_job_t *j, int code, int64_t now)
{
    j->type = SG_MOCK_JOB_GRPC_STATUS;
    j->static_id = (uint8_t)code;
    j->due_ns = now;
}

/* max_tokens from vLLM's sampling_parameters: {"max_tokens": "N"} or {"max_tokens": N}; -1 when absent. */
static int64_t sampling_max_tokens(sg_slice_t json)
{
    static const char key[] = "\"max_tokens\"";
    const char *p = memmem(json.base, json.len, key, sizeof(key) - 1);
    if (!p)
        return -1;
    const char *end = json.base + json.len;
    p += sizeof(key) - 1;
    while (p < end && (*p == ' ' || *p == ':' || *p == '"'))
        p++;
    int64_t v = 0;
    bool any = false;
    while (p < end && *p >= '0' && *p <= '9' && v < (int64_t)SG_MOCK_MAX_TOKENS) {
        v = v * 10 + (*p++ - '0');
        any = true;
    }
    return any ? v : -1;
}

static void record_tensor(sg_mock_buf_t *b, const sg_kserve_tensor_t *t)
{
    SG_MOCK_BUF_LIT(b, "\"");
    sg_mock_buf_json_escape(b, (sg_slice_t){t->name, strlen(t->name)});
    SG_MOCK_BUF_LIT(b, "\":{\"datatype\":\"");
    sg_mock_buf_json_escape(b, (sg_slice_t){t->datatype, strlen(t->datatype)});
    SG_MOCK_BUF_LIT(b, "\",\"shape\":[");
    for (size_t i = 0; i < t->n_shape; i++) {
        if (i)
            SG_MOCK_BUF_LIT(b, ",");
        char num[24];
        int n = snprintf(num, sizeof(num), "%lld", (long long)t->shape[i]);
        sg_mock_buf_mem(b, num, (size_t)n);
    }
    SG_MOCK_BUF_LIT(b, "],\"value\":");
    sg_slice_t s;
    int64_t i;
    bool v;
    char num[40];
    if (sg_kserve_tensor_bytes(t, 0, &s) == 0) {
        SG_MOCK_BUF_LIT(b, "\"");
        sg_mock_buf_json_escape(b, s);
        SG_MOCK_BUF_LIT(b, "\"");
    } else if (sg_kserve_tensor_bool(t, &v) == 0) {
        if (v)
            SG_MOCK_BUF_LIT(b, "true");
        else
            SG_MOCK_BUF_LIT(b, "false");
    } else if (sg_kserve_tensor_int(t, &i) == 0) {
        sg_mock_buf_mem(b, num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)i));
    } else if (strcmp(t->datatype, "FP32") == 0 && t->raw.len >= 4) {
        float f;
        memcpy(&f, t->raw.base, 4); /* little-endian hosts only, like the rest of the mock */
        sg_mock_buf_mem(b, num, (size_t)snprintf(num, sizeof(num), "%.9g", (double)f));
    } else {
        SG_MOCK_BUF_LIT(b, "null");
    }
    SG_MOCK_BUF_LIT(b, "}");
}

static void record_call(const sg_mock_grpc_ctx_t *x, int64_t now, sg_slice_t path, const sg_kserve_req_view_t *v,
                        sg_slice_t prompt, int64_t max_tokens, uint64_t words)
{
    sg_mock_buf_t *b = x->rec;
    sg_mock_record_head(b, x->rec_first_ns, now, x->worker, x->conn, path);
    SG_MOCK_BUF_LIT(b, ",\"model\":\"");
    sg_mock_buf_json_escape(b, (sg_slice_t){v->model, strlen(v->model)});
    if (method_is(path, SG_KSERVE_PATH_STREAM))
        SG_MOCK_BUF_LIT(b, "\",\"stream\":true,\"max_tokens\":");
    else
        SG_MOCK_BUF_LIT(b, "\",\"stream\":false,\"max_tokens\":");
    if (max_tokens >= 0)
        sg_mock_buf_u64(b, (uint64_t)max_tokens);
    else
        SG_MOCK_BUF_LIT(b, "null");
    SG_MOCK_BUF_LIT(b, ",\"prompt_words\":");
    sg_mock_buf_u64(b, words);
    SG_MOCK_BUF_LIT(b, ",\"prompt\":\"");
    sg_mock_buf_json_escape(b, prompt);
    SG_MOCK_BUF_LIT(b, "\",\"inputs\":{");
    for (size_t k = 0; k < v->n_inputs; k++) {
        if (k)
            SG_MOCK_BUF_LIT(b, ",");
        record_tensor(b, &v->inputs[k]);
    }
    SG_MOCK_BUF_LIT(b, "}}\n");
}

/* The model name, kept in the job's head buffer for the responses. */
static int keep_model(sg_mock_job_t *j, const char *model)
{
    size_t n = strlen(model);
    if (n > sizeof(j->head_inline)) {
        char *h = malloc(n);
        if (!h)
            return SG_ENOMEM;
        j->head = h;
    }
    memcpy(j->head, model, n);
    j->head_len = (uint32_t)n;
    return 0;
}

int sg_mock_grpc_build(const sg_mock_grpc_ctx_t *x, sg_mock_job_t *j, sg_slice_t path, sg_slice_t body, int64_t now)
{
    const sg_mock_server_t *s = x->srv;
    if (method_is(path, SERVICE "ServerLive") || method_is(path, SERVICE "ServerReady") ||
        method_is(path, SERVICE "ModelReady")) {
        j->type = SG_MOCK_JOB_GRPC_CONST;
        j->due_ns = now;
        return 0;
    }
    bool stream = method_is(path, SG_KSERVE_PATH_STREAM);
    if (!stream && !method_is(path, SG_KSERVE_PATH_INFER)) {
        status_job(j, SG_GRPC_UNIMPLEMENTED, now);
        return 0;
    }
    /* one request message: ModelStreamInfer's client may send more on the stream; the mock answers the first */
    const sg_kserve_tensor_t *text;
    sg_kserve_req_view_t v;
    sg_slice_t prompt;
    if (body.len < SG_GRPC_PREFIX_LEN || body.base[0] != 0) {
        status_job(j, SG_GRPC_INVALID_ARGUMENT, now);
        return 0;
    }
    uint32_t mlen = (uint32_t)(uint8_t)body.base[1] << 24 | (uint32_t)(uint8_t)body.base[2] << 16 |
                    (uint32_t)(uint8_t)body.base[3] << 8 | (uint32_t)(uint8_t)body.base[4];
    if (mlen > body.len - SG_GRPC_PREFIX_LEN ||
        sg_kserve_dec_request(x->kdec, body.base + SG_GRPC_PREFIX_LEN, mlen, &v) < 0 ||
        !(text = sg_kserve_req_input(&v, "text_input")) || sg_kserve_tensor_bytes(text, 0, &prompt) < 0) {
        status_job(j, SG_GRPC_INVALID_ARGUMENT, now);
        return 0;
    }
    int64_t max_tokens = -1;
    const sg_kserve_tensor_t *t = sg_kserve_req_input(&v, "max_tokens");
    if (t && sg_kserve_tensor_int(t, &max_tokens) < 0)
        max_tokens = -1;
    sg_slice_t sp;
    if (!t && (t = sg_kserve_req_input(&v, "sampling_parameters")) && sg_kserve_tensor_bytes(t, 0, &sp) == 0)
        max_tokens = sampling_max_tokens(sp);
    uint64_t words = sg_count_words(prompt.base, prompt.len);
    x->st->completions++;
    if (x->rec)
        record_call(x, now, path, &v, prompt, max_tokens, words);
    if (s->opts.error_rate > 0 && sg_rng_uniform(x->rng) <= s->opts.error_rate) {
        x->st->errors++;
        status_job(j, SG_GRPC_INTERNAL, now);
        return 0;
    }
    bool drop = s->opts.drop_rate > 0 && sg_rng_uniform(x->rng) <= s->opts.drop_rate;
    uint64_t n = s->opts.output_tokens;
    if (!n)
        n = max_tokens >= 0 ? (uint64_t)max_tokens : SG_MOCK_DEFAULT_TOKENS;
    if (n < 1)
        n = 1;
    if (n > SG_MOCK_MAX_TOKENS)
        n = SG_MOCK_MAX_TOKENS;
    j->n = (uint32_t)n;
    j->prompt_words = words;
    if (keep_model(j, v.model) < 0)
        return SG_ENOMEM;
    j->usage_prompt = words;
    sg_mock_job_schedule(s, j, now, x->worker);
    if (stream) {
        x->st->streamed++;
        j->type = SG_MOCK_JOB_GRPC_STREAM;
        j->due_ns = now;
        if (drop)
            j->drop_at = j->n / 2;
    } else {
        j->type = SG_MOCK_JOB_GRPC_UNARY;
        j->due_ns = j->start_ns + j->ttft_ns + s->itl_ns * (int64_t)(j->n - 1);
        j->drop_full = drop;
    }
    return 0;
}

static void put_response(sg_mock_buf_t *b, const sg_mock_job_t *j, const char *text, size_t len, bool stream)
{
    char model[sizeof(j->head_inline) + 1];
    char *m = j->head_len < sizeof(model) ? model : malloc(j->head_len + 1);
    if (!m) {
        b->oom = true;
        return;
    }
    memcpy(m, j->head, j->head_len);
    m[j->head_len] = '\0';
    sg_kserve_resp_spec_t spec = {
        .model = m, .has_text = true, .text = text, .text_len = len, .final = -1, .stream = stream};
    uint8_t *frame;
    size_t flen;
    if (sg_kserve_resp_encode(&spec, &frame, &flen) < 0) {
        b->oom = true;
    } else {
        sg_mock_buf_mem(b, frame, flen);
        free(frame);
    }
    if (m != model)
        free(m);
}

void sg_mock_grpc_render_token(sg_mock_buf_t *b, const sg_mock_job_t *j, uint32_t k)
{
    sg_slice_t w = sg_mock_word(k);
    put_response(b, j, w.base, w.len, true);
}

void sg_mock_grpc_render_full(sg_mock_buf_t *b, const sg_mock_job_t *j)
{
    size_t len = sg_mock_text_len(j->n);
    char *text = malloc(len ? len : 1);
    if (!text) {
        b->oom = true;
        return;
    }
    sg_mock_text(text, j->n);
    put_response(b, j, text, len, false);
    free(text);
}

void sg_mock_grpc_render_const(sg_mock_buf_t *b)
{
    /* ServerLiveResponse{live: true} = ServerReadyResponse{ready: true} = ModelReadyResponse{ready: true} */
    static const char frame[] = {0, 0, 0, 0, 2, 0x08, 0x01};
    sg_mock_buf_mem(b, frame, sizeof(frame));
}
