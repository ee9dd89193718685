/*
 * The per-request files behind a report: surge's own JSONL (read with the pull scanner: a million-request run is
 * most of a gigabyte), AIPerf's record JSONL and perf_analyzer's profile_export.json that GenAI-Perf reads
 * (jansson: those come from tools that do not reach surge's rates).
 *
 * Every reader fills run->req with the same fields, times relative to the earliest intended send, and refuses a
 * file that ends inside a record: a truncated export must not pass for a shorter run.
 */
#include "json_scan.h"
#include "report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint8_t rp_err_class(rp_run_t *run, const char *name, size_t len)
{
    for (size_t i = 0; i < run->n_err_class; i++)
        if (strlen(run->err_class[i]) == len && memcmp(run->err_class[i], name, len) == 0)
            return (uint8_t)(i + 1);
    if (run->n_err_class == RP_MAX_ERR_CLASSES)
        return (uint8_t)RP_MAX_ERR_CLASSES; /* the last class takes the rest */
    char *copy = strndup(name, len);
    if (!copy)
        return 0;
    run->err_class[run->n_err_class++] = copy;
    return (uint8_t)run->n_err_class;
}

json_t *rp_json_load(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        if (access(path, R_OK) != 0)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        else
            snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
    }
    return j;
}

typedef struct {
    const char *base;
    size_t len;
} mapped_t;

static int map_file(mapped_t *m, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    m->len = (size_t)st.st_size;
    m->base = ""; /* an empty file is not mapped: its readers still get a base to add 0 to */
    if (m->len > 0) {
        void *p = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        madvise(p, m->len, MADV_SEQUENTIAL);
        m->base = p;
    }
    close(fd);
    return 0;
}

static void unmap_file(mapped_t *m)
{
    if (m->len > 0)
        munmap((void *)m->base, m->len);
}

/* Lines of a JSONL file; the count, or -1 when the file does not end with a newline (cut off mid-record). */
static ssize_t count_lines(const mapped_t *m)
{
    size_t n = 0;
    for (const char *p = m->base, *end = m->base + m->len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return -1;
        n++;
        p = nl + 1;
    }
    return (ssize_t)n;
}

static int grow(rp_run_t *run, size_t want)
{
    rp_req_t *r = calloc(want ? want : 1, sizeof *r);
    if (!r)
        return -1;
    free(run->req);
    run->req = r;
    run->n = 0;
    return 0;
}

/* A number or null (NAN); integers exactly, others through strtod. */
static int scan_num(sg_js_t *js, double *out)
{
    int c = sg_js_peek(js);
    if (c == 'n') {
        *out = NAN;
        return sg_js_skip(js);
    }
    return sg_js_double(js, out) < 0 ? -1 : 0;
}

/* One surge record: the fields the charts need, the rest skipped (validated on the way). */
typedef struct {
    double intended, sent, first, end, isl, osl, first_tool;
    bool ok;
    sg_slice_t err_class;
} surge_rec_t;

