/*
 * A sweep: every value of --concurrency 1,4,16 / --request-rate 10,20,40 (or a --concurrency-range /
 * --request-rate-range) as a load point of its own, in turn, over the one prepared run: the same payload table,
 * fresh workers, connections and histograms per point, the warmup per point, and
 * --parameter-sweep-cooldown-seconds between points. Each point writes its files to <artifact dir>/<kind>_<value>/;
 * sweep_summary.json and .csv (one row per point) are rewritten after every point, so a sweep cut short keeps
 * what it measured.
 */
#define _GNU_SOURCE
#include "run_int.h"
#include "sg_confidence.h"
#include "sg_points.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which of two exit statuses a run of several points reports: an interrupt, then a broken run, then bad input,
 * then failed requests, then a failed --slo, then an inconclusive one. */
int points_worse(int a, int b)
{
    static const int order[] = {EXIT_OK,         EXIT_NOT_STABLE,     EXIT_SLO_INCONCLUSIVE,
                                EXIT_SLO_FAILED, EXIT_REQUEST_ERRORS, EXIT_USAGE,
                                EXIT_FATAL,      EXIT_INTERRUPTED};
    int ra = 0, rb = 0;
    for (int i = 0; i < (int)SG_ARRAY_LEN(order); i++) {
        if (order[i] == a)
            ra = i;
        if (order[i] == b)
            rb = i;
    }
    return rb > ra ? b : a;
}

/* "concurrency_16", "request_rate_12.5": AIPerf's sub-directory names. */
void points_subdir(char *buf, size_t cap, bool closed, double value, const char *prefix)
{
    snprintf(buf, cap, "%s%s_%.15g", prefix ? prefix : "", closed ? "concurrency" : "request_rate", value);
}

/* The row of a point that ran: its figures, verdicts and status. */
void points_row(sg_point_row_t *row, const point_t *pt, int code)
{
    sg_point_row_fill(row, pt->merged);
    row->exit_code = code;
    row->interrupted = pt->interrupted;
    row->cancel_test = pt->cfg.cancel_rate_pct > 0;
    row->n_slo = pt->cfg.n_slo_checks;
    memcpy(row->verdicts, pt->verdicts, sizeof row->verdicts);
    row->slo_pass = pt->slo_pass;
    row->slo_outcome = pt->cfg.n_slo_checks ? pt->slo_outcome : SG_SLO_PASS;
}

/* Where the figures came from, beside the header: surge's version, the command line, the client host, when the
 * sweep or search began and when this file was last written (ISO 8601 UTC), and the configuration of the run. */
static void points_provenance(const profile_t *p, json_t *root)
{
    char t0[48], t1[48];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bool have0 = sg_iso_utc(t0, sizeof t0, p->started_wall_ns) != NULL;
    bool have1 = sg_iso_utc(t1, sizeof t1, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec) != NULL;
    json_object_set_new(root, "surge_version", json_string(sg_version()));
    json_t *cmd = p->command ? json_string(p->command) : NULL; /* NULL too for bytes that are not UTF-8 */
    json_t *host = p->host[0] ? json_string(p->host) : NULL;
    json_object_set_new(root, "command", cmd ? cmd : json_null());
    json_object_set_new(root, "host", host ? host : json_null());
    json_object_set_new(root, "start_time", have0 ? json_string(t0) : json_null());
    json_object_set_new(root, "end_time", have1 ? json_string(t1) : json_null());
    char *cfg = sg_config_to_json(&p->cfg);
    json_t *c = cfg ? json_loads(cfg, 0, NULL) : NULL;
    json_object_set_new(root, "input_config", c ? c : json_null());
    free(cfg);
}

/* <stem>.json (a header object and the rows) and <stem>.csv in the artifact directory. */
int points_write(const profile_t *p, const char *stem, const char *key, json_t *header, const char *rows_key,
                 const sg_point_row_t *rows, size_t n)
{
    const sg_config_t *cfg = &p->cfg;
    char name[128];
    snprintf(name, sizeof name, "%s.json", stem);
    char *json_path = sg_path_join(p->artifact_dir, name);
    snprintf(name, sizeof name, "%s.csv", stem);
    char *csv_path = sg_path_join(p->artifact_dir, name);
    int rc = json_path && csv_path ? 0 : -ENOMEM;
    json_t *root = json_object();
    json_t *arr = sg_points_json(rows, n, cfg->slo_checks, cfg->n_slo_checks);
    if (rc == 0 && root && arr && header) {
        json_object_set(root, key, header);
        json_object_set_new(root, rows_key, arr);
        points_provenance(p, root);
        arr = NULL;
        rc = sg_json_write(json_path, root);
        root = NULL;
    } else if (rc == 0) {
        rc = -ENOMEM;
    }
    json_decref(root);
    json_decref(arr);
    if (rc < 0)
        fprintf(stderr, "surge: writing %s: %s\n", json_path ? json_path : stem, sg_strerror(rc));
    int crc = csv_path ? sg_points_csv(csv_path, rows, n, cfg->slo_checks, cfg->n_slo_checks) : -ENOMEM;
    if (crc < 0)
        fprintf(stderr, "surge: writing %s: %s\n", csv_path ? csv_path : stem, sg_strerror(crc));
    free(json_path);
    free(csv_path);
    return rc < 0 ? rc : crc;
}

