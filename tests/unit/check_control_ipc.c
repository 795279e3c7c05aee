/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's IPC handlers (dataplane/control_ipc.c) where they need no
 * EAL: the export stream's ownership. One connection owns the stream; a
 * second one asking for it, or asking to end it, gets EBUSY naming the
 * owner; the owner's unsubscribe or disconnect frees it.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/control_private.h"

static struct control ctl;

/* EXPORT_SUBSCRIBE from conn; the handler's rc, its text in err. */
static int
subscribe(uint64_t conn, bool enable, char *err, size_t errlen)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_EXPORT_SUBSCRIBE };
	struct wire_ctl_msg resp = { .kind = WIRE_CTL_ERROR };

	req.export_subscribe.enable = enable;
	err[0] = '\0';
	return control_ipc_request(&ctl, conn, &req, &resp, err, errlen);
}

START_TEST(test_one_owner)
{
	char err[WIRE_TEXT_MAX];

	memset(&ctl, 0, sizeof(ctl));
	ck_assert_int_eq(subscribe(1, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 1);
	ck_assert_int_eq(subscribe(1, true, err, sizeof(err)), 0);   /* again */
	/* a second subscriber is refused, told who owns the stream */
	ck_assert_int_eq(subscribe(2, true, err, sizeof(err)), -EBUSY);
	ck_assert_str_eq(err, "another client (IPC connection 1) owns the export stream");
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* and cannot end the owner's subscription */
	ck_assert_int_eq(subscribe(2, false, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "only it can unsubscribe"));
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* another connection's disconnect changes nothing */
	control_ipc_disconnected(&ctl, 2);
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* the owner ends it; then anyone may take it */
	ck_assert_int_eq(subscribe(1, false, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 0);
	ck_assert_int_eq(subscribe(2, false, err, sizeof(err)), 0); /* no-op */
	ck_assert_int_eq(subscribe(2, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 2);
	/* the owner's disconnect frees the stream */
	control_ipc_disconnected(&ctl, 2);
	ck_assert_uint_eq(ctl.export_conn, 0);
	ck_assert_int_eq(subscribe(3, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 3);
}
END_TEST

static Suite *
control_ipc_suite(void)
{
	Suite *s = suite_create("control_ipc");
	TCase *tc = tcase_create("export");

	tcase_add_test(tc, test_one_owner);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(control_ipc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