static int scan_surge_record(sg_js_t *js, surge_rec_t *r)
{
    *r = (surge_rec_t){
        .intended = NAN, .sent = NAN, .first = NAN, .end = NAN, .isl = NAN, .osl = NAN, .first_tool = NAN};
    int count = 0, rc;
    sg_slice_t key;
    if (sg_js_obj_begin(js) < 0)
        return -1;
    while ((rc = sg_js_obj_next(js, &count, &key)) == 1) {
        double *num = NULL;
        if (SG_JS_KEY(js, key, "intended_ns"))
            num = &r->intended;
        else if (SG_JS_KEY(js, key, "sent_ns"))
            num = &r->sent;
        else if (SG_JS_KEY(js, key, "first_token_ns"))
            num = &r->first;
        else if (SG_JS_KEY(js, key, "end_ns"))
            num = &r->end;
        else if (SG_JS_KEY(js, key, "input_sequence_length"))
            num = &r->isl;
        else if (SG_JS_KEY(js, key, "output_sequence_length"))
            num = &r->osl;
        else if (SG_JS_KEY(js, key, "first_tool_call_token_ns"))
            num = &r->first_tool;
        if (num) {
            if (scan_num(js, num) < 0)
                return -1;
            continue;
        }
        if (SG_JS_KEY(js, key, "status") || SG_JS_KEY(js, key, "error_class")) {
            sg_slice_t s;
            if (sg_js_peek(js) != '"')
                rc = sg_js_skip(js);
            else if ((rc = sg_js_string(js, &s)) == 0 && SG_JS_KEY(js, key, "status"))
                r->ok = SG_JS_EQ(s, "ok");
            else if (rc == 0)
                r->err_class = s;
        } else {
            rc = sg_js_skip(js);
        }
        if (rc < 0)
            return -1;
    }
    return rc < 0 || !sg_js_at_end(js) ? -1 : 0;
}

/* A value the charts can hold as a float: NAN for one that is not finite or too large to convert. */
static float f32(double x)
{
    return isfinite(x) && fabs(x) < 1e30 ? (float)x : NAN;
}

static float ms(double ns)
{
    return f32(ns / 1e6);
}