static json_t *sweep_header(const profile_t *p, size_t done, bool interrupted)
{
    const sg_config_t *cfg = &p->cfg;
    json_t *h = json_object();
    json_t *values = json_array();
    json_t *slos = json_array();
    if (!h || !values || !slos) {
        json_decref(h);
        json_decref(values);
        json_decref(slos);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_sweep_values; i++)
        json_array_append_new(values, cfg->sweep == SG_SWEEP_RATE ? json_real(cfg->sweep_values[i])
                                                                  : json_integer((json_int_t)cfg->sweep_values[i]));
    for (size_t i = 0; i < cfg->n_slo_checks; i++)
        json_array_append_new(slos, json_string(cfg->slo_checks[i].text));
    json_object_set_new(h, "kind", json_string(cfg->sweep == SG_SWEEP_RATE ? "request_rate" : "concurrency"));
    json_object_set_new(h, "values", values);
    json_object_set_new(h, "points_run", json_integer((json_int_t)done));
    json_object_set_new(h, "complete", json_boolean(done == cfg->n_sweep_values && !interrupted));
    json_object_set_new(h, "was_interrupted", json_boolean(interrupted));
    json_object_set_new(h, "cooldown_seconds", json_real(cfg->cooldown_s));
    json_object_set_new(h, "num_profile_runs", json_integer(cfg->num_profile_runs));
    json_object_set_new(h, "slo", slos);
    return h;
}

/* sweep_summary.json and .csv as they stand after `done` points: code, or EXIT_FATAL's place in it when the files
 * cannot be written. */
static int sweep_save(const profile_t *p, size_t done, bool interrupted, const sg_point_row_t *rows, size_t n_rows,
                      int code)
{
    json_t *h = sweep_header(p, done, interrupted);
    int werr = points_write(p, "sweep_summary", "sweep", h, "points", rows, n_rows);
    json_decref(h);
    return werr < 0 ? points_worse(code, EXIT_FATAL) : code;
}

/*
 * A sweep with --num-profile-runs N (AIPerf's --parameter-sweep-mode independent): each value is a multi-run of
 * its own, its runs in <kind>_<value>/profile_runs/run_NNNN/ and its aggregate in <kind>_<value>/aggregate/;
 * sweep_summary holds every run as a row (trial = the run's number).
 */
