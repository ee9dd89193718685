/*
 * A run over several processes (--world-size, or a launcher's environment; dist/): the controller's side. Each
 * rank prepares as a single run would, then joins the others through rank 0 (dist/coord.c), runs its share of
 * the global worker streams from one shared start instant into <artifact dir>/rank<R>/, and sends its files to
 * rank 0, which merges them (dist/merge.c) into the artifact directory itself and tells every rank the verdict.
 */
#include "run_int.h"

#include "sg_loop.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int dist_prepare(profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    sg_dist_opts_t *o = &p->dist_opts;
    memset(o, 0, sizeof(*o));
    o->world = cfg->world_size;
    o->rank = cfg->rank;
    o->timeout_s = cfg->coordinator_timeout_s;
    if (cfg->coordinator)
        snprintf(o->coordinator, sizeof o->coordinator, "%s", cfg->coordinator);
    char err[512];
    if (sg_dist_resolve(o, err, sizeof err) < 0) {
        fprintf(stderr, "surge: %s\n", err);
        return EXIT_USAGE;
    }
    if (o->world > 1 && (cfg->sweep || cfg->search || cfg->num_profile_runs > 1)) {
        fprintf(stderr,
                "surge: a run over %u ranks (%s) measures one load point once: a sweep, a capacity search or a "
                "multi-run (--num-profile-runs) runs in one process (give --world-size 1 to run it alone)\n",
                o->world, o->source);
        return EXIT_USAGE;
    }
    if (o->world > 1 && cfg->measurement_interval_ms > 0) {
        fprintf(stderr,
                "surge: a run over %u ranks (%s) cannot use --measurement-interval: each rank would judge its own "
                "windows (give --world-size 1 to run it alone)\n",
                o->world, o->source);
        return EXIT_USAGE;
    }
    if (o->world > 1 && cfg->export_summary) {
        fprintf(stderr,
                "surge: --export-level summary: a run over %u ranks (%s) merges the ranks' per-request files, so "
                "each rank writes them: give --export-level records\n",
                o->world, o->source);
        return EXIT_USAGE;
    }
    if (o->world > 1 && o->missing[0]) {
        fprintf(stderr, "surge: %s\n", o->missing);
        return EXIT_USAGE;
    }
    if (o->world > 1 && cfg->fixed_schedule == false && cfg->request_rate == 0 && cfg->concurrency < o->world) {
        fprintf(stderr, "surge: --concurrency %u over %u ranks: each rank needs at least one slot\n", cfg->concurrency,
                o->world);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* The settings every rank must share, as sorted JSON text: all of input_config but what is a rank's own, and a
 * hash of every request the rank would send (prompts, bodies, lengths) and of a trace's times, so that ranks fed
 * different input files (same name, other contents) are told apart. */
static char *fingerprint(const profile_t *p)
{
    const sg_config_t *cfg = &p->cfg;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < p->payloads.n; i++) {
        const sg_payload_t *it = &p->payloads.items[i];
        h = fnv1a(h, it->bytes, it->len);
        uint32_t meta[3] = {it->isl, it->max_tokens, it->model};
        h = fnv1a(h, meta, sizeof meta);
    }
    if (p->run.schedule_ns)
        h = fnv1a(h, p->run.schedule_ns, p->run.schedule_n * sizeof(*p->run.schedule_ns));
    char *text = sg_config_to_json(cfg);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!o)
        return NULL;
    static const char *const own[] = {"artifact_dir",  "workers",    "verbose", "io_backend",  "generate_plots",
                                      "overwrite",     "world_size", "rank",    "coordinator", "coordinator_timeout",
                                      "tokenizer",     "input_file", "cacert",  "cert",        "key",
                                      "local_address", "coalesce_us"};
    for (size_t i = 0; i < SG_ARRAY_LEN(own); i++)
        json_object_del(o, own[i]);
    /* a rank may read a config file of its own (--config): its resolved settings are what is compared */
    json_object_del(o, "config_file");
    json_object_del(o, "config_file_sha256");
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    json_object_set_new(o, "requests_hash", json_string(hex));
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

int dist_join(profile_t *p)
{
    if (p->dist_opts.world <= 1)
        return EXIT_OK;
    const sg_config_t *cfg = &p->cfg;
    /* the most streams the load has room for: a slot, an in-flight cap or a connection each */
    unsigned cap = 0;
    if (cfg->request_rate == 0 && !cfg->fixed_schedule)
        cap = cfg->concurrency;
    if (cfg->max_concurrency && (!cap || cfg->max_concurrency < cap))
        cap = cfg->max_concurrency;
    if (cfg->max_connections && (!cap || cfg->max_connections < cap))
        cap = cfg->max_connections;
    char *fp = fingerprint(p);
    char err[1024];
    int rc = fp ? sg_dist_open(&p->dist_opts, point_worker_count(cfg), cap, fp, &p->dist, err, sizeof err) : -1;
    free(fp);
    if (rc < 0) {
        fprintf(stderr, "surge: %s\n", fp ? err : "out of memory");
        return EXIT_FATAL;
    }
    unsigned workers;
    sg_dist_layout(p->dist, &workers, &p->run.stream_offset, &p->run.streams_total);
    p->dist_workers = workers;
    return EXIT_OK;
}

