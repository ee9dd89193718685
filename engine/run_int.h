/*
 * The run controller's pieces, shared by its drivers: run.c prepares a run once (files, tokenizer, payloads, the
 * target's checks, the artifact directory) and runs and reports one load point; sweep.c drives a sweep (a list
 * of points) and search.c the capacity search (points it chooses) over the same pieces. Main thread only.
 */
#ifndef SG_RUN_INT_H
#define SG_RUN_INT_H

#include "sg_dist.h"
#include "sg_input.h"
#include "sg_run.h"
#include "sg_slo.h"
#include "sg_worker.h"

#include <jansson.h>

#define EXIT_OK 0
#define EXIT_REQUEST_ERRORS 1   /* the run completed, but more requests failed than --max-error-rate allows */
#define EXIT_USAGE 2            /* bad input or a target we cannot use: nothing was measured */
#define EXIT_FATAL 3            /* the run could not go on (I/O set-up, out of memory) */
#define EXIT_SLO_FAILED 4       /* the run completed, and an --slo failed */
#define EXIT_SLO_INCONCLUSIVE 5 /* the run completed, no --slo failed, and one could not be decided */
#define EXIT_NOT_STABLE 6 /* --measurement-interval: the windows did not agree within --max-trials (perf_analyzer) */
#define EXIT_INTERRUPTED 130

typedef struct stab stab_t; /* stable.c: stability windows */

/*
 * One `surge profile` invocation: the prepare steps fill it once, then every load point reads it. Each step
 * returns an exit status (EXIT_OK to go on) and leaves what it made here, which profile_free releases whatever
 * step stopped the run.
 */
typedef struct {
    sg_config_t cfg;
    sg_run_t run;
    sg_payload_table_t payloads;
    sg_conv_table_t convs; /* multi-turn sessions: the conversations (run.convs) */
    sg_tokenizer_t *tok;
    sg_input_t input;
    int64_t *schedule;  /* --fixed-schedule: the trace's offsets (run.schedule_ns) */
    size_t n_streaming; /* payloads that ask for a stream (all of them with --streaming; raw bodies: their own) */
    char tls_info[160];
    char *artifact_dir;      /* the run's; a point of a sweep or search writes into a sub-directory of it */
    bool keep_alive_told[2]; /* the keep-alive notice was printed, for [0] whole, [1] streamed answers */
    /* over several processes (run_dist.c): the ranks' options, the coordinator connection, this rank's share */
    sg_dist_opts_t dist_opts;
    struct sg_coord *dist; /* NULL: this process alone */
    unsigned dist_workers;
    bool dist_stopped;  /* another rank stopped the run, or was lost */
    char dist_why[512]; /* and why */
    /* where the files say the figures came from (docs/files.md): the command line, the client host, and when the
     * invocation began (wall clock, ns since the epoch) */
    char *command;
    char host[256];
    int64_t started_wall_ns;

    /* several URLs: cfg.urls[i].url, for the summary's per-URL part */
    const char *url_names[SG_MAX_URLS];
    struct json_t *tools; /* --tools, parsed for the payload table (cfg.tools_json); NULL without */
} profile_t;

/* What a driver asks of one load point. */
typedef struct {
    bool set_load;      /* false: the configuration's own load */
    bool closed;        /* set_load: a closed loop of `value` slots, else an open loop at `value` requests/s */
    double value;       /* concurrency or request rate */
    const char *subdir; /* the point's files go to <artifact dir>/<subdir>; NULL: the artifact dir itself */
    bool quiet;         /* no metrics table on stdout: a line on stderr (a sweep prints its own table) */
    bool probe;         /* a search probe: stop early once an --slo cannot be met, and watch for overload */
    double duration_s;  /* > 0: this --benchmark-duration instead of the run's (a probe sized for its verdicts) */
    uint64_t reseed;    /* > 0: draw the point's arrivals and prompt picks from --random-seed mixed with this (a
                         * search's second and later probes of one value, whose pooled evidence must be independent) */
    bool no_warmup;     /* no --warmup-request-count (a multi-run's runs after the first) */
    /* a probe: per --slo check, how clustered the search has seen its wrong-side requests to be (>= 1; NULL: not),
     * for the early stop's room */
    const double *dispersion;
} point_spec_t;

