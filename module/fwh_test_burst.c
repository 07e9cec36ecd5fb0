// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only: fires a burst of request_firmware_nowait() calls with distinct
 * names and reports when the last one completed, so benchmarks can time how
 * long a firmware helper takes to answer many concurrent requests.
 *
 * /sys/devices/platform/fwh_test_burst/:
 *   count     rw  requests per burst (1..FWH_BURST_MAX)
 *   trigger   w   a name prefix: requests "<prefix><i>.bin" for i < count
 *   results   r   "<ok> <failed> <pending>"
 *   total_us  r   microseconds from the trigger to the last completion
 *                 (0 while the burst runs)
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

#define FWH_BURST_MAX		1024
#define FWH_BURST_PREFIX_MAX	128

/**
 * struct fwh_burst - state of the current burst
 * @trigger_lock: serialises triggers and @count changes
 * @lock: protects the counters below
 * @count: requests per burst
 * @ok: requests completed with an image
 * @failed: requests completed without one
 * @pending: requests not completed yet
 * @start: when the burst was triggered
 * @total_us: duration of the whole burst, 0 while it runs
 */
struct fwh_burst {
	struct mutex trigger_lock;	/* serialises triggers, count changes */
	spinlock_t lock;		/* protects the counters below */
	unsigned int count;
	unsigned int ok;
	unsigned int failed;
	unsigned int pending;
	ktime_t start;
	s64 total_us;
};

static void fwh_burst_done(const struct firmware *fw, void *context)
{
	struct fwh_burst *b = context;
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	if (fw)
		b->ok++;
	else
		b->failed++;
	if (--b->pending == 0)
		b->total_us = ktime_us_delta(ktime_get(), b->start);
	spin_unlock_irqrestore(&b->lock, flags);

	release_firmware(fw);
}

static ssize_t count_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct fwh_burst *b = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(b->count));
}

static ssize_t count_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t len)
{
	struct fwh_burst *b = dev_get_drvdata(dev);
	unsigned int n;
	int r;

	r = kstrtouint(buf, 0, &n);
	if (r)
		return r;
	if (n < 1 || n > FWH_BURST_MAX)
		return -ERANGE;

	mutex_lock(&b->trigger_lock);
	WRITE_ONCE(b->count, n);
	mutex_unlock(&b->trigger_lock);
	return len;
}

static DEVICE_ATTR_RW(count);

static int fwh_burst_fire(struct device *dev, struct fwh_burst *b,
			  const char *prefix)
{
	unsigned int i, n = b->count;
	unsigned long flags;
	char *name;
	int r = 0;

	spin_lock_irqsave(&b->lock, flags);
	if (b->pending) {
		spin_unlock_irqrestore(&b->lock, flags);
		return -EBUSY;
	}
	b->ok = 0;
	b->failed = 0;
	b->pending = n;
	b->total_us = 0;
	b->start = ktime_get();
	spin_unlock_irqrestore(&b->lock, flags);

	for (i = 0; i < n; i++) {
		name = kasprintf(GFP_KERNEL, "%s%u.bin", prefix, i);
		/* The loader copies the name: ours is freed at once. */
		if (name)
			r = request_firmware_nowait(THIS_MODULE, FW_ACTION_UEVENT,
						    name, dev, GFP_KERNEL, b,
						    fwh_burst_done);
		else
			r = -ENOMEM;
		kfree(name);
		if (r) {
			/* Requests never made count as failed at once. */
			spin_lock_irqsave(&b->lock, flags);
			b->failed += n - i;
			b->pending -= n - i;
			if (b->pending == 0)
				b->total_us = ktime_us_delta(ktime_get(), b->start);
			spin_unlock_irqrestore(&b->lock, flags);
			break;
		}
	}
	return r;
}

static ssize_t trigger_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t len)
{
	struct fwh_burst *b = dev_get_drvdata(dev);
	char prefix[FWH_BURST_PREFIX_MAX];
	int r;

	if (len >= sizeof(prefix))
		return -ENAMETOOLONG;
	memcpy(prefix, buf, len);
	prefix[len] = '\0';
	strim(prefix);

	mutex_lock(&b->trigger_lock);
	r = fwh_burst_fire(dev, b, prefix);
	mutex_unlock(&b->trigger_lock);
	return r ? r : len;
}

static DEVICE_ATTR_WO(trigger);

static ssize_t results_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct fwh_burst *b = dev_get_drvdata(dev);
	unsigned int ok, failed, pending;
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	ok = b->ok;
	failed = b->failed;
	pending = b->pending;
	spin_unlock_irqrestore(&b->lock, flags);
	return sysfs_emit(buf, "%u %u %u\n", ok, failed, pending);
}

static DEVICE_ATTR_RO(results);

static ssize_t total_us_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct fwh_burst *b = dev_get_drvdata(dev);
	unsigned long flags;
	s64 us;

	spin_lock_irqsave(&b->lock, flags);
	us = b->total_us;
	spin_unlock_irqrestore(&b->lock, flags);
	return sysfs_emit(buf, "%lld\n", us);
}

static DEVICE_ATTR_RO(total_us);

static struct attribute *fwh_burst_attrs[] = {
	&dev_attr_count.attr,
	&dev_attr_trigger.attr,
	&dev_attr_results.attr,
	&dev_attr_total_us.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fwh_burst);

static int fwh_burst_probe(struct platform_device *pdev)
{
	struct fwh_burst *b;

	b = devm_kzalloc(&pdev->dev, sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;

	mutex_init(&b->trigger_lock);
	spin_lock_init(&b->lock);
	b->count = 200;
	platform_set_drvdata(pdev, b);
	return 0;
}

static struct platform_driver fwh_burst_driver = {
	.probe = fwh_burst_probe,
	.driver = {
		.name = "fwh_test_burst",
		.dev_groups = fwh_burst_groups,
	},
};

static struct platform_device *fwh_burst_pdev;

static int __init fwh_burst_init(void)
{
	int r;

	r = platform_driver_register(&fwh_burst_driver);
	if (r)
		return r;

	fwh_burst_pdev = platform_device_register_simple("fwh_test_burst",
							 PLATFORM_DEVID_NONE,
							 NULL, 0);
	if (IS_ERR(fwh_burst_pdev)) {
		platform_driver_unregister(&fwh_burst_driver);
		return PTR_ERR(fwh_burst_pdev);
	}

	return 0;
}

/*
 * Each request holds a reference on this module until its callback ran
 * (request_firmware_nowait() takes it), so no callback outlives the exit.
 */
static void __exit fwh_burst_exit(void)
{
	platform_device_unregister(fwh_burst_pdev);
	platform_driver_unregister(&fwh_burst_driver);
}

module_init(fwh_burst_init);
module_exit(fwh_burst_exit);

MODULE_DESCRIPTION("Test device that fires a burst of asynchronous firmware requests");
MODULE_LICENSE("GPL");
