/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BFD, asynchronous mode (RFC 5880) over single-hop IP (RFC 5881): the
 * packet checks, the packet writer and the sessions' state machine, with
 * no DPDK, no clock and no allocation after bfd_create().
 *
 * The dataplane answers BFD on its data port so that a router's session
 * shares fate with forwarding. The caller (the control thread) hands in
 * what a worker received for UDP port 3784 (the UDP payload, the IP TTL or
 * hop limit, the UDP source port, the IP source) with bfd_input(), calls
 * bfd_run() by the deadline it returns, and sends what ops->send() gives
 * it: a control packet, the UDP payload only, to the session's peer, from
 * one source port of 49152..65535 per session, TTL / hop limit 255. Time
 * is the caller's monotonic clock in microseconds.
 *
 * Every function takes a struct bfd that one thread (control) owns.
 *
 * Not implemented: demand mode (a remote that asks for it is answered as
 * if it did not: RFC 5880 6.6 lets either side refuse it), the echo
 * function (Required Min Echo RX is sent 0), multipoint, authentication
 * types other than Meticulous Keyed SHA-1 (RFC 5880 6.7.4).
 *
 * Not serving: routers must drop this node's next hop at once. RFC 5882
 * 3.2 asks clients not to treat a neighbour's AdminDown as a failure, so
 * the sessions signal Down instead, with diag 6 (Concatenated Path Down:
 * the service path behind this node is down), and stay Down until serving
 * again. What BIRD 2 does, from its source (proto/bfd/, proto/static/,
 * proto/bgp/):
 *  - 2.0.12: bfd_rx_hook() stores the remote state and diag (the diag is
 *    never read again); bfd_session_process_ctl() takes an Up or Init
 *    session Down with diag 3 on a remote AdminDown or Down alike;
 *    bfd_request_notify() sets req->down on Up -> Down. static_decide()
 *    withdraws a route whose request is not Up; bgp_bfd_notify() stops
 *    the BGP session (or starts a graceful restart) on req->down. So
 *    AdminDown and Down act alike, and the diag changes nothing.
 *  - 2.14 on (commit aa70e14c9, "BFD: Improve handling of AdminDown"):
 *    bfd_request_notify() no longer sets req->down when the remote state
 *    is AdminDown, so BGP keeps its session through a remote AdminDown;
 *    static routes are still withdrawn (the local state is Down).
 * Down works on every version and for both clients; AdminDown would leave
 * BGP up on 2.14 and on any RFC 5882 router. Diag 7 (Administratively
 * Down) is left out for the same reason: a router may read it as AdminDown.
 */
#ifndef MAGLB_DATAPLANE_BFD_H
#define MAGLB_DATAPLANE_BFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	BFD_PORT = 3784,                /* RFC 5881 4: single-hop control */
	BFD_SOURCE_PORT_MIN = 49152,    /* RFC 5881 4: the source port range */
	BFD_TTL = 255,                  /* RFC 5881 5: GTSM */
	BFD_VERSION = 1,
	BFD_HEADER_LEN = 24,
	BFD_AUTH_HEADER_LEN = 2,        /* type and length, then the rest */
	BFD_AUTH_SHA1_LEN = 28,         /* RFC 5880 4.4 */
	BFD_PACKET_MAX = BFD_HEADER_LEN + BFD_AUTH_SHA1_LEN,
	BFD_KEY_MAX = 20,               /* RFC 5880 4.4: a SHA-1 key, 1..20 bytes */
	BFD_SESSIONS_MAX = 64,
	BFD_SLOW_TX_US = 1000000,       /* RFC 5880 6.8.3: TX while not Up */
	BFD_AUTH_METICULOUS_SHA1 = 5,   /* RFC 5880 4.1 Auth Type */
};

/* RFC 5880 4.1, the wire values. */
enum bfd_state {
	BFD_STATE_ADMIN_DOWN = 0,
	BFD_STATE_DOWN,
	BFD_STATE_INIT,
	BFD_STATE_UP,
	BFD_STATE_MAX
};

extern const char *const bfd_state_names[BFD_STATE_MAX];

