/* SPDX-License-Identifier: MIT */
/* percore net: a server's metrics endpoint (cfg.metrics): the registry
 * with the server's figures and the HTTP thread serving it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/net.h"

/* What /health and /ready report, from flags the server keeps anyway. */
static enum pc_metrics_state server_state(void *arg)
{
	struct pc_server *srv = arg;

	if (pc_engine_stopping(srv->engine))
		return PC_METRICS_STOPPED;
	if (atomic_load(&srv->shutdown))
		return PC_METRICS_DRAINING;
	return atomic_load(&srv->ready) ? PC_METRICS_READY : PC_METRICS_STARTING;
}

int net_server_metrics_start(struct pc_server *srv, const char *host, char *err, size_t len)
{
	struct pc_metrics_http_cfg hc;
	int rc;

	if (!srv->cfg.metrics)
		return 0;
	srv->metrics = pc_metrics_create(srv->n, 0);
	if (!srv->metrics)
		return -ENOMEM;
	rc = pc_metrics_add_server(srv->metrics, srv);
	if (rc) {
		if (err && len)
			snprintf(err, len, "cannot register the server's metrics: %s", strerror(-rc));
		return rc;
	}
	pc_metrics_http_cfg_init(&hc);
	hc.host = host;
	hc.port = srv->cfg.metrics_port;
	hc.state = server_state;
	hc.state_arg = srv;
	return pc_metrics_http_start(srv->metrics, &hc, &srv->http, err, len);
}

void net_server_metrics_stop(struct pc_server *srv)
{
	pc_metrics_http_stop(srv->http);
	srv->http = NULL;
	/* No shard records into the registry once the engine has ended;
	 * before that, a shard may still be recording: keep it. */
}

void net_server_metrics_free(struct pc_server *srv)
{
	pc_metrics_destroy(srv->metrics);
	srv->metrics = NULL;
}

struct pc_metrics *pc_server_metrics(struct pc_server *srv)
{
	return srv->metrics;
}

uint16_t pc_server_metrics_port(const struct pc_server *srv)
{
	return srv->http ? pc_metrics_http_port(srv->http) : 0;
}
