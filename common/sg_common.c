#include "sg_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SURGE_VERSION
#define SURGE_VERSION "dev"
#endif

const char *sg_version(void)
{
    return SURGE_VERSION;
}

char *sg_iso_utc(char *buf, size_t cap, int64_t wall_ns)
{
    if (cap)
        buf[0] = '\0';
    time_t s = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    if (cap < 32 || wall_ns <= 0 || !gmtime_r(&s, &tm))
        return NULL;
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0)
        return NULL;
    snprintf(buf + n, cap - n, ".%06dZ", (int)(wall_ns % 1000000000 / 1000));
    return buf;
}

const char *sg_strerror(int err)
{
    switch (err) {
    case SG_EPROTO:
        return "protocol error";
    case SG_ETOOBIG:
        return "message larger than the configured limit";
    case SG_EINCOMPLETE:
        return "input ended inside a message";
    case SG_EJSON:
        return "malformed JSON";
    case SG_EABORT:
        return "aborted by callback";
    case SG_ENOMEM:
        return "out of memory";
    case SG_EINVAL:
        return "invalid argument";
    case -10100: /* SG_ETLS (transports/sg_tls.h): sg_tls_error() has the detail */
        return "TLS failure";
    case -10101: /* SG_ETLS_CLOSED */
        return "TLS connection closed by the peer (close_notify)";
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

char *sg_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}
