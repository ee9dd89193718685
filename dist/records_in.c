/*
 * surge's per-request JSONL (profile_export_surge.jsonl, written by metrics/reclog.c) read back into records.
 *
 * The file holds everything the metrics are made of, exactly: times in integer ns, content-event times in
 * microseconds (token_times_ms has three decimals of ms, each the event's offset from the intended start rounded
 * to the microsecond, so event i's offset from the first token is the difference of two of them), lengths,
 * statuses and the error text. A record read back and given to sg_metrics_add counts as it did in the run.
 */
#include "dist_int.h"

#include "json_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* An integer or null (*present false). */
static int scan_int(sg_js_t *js, int64_t *v, bool *present)
{
    if (sg_js_peek(js) == 'n') {
        *present = false;
        *v = 0;
        return sg_js_skip(js);
    }
    bool is_int;
    *present = true;
    return sg_js_number(js, v, &is_int) < 0 || !is_int ? -1 : 0;
}

/* An integer that fits its field, lo..hi, or null: a rank file holding one that does not (a negative
 * count, a status past INT32_MAX) is corrupt, and casting it would wrap it into a huge figure. */
static int scan_fit(sg_js_t *js, int64_t lo, int64_t hi, int64_t *v, bool *present)
{
    if (scan_int(js, v, present) < 0)
        return -1;
    return *present && (*v < lo || *v > hi) ? -1 : 0;
}

static int scan_bool(sg_js_t *js, bool *v)
{
    int c = sg_js_peek(js);
    if (c != 't' && c != 'f')
        return -1;
    *v = c == 't';
    return sg_js_skip(js);
}

/* A string value into buf (cap bytes, NUL-terminated, cut to fit), escapes decoded. */
static int scan_text(sg_js_t *js, char *buf, size_t cap)
{
    sg_slice_t raw;
    if (sg_js_peek(js) != '"')
        return -1;
    const char *start = js->p;
    if (sg_js_string(js, &raw) < 0)
        return -1;
    if (!memchr(raw.base, '\\', raw.len)) {
        size_t n = raw.len < cap - 1 ? raw.len : cap - 1;
        memcpy(buf, raw.base, n);
        buf[n] = '\0';
        return 0;
    }
    json_t *s = json_loadb(start, (size_t)(js->p - start), JSON_DECODE_ANY, NULL);
    if (!json_is_string(s)) {
        json_decref(s);
        return -1;
    }
    snprintf(buf, cap, "%s", json_string_value(s));
    json_decref(s);
    return 0;
}

/* A number with at most three decimals (token_times_ms) as integer microseconds. An offset beyond 9e12 ms (285
 * years) is no run's: it is refused, so that the microseconds stay exact in a double and any two of them subtract
 * inside int64 (llround is unspecified past int64, and the events' differences below would overflow). */
static int scan_ms_us(sg_js_t *js, int64_t *us)
{
    double ms;
    if (sg_js_double(js, &ms) < 0 || !(fabs(ms) <= 9e12))
        return -1;
    *us = llround(ms * 1000.0);
    return 0;
}

static int class_of(const char *name, uint8_t *out)
{
    for (int c = 1; c < SG_ERRC__COUNT; c++)
        if (strcmp(name, sg_err_class_name((sg_err_class_t)c)) == 0) {
            *out = (uint8_t)c;
            return 0;
        }
    return -1;
}

static int osl_source_of(const char *name, uint8_t *out)
{
    for (int s = SG_OSL_USAGE; s <= SG_OSL_EVENTS; s++)
        if (strcmp(name, sg_osl_source_name((sg_osl_source_t)s)) == 0) {
            *out = (uint8_t)s;
            return 0;
        }
    return -1;
}

typedef struct {
    sg_record_t rec;
    char model[512];
    char cls[32];
    char status[16];
    int64_t *tt_us; /* token_times_ms, microseconds from the intended start */
    uint32_t *ev_us;
    size_t n_tt, cap_tt;
} line_t;

