/*
 * The Prometheus text exposition format (version 0.0.4), sans-I/O: one whole scrape body in, one callback per
 * sample out. What servers' /metrics endpoints answer (vLLM, SGLang, TensorRT-LLM, llama.cpp, node_exporter).
 *
 *   # HELP name text           (skipped)
 *   # TYPE name counter|gauge|histogram|summary|untyped
 *   name{label="value",...} value [timestamp_ms]
 *
 * Label values are unescaped (\\, \", \n); values are floats, NaN and +Inf/-Inf included. A sample takes the type
 * of the TYPE line of its family when it follows it (histogram and summary families: name_bucket, _sum, _count;
 * counters: name_total, _created), else untyped. No state between calls (one 16 KiB scratch buffer per call).
 */
#ifndef SG_PROM_H
#define SG_PROM_H

#include "sg_common.h"

typedef enum {
    SG_PROM_UNTYPED = 0,
    SG_PROM_COUNTER,
    SG_PROM_GAUGE,
    SG_PROM_HISTOGRAM,
    SG_PROM_SUMMARY,
} sg_prom_type_t;

#define SG_PROM_MAX_LABELS 32
#define SG_PROM_MAX_LINE 16384 /* a sample line's labels, unescaped, must fit in this */

typedef struct {
    sg_slice_t name;
    sg_slice_t value; /* unescaped; valid during the callback */
} sg_prom_label_t;

typedef struct {
    sg_slice_t name;
    sg_prom_label_t labels[SG_PROM_MAX_LABELS];
    size_t n_labels;
    double value;
    bool has_timestamp;
    int64_t timestamp_ms;
    sg_prom_type_t type;
} sg_prom_sample_t;

/* Return 0 to go on; a negative value stops the parse and is returned. */
typedef int (*sg_prom_fn)(void *ud, const sg_prom_sample_t *s);

/*
 * Parse text[0..len). Returns the number of samples, or SG_EPROTO (a malformed line; *bad_line is its 1-based
 * number) or the callback's negative value. A last line without a newline is parsed like the others.
 */
SG_WUR int sg_prom_parse(const char *text, size_t len, sg_prom_fn fn, void *ud, size_t *bad_line);

const char *sg_prom_type_name(sg_prom_type_t t);

#endif
