/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "macro.h"
#include "util.h"

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			printf("ok   %s\n", #cond);                            \
		} else {                                                       \
			printf("FAIL %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
			failures++;                                            \
		}                                                              \
	} while (0)

static void test_parse(void)
{
	uint64_t v = 0;
	usec_t u = 0;

	CHECK(parse_size("4K", &v) == 0 && v == 4096);
	CHECK(parse_size("1G", &v) == 0 && v == 1ULL << 30);
	CHECK(parse_size("12", &v) == 0 && v == 12);
	CHECK(parse_size("1X", &v) < 0);
	CHECK(parse_size("-1", &v) < 0);
	CHECK(parse_size("99999999999999999999", &v) < 0);
	CHECK(parse_timespan("5", &u) == 0 && u == 5 * USEC_PER_SEC);
	CHECK(parse_timespan("250ms", &u) == 0 && u == 250 * USEC_PER_MSEC);
	CHECK(parse_timespan("2min", &u) == 0 && u == 120 * USEC_PER_SEC);
	CHECK(parse_timespan("2h", &u) < 0);
	CHECK(parse_boolean("yes") == 1 && parse_boolean("off") == 0 && parse_boolean("x") < 0);
	CHECK(safe_atou64("42", &v) == 0 && v == 42);
	CHECK(safe_atou64("42x", &v) < 0 && safe_atou64("", &v) < 0);
}

static void test_strings(void)
{
	char **l = NULL;
	char *s;

	s = path_join("/a/", "/b");
	CHECK(strcmp(s, "/a/b") == 0);
	free(s);
	s = cescape("a\001b\\");
	CHECK(strcmp(s, "a\\x01b\\x5c") == 0);
	free(s);
	CHECK(strv_split("  x y\tz ", &l) == 0 && strv_length(l) == 3);
	CHECK(strv_contains(l, "y") && !strv_contains(l, "w"));
	s = strv_join(l, ",");
	CHECK(strcmp(s, "x,y,z") == 0);
	free(s);
	strv_free(l);
	CHECK(startswith("foobar", "foo") && !startswith("fo", "foo"));
	CHECK(endswith("foo.xz", ".xz") && !endswith("xz", ".xz"));
}

static void test_json(void)
{
	JsonWriter w;
	char *out = NULL;

	CHECK(json_writer_init(&w) == 0);
	json_object_begin(&w);
	json_key(&w, "a");
	json_uint(&w, 1);
	json_key(&w, "list");
	json_array_begin(&w);
	json_string(&w, "x\"\n\001");
	json_bool(&w, true);
	json_object_begin(&w);
	json_object_end(&w);
	json_array_end(&w);
	json_key(&w, "n");
	json_null(&w);
	json_object_end(&w);
	CHECK(json_writer_finish(&w, &out) == 0);
	CHECK(out && strcmp(out, "{\"a\":1,\"list\":[\"x\\\"\\n\\u0001\",true,{}],\"n\":null}") == 0);
	printf("     %s\n", out ? out : "(null)");
	free(out);
}

int main(void)
{
	test_parse();
	test_strings();
	test_json();
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
