/*
 * Which rank this process is, how many ranks there are and where rank 0 listens: from --world-size, --rank and
 * --coordinator when given, else from the launcher that started us.
 *
 *   Kubernetes Indexed Job: JOB_COMPLETION_INDEX is the rank; the size is not in the environment, so it comes
 *     from --world-size or SURGE_WORLD_SIZE. Pods of an Indexed Job with a headless Service are named
 *     <job>-<index>.<service>: rank 0 is our own fully qualified name with the index made 0.
 *   Slurm (srun): SLURM_PROCID of SLURM_STEP_NUM_TASKS (or SLURM_NTASKS); rank 0 runs on the step's first node,
 *     the first name of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), whose compressed form ("node[01-04]") is
 *     expanded as far as its first name.
 *   Open MPI: OMPI_COMM_WORLD_RANK of OMPI_COMM_WORLD_SIZE; MPICH and other PMI launchers: PMI_RANK of PMI_SIZE.
 *     They say nothing of rank 0's address: when every rank is on this host (OMPI_COMM_WORLD_LOCAL_SIZE, or
 *     MPI_LOCALNRANKS, equals the size) it is 127.0.0.1, else --coordinator must say.
 * The port is --coordinator's, else SURGE_COORDINATOR_PORT, else SG_DIST_PORT.
 */
#include "sg_dist.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool env_uint(const char *name, unsigned long *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return false;
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || *end)
        return false;
    *out = x;
    return true;
}

/* The first host name of a Slurm node list: "a,b" -> a; "node[01-04,7]" -> node01; "n[1-2]x" -> n1x. */
static void slurm_first_node(const char *list, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = list;
    while (*p && *p != ',' && o + 1 < cap) {
        if (*p == '[') {
            p++;
            while (*p && *p != '-' && *p != ',' && *p != ']' && o + 1 < cap)
                out[o++] = *p++;
            while (*p && *p != ']')
                p++;
            if (*p == ']')
                p++;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

/* Kubernetes: our own fully qualified name with its "-<index>" made "-0" (rank 0's pod in the same Service). */
static int k8s_rank0_host(unsigned long index, char *out, size_t cap)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        return -1;
    host[sizeof host - 1] = '\0';
    char fqdn[512];
    snprintf(fqdn, sizeof fqdn, "%s", host);
    struct addrinfo hints = {.ai_flags = AI_CANONNAME}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) == 0 && res && res->ai_canonname)
        snprintf(fqdn, sizeof fqdn, "%s", res->ai_canonname);
    if (res)
        freeaddrinfo(res);
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%lu", index);
    char *dot = strchr(fqdn, '.');
    size_t first = dot ? (size_t)(dot - fqdn) : strlen(fqdn);
    size_t sl = strlen(suffix);
    if (first < sl || memcmp(fqdn + first - sl, suffix, sl) != 0)
        return -1; /* not named as an Indexed Job's pod */
    snprintf(out, cap, "%.*s-0%s", (int)(first - sl), fqdn, dot ? dot : "");
    return 0;
}

