/*
 * One run spread over several processes (ranks), on one machine or many, launched by the engines users already
 * have (Kubernetes Indexed Jobs, Slurm, mpirun), and the merge of their results (docs/distributed.md).
 *
 *   launch.c:  which rank this process is and how many there are, from flags or the launcher's environment;
 *   coord.c:   the coordinator connection: rank 0 listens, the others connect; hello, the global layout of
 *              worker streams, clock offsets, one start instant, heartbeats, stop, and the results sent back;
 *   merge.c:   several runs' artifact directories into one run's files (surge merge, and rank 0's last step);
 *   records_in.c: surge's per-request JSONL read back into records.
 */
#ifndef SG_DIST_H
#define SG_DIST_H

#include "sg_common.h"

/* ---------------- who we are ---------------- */

#define SG_DIST_PORT 29517 /* rank 0's default port */
#define SG_DIST_MAX_RANKS 1024

typedef struct {
    /* in: the flags (world 0 / rank -1: not given; coordinator "" : not given); out: resolved */
    unsigned world; /* 1: this process alone */
    int rank;
    char coordinator[300]; /* --coordinator as given */
    double timeout_s;      /* --coordinator-timeout: for the ranks to arrive, and for each step after */
    /* out */
    char host[256]; /* rank 0's host (name or address) */
    uint16_t port;
    char source[64];   /* where rank and world came from, for the messages */
    char missing[300]; /* when not empty: rank 0's address is unknown, and this says so (host is empty) */
} sg_dist_opts_t;

/* Rank, world and rank 0's address from the flags or the launcher's environment (launch.c). 0, or -1 with a
 * message naming what is missing. world == 1 afterwards means a plain single-process run. */
int sg_dist_resolve(sg_dist_opts_t *o, char *err, size_t errlen);

/* ---------------- the coordinator connection (coord.c) ---------------- */

typedef struct sg_coord sg_coord_t;

/*
 * Rank 0 listens and waits (up to timeout_s) for every other rank's hello; the others connect (retrying until
 * timeout_s) and say hello. A hello carries the rank's configuration (fingerprint: every setting that must agree,
 * as JSON text) and how many worker threads it would run. Rank 0 checks that the configurations agree and deals
 * out the worker streams: at most max_streams in all (0: no limit) and at least one per rank, each rank's a
 * contiguous range of global stream indices. 0, or -1 with err (the other ranks are told and stop too).
 */
int sg_dist_open(const sg_dist_opts_t *o, unsigned want_workers, unsigned max_streams, const char *fingerprint,
                 sg_coord_t **out, char *err, size_t errlen);
/* This rank's share: its worker count, its first global stream index and the total over every rank. */
void sg_dist_layout(const sg_coord_t *d, unsigned *workers, unsigned *stream_offset, unsigned *streams_total);
unsigned sg_dist_rank(const sg_coord_t *d);
unsigned sg_dist_world(const sg_coord_t *d);

/*
 * Once this rank's workers are ready: every rank tells rank 0, rank 0 measures each rank's clock offset to its
 * own (the exchange with the least round trip of several), picks one start instant on its CLOCK_REALTIME a little
 * ahead, and sends it to each rank corrected by its offset; each maps it once to its CLOCK_MONOTONIC, returned in
 * *start_mono_ns. 0, or -1 with err (a rank lost: the others stop too).
 */
int sg_dist_start(sg_coord_t *d, int64_t *start_mono_ns, char *err, size_t errlen);

/*
 * While the run is on, every controller tick: heartbeats out, messages in. local_stop: this rank stops early
 * (interrupted); rank 0 then stops every rank. Returns 1 when this rank must stop now (another rank stopped or
 * was lost: why says which), else 0.
 */
int sg_dist_tick(sg_coord_t *d, bool local_stop, const char *local_why, char *why, size_t whylen);

/*
 * After the run. A rank other than 0 sends its files (paths in dir) and waits for rank 0's verdict: 0 with the
 * merged run's exit status in *final_code, or -1 with err (rank 0 lost). Rank 0 receives every live rank's files
 * into base_dir/rank<R>/ (its own are there already); dirs[r] is that directory, or NULL for a rank whose results
 * did not come; 0, or -1 with err.
 */
int sg_dist_send_results(sg_coord_t *d, const char *dir, const char *const *files, size_t n_files, int code,
                         int *final_code, char *err, size_t errlen);
int sg_dist_gather(sg_coord_t *d, const char *base_dir, char **dirs, char *err, size_t errlen);
/* Rank 0: the merged exit status to every rank. */
void sg_dist_done(sg_coord_t *d, int code);
/* Whether a rank was lost or stopped the run early (rank 0, after the run), and why. */
bool sg_dist_stopped_early(const sg_coord_t *d, char *why, size_t whylen);
/* This rank's part for its own summary ({"dist": {...}}), and rank 0's view of every rank ({"ranks": ...}). */
char *sg_dist_rank_json(const sg_coord_t *d);
char *sg_dist_ranks_json(const sg_coord_t *d);
void sg_dist_free(sg_coord_t *d);

/* ---------------- merge ---------------- */

/* Exit statuses a merge shares with a run (engine/run_int.h). */
#define SG_MERGE_REQUEST_ERRORS 1
#define SG_MERGE_SLO_FAILED 4
#define SG_MERGE_SLO_INCONCLUSIVE 5
#define SG_MERGE_INTERRUPTED 130

typedef struct {
    const char *const *dirs; /* each one run's artifact directory */
    size_t n_dirs;
    const char *out_dir;    /* created when missing */
    bool quiet;             /* no table on stdout */
    bool interrupted;       /* the run as a whole was stopped early (a rank lost, an interrupt) */
    const char *extra_json; /* a JSON object whose members join the merged summary's (the ranks), or NULL */
} sg_merge_t;

/* Merge; the exit status a run with the merged results would have (0, SG_MERGE_*), or -1 with err. */
int sg_merge_run(const sg_merge_t *m, char *err, size_t errlen);
/* `surge merge DIR... -o OUT`: the process exit status. */
int sg_merge_main(int argc, char **argv);

#endif
