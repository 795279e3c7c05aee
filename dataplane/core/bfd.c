/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BFD sessions (RFC 5880, RFC 5881): packet checks, writer, state machine.
 * Variables carry the RFC's names where they have one (bfd.RemoteDiscr is
 * remote_discr, bfd.RcvAuthSeq rcv_seq, ...). Received packets are
 * checked whole before the session is touched: below `commit` only.
 */
#include "dataplane/core/bfd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/core/be.h"
#include "dataplane/core/flow_key.h"
#include "lib/sha1.h"

/* Wire offsets (the layout is drawn in bfd.h). */
enum bfd_layout {
	BFD_OFF_VERSION_DIAG = 0,
	BFD_OFF_STATE_FLAGS = 1,
	BFD_OFF_DETECT_MULT = 2,
	BFD_OFF_LENGTH = 3,
	BFD_OFF_MY_DISCR = 4,
	BFD_OFF_YOUR_DISCR = 8,
	BFD_OFF_MIN_TX = 12,
	BFD_OFF_MIN_RX = 16,
	BFD_OFF_MIN_ECHO_RX = 20,
	BFD_OFF_AUTH_TYPE = 24,
	BFD_OFF_AUTH_LEN = 25,
	BFD_OFF_AUTH_KEY_ID = 26,
	BFD_OFF_AUTH_SEQ = 28,
	BFD_OFF_AUTH_DIGEST = 32,
	BFD_LENGTH_FIELD_MAX = 255,
	BFD_DIAG_MASK = 0x1f,
	BFD_FLAGS_MASK = 0x3f,
	BFD_STATE_SHIFT = 6,
	BFD_VERSION_SHIFT = 5,
};

/* RFC 5880 6.7.4: a sequence number is good up to 3 * Detect Mult ahead. */
#define BFD_SEQ_WINDOW_PER_MULT 3u
/* RFC 5880 6.8.1: bfd.AuthSeqKnown lapses after 2 detection times of silence. */
#define BFD_SEQ_KNOWN_DETECT_TIMES 2u
/* RFC 5880 6.8.7: TX jitter, in quarters and tenths of the interval. */
#define BFD_JITTER_MAX_DIV 4u           /* up to 25 % less */
#define BFD_JITTER_MIN_DIV_MULT1 10u    /* at least 10 % less with detect mult 1 */
#define BFD_NEVER UINT64_MAX

const char *const bfd_state_names[BFD_STATE_MAX] = {
	[BFD_STATE_ADMIN_DOWN] = "AdminDown",
	[BFD_STATE_DOWN] = "Down",
	[BFD_STATE_INIT] = "Init",
	[BFD_STATE_UP] = "Up",
};

const char *const bfd_diag_names[BFD_DIAG_MAX] = {
#define BFD_DIAG_NAME(name, text) [BFD_DIAG_##name] = text,
	BFD_DIAGS(BFD_DIAG_NAME)
#undef BFD_DIAG_NAME
};

const char *const bfd_drop_names[BFD_DROP_MAX] = {
#define BFD_DROP_NAME(name, desc) [BFD_DROP_##name] = #name,
	BFD_DROPS(BFD_DROP_NAME)
#undef BFD_DROP_NAME
};

const char *const bfd_drop_descriptions[BFD_DROP_MAX] = {
#define BFD_DROP_DESC(name, desc) [BFD_DROP_##name] = desc,
	BFD_DROPS(BFD_DROP_DESC)
#undef BFD_DROP_DESC
};

