/*
 * --service-kind triton: a prompt rendered once into a KServe v2 gRPC call (see sg_workload.h). The call is
 * written in HTTP/1.1 form so it goes through the same HTTP/2 conversion as the OpenAI requests; the body is the
 * gRPC frame, bytes of any value (sg_h2_req_from_h1 takes the head up to the first blank line only).
 */
#include "sg_workload.h"

#include "sg_grpc.h"
#include "sg_kserve.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --extra-inputs as one-element tensors: true/false BOOL, integers INT32 (INT64 past its range), other numbers
 * FP32, strings BYTES. The config refused anything else. */
static int extras_from_json(const json_t *extra, sg_kserve_extra_t *out, size_t max, size_t *n, char *err,
                            size_t errlen)
{
    *n = 0;
    if (!extra)
        return 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)extra, key, v)
    {
        if (*n == max) {
            snprintf(err, errlen, "too many --extra-inputs for one request (at most %zu)", max);
            return SG_EINVAL;
        }
        sg_kserve_extra_t *e = &out[(*n)++];
        memset(e, 0, sizeof(*e));
        e->name = key;
        if (json_is_boolean(v)) {
            e->dtype = SG_KSERVE_BOOL;
            e->b = json_is_true(v);
        } else if (json_is_integer(v)) {
            json_int_t i = json_integer_value(v);
            e->dtype = i >= INT32_MIN && i <= INT32_MAX ? SG_KSERVE_INT32 : SG_KSERVE_INT64;
            e->i = (int64_t)i;
        } else if (json_is_real(v)) {
            e->dtype = SG_KSERVE_FP32;
            e->f = json_real_value(v);
        } else if (json_is_string(v)) {
            e->dtype = SG_KSERVE_BYTES;
            e->s = json_string_value(v);
            e->s_len = json_string_length(v);
        } else {
            snprintf(err, errlen, "--extra-inputs %s: not a value a one-element tensor can hold", key);
            return SG_EINVAL;
        }
    }
    return 0;
}

static int append(char **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*len + n > *cap) {
        size_t ncap = *cap ? *cap : 512;
        while (ncap < *len + n)
            ncap *= 2;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return SG_ENOMEM;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static int append_str(char **buf, size_t *len, size_t *cap, const char *s)
{
    return append(buf, len, cap, s, strlen(s));
}

int sg_payload_render_grpc(const sg_workload_spec_t *spec, const struct json_t *extra, const char *prompt,
                           size_t prompt_len, sg_payload_t *p, char *err, size_t errlen)
{
    sg_kserve_extra_t extras[SG_KSERVE_MAX_TENSORS];
    size_t n_extra;
    int rc = extras_from_json(extra, extras, SG_ARRAY_LEN(extras), &n_extra, err, errlen);
    if (rc < 0)
        return rc;
    sg_kserve_req_t req = {
        .backend = (sg_kserve_backend_t)spec->backend,
        .model = spec->models[p->model],
        .prompt = prompt,
        .prompt_len = prompt_len,
        .max_tokens = p->max_tokens ? (int64_t)p->max_tokens : -1,
        .deterministic = spec->deterministic,
        .stream = spec->streaming,
        .extra = extras,
        .n_extra = n_extra,
    };
    uint8_t *frame = NULL;
    size_t frame_len = 0;
    rc = sg_kserve_req_encode(&req, &frame, &frame_len, err, errlen);
    if (rc < 0)
        return rc;
    if (req.backend == SG_KSERVE_TENSORRTLLM && !p->max_tokens)
        p->max_tokens = SG_KSERVE_TRTLLM_DEFAULT_MAX_TOKENS; /* what the request asks */

    char *b = NULL;
    size_t len = 0, cap = 0;
    rc = append_str(&b, &len, &cap, "POST ");
    rc |= append_str(&b, &len, &cap, spec->streaming ? SG_KSERVE_PATH_STREAM : SG_KSERVE_PATH_INFER);
    rc |= append_str(&b, &len, &cap, " HTTP/1.1\r\nHost: ");
    rc |= append_str(&b, &len, &cap, spec->host_header);
    rc |= append_str(&b, &len, &cap, "\r\ncontent-type: application/grpc\r\nte: trailers\r\n");
    if (spec->grpc_timeout) {
        rc |= append_str(&b, &len, &cap, "grpc-timeout: ");
        rc |= append_str(&b, &len, &cap, spec->grpc_timeout);
        rc |= append_str(&b, &len, &cap, "\r\n");
    }
    for (size_t i = 0; spec->headers && spec->headers[i]; i++) {
        rc |= append_str(&b, &len, &cap, spec->headers[i]);
        rc |= append_str(&b, &len, &cap, "\r\n");
    }
    rc |= append_str(&b, &len, &cap, "\r\n");
    rc |= append(&b, &len, &cap, frame, frame_len);
    free(frame);
    if (rc) {
        free(b);
        return SG_ENOMEM;
    }
    p->bytes = b;
    p->len = len;
    return 0;
}
