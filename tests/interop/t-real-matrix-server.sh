#!/bin/bash
# The fetch matrix on real history: stock git against packwire upload-pack (see real-matrix.sh).
ROLE=server
. "$(dirname "$0")/real-matrix.sh"
