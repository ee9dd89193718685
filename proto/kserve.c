/*
 * KServe v2 / Triton inference messages on protobuf-c. See sg_kserve.h.
 */
#include "sg_kserve.h"
#include "sg_grpc.h"

#include "kserve.pb-c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Inference__ModelInferRequest infer_req_t;
typedef Inference__ModelInferRequest__InferInputTensor in_tensor_t;
typedef Inference__ModelInferResponse infer_resp_t;
typedef Inference__ModelInferResponse__InferOutputTensor out_tensor_t;
typedef Inference__ModelStreamInferResponse stream_resp_t;
typedef Inference__InferTensorContents contents_t;

int sg_kserve_backend_parse(const char *name, sg_kserve_backend_t *out)
{
    if (strcmp(name, "tensorrtllm") == 0)
        *out = SG_KSERVE_TENSORRTLLM;
    else if (strcmp(name, "vllm") == 0)
        *out = SG_KSERVE_VLLM;
    else
        return SG_EINVAL;
    return 0;
}

const char *sg_kserve_backend_name(sg_kserve_backend_t b)
{
    return b == SG_KSERVE_VLLM ? "vllm" : "tensorrtllm";
}

static const char *const dtype_names[] = {"BOOL", "INT32", "INT64", "FP32", "BYTES"};

/* ---------- the decoder's arena: protobuf-c allocates into it, a decode resets it ---------- */

typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} chunk_t;

struct sg_kserve_dec {
    chunk_t *chunks; /* newest first */
    size_t total;    /* bytes asked of the arena since the last reset */
    ProtobufCAllocator alloc;
    char err[160];
};

static void *arena_alloc(void *ud, size_t size)
{
    sg_kserve_dec_t *d = ud;
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    chunk_t *c = d->chunks;
    if (!c || c->cap - c->used < size) {
        size_t cap = c ? c->cap * 2 : 4096;
        while (cap < size)
            cap *= 2;
        chunk_t *n = malloc(sizeof(*n) + cap);
        if (!n)
            return NULL;
        n->next = c;
        n->cap = cap;
        n->used = 0;
        d->chunks = c = n;
    }
    void *p = c->data + c->used;
    c->used += size;
    d->total += size;
    return p;
}

static void arena_free(void *ud, void *p)
{
    (void)ud;
    (void)p; /* everything goes at the next reset */
}

/* Drop everything; when the arena had to chain chunks, keep one chunk as large as they were together. */
static void arena_reset(sg_kserve_dec_t *d)
{
    chunk_t *c = d->chunks;
    if (c && c->next) {
        size_t want = d->total;
        while (c) {
            chunk_t *n = c->next;
            free(c);
            c = n;
        }
        d->chunks = NULL;
        size_t cap = 4096;
        while (cap < want)
            cap *= 2;
        chunk_t *n = malloc(sizeof(*n) + cap);
        if (n) {
            n->next = NULL;
            n->cap = cap;
            n->used = 0;
            d->chunks = n;
        }
    } else if (c) {
        c->used = 0;
    }
    d->total = 0;
}

sg_kserve_dec_t *sg_kserve_dec_new(void)
{
    sg_kserve_dec_t *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->alloc.alloc = arena_alloc;
    d->alloc.free = arena_free;
    d->alloc.allocator_data = d;
    return d;
}

void sg_kserve_dec_free(sg_kserve_dec_t *d)
{
    if (!d)
        return;
    for (chunk_t *c = d->chunks; c;) {
        chunk_t *n = c->next;
        free(c);
        c = n;
    }
    free(d);
}

const char *sg_kserve_dec_error(const sg_kserve_dec_t *d)
{
    return d->err;
}

