/*
 * Integer-to-text formatting for the large per-request exports (reclog.c's surge JSONL, export_aiperf.c's AIPerf
 * JSONL): numbers written straight into an output buffer from integers with a two-digit table. printf per field
 * was most of the export's user CPU at a million records. Internal to metrics/.
 */
#ifndef SG_NUMFMT_H
#define SG_NUMFMT_H

#include <stdint.h>
#include <string.h>

static const char sg_digits2[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                    "8081828384858687888990919293949596979899";

static const uint64_t sg_pow10_tab[20] = {1ull,
                                          10ull,
                                          100ull,
                                          1000ull,
                                          10000ull,
                                          100000ull,
                                          1000000ull,
                                          10000000ull,
                                          100000000ull,
                                          1000000000ull,
                                          10000000000ull,
                                          100000000000ull,
                                          1000000000000ull,
                                          10000000000000ull,
                                          100000000000000ull,
                                          1000000000000000ull,
                                          10000000000000000ull,
                                          100000000000000000ull,
                                          1000000000000000000ull,
                                          10000000000000000000ull};

/* Decimal digits of u (1 for 0): log10 from the bit length (1233/4096 ~ log10(2)), corrected by one compare
 * instead of a loop over the powers of ten. */
static inline unsigned sg_dec_len(uint64_t u)
{
    u |= 1; /* 0 has one digit; setting bit 0 changes no other number's count (powers of ten are even) */
    unsigned t = ((unsigned)(64 - __builtin_clzll(u)) * 1233u) >> 12;
    return t - (u < sg_pow10_tab[t]) + 1;
}

/* The n low digits of u (u < 10^n) at p[0..n), two at a time from the last. */
static inline void sg_put_digits(char *p, uint64_t u, unsigned n)
{
    char *t = p + n;
    /* Above 8 digits, blocks of 8 split off with one 64-bit division: the rest is 32-bit arithmetic, cheaper than
     * a 64-bit division by 100 per pair (relative times in ns have 9 to 12 digits). */
    while (n > 8) {
        uint32_t lo = (uint32_t)(u % 100000000u);
        u /= 100000000u;
        uint32_t a = lo / 10000, b = lo % 10000;
        memcpy(t - 2, sg_digits2 + (b % 100) * 2, 2);
        memcpy(t - 4, sg_digits2 + (b / 100) * 2, 2);
        memcpy(t - 6, sg_digits2 + (a % 100) * 2, 2);
        memcpy(t - 8, sg_digits2 + (a / 100) * 2, 2);
        t -= 8;
        n -= 8;
    }
    uint32_t v = (uint32_t)u; /* n <= 8: u < 10^8 */
    while (n >= 2) {
        unsigned d = (v % 100) * 2;
        v /= 100;
        memcpy(t - 2, sg_digits2 + d, 2);
        t -= 2;
        n -= 2;
    }
    if (n)
        *--t = (char)('0' + v);
}

/* u in decimal at p; returns the end. At most 20 bytes. Written in place from the last digit: a memcpy of a
 * variable length from a scratch buffer was a libc call per number (1.4% of the whole process). Most numbers in a
 * line (status, token counts, worker) are below 1000: those take no division at all. */
static inline char *sg_put_u64(char *p, uint64_t u)
{
    if (u < 10) {
        *p = (char)('0' + u);
        return p + 1;
    }
    if (u < 100) {
        memcpy(p, sg_digits2 + u * 2, 2);
        return p + 2;
    }
    if (u < 1000) {
        unsigned h = (unsigned)u / 100;
        p[0] = (char)('0' + h);
        memcpy(p + 1, sg_digits2 + ((unsigned)u - h * 100) * 2, 2);
        return p + 3;
    }
    unsigned n = sg_dec_len(u);
    sg_put_digits(p, u, n);
    return p + n;
}

/* At most 21 bytes. */
static inline char *sg_put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return sg_put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return sg_put_u64(p, (uint64_t)v);
}

/*
 * v / 10^decimals in fixed point, from integers: exact (no double rounding) and much cheaper than printf's %f,
 * which matters for token_times_ms (one number per token, millions of tokens). At most 23 bytes.
 * pow10 is 10^decimals.
 */
static inline char *sg_put_fixed(char *p, int64_t v, unsigned decimals, uint64_t pow10)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        *p++ = '-';
    p = sg_put_u64(p, u / pow10);
    *p++ = '.';
    sg_put_digits(p, u % pow10, decimals);
    return p + decimals;
}

/* A constant string literal, copied with a size the compiler knows. */
#define SG_PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

#endif