int dist_start(profile_t *p, int64_t *start_ns)
{
    char err[512];
    if (sg_dist_start(p->dist, start_ns, err, sizeof err) < 0) {
        fprintf(stderr, "surge: %s\n", err);
        snprintf(p->dist_why, sizeof p->dist_why, "%s", err);
        return -1;
    }
    return 0;
}

bool dist_tick(profile_t *p, bool interrupted)
{
    char why[512];
    if (sg_dist_tick(p->dist, interrupted, "interrupted (SIGINT or SIGTERM)", why, sizeof why) != 1)
        return false;
    fprintf(stderr, "\nsurge: stopping: %s\n", why);
    snprintf(p->dist_why, sizeof p->dist_why, "%s", why);
    p->dist_stopped = true;
    return true;
}

/* The files a rank sends: what a merge reads. */
static int rank_files(const profile_t *p, char names[2][512])
{
    const char *stem = p->cfg.profile_export_stem ? p->cfg.profile_export_stem : "profile_export";
    snprintf(names[0], 512, "%s_surge.json", stem);
    snprintf(names[1], 512, "%s_surge.jsonl", stem);
    return 2;
}

/* Rank 0's --server-metrics-url files beside the merged run's (a copy: rank0/ keeps its own). */
static void copy_beside(const char *from_dir, const char *to_dir, const char *name)
{
    char src[1200], dst[1200], tmp[1300];
    snprintf(src, sizeof src, "%s/%s", from_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    snprintf(tmp, sizeof tmp, "%s.part", dst);
    FILE *in = fopen(src, "rb");
    if (!in)
        return;
    FILE *out = fopen(tmp, "wb");
    char buf[65536];
    size_t n;
    bool ok = out != NULL;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    fclose(in);
    if (out && fclose(out) != 0)
        ok = false;
    if (!ok || rename(tmp, dst) != 0) {
        fprintf(stderr, "surge: warning: could not copy %s beside the merged run\n", src);
        unlink(tmp);
    }
}

int dist_finish(profile_t *p, const point_t *pt, int code)
{
    sg_coord_t *d = p->dist;
    unsigned rank = sg_dist_rank(d), world = sg_dist_world(d);
    char names[2][512];
    int n = rank_files(p, names);
    bool have = pt->artifact_dir != NULL;
    for (int i = 0; i < n && have; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", pt->artifact_dir, names[i]);
        have = access(path, R_OK) == 0;
    }
    char err[1024];
    if (rank != 0) {
        const char *files[2] = {names[0], names[1]};
        int final = code;
        if (!have) {
            fprintf(stderr, "surge: rank %u measured nothing to send (exit %d)\n", rank, code);
            return code == EXIT_OK ? EXIT_FATAL : code;
        }
        if (sg_dist_send_results(d, pt->artifact_dir, files, (size_t)n, code, &final, err, sizeof err) < 0) {
            fprintf(stderr,
                    "surge: %s; this rank's own results are in %s/ (surge merge joins the ranks' "
                    "directories)\n",
                    err, pt->artifact_dir);
            return EXIT_FATAL;
        }
        fprintf(stderr,
                "surge: rank %u: its results are merged on rank 0 (its own in %s/); the run's exit status "
                "is %d\n",
                rank, pt->artifact_dir, final);
        return final;
    }
    char **dirs = calloc(world, sizeof(*dirs));
    if (!dirs)
        return EXIT_FATAL;
    int rc = sg_dist_gather(d, p->artifact_dir, dirs, err, sizeof err);
    const char **have_dirs = calloc(world, sizeof(*have_dirs));
    size_t nd = 0;
    for (unsigned r = 0; r < world && have_dirs; r++)
        if (dirs[r] && (r != 0 || have))
            have_dirs[nd++] = dirs[r];
    char why[512] = "";
    bool early = sg_dist_stopped_early(d, why, sizeof why);
    int final = EXIT_FATAL;
    if (rc < 0 || !have_dirs) {
        fprintf(stderr, "surge: %s\n", have_dirs ? err : "out of memory");
    } else if (nd == 0) {
        fprintf(stderr, "surge: no rank's results arrived: nothing to merge\n");
    } else {
        char *ranks = sg_dist_ranks_json(d);
        sg_merge_t mg = {.dirs = have_dirs,
                         .n_dirs = nd,
                         .out_dir = p->artifact_dir,
                         .interrupted = pt->interrupted || early,
                         .extra_json = ranks};
        int mc = sg_merge_run(&mg, err, sizeof err);
        free(ranks);
        if (mc < 0) {
            fprintf(stderr, "surge: merging the ranks' results: %s\n", err);
        } else {
            copy_beside(pt->artifact_dir, p->artifact_dir, "server_metrics.json");
            copy_beside(pt->artifact_dir, p->artifact_dir, "server_metrics.csv");
            fprintf(stderr, "surge: artifacts in %s/ (merged from %zu of %u ranks; each rank's own in %s/rank<R>/)\n",
                    p->artifact_dir, nd, world, p->artifact_dir);
            final = mc;
            if (nd < world || early) {
                fprintf(stderr,
                        "surge: run STOPPED EARLY: %s; the results cover what the ranks measured until "
                        "then\n",
                        why[0] ? why : "a rank's results are missing");
                if (nd < world)
                    final = EXIT_FATAL;
            }
        }
    }
    sg_dist_done(d, final);
    for (unsigned r = 0; r < world; r++)
        free(dirs[r]);
    free(dirs);
    free(have_dirs);
    return final;
}
