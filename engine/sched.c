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
    s->shape = 1;
    s->g = 0;
    s->t_s = 0;
    /* Poisson: one stream for all workers, as gamma's (below): the global sequence whatever the worker count */
    sg_rng_seed(&s->rng, seed, 0x5eed0000ULL);
}

void sg_sched_init_fixed(sg_sched_t *s, const int64_t *times, size_t n_times, double speedup, unsigned index,
                         unsigned n, int64_t start_ns)
{
    sg_sched_init(s, SG_SCHED_FIXED, 0, index, n, 0, start_ns);
    s->times = times;
    s->n_times = n_times;
    s->speedup = speedup > 0 ? speedup : 1;
}

void sg_sched_init_gamma(sg_sched_t *s, double rate, double shape, unsigned index, unsigned n, uint64_t seed,
                         int64_t start_ns)
{
    sg_sched_init(s, SG_SCHED_GAMMA, rate, index, n, seed, start_ns);
    s->shape = shape > 0 ? shape : 1;
    s->g = 0;
    s->t_s = 0;
    sg_rng_seed(&s->rng, seed, 0x6a33a000ULL); /* one stream for all workers: the global sequence */
}

/*
 * Marsaglia and Tsang (2000), "A simple method for generating gamma variables": for a >= 1, d = a - 1/3,
 * c = 1/sqrt(9d), v = (1 + c x)^3 with x standard normal, accepted by a squeeze or its log test; d v is
 * Gamma(a, 1). For a < 1, Gamma(a + 1, 1) times U^(1/a).
 */
double sg_gamma_draw(sg_rng_t *r, double a)
{
    double boost = 1;
    if (a < 1) {
        boost = pow(sg_rng_uniform(r), 1 / a);
        a += 1;
    }
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x, v;
        do {
            x = sg_rng_normal(r);
            v = 1 + c * x;
        } while (v <= 0);
        v = v * v * v;
        double u = sg_rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v * boost;
    }
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
    } else if (s->kind == SG_SCHED_GAMMA || s->kind == SG_SCHED_POISSON) {
        /* draw the global sequence up to this worker's next arrival (global index k*n + index) */
        uint64_t want = s->k * s->n + s->index;
        if (s->kind == SG_SCHED_POISSON) {
            while (s->g <= want) {
                s->t_s += sg_rng_exp(&s->rng, s->rate);
                s->g++;
            }
        } else {
            double scale = 1 / (s->shape * s->rate);
            while (s->g <= want) {
                s->t_s += sg_gamma_draw(&s->rng, s->shape) * scale;
                s->g++;
            }
        }
        s->last_ns = s->start_ns + (int64_t)llround(s->t_s * 1e9);
    } else if (s->kind == SG_SCHED_CONSTANT) {
        double global = (double)s->index + (double)s->k * s->n;
        s->last_ns = s->start_ns + (int64_t)llround(global * 1e9 / s->rate);
    }
    s->k++;
    return s->last_ns;
}
