/* The harness itself: a unit test in which no check ran must fail
 * (CMakeLists.txt expects exit status 1 and the message). */
#include "test.h"

int main(void)
{
	return pw_test_done();
}
