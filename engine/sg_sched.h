/*
 * Arrival schedules, as pure functions of (seed, worker, time): no clocks, no I/O, so their statistics are
 * unit-tested directly.
 *
 * Open loop with W workers at a total rate R (W counts every worker of every rank of a multi-process run: each
 * worker has a global index, and the split below is the same whether they run in one process or in many).
 * Poisson: every worker draws the one global sequence of exponential gaps at R from the run's seed and keeps
 * arrivals i, i + W, i + 2W, ... (as gamma's, below), so a seed gives the same arrivals whatever W is.
 * Constant: worker i's k-th arrival is at start + (i + k*W)/R, computed from the index so rounding never
 * accumulates and the W streams interleave into one evenly spaced stream.
 * Gamma (--request-distribution gamma, vLLM's --burstiness k): gaps ~ Gamma(shape k, scale 1/(k R)), so the mean
 * rate is R and the gaps' coefficient of variation is 1/sqrt(k) (k = 1 is Poisson, below 1 burstier, above 1
 * smoother). W gamma streams at R/W do not superpose into a gamma stream at R, so every worker draws the one
 * global sequence (the same seed for all) and keeps arrivals i, i + W, i + 2W, ...: the aggregate is exactly
 * the gamma renewal process at R, at the cost of each worker drawing every gap.
 * An infinite rate (--request-rate inf) puts every arrival at the start instant, whatever the kind.
 * Fixed (trace replay): entry i of a sorted list of offsets goes to worker i % W, at start + offset / speedup;
 * after a worker's last entry the next arrival is INT64_MAX.
 * Ramp (--ramp-up-strategy, --request-rate-ramp-duration; docs/scheduling.md): an inhomogeneous process whose
 * rate goes from r0 to r1 over D seconds (linearly, or exponentially: r0 (r1/r0)^(t/D)), then stays at r1. Drawn
 * exactly by time-rescaling: the unit-rate sequence of the base kind (Poisson: sums of Exp(1) gaps; gamma: sums
 * of Gamma(k, 1/k) gaps; constant: 0, 1, 2, ...) is mapped through the inverse of the cumulative intensity
 * Lambda(t) = integral of the rate from 0 to t, which is closed-form for both shapes. One global sequence, each
 * worker keeping arrivals i, i + W, ... as above.
 */
#ifndef SG_SCHED_H
#define SG_SCHED_H

#include "sg_common.h"
#include "sg_workload.h"

typedef enum { SG_SCHED_POISSON = 0, SG_SCHED_CONSTANT = 1, SG_SCHED_FIXED = 2, SG_SCHED_GAMMA = 3 } sg_sched_kind_t;
typedef enum { SG_RAMP_NONE = 0, SG_RAMP_LINEAR = 1, SG_RAMP_EXPONENTIAL = 2 } sg_ramp_t;

typedef struct {
    sg_sched_kind_t kind;
    double rate;      /* total requests/s over all workers */
    unsigned index;   /* this worker */
    unsigned n;       /* workers */
    int64_t start_ns; /* the shared start instant */
    uint64_t k;       /* arrivals produced so far */
    int64_t last_ns;
    sg_rng_t rng;
    double shape;         /* gamma: k (--burstiness) */
    uint64_t g;           /* gamma: arrivals of the global sequence drawn so far */
    double t_s;           /* gamma: the global sequence's time, s from the start */
    const int64_t *times; /* fixed: offsets from the start, ns, non-decreasing */
    size_t n_times;
    double speedup;
    /* ramp (ramp != SG_RAMP_NONE): the rate goes from r0 to r1 (= rate) over ramp_s seconds */
    sg_ramp_t ramp;
    double r0, ramp_s;
    double lam_end; /* Lambda(ramp_s): the expected arrivals of the ramp */
} sg_sched_t;

void sg_sched_init(sg_sched_t *s, sg_sched_kind_t kind, double rate, unsigned index, unsigned n, uint64_t seed,
                   int64_t start_ns);
/* Gamma arrivals at total rate `rate` with shape k > 0 (seed: the run's; every worker the same). */
void sg_sched_init_gamma(sg_sched_t *s, double rate, double shape, unsigned index, unsigned n, uint64_t seed,
                         int64_t start_ns);
/* One Gamma(shape, 1) draw (Marsaglia and Tsang), for the schedule and its tests. */
double sg_gamma_draw(sg_rng_t *r, double shape);
/* A fixed schedule: times (offsets in ns, non-decreasing, shared read-only) is not copied. speedup > 0. */
void sg_sched_init_fixed(sg_sched_t *s, const int64_t *times, size_t n_times, double speedup, unsigned index,
                         unsigned n, int64_t start_ns);
/* A ramp from r0 to r1 over ramp_s seconds, then r1; kind is the unit sequence (POISSON, CONSTANT or GAMMA, with
 * shape). r1 > 0; r0 >= 0 (> 0 for SG_RAMP_EXPONENTIAL); ramp_s > 0. */
void sg_sched_init_ramp(sg_sched_t *s, sg_sched_kind_t kind, double shape, sg_ramp_t ramp, double r0, double r1,
                        double ramp_s, unsigned index, unsigned n, uint64_t seed, int64_t start_ns);
/* The ramp's cumulative intensity Lambda(t) (expected arrivals in [0, t], t in s) and its inverse. */
double sg_ramp_cumulative(const sg_sched_t *s, double t);
double sg_ramp_inverse(const sg_sched_t *s, double u);
/* The ramp's duration that makes its expected arrivals n: the whole run of a count-bounded run is the ramp. */
double sg_ramp_duration_for(sg_ramp_t ramp, double r0, double r1, double n);
/* The next arrival time (absolute ns); non-decreasing; INT64_MAX when a fixed schedule has no more for us. */
int64_t sg_sched_next(sg_sched_t *s);

#endif