/* A token count, or -1 when unknown or not a count. */
static int32_t count_of(double v)
{
    return v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

/* A time a record may carry (ns): finite and within about 300 years of its origin, or NAN (absent). */
static bool time_ok(double ns)
{
    return isnan(ns) || fabs(ns) <= 1e19;
}

/* Fills the request from a surge record's times (ns from the run's start). */
static void fill_req(rp_run_t *run, rp_req_t *q, const surge_rec_t *r)
{
    q->intended_s = r->intended / 1e9;
    q->sent_s = r->sent / 1e9;
    q->end_s = r->end / 1e9;
    q->isl = count_of(r->isl);
    q->osl = count_of(r->osl);
    q->lag = ms(r->sent - r->intended);
    q->ttft = q->ttft_send = q->lat = q->lat_send = q->itl = q->ttftc = NAN;
    q->cancelled = false;
    if (!r->ok && SG_JS_EQ(r->err_class, "cancelled")) {
        q->cancelled = true; /* surge stopped it: not a failure (docs/metrics.md, Cancelled requests) */
        q->err = 0;
        return;
    }
    if (!r->ok) {
        q->err =
            rp_err_class(run, r->err_class.len ? r->err_class.base : "error", r->err_class.len ? r->err_class.len : 5);
        return;
    }
    q->lat = ms(r->end - r->intended);
    q->lat_send = ms(r->end - r->sent);
    q->ttft = ms(r->first - r->intended);
    q->ttft_send = ms(r->first - r->sent);
    q->ttftc = ms(r->first_tool - r->intended);
    if (q->osl >= 2 && !isnan(r->first))
        q->itl = f32((r->end - r->first) / 1e6 / (q->osl - 1));
}

/* A peer's wall-clock times, moved to count from its earliest send as surge's own do. */
static void rebase(rp_run_t *run)
{
    double t0 = INFINITY;
    for (size_t i = 0; i < run->n; i++)
        if (run->req[i].intended_s < t0)
            t0 = run->req[i].intended_s;
    if (!isfinite(t0) || t0 == 0)
        return;
    for (size_t i = 0; i < run->n; i++) {
        run->req[i].intended_s -= t0;
        run->req[i].sent_s -= t0;
        run->req[i].end_s -= t0;
    }
}

/* One line of surge's JSONL into run->req[run->n]: 0, or -1 when it is not a whole record. */
static int surge_line(rp_run_t *run, const char *line, size_t len)
{
    sg_js_t js;
    sg_js_init(&js, line, len);
    surge_rec_t r;
    if (scan_surge_record(&js, &r) < 0 || isnan(r.intended) || isnan(r.end) || !time_ok(r.intended) ||
        !time_ok(r.end) || !time_ok(r.sent) || !time_ok(r.first) || !time_ok(r.first_tool))
        return -1;
    fill_req(run, &run->req[run->n], &r);
    return 0;
}

/* A JSONL file, one record a line (blank lines skipped) through line_fn into run->req. what names the record
 * kind in the reason a bad line gets. The whole file must end with a newline: a record cut off is refused. */
static int read_jsonl(rp_run_t *run, const char *path, int (*line_fn)(rp_run_t *, const char *, size_t),
                      const char *what, char *err, size_t errlen)
{
    mapped_t m;
    if (map_file(&m, path, err, errlen) < 0)
        return -1;
    int rc = -1;
    ssize_t lines = count_lines(&m);
    if (lines < 0) {
        snprintf(err, errlen, "%s: the last record has no end of line: the file was cut off", path);
        goto out;
    }
    if (grow(run, (size_t)lines) < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    size_t line = 0;
    for (const char *p = m.base, *end = m.base + m.len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)(nl - p), blank = 0;
        while (blank < len && (p[blank] == ' ' || p[blank] == '\t' || p[blank] == '\r'))
            blank++;
        if (blank < len && line_fn(run, p, len) < 0) {
            snprintf(err, errlen, "%s: line %zu is not a complete %s", path, line + 1, what);
            goto out;
        }
        run->n += blank < len;
        p = nl + 1;
    }
    rc = 0;
out:
    unmap_file(&m);
    return rc;
}

/* surge's times already count from the run's start, as its server metrics' do: no rebase. */
int rp_read_surge_jsonl(rp_run_t *run, const char *path, char *err, size_t errlen)
{
    return read_jsonl(run, path, surge_line, "surge request record", err, errlen);
}

static double jnum(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A metric of an AIPerf record: {"tag": {"value": v, "unit": u}}, in ms when its unit is a time. */
static double aiperf_metric(json_t *metrics, const char *tag)
{
    json_t *m = json_object_get(metrics, tag);
    json_t *v = json_object_get(m, "value");
    if (!json_is_number(v))
        return NAN;
    double x = json_number_value(v);
    const char *unit = json_string_value(json_object_get(m, "unit"));
    if (unit && strcmp(unit, "ns") == 0)
        x /= 1e6;
    else if (unit && strcmp(unit, "us") == 0)
        x /= 1e3;
    else if (unit && strcmp(unit, "s") == 0)
        x *= 1e3;
    return x;
}

/* AIPerf does not keep an intended time apart from the send: both are the request's start. -1: no start. */
static int aiperf_record(rp_run_t *run, rp_req_t *q, json_t *rec)
{
    json_t *meta = json_object_get(rec, "metadata");
    json_t *metrics = json_object_get(rec, "metrics");
    json_t *error = json_object_get(rec, "error");
    if (!json_is_object(error))
        error = json_object_get(meta, "error");
    double start = jnum(meta, "request_start_ns");
    if (isnan(start))
        start = jnum(meta, "timestamp_ns");
    double end = jnum(meta, "request_end_ns");
    double lat = aiperf_metric(metrics, "request_latency");
    if (isnan(end))
        end = isnan(lat) ? start : start + lat * 1e6;
    if (isnan(start) || !time_ok(start) || !time_ok(end))
        return -1;
    q->intended_s = q->sent_s = start / 1e9;
    q->end_s = end / 1e9;
    q->lag = 0;
    q->isl = count_of(aiperf_metric(metrics, "input_sequence_length"));
    q->osl = count_of(aiperf_metric(metrics, "output_sequence_length"));
    q->ttft = q->ttft_send = q->lat = q->lat_send = q->itl = q->ttftc = NAN;
    q->cancelled = json_is_true(json_object_get(meta, "was_cancelled"));
    if (q->cancelled)
        return 0;
    if (json_is_object(error)) {
        const char *type = json_string_value(json_object_get(error, "type"));
        if (!type)
            type = "error";
        q->err = rp_err_class(run, type, strlen(type));
        return 0;
    }
    q->ttft = q->ttft_send = f32(aiperf_metric(metrics, "time_to_first_token"));
    q->ttftc = f32(aiperf_metric(metrics, "time_to_first_tool_call_token")); /* surge's tag, in its AIPerf file */
    q->lat = q->lat_send = f32(isnan(lat) ? (end - start) / 1e6 : lat);
    q->itl = f32(aiperf_metric(metrics, "inter_token_latency"));
    return 0;
}

static int aiperf_line(rp_run_t *run, const char *line, size_t len)
{
    json_t *rec = json_loadb(line, len, 0, NULL);
    int rc = json_is_object(rec) && json_is_object(json_object_get(rec, "metadata"))
                 ? aiperf_record(run, &run->req[run->n], rec)
                 : -1;
    json_decref(rec);
    return rc;
}

int rp_read_aiperf_jsonl(rp_run_t *run, const char *path, char *err, size_t errlen)
{
    if (read_jsonl(run, path, aiperf_line, "AIPerf record (metadata with a request start)", err, errlen) < 0)
        return -1;
    rebase(run);
    return 0;
}

/* perf_analyzer's export: experiments[0].requests[] with a send timestamp and each response's (ns). -1: a
 * request without a usable send time or response times. */
static int genai_request(rp_run_t *run, rp_req_t *q, json_t *r)
{
    double start = jnum(r, "timestamp");
    json_t *resp = json_object_get(r, "response_timestamps");
    size_t n = json_array_size(resp);
    /* GenAI-Perf drops the stream's closing "data: [DONE]": a request ends with its last content */
    const char *last_out = json_string_value(
        json_object_get(json_array_get(json_object_get(r, "response_outputs"), n ? n - 1 : 0), "response"));
    if (n > 0 && last_out && strstr(last_out, "[DONE]") && strlen(last_out) < 20)
        n--;
    double first = n ? json_number_value(json_array_get(resp, 0)) : start;
    double last = n ? json_number_value(json_array_get(resp, n - 1)) : start;
    if (isnan(start) || !time_ok(start) || !time_ok(first) || !time_ok(last))
        return -1;
    q->intended_s = q->sent_s = start / 1e9;
    q->lag = 0;
    q->isl = q->osl = -1;
    q->ttft = q->ttft_send = q->lat = q->lat_send = q->itl = q->ttftc = NAN;
    q->end_s = last / 1e9;
    if (n == 0) {
        q->err = rp_err_class(run, "no response", 11);
        return 0;
    }
    q->ttft = q->ttft_send = ms(first - start);
    q->lat = q->lat_send = ms(last - start);
    if (n >= 2)
        q->itl = f32((last - first) / 1e6 / (double)(n - 1));
    return 0;
}

int rp_read_genai_perf(rp_run_t *run, const char *path, char *err, size_t errlen)
{
    json_t *j = rp_json_load(path, err, errlen);
    if (!j)
        return -1;
    json_t *exps = json_object_get(j, "experiments");
    json_t *reqs = json_object_get(json_array_get(exps, 0), "requests");
    if (!json_is_array(reqs)) {
        snprintf(err, errlen, "%s: no experiments[0].requests: not perf_analyzer's profile export", path);
        json_decref(j);
        return -1;
    }
    size_t n = json_array_size(reqs);
    if (grow(run, n) < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        json_decref(j);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (genai_request(run, &run->req[run->n], json_array_get(reqs, i)) < 0) {
            snprintf(err, errlen, "%s: experiments[0].requests[%zu] has no usable timestamp", path, i);
            json_decref(j);
            return -1;
        }
        run->n++;
    }
    rebase(run);
    json_decref(j);
    return 0;
}
