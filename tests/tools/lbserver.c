/*
 * lbserver: the backend server of the end-to-end tests.
 *
 *   lbserver --name NAME --tcp PORT [--udp PORT] [--bind ADDR]...
 *
 * TCP: every line "L\n" a client sends is answered with "NAME L\n", so the
 * client learns which backend served it and can check the payload. Hundreds of
 * connections are served at once (epoll, non-blocking sockets).
 * UDP: every datagram D is answered with "NAME D", sent from the address D was
 * sent to (IP_PKTINFO / IPV6_PKTINFO): a datagram to a VIP on lo is answered
 * from the VIP, as direct server return needs.
 *
 * Without --bind, one dual-stack socket per protocol listens on [::] with
 * IPV6_V6ONLY off (IPv4 and IPv6); each --bind ADDR adds a socket on ADDR.
 * "ready" is printed on stdout (flushed) once every socket listens, so scripts
 * await readiness by reading stdout. SIGTERM or SIGINT: counters on stderr,
 * exit 0.
 */
#include "netaddr.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
	LBSERVER_BINDS_MAX = 16,
	LBSERVER_NAME_MAX = 64,
	LBSERVER_LINE_MAX = 65536,        /* longest accepted line, bytes */
	LBSERVER_OUT_HIGH = 1024 * 1024,  /* stop reading past this backlog */
	LBSERVER_EVENTS = 64,
};

#define LBSERVER_COUNTERS(X) \
	X(tcp_accepted)      \
	X(tcp_closed)        \
	X(tcp_lines)         \
	X(tcp_errors)        \
	X(tcp_line_too_long) \
	X(udp_datagrams)     \
	X(udp_errors)

enum lbserver_counter {
#define LBSERVER_COUNTER_ENUM(name) LBSERVER_COUNTER_##name,
	LBSERVER_COUNTERS(LBSERVER_COUNTER_ENUM)
	LBSERVER_COUNTER_MAX
};

static const char *const lbserver_counter_names[] = {
#define LBSERVER_COUNTER_NAME(name) #name,
	LBSERVER_COUNTERS(LBSERVER_COUNTER_NAME)
};

enum endpoint_kind {
	ENDPOINT_LISTENER = 0,
	ENDPOINT_UDP,
	ENDPOINT_CONNECTION,
	ENDPOINT_SIGNAL,
	ENDPOINT_KIND_MAX
};

/* First member of everything registered with epoll (data.ptr). */
struct endpoint {
	enum endpoint_kind kind;
	int fd;
};

struct buffer {
	char *data;
	size_t len;  /* bytes held */
	size_t off;  /* bytes already consumed from the front */
	size_t cap;
};

struct connection {
	struct endpoint endpoint;
	struct buffer in;
	struct buffer out;
	bool peer_closed;
};

struct server {
	char name[LBSERVER_NAME_MAX];
	size_t name_len;
	int epoll_fd;
	struct endpoint signal;
	struct endpoint sockets[2 * LBSERVER_BINDS_MAX + 2];
	unsigned socket_count;
	unsigned long counters[LBSERVER_COUNTER_MAX];
	bool stop;
};

struct options {
	const char *name;
	uint16_t tcp_port;
	uint16_t udp_port;
	const char *binds[LBSERVER_BINDS_MAX];
	unsigned bind_count;
};

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: lbserver --name NAME --tcp PORT [--udp PORT] [--bind ADDR]...\n"
	        "  answers each TCP line L with \"NAME L\" and each UDP datagram D\n"
	        "  with \"NAME D\"; without --bind listens on [::] (IPv4 and IPv6);\n"
	        "  prints \"ready\" once listening; SIGTERM exits cleanly\n");
}

