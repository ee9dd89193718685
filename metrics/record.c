#include "sg_record.h"

const char *sg_err_class_name(sg_err_class_t c)
{
    static const char *const names[SG_ERRC__COUNT] = {
        [SG_ERRC_NONE] = "none",       [SG_ERRC_CONNECT] = "connect",     [SG_ERRC_TLS] = "tls",
        [SG_ERRC_HTTP] = "http",       [SG_ERRC_PROTOCOL] = "protocol",   [SG_ERRC_DISCONNECT] = "disconnect",
        [SG_ERRC_TIMEOUT] = "timeout", [SG_ERRC_CANCELLED] = "cancelled", [SG_ERRC_SERVER] = "server",
    };
    return (unsigned)c < SG_ERRC__COUNT ? names[c] : "unknown";
}

const char *sg_osl_source_name(sg_osl_source_t s)
{
    switch (s) {
    case SG_OSL_USAGE:
        return "usage";
    case SG_OSL_TOKENIZER:
        return "tokenizer";
    case SG_OSL_EVENTS:
        return "events";
    }
    return "unknown";
}