static int fail(sg_kserve_dec_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(sg_kserve_dec_t *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof(d->err), fmt, ap);
    va_end(ap);
    return SG_EPROTO;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static sg_slice_t slice_str(const char *s)
{
    sg_slice_t r = {s ? s : "", s ? strlen(s) : 0};
    return r;
}

/* ---------- requests ---------- */

/* A tensor being built: one element, raw bytes in val (BYTES: 4-byte length + the bytes, elsewhere). */
typedef struct {
    const char *name;
    sg_kserve_dtype_t dtype;
    unsigned char val[8];
    size_t val_len;
    const char *bytes; /* BYTES */
    size_t bytes_len;
} build_t;

static void set_bool(build_t *t, const char *name, bool v)
{
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->dtype = SG_KSERVE_BOOL;
    t->val[0] = v;
    t->val_len = 1;
}

static void set_int32(build_t *t, const char *name, int32_t v)
{
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->dtype = SG_KSERVE_INT32;
    put_le32(t->val, (uint32_t)v);
    t->val_len = 4;
}

static void set_bytes(build_t *t, const char *name, const char *s, size_t len)
{
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->dtype = SG_KSERVE_BYTES;
    t->bytes = s ? s : "";
    t->bytes_len = len;
}

static int set_extra(build_t *t, const sg_kserve_extra_t *e, char *err, size_t errlen)
{
    switch (e->dtype) {
    case SG_KSERVE_BOOL:
        set_bool(t, e->name, e->b);
        return 0;
    case SG_KSERVE_INT32:
        if (e->i < INT32_MIN || e->i > INT32_MAX) {
            snprintf(err, errlen, "extra input %s: %lld does not fit INT32", e->name, (long long)e->i);
            return SG_EINVAL;
        }
        set_int32(t, e->name, (int32_t)e->i);
        return 0;
    case SG_KSERVE_INT64: {
        memset(t, 0, sizeof(*t));
        t->name = e->name;
        t->dtype = SG_KSERVE_INT64;
        uint64_t v = (uint64_t)e->i;
        put_le32(t->val, (uint32_t)v);
        put_le32(t->val + 4, (uint32_t)(v >> 32));
        t->val_len = 8;
        return 0;
    }
    case SG_KSERVE_FP32: {
        memset(t, 0, sizeof(*t));
        t->name = e->name;
        t->dtype = SG_KSERVE_FP32;
        float f = (float)e->f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        put_le32(t->val, bits);
        t->val_len = 4;
        return 0;
    }
    case SG_KSERVE_BYTES:
        set_bytes(t, e->name, e->s, e->s_len);
        return 0;
    }
    snprintf(err, errlen, "extra input %s: unknown data type", e->name);
    return SG_EINVAL;
}

int sg_kserve_req_encode(const sg_kserve_req_t *r, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    build_t t[SG_KSERVE_MAX_TENSORS];
    size_t n = 0;
    char sampling[96];
    if (!r->model || !r->model[0]) {
        snprintf(err, errlen, "no model name");
        return SG_EINVAL;
    }
    /* The standard inputs, as GenAI-Perf's converters write them. */
    set_bytes(&t[n++], "text_input", r->prompt, r->prompt_len);
    if (r->backend == SG_KSERVE_TENSORRTLLM) {
        int64_t mt = r->max_tokens >= 0 ? r->max_tokens : SG_KSERVE_TRTLLM_DEFAULT_MAX_TOKENS;
        if (mt > INT32_MAX) {
            snprintf(err, errlen, "max_tokens %lld does not fit INT32", (long long)mt);
            return SG_EINVAL;
        }
        set_int32(&t[n++], "max_tokens", (int32_t)mt);
        if (r->stream)
            set_bool(&t[n++], "stream", true);
        if (r->deterministic && r->max_tokens >= 0)
            set_int32(&t[n++], "min_length", (int32_t)mt);
    } else {
        set_bool(&t[n++], "exclude_input_in_output", true);
        if (r->stream)
            set_bool(&t[n++], "stream", true);
        if (r->max_tokens >= 0) {
            int k;
            if (r->deterministic)
                k = snprintf(sampling, sizeof(sampling), "{\"max_tokens\": \"%lld\", \"min_tokens\": \"%lld\"}",
                             (long long)r->max_tokens, (long long)r->max_tokens);
            else
                k = snprintf(sampling, sizeof(sampling), "{\"max_tokens\": \"%lld\"}", (long long)r->max_tokens);
            set_bytes(&t[n++], "sampling_parameters", sampling, (size_t)k);
        }
    }
    size_t n_std = n;
    for (size_t i = 0; i < r->n_extra; i++) {
        const sg_kserve_extra_t *e = &r->extra[i];
        if (!e->name || !e->name[0]) {
            snprintf(err, errlen, "extra input with an empty name");
            return SG_EINVAL;
        }
        size_t at = n;
        for (size_t j = 0; j < n; j++) {
            if (strcmp(t[j].name, e->name) == 0) {
                if (j >= n_std) {
                    snprintf(err, errlen, "extra input %s given twice", e->name);
                    return SG_EINVAL;
                }
                at = j;
            }
        }
        if (at == n && n == SG_KSERVE_MAX_TENSORS) {
            snprintf(err, errlen, "more than %d input tensors", SG_KSERVE_MAX_TENSORS);
            return SG_EINVAL;
        }
        int rc = set_extra(&t[at], e, err, errlen);
        if (rc < 0)
            return rc;
        if (at == n)
            n++;
    }

    int rank = r->shape_rank ? r->shape_rank : (r->backend == SG_KSERVE_VLLM ? 1 : 2);
    if (rank < 1 || rank > 2) {
        snprintf(err, errlen, "shape rank %d (want 1 or 2)", rank);
        return SG_EINVAL;
    }
    static int64_t shape[2] = {1, 1};
    in_tensor_t tensors[SG_KSERVE_MAX_TENSORS];
    in_tensor_t *tp[SG_KSERVE_MAX_TENSORS];
    ProtobufCBinaryData raw[SG_KSERVE_MAX_TENSORS];
    unsigned char *bytes_bufs[SG_KSERVE_MAX_TENSORS] = {0};
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        in_tensor_t init = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
        tensors[i] = init;
        tensors[i].name = (char *)t[i].name;
        tensors[i].datatype = (char *)dtype_names[t[i].dtype];
        tensors[i].n_shape = (size_t)rank;
        tensors[i].shape = shape;
        tp[i] = &tensors[i];
        if (t[i].dtype == SG_KSERVE_BYTES) {
            if (t[i].bytes_len > UINT32_MAX) {
                snprintf(err, errlen, "input %s: %zu bytes is too long for a BYTES element", t[i].name, t[i].bytes_len);
                rc = SG_EINVAL;
                goto out;
            }
            unsigned char *b = malloc(4 + t[i].bytes_len);
            if (!b) {
                rc = SG_ENOMEM;
                goto out;
            }
            put_le32(b, (uint32_t)t[i].bytes_len);
            if (t[i].bytes_len)
                memcpy(b + 4, t[i].bytes, t[i].bytes_len);
            bytes_bufs[i] = b;
            raw[i].data = b;
            raw[i].len = 4 + t[i].bytes_len;
        } else {
            raw[i].data = t[i].val;
            raw[i].len = t[i].val_len;
        }
    }
    infer_req_t req = INFERENCE__MODEL_INFER_REQUEST__INIT;
    req.model_name = (char *)r->model;
    if (r->model_version)
        req.model_version = (char *)r->model_version;
    if (r->id)
        req.id = (char *)r->id;
    req.n_inputs = n;
    req.inputs = tp;
    req.n_raw_input_contents = n;
    req.raw_input_contents = raw;

    size_t len = inference__model_infer_request__get_packed_size(&req);
    if (len > UINT32_MAX) {
        snprintf(err, errlen, "request of %zu bytes is too large for one gRPC message", len);
        rc = SG_EINVAL;
        goto out;
    }
    uint8_t *buf = malloc(SG_GRPC_PREFIX_LEN + len);
    if (!buf) {
        rc = SG_ENOMEM;
        goto out;
    }
    sg_grpc_prefix(buf, (uint32_t)len);
    inference__model_infer_request__pack(&req, buf + SG_GRPC_PREFIX_LEN);
    *out = buf;
    *out_len = SG_GRPC_PREFIX_LEN + len;
out:
    for (size_t i = 0; i < n; i++)
        free(bytes_bufs[i]);
    return rc;
}