struct bfd_session {
	struct bfd_peer peer;
	uint8_t state;                  /* bfd.SessionState */
	uint8_t local_diag;             /* bfd.LocalDiag */
	uint8_t remote_state;           /* bfd.RemoteSessionState */
	uint8_t remote_diag;
	uint8_t remote_mult;            /* the last Detect Mult received; 0 none */
	bool poll_active;
	bool poll_sent;                 /* a Poll of this sequence went out */
	bool seq_known;                 /* bfd.AuthSeqKnown */
	uint32_t remote_discr;          /* bfd.RemoteDiscr */
	uint32_t desired_tx;            /* bfd.DesiredMinTxInterval, as sent */
	uint32_t tx_in_use;             /* what our TX interval uses (6.8.3) */
	uint32_t required_rx;           /* bfd.RequiredMinRxInterval, as sent */
	uint32_t rx_in_use;             /* what the detection time uses */
	uint32_t poll_tx, poll_rx;      /* what its first Poll carried */
	uint32_t remote_min_rx;         /* bfd.RemoteMinRxInterval */
	uint32_t remote_min_tx;         /* the last Desired Min TX received */
	uint32_t xmit_seq;              /* bfd.XmitAuthSeq */
	uint32_t rcv_seq;               /* bfd.RcvAuthSeq */
	uint64_t seq_known_until;
	uint64_t last_tx, next_tx;
	uint64_t last_rx, detect_at;
	uint64_t state_since;
	uint64_t packets_in, packets_out, state_changes;
};

struct bfd {
	struct bfd_ops ops;
	void *arg;
	uint32_t config_tx, config_rx;
	uint8_t detect_mult;
	bool auth;
	bool serving;
	bool admin_down;
	struct bfd_key key;
	uint64_t drops[BFD_DROP_MAX];
	uint32_t n;
	struct bfd_session s[];
};

static inline uint32_t
be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint32_t
max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static inline uint64_t
min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The auth section's checks that need no key: RFC 5880 6.8.6's lengths. */
static bool
parse_auth(const uint8_t *p, struct bfd_packet *pkt, enum bfd_drop *why)
{
	if (pkt->length < BFD_HEADER_LEN + BFD_AUTH_HEADER_LEN) {
		*why = BFD_DROP_BAD_LENGTH;
		return false;
	}
	pkt->auth_type = p[BFD_OFF_AUTH_TYPE];
	pkt->auth_len = p[BFD_OFF_AUTH_LEN];
	if (pkt->auth_len < BFD_AUTH_HEADER_LEN ||
	    pkt->length < BFD_HEADER_LEN + pkt->auth_len) {
		*why = BFD_DROP_BAD_LENGTH;
		return false;
	}
	/* Key id and sequence only where the section holds them. */
	if (pkt->auth_len >= BFD_OFF_AUTH_KEY_ID - BFD_OFF_AUTH_TYPE + 1)
		pkt->auth_key_id = p[BFD_OFF_AUTH_KEY_ID];
	if (pkt->auth_len >= BFD_OFF_AUTH_DIGEST - BFD_OFF_AUTH_TYPE)
		pkt->auth_seq = be32_get(p + BFD_OFF_AUTH_SEQ);
	return true;
}

bool
bfd_packet_parse(const uint8_t *p, uint32_t len, struct bfd_packet *pkt,
		 enum bfd_drop *why)
{
	memset(pkt, 0, sizeof(*pkt));
	if (len < BFD_HEADER_LEN) {
		*why = BFD_DROP_TRUNCATED;
		return false;
	}
	pkt->version = p[BFD_OFF_VERSION_DIAG] >> BFD_VERSION_SHIFT;
	pkt->diag = p[BFD_OFF_VERSION_DIAG] & BFD_DIAG_MASK;
	pkt->state = p[BFD_OFF_STATE_FLAGS] >> BFD_STATE_SHIFT;
	pkt->flags = p[BFD_OFF_STATE_FLAGS] & BFD_FLAGS_MASK;
	pkt->detect_mult = p[BFD_OFF_DETECT_MULT];
	pkt->length = p[BFD_OFF_LENGTH];
	pkt->my_discr = be32_get(p + BFD_OFF_MY_DISCR);
	pkt->your_discr = be32_get(p + BFD_OFF_YOUR_DISCR);
	pkt->desired_min_tx_us = be32_get(p + BFD_OFF_MIN_TX);
	pkt->required_min_rx_us = be32_get(p + BFD_OFF_MIN_RX);
	pkt->required_min_echo_rx_us = be32_get(p + BFD_OFF_MIN_ECHO_RX);
	if (pkt->version != BFD_VERSION)
		*why = BFD_DROP_BAD_VERSION;
	else if (pkt->length < BFD_HEADER_LEN || pkt->length > len)
		*why = BFD_DROP_BAD_LENGTH;
	else if ((pkt->flags & BFD_FLAG_AUTH) && !parse_auth(p, pkt, why))
		return false;
	else if (pkt->detect_mult == 0)
		*why = BFD_DROP_BAD_DETECT_MULT;
	else if (pkt->flags & BFD_FLAG_MULTIPOINT)
		*why = BFD_DROP_MULTIPOINT;
	else if ((pkt->flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) ==
		 (BFD_FLAG_POLL | BFD_FLAG_FINAL))
		*why = BFD_DROP_POLL_AND_FINAL;
	else if (pkt->my_discr == 0)
		*why = BFD_DROP_BAD_MY_DISCR;
	else
		return true;
	return false;
}

