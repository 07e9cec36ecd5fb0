/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * MESSAGE_IDs of the journal entries an operator cares about. Each has an entry in
 * src/fw-helperd/fw-helperd.catalog (installed to systemd's catalogdir); keep both in step.
 * Filter with e.g. `journalctl MESSAGE_ID=<id>` or `journalctl FIRMWARE=<name>`.
 */
#define FW_MESSAGE_SERVED "d827878f321d40adab22e4709b89784a"          /* firmware streamed into the kernel */
#define FW_MESSAGE_MISSING "8e1a4f25f6c940d18445a12e569bf723"         /* no file in any root: aborted with -1 */
#define FW_MESSAGE_FAILED "6bf1b0e3b5644d88be4123903e848aba"          /* found, but reading or streaming failed */
#define FW_MESSAGE_REJECTED "9c43c90a602b4c499456ddaa7f9e4de1"        /* hostile or invalid name refused */
#define FW_MESSAGE_DEFERRED "a9537afa11e24994b5c71dcf6fa808ad"        /* answer deferred until the root file system is back */
#define FW_MESSAGE_PREWARMED "1a0e0dd3860049619a5a7827e3849295"       /* firmware read into memory before sleep */
#define FW_MESSAGE_CACHE_RELEASED "ec8afbbbde7440aeaf1a2d892b362b3e"  /* memory held across sleep released */
#define FW_MESSAGE_MODULE "db8b506e751c473b8ee4036c7c046eb7"          /* companion module used, refused or unavailable */
#define FW_MESSAGE_VERIFY_FAILED "f76db412c7db4e538baef2300f695c0f"   /* blob did not match its manifest digest */
#define FW_MESSAGE_CONFIG "17a285be6c3040f7a870846bb19c7d92"          /* configuration problem */
#define FW_MESSAGE_GUARD "11b603da630d43bbb9686be2a24365c3"           /* request aborted: the daemon cannot run */
