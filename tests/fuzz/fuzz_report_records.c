/*
 * The report's record readers (report/records.c) over any bytes: surge's JSONL (the pull scanner), AIPerf's
 * record JSONL and perf_analyzer's export (jansson). Checks: a reader either refuses with a reason or fills
 * exactly one request per line that is not blank (surge's, AIPerf's) with error classes in range, and the charts' data
 * built from what it read (sorting, binning, sampling over whatever times it found) never crashes.
 */
#define _GNU_SOURCE /* memfd_create */
#include "report_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Lines with something besides blanks: the records a reader must have taken. */
static size_t record_lines(const uint8_t *d, size_t n)
{
    size_t lines = 0;
    bool text = false;
    for (size_t i = 0; i < n; i++) {
        if (d[i] == '\n') {
            lines += text;
            text = false;
        } else if (d[i] != ' ' && d[i] != '\t' && d[i] != '\r') {
            text = true;
        }
    }
    return lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 3;
    data++;
    size--;
    int fd = memfd_create("records", MFD_CLOEXEC);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    rp_run_t run;
    memset(&run, 0, sizeof run);
    run.source = "surge";
    int rc = which == 0   ? rp_read_surge_jsonl(&run, path, err, sizeof err)
             : which == 1 ? rp_read_aiperf_jsonl(&run, path, err, sizeof err)
                          : rp_read_genai_perf(&run, path, err, sizeof err);
    close(fd);
    if (rc == 0) {
        if (which < 2)
            assert(run.n == record_lines(data, size));
        for (size_t i = 0; i < run.n; i++)
            assert(run.req[i].err <= run.n_err_class);
        json_t *d = rp_run_data(&run);
        assert(d != NULL);
        json_decref(d);
    } else {
        assert(err[0] != 0);
    }
    rp_run_free(&run);
    return 0;
}
