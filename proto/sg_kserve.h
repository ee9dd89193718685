/*
 * Triton / KServe v2 inference messages (proto/kserve.proto), sans-I/O, on protobuf-c.
 *
 * Client side: a ModelInferRequest built as GenAI-Perf builds it for --service-kind triton with a given
 * --backend, encoded once into a ready-to-send gRPC frame; ModelInferResponse and ModelStreamInferResponse
 * decoded into what the metrics need (the text_output text, the stream's error message, Triton's
 * triton_final_response flag). Server side (the mock) and tests: a request decoded into tensor views, and a
 * response encoded.
 *
 * Decoding goes through a per-connection (or per-worker) sg_kserve_dec_t whose arena holds everything a
 * decode returns, until the next decode on it: no malloc per message once the arena has grown.
 *
 * RPC paths: SG_KSERVE_PATH_INFER for unary ModelInfer, SG_KSERVE_PATH_STREAM for ModelStreamInfer (a
 * bidirectional stream; surge sends one request per stream and half-closes).
 */
#ifndef SG_KSERVE_H
#define SG_KSERVE_H

#include "sg_common.h"

#define SG_KSERVE_PATH_INFER "/inference.GRPCInferenceService/ModelInfer"
#define SG_KSERVE_PATH_STREAM "/inference.GRPCInferenceService/ModelStreamInfer"
#define SG_KSERVE_PATH_SERVER_LIVE "/inference.GRPCInferenceService/ServerLive"
#define SG_KSERVE_PATH_MODEL_READY "/inference.GRPCInferenceService/ModelReady"

/* GenAI-Perf's max_tokens for tensorrtllm when no output length is asked for. */
#define SG_KSERVE_TRTLLM_DEFAULT_MAX_TOKENS 256
/* Input tensors one request may carry (standard inputs and extras). */
#define SG_KSERVE_MAX_TENSORS 32

typedef enum {
    SG_KSERVE_TENSORRTLLM = 0, /* --backend tensorrtllm: the TensorRT-LLM ensemble / BLS model */
    SG_KSERVE_VLLM = 1,        /* --backend vllm: Triton's vLLM backend */
} sg_kserve_backend_t;

/* "tensorrtllm" or "vllm". Returns 0, or SG_EINVAL. */
SG_WUR int sg_kserve_backend_parse(const char *name, sg_kserve_backend_t *out);
const char *sg_kserve_backend_name(sg_kserve_backend_t b);

typedef enum {
    SG_KSERVE_BOOL = 0,
    SG_KSERVE_INT32 = 1,
    SG_KSERVE_INT64 = 2,
    SG_KSERVE_FP32 = 3,
    SG_KSERVE_BYTES = 4,
} sg_kserve_dtype_t;

/* One extra input tensor of one element (GenAI-Perf's --extra-inputs NAME:VALUE for Triton). */
typedef struct {
    const char *name;
    sg_kserve_dtype_t dtype;
    bool b;        /* BOOL */
    int64_t i;     /* INT32 (must fit), INT64 */
    double f;      /* FP32 */
    const char *s; /* BYTES */
    size_t s_len;
} sg_kserve_extra_t;

typedef struct {
    sg_kserve_backend_t backend;
    const char *model;         /* model_name; required */
    const char *model_version; /* NULL or "": the server picks */
    const char *id;            /* request id; NULL: none */
    const char *prompt;        /* text_input */
    size_t prompt_len;
    /*
     * The output length asked for; -1 when none was (no --output-tokens-mean, no per-prompt length).
     * tensorrtllm: max_tokens INT32, SG_KSERVE_TRTLLM_DEFAULT_MAX_TOKENS when -1. vllm: sampling_parameters
     * {"max_tokens": "N"} (a JSON string holding the number as a string, as GenAI-Perf writes it), absent
     * when -1.
     */
    int64_t max_tokens;
    bool deterministic; /* --output-tokens-mean-deterministic: min_length (tensorrtllm) / min_tokens (vllm) */
    bool stream;        /* --streaming: the stream BOOL input = true (decoupled models) */
    /*
     * Rank of every input's shape: 2 gives [1, 1] (a model with max_batch_size > 0, like the TensorRT-LLM
     * ensemble), 1 gives [1] (max_batch_size 0, like Triton's vLLM backend); 0 picks that backend default.
     */
    int shape_rank;
    const sg_kserve_extra_t *extra; /* added after the standard inputs; one with a standard name replaces it */
    size_t n_extra;
} sg_kserve_req_t;

