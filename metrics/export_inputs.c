/*
 * inputs.json: the request bodies of a run, as GenAI-Perf writes the file (and perf_analyzer's --input-data and
 * surge's own --input-file read it): {"data": [{"payload": [BODY]}, ...]}, one element per body, in the order
 * given. Written once, before the workers start, from bodies that already exist: each is copied as it is, never
 * parsed or re-encoded, and the file goes out through one 1 MiB buffer, so a table of millions of prompts costs
 * its bytes on disk and no memory beyond the buffer.
 */
#include "sg_export_util.h"
#include "sg_metrics.h"

#include <errno.h>
#include <string.h>

/* Copy len bytes into the file in pieces the buffer takes. 0 or the buffer's sticky error. */
static int put(sg_outbuf_t *ob, const char *s, size_t len)
{
    while (len) {
        size_t n = len < SG_OUTBUF_ROOM_MAX ? len : SG_OUTBUF_ROOM_MAX;
        char *p = sg_outbuf_room(ob, n);
        if (!p)
            return ob->err ? ob->err : -EIO;
        memcpy(p, s, n);
        ob->len += n;
        s += n;
        len -= n;
    }
    return 0;
}

#define PUT_LIT(ob, lit) put((ob), (lit), sizeof(lit) - 1)

int sg_export_inputs(const char *path, size_t n, sg_body_at_fn body_at, void *ctx)
{
    sg_outbuf_t ob;
    int rc = sg_outbuf_open(&ob, path);
    if (rc)
        return rc;
    rc = PUT_LIT(&ob, "{\"data\": [");
    bool first = true;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t len = 0;
        const char *body = body_at(ctx, i, &len);
        if (!body)
            continue;
        /* One element per line: the file stays readable with line tools however many bodies it holds. */
        rc = first ? PUT_LIT(&ob, "\n{\"payload\": [") : PUT_LIT(&ob, ",\n{\"payload\": [");
        rc = rc ? rc : put(&ob, body, len);
        rc = rc ? rc : PUT_LIT(&ob, "]}");
        first = false;
    }
    rc = rc ? rc : PUT_LIT(&ob, "\n]}\n");
    if (rc) {
        sg_outbuf_abort(&ob);
        return rc;
    }
    return sg_outbuf_commit(&ob);
}
