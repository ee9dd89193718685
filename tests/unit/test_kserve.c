/*
 * KServe v2 messages: requests per backend decode back to the tensors GenAI-Perf sends (names, datatypes,
 * shapes, values); extras replace or add inputs; bad requests are refused with a message. Responses with
 * text_output in raw_output_contents and in bytes_contents, several elements joined, triton_final_response,
 * the stream's error_message; malformed messages give SG_EPROTO and a reason; a decoder reused many times.
 */
#include "sg_grpc.h"
#include "sg_kserve.h"
#include "test.h"

#include "kserve.pb-c.h"

#include <stdlib.h>

static sg_kserve_dec_t *dec;

/* Encode r, check the frame prefix, decode the request into v (valid until the next decode). */
static int round_trip(const sg_kserve_req_t *r, sg_kserve_req_view_t *v, uint8_t **frame, size_t *flen)
{
    char err[128] = "";
    int rc = sg_kserve_req_encode(r, frame, flen, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "encode: %s\n", err);
        return rc;
    }
    CHECK(*flen > 5);
    uint32_t n = (uint32_t)(*frame)[1] << 24 | (uint32_t)(*frame)[2] << 16 | (uint32_t)(*frame)[3] << 8 | (*frame)[4];
    CHECK_EQ_INT((*frame)[0], 0);
    CHECK_EQ_INT(n, *flen - 5);
    rc = sg_kserve_dec_request(dec, *frame + 5, *flen - 5, v);
    if (rc < 0)
        fprintf(stderr, "decode: %s\n", sg_kserve_dec_error(dec));
    return rc;
}

static void check_shape(const sg_kserve_tensor_t *t, size_t rank)
{
    CHECK_EQ_INT(t->n_shape, rank);
    for (size_t i = 0; i < t->n_shape && i < 2; i++)
        CHECK_EQ_INT(t->shape[i], 1);
}

static void check_bytes(const sg_kserve_req_view_t *v, size_t idx, const char *name, const char *want, size_t want_len,
                        size_t rank)
{
    CHECK(idx < v->n_inputs);
    if (idx >= v->n_inputs)
        return;
    const sg_kserve_tensor_t *t = &v->inputs[idx];
    CHECK_EQ_STR(t->name, strlen(t->name), name);
    CHECK_EQ_STR(t->datatype, strlen(t->datatype), "BYTES");
    check_shape(t, rank);
    sg_slice_t s;
    CHECK_EQ_INT(sg_kserve_tensor_bytes(t, 0, &s), 0);
    CHECK(s.len == want_len && memcmp(s.base, want, want_len) == 0);
    CHECK_EQ_INT(t->raw.len, 4 + want_len); /* exactly one element */
    CHECK_EQ_INT(sg_kserve_tensor_bytes(t, 1, &s), SG_EPROTO);
}

static void check_int32(const sg_kserve_req_view_t *v, size_t idx, const char *name, int64_t want, size_t rank)
{
    CHECK(idx < v->n_inputs);
    if (idx >= v->n_inputs)
        return;
    const sg_kserve_tensor_t *t = &v->inputs[idx];
    CHECK_EQ_STR(t->name, strlen(t->name), name);
    CHECK_EQ_STR(t->datatype, strlen(t->datatype), "INT32");
    check_shape(t, rank);
    CHECK_EQ_INT(t->raw.len, 4);
    int64_t x = -12345;
    CHECK_EQ_INT(sg_kserve_tensor_int(t, &x), 0);
    CHECK_EQ_INT(x, want);
}

static void check_bool(const sg_kserve_req_view_t *v, size_t idx, const char *name, bool want, size_t rank)
{
    CHECK(idx < v->n_inputs);
    if (idx >= v->n_inputs)
        return;
    const sg_kserve_tensor_t *t = &v->inputs[idx];
    CHECK_EQ_STR(t->name, strlen(t->name), name);
    CHECK_EQ_STR(t->datatype, strlen(t->datatype), "BOOL");
    check_shape(t, rank);
    CHECK_EQ_INT(t->raw.len, 1);
    bool b = !want;
    CHECK_EQ_INT(sg_kserve_tensor_bool(t, &b), 0);
    CHECK(b == want);
}

