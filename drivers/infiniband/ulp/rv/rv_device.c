// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMA device tracking: an ib_client that mirrors the devices rv may use
 * and tears down every job resource on a device when it goes away.
 */
#include "rv.h"
#include "rv_trace.h"

#include <linux/slab.h>

/* Protects rv_devices. A leaf lock: see the lock order in rv.h. */
static DEFINE_MUTEX(rv_devices_lock);
static LIST_HEAD(rv_devices);

static struct ib_client rv_ib_client;

static void rv_device_free(struct kref *kref)
{
	struct rv_device *dev = container_of(kref, struct rv_device, kref);

	WARN_ON(!list_empty(&dev->jobs));
	mutex_destroy(&dev->jobs_lock);
	cleanup_srcu_struct(&dev->srcu);
	kfree(dev);
}

void rv_device_put(struct rv_device *dev)
{
	kref_put(&dev->kref, rv_device_free);
}

/**
 * rv_device_get_by_index - find a live device by its kernel index
 * @index: ib_device index, as user space sees it in netlink
 *
 * The index, unlike the name, is stable across renames.
 *
 * Return: the device with a reference held, or NULL.
 */
struct rv_device *rv_device_get_by_index(u32 index)
{
	struct rv_device *dev, *found = NULL;

	mutex_lock(&rv_devices_lock);
	list_for_each_entry(dev, &rv_devices, list) {
		if (dev->index == index) {
			kref_get(&dev->kref);
			found = dev;
			break;
		}
	}
	mutex_unlock(&rv_devices_lock);
	return found;
}

/**
 * rv_device_get_all - references on every device, for a dump
 * @devs: room for @max devices
 * @max: size of @devs
 *
 * Return: the number of devices whose reference is now in @devs (at most
 * @max).  The caller puts each.
 */
unsigned int rv_device_get_all(struct rv_device **devs, unsigned int max)
{
	struct rv_device *dev;
	unsigned int n = 0;

	mutex_lock(&rv_devices_lock);
	list_for_each_entry(dev, &rv_devices, list) {
		if (n == max)
			break;
		kref_get(&dev->kref);
		devs[n++] = dev;
	}
	mutex_unlock(&rv_devices_lock);
	return n;
}

/**
 * rv_device_enter - begin using @dev's ib resources
 * @dev: the device, referenced by the caller
 * @need_device: refuse once removal has begun (commands that create
 *	device objects or post work).  Without it the caller proceeds
 *	either way: in a read section while the device is live, or, once it
 *	is removed, after removal has released everything (nothing of the
 *	device is left to use, only memory to free) and outside any section
 *
 * A read section never waits for removal.  A caller that meets a removal
 * in progress waits for it to finish (bounded kernel work: nothing in it
 * waits on user space), outside any section so removal need not wait for
 * it in turn; the caller holds nothing removal takes (at most
 * rv_file.lock).  So an -ENODEV means the removal is over: every write
 * on the device has ended with its event and no receive can come.  Not
 * nested: sections are entered once per call path.  Every call is matched
 * by rv_device_leave() with its answer, whatever that is (so sparse can
 * pair them).
 *
 * Return: an SRCU index (>= 0), during which @dev->ibdev and the jobs' ib
 * resources stay; RV_DEVICE_GONE when the device is removed and
 * released; -ENODEV with @need_device.
 */
int rv_device_enter(struct rv_device *dev, bool need_device)
	__acquires(&dev->srcu)
{
	int idx = srcu_read_lock(&dev->srcu);

	/* A section begun after removal's store sees it (SRCU's guarantee). */
	if (!READ_ONCE(dev->removed))
		return idx;
	srcu_read_unlock(&dev->srcu, idx);
	__acquire(&dev->srcu);	/* released by rv_device_leave() */
	wait_for_completion(&dev->released);
	return need_device ? -ENODEV : RV_DEVICE_GONE;
}