int sg_dist_resolve(sg_dist_opts_t *o, char *err, size_t errlen)
{
    if (o->world == 1) { /* asked to run alone, whatever the launcher says */
        if (o->rank > 0) {
            snprintf(err, errlen, "--rank %d is out of range for --world-size 1", o->rank);
            return -1;
        }
        o->rank = 0;
        return 0;
    }
    unsigned long rank = 0, world = 0, local = 0;
    bool have_rank = o->rank >= 0, have_world = o->world > 0;
    char host[256] = "";
    const char *src = NULL;
    if (have_rank)
        rank = (unsigned long)o->rank;
    if (have_world)
        world = o->world;
    else if (env_uint("SURGE_WORLD_SIZE", &world))
        have_world = true;

    unsigned long r, w;
    if (!have_rank && env_uint("JOB_COMPLETION_INDEX", &r)) {
        src = "Kubernetes (JOB_COMPLETION_INDEX)";
        rank = r;
        have_rank = true;
        if (!o->coordinator[0] && k8s_rank0_host(r, host, sizeof host) != 0)
            host[0] = '\0';
    } else if (!have_rank && env_uint("SLURM_PROCID", &r) &&
               (env_uint("SLURM_STEP_NUM_TASKS", &w) || env_uint("SLURM_NTASKS", &w))) {
        src = "Slurm (SLURM_PROCID)";
        rank = r;
        have_rank = true;
        if (!have_world)
            world = w, have_world = true;
        const char *nodes = getenv("SLURM_STEP_NODELIST");
        if (!nodes || !*nodes)
            nodes = getenv("SLURM_JOB_NODELIST");
        if (nodes)
            slurm_first_node(nodes, host, sizeof host);
    } else if (!have_rank && env_uint("OMPI_COMM_WORLD_RANK", &r) && env_uint("OMPI_COMM_WORLD_SIZE", &w)) {
        src = "Open MPI (OMPI_COMM_WORLD_RANK)";
        rank = r;
        have_rank = true;
        if (!have_world)
            world = w, have_world = true;
        if (env_uint("OMPI_COMM_WORLD_LOCAL_SIZE", &local) && local == w)
            snprintf(host, sizeof host, "127.0.0.1");
    } else if (!have_rank && env_uint("PMI_RANK", &r) && env_uint("PMI_SIZE", &w)) {
        src = "PMI (PMI_RANK)";
        rank = r;
        have_rank = true;
        if (!have_world)
            world = w, have_world = true;
        if (env_uint("MPI_LOCALNRANKS", &local) && local == w)
            snprintf(host, sizeof host, "127.0.0.1");
    } else if (have_rank || have_world) {
        src = "--world-size/--rank";
    }
    if (!have_world) {
        if (o->rank >= 0) {
            snprintf(err, errlen,
                     "--rank %lu: the number of ranks is unknown; give --world-size N (or SURGE_WORLD_SIZE)", rank);
            return -1;
        }
        if (have_rank && src && strncmp(src, "Kubernetes", 10) == 0) {
            snprintf(err, errlen,
                     "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but the number of ranks is not: give "
                     "--world-size N or SURGE_WORLD_SIZE (the Job's completions), or --world-size 1 to run alone");
            return -1;
        }
        world = 1, rank = 0;
    }
    if (world <= 1) {
        if (rank != 0) {
            snprintf(err, errlen, "rank %lu is out of range for one rank", rank);
            return -1;
        }
        o->world = 1;
        o->rank = 0;
        return 0;
    }
    if (!have_rank) {
        snprintf(err, errlen, "--world-size %lu: which rank this is is unknown; give --rank R (0 to %lu)", world,
                 world - 1);
        return -1;
    }
    if (rank >= world) {
        snprintf(err, errlen, "rank %lu is out of range for %lu ranks (from %s)", rank, world, src);
        return -1;
    }
    if (world > SG_DIST_MAX_RANKS) {
        snprintf(err, errlen, "%lu ranks: at most %d", world, SG_DIST_MAX_RANKS);
        return -1;
    }
    o->world = (unsigned)world;
    o->rank = (int)rank;
    snprintf(o->source, sizeof o->source, "%s", src);

    /* where rank 0 listens */
    unsigned long port = SG_DIST_PORT;
    env_uint("SURGE_COORDINATOR_PORT", &port);
    const char *given = o->coordinator[0] ? o->coordinator : getenv("SURGE_COORDINATOR");
    if (given && *given) {
        char h[256];
        const char *colon = strrchr(given, ':');
        bool bracket = given[0] == '[';
        if (colon && (!bracket || colon > strchr(given, ']'))) {
            char *end;
            errno = 0;
            unsigned long p = strtoul(colon + 1, &end, 10);
            if (errno || *end || p == 0 || p > 65535) {
                snprintf(err, errlen, "--coordinator %s: expected HOST:PORT with a port from 1 to 65535", given);
                return -1;
            }
            port = p;
            snprintf(h, sizeof h, "%.*s", (int)(colon - given), given);
        } else {
            snprintf(h, sizeof h, "%.*s", (int)sizeof h - 1, given);
        }
        size_t hl = strlen(h);
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
            memmove(h, h + 1, hl - 2);
            h[hl - 2] = '\0';
        }
        snprintf(host, sizeof host, "%s", h);
    }
    if (!host[0]) /* said by the caller, after what else may be wrong with the run */
        snprintf(o->missing, sizeof o->missing,
                 "rank %lu of %lu (from %s): where rank 0 listens is unknown; give --coordinator HOST:PORT "
                 "(rank 0's host name or address)",
                 rank, world, src);
    if (port == 0 || port > 65535) {
        snprintf(err, errlen, "SURGE_COORDINATOR_PORT: expected a port from 1 to 65535");
        return -1;
    }
    snprintf(o->host, sizeof o->host, "%s", host);
    o->port = (uint16_t)port;
    return 0;
}
