/*
 * What a directory holds, and reading it: one run (surge's, AIPerf's or GenAI-Perf's files) or a sweep or
 * capacity search of surge's (a summary with one row per point). A directory that is none of these is refused
 * with the files that were looked for.
 */
#include "report_int.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The files that say what a directory is, most specific first. */
#define F_SWEEP "sweep_summary.json"
#define F_SEARCH "search.json"
#define F_SURGE "profile_export_surge.json"
#define F_AIPERF "profile_export_aiperf.json"
#define F_GENAI "profile_export_genai_perf.json"
#define F_MULTI "aggregate/profile_export_aiperf_aggregate.json" /* a multi-run's, surge's or AIPerf's */

static bool has(const char *dir, const char *name)
{
    char *p = sg_path_join(dir, name);
    bool ok = p && access(p, F_OK) == 0;
    free(p);
    return ok;
}

rp_kind_t rp_kind_of(const char *dir)
{
    if (has(dir, F_MULTI))
        return RP_MULTI;
    if (has(dir, F_SWEEP) || has(dir, F_SEARCH))
        return RP_POINTS;
    if (has(dir, F_SURGE) || has(dir, F_AIPERF) || has(dir, F_GENAI))
        return RP_RUN;
    return RP_NONE;
}

size_t rp_kinds_in(const char *dir, char *desc, size_t cap)
{
    /* surge writes AIPerf's files beside its own: profile_export_aiperf.json next to profile_export_surge.json is
     * the same run; GenAI-Perf's summary is never surge's */
    const char *single = has(dir, F_SURGE) ? F_SURGE : has(dir, F_AIPERF) ? F_AIPERF : NULL;
    static const char *const what[] = {"a single run", "a GenAI-Perf run", "a sweep", "a capacity search"};
    const char *file[] = {single, has(dir, F_GENAI) ? F_GENAI : NULL, has(dir, F_SWEEP) ? F_SWEEP : NULL,
                          has(dir, F_SEARCH) ? F_SEARCH : NULL};
    size_t n = 0, total = 0, len = 0;
    for (size_t i = 0; i < SG_ARRAY_LEN(file); i++)
        total += file[i] != NULL;
    if (cap)
        desc[0] = 0;
    for (size_t i = 0; i < SG_ARRAY_LEN(file); i++) {
        if (!file[i])
            continue;
        n++;
        const char *sep = n == 1 ? "" : n == total ? " and " : ", ";
        if (len < cap) {
            int k = snprintf(desc + len, cap - len, "%s%s (%s)", sep, what[i], file[i]);
            len += k > 0 ? (size_t)k : 0;
        }
    }
    return n;
}

/* The directory's last component, as the run's label ("." and trailing slashes resolved). */
static char *label_of(const char *dir)
{
    char real[PATH_MAX];
    const char *src = realpath(dir, real) ? real : dir;
    char *copy = strdup(src);
    if (!copy)
        return NULL;
    char *label = strdup(basename(copy));
    free(copy);
    return label;
}

/* The summary's metrics: every member that is an object with a "unit", in the file's order. */
static json_t *metrics_of(json_t *summary)
{
    json_t *out = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(summary, key, v)
    {
        if (json_is_object(v) && json_is_string(json_object_get(v, "unit")))
            json_object_set(out, key, v);
    }
    return out;
}

json_t *rp_meta_of(json_t *file, const char *tool)
{
    static const char *const keys[] = {"command", "host", "start_time", "end_time"};
    json_t *meta = json_object();
    char vkey[64];
    snprintf(vkey, sizeof vkey, "%s_version", strcmp(tool, "genai-perf") == 0 ? "genai_perf" : tool);
    json_object_set_new(meta, "tool", json_string(tool));
    json_t *v = json_object_get(file, vkey);
    if (json_is_string(v))
        json_object_set(meta, "version", v);
    for (size_t i = 0; i < SG_ARRAY_LEN(keys); i++) {
        v = json_object_get(file, keys[i]);
        if (json_is_string(v))
            json_object_set(meta, keys[i], v);
    }
    /* AIPerf keeps its command line in its configuration */
    v = json_object_get(json_object_get(file, "input_config"), "cli_command");
    if (!json_object_get(meta, "command") && json_is_string(v))
        json_object_set(meta, "command", v);
    return meta;
}

