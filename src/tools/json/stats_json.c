/* SPDX-License-Identifier: MIT */
/* percore tools: the server's statistics as a cJSON tree, for `percore
 * echo --json`. Read back from the runtime's own JSON text
 * (pc_server_stats_print), so the members are those it writes. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "percore/json.h"
#include "percore/server.h"

cJSON *pc_server_stats_json(const struct pc_server_stats *st)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cJSON *o = NULL;
	int rc;

	if (!f)
		return NULL;
	rc = pc_server_stats_print(st, true, f);
	if (fclose(f) == 0 && rc == 0)
		o = cJSON_ParseWithLength(text, len);
	free(text);
	return o;
}