/* The digest field of the len-byte packet at p, computed (RFC 5880 6.7.4:
 * over the packet with the key, zero-padded to 20 bytes, in that field). */
static void
auth_digest(const uint8_t *p, uint8_t len, const struct bfd_key *key,
	    uint8_t out[SHA1_DIGEST_LEN])
{
	uint8_t buf[BFD_LENGTH_FIELD_MAX];

	memcpy(buf, p, len);
	memset(buf + BFD_OFF_AUTH_DIGEST, 0, SHA1_DIGEST_LEN);
	memcpy(buf + BFD_OFF_AUTH_DIGEST, key->secret, key->len);
	sha1(buf, len, out);
}

size_t
bfd_packet_build(uint8_t out[BFD_PACKET_MAX], const struct bfd_packet *pkt,
		 const struct bfd_key *key)
{
	size_t len = key != NULL ? BFD_PACKET_MAX : BFD_HEADER_LEN;
	uint8_t flags = (uint8_t)(pkt->flags & BFD_FLAGS_MASK & ~BFD_FLAG_AUTH);

	if (key != NULL)
		flags |= BFD_FLAG_AUTH;
	out[BFD_OFF_VERSION_DIAG] = (uint8_t)(BFD_VERSION << BFD_VERSION_SHIFT |
					      (pkt->diag & BFD_DIAG_MASK));
	out[BFD_OFF_STATE_FLAGS] = (uint8_t)((pkt->state & 3) << BFD_STATE_SHIFT | flags);
	out[BFD_OFF_DETECT_MULT] = pkt->detect_mult;
	out[BFD_OFF_LENGTH] = (uint8_t)len;
	be32_put(out + BFD_OFF_MY_DISCR, pkt->my_discr);
	be32_put(out + BFD_OFF_YOUR_DISCR, pkt->your_discr);
	be32_put(out + BFD_OFF_MIN_TX, pkt->desired_min_tx_us);
	be32_put(out + BFD_OFF_MIN_RX, pkt->required_min_rx_us);
	be32_put(out + BFD_OFF_MIN_ECHO_RX, pkt->required_min_echo_rx_us);
	if (key == NULL)
		return len;
	out[BFD_OFF_AUTH_TYPE] = BFD_AUTH_METICULOUS_SHA1;
	out[BFD_OFF_AUTH_LEN] = BFD_AUTH_SHA1_LEN;
	out[BFD_OFF_AUTH_KEY_ID] = key->id;
	out[BFD_OFF_AUTH_KEY_ID + 1] = 0;
	be32_put(out + BFD_OFF_AUTH_SEQ, pkt->auth_seq);
	auth_digest(out, (uint8_t)len, key, out + BFD_OFF_AUTH_DIGEST);
	return len;
}

/* Our negotiated TX interval (RFC 5880 6.8.7). */
static uint32_t
session_tx_interval(const struct bfd_session *s)
{
	return max32(s->tx_in_use, s->remote_min_rx);
}

/* The remote's negotiated TX interval, which detection counts (6.8.4). */
static uint32_t
session_rx_interval(const struct bfd_session *s)
{
	return max32(s->rx_in_use, s->remote_min_tx);
}

static uint64_t
session_detect_time(const struct bfd_session *s)
{
	return (uint64_t)s->remote_mult * session_rx_interval(s);
}

