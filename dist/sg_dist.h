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

/* ---------------- merge ---------------- */

/* Exit statuses a merge shares with a run (engine/run_int.h). */
#define SG_MERGE_REQUEST_ERRORS 1
#define SG_MERGE_SLO_FAILED 4
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
