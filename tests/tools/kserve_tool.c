/*
 * sg_kserve_tool: surge's KServe encoder and decoder on stdin/stdout, so that tests in other languages can
 * check our bytes against another protobuf implementation (tests/integration/test_kserve_proto.py).
 *
 *   sg_kserve_tool request BACKEND MODEL MAX_TOKENS FLAGS [NAME:TYPE:VALUE...] < prompt > frame
 *       FLAGS: a string of letters: s (stream), d (deterministic), 1 or 2 (shape rank), - (none).
 *       TYPE: bool (true/false), int32, int64, fp32, bytes.
 *   sg_kserve_tool response MODEL FINAL FLAGS [ERROR] < text > frame
 *       FINAL: -1, 0 or 1. FLAGS: s (stream), t (typed contents), x (has text), - (none).
 *   sg_kserve_tool decode unary|stream < frames > one line per message:
 *       "ok TEXT_HEX FINAL HAS_TEXT HAS_RESPONSE ERROR_HEX" or "err MESSAGE"
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include "sg_grpc.h"
#include "sg_kserve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
        }
    }
    *len = n;
    return b;
}

static void hex(const char *s, size_t n)
{
    if (!n)
        fputs("-", stdout);
    for (size_t i = 0; i < n; i++)
        printf("%02x", (unsigned char)s[i]);
}

static int write_frame(uint8_t *f, size_t n)
{
    int ok = fwrite(f, 1, n, stdout) == n;
    free(f);
    return ok ? 0 : 1;
}

static int cmd_request(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: request BACKEND MODEL MAX_TOKENS FLAGS [NAME:TYPE:VALUE...]\n");
        return 1;
    }
    sg_kserve_req_t r = {0};
    if (sg_kserve_backend_parse(argv[0], &r.backend) < 0) {
        fprintf(stderr, "unknown backend %s\n", argv[0]);
        return 1;
    }
    r.model = argv[1];
    r.max_tokens = strtoll(argv[2], NULL, 10);
    r.stream = strchr(argv[3], 's') != NULL;
    r.deterministic = strchr(argv[3], 'd') != NULL;
    r.shape_rank = strchr(argv[3], '1') ? 1 : strchr(argv[3], '2') ? 2 : 0;
    sg_kserve_extra_t extra[SG_KSERVE_MAX_TENSORS];
    for (int i = 4; i < argc && r.n_extra < SG_KSERVE_MAX_TENSORS; i++) {
        char *name = argv[i], *type = strchr(name, ':'), *val;
        if (!type || !(val = strchr(type + 1, ':'))) {
            fprintf(stderr, "bad extra %s\n", argv[i]);
            return 1;
        }
        *type++ = '\0';
        *val++ = '\0';
        sg_kserve_extra_t *e = &extra[r.n_extra++];
        memset(e, 0, sizeof(*e));
        e->name = name;
        if (strcmp(type, "bool") == 0) {
            e->dtype = SG_KSERVE_BOOL;
            e->b = strcmp(val, "true") == 0;
        } else if (strcmp(type, "int32") == 0 || strcmp(type, "int64") == 0) {
            e->dtype = type[3] == '3' ? SG_KSERVE_INT32 : SG_KSERVE_INT64;
            e->i = strtoll(val, NULL, 10);
        } else if (strcmp(type, "fp32") == 0) {
            e->dtype = SG_KSERVE_FP32;
            e->f = strtod(val, NULL);
        } else {
            e->dtype = SG_KSERVE_BYTES;
            e->s = val;
            e->s_len = strlen(val);
        }
    }
    r.extra = extra;
    size_t plen;
    char *prompt = read_all(stdin, &plen);
    if (!prompt)
        return 1;
    r.prompt = prompt;
    r.prompt_len = plen;
    uint8_t *f;
    size_t n;
    char err[160];
    if (sg_kserve_req_encode(&r, &f, &n, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        free(prompt);
        return 1;
    }
    free(prompt);
    return write_frame(f, n);
}

static int cmd_response(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: response MODEL FINAL FLAGS [ERROR]\n");
        return 1;
    }
    size_t tlen;
    char *text = read_all(stdin, &tlen);
    if (!text)
        return 1;
    sg_kserve_resp_spec_t s = {.model = argv[0],
                               .final = atoi(argv[1]),
                               .stream = strchr(argv[2], 's') != NULL,
                               .typed_contents = strchr(argv[2], 't') != NULL,
                               .has_text = strchr(argv[2], 'x') != NULL,
                               .text = text,
                               .text_len = tlen,
                               .error = argc > 3 ? argv[3] : NULL};
    uint8_t *f;
    size_t n;
    int rc = sg_kserve_resp_encode(&s, &f, &n);
    free(text);
    if (rc < 0) {
        fprintf(stderr, "%s\n", sg_strerror(rc));
        return 1;
    }
    return write_frame(f, n);
}

typedef struct {
    sg_kserve_dec_t *dec;
    bool stream;
} decode_ctx_t;

static int on_message(void *ud, sg_slice_t msg)
{
    decode_ctx_t *c = ud;
    sg_kserve_resp_t o;
    int rc = c->stream ? sg_kserve_dec_stream(c->dec, msg.base, msg.len, &o)
                       : sg_kserve_dec_infer(c->dec, msg.base, msg.len, &o);
    if (rc < 0) {
        printf("err %s\n", sg_kserve_dec_error(c->dec));
        return 0;
    }
    fputs("ok ", stdout);
    hex(o.text.base, o.text.len);
    printf(" %d %d %d ", o.final, o.has_text, o.has_response);
    hex(o.error.base, o.error.len);
    putchar('\n');
    return 0;
}

static int cmd_decode(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: decode unary|stream\n");
        return 1;
    }
    size_t len;
    char *in = read_all(stdin, &len);
    if (!in)
        return 1;
    decode_ctx_t c = {sg_kserve_dec_new(), strcmp(argv[0], "stream") == 0};
    sg_grpc_dec_t d;
    sg_grpc_dec_init(&d, 0);
    static const sg_grpc_dec_cb_t cb = {on_message};
    int rc = sg_grpc_dec_feed(&d, in, len, &cb, &c);
    int status = 0;
    if (rc < 0 || sg_grpc_dec_pending(&d)) {
        fprintf(stderr, "framing: %s\n", rc < 0 ? d.err : "cut inside a message");
        status = 1;
    }
    sg_grpc_dec_free(&d);
    sg_kserve_dec_free(c.dec);
    free(in);
    return status;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "request") == 0)
        return cmd_request(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "response") == 0)
        return cmd_response(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "decode") == 0)
        return cmd_decode(argc - 2, argv + 2);
    fprintf(stderr, "usage: sg_kserve_tool request|response|decode ...\n");
    return 1;
}
