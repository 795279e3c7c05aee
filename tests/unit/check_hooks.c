/* SPDX-License-Identifier: BSD-3-Clause */
#include <check.h>
#include <stdlib.h>

int
main(void)
{
	Suite *s = suite_create("placeholder");
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