static int
options_parse(int argc, char **argv, struct options *opts)
{
	static const struct option longopts[] = {
		{"name", required_argument, NULL, 'n'},
		{"tcp", required_argument, NULL, 't'},
		{"udp", required_argument, NULL, 'u'},
		{"bind", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(opts, 0, sizeof(*opts));
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			opts->name = optarg;
			break;
		case 't':
			if (netaddr_parse_port(optarg, &opts->tcp_port) < 0)
				return -EINVAL;
			break;
		case 'u':
			if (netaddr_parse_port(optarg, &opts->udp_port) < 0)
				return -EINVAL;
			break;
		case 'b':
			if (opts->bind_count == LBSERVER_BINDS_MAX)
				return -EINVAL;
			opts->binds[opts->bind_count++] = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind != argc || opts->name == NULL || opts->tcp_port == 0 ||
	    opts->name[0] == '\0' || strlen(opts->name) >= LBSERVER_NAME_MAX ||
	    strpbrk(opts->name, " \n") != NULL)
		return -EINVAL;
	return 0;
}

/* Make room for at least need more bytes; 0 or -ENOMEM. */
static int
buffer_reserve(struct buffer *buf, size_t need)
{
	size_t cap;
	char *data;

	if (buf->off > 0 && buf->off == buf->len) {
		buf->off = 0;
		buf->len = 0;
	}
	if (buf->cap - buf->len >= need)
		return 0;
	if (buf->off > 0) {
		memmove(buf->data, buf->data + buf->off, buf->len - buf->off);
		buf->len -= buf->off;
		buf->off = 0;
		if (buf->cap - buf->len >= need)
			return 0;
	}
	cap = buf->cap ? buf->cap : 4096;
	while (cap - buf->len < need)
		cap *= 2;
	data = realloc(buf->data, cap);
	if (data == NULL)
		return -ENOMEM;
	buf->data = data;
	buf->cap = cap;
	return 0;
}

static int
buffer_append(struct buffer *buf, const char *data, size_t len)
{
	if (buffer_reserve(buf, len) < 0)
		return -ENOMEM;
	memcpy(buf->data + buf->len, data, len);
	buf->len += len;
	return 0;
}

static size_t
buffer_pending(const struct buffer *buf)
{
	return buf->len - buf->off;
}

static void
connection_close(struct server *server, struct connection *conn)
{
	close(conn->endpoint.fd);
	free(conn->in.data);
	free(conn->out.data);
	free(conn);
	server->counters[LBSERVER_COUNTER_tcp_closed]++;
}

/* Queue "NAME line\n" for every complete line; a trailing partial line too
 * when the peer has closed. Returns 0, or -EMSGSIZE for an overlong line. */
static int
connection_answer(struct server *server, struct connection *conn)
{
	struct buffer *in = &conn->in;
	char *line, *newline;
	size_t len;

	while (buffer_pending(in) > 0) {
		line = in->data + in->off;
		newline = memchr(line, '\n', buffer_pending(in));
		if (newline == NULL && !conn->peer_closed)
			break;
		len = newline ? (size_t)(newline - line) : buffer_pending(in);
		if (buffer_append(&conn->out, server->name, server->name_len) < 0 ||
		    buffer_append(&conn->out, " ", 1) < 0 ||
		    buffer_append(&conn->out, line, len) < 0 ||
		    buffer_append(&conn->out, "\n", 1) < 0)
			return -ENOMEM;
		in->off += len + (newline ? 1 : 0);
		server->counters[LBSERVER_COUNTER_tcp_lines]++;
	}
	if (buffer_pending(in) > LBSERVER_LINE_MAX) {
		server->counters[LBSERVER_COUNTER_tcp_line_too_long]++;
		return -EMSGSIZE;
	}
	return 0;
}

/* Send what is queued; 0 (done or would block) or -errno. */
static int
connection_flush(struct connection *conn)
{
	struct buffer *out = &conn->out;
	ssize_t sent;

	while (buffer_pending(out) > 0) {
		sent = send(conn->endpoint.fd, out->data + out->off,
		            buffer_pending(out), MSG_NOSIGNAL);
		if (sent < 0 && errno == EINTR)
			continue;
		if (sent < 0)
			return errno == EAGAIN ? 0 : -errno;
		out->off += (size_t)sent;
	}
	return 0;
}

/* Read until the socket would block (or the backlog is high); 0 or -errno. */
static int
connection_fill(struct connection *conn)
{
	ssize_t got;

	while (!conn->peer_closed &&
	       buffer_pending(&conn->out) < LBSERVER_OUT_HIGH) {
		if (buffer_reserve(&conn->in, 4096) < 0)
			return -ENOMEM;
		got = recv(conn->endpoint.fd, conn->in.data + conn->in.len,
		           conn->in.cap - conn->in.len, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (got == 0)
			conn->peer_closed = true;
		conn->in.len += (size_t)got;
		if (buffer_pending(&conn->in) > LBSERVER_LINE_MAX + 4096)
			break;
	}
	return 0;
}

/* Handle readiness of one connection; closes it when finished or broken. */
static void
connection_service(struct server *server, struct connection *conn)
{
	struct epoll_event ev = {.data.ptr = conn};
	int err;

	err = connection_fill(conn);
	if (err == 0)
		err = connection_answer(server, conn);
	if (err == 0)
		err = connection_flush(conn);
	if (err < 0 && err != -EMSGSIZE)
		server->counters[LBSERVER_COUNTER_tcp_errors]++;
	if (err < 0 || (conn->peer_closed && buffer_pending(&conn->out) == 0)) {
		connection_close(server, conn);
		return;
	}
	if (!conn->peer_closed && buffer_pending(&conn->out) < LBSERVER_OUT_HIGH)
		ev.events |= EPOLLIN;
	if (buffer_pending(&conn->out) > 0)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(server->epoll_fd, EPOLL_CTL_MOD, conn->endpoint.fd, &ev) < 0) {
		server->counters[LBSERVER_COUNTER_tcp_errors]++;
		connection_close(server, conn);
	}
}

static void
listener_accept(struct server *server, int listen_fd)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct connection *conn;
	int fd;

	for (;;) {
		fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				server->counters[LBSERVER_COUNTER_tcp_errors]++;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		conn = calloc(1, sizeof(*conn));
		if (conn == NULL) {
			close(fd);
			server->counters[LBSERVER_COUNTER_tcp_errors]++;
			continue;
		}
		conn->endpoint.kind = ENDPOINT_CONNECTION;
		conn->endpoint.fd = fd;
		ev.data.ptr = conn;
		server->counters[LBSERVER_COUNTER_tcp_accepted]++;
		if (epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			server->counters[LBSERVER_COUNTER_tcp_errors]++;
			connection_close(server, conn);
		}
	}
}

