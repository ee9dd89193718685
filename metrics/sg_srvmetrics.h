/*
 * The server's own metrics, as scraped during a run (--server-metrics-url): every sample of every series with
 * its time on surge's clock, what failed, and the files. The scraper thread (engine/scrape.c) fills it; the main
 * thread reads it only after that thread was joined.
 *
 * Known metrics: the gauges and counters of vLLM, SGLang, TensorRT-LLM (Triton's backend) and llama.cpp that
 * explain a run (requests running and waiting, KV-cache usage, prefix-cache hits, tokens) get one canonical name
 * each ("known"), so a report or a summary reads them the same whatever the server. The table is in
 * srvmetrics.c and in docs/metrics.md.
 */
#ifndef SG_SRVMETRICS_H
#define SG_SRVMETRICS_H

#include "sg_common.h"

typedef struct sg_srvm sg_srvm_t;

sg_srvm_t *sg_srvm_new(const char *const *urls, size_t n_urls, double interval_s);
void sg_srvm_free(sg_srvm_t *m);

/* One scrape's body from endpoint i, received at t_ns (CLOCK_MONOTONIC). 0, or -1 when the body is not the text
 * format (recorded as a failure with its line; err says it too). */
int sg_srvm_add_scrape(sg_srvm_t *m, size_t i, int64_t t_ns, const char *body, size_t len, char *err, size_t errlen);
/* A scrape of endpoint i that failed (refused, timed out, not 200, ...) at t_ns. */
void sg_srvm_add_failure(sg_srvm_t *m, size_t i, int64_t t_ns, const char *error);
void sg_srvm_counts(const sg_srvm_t *m, size_t i, uint64_t *scrapes, uint64_t *failed);
size_t sg_srvm_series_count(const sg_srvm_t *m);

/* server_metrics.json and .csv; times in seconds from t0_ns (the run's start: the origin of the per-request
 * log's times). 0 or a negative error. */
SG_WUR int sg_srvm_write(const sg_srvm_t *m, int64_t t0_ns, const char *json_path, const char *csv_path);
/* The summary object ("server_metrics" in profile_export_surge.json) as JSON text (malloc'd), over the samples
 * from t0_ns to t1_ns: per endpoint, each known metric's gauge statistics or counter delta and rate. */
char *sg_srvm_summary_json(const sg_srvm_t *m, int64_t t0_ns, int64_t t1_ns);

/*
 * GPU telemetry: the summary's "gpu_telemetry" object (JSON text, malloc'd) from the DCGM exporter series scraped
 * (any endpoint: --gpu-telemetry's or --server-metrics-url's), one entry per GPU (endpoint, gpu and UUID labels):
 * the gauges' statistics (utilisation %, memory used and free MiB, power W, SM clock MHz, temperature C), the
 * energy over the scraped span in J (the energy counter's increase, else the power integrated), and over every
 * GPU the energy and output_tokens / energy (tokens per joule). NULL when no DCGM series was scraped.
 */
char *sg_srvm_gpu_json(const sg_srvm_t *m, uint64_t output_tokens);

/* The canonical name of a server's metric (with its labels), or NULL (tests, docs). */
const char *sg_srvm_known(const char *name, size_t name_len, const char *const *label_kv, size_t n_labels);

#endif
