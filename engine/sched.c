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
    s->ramp = SG_RAMP_NONE;
    s->r0 = s->ramp_s = s->lam_end = 0;
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

void sg_sched_init_ramp(sg_sched_t *s, sg_sched_kind_t kind, double shape, sg_ramp_t ramp, double r0, double r1,
                        double ramp_s, unsigned index, unsigned n, uint64_t seed, int64_t start_ns)
{
    if (kind == SG_SCHED_GAMMA)
        sg_sched_init_gamma(s, r1, shape, index, n, seed, start_ns);
    else
        sg_sched_init(s, kind, r1, index, n, seed, start_ns);
    s->ramp = ramp;
    s->r0 = r0;
    s->ramp_s = ramp_s;
    s->lam_end = sg_ramp_cumulative(s, ramp_s);
}

/* The ramp's shape constant: linear, the rate's slope (r1 - r0) / D; exponential, the growth k = ln(r1/r0) / D. */
static double ramp_k(const sg_sched_t *s)
{
    return s->ramp == SG_RAMP_LINEAR ? (s->rate - s->r0) / s->ramp_s : log(s->rate / s->r0) / s->ramp_s;
}

double sg_ramp_cumulative(const sg_sched_t *s, double t)
{
    if (t <= 0)
        return 0;
    double k = ramp_k(s), tr = t < s->ramp_s ? t : s->ramp_s, lam;
    if (s->ramp == SG_RAMP_LINEAR) /* rate r0 + k t */
        lam = s->r0 * tr + 0.5 * k * tr * tr;
    else /* rate r0 e^(k t) */
        lam = k == 0 ? s->r0 * tr : s->r0 * expm1(k * tr) / k;
    return t > s->ramp_s ? lam + s->rate * (t - s->ramp_s) : lam;
}

double sg_ramp_inverse(const sg_sched_t *s, double u)
{
    if (u <= 0)
        return 0;
    if (u >= s->lam_end) /* past the ramp: the steady rate */
        return s->ramp_s + (u - s->lam_end) / s->rate;
    double k = ramp_k(s);
    if (s->ramp == SG_RAMP_LINEAR) {
        /* r0 t + k t^2 / 2 = u; the root written 2u / (r0 + sqrt(r0^2 + 2 k u)) has no cancellation, and within the
         * ramp r0^2 + 2 k u lies between r0^2 and r1^2, so the denominator is positive for u > 0 (r1 > 0) */
        double disc = s->r0 * s->r0 + 2 * k * u;
        return 2 * u / (s->r0 + sqrt(disc > 0 ? disc : 0));
    }
    return k == 0 ? u / s->r0 : log1p(k * u / s->r0) / k;
}

double sg_ramp_duration_for(sg_ramp_t ramp, double r0, double r1, double n)
{
    /* Lambda(D) = n: linear D (r0 + r1) / 2 = n; exponential D (r1 - r0) / ln(r1 / r0) = n */
    if (ramp == SG_RAMP_LINEAR || r0 == r1)
        return 2 * n / (r0 + r1);
    return n * log(r1 / r0) / (r1 - r0);
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

/* A ramp's next arrival: the unit-rate global sequence up to this worker's next one, through Lambda's inverse. */
static void ramp_next(sg_sched_t *s)
{
    uint64_t want = s->k * s->n + s->index;
    if (s->kind == SG_SCHED_CONSTANT) {
        s->t_s = (double)want;
    } else {
        while (s->g <= want) {
            s->t_s += s->kind == SG_SCHED_GAMMA ? sg_gamma_draw(&s->rng, s->shape) / s->shape : sg_rng_exp(&s->rng, 1);
            s->g++;
        }
    }
    s->last_ns = s->start_ns + (int64_t)llround(sg_ramp_inverse(s, s->t_s) * 1e9);
}

int64_t sg_sched_next(sg_sched_t *s)
{
    if (s->ramp != SG_RAMP_NONE) {
        ramp_next(s);
    } else if (isinf(s->rate) && s->kind != SG_SCHED_FIXED) {
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
