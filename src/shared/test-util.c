/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#include "json.h"
#include "log.h"
#include "sha256.h"
#include "macro.h"
#include "utf8.h"
#include "util.h"


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
	s = path_join("/", "b/c");
	CHECK(strcmp(s, "//b/c") == 0);
	free(s);
	s = strjoin("fw.bin", ".zst");
	CHECK(strcmp(s, "fw.bin.zst") == 0);
	free(s);
	s = strjoin("", "");
	CHECK(strcmp(s, "") == 0);
	free(s);
	CHECK(path_is_join("/a/b", "/a/", "/b") && path_is_join("/a/b", "/a", "b"));
	CHECK(path_is_join("//b/c", "/", "b/c"));
	CHECK(!path_is_join("/a/bc", "/a", "b") && !path_is_join("/a/b", "/a", "bc"));
	CHECK(!path_is_join("/ab", "/a", "b") && path_is_join("/a/", "/a", "") && !path_is_join("/a", "/a", ""));
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
	CHECK(streq_ptr(NULL, NULL) && streq_ptr("a", "a"));
	CHECK(!streq_ptr("a", NULL) && !streq_ptr(NULL, "a") && !streq_ptr("a", "b"));
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

/* Checks escaped == expect, and that it is what sd-bus would take. */
static void check_escape(const char *s, EscapeFlags flags, const char *expect)
{
	char *e = utf8_escape(s, flags);

	CHECK(e && strcmp(e, expect) == 0 && utf8_is_valid(e));
	printf("     %s\n", e ? e : "(null)");
	free(e);
}

