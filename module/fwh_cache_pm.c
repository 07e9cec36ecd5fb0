// SPDX-License-Identifier: GPL-2.0
/*
 * System sleep: entries are held for the resume that follows, then released
 * release_delay_ms after it, as the kernel's own FW_CACHE does with the names
 * it collects from devices. Entering sleep again before then keeps them.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/notifier.h>
#include <linux/suspend.h>
#include <linux/workqueue.h>

#include "fwh_cache.h"

static void fwh_pm_release(struct work_struct *work)
{
	unsigned int n;

	n = fwh_entry_release_all();
	if (n)
		pr_info("released %u entries after resume\n", n);
}

static int fwh_pm_notify(struct notifier_block *nb, unsigned long action,
			 void *data)
{
	switch (action) {
	case PM_HIBERNATION_PREPARE:
	case PM_SUSPEND_PREPARE:
	case PM_RESTORE_PREPARE:
		cancel_delayed_work_sync(&fwh_cache.release_work);
		break;
	case PM_POST_HIBERNATION:
	case PM_POST_SUSPEND:
	case PM_POST_RESTORE:
		/* Also after a failed transition: the pin was for this one. */
		mod_delayed_work(system_power_efficient_wq, &fwh_cache.release_work,
				 msecs_to_jiffies(READ_ONCE(fwh_release_delay_ms)));
		break;
	}

	return NOTIFY_DONE;
}

int fwh_pm_init(void)
{
	INIT_DELAYED_WORK(&fwh_cache.release_work, fwh_pm_release);
	fwh_cache.pm_nb.notifier_call = fwh_pm_notify;
	return register_pm_notifier(&fwh_cache.pm_nb);
}

void fwh_pm_exit(void)
{
	unregister_pm_notifier(&fwh_cache.pm_nb);
	cancel_delayed_work_sync(&fwh_cache.release_work);
}
