/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#include "json.h"
#include "sha256.h"
#include "macro.h"
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

static void hash_hex(const void *data, size_t len, size_t step, char hex[65])
{
	uint8_t d[SHA256_DIGEST_SIZE];
	Sha256 h;

	sha256_init(&h);
	for (size_t off = 0; off < len; off += step)
		sha256_update(&h, (const char *)data + off, MIN(step, len - off));
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

int main(void)
{
	test_sha256();
	test_parse();
	test_strings();
	test_json();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
