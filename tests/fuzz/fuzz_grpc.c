/*
 * gRPC framing and KServe decoding. The first three input bytes choose the message cap and where to cut the
 * rest. Checks: the decoder fed whole matches a naive reference written from the framing rules; split feeding
 * gives the same messages; every message decoded as ModelInferResponse, ModelStreamInferResponse and
 * ModelInferRequest never crashes, returns only 0 or SG_EPROTO, and a decoded text_output survives a
 * re-encode and decode unchanged.
 */
#include "sg_grpc.h"
#include "sg_kserve.h"

#include "../unit/trace.h"

static sg_kserve_dec_t *dec;
static sg_kserve_dec_t *dec2;

static void add_msg(str_t *t, const char *m, size_t len)
{
    str_fmt(t, "M%zu:", len);
    str_add(t, m, len);
}

/* ---------- the reference: read prefixes and bodies off the whole input ---------- */

static void reference(const uint8_t *in, size_t len, uint32_t max_msg, str_t *out)
{
    size_t i = 0;
    int rc = 0;
    bool pending = false;
    while (i < len) {
        if (len - i < 5) {
            pending = true;
            break;
        }
        uint32_t n = (uint32_t)in[i + 1] << 24 | (uint32_t)in[i + 2] << 16 | (uint32_t)in[i + 3] << 8 | in[i + 4];
        if (in[i] > 1 || in[i] == 1) {
            rc = SG_EPROTO;
            break;
        }
        if (n > max_msg) {
            rc = SG_ETOOBIG;
            break;
        }
        if (len - i - 5 < n) {
            pending = true;
            break;
        }
        add_msg(out, (const char *)in + i + 5, n);
        i += 5 + n;
    }
    str_fmt(out, "|rc=%d pending=%d", rc, rc == 0 && pending);
}

/* ---------- ours ---------- */

static void check_kserve(const char *m, size_t len)
{
    sg_kserve_resp_t o;
    for (int kind = 0; kind < 2; kind++) {
        int rc = kind ? sg_kserve_dec_stream(dec, m, len, &o) : sg_kserve_dec_infer(dec, m, len, &o);
        if (rc != 0 && rc != SG_EPROTO && rc != SG_ENOMEM)
            abort();
        if (rc != 0 || !o.has_text)
            continue;
        if (!o.text.base || o.final < -1 || o.final > 1)
            abort();
        /* The text survives a re-encode (both tensor forms) and a decode on another decoder. */
        for (int typed = 0; typed < 2; typed++) {
            sg_kserve_resp_spec_t s = {.model = "m",
                                       .has_text = true,
                                       .text = o.text.base,
                                       .text_len = o.text.len,
                                       .typed_contents = typed,
                                       .final = o.final,
                                       .stream = kind};
            uint8_t *f;
            size_t flen;
            if (sg_kserve_resp_encode(&s, &f, &flen) != 0)
                abort();
            sg_kserve_resp_t o2;
            int rc2 = kind ? sg_kserve_dec_stream(dec2, f + 5, flen - 5, &o2)
                           : sg_kserve_dec_infer(dec2, f + 5, flen - 5, &o2);
            if (rc2 != 0 || !o2.has_text || o2.text.len != o.text.len || o2.final != o.final ||
                (o.text.len && memcmp(o2.text.base, o.text.base, o.text.len) != 0))
                abort();
            free(f);
        }
    }
    sg_kserve_req_view_t v;
    int rc = sg_kserve_dec_request(dec, m, len, &v);
    if (rc != 0 && rc != SG_EPROTO && rc != SG_ENOMEM)
        abort();
    if (rc == 0) {
        for (size_t i = 0; i < v.n_inputs; i++) {
            sg_slice_t s;
            int64_t x;
            bool b;
            (void)sg_kserve_tensor_bytes(&v.inputs[i], 0, &s);
            (void)sg_kserve_tensor_int(&v.inputs[i], &x);
            (void)sg_kserve_tensor_bool(&v.inputs[i], &b);
        }
    }
}

static int on_message(void *ud, sg_slice_t msg)
{
    if (!msg.base)
        abort();
    add_msg(ud, msg.base, msg.len);
    check_kserve(msg.base, msg.len);
    return 0;
}

static const sg_grpc_dec_cb_t cb = {on_message};

static str_t run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    uint32_t max_msg = *(const uint32_t *)ctx;
    str_t t = {0};
    sg_grpc_dec_t d;
    sg_grpc_dec_init(&d, max_msg);
    size_t start = 0;
    int rc = 0;
    for (size_t c = 0; c <= ncuts && rc == 0; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        /* A copy per feed, freed right after: ASan catches any slice kept past its feed. */
        char *piece = malloc(end - start + 1);
        memcpy(piece, in + start, end - start);
        rc = sg_grpc_dec_feed(&d, piece, end - start, &cb, &t);
        free(piece);
        start = end;
    }
    if (rc < 0 && !d.err[0])
        abort(); /* every framing error says why */
    str_fmt(&t, "|rc=%d pending=%d", rc, rc == 0 && sg_grpc_dec_pending(&d));
    sg_grpc_dec_free(&d);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dec) {
        dec = sg_kserve_dec_new();
        dec2 = sg_kserve_dec_new();
        if (!dec || !dec2)
            abort();
    }
    if (size < 3)
        return 0;
    static const uint32_t caps[] = {0, 1, 5, 64, 300, 4096, 1 << 16, 1 << 22};
    uint8_t mode = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | 1u;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    uint32_t max_msg = caps[mode & 7];

    str_t ref = {0};
    reference((const uint8_t *)in, len, max_msg ? max_msg : SG_GRPC_DEFAULT_MAX_MSG, &ref);
    str_t whole = run(&max_msg, in, len, NULL, 0);
    if (!str_same(&whole, &ref)) {
        fprintf(stderr, "differs from the reference\nref:   %.*s\nwhole: %.*s\n", (int)ref.len, ref.s, (int)whole.len,
                whole.s);
        abort();
    }
    trace_fuzz_splits(run, &max_msg, in, len, &whole, mode & 8, (size_t)(mode >> 4) % 16 + 1, seed);
    free(ref.s);
    free(whole.s);
    return 0;
}