/**
 * rv_job_enter - begin using @job's ib resources
 * @job: the job, referenced by the caller
 * @need_device: as for rv_device_enter()
 *
 * rv_device_enter() on the job's device, which also meets a job its
 * launcher ended (rv_job_end()) as a removed device: the caller waits
 * until the job's resources are released, then gets -ENODEV with
 * @need_device, else RV_DEVICE_GONE and proceeds outside any section.
 * Ended by rv_device_leave() on @job->dev.
 */
int rv_job_enter(struct rv_job *job, bool need_device)
	__acquires(&job->dev->srcu)
{
	int idx = rv_device_enter(job->dev, need_device);

	/* rv_job_end() sets ended, then waits for the sections before. */
	if (idx < 0 || !READ_ONCE(job->ended))
		return idx;
	srcu_read_unlock(&job->dev->srcu, idx);
	__acquire(&job->dev->srcu);	/* released by rv_device_leave() */
	wait_for_completion(&job->released);
	return need_device ? -ENODEV : RV_DEVICE_GONE;
}

void rv_device_leave(struct rv_device *dev, int idx)
	__releases(&dev->srcu)
{
	if (idx >= 0)
		srcu_read_unlock(&dev->srcu, idx);
	else
		__release(&dev->srcu);
}

static int rv_add_one(struct ib_device *ibdev)
{
	struct rv_device *dev;

	/* iWARP has no RDMA WRITE with immediate, rv's only data operation. */
	if (rdma_protocol_iwarp(ibdev, rdma_start_port(ibdev)))
		return -EOPNOTSUPP;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	if (init_srcu_struct(&dev->srcu)) {
		kfree(dev);
		return -ENOMEM;
	}

	dev->ibdev = ibdev;
	dev->index = ibdev->index;
	kref_init(&dev->kref);
	init_completion(&dev->released);
	mutex_init(&dev->jobs_lock);
	INIT_LIST_HEAD(&dev->jobs);

	mutex_lock(&rv_devices_lock);
	list_add_tail(&dev->list, &rv_devices);
	mutex_unlock(&rv_devices_lock);

	ib_set_client_data(ibdev, &rv_ib_client, dev);
	trace_rv_device_add(ibdev);
	dev_info_ratelimited(&ibdev->dev, "rv: device %u added\n",
			     ibdev->index);
	return 0;
}

/*
 * The core calls this when the device is unregistered or rv's client is.
 * Afterwards nothing of rv may touch @ibdev: unlink the device so ATTACH
 * cannot find it, mark it removed so no new read section uses it, wait
 * for the sections in progress (bounded: none sleeps on user space), then
 * release every job's resources on it.  Attached files keep their job,
 * which from now on reports -ENODEV.
 */
static void rv_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct rv_device *dev = client_data;
	struct rv_job *job;

	trace_rv_device_remove(ibdev);
	dev_info_ratelimited(&ibdev->dev, "rv: device %u going away\n",
			     ibdev->index);

	mutex_lock(&rv_devices_lock);
	list_del(&dev->list);
	mutex_unlock(&rv_devices_lock);

	WRITE_ONCE(dev->removed, true);
	synchronize_srcu(&dev->srcu);
	/*
	 * Alone now: a caller that meets the removal waits for @released
	 * before it touches a job's resources, or fails.
	 */
	mutex_lock(&dev->jobs_lock);
	list_for_each_entry(job, &dev->jobs, list)
		rv_job_release_ib(job);
	mutex_unlock(&dev->jobs_lock);
	dev->ibdev = NULL;
	complete_all(&dev->released);

	rv_device_put(dev);
}

/* Jobs name their device by index, so a rename changes nothing but logs. */
static void rv_rename_one(struct ib_device *ibdev, void *client_data)
{
	trace_rv_device_rename(ibdev);
}

static struct ib_client rv_ib_client = {
	.name = "rv",
	.add = rv_add_one,
	.remove = rv_remove_one,
	.rename = rv_rename_one,
};

int rv_device_init(void)
{
	return ib_register_client(&rv_ib_client);
}

void rv_device_exit(void)
{
	ib_unregister_client(&rv_ib_client);
}
