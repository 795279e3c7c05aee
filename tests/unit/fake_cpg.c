/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-process CPG of the unit tests. See fake_cpg.h. */
#include "fake_cpg.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct node {
	bool attached, member, busy;
	uint32_t id;
	unsigned ring;
	struct fake_cpg_ops ops;
	void *arg;
};

/* A message, or a view (data NULL): to the nodes of mask. */
struct item {
	uint32_t mask;
	uint32_t sender;
	uint16_t group;
	uint8_t *data;
	size_t len;
	uint32_t ids[FAKE_CPG_NODES_MAX];
	size_t n_ids;
	uint32_t left;                  /* views: these get self_in false */
	bool merged;
};

struct fake_cpg {
	struct node nodes[FAKE_CPG_NODES_MAX];
	struct item *queue;             /* a ring of FAKE_CPG_QUEUE_MAX */
	size_t head, tail;
};

struct fake_cpg *
fake_cpg_create(void)
{
	struct fake_cpg *f = calloc(1, sizeof(*f));

	if (f != NULL && (f->queue = calloc(FAKE_CPG_QUEUE_MAX, sizeof(*f->queue))) == NULL) {
		free(f);
		return NULL;
	}
	return f;
}

void
fake_cpg_destroy(struct fake_cpg *f)
{
	if (f == NULL)
		return;
	for (size_t i = f->head; i != f->tail; i = (i + 1) % FAKE_CPG_QUEUE_MAX)
		free(f->queue[i].data);
	free(f->queue);
	free(f);
}

static struct node *
node_of(struct fake_cpg *f, uint32_t id, size_t *slot)
{
	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++)
		if (f->nodes[i].attached && f->nodes[i].id == id) {
			if (slot != NULL)
				*slot = i;
			return &f->nodes[i];
		}
	return NULL;
}

static struct item *
push(struct fake_cpg *f)
{
	struct item *it = &f->queue[f->tail];

	assert((f->tail + 1) % FAKE_CPG_QUEUE_MAX != f->head);
	f->tail = (f->tail + 1) % FAKE_CPG_QUEUE_MAX;
	memset(it, 0, sizeof(*it));
	return it;
}

/* Queue ring's view, to its members and to the nodes of left. */
static void
view(struct fake_cpg *f, unsigned ring, uint32_t left, bool merged)
{
	uint32_t ids[FAKE_CPG_NODES_MAX];
	size_t n = 0;
	struct item *it;
	uint32_t mask = left;

	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++) {
		const struct node *nd = &f->nodes[i];
		size_t j;

		if (!nd->attached || !nd->member || nd->ring != ring)
			continue;
		mask |= 1u << i;
		/* ascending, as cpg_view.h hands them */
		for (j = n++; j > 0 && ids[j - 1] > nd->id; j--)
			ids[j] = ids[j - 1];
		ids[j] = nd->id;
	}
	if (mask == 0)
		return;
	it = push(f);
	it->mask = mask;
	memcpy(it->ids, ids, n * sizeof(ids[0]));
	it->n_ids = n;
	it->left = left;
	it->merged = merged;
}

void
fake_cpg_attach(struct fake_cpg *f, uint32_t id, const struct fake_cpg_ops *ops, void *arg)
{
	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++) {
		struct node *nd = &f->nodes[i];

		if (nd->attached)
			continue;
		*nd = (struct node){ .attached = true, .id = id, .ops = *ops, .arg = arg };
		return;
	}
	assert(!"too many nodes");
}

void
fake_cpg_join(struct fake_cpg *f, uint32_t id)
{
	struct node *nd = node_of(f, id, NULL);

	assert(nd != NULL);
	nd->member = true;
	view(f, nd->ring, 0, false);
}

void
fake_cpg_leave(struct fake_cpg *f, uint32_t id)
{
	size_t slot;
	struct node *nd = node_of(f, id, &slot);

	if (nd == NULL || !nd->member)
		return;
	nd->member = false;
	view(f, nd->ring, 1u << slot, false);
}

void
fake_cpg_detach(struct fake_cpg *f, uint32_t id)
{
	size_t slot;
	struct node *nd = node_of(f, id, &slot);

	if (nd == NULL)
		return;
	nd->attached = false;
	if (nd->member) {
		nd->member = false;
		view(f, nd->ring, 0, false);
	}
}

int
fake_cpg_send(struct fake_cpg *f, uint32_t id, uint16_t group, const void *buf, size_t len)
{
	struct node *nd = node_of(f, id, NULL);
	struct item *it;

	if (nd == NULL || !nd->member)
		return -ENOTCONN;
	if (nd->busy)
		return -EAGAIN;
	it = push(f);
	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++)
		if (f->nodes[i].attached && f->nodes[i].member && f->nodes[i].ring == nd->ring)
			it->mask |= 1u << i;
	it->sender = id;
	it->group = group;
	it->len = len;
	it->data = malloc(len ? len : 1);
	assert(it->data != NULL);
	memcpy(it->data, buf, len);
	return 0;
}

void
fake_cpg_set_busy(struct fake_cpg *f, uint32_t id, bool busy)
{
	struct node *nd = node_of(f, id, NULL);

	assert(nd != NULL);
	nd->busy = busy;
}

void
fake_cpg_split(struct fake_cpg *f, const uint32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct node *nd = node_of(f, ids[i], NULL);

		assert(nd != NULL);
		nd->ring = 1;
	}
	view(f, 0, 0, false);
	view(f, 1, 0, false);
}

void
fake_cpg_heal(struct fake_cpg *f)
{
	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++)
		f->nodes[i].ring = 0;
	view(f, 0, 0, true);
}

static void
deliver(struct fake_cpg *f, const struct item *it)
{
	for (size_t i = 0; i < FAKE_CPG_NODES_MAX; i++) {
		const struct node *nd = &f->nodes[i];

		if (!(it->mask & (1u << i)) || !nd->attached)
			continue;
		if (it->data != NULL)
			nd->ops.deliver(nd->arg, it->group, it->sender, it->data, it->len);
		else
			nd->ops.members(nd->arg, it->ids, it->n_ids,
					!(it->left & (1u << i)), it->merged);
	}
}

size_t
fake_cpg_run(struct fake_cpg *f, size_t max)
{
	size_t done = 0;

	while (f->head != f->tail && done < max) {
		struct item it = f->queue[f->head];

		/* taken off first: a callback may queue more */
		f->head = (f->head + 1) % FAKE_CPG_QUEUE_MAX;
		deliver(f, &it);
		free(it.data);
		done++;
	}
	return done;
}

size_t
fake_cpg_pending(const struct fake_cpg *f)
{
	return (f->tail + FAKE_CPG_QUEUE_MAX - f->head) % FAKE_CPG_QUEUE_MAX;
}
