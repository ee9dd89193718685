/*
 * Helpers shared by the exporters. Internal to metrics/.
 *
 * Files the exporters write appear whole or not at all: they are written under a temporary name in the same
 * directory and renamed over the final path only once everything reached the kernel. A crash or an error
 * mid-way leaves no file that looks complete.
 * Main thread only, after the run.
 */
#ifndef SG_EXPORT_UTIL_H
#define SG_EXPORT_UTIL_H

#include "sg_common.h"

#include <stdio.h>

typedef struct {
    FILE *f;    /* write here */
    char *tmp;  /* malloc'd temporary path */
    char *path; /* malloc'd final path */
} sg_outfile_t;

/* 0 or -errno; on success of->f is open for writing. */
SG_WUR int sg_outfile_open(sg_outfile_t *of, const char *path);
/* Flush, sync, close, rename into place. 0 or -errno; on failure the temporary file is removed. Always frees. */
SG_WUR int sg_outfile_commit(sg_outfile_t *of);
/* Close and remove the temporary file; frees. Safe after a failed open. */
void sg_outfile_abort(sg_outfile_t *of);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there are not valid UTF-8. */
size_t sg_utf8_seq_len(const unsigned char *s, size_t n);
/* Write s[0..len) as a JSON string literal (quotes included): controls escaped, invalid UTF-8 as U+FFFD. */
void sg_json_put_string(FILE *f, const char *s, size_t len);
/* Copy src into dst (cap >= 1) as valid UTF-8, invalid bytes replaced by '?'; always NUL-terminated. */
void sg_utf8_sanitize(char *dst, size_t cap, const char *src);

#endif