/* The interval less 0..25 % (10..25 % with detect mult 1): RFC 5880 6.8.7. */
static uint64_t
jittered(const struct bfd *b, uint32_t interval)
{
	uint32_t most = interval / BFD_JITTER_MAX_DIV;
	uint32_t least = b->detect_mult == 1 ? interval / BFD_JITTER_MIN_DIV_MULT1 : 0;
	uint64_t r = b->ops.random(b->arg);

	return interval - least - (((uint64_t)(most - least) * r) >> 32);
}

/* Next periodic packet, from the last one (none while RemoteMinRx is 0). */
static void
session_schedule_tx(const struct bfd *b, struct bfd_session *s)
{
	if (s->remote_min_rx == 0)
		s->next_tx = BFD_NEVER;
	else
		s->next_tx = s->last_tx + jittered(b, session_tx_interval(s));
}

static void
session_schedule_detect(struct bfd_session *s)
{
	s->detect_at = s->remote_mult == 0 ? BFD_NEVER : s->last_rx + session_detect_time(s);
}

static void
session_send(struct bfd *b, uint32_t i, bool final)
{
	struct bfd_session *s = &b->s[i];
	struct bfd_packet pkt = {
		.diag = s->local_diag,
		.state = s->state,
		.flags = final ? BFD_FLAG_FINAL : s->poll_active ? BFD_FLAG_POLL : 0,
		.detect_mult = b->detect_mult,
		.my_discr = s->peer.local_discr,
		.your_discr = s->remote_discr,
		.desired_min_tx_us = s->desired_tx,
		.required_min_rx_us = s->required_rx,
		.auth_seq = s->xmit_seq,
	};
	uint8_t out[BFD_PACKET_MAX];
	size_t len = bfd_packet_build(out, &pkt, b->auth ? &b->key : NULL);

	if ((pkt.flags & BFD_FLAG_POLL) && !s->poll_sent) {
		s->poll_sent = true;
		s->poll_tx = s->desired_tx;
		s->poll_rx = s->required_rx;
	}
	if (b->auth)
		s->xmit_seq++;          /* meticulous: every packet */
	s->packets_out++;
	b->ops.send(b->arg, i, out, len);
}

/* A periodic packet now, and the next one scheduled from it. */
static void
session_send_periodic(struct bfd *b, uint32_t i, uint64_t now)
{
	struct bfd_session *s = &b->s[i];

	session_send(b, i, false);
	s->last_tx = now;
	session_schedule_tx(b, s);
}

/* Start a Poll Sequence (RFC 5880 6.5), its first Poll now; one running
 * already is followed by another if what it carried differs at its end. */
static void
session_request_poll(struct bfd_session *s, uint64_t now)
{
	if (s->remote_discr == 0 || s->poll_active)
		return;
	s->poll_active = true;
	s->poll_sent = false;
	s->next_tx = now;
}

/* The Final came: what the Poll carried takes effect (bounded by what is
 * asked for now, which is safe: a shorter TX, a longer RX). */
static void
session_terminate_poll(const struct bfd *b, struct bfd_session *s, uint64_t now)
{
	s->poll_active = false;
	s->tx_in_use = s->poll_tx < s->desired_tx ? s->poll_tx : s->desired_tx;
	s->rx_in_use = max32(s->poll_rx, s->required_rx);
	session_schedule_tx(b, s);
	if (s->poll_tx != s->desired_tx || s->poll_rx != s->required_rx)
		session_request_poll(s, now);
}

/* RFC 5880 6.8.3: a shorter TX at once, a longer one after the poll. */
static void
session_set_desired_tx(const struct bfd *b, struct bfd_session *s, uint64_t now,
		       uint32_t tx)
{
	if (tx == s->desired_tx)
		return;
	s->desired_tx = tx;
	if (s->state != BFD_STATE_UP || tx < s->tx_in_use) {
		s->tx_in_use = tx;
		session_schedule_tx(b, s);
	}
	if (s->state == BFD_STATE_UP)
		session_request_poll(s, now);
}

