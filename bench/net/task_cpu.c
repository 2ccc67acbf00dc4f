/* SPDX-License-Identifier: MIT */
/* CPU time of threads, from /proc/PID/task/TID/schedstat (nanoseconds,
 * user and system together). */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "percore/clock.h"
#include "task_cpu.h"

uint64_t task_each(pid_t pid, uint64_t (*fn)(pid_t pid, pid_t tid, const void *arg),
		   const void *arg)
{
	char path[64];
	uint64_t total = 0;
	struct dirent *t;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (t = readdir(d)))
		if (t->d_name[0] != '.')
			total += fn(pid, (pid_t)atoi(t->d_name), arg);
	if (d)
		closedir(d);
	return total;
}

uint64_t task_cpu_ns(pid_t pid, pid_t tid)
{
	char path[96];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

static uint64_t one(pid_t pid, pid_t tid, const void *arg)
{
	(void)arg;
	return task_cpu_ns(pid, tid);
}

uint64_t task_process_cpu_ns(pid_t pid)
{
	return task_each(pid, one, NULL);
}

static uint64_t remember(pid_t pid, pid_t tid, const void *arg)
{
	struct task_split *t = (struct task_split *)arg;

	if (t->n < TASK_SPLIT_MAX) {
		t->tid[t->n] = tid;
		t->cpu0[t->n++] = task_cpu_ns(pid, tid);
	}
	return 0;
}

void task_split_begin(struct task_split *t)
{
	t->n = 0;
	task_each(getpid(), remember, t);
}

double task_split_end(const struct task_split *t)
{
	uint64_t old = 0;

	for (unsigned i = 0; i < t->n; i++)
		old += pc_elapsed(task_cpu_ns(getpid(), t->tid[i]), t->cpu0[i]);
	return (double)old;
}