static void test_utf8(void)
{
	CHECK(utf8_is_valid("") && utf8_is_valid("ascii") && utf8_is_valid("gr\xc3\xbc\xc3\x9f"));
	CHECK(utf8_char_len("\xf0\x9f\x98\x80") == 4 && utf8_char_len("\xe2\x82\xac") == 3);
	CHECK(utf8_char_len("\xc3\xbc") == 2 && utf8_char_len("a") == 1 && utf8_char_len("") == 0);
	CHECK(!utf8_is_valid("fw-\xff.bin"));
	CHECK(!utf8_is_valid("\xc3"));			/* truncated */
	CHECK(!utf8_is_valid("\xc0\x80"));		/* overlong NUL */
	CHECK(!utf8_is_valid("\xe0\x80\xaf"));		/* overlong '/' */
	CHECK(!utf8_is_valid("\xed\xa0\x80"));		/* surrogate */
	CHECK(!utf8_is_valid("\xf4\x90\x80\x80"));	/* past U+10FFFF */
	CHECK(!utf8_is_valid("\xef\xbf\xbe"));		/* U+FFFE: sd-bus refuses it */
	CHECK(!utf8_is_valid("\xef\xb7\x90"));		/* U+FDD0 */
	CHECK(!utf8_is_valid("\xf0\x9f\xbf\xbf"));	/* U+1FFFF */

	check_escape("plain/name.bin", 0, "plain/name.bin");
	check_escape("gr\xc3\xbc\xc3\x9f\\x", 0, "gr\xc3\xbc\xc3\x9f\\x");
	check_escape("fw-\xff.bin", 0, "fw-\\xff.bin");
	check_escape("\xc3(\xc3\xbc", 0, "\\xc3(\xc3\xbc");
	check_escape("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	check_escape("\xef\xbf\xbe", 0, "\\xef\\xbf\\xbe");
	check_escape("\xf0\x9f\x98\x80", ESCAPE_NON_ASCII, "\\xf0\\x9f\\x98\\x80");
	check_escape("a\001\x7f\\\xff", ESCAPE_CONTROL, "a\\x01\\x7f\\\\xff");
	check_escape("a\\b", ESCAPE_BACKSLASH, "a\\x5cb");
}

static void test_json_any_bytes(void)
{
	JsonWriter w;
	char *out = NULL;

	CHECK(json_writer_init(&w) == 0);
	json_array_begin(&w);
	json_string(&w, "fw-\xff.bin");
	json_string(&w, "\xed\xa0\x80\xef\xbf\xbf");
	json_string(&w, "q\"b\\\r\x1f\x7f");
	json_string(&w, "gr\xc3\xbc\xc3\x9f \xf0\x9f\x98\x80");
	json_array_end(&w);
	CHECK(json_writer_finish(&w, &out) == 0);
	CHECK(out && utf8_is_valid(out));
	CHECK(out && strcmp(out, "[\"fw-\\\\xff.bin\","
			       "\"\\\\xed\\\\xa0\\\\x80\\\\xef\\\\xbf\\\\xbf\","
			       "\"q\\\"b\\\\\\u000d\\u001f\\u007f\","
			       "\"gr\xc3\xbc\xc3\x9f \xf0\x9f\x98\x80\"]") == 0);
	printf("     %s\n", out ? out : "(null)");
	free(out);
}

static void test_json_pretty(void)
{
	char *out = NULL;

	CHECK(json_format_pretty("{\"a\": [1, {}, []], \"s\":\"x,{\\\" :]\",\"o\":{\"n\":null}}",
				 &out) == 0);
	CHECK(out && strcmp(out, "{\n"
			       "        \"a\" : [\n"
			       "                1,\n"
			       "                {},\n"
			       "                []\n"
			       "        ],\n"
			       "        \"s\" : \"x,{\\\" :]\",\n"
			       "        \"o\" : {\n"
			       "                \"n\" : null\n"
			       "        }\n"
			       "}") == 0);
	printf("%s\n", out ? out : "(null)");
	free(out);
}

static void hash_hex(const void *data, size_t len, size_t step, char hex[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	Sha256 h;

	sha256_init(&h);
	for (size_t off = 0; off < len; off += step)
		sha256_update(&h, MIN(step, len - off), (const uint8_t *)data + off);
	sha256_final(&h, d);
	sha256_to_hex(d, hex);
}

static void test_sha256(void)
{
	static char million[1000000];
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[65];

	hash_hex("", 0, 1, hex);
	CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
	hash_hex("abc", 3, 3, hex);
	CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
	hash_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, 7, hex);
	CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
	memset(million, 'a', sizeof(million));
	hash_hex(million, sizeof(million), 4093, hex);
	CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
	CHECK(sha256_from_hex(hex, d) == 0);
	CHECK(sha256_from_hex("cdc76e5c", d) < 0);
	CHECK(sha256_from_hex("zz", d) < 0);
}

static bool field_in_arena(const LogEntry *e, size_t i)
{
	return !(e->allocated & (UINT64_C(1) << i)) && e->fields[i] >= e->arena &&
	       e->fields[i] < e->arena + sizeof(e->arena);
}

static void test_log_entry(void)
{
	LogEntry e = {};
	char want[64], *big;
	bool all_right = true;
	size_t i;

	/* more small fields than an entry holds: the first LOG_ENTRY_MAX_FIELDS, each in the arena */
	for (i = 0; i < LOG_ENTRY_MAX_FIELDS + 3; i++)
		log_entry_add(&e, "FW_FIELD_%zu=value %zu%s", i, i * 1000, i % 2 ? "" : " even");
	CHECK(e.n_fields == LOG_ENTRY_MAX_FIELDS);
	CHECK(e.allocated == 0);
	for (i = 0; i < e.n_fields; i++) {
		snprintf(want, sizeof(want), "FW_FIELD_%zu=value %zu%s", i, i * 1000, i % 2 ? "" : " even");
		all_right = all_right && strcmp(e.fields[i], want) == 0 && field_in_arena(&e, i);
	}
	CHECK(all_right);
	log_entry_done(&e);
	CHECK(e.n_fields == 0 && e.arena_used == 0);

	/* one field larger than the whole arena: allocated; the small ones around it are not */
	big = malloc(LOG_ENTRY_ARENA + 100);
	memset(big, 'x', LOG_ENTRY_ARENA + 99);
	big[LOG_ENTRY_ARENA + 99] = 0;
	log_entry_add(&e, "FIRMWARE=%s", "a.bin");
	log_entry_add(&e, "FW_BIG=%s", big);
	log_entry_add(&e, "FW_SIZE=%d", 4096);
	CHECK(e.n_fields == 3);
	CHECK(field_in_arena(&e, 0) && !field_in_arena(&e, 1) && field_in_arena(&e, 2));
	CHECK(strcmp(e.fields[0], "FIRMWARE=a.bin") == 0);
	CHECK(strncmp(e.fields[1], "FW_BIG=", 7) == 0 && strcmp(e.fields[1] + 7, big) == 0);
	CHECK(strcmp(e.fields[2], "FW_SIZE=4096") == 0);
	log_entry_done(&e);
	CHECK(e.n_fields == 0 && e.allocated == 0);

	/* the arena filled to its last byte; the next field falls back to the heap */
	i = LOG_ENTRY_ARENA - strlen("FW_FILL=") - 1;
	big[i] = 0;
	log_entry_add(&e, "FW_FILL=%s", big);
	CHECK(e.arena_used == LOG_ENTRY_ARENA && field_in_arena(&e, 0));
	CHECK(strlen(e.fields[0]) == LOG_ENTRY_ARENA - 1);
	log_entry_add(&e, "FW_RESULT=%s", "served");
	CHECK(e.n_fields == 2 && !field_in_arena(&e, 1) && strcmp(e.fields[1], "FW_RESULT=served") == 0);
	/* sent (below the level shown here, so not printed) and emptied for reuse */
	log_entry_send(&e, LOG_DEBUG, 0, NULL, "not shown");
	CHECK(e.n_fields == 0 && e.allocated == 0 && e.arena_used == 0);

	/* strings and numbers without printf(): the same fields, in the arena or on the heap */
	log_entry_add_string(&e, "FIRMWARE", "a.bin");
	log_entry_add_uint(&e, "FW_SIZE", 0);
	log_entry_add_uint(&e, "FW_DURATION_USEC", UINT64_MAX);
	log_entry_add_string(&e, "FW_BIG", big);
	log_entry_add_string(&e, "FW_EMPTY", "");
	CHECK(e.n_fields == 5);
	CHECK(strcmp(e.fields[0], "FIRMWARE=a.bin") == 0 && field_in_arena(&e, 0));
	CHECK(strcmp(e.fields[1], "FW_SIZE=0") == 0 && field_in_arena(&e, 1));
	CHECK(strcmp(e.fields[2], "FW_DURATION_USEC=18446744073709551615") == 0);
	CHECK(strncmp(e.fields[3], "FW_BIG=", 7) == 0 && strcmp(e.fields[3] + 7, big) == 0 &&
	      !field_in_arena(&e, 3));
	CHECK(strcmp(e.fields[4], "FW_EMPTY=") == 0 && field_in_arena(&e, 4));
	CHECK(e.arena_used == strlen("FIRMWARE=a.bin FW_SIZE=0 FW_DURATION_USEC=18446744073709551615 FW_EMPTY=") + 1);
	log_entry_done(&e);
	for (i = 0; i < LOG_ENTRY_MAX_FIELDS + 3; i++)
		log_entry_add_uint(&e, "FW_N", i);
	CHECK(e.n_fields == LOG_ENTRY_MAX_FIELDS && strcmp(e.fields[LOG_ENTRY_MAX_FIELDS - 1], "FW_N=63") == 0);
	log_entry_done(&e);
	free(big);
}

int main(void)
{
	test_sha256();
	test_parse();
	test_strings();
	test_json();
	test_utf8();
	test_json_any_bytes();
	test_json_pretty();
	test_log_entry();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
