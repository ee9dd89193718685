/*
 * surge: definitions every module shares. No module-specific types here.
 *
 * Errors are negative ints. Near syscalls they are -errno; the SG_E* codes below sit far below any errno so
 * the two never collide.
 */
#ifndef SG_COMMON_H
#define SG_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SG_WUR __attribute__((warn_unused_result))
#define SG_LIKELY(x) __builtin_expect(!!(x), 1)
#define SG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SG_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define SG_CACHELINE 64

enum {
    SG_EPROTO = -10000,      /* the peer sent bytes that break the protocol */
    SG_ETOOBIG = -10001,     /* a peer-controlled size went past our hard cap */
    SG_EINCOMPLETE = -10002, /* input ended inside a message */
    SG_EJSON = -10003,       /* malformed JSON */
    SG_EABORT = -10004,      /* a callback asked the parser to stop */
    SG_ENOMEM = -10005,
    SG_EINVAL = -10006, /* bad argument from our own caller */
};

/* A borrowed slice of bytes: never owns memory. */
typedef struct {
    const char *base;
    size_t len;
} sg_slice_t;

/* CLOCK_MONOTONIC in integer nanoseconds: the only clock the engine and metrics use. */
static inline int64_t sg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "dir/name", malloc'd; NULL on OOM. */
char *sg_path_join(const char *dir, const char *name);

/* surge's version ("0.1.0"), as `surge --version` prints it and the files record it. */
const char *sg_version(void);

/* A wall-clock time (ns since the epoch) as ISO 8601 UTC with microseconds, "2026-11-28T03:14:11.123456Z", into
 * buf (cap >= 32). Returns buf, or NULL (buf empty) when the time cannot be written. */
char *sg_iso_utc(char *buf, size_t cap, int64_t wall_ns);

/* Human-readable text for an SG_E* code or a -errno. Static storage; never NULL. */
const char *sg_strerror(int err);

#endif
