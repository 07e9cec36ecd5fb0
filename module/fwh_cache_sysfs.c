// SPDX-License-Identifier: GPL-2.0
/*
 * The control interface, /sys/kernel/fwh_cache/:
 *   cache             (w)  a firmware name: start caching it
 *   uncache           (w)  a firmware name, or "*": release it
 *   entries           (r)  one line per entry, pollable; root only
 *   release_delay_ms  (rw) delay between a resume and the release of all
 *   userspace_fallback (rw) 1: a name the direct loader misses is asked of
 *                      the firmware helper (custom fallback, no uevent)
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "fwh_cache.h"

/*
 * Copies one written name into @name, dropping a single trailing newline.
 * Embedded NUL bytes and over-long names are refused here; the rest of the
 * checks are fwh_name_check()'s.
 */
static int fwh_sysfs_parse_name(const char *buf, size_t count,
				char name[FWH_CACHE_NAME_MAX + 1])
{
	if (count && buf[count - 1] == '\n')
		count--;
	if (!count || count > FWH_CACHE_NAME_MAX || memchr(buf, '\0', count))
		return -EINVAL;

	memcpy(name, buf, count);
	name[count] = '\0';
	return 0;
}

static ssize_t cache_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	char name[FWH_CACHE_NAME_MAX + 1];
	int r;

	r = fwh_sysfs_parse_name(buf, count, name);
	if (!r)
		r = fwh_entry_cache(name);
	return r ? r : count;
}

static struct kobj_attribute cache_attr = __ATTR_WO(cache);

static ssize_t uncache_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	char name[FWH_CACHE_NAME_MAX + 1];
	int r;

	r = fwh_sysfs_parse_name(buf, count, name);
	if (!r)
		r = fwh_entry_uncache(name);
	return r ? r : count;
}

static struct kobj_attribute uncache_attr = __ATTR_WO(uncache);

static ssize_t release_delay_ms_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(fwh_release_delay_ms));
}

static ssize_t release_delay_ms_store(struct kobject *kobj,
				      struct kobj_attribute *attr,
				      const char *buf, size_t count)
{
	unsigned int ms;
	int r;

	r = kstrtouint(buf, 0, &ms);
	if (r)
		return r;
	if (ms > FWH_CACHE_RELEASE_DELAY_MAX)
		return -EINVAL;

	WRITE_ONCE(fwh_release_delay_ms, ms);
	return count;
}

static struct kobj_attribute release_delay_ms_attr = __ATTR_RW(release_delay_ms);

static ssize_t userspace_fallback_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(fwh_userspace_fallback));
}

static ssize_t userspace_fallback_store(struct kobject *kobj,
					struct kobj_attribute *attr,
					const char *buf, size_t count)
{
	bool on;
	int r;

	r = kstrtobool(buf, &on);
	if (r)
		return r;

	WRITE_ONCE(fwh_userspace_fallback, on);
	return count;
}

static struct kobj_attribute userspace_fallback_attr = __ATTR_RW(userspace_fallback);

/*
 * Rebuilds the text when the list changed since it was built; called with
 * text_lock held. The generation is read first: a change while formatting
 * leaves it behind, and the next read at offset 0 builds again.
 */
static int fwh_entries_text_update(void)
{
	long gen = atomic_long_read(&fwh_cache.gen);
	size_t len;
	char *text;
	int r;

	lockdep_assert_held(&fwh_cache.text_lock);
	if (fwh_cache.text && fwh_cache.text_gen == gen)
		return 0;

	r = fwh_entry_format(&text, &len);
	if (r)
		return r;
	kvfree(fwh_cache.text);
	fwh_cache.text = text;
	fwh_cache.text_len = len;
	fwh_cache.text_gen = gen;
	return 0;
}

/*
 * A binary attribute: the list may outgrow the single page of a text one,
 * and the kernel hands it out a page per read(). A read at offset 0 takes
 * the list as it is now (built again only if it changed), later offsets
 * continue that text: readers and pollers do not take the global lock each
 * time. Only a change and another reader's read at offset 0 between two of
 * one reader's read()s can splice two texts; the change raised POLLPRI,
 * and the next read from the start is whole.
 */
static ssize_t entries_read(struct file *file, struct kobject *kobj,
			    struct bin_attribute *attr, char *buf,
			    loff_t off, size_t count)
{
	ssize_t n;
	int r = 0;

	mutex_lock(&fwh_cache.text_lock);
	if (off == 0 || !fwh_cache.text)
		r = fwh_entries_text_update();
	n = r ? r : memory_read_from_buffer(buf, count, &off, fwh_cache.text,
					    fwh_cache.text_len);
	mutex_unlock(&fwh_cache.text_lock);
	return n;
}

/* Root only: fwctl asks fw-helperd, which runs as root; nobody else needs it. */
static BIN_ATTR(entries, 0400, entries_read, NULL, 0);

static struct attribute *fwh_attrs[] = {
	&cache_attr.attr,
	&uncache_attr.attr,
	&release_delay_ms_attr.attr,
	&userspace_fallback_attr.attr,
	NULL,
};

static struct bin_attribute *fwh_bin_attrs[] = {
	&bin_attr_entries,
	NULL,
};

static const struct attribute_group fwh_attr_group = {
	.attrs = fwh_attrs,
	.bin_attrs = fwh_bin_attrs,
};

void fwh_sysfs_notify_entries(void)
{
	struct kobject *kobj = READ_ONCE(fwh_cache.kobj);

	atomic_long_inc(&fwh_cache.gen);
	if (kobj)
		sysfs_notify(kobj, NULL, "entries");
}

int fwh_sysfs_init(void)
{
	struct kobject *kobj;
	int r;

	kobj = kobject_create_and_add("fwh_cache", kernel_kobj);
	if (!kobj)
		return -ENOMEM;

	r = sysfs_create_group(kobj, &fwh_attr_group);
	if (r) {
		kobject_put(kobj);
		return r;
	}

	WRITE_ONCE(fwh_cache.kobj, kobj);
	return 0;
}

/* Called once no load can complete any more: nothing notifies after this. */
void fwh_sysfs_exit(void)
{
	struct kobject *kobj = fwh_cache.kobj;

	WRITE_ONCE(fwh_cache.kobj, NULL);
	sysfs_remove_group(kobj, &fwh_attr_group);
	kobject_put(kobj);
	kvfree(fwh_cache.text);
	fwh_cache.text = NULL;
}
