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

static int rv_add_one(struct ib_device *ibdev)
{
	struct rv_device *dev;

	/* iWARP has no RDMA WRITE with immediate, rv's only data operation. */
	if (rdma_protocol_iwarp(ibdev, rdma_start_port(ibdev)))
		return -EOPNOTSUPP;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;

	dev->ibdev = ibdev;
	dev->index = ibdev->index;
	kref_init(&dev->kref);
	init_rwsem(&dev->rwsem);
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
 * cannot find it, wait for current users (bounded: none sleeps for long
 * under the rwsem), then release every job's resources on it.  Attached
 * files keep their job, which from now on reports -ENODEV.
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

	down_write(&dev->rwsem);
	dev->removed = true;
	mutex_lock(&dev->jobs_lock);
	list_for_each_entry(job, &dev->jobs, list)
		rv_job_release_ib(job);
	mutex_unlock(&dev->jobs_lock);
	dev->ibdev = NULL;
	up_write(&dev->rwsem);

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