/* Copy the datagram's destination (from pktinfo) into the reply's control
 * data as its source, interface left to routing. Returns the control length. */
static size_t
udp_reply_source(struct msghdr *request, char *control,
		 size_t size)
{
	struct cmsghdr *in, *out;
	struct msghdr reply = {.msg_control = control, .msg_controllen = size};

	memset(control, 0, size);
	out = CMSG_FIRSTHDR(&reply);
	for (in = CMSG_FIRSTHDR(request); in; in = CMSG_NXTHDR(request, in)) {
		if (in->cmsg_level == IPPROTO_IP && in->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo info;

			memcpy(&info, CMSG_DATA(in), sizeof(info));
			info.ipi_spec_dst = info.ipi_addr;
			info.ipi_ifindex = 0;
			out->cmsg_level = IPPROTO_IP;
			out->cmsg_type = IP_PKTINFO;
			out->cmsg_len = CMSG_LEN(sizeof(info));
			memcpy(CMSG_DATA(out), &info, sizeof(info));
			return CMSG_SPACE(sizeof(info));
		}
		if (in->cmsg_level == IPPROTO_IPV6 && in->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo info;

			memcpy(&info, CMSG_DATA(in), sizeof(info));
			info.ipi6_ifindex = 0;
			out->cmsg_level = IPPROTO_IPV6;
			out->cmsg_type = IPV6_PKTINFO;
			out->cmsg_len = CMSG_LEN(sizeof(info));
			memcpy(CMSG_DATA(out), &info, sizeof(info));
			return CMSG_SPACE(sizeof(info));
		}
	}
	return 0;
}

static void
udp_answer(struct server *server, int fd)
{
	static char reply[LBSERVER_NAME_MAX + 1 + 65536];
	char request_control[256], reply_control[256];
	struct sockaddr_storage peer;
	struct iovec iov;
	struct msghdr msg;
	ssize_t got;

	for (;;) {
		memcpy(reply, server->name, server->name_len);
		reply[server->name_len] = ' ';
		iov.iov_base = reply + server->name_len + 1;
		iov.iov_len = sizeof(reply) - server->name_len - 1;
		msg = (struct msghdr){
			.msg_name = &peer, .msg_namelen = sizeof(peer),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = request_control,
			.msg_controllen = sizeof(request_control),
		};
		got = recvmsg(fd, &msg, 0);
		if (got < 0) {
			if (errno != EAGAIN && errno != EINTR)
				server->counters[LBSERVER_COUNTER_udp_errors]++;
			if (errno == EINTR)
				continue;
			return;
		}
		server->counters[LBSERVER_COUNTER_udp_datagrams]++;
		iov.iov_base = reply;
		iov.iov_len = server->name_len + 1 + (size_t)got;
		msg.msg_controllen = udp_reply_source(&msg, reply_control,
		                                      sizeof(reply_control));
		msg.msg_control = msg.msg_controllen ? reply_control : NULL;
		msg.msg_flags = 0;
		if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
			server->counters[LBSERVER_COUNTER_udp_errors]++;
	}
}

