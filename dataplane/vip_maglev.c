/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/vip_maglev.h"

#include <errno.h>
#include <stdlib.h>

#include "config/config.h"

struct vip_maglev *
vip_maglev_build(const struct config_vip *vip, int *rc)
{
	struct vip_maglev *vm;
	struct maglev_backend *b;
	uint32_t n = vip->n_backends;

	*rc = -ENOMEM;
	vm = calloc(1, sizeof(*vm));
	if (vm == NULL)
		return NULL;
	vm->size = vip->table_size;
	vm->n_backends = n;
	vm->names = calloc(n, sizeof(*vm->names));
	vm->order = calloc(n, sizeof(*vm->order));
	vm->table = calloc(vm->size, sizeof(*vm->table));
	b = calloc(n, sizeof(*b));
	if (vm->names == NULL || vm->order == NULL || vm->table == NULL || b == NULL)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		config_addr_str(&vip->backends[i].addr, vm->names[i], sizeof(vm->names[i]));
		b[i] = (struct maglev_backend){ vm->names[i], vip->backends[i].weight };
	}
	*rc = maglev_build(b, n, vm->size, vm->table, vm->order);
	if (*rc < 0 && *rc != -ENODATA)
		goto fail;
	free(b);
	return vm;
fail:
	free(b);
	vip_maglev_free(vm);
	return NULL;
}

void
vip_maglev_free(struct vip_maglev *vm)
{
	if (vm == NULL)
		return;
	free(vm->table);
	free(vm->order);
	free(vm->names);
	free(vm);
}