/* Diagnostics (RFC 5880 4.1): X(NAME, "text"), in wire order from 0. */
#define BFD_DIAGS(X)							\
	X(NONE, "No Diagnostic")					\
	X(DETECT_EXPIRED, "Control Detection Time Expired")		\
	X(ECHO_FAILED, "Echo Function Failed")				\
	X(NEIGHBOR_DOWN, "Neighbor Signaled Session Down")		\
	X(FORWARDING_RESET, "Forwarding Plane Reset")			\
	X(PATH_DOWN, "Path Down")					\
	X(CONCAT_PATH_DOWN, "Concatenated Path Down")			\
	X(ADMIN_DOWN, "Administratively Down")				\
	X(REVERSE_CONCAT_PATH_DOWN, "Reverse Concatenated Path Down")

enum bfd_diag {
#define BFD_DIAG_ENUM(name, text) BFD_DIAG_##name,
	BFD_DIAGS(BFD_DIAG_ENUM)
#undef BFD_DIAG_ENUM
	BFD_DIAG_MAX
};

extern const char *const bfd_diag_names[BFD_DIAG_MAX];

/* A diag's text; a remote may send 9..31, which have none yet. */
static inline const char *
bfd_diag_name(uint8_t diag)
{
	return diag < BFD_DIAG_MAX ? bfd_diag_names[diag] : "Reserved";
}

/*
 * Why a received packet was dropped, in the order checked (RFC 5881 5,
 * then RFC 5880 6.8.6 and 6.7.4): X(NAME, "description"). A dropped
 * packet changes no session.
 */
#define BFD_DROPS(X)							\
	X(BAD_TTL, "TTL or hop limit not 255: sent from off the link")	\
	X(TRUNCATED, "payload shorter than 24 bytes")			\
	X(BAD_VERSION, "version not 1")					\
	X(BAD_LENGTH, "length below 24 (26 and the auth section with A) or past the payload") \
	X(BAD_DETECT_MULT, "detect multiplier 0")			\
	X(MULTIPOINT, "multipoint (M) bit set")				\
	X(POLL_AND_FINAL, "poll (P) and final (F) bits both set")	\
	X(BAD_MY_DISCR, "my discriminator 0")				\
	X(UNKNOWN_YOUR_DISCR, "your discriminator names no session")	\
	X(WRONG_PEER, "your discriminator's session has another peer address") \
	X(BAD_YOUR_DISCR, "your discriminator 0 in a state other than Down or AdminDown") \
	X(UNKNOWN_PEER, "your discriminator 0 from an address with no session") \
	X(AUTH_UNEXPECTED, "authentication (A bit) on a session without")	\
	X(AUTH_MISSING, "no authentication on a session with")		\
	X(AUTH_BAD_TYPE, "auth type not Meticulous Keyed SHA-1")	\
	X(AUTH_BAD_LENGTH, "auth length not 28")			\
	X(AUTH_BAD_KEY_ID, "auth key id not the configured one")	\
	X(AUTH_BAD_SEQUENCE, "sequence number not in RcvAuthSeq+1..+3*DetectMult: a replay") \
	X(AUTH_BAD_DIGEST, "SHA-1 digest wrong")

enum bfd_drop {
#define BFD_DROP_ENUM(name, desc) BFD_DROP_##name,
	BFD_DROPS(BFD_DROP_ENUM)
#undef BFD_DROP_ENUM
	BFD_DROP_MAX
};

extern const char *const bfd_drop_names[BFD_DROP_MAX];
extern const char *const bfd_drop_descriptions[BFD_DROP_MAX];

/* Flags, the low six bits of the second byte (RFC 5880 4.1). */
enum bfd_flag {
	BFD_FLAG_MULTIPOINT = 0x01,
	BFD_FLAG_DEMAND = 0x02,
	BFD_FLAG_AUTH = 0x04,
	BFD_FLAG_CPI = 0x08,            /* control plane independent */
	BFD_FLAG_FINAL = 0x10,
	BFD_FLAG_POLL = 0x20,
};

