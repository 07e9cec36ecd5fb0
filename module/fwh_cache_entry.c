// SPDX-License-Identifier: GPL-2.0
/*
 * Entries: one firmware image each, requested for a device of our own and
 * held until uncached, released after a resume, or the module goes away.
 *
 * Holding the struct firmware is the whole trick: the loader keeps every
 * image that is still referenced in its list and hands the same buffer to
 * any later request for the same name (alloc_lookup_fw_priv()), without
 * touching the filesystem or user space.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/errno.h>
#include <linux/firmware.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "fwh_cache.h"

static const char * const fwh_entry_state_names[] = {
	[FWH_ENTRY_LOADING] = "loading",
	[FWH_ENTRY_CACHED] = "cached",
	[FWH_ENTRY_FAILED] = "failed",
};

/*
 * Refuses what user space refuses before a lookup: empty, absolute, an
 * empty, "." or ".." component, control bytes or DEL, too long.
 */
int fwh_name_check(const char *name)
{
	size_t len = strlen(name);
	const char *p, *comp;

	if (!len || len > FWH_CACHE_NAME_MAX || name[0] == '/')
		return -EINVAL;

	for (p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return -EINVAL;

	for (comp = name; comp; comp = p ? p + 1 : NULL) {
		size_t clen;

		p = strchr(comp, '/');
		clen = p ? (size_t)(p - comp) : strlen(comp);
		if (clen == 0 ||
		    (clen == 1 && comp[0] == '.') ||
		    (clen == 2 && comp[0] == '.' && comp[1] == '.'))
			return -EINVAL;
	}

	return 0;
}

static void fwh_entry_dev_release(struct device *dev)
{
	struct fwh_entry *e = container_of(dev, struct fwh_entry, dev);

	WARN_ON(e->fw);
	ida_free(&fwh_cache.ida, e->id);
	kfree(e);
}

static struct fwh_entry *fwh_entry_find(const char *name)
{
	struct fwh_entry *e;

	lockdep_assert_held(&fwh_cache.lock);

	list_for_each_entry(e, &fwh_cache.entries, node)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

/* Called with the lock held; the caller finishes with fwh_entry_put_away(). */
static void fwh_entry_unlink(struct fwh_entry *e)
{
	lockdep_assert_held(&fwh_cache.lock);

	list_del_init(&e->node);
	e->listed = false;
	/*
	 * A load in flight may have a fallback request below our device;
	 * the device then stays until that load is over (fwh_entry_loaded()).
	 */
	e->orphaned = e->state == FWH_ENTRY_LOADING;
	fwh_cache.nr_entries--;
	if (e->state == FWH_ENTRY_CACHED)
		fwh_cache.total_size -= e->size;
}

/* Drops the image and the list's reference; called without the lock. */
static void fwh_entry_put_away(struct fwh_entry *e)
{
	const struct firmware *fw;
	bool orphaned;

	mutex_lock(&fwh_cache.lock);
	fw = e->fw;
	e->fw = NULL;
	orphaned = e->orphaned;
	mutex_unlock(&fwh_cache.lock);

	release_firmware(fw);
	if (!orphaned)
		device_del(&e->dev);
	put_device(&e->dev);
}

static void fwh_entry_loaded(struct fwh_entry *e, const struct firmware *fw,
			     int error)
{
	unsigned long max_bytes = READ_ONCE(fwh_max_bytes);

	mutex_lock(&fwh_cache.lock);
	if (!e->listed) {
		/* Uncached while loading: nobody wants the image any more. */
		mutex_unlock(&fwh_cache.lock);
		release_firmware(fw);
		device_del(&e->dev);
		return;
	}

	if (!error && fw->size > max_bytes - min_t(size_t, max_bytes,
						   fwh_cache.total_size))
		error = -EFBIG;

	if (error) {
		e->state = FWH_ENTRY_FAILED;
		e->error = error;
		mutex_unlock(&fwh_cache.lock);
		release_firmware(fw);
		pr_info("%s: not caching %s: error %d\n", dev_name(&e->dev),
			e->name, error);
	} else {
		e->fw = fw;
		e->size = fw->size;
		e->state = FWH_ENTRY_CACHED;
		fwh_cache.total_size += fw->size;
		mutex_unlock(&fwh_cache.lock);
		pr_info("%s: cached %s (%zu bytes)\n", dev_name(&e->dev),
			e->name, fw->size);
	}

	fwh_sysfs_notify_entries();
}

/*
 * Writes "-1" to the pending request's loading file, as the helper would:
 * the loader then ends the request and calls fwh_entry_asked(). It goes
 * through kernfs, which keeps the file's store from running once the
 * request's device is gone; a request that ends meanwhile is left alone.
 * Returns -EAGAIN while the request's device is not there yet.
 */
static int fwh_entry_abort_request(struct fwh_entry *e)
{
	struct device *req;
	struct file *f;
	char *kpath, *path;
	loff_t pos = 0;
	ssize_t n;

	/* The request is our device's only child (firmware_class, no driver). */
	req = device_find_any_child(&e->dev);
	if (!req)
		return -EAGAIN;
	kpath = kobject_get_path(&req->kobj, GFP_KERNEL);
	put_device(req);
	if (!kpath)
		return -ENOMEM;
	path = kasprintf(GFP_KERNEL, "/sys%s/loading", kpath);
	kfree(kpath);
	if (!path)
		return -ENOMEM;

	f = filp_open(path, O_WRONLY, 0);
	kfree(path);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_write(f, "-1", 2, &pos);
	filp_close(f, NULL);
	return n < 0 ? n : 0;
}

static void fwh_entry_helper_timeout(struct work_struct *work)
{
	struct fwh_entry *e = container_of(to_delayed_work(work),
					   struct fwh_entry, helper_timeout);
	bool was_on;
	int r;

	mutex_lock(&fwh_cache.lock);
	if (!e->asking) {
		mutex_unlock(&fwh_cache.lock);
		return;
	}
	e->timed_out = true;
	mutex_unlock(&fwh_cache.lock);

	/* Nobody answers: later loads go to the direct loader alone. */
	was_on = READ_ONCE(fwh_userspace_fallback);
	WRITE_ONCE(fwh_userspace_fallback, false);
	r = fwh_entry_abort_request(e);
	if (r == -EAGAIN) {
		queue_delayed_work(fwh_cache.wq, &e->helper_timeout, HZ);
		return;
	}
	pr_warn("%s: no helper answered for %s within %u ms%s\n",
		dev_name(&e->dev), e->name, READ_ONCE(fwh_helper_timeout_ms),
		was_on ? ", userspace_fallback switched off" : "");
	if (r)
		pr_warn("%s: cannot abort the request for %s: error %d\n",
			dev_name(&e->dev), e->name, r);
}

/*
 * The loader's callback: finishes the entry. Runs once the helper answered,
 * the request was aborted (by us at helper_timeout_ms, or by the kernel at
 * the next suspend), or the direct loader found the file.
 */
static void fwh_entry_asked(const struct firmware *fw, void *context)
{
	struct fwh_entry *e = context;
	bool timed_out;

	cancel_delayed_work_sync(&e->helper_timeout);
	mutex_lock(&fwh_cache.lock);
	e->asking = false;
	timed_out = e->timed_out;
	mutex_unlock(&fwh_cache.lock);

	/* No error code comes with it: unanswered or refused is -ENOENT. */
	fwh_entry_loaded(e, fw, fw ? 0 : timed_out ? -ETIMEDOUT : -ENOENT);
	put_device(&e->dev);	/* taken when asked */
}

/*
 * The loader's custom fallback: the direct loader once more, then a request
 * below our entry's device without a uevent, which the helper finds by
 * scanning /sys/class/firmware. The loader has no timeout for it (only the
 * next suspend aborts it) and holds a reference on this module meanwhile:
 * helper_timeout_ms bounds it. Nothing here waits; the callback finishes
 * the entry.
 */
static void fwh_entry_ask_userspace(struct fwh_entry *e)
{
	unsigned int ms = clamp(READ_ONCE(fwh_helper_timeout_ms),
				FWH_CACHE_HELPER_TIMEOUT_MIN,
				FWH_CACHE_HELPER_TIMEOUT_MAX);
	int r;

	get_device(&e->dev);	/* for the callback */
	mutex_lock(&fwh_cache.lock);
	e->asking = true;
	mutex_unlock(&fwh_cache.lock);
	queue_delayed_work(fwh_cache.wq, &e->helper_timeout,
			   msecs_to_jiffies(ms));

	r = request_firmware_nowait(THIS_MODULE, FW_ACTION_NOUEVENT, e->name,
				    &e->dev, GFP_KERNEL, e, fwh_entry_asked);
	if (r) {
		cancel_delayed_work_sync(&e->helper_timeout);
		mutex_lock(&fwh_cache.lock);
		e->asking = false;
		mutex_unlock(&fwh_cache.lock);
		fwh_entry_loaded(e, NULL, r);
		put_device(&e->dev);
	}
}

static void fwh_entry_load(struct work_struct *work)
{
	struct fwh_entry *e = container_of(work, struct fwh_entry, load_work);
	const struct firmware *fw = NULL;
	bool listed;
	int r;

	mutex_lock(&fwh_cache.lock);
	listed = e->listed;
	mutex_unlock(&fwh_cache.lock);

	/*
	 * The direct loader first; the sysfs fallback runs when the kernel
	 * runs it for any request_firmware() (force_sysfs_fallback or
	 * CONFIG_FW_LOADER_USER_HELPER_FALLBACK): a uevent below our entry's
	 * device, answered by the helper, bounded by the loader's timeout.
	 * Otherwise, when a helper said it answers, a name the direct loader
	 * missed is asked of it through the custom fallback.
	 */
	if (!listed) {
		r = -ECANCELED;
	} else if (READ_ONCE(fwh_userspace_fallback)) {
		fwh_entry_ask_userspace(e);
		goto out_put;
	} else {
		r = firmware_request_nowarn(&fw, e->name, &e->dev);
	}
	fwh_entry_loaded(e, fw, r);

out_put:
	put_device(&e->dev);	/* taken when queued */
}

static struct fwh_entry *fwh_entry_new(const char *name)
{
	size_t len = strlen(name);
	struct fwh_entry *e;
	int r;

	e = kzalloc(struct_size(e, name, len + 1), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);

	e->id = ida_alloc(&fwh_cache.ida, GFP_KERNEL);
	if (e->id < 0) {
		r = e->id;
		kfree(e);
		return ERR_PTR(r);
	}

	memcpy(e->name, name, len + 1);
	INIT_LIST_HEAD(&e->node);
	INIT_WORK(&e->load_work, fwh_entry_load);
	INIT_DELAYED_WORK(&e->helper_timeout, fwh_entry_helper_timeout);
	e->state = FWH_ENTRY_LOADING;

	/* From here on the device's release frees the entry. */
	device_initialize(&e->dev);
	e->dev.parent = fwh_cache.root;
	e->dev.release = fwh_entry_dev_release;
	r = dev_set_name(&e->dev, "entry%d", e->id);
	if (!r)
		r = device_add(&e->dev);
	if (r) {
		put_device(&e->dev);
		return ERR_PTR(r);
	}

	return e;
}

/*
 * Starts caching @name and returns at once. A name already loading or
 * cached is left alone; a failed one is tried again.
 */
int fwh_entry_cache(const char *name)
{
	struct fwh_entry *e, *stale, *fresh;
	int r;

	r = fwh_name_check(name);
	if (r)
		return r;

	mutex_lock(&fwh_cache.lock);
	if (fwh_cache.closing) {
		r = -ENODEV;
		goto out_unlock;
	}

	stale = fwh_entry_find(name);
	if (stale && stale->state != FWH_ENTRY_FAILED) {
		stale = NULL;
		goto out_unlock;
	}

	/*
	 * A failed entry is replaced, so it makes room for its successor; it
	 * stays listed until the successor exists, or a write that fails
	 * here would lose its record.
	 */
	if (fwh_cache.nr_entries - (stale ? 1 : 0) >= READ_ONCE(fwh_max_entries)) {
		r = -ENOSPC;
		stale = NULL;
		goto out_unlock;
	}

	fresh = fwh_entry_new(name);
	if (IS_ERR(fresh)) {
		r = PTR_ERR(fresh);
		stale = NULL;
		goto out_unlock;
	}

	if (stale) {
		/* in the place of the failed one */
		list_add(&fresh->node, &stale->node);
		fwh_entry_unlink(stale);
	} else {
		list_add_tail(&fresh->node, &fwh_cache.entries);
	}
	e = fresh;
	e->listed = true;
	fwh_cache.nr_entries++;
	get_device(&e->dev);	/* for the load */
	queue_work(fwh_cache.wq, &e->load_work);

out_unlock:
	mutex_unlock(&fwh_cache.lock);
	if (stale)
		fwh_entry_put_away(stale);
	if (!r)
		fwh_sysfs_notify_entries();
	return r;
}

/* Releases the entry named @name, or every entry for "*". */
int fwh_entry_uncache(const char *name)
{
	struct fwh_entry *e;

	if (!strcmp(name, "*")) {
		fwh_entry_release_all();
		return 0;
	}

	if (fwh_name_check(name))
		return -EINVAL;

	mutex_lock(&fwh_cache.lock);
	e = fwh_entry_find(name);
	if (e)
		fwh_entry_unlink(e);
	mutex_unlock(&fwh_cache.lock);
	if (!e)
		return -ENOENT;

	fwh_entry_put_away(e);
	fwh_sysfs_notify_entries();
	return 0;
}

/* Returns the number of entries released. */
unsigned int fwh_entry_release_all(void)
{
	struct fwh_entry *e, *tmp;
	unsigned int n = 0;
	LIST_HEAD(gone);

	mutex_lock(&fwh_cache.lock);
	list_for_each_entry_safe(e, tmp, &fwh_cache.entries, node) {
		fwh_entry_unlink(e);
		list_add_tail(&e->node, &gone);
		n++;
	}
	mutex_unlock(&fwh_cache.lock);

	list_for_each_entry_safe(e, tmp, &gone, node) {
		list_del_init(&e->node);
		fwh_entry_put_away(e);
	}

	if (n)
		fwh_sysfs_notify_entries();
	return n;
}

/*
 * One line per entry: "<state> <size> <error> <name>". The name goes last
 * because it is the only field that may contain blanks.
 */
int fwh_entry_format(char **ret_buf, size_t *ret_len)
{
	struct fwh_entry *e;
	size_t size, len = 0;
	char *buf;

	mutex_lock(&fwh_cache.lock);
	size = (size_t)fwh_cache.nr_entries * (FWH_CACHE_NAME_MAX + 64) + 1;
	buf = kvmalloc(size, GFP_KERNEL);
	if (!buf) {
		mutex_unlock(&fwh_cache.lock);
		return -ENOMEM;
	}

	list_for_each_entry(e, &fwh_cache.entries, node)
		len += scnprintf(buf + len, size - len, "%s %zu %d %s\n",
				 fwh_entry_state_names[e->state], e->size,
				 e->error, e->name);
	mutex_unlock(&fwh_cache.lock);

	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

/* Refuses new entries; loads already queued still run to completion. */
void fwh_entry_close(void)
{
	mutex_lock(&fwh_cache.lock);
	fwh_cache.closing = true;
	mutex_unlock(&fwh_cache.lock);
}