/* How many load samples a probe keeps for its overload test (one per look, 20 ms apart: 10 min). */
#define PROBE_SAMPLES 30000

/* A probe's live view (search.c): what it saw while the point ran. */
typedef struct {
    int64_t planned;    /* measured requests the point will issue; 0 when unknown (closed loop, duration) */
    bool stopped_early; /* an --slo was certain to fail, so the point was stopped before its end */
    bool overloaded;    /* the outstanding requests grew through the point: the server fell behind the load */
    double grew_from;   /* overload: mean outstanding in the first and last quarter of the sending */
    double grew_to;
    char why[256];   /* what failed the probe beyond its verdicts, for the table and search.json */
    size_t n_bounds; /* the --slo checks counted live (run->bounds[k] is check bound_check[k]) */
    size_t bound_check[SG_SLO_MAX];
    uint64_t bound_room[SG_SLO_MAX]; /* requests that may be on the wrong side before the failure is significant */
    uint64_t errors_seen;            /* the failures the error-rate test last looked at */
    /* per --slo check: how clustered its early stop took the requests to be */
    double dispersion[SG_SLO_MAX];
    /* after the run: the bounds' counts by second of intended start, all workers added, [bound k][second][measured,
     * past] (SG_PROBE_BLOCKS seconds); NULL: none. Every point with a percentile --slo has them (bounds_end) */
    uint32_t *blocks;
    uint32_t n_samples; /* (t, outstanding) while the workers were still issuing */
    float *sample_t;    /* s from the start instant */
    uint32_t *sample_n;
} probe_t;

/* One load point: its workers (their logs hold the per-request records until the export) and merged results. */
typedef struct {
    point_spec_t spec;
    sg_config_t cfg;    /* the run's configuration with this point's load (its strings are the run's) */
    char *artifact_dir; /* where its files go */
    sg_worker_t **ws;
    unsigned n_workers;
    sg_metrics_t *merged;
    uint64_t warmup;
    uint64_t resent; /* measured requests sent more than once (sg_worker_stats_t.resent_measured) */
    uint64_t silent_closes;
    /* receive times (sg_worker_stats_t): the workers' counts summed */
    bool rx_stamps;
    uint64_t rx_stamped, rx_unstamped, stamp_refused, clock_steps, events_shared;
    int64_t clock_step_max_ns;
    uint64_t loop_turns, loop_waits, loop_completions, loop_coalesced, loop_coalesced_ns; /* sg_worker_stats_t */
    const char *coalesce_method;
    uint32_t coalesce_us;   /* the workers' window bound, auto resolved (the largest) */
    bool no_reuse_after[2]; /* some worker stopped reusing connections after [0] whole, [1] streamed answers */
    double client_cpu_s;    /* the load phase's CPU (start instant to the last worker's end), user + system */
    double client_cpu_user_s, client_cpu_sys_s;
    sg_stall_t *stalls; /* client stalls of every worker, by start (after point_collect) */
    size_t n_stalls;
    uint64_t stalls_dropped;
    sg_unreach_t *unreach; /* windows the server was unreachable, merged over workers, by start (point_collect) */
    size_t n_unreach;
    uint64_t unreach_dropped;
    sg_url_info_t url_info[SG_MAX_URLS]; /* several URLs: what the workers saw of each (point_collect) */
    bool interrupted;
    bool grace_ended;           /* --benchmark-grace-period ran out: what was outstanding was cancelled */
    bool fatal;                 /* a worker failed, or the OSL pass or the merge did */
    struct sg_scraper *scraper; /* --server-metrics-url: scraping from just before the load to just after */
    stab_t *stab;               /* --measurement-interval: the windows judged (stable.c); NULL without */
    /* after point_report */
    double duration_s;
    sg_slo_verdict_t verdicts[SG_SLO_MAX]; /* one per --slo, in the order given */
    bool slo_pass;                         /* every --slo passed (true when there is none) */
    sg_slo_outcome_t slo_outcome;          /* sg_slo_overall of the verdicts (pass when there is none) */
    probe_t probe;
} point_t;