/* RFC 5880 6.8.3: a longer RX at once, a shorter one after the poll. */
static void
session_set_required_rx(struct bfd_session *s, uint64_t now, uint32_t rx)
{
	if (rx == s->required_rx)
		return;
	s->required_rx = rx;
	if (s->state != BFD_STATE_UP || rx > s->rx_in_use) {
		s->rx_in_use = rx;
		session_schedule_detect(s);
	}
	if (s->state == BFD_STATE_UP)
		session_request_poll(s, now);
}

/* The TX interval a state asks for: the slow one unless Up (6.8.3). */
static uint32_t
state_desired_tx(const struct bfd *b, uint8_t state)
{
	return state == BFD_STATE_UP ? b->config_tx : max32(b->config_tx, BFD_SLOW_TX_US);
}

static void
session_set_state(struct bfd *b, uint32_t i, uint64_t now, uint8_t state, uint8_t diag)
{
	struct bfd_session *s = &b->s[i];
	uint8_t old = s->state;

	s->local_diag = diag;
	if (state == old)
		return;
	s->state = state;
	s->state_since = now;
	s->state_changes++;
	if (old == BFD_STATE_UP)
		s->poll_active = false;         /* the remote will not answer it now */
	session_set_desired_tx(b, s, now, state_desired_tx(b, state));
	if (b->ops.state_change != NULL)
		b->ops.state_change(b->arg, i, (enum bfd_state)old, (enum bfd_state)state,
				    (enum bfd_diag)diag);
}

/* Detection time passed: the remote is forgotten (RFC 5880 6.8.1, 6.8.4). */
static void
session_timeout(struct bfd *b, uint32_t i, uint64_t now)
{
	struct bfd_session *s = &b->s[i];

	s->remote_state = BFD_STATE_DOWN;
	s->remote_discr = 0;
	s->remote_min_tx = 0;
	s->remote_min_rx = 1;
	s->remote_mult = 0;
	s->poll_active = false;
	s->detect_at = BFD_NEVER;
	if (s->state == BFD_STATE_INIT || s->state == BFD_STATE_UP)
		session_set_state(b, i, now, BFD_STATE_DOWN, BFD_DIAG_DETECT_EXPIRED);
	session_schedule_tx(b, s);
}

/* The diag a Down session sends: why it is held Down, else why it went. */
static uint8_t
down_diag(const struct bfd *b, uint8_t diag)
{
	return b->serving ? diag : BFD_DIAG_CONCAT_PATH_DOWN;
}

/* RFC 5880 6.8.6's table, on the remote state just learnt; a session not
 * serving stays Down. */
static void
session_state_machine(struct bfd *b, uint32_t i, uint64_t now)
{
	struct bfd_session *s = &b->s[i];
	uint8_t remote = s->remote_state;

	switch (s->state) {
	case BFD_STATE_DOWN:
		if (!b->serving)
			break;
		if (remote == BFD_STATE_DOWN)
			session_set_state(b, i, now, BFD_STATE_INIT, BFD_DIAG_NONE);
		else if (remote == BFD_STATE_INIT)
			session_set_state(b, i, now, BFD_STATE_UP, BFD_DIAG_NONE);
		break;
	case BFD_STATE_INIT:
		if (remote == BFD_STATE_ADMIN_DOWN)
			session_set_state(b, i, now, BFD_STATE_DOWN,
					  down_diag(b, BFD_DIAG_NEIGHBOR_DOWN));
		else if (remote == BFD_STATE_INIT || remote == BFD_STATE_UP)
			session_set_state(b, i, now, BFD_STATE_UP, BFD_DIAG_NONE);
		break;
	case BFD_STATE_UP:
		if (remote == BFD_STATE_ADMIN_DOWN || remote == BFD_STATE_DOWN)
			session_set_state(b, i, now, BFD_STATE_DOWN,
					  down_diag(b, BFD_DIAG_NEIGHBOR_DOWN));
		break;
	default:
		break;                  /* AdminDown: packets change no state */
	}
}

