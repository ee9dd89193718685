/*
 * --prefix-cache: what a server's prefix cache would find for each prompt, counted in whole words. Every prompt
 * leaves the hash of each of its word prefixes in one set shared by all workers (a lock: this is a test server's
 * option, not its fast path); a new prompt's cached count is its longest word prefix already in the set. Since
 * every prefix of a stored prefix is stored too, the first prefix not found ends the match.
 */
#include "mock_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct sg_mock_pcache {
    pthread_mutex_t mu;
    uint64_t *keys; /* 0: empty slot (a hash of 0 is stored as 1) */
    size_t cap, n;
};

sg_mock_pcache_t *sg_mock_pcache_new(void)
{
    sg_mock_pcache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cap = 1024;
    c->keys = calloc(c->cap, sizeof *c->keys);
    if (!c->keys) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void sg_mock_pcache_free(sg_mock_pcache_t *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->keys);
    free(c);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x ? x : 1;
}

/* Find k; insert it when absent and insert is set (growing at half full). Whether it was there. */
static bool probe(sg_mock_pcache_t *c, uint64_t k, bool insert)
{
    if (insert && c->n * 2 >= c->cap) {
        size_t ncap = c->cap * 2;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        if (!nk)
            return false; /* out of memory: this prefix is not remembered */
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->keys[i])
                continue;
            size_t j = mix(c->keys[i]) & (ncap - 1);
            while (nk[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = c->keys[i];
        }
        free(c->keys);
        c->keys = nk;
        c->cap = ncap;
    }
    size_t j = mix(k) & (c->cap - 1);
    while (c->keys[j]) {
        if (c->keys[j] == k)
            return true;
        j = (j + 1) & (c->cap - 1);
    }
    if (insert) {
        c->keys[j] = k;
        c->n++;
    }
    return false;
}

uint64_t sg_mock_pcache_lookup(sg_mock_pcache_t *c, const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL, cached = 0;
    bool matching = true;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < len;) {
        while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
            i++;
        if (i == len)
            break;
        while (i < len && !(p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
            h = (h ^ (unsigned char)p[i++]) * 0x100000001b3ULL;
        h = (h ^ ' ') * 0x100000001b3ULL; /* the word's end: "ab c" and "a bc" differ */
        uint64_t k = mix(h);
        bool seen = probe(c, k, true);
        if (matching && seen)
            cached++;
        else
            matching = false;
    }
    pthread_mutex_unlock(&c->mu);
    return cached;
}
