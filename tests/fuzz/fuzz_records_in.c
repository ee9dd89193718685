/*
 * The reader of surge's per-request JSONL (dist/records_in.c: `surge merge` and a distributed run's rank 0 read
 * every rank's profile_export_surge.jsonl back with it) on arbitrary bytes, through a real file. Checks:
 *  - it returns 0, or -1 with one non-empty line in err that names the file;
 *  - each record handed over has a model name, content-event offsets it owns for the call (read to the last), and
 *    goes into a metrics object without a crash (sg_metrics_add) — the merge does exactly that;
 *  - each record's id and session are ones the merge's record log takes (0 to INT64_MAX), and its byte count one
 *    that no negative value wrapped into (at most INT64_MAX);
 *  - no leak (libFuzzer's leak check).
 */
#define _GNU_SOURCE
#include "dist_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        abort();                                                                                                       \
    } while (0)

static char file_path[256];

static void remove_file(void)
{
    if (file_path[0])
        unlink(file_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(file_path, sizeof file_path, "%s/surge-fuzz-records-%ld.jsonl", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    atexit(remove_file);
    return 0;
}

static int take(void *ctx, const sg_record_t *r, const char *model)
{
    if (!model)
        FAIL("a record with no model");
    (void)strlen(model);
    if (r->id > INT64_MAX) /* the merge appends it to a record log, which would refuse the whole log */
        FAIL("a record id above INT64_MAX: %llu", (unsigned long long)r->id);
    if (r->session > INT64_MAX)
        FAIL("a session id above INT64_MAX: %llu", (unsigned long long)r->session);
    if (r->response_bytes > INT64_MAX)
        FAIL("a response byte count above INT64_MAX (a negative one, wrapped): %llu",
             (unsigned long long)r->response_bytes);
    if (r->n_events && r->event_us)
        (void)*(volatile const uint32_t *)&r->event_us[r->n_events - 1];
    sg_metrics_add(ctx, r);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    FILE *f = fopen(file_path, "wb");
    if (!f)
        return 0;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return 0;
    }
    fclose(f);
    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    if (!m)
        return 0;
    char err[512] = "";
    int rc = sg_dist_read_jsonl(file_path, 1000000000, take, m, err, sizeof err);
    if (rc != 0 && rc != -1)
        FAIL("sg_dist_read_jsonl returned %d", rc);
    if (rc == -1 && (!err[0] || strchr(err, '\n') || !strstr(err, "surge-fuzz-records-")))
        FAIL("error is not one line naming the file: \"%s\"", err);
    sg_metrics_free(m);
    return 0;
}
