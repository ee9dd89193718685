/* --local-address's parser (transports/tcp.c): lists, ranges, CIDR blocks of both families, and the mistakes it
 * names (a reversed range, a bad prefix, mixed families, duplicates, too many). */
#include "sg_tcp.h"
#include "test.h"

#include <stdlib.h>

/* The parse of spec as text "a,b,c" (or "ERR: message"). */
static char *parse(const char *spec)
{
    static char out[4096];
    sg_addr_t *v;
    size_t n;
    char err[256];
    if (sg_tcp_local_parse(spec, &v, &n, err, sizeof err) < 0) {
        snprintf(out, sizeof out, "ERR: %s", err);
        return out;
    }
    out[0] = 0;
    for (size_t i = 0; i < n && strlen(out) < sizeof out - 64; i++) {
        char ip[64];
        sg_addr_format_ip(&v[i], ip, sizeof ip);
        if (i)
            strcat(out, ",");
        strcat(out, ip);
    }
    free(v);
    return out;
}

#define CHECK_PARSE(spec, want)                                                                                        \
    do {                                                                                                               \
        const char *got_ = parse(spec);                                                                                \
        CHECK_EQ_STR(got_, strlen(got_), want);                                                                        \
    } while (0)

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int main(void)
{
    CHECK_PARSE("127.0.0.2", "127.0.0.2");
    CHECK_PARSE("127.0.0.2,127.0.0.3", "127.0.0.2,127.0.0.3");
    CHECK_PARSE("127.0.0.254-127.0.1.1", "127.0.0.254,127.0.0.255,127.0.1.0,127.0.1.1");
    CHECK_PARSE("127.0.0.5-127.0.0.5", "127.0.0.5");
    /* a CIDR block's host addresses: not the network's nor the broadcast below /31 */
    CHECK_PARSE("127.0.0.0/29", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6");
    CHECK_PARSE("127.0.0.5/29", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6");
    CHECK_PARSE("10.0.0.0/31", "10.0.0.0,10.0.0.1");
    CHECK_PARSE("10.0.0.7/32", "10.0.0.7");
    CHECK_PARSE("127.0.0.2,10.1.0.0/30,127.0.0.9-127.0.0.10", "127.0.0.2,10.1.0.1,10.1.0.2,127.0.0.9,127.0.0.10");
    CHECK_PARSE("::1", "::1");
    CHECK_PARSE("fd00::fe-fd00::101", "fd00::fe,fd00::ff,fd00::100,fd00::101");
    CHECK_PARSE("fd00::/126", "fd00::,fd00::1,fd00::2,fd00::3");
    /* 65,536 at most: a /16 is all of them, a /15 one too many */
    {
        sg_addr_t *v;
        size_t n;
        char err[256];
        CHECK(sg_tcp_local_parse("10.0.0.0/16", &v, &n, err, sizeof err) == 0 && n == 65534);
        free(v);
        CHECK(sg_tcp_local_parse("fd00::/112", &v, &n, err, sizeof err) == 0 && n == 65536);
        free(v);
        /* 65,534 + 2: exactly the most */
        CHECK(sg_tcp_local_parse("10.0.0.0/16,10.1.0.0/30", &v, &n, err, sizeof err) == 0 && n == 65536);
        free(v);
    }
    CHECK(strstr(parse("10.0.0.0/15"), "more than 65536 addresses"));
    CHECK(strstr(parse("10.0.0.0/8"), "more than 65536 addresses"));
    CHECK(strstr(parse("10.0.0.0-10.255.0.0"), "more than 65536 addresses"));
    CHECK(strstr(parse("fd00::-fd00::1:0:0"), "more than 65536 addresses"));
    CHECK(strstr(parse("10.0.0.0/16,10.1.0.0/29"), "more than 65536 addresses"));
    CHECK(strstr(parse("127.0.0.3-127.0.0.2"), "ends before it starts"));
    CHECK(strstr(parse("127.0.0.2-::1"), "not a range"));
    CHECK(strstr(parse("127.0.0.2-"), "not a range"));
    CHECK(strstr(parse("127.0.0.0/33"), "not a CIDR block"));
    CHECK(strstr(parse("127.0.0.0/"), "not a CIDR block"));
    CHECK(strstr(parse("127.0.0.0/2x"), "not a CIDR block"));
    CHECK(strstr(parse("::/129"), "not a CIDR block"));
    CHECK(strstr(parse("localhost"), "is not an IPv4 or IPv6 address"));
    CHECK(strstr(parse("127.0.0.256"), "is not an IPv4 or IPv6 address"));
    CHECK(strstr(parse(""), "empty item"));
    CHECK(strstr(parse("127.0.0.2,"), "empty item"));
    CHECK(strstr(parse(",127.0.0.2"), "empty item"));
    CHECK(strstr(parse("127.0.0.2,::1"), "one family"));
    CHECK(strstr(parse("127.0.0.2,127.0.0.1-127.0.0.3"), "127.0.0.2 is given twice"));
    CHECK(strstr(parse("127.0.0.0/30,127.0.0.1"), "127.0.0.1 is given twice"));
    CHECK(starts(parse("1.2.3.4"), "1.2.3.4"));
    return test_finish("test_local_addr");
}
