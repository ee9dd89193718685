/*
 * Claiming an artifact directory (sg_artdir.h): what says a directory holds a run, what of it is surge's, and the
 * fresh name a run takes instead of mixing into another's files.
 */
#include "sg_artdir.h"

#include "sg_common.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How deep a run's files sit below the directory given: a point of a sweep or search, a rank of a run. */
#define SUB_DEPTH 1
/* DIR-2 ... DIR-<MAX_SUFFIX>: past that, something is wrong with the directory, not the count of runs. */
#define MAX_SUFFIX 9999

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Files that say "a run was here": surge's and AIPerf's summaries (any --profile-export-file stem) and records,
 * GenAI-Perf's summary, a sweep's and a search's summaries. inputs.json alone is not one: a run that stopped
 * before its first request leaves it, and the next run writes it again. */
static int marker_rank(const char *name)
{
    /* by how well the file names the run: summaries first; 0 for a file that is no marker */
    static const struct {
        const char *text;
        bool suffix;
    } markers[] = {{"sweep_summary.json", false},  {"search.json", false},     {"_surge.json", true},
                   {"_aiperf.json", true},         {"_genai_perf.json", true}, {"_surge.jsonl", true},
                   {"profile_export.jsonl", false}};
    for (size_t i = 0; i < SG_ARRAY_LEN(markers); i++) {
        const char *t = markers[i].text;
        if (markers[i].suffix ? ends_with(name, t) && strlen(name) > strlen(t) : strcmp(name, t) == 0)
            return (int)i + 1;
    }
    return 0;
}

/* surge's own files, by name: what --overwrite removes. stems: the --profile-export-file stems seen in the
 * directory, whose <stem>.jsonl (AIPerf's per-request records) is surge's too. */
static bool is_surge_file(const char *name, char *const *stems, size_t n_stems)
{
    static const char *const names[] = {"inputs.json",        "sweep_summary.json", "sweep_summary.csv",
                                        "search.json",        "search.csv",         "server_metrics.json",
                                        "server_metrics.csv", "report.html",        "profile_export.jsonl"};
    static const char *const suffixes[] = {
        "_surge.json",           "_surge.csv",   "_surge.jsonl", "_surge_timeslices.json",
        "_surge_timeslices.csv", "_aiperf.json", "_aiperf.csv"};
    /* the temporary names a writer cut short leaves (<file>.tmp.XXXXXX, <file>.part) */
    char base[NAME_MAX + 1];
    snprintf(base, sizeof base, "%s", name);
    char *tmp = strstr(base, ".tmp.");
    if (tmp)
        *tmp = 0;
    else if (ends_with(base, ".part"))
        base[strlen(base) - 5] = 0;
    if (starts_with(base, ".surge-worker-") && ends_with(base, ".reclog"))
        return true;
    if (starts_with(base, ".surge-merge-") && ends_with(base, ".log"))
        return true;
    for (size_t i = 0; i < SG_ARRAY_LEN(names); i++)
        if (strcmp(base, names[i]) == 0)
            return true;
    for (size_t i = 0; i < SG_ARRAY_LEN(suffixes); i++)
        if (ends_with(base, suffixes[i]) && strlen(base) > strlen(suffixes[i]))
            return true;
    for (size_t i = 0; i < n_stems; i++) {
        size_t k = strlen(stems[i]);
        if (strncmp(base, stems[i], k) == 0 && strcmp(base + k, ".jsonl") == 0)
            return true;
    }
    return false;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool holds_run(const char *dir, int depth, char *what, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    int best = 0;
    struct dirent *e;
    /* the directory's own files first: they name the run better than a sub-directory's */
    while ((e = readdir(d)) != NULL) {
        int rank = marker_rank(e->d_name);
        if (!rank || (best && rank >= best))
            continue;
        char *p = sg_path_join(dir, e->d_name);
        if (p && !is_dir(p)) {
            found = true;
            best = rank;
            if (what && cap)
                snprintf(what, cap, "%s", e->d_name);
        }
        free(p);
    }
    if (!found && depth > 0) {
        rewinddir(d);
        while (!found && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *p = sg_path_join(dir, e->d_name);
            char sub[512];
            if (p && is_dir(p) && holds_run(p, depth - 1, sub, sizeof sub)) {
                found = true;
                if (what && cap)
                    snprintf(what, cap, "%s/%s", e->d_name, sub);
            }
            free(p);
        }
    }
    closedir(d);
    return found;
}

bool sg_artdir_holds_run(const char *dir, char *what, size_t cap)
{
    return holds_run(dir, SUB_DEPTH, what, cap);
}

/* The --profile-export-file stems of the files in d ("profile_export" from profile_export_surge.json). */
static size_t collect_stems(DIR *d, char ***out)
{
    static const char *const suffixes[] = {"_surge.json", "_surge.jsonl", "_surge.csv", "_aiperf.json", "_aiperf.csv"};
    char **stems = NULL;
    size_t n = 0;
    struct dirent *e;
    rewinddir(d);
    while ((e = readdir(d)) != NULL)
        for (size_t i = 0; i < SG_ARRAY_LEN(suffixes); i++) {
            size_t len = strlen(e->d_name), k = strlen(suffixes[i]);
            if (len <= k || strcmp(e->d_name + len - k, suffixes[i]) != 0)
                continue;
            bool seen = false;
            for (size_t j = 0; j < n && !seen; j++)
                seen = strlen(stems[j]) == len - k && strncmp(stems[j], e->d_name, len - k) == 0;
            char **grown = seen ? NULL : realloc(stems, (n + 1) * sizeof(*stems));
            if (grown) {
                stems = grown;
                if ((stems[n] = strndup(e->d_name, len - k)) != NULL)
                    n++;
            }
            break;
        }
    *out = stems;
    return n;
}

static int clear(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    char **stems;
    size_t n_stems = collect_stems(d, &stems);
    int rc = 0;
    struct dirent *e;
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = sg_path_join(dir, e->d_name);
        if (!p) {
            rc = rc ? rc : -ENOMEM;
            continue;
        }
        if (is_dir(p)) {
            /* a point's or a rank's directory: emptied of surge's files, and gone when nothing else is in it */
            if (depth > 0 && holds_run(p, depth - 1, NULL, 0)) {
                int err = clear(p, depth - 1);
                rc = rc ? rc : err;
                if (err == 0 && rmdir(p) < 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
                    rc = rc ? rc : -errno;
            }
        } else if (is_surge_file(e->d_name, stems, n_stems) && unlink(p) < 0 && errno != ENOENT) {
            rc = rc ? rc : -errno;
        }
        free(p);
    }
    closedir(d);
    for (size_t i = 0; i < n_stems; i++)
        free(stems[i]);
    free(stems);
    return rc;
}

int sg_artdir_clear(const char *dir)
{
    return clear(dir, SUB_DEPTH);
}

int sg_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -errno;
    return is_dir(buf) ? 0 : -ENOTDIR;
}

