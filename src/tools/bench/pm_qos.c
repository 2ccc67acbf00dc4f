/* SPDX-License-Identifier: MIT */
/* percore bench: the PM QoS request, held by `percore bench --pm-qos` for a
 * whole run and by benchmarks that compare themselves with and without it
 * inside one run (Noise/.../pm_qos:on). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "percore/bench.h"

int pc_bench_pm_qos_hold(void)
{
	int32_t zero = 0;
	int fd = open(PC_BENCH_PM_QOS_DEVICE, O_WRONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	/* The request is the value written; it lasts while fd stays open. */
	if (write(fd, &zero, sizeof(zero)) == (ssize_t)sizeof(zero))
		return fd;
	err = errno ? -errno : -EIO;
	close(fd);
	return err;
}