static int
socket_options(int fd, int family, int type, bool dual_stack)
{
	int one = 1, v6only = dual_stack ? 0 : 1;

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
		return -errno;
	if (type != SOCK_DGRAM)
		return 0;
	if (family == AF_INET &&
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0)
		return -errno;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

/* Open, bind and register one TCP listener or UDP socket; 0 or -errno. */
static int
server_listen(struct server *server, int type, const char *text,
	      uint16_t port)
{
	struct sockaddr_storage addr;
	struct epoll_event ev = {.events = EPOLLIN};
	struct endpoint *endpoint;
	socklen_t len;
	int fd, err;

	err = netaddr_parse(text ? text : "::", port, &addr, &len);
	if (err < 0) {
		fprintf(stderr, "lbserver: not an address: %s\n", text);
		return err;
	}
	fd = socket(addr.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = socket_options(fd, addr.ss_family, type, text == NULL);
	if (err == 0 && bind(fd, (struct sockaddr *)&addr, len) < 0)
		err = -errno;
	if (err == 0 && type == SOCK_STREAM && listen(fd, 4096) < 0)
		err = -errno;
	endpoint = &server->sockets[server->socket_count];
	endpoint->kind = type == SOCK_STREAM ? ENDPOINT_LISTENER : ENDPOINT_UDP;
	endpoint->fd = fd;
	ev.data.ptr = endpoint;
	if (err == 0 && epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		err = -errno;
	if (err < 0) {
		fprintf(stderr, "lbserver: %s [%s]:%u: %s\n",
		        type == SOCK_STREAM ? "tcp" : "udp", text ? text : "::",
		        port, strerror(-err));
		close(fd);
		return err;
	}
	server->socket_count++;
	return 0;
}

static int
server_open(struct server *server, const struct options *opts)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &server->signal};
	unsigned i, count = opts->bind_count ? opts->bind_count : 1;
	sigset_t mask;

	snprintf(server->name, sizeof(server->name), "%s", opts->name);
	server->name_len = strlen(server->name);
	server->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (server->epoll_fd < 0)
		return -errno;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	server->signal.kind = ENDPOINT_SIGNAL;
	server->signal.fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (server->signal.fd < 0 ||
	    epoll_ctl(server->epoll_fd, EPOLL_CTL_ADD, server->signal.fd, &ev) < 0)
		return -errno;
	for (i = 0; i < count; i++) {
		const char *text = opts->bind_count ? opts->binds[i] : NULL;

		if (server_listen(server, SOCK_STREAM, text, opts->tcp_port) < 0)
			return -EINVAL;
		if (opts->udp_port &&
		    server_listen(server, SOCK_DGRAM, text, opts->udp_port) < 0)
			return -EINVAL;
	}
	return 0;
}

static void
server_dispatch(struct server *server, struct endpoint *endpoint)
{
	struct signalfd_siginfo info;

	switch (endpoint->kind) {
	case ENDPOINT_LISTENER:
		listener_accept(server, endpoint->fd);
		break;
	case ENDPOINT_UDP:
		udp_answer(server, endpoint->fd);
		break;
	case ENDPOINT_CONNECTION:
		connection_service(server, (struct connection *)endpoint);
		break;
	case ENDPOINT_SIGNAL:
		while (read(endpoint->fd, &info, sizeof(info)) == sizeof(info))
			server->stop = true;
		break;
	case ENDPOINT_KIND_MAX:
		break;
	}
}

static int
server_run(struct server *server)
{
	struct epoll_event events[LBSERVER_EVENTS];
	int i, n;

	while (!server->stop) {
		n = epoll_wait(server->epoll_fd, events, LBSERVER_EVENTS, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++)
			server_dispatch(server, events[i].data.ptr);
	}
	return 0;
}

static void
server_report(const struct server *server)
{
	unsigned i;

	fprintf(stderr, "lbserver %s:", server->name);
	for (i = 0; i < LBSERVER_COUNTER_MAX; i++)
		fprintf(stderr, " %s=%lu", lbserver_counter_names[i],
		        server->counters[i]);
	fprintf(stderr, "\n");
}

int
main(int argc, char **argv)
{
	static struct server server;
	struct options opts;
	int err;

	if (options_parse(argc, argv, &opts) < 0) {
		usage(stderr);
		return 2;
	}
	netaddr_raise_fd_limit();
	if (server_open(&server, &opts) < 0) {
		fprintf(stderr, "lbserver: cannot listen\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	err = server_run(&server);
	server_report(&server);
	if (err < 0) {
		fprintf(stderr, "lbserver: epoll: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
