/*
 * A multi-run (--num-profile-runs N, AIPerf's): the same load point N times over the one prepared run (the same
 * payload table and seed, so the same prompts on the same schedule; fresh workers, connections and metrics each
 * time), --profile-run-cooldown-seconds between runs, the warmup before the first run only unless
 * --profile-run-disable-warmup-after-first false. Each run writes its whole set of files to
 * <artifact dir>/profile_runs/run_NNNN/; after every run, aggregate/profile_export_aiperf_aggregate.json and .csv
 * are rewritten from the runs' own summary files: every metric's mean across the runs with its Student's t
 * interval (metrics/confidence.c). A multi-run cut short keeps the runs it completed and says so.
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
#include <sys/stat.h>

#define AGG_DIR "aggregate"
#define AGG_STEM "profile_export_aiperf_aggregate"

typedef struct {
    char *dir;          /* where profile_runs/ and aggregate/ go: the artifact dir, or a sweep value's */
    const char *prefix; /* that directory relative to the artifact dir ("" or "concurrency_4/") */
    size_t asked, done; /* runs asked for, runs started and finished (the interrupted one included) */
    json_t **summaries; /* the used runs' summaries, in order */
    size_t n_used;
    json_t *labels; /* their labels */
    json_t *failed; /* [{label, error}]: runs that ran but are not in the aggregate */
    bool interrupted;
} multirun_t;

/* The aggregate's header, AIPerf's keys first, then surge's own. */
static json_t *agg_metadata(const profile_t *p, const multirun_t *mr)
{
    const sg_config_t *cfg = &p->cfg;
    json_t *m = json_object();
    if (!m)
        return NULL;
    json_object_set_new(m, "aggregation_type", json_string("confidence"));
    json_object_set_new(m, "num_profile_runs", json_integer((json_int_t)mr->asked));
    json_object_set_new(m, "num_successful_runs", json_integer((json_int_t)mr->n_used));
    json_object_set(m, "failed_runs", mr->failed);
    json_object_set_new(m, "confidence_level", json_real(cfg->confidence_level));
    json_object_set(m, "run_labels", mr->labels);
    if (mr->n_used == 1)
        json_object_set_new(m, "single_run", json_true()); /* AIPerf's flag: no interval */
    json_object_set_new(m, "runs_done", json_integer((json_int_t)mr->done));
    json_object_set_new(m, "complete", json_boolean(mr->done == mr->asked && !mr->interrupted));
    json_object_set_new(m, "was_interrupted", json_boolean(mr->interrupted));
    json_object_set_new(m, "cooldown_seconds", json_real(cfg->profile_run_cooldown_s));
    json_object_set_new(m, "warmup_only_first_run", json_boolean(cfg->warmup_only_first_run));
    json_object_set_new(m, "warmup_request_count", json_integer((json_int_t)cfg->warmup_request_count));
    json_object_set_new(m, "runs_dir", json_string("profile_runs"));
    return m;
}