/* GenAI-Perf's summary keeps the metrics the same way; its configuration sits under "input_config" too. */
static int load_summary(rp_run_t *run, const char *path, char *err, size_t errlen)
{
    json_t *j = rp_json_load(path, err, errlen);
    if (!j)
        return -1;
    if (!json_is_object(j)) {
        snprintf(err, errlen, "%s: not a JSON object: not a profile summary", path);
        json_decref(j);
        return -1;
    }
    run->summary = metrics_of(j);
    if (json_object_size(run->summary) == 0) {
        snprintf(err, errlen, "%s: no metrics in it (objects with a \"unit\"): not a profile summary", path);
        json_decref(j);
        return -1;
    }
    json_t *slo = json_object_get(j, "slo");
    run->slo = json_is_array(slo) ? json_incref(slo) : NULL;
    json_t *cfg = json_object_get(j, "input_config");
    run->config = json_is_object(cfg) ? json_incref(cfg) : NULL;
    json_t *errs = json_object_get(j, "error_summary");
    run->errors = json_is_array(errs) ? json_incref(errs) : NULL;
    run->meta = rp_meta_of(j, run->source);
    json_t *stalls = json_object_get(j, "client_stalls");
    run->stalls = json_is_object(stalls) ? json_incref(stalls) : NULL;
    json_t *unreach = json_object_get(j, "server_unreachable");
    run->unreach = json_is_array(unreach) ? json_incref(unreach) : NULL;
    json_t *gpu = json_object_get(j, "gpu_telemetry");
    run->gpu = json_is_object(gpu) ? json_incref(gpu) : NULL;
    json_t *origin = json_object_get(json_object_get(j, "clock"), "records_origin_ns");
    run->records_origin_s = json_is_number(origin) ? json_number_value(origin) / 1e9 : 0;
    run->interrupted =
        json_is_true(json_object_get(j, "was_interrupted")) || json_is_true(json_object_get(j, "was_cancelled"));
    json_decref(j);
    return 0;
}

/* surge's own per-request file: profile_export_surge.jsonl, or the older name when it holds surge's records. */
static int load_surge_records(rp_run_t *run, const char *dir, char *err, size_t errlen)
{
    char *path = sg_path_join(dir, "profile_export_surge.jsonl");
    if (path && access(path, F_OK) != 0) {
        free(path);
        path = sg_path_join(dir, "profile_export.jsonl");
    }
    if (!path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = rp_read_surge_jsonl(run, path, err, errlen);
    free(path);
    return rc;
}

static int load_server_metrics(rp_run_t *run, const char *dir, char *err, size_t errlen)
{
    char *path = sg_path_join(dir, "server_metrics.json");
    int rc = 0;
    if (path && access(path, F_OK) == 0) {
        run->server = rp_json_load(path, err, errlen);
        rc = run->server ? 0 : -1;
    }
    free(path);
    return rc;
}

/* The sources a run directory may hold, by the summary file that says whose it is. */
static const struct {
    const char *summary, *records, *source;
} SOURCES[] = {
    {F_SURGE, NULL, "surge"},
    {F_AIPERF, "profile_export.jsonl", "aiperf"},
    {F_GENAI, "profile_export.json", "genai-perf"},
};

int rp_run_load(rp_run_t *run, const char *dir, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    run->dir = strdup(dir);
    run->label = label_of(dir);
    size_t s = 0;
    while (s < SG_ARRAY_LEN(SOURCES) && !has(dir, SOURCES[s].summary))
        s++;
    if (s == SG_ARRAY_LEN(SOURCES)) {
        snprintf(err, errlen, "%s: not a run directory (no %s, %s or %s)", dir, F_SURGE, F_AIPERF, F_GENAI);
        return -1;
    }
    run->source = SOURCES[s].source;
    char *path = sg_path_join(dir, SOURCES[s].summary);
    int rc = path ? load_summary(run, path, err, errlen) : -1;
    free(path);
    if (rc < 0)
        return -1;
    if (s == 0) {
        rc = load_surge_records(run, dir, err, errlen);
    } else {
        path = sg_path_join(dir, SOURCES[s].records);
        rc = !path    ? -1
             : s == 1 ? rp_read_aiperf_jsonl(run, path, err, errlen)
                      : rp_read_genai_perf(run, path, err, errlen);
        free(path);
    }
    if (rc < 0)
        return -1;
    return load_server_metrics(run, dir, err, errlen);
}

void rp_run_free(rp_run_t *run)
{
    free(run->dir);
    free(run->label);
    json_decref(run->summary);
    json_decref(run->slo);
    json_decref(run->config);
    json_decref(run->errors);
    json_decref(run->server);
    json_decref(run->meta);
    json_decref(run->stalls);
    json_decref(run->unreach);
    json_decref(run->gpu);
    free(run->req);
    for (size_t i = 0; i < run->n_err_class; i++)
        free(run->err_class[i]);
    memset(run, 0, sizeof *run);
}

/* The SLO checks as each point measured them: read from the first point's summary that lists them. */
static json_t *points_slo(const char *dir, json_t *rows)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *sub = json_string_value(json_object_get(row, "artifact_subdir"));
        if (!sub)
            continue;
        char *pdir = sg_path_join(dir, sub);
        char *path = pdir ? sg_path_join(pdir, F_SURGE) : NULL;
        free(pdir);
        json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
        free(path);
        json_t *slo = json_object_get(j, "slo");
        if (json_is_array(slo) && json_array_size(slo) > 0) {
            json_incref(slo);
            json_decref(j);
            return slo;
        }
        json_decref(j);
    }
    return NULL;
}

