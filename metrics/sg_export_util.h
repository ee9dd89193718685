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
#include "sg_metrics.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdio.h>

struct sg_outfile_sink;
typedef struct {
    FILE *f;                      /* write here */
    char *tmp;                    /* malloc'd temporary path */
    char *path;                   /* malloc'd final path */
    struct sg_outfile_sink *sink; /* under f: the descriptor, and the first write error's errno */
} sg_outfile_t;

/* 0 or -errno; on success of->f is open for writing. */
SG_WUR int sg_outfile_open(sg_outfile_t *of, const char *path);
/* Flush, sync, close, rename into place. 0 or -errno; on failure the temporary file is removed. Always frees. */
SG_WUR int sg_outfile_commit(sg_outfile_t *of);
/* Close and remove the temporary file; frees. Safe after a failed open. */
void sg_outfile_abort(sg_outfile_t *of);
/* After ferror(of->f): the first failed write's -errno (-ENOSPC on a full disk, not a stdio -EIO); -EIO if unknown. */
int sg_outfile_error(const sg_outfile_t *of);

/*
 * A large output file written from one aligned buffer: the caller formats straight into it (sg_outbuf_room) and
 * every full MiB goes out in one write(2). Where the file system allows, the writes bypass the page cache
 * (O_DIRECT): copying tens of MB into fresh page-cache pages was most of the JSONL export's CPU, and the data must
 * reach the disk before commit anyway (fsync). The same whole-or-nothing temporary-file-and-rename as
 * sg_outfile_t.
 */
#define SG_OUTBUF_CAP (1u << 20)
/* The most one sg_outbuf_room call may ask for (the buffer less the unaligned tail a flush may leave). */
#define SG_OUTBUF_ROOM_MAX (SG_OUTBUF_CAP - 4096u)

typedef struct {
    char *buf; /* SG_OUTBUF_CAP bytes, page-aligned */
    size_t len;
    int fd;
    int err; /* sticky: the first error, which commit reports */
    bool direct;
    char *tmp;
    char *path;
} sg_outbuf_t;

SG_WUR int sg_outbuf_open(sg_outbuf_t *ob, const char *path);
/* Make room for n <= SG_OUTBUF_ROOM_MAX bytes at ob->buf + ob->len (write them, then add to ob->len). NULL after an
 * error (sticky; commit reports it), SG_ETOOBIG for a larger n that does not fit. */
char *sg_outbuf_room_slow(sg_outbuf_t *ob, size_t n);
static inline char *sg_outbuf_room(sg_outbuf_t *ob, size_t n)
{
    if (SG_LIKELY(SG_OUTBUF_CAP - ob->len >= n))
        return ob->buf + ob->len;
    return sg_outbuf_room_slow(ob, n);
}
/* Write the rest, sync, close, rename into place. 0 or -errno; on failure the temporary file is removed. Frees. */
SG_WUR int sg_outbuf_commit(sg_outbuf_t *ob);
/* Close and remove the temporary file; frees. Safe after a failed open. */
void sg_outbuf_abort(sg_outbuf_t *ob);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there are not valid UTF-8. */
size_t sg_utf8_seq_len(const unsigned char *s, size_t n);
/* s[0..len) as a JSON string literal (quotes included) at dst, which has room for SG_JSON_ESCAPED_MAX(len) bytes:
 * controls escaped, invalid UTF-8 as U+FFFD. Returns the bytes written. */
#define SG_JSON_ESCAPED_MAX(len) ((len)*6 + 2)
size_t sg_json_escape(char *dst, const char *s, size_t len);
/* Copy src into dst (cap >= 1) as valid UTF-8, invalid bytes replaced by '?'; always NUL-terminated. */
void sg_utf8_sanitize(char *dst, size_t cap, const char *src);

/* A CSV field (RFC 4180): s (NULL as empty) in quotes with its quotes doubled; sg_csv_text quotes only when s holds a
 * comma, a quote or a line break, as Python's csv module does. */
void sg_csv_quoted(FILE *f, const char *s);
void sg_csv_text(FILE *f, const char *s);

/* One measured record as AIPerf's MetricRecordInfo line (export_aiperf.c), for the record-log merge; a no-op after
 * an output error (the buffer reports it). Times are wall clock: monotonic + wall_offset_ns. */
void sg_aiperf_record_line(sg_outbuf_t *ob, const sg_record_t *r, int64_t wall_offset_ns);

/* The summary object of profile_export_surge.json for m (new reference; NULL on OOM). export.c. */
json_t *sg_export_summary(const sg_metrics_t *m, const sg_run_info_t *info);

#endif
