/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fw-helperd-loader.h"
#include "fw-helperd-stream.h"
#include "log.h"
#include "macro.h"
#include "sha256.h"

struct Config;

typedef enum VerifyPolicy {
	VERIFY_POLICY_OFF,	/* no manifest is read */
	VERIFY_POLICY_WARN,	/* served; a mismatch or a missing entry is logged */
	VERIFY_POLICY_ENFORCE,	/* a mismatch or a missing entry is refused with "-1" */
	_VERIFY_POLICY_MAX,
	_VERIFY_POLICY_INVALID = -EINVAL,
} VerifyPolicy;

const char *verify_policy_to_string(VerifyPolicy p);
VerifyPolicy verify_policy_from_string(const char *s);

/*
 * "<root>:<policy>" as RootPolicy= takes it; the root (absolute, normalised, the last ":"
 * splits) is returned in *ret_root. -EINVAL when malformed.
 */
int verify_root_policy_parse(const char *s, char **ret_root, VerifyPolicy *ret_policy);

/* A parsed manifest: sorted by path, one entry per path (the last line for it wins). */
typedef struct ManifestEntry {
	char *path;		/* normalised: no "./", no "//" */
	uint8_t digest[SHA256_DIGEST_SIZE];
	bool bad;		/* the last line for path was malformed: matches nothing */
	unsigned line;
} ManifestEntry;

typedef struct Manifest {
	char *filename;
	ManifestEntry *entries;
	size_t n_entries;
	unsigned n_bad;		/* malformed lines that still name a file */
	unsigned n_logged;	/* problems found (the first few are logged) */
} Manifest;

Manifest *manifest_free(Manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manifest *, manifest_free);

/*
 * Parses sha256sum(1) output (the format is described in fw-helperd-verify.c). Never
 * fails on content: malformed lines are logged as "filename:line: ..." at warning level
 * and skipped. Returns 0, or -ENOMEM.
 */
int manifest_parse(const char *filename, const char *text, size_t len, Manifest **ret);
/* The entry for path (normalised first), or NULL. */
const ManifestEntry *manifest_lookup(const Manifest *m, const char *path);

/* Policies, manifest files and the parsed manifests, shared by the worker threads. */
typedef struct Verifier Verifier;

int verifier_new(Verifier **ret);
Verifier *verifier_free(Verifier *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(Verifier *, verifier_free);

/* Takes the [Integrity] settings of c (copied) and forgets every parsed manifest (Reload). */
int verifier_configure(Verifier *v, const struct Config *c);
VerifyPolicy verifier_policy(Verifier *v, const char *root);
/* Changes with every verifier_configure(): a check made under another one may not stand. */
unsigned verifier_generation(Verifier *v);

typedef enum VerifyStatus {
	VERIFY_SKIPPED,		/* policy off */
	VERIFY_PENDING,		/* expected sum known, actual still being computed */
	VERIFY_MATCH,
	VERIFY_MISMATCH,
	VERIFY_NO_ENTRY,	/* no manifest names the file */
	VERIFY_BAD_ENTRY,	/* the manifest line for the file is malformed */
	VERIFY_ERROR,		/* the file could not be read for hashing */
	_VERIFY_STATUS_MAX,
} VerifyStatus;

const char *verify_status_to_string(VerifyStatus s);

/* One blob's check: from verify_begin() to the precommit hook (or verify_blob()). */
typedef struct VerifyCheck {
	VerifyPolicy policy;
	VerifyStatus status;
	int error;				/* with VERIFY_ERROR */
	char *root;				/* the root the blob was found in */
	char *manifest;				/* "file:line" of the entry used, or NULL */
	bool has_expected, has_actual;
	uint8_t expected[SHA256_DIGEST_SIZE];
	uint8_t actual[SHA256_DIGEST_SIZE];
	bool hash_stream;			/* actual comes from the streamed bytes */
	Sha256 hash;
	FwStreamOps ops;
} VerifyCheck;

void verify_check_done(VerifyCheck *c);
/* A copy of a finished check (strings duplicated, no hashing hooks), or -ENOMEM. */
int verify_check_copy(const VerifyCheck *c, VerifyCheck *ret);

/* True when the policy refuses a check that ended in this status. */
bool verify_check_refused(const VerifyCheck *c);

/*
 * Before streaming blob (found for name beneath one of roots): resolves the policy of its
 * root and looks up its sum. Compressed files are hashed here (the compressed file, as
 * sha256sum sees it, re-read and checked to be the very file decompressed); plain files
 * and blobs in memory are hashed as they stream, through the hooks returned by
 * verify_stream_ops(), whose precommit refuses a mismatch under enforce.
 * Returns 0 (stream, with verify_stream_ops(c) as ops, which may be NULL), or -EACCES
 * when the blob must be refused now (no entry, malformed entry, or a compressed file that
 * does not match, under enforce). v may be NULL (verification off).
 */
int verify_begin(Verifier *v, char *const *roots, const char *name, const FwBlob *blob,
		 VerifyCheck *c);
const FwStreamOps *verify_stream_ops(VerifyCheck *c);

/*
 * Ends a check verify_begin() left to the stream by hashing what blob holds now (its data
 * in memory, or its file): for a copy read into memory after verify_begin() looked it up
 * while its file was still open. Returns 0, -EACCES when the policy refuses it, -ENOMEM.
 */
int verify_complete(VerifyCheck *c, const FwBlob *blob);

/*
 * The whole check in one call, for copies not being streamed: hashes
 * blob (its data, its file, or the compressed file it came from), compares, and logs a
 * failure as verify_log() does. Returns 0 when it may be used, -EACCES when the policy
 * refuses it, other negative errnos when it could not be checked under enforce.
 * ret may be NULL.
 */
int verify_blob(Verifier *v, char *const *roots, const char *name, const FwBlob *blob,
		VerifyCheck *ret);

/* Whether c is a check that failed: one verify_log() logs. */
bool verify_check_failed(const VerifyCheck *c);

/*
 * Logs a check that failed (mismatch, no entry, malformed entry, unreadable) as one
 * FW_MESSAGE_VERIFY_FAILED journal entry: FW_PATH=, FW_EXPECTED_SHA256=,
 * FW_ACTUAL_SHA256= (empty when unknown), FW_VERIFY_POLICY=, FW_VERIFY_STATUS=, FW_ROOT=,
 * FW_MANIFEST= ("file:line"), on top of request_fields (FIRMWARE=, DEVPATH=... of the
 * request; consumed) or, when NULL, FIRMWARE=name. Logs nothing for a check that passed
 * or was skipped. served: warning level and "served anyway", else error and "refused".
 */
void verify_log(const VerifyCheck *c, LogEntry *request_fields, const char *name,
		const char *path, bool served);
