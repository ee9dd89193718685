/*
 * --slice-duration's windowing (sg_export_timeslices): records in workers' logs -> per-window summaries. Each
 * request lands in the window of its intended start (a boundary instant opens the next window; a late end stays in
 * its window), the origin is the first measured intended start (warmup ignored), empty windows are kept, batches
 * of windows over the logs (more than 32 windows) lose or move nothing, and the tidy CSV says what the JSON says.
 */
#include "sg_export_util.h"
#include "sg_metrics.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS 1000000LL
#define T0 (7000LL * 1000 * MS)

static char dir[64];
static char logs[2][128], json_path[128], csv_path[128];

static sg_record_t streamed(uint64_t id, int64_t at, int64_t ttft_ms, uint32_t osl)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.streaming = true;
    r.intended_ns = at;
    r.sent_ns = at + MS / 10;
    r.first_byte_ns = at + MS;
    r.first_token_ns = at + ttft_ms * MS;
    r.second_token_ns = osl >= 2 ? r.first_token_ns + 2 * MS : 0;
    r.end_ns = r.first_token_ns + (int64_t)(osl - 1) * 2 * MS;
    r.http_status = 200;
    r.osl = osl;
    r.isl = 100;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = -1;
    r.osl_tokenizer = -1;
    r.osl_source = SG_OSL_EVENTS;
    r.content_events = osl;
    return r;
}

static sg_record_t failed(uint64_t id, int64_t at)
{
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.intended_ns = at;
    r.sent_ns = at + MS / 10;
    r.first_byte_ns = at + MS;
    r.end_ns = at + 2 * MS;
    r.err_class = SG_ERRC_HTTP;
    r.http_status = 500;
    r.isl = 100;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = -1;
    r.osl_tokenizer = -1;
    snprintf(r.err_msg, sizeof(r.err_msg), "Internal Server Error");
    return r;
}

/* Writes n records to log w (0 or 1). */
static void write_log(int w, const sg_record_t *recs, size_t n)
{
    int err = 1;
    sg_reclog_t *l = sg_reclog_open(logs[w], &err);
    CHECK(l != NULL);
    if (!l)
        return;
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(sg_reclog_append(l, &recs[i]), 0);
    CHECK_EQ_INT(sg_reclog_close(l), 0);
}

static json_t *load_json(void)
{
    json_error_t e;
    json_t *root = json_load_file(json_path, 0, &e);
    if (!root)
        fprintf(stderr, "%s: %s\n", json_path, e.text);
    return root;
}

