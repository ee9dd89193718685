/*
 * The post-run OSL pass (--tokenizer only). While the run is on, workers keep each request's output text in
 * their record logs and add no measured record to their metrics (OSL, and every metric that follows from it,
 * is not known yet). After the join this pass, one thread per worker log with its own encoder, counts each
 * text, settles OSL (usage when the server sent it, else the tokenizer count), writes both into the log in
 * place, and adds the final records to that worker's metrics; the controller then merges and exports as usual.
 */
#ifndef SG_OSL_H
#define SG_OSL_H

#include "sg_metrics.h"
#include "sg_tokenizer.h"

/* logs[i] goes into metrics[i]. 0, or a negative SG_E* / -errno code with one line in err. */
SG_WUR int sg_osl_pass(const sg_tokenizer_t *tok, const char *const *logs, sg_metrics_t *const *metrics, unsigned n,
                       char *err, size_t errlen);

#endif
