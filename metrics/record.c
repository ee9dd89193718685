#include "sg_record.h"

const char *sg_err_class_name(sg_err_class_t c)
{
    static const char *const names[SG_ERRC__COUNT] = {
        [SG_ERRC_NONE] = "none",
        [SG_ERRC_CONNECT] = "connect",
        [SG_ERRC_TLS] = "tls",
        [SG_ERRC_HTTP] = "http",
        [SG_ERRC_PROTOCOL] = "protocol",
        [SG_ERRC_DISCONNECT] = "disconnect",
        [SG_ERRC_TIMEOUT] = "timeout",
        [SG_ERRC_CANCELLED] = "cancelled",
        [SG_ERRC_SERVER] = "server",
        [SG_ERRC_STREAM_RESET] = "stream_reset",
        [SG_ERRC_GRPC] = "grpc",
        [SG_ERRC_SESSION] = "session",
        [SG_ERRC_CANCEL_TEST] = "cancelled_by_test",
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

void sg_record_settle_osl(sg_record_t *r)
{
    if (r->err_class != SG_ERRC_NONE)
        return;
    if (r->osl_server >= 0) {
        r->osl = (uint32_t)r->osl_server;
        r->osl_source = SG_OSL_USAGE;
    } else if (r->osl_tokenizer >= 0) {
        r->osl = (uint32_t)r->osl_tokenizer;
        r->osl_source = SG_OSL_TOKENIZER;
    } else {
        r->osl = r->streaming ? r->content_events : (r->content_events ? 1 : 0);
        r->osl_source = SG_OSL_EVENTS;
    }
}
