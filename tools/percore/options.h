/* SPDX-License-Identifier: MIT */
/* percore report and compare: the command-line options they share. */
#ifndef PERCORE_TOOL_OPTIONS_H
#define PERCORE_TOOL_OPTIONS_H

#include <getopt.h>

/* Entries for a struct option table: --alpha A and --max-cv X. */
#define PC_STAT_OPTIONS                                                       \
	{ "alpha", required_argument, NULL, 'a' },                            \
	{ "max-cv", required_argument, NULL, 'c' }

/* A number in (0, max]: "0.05". Returns 0 or -EINVAL. */
int pc_parse_level(const char *s, double max, double *out);

/* Handle what getopt_long returned when it is one of the shared options
 * ('a', 'c') or one of getopt's complaints (':' missing value, '?' unknown
 * option; the option string must start with ':'). Returns 0 when opt was
 * one of them and its value is good, PC_EXIT_USAGE after printing the
 * reason, -1 for any other opt. */
int pc_stat_option(const char *cmd, int opt, char **argv, double *alpha, double *max_cv);

#endif
