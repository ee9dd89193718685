/*
 * sg_h2_classify_reply: a server's first bytes after our HTTP/2 preface, as the start-up check reads them, a
 * piece at a time. Checks, for any bytes: the answer once everything is in (final) is never "more"; reading a
 * prefix at a time (not final) never changes the answer it reaches first, so where the reads split cannot matter;
 * "more" is asked only while the bytes could still be SETTINGS or an unfinished HTTP/1.x status line (at most 256
 * bytes); and the description is always a terminated string within its buffer, however small.
 */
#include "sg_h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_what(const char *what, size_t cap)
{
    if (cap && strnlen(what, cap) == cap) {
        fprintf(stderr, "description not terminated within %zu bytes\n", cap);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char what[200];
    sg_h2_reply_t whole = sg_h2_classify_reply(data, size, true, what, sizeof what);
    check_what(what, sizeof what);
    if (whole == SG_H2_REPLY_MORE) {
        fprintf(stderr, "final answer is 'more' (%zu bytes)\n", size);
        abort();
    }
    /* the reads the check makes: every prefix, until the first answer that is not "more" */
    for (size_t k = 0; k <= size; k++) {
        memset(what, 'x', sizeof what);
        sg_h2_reply_t r = sg_h2_classify_reply(data, k, false, what, sizeof what);
        if (r == SG_H2_REPLY_MORE) {
            if (k >= 256) {
                fprintf(stderr, "'more' after %zu bytes\n", k);
                abort();
            }
            continue;
        }
        check_what(what, sizeof what);
        if (r != whole) {
            fprintf(stderr, "answer after %zu bytes (%d) differs from the answer after all %zu (%d)\n", k, (int)r, size,
                    (int)whole);
            abort();
        }
        break;
    }
    /* small description buffers: cut, terminated, never overrun */
    for (size_t cap = 0; cap < 24; cap++) {
        char *small = malloc(cap ? cap : 1);
        if (!small)
            return 0;
        (void)sg_h2_classify_reply(data, size, true, small, cap);
        check_what(small, cap);
        free(small);
    }
    return 0;
}