/* ---------- responses ---------- */

static int bool_param(Inference__InferParameter *p)
{
    if (p && p->parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM)
        return p->bool_param ? 1 : 0;
    return -1;
}

/* Join the elements of a length-prefixed BYTES buffer into one slice (in place when there is one element). */
static int join_raw_bytes(sg_kserve_dec_t *d, const unsigned char *p, size_t len, sg_slice_t *out)
{
    size_t total = 0, elems = 0;
    const unsigned char *first = NULL;
    for (size_t off = 0; off < len;) {
        if (len - off < 4)
            return fail(d, "text_output: %zu stray bytes after its last BYTES element", len - off);
        uint32_t n = get_le32(p + off);
        if (n > len - off - 4)
            return fail(d, "text_output: a BYTES element of %u bytes runs past the tensor (%zu left)", n,
                        len - off - 4);
        if (!elems)
            first = p + off + 4;
        total += n;
        elems++;
        off += 4 + (size_t)n;
    }
    if (elems <= 1) {
        out->base = first ? (const char *)first : "";
        out->len = total;
        return 0;
    }
    char *j = arena_alloc(d, total + 1);
    if (!j)
        return SG_ENOMEM;
    size_t k = 0;
    for (size_t off = 0; off < len;) {
        uint32_t n = get_le32(p + off);
        memcpy(j + k, p + off + 4, n);
        k += n;
        off += 4 + (size_t)n;
    }
    out->base = j;
    out->len = total;
    return 0;
}

