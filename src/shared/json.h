/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A small streaming JSON writer: enough for Describe() and `fwctl --json`, no parser.
 * Commas are placed automatically; keys are only valid inside objects.
 */
typedef struct JsonWriter {
	FILE *f;
	char *buf;
	size_t size;
	unsigned depth;
	bool need_comma[32];
} JsonWriter;

int json_writer_init(JsonWriter *w);
/* Finishes and hands back the text (caller frees); the writer is reset. */
int json_writer_finish(JsonWriter *w, char **ret);
void json_writer_done(JsonWriter *w);

void json_object_begin(JsonWriter *w);
void json_object_end(JsonWriter *w);
void json_array_begin(JsonWriter *w);
void json_array_end(JsonWriter *w);
void json_key(JsonWriter *w, const char *key);
void json_string(JsonWriter *w, const char *s);
void json_uint(JsonWriter *w, uint64_t v);
void json_int(JsonWriter *w, int64_t v);
void json_bool(JsonWriter *w, bool b);
void json_null(JsonWriter *w);

/*
 * Valid JSON text laid out for people as systemd's --json=pretty does: one member or
 * element a line, 8 spaces a level, "key" : value. Returns 0 or -ENOMEM.
 */
int json_format_pretty(const char *text, char **ret);