static void test_tensorrtllm(void)
{
    uint8_t *f;
    size_t flen;
    sg_kserve_req_view_t v;
    /* GenAI-Perf defaults: no output length asked for gives max_tokens 256; no --streaming, no stream input. */
    sg_kserve_req_t r = {.backend = SG_KSERVE_TENSORRTLLM,
                         .model = "ensemble",
                         .prompt = "Hello, world",
                         .prompt_len = 12,
                         .max_tokens = -1};
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_STR(v.model, strlen(v.model), "ensemble");
    CHECK_EQ_STR(v.model_version, strlen(v.model_version), "");
    CHECK_EQ_STR(v.id, strlen(v.id), "");
    CHECK_EQ_INT(v.n_inputs, 2);
    check_bytes(&v, 0, "text_input", "Hello, world", 12, 2);
    check_int32(&v, 1, "max_tokens", 256, 2);
    free(f);

    /* --streaming, --output-tokens-mean 100 --output-tokens-mean-deterministic, a version and an id. */
    r.max_tokens = 100;
    r.stream = true;
    r.deterministic = true;
    r.model_version = "3";
    r.id = "req-7";
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_STR(v.model_version, strlen(v.model_version), "3");
    CHECK_EQ_STR(v.id, strlen(v.id), "req-7");
    CHECK_EQ_INT(v.n_inputs, 4);
    check_bytes(&v, 0, "text_input", "Hello, world", 12, 2);
    check_int32(&v, 1, "max_tokens", 100, 2);
    check_bool(&v, 2, "stream", true, 2);
    check_int32(&v, 3, "min_length", 100, 2);
    CHECK(sg_kserve_req_input(&v, "min_length") == &v.inputs[3]);
    CHECK(sg_kserve_req_input(&v, "sampling_parameters") == NULL);
    free(f);

    /* A model without a batch dimension: shapes [1]. A prompt with NUL bytes and non-ASCII passes unchanged. */
    r.shape_rank = 1;
    r.prompt = "a\0b\xc3\xa9";
    r.prompt_len = 5;
    r.deterministic = false;
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_INT(v.n_inputs, 3);
    check_bytes(&v, 0, "text_input", "a\0b\xc3\xa9", 5, 1);
    check_int32(&v, 1, "max_tokens", 100, 1);
    check_bool(&v, 2, "stream", true, 1);
    free(f);

    /* An empty prompt is one empty element. */
    r.prompt = "";
    r.prompt_len = 0;
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    check_bytes(&v, 0, "text_input", "", 0, 1);
    free(f);
}

static void test_vllm(void)
{
    uint8_t *f;
    size_t flen;
    sg_kserve_req_view_t v;
    sg_kserve_req_t r = {
        .backend = SG_KSERVE_VLLM, .model = "vllm_model", .prompt = "Why?", .prompt_len = 4, .max_tokens = -1};
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_INT(v.n_inputs, 2);
    check_bytes(&v, 0, "text_input", "Why?", 4, 1);
    check_bool(&v, 1, "exclude_input_in_output", true, 1);
    free(f);

    r.stream = true;
    r.max_tokens = 128;
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_INT(v.n_inputs, 4);
    check_bytes(&v, 0, "text_input", "Why?", 4, 1);
    check_bool(&v, 1, "exclude_input_in_output", true, 1);
    check_bool(&v, 2, "stream", true, 1);
    const char *sp = "{\"max_tokens\": \"128\"}"; /* json.dumps of GenAI-Perf's dict */
    check_bytes(&v, 3, "sampling_parameters", sp, strlen(sp), 1);
    free(f);

    r.deterministic = true;
    r.shape_rank = 2;
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    sp = "{\"max_tokens\": \"128\", \"min_tokens\": \"128\"}";
    check_bytes(&v, 3, "sampling_parameters", sp, strlen(sp), 2);
    free(f);
}

