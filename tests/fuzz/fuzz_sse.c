/*
 * SSE parser. The first three input bytes choose max_event and where to cut the rest. Two checks: split
 * feeding gives the same events as feeding whole, and both match a deliberately naive reference parser
 * written straight from the WHATWG rules (and the documented cap), which shares no code with ours.
 */
#include "sg_sse.h"

#include "../unit/trace.h"

/* Length-prefixed, so no byte in the data can fake a boundary. */
static void add_event(str_t *t, const char *ev, size_t ev_len, const char *data, size_t data_len)
{
    str_fmt(t, "E%zu:", ev_len);
    str_add(t, ev, ev_len);
    str_fmt(t, "D%zu:", data_len);
    str_add(t, data, data_len);
}

static void add_end(str_t *t, int rc, bool pending)
{
    str_fmt(t, "|rc=%d pending=%d", rc, rc == 0 && pending);
}

/* ---------- the reference ---------- */

static void reference(const char *in, size_t len, size_t max_event, str_t *out)
{
    str_t data = {0}, event = {0};
    bool has_data = false, pending = false;
    int rc = 0;
    size_t i = 0;
    if (len >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    else if (len > 0 && len < 3 && memcmp(in, "\xEF\xBB\xBF", len) == 0)
        i = len, pending = true; /* could still become a BOM */
    while (i < len) {
        size_t j = i;
        while (j < len && in[j] != '\r' && in[j] != '\n')
            j++;
        if (j == len) {
            if (j - i > max_event)
                rc = -10001;
            pending = true;
            break;
        }
        const char *line = in + i;
        size_t n = j - i;
        i = (in[j] == '\r' && j + 1 < len && in[j + 1] == '\n') ? j + 2 : j + 1;
        if (n == 0) {
            if (has_data)
                add_event(out, event.s, event.len, data.s, data.len);
            has_data = false;
            data.len = event.len = 0;
            continue;
        }
        if (n > max_event) {
            rc = -10001;
            break;
        }
        if (line[0] == ':')
            continue;
        size_t colon = 0;
        while (colon < n && line[colon] != ':')
            colon++;
        const char *value = colon < n ? line + colon + 1 : line + n;
        size_t vlen = colon < n ? n - colon - 1 : 0;
        if (vlen && value[0] == ' ')
            value++, vlen--;
        if (colon == 4 && memcmp(line, "data", 4) == 0) {
            if (has_data)
                str_add(&data, "\n", 1);
            str_add(&data, value, vlen);
            has_data = true;
        } else if (colon == 5 && memcmp(line, "event", 5) == 0) {
            event.len = 0;
            str_add(&event, value, vlen);
        } else {
            continue;
        }
        if (data.len + event.len > max_event) {
            rc = -10001;
            break;
        }
    }
    pending = pending || has_data || event.len > 0;
    add_end(out, rc, pending);
    free(data.s);
    free(event.s);
}

/* ---------- ours ---------- */

static int on_event(void *ud, const sg_sse_event_t *ev)
{
    if (!ev->data.base || !ev->event.base)
        abort();
    add_event(ud, ev->event.base, ev->event.len, ev->data.base, ev->data.len);
    return 0;
}

static const sg_sse_cb_t cb = {on_event};

static str_t run(const void *ctx, const char *in, size_t len, const size_t *cuts, size_t ncuts)
{
    size_t max_event = *(const size_t *)ctx;
    str_t t = {0};
    sg_sse_t p;
    sg_sse_init(&p, max_event);
    size_t start = 0;
    int rc = 0;
    for (size_t c = 0; c <= ncuts && rc == 0; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        /* A copy per feed, freed right after: ASan catches any slice kept past its feed. */
        char *piece = malloc(end - start + 1);
        memcpy(piece, in + start, end - start);
        rc = sg_sse_feed(&p, piece, end - start, &cb, &t);
        free(piece);
        start = end;
    }
    add_end(&t, rc, sg_sse_pending(&p));
    sg_sse_free(&p);
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const size_t max_events[] = {0, 1, 5, 16, 64, 256, 4096, 1 << 20};
    uint8_t mode = data[0];
    uint32_t seed = (uint32_t)data[1] | (uint32_t)data[2] << 8 | 1u;
    const char *in = (const char *)data + 3;
    size_t len = size - 3;
    size_t max_event = max_events[mode & 7];

    str_t ref = {0};
    reference(in, len, max_event, &ref);
    str_t whole = run(&max_event, in, len, NULL, 0);
    if (!str_same(&whole, &ref)) {
        fprintf(stderr, "differs from the reference\nref:   %.*s\nwhole: %.*s\n", (int)ref.len, ref.s, (int)whole.len,
                whole.s);
        abort();
    }

    trace_fuzz_splits(run, &max_event, in, len, &whole, mode & 8, (size_t)(mode >> 4) % 16 + 1, seed);
    free(ref.s);
    free(whole.s);
    return 0;
}
