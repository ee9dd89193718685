/*
 * --server-metrics-url: the server's /metrics scraped during a load point, on a thread of its own, off the
 * workers' path (they never see it). A scrape is a plain HTTP/1.1 GET with a deadline; one that fails or times
 * out is recorded and the next one is taken on schedule, so a dead endpoint can neither stall the run nor hold up
 * its end by more than one scrape's deadline.
 *
 * start: resolves the URLs and takes the first scrape before returning (the baseline, just before the load);
 * the thread then scrapes every interval. stop: one last scrape (just after the load), then the thread is joined
 * and the store (sg_srvmetrics.h) belongs to the caller's thread.
 */
#ifndef SG_SCRAPE_H
#define SG_SCRAPE_H

#include "sg_srvmetrics.h"

#include <stddef.h>

typedef struct sg_scraper sg_scraper_t;

/* A scrape URL split: http://HOST[:PORT][/PATH]. 0, or -1 with why in err. */
int sg_scrape_url_parse(const char *url, char *host, size_t hcap, char *port, size_t pcap, char *path, size_t pathcap,
                        char *err, size_t errlen);

sg_scraper_t *sg_scraper_start(const char *const *urls, size_t n, double interval_s, bool verbose);
void sg_scraper_stop(sg_scraper_t *s);
const sg_srvm_t *sg_scraper_store(const sg_scraper_t *s);
void sg_scraper_free(sg_scraper_t *s);

#endif
