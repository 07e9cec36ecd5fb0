// SPDX-License-Identifier: GPL-2.0
/*
 * fwh_cache: lets user space pin firmware in the kernel's firmware cache
 * across system sleep, in the spirit of cache_firmware()/uncache_firmware().
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/idr.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>

#include "fwh_cache.h"

struct fwh_cache fwh_cache = {
	.lock = __MUTEX_INITIALIZER(fwh_cache.lock),
	.entries = LIST_HEAD_INIT(fwh_cache.entries),
	.text_lock = __MUTEX_INITIALIZER(fwh_cache.text_lock),
};

/*
 * An entry costs a device and its name, well under a page; the memory that
 * matters is bounded by max_bytes. fw-helperd pins every name it holds in
 * memory (devices' names first, then PrewarmFirmware=, module hints last),
 * which may be hundreds of small images: 64 left needed names out.
 */
unsigned int fwh_max_entries = 1024;
module_param_named(max_entries, fwh_max_entries, uint, 0644);
MODULE_PARM_DESC(max_entries, "Most entries held at once (default 1024)");

unsigned long fwh_max_bytes = 256UL << 20;
module_param_named(max_bytes, fwh_max_bytes, ulong, 0644);
MODULE_PARM_DESC(max_bytes, "Most bytes of firmware held at once (default 256 MiB)");

unsigned int fwh_release_delay_ms = 10000;
module_param_named(release_delay_ms, fwh_release_delay_ms, uint, 0444);
MODULE_PARM_DESC(release_delay_ms,
		 "Initial delay between a resume and the release of every entry (default 10000)");

/* Set by the helper that answers (/sys/kernel/fwh_cache/userspace_fallback). */
bool fwh_userspace_fallback;

/*
 * The loader's custom fallback has no timeout of its own. A little above the
 * kernel's default fallback timeout (60 s), within which fw-helperd answers
 * or gives up: a helper that is gone is noticed before the hung task
 * detector (120 s) would look at anything.
 */
unsigned int fwh_helper_timeout_ms = 65000;
module_param_named(helper_timeout_ms, fwh_helper_timeout_ms, uint, 0644);
MODULE_PARM_DESC(helper_timeout_ms,
		 "Most ms a userspace_fallback load waits for the helper (default 65000)");

static int __init fwh_cache_init(void)
{
	int r;

	fwh_release_delay_ms = min(fwh_release_delay_ms,
				   FWH_CACHE_RELEASE_DELAY_MAX);
	ida_init(&fwh_cache.ida);

	fwh_cache.wq = alloc_workqueue("fwh_cache", WQ_UNBOUND, 0);
	if (!fwh_cache.wq)
		return -ENOMEM;

	fwh_cache.root = root_device_register("fwh_cache");
	if (IS_ERR(fwh_cache.root)) {
		r = PTR_ERR(fwh_cache.root);
		goto out_destroy_wq;
	}

	r = fwh_pm_init();
	if (r)
		goto out_unregister_root;

	r = fwh_sysfs_init();
	if (r)
		goto out_pm_exit;

	return 0;

out_pm_exit:
	fwh_pm_exit();
out_unregister_root:
	root_device_unregister(fwh_cache.root);
out_destroy_wq:
	destroy_workqueue(fwh_cache.wq);
	return r;
}

static void __exit fwh_cache_exit(void)
{
	unsigned int n;

	fwh_entry_close();
	/* Waits for the loads in flight; each completes its entry. */
	destroy_workqueue(fwh_cache.wq);
	fwh_pm_exit();
	fwh_sysfs_exit();

	n = fwh_entry_release_all();
	if (n)
		pr_info("released %u entries at unload\n", n);

	root_device_unregister(fwh_cache.root);
	ida_destroy(&fwh_cache.ida);
}

module_init(fwh_cache_init);
module_exit(fwh_cache_exit);

MODULE_DESCRIPTION("Pin firmware in the kernel's firmware cache across system sleep");
MODULE_LICENSE("GPL");