/* The session a packet is for (RFC 5880 6.8.6), or -1 with *why. */
static int
find_session(const struct bfd *b, const struct bfd_rx *rx, const struct bfd_packet *pkt,
	     enum bfd_drop *why)
{
	/* RFC 5880 6.8.6: a zero Your Discriminator outside Down and AdminDown
	 * is discarded before any session is looked for */
	if (pkt->your_discr == 0 && pkt->state != BFD_STATE_DOWN &&
	    pkt->state != BFD_STATE_ADMIN_DOWN) {
		*why = BFD_DROP_BAD_YOUR_DISCR;
		return -1;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		const struct bfd_peer *peer = &b->s[i].peer;
		bool from_peer = peer->family == rx->family &&
				 memcmp(peer->addr, rx->source, sizeof(peer->addr)) == 0;

		if (pkt->your_discr != 0 && peer->local_discr == pkt->your_discr) {
			if (from_peer)
				return (int)i;
			*why = BFD_DROP_WRONG_PEER;
			return -1;
		}
		if (pkt->your_discr == 0 && from_peer)
			return (int)i;
	}
	*why = pkt->your_discr != 0 ? BFD_DROP_UNKNOWN_YOUR_DISCR : BFD_DROP_UNKNOWN_PEER;
	return -1;
}

/* Equal without an early exit: the time taken tells nothing of the digest. */
static bool
digest_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (unsigned k = 0; k < SHA1_DIGEST_LEN; k++)
		diff |= a[k] ^ b[k];
	return diff == 0;
}

/* RFC 5880 6.8.6's auth rules and 6.7.4 (meticulous): true if it passes. */
static bool
check_auth(const struct bfd *b, const struct bfd_session *s, uint64_t now,
	   const uint8_t *p, const struct bfd_packet *pkt, enum bfd_drop *why)
{
	uint8_t digest[SHA1_DIGEST_LEN];
	bool present = (pkt->flags & BFD_FLAG_AUTH) != 0;

	if (!b->auth || !present) {
		if (b->auth != present)
			*why = present ? BFD_DROP_AUTH_UNEXPECTED : BFD_DROP_AUTH_MISSING;
		return b->auth == present;
	}
	if (pkt->auth_type != BFD_AUTH_METICULOUS_SHA1)
		*why = BFD_DROP_AUTH_BAD_TYPE;
	else if (pkt->auth_len != BFD_AUTH_SHA1_LEN)
		*why = BFD_DROP_AUTH_BAD_LENGTH;
	else if (pkt->auth_key_id != b->key.id)
		*why = BFD_DROP_AUTH_BAD_KEY_ID;
	else if (s->seq_known && now < s->seq_known_until &&
		 pkt->auth_seq - s->rcv_seq - 1u >=
			 BFD_SEQ_WINDOW_PER_MULT * pkt->detect_mult)
		*why = BFD_DROP_AUTH_BAD_SEQUENCE;      /* outside +1..+3*mult, circular */
	else {
		auth_digest(p, pkt->length, &b->key, digest);
		if (digest_equal(digest, p + BFD_OFF_AUTH_DIGEST))
			return true;
		*why = BFD_DROP_AUTH_BAD_DIGEST;
	}
	return false;
}

/* A packet that passed every check: the remote's variables, then state. */
static void
session_receive(struct bfd *b, uint32_t i, uint64_t now, const struct bfd_packet *pkt)
{
	struct bfd_session *s = &b->s[i];
	uint32_t old_tx = session_tx_interval(s);

	s->packets_in++;
	if (b->auth) {
		s->rcv_seq = pkt->auth_seq;
		s->seq_known = true;
	}
	s->remote_discr = pkt->my_discr;
	s->remote_state = pkt->state;
	s->remote_diag = pkt->diag;
	s->remote_min_rx = pkt->required_min_rx_us;
	s->remote_min_tx = pkt->desired_min_tx_us;
	s->remote_mult = pkt->detect_mult;
	s->last_rx = now;
	if (s->poll_active && s->poll_sent && (pkt->flags & BFD_FLAG_FINAL))
		session_terminate_poll(b, s, now);
	else if (session_tx_interval(s) != old_tx ||
		 (s->remote_min_rx == 0) != (s->next_tx == BFD_NEVER))
		session_schedule_tx(b, s);
	session_schedule_detect(s);
	s->seq_known_until = now + BFD_SEQ_KNOWN_DETECT_TIMES * session_detect_time(s);
	session_state_machine(b, i, now);
	/* Not in AdminDown: 6.8.6 discards the packet before the Final. */
	if ((pkt->flags & BFD_FLAG_POLL) && s->state != BFD_STATE_ADMIN_DOWN)
		session_send(b, i, true);
}