/*
 * A control packet, parsed or to write (RFC 5880 4.1, 4.4):
 *
 *    0       1       2       3
 *   +-------+-------+-------+-------+
 *   |V3 D5  |S2 F6  | mult  |length |   version, diag, state, flags
 *   +-------+-------+-------+-------+
 *   |       my discriminator        |
 *   |      your discriminator       |
 *   |    desired min TX (us)        |
 *   |    required min RX (us)       |
 *   |  required min echo RX (us)    |
 *   +-------+-------+-------+-------+   with A:
 *   | type  |  len  |key id | zero  |
 *   |        sequence number        |
 *   |    SHA-1 digest, 20 bytes     |
 *   +-------------------------------+
 */
struct bfd_packet {
	uint8_t version;
	uint8_t diag;                   /* 0..31 */
	uint8_t state;                  /* enum bfd_state */
	uint8_t flags;                  /* enum bfd_flag */
	uint8_t detect_mult;
	uint8_t length;
	uint32_t my_discr;
	uint32_t your_discr;
	uint32_t desired_min_tx_us;
	uint32_t required_min_rx_us;
	uint32_t required_min_echo_rx_us;
	uint8_t auth_type;              /* with BFD_FLAG_AUTH only */
	uint8_t auth_len;
	uint8_t auth_key_id;
	uint32_t auth_seq;
};

/* A SHA-1 key: id and 1..BFD_KEY_MAX bytes. */
struct bfd_key {
	uint8_t id;
	uint8_t len;
	uint8_t secret[BFD_KEY_MAX];
};

/*
 * The checks of RFC 5880 6.8.6 that need no session, on the len bytes at
 * payload: version, lengths (the auth section's own one too), detect
 * multiplier, M, P with F, my discriminator. Fills *pkt and returns true,
 * or returns false with *why set. Reads nothing past len. Pure.
 */
bool bfd_packet_parse(const uint8_t *payload, uint32_t len, struct bfd_packet *pkt,
		      enum bfd_drop *why);

/*
 * Write *pkt (version, length and the A flag set here) into out, which
 * has room for BFD_PACKET_MAX bytes; with key, a Meticulous Keyed SHA-1
 * section (pkt->auth_seq, key->id, the digest). Returns the length, 24 or
 * 52. Pure.
 */
size_t bfd_packet_build(uint8_t out[BFD_PACKET_MAX], const struct bfd_packet *pkt,
			const struct bfd_key *key);

/* What a session needs of the caller. */
struct bfd_ops {
	/* Send the len-byte control packet to session i's peer (best effort:
	 * a packet lost here is as one lost on the wire). */
	void (*send)(void *arg, uint32_t i, const uint8_t *payload, size_t len);
	/* Session i went from old to state, for diag (may be NULL). */
	void (*state_change)(void *arg, uint32_t i, enum bfd_state old,
			     enum bfd_state state, enum bfd_diag diag);
	/* A uniformly random 32-bit value: TX jitter, the first sequence
	 * number. */
	uint32_t (*random)(void *arg);
};

/* One session's peer: family 4 or 6 (FLOW_FAMILY_*), the address (IPv4
 * in the first 4 bytes, the rest 0), a nonzero local discriminator
 * unique among the sessions. */
struct bfd_peer {
	uint8_t family;
	uint8_t addr[16];
	uint32_t local_discr;
};

struct bfd_params {
	uint32_t n_peers;               /* 1..BFD_SESSIONS_MAX */
	const struct bfd_peer *peers;   /* copied */
	uint32_t desired_min_tx_us;     /* once Up; >= 1 */
	uint32_t required_min_rx_us;    /* >= 1 */
	uint8_t detect_mult;            /* >= 1 */
	bool auth;
	struct bfd_key key;             /* with auth: len 1..BFD_KEY_MAX */
	bool serving;                   /* the start value of bfd_set_serving() */
};

struct bfd;     /* opaque: the sessions and their drop counters */

/*
 * Sessions for params->peers, session i for peers[i], all Down, the first
 * packets due at now_us. ops (send and random required) and arg are kept.
 * Returns NULL with errno EINVAL (a bad param, a duplicate peer or
 * discriminator) or ENOMEM.
 */
struct bfd *bfd_create(const struct bfd_params *params, const struct bfd_ops *ops,
		       void *arg, uint64_t now_us);

/* Free b; NULL is a no-op. */
void bfd_destroy(struct bfd *b);

