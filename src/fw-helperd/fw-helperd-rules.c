/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "fw-helperd-rules.h"
#include "log.h"
#include "util.h"

#define IGNORE_KEY "FW_HELPERD_IGNORE"

/* Where systemd-udevd reads rules from (systemd 252), in its order. */
static const char *const udev_rules_dirs[] = {
	"/etc/udev/rules.d",
	"/run/udev/rules.d",
	"/usr/local/lib/udev/rules.d",
	"/usr/lib/udev/rules.d",
	"/lib/udev/rules.d",
	NULL,
};

struct RulesWatch {
	char **dirs;
	int inotify_fd;
	sd_event_source *source;
	int *wds;	/* per directory: its inotify watch, or -1 */
	usec_t absent_retry_usec;
	usec_t absent_tried;	/* when directories without a watch were last looked for */
	bool dirty;	/* something changed since the last read */
	bool excludes;	/* the answer of the last read */
};

static bool line_assigns(const char *line, const char *key)
{
	size_t key_len = strlen(key);

	line += strspn(line, " \t");
	if (*line == '#')
		return false;
	for (const char *p = line; (p = strstr(p, key)); p += key_len) {
		const char *op = p + key_len;

		if (p == line || p[-1] != '{' || *op != '}')
			continue;
		op += 1 + strspn(op + 1, " \t");
		/* "=", "+=", ":=" assign; "==" and "!=" only compare */
		if ((op[0] == '=' && op[1] != '=') || ((op[0] == '+' || op[0] == ':') && op[1] == '='))
			return true;
	}
	return false;
}

bool rules_text_assigns(const char *text, const char *key)
{
	_cleanup_free_ char *copy = strdup(text);
	char *save = NULL;

	if (!copy)
		return true; /* unsure: the safe answer */
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line_assigns(line, key))
			return true;
	return false;
}

static bool file_assigns(int dirfd, const char *name)
{
	_cleanup_free_ char *line = NULL;
	size_t size = 0;
	bool found = false;
	FILE *f;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false; /* /dev/null links mask a file; gone meanwhile */
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return true;
	}
	while (!found && getline(&line, &size, f) >= 0)
		found = line_assigns(line, IGNORE_KEY);
	fclose(f);
	return found;
}

static bool dir_assigns(const char *path)
{
	bool found = false;
	DIR *d;

	d = opendir(path);
	if (!d)
		return false;
	for (struct dirent *de; !found && (de = readdir(d));)
		if (endswith(de->d_name, ".rules"))
			found = file_assigns(dirfd(d), de->d_name);
	closedir(d);
	return found;
}

/*
 * Watches each directory not watched yet; one that appeared since (/run/udev/rules.d is
 * created on demand) makes the answer stale. Not its parent instead: udevd changes
 * /run/udev for every event, and an idle daemon must not wake for them. Looked for at most
 * every absent_retry_usec, not for every request (RULES_ABSENT_RETRY_USEC).
 */
static void add_watches(RulesWatch *w)
{
	const uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
			      IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
	usec_t now = now_usec(CLOCK_MONOTONIC);

	if (w->absent_tried != 0 && now - w->absent_tried < w->absent_retry_usec)
		return;
	w->absent_tried = now;
	for (size_t i = 0; w->dirs[i]; i++) {
		if (w->wds[i] >= 0)
			continue;
		w->wds[i] = inotify_add_watch(w->inotify_fd, w->dirs[i], mask);
		if (w->wds[i] >= 0)
			w->dirty = true;
	}
}

/* A directory removed loses its watch (IN_IGNORED): add_watches() tries it again. */
static void forget_watch(RulesWatch *w, int wd)
{
	for (size_t i = 0; w->dirs[i]; i++)
		if (w->wds[i] == wd)
			w->wds[i] = -1;
}

static void drain(RulesWatch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(w->inotify_fd, buf, sizeof(buf))) > 0) {
		w->dirty = true;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_IGNORED)
				forget_watch(w, ev->wd);
			p += sizeof(*ev) + ev->len;
		}
	}
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	drain(userdata);
	return 0;
}

int rules_watch_new(sd_event *event, const char *const *dirs, usec_t absent_retry_usec,
		    RulesWatch **ret)
{
	_cleanup_(rules_watch_freep) RulesWatch *w = NULL;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->inotify_fd = -EBADF;
	w->dirty = true;
	w->absent_retry_usec = absent_retry_usec;
	w->dirs = strv_copy((char *const *)(dirs ?: udev_rules_dirs));
	if (!w->dirs)
		return -ENOMEM;
	w->wds = malloc(sizeof(int) * (strv_length(w->dirs) + 1));
	if (!w->wds)
		return -ENOMEM;
	for (size_t i = 0; i <= strv_length(w->dirs); i++)
		w->wds[i] = -1;
	w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->inotify_fd < 0)
		return -errno;
	r = sd_event_add_io(event, &w->source, w->inotify_fd, EPOLLIN, on_inotify, w);
	if (r < 0)
		return r;
	(void)sd_event_source_set_description(w->source, "udev-rules");
	*ret = TAKE_PTR(w);
	return 0;
}

RulesWatch *rules_watch_free(RulesWatch *w)
{
	if (!w)
		return NULL;
	sd_event_source_disable_unref(w->source);
	safe_close(w->inotify_fd);
	strv_free(w->dirs);
	free(w->wds);
	free(w);
	return NULL;
}

bool rules_watch_excludes(RulesWatch *w)
{
	if (!w)
		return true;
	/* a change queued but not yet seen by the loop counts too */
	drain(w);
	add_watches(w);
	if (!w->dirty)
		return w->excludes;
	w->dirty = false;
	w->excludes = false;
	for (char **d = w->dirs; *d && !w->excludes; d++)
		w->excludes = dir_assigns(*d);
	log_debug("udev rules %s " IGNORE_KEY ": %s.", w->excludes ? "assign" : "do not assign",
		  w->excludes ? "waiting for udev's events" : "answering the kernel's at once");
	return w->excludes;
}