static int join_typed_bytes(sg_kserve_dec_t *d, const contents_t *c, sg_slice_t *out)
{
    if (c->n_bytes_contents == 1) {
        out->base = c->bytes_contents[0].len ? (const char *)c->bytes_contents[0].data : "";
        out->len = c->bytes_contents[0].len;
        return 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < c->n_bytes_contents; i++)
        total += c->bytes_contents[i].len;
    char *j = arena_alloc(d, total + 1);
    if (!j)
        return SG_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < c->n_bytes_contents; i++) {
        if (c->bytes_contents[i].len)
            memcpy(j + k, c->bytes_contents[i].data, c->bytes_contents[i].len);
        k += c->bytes_contents[i].len;
    }
    out->base = j;
    out->len = total;
    return 0;
}

static int read_infer_response(sg_kserve_dec_t *d, const infer_resp_t *m, sg_kserve_resp_t *out)
{
    out->has_response = true;
    out->model = slice_str(m->model_name);
    out->id = slice_str(m->id);
    for (size_t i = 0; i < m->n_parameters; i++) {
        const Inference__ModelInferResponse__ParametersEntry *e = m->parameters[i];
        if (e->key && strcmp(e->key, "triton_final_response") == 0)
            out->final = bool_param(e->value);
    }
    for (size_t i = 0; i < m->n_outputs; i++) {
        const out_tensor_t *o = m->outputs[i];
        if (!o->name || strcmp(o->name, "text_output") != 0)
            continue;
        if (!o->datatype || strcmp(o->datatype, "BYTES") != 0)
            return fail(d, "text_output has datatype %s, not BYTES", o->datatype ? o->datatype : "(none)");
        out->has_text = true;
        if (m->n_raw_output_contents) {
            if (i >= m->n_raw_output_contents)
                return fail(d, "raw_output_contents has %zu entries, text_output is output %zu",
                            m->n_raw_output_contents, i);
            return join_raw_bytes(d, m->raw_output_contents[i].data, m->raw_output_contents[i].len, &out->text);
        }
        if (o->contents)
            return join_typed_bytes(d, o->contents, &out->text);
        return 0; /* a text_output with no elements */
    }
    return 0;
}

static void resp_clear(sg_kserve_resp_t *out)
{
    memset(out, 0, sizeof(*out));
    out->final = -1;
    out->text.base = out->error.base = out->model.base = out->id.base = "";
}

int sg_kserve_dec_infer(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_resp_t *out)
{
    arena_reset(d);
    d->err[0] = '\0';
    resp_clear(out);
    infer_resp_t *m = inference__model_infer_response__unpack(&d->alloc, len, msg);
    if (!m)
        return fail(d, "not a valid ModelInferResponse (%zu bytes)", len);
    return read_infer_response(d, m, out);
}

int sg_kserve_dec_stream(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_resp_t *out)
{
    arena_reset(d);
    d->err[0] = '\0';
    resp_clear(out);
    stream_resp_t *m = inference__model_stream_infer_response__unpack(&d->alloc, len, msg);
    if (!m)
        return fail(d, "not a valid ModelStreamInferResponse (%zu bytes)", len);
    if (m->error_message && m->error_message[0]) {
        out->has_error = true;
        out->error = slice_str(m->error_message);
    }
    if (!m->infer_response)
        return 0;
    return read_infer_response(d, m->infer_response, out);
}

/* ---------- server side ---------- */

