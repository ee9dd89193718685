/*
 * Private to report/: what `surge report` reads from a run's directory and what it computes for the page.
 *
 * load.c finds what a directory holds (one run of surge, AIPerf or GenAI-Perf, or a sweep or search of surge's)
 * and reads it into rp_run_t / rp_points_t; records.c reads the per-request files fast; series.c turns the
 * requests into the charts' data (exact percentiles, downsampled points); html.c writes the page. Single thread.
 */
#ifndef SG_REPORT_INT_H
#define SG_REPORT_INT_H

#include "sg_common.h"

#include <jansson.h>
#include <stdio.h>

#define RP_MAX_ERR_CLASSES 32

/* One measured request, times relative to the run's start (its first intended send). NAN: not measured. */
typedef struct {
    double intended_s; /* when the schedule meant to send it */
    double sent_s;     /* when it went out; NAN when it never did */
    double end_s;      /* when it ended (ok or failed) */
    float ttft;        /* ms from the intended start, ok requests that streamed a token */
    float ttft_send;   /* ms from the send */
    float lat;         /* ms from the intended start, ok requests */
    float lat_send;    /* ms from the send */
    float itl;         /* ms, ok requests with at least two output tokens */
    float ttftc;       /* time to first tool-call token, ms from the intended start: ok responses that streamed a
                          tool call's arguments */
    float lag;         /* schedule lag, ms */
    int32_t isl;       /* -1: unknown */
    int32_t osl;
    uint8_t err;    /* 0: ok or cancelled; else 1 + index into the run's error classes */
    bool cancelled; /* surge (or AIPerf) cancelled it: neither ok nor failed, in no error chart */
} rp_req_t;

typedef struct {
    char *dir;
    char *label;
    const char *source; /* "surge", "aiperf" or "genai-perf": whose files these are */
    json_t *summary;    /* metric tag -> {"unit", "avg", ...}, in the file's order */
    json_t *slo;        /* surge's verdicts (array), or NULL */
    json_t *config;     /* the file's input configuration, or NULL */
    json_t *errors;     /* the error summary (array), or NULL */
    json_t *server;     /* server_metrics.json, or NULL */
    json_t *meta;       /* where the figures came from: {tool, version, command, host, start_time, end_time}, the
                           members the files record (rp_meta_of) */
    bool interrupted;
    json_t *stalls;          /* surge's client_stalls (--stall-threshold-ms), or NULL */
    json_t *unreach;         /* surge's server_unreachable windows (an array, maybe empty), or NULL */
    json_t *gpu;             /* surge's gpu_telemetry (DCGM exporter series scraped), or NULL */
    double records_origin_s; /* where the records' times count from, in s after the run's start instant */
    rp_req_t *req;
    size_t n;
    char *err_class[RP_MAX_ERR_CLASSES];
    size_t n_err_class;
} rp_run_t;

/* A sweep or a capacity search: its header and one row per point, each point's run directory beside. */
typedef struct {
    char *dir;
    char *label;
    bool search;
    json_t *header; /* "sweep" or "search" object */
    json_t *rows;   /* "points" or "probes" */
    json_t *slo;    /* the SLO checks of the first point that has them ({metric, stat, target, unit}), or NULL */
    json_t *meta;   /* as rp_run_t's, from the sweep's or search's file */
    json_t *config; /* the run's input_config: the file's, else the first point's */
} rp_points_t;

/* A multi-run (--num-profile-runs, or AIPerf's): its aggregate, and each run's summary metrics beside. */
typedef struct {
    char *dir;
    char *label;
    json_t *metadata; /* the aggregate's "metadata" */
    json_t *metrics;  /* its "metrics": "<metric>_<stat>" -> {mean, ci_low, ci_high, ...} */
    json_t *runs;     /* [{label, summary}] for each run of run_labels whose summary could be read */
} rp_multi_t;

/* Reading. Each returns 0, or -1 with a one-line reason in err (naming the file). */
typedef enum { RP_NONE, RP_RUN, RP_POINTS, RP_MULTI } rp_kind_t;
rp_kind_t rp_kind_of(const char *dir);
/* How many kinds of run dir holds (a single run of surge's or AIPerf's, one of GenAI-Perf's, a sweep, a capacity
 * search), each named in desc with the file that says it ("a single run (profile_export_surge.json) and a sweep
 * (sweep_summary.json)"). More than one: runs written into one another's directory, which no report can tell
 * apart. */
size_t rp_kinds_in(const char *dir, char *desc, size_t cap);
int rp_run_load(rp_run_t *run, const char *dir, char *err, size_t errlen);
void rp_run_free(rp_run_t *run);
int rp_points_load(rp_points_t *pts, const char *dir, char *err, size_t errlen);
void rp_points_free(rp_points_t *pts);
int rp_multi_load(rp_multi_t *mr, const char *dir, char *err, size_t errlen);
void rp_multi_free(rp_multi_t *mr);

/* records.c: the per-request files of each source into run->req. */
int rp_read_surge_jsonl(rp_run_t *run, const char *path, char *err, size_t errlen);
int rp_read_aiperf_jsonl(rp_run_t *run, const char *path, char *err, size_t errlen);
int rp_read_genai_perf(rp_run_t *run, const char *path, char *err, size_t errlen);
/* The index (1-based, as rp_req_t.err) of an error class, added when new; 0 when the table is full. */
uint8_t rp_err_class(rp_run_t *run, const char *name, size_t len);
json_t *rp_json_load(const char *path, char *err, size_t errlen);
/* What a summary file records of where its figures came from: the tool and its version (surge_version,
 * aiperf_version), the command line, the host, start_time and end_time; a new object with those it has. */
json_t *rp_meta_of(json_t *file, const char *tool);

/* series.c: the page's data for one run (cdfs, timeline, histograms, errors, server metrics). */
json_t *rp_run_data(const rp_run_t *run);
json_t *rp_points_data(const rp_points_t *pts);
json_t *rp_multi_data(const rp_multi_t *mr);

/* html.c: the page around its data, written to path atomically (a temporary file renamed into place). */
int rp_write_html(const char *path, const char *title, json_t *data, char *err, size_t errlen);

#endif