static int push_tt(line_t *l, int64_t us)
{
    if (l->n_tt == l->cap_tt) {
        size_t cap = l->cap_tt ? l->cap_tt * 2 : 256;
        int64_t *t = realloc(l->tt_us, cap * sizeof(*t));
        uint32_t *e = realloc(l->ev_us, cap * sizeof(*e));
        if (t)
            l->tt_us = t;
        if (e)
            l->ev_us = e;
        if (!t || !e)
            return -1;
        l->cap_tt = cap;
    }
    l->tt_us[l->n_tt++] = us;
    return 0;
}

/* One line into l->rec (times as written: ns from the file's origin, 0 when null). */
static int scan_line(line_t *l, const char *text, size_t len)
{
    sg_record_t *r = &l->rec;
    memset(r, 0, sizeof(*r));
    r->isl_server = r->osl_server = r->osl_tokenizer = r->isl_cached = -1;
    r->first_output_ns = INT64_MIN; /* absent from files older than the field: no time */
    r->send_start_ns = r->head_ns = INT64_MIN;
    r->first_tool_ns = INT64_MIN; /* absent unless the response made tool calls */
    l->model[0] = l->cls[0] = l->status[0] = '\0';
    l->n_tt = 0;
    bool have_id = false, have_intended = false;
    sg_js_t js;
    sg_js_init(&js, text, len);
    int count = 0, rc;
    sg_slice_t key;
    if (sg_js_obj_begin(&js) < 0)
        return -1;
    while ((rc = sg_js_obj_next(&js, &count, &key)) == 1) {
        int64_t v = 0;
        bool present = false;
        int64_t *t = NULL;
        if (SG_JS_KEY(&js, key, "intended_ns"))
            t = &r->intended_ns, have_intended = true;
        else if (SG_JS_KEY(&js, key, "sent_ns"))
            t = &r->sent_ns;
        else if (SG_JS_KEY(&js, key, "first_byte_ns"))
            t = &r->first_byte_ns;
        else if (SG_JS_KEY(&js, key, "first_token_ns"))
            t = &r->first_token_ns;
        else if (SG_JS_KEY(&js, key, "second_token_ns"))
            t = &r->second_token_ns;
        else if (SG_JS_KEY(&js, key, "first_output_token_ns"))
            t = &r->first_output_ns;
        else if (SG_JS_KEY(&js, key, "end_ns"))
            t = &r->end_ns;
        else if (SG_JS_KEY(&js, key, "send_start_ns"))
            t = &r->send_start_ns;
        else if (SG_JS_KEY(&js, key, "response_head_ns"))
            t = &r->head_ns;
        else if (SG_JS_KEY(&js, key, "first_tool_call_token_ns"))
            t = &r->first_tool_ns;
        if (t) {
            /* a time of 0 would read as "absent": a present one is kept apart by the caller's origin (> 0) */
            if (scan_int(&js, &v, &present) < 0)
                return -1;
            *t = present ? v : INT64_MIN;
            continue;
        }
        if (SG_JS_KEY(&js, key, "id")) {
            rc = scan_fit(&js, 0, INT64_MAX, &v, &present); /* the merged record log refuses one past INT64_MAX */
            r->id = (uint64_t)v;
            have_id = present;
        } else if (SG_JS_KEY(&js, key, "worker")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->worker = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "payload")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->payload = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "model")) {
            if (sg_js_peek(&js) == '"') {
                rc = scan_text(&js, l->model, sizeof l->model);
            } else {
                rc = scan_int(&js, &v, &present);
                snprintf(l->model, sizeof l->model, "%lld", (long long)v);
            }
        } else if (SG_JS_KEY(&js, key, "streaming")) {
            rc = scan_bool(&js, &r->streaming);
        } else if (SG_JS_KEY(&js, key, "resent")) {
            rc = scan_bool(&js, &r->resent);
        } else if (SG_JS_KEY(&js, key, "ramp")) {
            rc = scan_bool(&js, &r->ramp);
        } else if (SG_JS_KEY(&js, key, "session")) {
            rc = scan_fit(&js, 0, INT64_MAX, &v, &present);
            r->session = (uint64_t)v;
            r->in_session = present;
        } else if (SG_JS_KEY(&js, key, "turn")) {
            rc = scan_fit(&js, INT64_MIN, UINT32_MAX, &v, &present);
            r->turn = present && v > 0 ? (uint32_t)v : 0;
        } else if (SG_JS_KEY(&js, key, "no_output")) {
            rc = scan_bool(&js, &r->no_output);
        } else if (SG_JS_KEY(&js, key, "reasoning_tokens")) {
            rc = scan_fit(&js, INT64_MIN, UINT32_MAX, &v, &present);
            r->reasoning_tokens = present && v > 0 ? (uint32_t)v : 0;
        } else if (SG_JS_KEY(&js, key, "tool_calls")) {
            rc = scan_fit(&js, INT64_MIN, UINT32_MAX, &v, &present);
            r->tool_calls = present && v > 0 ? (uint32_t)v : 0;
        } else if (SG_JS_KEY(&js, key, "tool_call_tokens")) {
            rc = scan_fit(&js, INT64_MIN, UINT32_MAX, &v, &present);
            r->tool_tokens = present && v > 0 ? (uint32_t)v : 0;
        } else if (SG_JS_KEY(&js, key, "images")) {
            rc = scan_int(&js, &v, &present);
            r->images = present && v > 0 ? (uint16_t)(v > UINT16_MAX ? UINT16_MAX : v) : 0;
        } else if (SG_JS_KEY(&js, key, "audios")) {
            rc = scan_int(&js, &v, &present);
            r->audios = present && v > 0 ? (uint16_t)(v > UINT16_MAX ? UINT16_MAX : v) : 0;
        } else if (SG_JS_KEY(&js, key, "media_bytes")) {
            rc = scan_int(&js, &v, &present);
            r->media_bytes = present && v > 0 ? (uint32_t)(v > UINT32_MAX ? UINT32_MAX : v) : 0;
        } else if (SG_JS_KEY(&js, key, "status")) {
            rc = scan_text(&js, l->status, sizeof l->status);
        } else if (SG_JS_KEY(&js, key, "error_class")) {
            rc = scan_text(&js, l->cls, sizeof l->cls);
        } else if (SG_JS_KEY(&js, key, "error")) {
            rc = scan_text(&js, r->err_msg, sizeof r->err_msg);
        } else if (SG_JS_KEY(&js, key, "http_status")) {
            rc = scan_fit(&js, INT32_MIN, INT32_MAX, &v, &present);
            r->http_status = (int32_t)v;
        } else if (SG_JS_KEY(&js, key, "input_sequence_length")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->isl = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "input_sequence_length_server")) {
            rc = scan_fit(&js, INT32_MIN, INT32_MAX, &v, &present);
            r->isl_server = present ? (int32_t)v : -1;
        } else if (SG_JS_KEY(&js, key, "cached_input_tokens")) {
            rc = scan_fit(&js, INT32_MIN, INT32_MAX, &v, &present);
            r->isl_cached = present ? (int32_t)v : -1;
        } else if (SG_JS_KEY(&js, key, "output_sequence_length")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->osl = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "osl_source")) {
            char src[32];
            rc = scan_text(&js, src, sizeof src);
            if (rc == 0 && osl_source_of(src, &r->osl_source) < 0)
                return -1;
        } else if (SG_JS_KEY(&js, key, "output_sequence_length_server")) {
            rc = scan_fit(&js, INT32_MIN, INT32_MAX, &v, &present);
            r->osl_server = present ? (int32_t)v : -1;
        } else if (SG_JS_KEY(&js, key, "output_sequence_length_tokenizer")) {
            rc = scan_fit(&js, INT32_MIN, INT32_MAX, &v, &present);
            r->osl_tokenizer = present ? (int32_t)v : -1;
        } else if (SG_JS_KEY(&js, key, "max_tokens")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->max_tokens = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "content_events")) {
            rc = scan_fit(&js, 0, UINT32_MAX, &v, &present);
            r->content_events = (uint32_t)v;
        } else if (SG_JS_KEY(&js, key, "response_bytes")) {
            rc = scan_fit(&js, 0, INT64_MAX, &v, &present);
            r->response_bytes = (uint64_t)v;
        } else if (SG_JS_KEY(&js, key, "url")) {
            rc = scan_int(&js, &v, &present);
            if (present && (v < 0 || v > 255))
                return -1;
            r->url = (uint8_t)v;
            r->multi_url = present;
        } else if (SG_JS_KEY(&js, key, "connect_ns")) {
            rc = scan_int(&js, &v, &present);
            r->conn_connect_ns = present && v > 0 ? v : 0;
        } else if (SG_JS_KEY(&js, key, "tls_handshake_ns")) {
            rc = scan_int(&js, &v, &present);
            r->conn_tls_ns = present && v > 0 ? v : 0;
            r->tls = present;
        } else if (SG_JS_KEY(&js, key, "token_times_ms")) {
            int n = 0;
            if (sg_js_arr_begin(&js) < 0)
                return -1;
            while ((rc = sg_js_arr_next(&js, &n)) == 1) {
                int64_t us;
                if (scan_ms_us(&js, &us) < 0 || push_tt(l, us) < 0)
                    return -1;
            }
        } else {
            rc = sg_js_skip(&js); /* the derived fields (schedule_lag_ms, ...) and anything newer */
        }
        if (rc < 0)
            return -1;
    }
    if (rc < 0 || !sg_js_at_end(&js) || !have_id || !have_intended)
        return -1;
    if (strcmp(l->status, "ok") == 0)
        r->err_class = SG_ERRC_NONE;
    else if (strcmp(l->status, "cancelled") == 0) /* surge's status of its own for them; older files say "error" */
        r->err_class = class_of(l->cls, &r->err_class) == 0 && r->err_class == SG_ERRC_CANCEL_TEST ? SG_ERRC_CANCEL_TEST
                                                                                                   : SG_ERRC_CANCELLED;
    else if (strcmp(l->status, "error") != 0 || class_of(l->cls, &r->err_class) < 0)
        return -1;
    for (size_t i = 0; i < l->n_tt; i++) {
        int64_t d = l->tt_us[i] - l->tt_us[0];
        if (d < 0 || d > UINT32_MAX)
            return -1;
        l->ev_us[i] = (uint32_t)d;
    }
    r->event_us = l->n_tt ? l->ev_us : NULL;
    r->n_events = (uint32_t)l->n_tt;
    return 0;
}