int
bfd_input(struct bfd *b, uint64_t now_us, const struct bfd_rx *rx, enum bfd_drop *why)
{
	enum bfd_drop reason = BFD_DROP_MAX;
	struct bfd_packet pkt;
	int i = -1;

	/* The source port is not checked: RFC 5881 4 binds the sender only,
	 * and BIRD 2 sends from an ephemeral port (32768..60999 on Linux). */
	if (rx->ttl != BFD_TTL)
		reason = BFD_DROP_BAD_TTL;
	else if (bfd_packet_parse(rx->payload, rx->len, &pkt, &reason) &&
		 (i = find_session(b, rx, &pkt, &reason)) >= 0 &&
		 check_auth(b, &b->s[i], now_us, rx->payload, &pkt, &reason)) {
		/* commit */
		session_receive(b, (uint32_t)i, now_us, &pkt);
		return i;
	}
	b->drops[reason]++;
	if (why != NULL)
		*why = reason;
	return -1;
}

uint64_t
bfd_next_deadline(const struct bfd *b)
{
	uint64_t next = BFD_NEVER;

	for (uint32_t i = 0; i < b->n; i++)
		next = min64(next, min64(b->s[i].next_tx, b->s[i].detect_at));
	return next;
}

uint64_t
bfd_run(struct bfd *b, uint64_t now_us)
{
	for (uint32_t i = 0; i < b->n; i++) {
		struct bfd_session *s = &b->s[i];

		if (now_us >= s->detect_at)
			session_timeout(b, i, now_us);
		if (now_us >= s->next_tx)
			session_send_periodic(b, i, now_us);
	}
	return bfd_next_deadline(b);
}

void
bfd_set_serving(struct bfd *b, uint64_t now_us, bool serving)
{
	if (serving == b->serving)
		return;
	b->serving = serving;
	for (uint32_t i = 0; i < b->n; i++) {
		struct bfd_session *s = &b->s[i];

		if (s->state == BFD_STATE_ADMIN_DOWN)
			continue;
		if (!serving)
			session_set_state(b, i, now_us, BFD_STATE_DOWN,
					  BFD_DIAG_CONCAT_PATH_DOWN);
		else if (s->remote_discr != 0)
			session_state_machine(b, i, now_us);
		if (serving && s->state == BFD_STATE_DOWN)
			s->local_diag = BFD_DIAG_NONE;
		session_request_poll(s, now_us);
		session_send_periodic(b, i, now_us);
	}
}

void
bfd_set_admin_down(struct bfd *b, uint64_t now_us, bool admin_down)
{
	if (admin_down == b->admin_down)
		return;
	b->admin_down = admin_down;
	for (uint32_t i = 0; i < b->n; i++) {
		if (admin_down)
			session_set_state(b, i, now_us, BFD_STATE_ADMIN_DOWN, BFD_DIAG_ADMIN_DOWN);
		else
			session_set_state(b, i, now_us, BFD_STATE_DOWN,
					  down_diag(b, BFD_DIAG_NONE));
		session_send_periodic(b, i, now_us);
	}
}

int
bfd_set_intervals(struct bfd *b, uint64_t now_us, uint32_t desired_min_tx_us,
		  uint32_t required_min_rx_us)
{
	if (desired_min_tx_us == 0 || required_min_rx_us == 0)
		return -EINVAL;
	b->config_tx = desired_min_tx_us;
	b->config_rx = required_min_rx_us;
	for (uint32_t i = 0; i < b->n; i++) {
		struct bfd_session *s = &b->s[i];

		session_set_desired_tx(b, s, now_us, state_desired_tx(b, s->state));
		session_set_required_rx(s, now_us, required_min_rx_us);
	}
	return 0;
}