/* The input configuration of the first point whose summary has one (files of a surge older than the top-level
 * input_config of sweep_summary.json and search.json). */
static json_t *points_config(const char *dir, json_t *rows)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *sub = json_string_value(json_object_get(row, "artifact_subdir"));
        char *pdir = sub ? sg_path_join(dir, sub) : NULL;
        char *path = pdir ? sg_path_join(pdir, F_SURGE) : NULL;
        free(pdir);
        json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
        free(path);
        json_t *cfg = json_object_get(j, "input_config");
        if (json_is_object(cfg)) {
            json_incref(cfg);
            json_decref(j);
            return cfg;
        }
        json_decref(j);
    }
    return NULL;
}

int rp_points_load(rp_points_t *pts, const char *dir, char *err, size_t errlen)
{
    memset(pts, 0, sizeof *pts);
    pts->dir = strdup(dir);
    pts->label = label_of(dir);
    pts->search = !has(dir, F_SWEEP);
    char *path = sg_path_join(dir, pts->search ? F_SEARCH : F_SWEEP);
    json_t *j = path ? rp_json_load(path, err, errlen) : NULL;
    if (!j) {
        free(path);
        return -1;
    }
    const char *hk = pts->search ? "search" : "sweep", *rk = pts->search ? "probes" : "points";
    json_t *header = json_object_get(j, hk), *rows = json_object_get(j, rk);
    if (!json_is_object(header) || !json_is_array(rows)) {
        snprintf(err, errlen, "%s: no \"%s\" object and \"%s\" list: not surge's %s file", path, hk, rk, hk);
        json_decref(j);
        free(path);
        return -1;
    }
    free(path);
    pts->header = json_incref(header);
    pts->rows = json_incref(rows);
    pts->meta = rp_meta_of(j, "surge");
    json_t *cfg = json_object_get(j, "input_config");
    pts->config = json_is_object(cfg) ? json_incref(cfg) : points_config(dir, pts->rows);
    json_decref(j);
    pts->slo = points_slo(dir, pts->rows);
    return 0;
}

void rp_points_free(rp_points_t *pts)
{
    free(pts->dir);
    free(pts->label);
    json_decref(pts->header);
    json_decref(pts->rows);
    json_decref(pts->slo);
    json_decref(pts->meta);
    json_decref(pts->config);
    memset(pts, 0, sizeof *pts);
}

/* One run's summary metrics from a multi-run's profile_runs/<label>/: surge's summary, else AIPerf's. */
static json_t *multi_run_summary(const char *dir, const char *label)
{
    static const char *const names[] = {F_SURGE, F_AIPERF};
    for (size_t k = 0; k < SG_ARRAY_LEN(names); k++) {
        char sub[300];
        snprintf(sub, sizeof sub, "profile_runs/%s/%s", label, names[k]);
        char *path = sg_path_join(dir, sub);
        json_t *j = path ? json_load_file(path, 0, NULL) : NULL;
        free(path);
        if (json_is_object(j)) {
            json_t *m = metrics_of(j);
            json_decref(j);
            return m;
        }
        json_decref(j);
    }
    return NULL;
}

int rp_multi_load(rp_multi_t *mr, const char *dir, char *err, size_t errlen)
{
    memset(mr, 0, sizeof *mr);
    mr->dir = strdup(dir);
    mr->label = label_of(dir);
    char *path = sg_path_join(dir, F_MULTI);
    json_t *j = path ? rp_json_load(path, err, errlen) : NULL;
    if (!j) {
        free(path);
        return -1;
    }
    json_t *meta = json_object_get(j, "metadata"), *metrics = json_object_get(j, "metrics");
    if (!json_is_object(meta) || !json_is_object(metrics)) {
        snprintf(err, errlen, "%s: no \"metadata\" and \"metrics\" objects: not a multi-run's aggregate", path);
        json_decref(j);
        free(path);
        return -1;
    }
    free(path);
    mr->metadata = json_incref(meta);
    mr->metrics = json_incref(metrics);
    json_decref(j);
    mr->runs = json_array();
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(mr->metadata, "run_labels"), i, l)
    {
        const char *label = json_string_value(l);
        json_t *s = label && !strchr(label, '/') ? multi_run_summary(dir, label) : NULL;
        if (s)
            json_array_append_new(mr->runs, json_pack("{s:s,s:o}", "label", label, "summary", s));
    }
    return 0;
}

void rp_multi_free(rp_multi_t *mr)
{
    free(mr->dir);
    free(mr->label);
    json_decref(mr->metadata);
    json_decref(mr->metrics);
    json_decref(mr->runs);
    memset(mr, 0, sizeof *mr);
}
