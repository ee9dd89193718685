/*
 * surge's report: an HTML page of one or more runs' artifact directories (report/). `surge report` and
 * `surge compare` call the mains; `surge profile --generate-plots` calls sg_report_dirs on its own directory.
 */
#ifndef SG_REPORT_H
#define SG_REPORT_H

#include <stdbool.h>
#include <stddef.h>

int sg_report_main(int argc, char **argv);
int sg_compare_main(int argc, char **argv);

/* The page of dirs written to out (NULL: DIR/report.html for one, ./compare.html for several). Returns 0, or 2
 * after a line on stderr (not a run, a file cut off, runs of different kinds, an unwritable output). */
int sg_report_dirs(char *const *dirs, size_t n, const char *out, bool quiet);

#endif
