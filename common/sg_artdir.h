/*
 * The artifact directory a run writes: never one that already holds a run. A directory "holds a run" when it has
 * a run's files (surge's, AIPerf's or GenAI-Perf's summaries and per-request records, a sweep's or a search's
 * summary) or a sub-directory that has them (a point of a sweep or search, a rank of a multi-process run). Such a
 * directory is left as it is and the run takes the first free name DIR-2, DIR-3, ...; with --overwrite its
 * files of surge's are removed first (files that are not surge's stay), so that nothing of two runs mixes.
 */
#ifndef SG_ARTDIR_H
#define SG_ARTDIR_H

#include <stdbool.h>
#include <stddef.h>

/* Whether dir holds a run; when it does and what is not NULL, the first such file found, relative to dir
 * ("profile_export_surge.json", "concurrency1/profile_export_surge.json"). */
bool sg_artdir_holds_run(const char *dir, char *what, size_t cap);

/* Remove surge's files from dir, and the sub-directories that hold runs (emptied the same way, then removed when
 * nothing else is left in them). Files surge does not write stay. 0, or -errno of the first failure. */
int sg_artdir_clear(const char *dir);

/*
 * The directory a run writes to, made (with its parents) and returned in *out (malloc'd): want itself when it does
 * not hold a run; with overwrite, want after sg_artdir_clear; else the first DIR-<n> (n = 2, 3, ...) that does not
 * hold one, with one line on stderr that says so (prog begins it). 0, or -1 with the reason in err.
 */
int sg_artdir_claim(const char *prog, const char *want, bool overwrite, char **out, char *err, size_t errlen);

/* mkdir -p: path and its parents (0755). 0, or -errno (-ENOTDIR when path exists and is not a directory). */
int sg_mkdir_p(const char *path);

#endif
