#include "sg_sched.h"

#include <math.h>

void sg_sched_init(sg_sched_t *s, sg_sched_kind_t kind, double rate, unsigned index, unsigned n, uint64_t seed,
                   int64_t start_ns)
{
    s->kind = kind;
    s->rate = rate;
    s->index = index;
    s->n = n ? n : 1;
    s->start_ns = start_ns;
    s->k = 0;
    s->last_ns = start_ns;
    s->times = NULL;
    s->n_times = 0;
    s->speedup = 1;
    sg_rng_seed(&s->rng, seed, 0x5eed0000ULL + index);
}

void sg_sched_init_fixed(sg_sched_t *s, const int64_t *times, size_t n_times, double speedup, unsigned index,
                         unsigned n, int64_t start_ns)
{
    sg_sched_init(s, SG_SCHED_FIXED, 0, index, n, 0, start_ns);
    s->times = times;
    s->n_times = n_times;
    s->speedup = speedup > 0 ? speedup : 1;
}

int64_t sg_sched_next(sg_sched_t *s)
{
    if (isinf(s->rate) && s->kind != SG_SCHED_FIXED) {
        s->last_ns = s->start_ns; /* --request-rate inf: every arrival at the start instant */
    } else if (s->kind == SG_SCHED_FIXED) {
        uint64_t global = (uint64_t)s->index + s->k * s->n;
        if (global >= s->n_times)
            return INT64_MAX;
        s->last_ns = s->start_ns + (int64_t)llround((double)s->times[global] / s->speedup);
    } else if (s->kind == SG_SCHED_CONSTANT) {
        double global = (double)s->index + (double)s->k * s->n;
        s->last_ns = s->start_ns + (int64_t)llround(global * 1e9 / s->rate);
    } else {
        s->last_ns += (int64_t)llround(sg_rng_exp(&s->rng, s->rate / s->n) * 1e9);
    }
    s->k++;
    return s->last_ns;
}
