/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "json.h"
#include "macro.h"
#include "utf8.h"

int json_writer_init(JsonWriter *w)
{
	*w = (JsonWriter){};
	w->f = open_memstream(&w->buf, &w->size);
	return w->f ? 0 : -ENOMEM;
}

void json_writer_done(JsonWriter *w)
{
	if (w->f)
		fclose(w->f);
	free(w->buf);
	*w = (JsonWriter){};
}

int json_writer_finish(JsonWriter *w, char **ret)
{
	int r = fclose(w->f);

	w->f = NULL;
	if (r != 0 || !w->buf) {
		json_writer_done(w);
		return -ENOMEM;
	}
	*ret = w->buf;
	w->buf = NULL;
	json_writer_done(w);
	return 0;
}

/* Called before every value or key: a comma unless it is the first in its container. */
static void separate(JsonWriter *w)
{
	if (w->need_comma[w->depth])
		fputc(',', w->f);
	w->need_comma[w->depth] = true;
}

static void open_container(JsonWriter *w, char c)
{
	separate(w);
	fputc(c, w->f);
	if (w->depth + 1 < sizeof(w->need_comma))
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void close_container(JsonWriter *w, char c)
{
	if (w->depth > 0)
		w->depth--;
	fputc(c, w->f);
}

void json_object_begin(JsonWriter *w)
{
	open_container(w, '{');
}

void json_object_end(JsonWriter *w)
{
	close_container(w, '}');
}

void json_array_begin(JsonWriter *w)
{
	open_container(w, '[');
}

void json_array_end(JsonWriter *w)
{
	close_container(w, ']');
}

/*
 * JSON text is UTF-8 (RFC 8259). A byte that is not part of a valid character becomes the
 * four characters \xNN (written "\\xNN"), utf8_escape()'s form for D-Bus: a name reads
 * back the same from either.
 */
static void put_string(JsonWriter *w, const char *s)
{
	fputc('"', w->f);
	while (*s) {
		unsigned char c = (unsigned char)*s;
		size_t n = utf8_char_len(s);

		if (n == 0)
			fprintf(w->f, "\\\\x%02x", c);
		else if (c == '"' || c == '\\')
			fprintf(w->f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", w->f);
		else if (c == '\t')
			fputs("\\t", w->f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(w->f, "\\u%04x", c);
		else
			fwrite(s, 1, n, w->f);
		s += n ?: 1;
	}
	fputc('"', w->f);
}

void json_key(JsonWriter *w, const char *key)
{
	separate(w);
	put_string(w, key);
	fputc(':', w->f);
	/* the value that follows must not add a comma */
	w->need_comma[w->depth] = false;
}

/* A value after a key must re-arm the comma for the next key. */
static void value_done(JsonWriter *w)
{
	w->need_comma[w->depth] = true;
}

void json_string(JsonWriter *w, const char *s)
{
	separate(w);
	if (s)
		put_string(w, s);
	else
		fputs("null", w->f);
	value_done(w);
}

void json_uint(JsonWriter *w, uint64_t v)
{
	separate(w);
	fprintf(w->f, "%" PRIu64, v);
	value_done(w);
}

void json_int(JsonWriter *w, int64_t v)
{
	separate(w);
	fprintf(w->f, "%" PRId64, v);
	value_done(w);
}

void json_bool(JsonWriter *w, bool b)
{
	separate(w);
	fputs(b ? "true" : "false", w->f);
	value_done(w);
}

void json_null(JsonWriter *w)
{
	separate(w);
	fputs("null", w->f);
	value_done(w);
}

static void newline_indent(FILE *f, unsigned depth)
{
	fputc('\n', f);
	for (unsigned i = 0; i < depth; i++)
		fputs("        ", f);
}

int json_format_pretty(const char *text, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	bool in_string = false;
	unsigned depth = 0;
	size_t size = 0;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	for (const char *p = text; *p; p++) {
		if (in_string) {
			fputc(*p, f);
			if (*p == '\\' && p[1])
				fputc(*++p, f);
			else if (*p == '"')
				in_string = false;
			continue;
		}
		switch (*p) {
		case '"':
			in_string = true;
			fputc('"', f);
			break;
		case '{':
		case '[':
			fputc(*p, f);
			if (p[1] == (*p == '{' ? '}' : ']')) /* empty: stays "{}" or "[]" */
				fputc(*++p, f);
			else
				newline_indent(f, ++depth);
			break;
		case '}':
		case ']':
			depth = depth > 0 ? depth - 1 : 0;
			newline_indent(f, depth);
			fputc(*p, f);
			break;
		case ',':
			fputc(',', f);
			newline_indent(f, depth);
			break;
		case ':':
			fputs(" : ", f);
			break;
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			break; /* the text's own layout between tokens */
		default:
			fputc(*p, f);
		}
	}
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
