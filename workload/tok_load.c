/*
 * Where a tokenizer comes from: a file (.json or .tiktoken), a directory holding tokenizer.json, or a Hugging
 * Face model id found in the local Hugging Face cache.
 */
#include "tok_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The whole file into a malloc'd buffer (NUL-terminated). */
static int read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sg_tok_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return sg_tok_fail(err, errlen, -e, "%s: %s", path, strerror(e));
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return sg_tok_fail(err, errlen, SG_ENOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                close(fd);
                return sg_tok_fail(err, errlen, SG_ENOMEM, "%s: out of memory", path);
            }
            buf = b;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return sg_tok_fail(err, errlen, -e, "%s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

static int load_file(const char *path, sg_tokenizer_t **out, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0;
    int rc = read_file(path, &data, &len, err, errlen);
    if (rc < 0)
        return rc;
    bool json;
    if (ends_with(path, ".json")) {
        json = true;
    } else if (ends_with(path, ".tiktoken")) {
        json = false;
    } else { /* no telling suffix: a JSON text starts with '{' */
        size_t i = 0;
        while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
            i++;
        json = i < len && data[i] == '{';
    }
    rc = json ? sg_tok_load_hf(path, data, len, out, err, errlen)
              : sg_tok_load_tiktoken(path, data, len, out, err, errlen);
    free(data);
    return rc;
}

/* "ORG/NAME": one slash, neither part empty, no path-like spelling. */
static bool is_model_id(const char *spec)
{
    const char *slash = strchr(spec, '/');
    if (!slash || slash == spec || !slash[1] || strchr(slash + 1, '/'))
        return false;
    if (spec[0] == '.' || spec[0] == '~')
        return false;
    return true;
}

static int hub_dir(char *buf, size_t cap)
{
    const char *e = getenv("HF_HUB_CACHE");
    if (e && *e)
        return snprintf(buf, cap, "%s", e) < (int)cap ? 0 : -1;
    e = getenv("HF_HOME");
    if (e && *e)
        return snprintf(buf, cap, "%s/hub", e) < (int)cap ? 0 : -1;
    e = getenv("XDG_CACHE_HOME");
    if (e && *e)
        return snprintf(buf, cap, "%s/huggingface/hub", e) < (int)cap ? 0 : -1;
    e = getenv("HOME");
    if (!e || !*e)
        return -1;
    return snprintf(buf, cap, "%s/.cache/huggingface/hub", e) < (int)cap ? 0 : -1;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* models--ORG--NAME/snapshots/<rev>/tokenizer.json: the revision refs/main names first, else any. */
static int find_in_cache(const char *id, char *path, size_t cap, char *err, size_t errlen)
{
    char hub[2048];
    if (hub_dir(hub, sizeof hub) < 0)
        return sg_tok_fail(err, errlen, SG_EINVAL,
                           "not a file or directory, and no Hugging Face cache to look in (set HF_HOME or HOME)");
    char repo[4096];
    const char *slash = strchr(id, '/');
    if (snprintf(repo, sizeof repo, "%s/models--%.*s--%s", hub, (int)(slash - id), id, slash + 1) >= (int)sizeof repo)
        return sg_tok_fail(err, errlen, SG_EINVAL, "path too long");

    char ref[4200], rev[256] = "";
    FILE *f = snprintf(ref, sizeof ref, "%s/refs/main", repo) < (int)sizeof ref ? fopen(ref, "r") : NULL;
    if (f) {
        if (fgets(rev, sizeof rev, f))
            rev[strcspn(rev, "\r\n")] = '\0';
        fclose(f);
    }
    if (rev[0] && !strchr(rev, '/') && snprintf(path, cap, "%s/snapshots/%s/tokenizer.json", repo, rev) < (int)cap &&
        is_file(path))
        return 0;

    char snaps[4200];
    DIR *d = snprintf(snaps, sizeof snaps, "%s/snapshots", repo) < (int)sizeof snaps ? opendir(snaps) : NULL;
    if (d) {
        struct dirent *de;
        bool found = false;
        while (!found && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            found = snprintf(path, cap, "%s/%s/tokenizer.json", snaps, de->d_name) < (int)cap && is_file(path);
        }
        closedir(d);
        if (found)
            return 0;
    }
    return sg_tok_fail(err, errlen, SG_EINVAL,
                       "not a file or directory, and not in the Hugging Face cache: looked for "
                       "%s/snapshots/*/tokenizer.json (cache: $HF_HUB_CACHE, $HF_HOME/hub or "
                       "~/.cache/huggingface/hub)",
                       repo);
}

int sg_tok_load(const char *spec, sg_tokenizer_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!spec || !*spec)
        return sg_tok_fail(err, errlen, SG_EINVAL, "no tokenizer given");
    struct stat st;
    char path[4096];
    if (stat(spec, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            if (snprintf(path, sizeof path, "%s/tokenizer.json", spec) >= (int)sizeof path)
                return sg_tok_fail(err, errlen, SG_EINVAL, "path too long");
            if (!is_file(path))
                return sg_tok_fail(err, errlen, SG_EINVAL, "%s: a directory without tokenizer.json", spec);
            return load_file(path, out, err, errlen);
        }
        return load_file(spec, out, err, errlen);
    }
    if (errno != ENOENT || !is_model_id(spec))
        return sg_tok_fail(err, errlen, -errno, "%s: %s", spec, strerror(errno));
    int rc = find_in_cache(spec, path, sizeof path, err, errlen);
    if (rc < 0)
        return rc;
    return load_file(path, out, err, errlen);
}