/* Typed contents as raw bytes, for the element types surge's peers send. */
static int typed_to_raw(sg_kserve_dec_t *d, const char *name, const char *dt, const contents_t *c, sg_slice_t *out)
{
    size_t len = 0;
    unsigned char *b = NULL;
    if (strcmp(dt, "BYTES") == 0) {
        for (size_t i = 0; i < c->n_bytes_contents; i++)
            len += 4 + c->bytes_contents[i].len;
        if (!(b = arena_alloc(d, len)))
            return SG_ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < c->n_bytes_contents; i++) {
            if (c->bytes_contents[i].len > UINT32_MAX)
                return fail(d, "input %s: BYTES element too long", name);
            put_le32(b + k, (uint32_t)c->bytes_contents[i].len);
            if (c->bytes_contents[i].len)
                memcpy(b + k + 4, c->bytes_contents[i].data, c->bytes_contents[i].len);
            k += 4 + c->bytes_contents[i].len;
        }
    } else if (strcmp(dt, "BOOL") == 0) {
        len = c->n_bool_contents;
        if (!(b = arena_alloc(d, len)))
            return SG_ENOMEM;
        for (size_t i = 0; i < len; i++)
            b[i] = c->bool_contents[i] ? 1 : 0;
    } else if (strcmp(dt, "INT32") == 0) {
        len = 4 * c->n_int_contents;
        if (!(b = arena_alloc(d, len)))
            return SG_ENOMEM;
        for (size_t i = 0; i < c->n_int_contents; i++)
            put_le32(b + 4 * i, (uint32_t)c->int_contents[i]);
    } else if (strcmp(dt, "INT64") == 0) {
        len = 8 * c->n_int64_contents;
        if (!(b = arena_alloc(d, len)))
            return SG_ENOMEM;
        for (size_t i = 0; i < c->n_int64_contents; i++) {
            put_le32(b + 8 * i, (uint32_t)c->int64_contents[i]);
            put_le32(b + 8 * i + 4, (uint32_t)((uint64_t)c->int64_contents[i] >> 32));
        }
    } else {
        return fail(d, "input %s: typed contents of datatype %s are not supported (send raw contents)", name, dt);
    }
    out->base = (const char *)b;
    out->len = len;
    return 0;
}

int sg_kserve_dec_request(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_req_view_t *out)
{
    arena_reset(d);
    d->err[0] = '\0';
    out->n_inputs = 0;
    infer_req_t *m = inference__model_infer_request__unpack(&d->alloc, len, msg);
    if (!m)
        return fail(d, "not a valid ModelInferRequest (%zu bytes)", len);
    if (m->n_inputs > SG_KSERVE_MAX_TENSORS)
        return fail(d, "%zu input tensors (at most %d)", m->n_inputs, SG_KSERVE_MAX_TENSORS);
    if (m->n_raw_input_contents && m->n_raw_input_contents != m->n_inputs)
        return fail(d, "raw_input_contents has %zu entries for %zu inputs", m->n_raw_input_contents, m->n_inputs);
    out->model = m->model_name ? m->model_name : "";
    out->model_version = m->model_version ? m->model_version : "";
    out->id = m->id ? m->id : "";
    for (size_t i = 0; i < m->n_inputs; i++) {
        const in_tensor_t *t = m->inputs[i];
        sg_kserve_tensor_t *v = &out->inputs[i];
        v->name = t->name ? t->name : "";
        v->datatype = t->datatype ? t->datatype : "";
        v->shape = t->shape;
        v->n_shape = t->n_shape;
        if (m->n_raw_input_contents) {
            if (t->contents)
                return fail(d, "input %s has contents and raw_input_contents", v->name);
            v->raw.base = m->raw_input_contents[i].len ? (const char *)m->raw_input_contents[i].data : "";
            v->raw.len = m->raw_input_contents[i].len;
        } else if (t->contents) {
            int rc = typed_to_raw(d, v->name, v->datatype, t->contents, &v->raw);
            if (rc < 0)
                return rc;
        } else {
            v->raw.base = "";
            v->raw.len = 0;
        }
        out->n_inputs = i + 1;
    }
    return 0;
}

const sg_kserve_tensor_t *sg_kserve_req_input(const sg_kserve_req_view_t *v, const char *name)
{
    for (size_t i = 0; i < v->n_inputs; i++)
        if (strcmp(v->inputs[i].name, name) == 0)
            return &v->inputs[i];
    return NULL;
}

int sg_kserve_tensor_bytes(const sg_kserve_tensor_t *t, size_t idx, sg_slice_t *out)
{
    if (strcmp(t->datatype, "BYTES") != 0)
        return SG_EPROTO;
    const unsigned char *p = (const unsigned char *)t->raw.base;
    size_t len = t->raw.len;
    for (size_t off = 0, i = 0; off < len; i++) {
        if (len - off < 4)
            return SG_EPROTO;
        uint32_t n = get_le32(p + off);
        if (n > len - off - 4)
            return SG_EPROTO;
        if (i == idx) {
            out->base = (const char *)p + off + 4;
            out->len = n;
            return 0;
        }
        off += 4 + (size_t)n;
    }
    return SG_EPROTO;
}

