#!/usr/bin/env bash
# Installs the Debian 12 packages packwire builds, tests and benchmarks with.
# Safe to run again; skips apt when everything is present.
set -euo pipefail
pkgs=(build-essential cmake pkg-config git clang libclang-rt-14-dev
      libssl-dev zlib1g-dev libdeflate-dev libcurl4-openssl-dev libmicrohttpd-dev libcrypt-dev
      openssh-client time util-linux python3 bc apache2-bin openssl curl
      libnss-wrapper gpg
      prometheus chromium) # t-serve-metrics scrapes with Prometheus, t-serve-browse loads pages in Chromium
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq "${missing[@]}"
fi