static void test_extras(void)
{
    uint8_t *f = NULL;
    size_t flen;
    sg_kserve_req_view_t v;
    char err[128];
    sg_kserve_extra_t ex[] = {
        {.name = "max_tokens", .dtype = SG_KSERVE_INT32, .i = 7},   /* replaces the standard one in place */
        {.name = "temperature", .dtype = SG_KSERVE_FP32, .f = 0.5}, /* added */
        {.name = "random_seed", .dtype = SG_KSERVE_INT64, .i = -2}, /* added */
        {.name = "stop", .dtype = SG_KSERVE_BYTES, .s = "END", .s_len = 3},
        {.name = "return_log_probs", .dtype = SG_KSERVE_BOOL, .b = false},
    };
    sg_kserve_req_t r = {.backend = SG_KSERVE_TENSORRTLLM,
                         .model = "m",
                         .prompt = "p",
                         .prompt_len = 1,
                         .max_tokens = 50,
                         .extra = ex,
                         .n_extra = SG_ARRAY_LEN(ex)};
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_INT(v.n_inputs, 6);
    check_bytes(&v, 0, "text_input", "p", 1, 2);
    check_int32(&v, 1, "max_tokens", 7, 2);
    const sg_kserve_tensor_t *t = &v.inputs[2];
    CHECK_EQ_STR(t->name, strlen(t->name), "temperature");
    CHECK_EQ_STR(t->datatype, strlen(t->datatype), "FP32");
    CHECK(t->raw.len == 4 && memcmp(t->raw.base, "\x00\x00\x00\x3f", 4) == 0); /* 0.5f little-endian */
    t = &v.inputs[3];
    CHECK_EQ_STR(t->datatype, strlen(t->datatype), "INT64");
    int64_t x;
    CHECK_EQ_INT(sg_kserve_tensor_int(t, &x), 0);
    CHECK_EQ_INT(x, -2);
    check_bytes(&v, 4, "stop", "END", 3, 2);
    check_bool(&v, 5, "return_log_probs", false, 2);
    free(f);

    /* Refusals, each with a message. */
    sg_kserve_extra_t dup[] = {{.name = "a", .dtype = SG_KSERVE_BOOL}, {.name = "a", .dtype = SG_KSERVE_BOOL}};
    r.extra = dup;
    r.n_extra = 2;
    f = NULL;
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);
    CHECK_EQ_STR(err, strlen(err), "extra input a given twice");
    CHECK(f == NULL);
    sg_kserve_extra_t big[] = {{.name = "end_id", .dtype = SG_KSERVE_INT32, .i = 1LL << 31}};
    r.extra = big;
    r.n_extra = 1;
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);
    CHECK_EQ_STR(err, strlen(err), "extra input end_id: 2147483648 does not fit INT32");
    sg_kserve_extra_t noname[] = {{.name = "", .dtype = SG_KSERVE_BOOL}};
    r.extra = noname;
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);
    sg_kserve_extra_t many[SG_KSERVE_MAX_TENSORS];
    char names[SG_KSERVE_MAX_TENSORS][8];
    for (int i = 0; i < SG_KSERVE_MAX_TENSORS; i++) {
        snprintf(names[i], sizeof(names[i]), "x%d", i);
        many[i] = (sg_kserve_extra_t){.name = names[i], .dtype = SG_KSERVE_BOOL};
    }
    r.extra = many;
    r.n_extra = SG_KSERVE_MAX_TENSORS;
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);
    CHECK_EQ_STR(err, strlen(err), "more than 32 input tensors");
    r.n_extra = SG_KSERVE_MAX_TENSORS - 2; /* text_input, max_tokens and 30 extras: exactly the limit */
    CHECK_EQ_INT(round_trip(&r, &v, &f, &flen), 0);
    CHECK_EQ_INT(v.n_inputs, SG_KSERVE_MAX_TENSORS);
    free(f);
    r.n_extra = 0;
    r.model = "";
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);
    CHECK_EQ_STR(err, strlen(err), "no model name");
    r.model = "m";
    r.max_tokens = 1LL << 31;
    CHECK_EQ_INT(sg_kserve_req_encode(&r, &f, &flen, err, sizeof(err)), SG_EINVAL);

    sg_kserve_backend_t b;
    CHECK_EQ_INT(sg_kserve_backend_parse("vllm", &b), 0);
    CHECK(b == SG_KSERVE_VLLM);
    CHECK_EQ_INT(sg_kserve_backend_parse("tensorrtllm", &b), 0);
    CHECK(b == SG_KSERVE_TENSORRTLLM);
    CHECK_EQ_INT(sg_kserve_backend_parse("trtllm", &b), SG_EINVAL);
    CHECK(strcmp(sg_kserve_backend_name(SG_KSERVE_VLLM), "vllm") == 0);
}

