// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rv_fi_endpoints.c - more endpoints of this process: a second one as a
 * peer on the same node, and closing one without blocking the domain.
 */
#include <pthread.h>

#include "rv_fi_test.h"

/*
 * A second endpoint of this process: a peer on the same node, which rv
 * does not connect to.  Small messages are eager, large ones take the
 * rendezvous with the data over TCP (bounded by the receive: a larger
 * message is truncated, not buffered), and rv carries nothing.
 */
void t_local(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	static const size_t sizes[] = { 1000, (3 << 20) + 3 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_ep *ep2 = NULL;
	struct fid_av *av2 = NULL;
	struct fid_cq *cq2 = NULL;
	fi_addr_t to2, to1;
	char name2[64];
	size_t len = sizeof(name2), i;
	uint64_t w0 = 0, r0 = 0, w1 = 0, r1 = 0;
	bool ok = true, counted;
	int ret;

	sync_peer();
	counted = rv_counters(&w0, &r0);
	if ((ret = fi_av_open(domain, &ava, &av2, NULL)) ||
	    (ret = fi_cq_open(domain, &cqa, &cq2, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep2, NULL)) ||
	    (ret = fi_ep_bind(ep2, &av2->fid, 0)) ||
	    (ret = fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep2)) ||
	    (ret = fi_getname(&ep2->fid, name2, &len))) {
		result(false, "local-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	if (fi_av_insert(av, name2, 1, &to2, 0, NULL) != 1 ||
	    fi_av_insert(av2, self_name, 1, &to1, 0, NULL) != 1) {
		result(false, "local-setup", "fi_av_insert");
		goto out;
	}
	/* ep2 -> ep, both sizes; then 3 MiB into a 1 MiB receive. */
	for (i = 0; i < 3; i++) {
		size_t n = i < 2 ? sizes[i] : sizes[1];
		size_t room = i < 2 ? n : 1 << 20;

		fill(sbuf, n, 5500 + i);
		memset(rbuf, 0xee, room + 1);
		ret = POST(fi_trecv(ep, rbuf, room, NULL, to2, 5500 + i, 0, &e));
		if (!ret)
			ret = POST(fi_tsend(ep2, sbuf, n, NULL, to1, 5500 + i,
					    &err));
		if (ret) {
			ok = false;
			diag("local post %zu: %s", n, fi_strerror(-ret));
			break;
		}
		ret = wait_comp(cq2, &e, NULL, &err);
		if (ret != 1) {
			ok = false;
			diag("local send %zu: ret %d", n, ret);
		}
		ret = wait_comp(rxcq, &e, NULL, &err);
		if (i < 2 && (ret != 1 || e.len != n ||
			      check(rbuf, n, 5500 + i) >= 0 ||
			      (uint8_t)rbuf[n] != 0xee)) {
			ok = false;
			diag("local recv %zu: ret %d", n, ret);
		}
		if (i == 2 && (ret != 0 || err.err != FI_ETRUNC ||
			       err.olen != n - room ||
			       check(rbuf, room, 5500 + i) >= 0 ||
			       (uint8_t)rbuf[room] != 0xee)) {
			ok = false;
			diag("local truncated recv: ret %d err %d olen %zu",
			     ret, ret ? 0 : err.err, ret ? 0 : err.olen);
		}
	}
	result(ok, "local-eager-rndv-trunc", "see above");
	if (counted) {
		rv_counters(&w1, &r1);
		result(w1 == w0 && r1 == r0, "local-not-over-rv",
		       "writes %llu -> %llu, recvs %llu -> %llu",
		       (unsigned long long)w0, (unsigned long long)w1,
		       (unsigned long long)r0, (unsigned long long)r1);
	}
out:
	if (ep2)
		fi_close(&ep2->fid);
	if (av2)
		fi_close(&av2->fid);
	if (cq2)
		fi_close(&cq2->fid);
	sync_peer();
}

struct closer {
	struct fid_ep *ep;
	uint64_t ms;
};

static void *closer(void *arg)
{
	struct closer *c = arg;
	uint64_t t0 = now_ms();

	fi_close(&c->ep->fid);
	c->ms = now_ms() - t0;
	return NULL;
}

/*
 * Closing an endpoint does not block the domain: ep4 has a rendezvous
 * (registered, waiting for a CTS that never comes) and a
 * delivery-complete send (waiting for an ACK that never comes) to the
 * other node when a thread closes it; FI_RV_CLOSE_DELAY_MS (set by main)
 * stretches the part of the close that runs without the domain lock.
 * Meanwhile ep keeps sending to the other node: each send must complete
 * well within the delay.
 */
#define CLOSE_DELAY_MS	3000
#define CLOSE_SENDS	20
void t_close_nonblocking(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .wait_obj = FI_WAIT_NONE };
	struct fi_msg_tagged m = { .iov_count = 1, .tag = 0xc105f };
	struct iovec iov = { sbuf, 64 };
	struct fi_context c1, c2;
	struct fid_ep *ep4 = NULL;
	struct fid_cq *cq4 = NULL;
	struct closer cl = { 0 };
	uint64_t worst = 0;
	pthread_t thr;
	bool ok = true;
	int i, ret;

	sync_peer();
	if ((ret = fi_cq_open(domain, &cqa, &cq4, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep4, NULL)) ||
	    (ret = fi_ep_bind(ep4, &av->fid, 0)) ||
	    (ret = fi_ep_bind(ep4, &cq4->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(ep4))) {
		result(false, "close-setup", "%s", fi_strerror(-ret));
		goto out;
	}
	m.msg_iov = &iov;
	m.addr = peer;
	m.context = &c2;
	if (POST(fi_tsend(ep4, sbuf, 4 * threshold, NULL, peer, 0xc105e,
			  &c1)) ||
	    POST(fi_tsendmsg(ep4, &m, FI_DELIVERY_COMPLETE))) {
		result(false, "close-setup", "posts on ep4");
		goto out;
	}
	fi_cq_read(cq4, NULL, 0);
	cl.ep = ep4;
	ep4 = NULL;
	if (pthread_create(&thr, NULL, closer, &cl)) {
		result(false, "close-setup", "pthread_create");
		goto out;
	}
	usleep(100 * 1000);
	for (i = 0; i < CLOSE_SENDS; i++) {
		uint64_t t0 = now_ms(), dt;

		fill(sbuf, 64, 0xc1000 + i);
		ret = send_wait(sbuf, 64, 0xc1000 + i);
		dt = now_ms() - t0;
		if (ret)
			ok = false;
		if (dt > worst)
			worst = dt;
		usleep(100 * 1000);
	}
	pthread_join(thr, NULL);
	diag("ep close took %llu ms; slowest of %d sends meanwhile %llu ms",
	     (unsigned long long)cl.ms, CLOSE_SENDS,
	     (unsigned long long)worst);
	result(ok && cl.ms >= CLOSE_DELAY_MS && worst < CLOSE_DELAY_MS / 3,
	       "close-does-not-block",
	       "close %llu ms (hook %d ms), worst send %llu ms",
	       (unsigned long long)cl.ms, CLOSE_DELAY_MS,
	       (unsigned long long)worst);
	sync_peer();
	result(recv_tags(0xc1000, CLOSE_SENDS), "close-peer-sends",
	       "lost while an endpoint closed");
out:
	if (ep4)
		fi_close(&ep4->fid);
	if (cq4)
		fi_close(&cq4->fid);
	sync_peer();
}
