/* packwire verify-pack: stub replaced below */
#include "cmds.h"
int cmd_verify_pack(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
