/*
 * The TLS flags of `surge profile`: --cacert, -k/--insecure, --cert/--key. Accepted ones land in the config;
 * rejected ones give SG_EINVAL and exactly one line on stderr naming the flag and the problem.
 */
#include "test.h"

#include "sg_config.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static char ca[128], key[128], unreadable[128];

/* Parse "profile" + args; stderr goes to a temp file whose text is returned in msg. */
static int parse_capture(sg_config_t *cfg, char *msg, size_t msglen, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "profile";
    va_list ap;
    va_start(ap, msglen);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;

    char errpath[128];
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(errpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    dup2(fd, 2);
    close(fd);
    int rc = sg_config_parse(cfg, argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(msg, 1, msglen - 1, f) : 0;
    msg[n] = '\0';
    if (f)
        fclose(f);
    return rc;
}

#define PARSE(cfg, msg, ...) parse_capture(cfg, msg, sizeof msg, __VA_ARGS__, (const char *)NULL)

static void expect_bad(int line, const char *want, const char *flag, const char *value, const char *flag2,
                       const char *value2)
{
    sg_config_t cfg;
    char msg[512];
    int rc = PARSE(&cfg, msg, "-m", "x", flag, value, flag2, value2);
    test_checks++;
    if (rc != SG_EINVAL || strcmp(msg, want) != 0) {
        test_failures++;
        fprintf(stderr, "test_config_tls.c:%d: rc %d, message \"%s\", want \"%s\"\n", line, rc, msg, want);
    }
    CHECK(cfg.cacert == NULL && cfg.client_cert == NULL && cfg.client_key == NULL);
    sg_config_free(&cfg);
}
#define BAD(want, ...) expect_bad(__LINE__, want, __VA_ARGS__)

static void test_accepted(void)
{
    sg_config_t cfg;
    char msg[512];
    CHECK_EQ_INT(PARSE(&cfg, msg, "-m", "x"), 0);
    CHECK(cfg.cacert == NULL && !cfg.insecure && cfg.client_cert == NULL && cfg.client_key == NULL);
    sg_config_free(&cfg);

    CHECK_EQ_INT(PARSE(&cfg, msg, "-m", "x", "--cacert", ca, "-k", "--cert", ca, "--key", key), 0);
    CHECK_EQ_STR(msg, strlen(msg), "");
    CHECK(cfg.cacert && strcmp(cfg.cacert, ca) == 0);
    CHECK(cfg.insecure);
    CHECK(cfg.client_cert && strcmp(cfg.client_cert, ca) == 0);
    CHECK(cfg.client_key && strcmp(cfg.client_key, key) == 0);
    char *json = sg_config_to_json(&cfg);
    json_t *o = json ? json_loads(json, 0, NULL) : NULL;
    CHECK(o && json_is_true(json_object_get(o, "insecure")));
    CHECK(o && strcmp(json_string_value(json_object_get(o, "cacert")), ca) == 0);
    CHECK(o && strcmp(json_string_value(json_object_get(o, "key")), key) == 0);
    json_decref(o);
    free(json);
    sg_config_free(&cfg);

    CHECK_EQ_INT(PARSE(&cfg, msg, "-m", "x", "--insecure"), 0);
    CHECK(cfg.insecure);
    sg_config_free(&cfg);
}

static void test_rejected(void)
{
    char want[512], missing[160];
    snprintf(missing, sizeof missing, "%s/missing.pem", dir);
    snprintf(want, sizeof want, "surge: --cacert: cannot use \"%s\": No such file or directory\n", missing);
    BAD(want, "--cacert", missing, NULL, NULL);
    BAD("surge: --cacert: expected a PEM file of CA certificates, got an empty value\n", "--cacert", "", NULL, NULL);
    snprintf(want, sizeof want,
             "surge: --cacert: expected a PEM file of CA certificates, but \"%s\" is not a regular file\n", dir);
    BAD(want, "--cacert", dir, NULL, NULL);
    if (geteuid() != 0) { /* root reads anything */
        snprintf(want, sizeof want, "surge: --cacert: cannot read \"%s\": Permission denied\n", unreadable);
        BAD(want, "--cacert", unreadable, NULL, NULL);
    }
    BAD("surge: --cert: needs its partner: give both --cert FILE and --key FILE\n", "--cert", ca, NULL, NULL);
    BAD("surge: --key: needs its partner: give both --cert FILE and --key FILE\n", "--key", key, NULL, NULL);
    snprintf(want, sizeof want, "surge: --key: cannot use \"%s\": No such file or directory\n", missing);
    BAD(want, "--cert", ca, "--key", missing);
    BAD("surge: --insecure: takes no value, got \"--insecure=yes\"\n", "--insecure=yes", NULL, NULL, NULL);
    BAD("surge: --cacert: expects a value\n", "--cacert", NULL, NULL, NULL);
    BAD("surge: --url: unsupported scheme \"ftps\": only http:// and https:// are supported\n", "-u", "ftps://h:443",
        "-k", NULL);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/surge-cfgtls-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    snprintf(unreadable, sizeof unreadable, "%s/unreadable.pem", dir);
    FILE *f;
    if (!(f = fopen(ca, "w")) || fputs("not parsed here\n", f) < 0 || fclose(f))
        return 1;
    if (!(f = fopen(key, "w")) || fclose(f))
        return 1;
    if (!(f = fopen(unreadable, "w")) || fclose(f) || chmod(unreadable, 0))
        return 1;
    test_accepted();
    test_rejected();
    char path[160];
    const char *names[] = {"ca.pem", "client.key", "unreadable.pem", "stderr"};
    for (size_t i = 0; i < SG_ARRAY_LEN(names); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    return test_finish("test_config_tls");
}
