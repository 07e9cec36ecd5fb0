// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only: a device that asks for firmware and can be unplugged while the
 * request is pending, as a USB device pulled mid-load. The fallback loader
 * puts the request's directory under the requesting device
 * (.../fwh_unplug_dev/firmware/<name>/), so unregistering the device removes
 * the request's sysfs files under the helper while the loader still waits
 * for its timeout.
 *
 * /sys/devices/platform/fwh_test_unplug/:
 *   plug    w  a firmware name: registers the child device fwh_unplug_dev and
 *              asks for the name with request_firmware_nowait(FW_ACTION_UEVENT)
 *              (-EBUSY while a child exists or a request is pending)
 *   unplug  w  anything: device_unregister() of the child; the reference the
 *              loader took keeps its memory until the callback has run
 *   result  r  "<state> <size> <ms>": state none, pending, ok or failed; the
 *              size of the image received; milliseconds from plug to the
 *              callback (0 while pending)
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/firmware.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#define FWH_UNPLUG_NAME_MAX	128
#define FWH_UNPLUG_CHILD	"fwh_unplug_dev"

enum fwh_unplug_state {
	FWH_UNPLUG_NONE,
	FWH_UNPLUG_PENDING,
	FWH_UNPLUG_OK,
	FWH_UNPLUG_FAILED,
};

static const char * const fwh_unplug_state_names[] = {
	[FWH_UNPLUG_NONE] = "none",
	[FWH_UNPLUG_PENDING] = "pending",
	[FWH_UNPLUG_OK] = "ok",
	[FWH_UNPLUG_FAILED] = "failed",
};

/**
 * struct fwh_unplug - the test device's state
 * @plug_lock: serialises plug and unplug
 * @child: the registered child device, NULL when unplugged
 * @lock: protects the fields below
 * @state: where the last request stands
 * @size: bytes received by the last request
 * @start: when the last request was made
 * @done_ms: milliseconds from @start to the callback
 */
struct fwh_unplug {
	struct mutex plug_lock;	/* serialises plug and unplug */
	struct device *child;
	spinlock_t lock;	/* protects the fields below */
	enum fwh_unplug_state state;
	size_t size;
	ktime_t start;
	s64 done_ms;
};

static void fwh_unplug_done(const struct firmware *fw, void *context)
{
	struct fwh_unplug *u = context;
	unsigned long flags;

	spin_lock_irqsave(&u->lock, flags);
	u->state = fw ? FWH_UNPLUG_OK : FWH_UNPLUG_FAILED;
	u->size = fw ? fw->size : 0;
	u->done_ms = ktime_ms_delta(ktime_get(), u->start);
	spin_unlock_irqrestore(&u->lock, flags);

	release_firmware(fw);
}

static void fwh_unplug_child_release(struct device *dev)
{
	kfree(dev);
}

static int fwh_unplug_request(struct device *parent, struct fwh_unplug *u,
			      const char *name)
{
	struct device *child;
	unsigned long flags;
	int r;

	spin_lock_irqsave(&u->lock, flags);
	if (u->child || u->state == FWH_UNPLUG_PENDING) {
		spin_unlock_irqrestore(&u->lock, flags);
		return -EBUSY;
	}
	u->state = FWH_UNPLUG_PENDING;
	u->size = 0;
	u->done_ms = 0;
	u->start = ktime_get();
	spin_unlock_irqrestore(&u->lock, flags);

	child = kzalloc(sizeof(*child), GFP_KERNEL);
	if (!child) {
		r = -ENOMEM;
		goto out_failed;
	}
	device_initialize(child);
	child->parent = parent;
	child->release = fwh_unplug_child_release;
	r = dev_set_name(child, FWH_UNPLUG_CHILD);
	if (!r)
		r = device_add(child);
	if (r) {
		put_device(child);
		goto out_failed;
	}

	/* The loader holds a reference on child until fwh_unplug_done() ran. */
	r = request_firmware_nowait(THIS_MODULE, FW_ACTION_UEVENT, name, child,
				    GFP_KERNEL, u, fwh_unplug_done);
	if (r) {
		device_unregister(child);
		goto out_failed;
	}
	u->child = child;
	return 0;

out_failed:
	spin_lock_irqsave(&u->lock, flags);
	u->state = FWH_UNPLUG_FAILED;
	spin_unlock_irqrestore(&u->lock, flags);
	return r;
}

