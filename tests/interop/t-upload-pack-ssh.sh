#!/bin/bash
# packwire upload-pack behind stock git over ssh (a fake ssh that runs the
# remote command locally, passing GIT_PROTOCOL on as SendEnv would): clone,
# fetch, ls-remote, --depth=1, --filter=blob:none and a tag fetch, protocols
# v0, v1, v2, SHA-1 and SHA-256, each compared with stock git's results.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

make_fake_ssh
run_matrix ssh
# git passed the protocol version through the ssh environment
contains "ssh: GIT_PROTOCOL=version=2 reached the server" "$T/ssh-protocols" "version=2"
contains "ssh: GIT_PROTOCOL=version=1 reached the server" "$T/ssh-protocols" "version=1"
finish
