// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Everything the provider does not support answers -FI_ENOSYS: every ops
 * table the provider hands out is complete, so an application probing an
 * unsupported call gets an error instead of a NULL function pointer.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>

#include "rvfi.h"

#define UNUSED __attribute__((unused))

int rvfi_no_bind(struct fid *f UNUSED, struct fid *b UNUSED, uint64_t fl UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_control(struct fid *f UNUSED, int c UNUSED, void *a UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_ops_open(struct fid *f UNUSED, const char *n UNUSED,
		     uint64_t fl UNUSED, void **o UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_tostr(const struct fid *f UNUSED, char *b UNUSED, size_t l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_ops_set(struct fid *f UNUSED, const char *n UNUSED,
		    uint64_t fl UNUSED, void *o UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

ssize_t rvfi_no_cancel(fid_t f UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_getopt(fid_t f UNUSED, int l UNUSED, int o UNUSED, void *v UNUSED,
		   size_t *len UNUSED)
{
	return -FI_ENOPROTOOPT;
}

int rvfi_no_setopt(fid_t f UNUSED, int l UNUSED, int o UNUSED,
		   const void *v UNUSED, size_t len UNUSED)
{
	return -FI_ENOPROTOOPT;
}

int rvfi_no_tx_ctx(struct fid_ep *s UNUSED, int i UNUSED,
		   struct fi_tx_attr *a UNUSED, struct fid_ep **e UNUSED,
		   void *c UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_rx_ctx(struct fid_ep *s UNUSED, int i UNUSED,
		   struct fi_rx_attr *a UNUSED, struct fid_ep **e UNUSED,
		   void *c UNUSED)
{
	return -FI_ENOSYS;
}

ssize_t rvfi_no_rx_size_left(struct fid_ep *e UNUSED)
{
	return -FI_ENOSYS;
}

ssize_t rvfi_no_tx_size_left(struct fid_ep *e UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_getname(fid_t f UNUSED, void *a UNUSED, size_t *l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_setname(fid_t f UNUSED, void *a UNUSED, size_t l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_getpeer(struct fid_ep *e UNUSED, void *a UNUSED, size_t *l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_connect(struct fid_ep *e UNUSED, const void *a UNUSED,
		    const void *p UNUSED, size_t l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_listen(struct fid_pep *p UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_accept(struct fid_ep *e UNUSED, const void *p UNUSED,
		   size_t l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_reject(struct fid_pep *pep UNUSED, fid_t h UNUSED,
		   const void *p UNUSED, size_t l UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_shutdown(struct fid_ep *e UNUSED, uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

int rvfi_no_join(struct fid_ep *e UNUSED, const void *a UNUSED,
		 uint64_t f UNUSED, struct fid_mc **m UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

/* ---- RMA ----------------------------------------------------------------- */

static ssize_t no_read(struct fid_ep *e UNUSED, void *b UNUSED,
		       size_t l UNUSED, void *d UNUSED, fi_addr_t s UNUSED,
		       uint64_t a UNUSED, uint64_t k UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_readv(struct fid_ep *e UNUSED, const struct iovec *i UNUSED,
			void **d UNUSED, size_t n UNUSED, fi_addr_t s UNUSED,
			uint64_t a UNUSED, uint64_t k UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_rmamsg(struct fid_ep *e UNUSED,
			 const struct fi_msg_rma *m UNUSED, uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_write(struct fid_ep *e UNUSED, const void *b UNUSED,
			size_t l UNUSED, void *d UNUSED, fi_addr_t s UNUSED,
			uint64_t a UNUSED, uint64_t k UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_writev(struct fid_ep *e UNUSED,
			 const struct iovec *i UNUSED, void **d UNUSED,
			 size_t n UNUSED, fi_addr_t s UNUSED,
			 uint64_t a UNUSED, uint64_t k UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_rinject(struct fid_ep *e UNUSED, const void *b UNUSED,
			  size_t l UNUSED, fi_addr_t s UNUSED,
			  uint64_t a UNUSED, uint64_t k UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_writedata(struct fid_ep *e UNUSED, const void *b UNUSED,
			    size_t l UNUSED, void *d UNUSED, uint64_t dt UNUSED,
			    fi_addr_t s UNUSED, uint64_t a UNUSED,
			    uint64_t k UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_injectdata(struct fid_ep *e UNUSED, const void *b UNUSED,
			     size_t l UNUSED, uint64_t dt UNUSED,
			     fi_addr_t s UNUSED, uint64_t a UNUSED,
			     uint64_t k UNUSED)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma rvfi_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = no_read,
	.readv = no_readv,
	.readmsg = no_rmamsg,
	.write = no_write,
	.writev = no_writev,
	.writemsg = no_rmamsg,
	.inject = no_rinject,
	.writedata = no_writedata,
	.injectdata = no_injectdata,
};

/* ---- atomics ------------------------------------------------------------- */

static ssize_t no_awrite(struct fid_ep *e UNUSED, const void *b UNUSED,
			 size_t n UNUSED, void *d UNUSED, fi_addr_t a UNUSED,
			 uint64_t ad UNUSED, uint64_t k UNUSED,
			 enum fi_datatype t UNUSED, enum fi_op o UNUSED,
			 void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_awritev(struct fid_ep *e UNUSED,
			  const struct fi_ioc *i UNUSED, void **d UNUSED,
			  size_t n UNUSED, fi_addr_t a UNUSED,
			  uint64_t ad UNUSED, uint64_t k UNUSED,
			  enum fi_datatype t UNUSED, enum fi_op o UNUSED,
			  void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_awritemsg(struct fid_ep *e UNUSED,
			    const struct fi_msg_atomic *m UNUSED,
			    uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_ainject(struct fid_ep *e UNUSED, const void *b UNUSED,
			  size_t n UNUSED, fi_addr_t a UNUSED,
			  uint64_t ad UNUSED, uint64_t k UNUSED,
			  enum fi_datatype t UNUSED, enum fi_op o UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_arw(struct fid_ep *e UNUSED, const void *b UNUSED,
		      size_t n UNUSED, void *d UNUSED, void *r UNUSED,
		      void *rd UNUSED, fi_addr_t a UNUSED, uint64_t ad UNUSED,
		      uint64_t k UNUSED, enum fi_datatype t UNUSED,
		      enum fi_op o UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_arwv(struct fid_ep *e UNUSED, const struct fi_ioc *i UNUSED,
		       void **d UNUSED, size_t n UNUSED,
		       struct fi_ioc *r UNUSED, void **rd UNUSED,
		       size_t rn UNUSED, fi_addr_t a UNUSED, uint64_t ad UNUSED,
		       uint64_t k UNUSED, enum fi_datatype t UNUSED,
		       enum fi_op o UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_arwmsg(struct fid_ep *e UNUSED,
			 const struct fi_msg_atomic *m UNUSED,
			 struct fi_ioc *r UNUSED, void **rd UNUSED,
			 size_t rn UNUSED, uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_acw(struct fid_ep *e UNUSED, const void *b UNUSED,
		      size_t n UNUSED, void *d UNUSED, const void *cm UNUSED,
		      void *cd UNUSED, void *r UNUSED, void *rd UNUSED,
		      fi_addr_t a UNUSED, uint64_t ad UNUSED, uint64_t k UNUSED,
		      enum fi_datatype t UNUSED, enum fi_op o UNUSED,
		      void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_acwv(struct fid_ep *e UNUSED, const struct fi_ioc *i UNUSED,
		       void **d UNUSED, size_t n UNUSED,
		       const struct fi_ioc *cm UNUSED, void **cd UNUSED,
		       size_t cn UNUSED, struct fi_ioc *r UNUSED,
		       void **rd UNUSED, size_t rn UNUSED, fi_addr_t a UNUSED,
		       uint64_t ad UNUSED, uint64_t k UNUSED,
		       enum fi_datatype t UNUSED, enum fi_op o UNUSED,
		       void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_acwmsg(struct fid_ep *e UNUSED,
			 const struct fi_msg_atomic *m UNUSED,
			 const struct fi_ioc *cm UNUSED, void **cd UNUSED,
			 size_t cn UNUSED, struct fi_ioc *r UNUSED,
			 void **rd UNUSED, size_t rn UNUSED, uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

static int no_avalid(struct fid_ep *e UNUSED, enum fi_datatype t UNUSED,
		     enum fi_op o UNUSED, size_t *n UNUSED)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic rvfi_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = no_awrite,
	.writev = no_awritev,
	.writemsg = no_awritemsg,
	.inject = no_ainject,
	.readwrite = no_arw,
	.readwritev = no_arwv,
	.readwritemsg = no_arwmsg,
	.compwrite = no_acw,
	.compwritev = no_acwv,
	.compwritemsg = no_acwmsg,
	.writevalid = no_avalid,
	.readwritevalid = no_avalid,
	.compwritevalid = no_avalid,
};

/* ---- collectives --------------------------------------------------------- */

static ssize_t no_barrier(struct fid_ep *e UNUSED, fi_addr_t a UNUSED,
			  void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_bcast(struct fid_ep *e UNUSED, void *b UNUSED,
			size_t n UNUSED, void *d UNUSED, fi_addr_t a UNUSED,
			fi_addr_t r UNUSED, enum fi_datatype t UNUSED,
			uint64_t f UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_a2a(struct fid_ep *e UNUSED, const void *b UNUSED,
		      size_t n UNUSED, void *d UNUSED, void *r UNUSED,
		      void *rd UNUSED, fi_addr_t a UNUSED,
		      enum fi_datatype t UNUSED, uint64_t f UNUSED,
		      void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_allreduce(struct fid_ep *e UNUSED, const void *b UNUSED,
			    size_t n UNUSED, void *d UNUSED, void *r UNUSED,
			    void *rd UNUSED, fi_addr_t a UNUSED,
			    enum fi_datatype t UNUSED, enum fi_op o UNUSED,
			    uint64_t f UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_reduce(struct fid_ep *e UNUSED, const void *b UNUSED,
			 size_t n UNUSED, void *d UNUSED, void *r UNUSED,
			 void *rd UNUSED, fi_addr_t a UNUSED,
			 fi_addr_t root UNUSED, enum fi_datatype t UNUSED,
			 enum fi_op o UNUSED, uint64_t f UNUSED,
			 void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_scatter(struct fid_ep *e UNUSED, const void *b UNUSED,
			  size_t n UNUSED, void *d UNUSED, void *r UNUSED,
			  void *rd UNUSED, fi_addr_t a UNUSED,
			  fi_addr_t root UNUSED, enum fi_datatype t UNUSED,
			  uint64_t f UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_cmsg(struct fid_ep *e UNUSED,
		       const struct fi_msg_collective *m UNUSED,
		       struct fi_ioc *r UNUSED, void **rd UNUSED,
		       size_t rn UNUSED, uint64_t f UNUSED)
{
	return -FI_ENOSYS;
}

static ssize_t no_barrier2(struct fid_ep *e UNUSED, fi_addr_t a UNUSED,
			   uint64_t f UNUSED, void *c UNUSED)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective rvfi_no_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = no_barrier,
	.broadcast = no_bcast,
	.alltoall = no_a2a,
	.allreduce = no_allreduce,
	.allgather = no_a2a,
	.reduce_scatter = no_allreduce,
	.reduce = no_reduce,
	.scatter = no_scatter,
	.gather = no_scatter,
	.msg = no_cmsg,
	.barrier2 = no_barrier2,
};
