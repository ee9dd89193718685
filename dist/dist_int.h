/* Between dist/'s parts: the JSONL reader the merge uses. */
#ifndef SG_DIST_INT_H
#define SG_DIST_INT_H

#include "sg_dist.h"
#include "sg_metrics.h"
#include "sg_record.h"

/* Called once per record of a surge JSONL, in file order; model is its model name (or index, as text). A
 * negative return (-errno) stops the read. */
typedef int (*sg_dist_record_fn)(void *ctx, const sg_record_t *r, const char *model);

/*
 * Every record of a profile_export_surge.jsonl to fn, its times (ns) moved by origin (absent times stay 0;
 * origin must be positive so that a time at the file's zero stays present). 0, or -1 with the file and line in
 * err.
 */
int sg_dist_read_jsonl(const char *path, int64_t origin, sg_dist_record_fn fn, void *ctx, char *err, size_t errlen);

#endif
