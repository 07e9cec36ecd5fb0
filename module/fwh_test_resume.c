// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only: a platform device whose firmware is lost on suspend and
 * reloaded with request_firmware() from its resume callback, while user
 * space is frozen, the way a USB WLAN dongle reloads its firmware.
 *
 * It does not request the firmware at probe unless request_at_probe is set,
 * so the kernel's own FW_CACHE has no name to cache for it: a resume-time
 * request succeeds only if the file is still readable or someone else holds
 * the image. The outcome of the last resume is in the device's sysfs dir.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32.h>
#include <linux/device.h>
#include <linux/firmware.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#define FWH_TEST_DEFAULT_FW	"fwh-test/resume.bin"

static char *fw_name = FWH_TEST_DEFAULT_FW;
module_param(fw_name, charp, 0444);
MODULE_PARM_DESC(fw_name, "Firmware requested on resume (default " FWH_TEST_DEFAULT_FW ")");

static bool request_at_probe;
module_param(request_at_probe, bool, 0444);
MODULE_PARM_DESC(request_at_probe,
		 "Also request the firmware at probe, which lets the kernel's FW_CACHE learn its name");

/**
 * struct fwh_test_result - outcome of the last resume
 * @resumes: resume callbacks run so far
 * @error: 0 or the negative errno of the last request
 * @size: bytes received
 * @crc: CRC-32 (as gzip computes it) of the bytes received
 * @usecs: duration of the request
 */
struct fwh_test_result {
	unsigned int resumes;
	int error;
	size_t size;
	u32 crc;
	s64 usecs;
};

struct fwh_test {
	struct mutex lock;	/* protects @last */
	struct fwh_test_result last;
};

static int fwh_test_request(struct device *dev, struct fwh_test *t)
{
	const struct firmware *fw;
	ktime_t start;
	s64 usecs;
	int r;

	start = ktime_get();
	r = request_firmware(&fw, fw_name, dev);
	usecs = ktime_us_delta(ktime_get(), start);

	mutex_lock(&t->lock);
	t->last.error = r;
	t->last.usecs = usecs;
	t->last.size = r ? 0 : fw->size;
	t->last.crc = r ? 0 : ~crc32_le(~0U, fw->data, fw->size);
	mutex_unlock(&t->lock);

	/* The device keeps its own copy; it has no use for ours. */
	release_firmware(fw);
	return r;
}

static int fwh_test_suspend(struct device *dev)
{
	dev_dbg(dev, "suspend: firmware lost\n");
	return 0;
}

static int fwh_test_resume(struct device *dev)
{
	struct fwh_test *t = dev_get_drvdata(dev);
	int r;

	r = fwh_test_request(dev, t);
	mutex_lock(&t->lock);
	t->last.resumes++;
	mutex_unlock(&t->lock);

	if (r)
		dev_info(dev, "resume: %s not reloaded: error %d\n", fw_name, r);
	else
		dev_info(dev, "resume: %s reloaded\n", fw_name);

	/* Reported through sysfs; failing the resume would only add noise. */
	return 0;
}

static SIMPLE_DEV_PM_OPS(fwh_test_pm_ops, fwh_test_suspend, fwh_test_resume);

static struct fwh_test_result fwh_test_last(struct device *dev)
{
	struct fwh_test *t = dev_get_drvdata(dev);
	struct fwh_test_result last;

	mutex_lock(&t->lock);
	last = t->last;
	mutex_unlock(&t->lock);
	return last;
}

static ssize_t resume_count_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", fwh_test_last(dev).resumes);
}

static DEVICE_ATTR_RO(resume_count);

static ssize_t resume_error_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", fwh_test_last(dev).error);
}

static DEVICE_ATTR_RO(resume_error);

static ssize_t resume_size_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%zu\n", fwh_test_last(dev).size);
}

static DEVICE_ATTR_RO(resume_size);

static ssize_t resume_crc32_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%08x\n", fwh_test_last(dev).crc);
}

static DEVICE_ATTR_RO(resume_crc32);

static ssize_t resume_usecs_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", fwh_test_last(dev).usecs);
}

static DEVICE_ATTR_RO(resume_usecs);

static struct attribute *fwh_test_attrs[] = {
	&dev_attr_resume_count.attr,
	&dev_attr_resume_error.attr,
	&dev_attr_resume_size.attr,
	&dev_attr_resume_crc32.attr,
	&dev_attr_resume_usecs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(fwh_test);

static int fwh_test_probe(struct platform_device *pdev)
{
	struct fwh_test *t;

	t = devm_kzalloc(&pdev->dev, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;

	mutex_init(&t->lock);
	platform_set_drvdata(pdev, t);

	if (request_at_probe)
		fwh_test_request(&pdev->dev, t);

	return 0;
}

static struct platform_driver fwh_test_driver = {
	.probe = fwh_test_probe,
	.driver = {
		.name = "fwh_test_resume",
		.pm = &fwh_test_pm_ops,
		.dev_groups = fwh_test_groups,
	},
};

static struct platform_device *fwh_test_pdev;

static int __init fwh_test_init(void)
{
	int r;

	r = platform_driver_register(&fwh_test_driver);
	if (r)
		return r;

	fwh_test_pdev = platform_device_register_simple("fwh_test_resume",
							PLATFORM_DEVID_NONE,
							NULL, 0);
	if (IS_ERR(fwh_test_pdev)) {
		platform_driver_unregister(&fwh_test_driver);
		return PTR_ERR(fwh_test_pdev);
	}

	return 0;
}

static void __exit fwh_test_exit(void)
{
	platform_device_unregister(fwh_test_pdev);
	platform_driver_unregister(&fwh_test_driver);
}

module_init(fwh_test_init);
module_exit(fwh_test_exit);

MODULE_FIRMWARE(FWH_TEST_DEFAULT_FW);
MODULE_DESCRIPTION("Test device that reloads its firmware on resume");
MODULE_LICENSE("GPL");
