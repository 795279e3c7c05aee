/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/counters.h"

const char *const dp_drop_names[DP_DROP_MAX] = {
#define DP_DROP_NAME(name, desc) [DP_DROP_##name] = #name,
	DP_DROP_REASONS(DP_DROP_NAME)
#undef DP_DROP_NAME
};

const char *const dp_drop_descriptions[DP_DROP_MAX] = {
#define DP_DROP_DESC(name, desc) [DP_DROP_##name] = desc,
	DP_DROP_REASONS(DP_DROP_DESC)
#undef DP_DROP_DESC
};

const char *const dp_event_names[DP_EVENT_MAX] = {
#define DP_EVENT_NAME(name, desc) [DP_EVENT_##name] = #name,
	DP_EVENTS(DP_EVENT_NAME)
#undef DP_EVENT_NAME
};

const char *const dp_event_descriptions[DP_EVENT_MAX] = {
#define DP_EVENT_DESC(name, desc) [DP_EVENT_##name] = desc,
	DP_EVENTS(DP_EVENT_DESC)
#undef DP_EVENT_DESC
};