/* want without trailing slashes; "." and ".." (and paths ending in them) by their real path, so that a suffix
 * makes a sibling ("runs-2"), not a hidden name ("./-2"). */
static char *base_name(const char *want)
{
    char *s = strdup(want);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        s[--n] = 0;
    const char *last = strrchr(s, '/');
    last = last ? last + 1 : s;
    if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0 || strcmp(s, "/") == 0) {
        char real[PATH_MAX];
        if (realpath(s, real)) {
            free(s);
            return strdup(real);
        }
    }
    return s;
}

int sg_artdir_claim(const char *prog, const char *want, bool overwrite, char **out, char *err, size_t errlen)
{
    *out = NULL;
    char what[600];
    if (!sg_artdir_holds_run(want, what, sizeof what)) {
        int derr = sg_mkdir_p(want);
        if (derr < 0) {
            snprintf(err, errlen, "%s: %s", want, sg_strerror(derr));
            return -1;
        }
        *out = strdup(want);
        goto done;
    }
    if (overwrite) {
        int cerr = sg_artdir_clear(want);
        if (cerr == 0 && sg_artdir_holds_run(want, what, sizeof what))
            cerr = -ENOTEMPTY;
        if (cerr < 0) {
            snprintf(err, errlen, "--overwrite: cannot remove the earlier run's files from %s (%s: %s)", want, what,
                     sg_strerror(cerr));
            return -1;
        }
        fprintf(stderr, "%s: artifacts: %s held an earlier run; its files were removed (--overwrite)\n", prog, want);
        *out = strdup(want);
        goto done;
    }
    char *base = base_name(want);
    if (!base) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int n = 2; n <= MAX_SUFFIX && !*out; n++) {
        size_t len = strlen(base) + 16;
        char *cand = malloc(len);
        if (!cand)
            break;
        snprintf(cand, len, "%s-%d", base, n);
        /* a name nobody has taken: made here, so a run started beside this one cannot take it too */
        int merr = mkdir(cand, 0755) == 0 ? 0 : errno;
        if (merr == 0 || (merr == EEXIST && is_dir(cand) && !sg_artdir_holds_run(cand, NULL, 0))) {
            *out = cand;
            break;
        }
        free(cand);
    }
    if (!*out) {
        snprintf(err, errlen, "%s holds an earlier run (%s), and no free name %s-<n> was found: give another directory",
                 want, what, base);
        free(base);
        return -1;
    }
    fprintf(stderr, "%s: artifacts: %s holds an earlier run (%s); writing to %s (--overwrite replaces it)\n", prog,
            want, what, *out);
    free(base);
done:
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