/*
 * Encode r into a malloc'd gRPC frame (5-byte prefix, then the ModelInferRequest), ready to send as the
 * request's DATA: *out, *out_len. Inputs go in raw_input_contents (as perf_analyzer sends them): BOOL one
 * byte, INT32/INT64/FP32 little-endian, BYTES a 4-byte little-endian length then the bytes. Returns 0;
 * SG_EINVAL with a message in err (no model, too many tensors, an INT32 extra out of range, an empty or
 * duplicate extra name); SG_ENOMEM.
 */
SG_WUR int sg_kserve_req_encode(const sg_kserve_req_t *r, uint8_t **out, size_t *out_len, char *err, size_t errlen);

/* ---------- decoding ---------- */

typedef struct sg_kserve_dec sg_kserve_dec_t;

SG_WUR sg_kserve_dec_t *sg_kserve_dec_new(void);
void sg_kserve_dec_free(sg_kserve_dec_t *d);
/* Why the last decode on d failed (protobuf, or the tensors): one line; "" after a success. */
const char *sg_kserve_dec_error(const sg_kserve_dec_t *d);

typedef struct {
    /* text_output: its elements joined (almost always one), from raw_output_contents or bytes_contents */
    bool has_text; /* a text_output output was there */
    sg_slice_t text;
    int final;         /* the triton_final_response parameter: 1 true, 0 false, -1 absent */
    bool has_error;    /* stream only: a non-empty error_message */
    sg_slice_t error;  /* the error_message */
    bool has_response; /* stream only: infer_response was there (always true for unary) */
    sg_slice_t model;  /* model_name */
    sg_slice_t id;     /* id */
} sg_kserve_resp_t;

/*
 * Decode one message (the bytes after the 5-byte prefix) of a ModelInfer reply (ModelInferResponse) or of a
 * ModelStreamInfer reply (ModelStreamInferResponse). The slices in *out live in d until its next decode.
 * Returns 0, or SG_EPROTO with sg_kserve_dec_error() saying why: not a valid message, text_output not BYTES,
 * a BYTES element running past its tensor, raw_output_contents missing the text_output entry.
 */
SG_WUR int sg_kserve_dec_infer(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_resp_t *out);
SG_WUR int sg_kserve_dec_stream(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_resp_t *out);

/* ---------- server side (the mock) and tests ---------- */

/* An input tensor of a decoded request; raw holds its elements as raw contents would, whichever form came. */
typedef struct {
    const char *name;
    const char *datatype;
    const int64_t *shape;
    size_t n_shape;
    sg_slice_t raw;
} sg_kserve_tensor_t;

typedef struct {
    const char *model;
    const char *model_version;
    const char *id;
    size_t n_inputs;
    sg_kserve_tensor_t inputs[SG_KSERVE_MAX_TENSORS];
} sg_kserve_req_view_t;

/* Decode a ModelInferRequest; valid until d's next decode. Returns 0 or SG_EPROTO (see sg_kserve_dec_error). */
SG_WUR int sg_kserve_dec_request(sg_kserve_dec_t *d, const void *msg, size_t len, sg_kserve_req_view_t *out);
/* The input called name, or NULL. */
const sg_kserve_tensor_t *sg_kserve_req_input(const sg_kserve_req_view_t *v, const char *name);
/* Element idx of a BYTES tensor. Returns 0, or SG_EPROTO (not BYTES, a bad length, no such element). */
SG_WUR int sg_kserve_tensor_bytes(const sg_kserve_tensor_t *t, size_t idx, sg_slice_t *out);
/* The first element of an INT32/INT64/UINT32/UINT64 tensor. Returns 0, or SG_EPROTO. */
SG_WUR int sg_kserve_tensor_int(const sg_kserve_tensor_t *t, int64_t *out);
/* The first element of a BOOL tensor. Returns 0, or SG_EPROTO. */
SG_WUR int sg_kserve_tensor_bool(const sg_kserve_tensor_t *t, bool *out);

typedef struct {
    const char *model;
    const char *id; /* NULL: none */
    bool has_text;  /* send a text_output BYTES [1] output */
    const char *text;
    size_t text_len;
    bool typed_contents; /* text in contents.bytes_contents instead of raw_output_contents */
    int final;           /* triton_final_response: -1 leaves the parameter out */
    bool stream;         /* wrap in a ModelStreamInferResponse */
    const char *error;   /* stream: error_message (NULL: none); alone it sends no infer_response */
} sg_kserve_resp_spec_t;

/* Encode a response as a malloc'd gRPC frame. Returns 0, SG_EINVAL (error without stream) or SG_ENOMEM. */
SG_WUR int sg_kserve_resp_encode(const sg_kserve_resp_spec_t *s, uint8_t **out, size_t *out_len);

#endif
