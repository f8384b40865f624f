#!/bin/bash
# packwire upload-pack behind stock git over file://: clone, incremental
# fetch, ls-remote, --depth=1, --filter=blob:none and a tag fetch, in
# protocol v0, v1 and v2, for SHA-1 and SHA-256 repositories. Every result is
# compared with what stock git upload-pack gives for the same request.
# (Real-history clones: t-upload-pack-real.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

run_matrix file

finish