static int sweep_multirun(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    bool closed = cfg->sweep == SG_SWEEP_CONCURRENCY;
    size_t n = cfg->n_sweep_values, per = cfg->num_profile_runs;
    sg_point_row_t *rows = calloc(n * per, sizeof *rows);
    json_t **aggs = calloc(n, sizeof *aggs);
    if (!rows || !aggs) {
        free(rows);
        free(aggs);
        return EXIT_FATAL;
    }
    int code = EXIT_OK;
    size_t done = 0, n_rows = 0;
    bool interrupted = false, between = false; /* between: the interrupt came between two points */
    for (size_t i = 0; i < n && !interrupted; i++) {
        if (i > 0 && cfg->cooldown_s > 0)
            run_cooldown(cfg->cooldown_s);
        if (run_interrupted()) {
            interrupted = between = true;
            break;
        }
        char prefix[96];
        points_subdir(prefix, sizeof prefix - 1, closed, cfg->sweep_values[i], NULL);
        strcat(prefix, "/");
        fprintf(stderr, "surge: sweep point %zu of %zu: %s %g, %zu runs\n", i + 1, n,
                closed ? "concurrency" : "request rate", cfg->sweep_values[i], per);
        point_spec_t load = {.set_load = true, .closed = closed, .value = cfg->sweep_values[i]};
        size_t k = 0;
        bool intr = false;
        int pc = multirun_at(p, prefix, &load, rows + n_rows, &k, &intr, &aggs[done]);
        code = points_worse(code, pc);
        n_rows += k;
        if (k == 0) { /* the point did not run: the next would fail alike */
            json_decref(aggs[done]);
            aggs[done] = NULL;
            break;
        }
        done++;
        interrupted = intr;
        code = sweep_save(p, done, interrupted, rows, n_rows, code);
    }
    if (n_rows > 0) {
        char title[160];
        snprintf(title, sizeof title, "surge | Sweep over %s (%zu of %zu points, %zu runs each)",
                 closed ? "concurrency" : "request rate", done, n, per);
        sg_points_table(stdout, title, rows, n_rows, cfg->slo_checks, cfg->n_slo_checks, false);
        sg_ci_sweep_table(stdout, closed, cfg->sweep_values, aggs, done);
        fflush(stdout);
        fprintf(stderr,
                "surge: sweep summary (every run) in %s/sweep_summary.json and .csv; each point's aggregate in its "
                "sub-directory's aggregate/, its runs in profile_runs/\n",
                p->artifact_dir);
    }
    if (interrupted)
        fprintf(stderr, "surge: sweep INTERRUPTED %s point %zu of %zu: the summary covers the %zu run%s that ran\n",
                between ? "after" : "during", done, n, n_rows, n_rows == 1 ? "" : "s");
    if (interrupted)
        code = EXIT_INTERRUPTED;
    for (size_t i = 0; i < n; i++)
        json_decref(aggs[i]);
    free(aggs);
    free(rows);
    return code;
}

int sweep_main(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    if (cfg->num_profile_runs > 1)
        return sweep_multirun(p);
    bool closed = cfg->sweep == SG_SWEEP_CONCURRENCY;
    size_t n = cfg->n_sweep_values;
    sg_point_row_t *rows = calloc(n, sizeof *rows);
    if (!rows)
        return EXIT_FATAL;
    int code = EXIT_OK;
    size_t done = 0;
    bool interrupted = false, between = false; /* between: the interrupt came in a cooldown */
    for (size_t i = 0; i < n && !interrupted; i++) {
        if (i > 0 && cfg->cooldown_s > 0)
            run_cooldown(cfg->cooldown_s);
        if (run_interrupted()) {
            interrupted = between = true;
            break;
        }
        sg_point_row_t *row = &rows[done];
        row->closed = closed;
        row->value = cfg->sweep_values[i];
        row->trial = 1;
        points_subdir(row->dir, sizeof row->dir, closed, row->value, NULL);
        fprintf(stderr, "surge: sweep point %zu of %zu: %s %g\n", i + 1, n, closed ? "concurrency" : "request rate",
                row->value);
        point_spec_t spec = {
            .set_load = true, .closed = closed, .value = row->value, .subdir = row->dir, .quiet = true};
        point_t pt = {0};
        int pc = point_exec(p, &spec, &pt);
        if (!pt.merged) { /* the point did not run: nothing to add, and the next would fail alike */
            point_free(&pt);
            code = points_worse(code, pc);
            break;
        }
        points_row(row, &pt, pc);
        interrupted = pt.interrupted;
        point_free(&pt);
        code = points_worse(code, pc);
        done++;
        code = sweep_save(p, done, interrupted, rows, done, code);
    }
    if (done > 0) {
        char title[160];
        snprintf(title, sizeof title, "surge | Sweep over %s (%zu of %zu points)",
                 closed ? "concurrency" : "request rate", done, n);
        sg_points_table(stdout, title, rows, done, cfg->slo_checks, cfg->n_slo_checks, false);
        fflush(stdout);
        fprintf(stderr,
                "surge: sweep summary in %s/sweep_summary.json and .csv; each point's files in its "
                "sub-directory\n",
                p->artifact_dir);
    }
    if (interrupted && between)
        fprintf(stderr,
                "surge: sweep INTERRUPTED after point %zu of %zu: the summary covers the %zu complete point%s\n", done,
                n, done, done == 1 ? "" : "s");
    else if (interrupted)
        fprintf(stderr,
                "surge: sweep INTERRUPTED during point %zu of %zu (%s %g): the summary covers the %zu point%s that "
                "ran, the last one up to the interrupt\n",
                done, n, closed ? "concurrency" : "request rate", cfg->sweep_values[done - 1], done,
                done == 1 ? "" : "s");
    if (interrupted)
        code = EXIT_INTERRUPTED;
    free(rows);
    return code;
}
