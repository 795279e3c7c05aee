/*
 * lbsync: a stand-in for maglb-syncd in the end-to-end tests. It speaks to
 * the dataplane through the IPC client library (lib/ipc_client.h), as syncd
 * will: it records the export stream to a file, and imports a recorded file
 * into a dataplane (the same one, or another one after a restart).
 *
 *   lbsync [--service NAME] record --out FILE [--count N] [--timeout-s S]
 *   lbsync [--service NAME] import --in FILE [--lifetime-ms L] [--batch N]
 *          [--closes]
 *
 * --service: the dataplane's IPC service (default maglb-dataplane). Run
 * lbsync in the dataplane's network namespace: libqb's sockets are abstract
 * Unix sockets, which belong to a namespace.
 *
 * record: subscribe to the export stream (EXPORT_SUBSCRIBE), print "ready"
 * on stdout (flushed) once the dataplane has acknowledged, then append every
 * entry of every EXPORT_BATCH to FILE as one line (FILE is created if
 * missing), flushed after each batch. A batch that reports events the
 * dataplane lost (its `dropped`) adds a line "# lost N" and a warning on
 * stderr. Each batch's entries follow a line "# at US": when lbsync received
 * it, CLOCK_REALTIME in microseconds (bash's ${EPOCHREALTIME/./}), so a
 * test can tell when an event was exported at the latest. It ends with
 * status 0 once N new events are recorded (--count) or
 * on SIGTERM or SIGINT, with 1 once S seconds have passed (--timeout-s,
 * default 60; 0: no limit). A summary goes to stderr.
 *
 * import: read FILE, keep each flow's last event (by line order), skip the
 * flows whose last event is close (--closes: send them too, as a peer's
 * ended flows), and send the others as IMPORT_BATCH messages of their last
 * event (new or refresh; the dataplane applies both alike), at most N
 * entries each (--batch, default and at most 8192, the dataplane's
 * IPC_FLOWS_PER_MSG_MAX) and never more bytes than one IPC message holds.
 * --lifetime-ms L sends L as every entry's lifetime instead of the recorded
 * one. Prints "imported E entries in M message(s) (new X, refresh Y, close
 * Z), skipped C closed" on stdout once the dataplane has acknowledged every
 * message.
 *
 * FILE: one flow event a line, nine fields separated by blanks:
 *
 *   EVENT PROTO VIP VIP_PORT CLIENT CLIENT_PORT BACKEND LIFETIME_MS FLAGS
 *   new tcp 198.18.1.1 8000 198.18.10.2 40312 198.18.0.21 10000 -
 *
 * EVENT is new, refresh or close; PROTO tcp or udp; addresses are IPv4 or
 * IPv6 (VIP and CLIENT of one family; BACKEND may differ); LIFETIME_MS is
 * the idle lifetime the dataplane gave (its state's timeout at the event);
 * FLAGS is a comma list of established, closing, from-peer, or "-". Blank
 * lines and lines starting with '#' are skipped.
 *
 * Exit status: 0 done (record: N new events recorded, or a signal); 1 an
 * IPC error (the dataplane is not running, refused us or a message, went
 * away, did not answer), a file error (FILE:LINE: reason), or record's
 * timeout; 2 bad arguments (the usage on stderr).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/ipc.h"
#include "lib/ipc_client.h"
#include "proto/wire.h"

enum {
	LBSYNC_FIELDS = 9,
	LBSYNC_ENVELOPE_MAX = 64,      /* bytes of a batch besides its entries */
	LBSYNC_FLAGS_MAX = 64,
};

static const char *const lbsync_flag_names[] = {
	"established",  /* WIRE_FLOW_ESTABLISHED */
	"closing",      /* WIRE_FLOW_CLOSING */
	"from-peer",    /* WIRE_FLOW_FROM_PEER */
};

struct options {
	const char *service;
	const char *file;
	unsigned count;         /* record: new events to await; 0: until a signal */
	unsigned timeout_s;     /* record: 0: no limit */
	uint32_t lifetime_ms;   /* import: 0: as recorded */
	unsigned batch;         /* import: entries per message */
	bool closes;            /* import: send close events too */
	bool record;
};

