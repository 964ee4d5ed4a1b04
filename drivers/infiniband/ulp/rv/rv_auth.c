// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cluster key: set by root through the module parameter cluster_key
 * (hex, write-only for users: reading it gives the key's fingerprint),
 * kept in an HMAC-SHA256 transform that tags are computed with.  What the
 * tags cover and when they are checked: rv_auth.h.
 */
#include "rv_auth.h"

#include <crypto/hash.h>
#include <linux/in6.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <net/ipv6.h>

#define RV_AUTH_KEY_MIN		16
#define RV_AUTH_KEY_MAX		64
#define RV_AUTH_ID_LEN		8

/**
 * struct rv_auth_key - a cluster key, ready to tag with
 * @tfm: hmac(sha256) keyed with it; only digests use it after setup, and
 *	a shash digest with its own descriptor needs no lock
 * @id: its fingerprint (the first bytes of its tag over "rv2 key id"):
 *	tells an administrator whether two nodes hold the same key, and
 *	nothing about the key
 */
struct rv_auth_key {
	struct crypto_shash *tfm;
	u8 id[RV_AUTH_ID_LEN];
};

/*
 * The current key, NULL until root sets one.  Replaced under
 * rv_auth_lock; readers use it under rcu_read_lock() (a shash digest does
 * not sleep).  A leaf: taken by the parameter's handlers only.
 */
static struct rv_auth_key __rcu *rv_auth_key;
static DEFINE_MUTEX(rv_auth_lock);

static int rv_auth_digest(struct crypto_shash *tfm, const char *label,
			  const void *data, size_t len, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	int ret;

	desc->tfm = tfm;
	ret = crypto_shash_init(desc) ?:
	      crypto_shash_update(desc, label, strlen(label)) ?:
	      crypto_shash_update(desc, data, len) ?:
	      crypto_shash_final(desc, out);
	shash_desc_zero(desc);
	return ret;
}

/**
 * rv_auth_tag - tag @m under the cluster key
 * @label: RV_AUTH_LABEL_*
 * @m: the message
 * @tag: out: the tag (callers that send fewer bytes truncate it)
 *
 * Any context but hard interrupts.  Return: 0, -ENOKEY without a key, or
 * the crypto API's error.
 */
int rv_auth_tag(const char *label, const struct rv_auth_msg *m,
		u8 tag[RV_AUTH_TAG_LEN])
{
	struct rv_auth_key *k;
	int ret = -ENOKEY;

	rcu_read_lock();
	k = rcu_dereference(rv_auth_key);
	if (k)
		ret = rv_auth_digest(k->tfm, label, m, sizeof(*m), tag);
	rcu_read_unlock();
	return ret;
}

bool rv_auth_have_key(void)
{
	return rcu_access_pointer(rv_auth_key);
}

/* @ss's address in 16 bytes: IPv6 as is, IPv4 mapped. */
void rv_auth_addr(u8 out[16], const struct sockaddr_storage *ss)
{
	struct in6_addr a = {};

	if (ss->ss_family == AF_INET)
		ipv6_addr_set_v4mapped(((const struct sockaddr_in *)ss)->sin_addr.s_addr,
				       &a);
	else if (ss->ss_family == AF_INET6)
		a = ((const struct sockaddr_in6 *)ss)->sin6_addr;
	memcpy(out, &a, sizeof(a));
}

static void rv_auth_key_free(struct rv_auth_key *k)
{
	if (!k)
		return;
	crypto_free_shash(k->tfm);
	kfree_sensitive(k);
}

/* A key from @len hex digits of @hex. */
static struct rv_auth_key *rv_auth_key_new(const char *hex, size_t len)
{
	u8 raw[RV_AUTH_KEY_MAX], id[RV_AUTH_TAG_LEN];
	struct rv_auth_key *k;
	int ret;

	if (len % 2 || len / 2 < RV_AUTH_KEY_MIN || len / 2 > RV_AUTH_KEY_MAX)
		return ERR_PTR(-EINVAL);
	if (hex2bin(raw, hex, len / 2))
		return ERR_PTR(-EINVAL);
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k) {
		ret = -ENOMEM;
		goto out_wipe;
	}
	k->tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(k->tfm)) {
		ret = PTR_ERR(k->tfm);
		kfree(k);
		goto out_wipe;
	}
	ret = crypto_shash_setkey(k->tfm, raw, len / 2) ?:
	      rv_auth_digest(k->tfm, "rv2 key id", NULL, 0, id);
	if (ret) {
		rv_auth_key_free(k);
		goto out_wipe;
	}
	memcpy(k->id, id, sizeof(k->id));
	memzero_explicit(raw, sizeof(raw));
	return k;

out_wipe:
	memzero_explicit(raw, sizeof(raw));
	return ERR_PTR(ret);
}

/*
 * Writing the parameter (at load, or later in sysfs by root) sets or
 * replaces the key: 32 to 128 hex digits, a trailing newline allowed.
 * Connections already up stay up; their QPs' next handshakes use the new
 * key.  EINVAL for anything else, the key left as it was.
 */
static int rv_auth_key_set(const char *val, const struct kernel_param *kp)
{
	size_t len = strlen(val);
	struct rv_auth_key *k, *old;

	if (len && val[len - 1] == '\n')
		len--;
	k = rv_auth_key_new(val, len);
	if (IS_ERR(k))
		return PTR_ERR(k);
	mutex_lock(&rv_auth_lock);
	old = rcu_replace_pointer(rv_auth_key, k,
				  lockdep_is_held(&rv_auth_lock));
	mutex_unlock(&rv_auth_lock);
	synchronize_rcu();
	rv_auth_key_free(old);
	pr_info("cluster key set, id %*phN\n", RV_AUTH_ID_LEN, k->id);
	return 0;
}

/* Never the key: its fingerprint, or "none". */
static int rv_auth_key_get(char *buf, const struct kernel_param *kp)
{
	struct rv_auth_key *k;
	int n;

	rcu_read_lock();
	k = rcu_dereference(rv_auth_key);
	if (k)
		n = sysfs_emit(buf, "%*phN\n", RV_AUTH_ID_LEN, k->id);
	else
		n = sysfs_emit(buf, "none\n");
	rcu_read_unlock();
	return n;
}

const struct kernel_param_ops rv_auth_key_ops = {
	.set = rv_auth_key_set,
	.get = rv_auth_key_get,
};

/* For cm_stats. */
void rv_auth_show(struct seq_file *s)
{
	struct rv_auth_key *k;

	rcu_read_lock();
	k = rcu_dereference(rv_auth_key);
	if (k)
		seq_printf(s, "cluster_key %*phN\n", RV_AUTH_ID_LEN, k->id);
	else
		seq_printf(s, "cluster_key none%s\n",
			   rv_auth_insecure ? " (insecure_no_cluster_key)" : "");
	rcu_read_unlock();
}

/* Module unload, or a failed load after the parameter was parsed. */
void rv_auth_exit(void)
{
	rv_auth_key_free(rcu_dereference_protected(rv_auth_key, true));
	RCU_INIT_POINTER(rv_auth_key, NULL);
}