/* aggregate/<stem>.json and .csv from the runs used so far; 0 or -errno (said on stderr). */
static int agg_write(const profile_t *p, const multirun_t *mr, json_t **agg_out)
{
    char *dir = sg_path_join(mr->dir, AGG_DIR);
    char *json_path = dir ? sg_path_join(dir, AGG_STEM ".json") : NULL;
    char *csv_path = dir ? sg_path_join(dir, AGG_STEM ".csv") : NULL;
    json_t *agg = json_object();
    json_t *meta = agg_metadata(p, mr);
    json_t *metrics = sg_ci_metrics(mr->summaries, mr->n_used, p->cfg.confidence_level);
    int rc = dir && json_path && csv_path && agg && meta && metrics ? 0 : -ENOMEM;
    if (rc == 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
        rc = -errno;
    if (rc == 0) {
        json_object_set_new(agg, "schema_version", json_string("1.0"));
        json_object_set_new(agg, "generator", json_string("surge"));
        json_object_set_new(agg, "metadata", meta);
        json_object_set_new(agg, "metrics", metrics);
        meta = metrics = NULL;
        rc = sg_json_write(json_path, json_incref(agg)); /* takes a reference */
        if (rc == 0)
            rc = sg_ci_csv(csv_path, agg);
    }
    if (rc < 0)
        fprintf(stderr, "surge: writing %s/%s.json and .csv: %s\n", dir ? dir : AGG_DIR, AGG_STEM, sg_strerror(rc));
    json_decref(meta);
    json_decref(metrics);
    if (rc == 0 && agg_out)
        *agg_out = agg;
    else
        json_decref(agg);
    free(dir);
    free(json_path);
    free(csv_path);
    return rc;
}

/* Note a run that is not in the aggregate, and why. */
static void run_failed(multirun_t *mr, const char *label, const char *why)
{
    json_t *f = json_object();
    json_object_set_new(f, "label", json_string(label));
    json_object_set_new(f, "error", json_string(why));
    json_array_append_new(mr->failed, f);
}

/* The run's summary as it wrote it, for the aggregate; NULL (said) when it cannot be read. */
static json_t *run_summary(const point_t *pt)
{
    char *path = point_summary_path(pt);
    json_error_t jerr;
    json_t *j = path ? json_load_file(path, 0, &jerr) : NULL;
    if (!j || !json_is_object(j)) {
        fprintf(stderr, "surge: reading %s back for the aggregate: %s\n", path ? path : "the run's summary",
                j      ? "not a JSON object"
                : path ? jerr.text
                       : "out of memory");
        json_decref(j);
        j = NULL;
    }
    free(path);
    return j;
}

/*
 * The point of load (NULL: the configuration's own) N times under <artifact dir>/<prefix>profile_runs/, the
 * aggregate in <prefix>aggregate/. rows (N of them, or NULL) get each run's row, *n_rows how many. *agg_out: the
 * last aggregate written (the caller's reference), or NULL. Returns the exit status of the runs.
 */
int multirun_at(profile_t *p, const char *prefix, const point_spec_t *load, sg_point_row_t *rows, size_t *n_rows,
                bool *interrupted_out, json_t **agg_out)
{
    const sg_config_t *cfg = &p->cfg;
    multirun_t mr = {.asked = cfg->num_profile_runs, .prefix = prefix ? prefix : ""};
    *n_rows = 0;
    *interrupted_out = false;
    if (agg_out)
        *agg_out = NULL;
    mr.dir = *mr.prefix ? sg_path_join(p->artifact_dir, mr.prefix) : strdup(p->artifact_dir);
    for (size_t len = mr.dir ? strlen(mr.dir) : 0; len > 1 && mr.dir[len - 1] == '/'; len--)
        mr.dir[len - 1] = '\0'; /* the prefix's own slash */
    mr.summaries = calloc(mr.asked, sizeof *mr.summaries);
    mr.labels = json_array();
    mr.failed = json_array();
    int code = EXIT_OK;
    if (!mr.dir || !mr.summaries || !mr.labels || !mr.failed) {
        code = EXIT_FATAL;
        goto out;
    }
    bool between = false; /* the interrupt came in a cooldown */
    for (size_t i = 0; i < mr.asked && !mr.interrupted; i++) {
        if (i > 0 && cfg->profile_run_cooldown_s > 0)
            run_cooldown(cfg->profile_run_cooldown_s);
        if (run_interrupted()) {
            mr.interrupted = between = true;
            break;
        }
        char label[32], subdir[sizeof rows->dir];
        snprintf(label, sizeof label, "run_%04zu", i + 1);
        snprintf(subdir, sizeof subdir, "%sprofile_runs/%s", mr.prefix, label);
        fprintf(stderr, "surge: profile run %zu of %zu%s\n", i + 1, mr.asked,
                i > 0 && cfg->warmup_request_count && cfg->warmup_only_first_run ? " (no warmup after the first)" : "");
        point_spec_t spec = {.subdir = subdir, .quiet = true, .no_warmup = i > 0 && cfg->warmup_only_first_run};
        if (load) {
            spec.set_load = load->set_load;
            spec.closed = load->closed;
            spec.value = load->value;
        }
        point_t pt = {0};
        int pc = point_exec(p, &spec, &pt);
        code = points_worse(code, pc);
        if (!pt.merged) { /* the run did not start: the next would fail alike */
            point_free(&pt);
            break;
        }
        if (rows) {
            sg_point_row_t *row = &rows[(*n_rows)++];
            points_row(row, &pt, pc);
            row->closed = spec.set_load ? spec.closed : cfg->request_rate == 0;
            row->value = spec.set_load ? spec.value : (row->closed ? cfg->concurrency : cfg->request_rate);
            row->trial = (unsigned)(i + 1);
            snprintf(row->dir, sizeof row->dir, "%s", subdir);
        }
        mr.done++;
        mr.interrupted = pt.interrupted;
        if (pt.interrupted) {
            run_failed(&mr, label, "interrupted: its files cover the run up to the interrupt");
        } else if (pc == EXIT_OK || pc == EXIT_REQUEST_ERRORS || pc == EXIT_SLO_FAILED || pc == EXIT_SLO_INCONCLUSIVE ||
                   pc == EXIT_NOT_STABLE) {
            /* it measured: requests that failed, an --slo that failed or windows not stable are part of what it
             * measured */
            json_t *s = sg_metrics_ok(pt.merged) + sg_metrics_errors(pt.merged) > 0 ? run_summary(&pt) : NULL;
            if (s) {
                mr.summaries[mr.n_used++] = s;
                json_array_append_new(mr.labels, json_string(label));
            } else {
                run_failed(&mr, label, "no summary to aggregate (nothing measured, or its file unreadable)");
            }
        } else {
            char why[64];
            snprintf(why, sizeof why, "the run failed (exit status %d)", pc);
            run_failed(&mr, label, why);
        }
        point_free(&pt);
        if (agg_write(p, &mr, NULL) < 0)
            code = points_worse(code, EXIT_FATAL);
    }
    json_t *agg = NULL;
    if (mr.done > 0 && agg_write(p, &mr, &agg) == 0) {
        fprintf(stderr, "surge: %zu of %zu runs in the aggregate (%s/%s/%s.json and .csv)\n", mr.n_used, mr.asked,
                mr.dir, AGG_DIR, AGG_STEM);
        if (mr.n_used < 2)
            fprintf(stderr, "surge: a confidence interval needs two runs or more: the aggregate holds the figures "
                            "of one run, with no interval\n");
    }
    if (agg_out)
        *agg_out = agg;
    else
        json_decref(agg);
    if (mr.interrupted && between)
        fprintf(stderr,
                "surge: multi-run INTERRUPTED after run %zu of %zu: the aggregate covers the %zu complete run%s\n",
                mr.done, mr.asked, mr.n_used, mr.n_used == 1 ? "" : "s");
    else if (mr.interrupted)
        fprintf(stderr,
                "surge: multi-run INTERRUPTED during run %zu of %zu: the aggregate covers the %zu complete run%s; "
                "the interrupted run's files are kept in %sprofile_runs/run_%04zu/, outside the aggregate\n",
                mr.done, mr.asked, mr.n_used, mr.n_used == 1 ? "" : "s", mr.prefix, mr.done);
    if (mr.interrupted)
        code = EXIT_INTERRUPTED;
    *interrupted_out = mr.interrupted;
out:
    for (size_t i = 0; i < mr.n_used; i++)
        json_decref(mr.summaries[i]);
    free(mr.summaries);
    free(mr.dir);
    json_decref(mr.labels);
    json_decref(mr.failed);
    return code;
}

int multirun_main(profile_t *p)
{
    size_t n_rows;
    bool interrupted;
    json_t *agg = NULL;
    int code = multirun_at(p, NULL, NULL, NULL, &n_rows, &interrupted, &agg);
    if (agg) {
        sg_ci_table(stdout, agg);
        fflush(stdout);
        fprintf(stderr, "surge: each run's files in %s/profile_runs/run_NNNN/\n", p->artifact_dir);
    }
    json_decref(agg);
    return code;
}
