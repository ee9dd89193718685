#include "sg_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
