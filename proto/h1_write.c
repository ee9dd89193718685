/* HTTP/1.1 request writer: renders head + body once, before the run, into one buffer. */
#include "sg_h1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool header_line_ok(const char *h)
{
    const char *colon = strchr(h, ':');
    if (!colon || colon == h)
        return false;
    for (const char *p = h; p < colon; p++) {
        /* token characters only in the name */
        unsigned char c = (unsigned char)*p;
        if (c <= 32 || c >= 127 || strchr("()<>@,;:\\\"/[]?={}", c))
            return false;
    }
    for (const char *p = h; *p; p++)
        if (*p == '\r' || *p == '\n')
            return false;
    return true;
}

static bool has_header(const char *const *headers, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; headers && headers[i]; i++)
        if (strncasecmp(headers[i], name, n) == 0 && headers[i][n] == ':')
            return true;
    return false;
}

ssize_t sg_h1_write_request(const sg_h1_req_spec_t *spec, char **out)
{
    *out = NULL;
    if (!spec->method || !spec->host || !spec->path || spec->path[0] != '/')
        return SG_EINVAL;
    size_t need = strlen(spec->method) + strlen(spec->path) + strlen(spec->host) + 128 + spec->body_len;
    if (spec->content_type)
        need += strlen(spec->content_type) + 16;
    if (spec->accept)
        need += strlen(spec->accept) + 16;
    for (size_t i = 0; spec->headers && spec->headers[i]; i++) {
        if (!header_line_ok(spec->headers[i]))
            return SG_EINVAL;
        need += strlen(spec->headers[i]) + 2;
    }
    char *buf = malloc(need);
    if (!buf)
        return SG_ENOMEM;
    size_t off = 0;
#define PUT(...) off += (size_t)snprintf(buf + off, need - off, __VA_ARGS__)
    PUT("%s %s HTTP/1.1\r\n", spec->method, spec->path);
    if (!has_header(spec->headers, "Host"))
        PUT("Host: %s\r\n", spec->host);
    if (spec->content_type && !has_header(spec->headers, "Content-Type"))
        PUT("Content-Type: %s\r\n", spec->content_type);
    if (spec->accept && !has_header(spec->headers, "Accept"))
        PUT("Accept: %s\r\n", spec->accept);
    for (size_t i = 0; spec->headers && spec->headers[i]; i++)
        PUT("%s\r\n", spec->headers[i]);
    if (spec->body)
        PUT("Content-Length: %zu\r\n", spec->body_len);
    PUT("\r\n");
#undef PUT
    if (spec->body_len)
        memcpy(buf + off, spec->body, spec->body_len);
    off += spec->body_len;
    *out = buf;
    return (ssize_t)off;
}