/* One recorded event, with its line: the last line of a flow wins. */
struct record {
	struct wire_flow flow;
	enum wire_flow_event event;
	size_t line;
};

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: lbsync [--service NAME] record --out FILE [--count N] [--timeout-s S]\n"
		"       lbsync [--service NAME] import --in FILE [--lifetime-ms L] [--batch N]\n"
		"                                       [--closes]\n");
}

static int
parse_unsigned(const char *text, unsigned long max, unsigned long *value)
{
	char *end;
	unsigned long v;

	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -EINVAL;
	*value = v;
	return 0;
}

/* A number for option name, 1..max (0..max when zero_ok); 0 or -EINVAL. */
static int
option_number(const char *name, const char *text, unsigned long max,
	      bool zero_ok, unsigned long *value)
{
	if (parse_unsigned(text, max, value) == 0 && (zero_ok || *value > 0))
		return 0;
	fprintf(stderr, "lbsync: %s wants %s..%lu, not '%s'\n", name, zero_ok ? "0" : "1",
		max, text);
	return -EINVAL;
}

/* Whether option name belongs to the mode (record or import). */
static int
option_of(const struct options *o, const char *name, bool for_record)
{
	if (o->record == for_record)
		return 0;
	fprintf(stderr, "lbsync: %s is not an option of %s\n", name,
		o->record ? "record" : "import");
	return -EINVAL;
}

/* optarg as the number of option name of a mode; 0 or -EINVAL. */
static int
mode_number(const struct options *o, const char *name, bool for_record,
	    unsigned long max, bool zero_ok, unsigned long *value)
{
	if (option_of(o, name, for_record) < 0)
		return -EINVAL;
	return option_number(name, optarg, max, zero_ok, value);
}

static int
options_mode(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"out", required_argument, NULL, 'o'},
		{"in", required_argument, NULL, 'i'},
		{"count", required_argument, NULL, 'n'},
		{"timeout-s", required_argument, NULL, 't'},
		{"lifetime-ms", required_argument, NULL, 'l'},
		{"batch", required_argument, NULL, 'b'},
		{"closes", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned long v = 0;
	int c, err = 0;

	optind = 0;     /* glibc: start over, on the mode's own arguments */
	while (err == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
		case 'i':
			err = option_of(o, c == 'o' ? "--out" : "--in", c == 'o');
			o->file = optarg;
			break;
		case 'n':
			err = mode_number(o, "--count", true, 10000000, false, &v);
			o->count = (unsigned)v;
			break;
		case 't':
			err = mode_number(o, "--timeout-s", true, 86400, true, &v);
			o->timeout_s = (unsigned)v;
			break;
		case 'l':
			err = mode_number(o, "--lifetime-ms", false, INT32_MAX, false, &v);
			o->lifetime_ms = (uint32_t)v;
			break;
		case 'b':
			err = mode_number(o, "--batch", false, IPC_FLOWS_PER_MSG_MAX, false, &v);
			o->batch = (unsigned)v;
			break;
		case 'c':
			err = option_of(o, "--closes", false);
			o->closes = true;
			break;
		case 'h': usage(stdout); exit(0);
		default: err = -EINVAL; break;
		}
	}
	if (err == 0 && optind != argc) {
		fprintf(stderr, "lbsync: unexpected argument '%s'\n", argv[optind]);
		err = -EINVAL;
	}
	if (err == 0 && o->file == NULL) {
		fprintf(stderr, "lbsync: %s wants %s FILE\n", argv[0],
			o->record ? "--out" : "--in");
		err = -EINVAL;
	}
	return err;
}

static int
options_parse(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"service", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct options){ .service = IPC_SERVICE_DATAPLANE, .timeout_s = 60,
			       .batch = IPC_FLOWS_PER_MSG_MAX };
	/* "+": stop at the mode word, whose options are parsed apart */
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->service = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "lbsync: no mode: record or import\n");
		return -EINVAL;
	}
	if (strcmp(argv[optind], "record") == 0) {
		o->record = true;
	} else if (strcmp(argv[optind], "import") != 0) {
		fprintf(stderr, "lbsync: unknown mode '%s': record or import\n", argv[optind]);
		return -EINVAL;
	}
	return options_mode(argc - optind, argv + optind, o);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
