/* Hugging Face tokenizer.json. */
#include "tok_internal.h"

int sg_tok_load_hf(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err, size_t errlen)
{
    (void)data;
    (void)len;
    (void)out;
    return sg_tok_fail(err, errlen, SG_EINVAL, "%s: tokenizer.json is not implemented in this build",
                       sg_tok_basename(path));
}