static double sget(json_t *slice, const char *metric, const char *key)
{
    json_t *v = json_object_get(json_object_get(slice, metric), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The Value of CSV row (slice, metric label, stat), NAN when there is none; *rows counts every row of the slice. */
static double csv_value(int slice, const char *label, const char *stat_name, int *rows)
{
    FILE *f = fopen(csv_path, "r");
    if (!f)
        return NAN;
    char line[512];
    double v = NAN;
    *rows = 0;
    while (fgets(line, sizeof(line), f)) {
        char metric[128], unit[32], st[16];
        int idx;
        double val, start, end;
        if (sscanf(line, "%d,%127[^,],%31[^,],%15[^,],%lf,%lf,%lf", &idx, metric, unit, st, &val, &start, &end) != 7)
            continue;
        if (idx != slice)
            continue;
        (*rows)++;
        if (strcmp(metric, label) == 0 && strcmp(st, stat_name) == 0)
            v = val;
    }
    fclose(f);
    return v;
}

static void test_windows(void)
{
    /*
     * S = 1 s from T0 (worker 1's first record; worker 0's warmup record is earlier and must not move the origin):
     *   window 0: TTFT 10 ms x3 (one ends 3.5 s later, and stays here) + one HTTP 500
     *   window 1: nothing
     *   window 2: TTFT 50 ms at exactly T0 + 2 s (a boundary opens the next window) and at T0 + 3 s - 1 ns
     *   window 3: TTFT 200 ms at T0 + 3 s
     */
    sg_record_t w0[4], w1[4];
    w0[0] = streamed(900, T0 - 5000 * MS, 1000, 4);
    w0[0].warmup = true;
    w0[1] = streamed(2, T0 + 500 * MS, 10, 5);
    w0[1].end_ns = T0 + 4000 * MS; /* a long tail: still window 0's */
    w0[2] = failed(3, T0 + 600 * MS);
    w0[3] = streamed(5, T0 + 3000 * MS - 1, 50, 5);
    w1[0] = streamed(0, T0, 10, 5);
    w1[1] = streamed(1, T0 + 100 * MS, 10, 5);
    w1[2] = streamed(4, T0 + 2000 * MS, 50, 5);
    w1[3] = streamed(6, T0 + 3000 * MS, 200, 5);
    write_log(0, w0, 4);
    write_log(1, w1, 4);

    const char *const paths[2] = {logs[0], logs[1]};
    sg_run_info_t info = {.input_config_json = "{\"slice_duration\":1.0,\"model\":[\"m\"]}", .warmup_count = 1};
    CHECK_EQ_INT(sg_export_timeslices(json_path, csv_path, paths, 2, 1.0, NULL, 0, &info), 0);

    json_t *root = load_json();
    CHECK(root != NULL);
    if (!root)
        return;
    json_t *sl = json_object_get(root, "timeslices");
    CHECK_EQ_INT(json_array_size(sl), 4);
    CHECK_NEAR(json_number_value(json_object_get(root, "slice_duration")), 1.0, 0);
    json_t *model = json_object_get(json_object_get(root, "input_config"), "model"); /* the run's, once, at the top */
    CHECK(json_is_array(model) && json_array_size(model) == 1 &&
          strcmp(json_string_value(json_array_get(model, 0)), "m") == 0);
    const int want_ok[4] = {3, 0, 2, 1}, want_err[4] = {1, 0, 0, 0};
    const double want_ttft[4] = {10, NAN, 50, 200};
    for (size_t i = 0; i < json_array_size(sl) && i < 4; i++) {
        json_t *s = json_array_get(sl, i);
        CHECK_EQ_INT(json_integer_value(json_object_get(s, "timeslice_index")), i);
        CHECK_NEAR(json_number_value(json_object_get(s, "timeslice_start")), (double)i, 1e-9);
        CHECK_NEAR(json_number_value(json_object_get(s, "timeslice_end")), (double)i + 1, 1e-9);
        CHECK_EQ_INT(sget(s, "request_count", "avg"), want_ok[i]);
        CHECK_EQ_INT(sget(s, "error_request_count", "avg"), want_err[i]);
        CHECK_NEAR(sget(s, "slice_request_throughput", "avg"), want_ok[i], 1e-9); /* per second of the window */
        CHECK_NEAR(sget(s, "slice_output_token_throughput", "avg"), 5.0 * want_ok[i], 1e-9);
        if (isnan(want_ttft[i])) {
            CHECK(json_object_get(s, "time_to_first_token") == NULL); /* no data, no distribution */
        } else {
            CHECK_NEAR(sget(s, "time_to_first_token", "avg"), want_ttft[i], want_ttft[i] * 1e-3);
            CHECK_NEAR(sget(s, "time_to_first_token", "count"), want_ok[i], 0);
        }
        /* what belongs to the run is not repeated per window */
        CHECK(json_object_get(s, "input_config") == NULL && json_object_get(s, "warmup_request_count") == NULL);
    }
    /* window 0's request latency includes its 4 s tail: the request was measured where it was intended */
    CHECK_NEAR(sget(json_array_get(sl, 0), "request_latency", "max"), 3500, 3500 * 1e-3);

    /* the CSV: AIPerf's five columns, then the window; a row for the empty window too; the JSON's values */
    FILE *f = fopen(csv_path, "r");
    char header[256] = "";
    CHECK(f && fgets(header, sizeof(header), f));
    if (f)
        fclose(f);
    CHECK(strcmp(header, "Timeslice,Metric,Unit,Stat,Value,Start (sec),End (sec)\n") == 0);
    int rows;
    CHECK_NEAR(csv_value(2, "Time To First Token", "avg", &rows),
               sget(json_array_get(sl, 2), "time_to_first_token", "avg"), 1e-9);
    CHECK_NEAR(csv_value(2, "Time To First Token", "p99", &rows),
               sget(json_array_get(sl, 2), "time_to_first_token", "p99"), 1e-9);
    CHECK_NEAR(csv_value(1, "Request Count", "avg", &rows), 0, 0);
    CHECK(rows > 0);
    CHECK(isnan(csv_value(1, "Time To First Token", "avg", &rows)));
    CHECK_NEAR(csv_value(0, "Error Request Count", "avg", &rows), 1, 0);
    CHECK_NEAR(csv_value(3, "Slice Request Throughput", "avg", &rows), 1, 0);
    json_decref(root);
}

/*
 * 100 windows (batches of 32, each read from its band of each log): window i holds exactly the record intended in
 * it, TTFT 1 + i ms, whether the log is in intended order (worker 0) or reversed (worker 1: every band is the
 * whole log).
 */
static void test_many_windows(void)
{
    enum { N = 100 };
    sg_record_t a[N / 2], b[N / 2];
    for (int i = 0; i < N; i++) {
        sg_record_t r = streamed((uint64_t)i, T0 + i * 100 * MS + 50 * MS, 1 + i, 3);
        if (i % 2)
            b[N / 2 - 1 - i / 2] = r;
        else
            a[i / 2] = r;
    }
    write_log(0, a, N / 2);
    write_log(1, b, N / 2);
    const char *const paths[2] = {logs[0], logs[1]};
    CHECK_EQ_INT(sg_export_timeslices(json_path, csv_path, paths, 2, 0.1, NULL, 0, NULL), 0);
    json_t *root = load_json();
    json_t *sl = json_object_get(root, "timeslices");
    CHECK_EQ_INT(json_array_size(sl), N);
    int wrong = 0;
    for (size_t i = 0; i < json_array_size(sl); i++) {
        json_t *s = json_array_get(sl, i);
        if (sget(s, "request_count", "avg") != 1 || fabs(sget(s, "time_to_first_token", "avg") - (1.0 + i)) > 0.01 ||
            json_integer_value(json_object_get(s, "timeslice_index")) != (json_int_t)i)
            wrong++;
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK(json_is_null(json_object_get(root, "input_config")));
    json_decref(root);
}

static void test_failures_leave_nothing(void)
{
    unlink(json_path);
    unlink(csv_path);
    const char *const paths[1] = {logs[0]};
    CHECK_EQ_INT(sg_export_timeslices(json_path, csv_path, paths, 1, 0, NULL, 0, NULL), -EINVAL);
    const char *const missing[1] = {"/nonexistent-dir/w.reclog"};
    CHECK(sg_export_timeslices(json_path, csv_path, missing, 1, 1.0, NULL, 0, NULL) < 0);
    struct stat st;
    CHECK(stat(json_path, &st) != 0 && stat(csv_path, &st) != 0);

    /* no measured request at all: both files, with no window */
    int err;
    sg_reclog_t *l = sg_reclog_open(logs[0], &err);
    CHECK(l && sg_reclog_close(l) == 0);
    CHECK_EQ_INT(sg_export_timeslices(json_path, csv_path, paths, 1, 1.0, NULL, 0, NULL), 0);
    json_t *root = load_json();
    CHECK(root && json_array_size(json_object_get(root, "timeslices")) == 0);
    json_decref(root);
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/sg_test_timeslices.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(logs[0], sizeof(logs[0]), "%s/w0.reclog", dir);
    snprintf(logs[1], sizeof(logs[1]), "%s/w1.reclog", dir);
    snprintf(json_path, sizeof(json_path), "%s/t.json", dir);
    snprintf(csv_path, sizeof(csv_path), "%s/t.csv", dir);
    test_windows();
    test_many_windows();
    test_failures_leave_nothing();
    cleanup();
    return test_finish("test_timeslices");
}