static bool
params_valid(const struct bfd_params *p, const struct bfd_ops *ops)
{
	if (p == NULL || ops == NULL || ops->send == NULL || ops->random == NULL ||
	    p->n_peers == 0 || p->n_peers > BFD_SESSIONS_MAX || p->peers == NULL ||
	    p->desired_min_tx_us == 0 || p->required_min_rx_us == 0 ||
	    p->detect_mult == 0 ||
	    (p->auth && (p->key.len == 0 || p->key.len > BFD_KEY_MAX)))
		return false;
	for (uint32_t i = 0; i < p->n_peers; i++) {
		const struct bfd_peer *a = &p->peers[i];

		if (a->local_discr == 0 ||
		    (a->family != FLOW_FAMILY_IPV4 && a->family != FLOW_FAMILY_IPV6))
			return false;
		for (uint32_t j = 0; j < i; j++)
			if (p->peers[j].local_discr == a->local_discr ||
			    (p->peers[j].family == a->family &&
			     memcmp(p->peers[j].addr, a->addr, sizeof(a->addr)) == 0))
				return false;
	}
	return true;
}

struct bfd *
bfd_create(const struct bfd_params *params, const struct bfd_ops *ops, void *arg,
	   uint64_t now_us)
{
	struct bfd *b;

	if (!params_valid(params, ops)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b) + params->n_peers * sizeof(b->s[0]));
	if (b == NULL)
		return NULL;
	b->ops = *ops;
	b->arg = arg;
	b->config_tx = params->desired_min_tx_us;
	b->config_rx = params->required_min_rx_us;
	b->detect_mult = params->detect_mult;
	b->auth = params->auth;
	b->key = params->key;
	b->serving = params->serving;
	b->n = params->n_peers;
	for (uint32_t i = 0; i < b->n; i++) {
		struct bfd_session *s = &b->s[i];

		s->peer = params->peers[i];
		s->state = BFD_STATE_DOWN;
		s->local_diag = down_diag(b, BFD_DIAG_NONE);
		s->remote_state = BFD_STATE_DOWN;
		s->remote_min_rx = 1;           /* RFC 5880 6.8.1 */
		s->desired_tx = s->tx_in_use = state_desired_tx(b, BFD_STATE_DOWN);
		s->required_rx = s->rx_in_use = b->config_rx;
		s->xmit_seq = ops->random(arg);
		s->next_tx = now_us;
		s->detect_at = BFD_NEVER;
		s->state_since = now_us;
	}
	return b;
}

void
bfd_destroy(struct bfd *b)
{
	free(b);
}

uint32_t
bfd_sessions(const struct bfd *b)
{
	return b->n;
}

int
bfd_session_status(const struct bfd *b, uint32_t i, struct bfd_session_status *out)
{
	const struct bfd_session *s;

	if (i >= b->n)
		return -ENOENT;
	s = &b->s[i];
	memset(out, 0, sizeof(*out));   /* padding too: copies compare whole */
	out->family = s->peer.family;
	memcpy(out->peer, s->peer.addr, sizeof(out->peer));
	out->state = s->state;
	out->remote_state = s->remote_state;
	out->local_diag = s->local_diag;
	out->remote_diag = s->remote_diag;
	out->detect_mult = b->detect_mult;
	out->remote_detect_mult = s->remote_mult;
	out->serving = b->serving;
	out->poll_active = s->poll_active;
	out->local_discr = s->peer.local_discr;
	out->remote_discr = s->remote_discr;
	out->desired_min_tx_us = s->desired_tx;
	out->required_min_rx_us = s->required_rx;
	out->remote_min_tx_us = s->remote_min_tx;
	out->remote_min_rx_us = s->remote_min_rx;
	out->tx_interval_us = session_tx_interval(s);
	out->rx_interval_us = session_rx_interval(s);
	out->detect_time_us = session_detect_time(s);
	out->state_since_us = s->state_since;
	out->packets_in = s->packets_in;
	out->packets_out = s->packets_out;
	out->state_changes = s->state_changes;
	return 0;
}

void
bfd_drops(const struct bfd *b, uint64_t out[BFD_DROP_MAX])
{
	memcpy(out, b->drops, sizeof(b->drops));
}