/* Encode a response spec, check the frame, decode it as unary or stream. */
static int resp_round_trip(const sg_kserve_resp_spec_t *s, sg_kserve_resp_t *out)
{
    uint8_t *f;
    size_t flen;
    int rc = sg_kserve_resp_encode(s, &f, &flen);
    if (rc < 0)
        return rc;
    CHECK(flen >= 5 && f[0] == 0);
    rc = s->stream ? sg_kserve_dec_stream(dec, f + 5, flen - 5, out) : sg_kserve_dec_infer(dec, f + 5, flen - 5, out);
    free(f);
    return rc;
}

static void test_responses(void)
{
    sg_kserve_resp_t o;
    for (int typed = 0; typed < 2; typed++) {
        sg_kserve_resp_spec_t s = {.model = "ensemble",
                                   .id = "42",
                                   .has_text = true,
                                   .text = " world",
                                   .text_len = 6,
                                   .typed_contents = typed,
                                   .final = -1};
        CHECK_EQ_INT(resp_round_trip(&s, &o), 0);
        CHECK(o.has_response && o.has_text && !o.has_error);
        CHECK_EQ_STR(o.text.base, o.text.len, " world");
        CHECK_EQ_STR(o.model.base, o.model.len, "ensemble");
        CHECK_EQ_STR(o.id.base, o.id.len, "42");
        CHECK_EQ_INT(o.final, -1);

        /* Streamed, with Triton's final flag either way; the text may hold any byte. */
        s.stream = true;
        s.final = 0;
        s.text = "\0\xff";
        s.text_len = 2;
        CHECK_EQ_INT(resp_round_trip(&s, &o), 0);
        CHECK(o.has_text && o.text.len == 2 && memcmp(o.text.base, "\0\xff", 2) == 0);
        CHECK_EQ_INT(o.final, 0);
        s.final = 1;
        s.text_len = 0;
        CHECK_EQ_INT(resp_round_trip(&s, &o), 0);
        CHECK(o.has_text && o.text.len == 0);
        CHECK_EQ_INT(o.final, 1);
    }
    /* Triton's empty final response of a decoupled model: no outputs, only the flag. */
    sg_kserve_resp_spec_t fin = {.model = "m", .stream = true, .final = 1};
    CHECK_EQ_INT(resp_round_trip(&fin, &o), 0);
    CHECK(o.has_response && !o.has_text && !o.has_error);
    CHECK_EQ_INT(o.final, 1);

    /* A stream error alone: no infer_response. */
    sg_kserve_resp_spec_t er = {.stream = true, .final = -1, .error = "in ensemble 'ensemble': out of memory"};
    CHECK_EQ_INT(resp_round_trip(&er, &o), 0);
    CHECK(o.has_error && !o.has_response && !o.has_text);
    CHECK_EQ_STR(o.error.base, o.error.len, "in ensemble 'ensemble': out of memory");
    er.error = NULL;
    er.stream = false;
    er.error = "x";
    uint8_t *f;
    size_t flen;
    CHECK_EQ_INT(sg_kserve_resp_encode(&er, &f, &flen), SG_EINVAL); /* unary replies carry errors in trailers */
}

/* Pack a hand-built response (shapes the encoder above does not make) and decode it. */
static int decode_built(Inference__ModelInferResponse *r, sg_kserve_resp_t *o)
{
    size_t len = inference__model_infer_response__get_packed_size(r);
    uint8_t *b = malloc(len + 1);
    inference__model_infer_response__pack(r, b);
    int rc = sg_kserve_dec_infer(dec, b, len, o);
    free(b);
    return rc;
}

