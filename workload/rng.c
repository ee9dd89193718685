/* Random numbers: splitmix64 to seed, xoshiro256** for the stream. Deterministic for (seed, stream). */
#include "sg_workload.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sg_rng_seed(sg_rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sg_rng_next(sg_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sg_rng_uniform(sg_rng_t *r)
{
    /* 53 random bits mapped to (0, 1]: never 0, so log() below is finite */
    return ((double)(sg_rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

double sg_rng_normal(sg_rng_t *r)
{
    /* Box-Muller; one of the pair is discarded to keep the stream stateless */
    double u1 = sg_rng_uniform(r), u2 = sg_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double sg_rng_exp(sg_rng_t *r, double rate)
{
    return -log(sg_rng_uniform(r)) / rate;
}