static ssize_t plug_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t len)
{
	struct fwh_unplug *u = dev_get_drvdata(dev);
	char name[FWH_UNPLUG_NAME_MAX];
	int r;

	if (len >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(name, buf, len);
	name[len] = '\0';
	strim(name);
	if (!name[0])
		return -EINVAL;

	mutex_lock(&u->plug_lock);
	r = fwh_unplug_request(dev, u, name);
	mutex_unlock(&u->plug_lock);
	return r ? r : len;
}

static DEVICE_ATTR_WO(plug);

static ssize_t unplug_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t len)
{
	struct fwh_unplug *u = dev_get_drvdata(dev);
	int r = 0;

	mutex_lock(&u->plug_lock);
	if (u->child) {
		device_unregister(u->child);
		u->child = NULL;
	} else {
		r = -ENODEV;
	}
	mutex_unlock(&u->plug_lock);
	return r ? r : len;
}

static DEVICE_ATTR_WO(unplug);

static ssize_t result_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct fwh_unplug *u = dev_get_drvdata(dev);
	enum fwh_unplug_state state;
	unsigned long flags;
	size_t size;
	s64 ms;

	spin_lock_irqsave(&u->lock, flags);
	state = u->state;
	size = u->size;
	ms = u->done_ms;
	spin_unlock_irqrestore(&u->lock, flags);
	return sysfs_emit(buf, "%s %zu %lld\n", fwh_unplug_state_names[state],
			  size, ms);
}

static DEVICE_ATTR_RO(result);

static struct attribute *fwh_unplug_attrs[] = {
	&dev_attr_plug.attr,
	&dev_attr_unplug.attr,
	&dev_attr_result.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fwh_unplug);

static int fwh_unplug_probe(struct platform_device *pdev)
{
	struct fwh_unplug *u;

	u = devm_kzalloc(&pdev->dev, sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;

	mutex_init(&u->plug_lock);
	spin_lock_init(&u->lock);
	platform_set_drvdata(pdev, u);
	return 0;
}

static void fwh_unplug_remove_child(struct platform_device *pdev)
{
	struct fwh_unplug *u = platform_get_drvdata(pdev);

	mutex_lock(&u->plug_lock);
	if (u->child) {
		device_unregister(u->child);
		u->child = NULL;
	}
	mutex_unlock(&u->plug_lock);
}

static struct platform_driver fwh_unplug_driver = {
	.probe = fwh_unplug_probe,
	.driver = {
		.name = "fwh_test_unplug",
		.dev_groups = fwh_unplug_groups,
	},
};

static struct platform_device *fwh_unplug_pdev;

static int __init fwh_unplug_init(void)
{
	int r;

	r = platform_driver_register(&fwh_unplug_driver);
	if (r)
		return r;

	fwh_unplug_pdev = platform_device_register_simple("fwh_test_unplug",
							  PLATFORM_DEVID_NONE,
							  NULL, 0);
	if (IS_ERR(fwh_unplug_pdev)) {
		platform_driver_unregister(&fwh_unplug_driver);
		return PTR_ERR(fwh_unplug_pdev);
	}

	return 0;
}

/*
 * A pending request holds a reference on this module until its callback ran
 * (request_firmware_nowait() takes it), so no callback outlives the exit; a
 * child still plugged is unregistered first.
 */
static void __exit fwh_unplug_exit(void)
{
	fwh_unplug_remove_child(fwh_unplug_pdev);
	platform_device_unregister(fwh_unplug_pdev);
	platform_driver_unregister(&fwh_unplug_driver);
}

module_init(fwh_unplug_init);
module_exit(fwh_unplug_exit);

MODULE_DESCRIPTION("Test device that can be unplugged while its firmware request is pending");
MODULE_LICENSE("GPL");
