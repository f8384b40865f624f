#!/bin/bash
# The fetch matrix on real history: packwire clone and fetch against git upload-pack (see real-matrix.sh).
ROLE=client
. "$(dirname "$0")/real-matrix.sh"
