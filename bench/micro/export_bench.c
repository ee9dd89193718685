/*
 * Micro-benchmark: CPU ns per JSONL line of sg_export_jsonl, for N non-streamed records shaped like the h2
 * benchmark's (one worker's log, ok, usage counts). Built with the project, run by hand:
 *   build/micro/export_bench [records] [dir] [intended|completion] [aiperf]
 *   (prints ns/line; the output file is left as dir/eb.jsonl for comparison). The log is in completion order, as
 *   a worker writes it (the export must reorder it), or with "intended" already in output order. "aiperf" also
 *   writes AIPerf's per-request file (dir/eb_aiperf.jsonl) in the same pass, as a run does.
 */
#include "sg_metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int by_end(const void *a, const void *b)
{
    const sg_record_t *x = a, *y = b;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char log[512], out[512];
    snprintf(log, sizeof log, "%s/eb.reclog", dir);
    snprintf(out, sizeof out, "%s/eb.jsonl", dir);
    char aiperf_out[512];
    snprintf(aiperf_out, sizeof aiperf_out, "%s/eb_aiperf.jsonl", dir);
    bool aiperf = argc > 4 && strcmp(argv[4], "aiperf") == 0;
    int err = 0;
    sg_reclog_t *l = sg_reclog_open(log, &err);
    if (!l)
        return 1;
    bool completion_order = !(argc > 3 && strcmp(argv[3], "intended") == 0);
    sg_record_t *recs = calloc((size_t)n, sizeof(*recs));
    if (!recs)
        return 1;
    int64_t t = 1000000000000ll;
    uint64_t x = 12345;
    for (long i = 0; i < n; i++) {
        sg_record_t r;
        memset(&r, 0, sizeof r);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        r.id = (uint64_t)i;
        r.intended_ns = t + i * 1800;
        r.sent_ns = r.intended_ns + 300 + (int64_t)(x >> 54);
        r.first_byte_ns = r.sent_ns + 40000 + (int64_t)(x >> 48 & 0xffff);
        r.end_ns = r.first_byte_ns + 500;
        r.http_status = 200;
        r.osl_source = SG_OSL_USAGE;
        r.isl = 100;
        r.isl_server = 100;
        r.osl = 1;
        r.osl_server = 1;
        r.osl_tokenizer = -1;
        r.max_tokens = 1;
        r.response_bytes = 250;
        recs[i] = r;
    }
    if (completion_order)
        qsort(recs, (size_t)n, sizeof(*recs), by_end);
    for (long i = 0; i < n; i++)
        if (sg_reclog_append(l, &recs[i]))
            return 1;
    free(recs);
    if (sg_reclog_close(l))
        return 1;
    const char *logs[] = {log};
    const char *models[] = {"bench"};
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = cpu_ns();
        sg_records_out_t o = {.surge_path = out,
                              .aiperf_path = aiperf ? aiperf_out : NULL,
                              .model_names = models,
                              .n_models = 1,
                              .wall_offset_ns = 1700000000000000000ll};
        if (sg_export_records(&o, logs, 1))
            return 1;
        double ns = (cpu_ns() - t0) / (double)n;
        best = ns < best ? ns : best;
    }
    printf("%ld lines: %.1f ns CPU/line (best of 5)\n", n, best);
    remove(log);
    return 0;
}
