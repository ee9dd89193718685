/*
 * Arrival schedules, as pure functions of (seed, worker, time): no clocks, no I/O, so their statistics are
 * unit-tested directly.
 *
 * Open loop with W workers at a total rate R: worker i draws its own stream at R/W. Poisson: exponential gaps
 * from a seed derived from the run seed and i (the superposition of W Poisson streams at R/W is Poisson at R).
 * Constant: worker i's k-th arrival is at start + (i + k*W)/R, computed from the index so rounding never
 * accumulates and the W streams interleave into one evenly spaced stream.
 */
#ifndef SG_SCHED_H
#define SG_SCHED_H

#include "sg_common.h"
#include "sg_workload.h"

typedef enum { SG_SCHED_POISSON = 0, SG_SCHED_CONSTANT = 1 } sg_sched_kind_t;

typedef struct {
    sg_sched_kind_t kind;
    double rate;      /* total requests/s over all workers */
    unsigned index;   /* this worker */
    unsigned n;       /* workers */
    int64_t start_ns; /* the shared start instant */
    uint64_t k;       /* arrivals produced so far */
    int64_t last_ns;
    sg_rng_t rng;
} sg_sched_t;

void sg_sched_init(sg_sched_t *s, sg_sched_kind_t kind, double rate, unsigned index, unsigned n, uint64_t seed,
                   int64_t start_ns);
/* The next arrival time (absolute ns); non-decreasing. */
int64_t sg_sched_next(sg_sched_t *s);

#endif
