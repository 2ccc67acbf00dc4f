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

/* The application's registry, when it has shards enough, or a new one. */
static int take_registry(struct pc_server *srv, char *err, size_t len)
{
	struct pc_metrics *m = srv->cfg.metrics_registry;

	if (!m) {
		srv->metrics = pc_metrics_create(srv->n, 0);
		srv->metrics_own = true;
		return srv->metrics ? 0 : -ENOMEM;
	}
	if (pc_metrics_shards(m) < srv->n) {
		if (err && len)
			snprintf(err, len, "metrics_registry has %u shards, the server runs %u",
				 pc_metrics_shards(m), srv->n);
		return -EINVAL;
	}
	srv->metrics = m;
	return 0;
}

int net_server_metrics_start(struct pc_server *srv, const char *host, char *err, size_t len)
{
	struct pc_metrics_http_cfg hc;
	int rc;

	if (!srv->cfg.metrics)
		return 0;
	rc = take_registry(srv, err, len);
	if (rc)
		return rc;
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
	if (srv->metrics_own)
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