int sg_kserve_tensor_int(const sg_kserve_tensor_t *t, int64_t *out)
{
    const unsigned char *p = (const unsigned char *)t->raw.base;
    bool is32 = strcmp(t->datatype, "INT32") == 0, isu32 = strcmp(t->datatype, "UINT32") == 0;
    bool is64 = strcmp(t->datatype, "INT64") == 0, isu64 = strcmp(t->datatype, "UINT64") == 0;
    if ((is32 || isu32) && t->raw.len >= 4) {
        uint32_t v = get_le32(p);
        *out = is32 ? (int64_t)(int32_t)v : (int64_t)v;
        return 0;
    }
    if ((is64 || isu64) && t->raw.len >= 8) {
        uint64_t v = (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
        if (isu64 && v > INT64_MAX)
            return SG_EPROTO;
        *out = (int64_t)v;
        return 0;
    }
    return SG_EPROTO;
}

int sg_kserve_tensor_bool(const sg_kserve_tensor_t *t, bool *out)
{
    if (strcmp(t->datatype, "BOOL") != 0 || t->raw.len < 1)
        return SG_EPROTO;
    *out = t->raw.base[0] != 0;
    return 0;
}

int sg_kserve_resp_encode(const sg_kserve_resp_spec_t *s, uint8_t **out, size_t *out_len)
{
    if (s->error && !s->stream)
        return SG_EINVAL;
    if (s->has_text && s->text_len > UINT32_MAX)
        return SG_EINVAL;
    static int64_t shape[1] = {1};
    out_tensor_t o = INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
    out_tensor_t *op = &o;
    contents_t c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
    ProtobufCBinaryData elem, raw;
    Inference__InferParameter fp = INFERENCE__INFER_PARAMETER__INIT;
    Inference__ModelInferResponse__ParametersEntry fe = INFERENCE__MODEL_INFER_RESPONSE__PARAMETERS_ENTRY__INIT;
    Inference__ModelInferResponse__ParametersEntry *fep = &fe;
    unsigned char *rawbuf = NULL;
    infer_resp_t r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    r.model_name = (char *)(s->model ? s->model : "");
    if (s->id)
        r.id = (char *)s->id;
    if (s->has_text) {
        o.name = (char *)"text_output";
        o.datatype = (char *)"BYTES";
        o.n_shape = 1;
        o.shape = shape;
        r.n_outputs = 1;
        r.outputs = &op;
        if (s->typed_contents) {
            elem.data = (uint8_t *)(s->text_len ? s->text : "");
            elem.len = s->text_len;
            c.n_bytes_contents = 1;
            c.bytes_contents = &elem;
            o.contents = &c;
        } else {
            if (!(rawbuf = malloc(4 + s->text_len)))
                return SG_ENOMEM;
            put_le32(rawbuf, (uint32_t)s->text_len);
            if (s->text_len)
                memcpy(rawbuf + 4, s->text, s->text_len);
            raw.data = rawbuf;
            raw.len = 4 + s->text_len;
            r.n_raw_output_contents = 1;
            r.raw_output_contents = &raw;
        }
    }
    if (s->final >= 0) {
        fp.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
        fp.bool_param = s->final != 0;
        fe.key = (char *)"triton_final_response";
        fe.value = &fp;
        r.n_parameters = 1;
        r.parameters = &fep;
    }
    size_t len;
    uint8_t *buf;
    if (s->stream) {
        stream_resp_t sr = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
        if (s->error)
            sr.error_message = (char *)s->error;
        if (!s->error || s->has_text || s->final >= 0)
            sr.infer_response = &r;
        len = inference__model_stream_infer_response__get_packed_size(&sr);
        buf = len <= UINT32_MAX ? malloc(SG_GRPC_PREFIX_LEN + len) : NULL;
        if (buf)
            inference__model_stream_infer_response__pack(&sr, buf + SG_GRPC_PREFIX_LEN);
    } else {
        len = inference__model_infer_response__get_packed_size(&r);
        buf = len <= UINT32_MAX ? malloc(SG_GRPC_PREFIX_LEN + len) : NULL;
        if (buf)
            inference__model_infer_response__pack(&r, buf + SG_GRPC_PREFIX_LEN);
    }
    free(rawbuf);
    if (!buf)
        return SG_ENOMEM;
    sg_grpc_prefix(buf, (uint32_t)len);
    *out = buf;
    *out_len = SG_GRPC_PREFIX_LEN + len;
    return 0;
}
