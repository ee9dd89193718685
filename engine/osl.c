/* The post-run OSL pass: see sg_osl.h. */
#include "sg_osl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const sg_tokenizer_t *tok;
    const char *log;
    sg_metrics_t *metrics;
    sg_tok_enc_t *enc;
    int rc;
    pthread_t thread;
    bool started;
} pass_t;

static ssize_t count_tokens(void *ctx, const char *text, size_t len)
{
    return sg_tok_count(ctx, text, len);
}

static void *pass_main(void *arg)
{
    pass_t *p = arg;
    p->enc = sg_tok_enc_new(p->tok);
    p->rc = p->enc ? sg_reclog_finalize(p->log, count_tokens, p->enc, p->metrics) : SG_ENOMEM;
    sg_tok_enc_free(p->enc);
    p->enc = NULL;
    return NULL;
}

int sg_osl_pass(const sg_tokenizer_t *tok, const char *const *logs, sg_metrics_t *const *metrics, unsigned n, char *err,
                size_t errlen)
{
    pass_t *ps = calloc(n ? n : 1, sizeof(*ps));
    if (!ps) {
        snprintf(err, errlen, "out of memory for the output-length pass");
        return SG_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++) {
        ps[i] = (pass_t){.tok = tok, .log = logs[i], .metrics = metrics[i]};
        /* A thread that cannot start is run here instead: the pass is the same, only slower. */
        ps[i].started = n > 1 && pthread_create(&ps[i].thread, NULL, pass_main, &ps[i]) == 0;
        if (!ps[i].started)
            pass_main(&ps[i]);
    }
    int rc = 0;
    for (unsigned i = 0; i < n; i++) {
        if (ps[i].started)
            pthread_join(ps[i].thread, NULL);
        if (ps[i].rc < 0 && rc == 0) {
            rc = ps[i].rc;
            snprintf(err, errlen, "counting output tokens in %s: %s", ps[i].log, sg_strerror(rc));
        }
    }
    free(ps);
    return rc;
}
