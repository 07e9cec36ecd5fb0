/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fwh_cache: pins firmware images in the kernel's firmware cache on behalf
 * of user space, so that a driver's request_firmware() in its resume path is
 * served from kernel memory while user space is frozen.
 */
#ifndef _FWH_CACHE_H
#define _FWH_CACHE_H

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/firmware.h>
#include <linux/idr.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/types.h>
#include <linux/workqueue.h>

/* Longest firmware name accepted; keeps one `entries` line well bounded. */
#define FWH_CACHE_NAME_MAX		255
/* Longest release delay accepted: one hour. */
#define FWH_CACHE_RELEASE_DELAY_MAX	3600000U
/* Bounds of helper_timeout_ms: the longest a load waits for the helper. */
#define FWH_CACHE_HELPER_TIMEOUT_MIN	1000U
#define FWH_CACHE_HELPER_TIMEOUT_MAX	3600000U

enum fwh_entry_state {
	FWH_ENTRY_LOADING,
	FWH_ENTRY_CACHED,
	FWH_ENTRY_FAILED,
};

/**
 * struct fwh_entry - one firmware image pinned on behalf of user space
 * @dev: the device the image is requested for; its reference count is the
 *	entry's. The firmware loader records the name in this device's devres,
 *	which goes away with the device, so an uncached name leaves no trace.
 * @node: link in &fwh_cache.entries, under &fwh_cache.lock
 * @load_work: runs the request on &fwh_cache.wq, so writers never block
 * @helper_timeout: aborts a custom fallback request nobody answered within
 *	helper_timeout_ms; armed while @asking, cancelled by the callback
 * @fw: the image while cached; holding it keeps the loader's shared buffer
 *	(struct fw_priv) alive, which later requests for @name then reuse
 * @size: size of @fw
 * @state: loading, cached or failed
 * @error: negative errno of a failed load, else 0
 * @listed: cleared when the entry leaves the list; a load completing after
 *	that drops its image at once
 * @orphaned: the entry left the list while loading; the load, not the
 *	list, then removes the device
 * @asking: a custom fallback request for @name is pending (its callback,
 *	which finishes the entry, has not run yet)
 * @timed_out: @helper_timeout fired and aborted that request
 * @id: instance number, the device's name
 * @name: the firmware name, as given to request_firmware()
 */
struct fwh_entry {
	struct device dev;
	struct list_head node;
	struct work_struct load_work;
	struct delayed_work helper_timeout;
	const struct firmware *fw;
	size_t size;
	enum fwh_entry_state state;
	int error;
	bool listed;
	bool orphaned;
	bool asking;
	bool timed_out;
	int id;
	char name[];
};

/**
 * struct fwh_cache - module state
 * @lock: protects @entries, @nr_entries, @total_size, @closing and every
 *	entry's @fw, @size, @state, @error, @listed, @orphaned, @asking and
 *	@timed_out
 * @entries: list of &struct fwh_entry
 * @nr_entries: number of listed entries
 * @total_size: bytes held by cached entries
 * @closing: set at unload; no new entry may be created
 * @root: parent of every entry device, /sys/devices/fwh_cache
 * @wq: runs the loads
 * @ida: entry instance numbers
 * @kobj: /sys/kernel/fwh_cache
 * @release_work: releases every entry some time after a resume
 * @pm_nb: system sleep notifier
 * @gen: bumped after every change of the list or of an entry
 * @text_lock: protects @text, @text_len and @text_gen
 * @text: the entries file's text as of @text_gen; rebuilt by a read at
 *	offset 0 when @gen moved on, so that reading it takes @lock only then
 * @text_len: length of @text
 * @text_gen: @gen when @text was built
 */
struct fwh_cache {
	struct mutex lock;	/* the list and every entry, see @lock */
	struct list_head entries;
	unsigned int nr_entries;
	size_t total_size;
	bool closing;
	struct device *root;
	struct workqueue_struct *wq;
	struct ida ida;
	struct kobject *kobj;
	struct delayed_work release_work;
	struct notifier_block pm_nb;
	atomic_long_t gen;
	struct mutex text_lock;	/* @text, see there */
	char *text;
	size_t text_len;
	long text_gen;
};

extern struct fwh_cache fwh_cache;

/* Module parameters, see fwh_cache_main.c */
extern unsigned int fwh_max_entries;
extern unsigned long fwh_max_bytes;
extern unsigned int fwh_release_delay_ms;
extern bool fwh_userspace_fallback;
extern unsigned int fwh_helper_timeout_ms;

/* fwh_cache_entry.c */
int fwh_name_check(const char *name);
int fwh_entry_cache(const char *name);
int fwh_entry_uncache(const char *name);
unsigned int fwh_entry_release_all(void);
int fwh_entry_format(char **ret_buf, size_t *ret_len);
void fwh_entry_close(void);

/* fwh_cache_sysfs.c */
int fwh_sysfs_init(void);
void fwh_sysfs_exit(void);
void fwh_sysfs_notify_entries(void);

/* fwh_cache_pm.c */
int fwh_pm_init(void);
void fwh_pm_exit(void);

#endif /* _FWH_CACHE_H */