int sg_dist_read_jsonl(const char *path, int64_t origin, sg_dist_record_fn fn, void *ctx, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) { /* no records (and no pointer arithmetic on a NULL base) */
        close(fd);
        return 0;
    }
    const char *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    if (size && base[size - 1] != '\n') {
        snprintf(err, errlen, "%s: the last record has no end of line: the file was cut off", path);
        rc = -1;
    }
    line_t l;
    memset(&l, 0, sizeof l);
    size_t line = 0;
    for (const char *p = base, *end = base + size; p < end && rc == 0; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)(nl - p);
        size_t blank = 0;
        while (blank < len && (p[blank] == ' ' || p[blank] == '\t' || p[blank] == '\r'))
            blank++;
        if (blank < len) {
            if (scan_line(&l, p, len) < 0) {
                snprintf(err, errlen, "%s: line %zu is not a surge request record", path, line + 1);
                rc = -1;
                break;
            }
            sg_record_t *r = &l.rec;
            int64_t *times[] = {&r->intended_ns,     &r->sent_ns,      &r->first_byte_ns,   &r->first_token_ns,
                                &r->second_token_ns, &r->end_ns,       &r->first_output_ns, &r->send_start_ns,
                                &r->head_ns,         &r->first_tool_ns};
            for (size_t i = 0; i < SG_ARRAY_LEN(times); i++)
                *times[i] = *times[i] == INT64_MIN ? 0 : *times[i] + origin;
            r->conn_reused = r->send_start_ns && !r->conn_connect_ns;
            rc = fn(ctx, r, l.model);
            if (rc < 0)
                snprintf(err, errlen, "%s: line %zu: %s", path, line + 1, strerror(-rc));
        }
        p = nl + 1;
    }
    free(l.tt_us);
    free(l.ev_us);
    if (base)
        munmap((void *)base, size);
    return rc;
}
