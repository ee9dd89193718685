/*
 * The worker's binary record log read back (metrics/reclog.c) on arbitrary records: the input follows a valid file
 * header (taken from a log sg_reclog_open wrote), so every mutation lands in the records. Checks:
 *  - the full decoder (sg_reclog_each) returns 0 or SG_EPROTO, and hands over records whose content-event offsets
 *    can be read to the last;
 *  - the export (sg_export_records, surge's JSONL and AIPerf's) refuses exactly the logs the full decoder refuses:
 *    its index reads only each record's head, and the rest is checked as each record is written. A refused export
 *    leaves neither file; an accepted one writes one line per measured record to each, every line a JSON object
 *    (jansson parses it);
 *  - the OSL pass (sg_reclog_finalize, which patches the log in place) agrees too, and leaves a log that still
 *    decodes, to as many records;
 *  - no leak (libFuzzer's leak check).
 */
#define _GNU_SOURCE
#include "jansson_ref.h"
#include "sg_metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char log_path[256], surge_path[300], aiperf_path[300];
static unsigned char header[16];

static void remove_files(void)
{
    unlink(log_path);
    unlink(surge_path);
    unlink(aiperf_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(log_path, sizeof log_path, "%s/surge-fuzz-reclog-%ld.reclog", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    snprintf(surge_path, sizeof surge_path, "%s.surge.jsonl", log_path);
    snprintf(aiperf_path, sizeof aiperf_path, "%s.aiperf.jsonl", log_path);
    int err = 0;
    sg_reclog_t *l = sg_reclog_open(log_path, &err);
    if (!l || sg_reclog_close(l) != 0)
        FAIL("cannot write an empty record log at %s (%d)", log_path, err);
    FILE *f = fopen(log_path, "rb");
    if (!f || fread(header, 1, sizeof header, f) != sizeof header)
        FAIL("cannot read the header of %s", log_path);
    fclose(f);
    atexit(remove_files);
    return 0;
}

typedef struct {
    uint64_t n;
    uint64_t sum; /* of the event offsets: each read, to the last */
} seen_t;

static void take(void *ctx, const sg_record_t *r)
{
    seen_t *s = ctx;
    s->n++;
    for (uint32_t i = 0; i < r->n_events; i++)
        s->sum += r->event_us[i];
}

static ssize_t count_bytes(void *ctx, const char *text, size_t len)
{
    (void)ctx;
    (void)text;
    return (ssize_t)(len / 4);
}

/* Lines of a file, each parsed by jansson as an object; -1 when one is not. */
static long json_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        FAIL("%s: the export said 0 and left no file", path);
    long n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t e;
        /* "\u0000" is valid JSON (RFC 8259), and a server's error text can hold a NUL: the export escapes it so */
        json_t *v = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &e);
        if (!json_is_object(v))
            FAIL("%s: line %ld is not a JSON object (%s): %.300s", path, n + 1, e.text, line);
        json_decref(v);
        n++;
    }
    free(line);
    fclose(f);
    return n;
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    FILE *f = fopen(log_path, "wb");
    if (!f || fwrite(header, 1, sizeof header, f) != sizeof header || (size && fwrite(data, 1, size, f) != size) ||
        fclose(f) != 0)
        FAIL("cannot write %s", log_path);
    unlink(surge_path);
    unlink(aiperf_path);

    seen_t full = {0};
    int rc = sg_reclog_each(log_path, take, &full);
    if (rc != 0 && rc != SG_EPROTO)
        FAIL("sg_reclog_each: %d, neither 0 nor SG_EPROTO", rc);

    const char *logs[] = {log_path};
    const char *models[] = {"m0", "model \"one\"\n"};
    sg_records_out_t out = {.surge_path = surge_path,
                            .aiperf_path = aiperf_path,
                            .model_names = models,
                            .n_models = 2,
                            .wall_offset_ns = 1700000000000000000ll};
    int xrc = sg_export_records(&out, logs, 1);
    if (xrc != rc)
        FAIL("the export says %d where the full decoder says %d", xrc, rc);
    if (rc) {
        if (exists(surge_path) || exists(aiperf_path))
            FAIL("a refused export left a file behind");
    } else {
        long a = json_lines(surge_path), b = json_lines(aiperf_path);
        if (a != (long)full.n || b != (long)full.n)
            FAIL("%" PRIu64 " measured records, but %ld surge lines and %ld AIPerf lines", full.n, a, b);
    }

    /* the OSL pass: the same verdict, and a log that still decodes, to as many records */
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    if (!m)
        return 0;
    int frc = sg_reclog_finalize(log_path, count_bytes, NULL, m);
    sg_metrics_free(m);
    if (frc != rc)
        FAIL("sg_reclog_finalize says %d where the full decoder says %d", frc, rc);
    if (!rc) {
        seen_t again = {0};
        int arc = sg_reclog_each(log_path, take, &again);
        if (arc != 0 || again.n != full.n)
            FAIL("after the OSL pass: %d, %" PRIu64 " records where there were %" PRIu64, arc, again.n, full.n);
    }
    return 0;
}