static void test_response_shapes(void)
{
    sg_kserve_resp_t o;
    int64_t shape[1] = {2};
    /* Two outputs, text_output second; two BYTES elements joined, in raw form. */
    Inference__ModelInferResponse__InferOutputTensor other = INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
    other.name = "cum_log_probs";
    other.datatype = "FP32";
    Inference__ModelInferResponse__InferOutputTensor text = INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
    text.name = "text_output";
    text.datatype = "BYTES";
    text.n_shape = 1;
    text.shape = shape;
    Inference__ModelInferResponse__InferOutputTensor *outs[] = {&other, &text};
    ProtobufCBinaryData raw[2] = {{4, (uint8_t *)"\0\0\0\0"}, {14, (uint8_t *)"\3\0\0\0abc\3\0\0\0def"}};
    Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    r.n_outputs = 2;
    r.outputs = outs;
    r.n_raw_output_contents = 2;
    r.raw_output_contents = raw;
    CHECK_EQ_INT(decode_built(&r, &o), 0);
    CHECK_EQ_STR(o.text.base, o.text.len, "abcdef");

    /* A BYTES element that runs past its tensor, and stray bytes after the last one. */
    raw[1].len = 12;
    CHECK_EQ_INT(decode_built(&r, &o), SG_EPROTO);
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)),
                 "text_output: a BYTES element of 3 bytes runs past the tensor (1 left)");
    raw[1].len = 9;
    CHECK_EQ_INT(decode_built(&r, &o), SG_EPROTO);
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)),
                 "text_output: 2 stray bytes after its last BYTES element");
    /* Fewer raw entries than outputs. */
    r.n_raw_output_contents = 1;
    CHECK_EQ_INT(decode_built(&r, &o), SG_EPROTO);
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)),
                 "raw_output_contents has 1 entries, text_output is output 1");
    /* text_output of the wrong type. */
    r.n_raw_output_contents = 0;
    text.datatype = "FP32";
    CHECK_EQ_INT(decode_built(&r, &o), SG_EPROTO);
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)),
                 "text_output has datatype FP32, not BYTES");
    /* Typed form, three elements (one empty) joined. */
    text.datatype = "BYTES";
    ProtobufCBinaryData el[3] = {{2, (uint8_t *)"ab"}, {0, NULL}, {1, (uint8_t *)"c"}};
    Inference__InferTensorContents c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
    c.n_bytes_contents = 3;
    c.bytes_contents = el;
    text.contents = &c;
    CHECK_EQ_INT(decode_built(&r, &o), 0);
    CHECK_EQ_STR(o.text.base, o.text.len, "abc");
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)), "");
    /* No text_output at all. */
    r.n_outputs = 1;
    CHECK_EQ_INT(decode_built(&r, &o), 0);
    CHECK(!o.has_text && o.text.len == 0);
    /* triton_final_response of another type counts as absent. */
    Inference__InferParameter p = INFERENCE__INFER_PARAMETER__INIT;
    p.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
    p.string_param = "true";
    Inference__ModelInferResponse__ParametersEntry e = INFERENCE__MODEL_INFER_RESPONSE__PARAMETERS_ENTRY__INIT;
    e.key = "triton_final_response";
    e.value = &p;
    Inference__ModelInferResponse__ParametersEntry *ep = &e;
    r.n_parameters = 1;
    r.parameters = &ep;
    CHECK_EQ_INT(decode_built(&r, &o), 0);
    CHECK_EQ_INT(o.final, -1);

    /* Not protobuf at all: a truncated varint, a wrong wire type. */
    CHECK_EQ_INT(sg_kserve_dec_infer(dec, "\x0a\xff", 2, &o), SG_EPROTO);
    CHECK_EQ_STR(sg_kserve_dec_error(dec), strlen(sg_kserve_dec_error(dec)),
                 "not a valid ModelInferResponse (2 bytes)");
    CHECK_EQ_INT(sg_kserve_dec_stream(dec,
                                      "\x0a\x05"
                                      "ab",
                                      4, &o),
                 SG_EPROTO);
    /* An empty message is a valid, empty response. */
    CHECK_EQ_INT(sg_kserve_dec_stream(dec, "", 0, &o), 0);
    CHECK(!o.has_response && !o.has_error);
}

/* A decoder reused for many messages of growing size gives each one back intact. */
static void test_reuse(void)
{
    char *text = malloc(200000);
    for (size_t i = 0; i < 200000; i++)
        text[i] = (char)('A' + i % 23);
    for (size_t n = 1; n <= 200000; n = n * 3 + 1) {
        for (int rep = 0; rep < 3; rep++) {
            sg_kserve_resp_spec_t s = {
                .model = "m", .has_text = true, .text = text, .text_len = n, .stream = rep == 1, .final = rep - 1};
            sg_kserve_resp_t o;
            CHECK_EQ_INT(resp_round_trip(&s, &o), 0);
            CHECK(o.text.len == n && memcmp(o.text.base, text, n) == 0);
            CHECK_EQ_INT(o.final, rep - 1);
        }
    }
    free(text);
}

int main(void)
{
    dec = sg_kserve_dec_new();
    test_tensorrtllm();
    test_vllm();
    test_extras();
    test_responses();
    test_response_shapes();
    test_reuse();
    sg_kserve_dec_free(dec);
    return test_finish("test_kserve");
}
