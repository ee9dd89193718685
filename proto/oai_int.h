/*
 * What the decoders of proto/openai.c (chat, completions) and proto/api_decode.c (the other APIs) share. Private
 * to proto/.
 */
#ifndef SG_OAI_INT_H
#define SG_OAI_INT_H

#include "json_scan.h"
#include "sg_openai.h"

typedef struct {
    bool is_error;
    sg_slice_t message; /* raw */
    int64_t code;       /* numeric code, -1 when absent or not a number */
} sg_oai_err_t;

/*
 * An "error" member: an object (its message and numeric code; OpenAI, Anthropic and vLLM put them there) or a
 * string (the message: TGI, llama.cpp). null and other types are no error. Consumes the value.
 */
int sg_oai_parse_error(sg_js_t *js, sg_oai_err_t *e);

/* A usage details object (completion_tokens_details, output_tokens_details): its reasoning_tokens, or -1. */
int sg_oai_parse_usage_details(sg_js_t *js, int64_t *reasoning_tokens);
/* An object's integer member `name` (a literal's bytes, name_len) into *v, -1 when absent, negative or not an
 * integer; any other value is skipped. For prompt_tokens_details.cached_tokens and llama.cpp's timings.cache_n. */
int sg_oai_parse_member_count(sg_js_t *js, const char *name, size_t name_len, int64_t *v);

/*
 * One content part (an object; the scanner before it): a text part's text (*is_text, *text, *present), or an
 * image_url or input_audio part added to m (sg_oai_media_t). Consumes the value.
 */
int sg_oai_scan_part(sg_js_t *js, sg_oai_media_t *m, bool *is_text, sg_slice_t *text, bool *present);

#endif