/* Run one load point and report it (table or line, files, verdicts); the point's exit status. */
int point_exec(profile_t *p, const point_spec_t *spec, point_t *pt);
void point_free(point_t *pt);
/* The path of the point's surge summary (<dir>/<stem>_surge.json); malloc'd, NULL on OOM. */
char *point_summary_path(const point_t *pt);
/* SIGINT/SIGTERM came: no further point should start. */
bool run_interrupted(void);
const char *run_interrupt_name(void); /* "SIGINT" or "SIGTERM": what interrupted the run; NULL when nothing did */
/* The pause between points, cut short by SIGINT. */
void run_cooldown(double s);

/* sweep.c: what the drivers share. */
int points_worse(int a, int b); /* the exit status that wins between two points' */
void points_subdir(char *buf, size_t cap, bool closed, double value, const char *prefix);
struct sg_point_row;
void points_row(struct sg_point_row *row, const point_t *pt, int code);
/* <stem>.json ({key: header, rows_key: [rows]}) and <stem>.csv in the artifact directory; header is borrowed. */
int points_write(const profile_t *p, const char *stem, const char *key, json_t *header, const char *rows_key,
                 const struct sg_point_row *rows, size_t n);

/* search.c: the percentile checks every point counts live (after probe_begin on a probe), and their counts by second
 * once the workers have stopped; from those, how clustered each check's wrong-side requests were (disp[i] per --slo
 * check, 1 where it cannot be told: docs/capacity.md, "Clustered evidence"). */
void bounds_begin(profile_t *p, point_t *pt);
void bounds_end(profile_t *p, point_t *pt);
void point_dispersion(const point_t *pt, double *disp);
/* search.c: a probe's look at its workers (every 20 ms while the point runs) and its set-up. */
void probe_begin(profile_t *p, point_t *pt);
void probe_look(profile_t *p, point_t *pt, int64_t now);
void probe_end(profile_t *p, point_t *pt);

/* stable.c: stability windows (--measurement-interval). stab_look judges the windows complete so far (every look
 * while the point runs) and stops the run once three agree; stab_finish, after the join, judges the rest, makes the
 * point's metrics those of the three windows reported and says so (EXIT_OK or EXIT_NOT_STABLE); stab_json is the
 * summary's "stability" object as the text of a JSON object (malloc'd; NULL without windows). */
stab_t *stab_new(const sg_config_t *cfg);
void stab_free(stab_t *s);
void stab_look(profile_t *p, point_t *pt);
bool stab_stopped(const stab_t *s);
int stab_finish(profile_t *p, point_t *pt);
char *stab_json(const stab_t *s);

/* How many workers a point's load has room for (each needs a slot, an in-flight allowance, a connection). */
unsigned point_worker_count(const sg_config_t *cfg);

/* run_dist.c: a run over several processes. Each returns an exit status unless it says otherwise. */
int dist_prepare(profile_t *p); /* which rank we are (flags, launcher); refuses what cannot be spread */
int dist_join(profile_t *p);    /* meet the other ranks through rank 0; this rank's share of the streams */
int dist_start(profile_t *p, int64_t *start_ns);            /* the shared start instant on our clock: 0, or -1 */
bool dist_tick(profile_t *p, bool interrupted);             /* during the run: true when every rank must stop now */
int dist_finish(profile_t *p, const point_t *pt, int code); /* results to rank 0, or gathered and merged */

/* The drivers (sweep.c, search.c). Each returns the run's exit status. */
int sweep_main(profile_t *p);
int search_main(profile_t *p);
/* The search with its probes run by exec instead of point_exec: a test's simulated server fills pt->merged (and
 * pt->duration_s, pt->probe's flags) and returns the point's exit status, so the search's decisions can be checked
 * against a known answer without a real one. */
typedef int (*search_exec_fn)(profile_t *p, const point_spec_t *spec, point_t *pt);
int search_with(profile_t *p, search_exec_fn exec);
int multirun_main(profile_t *p); /* multirun.c: --num-profile-runs N */
/* One load point (NULL: the configuration's) as a multi-run under <artifact dir>/<prefix>; each run's row into
 * rows (num_profile_runs of them, or NULL); *agg_out the aggregate written (a new reference) or NULL. */
int multirun_at(profile_t *p, const char *prefix, const point_spec_t *load, struct sg_point_row *rows, size_t *n_rows,
                bool *interrupted, json_t **agg_out);

#endif