ipc_error(const struct options *o, const char *what, int rc)
{
	char buf[256];

	fprintf(stderr, "lbsync: %s: %s\n", what,
		ipc_strerror(rc, o->service, buf, sizeof(buf)));
	return 1;
}

/* One request whose answer must be the plain acknowledgement (ERROR 0). */
static int
request_ack(const struct options *o, struct ipc_client *c,
	    const struct wire_ctl_msg *req, const char *what)
{
	struct wire_ctl_msg resp;
	int rc = ipc_client_request(c, req, &resp, IPC_CLIENT_TIMEOUT_DEFAULT_MS);

	if (rc < 0)
		return ipc_error(o, what, rc);
	if (resp.kind != WIRE_CTL_ERROR || resp.error.code != 0) {
		fprintf(stderr, "lbsync: %s: the dataplane refused: %s\n", what,
			resp.kind == WIRE_CTL_ERROR ? resp.error.message :
			wire_ctl_kind_names[resp.kind]);
		rc = -EPROTO;
	}
	wire_ctl_msg_free(&resp);
	return rc < 0 ? 1 : 0;
}

/* ---------------------------------------------------------------- record */

static const char *
addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len)
{
	if (inet_ntop(family, addr, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

static void
flags_str(uint32_t flags, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(lbsync_flag_names) / sizeof(lbsync_flag_names[0]); i++)
		if (flags & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
					      lbsync_flag_names[i]);
	if (n == 0)
		snprintf(buf, len, "-");
}

static void
record_line(FILE *out, enum wire_flow_event event, const struct wire_flow *f)
{
	char vip[INET6_ADDRSTRLEN], client[INET6_ADDRSTRLEN], backend[INET6_ADDRSTRLEN];
	char flags[LBSYNC_FLAGS_MAX];

	flags_str(f->flags, flags, sizeof(flags));
	fprintf(out, "%s %s %s %u %s %u %s %u %s\n", wire_flow_event_names[event],
		f->proto == IPPROTO_TCP ? "tcp" : "udp",
		addr_str(f->family, f->vip, vip, sizeof(vip)), f->vip_port,
		addr_str(f->family, f->client, client, sizeof(client)), f->client_port,
		addr_str(f->backend_family, f->backend, backend, sizeof(backend)),
		f->lifetime_ms, flags);
}

struct recorder {
	FILE *out;
	uint64_t events[WIRE_FLOW_EVENT_MAX];
	uint64_t lost;
	uint64_t ignored;       /* events of another kind than EXPORT_BATCH */
};

/* Write one event message to the file; 0 or -errno. */
static int
record_batch(struct recorder *r, const struct wire_ctl_msg *m)
{
	struct timespec now;

	if (m->kind != WIRE_CTL_EXPORT_BATCH) {
		r->ignored++;
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(r->out, "# at %lld\n", (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
	if (m->flows.dropped > 0) {
		fprintf(r->out, "# lost %llu\n", (unsigned long long)m->flows.dropped);
		fprintf(stderr, "lbsync: the dataplane lost %llu flow events\n",
			(unsigned long long)m->flows.dropped);
		r->lost += m->flows.dropped;
	}
	for (size_t i = 0; i < m->flows.count; i++)
		record_line(r->out, m->flows.event, &m->flows.entries[i]);
	r->events[m->flows.event] += m->flows.count;
	if (fflush(r->out) != 0 || ferror(r->out))
		return errno != 0 ? -errno : -EIO;
	return 0;
}

/* Every event waiting on c; 0 once none is left, or -errno. */
static int
record_drain(const struct options *o, struct ipc_client *c, struct recorder *r)
{
	for (;;) {
		struct wire_ctl_msg m;
		int rc = ipc_client_event_recv(c, &m, 0);

		if (rc == -EAGAIN)
			return 0;
		if (rc < 0) {
			ipc_error(o, "receiving flow events", rc);
			return rc;
		}
		rc = record_batch(r, &m);
		wire_ctl_msg_free(&m);
		if (rc < 0) {
			fprintf(stderr, "lbsync: %s: %s\n", o->file, strerror(-rc));
			return rc;
		}
	}
}

/* Block SIGTERM and SIGINT and read them from a descriptor instead. */
static int
signal_fd(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Poll the events and the signals until done; the exit status. */
static int
record_loop(const struct options *o, struct ipc_client *c, struct recorder *r)
{
	int64_t deadline = o->timeout_s ? now_ms() + o->timeout_s * 1000ll : -1;
	struct pollfd pfd[2] = {
		{ .fd = ipc_client_fd(c), .events = POLLIN },
		{ .fd = signal_fd(), .events = POLLIN },
	};

	if (pfd[0].fd < 0 || pfd[1].fd < 0) {
		fprintf(stderr, "lbsync: no descriptor to poll: %s\n",
			strerror(pfd[0].fd < 0 ? -pfd[0].fd : errno));
		return 1;
	}
	while (o->count == 0 || r->events[WIRE_FLOW_EVENT_NEW] < o->count) {
		int64_t left = deadline < 0 ? -1 : deadline - now_ms();
		int n;

		if (deadline >= 0 && left <= 0) {
			fprintf(stderr, "lbsync: timed out after %u s with %llu new events "
				"(--count %u)\n", o->timeout_s,
				(unsigned long long)r->events[WIRE_FLOW_EVENT_NEW], o->count);
			return 1;
		}
		n = poll(pfd, 2, (int)left);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "lbsync: poll: %s\n", strerror(errno));
			return 1;
		}
		if (n > 0 && pfd[1].revents != 0)
			return record_drain(o, c, r) < 0 ? 1 : 0;
		/* POLLHUP too: the receive says what happened */
		if (n > 0 && pfd[0].revents != 0 && record_drain(o, c, r) < 0)
			return 1;
	}
	return 0;
}

static int
record(const struct options *o)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_EXPORT_SUBSCRIBE };
	struct recorder r = { .out = fopen(o->file, "a") };
	struct ipc_client *c = NULL;
	int rc, status;

	if (r.out == NULL) {
		fprintf(stderr, "lbsync: %s: %s\n", o->file, strerror(errno));
		return 1;
	}
	rc = ipc_client_connect(o->service, &c);
	if (rc < 0) {
		fclose(r.out);
		return ipc_error(o, "connect", rc);
	}
	req.export_subscribe.enable = true;
	status = request_ack(o, c, &req, "subscribing to flow events");
	if (status == 0) {
		printf("ready\n");
		fflush(stdout);
		status = record_loop(o, c, &r);
	}
	ipc_client_close(c);
	if (fclose(r.out) != 0 && status == 0) {
		fprintf(stderr, "lbsync: %s: %s\n", o->file, strerror(errno));
		status = 1;
	}
	fprintf(stderr, "lbsync: recorded new %llu, refresh %llu, close %llu; lost %llu, "
		"other messages %llu\n", (unsigned long long)r.events[WIRE_FLOW_EVENT_NEW],
		(unsigned long long)r.events[WIRE_FLOW_EVENT_REFRESH],
		(unsigned long long)r.events[WIRE_FLOW_EVENT_CLOSE],
		(unsigned long long)r.lost, (unsigned long long)r.ignored);
	return status;
}

/* ---------------------------------------------------------------- import */

/* An address into addr (16 bytes, zeroed); its AF_ family, or 0. */
static uint8_t
parse_addr(const char *text, uint8_t *addr)
{
	memset(addr, 0, WIRE_ADDR_MAX);
	if (inet_pton(AF_INET, text, addr) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, text, addr) == 1)
		return AF_INET6;
	return 0;
}

static int
parse_port(const char *text, uint16_t *port)
{
	unsigned long v;

	if (parse_unsigned(text, UINT16_MAX, &v) < 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

static int
parse_flags(char *text, uint8_t *flags)
{
	char *save = NULL;

	*flags = 0;
	if (strcmp(text, "-") == 0)
		return 0;
	for (char *w = strtok_r(text, ",", &save); w != NULL; w = strtok_r(NULL, ",", &save)) {
		size_t i, n = sizeof(lbsync_flag_names) / sizeof(lbsync_flag_names[0]);

		for (i = 0; i < n && strcmp(w, lbsync_flag_names[i]) != 0; i++)
			;
		if (i == n)
			return -EINVAL;
		*flags |= 1u << i;
	}
	return 0;
}

/* Parse one line's fields into *r; NULL, or what is wrong. */
static const char *
parse_record(char **w, struct record *r)
{
	struct wire_flow *f = &r->flow;
	unsigned long v;
	int e;

	memset(r, 0, sizeof(*r));
	for (e = 0; e < WIRE_FLOW_EVENT_MAX && strcmp(w[0], wire_flow_event_names[e]) != 0; e++)
		;
	if (e == WIRE_FLOW_EVENT_MAX)
		return "event is not new, refresh or close";
	r->event = (enum wire_flow_event)e;
	if (strcmp(w[1], "tcp") == 0 || strcmp(w[1], "udp") == 0)
		f->proto = w[1][0] == 't' ? IPPROTO_TCP : IPPROTO_UDP;
	else
		return "protocol is not tcp or udp";
	f->family = parse_addr(w[2], f->vip);
	if (f->family == 0 || parse_addr(w[4], f->client) != f->family)
		return "VIP and client must be addresses of one family";
	if (parse_port(w[3], &f->vip_port) < 0 || parse_port(w[5], &f->client_port) < 0)
		return "port is not 0..65535";
	f->backend_family = parse_addr(w[6], f->backend);
	if (f->backend_family == 0)
		return "backend is not an address";
	if (parse_unsigned(w[7], UINT32_MAX, &v) < 0)
		return "lifetime is not a number of milliseconds";
	f->lifetime_ms = (uint32_t)v;
	if (parse_flags(w[8], &f->flags) < 0)
		return "flags are not '-' or a comma list of established, closing, from-peer";
	return wire_flow_is_valid(f) ? NULL : "not a valid flow entry";
}

/* Split line into exactly LBSYNC_FIELDS words; false if the count differs. */
static bool
split_line(char *line, char **w)
{
	char *save = NULL, *word;
	int n = 0;

	for (word = strtok_r(line, " \t\r\n", &save); word != NULL;
	     word = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == LBSYNC_FIELDS)
			return false;
		w[n++] = word;
	}
	return n == LBSYNC_FIELDS;
}

/* Every record of the file into *out (malloc'd, *n of them); 0 or 1. */
static int
read_records(const char *path, struct record **out, size_t *n)
{
	FILE *in = fopen(path, "r");
	struct record *v = NULL;
	size_t cap = 0, lineno = 0, len = 0;
	char *line = NULL, *w[LBSYNC_FIELDS];
	const char *why = NULL;

	*n = 0;
	if (in == NULL) {
		fprintf(stderr, "lbsync: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (why == NULL && getline(&line, &len, in) >= 0) {
		size_t skip = strspn(line, " \t\r\n");

		lineno++;
		if (line[skip] == '\0' || line[skip] == '#')
			continue;
		if (*n == cap) {
			struct record *bigger = realloc(v, (cap ? 2 * cap : 256) * sizeof(*v));

			if (bigger == NULL) {
				why = strerror(ENOMEM);
				break;
			}
			v = bigger;
			cap = cap ? 2 * cap : 256;
		}
		why = split_line(line, w) ? parse_record(w, &v[*n]) : "not 9 fields";
		v[*n].line = lineno;
		*n += why == NULL;
	}
	if (why == NULL && ferror(in))
		why = strerror(errno);
	free(line);
	fclose(in);
	if (why != NULL) {
		fprintf(stderr, "lbsync: %s:%zu: %s\n", path, lineno, why);
		free(v);
		return 1;
	}
	*out = v;
	return 0;
}

/* Flow key order, then line order: a flow's last event ends its run. */
static int
record_cmp(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	const struct wire_flow *f = &x->flow, *g = &y->flow;
	int d;

	if (f->family != g->family)
		return f->family < g->family ? -1 : 1;
	if (f->proto != g->proto)
		return f->proto < g->proto ? -1 : 1;
	if ((d = memcmp(f->vip, g->vip, sizeof(f->vip))) != 0)
		return d;
	if (f->vip_port != g->vip_port)
		return f->vip_port < g->vip_port ? -1 : 1;
	if ((d = memcmp(f->client, g->client, sizeof(f->client))) != 0)
		return d;
	if (f->client_port != g->client_port)
		return f->client_port < g->client_port ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static bool
same_flow(const struct record *x, const struct record *y)
{
	struct record a = *x, b = *y;

	a.line = b.line = 0;
	return record_cmp(&a, &b) == 0;
}

struct importer {
	const struct options *o;
	struct ipc_client *c;
	struct wire_flow *batch;        /* o->batch entries */
	size_t n, bytes;
	enum wire_flow_event event;
	uint64_t messages, sent[WIRE_FLOW_EVENT_MAX];
};

/* Send the pending batch, if any; 0 or the exit status. */
static int
import_flush(struct importer *im)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_IMPORT_BATCH };
	int status;

	if (im->n == 0)
		return 0;
	req.flows.event = im->event;
	req.flows.entries = im->batch;
	req.flows.count = im->n;
	status = request_ack(im->o, im->c, &req, "importing flows");
	if (status == 0) {
		im->messages++;
		im->sent[im->event] += im->n;
	}
	im->n = im->bytes = 0;
	return status;
}

/* Queue one entry of event ev; sends a full batch first. 0 or the status. */
static int
import_add(struct importer *im, enum wire_flow_event ev, const struct wire_flow *f)
{
	size_t size = wire_flow_encoded_size(f);
	int status = 0;

	/* One event per message, o->batch entries and one IPC message at most. */
	if (im->n > 0 && (ev != im->event || im->n == im->o->batch ||
			  LBSYNC_ENVELOPE_MAX + im->bytes + size > (size_t)IPC_REQUEST_PAYLOAD_MAX))
		status = import_flush(im);
	im->event = ev;
	im->batch[im->n++] = *f;
	im->bytes += size;
	return status;
}

static int
import_records(struct importer *im, struct record *v, size_t n, size_t *closed)
{
	int status = 0;

	*closed = 0;
	qsort(v, n, sizeof(*v), record_cmp);
	/* new first, then refresh (then close): the messages a replay would make */
	for (int ev = WIRE_FLOW_EVENT_NEW;
	     ev <= (im->o->closes ? WIRE_FLOW_EVENT_CLOSE : WIRE_FLOW_EVENT_REFRESH); ev++) {
		for (size_t i = 0; i < n && status == 0; i++) {
			struct wire_flow f = v[i].flow;

			if (i + 1 < n && same_flow(&v[i], &v[i + 1]))
				continue;       /* not the flow's last event */
			if (v[i].event == WIRE_FLOW_EVENT_CLOSE && ev == WIRE_FLOW_EVENT_NEW &&
			    !im->o->closes)
				(*closed)++;
			if (v[i].event != (enum wire_flow_event)ev)
				continue;
			if (im->o->lifetime_ms != 0)
				f.lifetime_ms = im->o->lifetime_ms;
			status = import_add(im, (enum wire_flow_event)ev, &f);
		}
	}
	return status != 0 ? status : import_flush(im);
}

static int
import(const struct options *o)
{
	struct importer im = { .o = o };
	struct record *v = NULL;
	size_t n, closed = 0;
	int rc, status;

	if (read_records(o->file, &v, &n) != 0)
		return 1;
	im.batch = calloc(o->batch, sizeof(*im.batch));
	if (im.batch == NULL) {
		fprintf(stderr, "lbsync: %s\n", strerror(ENOMEM));
		free(v);
		return 1;
	}
	rc = ipc_client_connect(o->service, &im.c);
	status = rc < 0 ? ipc_error(o, "connect", rc) : import_records(&im, v, n, &closed);
	if (status == 0)
		printf("imported %llu entries in %llu message%s (new %llu, refresh %llu, "
		       "close %llu), skipped %zu closed\n",
		       (unsigned long long)(im.sent[WIRE_FLOW_EVENT_NEW] +
					    im.sent[WIRE_FLOW_EVENT_REFRESH] +
					    im.sent[WIRE_FLOW_EVENT_CLOSE]),
		       (unsigned long long)im.messages, im.messages == 1 ? "" : "s",
		       (unsigned long long)im.sent[WIRE_FLOW_EVENT_NEW],
		       (unsigned long long)im.sent[WIRE_FLOW_EVENT_REFRESH],
		       (unsigned long long)im.sent[WIRE_FLOW_EVENT_CLOSE], closed);
	ipc_client_close(im.c);
	free(im.batch);
	free(v);
	return status;
}

int
main(int argc, char **argv)
{
	struct options o;

	if (options_parse(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	return o.record ? record(&o) : import(&o);
}