/* A received packet as the worker saw it. */
struct bfd_rx {
	const uint8_t *payload;         /* the UDP payload */
	uint32_t len;
	uint8_t ttl;                    /* IPv4 TTL / IPv6 hop limit */
	uint16_t source_port;           /* UDP, host order */
	uint8_t family;                 /* of the IP source */
	uint8_t source[16];
};

/*
 * Take one packet at now_us: every check, then (only once all passed) the
 * session's update and state machine; a Poll is answered at once through
 * ops->send. Returns the session's index, or -1 with the drop counted and
 * *why set (why may be NULL). No allocation. A taken packet, like the
 * bfd_set_*() calls, may move the next deadline earlier (a Poll due now,
 * a shorter interval): ask bfd_next_deadline() again.
 */
int bfd_input(struct bfd *b, uint64_t now_us, const struct bfd_rx *rx, enum bfd_drop *why);

/*
 * Run what is due at now_us: detection timeouts (Init or Up go Down, diag
 * 1; the remote is forgotten), periodic packets (jittered, RFC 5880
 * 6.8.7). Returns when it must run next (the earliest TX or detection
 * deadline, UINT64_MAX for none). Calling it early is harmless.
 */
uint64_t bfd_run(struct bfd *b, uint64_t now_us);

/* The deadline bfd_run() would return, without running anything. */
uint64_t bfd_next_deadline(const struct bfd *b);

/*
 * Whether this node should get traffic. false: every session not
 * AdminDown goes Down (diag CONCAT_PATH_DOWN, see the top) and stays
 * Down; true: they follow the state machine again, from the remote's
 * last state at once. A change sends a packet on every session at once,
 * with a Poll when the remote is known, so that a router acts now and
 * its Final confirms it heard. Idempotent.
 */
void bfd_set_serving(struct bfd *b, uint64_t now_us, bool serving);

/*
 * Administrative control (RFC 5880 6.8.16): true takes every session to
 * AdminDown (diag ADMIN_DOWN; routers keep their routes, RFC 5882 3.2),
 * false back to Down. Received packets update the remote but change no
 * state while AdminDown.
 */
void bfd_set_admin_down(struct bfd *b, uint64_t now_us, bool admin_down);

/*
 * New intervals (a reload): desired min TX and required min RX, both >= 1
 * microsecond. An Up session runs a Poll Sequence (RFC 5880 6.8.3): a
 * longer TX or a shorter RX take effect once the Final comes back.
 * Returns 0 or -EINVAL.
 */
int bfd_set_intervals(struct bfd *b, uint64_t now_us, uint32_t desired_min_tx_us,
		      uint32_t required_min_rx_us);

/* A session as maglbctl shows it: a copy. */
struct bfd_session_status {
	uint8_t family;
	uint8_t peer[16];
	uint8_t state;                  /* enum bfd_state */
	uint8_t remote_state;
	uint8_t local_diag;             /* enum bfd_diag */
	uint8_t remote_diag;            /* as received, 0..31 */
	uint8_t detect_mult;
	uint8_t remote_detect_mult;     /* 0: not heard within detection time */
	bool serving;
	bool poll_active;
	uint32_t local_discr;
	uint32_t remote_discr;          /* 0: not heard */
	uint32_t desired_min_tx_us;     /* as sent */
	uint32_t required_min_rx_us;
	uint32_t remote_min_tx_us;      /* as received */
	uint32_t remote_min_rx_us;
	uint32_t tx_interval_us;        /* negotiated: ours, before jitter */
	uint32_t rx_interval_us;        /* negotiated: the remote's */
	uint64_t detect_time_us;        /* remote detect mult x rx interval */
	uint64_t state_since_us;        /* time of the last state change */
	uint64_t packets_in;            /* accepted */
	uint64_t packets_out;
	uint64_t state_changes;
};

/* Session i's status into *out. Returns 0, or -ENOENT past the last. */
int bfd_session_status(const struct bfd *b, uint32_t i, struct bfd_session_status *out);

/* The number of sessions. */
uint32_t bfd_sessions(const struct bfd *b);

/* The drop counters since create, BFD_DROP_MAX of them, into out. */
void bfd_drops(const struct bfd *b, uint64_t out[BFD_DROP_MAX]);

#endif /* MAGLB_DATAPLANE_BFD_H */
