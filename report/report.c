/*
 * `surge report DIR... [-o FILE]` and `surge compare DIR DIR... [-o FILE]`: one self-contained HTML page of one
 * or more runs, or of one or more sweeps or searches. Every directory is read before anything is written; a
 * directory that is not a run, a file cut off mid-record, or runs of different kinds stop it with one line and
 * exit 2, leaving no page behind.
 */
#include "sg_report.h"

#include "report_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fputs("usage: surge report DIR... [-o FILE]\n"
          "       surge compare DIR DIR... [-o FILE]\n"
          "\n"
          "One HTML file (self-contained: it opens offline) of the runs in the DIRs: for a run, its summary, SLO\n"
          "verdicts, latency CDFs, timeline, sequence lengths, errors and server metrics; for a sweep or capacity\n"
          "search, its capacity curve and each point's verdict with its reason. Every page says where its figures\n"
          "came from, as the files recorded it: the command line, the workload, the version, the host and the\n"
          "date of the run; for a multi-run (--num-profile-runs), each metric's mean and\n"
          "confidence interval across the runs. Several DIRs are overlaid, with a table of their differences (that is\n"
          "`surge compare`). A DIR is surge's artifact directory, or one of AIPerf's (profile_export_aiperf.json)\n"
          "or GenAI-Perf's (profile_export_genai_perf.json).\n"
          "\n"
          "  -o, --output FILE   where the page goes (default: DIR/report.html for one DIR, else ./compare.html)\n"
          "  -q, --quiet         no line saying where the page went\n"
          "  -h, --help          this text\n",
          out);
}

/* The parts of each entry that are the files' own numbers (summaries, verdicts, points), moved out of the charts'
 * data: the page writes them at full precision, and shows exactly what the files hold. */
static json_t *files_of(json_t *list, rp_kind_t kind)
{
    static const char *const run_keys[] = {"summary", "slo", "config", "error_summary", "meta", "gpu"};
    static const char *const points_keys[] = {"header", "rows", "slo", "meta", "config"};
    static const char *const multi_keys[] = {"metadata", "metrics", "per_run"};
    const char *const *keys = kind == RP_RUN ? run_keys : kind == RP_MULTI ? multi_keys : points_keys;
    size_t nk = kind == RP_RUN     ? SG_ARRAY_LEN(run_keys)
                : kind == RP_MULTI ? SG_ARRAY_LEN(multi_keys)
                                   : SG_ARRAY_LEN(points_keys);
    json_t *files = json_array();
    size_t i;
    json_t *entry;
    json_array_foreach(list, i, entry)
    {
        json_t *f = json_object();
        for (size_t k = 0; k < nk; k++) {
            json_object_set(f, keys[k], json_object_get(entry, keys[k]));
            json_object_del(entry, keys[k]);
        }
        json_array_append_new(files, f);
    }
    return files;
}

static const char *kind_name(rp_kind_t k)
{
    return k == RP_RUN ? "a single run" : k == RP_MULTI ? "a multi-run" : "a sweep or search";
}

/* The page's name for a kind's list ("runs", "points", "multi"). */
static const char *kind_key(rp_kind_t k)
{
    return k == RP_RUN ? "runs" : k == RP_MULTI ? "multi" : "points";
}

/* Reads every directory; all must be of one kind. Fills *data; returns 0, or 2 with a line on stderr. */
static int load_all(char *const *dirs, size_t n, json_t **data)
{
    char err[512];
    rp_kind_t kind = RP_NONE;
    const char *first = NULL;
    for (size_t i = 0; i < n; i++) {
        char kinds[512];
        if (rp_kinds_in(dirs[i], kinds, sizeof kinds) > 1) {
            fprintf(stderr,
                    "surge report: %s holds more than one kind of run: %s, written into one directory; a report "
                    "reads one run, sweep or search per directory (move one of them out)\n",
                    dirs[i], kinds);
            return 2;
        }
        rp_kind_t k = rp_kind_of(dirs[i]);
        if (k == RP_NONE) {
            fprintf(stderr,
                    "surge report: %s: not a run directory (no profile_export_surge.json, sweep_summary.json, "
                    "search.json, aggregate/profile_export_aiperf_aggregate.json, profile_export_aiperf.json or "
                    "profile_export_genai_perf.json in it)\n",
                    dirs[i]);
            return 2;
        }
        if (kind != RP_NONE && k != kind) {
            fprintf(stderr, "surge report: %s is %s but %s is %s: a report overlays runs of one kind\n", first,
                    kind_name(kind), dirs[i], kind_name(k));
            return 2;
        }
        kind = k;
        first = first ? first : dirs[i];
    }
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *d = NULL;
        if (kind == RP_RUN) {
            rp_run_t run;
            if (rp_run_load(&run, dirs[i], err, sizeof err) == 0)
                d = rp_run_data(&run);
            rp_run_free(&run);
        } else if (kind == RP_MULTI) {
            rp_multi_t mr;
            if (rp_multi_load(&mr, dirs[i], err, sizeof err) == 0)
                d = rp_multi_data(&mr);
            rp_multi_free(&mr);
        } else {
            rp_points_t pts;
            if (rp_points_load(&pts, dirs[i], err, sizeof err) == 0)
                d = rp_points_data(&pts);
            rp_points_free(&pts);
        }
        if (!d) {
            fprintf(stderr, "surge report: %s\n", err);
            json_decref(list);
            return 2;
        }
        json_array_append_new(list, d);
    }
    *data = json_object();
    json_object_set_new(*data, "files", files_of(list, kind));
    json_object_set_new(*data, "generator", json_string("surge"));
    json_object_set_new(*data, "kind", json_string(kind_key(kind)));
    json_object_set_new(*data, kind_key(kind), list);
    return 0;
}

int sg_report_dirs(char *const *dirs, size_t n, const char *out, bool quiet)
{
    json_t *data = NULL;
    int rc = load_all(dirs, n, &data);
    if (rc != 0)
        return rc;
    char *def = NULL;
    if (!out) {
        if (n == 1) {
            size_t len = strlen(dirs[0]) + sizeof "/report.html";
            def = malloc(len);
            if (def)
                snprintf(def, len, "%s/report.html", dirs[0]);
            out = def;
        } else {
            out = "compare.html";
        }
    }
    char title[256], err[512];
    json_t *list = json_object_get(data, json_string_value(json_object_get(data, "kind")));
    snprintf(title, sizeof title, "surge report: %s%s",
             json_string_value(json_object_get(json_array_get(list, 0), "label")), n > 1 ? " and others" : "");
    rc = out ? 0 : 2;
    if (!out)
        fprintf(stderr, "surge report: out of memory\n");
    else if (rp_write_html(out, title, data, err, sizeof err) < 0) {
        fprintf(stderr, "surge report: %s\n", err);
        rc = 2;
    } else if (!quiet) {
        fprintf(stderr, "surge: report in %s\n", out);
    }
    json_decref(data);
    free(def);
    return rc;
}

static int report_main(int argc, char **argv, bool compare)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    bool quiet = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    size_t n = (size_t)(argc - optind);
    if (n < (compare ? 2u : 1u)) {
        fprintf(stderr, "surge %s: %s\n\n", compare ? "compare" : "report",
                compare ? "give two or more directories to compare" : "give a run's directory");
        usage(stderr);
        return 2;
    }
    return sg_report_dirs(argv + optind, n, out, quiet);
}

int sg_report_main(int argc, char **argv)
{
    return report_main(argc, argv, false);
}

int sg_compare_main(int argc, char **argv)
{
    return report_main(argc, argv, true);
}
