/*
 * lat_rpc: Sun RPC round-trip latency (lmbench's lat_rpc): one call of a
 * procedure that takes a char and returns one (lmbench's RPC_XACT), per
 * iteration, over TCP or UDP, through libtirpc's client and server.
 *
 * Each process forks its own server, which serves one transport bound to
 * 127.0.0.1 on an ephemeral port; the client is given that port, so
 * neither side consults or registers with rpcbind (svc_register with
 * protocol 0; a client address with its port set): no portmapper and no
 * privilege needed. The server dies with its parent and is killed and
 * reaped at the end. A lost reply is an error (loopback does not drop
 * datagrams), after 2 s, rather than a retransmission.
 *
 * usage: lat_rpc [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] [-A placement] [tcp|udp]
 * Prints "lat_rpc.<protocol> <latency> us" per call, for the protocol
 * given, else for tcp then udp (as lmbench).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <rpc/rpc.h>
#include <string.h>

#include "net.h"

/* Ours, in the range Sun RPC leaves to users (never registered anywhere). */
#define XACT_PROG 0x2f4c4d42ul
#define XACT_VERS 1ul
#define RPC_XACT 1ul
#define REPLY 123
/* xdrproc_t is variadic; the cast goes through void (*)(void), the generic
 * function pointer, so that -Wcast-function-type accepts it. */
#define XDR(f) ((xdrproc_t)(void (*)(void))(f))

struct rpc_state {
	const char *protocol;
	CLIENT *client;
	int fd;
	pid_t server;
};

static void dispatch(struct svc_req *request, SVCXPRT *transport)
{
	char argument = 0, result = REPLY;

	if (request->rq_proc == NULLPROC) {
		svc_sendreply(transport, XDR(xdr_void), NULL);
		return;
	}
	if (request->rq_proc != RPC_XACT) {
		svcerr_noproc(transport);
		return;
	}
	if (!svc_getargs(transport, XDR(xdr_char), (char *)&argument)) {
		svcerr_decode(transport);
		return;
	}
	if (!svc_sendreply(transport, XDR(xdr_char), &result))
		svcerr_systemerr(transport);
}

static int udp;

/* The server: the transport on the socket the parent bound (listening, for
 * TCP), our dispatcher registered with the library only. */
static void serve(int fd, size_t unused)
{
	SVCXPRT *transport = udp ? svcudp_create(fd) : svctcp_create(fd, 0, 0);

	(void)unused;
	if (!transport || !svc_register(transport, XACT_PROG, XACT_VERS, dispatch, 0)) {
		fprintf(stderr, "lat_rpc: cannot create the %s service\n", udp ? "udp" : "tcp");
		_exit(1);
	}
	svc_run();
	_exit(1);
}

static void start(iter_t n, void *cookie)
{
	struct rpc_state *s = cookie;
	struct sockaddr_in addr;
	struct timeval limit = { 2, 0 };
	int server_fd;

	if (n != 0 || s->server)
		return;
	udp = !strcmp(s->protocol, "udp");
	server_fd = loopback_socket(udp ? SOCK_DGRAM : SOCK_STREAM, &addr);
	if (server_fd < 0) {
		perror("lat_rpc: 127.0.0.1");
		exit(1);
	}
	s->server = fork_server(server_fd, serve, 0);
	/* Our own client socket: the library would bind a reserved port for root. */
	s->fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (s->fd >= 0 && udp)
		s->client = clntudp_create(&addr, XACT_PROG, XACT_VERS, limit, &s->fd);
	else if (s->fd >= 0)
		s->client = clnttcp_create(&addr, XACT_PROG, XACT_VERS, &s->fd, 0, 0);
	if (!s->client) {
		clnt_pcreateerror("lat_rpc: 127.0.0.1");
		stop_server(&s->server);
		exit(1);
	}
}

static void stop(iter_t n, void *cookie)
{
	struct rpc_state *s = cookie;

	if (n != 0 || !s->server)
		return;
	clnt_destroy(s->client); /* leaves s->fd open: the library did not make it */
	s->client = NULL;
	close(s->fd);
	stop_server(&s->server);
}

static void call(iter_t n, void *cookie)
{
	struct rpc_state *s = cookie;
	struct timeval limit = { 2, 0 };
	char argument = 1, result;

	while (n--) {
		result = 0;
		if (clnt_call(s->client, RPC_XACT, XDR(xdr_char), &argument, XDR(xdr_char), &result,
			      limit) != RPC_SUCCESS) {
			clnt_perror(s->client, "lat_rpc");
			abort();
		}
		if (result != REPLY) {
			fprintf(stderr, "lat_rpc: got %d, not %d\n", result, REPLY);
			abort();
		}
	}
}

int main(int argc, char **argv)
{
	static const char *protocols[] = { "tcp", "udp" };
	int first, parallel = 1, warmup = 0, reps = TRIES;
	char name[32];

	first = harness_flags(argc, argv, &parallel, &warmup, &reps);
	if (first < 0 || argc - first > 1) {
		fprintf(stderr, "usage: lat_rpc [-P parallel] [-W warmup_us] [-N repetitions] [-C calfile] "
			"[-A placement] [tcp|udp]\n");
		return 2;
	}
	if (first < argc && strcmp(argv[first], "tcp") && strcmp(argv[first], "udp")) {
		fprintf(stderr, "lat_rpc: %s is not a protocol (tcp or udp)\n", argv[first]);
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		struct rpc_state s = { protocols[i], NULL, -1, 0 };

		if (first < argc && strcmp(argv[first], protocols[i]))
			continue;
		if (benchmp(start, call, stop, 0, parallel, warmup, reps, &s))
			return 1;
		snprintf(name, sizeof(name), "lat_rpc.%s", protocols[i]);
		micro(name, get_n());
	}
	return 0;
}
